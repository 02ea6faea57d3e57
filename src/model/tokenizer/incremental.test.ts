import { describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/stories260K.json';
import { AnswerText, IncrementalDecoder } from './incremental.ts';
import { SpmTokenizer } from './spm.ts';

const tok = SpmTokenizer.fromGgufMetadata(golden.model.tokenizerMetadata as Record<string, unknown>);
const bos = golden.model.bosId;

function stream(ids: readonly number[]): string[] {
  const d = new IncrementalDecoder(tok);
  const out = ids.map((id) => d.push(id));
  out.push(d.flush());
  return out;
}

describe('IncrementalDecoder', () => {
  it('holds the bytes of an emoji split over byte tokens until it completes', () => {
    const ids = tok.encode('🦙', { addBos: false });
    expect(ids).toEqual([410, 3 + 0xf0, 3 + 0x9f, 3 + 0xa6, 3 + 0x99]);
    expect(stream(ids)).toEqual([' ', '', '', '', '🦙', '']);
  });

  it('never emits U+FFFD mid-stream on emoji, CJK and other multi-byte text, and matches llama.cpp', () => {
    const cases = [...golden.tokenizer.cases, ...golden.tokenizer.fuzz].filter(
      (c) => !c.detok.includes('\uFFFD') && [...c.text].some((ch) => ch.codePointAt(0)! > 0x7f),
    );
    expect(cases.length).toBeGreaterThan(15);
    for (const c of cases) {
      const parts = stream(c.ids);
      for (const p of parts) expect(p, JSON.stringify(c.text)).not.toContain('\uFFFD');
      // Pieces concatenated = llama_detokenize after BOS (where the leading-space strip falls on BOS).
      expect(parts.join(''), JSON.stringify(c.text)).toBe(tok.decode([bos, ...c.ids]));
      expect(parts.join(''), JSON.stringify(c.text)).toBe(` ${c.detok}`);
    }
  });

  it('streams fresh random multi-byte text exactly', () => {
    const pool = [
      '你好',
      '世界',
      '日本語',
      '🦙',
      '🙂',
      '👩‍👩‍👧',
      'é',
      'ß',
      '€',
      'ا',
      'न',
      ' ',
      'a',
      'Lily',
      '\u0301',
    ];
    for (let i = 0; i < 200; i++) {
      let s = '';
      const n = 1 + Math.floor(Math.random() * 20);
      for (let j = 0; j < n; j++) s += pool[Math.floor(Math.random() * pool.length)];
      const ids = tok.encode(s);
      const parts = stream(ids);
      for (const p of parts) expect(p, JSON.stringify(s)).not.toContain('\uFFFD');
      expect(parts.join(''), JSON.stringify(s)).toBe(tok.decode(ids));
      expect(parts.join('')).toBe(` ${s}`);
    }
  });

  it('flushes an unfinished character as U+FFFD and starts afresh', () => {
    const d = new IncrementalDecoder(tok);
    expect(d.push(3 + 0xe4)).toBe('');
    expect(d.push(3 + 0xbd)).toBe('');
    expect(d.flush()).toBe('\uFFFD');
    expect(d.push(403)).toBe(' Once');
  });

  it('passes invalid bytes through as U+FFFD as soon as they are known to be invalid', () => {
    const d = new IncrementalDecoder(tok);
    expect(d.push(3 + 0x9f)).toBe('\uFFFD'); // a lone continuation byte
    expect(d.push(3 + 0xe4)).toBe('');
    expect(d.push(403)).toBe('\uFFFD Once');
  });

  it('works with any tokenizer that exposes tokenBytes', () => {
    const bytes = new TextEncoder().encode('😀x');
    const d = new IncrementalDecoder({ tokenBytes: (i: number) => bytes.subarray(i, i + 1) });
    expect([0, 1, 2, 3, 4].map((i) => d.push(i))).toEqual(['', '', '', '😀', 'x']);
  });
});

describe('AnswerText', () => {
  /** An answer streamed token by token, as chat shows it, and its whole text from the engine's. */
  function answer(
    t: { addSpacePrefix: boolean },
    ids: readonly number[],
  ): { streamed: string; whole: string } {
    const a = new AnswerText(t);
    const parts = stream(ids);
    const streamed = parts.map((p, i) => (i < ids.length ? a.push(p) : p)).join('');
    return { streamed, whole: a.text(parts.join('')) };
  }

  it("drops the first token's leading space as llama.cpp's detokenizer does (its golden texts)", () => {
    const cases = [...golden.tokenizer.cases, ...golden.tokenizer.fuzz].filter(
      (c) => c.ids.length > 0 && !c.detok.includes('\uFFFD'),
    );
    expect(cases.length).toBeGreaterThan(20);
    for (const c of cases) {
      const { streamed, whole } = answer(tok, c.ids);
      // llama_detokenize of the ids alone (no BOS before them): the first piece's space is removed.
      expect(streamed, JSON.stringify(c.text)).toBe(c.detok);
      expect(whole, JSON.stringify(c.text)).toBe(c.detok);
      expect(streamed).toBe(tok.decode(c.ids));
    }
  });

  it('strips only the start of the answer, once', () => {
    const ids = tok.encode('Once upon a time', { addBos: false });
    expect(answer(tok, ids).streamed).toBe('Once upon a time');
    // A first token that is a lone "▁" gives nothing; the next word keeps its space.
    const a = new AnswerText(tok);
    expect(a.push(' ')).toBe('');
    expect(a.push(' there')).toBe(' there');
    expect(a.text('  there')).toBe(' there');
  });

  it('keeps everything for a tokenizer without a space prefix (BPE)', () => {
    const a = new AnswerText({ addSpacePrefix: false });
    expect(a.push(' Hello')).toBe(' Hello');
    expect(a.push(' world')).toBe(' world');
    expect(a.text(' Hello world')).toBe(' Hello world');
  });
});
