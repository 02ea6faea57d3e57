/**
 * Quality checks, so that speed is never bought with wrong output: perplexity over a fixed text
 * (teacher-forced, the field's `llama-perplexity`) and top-1 agreement with a reference run.
 *
 * Windows. `ids` is the tokenized text with BOS first. When it fits in the context (`ids.length ≤ ctx`)
 * there is one window and every token after BOS is scored: perplexity = exp(mean NLL of ids[1..]).
 * A longer text is scored in windows of `ctx` tokens that start with BOS and advance by half a window
 * (stride ⌊ctx/2⌋): the first window scores all its tokens, every later one only the tokens it adds
 * (its last stride tokens), seeing the ctx − 1 − stride text tokens before them as context. So every
 * token after BOS is scored exactly once, all but the first window's with at least ⌈ctx/2⌉ − 1 tokens of
 * context. (llama.cpp's `llama-perplexity` instead cuts the tokens into disjoint chunks of ctx, puts BOS
 * over the first token of each, scores only the second half of each chunk and drops the remainder, and
 * needs at least 2·ctx tokens; its `--ppl-stride` mode is closer to ours.) Without BOS (`bos`
 * undefined) windows are plain slices and ids[0] is the first scored position's context.
 */

/** One window: the tokens fed, and which of its predictions count. */
export interface PerplexityWindow {
  /** Token ids fed to the model (BOS first where there is one), length ≤ ctx. */
  ids: number[];
  /** Index into the window's NLL array (position p predicts ids[p + 1]) of the first scored prediction. */
  scoreFrom: number;
  /** Index in the full sequence of the first token this window scores. */
  firstTarget: number;
}

/**
 * Splits a token sequence into scoring windows (see the module comment).
 * @param ids the whole text's tokens, BOS first when `bos` is given.
 * @param ctx window length in tokens, ≥ 2.
 * @param bos the BOS id every later window starts with (undefined: none).
 */
export function perplexityWindows(ids: readonly number[], ctx: number, bos?: number): PerplexityWindow[] {
  if (!Number.isInteger(ctx) || ctx < 2)
    throw new RangeError(`the context must be at least 2 tokens, got ${ctx}`);
  const n = ids.length;
  if (n < 2) throw new RangeError('perplexity needs at least two tokens');
  const prefix = bos === undefined ? [] : [bos];
  const P = prefix.length;
  if (P && ids[0] !== bos) throw new RangeError(`the sequence must start with BOS (${bos}), not ${ids[0]}`);
  const windows: PerplexityWindow[] = [{ ids: ids.slice(0, Math.min(n, ctx)), scoreFrom: 0, firstTarget: 1 }];
  const stride = Math.max(1, Math.floor(ctx / 2));
  let a = Math.min(n, ctx); // first token not yet scored
  while (a < n) {
    const b = Math.min(n, a + stride);
    const c = Math.max(P, b - (ctx - P)); // first text token of the window
    windows.push({ ids: [...prefix, ...ids.slice(c, b)], scoreFrom: P + (a - c) - 1, firstTarget: a });
    a = b;
  }
  return windows;
}

/** Per-position scores of one window, as `WebGpuEngine.scoreTokens` returns them. */
export interface WindowScores {
  /** nll[p] = −ln P(ids[p + 1] | ids[0..p]). */
  nll: ArrayLike<number>;
  /** top1[p] = the model's most likely token after ids[0..p]. */
  top1: ArrayLike<number>;
}

/** Result of {@link perplexity}. */
export interface PerplexityResult {
  /** exp(mean NLL over the scored tokens). */
  perplexity: number;
  /** Number of scored tokens (every token after the first). */
  tokens: number;
  /** NLL of each scored token, in text order (token i + 1 of the sequence at index i). */
  nll: Float64Array;
  /** Top-1 prediction before each scored token (teacher-forced), in text order. */
  top1: Int32Array;
  /** Number of windows. */
  windows: number;
}

/**
 * Perplexity of `ids` under a model, scored window by window through `score`.
 * @param score runs one window and returns its per-position NLL and top-1 (e.g. `engine.scoreTokens`).
 */
export async function perplexity(
  ids: readonly number[],
  ctx: number,
  score: (windowIds: number[]) => Promise<WindowScores>,
  bos?: number,
): Promise<PerplexityResult> {
  const windows = perplexityWindows(ids, ctx, bos);
  const nll = new Float64Array(ids.length - 1);
  const top1 = new Int32Array(ids.length - 1);
  for (const w of windows) {
    const s = await score(w.ids);
    const count = w.ids.length - 1 - w.scoreFrom;
    for (let k = 0; k < count; k++) {
      nll[w.firstTarget - 1 + k] = s.nll[w.scoreFrom + k];
      top1[w.firstTarget - 1 + k] = s.top1[w.scoreFrom + k];
    }
  }
  return { perplexity: perplexityOf(nll), tokens: nll.length, nll, top1, windows: windows.length };
}

/** exp(mean of `nll`), summed in float64. */
export function perplexityOf(nll: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < nll.length; i++) s += nll[i];
  return Math.exp(s / nll.length);
}

/**
 * Top-1 agreement: the share of positions where our top-1 token equals a reference's (llama.cpp's, or
 * our own F32 run of the same weights), both teacher-forced over the same tokens.
 * @throws RangeError when the lengths differ or are zero.
 */
export function top1Agreement(ours: ArrayLike<number>, reference: ArrayLike<number>): number {
  if (ours.length !== reference.length || ours.length === 0) {
    throw new RangeError(
      `top-1 sequences of ${ours.length} and ${reference.length} positions cannot be compared`,
    );
  }
  let same = 0;
  for (let i = 0; i < ours.length; i++) if (ours[i] === reference[i]) same++;
  return same / ours.length;
}
