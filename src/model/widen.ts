/**
 * Widens a small llama model without changing what it computes, so that a model with 64-wide rows
 * (stories260K) gets rows of 256 and the 256-block types (Q4_K, Q6_K) can be tested on real, trained
 * weights rather than noise.
 *
 * The old dimensions are spread among the new ones and every other weight is zero:
 * - residual dimension d → d·E′/E (so every 32- and 256-element block holds real weights); the norm
 *   weights are scaled by √(E/E′) and the RMSNorm epsilon by E/E′, so that RMSNorm(x′)·w′ equals
 *   RMSNorm(x)·w exactly (for E′/E a power of 4 even in binary32);
 * - query heads: more of them (the head size stays, as llama.cpp wants RoPE on whole heads), the old
 *   head h of KV group g becoming head g·G′ + (h mod G)·⌊G′/G⌋ (G, G′ query heads per KV head, so every
 *   32-wide block of W_o rows holds a real head); the new heads have zero W_q rows (uniform attention)
 *   and zero W_o columns, so they add nothing;
 * - feed-forward unit j → ⌊j·F′/F⌋ (zero gate and up rows give SiLU(0)·0 = 0 in the new units).
 * In exact arithmetic the logits are those of the original model.
 */
import { EngineError } from '../core/errors.ts';
import { dequantizeRow } from '../gguf/quantize.ts';
import type { OpenedGgufFile } from '../gguf/reader.ts';
import {
  type GgufMetadataEntry,
  type GgufTensorInput,
  kv,
  metadataEntriesFrom,
  writeGguf,
} from '../gguf/writer.ts';
import { type LlamaConfig, llamaConfigFromGguf } from './config.ts';

/** New sizes for {@link widenLlamaGguf}; each at least the old one. */
export interface WidenOptions {
  /** New embedding length E′. */
  nEmbd: number;
  /** New number of query heads (a multiple of the KV heads); the query width becomes nHead′·headDim. */
  nHead: number;
  /** New feed-forward length F′. */
  nFF: number;
  /**
   * New head size (default: the old one). Each head's old dimensions come first, the new ones are zero in
   * W_q, W_k, W_v (and the matching W_o columns), and W_q is scaled by √(new/old) so that the softmax scale
   * 1/√headDim gives the old scores (exact for a power-of-4 ratio). RoPE covers the whole new head
   * (llama.cpp's llama architecture wants rope.dimension_count = key_length) with the frequency base
   * raised to the power new/old, so that pair i keeps its angle base^(−2i/old) (up to the f32 rounding of
   * the new base: the logits move by ~1e-7, no longer exactly the old ones); the zero dimensions' pairs
   * rotate nothing. Needs RoPE on the whole old head. Lets a block-quantized KV cache (32 values per block)
   * run on a model whose heads are narrower.
   */
  headDim?: number;
}

/** stories260K (nEmbd 64, 8 heads, nFF 172) widened so that every weight row is a multiple of 256. */
export const WIDE_STORIES: WidenOptions = { nEmbd: 256, nHead: 32, nFF: 256 };

/**
 * stories260K with heads of 32 (its 8 dimensions, then 24 zero ones), the rest unchanged: the same
 * trained model for a Q8_0/Q4_0 KV cache, which needs whole 32-value blocks per head.
 */
export const STORIES_HEAD32: WidenOptions = { nEmbd: 64, nHead: 8, nFF: 172, headDim: 32 };

/** Reads every tensor as float32. */
async function readAll(file: OpenedGgufFile): Promise<Map<string, Float32Array>> {
  const raw = new Map<string, Uint8Array>();
  for (const t of file.tensors.values()) raw.set(t.name, new Uint8Array(t.nBytes));
  await file.streamTensorData((c) => {
    raw.get(c.tensor.name)!.set(c.bytes, c.offset);
  });
  const out = new Map<string, Float32Array>();
  for (const t of file.tensors.values()) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    out.set(t.name, dequantizeRow(t.typeName, raw.get(t.name)!, n));
  }
  return out;
}

/**
 * A GGUF (all tensors F32) of `file`'s llama model widened to `opts` (see the module comment).
 * @throws EngineError('invalid_argument') when a new size is smaller than the old one;
 *   ('unsupported_model') for tensors other than a plain llama model's.
 */
export async function widenLlamaGguf(file: OpenedGgufFile, opts: WidenOptions): Promise<Uint8Array> {
  const c: LlamaConfig = llamaConfigFromGguf(file, { supportedTypes: ['F32', 'F16', 'BF16'] });
  if (c.architecture !== 'llama' || c.ropeFreqFactors) {
    throw new EngineError('unsupported_model', 'only plain llama models (no rope_freqs) can be widened');
  }
  const E = c.nEmbd;
  const hd = c.headDim;
  const F = c.nFF;
  const { nEmbd: E2, nHead: H2, nFF: F2 } = opts;
  const hd2 = opts.headDim ?? hd;
  if (!(hd2 >= hd) || !Number.isInteger(hd2))
    throw new EngineError('invalid_argument', `cannot change head size ${hd} to ${hd2}: it may only grow`);
  const qScale = Math.sqrt(hd2 / hd);
  if (hd2 !== hd && c.ropeDim !== hd)
    throw new EngineError('unsupported_model', 'only a model with RoPE on the whole head can grow its heads');
  const G = c.nHead / c.nHeadKv;
  const G2 = H2 / c.nHeadKv;
  if (!(E2 >= E && H2 >= c.nHead && F2 >= F) || ![E2, G2, F2].every(Number.isInteger)) {
    throw new EngineError(
      'invalid_argument',
      `cannot widen nEmbd ${E}, nHead ${c.nHead}, nFF ${F} to ${E2}, ${H2}, ${F2}: sizes may only grow ` +
        `and the heads must stay a multiple of the ${c.nHeadKv} KV heads`,
    );
  }
  const pE = (d: number) => Math.floor((d * E2) / E);
  const pF = (j: number) => Math.floor((j * F2) / F);
  /** Query dimension k = h·hd + i → its new index. */
  const pQ = (k: number) => {
    const h = Math.floor(k / hd);
    return (Math.floor(h / G) * G2 + (h % G) * Math.floor(G2 / G)) * hd2 + (k % hd);
  };
  /** K/V dimension k = h·hd + i → its new index. */
  const pKV = (k: number) => Math.floor(k / hd) * hd2 + (k % hd);
  const normScale = Math.sqrt(E / E2);
  const w = await readAll(file);
  const get = (name: string) => {
    const t = w.get(name);
    if (!t) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
    return t;
  };

  const tensors: GgufTensorInput[] = [];
  const put = (name: string, shape: number[], data: Float32Array) =>
    tensors.push({ name, type: 'F32', shape, data: new Uint8Array(data.buffer) });

  /** [E, N] with rows mapped by `pRow` (N′ rows) and columns by pE. */
  const widenIn = (old: Float32Array, N: number, N2: number, pRow: (n: number) => number) => {
    const out = new Float32Array(E2 * N2);
    for (let n = 0; n < N; n++) for (let d = 0; d < E; d++) out[pRow(n) * E2 + pE(d)] = old[n * E + d];
    return out;
  };

  for (const t of file.tensors.values()) {
    const name = t.name;
    const base = name.replace(/^blk\.\d+\./, '');
    const old = get(name);
    switch (base) {
      case 'token_embd.weight':
      case 'output.weight':
        put(
          name,
          [E2, c.nVocab],
          widenIn(old, c.nVocab, c.nVocab, (n) => n),
        );
        break;
      case 'attn_norm.weight':
      case 'ffn_norm.weight':
      case 'output_norm.weight': {
        const out = new Float32Array(E2);
        for (let d = 0; d < E; d++) out[pE(d)] = old[d] * normScale;
        put(name, [E2], out);
        break;
      }
      case 'attn_q.weight':
        put(
          name,
          [E2, H2 * hd2],
          widenIn(old, c.nHead * hd, H2 * hd2, pQ).map((x) => x * qScale),
        );
        break;
      case 'attn_k.weight':
      case 'attn_v.weight':
        put(name, [E2, c.nHeadKv * hd2], widenIn(old, c.nHeadKv * hd, c.nHeadKv * hd2, pKV));
        break;
      case 'attn_output.weight': {
        const Q = c.nHead * hd;
        const Q2 = H2 * hd2;
        const out = new Float32Array(Q2 * E2);
        for (let n = 0; n < E; n++) for (let k = 0; k < Q; k++) out[pE(n) * Q2 + pQ(k)] = old[n * Q + k];
        put(name, [Q2, E2], out);
        break;
      }
      case 'ffn_gate.weight':
      case 'ffn_up.weight':
        put(name, [E2, F2], widenIn(old, F, F2, pF));
        break;
      case 'ffn_down.weight': {
        const out = new Float32Array(F2 * E2);
        for (let n = 0; n < E; n++) for (let j = 0; j < F; j++) out[pE(n) * F2 + pF(j)] = old[n * F + j];
        put(name, [F2, E2], out);
        break;
      }
      default:
        throw new EngineError('unsupported_model', `cannot widen tensor ${name}`);
    }
  }

  const a = 'llama';
  const set = new Map<string, GgufMetadataEntry>([
    [`${a}.embedding_length`, kv.u32(`${a}.embedding_length`, E2)],
    [`${a}.feed_forward_length`, kv.u32(`${a}.feed_forward_length`, F2)],
    [`${a}.attention.head_count`, kv.u32(`${a}.attention.head_count`, H2)],
    [`${a}.attention.key_length`, kv.u32(`${a}.attention.key_length`, hd2)],
    [`${a}.attention.value_length`, kv.u32(`${a}.attention.value_length`, hd2)],
    [`${a}.rope.dimension_count`, kv.u32(`${a}.rope.dimension_count`, hd2 !== hd ? hd2 : c.ropeDim)],
    ...(hd2 !== hd
      ? ([
          [`${a}.rope.freq_base`, kv.f32(`${a}.rope.freq_base`, Math.fround(c.ropeFreqBase ** (hd2 / hd)))],
        ] as const)
      : []),
    [
      `${a}.attention.layer_norm_rms_epsilon`,
      kv.f32(`${a}.attention.layer_norm_rms_epsilon`, Math.fround(c.rmsEps) * (E / E2)),
    ],
    [
      'general.name',
      kv.string('general.name', `${c.name || 'llama'}-wide${E2}${hd2 !== hd ? `-hd${hd2}` : ''}`),
    ],
  ]);
  const metadata = metadataEntriesFrom(file)
    .filter((e) => e.key !== 'general.file_type')
    .map((e) => {
      const s = set.get(e.key);
      set.delete(e.key);
      return s ?? e;
    });
  metadata.push(...set.values());
  return writeGguf({ metadata, tensors, alignment: file.alignment });
}
