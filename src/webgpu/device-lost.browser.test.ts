/**
 * A GPU device lost at any moment (GPUDevice.destroy() here; a driver reset or a tab in the background in
 * life) ends the call in progress with EngineError 'device_lost', never an untyped AbortError or a load
 * that reports success on a dead device; the next load works on a new device (issue 18, items 2 and 3).
 */

import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { isEngineError } from '../core/errors.ts';
import type { LoadProgress } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';

const MODEL_URL = stories260kUrl();
const CASE = golden.generation.cases[0];

async function errorOf(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e) => e,
  );
}

/** The next load on the same engine works and gives llama.cpp's greedy tokens. */
async function expectWorking(engine: WebGpuEngine): Promise<void> {
  await engine.load({ url: MODEL_URL });
  const r = await engine.generate({ promptTokenIds: CASE.promptIds, maxTokens: 8 });
  expect(r.outputTokenIds).toEqual(CASE.outputIds.slice(0, 8));
}

describe('a device lost mid-call is device_lost', () => {
  it('destroyed during generation (greedy and sampled, 6 times, with a readback pending): device_lost every time', async () => {
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      for (let i = 0; i < 6; i++) {
        await engine.load({ url: MODEL_URL });
        const device = engine.gpuContext!.device;
        let n = 0;
        const err = await errorOf(
          engine.generate(
            {
              promptTokenIds: CASE.promptIds,
              maxTokens: 200,
              ignoreEos: true,
              // Half of the runs sample: those read logits back every step.
              ...(i % 2 ? { temperature: 0.8, seed: i } : {}),
            },
            () => {
              // From a timer, so the destroy lands while a readback is pending (as a driver reset would).
              if (++n === 1 + (i % 3)) setTimeout(() => device.destroy(), i % 3);
            },
          ),
        );
        expect(isEngineError(err, 'device_lost'), `run ${i}: ${err}`).toBe(true);
        expect(n).toBeLessThan(200);
      }
      await expectWorking(engine);
    } finally {
      await engine.dispose();
    }
  }, 300_000); // six loads and generations on SwiftShader: 120 s was not enough on a 2-core machine

  it.each(['upload', 'compile'] as const)(
    'destroyed during the %s phase of a load: the load ends with device_lost, the next one works',
    async (phase) => {
      const engine = new WebGpuEngine({ openModel: openModelSource });
      try {
        await engine.load({ url: MODEL_URL }); // a device to destroy
        let destroyed = false;
        const err = await errorOf(
          engine.load(
            { url: MODEL_URL },
            {
              onProgress: (p: LoadProgress) => {
                if (p.phase === phase && !destroyed) {
                  destroyed = true;
                  engine.gpuContext!.device.destroy();
                }
              },
            },
          ),
        );
        expect(destroyed).toBe(true);
        expect(isEngineError(err, 'device_lost'), String(err)).toBe(true);
        await expect(engine.generate({ prompt: 'Once', maxTokens: 2 })).rejects.toMatchObject({
          code: 'device_lost',
        });
        await expectWorking(engine);
      } finally {
        await engine.dispose();
      }
    },
  );
});
