/**
 * The benchmark, part two — the pure parts (no GPU, no DOM): llama-bench test names and statistics, the
 * "does it fit" arithmetic, the kernel-share table and busy fraction, and the cost of a million tokens.
 * The GPU side (running the tests, profiling, probing memory) is in `llama-bench-gpu.ts`.
 */
import type { KvType } from '../core/types.ts';
import { kvTypeBytes } from '../core/validate.ts';
import type { LlamaConfig } from '../model/config.ts';
import { samplerStateBytes } from '../webgpu/model/state.ts';

/** One llama-bench test as the result file stores it (`tests[]`). */
export interface LlamaBenchTest {
  /** `pp512`, `tg128`, with `@ d2048` for a KV depth (llama-bench's own names). */
  name: string;
  nPrompt: number;
  nGen: number;
  depth: number;
  /** Over the measured repetitions (population standard deviation, as llama-bench's `stdev`… of samples). */
  tokensPerSecond: { mean: number; std: number };
  /** Tokens/s of each measured repetition. */
  samples: number[];
}

/** What to run (llama-bench's -p, -n, -d, -r). */
export interface LlamaBenchPlan {
  /** Prompt sizes for pp tests (0 = none). */
  nPrompt: number[];
  /** Generation lengths for tg tests (0 = none). */
  nGen: number[];
  /** KV-cache depths. */
  depths: number[];
  /** Measured repetitions per test. */
  reps: number;
  /** One untimed run per test before the repetitions (default true). */
  warmup?: boolean;
}

/** Adapter memory facts (`memory` in the result). */
export interface MemoryProbe {
  maxBufferBytes: number;
  maxBindingBytes: number;
  /** maxStorageBuffersPerShaderStage of the probed device (8, the spec's default, where unknown). */
  maxStorageBuffers?: number;
  /**
   * The probed adapter is a software one (SwiftShader): the engine's prefill batch is 64 tokens there,
   * up to 512 on GPUs (model/prefill.ts `defaultBatchSize`), and the run state grows with it.
   */
  isFallback?: boolean;
  /** Bytes that could be allocated at once (a lower bound when `capped`). */
  allocatableBytes: number;
  /** True when the probe stopped at its cap before an allocation failed. */
  capped: boolean;
  capBytes: number;
  /** Size of each probe allocation. */
  chunkBytes: number;
  ms: number;
}

/** Whether a model fits (`model.fits`). */
export interface FitsVerdict {
  ok: boolean;
  needBytes: number;
  reason: string;
  /**
   * False when the verdict rests on a capped memory probe (the model needs more than the probe's cap, so
   * it may still fit); true otherwise.
   */
  certain?: boolean;
  /** Weights, KV cache and run state (activations, logits, RoPE table). */
  weightBytes?: number;
  kvBytes?: number;
  stateBytes?: number;
  contextLength?: number;
  /** The KV-cache element type the need was computed for (2 bytes per element for f16, 4 for f32). */
  kvType?: KvType;
}

/** One kernel family's GPU time. */
export interface KernelShare {
  name: string;
  msPerToken: number;
  share: number;
}

/** Where the time goes (`gpu` in the result). */
export interface GpuProfile {
  /** GPU time per decode token ÷ wall time per decode token (null without timestamps). */
  busyFraction: number | null;
  dispatchesPerToken: number;
  /** Decode: per kernel family, ms per token and share of the GPU time. */
  kernels: KernelShare[];
  /** Prefill: per kernel family, ms per prompt token. */
  prefillKernels?: KernelShare[];
  /** Sum of the decode kernels' GPU time per token, ms. */
  gpuMsPerToken: number | null;
  /** Wall time per decode token (unprofiled, one pass per step), ms. */
  wallMsPerToken: number;
  prefillGpuMsPerToken?: number | null;
  prefillWallMsPerToken?: number;
  /** 'full': ns timestamps; 'quantized': the browser rounds them (e.g. to 100 µs); 'unavailable'. */
  timestamps: 'full' | 'quantized' | 'unavailable';
  /** Smallest non-zero step seen between timestamps, ns (a hint of the quantization). */
  resolutionNs?: number;
  note?: string;
}

/** What a token costs (`cost` in the result). */
export interface TokenCost {
  /** Price per hour of the machine: the instance price (remote) or power × electricity price (local). */
  pricePerHour: number;
  currency: string;
  /** At the measured decode tokens/s. */
  per1MOutputTokens: number;
  /** 'remote' (instance price) or 'local' (power draw × electricity). */
  basis: 'remote' | 'local';
  powerW?: number;
  pricePerKWh?: number;
  tokensPerSecond: number;
}

/** The kernel families of the forward pass, in order. */
export const KERNEL_FAMILIES = [
  'embed',
  'qkv',
  'attention',
  'wo',
  'ffn',
  'down',
  'output',
  'argmax',
] as const;
export type KernelFamily = (typeof KERNEL_FAMILIES)[number];

/** llama-bench's test name: `pp512`, `tg128`, `pp512 @ d2048`. */
export function testName(kind: 'pp' | 'tg', n: number, depth: number): string {
  return `${kind}${n}${depth > 0 ? ` @ d${depth}` : ''}`;
}

/** Mean and population standard deviation (0 for one sample; NaN mean for none). */
export function meanStd(xs: readonly number[]): { mean: number; std: number } {
  if (xs.length === 0) return { mean: Number.NaN, std: 0 };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length;
  return { mean, std: Math.sqrt(v) };
}

/** The tests a plan expands to, in llama-bench's order (pp then tg, per depth). */
export function planTests(plan: LlamaBenchPlan): { kind: 'pp' | 'tg'; n: number; depth: number }[] {
  const out: { kind: 'pp' | 'tg'; n: number; depth: number }[] = [];
  for (const depth of plan.depths) {
    for (const n of plan.nPrompt) if (n > 0) out.push({ kind: 'pp', n, depth });
    for (const n of plan.nGen) if (n > 0) out.push({ kind: 'tg', n, depth });
  }
  return out;
}

/** KV-cache length a plan needs: the deepest test's depth + its tokens. */
export function planContext(plan: LlamaBenchPlan): number {
  let m = 1;
  for (const t of planTests(plan)) m = Math.max(m, t.depth + t.n);
  return m;
}

/**
 * KV depths for a sweep up to the loaded context: 0, 1024, 2048, 4096, … (doubling) below the deepest
 * depth a test of `testTokens` tokens still fits at (`contextLength − testTokens`), then that depth itself,
 * so the tok/s-against-depth chart reaches the context. A context too short for 1024 gets 0, ¼, ½ and all
 * of the deepest depth. Empty when not even depth 0 fits.
 */
export function sweepDepths(contextLength: number, testTokens: number): number[] {
  const deepest = Math.floor(contextLength - Math.max(1, testTokens));
  if (deepest < 0) return [];
  const out = [0];
  if (deepest >= 1024) for (let d = 1024; d < deepest; d *= 2) out.push(d);
  else for (const f of [0.25, 0.5]) out.push(Math.floor(deepest * f));
  out.push(deepest);
  return [...new Set(out)].filter((d) => d >= 0).sort((x, y) => x - y);
}

/** Checks a plan. @returns an error message, or undefined when it is valid. */
export function planProblem(plan: LlamaBenchPlan): string | undefined {
  const ints = (xs: number[], min: number) => xs.every((x) => Number.isInteger(x) && x >= min);
  if (!ints(plan.nPrompt, 0) || !ints(plan.nGen, 0)) return 'sizes must be integers ≥ 0';
  if (!ints(plan.depths, 0) || plan.depths.length === 0) return 'depths must be integers ≥ 0';
  if (!(Number.isInteger(plan.reps) && plan.reps >= 1)) return 'reps must be an integer ≥ 1';
  if (planTests(plan).length === 0) return 'no test: give a prompt size or a generation length > 0';
  return undefined;
}

/**
 * GPU busy fraction: GPU time per token ÷ wall time per token, clamped to [0, 1] (timestamp rounding can
 * push it slightly past 1). Null when either is missing or the wall time is not positive.
 */
export function busyFraction(
  gpuMsPerToken: number | null | undefined,
  wallMsPerToken: number,
): number | null {
  if (gpuMsPerToken === null || gpuMsPerToken === undefined || !(wallMsPerToken > 0)) return null;
  return Math.min(1, Math.max(0, gpuMsPerToken / wallMsPerToken));
}

/**
 * The kernel table: total ns per family over `tokens` tokens → ms per token and share of the sum, sorted by
 * share (largest first). Families with no time are left out.
 */
export function kernelTable(nsByFamily: Readonly<Record<string, number>>, tokens: number): KernelShare[] {
  const total = Object.values(nsByFamily).reduce((a, b) => a + b, 0);
  return Object.entries(nsByFamily)
    .filter(([, ns]) => ns > 0)
    .map(([name, ns]) => ({ name, msPerToken: ns / 1e6 / tokens, share: total > 0 ? ns / total : 0 }))
    .sort((a, b) => b.share - a.share);
}

/**
 * Cost of a million output tokens at `tokensPerSecond`: pricePerHour ÷ (tokens/s × 3600) × 1e6.
 * Local: pricePerHour = powerW / 1000 × pricePerKWh.
 * @throws Error for a non-positive rate or a negative price.
 */
export function tokenCost(
  input:
    | { basis: 'remote'; pricePerHour: number; currency?: string; tokensPerSecond: number }
    | { basis: 'local'; powerW: number; pricePerKWh: number; currency?: string; tokensPerSecond: number },
): TokenCost {
  if (!(input.tokensPerSecond > 0)) throw new Error('tokens/s must be > 0 to price a token');
  const pricePerHour =
    input.basis === 'remote' ? input.pricePerHour : (input.powerW / 1000) * input.pricePerKWh;
  if (!(pricePerHour >= 0)) throw new Error('the price must be ≥ 0');
  const per1MOutputTokens = (pricePerHour / (input.tokensPerSecond * 3600)) * 1e6;
  return {
    pricePerHour,
    currency: input.currency ?? 'USD',
    per1MOutputTokens,
    basis: input.basis,
    ...(input.basis === 'local' ? { powerW: input.powerW, pricePerKWh: input.pricePerKWh } : {}),
    tokensPerSecond: input.tokensPerSecond,
  };
}

/** The parts of a model config the fit arithmetic needs. */
export interface FitModel
  extends Pick<
    LlamaConfig,
    'nLayers' | 'nEmbd' | 'nFF' | 'nHead' | 'nHeadKv' | 'headDim' | 'nVocab' | 'ropeDim'
  > {
  /**
   * Tensors: name, bytes, bytes per row (ne[0] elements), rows, and whether the engine repacks it into
   * planes at load (its raw bytes then pass through a staging buffer, one part at a time).
   */
  /** `bytes` as in the file; `gpuBytes` on the GPU where it differs (repacked planes, kernels/repack.ts). */
  tensors: {
    name: string;
    bytes: number;
    rowBytes: number;
    rows: number;
    repacked?: boolean;
    gpuBytes?: number;
  }[];
}

/**
 * Bytes the engine allocates for a model at a context length (LlamaModel.load): the weights as stored,
 * the KV cache of the chosen element type (2 × layers × ctx × kvDim × 2 for f16, the default, × 4 for f32)
 * and the run state for a prefill batch (activations,
 * logits, RoPE table, the GPU sampler's buffers, as webgpu/model/state.ts `runStateBytes`), plus, at the peak of a load, the staging buffer of the
 * largest repacked tensor (`stagingBytes`; kernels/repack.ts: planes take the raw size rounded up to
 * 16 bytes per part, Q4_K's 148/144 of it, and each part's raw bytes wait in a staging buffer until the
 * part is complete).
 */
export function modelNeedBytes(
  m: FitModel,
  contextLength: number,
  kvType: KvType = 'f16',
  batchSize = 64,
  kvTypeV: KvType = kvType,
): { weightBytes: number; kvBytes: number; stateBytes: number; stagingBytes: number; needBytes: number } {
  const weightBytes = m.tensors.reduce((a, t) => a + (t.gpuBytes ?? t.bytes), 0);
  const qDim = m.nHead * m.headDim;
  const kvDim = m.nHeadKv * m.headDim;
  const B = Math.max(1, Math.min(batchSize, contextLength));
  // K's and V's rows in their own types (q8_0: 34 bytes per 32 values, q4_0: 18: ggml_row_size).
  const kvBytes = (kvTypeBytes(kvType) + kvTypeBytes(kvTypeV)) * m.nLayers * contextLength * kvDim;
  // A quantized K or V keeps the batch's rows in f32 until they are quantized into the cache.
  const quantRows = [kvType, kvTypeV].filter((t) => t === 'q8_0' || t === 'q4_0').length;
  const stateBytes =
    4 * (B * (m.nEmbd + 2 * qDim + m.nFF + 1 + quantRows * kvDim) + m.nVocab * 2) +
    contextLength * m.ropeDim * 4 +
    samplerStateBytes(m.nVocab, contextLength);
  const stagingBytes = Math.max(0, ...m.tensors.filter((t) => t.repacked).map((t) => t.bytes + 16));
  return {
    weightBytes,
    kvBytes,
    stateBytes,
    stagingBytes,
    needBytes: weightBytes + kvBytes + stateBytes + stagingBytes,
  };
}

function gb(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024).toFixed(1)} KiB`;
}

/**
 * Does the model fit this adapter at `contextLength`? Checks, in order: each tensor's rows against the
 * binding limit (any matrix larger than a binding is split by rows, as LlamaModel.load does; token_embd's
 * parts must fit the embedding kernel's storage bindings, `maxStorageBuffers` − 2), each KV-cache layer
 * against the buffer limit, then the total (with the repacking staging peak) against the allocatable
 * memory. When the memory probe was capped and the model needs more than the cap, the verdict is not ok
 * and says the answer is unknown past the cap.
 */
export function fitsVerdict(
  m: FitModel,
  contextLength: number,
  mem: MemoryProbe,
  kvType: KvType = 'f16',
  batchSize = 64,
  kvTypeV: KvType = kvType,
): FitsVerdict {
  const need = modelNeedBytes(m, contextLength, kvType, batchSize, kvTypeV);
  const base = { ...need, contextLength, kvType, certain: true };
  const maxBinding = Math.min(mem.maxBindingBytes, mem.maxBufferBytes);
  const maxStorage = mem.maxStorageBuffers ?? 8;
  for (const t of m.tensors) {
    if (t.rowBytes > maxBinding) {
      return {
        ok: false,
        ...base,
        reason: `${t.name} has rows of ${gb(t.rowBytes)}; this adapter binds at most ${gb(maxBinding)} per buffer`,
      };
    }
    if (t.bytes <= maxBinding || t.name !== 'token_embd.weight') continue;
    const parts = Math.ceil(t.rows / Math.floor(maxBinding / t.rowBytes));
    if (parts + 2 > maxStorage) {
      return {
        ok: false,
        ...base,
        reason: `${t.name} is ${gb(t.bytes)} and would need ${parts} buffer bindings of at most ${gb(maxBinding)}; the embedding kernel can bind ${maxStorage - 2} (maxStorageBuffersPerShaderStage ${maxStorage})`,
      };
    }
  }
  const kvLayer = need.kvBytes / 2 / Math.max(1, m.nLayers);
  if (kvLayer > maxBinding) {
    return {
      ok: false,
      ...base,
      reason: `one layer's K cache at ${contextLength} tokens is ${gb(kvLayer)}, more than the largest binding (${gb(maxBinding)}); use a shorter context`,
    };
  }
  if (need.needBytes <= mem.allocatableBytes) {
    return {
      ok: true,
      ...base,
      reason: `needs ${gb(need.needBytes)} (weights ${gb(need.weightBytes)}, ${kvType} KV cache ${gb(need.kvBytes)} at ${contextLength} tokens, state ${gb(need.stateBytes)} for ${Math.max(1, Math.min(batchSize, contextLength))}-token batches); ${mem.capped ? 'at least ' : ''}${gb(mem.allocatableBytes)} allocatable`,
    };
  }
  return {
    ok: false,
    ...base,
    certain: !mem.capped,
    reason: mem.capped
      ? `needs ${gb(need.needBytes)} (weights ${gb(need.weightBytes)}, ${kvType} KV cache ${gb(need.kvBytes)}); the memory probe stopped at its cap of ${gb(mem.allocatableBytes)}, so whether more can be allocated is unknown`
      : `needs ${gb(need.needBytes)} (weights ${gb(need.weightBytes)}, ${kvType} KV cache ${gb(need.kvBytes)} at ${contextLength} tokens) but only ${gb(mem.allocatableBytes)} could be allocated: short by ${gb(need.needBytes - mem.allocatableBytes)}`,
  };
}
