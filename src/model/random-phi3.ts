/**
 * Seeded random Phi-3 models (`general.architecture = phi3`: Phi-3, Phi-3.5-mini, Phi-4-mini) as GGUF
 * bytes that llama.cpp loads: same options, same bytes. Metadata keys and tensor names are those of
 * llama.cpp's loader (src/llama-arch.cpp, src/models/phi3.cpp): a fused `blk.N.attn_qkv.weight`
 * [nEmbd, qDim + 2·kvDim] (rows Q, K, V), a fused `blk.N.ffn_up.weight` [nEmbd, 2·nFF] (rows gate, up)
 * with no ffn_gate, and optional LongRoPE `rope_factors_short.weight` / `rope_factors_long.weight`
 * [ropeDim/2]. Weights are drawn as in random-model.ts ({@link randomTensorScale}); the vocabulary is its
 * SentencePiece-style one.
 */

import { EngineError } from '../core/errors.ts';
import { GgmlTypeId, shapeElements } from '../gguf/ggml-types.ts';
import { type GgufMetadataEntry, type GgufTensorInput, kv, writeGguf } from '../gguf/writer.ts';
import { mulberry32, type Rng, randn } from '../util/prng.ts';
import { llamaTensorShapes } from './config.ts';
import { f32ToF16Bits, makeSpmVocab, randomTensorScale, TokenType } from './random-model.ts';

/** Options for {@link makeRandomPhi3Gguf}. */
export interface RandomPhi3Options {
  seed: number;
  nLayers: number;
  /** Must equal nHead × head size (llama.cpp's phi3 makes Q and attn_output nEmbd wide). */
  nEmbd: number;
  /** `phi3.feed_forward_length`; ffn_up holds 2·nFF rows. */
  nFF: number;
  nHead: number;
  /** Default nHead. */
  nHeadKv?: number;
  /** At least 259 (see makeSpmVocab). */
  nVocab: number;
  /** `phi3.context_length` (n_ctx_train). Default 512. */
  contextLength?: number;
  /** Type of the 2-D weight matrices (default 'F32'); norms and rope factors stay F32. */
  weightType?: 'F32' | 'F16';
  /** Separate attn_q/attn_k/attn_v instead of the fused attn_qkv (llama.cpp takes both). Default false. */
  separateQkv?: boolean;
  /**
   * LongRoPE: writes `rope_factors_short.weight` (values in [1, 3]) and `rope_factors_long.weight` (values
   * in [1, 32]) [ropeDim/2], `phi3.rope.scaling.original_context_length` = `originalContextLength` and
   * `phi3.rope.scaling.attn_factor` = `attnFactor`.
   */
  longRope?: { originalContextLength: number; attnFactor: number };
  /** `phi3.rope.dimension_count` < head size: partial rotary (Phi-4-mini rotates 96 of 128). Default head size. */
  ropeDim?: number;
  /** Writes `phi3.attention.sliding_window` (llama.cpp reads it and disables SWA for Phi). */
  slidingWindow?: number;
  /**
   * No `output.weight`: the output projection shares `token_embd.weight` (Phi-4-mini), drawn then with std
   * 1/√nEmbd instead of 1. Default false.
   */
  tied?: boolean;
  /** Default 10000. */
  ropeFreqBase?: number;
  /** Default 1e-5. */
  rmsEps?: number;
  /** `general.name`; default 'random-phi3'. */
  name?: string;
}

function tensorFrom(
  rng: Rng,
  name: string,
  shape: number[],
  weightType: 'F32' | 'F16',
  tied: boolean,
): GgufTensorInput {
  const n = shapeElements(shape);
  // Tied: token_embd is also the output projection; std 1/√nEmbd keeps the logits near std 1 (with std 1
  // the residual's own embedding dominates them and the greedy output repeats one token).
  const { std, mean } =
    tied && name === 'token_embd.weight'
      ? { std: 1 / Math.sqrt(shape[0]), mean: 0 }
      : randomTensorScale(name, shape);
  if (shape.length === 1 || weightType === 'F32') {
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = randn(rng, mean, std);
    return { name, type: GgmlTypeId.F32, shape, data: new Uint8Array(f.buffer) };
  }
  const h = new Uint16Array(n);
  for (let i = 0; i < n; i++) h[i] = f32ToF16Bits(randn(rng, mean, std));
  return { name, type: GgmlTypeId.F16, shape, data: new Uint8Array(h.buffer) };
}

/**
 * The metadata and tensors of a seeded random phi3 model (before serialisation).
 * @throws EngineError('invalid_argument') when nEmbd is not nHead × an even head size, nHead is not a
 *   multiple of nHeadKv, ropeDim is odd or above the head size, or nVocab is too small.
 */
export function randomPhi3Parts(o: RandomPhi3Options): {
  metadata: GgufMetadataEntry[];
  tensors: GgufTensorInput[];
} {
  const nHeadKv = o.nHeadKv ?? o.nHead;
  const headDim = o.nEmbd / o.nHead;
  const ropeDim = o.ropeDim ?? headDim;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new EngineError('invalid_argument', `nEmbd ${o.nEmbd} is not nHead ${o.nHead} × an even head size`);
  }
  if (o.nHead % nHeadKv !== 0) {
    throw new EngineError('invalid_argument', `nHead ${o.nHead} is not a multiple of nHeadKv ${nHeadKv}`);
  }
  if (!Number.isInteger(ropeDim) || ropeDim % 2 !== 0 || ropeDim > headDim || ropeDim < 2) {
    throw new EngineError('invalid_argument', `ropeDim ${ropeDim} must be even and at most ${headDim}`);
  }
  const vocab = makeSpmVocab(o.nVocab);
  // The last piece becomes `<|endoftext|>` (CONTROL), as in Phi-3's vocabulary: llama.cpp's vocabulary
  // loader looks it up (token_to_id.at) when general.name contains "phi3" or "phi-3".
  vocab.tokens[o.nVocab - 1] = '<|endoftext|>';
  vocab.tokenTypes[o.nVocab - 1] = TokenType.CONTROL;
  vocab.scores[o.nVocab - 1] = 0;
  const a = 'phi3';
  const metadata: GgufMetadataEntry[] = [
    kv.string('general.architecture', a),
    kv.string('general.name', o.name ?? 'random-phi3'),
    kv.u32(`${a}.context_length`, o.contextLength ?? 512),
    kv.u32(`${a}.embedding_length`, o.nEmbd),
    kv.u32(`${a}.feed_forward_length`, o.nFF),
    kv.u32(`${a}.block_count`, o.nLayers),
    kv.u32(`${a}.attention.head_count`, o.nHead),
    kv.u32(`${a}.attention.head_count_kv`, nHeadKv),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, o.rmsEps ?? 1e-5),
    kv.u32(`${a}.rope.dimension_count`, ropeDim),
    kv.f32(`${a}.rope.freq_base`, o.ropeFreqBase ?? 10000),
  ];
  if (o.longRope) {
    metadata.push(
      kv.u32(`${a}.rope.scaling.original_context_length`, o.longRope.originalContextLength),
      kv.f32(`${a}.rope.scaling.attn_factor`, o.longRope.attnFactor),
    );
  }
  if (o.slidingWindow !== undefined) metadata.push(kv.u32(`${a}.attention.sliding_window`, o.slidingWindow));
  metadata.push(
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

  const shapes = llamaTensorShapes({
    nLayers: o.nLayers,
    nEmbd: o.nEmbd,
    nFF: o.nFF,
    nHead: o.nHead,
    nHeadKv,
    headDim,
    nVocab: o.nVocab,
    tiedEmbeddings: o.tied ?? false,
    ropeDim,
    phi3: {
      fusedQkv: !o.separateQkv,
      ropeFactorsShort: o.longRope !== undefined,
      ropeFactorsLong: o.longRope !== undefined,
    },
  });
  const rng = mulberry32(o.seed);
  const factors = (name: string, n: number, max: number): GgufTensorInput => ({
    name,
    type: GgmlTypeId.F32,
    shape: [n],
    data: new Uint8Array(Float32Array.from({ length: n }, () => 1 + (max - 1) * rng()).buffer),
  });
  const tensors = [...shapes].map(([name, shape]) =>
    name === 'rope_factors_long.weight'
      ? factors(name, shape[0], 32)
      : name === 'rope_factors_short.weight'
        ? factors(name, shape[0], 3)
        : tensorFrom(rng, name, shape, o.weightType ?? 'F32', o.tied ?? false),
  );
  return { metadata, tensors };
}

/** A seeded random phi3 model as GGUF bytes (see {@link RandomPhi3Options}). */
export function makeRandomPhi3Gguf(o: RandomPhi3Options): Uint8Array {
  return writeGguf(randomPhi3Parts(o));
}

/**
 * The random Phi-3 that `scripts/golden-quant.ts` runs through llama.cpp's `llama_model_quantize` and
 * src/gguf/quantize-model.test.ts through ours: fused attn_qkv [256, 384] and ffn_up [256, 512],
 * rows of 256 so that the K-quants apply, 4 layers so that llama.cpp's attn_v-like rule for attn_qkv
 * (`category_is_attn_v`, src/llama-quant.cpp) varies by layer (`use_more_bits`: layers 2 and 3; Q3_K_M:
 * the first two), and n_gqa 4 (Q2_K, IQ4_NL and IQ4_XS raise attn_v-like tensors then).
 */
export const GOLDEN_QUANT_PHI3: Readonly<RandomPhi3Options> = {
  seed: 17,
  nLayers: 4,
  nEmbd: 256,
  nFF: 256,
  nHead: 8,
  nHeadKv: 2,
  nVocab: 320,
};
