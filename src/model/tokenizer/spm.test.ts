import { describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/stories260K.json';
import { isEngineError } from '../../core/errors.ts';
import { openGguf } from '../../gguf/reader.ts';
import { STORIES_PATH } from '../../testing/stories260k.ts';
import { mulberry32 } from '../../util/prng.ts';
import { createTokenizer } from './index.ts';
import { SpmTokenizer, TokenType } from './spm.ts';

const MODEL = STORIES_PATH;
const metadata = golden.model.tokenizerMetadata as Record<string, unknown>;
const tok = SpmTokenizer.fromGgufMetadata(metadata);

const show = (s: string) => JSON.stringify(s);

describe('SpmTokenizer on stories260K vs llama.cpp', () => {
  it('reads the vocabulary and special ids from the metadata', () => {
    expect(tok.nVocab).toBe(golden.model.nVocab);
    expect(tok.bosId).toBe(golden.model.bosId);
    expect(tok.eosId).toBe(golden.model.eosId);
    expect(tok.unkId).toBe(0);
    expect(tok.addBos).toBe(golden.model.addBos);
    expect(tok.addSpacePrefix).toBe(true);
    expect(tok.isEog(golden.model.eosId)).toBe(true);
    expect(tok.isEog(golden.model.bosId)).toBe(false);
    expect(tok.isEog(403)).toBe(false);
  });

  it('builds the same tokenizer from the GGUF file itself', async () => {
    const file = await openGguf({ path: MODEL });
    for (const [key, value] of Object.entries(metadata)) {
      // via JSON: the golden copy went through it (-0 scores became 0)
      expect(JSON.stringify(toPlain(file.metadata[key])), key).toBe(JSON.stringify(value));
    }
    const t2 = createTokenizer(file.metadata);
    for (const c of golden.tokenizer.cases) expect(t2.encode(c.text), show(c.text)).toEqual(c.idsWithBos);
  });

  it.each(golden.tokenizer.cases.map((c) => [show(c.text), c] as const))('encodes %s', (_, c) => {
    expect(tok.encode(c.text, { addBos: false })).toEqual(c.ids);
    expect(tok.encode(c.text)).toEqual(c.idsWithBos); // model default: add BOS
    expect(tok.encode(c.text, { addBos: true })).toEqual(c.idsWithBos);
    expect(tok.encode(c.text, { addBos: false, parseSpecial: true })).toEqual(c.idsParseSpecial);
  });

  it.each(golden.tokenizer.cases.map((c) => [show(c.text), c] as const))('decodes %s', (_, c) => {
    expect(tok.decode(c.ids)).toBe(c.detok);
    expect(tok.decode(c.idsWithBos)).toBe(c.detokWithBos);
    expect(tok.decode(c.idsWithBos, { unparseSpecial: true })).toBe(c.detokWithBosUnparseSpecial);
  });

  it('encodes and decodes the seeded random strings', () => {
    for (const c of golden.tokenizer.fuzz) {
      expect(tok.encode(c.text, { addBos: false }), show(c.text)).toEqual(c.ids);
      expect(tok.encode(c.text, { addBos: false, parseSpecial: true }), show(c.text)).toEqual(
        c.idsParseSpecial,
      );
      expect(tok.decode(c.ids), show(c.text)).toBe(c.detok);
    }
  });

  it('detokenizes byte tokens cut mid-character, control tokens and EOS as llama.cpp', () => {
    for (const c of golden.tokenizer.detokenize) {
      expect(tok.decode(c.ids), JSON.stringify(c.ids)).toBe(c.text);
      expect(tok.decode(c.ids, { unparseSpecial: true }), JSON.stringify(c.ids)).toBe(c.textUnparseSpecial);
    }
  });

  it('gives llama_token_to_piece for every token', () => {
    for (let id = 0; id < tok.nVocab; id++) {
      expect(tok.tokenToPiece(id), `id ${id}`).toBe(golden.tokenizer.pieces[id]);
      expect(tok.tokenToPiece(id, { special: true }), `id ${id}`).toBe(golden.tokenizer.piecesSpecial[id]);
    }
  });

  it('tokenizes the generation prompts and detokenizes llama.cpp output as llama.cpp', () => {
    for (const g of golden.generation.cases) {
      expect(tok.encode(g.prompt), show(g.prompt)).toEqual(g.promptIds);
      expect(tok.decode(g.outputIds), show(g.prompt)).toBe(g.outputText);
    }
    expect(tok.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
  });

  it('round-trips every lossless string', () => {
    // Lossy by design: '▁' (U+2581) decodes to a space; lone surrogates become U+FFFD.
    const lossy = (s: string) =>
      s.includes('\u2581') || /[\uD800-\uDFFF]/.test(s.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));
    const strings = [...golden.tokenizer.cases, ...golden.tokenizer.fuzz]
      .map((c) => c.text)
      .filter((s) => !lossy(s));
    expect(strings.length).toBeGreaterThan(100);
    for (const s of strings) {
      expect(tok.decode(tok.encode(s, { addBos: false })), show(s)).toBe(s);
      expect(tok.decode(tok.encode(s).slice(1)), show(s)).toBe(s);
    }
  });

  it('round-trips fresh random text, byte fallback included', () => {
    const seed = (Math.random() * 2 ** 32) >>> 0;
    const r = mulberry32(seed);
    const alphabet = [
      'a',
      'e',
      'the',
      ' ',
      '  ',
      '\n',
      'Lily',
      '.',
      'é',
      'ß',
      '€',
      '你好',
      '🦙',
      '👩‍👧',
      '\u0301',
      '\t',
      'Z',
    ];
    for (let i = 0; i < 200; i++) {
      let s = '';
      const n = 1 + Math.floor(r() * 30);
      for (let j = 0; j < n; j++) {
        s +=
          r() < 0.5 ? alphabet[Math.floor(r() * alphabet.length)] : String.fromCodePoint(randomCodePoint(r));
      }
      const ids = tok.encode(s, { addBos: false });
      expect(ids.every((id) => id >= 0 && id < tok.nVocab)).toBe(true);
      expect(tok.decode(ids), `seed ${seed}: ${show(s)}`).toBe(s);
    }
  });

  it('keeps special-token text as plain text unless parseSpecial', () => {
    expect(tok.encode('<s>', { addBos: false })).toEqual([410, 504, 419, 505]);
    expect(tok.encode('<s>', { addBos: false, parseSpecial: true })).toEqual([1]);
  });

  it('exposes the output bytes of byte tokens', () => {
    expect([...tok.tokenBytes(3 + 0xf0)]).toEqual([0xf0]);
    expect([...tok.tokenBytes(403)]).toEqual([...new TextEncoder().encode(' Once')]);
    expect(tok.tokenBytes(1).length).toBe(0);
    expect(() => tok.tokenBytes(tok.nVocab)).toThrow(/outside the vocabulary/);
    expect(() => tok.decode([-1])).toThrow(/outside the vocabulary/);
  });
});

/** A small vocabulary with made-up scores, for rules stories260K does not exercise. */
function tinyTokenizer(
  entries: [text: string, score: number, type?: number][],
  opts: { addSpacePrefix?: boolean } = {},
): SpmTokenizer {
  const base: [string, number, number][] = [
    ['<unk>', 0, TokenType.UNKNOWN],
    ['<s>', 0, TokenType.CONTROL],
    ['</s>', 0, TokenType.CONTROL],
  ];
  const all = [
    ...base,
    ...entries.map(([t, s, ty]) => [t, s, ty ?? TokenType.NORMAL] as [string, number, number]),
  ];
  return SpmTokenizer.fromGgufMetadata({
    'tokenizer.ggml.model': 'llama',
    'tokenizer.ggml.tokens': all.map((e) => e[0]),
    'tokenizer.ggml.scores': all.map((e) => e[1]),
    'tokenizer.ggml.token_type': all.map((e) => e[2]),
    'tokenizer.ggml.add_space_prefix': opts.addSpacePrefix ?? true,
  });
}

describe('SpmTokenizer rules', () => {
  it('merges the highest-scoring pair first, the leftmost on ties', () => {
    // ids: a=3 b=4 c=5 ab=6 bc=7
    const byScore = tinyTokenizer(
      [
        ['a', 0],
        ['b', 0],
        ['c', 0],
        ['ab', -2],
        ['bc', -1],
      ],
      { addSpacePrefix: false },
    );
    expect(byScore.encode('abc', { addBos: false })).toEqual([3, 7]);
    const tie = tinyTokenizer(
      [
        ['a', 0],
        ['b', 0],
        ['c', 0],
        ['ab', -1],
        ['bc', -1],
      ],
      { addSpacePrefix: false },
    );
    expect(tie.encode('abc', { addBos: false })).toEqual([6, 5]);
  });

  it('falls back to UNK per byte when the vocabulary has no byte tokens', () => {
    // ids: ▁=3 a=4 ▁a=5
    const t = tinyTokenizer([
      ['▁', 0],
      ['a', 0],
      ['▁a', -1],
    ]);
    expect(t.encode('aé', { addBos: false })).toEqual([5, 0, 0]); // é is 2 bytes
    expect(t.encode('a', { addBos: true })).toEqual([1, 5]);
  });

  it('splits out user-defined tokens even without parseSpecial, with a space prefix after them', () => {
    // ids: ▁=3 x=4 y=5 ▁x=6 ▁y=7 <tag>=8 (user-defined)
    const t = tinyTokenizer([
      ['▁', 0],
      ['x', 0],
      ['y', 0],
      ['▁x', -1],
      ['▁y', -1],
      ['<tag>', 0, TokenType.USER_DEFINED],
    ]);
    expect(t.encode('x<tag>y', { addBos: false })).toEqual([6, 8, 7]);
    expect(t.decode([6, 8, 7])).toBe('x<tag> y');
  });

  it('strips the leading space only from a first token that is not BOS (llama_detokenize)', () => {
    expect(tok.decode([403])).toBe('Once');
    expect(tok.decode([1, 403])).toBe(' Once'); // the strip falls on BOS, which renders as nothing
    // remove_special drops BOS and, in llama.cpp, also turns the strip off: the space stays.
    expect(tok.decode([1, 403], { removeSpecial: true })).toBe(' Once');
    expect(tok.decode([1, 403, 2], { removeSpecial: true, unparseSpecial: true })).toBe(' Once</s>'); // add_eos is false
  });

  it('encodes lone surrogates as U+FFFD, as llama.cpp does behind V8', () => {
    // node-llama-cpp gave [278, 289, 411, 410, 242, 194, 192, ...] (<0xEF><0xBF><0xBD>) for 'lone \ud83d surrogate'.
    expect(tok.encode('lone \ud83d surrogate')).toEqual(tok.encode('lone \ufffd surrogate'));
    expect(tok.encode('lone \ud83d surrogate', { addBos: false }).slice(0, 7)).toEqual([
      278, 289, 411, 410, 242, 194, 192,
    ]);
    expect(tok.encode('\udc00x')).toEqual(tok.encode('\ufffdx'));
  });
});

describe('createTokenizer', () => {
  it('builds an SPM tokenizer for tokenizer.ggml.model = llama', () => {
    expect(createTokenizer(metadata)).toBeInstanceOf(SpmTokenizer);
  });

  it('rejects other tokenizer models with unsupported_model', () => {
    for (const model of ['bert', 't5', undefined]) {
      let err: unknown;
      try {
        createTokenizer({ ...metadata, 'tokenizer.ggml.model': model });
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, 'unsupported_model'), String(model)).toBe(true);
    }
    // 'gpt2' is BPE, which needs merges that this vocabulary lacks.
    let err: unknown;
    try {
      createTokenizer({ ...metadata, 'tokenizer.ggml.model': 'gpt2' });
    } catch (e) {
      err = e;
    }
    expect(isEngineError(err, 'gguf_invalid')).toBe(true);
  });

  it('rejects a missing token list with gguf_invalid', () => {
    let err: unknown;
    try {
      createTokenizer({ 'tokenizer.ggml.model': 'llama' });
    } catch (e) {
      err = e;
    }
    expect(isEngineError(err, 'gguf_invalid')).toBe(true);
  });
});

/** GGUF values as JSON would hold them (bigints and typed arrays to plain numbers). */
function toPlain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v as unknown as ArrayLike<number>);
  if (Array.isArray(v)) return v.map(toPlain);
  return v;
}

/** A random Unicode scalar value (no surrogates), from ASCII to the astral planes. */
function randomCodePoint(r: () => number): number {
  const ranges: [number, number][] = [
    [0x20, 0x7e],
    [0xa0, 0x2ff],
    [0x400, 0x4ff],
    [0x4e00, 0x9fff],
    [0xe000, 0xfffd],
    [0x1f300, 0x1faff],
    [0x10000, 0x10ffff],
  ];
  const [lo, hi] = ranges[Math.floor(r() * ranges.length)];
  return lo + Math.floor(r() * (hi - lo + 1));
}
