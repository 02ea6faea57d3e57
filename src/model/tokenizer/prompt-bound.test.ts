/**
 * Tokenizer.maxPieceChars and the early prompt-length refusal (issue 47 item 9): the bound equals a
 * brute-force maximum over the vocabulary, ceil(chars / maxPieceChars) never exceeds what `encode` gives
 * (a false refusal would be a bug), and it is exact on a prompt of repeated longest pieces.
 */
import { describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/stories260K.json';
import { isEngineError } from '../../core/errors.ts';
import { TEST_VOCABS, testVocabEntries } from '../../testing/test-vocabs.ts';
import { mulberry32, type Rng } from '../../util/prng.ts';
import type { VocabTokenizer } from './base.ts';
import { TokenAttr } from './common.ts';
import { entriesToMetadata } from './hf-convert.ts';
import { createTokenizer } from './index.ts';
import { checkPromptLength, maxPromptTokens, minPromptTokens } from './prompt-bound.ts';
import { SpmTokenizer } from './spm.ts';

const spm = SpmTokenizer.fromGgufMetadata(golden.model.tokenizerMetadata as Record<string, unknown>);
const TOKENIZERS: [string, () => VocabTokenizer][] = [
  ['stories260K (SPM)', () => spm],
  ...TEST_VOCABS.map(
    (v) =>
      [
        `${v.name} (BPE)`,
        () => createTokenizer(entriesToMetadata(testVocabEntries(v))) as VocabTokenizer,
      ] as [string, () => VocabTokenizer],
  ),
];

/** The input characters token `id` can cover, from the public API: special tokens by their text. */
function bruteForceMax(tok: VocabTokenizer): number {
  const dec = new TextDecoder('utf-8', { ignoreBOM: true });
  let max = 1;
  for (let id = 0; id < tok.nVocab; id++) {
    const attr = tok.tokenAttr(id);
    const n =
      attr & TokenAttr.BYTE
        ? 1
        : attr & TokenAttr.NORMAL
          ? dec.decode(tok.pieceBytes(id, true)).length
          : tok.tokenText(id).length;
    max = Math.max(max, n);
  }
  return max;
}

/** A random prompt: vocabulary pieces, longest pieces, spaces, random code points (astral, lone surrogates), control texts. */
function randomPrompt(tok: VocabTokenizer, rng: Rng, longest: string): string {
  const dec = new TextDecoder();
  const controls = tok.controlTexts();
  const n = 1 + Math.floor(rng() * 40);
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = rng();
    if (r < 0.35) s += dec.decode(tok.pieceBytes(Math.floor(rng() * tok.nVocab), true));
    else if (r < 0.5) s += longest;
    else if (r < 0.6) s += ' '.repeat(1 + Math.floor(rng() * 300));
    else if (r < 0.7 && controls.length > 0) s += controls[Math.floor(rng() * controls.length)];
    else if (r < 0.8)
      s += String.fromCharCode(0xd800 + Math.floor(rng() * 0x800)); // lone surrogate
    else if (r < 0.9) s += String.fromCodePoint(0x10000 + Math.floor(rng() * 0xfffff));
    else s += String.fromCodePoint(Math.floor(rng() * 0xd800));
  }
  return s;
}

describe.each(TOKENIZERS)('maxPieceChars on %s', (_name, make) => {
  const tok = make();
  const dec = new TextDecoder();
  let longestId = -1;
  for (let id = 0; id < tok.nVocab && longestId < 0; id++) {
    if (
      tok.tokenAttr(id) & TokenAttr.NORMAL &&
      dec.decode(tok.pieceBytes(id, true)).length === tok.maxPieceChars
    )
      longestId = id;
  }
  const longest = dec.decode(tok.pieceBytes(Math.max(longestId, 0), true));

  it('equals the brute-force maximum over the vocabulary', () => {
    expect(tok.maxPieceChars).toBe(bruteForceMax(tok));
    expect(longestId).toBeGreaterThanOrEqual(0);
  });

  it('never exceeds what encode gives: ceil(chars / maxPieceChars) ≤ tokens (seeded random prompts)', () => {
    const rng = mulberry32(47_9);
    for (let i = 0; i < 300; i++) {
      const text = randomPrompt(tok, rng, longest);
      const parseSpecial = i % 2 === 1;
      const ids = tok.encode(text, { addBos: false, addEos: false, parseSpecial });
      const min = minPromptTokens(text.length, tok);
      if (min > ids.length) throw new Error(`${min} > ${ids.length} tokens for ${JSON.stringify(text)}`);
      expect(minPromptTokens(text.length, tok, 1)).toBeLessThanOrEqual(
        tok.encode(text, { addBos: true, addEos: false, parseSpecial }).length,
      );
    }
  });

  it('maxPromptTokens is never below what encode gives (the wllama backend skips tokenizing under it)', () => {
    const rng = mulberry32(48_1);
    for (let i = 0; i < 300; i++) {
      const text = randomPrompt(tok, rng, longest);
      const parseSpecial = i % 2 === 1;
      const n = tok.encode(text, { addBos: true, addEos: false, parseSpecial }).length;
      if (maxPromptTokens(text, 1) < n)
        throw new Error(`${maxPromptTokens(text, 1)} < ${n} tokens for ${JSON.stringify(text)}`);
    }
    // Exact UTF-8 byte counting: 'é' is 2 bytes, '€' 3, '😀' a surrogate pair (counted 6 ≥ 4).
    expect(maxPromptTokens('aé€😀')).toBe(1 + 2 + 3 + 6 + 2);
  });
});

describe('checkPromptLength is exact on repeated longest pieces (stories260K)', () => {
  const L = spm.maxPieceChars;
  // ' friend' is '▁friend': "friend friend …" gets the space prefix and is k tokens of L characters,
  // less the one prefix space.
  const k = 50;
  const text = ' friend'.repeat(k).slice(1);

  it('tokenizes to exactly ceil(chars / maxPieceChars) tokens', () => {
    expect(L).toBe(7);
    expect(spm.encode(text, { addBos: false }).length).toBe(k);
    expect(minPromptTokens(text.length, spm)).toBe(k);
  });

  it('passes when the prompt fits (one token left) and refuses when it does not, as the token check', () => {
    const withBos = spm.encode(text, { addBos: true }).length; // k + 1
    expect(withBos).toBe(k + 1);
    expect(() => checkPromptLength(text.length, spm, k + 2, 1)).not.toThrow();
    expect(withBos < k + 2).toBe(true); // fits: the token check passes too
    let err: unknown;
    try {
      checkPromptLength(text.length, spm, k + 1, 1);
    } catch (e) {
      err = e;
    }
    expect(withBos >= k + 1).toBe(true); // the token check refuses too
    expect(isEngineError(err) && err.code).toBe('context_overflow');
    expect((err as Error).message).toContain(`${text.length} characters`);
    expect((err as Error).message).toContain(`at least ${k + 1} tokens`);
    expect((err as Error).message).toContain(`context holds ${k + 1}`);
    expect((err as Error).message).toMatch(/shorten the prompt.*contextLength.*--ctx/);
  });
});

describe('checkPromptLength on a BPE vocabulary (llama3: 128 spaces is one token)', () => {
  const tok = TOKENIZERS[1][1]();
  it('a run of spaces k × maxPieceChars long is exactly k tokens', () => {
    const L = tok.maxPieceChars;
    const k = 5;
    const text = ' '.repeat(L * k);
    expect(tok.encode(text, { addBos: false }).length).toBe(k);
    expect(() => checkPromptLength(text.length, tok, k + 1)).not.toThrow();
    expect(() => checkPromptLength(text.length, tok, k)).toThrow(/context_overflow|at least 5 tokens/);
  });
});
