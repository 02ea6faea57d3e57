/**
 * Small batches through the matrix × vector kernels (kernel-plan.ts `KernelPlan.smallBatch`): how many
 * tokens a batch may have to run the layers' matmuls through the decode mmv kernels instead of the prefill
 * tile, and the load's timed trial that decides it on GPUs ({@link chooseSmallBatch}). llama.cpp does the
 * same for batches of ≤ 8 tokens (CUDA `MMVQ_MAX_BATCH_SIZE` = 8, Vulkan `mul_mat_vec_max_cols`): a tile
 * of 32 × 64 (or 64 × 128) leaves most of a GPU idle on a few tokens, while a matrix × vector kernel reads
 * the weights once for all of them. Users: speculative decoding's verify pass (the last accepted token and
 * the drafts) and a short prompt's prefill (a chat turn of a few tokens: its TTFT).
 */

/** The most tokens a small batch may have (llama.cpp's `MMVQ_MAX_BATCH_SIZE`). */
export const SMALL_BATCH_MAX = 8;

/** The batch sizes the load's trial times both ways (a whole forward pass each). */
export const SMALL_BATCH_TRIAL_TOKENS: readonly number[] = [4, 8];

/** Untimed runs before a trial's timed ones, and timed runs (their median counts). */
export const SMALL_BATCH_TRIAL_RUNS = { warmup: 2, reps: 5 };

/** One trial row: a whole forward pass of `tokens` tokens, median ms through mmv and through the prefill tile. */
export interface SmallBatchTrial {
  tokens: number;
  mmvMs: number;
  tileMs: number;
}

/**
 * How a load's small batches run (`ModelInfo.kernels.smallBatch`): batches of 2 … `maxTokens` tokens
 * through mmv (0: none), chosen by the option, the adapter's default (off on software adapters: kernel-plan.ts
 * `KernelOverrides.smallBatch`), the timed trial (with its rows), or off because mmv runs no decode matmul (`unavailable`).
 */
export interface SmallBatchChoice {
  maxTokens: number;
  chosenBy: 'option' | 'adapter' | 'trial' | 'unavailable';
  trials?: SmallBatchTrial[];
}

/**
 * The trial's choice: the largest trialled batch size up to which mmv was faster at every trialled size
 * (4 and 8 by default: mmv faster at both → 8, at 4 only → 4, else 0: every batch through the prefill
 * kernels). A non-finite time (a failed run) counts as slower.
 * @param trials rows in any order.
 */
export function chooseSmallBatch(trials: readonly SmallBatchTrial[]): number {
  let max = 0;
  for (const t of [...trials].sort((a, b) => a.tokens - b.tokens)) {
    if (!(Number.isFinite(t.mmvMs) && (t.mmvMs < t.tileMs || !Number.isFinite(t.tileMs)))) break;
    max = t.tokens;
  }
  return Math.min(max, SMALL_BATCH_MAX);
}

/** The median of `xs` (non-empty). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
