/**
 * The run state of a loaded model (llama2.c's RunState): the KV cache, the activations of one prefill
 * batch, the logits, the uniform Step, the RoPE tables, the readback buffers and the GPU sampler's
 * buffers. {@link allocRunState} makes them; {@link runStateBytes} counts them before anything is made.
 * Also the per-layer Q/K/V bias buffer of qwen2 ({@link qkvBiasBuffer}), copied on the GPU from the three
 * bias tensors once they are uploaded, as it is made alongside the run state at build.
 */
import { EngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import { argmaxSplit } from '../kernels/argmax.ts';
import { kvBytesPerElement, MAX_SPLITS } from '../kernels/attention.ts';
import { STEP_BYTES } from '../kernels/common.ts';
import { isQuantKv, kvRowBytes } from '../kernels/kv-quant.ts';
import { HISTORY_HEADER, SAMPLE_PARAMS_BYTES, sampleSplit, sampleStatsLayout } from '../kernels/sample.ts';
import type { GpuWeight } from './weights.ts';

/**
 * Token readback slots: the chained decode loop (webgpu/decoder.ts) keeps up to READBACK_SLOTS − 1 steps
 * in flight ahead of the token it reads.
 */
export const READBACK_SLOTS = 4;
/** Bytes of a token's buffer (the argmax's or sampler's out, a readback slot): one u32 padded to 16. */
const TOKEN_BYTES = 16;

/** The sizes the run state depends on besides the model's config. */
export interface RunStateSize {
  /** KV cache length in tokens. */
  nCtx: number;
  /** Tokens per prefill batch the activations hold. */
  batchSize: number;
  /** The K cache's element type, and V's unless {@link vKvType}. */
  kvType: KvType;
  /** The V cache's element type where it differs (default kvType). */
  vKvType?: KvType;
  /** Allocate `xn`, the prefill batch's normed input (options.ts `PrefillMatmul` normPass). */
  normPass?: boolean;
  /**
   * Query tokens per flash-decoding dispatch the partials hold (default 1: decode; forward.ts
   * `smallBatchFlash` loads: small-batch.ts `SMALL_BATCH_MAX`).
   */
  flashTokens?: number;
}

/** Buffers of the run state, by the kernels' binding names where they have one (B = batchSize). */
export interface RunState {
  /** Per layer [nCtx, kvDim] (f16, f32, or Q8_0/Q4_0 blocks: kernels/kv-quant.ts). */
  kCache: GPUBuffer[];
  vCache: GPUBuffer[];
  /** Flash-decoding partial outputs [MAX_SPLITS, flashTokens, qDim] f32. */
  partO: GPUBuffer;
  /** Flash-decoding partial (max, sum) [MAX_SPLITS, flashTokens, nHead] vec2<f32>. */
  partMl: GPUBuffer;
  /** Residual stream [B, nEmbd] f32. */
  x: GPUBuffer;
  /** The batch's input RMSNorm for the Q/K/V and gate/up matmuls [B, nEmbd] f32, with normPass only. */
  xn?: GPUBuffer;
  /** Attention output [B, nHead·headDim] f32. */
  xb: GPUBuffer;
  /** Queries after RoPE [B, nHead·headDim] f32. */
  q: GPUBuffer;
  /**
   * This step's keys [B, kvDim] f32: qwen3's before their per-head norm and RoPE (kernels/headnorm.ts), and
   * with a quantized K cache those the quantizer writes (kernels/kv-quant.ts).
   */
  kNew?: GPUBuffer;
  /** This step's values [B, kvDim] f32 for the quantizer, with a quantized V cache only. */
  vNew?: GPUBuffer;
  /** SwiGLU hidden [B, nFF] f32. */
  hb: GPUBuffer;
  /** Logits [nVocab] f32. */
  logits: GPUBuffer;
  /** Token ids [B] u32. */
  ids: GPUBuffer;
  /** The argmax (or sampled) token [1] u32, padded to 16 bytes. */
  tokenOut: GPUBuffer;
  /** The argmax's partial maxima [nParts, 2] u32 (kernels/argmax.ts `argmaxSplit`). */
  argmaxPartials: GPUBuffer;
  /** The Step uniform (kernels/common.ts `packStep`). */
  step: GPUBuffer;
  /** RoPE table [nCtx, ropeDim/2] vec2<f32> (cos, sin). */
  rope: GPUBuffer;
  /** Gemma: the RoPE table of the sliding-window layers (their own base and scale). */
  ropeSwa?: GPUBuffer;
  /** Gemma: attn_output / ffn_down results before their post-norm [B, nEmbd]. */
  post?: GPUBuffer;
  /** {@link READBACK_SLOTS} token readback slots [1] u32 (16 bytes each). */
  readbacks: GPUBuffer[];
  /** Logits readback [nVocab] f32. */
  logitsReadback: GPUBuffer;
  /**
   * GPU sampler (kernels/sample.ts): its parameters uniform, the penalised copy of the logits [nVocab]
   * f32 (or the top-k candidates' logits), the history ring [count, 0, 0, 0, ring[nCtx]] u32 and the
   * candidates' ids [nParts · 256] u32 (kernels/sample.ts `sampleCandidatesWGSL`) and the top-p passes'
   * partials and result (`sampleTopPWGSL`, `sampleStatsLayout`).
   */
  sample: { params: GPUBuffer; work: GPUBuffer; hist: GPUBuffer; cand: GPUBuffer; stats: GPUBuffer };
}

/**
 * Bytes of the KV cache: nLayers × nCtx × (K's row + V's row), a row of kvDim values taking 4 (f32), 2 (f16),
 * 34/32 (Q8_0) or 18/32 (Q4_0) bytes per value (ggml_row_size; each layer's buffer rounded up to 4 bytes).
 */
export function kvCacheBytes(c: LlamaConfig, nCtx: number, kvType: KvType, vKvType: KvType = kvType): number {
  const kvDim = c.nHeadKv * c.headDim;
  const layer = (t: KvType) => Math.ceil((nCtx * kvDim * kvBytesPerElement(t)) / 4) * 4;
  return c.nLayers * (layer(kvType) + layer(vKvType));
}

/**
 * Refuses a Q8_0/Q4_0 cache for a model whose head size is not a multiple of 32: a block would straddle two
 * heads, which ggml's per-head views of the cache cannot address either (ggml_row_size asserts whole blocks).
 * @throws EngineError('invalid_argument') naming the model's head size and the types that fit.
 */
export function checkKvCacheFits(
  c: Pick<LlamaConfig, 'headDim'>,
  kvType: KvType,
  vKvType: KvType = kvType,
): void {
  for (const [which, t] of [
    ['K', kvType],
    ['V', vKvType],
  ] as const) {
    if (isQuantKv(t) && c.headDim % 32 !== 0)
      throw new EngineError(
        'invalid_argument',
        `a ${t} ${which} cache needs a head size that is a multiple of 32 (whole 32-value blocks per head, as llama.cpp); this model's head size is ${c.headDim}: use f16 or f32`,
      );
  }
}

/** Does this load need the f32 scratch `kNew` (qwen3's head norms, or a quantized K) / `vNew` (a quantized V)? */
function scratchRows(c: LlamaConfig, z: RunStateSize): { k: boolean; v: boolean } {
  return { k: c.qkNorm || isQuantKv(z.kvType), v: isQuantKv(z.vKvType ?? z.kvType) };
}

/**
 * Bytes of the GPU sampler's buffers (kernels/sample.ts): the penalised copy of the logits [nVocab] f32,
 * the history ring [HISTORY_HEADER + nCtx] u32, the uniform, the top-k candidates' ids (`sampleSplit`
 * candBytes: [nParts · 256] u32) and the top-p passes' stats (`sampleStatsLayout`), ~130 kB each at a
 * 128k vocabulary. Made at load whether or not a request samples (RunState.sample).
 */
export function samplerStateBytes(nVocab: number, nCtx: number): number {
  return (
    4 * (nVocab + HISTORY_HEADER + nCtx) +
    SAMPLE_PARAMS_BYTES +
    sampleSplit(nVocab).candBytes +
    sampleStatsLayout(nVocab).statsBytes
  );
}

/**
 * Bytes of everything {@link allocRunState} makes: the sum of the sizes it asks for (each buffer is then
 * rounded up to 4 bytes and to at least 16).
 */
export function runStateBytes(c: LlamaConfig, z: RunStateSize): number {
  const qDim = c.nHead * c.headDim;
  const kvDim = c.nHeadKv * c.headDim;
  return (
    kvCacheBytes(c, z.nCtx, z.kvType, z.vKvType) +
    4 *
      (z.batchSize *
        (c.nEmbd +
          2 * qDim +
          c.nFF +
          1 +
          (scratchRows(c, z).k ? kvDim : 0) +
          (scratchRows(c, z).v ? kvDim : 0)) +
        c.nVocab * 2) +
    z.nCtx * c.ropeDim * 4 * (c.gemma?.swa ? 2 : 1) +
    (c.gemma ? 4 * z.batchSize * c.nEmbd : 0) +
    (z.normPass ? 4 * z.batchSize * c.nEmbd : 0) +
    // flash-decoding partials: (output, max, sum) per chunk, query token, head and dim
    4 * MAX_SPLITS * (z.flashTokens ?? 1) * (qDim + 2 * c.nHead) +
    samplerStateBytes(c.nVocab, z.nCtx) +
    // the argmax's partial maxima (kernels/argmax.ts)
    argmaxSplit(c.nVocab).nParts * 8 +
    // the token out, the Step uniform and the token readback slots
    TOKEN_BYTES +
    STEP_BYTES +
    READBACK_SLOTS * TOKEN_BYTES
  );
}

/** Makes one buffer of at least `size` bytes (the model keeps it, to release it). */
export type BufferMaker = (label: string, size: number, usage: number) => GPUBuffer;

/** Makes the KV cache and run state through `buf`. Their contents are undefined until written. */
export function allocRunState(c: LlamaConfig, z: RunStateSize, buf: BufferMaker): RunState {
  const B = z.batchSize;
  const S = GPUBufferUsage.STORAGE;
  const R = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
  const qDim = c.nHead * c.headDim;
  const kvDim = c.nHeadKv * c.headDim;
  const cacheBytes = (t: KvType) => Math.ceil((z.nCtx * kvRowBytes(t, kvDim)) / 4) * 4;
  const kCache: GPUBuffer[] = [];
  const vCache: GPUBuffer[] = [];
  for (let l = 0; l < c.nLayers; l++) {
    kCache.push(buf(`blk.${l}.k_cache`, cacheBytes(z.kvType), S));
    vCache.push(buf(`blk.${l}.v_cache`, cacheBytes(z.vKvType ?? z.kvType), S));
  }
  const FT = z.flashTokens ?? 1;
  const partO = buf('attn_part_o', MAX_SPLITS * FT * qDim * 4, S);
  const partMl = buf('attn_part_ml', MAX_SPLITS * FT * c.nHead * 8, S);
  const x = buf('x', B * c.nEmbd * 4, S);
  const xn = z.normPass ? buf('xn', B * c.nEmbd * 4, S) : undefined;
  const xb = buf('xb', B * qDim * 4, S);
  const q = buf('q', B * qDim * 4, S);
  const scratch = scratchRows(c, z);
  const kNew = scratch.k ? buf('k_new', B * kvDim * 4, S) : undefined;
  const vNew = scratch.v ? buf('v_new', B * kvDim * 4, S) : undefined;
  const hb = buf('hb', B * c.nFF * 4, S);
  const logits = buf('logits', c.nVocab * 4, S | GPUBufferUsage.COPY_SRC);
  const ids = buf('ids', B * 4, S | GPUBufferUsage.COPY_DST);
  const tokenOut = buf('token_out', TOKEN_BYTES, S | GPUBufferUsage.COPY_SRC);
  const argmaxPartials = buf('argmax_partials', argmaxSplit(c.nVocab).nParts * 8, S);
  const sample = {
    params: buf('sample_params', SAMPLE_PARAMS_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
    work: buf('sample_work', c.nVocab * 4, S),
    hist: buf('sample_history', (HISTORY_HEADER + z.nCtx) * 4, S | GPUBufferUsage.COPY_DST),
    cand: buf('sample_candidates', sampleSplit(c.nVocab).candBytes, S),
    stats: buf('sample_stats', sampleStatsLayout(c.nVocab).statsBytes, S),
  };
  const step = buf('step', STEP_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  const rope = buf('rope', z.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST);
  const ropeSwa = c.gemma?.swa
    ? buf('rope_swa', z.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST)
    : undefined;
  const post = c.gemma ? buf('post', B * c.nEmbd * 4, S) : undefined;
  const readbacks = Array.from({ length: READBACK_SLOTS }, (_, i) =>
    buf(`token_readback${i}`, TOKEN_BYTES, R),
  );
  const logitsReadback = buf('logits_readback', c.nVocab * 4, R);
  return {
    kCache,
    vCache,
    partO,
    partMl,
    x,
    xn,
    xb,
    q,
    kNew,
    vNew,
    hb,
    logits,
    ids,
    tokenOut,
    argmaxPartials,
    step,
    rope,
    ropeSwa,
    post,
    readbacks,
    logitsReadback,
    sample,
  };
}

/**
 * RoPE table [nCtx, ropeDim/2] of (cos θ, sin θ), θ = pos · freqScale · base^(−2i/ropeDim) (llama.cpp's
 * `ggml_rope_ext` with linear scaling, freqScale = 1 / rope.scaling.factor, and θ_i divided by
 * `rope_freqs.weight`[i] where the model has it, or by phi3's chosen LongRoPE factor i), computed in
 * float64 then rounded. `attnFactor` (phi3's rope.scaling.attn_factor; default 1) multiplies cos and sin,
 * as ggml's rope_yarn multiplies them by mscale; dims past ropeDim are not rotated and not scaled.
 */
export function ropeTable(
  nCtx: number,
  ropeDim: number,
  freqBase: number,
  freqScale = 1,
  freqFactors?: Float32Array,
  attnFactor = 1,
): Float32Array {
  const half = ropeDim / 2;
  const out = new Float32Array(nCtx * half * 2);
  for (let p = 0; p < nCtx; p++) {
    for (let i = 0; i < half; i++) {
      const theta = (p * freqScale * freqBase ** ((-2 * i) / ropeDim)) / (freqFactors ? freqFactors[i] : 1);
      out[(p * half + i) * 2] = Math.cos(theta) * attnFactor;
      out[(p * half + i) * 2 + 1] = Math.sin(theta) * attnFactor;
    }
  }
  return out;
}

/**
 * Writes the RoPE tables (after the weights arrived: they need `rope_freqs.weight` when present), and
 * Gemma's sliding-window layers' table with their own base and scale.
 * @param freqFactors the per-dimension factors [ropeDim/2] (upload.ts `uploadWeights`).
 * @throws EngineError('unsupported_model') when the model has `rope_freqs.weight` but it is not F32.
 */
export function writeRopeTables(
  device: GPUDevice,
  c: LlamaConfig,
  nCtx: number,
  s: RunState,
  freqFactors?: Float32Array,
): void {
  if (c.ropeFreqFactors && !freqFactors) {
    throw new EngineError('unsupported_model', 'rope_freqs.weight must be F32');
  }
  const scale = c.ropeScaling ? 1 / c.ropeScaling.factor : 1;
  device.queue.writeBuffer(
    s.rope,
    0,
    ropeTable(nCtx, c.ropeDim, c.ropeFreqBase, scale, freqFactors, c.phi3?.ropeAttnFactor),
  );
  const swa = c.gemma?.swa;
  if (swa && s.ropeSwa) {
    device.queue.writeBuffer(
      s.ropeSwa,
      0,
      ropeTable(nCtx, c.ropeDim, swa.ropeFreqBase, swa.ropeFreqScale, freqFactors),
    );
  }
}

/**
 * One F32 buffer [qDim + 2·kvDim] holding layer l's Q, K and V biases back to back (qwen2), copied on the
 * GPU from the three bias tensors.
 * @throws EngineError('unsupported_model') for biases that are not F32.
 */
export function qkvBiasBuffer(
  device: GPUDevice,
  l: number,
  b: [GpuWeight, GpuWeight, GpuWeight],
  buf: BufferMaker,
): GPUBuffer {
  for (const w of b) {
    if (w.type !== 'F32')
      throw new EngineError(
        'unsupported_model',
        `bias ${w.name} is ${w.type}; only F32 biases are supported`,
      );
  }
  const sizes = b.map((w) => w.K * w.N * 4);
  const out = buf(
    `blk.${l}.attn_qkv.bias`,
    sizes[0] + sizes[1] + sizes[2],
    GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
  );
  const enc = device.createCommandEncoder({ label: 'qkv bias' });
  let off = 0;
  b.forEach((w, i) => {
    enc.copyBufferToBuffer(w.parts[0].buffer, 0, out, off, sizes[i]);
    off += sizes[i];
  });
  device.queue.submit([enc.finish()]);
  return out;
}
