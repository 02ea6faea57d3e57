/**
 * Seeded random llama models as GGUF bytes, for engine tests that need a model of a chosen shape: same
 * options, same bytes. Weights are normal with std 1/√fan_in (so activations stay near unit scale),
 * norms near 1, and the vocabulary is a small SentencePiece-style one (`tokenizer.ggml.model = llama`).
 */

import { EngineError } from '../core/errors.ts';
import { GgmlTypeId, shapeElements } from '../gguf/ggml-types.ts';
import { f32ToF16 } from '../gguf/half.ts';
import { type GgufMetadataEntry, type GgufTensorInput, kv, writeGguf } from '../gguf/writer.ts';
import { mulberry32, type Rng, randn } from '../util/prng.ts';
import { llamaTensorShapes } from './config.ts';

/** Options for {@link makeRandomLlamaGguf}. */
export interface RandomLlamaOptions {
  seed: number;
  nLayers: number;
  nEmbd: number;
  nFF: number;
  nHead: number;
  /** Default nHead. */
  nHeadKv?: number;
  /** At least 259 (3 special tokens + 256 byte tokens); the rest are word pieces. */
  nVocab: number;
  /** Default 512. */
  contextLength?: number;
  /** No `output.weight`: the output projection shares `token_embd.weight`. Default false. */
  tied?: boolean;
  /** Writes `llama.attention.key_length` when given; default nEmbd / nHead. */
  headDim?: number;
  /** Writes `llama.rope.dimension_count`; default headDim. */
  ropeDim?: number;
  /** Default 10000. */
  ropeFreqBase?: number;
  /** Default 1e-5. */
  rmsEps?: number;
  /** `general.name`; default 'random-llama'. */
  name?: string;
  /** Type of the 2-D weight matrices ('F32' default, or 'F16'); norms stay F32 as in llama.cpp. */
  weightType?: 'F32' | 'F16';
  /** `general.architecture` (default llama): qwen2 adds Q/K/V biases, qwen3 per-head Q/K norms. */
  architecture?: 'llama' | 'qwen2' | 'qwen3';
  /** Add a `rope_freqs.weight` [ropeDim/2] of factors in [1, 8] (Llama 3.1-style scaling). */
  ropeFreqFactors?: boolean;
  /** Extra metadata entries appended after the generated ones. */
  extraMetadata?: GgufMetadataEntry[];
  version?: 2 | 3;
  alignment?: number;
}

/** SentencePiece token types (llama.cpp's `llama_token_type`). */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** A tokenizer vocabulary as GGUF stores it. */
export interface SpmVocab {
  tokens: string[];
  scores: number[];
  tokenTypes: number[];
}

const SPACE = '\u2581'; // '▁', SentencePiece's word-start marker
const WORDS = [
  'the',
  'and',
  'was',
  'to',
  'a',
  'he',
  'she',
  'it',
  'they',
  'said',
  'in',
  'of',
  'day',
  'one',
  'big',
  'little',
  'time',
  'upon',
  'once',
  'there',
  'girl',
  'boy',
  'play',
  'happy',
  'with',
  'her',
  'his',
  'saw',
  'dog',
  'cat',
  'park',
  'tree',
  'ball',
  'red',
  'blue',
  'sun',
  'friend',
  'mom',
  'home',
  'fun',
  'want',
  'went',
  'had',
  'not',
];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/**
 * A SentencePiece-style vocabulary of `nVocab` tokens: `<unk>`, `<s>`, `</s>`, the byte tokens `<0x00>` …
 * `<0xFF>` (type BYTE), then word pieces with decreasing scores. Every multi-character piece can be built
 * by merging two shorter pieces that are also in the vocabulary, as SentencePiece BPE requires.
 */
export function makeSpmVocab(nVocab: number): SpmVocab {
  if (!Number.isInteger(nVocab) || nVocab < 259) {
    throw new EngineError(
      'invalid_argument',
      `nVocab ${nVocab} is too small; the vocabulary needs at least 259 tokens`,
    );
  }
  const tokens = ['<unk>', '<s>', '</s>'];
  const tokenTypes: number[] = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    tokenTypes.push(TokenType.BYTE);
  }
  const pieces = new Set<string>();
  const want = nVocab - tokens.length;
  const add = (p: string) => {
    if (pieces.size < want) pieces.add(p);
  };
  // Single characters first, then each word built up prefix by prefix (so every piece has a merge path).
  add(SPACE);
  for (const c of LETTERS) add(c);
  for (const c of '.,!?\'"') add(c);
  for (const w of WORDS) {
    const word = SPACE + w;
    for (let i = 2; i <= word.length; i++) add(word.slice(0, i));
  }
  for (const a of LETTERS) for (const b of LETTERS) add(a + b);
  for (const a of LETTERS) for (const b of LETTERS) for (const c of LETTERS) add(a + b + c);
  // Four letters (up to ~475,000 tokens in all, enough for real vocabularies' sizes in synthetic models).
  for (const a of LETTERS) {
    if (pieces.size >= want) break;
    for (const b of LETTERS) for (const c of LETTERS) for (const d of LETTERS) add(a + b + c + d);
  }
  if (pieces.size < want)
    throw new EngineError('invalid_argument', `nVocab ${nVocab} is too large for the test vocabulary`);

  const scores = tokens.map(() => 0);
  let i = 0;
  for (const p of pieces) {
    tokens.push(p);
    tokenTypes.push(TokenType.NORMAL);
    scores.push(-i++);
  }
  return { tokens, scores, tokenTypes };
}

/** IEEE half-precision bits of `v`, rounded to nearest even (ggml's `GGML_FP32_TO_FP16`; one implementation, in quantize.ts). */
export const f32ToF16Bits = f32ToF16;

function randomTensor(rng: Rng, name: string, shape: number[], weightType: 'F32' | 'F16'): GgufTensorInput {
  const n = shapeElements(shape);
  const { std, mean } = randomTensorScale(name, shape);
  if (shape.length === 1 || name.endsWith('.bias') || weightType === 'F32') {
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = randn(rng, mean, std);
    return { name, type: GgmlTypeId.F32, shape, data: new Uint8Array(f.buffer) };
  }
  const h = new Uint16Array(n);
  for (let i = 0; i < n; i++) h[i] = f32ToF16Bits(randn(rng, mean, std));
  return { name, type: GgmlTypeId.F16, shape, data: new Uint8Array(h.buffer) };
}

/**
 * The metadata of a seeded random llama model ({@link randomLlamaParts}'s, without the tensors).
 * @throws EngineError('invalid_argument') when nEmbd is not a multiple of nHead or nVocab is too small.
 */
export function randomLlamaMetadata(o: RandomLlamaOptions): GgufMetadataEntry[] {
  const nHeadKv = o.nHeadKv ?? o.nHead;
  const headDim = o.headDim ?? o.nEmbd / o.nHead;
  if (!Number.isInteger(headDim)) {
    throw new EngineError('invalid_argument', `nEmbd ${o.nEmbd} is not a multiple of nHead ${o.nHead}`);
  }
  const vocab = makeSpmVocab(o.nVocab);
  const a = o.architecture ?? 'llama';
  const metadata: GgufMetadataEntry[] = [
    kv.string('general.architecture', a),
    kv.string('general.name', o.name ?? 'random-llama'),
    kv.u32(`${a}.context_length`, o.contextLength ?? 512),
    kv.u32(`${a}.embedding_length`, o.nEmbd),
    kv.u32(`${a}.feed_forward_length`, o.nFF),
    kv.u32(`${a}.attention.head_count`, o.nHead),
    kv.u32(`${a}.attention.head_count_kv`, nHeadKv),
    kv.u32(`${a}.block_count`, o.nLayers),
    kv.u32(`${a}.rope.dimension_count`, o.ropeDim ?? headDim),
    kv.f32(`${a}.rope.freq_base`, o.ropeFreqBase ?? 10000),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, o.rmsEps ?? 1e-5),
  ];
  if (o.headDim !== undefined) metadata.push(kv.u32(`${a}.attention.key_length`, o.headDim));
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
    ...(o.extraMetadata ?? []),
  );
  return metadata;
}

/** The tensor names and shapes of a random llama model, in {@link randomLlamaParts}'s order. */
export function randomLlamaShapes(o: RandomLlamaOptions): Map<string, number[]> {
  const a = o.architecture ?? 'llama';
  const headDim = o.headDim ?? o.nEmbd / o.nHead;
  return llamaTensorShapes({
    nLayers: o.nLayers,
    nEmbd: o.nEmbd,
    nFF: o.nFF,
    nHead: o.nHead,
    nHeadKv: o.nHeadKv ?? o.nHead,
    headDim,
    nVocab: o.nVocab,
    tiedEmbeddings: o.tied ?? false,
    qkvBias: a === 'qwen2',
    qkNorm: a === 'qwen3',
    ropeFreqFactors: o.ropeFreqFactors ?? false,
    ropeDim: o.ropeDim ?? headDim,
  });
}

/**
 * The standard deviation and mean {@link randomLlamaParts} draws a tensor's values from: norms near 1
 * (std 0.2), biases std 0.5, the embedding table std 1, matrices std 1/√fan_in (shape[0]).
 */
export function randomTensorScale(name: string, shape: readonly number[]): { std: number; mean: number } {
  const isBias = name.endsWith('.bias');
  const isNorm = shape.length === 1 && !isBias;
  const std = isNorm ? 0.2 : isBias ? 0.5 : name === 'token_embd.weight' ? 1 : 1 / Math.sqrt(shape[0]);
  return { std, mean: isNorm ? 1 : 0 };
}

/**
 * The metadata and tensors of a seeded random llama model, before serialisation (for tests that want to
 * alter them), as {@link writeGguf} takes them.
 */
export function randomLlamaParts(o: RandomLlamaOptions): {
  metadata: GgufMetadataEntry[];
  tensors: GgufTensorInput[];
} {
  const metadata = randomLlamaMetadata(o);
  const rng = mulberry32(o.seed);
  const shapes = randomLlamaShapes(o);
  const tensors = [...shapes].map(([name, shape]) =>
    name === 'rope_freqs.weight'
      ? {
          name,
          type: GgmlTypeId.F32,
          shape,
          data: new Uint8Array(Float32Array.from({ length: shape[0] }, () => 1 + 7 * rng()).buffer),
        }
      : randomTensor(rng, name, shape, o.weightType ?? 'F32'),
  );
  return { metadata, tensors };
}

/** A seeded random llama model as GGUF bytes (see {@link RandomLlamaOptions}). */
export function makeRandomLlamaGguf(o: RandomLlamaOptions): Uint8Array {
  return writeGguf({ version: o.version, alignment: o.alignment, ...randomLlamaParts(o) });
}
