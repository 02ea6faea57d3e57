/**
 * Prompt-lookup drafting (lookupDraft) against a brute-force statement of its rule, and the adaptive
 * draft length (DraftLength); the request check of `draft` (core/validate.ts); the speculative-sampling
 * acceptance rule (speculativeSample) by a chi-square test of the sequences it generates against the
 * target's own distribution, on a small vocabulary (the loop around it, speculativeSampled, with a fake
 * target model: speculative-sampled.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { validateChatRequest, validateGenerateRequest } from '../core/validate.ts';
import { chiSquareTest } from '../testing/chi-square.ts';
import { mulberry32 } from '../util/prng.ts';
import { DraftLength, lookupDraft, speculativeSample } from './speculative.ts';

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

describe('speculativeSample (Leviathan et al. 2023): the output follows the target distribution', () => {
  // A toy target and draft: Markov chains over V = 4 tokens, p(next | prev) and q(next | prev), each row
  // drawn with weights in (0.5, 1.5) so every 3-token sequence has probability ≥ 1e-3.
  const V = 4;
  const L = 3;
  const N = 60_000;
  const rows = (rng: () => number) =>
    Array.from({ length: V }, () => {
      const w = Array.from({ length: V }, () => 0.5 + rng());
      const s = w.reduce((a, b) => a + b, 0);
      return w.map((x) => x / s);
    });
  const draw = (row: number[], u: number) => {
    let x = u;
    for (let t = 0; t < V; t++) {
      if (x < row[t]) return t;
      x -= row[t];
    }
    return V - 1;
  };

  /** Chi-square of N sequences of L tokens from `gen` against the target chain's probabilities. */
  function chiSquare(
    gen: (rng: () => number, P: number[][], Q: number[][]) => number[],
    seed: number,
  ): number {
    const rng = mulberry32(seed);
    const P = rows(rng);
    const Q = rows(rng);
    const counts = new Float64Array(V ** L);
    for (let k = 0; k < N; k++) {
      const seq = gen(rng, P, Q).slice(0, L);
      counts[seq.reduce((a, t) => a * V + t, 0)]++;
    }
    const observed = new Map<number, number>();
    const probs = new Map<number, number>();
    for (let c = 0; c < V ** L; c++) {
      const seq = [Math.floor(c / V ** 2), Math.floor(c / V) % V, c % V];
      let prob = 1;
      let prev = 0; // the sequence starts after token 0
      for (const t of seq) {
        prob *= P[prev][t];
        prev = t;
      }
      observed.set(c, counts[c]);
      probs.set(c, prob);
    }
    // Every cell is expected ≥ 60 times: nothing pooled, all 64 cells.
    return chiSquareTest(observed, probs, N).chi2;
  }

  /** The speculative loop over the toy chains: drafts of 1..3 tokens, from q or chosen greedily. */
  const speculative =
    (drafting: 'sampled' | 'greedy' | 'always-accept') =>
    (rng: () => number, P: number[][], Q: number[][]): number[] => {
      const seq: number[] = [];
      let prev = 0;
      while (seq.length < L) {
        const n = 1 + Math.floor(rng() * 3);
        const drafts: number[] = [];
        const q: number[][] = [];
        let c = prev;
        for (let i = 0; i < n; i++) {
          const row = Q[c];
          const d = drafting === 'greedy' ? row.indexOf(Math.max(...row)) : draw(row, rng());
          drafts.push(d);
          q.push(row);
          c = d;
        }
        const p = [prev, ...drafts].map((t) => P[t]);
        const kept =
          drafting === 'always-accept'
            ? [...drafts, draw(p[n], rng())]
            : speculativeSample(drafts, p, drafting === 'sampled' ? q : undefined, rng);
        seq.push(...kept);
        prev = kept[kept.length - 1];
      }
      return seq;
    };

  // 64 cells, df = 63: the chi-square's 0.9999 quantile is about 113.7 (Wilson–Hilferty); the seeds are
  // fixed, so each test gives one value every run.
  const CRITICAL = 113;
  it('drafts sampled from q: chi-square below the 0.9999 quantile', () => {
    const chi = chiSquare(speculative('sampled'), 451);
    console.log(`chi-square, drafts sampled from q: ${chi.toFixed(1)} (df 63)`);
    expect(chi).toBeLessThan(CRITICAL);
  });
  it('deterministic drafts (point masses, as lookup gives): chi-square below the 0.9999 quantile', () => {
    expect(chiSquare(speculative('greedy'), 452)).toBeLessThan(CRITICAL);
  });
  it('the test has power: keeping every draft (no rule) is far off', () => {
    expect(chiSquare(speculative('always-accept'), 453)).toBeGreaterThan(10 * CRITICAL);
  });
  it('plain sampling from the target, the control: below the quantile too', () => {
    const plain = (rng: () => number, P: number[][]) => {
      const seq: number[] = [];
      let prev = 0;
      for (let i = 0; i < L; i++) {
        prev = draw(P[prev], rng());
        seq.push(prev);
      }
      return seq;
    };
    expect(chiSquare(plain, 454)).toBeLessThan(CRITICAL);
  });

  it('keeps a draft the target is sure of, never one it rules out', () => {
    const p = [
      [0, 1, 0],
      [0.5, 0, 0.5],
    ];
    for (let k = 0; k < 50; k++) {
      const r = mulberry32(k);
      expect(speculativeSample([1], p, undefined, r)[0]).toBe(1);
      const out = speculativeSample([2], [[1, 0, 0], p[1]], undefined, r);
      expect(out).toEqual([0]);
    }
  });
});
