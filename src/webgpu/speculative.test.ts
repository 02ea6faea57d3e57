/**
 * Prompt-lookup drafting (lookupDraft) against a brute-force statement of its rule, and the adaptive
 * draft length (DraftLength); the request check of `draft` (core/validate.ts).
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { validateChatRequest, validateGenerateRequest } from '../core/validate.ts';
import { mulberry32 } from '../util/prng.ts';
import { DraftLength, lookupDraft } from './speculative.ts';

/** The rule restated: largest n first, then the latest start i < L − n whose n tokens equal the tail's. */
function bruteLookup(h: number[], k: number, nMax: number): number[] {
  const L = h.length;
  for (let n = nMax; n >= 1; n--) {
    if (n >= L) continue;
    const tail = h.slice(L - n).join(',');
    let best = -1;
    for (let i = 0; i + n < L; i++) if (h.slice(i, i + n).join(',') === tail) best = i;
    if (best >= 0) return h.slice(best + n, best + n + k);
  }
  return [];
}

describe('lookupDraft', () => {
  it('drafts what followed the last n-gram’s latest earlier occurrence', () => {
    const h = [5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6];
    // The 3-gram [2, 5, 6] never occurs earlier; the 2-gram [5, 6] does, latest at index 5 → 7, 1, 2.
    expect(lookupDraft(h, 3)).toEqual([7, 1, 2]);
    expect(lookupDraft(h, 1)).toEqual([7]);
    // a longer match wins over a later shorter one
    expect(lookupDraft([1, 2, 3, 4, 9, 3, 4, 7, 2, 3, 4], 2)).toEqual([9, 3]);
    // nothing recurs: no draft; a draft never runs past the history
    expect(lookupDraft([1, 2, 3, 4], 4)).toEqual([]);
    expect(lookupDraft([4, 4], 8)).toEqual([4]);
    expect(lookupDraft([7], 3)).toEqual([]);
    expect(lookupDraft([1, 2, 1], 0)).toEqual([]);
    expect(lookupDraft([1, 2, 3, 1, 2], 5, { ngramMax: 1 })).toEqual([3, 1, 2]);
    expect(lookupDraft([1, 2, 3, 1, 2], 5, { ngramMax: 2, ngramMin: 2 })).toEqual([3, 1, 2]);
    expect(lookupDraft([1, 2, 3, 9, 2], 5, { ngramMax: 2, ngramMin: 2 })).toEqual([]);
  });

  it('equals the brute-force rule on random histories over small vocabularies', () => {
    const rng = mulberry32(4545);
    for (let t = 0; t < 400; t++) {
      const V = 2 + Math.floor(rng() * 6);
      const h = Array.from({ length: 1 + Math.floor(rng() * 40) }, () => Math.floor(rng() * V));
      const k = 1 + Math.floor(rng() * 9);
      const nMax = 1 + Math.floor(rng() * 5);
      expect(lookupDraft(h, k, { ngramMax: nMax }), JSON.stringify({ h, k, nMax })).toEqual(
        bruteLookup(h, k, nMax),
      );
    }
  });
});

describe('DraftLength', () => {
  it('starts at the maximum, shrinks with rejections, grows back with acceptance, stays in 1..max', () => {
    const d = new DraftLength(8);
    expect(d.next).toBe(8);
    d.update(8, 0); // rate 0.5
    expect(d.next).toBe(4);
    d.update(4, 0); // 0.25
    expect(d.next).toBe(2);
    for (let i = 0; i < 10; i++) d.update(2, 0);
    expect(d.next).toBe(1);
    d.update(1, 1);
    d.update(1, 1);
    d.update(1, 1);
    expect(d.next).toBe(7); // rate ≈ 0.88
    d.update(0, 0); // a pass without drafts changes nothing
    expect(d.next).toBe(7);
  });
});

describe('GenerateRequest.draft validation', () => {
  const bad: unknown[] = [
    'lookup',
    null,
    { type: 'medusa' },
    { type: 'lookup', draftMax: 0 },
    { type: 'lookup', draftMax: 17 },
    { type: 'lookup', draftMax: 2.5 },
    { type: 'lookup', ngramMax: 9 },
    { type: 'lookup', ngramMax: '3' },
  ];
  for (const draft of bad) {
    it(`refuses draft ${JSON.stringify(draft)}`, () => {
      for (const check of [
        () => validateGenerateRequest({ prompt: 'x', draft }),
        () => validateChatRequest({ messages: [{ role: 'user', content: 'x' }], draft }),
      ]) {
        let err: unknown;
        try {
          check();
        } catch (e) {
          err = e;
        }
        expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
        expect(String(err)).toMatch(/draft/);
      }
    });
  }
  it('accepts { type: "lookup" } with draftMax 1..16 and ngramMax 1..8', () => {
    validateGenerateRequest({ prompt: 'x', draft: { type: 'lookup' } });
    validateGenerateRequest({ prompt: 'x', draft: { type: 'lookup', draftMax: 16, ngramMax: 8 } });
    validateGenerateRequest({ prompt: 'x', draft: { type: 'lookup', draftMax: 1, ngramMax: 1 } });
  });
});
