/**
 * The llama model configuration, read from GGUF metadata and checked against the tensors in the file,
 * so the loader and the forward pass can trust every size they use.
 *
 * Field names mirror GGUF keys (`llama.attention.head_count_kv` → `nHeadKv`); shapes follow ggml
 * (`shape[0]` is the contiguous, inner dimension), as in llama.cpp's `llm_load_tensors` for LLM_ARCH_LLAMA.
 */
import { EngineError } from '../core/errors.ts';
import { ggmlTypeName, shapeElements } from '../gguf/ggml-types.ts';
import type { GgufFile } from '../gguf/types.ts';

/** RoPE context scaling. Only linear ("position interpolation") is supported for now. */
export interface RopeScaling {
  /** `rope.scaling.type`. */
  type: 'linear';
  /** `rope.scaling.factor`: positions are divided by it (llama.cpp's freq_scale = 1 / factor). */
  factor: number;
}

/** A llama-architecture model's hyperparameters. */
export interface LlamaConfig {
  /**
   * `general.architecture`: llama (Llama 2/3, TinyLlama, SmolLM, Mistral), qwen2, qwen3; gemma2 and
   * gemma3 (text) only where the caller accepts them ({@link LlamaConfigOptions.architectures}).
   */
  architecture: 'llama' | 'qwen2' | 'qwen3' | 'gemma2' | 'gemma3' | 'phi3';
  /** Biases on the Q/K/V projections (`attn_{q,k,v}.bias`, qwen2). */
  qkvBias: boolean;
  /** Per-head RMSNorm of Q and K before RoPE (`attn_{q,k}_norm.weight` [headDim], qwen3). */
  qkNorm: boolean;
  /** RoPE frequency factors `rope_freqs.weight` [ropeDim/2] (Llama 3.1+ scaling): θ_i is divided by factor i. */
  ropeFreqFactors: boolean;
  /** `general.name` ('' when absent). */
  name: string;
  /** `llama.block_count`. */
  nLayers: number;
  /** `llama.embedding_length`. */
  nEmbd: number;
  /** `llama.feed_forward_length`. */
  nFF: number;
  /** `llama.attention.head_count`. */
  nHead: number;
  /** `llama.attention.head_count_kv` (default nHead). */
  nHeadKv: number;
  /** `llama.attention.key_length` (default nEmbd / nHead). */
  headDim: number;
  /** Length of `tokenizer.ggml.tokens`, else `token_embd.weight`'s shape[1]. */
  nVocab: number;
  /** `llama.context_length` (the training context). */
  contextLength: number;
  /** `llama.rope.dimension_count` (default headDim): RoPE rotates the first ropeDim dims of each head. */
  ropeDim: number;
  /** `llama.rope.freq_base` (default 10000). */
  ropeFreqBase: number;
  /** `llama.attention.layer_norm_rms_epsilon` (default 1e-5). */
  rmsEps: number;
  /**
   * 'norm': RoPE rotates adjacent pairs (x[2i], x[2i+1]), llama.cpp's LLAMA_ROPE_TYPE_NORM (llama);
   * 'neox': pairs (x[i], x[i + ropeDim/2]), LLAMA_ROPE_TYPE_NEOX (other architectures, not yet accepted).
   */
  ropeType: 'norm' | 'neox';
  /** True when there is no `output.weight`: the output projection uses `token_embd.weight`. */
  tiedEmbeddings: boolean;
  /** Context scaling, where the file asks for it. */
  ropeScaling?: RopeScaling;
  /**
   * Gemma 2/3 (llama.cpp src/models/gemma2.cpp, gemma3.cpp); absent for other architectures. Norm weights
   * are used as stored: convert_hf_to_gguf (conversion/gemma.py) already wrote Gemma's `1 + w`.
   */
  gemma?: GemmaParams;
  /** Phi-3 / Phi-3.5 / Phi-4-mini (llama.cpp src/models/phi3.cpp); absent for other architectures. */
  phi3?: Phi3Params;
}

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

/** What Gemma 2/3 add to the llama forward pass (read by {@link llamaConfigFromGguf}). */
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

/** Options for {@link llamaConfigFromGguf}. */
export interface LlamaConfigOptions {
  /** Tensor types the engine can run, as ggml names or ids. Default {@link DEFAULT_SUPPORTED_TYPES}. */
  supportedTypes?: readonly (string | number)[];
  /** Architectures to accept (a subset of {@link SUPPORTED_ARCHITECTURES}). Default all of them. */
  architectures?: readonly string[];
}

/**
 * The Gemma architectures (text part): read with their own hyperparameters ({@link GemmaParams}), run by
 * the float64 reference and the GPU engine.
 */
export const GEMMA_ARCHITECTURES: readonly string[] = ['gemma2', 'gemma3'];

/** Tensor types accepted by default. */
export const DEFAULT_SUPPORTED_TYPES: readonly string[] = ['F32', 'F16'];

/** Architectures {@link llamaConfigFromGguf} accepts. */
export const SUPPORTED_ARCHITECTURES: readonly string[] = [
  'llama',
  'qwen2',
  'qwen3',
  'phi3',
  'gemma2',
  'gemma3',
];

/** Upper bounds far above any real model; anything larger is a damaged or hostile file. */
const LIMITS = {
  nLayers: 10_000,
  nEmbd: 1 << 20,
  nFF: 1 << 22,
  nHead: 1 << 16,
  headDim: 1 << 16,
  nVocab: 1 << 24,
  contextLength: 1 << 28,
} as const;

type Md = Record<string, unknown>;

function invalid(msg: string): EngineError {
  return new EngineError('gguf_invalid', msg);
}

function unsupported(msg: string): EngineError {
  return new EngineError('unsupported_model', msg);
}

/** A number from a metadata value (number or bigint), or undefined when absent. */
function num(md: Md, key: string): number | undefined {
  let v: unknown = md[key];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) {
    const arr: unknown[] = v;
    // Some converters write per-layer arrays; fine as long as every layer agrees.
    if (arr.length === 0) throw invalid(`metadata ${key} is an empty array`);
    if (!arr.every((x) => x === arr[0])) {
      throw unsupported(
        `metadata ${key} differs between layers ([${arr.join(', ')}]); per-layer sizes are not supported`,
      );
    }
    v = arr[0];
  }
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v !== 'number' || Number.isNaN(v))
    throw invalid(`metadata ${key} should be a number, got ${String(v)}`);
  return v;
}

/** A positive integer in [1, max]; `fallback` when absent (undefined fallback = required). */
function posInt(md: Md, key: string, max: number, fallback?: number): number {
  const v = num(md, key) ?? fallback;
  if (v === undefined) throw invalid(`required metadata ${key} is missing`);
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw invalid(
      `metadata ${key} = ${v} is not a sensible value (expected an integer from 1 to ${max.toLocaleString('en-US')})`,
    );
  }
  return v;
}

function str(md: Md, key: string): string | undefined {
  const v = md[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid(`metadata ${key} should be a string, got ${String(v)}`);
  return v;
}

function fmtShape(s: readonly number[]): string {
  return `[${s.join(', ')}]`;
}

/** Drops trailing 1s (ggml writes n_dims without them, so [64, 1] and [64] are the same tensor). */
function canonShape(s: readonly number[]): number[] {
  const out = [...s];
  while (out.length > 1 && out[out.length - 1] === 1) out.pop();
  return out;
}

/**
 * Every tensor a llama model of this config has, with the shape the metadata implies (ggml order). With
 * `tiedEmbeddings` there is no `output.weight`.
 */
export function llamaTensorShapes(
  cfg: Pick<
    LlamaConfig,
    'nLayers' | 'nEmbd' | 'nFF' | 'nHead' | 'nHeadKv' | 'headDim' | 'nVocab' | 'tiedEmbeddings'
  > &
    Partial<Pick<LlamaConfig, 'qkvBias' | 'qkNorm' | 'ropeFreqFactors' | 'ropeDim'>> & {
      /** Gemma 2/3: `post_attention_norm.weight` and `post_ffw_norm.weight` [nEmbd] per layer. */
      postNorms?: boolean;
      /** phi3: fused attn_qkv (when `fusedQkv`), ffn_up [nEmbd, 2·nFF] without ffn_gate, LongRoPE factors. */
      phi3?: Pick<Phi3Params, 'fusedQkv' | 'ropeFactorsShort' | 'ropeFactorsLong'>;
    },
): Map<string, number[]> {
  const { nEmbd, nFF, nVocab } = cfg;
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  const m = new Map<string, number[]>();
  m.set('token_embd.weight', [nEmbd, nVocab]);
  if (cfg.ropeFreqFactors) m.set('rope_freqs.weight', [(cfg.ropeDim ?? cfg.headDim) / 2]);
  const phi3 = cfg.phi3;
  // phi3: one tensor each, shared by every layer (llama.cpp's TENSOR_DUPLICATED for layers ≥ 1).
  if (phi3?.ropeFactorsLong) m.set('rope_factors_long.weight', [(cfg.ropeDim ?? cfg.headDim) / 2]);
  if (phi3?.ropeFactorsShort) m.set('rope_factors_short.weight', [(cfg.ropeDim ?? cfg.headDim) / 2]);
  for (let i = 0; i < cfg.nLayers; i++) {
    const b = `blk.${i}`;
    m.set(`${b}.attn_norm.weight`, [nEmbd]);
    if (phi3?.fusedQkv) {
      m.set(`${b}.attn_qkv.weight`, [nEmbd, qDim + 2 * kvDim]);
    } else {
      m.set(`${b}.attn_q.weight`, [nEmbd, qDim]);
      m.set(`${b}.attn_k.weight`, [nEmbd, kvDim]);
      m.set(`${b}.attn_v.weight`, [nEmbd, kvDim]);
    }
    if (cfg.qkvBias) {
      m.set(`${b}.attn_q.bias`, [qDim]);
      m.set(`${b}.attn_k.bias`, [kvDim]);
      m.set(`${b}.attn_v.bias`, [kvDim]);
    }
    if (cfg.qkNorm) {
      m.set(`${b}.attn_q_norm.weight`, [cfg.headDim]);
      m.set(`${b}.attn_k_norm.weight`, [cfg.headDim]);
    }
    m.set(`${b}.attn_output.weight`, [qDim, nEmbd]);
    if (cfg.postNorms) m.set(`${b}.post_attention_norm.weight`, [nEmbd]);
    m.set(`${b}.ffn_norm.weight`, [nEmbd]);
    if (phi3) {
      m.set(`${b}.ffn_up.weight`, [nEmbd, 2 * nFF]); // [gate | up] rows
    } else {
      m.set(`${b}.ffn_gate.weight`, [nEmbd, nFF]);
      m.set(`${b}.ffn_up.weight`, [nEmbd, nFF]);
    }
    m.set(`${b}.ffn_down.weight`, [nFF, nEmbd]);
    if (cfg.postNorms) m.set(`${b}.post_ffw_norm.weight`, [nEmbd]);
  }
  m.set('output_norm.weight', [nEmbd]);
  if (!cfg.tiedEmbeddings) m.set('output.weight', [nEmbd, nVocab]);
  return m;
}

/** Explains which metadata a tensor's expected shape comes from. */
function shapeReason(name: string, c: LlamaConfig): string {
  const base = name.replace(/^blk\.\d+\./, '');
  switch (base) {
    case 'token_embd.weight':
    case 'output.weight':
      return `nEmbd ${c.nEmbd}, nVocab ${c.nVocab}`;
    case 'attn_q.weight':
    case 'attn_output.weight':
      return `nEmbd ${c.nEmbd}, nHead ${c.nHead} × headDim ${c.headDim}`;
    case 'attn_k.weight':
    case 'attn_v.weight':
      return `nEmbd ${c.nEmbd}, nHeadKv ${c.nHeadKv} × headDim ${c.headDim}`;
    case 'attn_qkv.weight':
      return `nEmbd ${c.nEmbd}, (nHead ${c.nHead} + 2 × nHeadKv ${c.nHeadKv}) × headDim ${c.headDim}`;
    case 'rope_factors_long.weight':
    case 'rope_factors_short.weight':
      return `rope.dimension_count ${c.ropeDim} / 2`;
    case 'ffn_gate.weight':
    case 'ffn_up.weight':
    case 'ffn_down.weight':
      return `nEmbd ${c.nEmbd}, nFF ${c.nFF}`;
    default:
      return `nEmbd ${c.nEmbd}`;
  }
}

function ropeScalingFrom(md: Md, a: string): RopeScaling | undefined {
  const type = str(md, `${a}.rope.scaling.type`);
  const factor = num(md, `${a}.rope.scaling.factor`) ?? num(md, `${a}.rope.scale_linear`);
  if (type === undefined || type === 'none') {
    if (type === undefined && factor !== undefined && factor !== 1) return linear(factor);
    return undefined;
  }
  if (type === 'linear') return factor === undefined || factor === 1 ? undefined : linear(factor);
  throw unsupported(
    `RoPE scaling "${type}" (${a}.rope.scaling.type) is not supported; supported: none, linear`,
  );

  function linear(f: number): RopeScaling {
    if (!Number.isFinite(f) || f <= 0 || f > 1e6) throw invalid(`RoPE scaling factor ${f} is not sensible`);
    return { type: 'linear', factor: f };
  }
}

/**
 * Reads and validates a llama model's configuration.
 * Architectures: llama, qwen2 (Q/K/V biases, NeoX RoPE), qwen3 (per-head Q/K RMSNorm, NeoX RoPE); Llama
 * 3.1-style `rope_freqs.weight` factors; gemma2 / gemma3 (text: post-norms, GeGLU, soft-caps, sliding
 * window, see {@link GemmaParams}; gemma2 must have tied embeddings, as llama.cpp's loader).
 * @throws EngineError('unsupported_model') for other architectures, unsupported features (MoE, RoPE
 *   scaling other than linear, unexpected extra tensors) and tensor types outside
 *   `supportedTypes`; ('gguf_invalid') for missing or absurd metadata, missing tensors and tensor shapes
 *   that contradict the metadata.
 */
export function llamaConfigFromGguf(file: GgufFile, opts: LlamaConfigOptions = {}): LlamaConfig {
  const md = file.metadata;
  const arch = str(md, 'general.architecture');
  if (arch === undefined) throw invalid('metadata general.architecture is missing; this is not a model file');
  const accepted = opts.architectures ?? SUPPORTED_ARCHITECTURES;
  if (!accepted.includes(arch) || !SUPPORTED_ARCHITECTURES.includes(arch)) {
    throw unsupported(`architecture "${arch}" is not supported; supported: ${accepted.join(', ')}`);
  }
  const a = arch as LlamaConfig['architecture'];

  const nLayers = posInt(md, `${a}.block_count`, LIMITS.nLayers);
  const nEmbd = posInt(md, `${a}.embedding_length`, LIMITS.nEmbd);
  const nFF = posInt(md, `${a}.feed_forward_length`, LIMITS.nFF);
  const nHead = posInt(md, `${a}.attention.head_count`, LIMITS.nHead);
  const nHeadKv = posInt(md, `${a}.attention.head_count_kv`, LIMITS.nHead, nHead);
  const contextLength = posInt(md, `${a}.context_length`, LIMITS.contextLength);
  if (num(md, `${a}.attention.key_length`) === undefined && nEmbd % nHead !== 0) {
    throw invalid(`${a}.embedding_length ${nEmbd} is not a multiple of ${a}.attention.head_count ${nHead}`);
  }
  const headDim = posInt(md, `${a}.attention.key_length`, LIMITS.headDim, nEmbd / nHead);
  const valueLength = num(md, `${a}.attention.value_length`);
  if (valueLength !== undefined && valueLength !== headDim) {
    throw unsupported(`value head size ${valueLength} differs from key head size ${headDim}; not supported`);
  }
  if (nHead % nHeadKv !== 0 || nHeadKv > nHead) {
    throw invalid(
      `${a}.attention.head_count ${nHead} is not a multiple of ${a}.attention.head_count_kv ${nHeadKv}`,
    );
  }
  if (headDim % 2 !== 0) throw invalid(`head size ${headDim} is odd; RoPE needs pairs of dimensions`);
  const ropeDim = posInt(md, `${a}.rope.dimension_count`, LIMITS.headDim, headDim);
  if (ropeDim > headDim || ropeDim % 2 !== 0) {
    throw invalid(`${a}.rope.dimension_count ${ropeDim} must be even and at most the head size ${headDim}`);
  }
  const ropeFreqBase = num(md, `${a}.rope.freq_base`) ?? 10000;
  if (!Number.isFinite(ropeFreqBase) || ropeFreqBase <= 1) {
    throw invalid(`${a}.rope.freq_base ${ropeFreqBase} is not sensible (expected > 1)`);
  }
  const rmsEps = num(md, `${a}.attention.layer_norm_rms_epsilon`) ?? 1e-5;
  if (!Number.isFinite(rmsEps) || rmsEps <= 0 || rmsEps >= 1) {
    throw invalid(`${a}.attention.layer_norm_rms_epsilon ${rmsEps} is not sensible (expected 0 < eps < 1)`);
  }
  const experts = num(md, `${a}.expert_count`) ?? 0;
  if (experts > 0)
    throw unsupported(`mixture-of-experts models (${a}.expert_count ${experts}) are not supported`);
  const ropeScaling = ropeScalingFrom(md, a);
  const isGemma = a === 'gemma2' || a === 'gemma3';
  if (a === 'phi3' && nHead * headDim !== nEmbd) {
    // llama.cpp's phi3 loader makes Q and attn_output nEmbd wide (create_tensor_qkv(…, n_embd, n_embd, …)).
    throw invalid(`phi3: head_count ${nHead} × head size ${headDim} must equal embedding_length ${nEmbd}`);
  }

  const tensors = file.tensors;
  const tokens = md['tokenizer.ggml.tokens'];
  const embd = tensors.get('token_embd.weight');
  let nVocab: number;
  if (Array.isArray(tokens)) {
    nVocab = tokens.length;
    if (nVocab < 1 || nVocab > LIMITS.nVocab) throw invalid(`tokenizer.ggml.tokens has ${nVocab} entries`);
  } else if (embd && embd.shape.length >= 2) {
    nVocab = embd.shape[1];
    if (nVocab < 1 || nVocab > LIMITS.nVocab) throw invalid(`token_embd.weight has ${nVocab} rows`);
  } else if (!embd) {
    throw invalid('required tensor token_embd.weight is missing');
  } else {
    throw invalid(`tensor token_embd.weight has shape ${fmtShape(embd.shape)}; expected [nEmbd, nVocab]`);
  }

  const cfg: LlamaConfig = {
    architecture: a,
    name: str(md, 'general.name') ?? '',
    nLayers,
    nEmbd,
    nFF,
    nHead,
    nHeadKv,
    headDim,
    nVocab,
    contextLength,
    ropeDim,
    ropeFreqBase,
    rmsEps,
    // llama.cpp's llama_model_rope_type: NORM for llama, NEOX for qwen2/qwen3.
    ropeType: a === 'llama' ? 'norm' : 'neox',
    tiedEmbeddings: !tensors.has('output.weight'),
    qkvBias: a === 'qwen2',
    qkNorm: a === 'qwen3' || a === 'gemma3',
    ropeFreqFactors: tensors.has('rope_freqs.weight'),
  };
  if (ropeScaling) cfg.ropeScaling = ropeScaling;
  if (isGemma) cfg.gemma = gemmaParams(md, a, cfg);
  if (a === 'phi3') {
    // llama.cpp reads no rope_freqs.weight for phi3: such a file fails there (an unused tensor); here the
    // tensor is refused below as an unexpected extra.
    cfg.ropeFreqFactors = false;
    cfg.phi3 = phi3Params(md, tensors, contextLength);
  }

  if (a === 'gemma2' && !cfg.tiedEmbeddings) {
    // llama.cpp's gemma2 loader always uses token_embd.weight; a separate output.weight is an unused tensor.
    throw unsupported(
      'gemma2 has tied embeddings in llama.cpp; this file has an output.weight it would refuse',
    );
  }
  const expected = llamaTensorShapes({ ...cfg, postNorms: isGemma, phi3: cfg.phi3 });
  for (const [name, shape] of expected) {
    const t = tensors.get(name);
    if (!t) throw invalid(`required tensor ${name} is missing (the file has ${tensors.size} tensors)`);
    const got = canonShape(t.shape);
    if (got.length !== shape.length || got.some((d, i) => d !== shape[i])) {
      throw invalid(
        `tensor ${name} has shape ${fmtShape(t.shape)}, but the metadata (${shapeReason(name, cfg)}) ` +
          `implies ${fmtShape(shape)}`,
      );
    }
  }
  for (const name of tensors.keys()) {
    if (!expected.has(name)) {
      throw unsupported(
        `tensor ${name} is not part of the ${a} model this engine runs (unexpected extra tensor)`,
      );
    }
  }

  const supported = new Set(
    (opts.supportedTypes ?? DEFAULT_SUPPORTED_TYPES).map((x) =>
      typeof x === 'number' ? ggmlTypeName(x) : x,
    ),
  );
  for (const t of tensors.values()) {
    if (!supported.has(t.typeName)) {
      throw unsupported(
        `tensor ${t.name} has type ${t.typeName}, which this engine cannot run yet; supported: ${[...supported].join(', ')}`,
      );
    }
  }
  return cfg;
}

/**
 * phi3's hyperparameters as llama.cpp reads them (llama_model_base::load_hparams for
 * rope.scaling.original_context_length → n_ctx_orig_yarn, default context_length, and
 * rope.scaling.attn_factor → rope_attn_factor, default 1; src/models/phi3.cpp for the tensors).
 * `attention.sliding_window` is ignored as llama.cpp ignores it (SWA disabled for Phi).
 * @throws EngineError('gguf_invalid') for a non-positive attn_factor or original context length.
 */
function phi3Params(md: Md, tensors: GgufFile['tensors'], contextLength: number): Phi3Params {
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

/** A finite positive metadata number, `fallback` when absent. */
function posFloat(md: Md, key: string, fallback: number): number {
  const v = num(md, key) ?? fallback;
  if (!Number.isFinite(v) || v <= 0) throw invalid(`metadata ${key} = ${v} is not sensible (expected > 0)`);
  return v;
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
function gemmaParams(md: Md, a: 'gemma2' | 'gemma3', c: LlamaConfig): GemmaParams {
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

/** Bytes of all tensor data in the file (the weights as stored). */
export function modelWeightBytes(file: GgufFile): number {
  let n = 0;
  for (const t of file.tensors.values()) n += t.nBytes;
  return n;
}

/** Number of parameters (elements of all tensors). */
export function modelParamCount(file: GgufFile): number {
  let n = 0;
  for (const t of file.tensors.values()) n += shapeElements(t.shape);
  return n;
}
