/**
 * `npm run wgsl`: the WGSL of the kernels a load plans, without a GPU (src/webgpu/wgsl-snapshot.ts).
 *
 *   npm run wgsl -- NAME                   a golden kernel (tests/wgsl/NAME.wgsl), as the code makes it now
 *   npm run wgsl -- MODEL VARIANT LABEL    any planned kernel, e.g.
 *                                          synthetic:bench-60m-q4_k_m gpu blk.0.ffn.decode
 *   npm run wgsl -- MODEL VARIANT LABEL --kv-type q8_0
 *                                          the same with that KV cache (TYPE, or K/V as q8_0/q4_0; default
 *                                          f16): the quantize-on-write kernel (blk.N.kv_quant) and the
 *                                          attention kernels reading Q8_0/Q4_0 blocks
 *   npm run wgsl -- MODEL VARIANT          the labels that load plans (VARIANT: a full id as --variants
 *                                          lists, or a profile id, gpu or swiftshader: its first mmv candidate
 *                                          and its prefill for the model, no trial; at load a trial picks
 *                                          the mmv layout, as ModelInfo.kernels reports)
 *   npm run wgsl -- --list                 the golden names, the snapshot models and the profiles
 *   npm run wgsl -- --variants MODEL       the variant ids of a model
 *   npm run wgsl -- --write                rewrite tests/wgsl/*.wgsl and tests/wgsl/fingerprints.json
 *   npm run wgsl -- --check                exit 1 when they differ from what the code makes (the test does this)
 *
 * A change to a kernel shows as a diff of its golden .wgsl; a refactor that must not change any kernel
 * keeps fingerprints.json (a hash of every planned kernel of 18 models × every variant, and of each
 * profile's default variant with a Q8_0, Q4_0 and Q8_0/Q4_0 KV cache where the heads hold whole
 * 32-value blocks) unchanged.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WEIGHT_TYPES } from '../src/webgpu/kernels/common.ts';
import { wgslLoader } from '../src/webgpu/kernels/loader.ts';
import { isPlanarType } from '../src/webgpu/kernels/repack.ts';
import {
  ADAPTER_PROFILES,
  defaultVariant,
  findVariant,
  GOLDEN_KERNELS,
  kernelWGSL,
  parseKvSpec,
  plannedKernels,
  planVariants,
  SNAPSHOT_MODELS,
  type SnapshotKernel,
  snapshotModel,
} from '../src/webgpu/wgsl-snapshot.ts';

/** Where the golden kernels and the fingerprints live. */
export const WGSL_DIR = resolve(fileURLToPath(import.meta.url), '../../tests/wgsl');

/** The golden kernels as the code makes them now: file name → WGSL. */
export async function goldenFiles(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, [m, v, l, kv]] of Object.entries(GOLDEN_KERNELS))
    out[`${name}.wgsl`] = await kernelWGSL(m, v, l, kv);
  return out;
}

/** The fingerprints file's content. */
export interface Fingerprints {
  /** Planned kernels over every model and variant (with repeats). */
  kernels: number;
  /** Distinct WGSL sources among them. */
  distinct: number;
  /**
   * `"MODEL VARIANT"` → SHA-256 of its kernels' labels and sources' hashes, in plan order; and
   * `"MODEL VARIANT kv=KV"` for a quantized KV cache ({@link QUANT_KV_SPECS}, each profile's default variant).
   */
  plans: Record<string, string>;
  /**
   * kernels/loader.ts `wgslLoader` of every weight type, in ggml's blocks and (planar types) in planes:
   * `"TYPE"` / `"TYPE planar"` → SHA-256 (the general kernels read every type through it, while the
   * models plan some types only where a row is not whole 32-weight chunks).
   */
  loaders: Record<string, string>;
}

/** The quantized KV caches the fingerprint covers (K and V alike, and K/V apart as llama.cpp allows). */
export const QUANT_KV_SPECS = ['q8_0', 'q4_0', 'q8_0/q4_0'] as const;

/** Hash of every planned kernel of each snapshot model and variant. */
export async function planFingerprints(models: readonly string[] = SNAPSHOT_MODELS): Promise<Fingerprints> {
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const plans: Record<string, string> = {};
  const distinct = new Set<string>();
  let kernels = 0;
  const hashPlan = (ks: SnapshotKernel[]) => {
    kernels += ks.length;
    const h = createHash('sha256');
    for (const k of ks) {
      const code = sha(k.code);
      distinct.add(code);
      h.update(`${k.label}\n${code}\n`);
    }
    return h.digest('hex');
  };
  for (const m of models) {
    const { file, cfg } = snapshotModel(m);
    for (const p of ADAPTER_PROFILES) {
      for (const v of planVariants(p, cfg))
        plans[`${m} ${v.id}`] = hashPlan(await plannedKernels(file, cfg, v));
      // A Q8_0/Q4_0 cache needs whole 32-value blocks per head (as llama.cpp's).
      if (cfg.headDim % 32 !== 0) continue;
      const v = defaultVariant(p, cfg);
      for (const kv of QUANT_KV_SPECS) {
        const { k, v: vt } = parseKvSpec(kv);
        plans[`${m} ${v.id} kv=${kv}`] = hashPlan(await plannedKernels(file, cfg, v, k, undefined, vt));
      }
    }
  }
  const loaders: Record<string, string> = {};
  for (const t of WEIGHT_TYPES) {
    loaders[t] = sha(wgslLoader('w', t));
    if (isPlanarType(t)) loaders[`${t} planar`] = sha(wgslLoader('w', t, 7));
  }
  return { kernels, distinct: distinct.size, plans, loaders };
}

/** Every file of tests/wgsl/ as the code makes it now. */
export async function expectedFiles(): Promise<Record<string, string>> {
  return {
    ...(await goldenFiles()),
    'fingerprints.json': `${JSON.stringify(await planFingerprints(), null, 2)}\n`,
  };
}

/** The files of tests/wgsl/ that differ from (or are missing beside, or are stale against) `expected`. */
export function staleFiles(expected: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [name, text] of Object.entries(expected)) {
    let have: string | undefined;
    try {
      have = readFileSync(join(WGSL_DIR, name), 'utf8');
    } catch {
      have = undefined;
    }
    if (have !== text) out.push(name);
  }
  for (const name of readdirSync(WGSL_DIR)) if (!(name in expected)) out.push(name);
  return out;
}

async function main(argv: string[]): Promise<number> {
  // `--kv-type KV` anywhere: the KV cache of a MODEL VARIANT [LABEL] query.
  const args = [...argv];
  let kv = 'f16';
  const at = args.indexOf('--kv-type');
  if (at >= 0) {
    if (args[at + 1] === undefined) {
      console.error('--kv-type takes TYPE or K/V (f16, f32, q8_0, q4_0), e.g. --kv-type q8_0');
      return 2;
    }
    kv = args[at + 1];
    args.splice(at, 2);
    try {
      parseKvSpec(kv);
    } catch (e) {
      console.error((e as Error).message);
      return 2;
    }
    if (args.length < 2 || args[0].startsWith('-')) {
      console.error('--kv-type goes with MODEL VARIANT [LABEL]');
      return 2;
    }
  }
  if (args[0] === '--list') {
    console.log(`golden kernels (tests/wgsl/NAME.wgsl):`);
    for (const [n, [m, v, l, k]] of Object.entries(GOLDEN_KERNELS))
      console.log(`  ${n.padEnd(30)} ${m} ${v} ${l}${k ? ` --kv-type ${k}` : ''}`);
    console.log(`snapshot models: ${SNAPSHOT_MODELS.join(' ')}`);
    console.log(`adapter profiles: ${ADAPTER_PROFILES.map((p) => p.id).join(' ')}`);
    return 0;
  }
  if (args[0] === '--variants') {
    const { cfg } = snapshotModel(args[1] ?? SNAPSHOT_MODELS[0]);
    for (const p of ADAPTER_PROFILES) for (const v of planVariants(p, cfg)) console.log(v.id);
    return 0;
  }
  if (args[0] === '--write' || args[0] === '--check') {
    const expected = await expectedFiles();
    const stale = staleFiles(expected);
    if (args[0] === '--check') {
      if (stale.length)
        console.error(`tests/wgsl differs from the code: ${stale.join(', ')} (npm run wgsl -- --write)`);
      return stale.length ? 1 : 0;
    }
    for (const [name, text] of Object.entries(expected)) writeFileSync(join(WGSL_DIR, name), text);
    console.log(
      `wrote ${Object.keys(expected).length} files to tests/wgsl (${stale.length} changed: ${stale.join(', ') || 'none'})`,
    );
    return 0;
  }
  if (args.length === 1 && !args[0].startsWith('-')) {
    const golden = GOLDEN_KERNELS[args[0]];
    if (!golden) {
      console.error(
        `no golden kernel "${args[0]}"; they are: ${Object.keys(GOLDEN_KERNELS).join(', ')} (npm run wgsl -- --list)`,
      );
      return 2;
    }
    process.stdout.write(await kernelWGSL(...golden));
    return 0;
  }
  if (args.length === 2) {
    const { file, cfg } = snapshotModel(args[0]);
    const c = parseKvSpec(kv);
    const planned = await plannedKernels(file, cfg, findVariant(args[1], cfg), c.k, undefined, c.v);
    const labels = new Set(planned.map((k) => k.label));
    console.log([...labels].join('\n'));
    return 0;
  }
  if (args.length === 3) {
    process.stdout.write(await kernelWGSL(args[0], args[1], args[2], kv));
    return 0;
  }
  console.error(
    'usage: npm run wgsl -- NAME | MODEL VARIANT [LABEL] [--kv-type K[/V]] | --list | --variants MODEL | --write | --check',
  );
  return 2;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (rc) => {
      process.exitCode = rc;
    },
    (e: unknown) => {
      console.error((e as Error).message);
      process.exitCode = 1;
    },
  );
}
