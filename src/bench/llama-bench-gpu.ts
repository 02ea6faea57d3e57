/**
 * The benchmark, part two — the GPU side (no DOM; runs in the engine worker, a page or Node):
 *
 * - {@link runLlamaBench}: llama-bench's pp/tg tests on a loaded {@link LlamaModel}, at KV depths.
 * - {@link profileGpu}: GPU time per kernel family per decode token and per prefill token with
 *   `timestamp-query` (LlamaModel's profiling hook: one compute pass per dispatch), busy fraction.
 * - {@link probeMemory}: buffer limits and how much can be allocated at once (freed afterwards).
 * - {@link fitModelOf} / {@link modelFits}: the "does it fit" verdict for a GGUF header or synthetic model.
 */
import { EngineError } from '../core/errors.ts';
import type { KvType } from '../core/types.ts';
import { loadContextLength } from '../core/validate.ts';
import type { GgufFile } from '../gguf/types.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { benchTokenIds } from '../util/prng.ts';
import { chainedTokens } from '../webgpu/decoder.ts';
import { rowBytes, WEIGHT_BLOCK, WEIGHT_TYPES, type WeightType } from '../webgpu/kernels/common.ts';
import { isPlanarType, planarBytes } from '../webgpu/kernels/repack.ts';
import type { SampleSettings } from '../webgpu/kernels/sample.ts';
import type { LlamaModel } from '../webgpu/model/llama.ts';
import type { KernelFamilyName } from '../webgpu/model/options.ts';
import { defaultBatchSize } from '../webgpu/model/prefill.ts';
import { checkKvCacheFits } from '../webgpu/model/state.ts';
import { MATMUL_WEIGHT } from '../webgpu/model/weights.ts';
import {
  busyFraction,
  type FitModel,
  type FitsVerdict,
  fitsVerdict,
  type GpuProfile,
  kernelTable,
  type LlamaBenchPlan,
  type LlamaBenchTest,
  type MemoryProbe,
  meanStd,
  planTests,
  testName,
} from './llama-bench.ts';

/** Progress of {@link runLlamaBench}. */
export interface LlamaBenchProgress {
  test: string;
  /** 0 = warm-up, 1..reps measured. */
  rep: number;
  reps: number;
  tokensPerSecond?: number;
}

/** Prefill of `n` tokens at positions depth.. ; returns seconds until the next token is read back. */
async function timePrefill(model: LlamaModel, n: number, depth: number, seed: number): Promise<number> {
  const ids = benchTokenIds(n, model.cfg.nVocab, seed);
  const t0 = performance.now();
  model.prefillTokens(ids, depth);
  model.submitReadback({ slot: 0 });
  await model.readToken(0);
  return (performance.now() - t0) / 1000;
}

/**
 * Greedy decode of `n` tokens at positions depth..depth+n−1, chained on the GPU (the argmax feeds the
 * next step) with `inFlight` steps (default decoder.ts `DEFAULT_IN_FLIGHT`) queued ahead of each 4-byte
 * readback: webgpu/decoder.ts `chainedTokens`, as `WebGpuEngine.generate` runs.
 * Returns seconds from the first submit to the last token read back.
 */
export async function timeDecode(
  model: LlamaModel,
  n: number,
  depth: number,
  seed: number,
  inFlight?: number,
): Promise<number> {
  const first = benchTokenIds(1, model.cfg.nVocab, seed)[0];
  const t0 = performance.now();
  for await (const _ of chainedTokens(model, { pos: depth + 1, maxTokens: n, firstInput: first, inFlight })) {
    // every token is read back; none is looked at
  }
  return (performance.now() - t0) / 1000;
}

/**
 * llama-bench's tests on a loaded model: for each depth, the KV cache is filled to that depth once (a
 * prefill of `depth` random tokens); each test then runs a warm-up (not counted) and `reps` repetitions
 * at positions depth… . "Restoring" the cache before a repetition is resetting the position to `depth`:
 * a repetition only writes rows ≥ depth, which the next one overwrites, and attention at position p reads
 * rows ≤ p only, so every repetition sees the same cache (what llama-bench does with a saved sequence
 * state). pp tok/s = nPrompt ÷ time to the first token; tg tok/s = nGen ÷ time of the nGen steps.
 * @throws EngineError('context_overflow') when depth + size exceeds the loaded context.
 */
export async function runLlamaBench(
  model: LlamaModel,
  plan: LlamaBenchPlan,
  onProgress?: (p: LlamaBenchProgress) => void,
  signal?: AbortSignal,
): Promise<LlamaBenchTest[]> {
  const out: LlamaBenchTest[] = [];
  let filled = -1;
  let seed = 1;
  for (const t of planTests(plan)) {
    if (signal?.aborted) throw new EngineError('aborted', 'cancelled');
    if (t.depth !== filled) {
      if (t.depth > 0) {
        model.prefillTokens(benchTokenIds(t.depth, model.cfg.nVocab, 7), 0);
        await model.device.queue.onSubmittedWorkDone();
      }
      filled = t.depth;
    }
    const name = testName(t.kind, t.n, t.depth);
    const once = (s: number) =>
      t.kind === 'pp' ? timePrefill(model, t.n, t.depth, s) : timeDecode(model, t.n, t.depth, s);
    if (plan.warmup !== false) {
      await once(seed++);
      onProgress?.({ test: name, rep: 0, reps: plan.reps });
    }
    const samples: number[] = [];
    for (let r = 1; r <= plan.reps; r++) {
      if (signal?.aborted) throw new EngineError('aborted', 'cancelled');
      const tps = t.n / (await once(seed++));
      samples.push(tps);
      onProgress?.({ test: name, rep: r, reps: plan.reps, tokensPerSecond: tps });
    }
    out.push({
      name,
      nPrompt: t.kind === 'pp' ? t.n : 0,
      nGen: t.kind === 'tg' ? t.n : 0,
      depth: t.depth,
      tokensPerSecond: meanStd(samples),
      samples,
    });
  }
  return out;
}

/** Collects timestamp pairs per pass through LlamaModel's profiling hook. */
class PassTimer {
  readonly qs: GPUQuerySet;
  private resolve: GPUBuffer;
  private readback: GPUBuffer;
  families: KernelFamilyName[] = [];
  constructor(
    private device: GPUDevice,
    readonly maxPasses: number,
  ) {
    this.qs = device.createQuerySet({ type: 'timestamp', count: 2 * maxPasses, label: 'profile.timestamps' });
    this.resolve = device.createBuffer({
      label: 'profile.resolve',
      size: 16 * maxPasses,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    });
    this.readback = device.createBuffer({
      label: 'profile.readback',
      size: 16 * maxPasses,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
  }
  passWrites(family: KernelFamilyName): GPUComputePassTimestampWrites | undefined {
    const i = this.families.length;
    if (i >= this.maxPasses) return undefined;
    this.families.push(family);
    return { querySet: this.qs, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
  }
  /** Resolves the passes recorded so far and returns [family, begin, end] per pass; resets. */
  async collect(): Promise<{ family: KernelFamilyName; begin: bigint; end: bigint }[]> {
    const n = this.families.length;
    if (n === 0) return [];
    const enc = this.device.createCommandEncoder({ label: 'profile.resolve' });
    enc.resolveQuerySet(this.qs, 0, 2 * n, this.resolve, 0);
    enc.copyBufferToBuffer(this.resolve, 0, this.readback, 0, 16 * n);
    this.device.queue.submit([enc.finish()]);
    await this.readback.mapAsync(GPUMapMode.READ, 0, 16 * n);
    const ts = new BigUint64Array(this.readback.getMappedRange(0, 16 * n).slice(0));
    this.readback.unmap();
    const fams = this.families;
    this.families = [];
    return fams.map((family, i) => ({ family, begin: ts[2 * i], end: ts[2 * i + 1] }));
  }
  destroy(): void {
    this.qs.destroy();
    this.resolve.destroy();
    this.readback.destroy();
  }
}

/**
 * How coarse the timestamps are: the largest power of two dividing every value (Dawn's quantization masks
 * low bits), or 100 µs when every value is a multiple of it. Returns the resolution in ns (1 = full).
 */
export function timestampResolutionNs(values: readonly bigint[]): number {
  const nz = values.filter((v) => v !== 0n);
  if (nz.length < 4) return 1;
  if (nz.every((v) => v % 100_000n === 0n)) return 100_000;
  let tz = 0;
  while (tz < 40 && nz.every((v) => (v >> BigInt(tz + 1)) << BigInt(tz + 1) === v)) tz++;
  return tz >= 10 ? 2 ** tz : 1;
}

/** Options for {@link profileGpu}. */
export interface ProfileOptions {
  /** Decode steps to time (default 16). */
  decodeTokens?: number;
  /** Prompt tokens to time (default 64, at most what fits one query set). */
  prefillTokens?: number;
}

/**
 * Where the time goes. Times `decodeTokens` greedy decode steps without profiling (wall ms per token, the
 * median of three runs), then
 * the same steps with the profiling hook on (one pass per dispatch, timestamps around each), one step per
 * submit with its timestamps read back; then the same for one prefill. Kernel time is the sum of pass
 * durations per family; busy fraction = GPU ms per token ÷ unprofiled wall ms per token. Leaves the
 * profiling hook off. The KV cache rows from 0 are overwritten.
 */
export async function profileGpu(model: LlamaModel, opts: ProfileOptions = {}): Promise<GpuProfile> {
  const nDec = Math.max(2, Math.min(opts.decodeTokens ?? 16, model.nCtx));
  const dispatches = model.dispatchesPerToken;
  // Median of three unprofiled runs: one slow run (another process on the CPU) does not set the figure.
  const walls: number[] = [];
  for (let i = 0; i < 3; i++) walls.push(((await timeDecode(model, nDec, 0, 3 + i)) * 1000) / nDec);
  const wallMsPerToken = walls.sort((a, b) => a - b)[1];
  const maxForwards = Math.max(1, Math.floor(4096 / (2 * dispatches)));
  const nPre = Math.max(1, Math.min(opts.prefillTokens ?? 64, model.nCtx, maxForwards * model.batchSize));
  const prefillWallMsPerToken = ((await timePrefill(model, nPre, 0, 5)) * 1000) / nPre;
  const base = { dispatchesPerToken: dispatches, wallMsPerToken, prefillWallMsPerToken };
  if (!model.device.features.has('timestamp-query')) {
    return {
      ...base,
      busyFraction: null,
      kernels: [],
      gpuMsPerToken: null,
      timestamps: 'unavailable',
      note: 'this device has no timestamp-query: no GPU time per kernel (Chromium: --enable-dawn-features=allow_unsafe_apis or WebGPUDeveloperFeatures)',
    };
  }
  const timer = new PassTimer(model.device, Math.max(dispatches, maxForwards * dispatches));
  model.profiler = timer;
  const all: bigint[] = [];
  try {
    const sum = (
      passes: { family: KernelFamilyName; begin: bigint; end: bigint }[],
      acc: Record<string, number>,
    ) => {
      for (const p of passes) {
        all.push(p.begin, p.end);
        const d = p.end > p.begin ? Number(p.end - p.begin) : 0;
        acc[p.family] = (acc[p.family] ?? 0) + d;
      }
    };
    const dec: Record<string, number> = {};
    const ids = benchTokenIds(nDec, model.cfg.nVocab, 9);
    for (let i = 0; i < nDec; i++) {
      model.submitDecode(i, { tokenId: ids[i] });
      sum(await timer.collect(), dec);
    }
    const pre: Record<string, number> = {};
    model.prefillTokens(benchTokenIds(nPre, model.cfg.nVocab, 11), 0);
    sum(await timer.collect(), pre);
    const kernels = kernelTable(dec, nDec);
    const prefillKernels = kernelTable(pre, nPre);
    const gpuMsPerToken = Object.values(dec).reduce((a, b) => a + b, 0) / 1e6 / nDec;
    const prefillGpuMsPerToken = Object.values(pre).reduce((a, b) => a + b, 0) / 1e6 / nPre;
    const res = timestampResolutionNs(all);
    const quantized = res > 1;
    return {
      ...base,
      busyFraction: busyFraction(gpuMsPerToken, wallMsPerToken),
      kernels,
      prefillKernels,
      gpuMsPerToken,
      prefillGpuMsPerToken,
      timestamps: quantized ? 'quantized' : 'full',
      resolutionNs: res,
      note: quantized
        ? `timestamps are rounded to ${(res / 1000).toFixed(1)} µs by the browser: short kernels read as 0 and the shares are rough (Chromium: --enable-dawn-features=allow_unsafe_apis or --enable-features=WebGPUDeveloperFeatures gives full resolution)`
        : gpuMsPerToken > wallMsPerToken * 1.05
          ? 'the kernels took longer than an unprofiled step (profiling runs one pass per dispatch, and on a software adapter each pass costs CPU time): the GPU is saturated (busy fraction clamped to 1)'
          : undefined,
    };
  } finally {
    model.profiler = undefined;
    await model.device.queue.onSubmittedWorkDone();
    timer.destroy();
  }
}

/** The sampling of {@link profileSampler}: the sampled decode (temperature 0.8, top-p 0.95, top-k off). */
export const PROFILE_SAMPLING: SampleSettings = {
  temperature: 0.8,
  topK: 0,
  topP: 0.95,
  minP: 0,
  repetitionPenalty: 1,
  repetitionLastN: 64,
};

/**
 * GPU time of the sampler (kernels/sample.ts: every pass, the top-p candidates' included) per sampled
 * decode step, µs: `n` steps with `settings` (default {@link PROFILE_SAMPLING}), one pass per dispatch
 * with timestamps, summing the pick's family (in a sampled step the sampler replaces the argmax). Null
 * without timestamp-query. The KV cache rows from 0 are overwritten.
 */
export async function profileSampler(
  model: LlamaModel,
  n = 16,
  settings: SampleSettings = PROFILE_SAMPLING,
): Promise<number | null> {
  if (!model.device.features.has('timestamp-query')) return null;
  const steps = Math.max(1, Math.min(n, model.nCtx));
  const timer = new PassTimer(model.device, model.dispatchesPerToken + 8);
  const ids = benchTokenIds(steps, model.cfg.nVocab, 13);
  await model.startSampling(settings, 0x5eed, []);
  model.profiler = timer;
  let ns = 0;
  try {
    for (let i = 0; i < steps; i++) {
      model.submitDecode(i, { tokenId: ids[i], sample: i });
      for (const p of await timer.collect())
        if (p.family === 'argmax' && p.end > p.begin) ns += Number(p.end - p.begin);
    }
    return ns / 1000 / steps;
  } finally {
    model.profiler = undefined;
    await model.device.queue.onSubmittedWorkDone();
    timer.destroy();
  }
}

/** Options for {@link probeMemory}. */
export interface ProbeOptions {
  /** Stop once this much is allocated (default: 1 GiB on a software adapter, 64 GiB otherwise). */
  capBytes?: number;
  /** Allocation size (default min(maxBufferSize, 256 MiB)); halved after a failure down to 1/16 of it. */
  chunkBytes?: number;
  /** Stop after this long, ms (default 5000); the answer is then a lower bound (`capped`). */
  timeBudgetMs?: number;
  isFallback?: boolean;
}

/**
 * Buffer limits and allocatable memory: allocates buffers of `chunkBytes` under an 'out-of-memory' error
 * scope until one fails (then tries halves), the cap is reached or the time is up, and destroys them all
 * (waiting for the queue), so a second probe gives the same answer.
 */
export async function probeMemory(device: GPUDevice, opts: ProbeOptions = {}): Promise<MemoryProbe> {
  const t0 = performance.now();
  const maxBufferBytes = device.limits.maxBufferSize;
  const maxBindingBytes = device.limits.maxStorageBufferBindingSize;
  const capBytes = opts.capBytes ?? (opts.isFallback ? 1024 ** 3 : 64 * 1024 ** 3);
  const budget = opts.timeBudgetMs ?? 5000;
  const chunk0 = Math.min(opts.chunkBytes ?? 256 * 1024 ** 2, maxBufferBytes, capBytes);
  const minChunk = Math.max(4, Math.floor(chunk0 / 16 / 4) * 4);
  let chunk = Math.floor(chunk0 / 4) * 4;
  const held: GPUBuffer[] = [];
  let total = 0;
  let capped = false;
  try {
    while (chunk >= minChunk) {
      if (total + chunk > capBytes || performance.now() - t0 > budget) {
        capped = true;
        break;
      }
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      let b: GPUBuffer | undefined;
      try {
        b = device.createBuffer({ label: 'memory-probe', size: chunk, usage: GPUBufferUsage.STORAGE });
      } catch {
        b = undefined;
      }
      const val = await device.popErrorScope();
      const oom = await device.popErrorScope();
      if (!b || oom || val) {
        b?.destroy();
        chunk = Math.floor(chunk / 2 / 4) * 4;
        continue;
      }
      held.push(b);
      total += chunk;
    }
  } finally {
    for (const b of held) b.destroy();
    await device.queue.onSubmittedWorkDone();
  }
  return {
    maxBufferBytes,
    maxBindingBytes,
    maxStorageBuffers: device.limits.maxStorageBuffersPerShaderStage,
    ...(opts.isFallback !== undefined ? { isFallback: opts.isFallback } : {}),
    allocatableBytes: total,
    capped,
    capBytes,
    chunkBytes: chunk0,
    ms: performance.now() - t0,
  };
}

/** The fit arithmetic's view of a GGUF (header only) or synthetic model. @throws EngineError from the config. */
export function fitModelOf(file: GgufFile): FitModel {
  const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
  const tensors = [...file.tensors.values()].map((t) => {
    const K = t.shape[0];
    const rows = t.shape.slice(1).reduce((a, b) => a * b, 1);
    let rb: number;
    try {
      rb = rowBytes(t.typeName as WeightType, K);
    } catch {
      rb = t.nBytes / Math.max(1, rows);
    }
    const type = t.typeName as WeightType;
    const repacked = isPlanarType(type) && MATMUL_WEIGHT.test(t.name);
    // Planes may take more than the file's blocks (Q4_K: 148 bytes per block against 144).
    const gpuBytes = repacked
      ? Math.max(t.nBytes, planarBytes(type, Math.round(t.nBytes / WEIGHT_BLOCK[type].bytes)))
      : t.nBytes;
    return { name: t.name, bytes: t.nBytes, rowBytes: rb, rows, repacked, gpuBytes };
  });
  return {
    nLayers: cfg.nLayers,
    nEmbd: cfg.nEmbd,
    nFF: cfg.nFF,
    nHead: cfg.nHead,
    nHeadKv: cfg.nHeadKv,
    headDim: cfg.headDim,
    nVocab: cfg.nVocab,
    ropeDim: cfg.ropeDim,
    tensors,
  };
}

/**
 * The verdict for a model file at `contextLength` (default: the engine's: min(model's, 2048)) with a KV
 * cache of `kvType` (default f16, the engine's) and the run state of the prefill batch the engine would
 * choose on the probed adapter (model/prefill.ts `defaultBatchSize`: up to 512 tokens on a GPU, 64 on a
 * software adapter); a model the engine cannot run at all (or not with this cache: a q8_0/q4_0 cache for a
 * head size not a multiple of 32) is "does not fit" with the engine's reason.
 */
export function modelFits(
  file: GgufFile,
  mem: MemoryProbe,
  contextLength?: number,
  kvType: KvType = 'f16',
  kvTypeV: KvType = kvType,
): FitsVerdict {
  let m: FitModel;
  let ctx: number;
  let batch: number;
  try {
    m = fitModelOf(file);
    const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
    checkKvCacheFits(cfg, kvType, kvTypeV);
    ctx = loadContextLength(cfg.contextLength, contextLength);
    batch = defaultBatchSize({
      isFallback: mem.isFallback ?? false,
      contextLength: ctx,
      maxStorageBufferBindingSize: mem.maxBindingBytes,
      maxBufferSize: mem.maxBufferBytes,
      nEmbd: cfg.nEmbd,
      nFF: cfg.nFF,
      nVocab: cfg.nVocab,
      qDim: cfg.nHead * cfg.headDim,
    });
  } catch (e) {
    return { ok: false, needBytes: 0, reason: `the engine cannot run this model: ${(e as Error).message}` };
  }
  return fitsVerdict(m, ctx, mem, kvType, batch, kvTypeV);
}
