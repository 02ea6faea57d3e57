import { describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/stories260K.json';
import { IncrementalDecoder } from './incremental.ts';
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
