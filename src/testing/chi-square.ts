/**
 * Pearson's chi-square goodness-of-fit test, for tests that sample: observed counts against exact
 * probabilities, with its upper-tail p-value, so a test can fail at a stated significance rather than at a
 * hand-computed quantile.
 */

/** What {@link chiSquareTest} found. */
export interface ChiSquareResult {
  /** Pearson's statistic Σ (observed − expected)² / expected over the bins. */
  chi2: number;
  /** Degrees of freedom: bins − 1. */
  df: number;
  /** P(χ²_df ≥ chi2): small means the counts do not follow the probabilities. 0 when an impossible outcome was observed. */
  p: number;
  /** Bins after pooling. */
  bins: number;
}

/**
 * Tests `n` observations, counted per outcome in `observed`, against the outcomes' probabilities `probs`
 * (summing to 1). Outcomes expected fewer than `minExpected` times are pooled into one bin (and that bin,
 * if still short, into the smallest other one). An observed outcome that `probs` lacks or gives
 * probability 0 makes chi2 infinite and p 0.
 */
export function chiSquareTest<K>(
  observed: ReadonlyMap<K, number>,
  probs: ReadonlyMap<K, number>,
  n: number,
  minExpected = 5,
): ChiSquareResult {
  for (const [k, o] of observed) {
    if (o > 0 && !((probs.get(k) ?? 0) > 0)) return { chi2: Infinity, df: 0, p: 0, bins: 0 };
  }
  const cells: { o: number; e: number }[] = [];
  const pool = { o: 0, e: 0 };
  for (const [k, prob] of probs) {
    const cell = { o: observed.get(k) ?? 0, e: prob * n };
    if (cell.e < minExpected) {
      pool.o += cell.o;
      pool.e += cell.e;
    } else cells.push(cell);
  }
  if (pool.e > 0) {
    if (pool.e >= minExpected || cells.length === 0) cells.push(pool);
    else {
      const smallest = cells.reduce((a, b) => (b.e < a.e ? b : a));
      smallest.o += pool.o;
      smallest.e += pool.e;
    }
  }
  let chi2 = 0;
  for (const { o, e } of cells) chi2 += (o - e) ** 2 / e;
  const df = Math.max(1, cells.length - 1);
  return { chi2, df, p: chiSquareUpperTail(chi2, df), bins: cells.length };
}

/** P(χ²_df ≥ x), the regularised upper incomplete gamma function Q(df / 2, x / 2). */
export function chiSquareUpperTail(x: number, df: number): number {
  if (!(x > 0)) return 1;
  if (!Number.isFinite(x)) return 0;
  return gammaQ(df / 2, x / 2);
}

/** ln Γ(z), z > 0 (Lanczos, g = 7, 9 terms: about 15 significant digits). */
function lnGamma(z: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (z < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * z)) - lnGamma(1 - z);
  const x = z - 1;
  let a = c[0];
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i] / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

/**
 * Q(a, x) = Γ(a, x) / Γ(a): the series for P below x < a + 1, else Lentz's continued fraction
 * (Numerical Recipes §6.2).
 */
function gammaQ(a: number, x: number): number {
  const lnPre = a * Math.log(x) - x - lnGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 1000; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * 1e-16) break;
    }
    return Math.max(0, 1 - sum * Math.exp(lnPre));
  }
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(lnPre) * h;
}
