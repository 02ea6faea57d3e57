/**
 * argmaxWGSL: the index of the largest logit, the lowest index on ties (llama.cpp's greedy sampler).
 */
import { describe, expect, it } from 'vitest';
import {
  freshRng,
  randInt,
  randomF32,
  readU32,
  runWGSL,
  storageFrom,
  testDevice,
} from '../../testing/kernel-util.ts';
import { argmaxRowsWGSL, argmaxWGSL } from './argmax.ts';

async function gpuArgmax(logits: Float32Array): Promise<number> {
  const device = await testDevice();
  const out = storageFrom(device, Uint32Array.from([0xdeadbeef]));
  await runWGSL(device, argmaxWGSL({ nVocab: logits.length }), [storageFrom(device, logits), out], [1]);
  return (await readU32(device, out, 1))[0];
}

/** Lowest index of the largest value. */
function argmaxRef(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[b]) b = i;
  return b;
}

describe('argmaxWGSL', () => {
  for (const nVocab of [1000, 32000]) {
    it(`finds a planted maximum (nVocab=${nVocab})`, async () => {
      const { seed, rng } = freshRng();
      for (const where of [randInt(rng, nVocab), 0, nVocab - 1]) {
        const logits = randomF32(rng, nVocab, 3);
        logits[where] = Math.max(...logits) + 0.25;
        expect(await gpuArgmax(logits), `max at ${where} (seed ${seed})`).toBe(where);
      }
      const logits = randomF32(rng, nVocab, 3);
      expect(await gpuArgmax(logits), `random logits (seed ${seed})`).toBe(argmaxRef(logits));
    });

    it(`picks the lowest index on ties (nVocab=${nVocab})`, async () => {
      const { seed, rng } = freshRng();
      const logits = randomF32(rng, nVocab, 3);
      const top = Math.max(...logits) + 1;
      // The lowest tie sits in a later thread (lo % 256 ≥ 200) than other ties (hi % 256 < 100), one of
      // which shares its thread's stride (hi, hi + 256); the last index ties too.
      const base = 256 * randInt(rng, Math.floor(nVocab / 256) - 3);
      const lo = base + 200 + randInt(rng, 50);
      const hi = base + 256 + randInt(rng, 100);
      const ties = [hi, nVocab - 1, hi + 256, lo, lo + 1];
      for (const i of ties) logits[i] = top;
      expect(await gpuArgmax(logits), `ties at [${ties.join(', ')}] (seed ${seed})`).toBe(Math.min(...ties));
      // All equal and negative: index 0.
      expect(await gpuArgmax(new Float32Array(nVocab).fill(-7.5))).toBe(0);
    });
  }
});

describe('argmaxRowsWGSL (the verify step: one argmax per row)', () => {
  it('each row of [nRows, nVocab] gets its own argmax, lowest index on ties', async () => {
    const { seed, rng } = freshRng();
    const device = await testDevice();
    for (const [nRows, nVocab] of [
      [1, 1000],
      [7, 515],
      [17, 32003],
    ]) {
      const logits = randomF32(rng, nRows * nVocab, 3);
      const want: number[] = [];
      for (let r = 0; r < nRows; r++) {
        const row = logits.subarray(r * nVocab, (r + 1) * nVocab);
        if (r % 3 === 1) {
          // ties: the lowest of three planted maxima
          const top = Math.max(...row) + 1;
          const at = [randInt(rng, nVocab), randInt(rng, nVocab), randInt(rng, nVocab)];
          for (const i of at) row[i] = top;
          want.push(Math.min(...at));
        } else want.push(argmaxRef(row));
      }
      const out = storageFrom(device, new Uint32Array(nRows + 1).fill(0xdeadbeef));
      await runWGSL(device, argmaxRowsWGSL({ nVocab }), [storageFrom(device, logits), out], [nRows]);
      const got = [...(await readU32(device, out, nRows + 1))];
      expect(got, `nRows ${nRows} nVocab ${nVocab} (seed ${seed})`).toEqual([...want, 0xdeadbeef]);
    }
  });
});
