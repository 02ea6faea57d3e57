/**
 * The load-time repacking kernel (kernels/repack.ts) against its CPU twin on random blocks of every
 * repacked type, block counts odd and even (the last `d` word half-filled), byte for byte; and the plane
 * offsets against the formats' sizes (the planar tensor is as large as the raw one, rounded up to 16;
 * Q4_K's 148 bytes per block). What the planes mean is tested by the kernels that read them (mmv, mmm,
 * the model) against float64 of ggml's dequantization of the raw blocks.
 */
import { describe, expect, it } from 'vitest';
import {
  freshRng,
  readU32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { WEIGHT_BLOCK } from './common.ts';
import {
  PLANAR_TYPES,
  planarBytes,
  planeOffsets,
  repackHost,
  repackParams,
  repackWGSL,
  repackWorkgroups,
} from './repack.ts';

describe('repack', () => {
  for (const type of PLANAR_TYPES) {
    for (const nBlocks of [1, 2, 37, 130]) {
      it(`${type}: ${nBlocks} random blocks repacked on the GPU equal the CPU repacking byte for byte`, async () => {
        const { seed, rng } = freshRng();
        const device = await testDevice();
        const raw = new Uint8Array(Math.ceil((WEIGHT_BLOCK[type].bytes * nBlocks) / 4) * 4);
        for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(rng() * 256);
        const want = repackHost(type, raw, nBlocks);
        const dst = storageFrom(device, new Uint8Array(want.length).fill(0xaa));
        await runWGSL(
          device,
          repackWGSL(type),
          [uniformFrom(device, repackParams(nBlocks)), storageFrom(device, raw), dst],
          repackWorkgroups(nBlocks, type),
        );
        const got = new Uint8Array((await readU32(device, dst, want.length / 4)).buffer);
        // Every byte up to the end of the `d` plane (the padding after it is never read); Q4_K: its 148 per block.
        const end = type === 'Q4_K' ? 148 * nBlocks : planeOffsets(type, nBlocks).d + 2 * nBlocks;
        const bad = got.subarray(0, end).findIndex((b, i) => b !== want[i]);
        expect(bad, `${type} seed ${seed}: first differing byte`).toBe(-1);
      });
    }
    if (type === 'Q4_K') {
      it('Q4_K: 148 bytes per block (8 sub-blocks of 16, scale/min bytes, d and dmin), rounded up to 16', () => {
        expect(planarBytes('Q4_K', 7)).toBe(Math.ceil((148 * 7) / 16) * 16);
      });
      continue;
    }
    it(`${type}: planes are 16-byte aligned per block and add up to the raw size rounded up to 16`, () => {
      const n = 7;
      const off = planeOffsets(type, n);
      expect(off.d).toBe((WEIGHT_BLOCK[type].bytes - 2) * n);
      for (const v of Object.values(off)) expect(v % 16 === 0 || v === off.d).toBe(true);
      expect(planarBytes(type, n)).toBe(Math.ceil((WEIGHT_BLOCK[type].bytes * n) / 16) * 16);
    });
  }
});
