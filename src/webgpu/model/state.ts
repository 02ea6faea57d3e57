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
import { kvBytesPerElement, MAX_SPLITS } from '../kernels/attention.ts';
import { STEP_BYTES } from '../kernels/common.ts';
import { HISTORY_HEADER, SAMPLE_PARAMS_BYTES } from '../kernels/sample.ts';
import type { GpuWeight } from './weights.ts';

/** The sizes the run state depends on besides the model's config. */
export interface RunStateSize {
  /** KV cache length in tokens. */
  nCtx: number;
  /** Tokens per prefill batch the activations hold. */
  batchSize: number;
  kvType: KvType;
  /** Allocate `xn`, the prefill batch's normed input (options.ts `PrefillMatmul` normPass). */
  normPass?: boolean;
}

/** Buffers of the run state, by the kernels' binding names where they have one (B = batchSize). */
export interface RunState {
  /** Per layer [nCtx, kvDim] (f16 or f32). */
  kCache: GPUBuffer[];
  vCache: GPUBuffer[];
  /** Flash-decoding partial outputs [MAX_SPLITS, 1, qDim] f32. */
  partO: GPUBuffer;
  /** Flash-decoding partial (max, sum) [MAX_SPLITS, 1, nHead] vec2<f32>. */
  partMl: GPUBuffer;
  /** Residual stream [B, nEmbd] f32. */
  x: GPUBuffer;
  /** The batch's input RMSNorm for the Q/K/V and gate/up matmuls [B, nEmbd] f32, with normPass only. */
  xn?: GPUBuffer;
  /** Attention output [B, nHead·headDim] f32. */
  xb: GPUBuffer;
  /** Queries after RoPE [B, nHead·headDim] f32. */
  q: GPUBuffer;
  /** qwen3: this step's keys before their per-head norm and RoPE [B, kvDim] f32 (kernels/headnorm.ts). */
  kNew?: GPUBuffer;
  /** SwiGLU hidden [B, nFF] f32. */
  hb: GPUBuffer;
  /** Logits [nVocab] f32. */
  logits: GPUBuffer;
  /** Token ids [B] u32. */
  ids: GPUBuffer;
  /** The argmax (or sampled) token [1] u32, padded to 16 bytes. */
  tokenOut: GPUBuffer;
  /** The Step uniform (kernels/common.ts `packStep`). */
  step: GPUBuffer;
  /** RoPE table [nCtx, ropeDim/2] vec2<f32> (cos, sin). */
  rope: GPUBuffer;
  /** Gemma: the RoPE table of the sliding-window layers (their own base and scale). */
  ropeSwa?: GPUBuffer;
  /** Gemma: attn_output / ffn_down results before their post-norm [B, nEmbd]. */
  post?: GPUBuffer;
  /** Two token readback slots [1] u32 (16 bytes each). */
  readbacks: GPUBuffer[];
  /** Logits readback [nVocab] f32. */
  logitsReadback: GPUBuffer;
  /**
   * GPU sampler (kernels/sample.ts): its parameters uniform, the penalised copy of the logits [nVocab]
   * f32, and the history ring [count, 0, 0, 0, ring[nCtx]] u32.
   */
  sample: { params: GPUBuffer; work: GPUBuffer; hist: GPUBuffer };
}

/** Bytes of the KV cache: 2 × nLayers × nCtx × kvDim × (2 for f16, 4 for f32). */
export function kvCacheBytes(c: LlamaConfig, nCtx: number, kvType: KvType): number {
  return 2 * c.nLayers * nCtx * c.nHeadKv * c.headDim * kvBytesPerElement(kvType);
}

/** Bytes of everything {@link allocRunState} makes (before the 16-byte minimum of each buffer). */
export function runStateBytes(c: LlamaConfig, z: RunStateSize): number {
  const qDim = c.nHead * c.headDim;
  const kvDim = c.nHeadKv * c.headDim;
  return (
    kvCacheBytes(c, z.nCtx, z.kvType) +
    4 * (z.batchSize * (c.nEmbd + 2 * qDim + c.nFF + 1 + (c.qkNorm ? kvDim : 0)) + c.nVocab * 2) +
    z.nCtx * c.ropeDim * 4 * (c.gemma?.swa ? 2 : 1) +
    (c.gemma ? 4 * z.batchSize * c.nEmbd : 0) +
    (z.normPass ? 4 * z.batchSize * c.nEmbd : 0) +
    // flash-decoding partials: (output, max, sum) per chunk, head and dim
    4 * MAX_SPLITS * (qDim + 2 * c.nHead) +
    // GPU sampler: penalised copy of the logits [nVocab], history ring [nCtx], uniform
    4 * (c.nVocab + HISTORY_HEADER + z.nCtx) +
    SAMPLE_PARAMS_BYTES
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
  const kvRow = kvDim * kvBytesPerElement(z.kvType);
  const kCache: GPUBuffer[] = [];
  const vCache: GPUBuffer[] = [];
  for (let l = 0; l < c.nLayers; l++) {
    kCache.push(buf(`blk.${l}.k_cache`, z.nCtx * kvRow, S));
    vCache.push(buf(`blk.${l}.v_cache`, z.nCtx * kvRow, S));
  }
  const partO = buf('attn_part_o', MAX_SPLITS * qDim * 4, S);
  const partMl = buf('attn_part_ml', MAX_SPLITS * c.nHead * 8, S);
  const x = buf('x', B * c.nEmbd * 4, S);
  const xn = z.normPass ? buf('xn', B * c.nEmbd * 4, S) : undefined;
  const xb = buf('xb', B * qDim * 4, S);
  const q = buf('q', B * qDim * 4, S);
  const kNew = c.qkNorm ? buf('k_new', B * kvDim * 4, S) : undefined;
  const hb = buf('hb', B * c.nFF * 4, S);
  const logits = buf('logits', c.nVocab * 4, S | GPUBufferUsage.COPY_SRC);
  const ids = buf('ids', B * 4, S | GPUBufferUsage.COPY_DST);
  const tokenOut = buf('token_out', 16, S | GPUBufferUsage.COPY_SRC);
  const sample = {
    params: buf('sample_params', SAMPLE_PARAMS_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
    work: buf('sample_work', c.nVocab * 4, S),
    hist: buf('sample_history', (HISTORY_HEADER + z.nCtx) * 4, S | GPUBufferUsage.COPY_DST),
  };
  const step = buf('step', STEP_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  const rope = buf('rope', z.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST);
  const ropeSwa = c.gemma?.swa
    ? buf('rope_swa', z.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST)
    : undefined;
  const post = c.gemma ? buf('post', B * c.nEmbd * 4, S) : undefined;
  const readbacks = [0, 1].map((i) => buf(`token_readback${i}`, 16, R));
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
    hb,
    logits,
    ids,
    tokenOut,
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
