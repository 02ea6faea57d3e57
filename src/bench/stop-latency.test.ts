import { describe, expect, it } from 'vitest';
import type { Engine, EngineStats, GenerateRequest, GenerateResult } from '../core/types.ts';
import { measureStopToIdle, stopPromptIds } from './stop-latency.ts';

/** An engine whose prefill is `batches` timer ticks of `batchMs`, checking the signal between them. */
function fakeEngine(batchMs: number, tokensPerBatch: number): Engine & { seen?: GenerateRequest } {
  let stats: EngineStats = {};
  const e = {
    seen: undefined as GenerateRequest | undefined,
    async generate(req: GenerateRequest, _cb?: unknown, signal?: AbortSignal): Promise<GenerateResult> {
      e.seen = req;
      const n = req.promptTokenIds!.length;
      const p = { tokens: n, done: 0, batches: 0, ms: 0, state: 'running' as const };
      stats = { prefill: p };
      const t0 = performance.now();
      const base = { promptTokenIds: req.promptTokenIds!, text: '', tStartMs: t0, tokenTimesMs: [] };
      while (p.done < n) {
        if (signal?.aborted) {
          stats = { prefill: { ...p, state: 'aborted' } };
          return { ...base, outputTokenIds: [], finishReason: 'aborted' };
        }
        await new Promise((r) => setTimeout(r, batchMs));
        p.done = Math.min(n, p.done + tokensPerBatch);
        p.batches++;
        p.ms = performance.now() - t0;
      }
      stats = { prefill: { ...p, state: 'done' } };
      return { ...base, outputTokenIds: [1, 2, 3, 4], finishReason: 'length', tokenTimesMs: [0, 0, 0, 0] };
    },
    async stats() {
      return structuredClone(stats);
    },
  };
  return e as unknown as Engine & { seen?: GenerateRequest };
}

describe('measureStopToIdle', () => {
  it('times abort() to the promise settling during a long prefill', async () => {
    const engine = fakeEngine(20, 10);
    const r = await measureStopToIdle(engine, { nVocab: 100, contextLength: 4096 }, { abortAfterMs: 70 });
    expect(r.promptTokens).toBe(1500);
    expect(engine.seen?.promptTokenIds).toEqual(stopPromptIds(1500, 100));
    expect(r.duringPrefill).toBe(true);
    expect(r.finishReason).toBe('aborted');
    expect(r.abortAtMs).toBeGreaterThanOrEqual(69);
    // The fake checks its signal every 20 ms.
    expect(r.stopToIdleMs).not.toBeNull();
    expect(r.stopToIdleMs!).toBeGreaterThanOrEqual(0);
    expect(r.stopToIdleMs!).toBeLessThan(r.totalMs);
    expect(r.prefill?.state).toBe('aborted');
    expect(r.prefill!.done).toBeLessThan(1500);
    expect(r.meanBatchMs).toBeGreaterThan(0);
  });

  it('says so when the request ended before the abort, and fits the prompt to the context', async () => {
    const engine = fakeEngine(1, 1000);
    const r = await measureStopToIdle(engine, { nVocab: 50, contextLength: 1000 }, { abortAfterMs: 5000 });
    expect(r.promptTokens).toBe(998);
    expect(r.duringPrefill).toBe(false);
    expect(r.stopToIdleMs).toBeNull();
    expect(r.finishReason).toBe('length');
    expect(stopPromptIds(998, 50).every((id) => id >= 1 && id < 50)).toBe(true);
  });
});
