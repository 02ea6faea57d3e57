/**
 * embedWGSL (ggml_get_rows): F32 and F16 tables, whole or split by rows across two bindings, random ids
 * that include the first row, the last row and the rows on either side of the split. Exact.
 */
import { describe, it } from 'vitest';
import {
  assertEqual,
  freshRng,
  packF16,
  randInt,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { packStep, type WeightType } from './common.ts';
import { embedWGSL } from './embed.ts';

describe('embedWGSL', () => {
  for (const c of [
    { type: 'F32', nEmbd: 100, split: [] },
    { type: 'F32', nEmbd: 37, split: [23] },
    { type: 'F16', nEmbd: 37, split: [] },
    { type: 'F16', nEmbd: 130, split: [23] },
  ] as { type: WeightType; nEmbd: number; split: number[] }[]) {
    it(`${c.type} table, ${c.split.length + 1} part(s), nEmbd=${c.nEmbd}`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { nEmbd } = c;
      const nVocab = 50;
      const raw = randomF32(rng, nVocab * nEmbd);
      const vals = c.type === 'F32' ? Float64Array.from(raw) : packF16(raw).rounded;
      const bounds = [0, ...c.split, nVocab];
      const parts = bounds
        .slice(0, -1)
        .map((rowStart, i) => ({ type: c.type, rowStart, rowCount: bounds[i + 1] - rowStart }));
      const partBufs = parts.map((p) => {
        const v = vals.slice(p.rowStart * nEmbd, (p.rowStart + p.rowCount) * nEmbd);
        return storageFrom(device, c.type === 'F32' ? Float32Array.from(v) : packF16(v).words);
      });
      const ids = Uint32Array.from([
        nVocab - 1,
        0,
        ...c.split.flatMap((s) => [s - 1, s]),
        ...Array.from({ length: 5 }, () => randInt(rng, nVocab)),
        nVocab - 1,
      ]);
      const T = ids.length;
      const x0 = randomF32(rng, (T + 1) * nEmbd); // a spare row that must stay untouched
      const x = storageFrom(device, x0);
      const code = embedWGSL({ nEmbd, parts });
      await runWGSL(
        device,
        code,
        [uniformFrom(device, packStep(T, 3)), storageFrom(device, ids), x, ...partBufs],
        [Math.ceil(nEmbd / 64), T],
      );
      const ref = Float64Array.from(x0);
      for (let t = 0; t < T; t++) ref.set(vals.subarray(ids[t] * nEmbd, (ids[t] + 1) * nEmbd), t * nEmbd);
      assertEqual(`embed ids [${ids.join(', ')}] (seed ${seed})`, await readF32(device, x), ref);
    });
  }
});
