/**
 * Pure benchmark metrics, with the definitions of vLLM's `bench serve` (see DESIGN.md, "Metrics"):
 *
 * - TTFT: request start → first output token.
 * - ITL: gaps between successive output tokens (n − 1 of them for n tokens).
 * - E2E latency: request start → last output token.
 * - TPOT = (E2E − TTFT) / (n − 1); decode tok/s = (n − 1) / (E2E − TTFT).
 * - Prefill tok/s = prompt tokens / TTFT.
 *
 * Inputs are one request's `{tStartMs, tokenTimesMs, promptTokens}`: `performance.now()` ms at request
 * start and one timestamp per output token, taken where the token id became known (several tokens that
 * arrive in one chunk share its timestamp). Tokens are counted by ids, never by chunks or characters.
 *
 * Summary statistics over runs: mean, median, p90, p99, population standard deviation (ddof = 0, like
 * NumPy's `np.std`, which vLLM uses), min and max. Percentiles use linear interpolation between closest
 * ranks (Hyndman & Fan type 7; NumPy's default `method="linear"`, Excel's PERCENTILE.INC): for sorted
 * values x[0..n−1] and p in [0, 100], h = (n − 1)·p/100 and
 * P = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
 */

/** One request's timing, as a {@link import('./types.ts').GenerateResult} gives it. */
export interface TimedGeneration {
  /** performance.now() ms at request start. */
  tStartMs: number;
  /** performance.now() ms per output token, in order. */
  tokenTimesMs: readonly number[];
  /** Prompt length in tokens (BOS included when the engine added it). */
  promptTokens: number;
}

/** Every per-request metric; the decode-side ones are NaN when fewer than 2 tokens came out. */
export interface RequestMetrics {
  promptTokens: number;
  outputTokens: number;
  ttftMs: number;
  e2eMs: number;
  /** Gaps between successive output tokens, ms (length outputTokens − 1). */
  itlMs: number[];
  tpotMs: number;
  prefillTokPerS: number;
  decodeTokPerS: number;
}

/**
 * Checks a generation's timestamps: at least one token, finite, none before the start, non-decreasing.
 * @throws RangeError naming the first problem.
 */
export function validateGeneration(g: TimedGeneration): void {
  const t = g.tokenTimesMs;
  if (!Number.isFinite(g.tStartMs)) throw new RangeError(`tStartMs must be finite, got ${g.tStartMs}`);
  if (!(Number.isInteger(g.promptTokens) && g.promptTokens >= 0))
    throw new RangeError(`promptTokens must be a non-negative integer, got ${g.promptTokens}`);
  if (t.length === 0) throw new RangeError('no output tokens: TTFT is undefined');
  let prev = g.tStartMs;
  for (let i = 0; i < t.length; i++) {
    if (!Number.isFinite(t[i])) throw new RangeError(`tokenTimesMs[${i}] must be finite, got ${t[i]}`);
    if (t[i] < prev)
      throw new RangeError(
        i === 0
          ? `tokenTimesMs[0] (${t[0]}) is before tStartMs (${g.tStartMs})`
          : `tokenTimesMs[${i}] (${t[i]}) is before tokenTimesMs[${i - 1}] (${prev})`,
      );
    prev = t[i];
  }
}

/** Request start → first output token, ms. @throws RangeError on invalid timestamps. */
export function ttftMs(g: TimedGeneration): number {
  validateGeneration(g);
  return g.tokenTimesMs[0] - g.tStartMs;
}

/** Request start → last output token, ms. @throws RangeError on invalid timestamps. */
export function e2eMs(g: TimedGeneration): number {
  validateGeneration(g);
  return g.tokenTimesMs[g.tokenTimesMs.length - 1] - g.tStartMs;
}

/** Inter-token latencies, ms: t[i] − t[i−1] for i ≥ 1. @throws RangeError on invalid timestamps. */
export function itlMs(g: TimedGeneration): number[] {
  validateGeneration(g);
  const t = g.tokenTimesMs;
  const out = new Array<number>(Math.max(0, t.length - 1));
  for (let i = 1; i < t.length; i++) out[i - 1] = t[i] - t[i - 1];
  return out;
}

/** Time per output token after the first, ms: (E2E − TTFT) / (n − 1); NaN when n < 2. */
export function tpotMs(g: TimedGeneration): number {
  validateGeneration(g);
  const n = g.tokenTimesMs.length;
  if (n < 2) return Number.NaN;
  return (g.tokenTimesMs[n - 1] - g.tokenTimesMs[0]) / (n - 1);
}

/** (n − 1) / (E2E − TTFT) in tokens per second; NaN when n < 2, Infinity when the span is 0. */
export function decodeTokPerS(g: TimedGeneration): number {
  validateGeneration(g);
  const n = g.tokenTimesMs.length;
  if (n < 2) return Number.NaN;
  return ((n - 1) * 1000) / (g.tokenTimesMs[n - 1] - g.tokenTimesMs[0]);
}

/** Prompt tokens / TTFT in tokens per second (Infinity when TTFT is 0). */
export function prefillTokPerS(g: TimedGeneration): number {
  return (g.promptTokens * 1000) / ttftMs(g);
}

/**
 * Speculative decoding's tokens per target pass: the output tokens after the first (the prefill gives it)
 * ÷ the target's forward passes after the prefill (types.ts `SpeculativeStats.targetPasses`); NaN when
 * there were none.
 */
export function tokensPerTargetPass(outputTokens: number, targetPasses: number): number {
  return targetPasses > 0 ? Math.max(0, outputTokens - 1) / targetPasses : Number.NaN;
}

/** All per-request metrics at once. @throws RangeError on invalid timestamps. */
export function requestMetrics(g: TimedGeneration): RequestMetrics {
  return {
    promptTokens: g.promptTokens,
    outputTokens: g.tokenTimesMs.length,
    ttftMs: ttftMs(g),
    e2eMs: e2eMs(g),
    itlMs: itlMs(g),
    tpotMs: tpotMs(g),
    prefillTokPerS: prefillTokPerS(g),
    decodeTokPerS: decodeTokPerS(g),
  };
}

/**
 * Expands per-chunk arrival times into per-token times: a chunk that carried k tokens gives k equal
 * timestamps (how a streamed peer's chunks become `tokenTimesMs`).
 * @throws RangeError when a count is not a non-negative integer or the lengths differ.
 */
export function tokenTimesFromChunks(
  chunkTimesMs: readonly number[],
  tokensPerChunk: readonly number[],
): number[] {
  if (chunkTimesMs.length !== tokensPerChunk.length)
    throw new RangeError(`${chunkTimesMs.length} chunk times but ${tokensPerChunk.length} token counts`);
  const out: number[] = [];
  for (let i = 0; i < chunkTimesMs.length; i++) {
    const k = tokensPerChunk[i];
    if (!(Number.isInteger(k) && k >= 0))
      throw new RangeError(`tokensPerChunk[${i}] must be a non-negative integer, got ${k}`);
    for (let j = 0; j < k; j++) out.push(chunkTimesMs[i]);
  }
  return out;
}

/** Summary of a sample. */
export interface Summary {
  n: number;
  mean: number;
  median: number;
  p90: number;
  p99: number;
  /** Population standard deviation (ddof = 0). */
  std: number;
  min: number;
  max: number;
}

/**
 * The p-th percentile (p in [0, 100]) of ascending-sorted values, by linear interpolation between closest
 * ranks (type 7, NumPy's default). @throws RangeError on an empty sample or p outside [0, 100].
 */
export function percentileSorted(sorted: readonly number[], p: number): number {
  const n = sorted.length;
  if (n === 0) throw new RangeError('percentile of an empty sample');
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be in [0, 100], got ${p}`);
  const h = ((n - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  const frac = h - lo;
  // Written as a + f·(b − a) so equal neighbours give exactly that value.
  return frac === 0 ? sorted[lo] : sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

/** The p-th percentile of unsorted values (see {@link percentileSorted}). */
export function percentile(values: readonly number[], p: number): number {
  return percentileSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
}

/**
 * mean, median, p90, p99, population std, min, max of a sample (NaN entries are not allowed).
 * @throws RangeError on an empty sample or a NaN value.
 */
export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  if (n === 0) throw new RangeError('summary of an empty sample');
  for (let i = 0; i < n; i++) if (Number.isNaN(values[i])) throw new RangeError(`value ${i} is NaN`);
  const sorted = [...values].sort((a, b) => a - b);
  let sum = 0;
  for (const v of sorted) sum += v;
  const mean = sum / n;
  // Two-pass variance: stable for values far from zero.
  let ss = 0;
  for (const v of sorted) ss += (v - mean) * (v - mean);
  return {
    n,
    mean,
    median: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    std: Math.sqrt(ss / n),
    min: sorted[0],
    max: sorted[n - 1],
  };
}
