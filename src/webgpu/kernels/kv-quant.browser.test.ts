/**
 * The quantize-on-write kernel (kv-quant.ts `kvQuantizeWGSL`) byte for byte against our CPU quantizer
 * (src/gguf/quant-legacy.ts, itself equal to llama.cpp's bytes in tests/golden/quant.json): random rows at
 * scales from 1e-3 to 1e3, an all-zero block, blocks whose scaled values land exactly on roundf's halves
 * and on Q4_0's 16 (clamped to 15), written at pos0 > 0 into caches whose other bytes must stay as they
 * were, with row sizes whose rows do and do not end on a u32 (1, 3, 4 blocks), K and V in either type or
 * only one of them quantized.
 */
import { describe, expect, it } from 'vitest';
import { quantizeRow } from '../../gguf/quantize.ts';
import {
  freshRng,
  randInt,
  randomF32,
  readU32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import type { KvType } from './attention.ts';
import { packStep } from './common.ts';
import { isQuantKv, kvQuantizeWGSL, kvQuantizeWorkgroupsX, kvRowBytes } from './kv-quant.ts';

/** Rows [T, kvDim] of random values at a random scale per block, with the special blocks spliced in. */
function rows(rng: () => number, T: number, kvDim: number): Float32Array {
  const x = randomF32(rng, T * kvDim);
  for (let b = 0; b < x.length / 32; b++) {
    const scale = 10 ** (randInt(rng, 7) - 3);
    for (let j = 0; j < 32; j++) x[b * 32 + j] = Math.fround(x[b * 32 + j] * scale);
  }
  const block = (i: number, f: (j: number) => number) => {
    if ((i + 1) * 32 <= x.length) for (let j = 0; j < 32; j++) x[i * 32 + j] = f(j);
  };
  block(0, () => 0);
  // Q8_0: amax 127 → d = 1, id = 1; values k + 0.5 round away from zero. Q4_0: max −8 → d = 1; x + 8.5
  // hits the integers and 16.
  block(1, (j) => (j === 0 ? 127 : j === 1 ? -8 : ((j % 16) - 8) * (j % 2 ? 1 : -1) + 0.5));
  block(2, (j) => (j === 5 ? -8 : j === 6 ? 7.5 : j === 7 ? 7.49 : (j % 15) - 7));
  return x;
}

const cases: { kvDim: number; k: KvType; v: KvType; T: number; pos0: number }[] = [
  { kvDim: 32, k: 'q8_0', v: 'q8_0', T: 3, pos0: 5 },
  { kvDim: 96, k: 'q4_0', v: 'q4_0', T: 4, pos0: 1 },
  { kvDim: 128, k: 'q8_0', v: 'q4_0', T: 5, pos0: 0 },
  { kvDim: 96, k: 'q4_0', v: 'q8_0', T: 2, pos0: 7 },
  { kvDim: 96, k: 'q8_0', v: 'f16', T: 3, pos0: 2 },
  { kvDim: 32, k: 'f32', v: 'q4_0', T: 3, pos0: 3 },
];

describe('kvQuantizeWGSL', () => {
  for (const c of cases) {
    it(`kvDim ${c.kvDim}, K ${c.k}, V ${c.v}, T ${c.T}, pos0 ${c.pos0}: the bytes of quantize_row_*_ref`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { kvDim, T, pos0 } = c;
      const nCtx = pos0 + T + 2;
      const kNew = rows(rng, T, kvDim);
      const vNew = rows(rng, T, kvDim);
      const bufs = [uniformFrom(device, packStep(T, pos0))];
      const expected: { name: string; buf: GPUBuffer; bytes: Uint8Array }[] = [];
      for (const [t, x, name] of [
        [c.k, kNew, 'K'],
        [c.v, vNew, 'V'],
      ] as const) {
        if (!isQuantKv(t)) continue;
        const rb = kvRowBytes(t, kvDim);
        const size = Math.ceil((nCtx * rb) / 4) * 4;
        // The cache starts as random bytes: only rows pos0..pos0+T−1 may change.
        const init = new Uint8Array(size).map(() => randInt(rng, 256));
        const want = init.slice();
        for (let r = 0; r < T; r++)
          want.set(quantizeRow(t.toUpperCase(), x.subarray(r * kvDim, (r + 1) * kvDim)), (pos0 + r) * rb);
        const cache = storageFrom(device, new Uint32Array(init.buffer));
        bufs.push(storageFrom(device, x), cache);
        expected.push({ name, buf: cache, bytes: want });
      }
      const o = { kvDim, kType: c.k, vType: c.v };
      // Bindings in order: step, then (k_new, kc) and/or (v_new, vc).
      await runWGSL(device, kvQuantizeWGSL(o), bufs, [kvQuantizeWorkgroupsX(o), T]);
      for (const e of expected) {
        const got = new Uint8Array((await readU32(device, e.buf)).buffer);
        const bad = got.findIndex((b, i) => b !== e.bytes[i]);
        expect(bad, `${e.name} cache differs first at byte ${bad} (seed ${seed})`).toBe(-1);
      }
    });
  }
  it('refuses a row of partial blocks and a plan with nothing quantized', () => {
    expect(() => kvQuantizeWGSL({ kvDim: 48, kType: 'q8_0', vType: 'q8_0' })).toThrow(/not whole blocks/);
    expect(() => kvQuantizeWGSL({ kvDim: 64, kType: 'f16', vType: 'f32' })).toThrow(/nothing to quantize/);
    expect(() => kvRowBytes('q4_0', 40)).toThrow(/whole 32-value blocks/);
    expect([kvRowBytes('q8_0', 64), kvRowBytes('q4_0', 64), kvRowBytes('f16', 64)]).toEqual([68, 36, 128]);
  });
});
