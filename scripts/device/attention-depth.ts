/**
 * The decode attention alone at depth (issue 40: tg at depth 4096 ≥ 0.9 of depth 0), on the layer shapes
 * of real models, without loading one: for each shape and depth, one decode token's attention over every
 * layer (kernels/attention-decode.ts `flashDecodeWGSL`, then attention.ts `flashCombineWGSL` where the
 * positions split into several chunks) under each candidate policy — the adapter's default
 * (kernel-plan.ts `attentionPolicyFor`), the tiled layout with 1–8 lanes per position, the strided
 * layout, the default's chunking aiming at 128–2048 workgroups (also finer than the engine's buffers
 * take: chunks of 16–32 positions, up to 256 of them), and the default with the cache read 4/2
 * elements a load instead of 16-byte words (`FlashLayout.narrow`). Each layer reads its own K/V cache
 * (zeros: attention's cost does not depend on the cached values), so a token's caches are read from
 * memory as in a model, not from the GPU's cache, up to `--max-cache-mb` (then layers reuse them).
 * Wall µs per token over `--iters` tokens in one submit, median of `--reps`; GB/s = the K/V bytes a token
 * reads ÷ that time.
 *
 *   node attention-depth.mjs [--gpu] [--shapes 8b,1b] [--depths 4096,16384] [--kv f16]
 *       [--iters 10] [--reps 5] [--budget-s 40] [--max-cache-mb 4096] [--json FILE] [--md FILE] [--write]
 *
 * Shapes: `8b` (Llama-3.1-8B: 32 layers, 32 heads, 8 KV heads, head 128), `1b` (Llama-3.2-1B: 16, 32, 8,
 * 64), `tiny` (stories260K: 5, 8, 4, 8; rehearsals on a software adapter). Depths run in the order given,
 * each over every shape; no (depth, shape) starts after `--budget-s`; results are rewritten after each.
 * The strided layout's threads are capped by workgroup memory (attention-decode.ts `stridedThreads`), so
 * "strided 32 threads" may run fewer on a large head. `--write` (here; a device run's tables are recorded by
 * scripts/device/record.ts) puts the table into BENCHMARKS.md as `<!-- bench:attention-depth DATE -->`.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { markdownTable } from '../../src/bench/markdown.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { isEntryPoint } from '../../src/cli/run.ts';
import type { KvType } from '../../src/core/types.ts';
import { createGpuContext, type GpuContext, setNodeDawnOptions } from '../../src/webgpu/device.ts';
import { attentionPolicyFor } from '../../src/webgpu/kernel-plan.ts';
import {
  attentionSplit,
  type FlashLayout,
  flashCombineWGSL,
  flashCombineWorkgroups,
  flashHeadGroups,
  kvBytesPerElement,
  MAX_SPLITS,
} from '../../src/webgpu/kernels/attention.ts';
import { flashDecodeWGSL } from '../../src/webgpu/kernels/attention-decode.ts';
import { packStep } from '../../src/webgpu/kernels/common.ts';
import type { AttentionPolicy } from '../../src/webgpu/model/options.ts';

/** A model's attention shape. */
export interface AttentionShape {
  name: string;
  nLayers: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
}

export const SHAPES: Record<string, AttentionShape> = {
  '8b': { name: 'Llama-3.1-8B', nLayers: 32, nHead: 32, nHeadKv: 8, headDim: 128 },
  '1b': { name: 'Llama-3.2-1B', nLayers: 16, nHead: 32, nHeadKv: 8, headDim: 64 },
  tiny: { name: 'stories260K', nLayers: 5, nHead: 8, nHeadKv: 4, headDim: 8 },
};

/**
 * One decode attention policy to time: its name, the plan's fields it sets, and finer chunking than the
 * engine's (attention.ts `attentionSplit`'s `granule` and `maxSplits`: chunks of 16–32 positions, up to
 * 256 of them, beyond the engine's partial buffers of MAX_SPLITS chunks).
 */
export interface Candidate {
  name: string;
  policy: Pick<AttentionPolicy, 'layout' | 'targetWorkgroups' | 'minChunk'> & {
    granule?: number;
    maxSplits?: number;
  };
}

/**
 * The candidates for a head size on an adapter: the default first, then the other layouts with the
 * default's chunking, the default layout with other chunking, the default with V read by dimension pairs
 * (`narrowV`: the tiled P·V as before 16-byte V words) and with both read narrow. Lanes above 1
 * need subgroups at least as wide and must divide headDim/4 (attention-decode.ts).
 */
export function candidates(
  def: Pick<AttentionPolicy, 'layout' | 'targetWorkgroups' | 'minChunk'>,
  headDim: number,
  subgroupMinSize: number,
): Candidate[] {
  const name = (l: FlashLayout) =>
    l.kind === 'tiled'
      ? `tiled ${l.lanes ?? 1} lane${(l.lanes ?? 1) > 1 ? 's' : ''}`
      : `strided ${l.threads ?? 8} threads`;
  const chunking = { targetWorkgroups: def.targetWorkgroups, minChunk: def.minChunk };
  const out: Candidate[] = [
    { name: `default: ${name(def.layout)}`, policy: { ...chunking, layout: def.layout } },
  ];
  const same = (a: FlashLayout, b: FlashLayout) =>
    a.kind === b.kind && (a.lanes ?? 1) === (b.lanes ?? 1) && (a.threads ?? 8) === (b.threads ?? 8);
  const layouts: FlashLayout[] = [
    ...[1, 2, 4, 8]
      .filter((l) => (headDim / 4) % l === 0 && (l === 1 || subgroupMinSize >= l))
      .map((lanes): FlashLayout => ({ kind: 'tiled', lanes })),
    { kind: 'strided', threads: 8 },
    { kind: 'strided', threads: 32 },
  ];
  for (const layout of layouts)
    if (!same(layout, def.layout)) out.push({ name: name(layout), policy: { ...chunking, layout } });
  for (const [targetWorkgroups, minChunk] of [
    [128, 128],
    [512, 64],
    [1024, 64],
    [2048, 64],
  ])
    if (targetWorkgroups !== def.targetWorkgroups || minChunk !== def.minChunk)
      out.push({
        name: `${name(def.layout)}, ${targetWorkgroups} workgroups, chunks ≥ ${minChunk}`,
        policy: { layout: def.layout, targetWorkgroups, minChunk },
      });
  for (const [targetWorkgroups, minChunk] of [
    [1024, 32],
    [2048, 16],
  ])
    out.push({
      name: `${name(def.layout)}, ${targetWorkgroups} workgroups, chunks ≥ ${minChunk} of ${minChunk}, ≤ 256 chunks`,
      policy: { layout: def.layout, targetWorkgroups, minChunk, granule: minChunk, maxSplits: 256 },
    });
  out.push({
    name: `${name(def.layout)}, V by pairs`,
    policy: { ...chunking, layout: { ...def.layout, narrowV: true } },
  });
  out.push({
    name: `${name(def.layout)}, narrow loads`,
    policy: { ...chunking, layout: { ...def.layout, narrow: true } },
  });
  return out;
}

/** One timed (shape, depth, candidate). */
export interface Row {
  shape: string;
  depth: number;
  candidate: string;
  /** The candidate's fields: as `WebGpuEngineOptions.attention` (compare.ts `--decode-attention`), less `granule`/`maxSplits`. */
  policy?: Candidate['policy'];
  chunk: number;
  nSplit: number;
  /** Flash workgroups per layer. */
  workgroups: number;
  usPerToken: number;
  gbps: number;
  /** This row's time ÷ the default's at the same shape and depth. */
  vsDefault?: number;
  error?: string;
}

async function timeCandidate(
  gpu: GpuContext,
  sh: AttentionShape,
  depth: number,
  kv: KvType,
  c: Candidate,
  o: { iters: number; reps: number },
  caches: GPUBuffer[][],
): Promise<Row> {
  const { device } = gpu;
  const nCtx = depth + 1;
  const qDim = sh.nHead * sh.headDim;
  const kvDim = sh.nHeadKv * sh.headDim;
  const fo = {
    nHead: sh.nHead,
    nHeadKv: sh.nHeadKv,
    headDim: sh.headDim,
    scale: 1 / Math.sqrt(sh.headDim),
    kvType: kv,
    maxTokens: 1,
    nCtx,
    layout: c.policy.layout,
  };
  const { groupsPerKvHead } = flashHeadGroups(fo);
  const workgroups = sh.nHeadKv * groupsPerKvHead;
  const { chunk, nSplit } = attentionSplit(nCtx, { ...c.policy, workgroupsPerChunk: workgroups });
  const row = {
    shape: sh.name,
    depth,
    candidate: c.name,
    policy: c.policy,
    chunk,
    nSplit,
    workgroups: workgroups * nSplit,
  };
  const nCaches = caches.length;
  const S = GPUBufferUsage.STORAGE;
  const bufs: GPUBuffer[] = [];
  const mk = (size: number, usage = S) => {
    const b = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
    bufs.push(b);
    return b;
  };
  try {
    const step = mk(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const d = packStep(1, depth);
    d[2] = chunk;
    device.queue.writeBuffer(step, 0, d);
    const q = mk(qDim * 4, S | GPUBufferUsage.COPY_DST);
    device.queue.writeBuffer(
      q,
      0,
      Float32Array.from({ length: qDim }, (_, i) => Math.sin(i) * 0.5),
    );
    const out = mk(qDim * 4);
    const maxSplits = c.policy.maxSplits ?? MAX_SPLITS;
    const partO = mk(maxSplits * qDim * 4);
    const partMl = mk(maxSplits * sh.nHead * 8);
    const pipe = async (code: string) =>
      device.createComputePipelineAsync({
        layout: 'auto',
        compute: { module: device.createShaderModule({ code }), entryPoint: 'main' },
      });
    const flash = await pipe(flashDecodeWGSL(fo));
    const combine =
      nSplit > 1
        ? await pipe(flashCombineWGSL({ nHead: sh.nHead, headDim: sh.headDim, maxTokens: 1 }))
        : undefined;
    const group = (p: GPUComputePipeline, b: GPUBuffer[]) =>
      device.createBindGroup({
        layout: p.getBindGroupLayout(0),
        entries: b.map((buffer, binding) => ({ binding, resource: { buffer } })),
      });
    const flashGroups = caches.map(([k, v]) => group(flash, [step, q, k, v, out, partO, partMl]));
    const combineGroup = combine && group(combine, [step, partO, partMl, out]);
    const run = async (tokens: number) => {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      for (let t = 0; t < tokens; t++)
        for (let l = 0; l < sh.nLayers; l++) {
          pass.setPipeline(flash);
          pass.setBindGroup(0, flashGroups[l % nCaches]);
          pass.dispatchWorkgroups(workgroups, nSplit);
          if (combine && combineGroup) {
            pass.setPipeline(combine);
            pass.setBindGroup(0, combineGroup);
            pass.dispatchWorkgroups(flashCombineWorkgroups(sh), 1);
          }
        }
      pass.end();
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
    };
    await run(2);
    const ts: number[] = [];
    for (let r = 0; r < o.reps; r++) {
      const t0 = performance.now();
      await run(o.iters);
      ts.push(((performance.now() - t0) * 1000) / o.iters);
    }
    ts.sort((a, b) => a - b);
    const us = ts[Math.floor(ts.length / 2)];
    const bytes = 2 * nCtx * kvDim * kvBytesPerElement(kv) * sh.nLayers;
    return { ...row, usPerToken: us, gbps: bytes / us / 1000 };
  } catch (e) {
    return {
      ...row,
      usPerToken: Number.NaN,
      gbps: Number.NaN,
      error: (e as Error).message.split('\n')[0],
    };
  } finally {
    for (const b of bufs) b.destroy();
  }
}

/** The markdown: per shape and depth, the default and the candidates that beat it (or the best two), fastest first. */
export function attentionMarkdown(rows: readonly Row[], top = 4): string {
  const groups = new Map<string, Row[]>();
  for (const r of rows)
    groups.set(`${r.shape}@${r.depth}`, [...(groups.get(`${r.shape}@${r.depth}`) ?? []), r]);
  const lines: string[][] = [];
  for (const g of groups.values()) {
    const timed = g.filter((r) => !r.error).sort((a, b) => a.usPerToken - b.usPerToken);
    const def = g.find((r) => r.candidate.startsWith('default'));
    const shown = [...new Set([...timed.slice(0, top), ...(def ? [def] : []), ...g.filter((r) => r.error)])];
    for (const r of shown)
      lines.push([
        r.shape,
        String(r.depth),
        r.candidate,
        `${r.chunk} × ${r.nSplit}`,
        String(r.workgroups),
        r.error ? `error: ${r.error}` : r.usPerToken.toFixed(1),
        r.error ? '' : r.gbps >= 10 ? r.gbps.toFixed(0) : r.gbps.toPrecision(2),
        r.vsDefault === undefined ? '' : `${r.vsDefault.toFixed(2)}×`,
      ]);
  }
  return markdownTable(
    [
      'shape',
      'depth',
      'decode attention',
      'chunk × chunks',
      'workgroups',
      'µs / token (all layers)',
      'K+V GB/s',
      'time ÷ default',
    ],
    lines,
    3,
  ).join('\n');
}

async function main() {
  const { values } = parseArgs({
    options: {
      gpu: { type: 'boolean', default: false },
      'no-unsafe-apis': { type: 'boolean', default: false },
      shapes: { type: 'string', default: '8b,1b' },
      depths: { type: 'string', default: '4096,16384' },
      kv: { type: 'string', default: 'f16' },
      iters: { type: 'string', default: '10' },
      reps: { type: 'string', default: '5' },
      'budget-s': { type: 'string', default: '40' },
      'max-cache-mb': { type: 'string', default: '4096' },
      json: { type: 'string' },
      md: { type: 'string' },
      write: { type: 'boolean', default: false },
    },
  });
  const t0 = performance.now();
  const log = (...a: unknown[]) =>
    console.error(`[attention ${((performance.now() - t0) / 1000).toFixed(1)}s]`, ...a);
  const shapes = values.shapes.split(',').map((s) => {
    const sh = SHAPES[s];
    if (!sh) throw new Error(`unknown shape ${s} (${Object.keys(SHAPES).join(', ')})`);
    return sh;
  });
  const depths = values.depths.split(',').map(Number);
  const kv = values.kv as KvType;
  const driver = setupNodeVulkan(values.gpu);
  setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
  const gpu = await createGpuContext();
  log('adapter', JSON.stringify(gpu.info), 'driver', driver);
  const o = {
    iters: Number(values.iters),
    reps: Number(values.reps),
    maxCacheBytes: Number(values['max-cache-mb']) * 2 ** 20,
  };
  const rows: Row[] = [];
  const write = () => {
    if (values.json)
      writeFileSync(
        values.json,
        `${JSON.stringify({ adapter: gpu.info, kv, iters: o.iters, reps: o.reps, rows }, null, 2)}\n`,
      );
    if (values.md) writeFileSync(values.md, `${attentionMarkdown(rows)}\n`);
  };
  // Depth by depth, so the first depth of every shape runs before a later one (the budget may stop it).
  for (const depth of depths)
    for (const sh of shapes) {
      if (performance.now() - t0 > Number(values['budget-s']) * 1000) {
        log(`budget spent: skipping ${sh.name} at depth ${depth}`);
        continue;
      }
      const cands = candidates(
        attentionPolicyFor(gpu, sh.headDim),
        sh.headDim,
        gpu.hasSubgroups ? gpu.subgroupMinSize : 0,
      );
      // Each layer's own K and V caches (up to --max-cache-mb; then layers share them), made once for
      // every candidate at this shape and depth (zeros: Dawn clears new buffers).
      const kvDim = sh.nHeadKv * sh.headDim;
      const cacheBytes = Math.ceil(((depth + 1) * kvDim * kvBytesPerElement(kv)) / 16) * 16;
      const nCaches = Math.max(1, Math.min(sh.nLayers, Math.floor(o.maxCacheBytes / (2 * cacheBytes))));
      const caches = Array.from({ length: nCaches }, () =>
        [0, 1].map(() => gpu.device.createBuffer({ size: cacheBytes, usage: GPUBufferUsage.STORAGE })),
      );
      const group: Row[] = [];
      try {
        // One untimed run first, so the default (timed first) does not pay the queue's and caches' first use.
        await timeCandidate(gpu, sh, depth, kv, cands[0], { iters: 1, reps: 1 }, caches);
        for (const c of cands) group.push(await timeCandidate(gpu, sh, depth, kv, c, o, caches));
      } finally {
        for (const b of caches.flat()) b.destroy();
      }
      const def = group[0].usPerToken;
      for (const r of group) if (!r.error && Number.isFinite(def)) r.vsDefault = r.usPerToken / def;
      rows.push(...group);
      log(
        `${sh.name} depth ${depth}: ${group.map((r) => `${r.candidate} ${r.error ? 'error' : r.usPerToken.toFixed(1)}`).join('; ')}`,
      );
      write();
    }
  write();
  if (values.write) {
    const { writeBenchSection } = await import('../bench-common.ts');
    const date = new Date().toISOString().slice(0, 10);
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const args = process.argv
      .slice(2)
      .filter((a) => a !== '--write')
      .join(' ');
    const text = [
      `<!-- bench:attention-depth ${date} -->`,
      `## ${date}: the decode attention alone at depth, per policy (${gpu.info.description || gpu.info.architecture})`,
      '',
      `Recorded by \`npx tsx scripts/device/attention-depth.ts ${args} --write\` at ${commit} in ${((performance.now() - t0) / 1000).toFixed(0)} s: one decode token's flash-decoding (and combine) over every layer of each shape, each layer on its own ${kv} K/V cache, wall µs per token over ${o.iters} token${o.iters === 1 ? '' : 's'} in one submit, median of ${o.reps}; the default policy and the fastest candidates${gpu.info.isFallback ? '. A software adapter (SwiftShader on this 2-core machine): CPU figures, for the loads and chunking it runs, not a GPU forecast' : ''}.`,
      '',
      attentionMarkdown(rows),
      `<!-- /bench:attention-depth ${date} -->`,
    ].join('\n');
    writeBenchSection('attention-depth', date, text);
    log('written into BENCHMARKS.md');
  }
  gpu.device.destroy();
}

if (isEntryPoint(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(`error: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}
