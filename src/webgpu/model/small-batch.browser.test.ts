/**
 * Small batches through the decode mmv kernels (KernelPlan.smallBatch, forced on; SwiftShader) against the
 * float64 reference (src/model/reference.ts) on a seeded random GQA llama with an f32 cache, with two mmv
 * layouts: one thread per row group (the software adapters' shape) with the prefill attention
 * (`attention.small` 'prefill'), and 8 lanes reduced through workgroup memory (a GPU's shape) with
 * flash-decoding's attention (the GPUs' default) in chunks of 4 positions, so every batch spans several
 * chunks and the causal mask cuts through them. Prompts of 1..9 tokens: the last position's logits and greedy id (9 tokens, past
 * the small-batch size, runs the prefill kernels); the verify step's every-position logits and argmax for
 * 2, 5 and 8 tokens, and its greedy choices with a rejection at the first draft and with every draft
 * accepted, the rolled-back cache then continuing as plain decoding; the load-time trial's choice from
 * injected timings and from real ones. Greedy equality with llama.cpp on stories260K and speculative
 * decoding through the engine: engine-small-batch.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { argmax, ReferenceLlama } from '../../model/reference.ts';
import { mulberry32 } from '../../util/prng.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { gpuPlan } from '../kernel-plan.ts';
import type { MmvLayout } from '../kernels/mmv.ts';
import { LlamaModel } from './llama.ts';
import { type AttentionPolicy, GPU_ATTENTION, MATMUL_FAMILIES } from './options.ts';

// nEmbd 96, nFF 160, vocabulary 301: K and N off every multiple of the layouts' rows per workgroup.
const MODEL = { seed: 6201, nLayers: 2, nEmbd: 96, nFF: 160, nHead: 6, nHeadKv: 2, nVocab: 301 };
const LAYOUTS: [string, MmvLayout, Partial<AttentionPolicy>][] = [
  [
    'one thread per row group, prefill attention',
    { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false },
    { small: 'prefill' },
  ],
  [
    '8 lanes through workgroup memory, flash attention in chunks of 4',
    { lanes: 8, units: 2, threads: 64, reduce: 'shared', packed: false },
    { small: 'flash', fixedChunk: 4 },
  ],
];

let gpu: GpuContext;
let bytes: Uint8Array;
let ref: ReferenceLlama;
const rng = mulberry32(62);
const tokens = Array.from({ length: 40 }, () => 3 + Math.floor(rng() * (MODEL.nVocab - 3)));

beforeAll(async () => {
  gpu = await createGpuContext();
  bytes = makeRandomLlamaGguf(MODEL);
  ref = await ReferenceLlama.fromGguf(await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) }));
}, 60_000);
afterAll(() => gpu?.device.destroy());

async function load(
  layout: MmvLayout,
  smallBatch: number | 'trial',
  attention: Partial<AttentionPolicy> = {},
): Promise<LlamaModel> {
  const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
  const mmv = Object.fromEntries(MATMUL_FAMILIES.map((f) => [f, layout]));
  return LlamaModel.load(gpu.device, file, llamaConfigFromGguf(file), {
    contextLength: 64,
    batchSize: 16,
    kvType: 'f32',
    plan: gpuPlan({ mmv, smallBatch, attention: { ...GPU_ATTENTION, ...attention } }),
  });
}

function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  let maxRef = 0;
  let diff = 0;
  for (let i = 0; i < want.length; i++) {
    maxRef = Math.max(maxRef, Math.abs(want[i]));
    diff = Math.max(diff, Math.abs(got[i] - want[i]));
  }
  expect(got.length, what).toBe(want.length);
  expect(diff, what).toBeLessThanOrEqual(2e-5 * (1 + maxRef));
}

describe.each(LAYOUTS)('small batches through mmv (%s)', (_name, layout, attention) => {
  let model: LlamaModel;
  beforeAll(async () => {
    model = await load(layout, 8, attention);
  }, 120_000);
  afterAll(() => model?.destroy());

  it('is on for 2..8 tokens, reported as the option, with the attention asked for', () => {
    expect(model.smallBatch).toEqual({ maxTokens: 8, chosenBy: 'option' });
    expect([1, 2, 8, 9].map((T) => model.usesSmallBatch(T))).toEqual([false, true, true, false]);
    expect(model.smallBatchAttention).toBe(attention.small === 'flash' ? 'flash' : 'prefill-kernel');
    expect(model.flashTokens).toBe(attention.small === 'flash' ? 8 : 1);
  });

  it('prompts of 1..9 tokens: the last position logits and greedy id as the float64 reference', async () => {
    for (let T = 1; T <= 9; T++) {
      const prompt = tokens.slice(T, 2 * T);
      model.prefillTokens(prompt, 0);
      model.submitReadback({ slot: 0, readLogits: true });
      const logits = await model.readLogits();
      const id = await model.readToken(0);
      const want = ref.run(prompt)[T - 1];
      expectClose(logits, want, `${T} tokens`);
      expect(id, `${T} tokens`).toBe(argmax(want));
    }
  }, 120_000);

  it('verify of 2, 5 and 8 tokens: every row of logits and its argmax as the reference', async () => {
    const P = 7;
    const prompt = tokens.slice(0, P);
    for (const T of [2, 5, 8]) {
      model.prefillTokens(prompt, 0);
      const ids = tokens.slice(20, 20 + T);
      const { argmax: am, logits } = await model.verify(ids, P, { readLogits: true });
      const want = ref.run([...prompt, ...ids]).slice(P);
      for (let j = 0; j < T; j++) {
        const row = logits!.subarray(j * MODEL.nVocab, (j + 1) * MODEL.nVocab);
        expectClose(row, want[j], `verify of ${T}, row ${j}`);
        expect(am[j], `verify of ${T}, row ${j}`).toBe(argmax(want[j]));
      }
    }
  }, 120_000);

  it('verify: rejection at the first draft and every draft accepted give plain greedy, the cache continuing exactly', async () => {
    const P = 9;
    const prompt = tokens.slice(0, P);
    // Plain greedy: prefill then one decode step per token.
    model.prefillTokens(prompt, 0);
    model.submitReadback({ slot: 0 });
    const g = [await model.readToken(0)];
    for (let i = 1; i < 12; i++) {
      model.submitDecode(P + i - 1, { tokenId: g[i - 1], slot: 0 });
      g.push(await model.readToken(0));
    }
    for (const n of [1, 3, 7]) {
      for (const r of [0, n]) {
        const drafts = g.slice(1, 1 + n);
        if (r < n) drafts[r] = (drafts[r] + 1) % MODEL.nVocab;
        model.prefillTokens(prompt, 0);
        const { argmax: am } = await model.verify([g[0], ...drafts], P);
        const what = `${n} drafts, rejection at ${r}`;
        expect([...am.slice(0, r + 1)], what).toEqual(g.slice(1, r + 2));
        let last = g[r + 1];
        for (let k = 0; k < 2; k++) {
          model.submitDecode(P + r + 1 + k, { tokenId: last, slot: 0 });
          last = await model.readToken(0);
          expect(last, `${what}: decode step ${k} after`).toBe(g[r + 2 + k]);
        }
      }
    }
  }, 120_000);
});

describe('the small-batch trial at load', () => {
  it('chooses from injected timings, and times both ways for real', async () => {
    const model = await load(LAYOUTS[0][1], 'trial');
    try {
      // The load ran the real trial: finite medians for 4 and 8 tokens both ways.
      expect(model.smallBatch.chosenBy).toBe('trial');
      expect(model.smallBatch.trials?.map((t) => t.tokens)).toEqual([4, 8]);
      for (const t of model.smallBatch.trials!) {
        expect(t.mmvMs).toBeGreaterThan(0);
        expect(t.tileMs).toBeGreaterThan(0);
      }
      const fake = (ms: Record<string, number>) => async (T: number, small: boolean) =>
        ms[`${small ? 'mmv' : 'tile'}${T}`];
      await model.trialSmallBatch(fake({ mmv4: 1, tile4: 2, mmv8: 3, tile8: 4 }));
      expect(model.smallBatch.maxTokens).toBe(8);
      expect([2, 8, 9].map((T) => model.usesSmallBatch(T))).toEqual([true, true, false]);
      await model.trialSmallBatch(fake({ mmv4: 1, tile4: 2, mmv8: 5, tile8: 4 }));
      expect(model.smallBatch.maxTokens).toBe(4);
      expect([4, 5].map((T) => model.usesSmallBatch(T))).toEqual([true, false]);
      await model.trialSmallBatch(fake({ mmv4: 3, tile4: 2, mmv8: 3, tile8: 4 }));
      expect(model.smallBatch).toMatchObject({ maxTokens: 0, chosenBy: 'trial' });
      expect(model.usesSmallBatch(2)).toBe(false);
      // The benchmarks' setter: 0 or 2..8, the trial's rows kept.
      model.setSmallBatch(3);
      expect(model.smallBatch).toMatchObject({ maxTokens: 3, chosenBy: 'option' });
      expect(model.smallBatch.trials).toHaveLength(2);
      expect([3, 4].map((T) => model.usesSmallBatch(T))).toEqual([true, false]);
      for (const bad of [1, 9, 2.5, -1, Number.NaN])
        expect(() => model.setSmallBatch(bad), String(bad)).toThrow(/small batch sizes are 0 or 2..8/);
      // Whichever way, the prompt's logits stay the reference's.
      const prompt = tokens.slice(3, 8);
      model.prefillTokens(prompt, 0);
      model.submitReadback({ readLogits: true });
      expectClose(await model.readLogits(), ref.run(prompt)[4], 'after the trials');
    } finally {
      model.destroy();
    }
  }, 120_000);

  it('mmv off (no decode layouts): small batches unavailable, the prefill kernels run', async () => {
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const model = await LlamaModel.load(gpu.device, file, llamaConfigFromGguf(file), {
      contextLength: 64,
      batchSize: 16,
      kvType: 'f32',
      plan: gpuPlan({ smallBatch: 8 }),
    });
    try {
      expect(model.smallBatch).toEqual({ maxTokens: 0, chosenBy: 'unavailable' });
      expect(model.usesSmallBatch(4)).toBe(false);
      expect(() => model.setSmallBatch(4)).toThrow(/compiled no small-batch kernels/);
      model.setSmallBatch(0);
    } finally {
      model.destroy();
    }
  }, 120_000);
});
