/**
 * Whole-model quantization, the project's `llama-quantize`: which type each tensor gets (llama.cpp's
 * `llama_tensor_get_type` for the file types below, dense llama-style models) and the new GGUF file.
 *
 * Rules (from llama.cpp's `src/llama-quant.cpp`):
 * - Only tensors whose name ends in `weight`, with two or more dimensions, and that are not norms are
 *   quantized; everything else (norms, biases, 1-D tensors) is copied unchanged.
 * - F32 / F16 / BF16: every such tensor in that type.
 * - Q8_0, Q4_0, Q6_K, Q4_K_M ("mixes"): the base type, except `output.weight` (and `token_embd.weight`
 *   when the embeddings are tied, i.e. there is no `output.weight`) → Q6_K (Q8_0 stays Q8_0; Q8_0 when
 *   its row length is not a multiple of the base type's block); for Q4_K_M also the `attn_v` and
 *   `ffn_down` tensors of the layers where `use_more_bits(i, n)` holds (i < n/8, i ≥ 7n/8, or
 *   (i − n/8) mod 3 = 2; i counts those tensors in llama.cpp's order) → Q6_K.
 * - Q2_K, Q3_K_S/M/L, Q5_K_S/M (base Q2_K, Q3_K, Q5_K; output → Q6_K as above): attn_v → Q2_K: Q3_K
 *   (Q4_K when n_gqa ≥ 4), Q3_K_M: Q5_K for the first two, then Q4_K, Q3_K_L: Q5_K, Q5_K_M: Q6_K where
 *   `use_more_bits`; ffn_down → Q2_K: Q3_K, Q3_K_M: Q5_K for layers below n/16, then Q4_K, Q3_K_L: Q5_K,
 *   Q5_K_M: Q6_K where `use_more_bits`; attn_output → Q2_K: Q3_K, Q3_K_M: Q4_K, Q3_K_L: Q5_K; 70B models
 *   (llama with 80 layers and GQA) raise a Q3_K/Q4_K attn_v to Q5_K. Q3_K_S and Q5_K_S mix only the output.
 * - Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: the base type, output → Q6_K as above; for IQ4_NL and IQ4_XS (no
 *   importance matrix) also attn_v → Q5_K when n_gqa ≥ 4 and ffn_down → Q5_K for layers below n/8.
 * - "attn_v" above means llama.cpp's `category_is_attn_v`: also Phi-3's fused `attn_qkv` (and `attn_kv_b`),
 *   counted together with attn_v for `use_more_bits`. Phi-3's fused `ffn_up` (gate and up) gets no rule
 *   for these file types (llama.cpp's FFN_UP rule is for IQ3_XS only).
 * - Q4_K: every quantized tensor Q4_K (no mix; llama-quantize's `Q4_K` is an alias of Q4_K_M, ours
 *   is `--pure Q4_K`). `pure: true` does the same for any type (llama-quantize `--pure`).
 * - Fallback, for rows (`ne[0]`) not a multiple of the chosen type's block size: by default a 256-block
 *   type (Q4_K, Q6_K) becomes Q8_0, so that only the engine's types appear; with
 *   `fallback: 'llama.cpp'` Q4_K becomes Q5_0 and Q5_K Q5_1, as llama.cpp does; Q2_K and Q3_K become Q4_0
 *   either way (llama.cpp's choice, an engine type), IQ4_XS IQ4_NL either way. When the row is not a multiple of 32
 *   either, the tensor becomes F16 (both).
 * - Tensors are written in llama.cpp's order (non-layer tensors, then by layer; by name within each),
 *   the metadata is copied with `general.quantization_version` = 2 and `general.file_type` appended,
 *   so that the file is byte-identical to llama-quantize's where the types agree.
 */
import { EngineError } from '../core/errors.ts';
import { ggmlTypeByName, shapeElements } from './ggml-types.ts';
import { dequantizeRow, hasCodec, quantizeRow } from './quantize.ts';
import type { OpenedGgufFile } from './reader.ts';
import type { GgufTensorInfo } from './types.ts';
import { type GgufTensorInput, kv, metadataEntriesFrom, writeGguf } from './writer.ts';

/** File types the quantizer writes, by llama-quantize's names. */
export type QuantizeFtype =
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'Q8_0'
  | 'Q4_0'
  | 'Q4_1'
  | 'Q5_0'
  | 'Q5_1'
  | 'IQ4_NL'
  | 'IQ4_XS'
  | 'Q4_K'
  | 'Q4_K_M'
  | 'Q6_K'
  | 'Q2_K'
  | 'Q3_K_S'
  | 'Q3_K_M'
  | 'Q3_K_L'
  | 'Q5_K_S'
  | 'Q5_K_M';

/** Per file type: `general.file_type` (llama.cpp's `llama_ftype`), the base tensor type, whether it mixes. */
export const FTYPES: Readonly<Record<QuantizeFtype, { fileType: number; base: string; pure: boolean }>> = {
  F32: { fileType: 0, base: 'F32', pure: true }, // LLAMA_FTYPE_ALL_F32
  F16: { fileType: 1, base: 'F16', pure: true }, // LLAMA_FTYPE_MOSTLY_F16
  BF16: { fileType: 32, base: 'BF16', pure: true }, // LLAMA_FTYPE_MOSTLY_BF16
  Q8_0: { fileType: 7, base: 'Q8_0', pure: false }, // LLAMA_FTYPE_MOSTLY_Q8_0
  Q4_0: { fileType: 2, base: 'Q4_0', pure: false }, // LLAMA_FTYPE_MOSTLY_Q4_0
  Q4_1: { fileType: 3, base: 'Q4_1', pure: false }, // LLAMA_FTYPE_MOSTLY_Q4_1
  Q5_0: { fileType: 8, base: 'Q5_0', pure: false }, // LLAMA_FTYPE_MOSTLY_Q5_0
  Q5_1: { fileType: 9, base: 'Q5_1', pure: false }, // LLAMA_FTYPE_MOSTLY_Q5_1
  IQ4_NL: { fileType: 25, base: 'IQ4_NL', pure: false }, // LLAMA_FTYPE_MOSTLY_IQ4_NL
  IQ4_XS: { fileType: 30, base: 'IQ4_XS', pure: false }, // LLAMA_FTYPE_MOSTLY_IQ4_XS
  Q4_K: { fileType: 15, base: 'Q4_K', pure: true }, // as llama-quantize --pure Q4_K (LLAMA_FTYPE_MOSTLY_Q4_K_M)
  Q4_K_M: { fileType: 15, base: 'Q4_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q4_K_M
  Q6_K: { fileType: 18, base: 'Q6_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q6_K
  Q2_K: { fileType: 10, base: 'Q2_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q2_K
  Q3_K_S: { fileType: 11, base: 'Q3_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q3_K_S
  Q3_K_M: { fileType: 12, base: 'Q3_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q3_K_M
  Q3_K_L: { fileType: 13, base: 'Q3_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q3_K_L
  Q5_K_S: { fileType: 16, base: 'Q5_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q5_K_S
  Q5_K_M: { fileType: 17, base: 'Q5_K', pure: false }, // LLAMA_FTYPE_MOSTLY_Q5_K_M
};

/** `GGML_QNT_VERSION`, written as `general.quantization_version`. */
export const GGML_QNT_VERSION = 2;

/** Options for {@link planQuantization} and {@link quantizeGguf}. */
export interface QuantizeOptions {
  /** Every quantized tensor in the base type, no mix (llama-quantize `--pure`). Default false. */
  pure?: boolean;
  /**
   * Type for a tensor whose rows the chosen type cannot divide into blocks: 'engine' (default: Q4_K and
   * Q6_K → Q8_0) or 'llama.cpp' (Q4_K → Q5_0, Q6_K → Q8_0). Either way F16 when even 32 does not divide.
   */
  fallback?: 'engine' | 'llama.cpp';
  /**
   * llama.cpp's `n_gqa()`: attention heads per KV head (`head_count / head_count_kv`, integer division;
   * 0 when head_count_kv is 0). Q2_K gives attn_v Q4_K instead of Q3_K when it is ≥ 4. Default 1;
   * {@link quantizeGguf} reads it from the file.
   */
  nGqa?: number;
  /**
   * llama.cpp's `LLM_TYPE_70B` (llama with 80 layers and GQA, qwen2 with 80 layers): attn_v Q3_K/Q4_K
   * become Q5_K. Default false; {@link quantizeGguf} reads it from the file.
   */
  model70B?: boolean;
}

/** What happens to one tensor. */
export interface TensorPlan {
  name: string;
  shape: number[];
  /** Type in the input file. */
  from: string;
  /** Type in the output file. */
  to: string;
  /** Why `to` differs from the file type's base type, for the log ('mix', 'fallback', 'not quantized'). */
  note?: string;
}

/** The tensor's layer from `blk.N.`, or −1. */
function layerOf(name: string): number {
  const m = /^blk\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : -1;
}

/** llama.cpp's tensor order (`weight_name_comparer`): by layer (others first), then by name (bytewise). */
export function llamaCppTensorOrder<T extends { name: string }>(tensors: readonly T[]): T[] {
  return [...tensors].sort((a, b) => {
    const la = layerOf(a.name);
    const lb = layerOf(b.name);
    if (la !== lb) return la - lb;
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

/** Drops trailing 1s, as `ggml_n_dims` counts dimensions. */
function canonShape(s: readonly number[]): number[] {
  const out = [...s];
  while (out.length > 1 && out[out.length - 1] === 1) out.pop();
  return out;
}

/** llama.cpp's `tensor_allows_quantization`, for the tensors of dense text models. */
function allowsQuantization(name: string, shape: readonly number[]): boolean {
  if (canonShape(shape).length < 2) return false;
  if (!name.endsWith('weight')) return false;
  if (name.includes('_norm.weight')) return false;
  const never = [
    'ffn_gate_inp.weight',
    'altup',
    'laurel',
    'per_layer_model_proj',
    'ssm_conv1d',
    'attn_rel_b.weight',
  ];
  if (never.some((s) => name.includes(s))) return false;
  if (name === 'position_embd.weight' || name === 'token_types.weight') return false;
  return true;
}

/** llama.cpp's `use_more_bits`. */
function useMoreBits(i: number, n: number): boolean {
  const n8 = Math.trunc(n / 8);
  return i < n8 || i >= Math.trunc((7 * n) / 8) || (i - n8) % 3 === 2;
}

/**
 * llama.cpp's `category_is_attn_v` (src/llama-quant.cpp, `tensor_get_category`): attn_v, and also the
 * fused `attn_qkv` (Phi-3, Falcon-style) and DeepSeek's `attn_kv_b`, which take the attn_v rule and are
 * counted with it (`n_attention_wv`, `i_attention_wv`). Checked as llama.cpp does, by substring, in its
 * order (attn_qkv and attn_kv_b before attn_v). Its later `ATTENTION_QKV` branch (Q4_K_M → Q5_K, …) is
 * unreachable there, since `category_is_attn_v` is tested first.
 */
function isAttnVLike(name: string): boolean {
  return (
    name.includes('attn_qkv.weight') || name.includes('attn_kv_b.weight') || name.includes('attn_v.weight')
  );
}

/**
 * llama.cpp's `llama_tensor_get_type_impl` rule for attn_v (`category_is_attn_v`) tensors of the file
 * types here: `to` is the base type, `i` / `n` the tensor's index and count among them.
 */
function attnVType(ftype: QuantizeFtype, to: string, i: number, n: number, o: QuantizeOptions): string {
  if (ftype === 'Q2_K') to = (o.nGqa ?? 1) >= 4 ? 'Q4_K' : 'Q3_K';
  else if (ftype === 'Q3_K_M') to = i < 2 ? 'Q5_K' : 'Q4_K';
  else if (ftype === 'Q3_K_L') to = 'Q5_K';
  else if ((ftype === 'IQ4_NL' || ftype === 'IQ4_XS') && (o.nGqa ?? 1) >= 4) to = 'Q5_K';
  else if ((ftype === 'Q4_K_M' || ftype === 'Q5_K_M') && useMoreBits(i, n)) to = 'Q6_K';
  if (o.model70B && (to === 'Q3_K' || to === 'Q4_K')) to = 'Q5_K';
  return to;
}

/** The same for ffn_down tensors (non-Falcon, no experts): layer `i` of `n`. */
function ffnDownType(ftype: QuantizeFtype, to: string, i: number, n: number): string {
  if (ftype === 'Q2_K') return 'Q3_K';
  if (ftype === 'Q3_K_M') return i < Math.trunc(n / 16) ? 'Q5_K' : 'Q4_K';
  if (ftype === 'Q3_K_L') return 'Q5_K';
  if ((ftype === 'IQ4_NL' || ftype === 'IQ4_XS') && i < Math.trunc(n / 8)) return 'Q5_K'; // no imatrix
  if ((ftype === 'Q4_K_M' || ftype === 'Q5_K_M') && useMoreBits(i, n)) return 'Q6_K';
  return to;
}

/** The same for attn_output tensors (non-Falcon, no experts). */
function attnOutputType(ftype: QuantizeFtype, to: string): string {
  if (ftype === 'Q2_K') return 'Q3_K';
  if (ftype === 'Q3_K_M') return 'Q4_K';
  if (ftype === 'Q3_K_L') return 'Q5_K';
  return to;
}

/**
 * llama.cpp's `tensor_type_fallback` for a row length the type's block does not divide: Q4_K → Q5_0
 * (llama.cpp) or Q8_0 (engine), Q5_K → Q5_1 (llama.cpp) or Q8_0 (engine), Q6_K → Q8_0, Q2_K and Q3_K
 * → Q4_0, IQ4_XS → IQ4_NL (both); 32-block types stay (the caller then makes them F16).
 */
function fallbackType(to: string, mode: QuantizeOptions['fallback']): string {
  const ll = mode === 'llama.cpp';
  if (to === 'Q4_K') return ll ? 'Q5_0' : 'Q8_0';
  if (to === 'Q5_K') return ll ? 'Q5_1' : 'Q8_0';
  if (to === 'Q6_K') return 'Q8_0';
  if (to === 'IQ4_XS') return 'IQ4_NL';
  if (to === 'Q2_K' || to === 'Q3_K') return 'Q4_0';
  return to;
}

/**
 * The type each tensor gets, in llama.cpp's tensor order.
 * @param tensors the input file's tensors (name, ggml type name, shape).
 * @throws EngineError('invalid_argument') for an unknown file type.
 */
export function planQuantization(
  tensors: readonly Pick<GgufTensorInfo, 'name' | 'typeName' | 'shape'>[],
  ftype: QuantizeFtype,
  opts: QuantizeOptions = {},
): TensorPlan[] {
  const ft = FTYPES[ftype];
  if (!ft) {
    throw new EngineError(
      'invalid_argument',
      `unknown target type ${String(ftype)}; choose one of ${Object.keys(FTYPES).join(', ')}`,
    );
  }
  const base = ft.base;
  const baseQuantized = ggmlTypeByName(base).quantized;
  const pure = ft.pure || opts.pure === true;
  const ordered = llamaCppTensorOrder(tensors);
  const tied = !ordered.some((t) => t.name === 'output.weight');
  const nAttnV = ordered.filter((t) => isAttnVLike(t.name)).length;
  const nLayers = new Set(ordered.map((t) => layerOf(t.name)).filter((l) => l >= 0)).size;
  let iAttnV = 0;
  let iFfnDown = 0;

  return ordered.map((t): TensorPlan => {
    const entry: TensorPlan = { name: t.name, shape: [...t.shape], from: t.typeName, to: t.typeName };
    if (!allowsQuantization(t.name, t.shape)) {
      entry.note = 'not quantized';
      return entry;
    }
    let to = base;
    let note: string | undefined;
    if (baseQuantized) {
      if (!pure) {
        const isOutput = t.name === 'output.weight' || (tied && t.name === 'token_embd.weight');
        if (isOutput) {
          if (t.shape[0] % ggmlTypeByName(to).blockSize !== 0) to = 'Q8_0';
          else if (to !== 'Q8_0') to = 'Q6_K';
        } else if (isAttnVLike(t.name)) {
          to = attnVType(ftype, to, iAttnV, nAttnV, opts);
          iAttnV++;
        } else if (t.name.includes('attn_output.weight')) {
          to = attnOutputType(ftype, to);
        } else if (t.name.includes('ffn_down')) {
          to = ffnDownType(ftype, to, iFfnDown, nLayers);
          iFfnDown++;
        }
        if (to !== base) note = 'mix';
      }
      const ne0 = t.shape[0];
      const block = ggmlTypeByName(to).blockSize;
      if (ne0 % block !== 0) {
        let fb = fallbackType(to, opts.fallback);
        if (ne0 % ggmlTypeByName(fb).blockSize !== 0) fb = 'F16';
        note = `fallback: ${ne0} columns are not a multiple of ${block} (${to})`;
        to = fb;
      }
    }
    entry.to = to;
    if (note) entry.note = note;
    return entry;
  });
}

/**
 * What llama.cpp's type choice reads from the model's hyperparameters: `n_gqa()` (head_count /
 * head_count_kv of layer 0, integer division, 0 when head_count_kv is 0) and `LLM_TYPE_70B` (llama:
 * 80 layers and head_count ≠ head_count_kv, as `llama_quant_model_from_metadata`; qwen2: 80 layers,
 * src/models/qwen2.cpp).
 */
function modelFacts(file: Pick<OpenedGgufFile, 'metadata'>): Pick<QuantizeOptions, 'nGqa' | 'model70B'> {
  const md = file.metadata;
  const arch = String(md['general.architecture'] ?? '');
  const num = (k: string): number | undefined => {
    const v = md[`${arch}.${k}`];
    const x = Array.isArray(v) ? v[0] : v;
    return typeof x === 'number' ? x : typeof x === 'bigint' ? Number(x) : undefined;
  };
  const nHead = num('attention.head_count') ?? 0;
  const nHeadKv = num('attention.head_count_kv') ?? nHead;
  const nLayer = num('block_count') ?? 0;
  return {
    nGqa: nHeadKv === 0 ? 0 : Math.trunc(nHead / nHeadKv),
    model70B: nLayer === 80 && ((arch === 'llama' && nHead !== nHeadKv) || arch === 'qwen2'),
  };
}

/** Result of {@link quantizeGguf}. */
export interface QuantizeResult {
  /** The new GGUF file. */
  bytes: Uint8Array;
  /** Per tensor, in file order. */
  plan: TensorPlan[];
}

/**
 * Quantizes a whole GGUF model (tensor data read into memory: meant for small and medium models).
 * @param file an opened GGUF whose quantized tensors are F32, F16 or BF16 (quantized sources are
 *   refused: requantizing loses quality twice).
 * @param onTensor called after each tensor with its plan and its index in file order.
 * @throws EngineError('invalid_argument') for an unknown type, a quantized source tensor that would
 *   change type, or a tensor with NaN or infinite values.
 */
export async function quantizeGguf(
  file: OpenedGgufFile,
  ftype: QuantizeFtype,
  opts: QuantizeOptions = {},
  onTensor?: (p: TensorPlan, index: number, total: number) => void,
): Promise<QuantizeResult> {
  const plan = planQuantization([...file.tensors.values()], ftype, { ...modelFacts(file), ...opts });
  for (const p of plan) {
    if (p.from !== p.to && !(hasCodec(p.from) && !ggmlTypeByName(p.from).quantized)) {
      throw new EngineError(
        'invalid_argument',
        `tensor ${p.name} is ${p.from}; only F32, F16 and BF16 tensors can be quantized (requantizing ` +
          'is not supported: start from the F32/F16/BF16 model)',
      );
    }
  }
  const raw = new Map<string, Uint8Array>();
  for (const t of file.tensors.values()) raw.set(t.name, new Uint8Array(t.nBytes));
  await file.streamTensorData((c) => {
    raw.get(c.tensor.name)!.set(c.bytes, c.offset);
  });

  const tensors: GgufTensorInput[] = plan.map((p, i) => {
    const src = raw.get(p.name)!;
    const shape = canonShape(p.shape);
    let data = src;
    if (p.to !== p.from) {
      const n = shapeElements(shape);
      const f32 = dequantizeRow(p.from, src, n);
      for (let k = 0; k < n; k++) {
        if (!Number.isFinite(f32[k])) {
          throw new EngineError(
            'invalid_argument',
            `tensor ${p.name} has a non-finite value (${f32[k]}) at element ${k}; the model is damaged`,
          );
        }
      }
      data = quantizeRow(p.to, f32);
    }
    raw.delete(p.name);
    onTensor?.(p, i, plan.length);
    return { name: p.name, type: p.to, shape, data };
  });

  const dropped = new Set(['general.quantization_version', 'general.file_type', 'split.no', 'split.count']);
  const metadata = metadataEntriesFrom(file).filter(
    (e) => !dropped.has(e.key) && e.key !== 'split.tensors.count',
  );
  metadata.push(kv.u32('general.quantization_version', GGML_QNT_VERSION));
  metadata.push(kv.u32('general.file_type', FTYPES[ftype].fileType));
  const bytes = writeGguf({ metadata, tensors, alignment: file.alignment });
  return { bytes, plan };
}
