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
 * `KernelOverrides.smallBatch`), the timed trial (with its rows), an earlier load's trial of the same model
 * and kernels on this adapter (`cached`, its rows kept; {@link smallBatchTrialKey}), or off because mmv
 * runs no decode matmul (`unavailable`).
 */
export interface SmallBatchChoice {
  maxTokens: number;
  chosenBy: 'option' | 'adapter' | 'trial' | 'cached' | 'unavailable';
  trials?: SmallBatchTrial[];
}

/** Trials' outcomes by {@link smallBatchTrialKey}, for this page's (or process's) later loads. */
const trialCache = new Map<string, { maxTokens: number; trials: SmallBatchTrial[] }>();

/**
 * What a small-batch trial's outcome depends on, as a key: the adapter, the model's shape and every
 * tensor's ggml type, the KV cache types and the kernel plan (mmv layouts, prefill kernels, attention,
 * planes), as the mmv and tile trials are remembered per adapter and shape (kernels/tune.ts).
 * @param adapter GpuContext.info's identity; @param plan the resolved plan without `chosen`.
 */
export function smallBatchTrialKey(
  adapter: { vendor: string; architecture: string; device?: string; description?: string },
  shape: object,
  tensorTypes: Iterable<[string, string]>,
  kv: object,
  plan: object,
): string {
  const a = `${adapter.vendor}|${adapter.architecture}|${adapter.device ?? ''}|${adapter.description ?? ''}`;
  const types = [...tensorTypes].map(([n, t]) => `${n}:${t}`).join(',');
  return `${a}|${JSON.stringify(shape)}|${types}|${JSON.stringify(kv)}|${JSON.stringify(plan)}`;
}

/** The remembered outcome of a trial with this key, if any. */
export function cachedSmallBatch(key: string): { maxTokens: number; trials: SmallBatchTrial[] } | undefined {
  const hit = trialCache.get(key);
  return hit && { maxTokens: hit.maxTokens, trials: hit.trials.map((t) => ({ ...t })) };
}

/** Remembers a load's trial outcome under `key` (its choice and rows). */
export function rememberSmallBatch(
  key: string,
  choice: { maxTokens: number; trials?: SmallBatchTrial[] },
): void {
  trialCache.set(key, { maxTokens: choice.maxTokens, trials: (choice.trials ?? []).map((t) => ({ ...t })) });
}

/** Forgets every remembered trial (tests). */
export function clearSmallBatchTrials(): void {
  trialCache.clear();
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
