/**
 * The random-weight model behind `tests/golden/wllama-utf8.json` (`npm run golden:wllama`): a small
 * Q4_K_M llama whose greedy output on one prompt stays valid UTF-8 for 25 tokens and on another emits a
 * stray byte token (≥ 0x80) within a few tokens, the case wllama 3.13 cannot stream (src/wllama/engine.ts,
 * wllamaRequestError). The golden script and the browser test build the same bytes from these options.
 */
import { quantizeGguf } from '../gguf/quantize-model.ts';
import { openGguf } from '../gguf/reader.ts';
import { makeRandomLlamaGguf, type RandomLlamaOptions } from '../model/random-model.ts';

/** The model's shape and seed (256-wide rows, so Q4_K_M gets its K-quants). */
export const WLLAMA_UTF8_MODEL: RandomLlamaOptions = {
  seed: 2,
  nLayers: 2,
  nEmbd: 256,
  nFF: 512,
  nHead: 4,
  nVocab: 2048,
  contextLength: 256,
  name: 'random-llama-utf8',
};

/** Greedy tokens stored per prompt. */
export const WLLAMA_UTF8_N_GENERATE = 64;

/** The prompts (text: wllama takes text), keyed by what their greedy output does. */
export const WLLAMA_UTF8_PROMPTS = {
  /** No byte token ≥ 0x80 in the first 25 greedy tokens (llama.cpp's, F32 KV cache). */
  valid: 'Once upon a time',
  /** A byte token ≥ 0x80 at greedy step 6. */
  strayByte: 'She had a red ball',
} as const;

/** The model file: {@link WLLAMA_UTF8_MODEL} written F32, quantized to Q4_K_M by our quantizer. */
export async function buildWllamaUtf8Model(): Promise<Uint8Array> {
  const f32 = makeRandomLlamaGguf(WLLAMA_UTF8_MODEL);
  return (await quantizeGguf(await openGguf({ blob: new Blob([f32 as BlobPart]) }), 'Q4_K_M')).bytes;
}

/** Index of the first byte token ≥ 0x80 (ids 131 … 258 in this vocabulary) in `ids`, -1 if none. */
export function firstHighByte(ids: readonly number[]): number {
  return ids.findIndex((t) => t >= 3 + 0x80 && t < 3 + 256);
}
