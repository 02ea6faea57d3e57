/**
 * Writes `tests/golden/quant.json`: what llama.cpp's own quantizer makes, for checking ours bit for bit.
 *
 * Usage: `npm run golden:quant` (Linux x64, needs a C compiler and git; nothing is downloaded).
 *
 * node-llama-cpp 3.21.1 ships llama.cpp's prebuilt shared libraries (`libggml-base.so`, `libllama.so`)
 * and the exact llama.cpp source as a git bundle (`node_modules/node-llama-cpp/llama/gitRelease.bundle`).
 * This script clones the bundle for its headers (or uses `LLAMA_CPP_SRC`), compiles
 * `scripts/llama-ref/ggml-ref.c` against the prebuilt libraries and runs:
 * 1. `ggml_quantize_chunk` (no importance matrix, so `quantize_row_*_ref`) and the type's `to_float`
 *    on the seeded inputs of `src/testing/quant-cases.ts`, for the types of its
 *    `GOLDEN_QUANT_TYPES` (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, Q5_K, Q3_K, Q2_K, F16, BF16, …): the sha256 of the quantized bytes and of the dequantized floats;
 * 2. `llama_model_quantize` (what `llama-quantize` runs) on stories260K and on stories260K widened to
 *    nEmbd 256 / 32 heads / nFF 256 (`src/model/widen.ts`, so Q4_K and Q6_K blocks hold trained
 *    weights), and on a random Phi-3 (`GOLDEN_QUANT_PHI3` of `src/model/random-phi3.ts`: fused
 *    attn_qkv, which llama.cpp types like attn_v), for each file type: the sha256 of the whole output
 *    file and each tensor's type.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getModuleVersion } from 'node-llama-cpp';
import { ggmlTypeByName } from '../src/gguf/ggml-types.ts';
import { FTYPES, type QuantizeFtype } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { GOLDEN_QUANT_PHI3, makeRandomPhi3Gguf } from '../src/model/random-phi3.ts';
import { WIDE_STORIES, widenLlamaGguf } from '../src/model/widen.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { quantGoldenCases } from '../src/testing/quant-cases.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modelPath = process.env.GOLDEN_MODEL ?? stories260kPath();
const outPath = resolve(root, 'tests/golden/quant.json');
const bins = resolve(root, 'node_modules/@node-llama-cpp/linux-x64/bins/linux-x64');
const bundle = resolve(root, 'node_modules/node-llama-cpp/llama/gitRelease.bundle');

/** File types run through llama_model_quantize, with llama-quantize's `--pure` where we need it. */
const MODEL_RUNS: { ftype: QuantizeFtype; pure: boolean }[] = [
  { ftype: 'Q8_0', pure: false },
  { ftype: 'Q4_0', pure: false },
  { ftype: 'Q4_K_M', pure: false },
  { ftype: 'Q4_K', pure: true },
  { ftype: 'Q6_K', pure: false },
  { ftype: 'F16', pure: false },
  { ftype: 'BF16', pure: false },
  { ftype: 'Q2_K', pure: false },
  { ftype: 'Q3_K_S', pure: false },
  { ftype: 'Q3_K_M', pure: false },
  { ftype: 'Q3_K_L', pure: false },
  { ftype: 'Q5_K_S', pure: false },
  { ftype: 'Q5_K_M', pure: false },
  { ftype: 'Q4_1', pure: false },
  { ftype: 'Q5_0', pure: false },
  { ftype: 'Q5_1', pure: false },
  { ftype: 'IQ4_NL', pure: false },
  { ftype: 'IQ4_XS', pure: false },
];

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

async function tensorTypes(path: string): Promise<Record<string, string>> {
  const f = await openGguf({ path });
  return Object.fromEntries([...f.tensors.values()].map((t) => [t.name, t.typeName]));
}

async function main(): Promise<void> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error('Linux x64 only');
  if (!existsSync(join(bins, 'libggml-base.so'))) throw new Error(`no prebuilt llama.cpp in ${bins}`);
  const work = mkdtempSync(join(tmpdir(), 'golden-quant-'));
  try {
    let src = process.env.LLAMA_CPP_SRC;
    if (!src) {
      src = join(work, 'llama.cpp');
      sh('git', ['clone', '--quiet', bundle, src]);
    }
    const exe = join(work, 'ggml-ref');
    const libs = ['libllama.v0.4.0.so', 'libggml.v0.4.0.so', 'libggml-base.so'].map((l) => join(bins, l));
    sh('cc', [
      '-O1',
      '-o',
      exe,
      resolve(root, 'scripts/llama-ref/ggml-ref.c'),
      `-I${join(src, 'include')}`,
      `-I${join(src, 'ggml/include')}`,
      ...libs,
      `-Wl,-rpath,${bins}`,
    ]);

    // 1. Blocks.
    const blocks = [];
    for (const c of quantGoldenCases()) {
      const inPath = join(work, 'in.f32');
      writeFileSync(inPath, new Uint8Array(c.data.buffer));
      for (const type of c.types) {
        const q = join(work, 'out.q');
        const d = join(work, 'out.f32');
        sh(exe, ['chunk', String(ggmlTypeByName(type).id), String(c.nPerRow), inPath, q, d]);
        blocks.push({
          case: c.name,
          type,
          elements: c.data.length,
          quantizedSha256: sha256(readFileSync(q)),
          dequantizedSha256: sha256(readFileSync(d)),
        });
      }
    }

    // 2. Models.
    const wide = join(work, 'wide.gguf');
    writeFileSync(wide, await widenLlamaGguf(await openGguf({ path: modelPath }), WIDE_STORIES));
    const phi3 = join(work, 'phi3.gguf');
    writeFileSync(phi3, makeRandomPhi3Gguf(GOLDEN_QUANT_PHI3));
    const models = [];
    for (const [name, path] of [
      ['stories260K', modelPath],
      ['stories260K-wide', wide],
      ['random-phi3', phi3],
    ] as const) {
      const runs = [];
      for (const r of MODEL_RUNS) {
        const out = join(work, `${name}-${r.ftype}.gguf`);
        sh(exe, ['model', path, out, String(FTYPES[r.ftype].fileType), bins, ...(r.pure ? ['pure'] : [])]);
        runs.push({
          ftype: r.ftype,
          pure: r.pure,
          fileSha256: sha256(readFileSync(out)),
          tensorTypes: await tensorTypes(out),
        });
      }
      models.push({ model: name, sourceSha256: sha256(readFileSync(path)), runs });
    }

    const out = {
      about:
        'What llama.cpp itself (prebuilt libraries of node-llama-cpp, no importance matrix) makes of seeded blocks, of stories260K and of a random Phi-3. Regenerate with `npm run golden:quant`; see tests/golden/README.md.',
      generator: {
        script: 'scripts/golden-quant.ts',
        nodeLlamaCpp: await getModuleVersion(),
        llamaCppLibraries: 'node_modules/@node-llama-cpp/linux-x64/bins/linux-x64',
      },
      blocks,
      models,
    };
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${outPath}: ${blocks.length} block checks, ${models.length} models`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
