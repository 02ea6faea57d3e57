/**
 * The argmax as a parallel reduction (argmaxKernels: partials over stripes, then one final pass): the
 * index of the largest logit of each row, the lowest index on ties (llama.cpp's greedy sampler), NaN and
 * −∞ never the maximum, 0xFFFFFFFF for a row with no finite value above −3·10³⁸; against a CPU scan.
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
import { ARGMAX_THREADS, ARGMAX_UNIT, argmaxKernels, argmaxSplit } from './argmax.ts';

/** Runs both passes over `logits` [nRows, nVocab]; returns out [nRows] (plus one sentinel word checked untouched). */
async function gpuArgmaxRows(logits: Float32Array, nVocab: number): Promise<number[]> {
  const nRows = logits.length / nVocab;
  const device = await testDevice();
  const k = argmaxKernels({ nVocab });
  const partials = storageFrom(device, new Uint32Array((nRows * k.partialBytesPerRow) / 4));
  const out = storageFrom(device, new Uint32Array(nRows + 1).fill(0xdeadbeef));
  await runWGSL(device, k.partials, [storageFrom(device, logits), partials], [k.nParts, nRows]);
  await runWGSL(device, k.final, [partials, out], [1, nRows]);
  const got = [...(await readU32(device, out, nRows + 1))];
  expect(got[nRows], 'the word past the last row is untouched').toBe(0xdeadbeef);
  return got.slice(0, nRows);
}

const gpuArgmax = async (logits: Float32Array) => (await gpuArgmaxRows(logits, logits.length))[0];

/** Lowest index of the largest value, skipping what the GPU skips (NaN, −∞, ≤ −3e38); 0xFFFFFFFF if none. */
function argmaxRef(a: Float32Array): number {
  let best = Math.fround(-3.0e38);
  let b = 0xffffffff;
  for (let i = 0; i < a.length; i++) {
    if (a[i] > best) {
      best = a[i];
      b = i;
    }
  }
  return b;
}

/** The largest value (no spread: 150k arguments overflow the stack). */
function maxOf(a: Float32Array): number {
  let m = -Infinity;
  for (const v of a) m = Math.max(m, v);
  return m;
}

describe('argmaxSplit', () => {
  it('covers the row with ≤ 256 stripes of a multiple of 256 logits', () => {
    for (const n of [1, 31, 257, 1023, 1025, 32000, 128256, 151943, 262144, 262145, 1 << 20]) {
      const { chunk, nParts } = argmaxSplit(n);
      expect(chunk % ARGMAX_UNIT).toBe(0);
      expect(chunk % ARGMAX_THREADS).toBe(0);
      expect(nParts).toBeLessThanOrEqual(256);
      expect(nParts * chunk).toBeGreaterThanOrEqual(n);
      expect((nParts - 1) * chunk).toBeLessThan(n);
    }
    expect(() => argmaxSplit(0)).toThrow(RangeError);
  });
});

describe('argmaxKernels (one row: decode)', () => {
  for (const nVocab of [1, 31, 257, 32000, 128256, 151936 + 7]) {
    it(`random logits and a planted maximum (nVocab=${nVocab})`, async () => {
      const { seed, rng } = freshRng();
      const logits = randomF32(rng, nVocab, 3);
      expect(await gpuArgmax(logits), `random logits (seed ${seed})`).toBe(argmaxRef(logits));
      for (const where of [randInt(rng, nVocab), 0, nVocab - 1]) {
        const l = logits.slice();
        l[where] = maxOf(l) + 0.25;
        expect(await gpuArgmax(l), `max at ${where} (seed ${seed})`).toBe(where);
      }
    });
  }

  for (const nVocab of [32000, 151936 + 7]) {
    it(`picks the lowest index on ties, across threads and stripe boundaries (nVocab=${nVocab})`, async () => {
      const { seed, rng } = freshRng();
      const { chunk, nParts } = argmaxSplit(nVocab);
      const top = 50;
      // The last logit of a stripe (its last thread) ties with the first of the next stripe, one later in
      // that thread's stride, and the last index: the lowest, the earlier stripe's, wins.
      const p = 1 + randInt(rng, nParts - 2);
      const lo = p * chunk - 1;
      const ties = [lo + 1, lo + 1 + ARGMAX_THREADS, nVocab - 1, lo];
      const logits = randomF32(rng, nVocab, 3);
      for (const i of ties) logits[i] = top;
      expect(await gpuArgmax(logits), `ties at [${ties.join(', ')}] (seed ${seed})`).toBe(Math.min(...ties));
      // Within a stripe: thread 40's first logit ties with thread 3's second and thread 1's third.
      const l2 = randomF32(rng, nVocab, 3);
      const base = chunk * randInt(rng, nParts - 1);
      const t2 = [base + ARGMAX_THREADS + 3, base + 40, base + 2 * ARGMAX_THREADS + 1];
      for (const i of t2) l2[i] = top;
      expect(await gpuArgmax(l2), `ties at [${t2.join(', ')}] (seed ${seed})`).toBe(base + 40);
      // The final pass's thread q reads parts q, q + ARGMAX_THREADS, …: a tie between two of them (a later
      // logit of the earlier stripe, an earlier one of the later stripe) goes to the earlier stripe.
      if (nParts > ARGMAX_THREADS + 1) {
        const l3 = randomF32(rng, nVocab, 3);
        const q = randInt(rng, nParts - ARGMAX_THREADS - 1);
        const t3 = [(q + ARGMAX_THREADS) * chunk + 5, q * chunk + chunk - 2];
        for (const i of t3) l3[i] = top;
        expect(await gpuArgmax(l3), `ties at [${t3.join(', ')}] (seed ${seed})`).toBe(t3[1]);
      }
      // All equal and negative: index 0.
      expect(await gpuArgmax(new Float32Array(nVocab).fill(-7.5))).toBe(0);
    });
  }

  it('NaN and −∞ are never the maximum; a row of them gives 0xFFFFFFFF (as before)', async () => {
    const { seed, rng } = freshRng();
    const nVocab = 128256;
    const logits = randomF32(rng, nVocab, 3);
    for (let i = 0; i < 50; i++) logits[randInt(rng, nVocab)] = Number.NaN;
    logits[0] = Number.NaN;
    logits[7] = Number.NEGATIVE_INFINITY;
    expect(await gpuArgmax(logits), `seed ${seed}`).toBe(argmaxRef(logits));
    const onlyOne = new Float32Array(nVocab).fill(Number.NEGATIVE_INFINITY);
    onlyOne[99999] = -1e30;
    expect(await gpuArgmax(onlyOne)).toBe(99999);
    expect(await gpuArgmax(new Float32Array(nVocab).fill(Number.NEGATIVE_INFINITY))).toBe(0xffffffff);
    expect(await gpuArgmax(new Float32Array(nVocab).fill(Number.NaN))).toBe(0xffffffff);
    expect(await gpuArgmax(new Float32Array(31).fill(Number.NaN))).toBe(0xffffffff);
  });
});

describe('argmaxKernels (rows: the verify step)', () => {
  it('each row of [nRows, nVocab] gets its own argmax, lowest index on ties', async () => {
    const { seed, rng } = freshRng();
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
          const top = maxOf(row) + 1;
          const at = [randInt(rng, nVocab), randInt(rng, nVocab), randInt(rng, nVocab)];
          for (const i of at) row[i] = top;
          want.push(Math.min(...at));
        } else want.push(argmaxRef(row));
      }
      expect(await gpuArgmaxRows(logits, nVocab), `nRows ${nRows} nVocab ${nVocab} (seed ${seed})`).toEqual(
        want,
      );
    }
  });
});
