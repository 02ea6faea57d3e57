/**
 * The chained decode loop with several steps in flight (decoder.ts `chainedTokens`, issue 40) on
 * stories260K through the engine: greedy output equals llama.cpp's (tests/golden) with 1 and 3 steps
 * in flight; sampled output equals the CPU reference sampler's (`sampling: 'cpu'`, one step at a time);
 * it stops exactly at maxTokens, where the consumer stops (as at EOS), and at the context's end; an abort
 * mid-chain leaves the engine giving the same output again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { isEngineError } from '../core/errors.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { chainedTokens, DEFAULT_IN_FLIGHT } from './decoder.ts';
import { WebGpuEngine } from './engine.ts';

const MODEL_URL = stories260kUrl();
const N_CTX = 96;

describe('chained decode with steps in flight (stories260K)', () => {
  const engines = new Map<number, WebGpuEngine>();
  const cpu = new WebGpuEngine({ openModel: openModelSource, sampling: 'cpu' });
  const at = (d: number) => engines.get(d)!;
  beforeAll(async () => {
    for (const d of [1, 3]) {
      const e = new WebGpuEngine({ openModel: openModelSource, decodeInFlight: d });
      await e.load({ url: MODEL_URL }, { contextLength: N_CTX });
      engines.set(d, e);
    }
    await cpu.load({ url: MODEL_URL }, { contextLength: N_CTX });
  });
  afterAll(async () => {
    for (const e of engines.values()) await e.dispose();
    await cpu.dispose();
  });

  it('defaults to 3 steps in flight', () => {
    expect(DEFAULT_IN_FLIGHT).toBe(3);
  });

  it('greedy output equals llama.cpp with 1 and 3 steps in flight', async () => {
    for (const c of golden.generationF16.cases.slice(0, 3)) {
      const n = Math.min(c.outputIds.length, N_CTX - c.promptIds.length);
      for (const d of [1, 3]) {
        const r = await at(d).generate({ promptTokenIds: c.promptIds, maxTokens: n, ignoreEos: true });
        expect(r.outputTokenIds, `${JSON.stringify(c.prompt)} inFlight ${d}`).toEqual(
          c.outputIds.slice(0, n),
        );
        expect(r.finishReason).toBe('length');
      }
    }
  });

  it('sampled output (seeded) equals the CPU reference sampler with every depth', async () => {
    const req = { prompt: 'Once upon a time', maxTokens: 40, ignoreEos: true, temperature: 0.8, topP: 0.95 };
    for (const seed of [42, 7]) {
      const want = (await cpu.generate({ ...req, seed })).outputTokenIds;
      expect(want.length).toBe(40);
      for (const d of [1, 3])
        expect((await at(d).generate({ ...req, seed })).outputTokenIds, `seed ${seed} inFlight ${d}`).toEqual(
          want,
        );
    }
  });

  it('stops exactly at maxTokens', async () => {
    const ids = golden.generationF16.cases[0];
    for (const n of [1, 2, 3, 4, 5, 9]) {
      const events: number[] = [];
      const r = await at(3).generate({ promptTokenIds: ids.promptIds, maxTokens: n, ignoreEos: true }, (e) =>
        events.push(e.tokenId),
      );
      expect(r.outputTokenIds).toEqual(ids.outputIds.slice(0, n));
      expect(events).toEqual(ids.outputIds.slice(0, n));
      expect(r.finishReason).toBe('length');
    }
  });

  it('stops exactly at the token a consumer stops at (as generation does at EOS), then runs on', async () => {
    // stories260K almost never emits EOS (none in 24 sampled 88-token runs), so a golden token stands in
    // for it: generation.ts leaves the loop at EOS exactly as this consumer does at stopId.
    const c = golden.generationF16.cases[0];
    const model = at(3).llama!;
    for (const j of [0, 1, 2, 7]) {
      const stopId = c.outputIds[j];
      const first = c.outputIds.indexOf(stopId);
      model.prefillTokens(c.promptIds, 0);
      const got: number[] = [];
      for await (const { id } of chainedTokens(model, { pos: c.promptIds.length, maxTokens: 40 })) {
        got.push(id);
        if (id === stopId) break;
      }
      expect(got, `stop at ${stopId}`).toEqual(c.outputIds.slice(0, first + 1));
      const again = await at(3).generate({ promptTokenIds: c.promptIds, maxTokens: 12, ignoreEos: true });
      expect(again.outputTokenIds).toEqual(c.outputIds.slice(0, 12));
    }
  });

  it('stops at the context’s end with steps in flight up to it', async () => {
    const c = golden.generationF16.cases[0];
    const nPrompt = c.promptIds.length;
    // The engine asks for at most nCtx − nPrompt tokens.
    const one = await at(1).generate({ promptTokenIds: c.promptIds, maxTokens: 500, ignoreEos: true });
    const three = await at(3).generate({ promptTokenIds: c.promptIds, maxTokens: 500, ignoreEos: true });
    expect(three.outputTokenIds.length).toBe(N_CTX - nPrompt);
    expect(three.outputTokenIds).toEqual(one.outputTokenIds);
    expect(three.outputTokenIds.slice(0, 64)).toEqual(c.outputIds);
    // The loop itself: token k is fed at nPrompt + k, the last one fed at nCtx − 1, so nCtx − nPrompt + 1
    // tokens, and no step is submitted past the context (that would throw context_overflow).
    const model = at(3).llama!;
    model.prefillTokens(c.promptIds, 0);
    const got: number[] = [];
    for await (const { id } of chainedTokens(model, { pos: nPrompt, maxTokens: 500 })) got.push(id);
    expect(got.length).toBe(N_CTX - nPrompt + 1);
    expect(got.slice(0, -1)).toEqual(three.outputTokenIds);
  });

  it('an abort mid-chain ends with the tokens so far and leaves the engine usable', async () => {
    const c = golden.generationF16.cases[1];
    for (const after of [1, 2, 5]) {
      const ac = new AbortController();
      let seen = 0;
      const r = await at(3).generate(
        { promptTokenIds: c.promptIds, maxTokens: 40, ignoreEos: true },
        () => {
          if (++seen === after) ac.abort();
        },
        ac.signal,
      );
      expect(r.finishReason).toBe('aborted');
      expect(r.outputTokenIds).toEqual(c.outputIds.slice(0, r.outputTokenIds.length));
      expect(r.outputTokenIds.length).toBeGreaterThanOrEqual(after);
      expect(r.outputTokenIds.length).toBeLessThan(40);
      const again = await at(3).generate({ promptTokenIds: c.promptIds, maxTokens: 40, ignoreEos: true });
      expect(again.outputTokenIds).toEqual(c.outputIds.slice(0, 40));
    }
  });

  it('rejects an inFlight out of range with invalid_argument', () => {
    for (const bad of [0, 4, 1.5, Number.NaN]) {
      let err: unknown;
      try {
        new WebGpuEngine({ openModel: openModelSource, decodeInFlight: bad });
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err) && err.code, String(bad)).toBe('invalid_argument');
    }
  });
});
