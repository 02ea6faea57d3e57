/**
 * Choosing the decode kernels' layout by measurement, per adapter and per matmul: a few {@link MmvLayout}
 * candidates suited to the adapter (software adapters want a thread per group of rows with no reduction;
 * GPUs want lanes along K reduced through subgroups) are timed on each of the model's own decode matmul
 * shapes (Q/K/V, attention output, feed-forward gate+up, down, output; {@link MmvShape}) with random
 * weights, and the fastest wins for that matmul. Results are cached per adapter fingerprint and shape for
 * the life of the worker or process, so a second load of the same model (or a model of the same width)
 * measures nothing.
 *
 * Timing: the same number of dispatches for every candidate in one compute pass (enough for the
 * fastest candidate's warm-up dispatch to fill ≥ 15 ms, 5 ms where timed by timestamps, at least 3), after a warm-up dispatch,
 * {@link TRIAL_ROUNDS} rounds run round-robin (3 on software adapters), the median round per candidate. Where the device has `timestamp-query` (GPUs) the pass
 * is timed by the GPU's own timestamps (no submit or map latency), else by wall clock around the submit;
 * every candidate runs the same bytes, so the ratio between candidates is what matters. On GPUs the
 * trial runs the model's whole matrix (up to {@link TRIAL_MAX_BYTES} of weights; a first-rows slice
 * favours the layouts whose workgroups are few and large, which an 8B model's 14,336-row gate+up does
 * not), its dispatches rotating over copies of the matrix so each reads memory, not the cache, as a
 * decode token does ({@link TRIAL_ROTATE_BYTES}); on software adapters its first {@link TRIAL_MAX_WEIGHTS}
 * weights.
 */

import { EngineError } from '../../core/errors.ts';
import { mulberry32 } from '../../util/prng.ts';
import type { GpuContext } from '../device.ts';
import { packStep, rowBytes, scratchBuffers, WEIGHT_BLOCK, type WeightType } from './common.ts';
import type { MatmulOptions, MatmulSegment } from './matmul.ts';
import { INT_DOT_TYPES, mmmWGSL, mmmWorkgroupsX, TILE_ROWS, TILE_TOKENS } from './mmm.ts';
import { type SgmatTile, sgmatName, sgmatTileDims, sgmatTileWGSL } from './mmm-sgmat.ts';
import { type MmvLayout, mmvWGSL, mmvWorkgroupsX } from './mmv.ts';
import { planarBytes } from './repack.ts';

/** What was chosen, and how (recorded in ModelInfo and result JSON). */
export interface MmvChoice {
  layout: MmvLayout;
  /** 'measured' this load, 'cached' from an earlier measurement on this adapter, 'option' given by the caller, 'only' one candidate. */
  chosenBy: 'measured' | 'cached' | 'option' | 'only';
  /** Milliseconds per dispatch of each candidate, where measured. */
  trials?: { layout: MmvLayout; ms: number }[];
  /** Copies of the matrix the measured dispatches rotated over ({@link trialCopies}), where more than one. */
  copies?: number;
}

/** A compact name of a layout, e.g. `lanes32-sg-u2-t128-packed`, `lanes128-hy32-u2-t128` (reduce 'hybrid', 32 lanes shuffled). */
export function layoutName(l: MmvLayout): string {
  const reduce = l.reduce === 'subgroup' ? 'sg' : l.reduce === 'hybrid' ? `hy${l.shuffleLanes}` : 'shared';
  return `lanes${l.lanes}${l.lanes > 1 ? `-${reduce}` : ''}-u${l.units}-t${l.threads}${l.packed ? '-packed' : ''}${l.intDot ? '-int8' : ''}${l.shareX ? `-xs${l.shareX}` : ''}`;
}

/**
 * The layouts worth trying on this adapter. Software (fallback) adapters: a thread per 1, 2 or 4 rows,
 * and 8 rows with the activations shared through subgroups where every subgroup has one size of 2, 4 or 8.
 * GPUs: lanes along K (32, or the adapter's minimum subgroup size when smaller), 1–2 units per lane
 * group, reduced with subgroups where the device has them, else through workgroup memory; the
 * integer-dot variant where WGSL has packed 4×8 dot products; and llama.cpp's GPU shape, a workgroup of
 * 128 lanes along K on 2 or 4 rows (reduce 'hybrid'), float and int8.
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
  // The whole workgroup on a few rows (llama.cpp Vulkan mul_mat_vec on NVIDIA: 128 threads on 2 rows of
  // K-quants, DMMV_WG_SIZE_LARGE; rows / 2 workgroups fill a 132-SM GPU): 128 lanes along K reduced by
  // shuffles within each subgroup and one barrier ('hybrid'), on 2 and 4 rows, float and int8; and one
  // subgroup per workgroup on 2 rows (its DMMV_WG_SIZE_SUBGROUP, for small matrices).
  const wide = sg ? { reduce: 'hybrid' as const, shuffleLanes: lanes } : { reduce: 'shared' as const };
  out.push(
    { lanes: 128, units: 2, threads: 128, ...wide, packed },
    { lanes: 128, units: 4, threads: 128, ...wide, packed },
  );
  if (packed) out.push({ lanes: 128, units: 2, threads: 128, ...wide, packed, intDot: true });
  if (lanes === 32) out.push({ lanes, units: 2, threads: 32, reduce, packed });
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
  // Four bytes per draw: a GPU trial's whole matrix is up to TRIAL_MAX_BYTES.
  const words = new Uint32Array(bytes.buffer, 0, bytes.length >> 2);
  for (let i = 0; i < words.length; i++) words[i] = Math.floor(rng() * 0x1_0000_0000);
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
 * The most bytes of weights a GPU trial dispatch reads (per dot): every Q/K/V, attention output,
 * gate+up and down matrix of an 8B model in full (its Q4_K gate: 14,336 × 4,096 in 33 MB, F16 117 MB);
 * an output matrix beyond it is timed on its first rows.
 */
export const TRIAL_MAX_BYTES = 128 << 20;

/**
 * Bytes a GPU decode trial spreads its dispatches over at most: each dispatch reads the next of several
 * copies of the matrix, so that a matrix smaller than the GPU's last-level cache (an 8B model's Q/K/V,
 * a 1B model's layer matrices; 50–96 MB of L2 on current discrete GPUs) is read from memory as it is in a
 * decode token, where the whole model streams past the cache, not from the cache (which times layouts
 * by their arithmetic and favours the wrong ones). The caller passes min(this, the model's weight bytes):
 * a model that fits in the cache stays there between tokens, and its trial should say so too.
 */
export const TRIAL_ROTATE_BYTES = 192 << 20;

/** The most copies a trial rotates over ({@link TRIAL_ROTATE_BYTES}). */
export const TRIAL_MAX_COPIES = 64;

/**
 * Copies of a trial's matrix for its dispatches to rotate over: as many as fit in `rotateBytes`, at most
 * {@link TRIAL_MAX_COPIES}, so the copies never take more than `rotateBytes` (or one matrix); 1 where
 * two do not fit (a matrix of more than half of it, which streams past a cache of that size anyway).
 * @param bytes the weight bytes one dispatch reads (every dot).
 */
export function trialCopies(bytes: number, rotateBytes: number): number {
  if (!(bytes > 0)) return 1;
  return Math.max(1, Math.min(TRIAL_MAX_COPIES, Math.floor(rotateBytes / bytes)));
}

/** Rounds of every candidate in a GPU trial (software adapters: 3); a candidate's time is its median round. */
export const TRIAL_ROUNDS = 5;

/** The median of `xs` (not empty). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Rows of a trial: all `N` on a GPU up to {@link TRIAL_MAX_BYTES} of weights per dot, else (software
 * adapters) up to {@link TRIAL_MAX_WEIGHTS} weights in all.
 */
export function trialRows(gpu: GpuContext, shape: MmvShape): number {
  const dots = shape.dots ?? 1;
  const cap = gpu.info.isFallback
    ? Math.ceil(TRIAL_MAX_WEIGHTS / (shape.K * dots))
    : Math.floor(TRIAL_MAX_BYTES / rowBytes(shape.type, shape.K));
  return Math.max(1, Math.min(shape.N, cap));
}

/**
 * A function timing `n` dispatches of `encode` in one compute pass, in ms: by the pass's timestamps where
 * the device has `timestamp-query` (`timestamps`), else wall clock around submit and completion.
 * `dispose` frees its query buffers.
 */
function passTimer(
  device: GPUDevice,
  timestamps: boolean,
): {
  time: (n: number, encode: (pass: GPUComputePassEncoder) => void) => Promise<number>;
  dispose: () => void;
} {
  const q = timestamps
    ? {
        set: device.createQuerySet({ type: 'timestamp', count: 2 }),
        resolve: device.createBuffer({
          label: 'mmv-tune timestamps',
          size: 16,
          usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
        }),
        read: device.createBuffer({
          label: 'mmv-tune timestamps read',
          size: 16,
          usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
        }),
      }
    : undefined;
  return {
    async time(n, encode) {
      const enc = device.createCommandEncoder({ label: 'mmv-tune' });
      const pass = enc.beginComputePass(
        q
          ? { timestampWrites: { querySet: q.set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }
          : {},
      );
      for (let k = 0; k < n; k++) encode(pass);
      pass.end();
      if (q) {
        enc.resolveQuerySet(q.set, 0, 2, q.resolve, 0);
        enc.copyBufferToBuffer(q.resolve, 0, q.read, 0, 16);
      }
      const t0 = performance.now();
      device.queue.submit([enc.finish()]);
      if (!q) {
        await device.queue.onSubmittedWorkDone();
        return performance.now() - t0;
      }
      await q.read.mapAsync(GPUMapMode.READ);
      const [a, b] = new BigUint64Array(q.read.getMappedRange().slice(0));
      q.read.unmap();
      // A device may report 0 for both stamps (timestamps quantized or disabled): wall clock then.
      return b > a ? Number(b - a) / 1e6 : performance.now() - t0;
    },
    dispose() {
      q?.set.destroy();
      q?.resolve.destroy();
      q?.read.destroy();
    },
  };
}

/**
 * Times each candidate on the matmul shape `shape` ({@link MmvShape}; N capped by {@link trialRows}) and
 * returns the fastest. With one candidate, nothing is timed. The median ms per dispatch (GPU timestamps
 * or wall clock, as the module's doc says) in `trials`.
 * @param rotateBytes bytes the dispatches rotate over ({@link trialCopies}, {@link TRIAL_ROTATE_BYTES});
 *   0 (the default, and what software adapters get): every dispatch reads the one copy.
 * @throws EngineError('unsupported_model') when no candidate compiles (one that fails is skipped).
 */
export async function chooseMmvLayout(
  gpu: GpuContext,
  shape: MmvShape,
  candidates: MmvLayout[] = mmvCandidates(gpu),
  rotateBytes = 0,
): Promise<MmvChoice> {
  if (candidates.length === 1) return { layout: candidates[0], chosenBy: 'only' };
  const i = gpu.info;
  const dots = shape.dots ?? 1;
  const norm = shape.norm ?? true;
  const N = trialRows(gpu, shape);
  const copies = trialCopies(rowBytes(shape.type, shape.K) * N * dots, rotateBytes);
  const key = `${i.vendor}|${i.architecture}|${i.device}|${i.description}|${shape.K}|${N}|${dots}|${norm}|${shape.type}|${shape.planar ? 'planar' : 'raw'}|${copies}|${candidates.map(layoutName).join(',')}`;
  const hit = cache.get(key);
  if (hit) return { ...hit, chosenBy: 'cached' };
  const { device } = gpu;
  const timer = passTimer(device, gpu.hasTimestamps);
  // A round of the fastest candidate: 15 ms on the wall clock, 5 ms by the GPU's timestamps (precise to
  // the µs, free of submit latency), so 8 candidates × 5 rounds stay well under a second per matmul.
  const roundMs = gpu.hasTimestamps ? 5 : 15;
  const { buf, destroy } = scratchBuffers(device, 'mmv-tune');
  try {
    const { K, type } = shape;
    const wt = { type, planar: shape.planar ? (K * N) / WEIGHT_BLOCK[type].size : undefined };
    const ws = Array.from({ length: dots }, () =>
      buf(
        randomWeights(type, K, N, Boolean(shape.planar)),
        GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      ),
    );
    // The copies the dispatches rotate over: the same bytes at other addresses, copied on the GPU. A
    // device short of memory for them (a draft loading beside its target, a small GPU) times one copy.
    let wCopies = [ws];
    let rotated = 1;
    if (copies > 1) {
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      const enc = device.createCommandEncoder({ label: 'mmv-tune copies' });
      for (let c = 1; c < copies; c++) {
        wCopies.push(
          ws.map((w) => {
            const b = buf(w.size, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
            enc.copyBufferToBuffer(w, 0, b, 0, w.size);
            return b;
          }),
        );
      }
      device.queue.submit([enc.finish()]);
      const invalid = await device.popErrorScope();
      const oom = await device.popErrorScope();
      if (invalid || oom) {
        for (const wc of wCopies.slice(1)) for (const b of wc) b.destroy();
        wCopies = [ws];
      } else rotated = copies;
    }
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
    // Compile every candidate, then time them round-robin (the median of TRIAL_ROUNDS rounds each), so
    // that load from other processes falls on all candidates alike.
    const runners: { layout: MmvLayout; run: (n: number) => Promise<number>; n: number; ms: number[] }[] = [];
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
        const groups = wCopies.map((wc) =>
          device.createBindGroup({
            layout: pipeline.getBindGroupLayout(0),
            entries: [step, x, ...(norm ? [g] : []), ...wc, y].map((buffer, binding) => ({
              binding,
              resource: { buffer },
            })),
          }),
        );
        const nx = mmvWorkgroupsX([seg], layout);
        let next = 0; // the copy the next dispatch reads
        const run = (n: number) =>
          timer.time(n, (pass) => {
            pass.setPipeline(pipeline);
            pass.setBindGroup(0, groups[next++ % groups.length]);
            pass.dispatchWorkgroups(nx);
          });
        const once = await run(1);
        runners.push({
          layout,
          run,
          n: Math.max(3, Math.min(200, Math.ceil(roundMs / Math.max(once, 0.01)))),
          ms: [],
        });
      } catch (e) {
        lastError = e;
      }
    }
    // Dispatches per round: enough for the fastest candidate to fill ≥ roundMs (its warm-up dispatch).
    const n = Math.max(...runners.map((r) => r.n), 3);
    for (let round = 0; round < (i.isFallback ? 3 : TRIAL_ROUNDS); round++) {
      for (const r of runners) r.ms.push((await r.run(n)) / n);
    }
    const trials = runners.map((r) => ({ layout: r.layout, ms: median(r.ms) }));
    if (trials.length === 0) {
      throw new EngineError(
        'unsupported_model',
        `no decode kernel layout compiled on this adapter (${candidates.map(layoutName).join(', ')}): ${lastError}`,
        { cause: lastError },
      );
    }
    const best = trials.reduce((a, b) => (b.ms < a.ms ? b : a));
    const choice: MmvChoice = {
      layout: best.layout,
      chosenBy: 'measured',
      trials,
      ...(rotated > 1 ? { copies: rotated } : {}),
    };
    cache.set(key, choice);
    return choice;
  } finally {
    destroy();
    timer.dispose();
    // Dawn frees destroyed buffers at the next submit: before the model's weights are allocated.
    gpu.device.queue.submit([]);
  }
}

/**
 * The prefill tiles a trial times: the float and integer-dot tiles (kernels/mmm.ts), the subgroup-matrix
 * tile (f16, kernels/mmm-sgmat.ts), its integer variant (`sgmat-int`, i8 → i32) and its large f16 tile
 * (`sgmat-big`, 64 tokens × 128 rows).
 */
export type PrefillTileName = 'float' | 'int8' | 'sgmat' | 'sgmat-int' | 'sgmat-big';

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
  trials?: { tile: PrefillTileName; ms: number }[];
  /**
   * Run the subgroup-matrix tile (kernels/mmm-sgmat.ts; `int` the integer variant, for the matmuls whose
   * weights it takes) for every matmul: the trial's winner, or the option.
   */
  subgroupMatrix?: SgmatTile;
}

/** Tokens of a prefill tile trial on a software adapter: 4 token tiles. */
export const TILE_TRIAL_TOKENS = 4 * TILE_TOKENS;

/**
 * Tokens of a prefill tile trial on a GPU: a whole prefill batch (llama-bench's pp512), a multiple of every
 * tile's token dimension, so each tile runs the grid it runs in the model.
 */
export const TILE_TRIAL_TOKENS_GPU = 512;

/**
 * Multiply-adds of one GPU prefill trial dispatch at most (2^34: ~2 ms at 16 TFLOP/s): enough rows for
 * ≥ 1,000 workgroups of the 32 × 64 tile on an 8B gate+up (4,096 units × 16 token tiles), so that every
 * tile is timed with the GPU full, as in the model, and not on a few workgroups.
 */
export const TILE_TRIAL_MACS = 2 ** 34;

/**
 * A GPU prefill tile trial's first dispatch longer than this (ms) makes every tile run on a share of the
 * batch's tokens instead (a multiple of 64, at least 64), sized to take about this long.
 */
export const TILE_TRIAL_SLOW_MS = 20;

/**
 * A prefill tile trial's tokens and rows: on a GPU {@link TILE_TRIAL_TOKENS_GPU} tokens and up to
 * {@link TILE_TRIAL_MACS} multiply-adds; on a software
 * adapter {@link TILE_TRIAL_TOKENS} tokens and {@link TRIAL_MAX_WEIGHTS} weights.
 */
export function tileTrialDims(gpu: Pick<GpuContext, 'info'>, shape: MmvShape): { T: number; N: number } {
  const dots = shape.dots ?? 1;
  if (gpu.info.isFallback) {
    return {
      T: TILE_TRIAL_TOKENS,
      N: Math.max(1, Math.min(shape.N, Math.ceil(TRIAL_MAX_WEIGHTS / (shape.K * dots)))),
    };
  }
  // (2^34 multiply-adds over 512 tokens are 2^25 weights: 128 MiB in F32, so TRIAL_MAX_BYTES holds too.)
  const T = TILE_TRIAL_TOKENS_GPU;
  return { T, N: Math.max(1, Math.min(shape.N, Math.ceil(TILE_TRIAL_MACS / (T * shape.K * dots)))) };
}

/**
 * Times the float and the integer-dot prefill tile (kernels/mmm.ts), and the subgroup-matrix tiles given,
 * on the matmul shape `shape` (the feed-forward gate+up of the model: two rows per unit with the norm)
 * over random activations, tokens and rows as {@link tileTrialDims} says (on a GPU a 512-token batch and
 * enough rows to fill it), as {@link chooseMmvLayout} times decode layouts (same bytes for every tile,
 * round-robin, GPU timestamps where the device has them, the median round), and says which is fastest.
 * The issue's rule: integer dot (or subgroup matrices) only where it beats the float tile, measured on
 * the adapter, not assumed.
 * @throws EngineError('unsupported_model') when neither tile compiles.
 */
export async function choosePrefillTile(
  gpu: GpuContext,
  shape: MmvShape,
  sgmat?: SgmatTile,
  sgmatInt?: SgmatTile,
  sgmatBig?: SgmatTile,
): Promise<TileChoice> {
  const int8 = gpu.wgslFeatures.has('packed_4x8_integer_dot_product') && INT_DOT_TYPES.includes(shape.type);
  const sgInt = sgmatInt && INT_DOT_TYPES.includes(shape.type) ? sgmatInt : undefined;
  if (!int8 && !sgmat && !sgInt && !sgmatBig) return { intDot: false, chosenBy: 'unavailable' };
  const i = gpu.info;
  const dots = shape.dots ?? 1;
  const norm = shape.norm ?? true;
  const { T, N } = tileTrialDims(gpu, shape);
  const key = `tile|${T}|${i.vendor}|${i.architecture}|${i.device}|${i.description}|${shape.K}|${N}|${dots}|${norm}|${shape.type}|${shape.planar ? 'planar' : 'raw'}|${sgmat ? sgmatName(sgmat) : ''}|${sgInt ? sgmatName(sgInt) : ''}|${sgmatBig ? sgmatName(sgmatBig) : ''}`;
  const hit = tileCache.get(key);
  if (hit) return { ...hit, chosenBy: 'cached' };
  const { device } = gpu;
  const { buf, destroy } = scratchBuffers(device, 'tile-tune');
  const timer = passTimer(device, gpu.hasTimestamps);
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
      tile: PrefillTileName;
      run: (n: number) => Promise<number>;
      n: number;
      ms: number[];
    }[] = [];
    const roundMs = gpu.hasTimestamps ? 5 : 15;
    let tokens = T; // the tokens each dispatch computes (fewer on a slow GPU, below)
    let lastError: unknown;
    const tiles = [
      'float' as const,
      ...(int8 ? (['int8'] as const) : []),
      ...(sgmat ? (['sgmat'] as const) : []),
      ...(sgInt ? (['sgmat-int'] as const) : []),
      ...(sgmatBig ? (['sgmat-big'] as const) : []),
    ];
    const tileOf = (tile: PrefillTileName) =>
      tile === 'sgmat' ? sgmat : tile === 'sgmat-int' ? sgInt : tile === 'sgmat-big' ? sgmatBig : undefined;
    for (const tile of tiles) {
      const sg = tileOf(tile);
      // The dispatch follows the tile (the large one: 64 tokens × 128 rows; T is a multiple of 64).
      const dims = sg ? sgmatTileDims(sg) : { tokens: TILE_TOKENS, rows: TILE_ROWS };
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
          code: sg ? sgmatTileWGSL(mo, sg) : mmmWGSL(mo, { intDot: tile === 'int8' }),
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
        const nx = mmmWorkgroupsX([seg], dims.rows);
        const run = (n: number) =>
          timer.time(n, (pass) => {
            pass.setPipeline(pipeline);
            pass.setBindGroup(0, group);
            pass.dispatchWorkgroups(nx, tokens / dims.tokens);
          });
        const once = await run(1);
        // A GPU that takes longer than TILE_TRIAL_SLOW_MS for the first tile's whole batch (an integrated
        // or mobile one) times every tile on fewer tokens of it, so the trial stays well under a second.
        if (runners.length === 0 && !i.isFallback && once > TILE_TRIAL_SLOW_MS)
          tokens = Math.max(64, Math.floor((T * TILE_TRIAL_SLOW_MS) / once / 64) * 64);
        runners.push({
          tile,
          run,
          // With timestamps (or a dispatch of a whole round) one dispatch is timed well; else a few.
          n: Math.max(
            gpu.hasTimestamps || once >= roundMs ? 1 : 3,
            Math.min(200, Math.ceil(roundMs / Math.max(once, 0.01))),
          ),
          ms: [],
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
    const n = Math.max(...runners.map((r) => r.n));
    for (let round = 0; round < (i.isFallback ? 3 : TRIAL_ROUNDS); round++) {
      for (const r of runners) r.ms.push((await r.run(n)) / n);
    }
    const trials = runners.map((r) => ({ tile: r.tile, ms: median(r.ms) }));
    const best = trials.reduce((a, b) => (b.ms < a.ms ? b : a));
    const choice: TileChoice = {
      intDot: best.tile === 'int8',
      chosenBy: 'measured',
      trials,
      ...(best.tile === 'sgmat' ? { subgroupMatrix: sgmat } : {}),
      ...(best.tile === 'sgmat-int' ? { subgroupMatrix: sgInt } : {}),
      ...(best.tile === 'sgmat-big' ? { subgroupMatrix: sgmatBig } : {}),
    };
    tileCache.set(key, choice);
    return choice;
  } finally {
    destroy();
    timer.dispose();
    // Dawn frees destroyed buffers at the next submit: before the model's weights are allocated.
    gpu.device.queue.submit([]);
  }
}

const tileCache = new Map<string, TileChoice>();
