/**
 * Sampled speculative decoding end to end (speculativeSampled, the loop generation.ts runs for sampled
 * requests with a draft), by a chi-square test of its output against the target's sampling distribution.
 *
 * The target is a fake LlamaModel: a second-order Markov chain over V = 6 tokens (next-token logits depend
 * on the last two tokens fed), with a "KV cache" that is the token at each position fed so far, so a verify
 * row read for the wrong draft position, a wrong feed position or stale history changes the distribution.
 * The drafters draft deterministically, as lookup and a greedy draft model do (speculativeSampled takes the
 * draft as a point mass), from distributions other than the target's, so drafts are often rejected (the
 * residual draw) and sometimes all kept (the bonus token). The exact distribution of each continuation is
 * enumerated with the CPU sampler (sampler.ts `distribution`: penalties, top-k, top-p, temperature, with
 * the history each position sees); the seeds are fixed, so each case gives one p-value every run.
 *
 * Under a grammar (structured output; a fake TokenMatcher whose allowed tokens depend on the last token,
 * with a stop token that completes it), the output follows the target's distribution restricted to what
 * the grammar allows at each position, greedy output is masked greedy decoding's token for token, and
 * `grammarMasks` leaves the matcher as it found it.
 *
 * speculative.test.ts tests the acceptance rule (speculativeSample) alone.
 */
import { describe, expect, it } from 'vitest';
import type { SamplingParams, SpeculativeStats } from '../core/types.ts';
import type { TokenMatcher } from '../model/grammar.ts';
import { chiSquareTest } from '../testing/chi-square.ts';
import { mulberry32, pcgHash, randn } from '../util/prng.ts';
import { applyTokenMask } from './kernels/mask.ts';
import type { LlamaModel } from './model/llama.ts';
import { Sampler } from './sampler.ts';
import { type Drafter, grammarMasks, speculativeGreedy, speculativeSampled } from './speculative.ts';

const V = 6;
const PROMPT = [1, 4, 4];
/** Fails a case below this p-value. */
const ALPHA = 1e-4;

/** The target chain: logits of the token after (a, b) are TABLE[a · V + b] (f32, as a model's readback). */
const TABLE = (() => {
  const rng = mulberry32(0x5eed);
  return Array.from({ length: V * V }, () => Float32Array.from({ length: V }, () => randn(rng, 0, 1.6)));
})();
/** The target's next-token logits after `ctx` (its last two tokens). */
const chainLogits = (ctx: readonly number[]): Float32Array =>
  TABLE[ctx[ctx.length - 2] * V + ctx[ctx.length - 1]];

/**
 * What speculativeSampled uses of LlamaModel: `submitReadback` + `readLogits` after the prefill, and
 * `verify(ids, pos, { readLogits })`, whose row i holds the logits after positions 0 … pos + i. Positions
 * past the last verify's accepted prefix stay as they were until overwritten, as the KV cache's rows do; a
 * verify that skips a position never fed throws.
 */
class FakeTarget {
  readonly cfg = { nVocab: V };
  readonly nCtx = 64;
  readonly verifyMaxTokens = 17;
  private readonly ctx: number[];
  private pending = false;
  constructor(prompt: readonly number[]) {
    this.ctx = [...prompt]; // prefilled
  }
  private tokenMask?: Int32Array;
  private picked?: number;
  submitReadback(o: { readLogits?: boolean }): void {
    if (!o.readLogits) throw new Error('speculativeSampled reads the logits');
    this.pending = true;
  }
  async readLogits(): Promise<Float32Array> {
    if (!this.pending) throw new Error('readLogits without submitReadback');
    this.pending = false;
    return chainLogits(this.ctx).slice();
  }
  // The constrained pick after the prefill (greedy under a grammar): the masked argmax, read as a token.
  async enableTokenMask(): Promise<void> {}
  writeTokenMask(m: Int32Array): void {
    this.tokenMask = m;
  }
  submitPick(o: { slot?: number; mask?: boolean }): void {
    if (!o.mask || !this.tokenMask) throw new Error('a pick here is a masked one, after writeTokenMask');
    const row = applyTokenMask(chainLogits(this.ctx), this.tokenMask, V);
    this.picked = row.indexOf(Math.max(...row));
  }
  async readToken(slot: number): Promise<number> {
    if (slot !== 0 || this.picked === undefined) throw new Error('readToken without submitPick');
    const id = this.picked;
    this.picked = undefined;
    return id;
  }
  /** LlamaModel.verify: with `masks`, row i masked by masks[i] before its argmax (and its logits). */
  async verify(
    ids: number[],
    pos: number,
    opts: { readLogits?: boolean; masks?: readonly Int32Array[] } = {},
  ): Promise<{ argmax: Int32Array; logits?: Float32Array }> {
    const T = ids.length;
    if (!(T >= 1 && T <= this.verifyMaxTokens) || pos + T > this.nCtx)
      throw new Error(`verify ${T} at ${pos}`);
    if (pos > this.ctx.length)
      throw new Error(`verify at ${pos}, but only ${this.ctx.length} positions were fed`);
    if (opts.masks && opts.masks.length !== T) throw new Error(`${opts.masks.length} masks for ${T} rows`);
    this.ctx.length = pos;
    this.ctx.push(...ids);
    const logits = new Float32Array(T * V);
    const argmax = new Int32Array(T);
    for (let i = 0; i < T; i++) {
      let row = chainLogits(this.ctx.slice(0, pos + i + 1));
      if (opts.masks) row = applyTokenMask(row, opts.masks[i], V);
      logits.set(row, i * V);
      argmax[i] = row.indexOf(Math.max(...row));
    }
    return { argmax, logits: opts.readLogits ? logits : undefined };
  }
}

/** A drafter that records how each pass ended (through the rollback speculativeSampled reports). */
interface CountingDrafter extends Drafter {
  /** Passes with drafts where one was rejected, and where every draft was kept. */
  rejected: number;
  allKept: number;
}

/**
 * Wraps a deterministic proposal rule `next(ctx)` (the token to draft after ctx) as a drafter of up to n
 * tokens; `length(history, n)` picks how many (fewer than n, even none, as lookup may).
 */
function drafter(
  next: (ctx: readonly number[]) => number,
  length: (history: readonly number[], n: number) => number = (_, n) => n,
): CountingDrafter {
  let drafted: { from: number; n: number } | undefined;
  const d: CountingDrafter = {
    rejected: 0,
    allKept: 0,
    draft(history, n) {
      expect(history.slice(0, PROMPT.length)).toEqual(PROMPT);
      const ctx = [...history];
      const k = length(history, n);
      for (let i = 0; i < k; i++) ctx.push(next(ctx));
      drafted = { from: history.length, n: k };
      return ctx.slice(history.length);
    },
    rollback(valid) {
      // Called after every pass; a pass with no room to draft (the last token) calls no draft.
      if (!drafted) return;
      const { from, n } = drafted;
      drafted = undefined;
      const a = valid - from;
      expect(a >= 0 && a <= n, `rollback to ${valid} after ${n} drafts at ${from}`).toBe(true);
      if (n > 0) {
        if (a === n) d.allKept++;
        else d.rejected++;
      }
    },
  };
  return d;
}

/** A uniform in [0, 1) that is a function of the tokens (and a salt). */
const hashUniform = (ctx: readonly number[], salt: number): number => {
  let h = pcgHash(salt);
  for (const t of ctx) h = pcgHash(h ^ t);
  return h / 2 ** 32;
};

/**
 * Drafts from another chain: first-order, flatter than the target's, its token picked by a hash of the
 * history (a point mass given the history, so valid for speculativeSampled); a quarter of the passes draft
 * fewer tokens than asked, some none (a plain decode step).
 */
const otherChain = (): CountingDrafter => {
  const rng = mulberry32(77);
  const Q = Array.from({ length: V }, () => {
    const w = Array.from({ length: V }, () => 0.3 + rng());
    const s = w.reduce((a, b) => a + b, 0);
    return w.map((x) => x / s);
  });
  return drafter(
    (ctx) => {
      let u = hashUniform(ctx, 1);
      const row = Q[ctx[ctx.length - 1]];
      for (let t = 0; t < V; t++) {
        if (u < row[t]) return t;
        u -= row[t];
      }
      return V - 1;
    },
    (history, n) => (hashUniform(history, 2) < 0.25 ? Math.floor(hashUniform(history, 3) * n) : n),
  );
};

/** Drafts the target chain's raw argmax (no penalty, no temperature): a good draft model, often all kept. */
const targetGreedy = (): CountingDrafter =>
  drafter((ctx) => {
    const row = chainLogits(ctx);
    return row.indexOf(Math.max(...row));
  });

/**
 * The exact probability of each continuation of `length` tokens after PROMPT (or fewer, ending where
 * `ends` says: a grammar's stop token), keyed by the ids joined; `logitsOf(seq)` gives the logits after
 * PROMPT and `seq` (default the chain's own; a grammar's masked ones).
 */
function exact(
  sampler: Sampler,
  length: number,
  logitsOf: (seq: readonly number[]) => Float32Array = (seq) => chainLogits([...PROMPT, ...seq]),
  ends: (seq: readonly number[]) => boolean = () => false,
): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (seq: number[], prob: number) => {
    if (seq.length === length || ends(seq)) {
      out.set(seq.join(','), prob);
      return;
    }
    const history = [...PROMPT, ...seq];
    const c = sampler.distribution(logitsOf(seq), history);
    for (let k = 0; k < c.ids.length; k++) if (c.probs[k] > 0) walk([...seq, c.ids[k]], prob * c.probs[k]);
  };
  walk([], 1);
  return out;
}

/** The marginal of a prefix of `k` tokens, from the joint. */
function prefixes<T>(joint: Map<string, number>, k: number, toKey: (seq: string[]) => T): Map<T, number> {
  const out = new Map<T, number>();
  for (const [key, p] of joint) {
    const pk = toKey(key.split(',').slice(0, k));
    out.set(pk, (out.get(pk) ?? 0) + p);
  }
  return out;
}

interface Case {
  name: string;
  params: SamplingParams;
  draftMax: number;
  /** Tokens per run (the first from the prefill's logits, the rest from verify passes). */
  length: number;
  drafter: () => CountingDrafter;
  runs: number;
  seed: number;
}

const CASES: Case[] = [
  {
    name: 'draft length 1, temperature 0.7, top-k 4, drafts from another chain',
    params: { temperature: 0.7, topK: 4 },
    draftMax: 1,
    length: 4,
    drafter: otherChain,
    runs: 12_000,
    seed: 101,
  },
  {
    name: 'draft length 3, temperature 1.3, top-p 0.85, drafts from another chain',
    params: { temperature: 1.3, topP: 0.85 },
    draftMax: 3,
    length: 5,
    drafter: otherChain,
    runs: 12_000,
    seed: 102,
  },
  {
    name: 'draft length 3, temperature 0.6, top-p 0.9, repetition penalty 1.8, drafts the target’s raw argmax',
    params: { temperature: 0.6, topP: 0.9, repetitionPenalty: 1.8, repetitionLastN: 4 },
    draftMax: 3,
    length: 5,
    drafter: targetGreedy,
    runs: 12_000,
    seed: 103,
  },
  {
    // No truncation: every continuation is possible, so a wrong row or history shows in the counts alone.
    name: 'draft length 2, temperature 0.8, repetition penalty 2, no top-k/top-p, drafts the target’s raw argmax',
    params: { temperature: 0.8, repetitionPenalty: 2, repetitionLastN: 8 },
    draftMax: 2,
    length: 4,
    drafter: targetGreedy,
    runs: 12_000,
    seed: 104,
  },
];

describe('speculativeSampled: the output follows the target’s sampling distribution (fake target chain)', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const sampler = new Sampler({ ...c.params, seed: 0 }, V);
      const seeds = mulberry32(c.seed);
      const joint = new Map<string, number>();
      let rejected = 0;
      let allKept = 0;
      const stats: SpeculativeStats = { drafted: 0, accepted: 0, targetPasses: 0 };
      for (let r = 0; r < c.runs; r++) {
        const d = c.drafter();
        const model = new FakeTarget(PROMPT) as unknown as LlamaModel;
        const o = {
          pos: PROMPT.length,
          maxTokens: c.length,
          prompt: PROMPT,
          draftMax: c.draftMax,
          drafter: d,
          stats,
        };
        const seq: number[] = [];
        for await (const id of speculativeSampled(model, o, sampler, mulberry32(seeds() * 2 ** 32)))
          seq.push(id);
        expect(seq.length).toBe(c.length);
        const key = seq.join(',');
        joint.set(key, (joint.get(key) ?? 0) + 1);
        rejected += d.rejected;
        allKept += d.allKept;
      }
      const probs = exact(sampler, c.length);
      const report: string[] = [];
      // The first token (the prefill's logits), the first three (the first verify pass's rows, mapped to
      // their draft positions), and the whole continuation (the bonus token, the later passes).
      for (const k of [1, 3, c.length]) {
        const key = (s: string[]) => s.join(',');
        const r = chiSquareTest(prefixes(joint, k, key), prefixes(probs, k, key), c.runs);
        report.push(`tokens 1..${k}: chi2 ${r.chi2.toFixed(1)}, df ${r.df}, p ${r.p.toPrecision(3)}`);
        expect(r.p, `${c.name}, tokens 1..${k}: ${report.at(-1)}`).toBeGreaterThan(ALPHA);
      }
      console.log(
        `${c.name}: ${report.join('; ')} (passes ${stats.targetPasses}, drafted ${stats.drafted}, accepted ${stats.accepted}, rejected ${rejected}, all kept ${allKept})`,
      );
      // Both ends of the rule ran often: residual draws after a rejection, bonus tokens after full acceptance.
      expect(rejected).toBeGreaterThan(c.runs / 4);
      expect(allKept).toBeGreaterThan(c.runs / 20);
    });
  }
});

/** The fake grammar's stop token: accepting it completes the grammar. */
const STOP = 5;
/** Tokens allowed after each last token (bit t: token t), the stop token after some only. */
const ALLOWED = [0b100110, 0b011001, 0b110100, 0b100011, 0b001010, 0];

/**
 * A grammar as TokenMatcher: token t may follow s when bit t of ALLOWED[s] is set (s: the last token
 * accepted, else the prompt's last), only STOP once `limit` tokens were accepted; accepting STOP completes
 * it. Asking for a mask once complete, or rolling back more than was accepted, throws.
 */
class FakeMatcher implements TokenMatcher {
  readonly seq: number[] = [];
  constructor(
    private readonly start: number,
    private readonly limit = Number.POSITIVE_INFINITY,
  ) {}
  allowed(): number {
    return this.seq.length >= this.limit ? 1 << STOP : ALLOWED[this.seq.at(-1) ?? this.start];
  }
  async nextMask(): Promise<Int32Array> {
    if (this.isTerminated()) throw new Error('a mask asked for after the grammar completed');
    return Int32Array.of(this.allowed());
  }
  accept(id: number): boolean {
    if (this.isTerminated() || !((this.allowed() >> id) & 1)) return false;
    this.seq.push(id);
    return true;
  }
  isTerminated(): boolean {
    return this.seq.at(-1) === STOP;
  }
  rollBack(n: number): void {
    if (n > this.seq.length) throw new Error(`rollBack(${n}) after ${this.seq.length} tokens`);
    this.seq.length -= n;
  }
  dispose(): void {}
}

/** The logits after PROMPT and `seq` (the output so far) with the grammar's mask there. */
const maskedLogits = (seq: readonly number[], limit?: number): Float32Array => {
  const m = new FakeMatcher(PROMPT[PROMPT.length - 1], limit);
  for (const t of seq) expect(m.accept(t)).toBe(true);
  return applyTokenMask(chainLogits([...PROMPT, ...seq]), Int32Array.of(m.allowed()), V);
};

/** Drafts the target's raw argmax unless the grammar would allow it (drafts the grammar refuses). */
const greedyOutsideGrammar = (): CountingDrafter =>
  drafter((ctx) => {
    const row = chainLogits(ctx);
    const best = row.indexOf(Math.max(...row));
    return (ALLOWED[ctx.at(-1)!] >> best) & 1 ? (best + 1) % V : best;
  });

/** Drafts masked greedy decoding's own choice (every draft kept when greedy). */
const maskedGreedy = (): CountingDrafter =>
  drafter((ctx) => {
    const row = applyTokenMask(chainLogits(ctx), Int32Array.of(ALLOWED[ctx.at(-1)!]), V);
    return row.indexOf(Math.max(...row));
  });

describe('speculative decoding under a grammar (fake target chain, fake matcher)', () => {
  it('grammarMasks: the drafts the grammar allows short of completing it, a mask per row, the matcher unchanged', async () => {
    const m = new FakeMatcher(4);
    expect(m.accept(1)).toBe(true); // allowed after 4; then 0, 3, 4 are allowed
    const cases: [number[], number[]][] = [
      [[], []],
      [
        [0, 1, 3],
        [0, 1, 3],
      ], // 1→0→1→3: all allowed
      [[3, 2, 0], [3]], // 2 is not allowed after 3
      [[0, 5, 1], [0]], // 5 would complete the grammar: cut, the target may pick it itself
      [[2], []],
    ];
    for (const [drafts, kept] of cases) {
      const r = await grammarMasks(m, drafts);
      expect(r.drafts, JSON.stringify(drafts)).toEqual(kept);
      const states = [1, ...kept];
      expect(r.masks).toEqual(states.map((s) => Int32Array.of(ALLOWED[s])));
      expect(m.seq).toEqual([1]);
    }
  });

  it('greedy output equals masked greedy decoding, whatever the drafts, draftMax 1..4', async () => {
    let completed = 0;
    for (const limit of [Number.POSITIVE_INFINITY, 2, 6]) {
      const want: number[] = [];
      while (want.length < 12 && want.at(-1) !== STOP) {
        const row = maskedLogits(want, limit);
        want.push(row.indexOf(Math.max(...row)));
      }
      if (want.at(-1) === STOP) completed++;
      for (const make of [otherChain, targetGreedy, greedyOutsideGrammar, maskedGreedy])
        for (let draftMax = 1; draftMax <= 4; draftMax++)
          for (const maxTokens of [1, 3, 12]) {
            const matcher = new FakeMatcher(PROMPT.at(-1)!, limit);
            const stats: SpeculativeStats = { drafted: 0, accepted: 0, targetPasses: 0 };
            const model = new FakeTarget(PROMPT) as unknown as LlamaModel;
            const o = {
              pos: PROMPT.length,
              maxTokens,
              prompt: PROMPT,
              draftMax,
              drafter: make(),
              stats,
              matcher,
            };
            const got: number[] = [];
            for await (const id of speculativeGreedy(model, o)) got.push(id);
            const what = `limit ${limit} ${make.name} draftMax ${draftMax} maxTokens ${maxTokens}`;
            expect(got, what).toEqual(want.slice(0, maxTokens));
            expect(matcher.seq, what).toEqual(got); // the loop followed the grammar through what it yielded
            if (make === maskedGreedy && limit === Number.POSITIVE_INFINITY)
              expect(stats.accepted, what).toBe(stats.drafted);
          }
    }
    expect(completed).toBe(2); // the limited grammars completed (STOP) before 12 tokens
  });

  it('a drafter that drafts under the grammar: masked greedy output, every draft kept, each mask made once', async () => {
    /** Counts the masks made, by the tokens accepted when each was asked for. */
    class CountingMatcher extends FakeMatcher {
      readonly asked: string[] = [];
      override async nextMask(): Promise<Int32Array> {
        this.asked.push(this.seq.join(','));
        return super.nextMask();
      }
    }
    /** Masked greedy drafting through the matcher, as ModelDrafter does on the GPU: each step's mask, then undone. */
    const underGrammar: Drafter = {
      async draft(history, n, matcher) {
        const drafts: number[] = [];
        let followed = 0;
        for (let k = 0; k < n; k++) {
          const row = applyTokenMask(chainLogits([...history, ...drafts]), await matcher!.nextMask(), V);
          drafts.push(row.indexOf(Math.max(...row)));
          if (!matcher!.accept(drafts[k])) break;
          followed++;
          if (matcher!.isTerminated()) break;
        }
        matcher!.rollBack(followed);
        return drafts;
      },
    };
    for (const limit of [Number.POSITIVE_INFINITY, 6])
      for (const run of [speculativeGreedy, 'sampled'] as const) {
        const want: number[] = [];
        while (want.length < 12 && want.at(-1) !== STOP) {
          const row = maskedLogits(want, limit);
          want.push(row.indexOf(Math.max(...row)));
        }
        const matcher = new CountingMatcher(PROMPT.at(-1)!, limit);
        const stats: SpeculativeStats = { drafted: 0, accepted: 0, targetPasses: 0 };
        const model = new FakeTarget(PROMPT) as unknown as LlamaModel;
        const o = {
          pos: PROMPT.length,
          maxTokens: 12,
          prompt: PROMPT,
          draftMax: 4,
          drafter: underGrammar,
          stats,
          matcher,
        };
        const got: number[] = [];
        // Sampled at a temperature near 0: the rule keeps drafts that are the target's near-certain choice.
        const tokens =
          run === 'sampled'
            ? speculativeSampled(model, o, new Sampler({ temperature: 1e-3, seed: 0 }, V), mulberry32(5))
            : run(model, o);
        for await (const id of tokens) got.push(id);
        const what = `limit ${limit}, ${run === 'sampled' ? 'sampled' : 'greedy'}`;
        expect(got, what).toEqual(want);
        expect(matcher.seq, what).toEqual(got);
        expect(stats.accepted, what).toBe(stats.drafted);
        expect(stats.drafted, what).toBeGreaterThan(got.length / 2);
        // The verify pass asks for the drafter's states again; the loop remembers them: one mask a state.
        expect(new Set(matcher.asked).size, what).toBe(matcher.asked.length);
      }
  });

  const GRAMMAR_CASES = [
    { name: 'temperature 1, draft length 3, drafts from another chain', drafter: otherChain, seed: 201 },
    {
      name: 'temperature 1, draft length 3, drafts the target’s raw argmax (often outside the grammar)',
      drafter: targetGreedy,
      seed: 202,
    },
  ];
  for (const c of GRAMMAR_CASES) {
    it(`sampled: the output follows the target’s distribution restricted by the grammar (${c.name})`, async () => {
      const runs = 12_000;
      const length = 5;
      const sampler = new Sampler({ temperature: 1, seed: 0 }, V);
      const seeds = mulberry32(c.seed);
      const joint = new Map<string, number>();
      let stops = 0;
      const stats: SpeculativeStats = { drafted: 0, accepted: 0, targetPasses: 0 };
      for (let r = 0; r < runs; r++) {
        const matcher = new FakeMatcher(PROMPT.at(-1)!);
        const model = new FakeTarget(PROMPT) as unknown as LlamaModel;
        const o = {
          pos: PROMPT.length,
          maxTokens: length,
          prompt: PROMPT,
          draftMax: 3,
          drafter: c.drafter(),
          stats,
          matcher,
        };
        const seq: number[] = [];
        for await (const id of speculativeSampled(model, o, sampler, mulberry32(seeds() * 2 ** 32)))
          seq.push(id);
        expect(matcher.seq).toEqual(seq);
        if (seq.at(-1) === STOP) stops++;
        else expect(seq.length).toBe(length);
        joint.set(seq.join(','), (joint.get(seq.join(',')) ?? 0) + 1);
      }
      const probs = exact(
        sampler,
        length,
        (seq) => maskedLogits(seq),
        (seq) => seq.at(-1) === STOP,
      );
      for (const k of [1, 3, length]) {
        const key = (s: string[]) => s.join(',');
        const r = chiSquareTest(prefixes(joint, k, key), prefixes(probs, k, key), runs);
        expect(
          r.p,
          `tokens 1..${k}: chi2 ${r.chi2.toFixed(1)}, df ${r.df}, p ${r.p.toPrecision(3)}`,
        ).toBeGreaterThan(ALPHA);
      }
      expect(stops).toBeGreaterThan(runs / 20); // runs that completed the grammar early
      expect(stats.accepted).toBeGreaterThan(runs / 10);
    });
  }
});
