/**
 * Choosing the decode kernels' layout by measurement, per adapter and per matmul: a few {@link MmvLayout}
 * candidates suited to the adapter (software adapters want a thread per group of rows with no reduction;
 * GPUs want lanes along K reduced through subgroups) are timed on each of the model's own decode matmul
 * shapes (Q/K/V, attention output, feed-forward gate+up, down, output; {@link MmvShape}) with random
 * weights, and the fastest wins for that matmul. Results are cached per adapter fingerprint and shape for
 * the life of the worker or process, so a second load of the same model (or a model of the same width)
 * measures nothing.
 *
 * Timing is wall clock around one submit of the same number of dispatches for every candidate (enough
 * for the fastest candidate to fill ≥ 15 ms, at least 3), after a warm-up dispatch, best of 3 rounds
 * run round-robin; every candidate runs the same bytes, so the ratio between candidates is
 * what matters (dispatch and submit overhead fall on all alike).
 */

import { EngineError } from '../../core/errors.ts';
import { mulberry32 } from '../../util/prng.ts';
import type { GpuContext } from '../device.ts';
import { packStep, rowBytes, WEIGHT_BLOCK, type WeightType } from './common.ts';
import type { MatmulOptions, MatmulSegment } from './matmul.ts';
import { INT_DOT_TYPES, mmmWGSL, mmmWorkgroupsX, TILE_TOKENS } from './mmm.ts';
import { mmmSgmatWGSL, type SgmatTile, sgmatName } from './mmm-sgmat.ts';
import { type MmvLayout, mmvWGSL, mmvWorkgroupsX } from './mmv.ts';
import { planarBytes } from './repack.ts';

/** What was chosen, and how (recorded in ModelInfo and result JSON). */
export interface MmvChoice {
  layout: MmvLayout;
  /** 'measured' this load, 'cached' from an earlier measurement on this adapter, 'option' given by the caller, 'only' one candidate. */
  chosenBy: 'measured' | 'cached' | 'option' | 'only';
  /** Milliseconds per dispatch of each candidate, where measured. */
  trials?: { layout: MmvLayout; ms: number }[];
}

/** A compact name of a layout, e.g. `lanes32-sg-u2-t128-packed`. */
export function layoutName(l: MmvLayout): string {
  return `lanes${l.lanes}${l.lanes > 1 ? `-${l.reduce === 'subgroup' ? 'sg' : 'shared'}` : ''}-u${l.units}-t${l.threads}${l.packed ? '-packed' : ''}${l.intDot ? '-int8' : ''}${l.shareX ? `-xs${l.shareX}` : ''}`;
}

/**
 * The layouts worth trying on this adapter. Software (fallback) adapters: a thread per 1, 2 or 4 rows,
 * and 8 rows with the activations shared through subgroups where every subgroup has one size of 2, 4 or 8.
 * GPUs: lanes along K (32, or the adapter's minimum subgroup size when smaller), 1–2 units per lane
 * group, reduced with subgroups where the device has them, else through workgroup memory; and the
 * integer-dot variant where WGSL has packed 4×8 dot products.
 */
export function mmvCandidates(gpu: GpuContext): MmvLayout[] {
  const packed = gpu.wgslFeatures.has('packed_4x8_integer_dot_product');
  if (gpu.info.isFallback) {
    // 8 rows per thread in 64-thread workgroups timed faster alone but slower in the model (a 512-row
    // matmul is one workgroup, one core busy): not a candidate (BENCHMARKS.md, "Why the kernel defaults…",
    // mmvCandidates).
    const out: MmvLayout[] = [1, 2, 4].map((units) => ({
      lanes: 1,
      units,
      threads: 64,
      reduce: 'shared' as const,
      packed,
    }));
    // Where every subgroup has one size S of 2, 4 or 8 (SwiftShader: 4), the prefill's layout (kernel-plan.ts
    // prefillMatmulFor) at one token: 8 rows per thread with the activations shared through the subgroup,
    // in 8-thread workgroups, so a 512-row Q/K/V matmul still has 4–8 workgroups; on SwiftShader it wins
    // the trial (BENCHMARKS.md, "Why the kernel defaults…", mmvCandidates).
    const S = gpu.subgroupMinSize;
    if (gpu.hasSubgroups && S === gpu.subgroupMaxSize && [2, 4, 8].includes(S))
      out.push({ lanes: 1, units: 8, threads: 8, reduce: 'shared', packed, shareX: S });
    return out;
  }
  const sg = gpu.hasSubgroups && gpu.subgroupMinSize >= 4;
  const lanes = sg ? Math.min(32, gpu.subgroupMinSize) : 32;
  const reduce = sg ? ('subgroup' as const) : ('shared' as const);
  const out: MmvLayout[] = [
    { lanes, units: 1, threads: 256, reduce, packed },
    { lanes, units: 2, threads: 128, reduce, packed },
    { lanes: Math.max(4, lanes / 4), units: 2, threads: 64, reduce, packed },
  ];
  // llama.cpp's MMVQ scheme (int8 activations, dot4I8Packed): native on GPUs with DP4A. On SwiftShader it
  // is emulated and slower (BENCHMARKS.md, "Why the kernel defaults…", mmvCandidates), so not tried there.
  if (packed) out.push({ lanes, units: 2, threads: 128, reduce, packed, intDot: true });
  return out;
}

const cache = new Map<string, MmvChoice>();

/** Forgets every cached choice (tests). */
export function clearMmvChoices(): void {
  cache.clear();
  tileCache.clear();
}

/** Random rows of a weight type (random bytes with an f16 scale of ~1e-3 where the type has one). */
function randomWeights(type: WeightType, K: number, N: number, planar = false): Uint8Array {
  // Planes may be larger than the raw rows (Q4_K: 148 bytes per block against 144).
  const raw = Math.ceil((rowBytes(type, K) * N) / 16) * 16;
  const bytes = new Uint8Array(
    planar ? Math.max(raw, planarBytes(type, (K * N) / WEIGHT_BLOCK[type].size)) : raw,
  );
  const rng = mulberry32(K * 31 + N);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rng() * 256);
  // Keep every 16-bit word a small finite f16 where scales live: 0x1400 ≈ 1e-3 in the high byte's range.
  if (type === 'F16') for (let i = 1; i < bytes.length; i += 2) bytes[i] &= 0x13;
  if (type === 'F32') for (let i = 3; i < bytes.length; i += 4) bytes[i] = 0x3a;
  return bytes;
}

/**
 * One decode matmul's shape for a trial: rows of `K` weights of `type` (repacked into planes when
 * `planar`), `N` output units of `dots` rows each (2: the fused gate/up kernel), with the RMSNorm folded
 * in when `norm` (Q/K/V, gate/up, output). Defaults: one dot, with the norm.
 */
export interface MmvShape {
  K: number;
  N: number;
  type: WeightType;
  planar?: boolean;
  dots?: 1 | 2;
  norm?: boolean;
}

/**
 * The most weights a trial dispatch reads: larger matrices (a 32k–128k-row output) are timed on their
 * first rows only, which tells the layouts apart as well (thousands of workgroups either way) at a
 * fraction of the time (on SwiftShader one full 32000 × 512 dispatch takes ~60–100 ms).
 */
export const TRIAL_MAX_WEIGHTS = 4 << 20;

/**
 * Times each candidate on the matmul shape `shape` ({@link MmvShape}; N capped so that a dispatch reads
 * at most {@link TRIAL_MAX_WEIGHTS} weights) and returns the fastest. With one candidate, nothing is
 * timed. Wall time per dispatch, ms, in `trials`.
 * @throws EngineError('unsupported_model') when no candidate compiles (one that fails is skipped).
 */
export async function chooseMmvLayout(
  gpu: GpuContext,
  shape: MmvShape,
  candidates: MmvLayout[] = mmvCandidates(gpu),
): Promise<MmvChoice> {
  if (candidates.length === 1) return { layout: candidates[0], chosenBy: 'only' };
  const i = gpu.info;
  const dots = shape.dots ?? 1;
  const norm = shape.norm ?? true;
  const N = Math.max(1, Math.min(shape.N, Math.ceil(TRIAL_MAX_WEIGHTS / (shape.K * dots))));
  const key = `${i.vendor}|${i.architecture}|${i.device}|${i.description}|${shape.K}|${N}|${dots}|${norm}|${shape.type}|${shape.planar ? 'planar' : 'raw'}|${candidates.map(layoutName).join(',')}`;
  const hit = cache.get(key);
  if (hit) return { ...hit, chosenBy: 'cached' };
  const { device } = gpu;
  const made: GPUBuffer[] = [];
  const buf = (bytes: Uint8Array | number, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) => {
    const size = typeof bytes === 'number' ? bytes : bytes.byteLength;
    const b = device.createBuffer({
      label: 'mmv-tune',
      size: Math.max(16, Math.ceil(size / 16) * 16),
      usage,
    });
    if (typeof bytes !== 'number') device.queue.writeBuffer(b, 0, bytes as Uint8Array<ArrayBuffer>);
    made.push(b);
    return b;
  };
  try {
    const { K, type } = shape;
    const wt = { type, planar: shape.planar ? (K * N) / WEIGHT_BLOCK[type].size : undefined };
    const ws = Array.from({ length: dots }, () => buf(randomWeights(type, K, N, Boolean(shape.planar))));
    const x = buf(new Uint8Array(new Float32Array(K).fill(0.5).buffer));
    const g = buf(new Uint8Array(new Float32Array(K).fill(1).buffer));
    const y = buf(N * 4);
    const step = buf(new Uint8Array(packStep(1, 0).buffer), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const seg: MatmulSegment = {
      nUnits: N,
      // Repacked weights where the model's will be (same bytes, read as planes).
      weights: ws.map(() => wt),
      dots: ws.map((_, w) => ({ w, row: 'u' })),
      epilogue: dots === 2 ? 'y[u] = d0 / (1.0 + exp(-d0)) * d1;' : 'y[u] = d0;',
    };
    // Compile every candidate, then time them round-robin (best of 3 rounds each), so that load from other
    // processes falls on all candidates alike.
    const runners: { layout: MmvLayout; run: (n: number) => Promise<number>; n: number; ms: number }[] = [];
    let lastError: unknown;
    for (const layout of candidates) {
      try {
        const module = device.createShaderModule({
          label: `mmv-tune ${layoutName(layout)}`,
          code: mmvWGSL({
            K,
            TT: 1,
            norm: norm ? { eps: 1e-5, type: 'F32' } : undefined,
            segments: [seg],
            extra: ['var<storage, read_write> y: array<f32>'],
            layout,
          }),
        });
        const pipeline = await device.createComputePipelineAsync({
          layout: 'auto',
          compute: { module, entryPoint: 'main' },
        });
        const group = device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: [step, x, ...(norm ? [g] : []), ...ws, y].map((buffer, binding) => ({
            binding,
            resource: { buffer },
          })),
        });
        const nx = mmvWorkgroupsX([seg], layout);
        const run = async (n: number) => {
          const enc = device.createCommandEncoder({ label: 'mmv-tune' });
          const pass = enc.beginComputePass();
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, group);
          for (let k = 0; k < n; k++) pass.dispatchWorkgroups(nx);
          pass.end();
          const t0 = performance.now();
          device.queue.submit([enc.finish()]);
          await device.queue.onSubmittedWorkDone();
          return performance.now() - t0;
        };
        const once = await run(1);
        runners.push({
          layout,
          run,
          n: Math.max(3, Math.min(200, Math.ceil(15 / Math.max(once, 0.01)))),
          ms: Infinity,
        });
      } catch (e) {
        lastError = e;
      }
    }
    const n = Math.max(...runners.map((r) => r.n), 3);
    for (let round = 0; round < 3; round++) {
      for (const r of runners) r.ms = Math.min(r.ms, (await r.run(n)) / n);
    }
    const trials = runners.map((r) => ({ layout: r.layout, ms: r.ms }));
    if (trials.length === 0) {
      throw new EngineError(
        'unsupported_model',
        `no decode kernel layout compiled on this adapter (${candidates.map(layoutName).join(', ')}): ${lastError}`,
        { cause: lastError },
      );
    }
    const best = trials.reduce((a, b) => (b.ms < a.ms ? b : a));
    const choice: MmvChoice = { layout: best.layout, chosenBy: 'measured', trials };
    cache.set(key, choice);
    return choice;
  } finally {
    for (const b of made) b.destroy();
  }
}

/** The prefill tile chosen by {@link choosePrefillTile}, and how. */
export interface TileChoice {
  /** Run the integer-dot tile (mmm.ts MmmOptions.intDot) where a matmul's types allow. */
  intDot: boolean;
  /**
   * 'measured' this load, 'cached' from an earlier measurement on this adapter, 'option' given by the
   * caller, 'unavailable' (no packed_4x8_integer_dot_product, or a weight type the integer tile does not take).
   */
  chosenBy: 'measured' | 'cached' | 'option' | 'unavailable';
  /** Milliseconds per dispatch of each tile, where measured. */
  trials?: { tile: 'float' | 'int8' | 'sgmat'; ms: number }[];
  /** Run the subgroup-matrix tile (kernels/mmm-sgmat.ts) for every matmul: the trial's winner, or the option. */
  subgroupMatrix?: SgmatTile;
}

/** Tokens of a prefill tile trial: 4 token tiles, a typical batch's share of a workgroup grid. */
export const TILE_TRIAL_TOKENS = 4 * TILE_TOKENS;

/**
 * Times the float and the integer-dot prefill tile (kernels/mmm.ts) on the matmul shape `shape` (the
 * feed-forward gate+up of the model: two rows per unit with the norm; N capped at
 * {@link TRIAL_MAX_WEIGHTS} weights) over {@link TILE_TRIAL_TOKENS} tokens of random activations, as
 * {@link chooseMmvLayout} times decode layouts (same bytes for both, round-robin, best of 3), and says
 * whether the integer tile is faster. The issue's rule: integer dot only where it beats the float tile,
 * measured on the adapter, not assumed.
 * @throws EngineError('unsupported_model') when neither tile compiles.
 */
export async function choosePrefillTile(
  gpu: GpuContext,
  shape: MmvShape,
  sgmat?: SgmatTile,
): Promise<TileChoice> {
  const int8 = gpu.wgslFeatures.has('packed_4x8_integer_dot_product') && INT_DOT_TYPES.includes(shape.type);
  if (!int8 && !sgmat) return { intDot: false, chosenBy: 'unavailable' };
  const i = gpu.info;
  const dots = shape.dots ?? 1;
  const norm = shape.norm ?? true;
  const N = Math.max(1, Math.min(shape.N, Math.ceil(TRIAL_MAX_WEIGHTS / (shape.K * dots))));
  const T = TILE_TRIAL_TOKENS;
  const key = `tile|${i.vendor}|${i.architecture}|${i.device}|${i.description}|${shape.K}|${N}|${dots}|${norm}|${shape.type}|${shape.planar ? 'planar' : 'raw'}|${sgmat ? sgmatName(sgmat) : ''}`;
  const hit = tileCache.get(key);
  if (hit) return { ...hit, chosenBy: 'cached' };
  const { device } = gpu;
  const made: GPUBuffer[] = [];
  const buf = (bytes: Uint8Array | number, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) => {
    const size = typeof bytes === 'number' ? bytes : bytes.byteLength;
    const b = device.createBuffer({
      label: 'tile-tune',
      size: Math.max(16, Math.ceil(size / 16) * 16),
      usage,
    });
    if (typeof bytes !== 'number') device.queue.writeBuffer(b, 0, bytes as Uint8Array<ArrayBuffer>);
    made.push(b);
    return b;
  };
  try {
    const { K, type } = shape;
    const wt = { type, planar: shape.planar ? (K * N) / WEIGHT_BLOCK[type].size : undefined };
    const ws = Array.from({ length: dots }, () => buf(randomWeights(type, K, N, Boolean(shape.planar))));
    const rng = mulberry32(K + N);
    const x = buf(new Uint8Array(Float32Array.from({ length: T * K }, () => rng() - 0.5).buffer));
    const g = buf(new Uint8Array(new Float32Array(K).fill(1).buffer));
    const y = buf(T * N * 4);
    const step = buf(new Uint8Array(packStep(T, 0).buffer), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const seg: MatmulSegment = {
      nUnits: N,
      weights: ws.map(() => wt),
      dots: ws.map((_, w) => ({ w, row: 'u' })),
      epilogue: dots === 2 ? `y[t * ${N}u + u] = d0 / (1.0 + exp(-d0)) * d1;` : `y[t * ${N}u + u] = d0;`,
    };
    const runners: {
      tile: 'float' | 'int8' | 'sgmat';
      run: (n: number) => Promise<number>;
      n: number;
      ms: number;
    }[] = [];
    let lastError: unknown;
    const tiles = [
      'float' as const,
      ...(int8 ? (['int8'] as const) : []),
      ...(sgmat ? (['sgmat'] as const) : []),
    ];
    for (const tile of tiles) {
      try {
        const mo: MatmulOptions = {
          K,
          TT: TILE_TOKENS,
          norm: norm ? { eps: 1e-5, type: 'F32' } : undefined,
          segments: [seg],
          extra: ['var<storage, read_write> y: array<f32>'],
        };
        const module = device.createShaderModule({
          label: `tile-tune ${tile}`,
          code:
            tile === 'sgmat' && sgmat
              ? mmmSgmatWGSL(mo, sgmat, sgmat.subgroupSize)
              : mmmWGSL(mo, { intDot: tile === 'int8' }),
        });
        const pipeline = await device.createComputePipelineAsync({
          layout: 'auto',
          compute: { module, entryPoint: 'main' },
        });
        const group = device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: [step, x, ...(norm ? [g] : []), ...ws, y].map((buffer, binding) => ({
            binding,
            resource: { buffer },
          })),
        });
        const nx = mmmWorkgroupsX([seg]);
        const run = async (n: number) => {
          const enc = device.createCommandEncoder({ label: 'tile-tune' });
          const pass = enc.beginComputePass();
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, group);
          for (let k = 0; k < n; k++) pass.dispatchWorkgroups(nx, T / TILE_TOKENS);
          pass.end();
          const t0 = performance.now();
          device.queue.submit([enc.finish()]);
          await device.queue.onSubmittedWorkDone();
          return performance.now() - t0;
        };
        const once = await run(1);
        runners.push({
          tile,
          run,
          n: Math.max(3, Math.min(200, Math.ceil(15 / Math.max(once, 0.01)))),
          ms: Infinity,
        });
      } catch (e) {
        lastError = e;
      }
    }
    if (runners.length === 0) {
      throw new EngineError('unsupported_model', `no prefill tile compiled on this adapter: ${lastError}`, {
        cause: lastError,
      });
    }
    const n = Math.max(...runners.map((r) => r.n), 3);
    for (let round = 0; round < 3; round++) {
      for (const r of runners) r.ms = Math.min(r.ms, (await r.run(n)) / n);
    }
    const trials = runners.map((r) => ({ tile: r.tile, ms: r.ms }));
    const best = trials.reduce((a, b) => (b.ms < a.ms ? b : a));
    const choice: TileChoice = {
      intDot: best.tile === 'int8',
      chosenBy: 'measured',
      trials,
      ...(best.tile === 'sgmat' ? { subgroupMatrix: sgmat } : {}),
    };
    tileCache.set(key, choice);
    return choice;
  } finally {
    for (const b of made) b.destroy();
  }
}

const tileCache = new Map<string, TileChoice>();
