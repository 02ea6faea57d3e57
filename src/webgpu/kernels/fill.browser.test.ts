/**
 * fillWGSL (synthetic models' weights made on the GPU): for every weight type the engine runs, the
 * filled blocks, dequantized by ggml's `dequantize_row_*` (gguf/quantize.ts), are all finite, centred and
 * have a standard deviation near the asked one (within a factor of 3: the scale fields are set, the
 * other bytes are random), so a synthetic model of any SYNTHETIC_FTYPES type computes numbers, not NaN.
 */
import { describe, expect, it } from 'vitest';
import { ggmlTypeByName } from '../../gguf/ggml-types.ts';
import { dequantizeRow } from '../../gguf/quantize.ts';
import { readU32, runWGSL, testDevice } from '../../testing/kernel-util.ts';
import { WEIGHT_BLOCK, WEIGHT_TYPES } from './common.ts';
import { FILL_PARAMS_BYTES, fillWGSL, packFillParams } from './fill.ts';

describe('fillWGSL', () => {
  for (const t of WEIGHT_TYPES) {
    it(`${t}: finite weights with about the asked std`, async () => {
      const device = await testDevice();
      const n = 256 * 64; // 64 super-blocks
      const bytes = (n / WEIGHT_BLOCK[t].size) * WEIGHT_BLOCK[t].bytes;
      const nWords = Math.ceil(bytes / 4);
      const out = device.createBuffer({
        size: nWords * 4,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
      });
      const params = device.createBuffer({
        size: FILL_PARAMS_BYTES,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      const std = 0.05;
      device.queue.writeBuffer(params, 0, packFillParams({ seed: 7, tensorId: 3, nWords, mode: 0, std }));
      await runWGSL(device, fillWGSL(t), [params, out], [Math.ceil(nWords / 64)]);
      const raw = new Uint8Array((await readU32(device, out, nWords)).buffer).subarray(0, bytes);
      const w = dequantizeRow(ggmlTypeByName(t).id, raw, n);
      let sum = 0;
      let sq = 0;
      for (const x of w) {
        expect(Number.isFinite(x)).toBe(true);
        sum += x;
        sq += x * x;
      }
      const mean = sum / n;
      const sd = Math.sqrt(sq / n - mean * mean);
      expect(sd, `${t} std`).toBeGreaterThan(std / 3);
      expect(sd, `${t} std`).toBeLessThan(std * 3);
      expect(Math.abs(mean), `${t} mean`).toBeLessThan(std * 1.5);
      out.destroy();
      params.destroy();
    });
  }
});
