/**
 * An independent float64 CPU forward pass of the llama architecture, for testing the GPU engine: written
 * from llama.cpp's semantics in the plain style of llama2.c's `run.c` (one line per step, shapes in
 * comments), sharing no code with `llama.ts` or the kernels. Slow and memory-hungry (every weight as a
 * float64); meant for tiny models only.
 *
 *   x  = token_embd[token]                                          [nEmbd]
 *   per layer l:
 *     xb = RMSNorm(x) · attn_norm                                   [nEmbd]
 *     q = Wq·xb [qDim], k = Wk·xb [kvDim], v = Wv·xb [kvDim]; RoPE(q, k) at pos; k, v → cache[pos]
 *     per query head h (KV head h / (nHead / nHeadKv)):
 *       att[t] = softmax_t(q_h · k_t / √headDim), t = 0..pos;  o_h = Σ_t att[t] · v_t
 *     x += Wo · o                                                   [nEmbd]
 *     xb = RMSNorm(x) · ffn_norm
 *     x += Wdown · (SiLU(Wgate·xb) ⊙ (Wup·xb))                      [nFF] → [nEmbd]
 *   logits = Wout · (RMSNorm(x) · output_norm)                      [nVocab]; Wout = output or token_embd
 *
 * Shapes are ggml's: a weight [K, N] is N rows of K contiguous elements, and y = W·x means
 * y[n] = Σ_k W[n·K + k] · x[k]. RMSNorm is x / sqrt(mean(x²) + eps) (ggml_rms_norm), then × weight.
 * RoPE (ggml_rope_ext without YaRN): θ_i = pos · freqScale · base^(−2i/ropeDim) for i < ropeDim/2;
 * 'norm' rotates pairs (2i, 2i+1), 'neox' pairs (i, i + ropeDim/2); dims ≥ ropeDim are left alone.
 * Linear scaling: freqScale = 1 / rope.scaling.factor.
 *
 * Gemma 2/3 (llama.cpp src/models/gemma2.cpp, gemma3.cpp), where cfg.gemma is set:
 *   x  = token_embd[token] · √nEmbd
 *   per layer l:
 *     xb = RMSNorm(x) · attn_norm;  q, k, v as above; gemma3: per-head RMSNorm of q, k (attn_{q,k}_norm)
 *     NEOX RoPE with the layer's base and scale (SWA layers: rope.freq_base_swa / its default)
 *     s[t] = q_h · k_t · attnScale; gemma2: s = cap · tanh(s / cap); SWA layers: only pos − t < window
 *     x += RMSNorm(Wo · o) · post_attention_norm
 *     xb = RMSNorm(x) · ffn_norm;  x += RMSNorm(Wdown · (GELU_tanh(Wgate·xb) ⊙ (Wup·xb))) · post_ffw_norm
 *   logits = Wout · (RMSNorm(x) · output_norm); final soft-cap: cap · tanh(logits / cap)
 * The norm weights are used as stored: the converter (conversion/gemma.py) already wrote Gemma's 1 + w.
 *
 * phi3 (llama.cpp src/models/phi3.cpp), where cfg.phi3 is set: the llama pass with
 *   q, k, v = rows [0, qDim), [qDim, qDim + kvDim), [qDim + kvDim, qDim + 2·kvDim) of W_qkv · xb
 *   (attn_qkv, llm_graph_context::build_qkv's views; or separate attn_q/k/v);
 *   gate, up = rows [0, nFF), [nFF, 2·nFF) of ffn_up · xb; hb = SiLU(gate) ⊙ up (ggml_swiglu, unswapped);
 *   NEOX RoPE over ropeDim dims with θ_i / factor_i (rope_factors_short or _long, chosen by the context
 *   length: {@link ReferenceOptions.contextLength}) and cos, sin × rope.scaling.attn_factor;
 *   attention.sliding_window ignored, as llama.cpp ignores it for Phi.
 */
import { EngineError } from '../core/errors.ts';
import type { KvType } from '../core/types.ts';
import { f32ToF16 } from '../gguf/half.ts';
import { CODEC_TYPES, dequantizeRow, quantizeRow } from '../gguf/quantize.ts';
import type { GgufFile } from '../gguf/types.ts';
import { type LlamaConfig, llamaConfigFromGguf } from './config.ts';
import { phi3RopeFactorsTensor } from './config-arch.ts';

/** IEEE binary16 bits → number (exact). */
export function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24; // zero / subnormal
  if (exp === 0x1f) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Tensor types the reference reads: every type {@link dequantizeRow} decodes. */
export const REFERENCE_TYPES: readonly string[] = CODEC_TYPES;

/**
 * Decodes one tensor's raw bytes to float64: F32, F16, BF16 exactly, quantized types (every other type
 * of {@link REFERENCE_TYPES}) through {@link dequantizeRow}, i.e. to the float32 values ggml's `dequantize_row_*` gives.
 */
export function decodeTensor(typeName: string, bytes: Uint8Array, nElements: number): Float64Array {
  if (!REFERENCE_TYPES.includes(typeName)) {
    throw new EngineError(
      'unsupported_model',
      `the reference forward pass reads ${REFERENCE_TYPES.join(', ')}, not ${typeName}`,
    );
  }
  return Float64Array.from(dequantizeRow(typeName, bytes, nElements));
}

interface LayerWeights {
  attnNorm: Float64Array; // [nEmbd]
  wq: Float64Array; // [nEmbd, qDim]
  wk: Float64Array; // [nEmbd, kvDim]
  wv: Float64Array; // [nEmbd, kvDim]
  wo: Float64Array; // [qDim, nEmbd]
  ffnNorm: Float64Array; // [nEmbd]
  wGate: Float64Array; // [nEmbd, nFF]
  wUp: Float64Array; // [nEmbd, nFF]
  wDown: Float64Array; // [nFF, nEmbd]
  bq?: Float64Array; // [qDim] (qwen2)
  bk?: Float64Array; // [kvDim] (qwen2)
  bv?: Float64Array; // [kvDim] (qwen2)
  qNorm?: Float64Array; // [hd] (qwen3)
  kNorm?: Float64Array; // [hd] (qwen3, gemma3)
  postAttnNorm?: Float64Array; // [nEmbd] (gemma)
  postFfnNorm?: Float64Array; // [nEmbd] (gemma)
}

interface Weights {
  tokenEmbd: Float64Array; // [nEmbd, nVocab]
  layers: LayerWeights[];
  outputNorm: Float64Array; // [nEmbd]
  output: Float64Array; // [nEmbd, nVocab] (token_embd when tied)
  ropeFreqs?: Float64Array; // [ropeDim / 2] (Llama 3.1-style factors)
}

/** y[n] = Σ_k W[n·K + k] · x[k] for W [K, N] (llama2.c's matmul, ggml order). */
function matmul(y: Float64Array, x: Float64Array, W: Float64Array, K: number, N: number): void {
  for (let n = 0; n < N; n++) {
    let s = 0;
    const row = n * K;
    for (let k = 0; k < K; k++) s += W[row + k] * x[k];
    y[n] = s;
  }
}

/**
 * x rounded to int8 per 32 values with one scale amax / 127 each, back in float64: the activations an
 * integer-dot matmul multiplies (ggml-quants.c quantize_row_q8_0; kernels/mmm.ts `intDot`). A tail of
 * fewer than 32 values is rounded as one chunk.
 */
export function roundQ8(x: Float64Array): Float64Array {
  const out = new Float64Array(x.length);
  for (let c = 0; c < x.length; c += 32) {
    let am = 0;
    for (let k = c; k < Math.min(c + 32, x.length); k++) am = Math.max(am, Math.abs(x[k]));
    const d = am / 127;
    for (let k = c; k < Math.min(c + 32, x.length); k++) out[k] = d > 0 ? Math.round(x[k] / d) * d : 0;
  }
  return out;
}

/** o = x / sqrt(mean(x²) + eps) · w. */
function rmsnorm(o: Float64Array, x: Float64Array, w: Float64Array, eps: number): void {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const scale = 1 / Math.sqrt(ss / x.length + eps);
  for (let i = 0; i < x.length; i++) o[i] = x[i] * scale * w[i];
}

/** In-place softmax of v[0..n). */
function softmax(v: Float64Array, n: number): void {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) if (v[i] > max) max = v[i];
  let sum = 0;
  for (let i = 0; i < n; i++) {
    v[i] = Math.exp(v[i] - max);
    sum += v[i];
  }
  for (let i = 0; i < n; i++) v[i] /= sum;
}

/** Options for {@link ReferenceLlama.fromGguf}. */
export interface ReferenceOptions {
  /**
   * The context (KV cache) length llama.cpp would run with, in tokens (default: the model's
   * context_length, llama.cpp's n_ctx default); phi3 picks its LongRoPE factors by it
   * ({@link phi3RopeFactorsTensor}).
   */
  contextLength?: number;
}

/** The float64 reference model (weights, config and its own KV cache). */
export class ReferenceLlama {
  readonly cfg: LlamaConfig;
  private readonly w: Weights;
  /** kCache[l][pos] = k at that position [kvDim] (after RoPE); grows with the sequence. */
  private kCache: Float64Array[][];
  /** vCache[l][pos] = v [kvDim]. */
  private vCache: Float64Array[][];
  /**
   * KV-cache element type: `f32` keeps float64 keys and values; `f16` stores them rounded to binary16 (via
   * binary32, as the GPU's pack2x16float of its f32 result and llama.cpp's F16 cache), so the reference
   * computes what an f16-cache engine computes; `q8_0` / `q4_0` store each row (kvDim values, via binary32)
   * quantized by ggml's rules (src/gguf/quant-legacy.ts) and dequantized, as llama.cpp's quantized cache.
   * K's type; V's is {@link vKvType} where set.
   */
  kvType: KvType = 'f32';
  /** The V cache's type where it differs from {@link kvType}. */
  vKvType?: KvType;
  /**
   * Positions below this round the inputs of every layer matmul (Q/K/V, attention output, gate/up, down;
   * not the output) to int8 per 32 ({@link roundQ8}), as the integer-dot prefill tile does; 0 = never.
   */
  int8Before = 0;
  /**
   * Positions from this one on round the layer matmuls' inputs as {@link int8Before} does, as the
   * integer-dot decode kernels do after a float prefill (kernels/mmv.ts `MmvLayout.intDot`); Infinity = never.
   */
  int8From = Number.POSITIVE_INFINITY;
  /**
   * Positions from this one on also round the output matmul's input ({@link roundQ8}): the decode output
   * kernel on mmv's integer-dot path, which also computes the prompt's last logits; Infinity = never.
   */
  int8OutputFrom = Number.POSITIVE_INFINITY;
  /**
   * Gemma's GELU as llama.cpp's CPU backend computes it (ggml-cpu/vec.h ggml_vec_geglu_f32 with
   * GGML_GELU_FP16): x rounded to binary16, looked up in a table of tanh-GELU values rounded to binary16
   * (x ≤ −10 → 0, x ≥ 10 → x). False (default): the exact tanh GELU.
   */
  geluF16Table = false;

  private constructor(cfg: LlamaConfig, w: Weights) {
    this.cfg = cfg;
    this.w = w;
    this.kCache = Array.from({ length: cfg.nLayers }, () => []);
    this.vCache = Array.from({ length: cfg.nLayers }, () => []);
  }

  /**
   * Reads every tensor of `file` into float64 (any of {@link REFERENCE_TYPES}; quantized tensors as their
   * dequantized values, so the reference computes the function the quantized file stands for).
   * @param cfg the configuration (default: {@link llamaConfigFromGguf}); a test may change e.g. ropeType.
   */
  static async fromGguf(
    file: GgufFile,
    cfg: LlamaConfig = llamaConfigFromGguf(file, { supportedTypes: REFERENCE_TYPES }),
    opts: ReferenceOptions = {},
  ): Promise<ReferenceLlama> {
    const raw = new Map<string, Uint8Array>();
    for (const t of file.tensors.values()) raw.set(t.name, new Uint8Array(t.nBytes));
    await file.streamTensorData((c) => {
      raw.get(c.tensor.name)!.set(c.bytes, c.offset);
    });
    const get = (name: string): Float64Array => {
      const t = file.tensors.get(name);
      if (!t) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
      const n = t.shape.reduce((a, b) => a * b, 1);
      return decodeTensor(t.typeName, raw.get(name)!, n);
    };
    const tokenEmbd = get('token_embd.weight');
    const layers: LayerWeights[] = [];
    const qDim = cfg.nHead * cfg.headDim;
    const kvDim = cfg.nHeadKv * cfg.headDim;
    for (let l = 0; l < cfg.nLayers; l++) {
      const b = `blk.${l}`;
      // phi3: attn_qkv [nEmbd, qDim + 2·kvDim] holds the rows of Q, then K, then V (build_qkv's views).
      const qkv = cfg.phi3?.fusedQkv ? get(`${b}.attn_qkv.weight`) : undefined;
      const rows = (a: Float64Array, from: number, n: number) =>
        a.subarray(from * cfg.nEmbd, (from + n) * cfg.nEmbd);
      // phi3: ffn_up [nEmbd, 2·nFF] = [gate | up]: ggml_swiglu (unswapped) applies SiLU to the first half.
      const gateUp = cfg.phi3 ? get(`${b}.ffn_up.weight`) : undefined;
      layers.push({
        attnNorm: get(`${b}.attn_norm.weight`),
        wq: qkv ? rows(qkv, 0, qDim) : get(`${b}.attn_q.weight`),
        wk: qkv ? rows(qkv, qDim, kvDim) : get(`${b}.attn_k.weight`),
        wv: qkv ? rows(qkv, qDim + kvDim, kvDim) : get(`${b}.attn_v.weight`),
        wo: get(`${b}.attn_output.weight`),
        ffnNorm: get(`${b}.ffn_norm.weight`),
        wGate: gateUp ? rows(gateUp, 0, cfg.nFF) : get(`${b}.ffn_gate.weight`),
        wUp: gateUp ? rows(gateUp, cfg.nFF, cfg.nFF) : get(`${b}.ffn_up.weight`),
        wDown: get(`${b}.ffn_down.weight`),
        ...(cfg.qkvBias
          ? { bq: get(`${b}.attn_q.bias`), bk: get(`${b}.attn_k.bias`), bv: get(`${b}.attn_v.bias`) }
          : {}),
        ...(cfg.qkNorm
          ? { qNorm: get(`${b}.attn_q_norm.weight`), kNorm: get(`${b}.attn_k_norm.weight`) }
          : {}),
        ...(cfg.gemma
          ? {
              postAttnNorm: get(`${b}.post_attention_norm.weight`),
              postFfnNorm: get(`${b}.post_ffw_norm.weight`),
            }
          : {}),
      });
    }
    const outputNorm = get('output_norm.weight');
    const output = file.tensors.has('output.weight') ? get('output.weight') : tokenEmbd;
    // phi3: the LongRoPE factors llama.cpp picks for this context (llama_model::get_rope_factors).
    const phi3Factors = cfg.phi3
      ? phi3RopeFactorsTensor(cfg.phi3, opts.contextLength ?? cfg.contextLength)
      : undefined;
    const ropeFreqs = cfg.ropeFreqFactors
      ? get('rope_freqs.weight')
      : phi3Factors
        ? get(phi3Factors)
        : undefined;
    return new ReferenceLlama(cfg, { tokenEmbd, layers, outputNorm, output, ropeFreqs });
  }

  /** Number of positions in the KV cache. */
  get length(): number {
    return this.kCache[0]?.length ?? 0;
  }

  /** Empties the KV cache (a new sequence). */
  reset(): void {
    for (const c of this.kCache) c.length = 0;
    for (const c of this.vCache) c.length = 0;
  }

  /**
   * Runs token `tokenId` at position `pos` (≤ the cached length; a smaller pos drops the positions from
   * pos on) and returns its logits [nVocab].
   */
  forward(tokenId: number, pos: number): Float64Array {
    const c = this.cfg;
    const w = this.w;
    if (!Number.isInteger(tokenId) || tokenId < 0 || tokenId >= c.nVocab) {
      throw new EngineError(
        'invalid_argument',
        `token id ${tokenId} is outside the vocabulary (0..${c.nVocab - 1})`,
      );
    }
    if (!Number.isInteger(pos) || pos < 0 || pos > this.length) {
      throw new EngineError(
        'invalid_argument',
        `position ${pos} would leave a gap (the cache holds ${this.length})`,
      );
    }
    const { nEmbd, nFF, nHead, nHeadKv, headDim: hd, rmsEps: eps } = c;
    const qDim = nHead * hd;
    const kvDim = nHeadKv * hd;
    const kvMul = nHead / nHeadKv; // query heads per KV head
    const freqScale = c.ropeScaling ? 1 / c.ropeScaling.factor : 1;

    const g = c.gemma;
    const x = w.tokenEmbd.slice(tokenId * nEmbd, (tokenId + 1) * nEmbd); // [nEmbd]
    if (g) for (let i = 0; i < nEmbd; i++) x[i] *= g.embdScale; // gemma: × √nEmbd
    const xb = new Float64Array(nEmbd); // normed input [nEmbd]
    const q = new Float64Array(qDim); // [nHead, hd]
    const o = new Float64Array(qDim); // attention output [nHead, hd]
    const y = new Float64Array(nEmbd); // projection back to the residual [nEmbd]
    const hb = new Float64Array(nFF); // gate [nFF]
    const hb2 = new Float64Array(nFF); // up [nFF]
    const att = new Float64Array(pos + 1); // scores [pos + 1]

    // The integer-dot prefill's or decode's activations (int8Before, int8From), or the float ones.
    const q8 = pos < this.int8Before || pos >= this.int8From ? roundQ8 : (a: Float64Array) => a;
    for (let l = 0; l < c.nLayers; l++) {
      const L = w.layers[l];
      rmsnorm(xb, x, L.attnNorm, eps); // xb = RMSNorm(x) · attn_norm
      const xq = q8(xb);
      const k = new Float64Array(kvDim); // [nHeadKv, hd]
      const v = new Float64Array(kvDim); // [nHeadKv, hd]
      matmul(q, xq, L.wq, nEmbd, qDim); // q = Wq · xb
      matmul(k, xq, L.wk, nEmbd, kvDim); // k = Wk · xb
      matmul(v, xq, L.wv, nEmbd, kvDim); // v = Wv · xb
      if (L.bq && L.bk && L.bv) {
        for (let i = 0; i < qDim; i++) q[i] += L.bq[i]; // qwen2: Q/K/V biases
        for (let i = 0; i < kvDim; i++) k[i] += L.bk[i];
        for (let i = 0; i < kvDim; i++) v[i] += L.bv[i];
      }
      if (L.qNorm && L.kNorm) {
        // qwen3: RMSNorm of each head of Q and K before RoPE
        for (let h = 0; h < nHead; h++) headNorm(q, h * hd, hd, L.qNorm, eps);
        for (let h = 0; h < nHeadKv; h++) headNorm(k, h * hd, hd, L.kNorm, eps);
      }
      // gemma: SWA layers have their own RoPE base and scale (llama_model::get_rope_freq_base/scale)
      const swa = g?.swa?.layers[l] ? g.swa : undefined;
      const base = swa ? swa.ropeFreqBase : c.ropeFreqBase;
      const fs = swa ? swa.ropeFreqScale : freqScale;
      const ms = c.phi3?.ropeAttnFactor ?? 1; // phi3: rope.scaling.attn_factor scales cos and sin
      for (let h = 0; h < nHead; h++) rope(q, h * hd, pos, c.ropeDim, base, fs, c.ropeType, w.ropeFreqs, ms);
      for (let h = 0; h < nHeadKv; h++)
        rope(k, h * hd, pos, c.ropeDim, base, fs, c.ropeType, w.ropeFreqs, ms);
      this.kCache[l].length = pos; // drop positions ≥ pos, then store this one
      this.vCache[l].length = pos;
      const store = (a: Float64Array, t: KvType) => {
        if (t === 'f16') return a.map((x) => halfToNumber(f32ToF16(x)));
        if (t === 'f32') return a;
        const T = t.toUpperCase();
        return Float64Array.from(dequantizeRow(T, quantizeRow(T, Float32Array.from(a)), a.length));
      };
      this.kCache[l].push(store(k, this.kvType));
      this.vCache[l].push(store(v, this.vKvType ?? this.kvType));

      const scale = g ? g.attnScale : 1 / Math.sqrt(hd);
      const cap = g ? g.attnSoftcap : 0;
      // SWA layer: keys at t > pos − window only (llama_hparams::is_masked_swa: pos − t ≥ n_swa masked)
      const t0 = swa ? Math.max(0, pos - swa.window + 1) : 0;
      for (let h = 0; h < nHead; h++) {
        const kvOff = Math.floor(h / kvMul) * hd; // GQA: KV head h / (nHead / nHeadKv)
        for (let t = t0; t <= pos; t++) {
          const kt = this.kCache[l][t];
          let s = 0;
          for (let i = 0; i < hd; i++) s += q[h * hd + i] * kt[kvOff + i];
          s *= scale;
          att[t - t0] = cap > 0 ? cap * Math.tanh(s / cap) : s; // causal: only t ≤ pos exist
        }
        softmax(att, pos + 1 - t0);
        for (let i = 0; i < hd; i++) {
          let s = 0;
          for (let t = t0; t <= pos; t++) s += att[t - t0] * this.vCache[l][t][kvOff + i];
          o[h * hd + i] = s;
        }
      }
      matmul(y, q8(o), L.wo, qDim, nEmbd); // y = Wo · o
      if (L.postAttnNorm) rmsnorm(y, y.slice(), L.postAttnNorm, eps); // gemma: post-attention norm
      for (let i = 0; i < nEmbd; i++) x[i] += y[i]; // residual

      rmsnorm(xb, x, L.ffnNorm, eps); // xb = RMSNorm(x) · ffn_norm
      const xf = q8(xb);
      matmul(hb, xf, L.wGate, nEmbd, nFF); // gate
      matmul(hb2, xf, L.wUp, nEmbd, nFF); // up
      if (g) {
        const gelu = this.geluF16Table ? geluF16 : geluTanh;
        for (let i = 0; i < nFF; i++) hb[i] = gelu(hb[i]) * hb2[i]; // gemma: GELU(gate) ⊙ up
      } else {
        for (let i = 0; i < nFF; i++) hb[i] = (hb[i] / (1 + Math.exp(-hb[i]))) * hb2[i]; // SiLU(gate) ⊙ up
      }
      matmul(y, q8(hb), L.wDown, nFF, nEmbd); // down
      if (L.postFfnNorm) rmsnorm(y, y.slice(), L.postFfnNorm, eps); // gemma: post-FFN norm
      for (let i = 0; i < nEmbd; i++) x[i] += y[i]; // residual
    }

    rmsnorm(xb, x, w.outputNorm, eps); // final norm
    const logits = new Float64Array(c.nVocab);
    const xo = pos >= this.int8OutputFrom ? roundQ8(xb) : xb; // int8 on the decode output kernel
    matmul(logits, xo, w.output, nEmbd, c.nVocab); // logits = Wout · xb
    if (g && g.finalSoftcap > 0) {
      const fc = g.finalSoftcap; // final logit soft-capping
      for (let i = 0; i < logits.length; i++) logits[i] = fc * Math.tanh(logits[i] / fc);
    }
    return logits;
  }

  /** Resets, then runs `tokens` from position 0; returns the logits after each token. */
  run(tokens: readonly number[]): Float64Array[] {
    this.reset();
    return tokens.map((t, pos) => this.forward(t, pos));
  }
}

/**
 * Rotates the first `ropeDim` dims of the head at v[off .. off + headDim) by position `pos` (in place).
 * 'norm': pairs (2i, 2i+1); 'neox': pairs (i, i + ropeDim/2); θ_i = pos · freqScale · base^(−2i/ropeDim).
 */
/** In-place RMSNorm of v[off .. off + n) times w [n] (qwen3's per-head Q/K norm). */
function headNorm(v: Float64Array, off: number, n: number, w: Float64Array, eps: number): void {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += v[off + i] * v[off + i];
  const inv = 1 / Math.sqrt(ss / n + eps);
  for (let i = 0; i < n; i++) v[off + i] = v[off + i] * inv * w[i];
}

function rope(
  v: Float64Array,
  off: number,
  pos: number,
  ropeDim: number,
  base: number,
  freqScale: number,
  type: 'norm' | 'neox',
  freqFactors?: Float64Array,
  mscale = 1,
): void {
  const half = ropeDim / 2;
  for (let i = 0; i < half; i++) {
    // ggml_rope_ext: θ_i / freq_factors[i] where the model has rope_freqs.weight
    const theta = (pos * freqScale * base ** ((-2 * i) / ropeDim)) / (freqFactors ? freqFactors[i] : 1);
    const cos = Math.cos(theta) * mscale; // ggml rope_yarn: cos θ · mscale (attn_factor; 1 unless phi3)
    const sin = Math.sin(theta) * mscale;
    const a = off + (type === 'neox' ? i : 2 * i);
    const b = off + (type === 'neox' ? i + half : 2 * i + 1);
    const x0 = v[a];
    const x1 = v[b];
    v[a] = x0 * cos - x1 * sin;
    v[b] = x0 * sin + x1 * cos;
  }
}

/** Tanh-approximated GELU (ggml_gelu_f32): 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))). */
export function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * x * (1 + 0.044715 * x * x)));
}

/** The tanh GELU as ggml's CPU table gives it (ggml-cpu/vec.h, GGML_GELU_FP16); see geluF16Table. */
export function geluF16(x: number): number {
  if (x <= -10) return 0;
  if (x >= 10) return x;
  return halfToNumber(f32ToF16(geluTanh(halfToNumber(f32ToF16(x)))));
}

/** ln softmax of logits (float64). */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - lse);
}

/** Index of the largest value (lowest index on ties). */
export function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
  return best;
}
