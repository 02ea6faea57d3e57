/**
 * What the Gemma 2/3 and Phi-3 architectures add to a llama config, and how they are read: their
 * parameter types (`LlamaConfig.gemma`, `LlamaConfig.phi3`), the readers that take them from GGUF metadata
 * exactly as llama.cpp's loader does, and phi3's choice of LongRoPE factors for a context size. They are
 * apart from config.ts, which reads what every architecture shares and checks the tensors, because each
 * follows its own llama.cpp model file (src/models/gemma2.cpp, gemma3.cpp, phi3.cpp) and grows with it.
 */
import type { GgufFile } from '../gguf/types.ts';
import type { LlamaConfig } from './config.ts';
import { invalid, LIMITS, type Md, num, posFloat, posInt, unsupported } from './config-metadata.ts';

/**
 * What phi3 changes in the llama forward pass (llama.cpp src/models/phi3.cpp, llama-model.cpp):
 * - Q, K and V come from one fused `attn_qkv.weight` [nEmbd, qDim + 2·kvDim] when the file has it (rows:
 *   Q, then K, then V; llm_graph_context::build_qkv's views), else from attn_q/k/v as in llama;
 * - `ffn_up.weight` is [nEmbd, 2·nFF] and there is no ffn_gate: rows 0..nFF are the gate (SiLU), rows
 *   nFF..2·nFF the up projection (build_ffn with LLM_FFN_SWIGLU → ggml_swiglu, unswapped: silu(first
 *   half) · second half);
 * - RoPE is NEOX, over the first `ropeDim` (rope.dimension_count; Phi-4-mini: 96 of 128) dims, with
 *   per-dimension LongRoPE factors `rope_factors_short.weight` / `rope_factors_long.weight` [ropeDim/2]
 *   (θ_i divided by factor i; which one: {@link phi3RopeFactorsTensor}) and cos/sin multiplied by
 *   `ropeAttnFactor`;
 * - `attention.sliding_window` is read and ignored: llama.cpp disables Phi's SWA (n_swa = 0, "Phi SWA is
 *   currently disabled"), so every layer attends to all positions.
 */
export interface Phi3Params {
  /** The layers have `attn_qkv.weight` (else attn_q/k/v). */
  fusedQkv: boolean;
  /** `rope_factors_short.weight` is present. */
  ropeFactorsShort: boolean;
  /** `rope_factors_long.weight` is present. */
  ropeFactorsLong: boolean;
  /**
   * `rope.scaling.original_context_length` (llama.cpp's n_ctx_orig_yarn; default `context_length`): a
   * context longer than this selects the long factors.
   */
  nCtxOrigYarn: number;
  /**
   * `rope.scaling.attn_factor` (hparams.rope_attn_factor, default 1): cos θ and sin θ are multiplied by it
   * (cparams.yarn_attn_factor *= rope_attn_factor; ggml rope_yarn's mscale, with ext_factor 0), on every
   * context size, so Q·K scales by its square.
   */
  ropeAttnFactor: number;
}

/**
 * The LongRoPE factor tensor llama.cpp uses for a phi3 model run with a context of `nCtx` tokens, or
 * undefined for none (llama_model::get_rope_factors: long when n_ctx_seq > n_ctx_orig_yarn, else short;
 * n_ctx_seq is n_ctx rounded up to a multiple of 256, as llama_context does with GGML_PAD(n_ctx, 256)
 * for one sequence). A missing tensor of the chosen kind means no factors (a null rope_factors).
 * @param nCtx the context (KV cache) length in tokens, ≥ 1.
 */
export function phi3RopeFactorsTensor(
  p: Phi3Params,
  nCtx: number,
): 'rope_factors_long.weight' | 'rope_factors_short.weight' | undefined {
  const nCtxSeq = Math.ceil(nCtx / 256) * 256;
  if (nCtxSeq > p.nCtxOrigYarn) return p.ropeFactorsLong ? 'rope_factors_long.weight' : undefined;
  return p.ropeFactorsShort ? 'rope_factors_short.weight' : undefined;
}

/** Sliding-window attention as llama.cpp runs it (LLAMA_SWA_TYPE_STANDARD). */
export interface SlidingWindow {
  /**
   * `attention.sliding_window` (n_swa): on an SWA layer the query at position p sees keys at positions
   * p − window < t ≤ p (llama_hparams::is_masked_swa masks p − t ≥ n_swa).
   */
  window: number;
  /** Per layer: true where the layer is SWA (llama_hparams::set_swa_pattern: il % period < period − 1). */
  layers: boolean[];
  /** RoPE base of the SWA layers (rope_freq_base_train_swa). */
  ropeFreqBase: number;
  /** RoPE frequency scale of the SWA layers (rope_freq_scale_train_swa; 1 / linear factor). */
  ropeFreqScale: number;
}

/** What Gemma 2/3 add to the llama forward pass (read by config.ts `llamaConfigFromGguf`). */
export interface GemmaParams {
  /** The token embeddings are multiplied by √nEmbd (ggml_scale(inpL, sqrtf(n_embd))). */
  embdScale: number;
  /**
   * Q is multiplied by this before QKᵀ (hparams.f_attention_scale): 1/√(nEmbd/nHead) for the 27B models
   * (gemma2 46 layers, gemma3 62 layers, as llama.cpp decides by layer count), else 1/√headDim.
   */
  attnScale: number;
  /** gemma2: scores = cap · tanh(scores / cap) before the mask and softmax (attn_logit_softcapping); 0 = off. */
  attnSoftcap: number;
  /** logits = cap · tanh(logits / cap) (final_logit_softcapping); 0 = off. */
  finalSoftcap: number;
  /** Sliding-window attention, absent when no layer uses it (gemma3 without attention.sliding_window). */
  swa?: SlidingWindow;
}

/**
 * phi3's hyperparameters as llama.cpp reads them (llama_model_base::load_hparams for
 * rope.scaling.original_context_length → n_ctx_orig_yarn, default context_length, and
 * rope.scaling.attn_factor → rope_attn_factor, default 1; src/models/phi3.cpp for the tensors).
 * `attention.sliding_window` is ignored as llama.cpp ignores it (SWA disabled for Phi).
 * @throws EngineError('gguf_invalid') for a non-positive attn_factor or original context length.
 */
export function phi3Params(md: Md, tensors: GgufFile['tensors'], contextLength: number): Phi3Params {
  return {
    fusedQkv: tensors.has('blk.0.attn_qkv.weight'),
    ropeFactorsShort: tensors.has('rope_factors_short.weight'),
    ropeFactorsLong: tensors.has('rope_factors_long.weight'),
    nCtxOrigYarn: posInt(
      md,
      'phi3.rope.scaling.original_context_length',
      LIMITS.contextLength,
      contextLength,
    ),
    ropeAttnFactor: posFloat(md, 'phi3.rope.scaling.attn_factor', 1),
  };
}

/**
 * Gemma 2/3 hyperparameters exactly as llama.cpp's `load_arch_hparams` reads them
 * (src/models/gemma2.cpp, gemma3.cpp; defaults from src/llama-hparams.h):
 * - gemma2: SWA always on, window `attention.sliding_window` (default 4096), period
 *   `attention.sliding_window_pattern` (default 2: even layers SWA); SWA layers use `rope.freq_base_swa`
 *   (default the global base) and the global frequency scale; attention soft-cap
 *   `attn_logit_softcapping` (default 50) and final soft-cap `final_logit_softcapping` (default 30), always
 *   applied.
 * - gemma3: SWA only when `attention.sliding_window` is present and > 0, period default 6 (5 local : 1
 *   global); SWA layers use `rope.freq_base_swa`, default 10000 (rope_freq_base_train_swa's default), and
 *   frequency scale 1 (rope_freq_scale_train_swa is never read from the file); no attention soft-cap; final
 *   soft-cap only when `final_logit_softcapping` is present and non-zero.
 * @throws EngineError('gguf_invalid') for a non-positive window, period or cap;
 *   ('unsupported_model') for a per-layer pattern array.
 */
export function gemmaParams(md: Md, a: 'gemma2' | 'gemma3', c: LlamaConfig): GemmaParams {
  const nLayersBig = a === 'gemma2' ? 46 : 62; // LLM_TYPE_27B
  const attnScale =
    c.nLayers === nLayersBig ? 1 / Math.sqrt(Math.floor(c.nEmbd / c.nHead)) : 1 / Math.sqrt(c.headDim);
  const freqScale = c.ropeScaling ? 1 / c.ropeScaling.factor : 1;
  const patternKey = `${a}.attention.sliding_window_pattern`;
  if (Array.isArray(md[patternKey])) {
    throw unsupported(`${patternKey} as a per-layer array is not supported`);
  }
  const layersOf = (period: number) =>
    Array.from({ length: c.nLayers }, (_, il) => period === 0 || il % period < period - 1);
  if (a === 'gemma2') {
    const window = posInt(md, `${a}.attention.sliding_window`, LIMITS.contextLength, 4096);
    const period = num(md, patternKey) ?? 2;
    if (!Number.isInteger(period) || period < 0) throw invalid(`metadata ${patternKey} = ${period}`);
    return {
      embdScale: Math.sqrt(c.nEmbd),
      attnScale,
      attnSoftcap: posFloat(md, `${a}.attn_logit_softcapping`, 50),
      finalSoftcap: posFloat(md, `${a}.final_logit_softcapping`, 30),
      swa: {
        window,
        layers: layersOf(period),
        ropeFreqBase: posFloat(md, `${a}.rope.freq_base_swa`, c.ropeFreqBase),
        ropeFreqScale: freqScale,
      },
    };
  }
  const window = num(md, `${a}.attention.sliding_window`) ?? 0;
  const finalSoftcap = num(md, `${a}.final_logit_softcapping`) ?? 0;
  if (!Number.isFinite(finalSoftcap) || finalSoftcap < 0) {
    throw invalid(`metadata ${a}.final_logit_softcapping = ${finalSoftcap} is not sensible`);
  }
  const g: GemmaParams = { embdScale: Math.sqrt(c.nEmbd), attnScale, attnSoftcap: 0, finalSoftcap };
  if (window > 0) {
    if (!Number.isInteger(window)) throw invalid(`metadata ${a}.attention.sliding_window = ${window}`);
    const period = num(md, patternKey) ?? 6;
    if (!Number.isInteger(period) || period < 0) throw invalid(`metadata ${patternKey} = ${period}`);
    g.swa = {
      window,
      layers: layersOf(period),
      ropeFreqBase: posFloat(md, `${a}.rope.freq_base_swa`, 10000),
      ropeFreqScale: 1,
    };
  }
  return g;
}
