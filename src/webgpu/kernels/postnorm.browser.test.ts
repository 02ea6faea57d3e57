/**
 * rmsNormRowsWGSL (prefill's norm pass) against ggml_rms_norm × weight in float64: token counts around the
 * workgroup's threads (1, 7, 15, 16, 17, 40) so partial workgroups and the `step.nTokens` cut both show,
 * widths 4, 20, 68 and 516 (off every multiple of 32), F32 and F16 norm weights, rows past the batch left
 * untouched, and the argument errors.
 */
import { describe, expect, it } from 'vitest';
import {
  assertClose,
  freshRng,
  normed,
  packF16,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { packStep } from './common.ts';
import { rmsNormRowsWGSL } from './postnorm.ts';

describe('rmsNormRowsWGSL', () => {
  it('writes x / sqrt(mean(x²) + eps) · w for each token of the batch and nothing past it', async () => {
    const device = await testDevice();
    const threads = 16;
    for (const n of [4, 20, 68, 516]) {
      for (const T of [1, 7, 15, 16, 17, 40]) {
        for (const normType of ['F32', 'F16'] as const) {
          const { seed, rng } = freshRng();
          const what = `n ${n} T ${T} ${normType} (seed ${seed})`;
          // Rows of different scales, so a norm taken over the wrong row shows.
          const x = randomF32(rng, T * n);
          for (let t = 0; t < T; t++) for (let i = 0; i < n; i++) x[t * n + i] *= 0.01 + 3 * t;
          const g32 = randomF32(rng, n);
          const f16 = packF16(g32);
          const g = normType === 'F16' ? Float32Array.from(f16.rounded) : g32;
          const eps = 1e-5;
          const ref = normed(x, T, n, eps, g);
          // One more row than the batch, filled with a sentinel the kernel must not touch.
          const out = storageFrom(device, new Float32Array((T + 1) * n).fill(-7));
          await runWGSL(
            device,
            rmsNormRowsWGSL({ n, eps, normType, threads }),
            [
              uniformFrom(device, packStep(T, 0)),
              storageFrom(device, x),
              storageFrom(device, normType === 'F16' ? f16.words : g32),
              out,
            ],
            [1, Math.ceil(T / threads)],
          );
          const got = await readF32(device, out, (T + 1) * n);
          // f32: each output is a product of three rounded factors, the inverse RMS a sum of n squares.
          const tol = ref.map((v) => 1e-6 + 4e-6 * Math.abs(v));
          assertClose(what, got.subarray(0, T * n), ref, tol);
          expect(
            got.subarray(T * n).every((v) => v === -7),
            `${what}: row past the batch`,
          ).toBe(true);
        }
      }
    }
  });

  it('rejects widths that are not a positive multiple of 4 and thread counts outside 1..256', () => {
    for (const n of [0, 6, 30.5, -4])
      expect(() => rmsNormRowsWGSL({ n, eps: 1e-5, normType: 'F32', threads: 16 })).toThrow(/multiple of 4/);
    for (const threads of [0, 257, 1.5])
      expect(() => rmsNormRowsWGSL({ n: 64, eps: 1e-5, normType: 'F32', threads })).toThrow(/threads/);
  });
});
