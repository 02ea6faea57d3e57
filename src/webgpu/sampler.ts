/**
 * CPU token sampling from one position's logits, in the order of llama.cpp's default sampler chain
 * (`common_params_sampling::samplers`, common/common.h: penalties → dry → top_n_sigma → top_k → typ_p →
 * top_p → min_p → xtc → temperature, then `dist`). The stages we implement, in that order:
 *
 * 1. repetition penalty (`llama_sampler_penalties`): every distinct token among the last
 *    `repetitionLastN` of `history` has its logit divided by the penalty when positive, multiplied when
 *    ≤ 0 (once per token, however often it occurs);
 * 2. top-k: keep the k highest logits (ties: lower id first);
 * 3. top-p: softmax over the remaining logits (no temperature yet), sorted by probability, keep the
 *    shortest prefix whose cumulative probability reaches p;
 * 4. min-p: keep tokens whose logit ≥ max logit + ln(minP), i.e. p ≥ minP · p_max;
 * 5. temperature: divide the logits by T;
 * 6. dist: softmax and one draw from the seeded PRNG.
 *
 * As in llama.cpp, top-p and min-p see the distribution *before* temperature. Temperature ≤ 0 is greedy:
 * the argmax of the penalised logits (lowest id on ties), which every filter above would keep anyway.
 * Penalised logits and the min-p threshold are rounded to f32, as llama.cpp computes them (and as the
 * GPU sampler, kernels/sample.ts, does); the softmaxes and cumulative sums are float64 (llama.cpp: f32).
 * The PRNG is mulberry32, not llama.cpp's mt19937, so sampled ids match llama.cpp's only in distribution,
 * greedy ids exactly.
 *
 * With `{ keyed: true }` the sampler draws as the GPU sampler does: uniform number n of a request is
 * `keyedUniform(seed, n)` (util/prng.ts, a counter-based hash) and the inverse-CDF walk goes over the
 * candidates in id order. The kept set and probabilities are the same either way; only which id a given
 * uniform maps to changes. The GPU then picks the same ids for the same logits except where its f32 sums
 * and these float64 ones fall on different sides of a boundary (see kernels/sample.ts).
 */

import { EngineError } from '../core/errors.ts';
import type { SamplingParams } from '../core/types.ts';
import { checkSamplingParams } from '../core/validate.ts';
import { keyedUniform, mulberry32, type Rng } from '../util/prng.ts';

/** A filtered, normalised distribution: candidate ids and their probabilities (same order). */
export interface Candidates {
  ids: Int32Array;
  probs: Float64Array;
}

/** Sampling parameters with every default filled in (see {@link Sampler.params}). */
export interface ResolvedParams {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repetitionPenalty: number;
  repetitionLastN: number;
}

function resolve(params: SamplingParams): ResolvedParams {
  const p: ResolvedParams = {
    temperature: params.temperature ?? 0,
    topK: params.topK ?? 0,
    topP: params.topP ?? 1,
    minP: params.minP ?? 0,
    repetitionPenalty: params.repetitionPenalty ?? 1,
    repetitionLastN: params.repetitionLastN ?? 64,
  };
  // The engine API's rules (src/core/validate.ts), one place for the sampler and every backend.
  checkSamplingParams(p);
  return p;
}

/** A random 32-bit seed, for when none is given (llama.cpp also seeds randomly by default). */
function randomSeed(): number {
  const c = globalThis.crypto;
  if (c?.getRandomValues) return c.getRandomValues(new Uint32Array(1))[0];
  return Math.floor(Math.random() * 2 ** 32);
}

/**
 * The PRNG's 32-bit seed for a request's `seed`: none, or -1 (llama.cpp's LLAMA_DEFAULT_SEED, "random"), a
 * random one; a negative one its two's complement (llama.cpp's `uint32_t`); one of 2^32 or more with its
 * high bits mixed in (cut to 32 bits, 2^32 + 1 gave seed 1's text).
 */
export function seedFor(seed: number | undefined): number {
  if (seed === undefined || seed === -1) return randomSeed();
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 2 ** 32);
  return hi === 0 || hi === -1 ? lo : (lo ^ Math.imul(hi | 0, 0x9e3779b1)) >>> 0;
}

/** Options of {@link Sampler} beyond the request's parameters. */
export interface SamplerOptions {
  /**
   * Draw as the GPU sampler does (kernels/sample.ts): uniform n = `keyedUniform(seed, n)`, walked over
   * the candidates in id order. Default false: mulberry32 over the candidates in sorted order.
   */
  keyed?: boolean;
}

/** Samples token ids from logits with {@link SamplingParams}; see the module comment for the order. */
export class Sampler {
  /** Vocabulary size: only the first nVocab logits are read. */
  readonly nVocab: number;
  private readonly p: ResolvedParams;
  private readonly initialSeed: number | undefined;
  private rng: Rng;
  private seedInUse: number;
  private readonly keyed: boolean;
  /** Draws made since construction or the last reset (the keyed PRNG's counter). */
  private draws = 0;

  /**
   * @param params sampling parameters; defaults give greedy decoding.
   * @param nVocab vocabulary size: only the first nVocab logits are read.
   * @param opts `keyed`: draw like the GPU sampler (see {@link SamplerOptions}).
   * @throws EngineError('invalid_argument') for out-of-range parameters.
   */
  constructor(params: SamplingParams, nVocab: number, opts: SamplerOptions = {}) {
    if (!Number.isInteger(nVocab) || nVocab <= 0) {
      throw new EngineError('invalid_argument', `nVocab must be a positive integer, got ${nVocab}`);
    }
    this.nVocab = nVocab;
    this.p = resolve(params);
    this.initialSeed = params.seed;
    this.seedInUse = seedFor(params.seed);
    this.rng = mulberry32(this.seedInUse);
    this.keyed = opts.keyed ?? false;
  }

  /** The parameters in use, defaults filled in (a copy). */
  get params(): ResolvedParams {
    return { ...this.p };
  }

  /** The seed the PRNG started from (a random one when none was given). */
  get seed(): number {
    return this.seedInUse;
  }

  /** True when sampling is greedy (temperature 0). */
  get greedy(): boolean {
    return this.p.temperature <= 0;
  }

  /** Restarts the PRNG from `seed`, else from the seed given at construction (else a new random one). */
  reset(seed?: number): void {
    this.seedInUse = seedFor(seed ?? this.initialSeed);
    this.rng = mulberry32(this.seedInUse);
    this.draws = 0;
  }

  /**
   * Picks the next token.
   * @param logits at least nVocab values for the position being sampled.
   * @param history token ids so far (prompt and output); its last `repetitionLastN` feed the penalty.
   */
  sample(logits: Float32Array, history: readonly number[] = []): number {
    const penalized = this.penalize(logits, history);
    if (this.p.temperature <= 0) return argmax(penalized);
    const c = this.candidates(penalized);
    if (this.keyed) return keyedDraw(c, this.seedInUse, this.draws++);
    this.draws++;
    return draw(c, this.rng());
  }

  /**
   * The distribution {@link sample} draws from (after penalties, top-k, top-p, min-p and temperature), in
   * candidate order. With temperature 0: the argmax alone, probability 1.
   */
  distribution(logits: Float32Array, history: readonly number[] = []): Candidates {
    const penalized = this.penalize(logits, history);
    if (this.p.temperature <= 0) return { ids: Int32Array.of(argmax(penalized)), probs: Float64Array.of(1) };
    return this.candidates(penalized);
  }

  /** Float64 copy of the first nVocab logits with the repetition penalty applied. */
  private penalize(logits: Float32Array, history: readonly number[]): Float64Array {
    const n = this.nVocab;
    if (logits.length < n) {
      throw new EngineError('invalid_argument', `expected ${n} logits, got ${logits.length}`);
    }
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = logits[i];
    const { repetitionPenalty: penalty, repetitionLastN: lastN } = this.p;
    if (penalty === 1 || lastN === 0 || history.length === 0) return out;
    const from = lastN < 0 ? 0 : Math.max(0, history.length - lastN);
    const seen = new Set<number>();
    for (let i = from; i < history.length; i++) {
      const id = history[i];
      if (!Number.isInteger(id) || id < 0 || id >= n || seen.has(id)) continue;
      seen.add(id);
      // f32, as llama.cpp's `logit /= penalty_repeat` (and the GPU sampler).
      out[id] = Math.fround(out[id] <= 0 ? out[id] * penalty : out[id] / penalty);
    }
    return out;
  }

  /** top-k → top-p → min-p → temperature → softmax over penalised logits. */
  private candidates(logits: Float64Array): Candidates {
    const n = logits.length;
    const { topK, topP, minP, temperature } = this.p;
    let ids: Int32Array;
    let sorted = false;
    if (topK > 0 && topK < n) {
      ids = topKIds(logits, topK);
      sorted = true;
    } else {
      ids = new Int32Array(n);
      for (let i = 0; i < n; i++) ids[i] = i;
    }

    if (topP < 1) {
      if (!sorted) {
        sortByLogit(ids, logits);
        sorted = true;
      }
      const probs = softmax(ids, logits, 1);
      let cum = 0;
      let keep = ids.length;
      for (let i = 0; i < ids.length; i++) {
        cum += probs[i];
        if (cum >= topP) {
          keep = i + 1;
          break;
        }
      }
      ids = ids.subarray(0, keep);
    }

    if (minP > 0) {
      let max = -Infinity;
      for (const id of ids) if (logits[id] > max) max = logits[id];
      // f32, as llama.cpp's `max_logit + logf(p)` (the GPU sampler adds the same two f32 values).
      const threshold = Math.fround(max + Math.fround(Math.log(minP)));
      ids = ids.filter((id) => logits[id] >= threshold);
    }

    return { ids, probs: softmax(ids, logits, temperature) };
  }
}

/** Index of the largest value, lowest index on ties (NaN never wins). */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  let bestV = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    if (values[i] > bestV) {
      bestV = values[i];
      best = i;
    }
  }
  return best;
}

/** Sorts ids by logit, highest first, lower id first on ties. */
function sortByLogit(ids: Int32Array, logits: Float64Array): void {
  ids.sort((a, b) => logits[b] - logits[a] || a - b);
}

/** The k ids with the highest logits (lower id first on ties), sorted highest first. */
function topKIds(logits: Float64Array, k: number): Int32Array {
  // Min-heap of the best k seen so far; the root is the worst of them.
  const heap = new Int32Array(k);
  let size = 0;
  const worse = (a: number, b: number): boolean =>
    logits[a] < logits[b] || (logits[a] === logits[b] && a > b);
  const siftDown = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < size && worse(heap[l], heap[m])) m = l;
      if (r < size && worse(heap[r], heap[m])) m = r;
      if (m === i) return;
      const t = heap[m];
      heap[m] = heap[i];
      heap[i] = t;
      i = m;
    }
  };
  for (let id = 0; id < logits.length; id++) {
    if (size < k) {
      heap[size] = id;
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!worse(heap[i], heap[parent])) break;
        const t = heap[parent];
        heap[parent] = heap[i];
        heap[i] = t;
        i = parent;
      }
    } else if (worse(heap[0], id)) {
      heap[0] = id;
      siftDown(0);
    }
  }
  sortByLogit(heap, logits);
  return heap;
}

/** Softmax of logits[ids] / temperature, max-subtracted. */
function softmax(ids: Int32Array, logits: Float64Array, temperature: number): Float64Array {
  const probs = new Float64Array(ids.length);
  let max = Number.NEGATIVE_INFINITY;
  for (const id of ids) if (logits[id] > max) max = logits[id];
  let sum = 0;
  for (let i = 0; i < ids.length; i++) {
    const p = Math.exp((logits[ids[i]] - max) / temperature);
    probs[i] = p;
    sum += p;
  }
  for (let i = 0; i < probs.length; i++) probs[i] /= sum;
  return probs;
}

/**
 * The keyed draw (what `Sampler` does with `{ keyed: true }`, and kernels/sample.ts on the GPU): uniform
 * u = keyedUniform(seed, index), inverse CDF over the candidates in id order.
 * @returns the id drawn; never a zero-probability candidate.
 */
export function keyedDraw(c: Candidates, seed: number, index: number): number {
  return draw(byId(c), keyedUniform(seed, index));
}

/** The same candidates in id order (the keyed draw's order). */
function byId(c: Candidates): Candidates {
  const order = Array.from(c.ids.keys()).sort((a, b) => c.ids[a] - c.ids[b]);
  return { ids: Int32Array.from(order, (i) => c.ids[i]), probs: Float64Array.from(order, (i) => c.probs[i]) };
}

/** Inverse-CDF draw with uniform r ∈ [0, 1); never picks a zero-probability candidate. */
function draw(c: Candidates, r: number): number {
  let total = 0;
  for (const p of c.probs) total += p;
  const target = r * total;
  let cum = 0;
  let last = c.ids[0];
  for (let i = 0; i < c.ids.length; i++) {
    if (c.probs[i] <= 0) continue;
    cum += c.probs[i];
    last = c.ids[i];
    if (cum > target) return c.ids[i];
  }
  return last; // rounding: r·total can reach the full sum
}
