/**
 * The llama model configuration, read from GGUF metadata and checked against the tensors in the file,
 * so the loader and the forward pass can trust every size they use.
 *
 * Field names mirror GGUF keys (`llama.attention.head_count_kv` → `nHeadKv`); shapes follow ggml
 * (`shape[0]` is the contiguous, inner dimension), as in llama.cpp's `llm_load_tensors` for LLM_ARCH_LLAMA.
 */
import { EngineError } from '../../engine/errors.ts';
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
  /** `general.architecture`: llama (Llama 2/3, TinyLlama, SmolLM, Mistral), qwen2, qwen3. */
  architecture: 'llama' | 'qwen2' | 'qwen3';
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
}

/** Options for {@link llamaConfigFromGguf}. */
export interface LlamaConfigOptions {
  /** Tensor types the engine can run, as ggml names or ids. Default {@link DEFAULT_SUPPORTED_TYPES}. */
  supportedTypes?: readonly (string | number)[];
}

/** Tensor types accepted by default. */
export const DEFAULT_SUPPORTED_TYPES: readonly string[] = ['F32', 'F16'];

/** Architectures {@link llamaConfigFromGguf} accepts. */
export const SUPPORTED_ARCHITECTURES: readonly string[] = ['llama', 'qwen2', 'qwen3'];

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
    Partial<Pick<LlamaConfig, 'qkvBias' | 'qkNorm' | 'ropeFreqFactors' | 'ropeDim'>>,
): Map<string, number[]> {
  const { nEmbd, nFF, nVocab } = cfg;
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  const m = new Map<string, number[]>();
  m.set('token_embd.weight', [nEmbd, nVocab]);
  if (cfg.ropeFreqFactors) m.set('rope_freqs.weight', [(cfg.ropeDim ?? cfg.headDim) / 2]);
  for (let i = 0; i < cfg.nLayers; i++) {
    const b = `blk.${i}`;
    m.set(`${b}.attn_norm.weight`, [nEmbd]);
    m.set(`${b}.attn_q.weight`, [nEmbd, qDim]);
    m.set(`${b}.attn_k.weight`, [nEmbd, kvDim]);
    m.set(`${b}.attn_v.weight`, [nEmbd, kvDim]);
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
    m.set(`${b}.ffn_norm.weight`, [nEmbd]);
    m.set(`${b}.ffn_gate.weight`, [nEmbd, nFF]);
    m.set(`${b}.ffn_up.weight`, [nEmbd, nFF]);
    m.set(`${b}.ffn_down.weight`, [nFF, nEmbd]);
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
 * 3.1-style `rope_freqs.weight` factors.
 * @throws EngineError('unsupported_model') for other architectures, unsupported features (MoE, RoPE
 *   scaling other than linear, unexpected extra tensors) and tensor types outside
 *   `supportedTypes`; ('gguf_invalid') for missing or absurd metadata, missing tensors and tensor shapes
 *   that contradict the metadata.
 */
export function llamaConfigFromGguf(file: GgufFile, opts: LlamaConfigOptions = {}): LlamaConfig {
  const md = file.metadata;
  const arch = str(md, 'general.architecture');
  if (arch === undefined) throw invalid('metadata general.architecture is missing; this is not a model file');
  if (!SUPPORTED_ARCHITECTURES.includes(arch)) {
    throw unsupported(
      `architecture "${arch}" is not supported; supported: ${SUPPORTED_ARCHITECTURES.join(', ')}`,
    );
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
    qkNorm: a === 'qwen3',
    ropeFreqFactors: tensors.has('rope_freqs.weight'),
  };
  if (ropeScaling) cfg.ropeScaling = ropeScaling;

  const expected = llamaTensorShapes(cfg);
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
