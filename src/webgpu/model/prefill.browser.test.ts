/**
 * The cancellable, adaptive prefill (LlamaModel.prefill) against the one-batch prefill (prefillTokens) on a
 * seeded random GQA model: a 300-token prompt in one batch (checked against the float64 reference), in
 * batches of one tile, and in batches sized by a time target give the same last-position logits
 * (within 1e-4) and the same greedy continuation; an abort after the first batch throws 'aborted' having
 * run one batch, and the model then prefills exactly again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../../core/errors.ts';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { argmax, ReferenceLlama } from '../../model/reference.ts';
import { mulberry32 } from '../../util/prng.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { LlamaModel } from './llama.ts';

const N_PROMPT = 300;
const N_OUT = 6;
const MODEL = { seed: 161, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nHeadKv: 2, nVocab: 300 };

let gpu: GpuContext;
let model: LlamaModel;
let bytes: Uint8Array;
const prompt = (() => {
  const rng = mulberry32(1616);
  return Array.from({ length: N_PROMPT }, () => 1 + Math.floor(rng() * (MODEL.nVocab - 1)));
})();

beforeAll(async () => {
  gpu = await createGpuContext();
  bytes = makeRandomLlamaGguf(MODEL);
  const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
  model = await LlamaModel.load(gpu.device, file, llamaConfigFromGguf(file), {
    contextLength: 320,
    batchSize: 320,
    kvType: 'f32',
  });
}, 180_000);
afterAll(() => {
  model?.destroy();
  gpu?.device.destroy();
});

/** After a prefill: the last position's logits, then N_OUT − 1 greedy decode steps' (ids and logits). */
async function continueGreedy(): Promise<{ ids: number[]; logits: Float32Array[] }> {
  const ids: number[] = [];
  const logits: Float32Array[] = [];
  model.submitReadback({ readLogits: true });
  for (let i = 0; i < N_OUT; i++) {
    const l = await model.readLogits();
    logits.push(l);
    ids.push(argmax(l));
    if (i + 1 < N_OUT) model.submitDecode(N_PROMPT + i, { tokenId: ids[i], readLogits: true });
  }
  return { ids, logits };
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('LlamaModel.prefill (adaptive, cancellable) equals one batch', () => {
  let single: { ids: number[]; logits: Float32Array[] };

  beforeAll(async () => {
    model.prefillTokens(prompt, 0);
    single = await continueGreedy();
  }, 180_000);

  it('one batch of 300 tokens matches the float64 reference', async () => {
    const ref = await ReferenceLlama.fromGguf(
      await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) }),
    );
    const all = ref.run([...prompt, ...single.ids.slice(0, -1)]).slice(N_PROMPT - 1);
    for (let i = 0; i < N_OUT; i++) {
      const maxRef = all[i].reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      expect(maxDiff(single.logits[i], all[i]), `position ${i}`).toBeLessThanOrEqual(2e-5 * (1 + maxRef));
      expect(single.ids[i]).toBe(argmax(all[i]));
    }
  });

  it.each([
    ['batches of one tile (target 0 ms)', 0],
    ['batches growing toward a 5 s target', 5000],
    ['batches sized to the default 100 ms target', undefined],
  ])('%s: same logits (≤ 1e-4) and greedy ids', async (_name, targetBatchMs) => {
    const seen: number[] = [];
    const r = await model.prefill(prompt, 0, {
      targetBatchMs,
      onBatch: (done, T) => {
        seen.push(T);
        expect(done).toBe(seen.reduce((a, b) => a + b, 0));
      },
    });
    expect(r.batches).toEqual(seen);
    expect(r.batches.reduce((a, b) => a + b, 0)).toBe(N_PROMPT);
    // The first batch is one tile of the prefill kernel (batchSize 320 is larger).
    const tile = r.batches[0];
    expect(tile).toBeLessThanOrEqual(32);
    for (const T of r.batches.slice(0, -1)) {
      expect(T % tile).toBe(0);
      expect(T).toBeLessThanOrEqual(model.batchSize);
    }
    if (targetBatchMs === 0) expect(r.batches.length).toBe(Math.ceil(N_PROMPT / tile));
    // A long target: the batches grow past one tile (at most 4× a batch).
    if (targetBatchMs === 5000) {
      expect(r.batches[1]).toBeGreaterThan(tile);
      expect(r.batches[1]).toBeLessThanOrEqual(4 * tile);
    }
    const split = await continueGreedy();
    expect(split.ids).toEqual(single.ids);
    const worst = Math.max(...split.logits.map((l, i) => maxDiff(l, single.logits[i])));
    console.log(`prefill batches ${JSON.stringify(r.batches)}: max |Δ logits| vs one batch ${worst}`);
    expect(worst).toBeLessThanOrEqual(1e-4);
  });

  it('an abort after the first batch stops before the next; the next prefill is exact', async () => {
    const ac = new AbortController();
    let batches = 0;
    const err = await model
      .prefill(prompt, 0, {
        signal: ac.signal,
        targetBatchMs: 0,
        onBatch: () => {
          batches++;
          ac.abort();
        },
      })
      .catch((e) => e);
    expect(isEngineError(err, 'aborted'), String(err)).toBe(true);
    expect(batches).toBe(1);
    // Already aborted: not one batch runs.
    const err2 = await model
      .prefill(prompt, 0, { signal: ac.signal, onBatch: () => batches++ })
      .catch((e) => e);
    expect(isEngineError(err2, 'aborted')).toBe(true);
    expect(batches).toBe(1);
    await model.prefill(prompt, 0);
    const again = await continueGreedy();
    expect(again.ids).toEqual(single.ids);
    expect(Math.max(...again.logits.map((l, i) => maxDiff(l, single.logits[i])))).toBeLessThanOrEqual(1e-4);
  });
});
