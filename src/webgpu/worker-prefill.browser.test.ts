/**
 * Stop during the prompt's prefill through the real engine worker (as the page's and the widget's Stop
 * do: the page's AbortSignal → `WorkerApi.cancel` → the worker's signal → the model's prefill loop, which
 * checks it between batches): the request ends 'aborted' with no tokens part-way through the prompt, and
 * the next generation equals llama.cpp's greedy tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { WorkerEngine } from '../core/worker-api.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';

const MODEL_URL = new URL(stories260kUrl(), location.href).href;
const LONG = golden.generationF16.cases.reduce((a, c) => (c.promptIds.length > a.promptIds.length ? c : a));
const SHORT = golden.generationF16.cases[0];

describe('WorkerEngine: Stop during prefill', () => {
  const engine = new WorkerEngine(
    new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
  );
  beforeAll(async () => {
    // Batches of at most 8 tokens, so the 385-token prompt takes ~49 of them even on a fast GPU.
    const info = await engine.load({ url: MODEL_URL }, { contextLength: 512, batchSize: 8 });
    expect(info.batchSize).toBe(8);
  }, 180_000);
  afterAll(() => engine.terminate());

  it('an abort while the prefill runs ends the request between batches; the next one is exact', async () => {
    const ac = new AbortController();
    const tokens: number[] = [];
    const pending = engine.generate(
      { promptTokenIds: LONG.promptIds, maxTokens: 16, ignoreEos: true },
      (e) => tokens.push(e.tokenId),
      ac.signal,
    );
    // The worker answers stats() between prefill batches: abort once the first batch is done.
    let seen: number | undefined;
    for (;;) {
      const p = (await engine.stats()).prefill;
      if (p?.tokens === LONG.promptIds.length && p.state === 'running' && p.batches >= 1) {
        seen = p.done;
        break;
      }
      if (p?.state === 'done') break;
    }
    ac.abort();
    const r = await pending;
    expect(seen, 'the prefill was seen running').toBeDefined();
    expect(r.finishReason).toBe('aborted');
    expect(r.outputTokenIds).toEqual([]);
    expect(tokens).toEqual([]);
    const p = (await engine.stats()).prefill!;
    expect(p.state).toBe('aborted');
    expect(p.done).toBeGreaterThanOrEqual(seen!);
    expect(p.done).toBeLessThan(LONG.promptIds.length);
    expect(p.batches).toBeLessThan(Math.ceil(LONG.promptIds.length / 8));

    const again = await engine.generate({ promptTokenIds: LONG.promptIds, maxTokens: 16, ignoreEos: true });
    expect(again.outputTokenIds).toEqual(LONG.outputIds.slice(0, 16));
    const short = await engine.generate({ promptTokenIds: SHORT.promptIds, maxTokens: 16, ignoreEos: true });
    expect(short.outputTokenIds).toEqual(SHORT.outputIds.slice(0, 16));
  });
});
