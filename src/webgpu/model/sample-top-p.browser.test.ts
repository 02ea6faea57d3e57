/**
 * The GPU sampler's top-p candidates passes (kernels/sample.ts `sampleTopPWGSL`) as the model plans and
 * binds them: sampled decode on a seeded random llama with a 3,001-token vocabulary (3 stripes) gives the
 * same ids with the passes planned (`gpuPlan()`, as on a GPU) as without them (`sampleTopP: false`, as on
 * a software adapter), at top-p 0.5 and 0.95 with top-k off, with a repetition penalty. The kernels
 * themselves are tested against the CPU sampler in kernels/sample.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { gpuPlan } from '../kernel-plan.ts';
import { LlamaModel } from './llama.ts';

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

describe('top-p candidates passes in the model', () => {
  it('give the ids of the vocabulary path through sampled decode', async () => {
    const bytes = makeRandomLlamaGguf({
      seed: 40,
      nLayers: 1,
      nEmbd: 32,
      nFF: 48,
      nHead: 2,
      nHeadKv: 2,
      nVocab: 3001,
    });
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const cfg = llamaConfigFromGguf(file);
    const prompt = [1, 17, 523, 2048, 9, 3000];
    const steps = 12;
    const load = (sampleTopP: boolean) =>
      LlamaModel.load(gpu.device, file, cfg, {
        contextLength: 32,
        batchSize: 8,
        plan: gpuPlan({ sampleTopP }),
      });
    const run = async (model: LlamaModel, topP: number): Promise<number[]> => {
      await model.prefill(prompt, 0);
      const settings = {
        temperature: 0.8,
        topK: 0,
        topP,
        minP: 0,
        repetitionPenalty: 1.3,
        repetitionLastN: 16,
      };
      await model.startSampling(settings, 1234, prompt);
      model.submitReadback({ sample: 0, slot: 0, feedBack: true });
      const ids = [await model.readToken(0)];
      for (let n = 1; n < steps; n++) {
        model.submitDecode(prompt.length + n - 1, { sample: n, slot: 0, feedBack: true });
        ids.push(await model.readToken(0));
      }
      return ids;
    };
    const passes = await load(true);
    const vocab = await load(false);
    try {
      for (const topP of [0.5, 0.95]) {
        const a = await run(passes, topP);
        expect(a.length).toBe(steps);
        expect(a.every((id) => id >= 0 && id < 3001)).toBe(true);
        expect(a, `top-p ${topP}`).toEqual(await run(vocab, topP));
      }
    } finally {
      passes.destroy();
      vocab.destroy();
    }
  });
});
