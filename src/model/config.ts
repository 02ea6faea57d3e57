/**
 * The llama model configuration, read from GGUF metadata and checked against the tensors in the file,
 * so the loader and the forward pass can trust every size they use.
 *
 * Field names mirror GGUF keys (`llama.attention.head_count_kv` → `nHeadKv`); shapes follow ggml
 * (`shape[0]` is the contiguous, inner dimension), as in llama.cpp's `llm_load_tensors` for LLM_ARCH_LLAMA.
 */
import { ggmlTypeName, shapeElements } from '../gguf/ggml-types.ts';
import type { GgufFile } from '../gguf/types.ts';
import { type GemmaParams, gemmaParams, type Phi3Params, phi3Params } from './config-arch.ts';
import { invalid, LIMITS, type Md, num, posInt, str, unsupported } from './config-metadata.ts';

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

/** Options for {@link llamaConfigFromGguf}. */
export interface LlamaConfigOptions {
  /** Tensor types the engine can run, as ggml names or ids. Default {@link DEFAULT_SUPPORTED_TYPES}. */
  supportedTypes?: readonly (string | number)[];
  /** Architectures to accept (a subset of {@link SUPPORTED_ARCHITECTURES}). Default all of them. */
  architectures?: readonly string[];
}

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
