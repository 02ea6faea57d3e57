/**
 * Seeded random Gemma 2 / Gemma 3 (text) models as GGUF bytes that llama.cpp loads: same options, same
 * bytes. Metadata keys and tensor names are llama.cpp's (src/llama-arch.cpp; load_arch_hparams and
 * load_arch_tensors in src/models/gemma2.cpp, gemma3.cpp): per layer `attn_norm`, `attn_q/k/v`,
 * `attn_output`, `post_attention_norm`, `ffn_norm`, `ffn_gate/up/down`, `post_ffw_norm` (+ gemma3's
 * `attn_q_norm`/`attn_k_norm` [headDim]); tied embeddings (no `output.weight`). Norm weights are drawn
 * near 1 as the stored `1 + w` (conversion/gemma.py adds the 1). Values as {@link randomTensorScale},
 * except `token_embd.weight`, std 0.35/√nEmbd, and `output_norm.weight`, mean 3 std 0.3: Gemma multiplies
 * the embeddings by √nEmbd, and larger embeddings would swamp the (post-normed) layer outputs in the
 * residual, so the tied output projection would favour the input token and greedy decoding would repeat
 * it; the output norm brings the logits back to about unit scale.
 */

import { EngineError } from '../core/errors.ts';
import { GgmlTypeId, shapeElements } from '../gguf/ggml-types.ts';
import { f32ToF16 } from '../gguf/half.ts';
import { type GgufMetadataEntry, type GgufTensorInput, kv, writeGguf } from '../gguf/writer.ts';
import { mulberry32, randn } from '../util/prng.ts';
import { llamaTensorShapes } from './config.ts';
import { makeSpmVocab, randomTensorScale } from './random-model.ts';

/** Options for {@link makeRandomGemmaGguf}. */
export interface RandomGemmaOptions {
  architecture: 'gemma2' | 'gemma3';
  seed: number;
  nLayers: number;
  nEmbd: number;
  nFF: number;
  nHead: number;
  /** Default nHead. */
  nHeadKv?: number;
  /** `attention.key_length` and `value_length` (always written, as the converter does); default nEmbd / nHead. */
  headDim?: number;
  /** At least 259. */
  nVocab: number;
  /** Default 512. */
  contextLength?: number;
  /**
   * `attention.sliding_window`. gemma2: default 4096 (written always). gemma3: written only when given;
   * without it llama.cpp runs every layer with full attention.
   */
  slidingWindow?: number;
  /** `attention.sliding_window_pattern` (period: layer il is SWA when il % period < period − 1); written when given. */
  slidingWindowPattern?: number;
  /** gemma2 `attn_logit_softcapping`; default 50. Not written for gemma3 (llama.cpp ignores it there). */
  attnLogitSoftcap?: number;
  /** `final_logit_softcapping`: gemma2 default 30 (written always); gemma3 written only when given. */
  finalLogitSoftcap?: number;
  /** `rope.freq_base` (the global layers'): default 10000 for gemma2, 1e6 for gemma3. */
  ropeFreqBase?: number;
  /**
   * `rope.freq_base_swa`, written when given. Without it llama.cpp gives the SWA layers the global base
   * (gemma2) or 10000 (gemma3, rope_freq_base_train_swa's default).
   */
  ropeFreqBaseSwa?: number;
  /** Linear RoPE scaling: writes `rope.scaling.type = linear` and `rope.scaling.factor`. */
  ropeScalingFactor?: number;
  /** Default 1e-6 (Gemma's). */
  rmsEps?: number;
  /** Type of the 2-D weight matrices ('F32' default, or 'F16'); norms stay F32. */
  weightType?: 'F32' | 'F16';
  /** `general.name`; default 'random-gemma2' / 'random-gemma3'. */
  name?: string;
}

/** The tensor names and shapes of a random Gemma model (ggml order), in file order. */
export function randomGemmaShapes(o: RandomGemmaOptions): Map<string, number[]> {
  const headDim = o.headDim ?? o.nEmbd / o.nHead;
  return llamaTensorShapes({
    nLayers: o.nLayers,
    nEmbd: o.nEmbd,
    nFF: o.nFF,
    nHead: o.nHead,
    nHeadKv: o.nHeadKv ?? o.nHead,
    headDim,
    nVocab: o.nVocab,
    tiedEmbeddings: true,
    qkNorm: o.architecture === 'gemma3',
    postNorms: true,
  });
}

/**
 * The metadata of a random Gemma model, as convert_hf_to_gguf writes it (conversion/gemma.py).
 * @throws EngineError('invalid_argument') for a head size that is not an even integer, nHead not a multiple
 *   of nHeadKv, or a non-positive window, pattern or soft-cap.
 */
export function randomGemmaMetadata(o: RandomGemmaOptions): GgufMetadataEntry[] {
  const a = o.architecture;
  if (a !== 'gemma2' && a !== 'gemma3') {
    throw new EngineError('invalid_argument', `architecture ${String(a)} is not gemma2 or gemma3`);
  }
  const nHeadKv = o.nHeadKv ?? o.nHead;
  const headDim = o.headDim ?? o.nEmbd / o.nHead;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new EngineError('invalid_argument', `head size ${headDim} is not an even integer`);
  }
  if (o.nHead % nHeadKv !== 0) {
    throw new EngineError('invalid_argument', `nHead ${o.nHead} is not a multiple of nHeadKv ${nHeadKv}`);
  }
  for (const [k, v] of Object.entries({
    slidingWindow: o.slidingWindow,
    slidingWindowPattern: o.slidingWindowPattern,
    attnLogitSoftcap: o.attnLogitSoftcap,
    finalLogitSoftcap: o.finalLogitSoftcap,
    ropeScalingFactor: o.ropeScalingFactor,
  })) {
    if (v !== undefined && !(v > 0)) throw new EngineError('invalid_argument', `${k} ${v} must be > 0`);
  }
  const vocab = makeSpmVocab(o.nVocab);
  const md: GgufMetadataEntry[] = [
    kv.string('general.architecture', a),
    kv.string('general.name', o.name ?? `random-${a}`),
    kv.u32(`${a}.context_length`, o.contextLength ?? 512),
    kv.u32(`${a}.embedding_length`, o.nEmbd),
    kv.u32(`${a}.block_count`, o.nLayers),
    kv.u32(`${a}.feed_forward_length`, o.nFF),
    kv.u32(`${a}.attention.head_count`, o.nHead),
    kv.u32(`${a}.attention.head_count_kv`, nHeadKv),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, o.rmsEps ?? 1e-6),
    kv.u32(`${a}.attention.key_length`, headDim),
    kv.u32(`${a}.attention.value_length`, headDim),
    kv.f32(`${a}.rope.freq_base`, o.ropeFreqBase ?? (a === 'gemma2' ? 10000 : 1_000_000)),
  ];
  if (o.ropeFreqBaseSwa !== undefined) md.push(kv.f32(`${a}.rope.freq_base_swa`, o.ropeFreqBaseSwa));
  if (o.ropeScalingFactor !== undefined) {
    md.push(
      kv.string(`${a}.rope.scaling.type`, 'linear'),
      kv.f32(`${a}.rope.scaling.factor`, o.ropeScalingFactor),
    );
  }
  if (a === 'gemma2') {
    md.push(
      kv.f32(`${a}.attn_logit_softcapping`, o.attnLogitSoftcap ?? 50),
      kv.f32(`${a}.final_logit_softcapping`, o.finalLogitSoftcap ?? 30),
      kv.u32(`${a}.attention.sliding_window`, o.slidingWindow ?? 4096),
    );
  } else {
    if (o.finalLogitSoftcap !== undefined) {
      md.push(kv.f32(`${a}.final_logit_softcapping`, o.finalLogitSoftcap));
    }
    if (o.slidingWindow !== undefined) md.push(kv.u32(`${a}.attention.sliding_window`, o.slidingWindow));
  }
  if (o.slidingWindowPattern !== undefined) {
    md.push(kv.u32(`${a}.attention.sliding_window_pattern`, o.slidingWindowPattern));
  }
  md.push(
    kv.string('tokenizer.ggml.model', 'llama'),
    kv.strings('tokenizer.ggml.tokens', vocab.tokens),
    kv.f32s('tokenizer.ggml.scores', vocab.scores),
    kv.i32s('tokenizer.ggml.token_type', vocab.tokenTypes),
    kv.u32('tokenizer.ggml.unknown_token_id', 0),
    kv.u32('tokenizer.ggml.bos_token_id', 1),
    kv.u32('tokenizer.ggml.eos_token_id', 2),
    kv.bool('tokenizer.ggml.add_bos_token', true),
    kv.bool('tokenizer.ggml.add_eos_token', false),
  );
  return md;
}

/** The metadata and tensors of a random Gemma model, before serialisation. */
export function randomGemmaParts(o: RandomGemmaOptions): {
  metadata: GgufMetadataEntry[];
  tensors: GgufTensorInput[];
} {
  const metadata = randomGemmaMetadata(o);
  const rng = mulberry32(o.seed);
  const wt = o.weightType ?? 'F32';
  const tensors = [...randomGemmaShapes(o)].map(([name, shape]): GgufTensorInput => {
    const n = shapeElements(shape);
    const sc = randomTensorScale(name, shape);
    const isOutNorm = name === 'output_norm.weight';
    const mean = isOutNorm ? 3 : sc.mean;
    const std = name === 'token_embd.weight' ? 0.35 / Math.sqrt(o.nEmbd) : isOutNorm ? 0.3 : sc.std;
    if (shape.length === 1 || wt === 'F32') {
      const f = new Float32Array(n);
      for (let i = 0; i < n; i++) f[i] = randn(rng, mean, std);
      return { name, type: GgmlTypeId.F32, shape, data: new Uint8Array(f.buffer) };
    }
    const h = new Uint16Array(n);
    for (let i = 0; i < n; i++) h[i] = f32ToF16(randn(rng, mean, std));
    return { name, type: GgmlTypeId.F16, shape, data: new Uint8Array(h.buffer) };
  });
  return { metadata, tensors };
}

/**
 * A seeded random Gemma 2 or Gemma 3 (text) model as GGUF bytes (see {@link RandomGemmaOptions}).
 * @throws EngineError('invalid_argument') as {@link randomGemmaMetadata}, or for nVocab < 259.
 */
export function makeRandomGemmaGguf(o: RandomGemmaOptions): Uint8Array {
  return writeGguf(randomGemmaParts(o));
}
