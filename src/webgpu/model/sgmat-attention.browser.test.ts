/**
 * The prefill attention on subgroup matrices (kernels/attention-sgmat.ts) in a whole model: a seeded
 * random GQA model (head size 64, 2 query heads per KV head, 2 layers) prefills a 70-token prompt in
 * batches of 32 (so the second and third batches attend to cached positions) with the kernel forced and
 * with the float prefill attention, then decodes greedily; both give the same ids and logits within the
 * f16 operands' rounding. SwiftShader has no subgroup matrices: the kernel runs through the TEST DOUBLE
 * src/testing/sgmat-emulator.ts (the plan's `wgsl` hook). Also: a plan asking for it on this adapter
 * (none) keeps the float kernel and says why in `ModelInfo.kernels`, and a forced plan records the
 * configuration; a plan where float won the load's timed trial gives both times and the reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { emulateSubgroupMatrix } from '../../testing/sgmat-emulator.ts';
import { mulberry32 } from '../../util/prng.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { describePlan, gpuPlan, resolveKernelPlan } from '../kernel-plan.ts';
import { prefillAttentionSgmatWGSL } from '../kernels/attention-sgmat.ts';
import { LlamaModel } from './llama.ts';
import { GPU_ATTENTION, GPU_PREFILL, type SgmatPrefillLayout } from './options.ts';

const MODEL = { seed: 171, nLayers: 2, nEmbd: 128, nFF: 128, nHead: 2, nHeadKv: 1, nVocab: 300 };
const N_PROMPT = 70;
const N_OUT = 6;
const TILE = { M: 16, N: 16, K: 16, subgroupSize: 32 } as const;

let gpu: GpuContext;
let bytes: Uint8Array;
beforeAll(async () => {
  gpu = await createGpuContext();
  bytes = makeRandomLlamaGguf(MODEL);
});
afterAll(() => gpu?.device.destroy());

const prompt = (() => {
  const rng = mulberry32(1717);
  return Array.from({ length: N_PROMPT }, () => 1 + Math.floor(rng() * (MODEL.nVocab - 1)));
})();

/** The prompt in batches of 32, then N_OUT − 1 greedy steps: each step's logits and argmax. */
async function run(prefill: SgmatPrefillLayout | { kind: 'tiled' }) {
  const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
  const model = await LlamaModel.load(gpu.device, file, llamaConfigFromGguf(file), {
    contextLength: 96,
    batchSize: 32,
    kvType: 'f16',
    plan: gpuPlan({ attention: { ...GPU_ATTENTION, prefill } }),
  });
  try {
    model.prefillTokens(prompt, 0);
    const ids: number[] = [];
    const logits: Float32Array[] = [];
    model.submitReadback({ readLogits: true });
    for (let i = 0; i < N_OUT; i++) {
      const l = await model.readLogits();
      logits.push(l);
      let best = 0;
      for (let v = 1; v < l.length; v++) if (l[v] > l[best]) best = v;
      ids.push(best);
      if (i + 1 < N_OUT) model.submitDecode(N_PROMPT + i, { tokenId: best, readLogits: true });
    }
    return { ids, logits, kernel: model.prefillAttention };
  } finally {
    model.destroy();
  }
}

describe('a model prefilling with the subgroup-matrix attention (emulated)', () => {
  it('gives the float prefill attention’s greedy ids, logits within f16 rounding', async () => {
    const float = await run({ kind: 'tiled' });
    const sg = await run({
      kind: 'sgmat',
      tile: TILE,
      kvTile: 16,
      wgsl: (o) => emulateSubgroupMatrix(prefillAttentionSgmatWGSL(o), o.tile, o.tile.subgroupSize),
    });
    expect(float.kernel.kernel).toBe('tiled');
    expect(sg.kernel).toMatchObject({ kernel: 'sgmat', tile: TILE, plan: { kvTile: 16, tokensPerTile: 8 } });
    for (let i = 0; i < N_OUT; i++) {
      const ref = float.logits[i];
      let max = 0;
      let diff = 0;
      for (let v = 0; v < ref.length; v++) {
        max = Math.max(max, Math.abs(ref[v]));
        diff = Math.max(diff, Math.abs(sg.logits[i][v] - ref[v]));
      }
      // f16 q, k, v and p in the attention of the prompt's layers: ~2⁻¹¹ of the attention output, which
      // the following matmuls carry to the logits (measured 2026-12-05: 2e-5 to 6e-5 of 1 + the largest
      // logit over the 6 steps; a wrong position or head moves them by whole units).
      expect(diff, `step ${i}`).toBeLessThanOrEqual(5e-4 * (1 + max));
      expect(sg.ids[i], `step ${i}`).toBe(float.ids[i]);
    }
  }, 300_000);

  it('asked for on this adapter (no subgroup matrices): the float kernel, and the reason in ModelInfo.kernels', async () => {
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const cfg = llamaConfigFromGguf(file);
    const plan = await resolveKernelPlan(gpu, file, cfg, {
      attention: { prefill: { kind: 'sgmat' } },
      mmvLayout: 'off', // no layout trial: this test is about the attention
    });
    expect(plan.chosen?.sgmatAttention?.reason).toMatch(/^no subgroup matrices: /);
    expect(plan.attention.prefill).not.toMatchObject({ kind: 'sgmat' });
    const model = await LlamaModel.load(gpu.device, file, cfg, { contextLength: 64, batchSize: 32, plan });
    try {
      const info = describePlan(model).attention?.prefill;
      expect(info?.kernel).not.toBe('sgmat');
      expect(info?.subgroupMatrix).toMatchObject({
        chosen: false,
        reason: expect.stringMatching(/^no subgroup matrices: /),
      });
    } finally {
      model.destroy();
    }
  }, 300_000);

  it('float won the timed trial: ModelInfo.kernels.attention.prefill says so and gives both times', async () => {
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const cfg = llamaConfigFromGguf(file);
    const reason =
      'slower than the float prefill attention in the timed trial (3.25 ms against 2.00 ms for 512 tokens)';
    const selfTest = [{ config: 'f16→f32 16x16x16', ok: true }];
    const trial = [
      { kernel: 'sgmat' as const, ms: 3.25 },
      { kernel: 'float' as const, ms: 2.000_04 },
    ];
    // The plan resolvePrefillAttention makes where float wins (its choice is tested in
    // kernels/attention-sgmat.browser.test.ts): the float layout, the choice with the trial.
    const plan = gpuPlan({
      attention: { ...GPU_ATTENTION, prefill: { kind: 'tiled' } },
      chosen: {
        choices: {},
        prefill: GPU_PREFILL,
        sgmatSupport: { available: true, configs: [], usable: [] },
        sgmatAttention: { reason, selfTest, trial },
      },
    });
    const model = await LlamaModel.load(gpu.device, file, cfg, { contextLength: 64, batchSize: 32, plan });
    try {
      expect(describePlan(model).attention?.prefill).toMatchObject({
        kernel: 'tiled',
        subgroupMatrix: { chosen: false, reason, selfTest },
        trial: [
          { kernel: 'sgmat', ms: 3.25 },
          { kernel: 'float', ms: 2 },
        ],
      });
    } finally {
      model.destroy();
    }
  }, 300_000);
});
