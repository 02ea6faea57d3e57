/**
 * "Stop to idle" during a long prefill (issue 16's measure): start a generation with a long prompt
 * (default 1,500 pseudo-random tokens), call `abort()` on its signal after a while (default 1 s), and time
 * from that call to the request's promise settling, the engine free for the next request. Works on any
 * {@link Engine} (the page's WorkerEngine, WebGpuEngine in Node or a page); times are the caller's clock.
 * Our engine checks the signal between prefill batches, so the figure is at most about one batch's time
 * (batches aim at ~100 ms; see src/webgpu/model/prefill.ts); before issue 16 it was the rest of the
 * prefill.
 */
import type { Engine, EngineStats, FinishReason, ModelInfo } from '../core/types.ts';
import { benchTokenIds } from '../util/prng.ts';

/** Options of {@link measureStopToIdle}. */
export interface StopToIdleOptions {
  /** Prompt length in tokens (default 1500; at most the context length − 2). */
  promptTokens?: number;
  /** When to call abort(), ms after the request was made (default 1000). */
  abortAfterMs?: number;
  /** Seed of the prompt's pseudo-random token ids (default 16). */
  seed?: number;
}

/** What {@link measureStopToIdle} measured. */
export interface StopToIdleResult {
  promptTokens: number;
  /** ms from the request to the abort() call (≥ abortAfterMs: a timer). */
  abortAtMs: number;
  /** ms from abort() to the promise settling; null when the request ended before the abort. */
  stopToIdleMs: number | null;
  /** ms from the request to the promise settling. */
  totalMs: number;
  finishReason: FinishReason;
  outputTokens: number;
  /** The abort landed during the prefill: finishReason 'aborted' with no output token. */
  duringPrefill: boolean;
  /**
   * Our engine's prefill record after the request (`EngineStats.prefill`: tokens done, batches), where the
   * engine keeps one; with it `meanBatchMs`, the prefill's ms per batch run.
   */
  prefill?: EngineStats['prefill'];
  meanBatchMs?: number;
}

/** The Stop test's prompt: `n` token ids in [1, nVocab) ({@link benchTokenIds}, seed 16 unless given). */
export function stopPromptIds(n: number, nVocab: number, seed = 16): number[] {
  return benchTokenIds(n, nVocab, seed);
}

/**
 * Measures the time from Stop (AbortController.abort()) to idle during a long prefill on a loaded
 * `engine` (`info`: its ModelInfo, for the vocabulary and context). One request, greedy, at most 4 output
 * tokens (so a prefill that ends before the abort ends soon after, with `duringPrefill` false and
 * `stopToIdleMs` null). The engine is idle when this resolves.
 * @throws what `engine.generate` throws other than an abort (e.g. 'not_loaded').
 */
export async function measureStopToIdle(
  engine: Engine,
  info: Pick<ModelInfo, 'nVocab' | 'contextLength'>,
  opts: StopToIdleOptions = {},
): Promise<StopToIdleResult> {
  const promptTokens = Math.max(1, Math.min(opts.promptTokens ?? 1500, info.contextLength - 2));
  const ids = stopPromptIds(promptTokens, info.nVocab, opts.seed);
  const ac = new AbortController();
  let tAbort: number | undefined;
  const t0 = performance.now();
  const timer = setTimeout(() => {
    tAbort = performance.now();
    ac.abort();
  }, opts.abortAfterMs ?? 1000);
  let r: Awaited<ReturnType<Engine['generate']>>;
  try {
    r = await engine.generate({ promptTokenIds: ids, maxTokens: 4, ignoreEos: true }, undefined, ac.signal);
  } finally {
    clearTimeout(timer);
  }
  const tEnd = performance.now();
  const prefill = (await engine.stats()).prefill;
  const duringPrefill = r.finishReason === 'aborted' && r.outputTokenIds.length === 0;
  return {
    promptTokens,
    abortAtMs: tAbort === undefined ? tEnd - t0 : tAbort - t0,
    stopToIdleMs: tAbort === undefined ? null : tEnd - tAbort,
    totalMs: tEnd - t0,
    finishReason: r.finishReason,
    outputTokens: r.outputTokenIds.length,
    duringPrefill,
    ...(prefill
      ? { prefill, meanBatchMs: prefill.batches > 0 ? prefill.ms / prefill.batches : undefined }
      : {}),
  };
}
