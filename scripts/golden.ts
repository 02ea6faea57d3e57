/**
 * Writes `tests/golden/stories260K.json`: reference (golden) data from llama.cpp itself, run on the CPU
 * through node-llama-cpp's prebuilt binary, for the tokenizer, greedy generation and per-position
 * log-probabilities of `stories260K.gguf`.
 *
 * Usage: `npm run golden` (optionally `GOLDEN_MODEL=/path/to/stories260K.gguf`).
 *
 * What llama.cpp does, and how each field is obtained (node-llama-cpp 3.21.1):
 * - `model.tokenize(text, false)` calls `common_tokenize(vocab, text, add_special = false,
 *   parse_special = false)`: plain-text tokenization, no BOS. `ids` stores this.
 * - node-llama-cpp never calls llama.cpp with `add_special = true`. For SPM vocabularies
 *   `llama_vocab::impl::tokenize` with `add_special` only pushes BOS before the fragments (and EOS after
 *   when `add_eos`), so `idsWithBos` = `[bos, ...ids]`, which is what llama-cli's
 *   `common_tokenize(ctx, prompt, true, …)` gives for text without special-token strings. The script
 *   cross-checks this against `tokenize('<s>' + text, true)` (BOS parsed as a special token) wherever
 *   the text holds no special-token string.
 * - `idsParseSpecial` is `tokenize(text, true)` (parse_special = true, no BOS).
 * - `model.detokenize(ids)` calls `llama_detokenize(remove_special = false, unparse_special = false)`;
 *   `detokenize(ids, true)` sets unparse_special = true.
 * - Logits are not exposed by node-llama-cpp; `controlledEvaluate` with `generateNext.probabilities`
 *   returns softmax(logits) over the whole vocabulary, computed in f32 by the addon after a greedy-only
 *   sampler chain (which leaves the logits untouched). `logSoftmax` stores ln(p) of those.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gguf } from '@huggingface/gguf';
import {
  type ControlledEvaluateInputItem,
  getLlama,
  getModuleVersion,
  type LlamaContextSequence,
  LlamaLogLevel,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { stories260kPath } from '../src/testing/models.ts';
import { mulberry32 } from '../src/util/prng.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modelPath = process.env.GOLDEN_MODEL ?? stories260kPath();
const casesPath =
  process.env.GOLDEN_CASES ?? new URL('../../shared/cases/tokenizer-strings.json', import.meta.url).pathname;
const outPath = resolve(root, 'tests/golden/stories260K.json');

/**
 * Strings added to the shared tokenizer cases. No lone surrogates: Vite's JSON loader rejects them in the
 * golden file (llama.cpp sees them as U+FFFD, V8's UTF-8 conversion; spm.test.ts checks that).
 */
const extraStrings = [
  'The quick brown fox jumps over the lazy dog.',
  'Hello, World! 123',
  'ab\u00a0c',
  '\u2581',
  'a\u2581b \u2581\u2581c',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  '€100 costs ™ and ©',
  'x\u0000y',
  '<s>hello</s> <unk>',
  'Once upon a time<s>there was',
  ' leading and trailing  ',
  '🦙 llama 🦙🦙',
  'Ünïcödé ÄÖÜ ß',
  '\u0301combining',
  'नमस्ते दुनिया',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '\ufeffBOM at the start',
  'the the the theatre thereafter',
];

/** Number of seeded random strings (vocabulary pieces glued with odd characters) to stress merge order. */
const nFuzz = 60;

const longPrompt =
  'Once upon a time, in a small town near the big forest, there lived a little girl named Lily. ' +
  'She had a red ball and a small dog called Max. Every day, Lily and Max went to the park to play. ' +
  'One sunny morning, Lily saw a big tree with a shiny apple on top. She wanted the apple very much, ' +
  'so she asked her mom for help.';

/** Greedy-generation prompts; every one gets BOS. */
const generationPrompts = [
  'Once upon a time',
  '',
  'Lily and Ben went to the park 🌳 with their dog. They were',
  longPrompt,
  'The little cat',
  'One day, a boy named Tim found a shiny red ball.',
  // ~385 tokens: past several attention chunks and prefill batches; + 64 outputs stays inside 512.
  [longPrompt, longPrompt, longPrompt].join(' '),
];
const nGenerate = 64;

/** Prompts whose first `nLogProbPositions` generated positions get full log-softmax vectors. */
const logProbPrompts = ['Once upon a time', 'Lily and Ben went to the park 🌳 with their dog. They were'];
const nLogProbPositions = 16;

/** Expected continuation of "Once upon a time", from /work/shared/models/README.md. */
const readmeReference = {
  promptIds: [1, 403, 407, 261, 378],
  outputIds: [
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411,
    322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426,
  ],
};

const contextSettings = {
  contextSize: 512,
  batchSize: 512,
  sequences: 1,
  threads: 2,
  flashAttention: false,
  experimentalKvCacheKeyType: 'F32',
  experimentalKvCacheValueType: 'F32',
} as const;

/** The same with llama.cpp's default F16 K and V cache (`generationF16`). */
const contextSettingsF16 = {
  ...contextSettings,
  experimentalKvCacheKeyType: 'F16',
  experimentalKvCacheValueType: 'F16',
} as const;

function eq(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** 7 significant digits: f32 probabilities carry about that much. */
function round7(x: number): number {
  return Number(x.toPrecision(7));
}

/** Feeds `prompt` (ids) and generates `n` tokens greedily; with `withLogProbs`, also ln(p) per position. */
async function greedy(
  seq: LlamaContextSequence,
  nVocab: number,
  prompt: Token[],
  n: number,
  withLogProbs: number,
): Promise<{ outputIds: Token[]; logSoftmax: number[][] }> {
  await seq.clearHistory();
  const outputIds: Token[] = [];
  const logSoftmax: number[][] = [];
  let input: Token[] = prompt;
  for (let step = 0; step < n; step++) {
    const wantProbs = step < withLogProbs;
    const items: ControlledEvaluateInputItem[] = input.map((t, i) =>
      i === input.length - 1
        ? [t, { generateNext: { token: true, probabilities: wantProbs, options: { temperature: 0 } } }]
        : t,
    );
    const res = await seq.controlledEvaluate(items);
    const next = res[input.length - 1]?.next;
    if (next?.token == null) throw new Error(`no token generated at step ${step}`);
    outputIds.push(next.token);
    if (wantProbs) {
      const probs = next.probabilities;
      if (!probs || probs.size !== nVocab)
        throw new Error(`expected ${nVocab} probabilities, got ${probs?.size}`);
      const row = new Array<number>(nVocab);
      let argmax = 0;
      for (let id = 0; id < nVocab; id++) {
        const p = probs.get(id as Token);
        if (p === undefined) throw new Error(`probability of token ${id} missing`);
        if (!(p > 0)) throw new Error(`probability of token ${id} underflowed to ${p}`);
        row[id] = round7(Math.log(p));
        if (row[id] > row[argmax]) argmax = id;
      }
      if (argmax !== next.token) throw new Error(`greedy token ${next.token} is not the argmax ${argmax}`);
      logSoftmax.push(row);
    }
    input = [next.token];
  }
  return { outputIds, logSoftmax };
}

/** Random strings made of vocabulary pieces, spaces and characters outside the vocabulary. */
function fuzzStrings(tokens: readonly string[], types: readonly number[], n: number): string[] {
  const r = mulberry32(260);
  const normal = tokens.filter((_, i) => types[i] === 1).map((t) => t.replaceAll('\u2581', ' '));
  const odd = [
    ' ',
    '  ',
    '\n',
    '\t',
    'é',
    '🦙',
    '你',
    '\u00a0',
    '\u2581',
    '<',
    's>',
    '<s>',
    '0x',
    'ß',
    '\u0301',
  ];
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const parts: string[] = [];
    const len = 1 + Math.floor(r() * 24);
    for (let j = 0; j < len; j++) {
      parts.push(r() < 0.8 ? normal[Math.floor(r() * normal.length)] : odd[Math.floor(r() * odd.length)]);
    }
    out.push(parts.join(''));
  }
  return out;
}

/** Text of `id` as llama_token_to_piece(lstrip = 0) gives it, found by detokenizing after a plain token. */
function pieceOf(model: LlamaModel, id: Token, special: boolean, anchor: Token): string {
  const before = model.detokenize([anchor], special);
  const both = model.detokenize([anchor, id], special);
  if (!both.startsWith(before)) throw new Error(`piece of ${id}: "${both}" does not start with "${before}"`);
  return both.slice(before.length);
}

/** The id of `piece`, which must be one token. */
function idOf(model: LlamaModel, piece: string): Token {
  const t = model.tokenize(piece, false);
  if (t.length !== 1) throw new Error(`"${piece}" is not one token: ${t}`);
  return t[0];
}

/** (a) Each string through llama_tokenize and llama_detokenize; `idsWithBos` cross-checked against "<s>" + text. */
function tokenizerCases(model: LlamaModel, strings: string[], bos: Token) {
  const specialStrings = ['<s>', '</s>', '<unk>'];
  let bosCrossChecked = 0;
  const tokenizer = strings.map((text) => {
    const ids = model.tokenize(text, false);
    const idsWithBos = [bos, ...ids];
    if (!specialStrings.some((s) => text.includes(s))) {
      const viaSpecial = model.tokenize(`<s>${text}`, true);
      if (!eq(viaSpecial, idsWithBos)) {
        throw new Error(`BOS cross-check failed for ${JSON.stringify(text)}: ${viaSpecial} vs ${idsWithBos}`);
      }
      bosCrossChecked++;
    }
    return {
      text,
      ids,
      idsWithBos,
      idsParseSpecial: model.tokenize(text, true),
      detok: model.detokenize(ids),
      detokWithBos: model.detokenize(idsWithBos),
      detokWithBosUnparseSpecial: model.detokenize(idsWithBos, true),
    };
  });

  return { tokenizer, bosCrossChecked };
}

/** Detokenization of chosen id sequences: byte tokens that end mid-character, control tokens, EOS. */
function detokenizeCasesOf(model: LlamaModel, bos: Token, eos: Token) {
  const byteToken = (b: number): Token => (3 + b) as Token; // <0x00> is id 3 in this vocabulary (checked below)
  if (model.detokenize([byteToken(0x41)]) !== 'A') throw new Error('byte tokens are not at 3 + byte');
  return (
    [
      [bos],
      [eos],
      [0 as Token],
      [bos, bos],
      [bos, eos],
      [eos, idOf(model, 'Once')],
      [idOf(model, 'Once'), bos, idOf(model, 'Once')],
      [byteToken(0xf0), byteToken(0x9f), byteToken(0xa6), byteToken(0x99)],
      [byteToken(0xf0), byteToken(0x9f), byteToken(0xa6)],
      [byteToken(0x9f), idOf(model, 'Once')],
      [byteToken(0xe4), idOf(model, 'Once'), byteToken(0xbd), byteToken(0xa0)],
      [byteToken(0x20), byteToken(0x20), idOf(model, 'Once')],
      [bos, byteToken(0x20), idOf(model, 'Once')],
    ] as Token[][]
  ).map((ids) => ({
    ids,
    text: model.detokenize(ids),
    textUnparseSpecial: model.detokenize(ids, true),
  }));
}

/** llama_token_to_piece of every id (lstrip = 0), without and with special rendering. */
function piecesOf(model: LlamaModel, nVocab: number) {
  const anchor = idOf(model, 'a');
  const pieces: string[] = [];
  const piecesSpecial: string[] = [];
  for (let id = 0; id < nVocab; id++) {
    pieces.push(pieceOf(model, id as Token, false, anchor));
    piecesSpecial.push(pieceOf(model, id as Token, true, anchor));
  }

  return { pieces, piecesSpecial };
}

/** (b) Greedy generations of each prompt with an F32 and (b') an F16 KV cache; the first checked against the README's reference. */
async function generations(model: LlamaModel, bos: Token, eos: Token, nVocab: number) {
  const context = await model.createContext({ ...contextSettings });
  const seq = context.getSequence();
  const generation = [];
  for (const prompt of generationPrompts) {
    const promptIds = [bos, ...model.tokenize(prompt, false)];
    const { outputIds } = await greedy(seq, nVocab, promptIds, nGenerate, 0);
    const eosAt = outputIds.indexOf(eos);
    generation.push({
      prompt,
      promptIds,
      outputIds,
      outputText: model.detokenize(outputIds),
      eosIndex: eosAt < 0 ? null : eosAt,
    });
  }
  await context.dispose();
  // (b') the same with an F16 KV cache
  const contextF16 = await model.createContext({ ...contextSettingsF16 });
  const seqF16 = contextF16.getSequence();
  const generationF16 = [];
  for (const prompt of generationPrompts) {
    const promptIds = [bos, ...model.tokenize(prompt, false)];
    const { outputIds } = await greedy(seqF16, nVocab, promptIds, nGenerate, 0);
    generationF16.push({ prompt, promptIds, outputIds });
  }
  await contextF16.dispose();
  const first = generation[0];
  const referenceMatches =
    eq(first.promptIds, readmeReference.promptIds) &&
    eq(first.outputIds.slice(0, readmeReference.outputIds.length), readmeReference.outputIds);
  if (!referenceMatches) {
    throw new Error(
      `"Once upon a time" does not match the README reference: ${first.promptIds} → ${first.outputIds}`,
    );
  }

  return { generation, generationF16, referenceMatches };
}

/** (c) Log-softmax over the vocabulary at the first positions of each prompt's greedy run, with an F32 and (c') an F16 KV cache. */
async function logProbCases(
  model: LlamaModel,
  bos: Token,
  nVocab: number,
  generation: { prompt: string; outputIds: Token[] }[],
) {
  const logProbContext = await model.createContext({ ...contextSettings });
  const logProbSeq = logProbContext.getSequence();
  const logProbs = [];
  for (const prompt of logProbPrompts) {
    const promptIds = [bos, ...model.tokenize(prompt, false)];
    const { outputIds, logSoftmax } = await greedy(
      logProbSeq,
      nVocab,
      promptIds,
      nLogProbPositions,
      nLogProbPositions,
    );
    const gen = generation.find((g) => g.prompt === prompt);
    if (gen && !eq(gen.outputIds.slice(0, nLogProbPositions), outputIds)) {
      throw new Error(`greedy output differs between runs for ${JSON.stringify(prompt)}`);
    }
    logProbs.push({ prompt, promptIds, outputIds, logSoftmax });
  }

  await logProbContext.dispose();
  // (c') the same with an F16 KV cache
  const logProbContextF16 = await model.createContext({ ...contextSettingsF16 });
  const logProbSeqF16 = logProbContextF16.getSequence();
  const logProbsF16 = [];
  for (const prompt of logProbPrompts) {
    const promptIds = [bos, ...model.tokenize(prompt, false)];
    const r = await greedy(logProbSeqF16, nVocab, promptIds, nLogProbPositions, nLogProbPositions);
    logProbsF16.push({ prompt, promptIds, outputIds: r.outputIds, logSoftmax: r.logSoftmax });
  }
  await logProbContextF16.dispose();
  return { logProbs, logProbsF16 };
}

async function main(): Promise<void> {
  const modelBytes = readFileSync(modelPath);
  const sha256 = createHash('sha256').update(modelBytes).digest('hex');
  const cases = JSON.parse(readFileSync(casesPath, 'utf8')) as { strings: string[] };
  const strings = [...cases.strings, ...extraStrings.filter((s) => !cases.strings.includes(s))];

  const { metadata } = await gguf(modelPath, { allowLocalFile: true });
  const meta = metadata as unknown as Record<string, unknown>;
  const tokenizerMetadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) {
    if (k.startsWith('tokenizer.')) tokenizerMetadata[k] = typeof v === 'bigint' ? Number(v) : v;
  }
  const vocabTokens = meta['tokenizer.ggml.tokens'] as string[];
  const vocabTypes = meta['tokenizer.ggml.token_type'] as number[];

  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  const bos = model.tokens.bos;
  const eos = model.tokens.eos;
  if (bos == null || eos == null) throw new Error('model has no BOS/EOS');
  const nVocab = [...model.iterateAllTokens()].length;

  // (a) tokenizer, (b) greedy generation and (c) log-softmax
  const { tokenizer, bosCrossChecked } = tokenizerCases(model, strings, bos);
  const fuzz = fuzzStrings(vocabTokens, vocabTypes, nFuzz).map((text) => ({
    text,
    ids: model.tokenize(text, false),
    idsParseSpecial: model.tokenize(text, true),
    detok: model.detokenize(model.tokenize(text, false)),
  }));

  const detokenizeCases = detokenizeCasesOf(model, bos, eos);
  const { pieces, piecesSpecial } = piecesOf(model, nVocab);
  const { generation, generationF16, referenceMatches } = await generations(model, bos, eos, nVocab);
  const { logProbs, logProbsF16 } = await logProbCases(model, bos, nVocab, generation);
  const addBos = model.tokens.shouldPrependBosToken;
  const addEos = model.tokens.shouldAppendEosToken;
  const llamaCpp = llama.llamaCppRelease;
  const buildType = llama.buildType;
  const gpu = llama.gpu;
  await model.dispose();
  await llama.dispose();

  const out = {
    about:
      'Reference data from llama.cpp (CPU) for stories260K.gguf. Regenerate with `npm run golden`; see tests/golden/README.md for what each field means.',
    generator: {
      script: 'scripts/golden.ts',
      nodeLlamaCpp: await getModuleVersion(),
      llamaCpp,
      buildType,
      gpu,
    },
    model: {
      note: 'tokenizerMetadata: the tokenizer.* keys of the GGUF, copied so that tokenizer tests run without the model file.',
      file: 'stories260K.gguf',
      sha256,
      nVocab,
      bosId: bos,
      eosId: eos,
      addBos,
      addEos,
      tokenizerMetadata,
    },
    tokenizer: {
      notes: [
        'ids: llama_tokenize(add_special=false, parse_special=false).',
        'idsWithBos: [bos, ...ids], what llama_tokenize(add_special=true, parse_special=false) gives for SPM; cross-checked against tokenize("<s>" + text, parse_special=true) for texts without special-token strings.',
        'idsParseSpecial: llama_tokenize(add_special=false, parse_special=true).',
        'detok*: llama_detokenize(remove_special=false, unparse_special=false|true); the leading space of the first token is removed (add_space_prefix), even when the first token is BOS.',
        'fuzz: seeded random strings of vocabulary pieces and odd characters (same fields as cases, no BOS variants).',
        'pieces[id] / piecesSpecial[id]: llama_token_to_piece(id, lstrip=0, special=false|true); byte tokens >= 0x80 show as U+FFFD (one invalid byte).',
      ],
      bosCrossChecked,
      cases: tokenizer,
      fuzz,
      detokenize: detokenizeCases,
      pieces,
      piecesSpecial,
    },
    generation: {
      notes: [
        `Greedy (temperature 0, llama_sampler_greedy), BOS + prompt, ${nGenerate} tokens, not stopping at EOS (eosIndex = first EOS or null).`,
        'Evaluated with LlamaContextSequence.controlledEvaluate: whole prompt in one batch, then one token per step.',
      ],
      context: contextSettings,
      readmeReferenceMatches: referenceMatches,
      cases: generation,
    },
    generationF16: {
      notes: ["As generation, with an F16 K and V cache (llama.cpp's default cache type); no outputText."],
      context: contextSettingsF16,
      cases: generationF16,
    },
    logProbs: {
      notes: [
        `logSoftmax[position][tokenId] = ln(p), p = softmax over the raw logits of all ${nVocab} tokens as computed in f32 by node-llama-cpp (it exposes probabilities, not logits); rounded to 7 significant digits.`,
        'position 0 is the distribution after the last prompt token; position i after outputIds[i-1].',
      ],
      positions: nLogProbPositions,
      cases: logProbs,
    },
    logProbsF16: {
      notes: ['As logProbs, with an F16 K and V cache (context: generationF16.context).'],
      positions: nLogProbPositions,
      cases: logProbsF16,
    },
  };
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(out, null, 2)}\n`);
  // The repository's formatter (Biome) owns the layout: it keeps arrays of numbers on few lines.
  const biome = spawnSync(resolve(root, 'node_modules/.bin/biome'), ['format', '--write', outPath], {
    stdio: 'inherit',
  });
  if (biome.status !== 0) throw new Error('biome format failed on the golden file');
  const json = readFileSync(outPath, 'utf8');
  console.log(
    `wrote ${outPath} (${json.length} bytes): ${tokenizer.length} tokenizer cases, ${generation.length} generations`,
  );
}

await main();
