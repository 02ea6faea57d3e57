/**
 * Stop during the prompt's prefill (issue 16), through the engine on stories260K: the prefill runs in
 * batches that the request's AbortSignal stops between, the request ends 'aborted' with no tokens, and
 * the next generation equals llama.cpp's greedy tokens. Also the default batch size and its record in
 * ModelInfo.
 */

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { measureStopToIdle } from '../bench/stop-latency.ts';
import type { ModelInfo } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';
import type { LlamaModel } from './model/llama.ts';
import { defaultBatchSize } from './model/prefill.ts';

const MODEL_URL = stories260kUrl();
/** The golden case with the longest prompt (385 tokens), and a short one. */
const LONG = golden.generationF16.cases.reduce((a, c) => (c.promptIds.length > a.promptIds.length ? c : a));
const SHORT = golden.generationF16.cases[0];

/** Runs `body` with `model.prefill` calling `onBatch` after each of its batches (the engine's own too). */
async function withBatchHook<T>(
  model: LlamaModel,
  onBatch: (done: number, tokens: number) => void,
  body: () => Promise<T>,
): Promise<T> {
  const orig = model.prefill.bind(model);
  const spy = vi.spyOn(model, 'prefill').mockImplementation((ids, pos0, opts = {}) =>
    orig(ids, pos0, {
      ...opts,
      onBatch: (done, tokens, ms) => {
        opts.onBatch?.(done, tokens, ms);
        onBatch(done, tokens);
      },
    }),
  );
  try {
    return await body();
  } finally {
    spy.mockRestore();
  }
}

describe('WebGpuEngine: Stop during prefill', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  let info: ModelInfo;
  beforeAll(async () => {
    info = await engine.load({ url: MODEL_URL }, { contextLength: 512 });
  }, 180_000);
  afterAll(() => engine.dispose());

  it('records the batch size: the adapter default (64 on a software adapter, ≤ 512 on a GPU)', () => {
    const gpu = engine.gpuContext!;
    const cfg = engine.llama!.cfg;
    expect(LONG.promptIds.length).toBeGreaterThan(300);
    expect(info.batchSize).toBe(engine.llama?.batchSize);
    expect(info.batchSize).toBe(
      defaultBatchSize({
        isFallback: gpu.info.isFallback,
        contextLength: 512,
        maxStorageBufferBindingSize: gpu.device.limits.maxStorageBufferBindingSize,
        maxBufferSize: gpu.device.limits.maxBufferSize,
        nEmbd: cfg.nEmbd,
        nFF: cfg.nFF,
        nVocab: cfg.nVocab,
        qDim: cfg.nHead * cfg.headDim,
      }),
    );
    if (gpu.info.isFallback) expect(info.batchSize).toBe(64);
    else expect(info.batchSize).toBeGreaterThanOrEqual(256);
  });

  it('an abort after the first batch ends the request there: aborted, no tokens; then exact', async () => {
    const model = engine.llama!;
    const ac = new AbortController();
    const batches: number[] = [];
    const tokens: number[] = [];
    const r = await withBatchHook(
      model,
      (_done, T) => {
        batches.push(T);
        ac.abort();
      },
      () =>
        engine.generate(
          { promptTokenIds: LONG.promptIds, maxTokens: 16, ignoreEos: true },
          (e) => tokens.push(e.tokenId),
          ac.signal,
        ),
    );
    expect(r.finishReason).toBe('aborted');
    expect(r.outputTokenIds).toEqual([]);
    expect(r.text).toBe('');
    expect(tokens).toEqual([]);
    expect(batches).toHaveLength(1);
    // The prompt needs more batches than that, even at full size.
    expect(LONG.promptIds.length).toBeGreaterThan(batches[0]);
    expect(Math.ceil(LONG.promptIds.length / model.batchSize)).toBeGreaterThan(1);
    const s = await engine.stats();
    expect(s.prefill).toMatchObject({
      tokens: LONG.promptIds.length,
      done: batches[0],
      batches: 1,
      state: 'aborted',
    });
    // Usable, and exact: the long prompt again (its KV rows were left half written), then a short one.
    const again = await engine.generate({ promptTokenIds: LONG.promptIds, maxTokens: 24, ignoreEos: true });
    expect(again.finishReason).toBe('length');
    expect(again.outputTokenIds).toEqual(LONG.outputIds.slice(0, 24));
    expect((await engine.stats()).prefill).toMatchObject({
      tokens: LONG.promptIds.length,
      done: LONG.promptIds.length,
      state: 'done',
    });
    const short = await engine.generate({ promptTokenIds: SHORT.promptIds, maxTokens: 16, ignoreEos: true });
    expect(short.outputTokenIds).toEqual(SHORT.outputIds.slice(0, 16));
  });

  it('chat: a Stop while the prefill runs (seen in stats) ends it between batches', async () => {
    const ac = new AbortController();
    let hooked = 0;
    // Batches of one tile, so the prompt takes many; the abort comes from outside the prefill loop
    // (a timer polling the engine's stats, as a page's Stop button would), not from its callback.
    const model = engine.llama!;
    const orig = model.prefill.bind(model);
    const spy = vi
      .spyOn(model, 'prefill')
      .mockImplementation((ids, pos0, opts = {}) => orig(ids, pos0, { ...opts, targetBatchMs: 0 }));
    try {
      const content = LONG.prompt;
      const pending = engine.chat(
        { messages: [{ role: 'user', content }], maxTokens: 8, ignoreEos: true },
        () => hooked++,
        ac.signal,
      );
      for (;;) {
        const p = (await engine.stats()).prefill;
        if (p?.state === 'running' && p.batches >= 1) break;
        await new Promise((r) => setTimeout(r, 0));
      }
      ac.abort();
      const r = await pending;
      expect(r.finishReason).toBe('aborted');
      expect(r.outputTokenIds).toEqual([]);
      expect(hooked).toBe(0);
      const p = (await engine.stats()).prefill!;
      expect(p.state).toBe('aborted');
      expect(p.done).toBeLessThan(p.tokens);
    } finally {
      spy.mockRestore();
    }
    const again = await engine.generate({ promptTokenIds: SHORT.promptIds, maxTokens: 16, ignoreEos: true });
    expect(again.outputTokenIds).toEqual(SHORT.outputIds.slice(0, 16));
  });

  it('measureStopToIdle (the benchmark piece) on the real engine', async () => {
    // 510 tokens, the abort at the first timer tick: on a software adapter the prefill is then running.
    const r = await measureStopToIdle(engine, info, { abortAfterMs: 0 });
    expect(r.promptTokens).toBe(510);
    console.log(`stop to idle: ${JSON.stringify(r)}`);
    if (engine.gpuContext?.info.isFallback) {
      expect(r.duringPrefill).toBe(true);
      expect(r.stopToIdleMs).not.toBeNull();
      expect(r.prefill?.state).toBe('aborted');
      expect(r.prefill!.done).toBeLessThan(510);
    }
    const again = await engine.generate({ promptTokenIds: SHORT.promptIds, maxTokens: 16, ignoreEos: true });
    expect(again.outputTokenIds).toEqual(SHORT.outputIds.slice(0, 16));
  });

  it('an abort before the request ends it at once: aborted, no prefill at all', async () => {
    const before = (await engine.stats()).prefill;
    const ac = new AbortController();
    ac.abort();
    const r = await engine.generate({ promptTokenIds: LONG.promptIds, maxTokens: 8 }, undefined, ac.signal);
    expect(r.finishReason).toBe('aborted');
    expect(r.outputTokenIds).toEqual([]);
    expect((await engine.stats()).prefill).toEqual(before);
  });
});
