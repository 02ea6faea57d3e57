/**
 * The bench worker (`workers/bench.worker.ts`) behind comlink, as the benchmark page and `npm run bench`
 * use it: the engine API and llama-bench on one engine, EngineError codes and cancellation across the
 * boundary.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import type { LlamaBenchProgress } from './llama-bench-gpu.ts';
import { BenchWorkerEngine } from './worker-api.ts';

describe('BenchWorkerEngine (workers/bench.worker.ts over comlink)', () => {
  const engine = new BenchWorkerEngine(
    new Worker(new URL('../../workers/bench.worker.ts', import.meta.url), { type: 'module' }),
  );
  afterAll(() => engine.terminate());
  const plan = { nPrompt: [8], nGen: [4], depths: [0], reps: 1 };

  it('llamaBench before a load is not_loaded', async () => {
    const e = await engine.llamaBench({ plan, profile: false }).catch((x) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('not_loaded');
  });

  it('runs llama-bench tests with progress on the loaded model, then still generates', async () => {
    await engine.load({ synthetic: 'synthetic:stories260k-f32' }, { contextLength: 64, batchSize: 16 });
    const seen: LlamaBenchProgress[] = [];
    const res = await engine.llamaBench({ plan, profile: false }, (p) => seen.push(p));
    expect(res.tests.map((t) => t.name)).toEqual(['pp8', 'tg4']);
    expect(res.gpu).toBeUndefined();
    expect(seen.length).toBeGreaterThan(0);
    const r = await engine.generate({ prompt: 'Once', maxTokens: 3, ignoreEos: true });
    expect(r.outputTokenIds).toHaveLength(3);
  });

  it('aborting the signal mid-run cancels llamaBench (aborted), and the engine stays usable', async () => {
    const ac = new AbortController();
    const e = await engine
      .llamaBench({ plan: { ...plan, reps: 50 }, profile: false }, () => ac.abort(), ac.signal)
      .catch((x) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('aborted');
    expect(await engine.tokenize('Once')).not.toHaveLength(0);
  });
});
