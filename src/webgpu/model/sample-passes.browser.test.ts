/**
 * The GPU sampler encodes only the passes a request needs (issue 40: kernels/sample.ts
 * `selectSamplePasses`, `LlamaModel.startSampling`): on a seeded random llama with a 3,001-token vocabulary
 * (3 stripes, so the candidates and top-p passes are planned; stories260K's 512 tokens are one stripe,
 * where only the draw is planned), seeded sampled and greedy decode gives the same ids as every planned
 * pass encoded (the path before), for each combination of temperature, top-k (off, on, past the
 * candidates' cap), top-p, min-p and the repetition penalty, with the top-p passes planned (a GPU's plan)
 * and not (a software adapter's); and the passes encoded are exactly `samplePassesNeeded`'s, and those
 * `ModelInfo.kernels.sampler` (kernel-plan.ts `describePlan`) reports for each kind of request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { describePlan, gpuPlan, PICK_REQUESTS } from '../kernel-plan.ts';
import { type SampleSettings, samplePassesNeeded } from '../kernels/sample.ts';
import { LlamaModel } from './llama.ts';

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const N_VOCAB = 3001;

describe('sampler passes chosen per request', () => {
  it('give the ids of every pass encoded, for each combination of parameters', async () => {
    const bytes = makeRandomLlamaGguf({
      seed: 41,
      nLayers: 1,
      nEmbd: 32,
      nFF: 48,
      nHead: 2,
      nHeadKv: 2,
      nVocab: N_VOCAB,
    });
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const cfg = llamaConfigFromGguf(file);
    const prompt = [1, 17, 523, 2048, 9, 3000, 17];
    const steps = 4;
    const run = async (
      model: LlamaModel,
      p: SampleSettings,
      passes: 'needed' | 'all',
    ): Promise<{ ids: number[]; roles: string[] }> => {
      await model.prefill(prompt, 0);
      await model.startSampling(p, 777, prompt, passes);
      const roles = model.samplerRoles;
      model.submitReadback({ sample: 0, slot: 0, feedBack: true });
      const ids = [await model.readToken(0)];
      for (let n = 1; n < steps; n++) {
        model.submitDecode(prompt.length + n - 1, { sample: n, slot: 0, feedBack: true });
        ids.push(await model.readToken(0));
      }
      return { ids, roles };
    };
    // [temperature, topK, topP, minP, repetition penalty]
    const combos: [number, number, number, number, number][] = [
      [0, 40, 1, 0, 1.3], // greedy with top-k: the draw's argmax over the candidates' list
      [0.9, 0, 1, 0.05, 1],
      [0.9, 0, 0.9, 0.02, 1.3],
      [0.9, 40, 0.9, 0.02, 1.3],
      [0.9, 300, 0.9, 0, 1.3], // past the candidates' cap: the vocabulary
    ];
    // A software adapter's plan (no top-p passes): top-p alone then needs only the draw.
    const softwareCombos = [combos[2], combos[3]];
    for (const sampleTopP of [true, false]) {
      const model = await LlamaModel.load(gpu.device, file, cfg, {
        contextLength: 32,
        batchSize: 8,
        plan: gpuPlan({ sampleTopP }),
      });
      try {
        await model.startSampling(settings(0.9, 0, 1, 0, 1), 1, [], 'all');
        const planned = model.samplerRoles;
        expect(planned).toEqual(
          sampleTopP
            ? ['candidates', 'top_p_max', 'top_p_mass', 'top_p_compact', 'draw']
            : ['candidates', 'draw'],
        );
        // ModelInfo.kernels reports these passes, the argmax's 3 stripes of 1,024, and for each kind of
        // request the passes startSampling then encodes.
        const k = describePlan(model);
        expect(k.argmax).toMatchObject({
          stripes: Math.ceil(N_VOCAB / 1024),
          stripe: 1024,
          finalWorkgroups: 1,
        });
        expect(k.sampler?.passes.map((p) => p.role)).toEqual(planned);
        expect(k.sampler?.passes.map((p) => p.workgroups)).toEqual(
          planned.map((r) => (r === 'draw' ? 1 : 3)),
        );
        expect(k.sampler?.topP.planned).toBe(sampleTopP);
        for (const kind of ['penalty', 'topK', 'topP', 'temperature'] as const) {
          await model.startSampling(PICK_REQUESTS[kind], 1, [], 'needed');
          expect(model.samplerRoles, kind).toEqual(k.sampler?.requests[kind]);
        }
        for (const c of sampleTopP ? combos : softwareCombos) {
          const p = settings(...c);
          const label = `sampleTopP ${sampleTopP}, ${JSON.stringify(p)}`;
          const needed = await run(model, p, 'needed');
          const all = await run(model, p, 'all');
          expect(needed.roles, label).toEqual(
            samplePassesNeeded(p, N_VOCAB).filter((r) => planned.includes(r)),
          );
          expect(needed.ids.every((id) => id >= 0 && id < N_VOCAB)).toBe(true);
          expect(needed.ids, label).toEqual(all.ids);
        }
      } finally {
        model.destroy();
      }
    }
  }, 300_000);
});

function settings(
  temperature: number,
  topK: number,
  topP: number,
  minP: number,
  repetitionPenalty: number,
): SampleSettings {
  return { temperature, topK, topP, minP, repetitionPenalty, repetitionLastN: 16 };
}
