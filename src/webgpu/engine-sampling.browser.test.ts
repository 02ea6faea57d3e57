/**
 * Sampled decode through the engine (stories260K): the GPU sampler (default) against the CPU reference
 * path (`sampling: 'cpu'`, which reads back the logits every step and uses `Sampler` with the keyed PRNG):
 * the same seed gives the same tokens on both paths, with and without a repetition penalty (whose history
 * the GPU keeps in its own ring), and returnLogits still returns every step's logits.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';

const MODEL_URL = stories260kUrl();

describe('GPU sampling in the engine', () => {
  const gpu = new WebGpuEngine({ openModel: openModelSource });
  const cpu = new WebGpuEngine({ openModel: openModelSource, sampling: 'cpu' });
  beforeAll(async () => {
    await gpu.load({ url: MODEL_URL }, { contextLength: 128 });
    await cpu.load({ url: MODEL_URL }, { contextLength: 128 });
  });
  afterAll(async () => {
    await gpu.dispose();
    await cpu.dispose();
  });

  const base: GenerateRequest = { prompt: 'Once upon a time', maxTokens: 48, ignoreEos: true };
  for (const params of [
    { temperature: 0.8, topP: 0.95, seed: 42 },
    { temperature: 1.2, topK: 40, minP: 0.05, repetitionPenalty: 1.3, repetitionLastN: 16, seed: 7 },
    { temperature: 0, repetitionPenalty: 1.5, repetitionLastN: 8 },
  ]) {
    it(`gives the CPU reference's tokens (${JSON.stringify(params)})`, async () => {
      const a = await gpu.generate({ ...base, ...params });
      const b = await cpu.generate({ ...base, ...params });
      expect(a.outputTokenIds.length).toBe(48);
      expect(a.outputTokenIds).toEqual(b.outputTokenIds);
      if (params.seed !== undefined) {
        const c = await gpu.generate({ ...base, ...params, seed: params.seed + 1 });
        expect(c.outputTokenIds).not.toEqual(a.outputTokenIds);
      }
    });
  }

  it('returns every step’s logits with returnLogits, and the same tokens', async () => {
    const req = { ...base, maxTokens: 12, temperature: 0.9, seed: 3, returnLogits: true };
    const la: Float32Array[] = [];
    const lb: Float32Array[] = [];
    const a = await gpu.generate(req, (e) => e.logits && la.push(e.logits));
    const b = await cpu.generate(req, (e) => e.logits && lb.push(e.logits));
    expect(a.outputTokenIds).toEqual(b.outputTokenIds);
    expect(la.length).toBe(12);
    for (let i = 0; i < la.length; i++) expect(Array.from(la[i])).toEqual(Array.from(lb[i]));
  });
});
