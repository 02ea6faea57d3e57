/**
 * Quantized weights in the kernels: fresh random weights are quantized by our ggml-exact quantizer
 * (src/gguf/quantize.ts), then the GPU matmul (block path, `dq32_*`) and the per-element loader
 * (`ld_*`, used by the embedding) must agree with a float64 product over the same dequantized weights
 * (`dequantizeRow`, a port of ggml's dequantize_row_*).
 */
import { describe, expect, it } from 'vitest';
import {
  assertClose,
  freshRng,
  quantizedRows,
  randInt,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { packStep, WEIGHT_BLOCK, type WeightType } from './common.ts';
import { embedWGSL } from './embed.ts';
import { wgslLoader } from './loader.ts';
import {
  gemvWGSL,
  gemvWorkgroupsX,
  matmulWGSL,
  matmulWorkgroupsX,
  rowsWGSL,
  rowsWorkgroupsX,
} from './matmul.ts';
import { isPlanarType, repackHost } from './repack.ts';

const TYPES: { type: WeightType; K: number[] }[] = [
  { type: 'Q8_0', K: [96, 160] },
  { type: 'Q4_0', K: [64, 224] },
  { type: 'Q5_0', K: [64, 160] },
  { type: 'Q4_K', K: [256, 512] },
  { type: 'Q6_K', K: [256, 768] },
  { type: 'Q5_K', K: [256, 768] },
  { type: 'Q3_K', K: [256, 768] },
  { type: 'Q2_K', K: [512, 768] },
  { type: 'Q4_1', K: [96, 224] },
  { type: 'Q5_1', K: [64, 160] },
  { type: 'IQ4_NL', K: [96, 224] },
  { type: 'IQ4_XS', K: [256, 768] },
  { type: 'BF16', K: [37, 100] },
];

describe('quantized weights', () => {
  for (const { type, K: Ks } of TYPES) {
    for (const K of Ks) {
      for (const [T, TT, variant, planar] of [
        [1, 1, 'rows', false],
        [11, 8, 'rows', false],
        [3, 1, 'ksplit', false],
        [2, 1, 'flat', false],
        ...(isPlanarType(type)
          ? ([
              [11, 8, 'rows', true],
              [3, 1, 'ksplit', true],
              [2, 1, 'flat', true],
            ] as const)
          : []),
      ] as const) {
        it(`matmul (${variant}${planar ? ', repacked into planes' : ''}) ${type} K=${K} N=67 T=${T} TT=${TT} equals float64 over the dequantized weights`, async () => {
          const { seed, rng } = freshRng();
          const device = await testDevice();
          const N = 67;
          const q = quantizedRows(type, K, N, rng);
          const nBlocks = (N * K) / WEIGHT_BLOCK[type].size;
          const bytes = planar ? repackHost(type, q.bytes, nBlocks) : q.bytes;
          const w = q.w;
          const x = randomF32(rng, T * K);
          const seg = {
            nUnits: N,
            weights: [{ type, planar: planar ? nBlocks : undefined }],
            dots: [{ w: 0, row: 'u' }],
            epilogue: `y[t * ${N}u + u] = d0;`,
          };
          const opts = { K, TT, segments: [seg], extra: ['var<storage, read_write> y: array<f32>'] };
          const code =
            variant === 'ksplit' ? gemvWGSL(opts) : variant === 'flat' ? rowsWGSL(opts) : matmulWGSL(opts);
          const y = storageFrom(device, new Float32Array(T * N));
          await runWGSL(
            device,
            code,
            [uniformFrom(device, packStep(T, 0)), storageFrom(device, x), storageFrom(device, bytes), y],
            variant === 'ksplit'
              ? [gemvWorkgroupsX([seg]), T]
              : variant === 'flat'
                ? [rowsWorkgroupsX([seg]), T]
                : [matmulWorkgroupsX([seg]), Math.ceil(T / TT)],
          );
          const got = await readF32(device, y, T * N);
          const ref = new Float64Array(T * N);
          const tol = new Float64Array(T * N);
          for (let t = 0; t < T; t++) {
            for (let n = 0; n < N; n++) {
              let s = 0;
              let a = 0;
              for (let k = 0; k < K; k++) {
                s += w[n * K + k] * x[t * K + k];
                a += Math.abs(w[n * K + k] * x[t * K + k]);
              }
              ref[t * N + n] = s;
              tol[t * N + n] = 1e-5 * a + 1e-6;
            }
          }
          assertClose(`matmul ${type} seed ${seed}`, got, ref, tol);
        });
      }
      it(`per-element loader ${type} K=${K} (embedding rows) equals dequantizeRow exactly up to f32`, async () => {
        const { seed, rng } = freshRng();
        const device = await testDevice();
        const N = 9;
        const { bytes, w } = quantizedRows(type, K, N, rng);
        const ids = Uint32Array.from({ length: 5 }, (_, i) => (i === 0 ? N - 1 : randInt(rng, N)));
        const out = storageFrom(device, new Float32Array(ids.length * K));
        await runWGSL(
          device,
          embedWGSL({ nEmbd: K, parts: [{ type, rowStart: 0, rowCount: N }] }),
          [
            uniformFrom(device, packStep(ids.length, 0)),
            storageFrom(device, ids),
            out,
            storageFrom(device, bytes),
          ],
          [Math.ceil(K / 64), ids.length],
        );
        const got = await readF32(device, out, ids.length * K);
        const ref = new Float64Array(ids.length * K);
        ids.forEach((id, t) => {
          ref.set(w.subarray(id * K, (id + 1) * K), t * K);
        });
        assertClose(
          `ld ${type} seed ${seed}`,
          got,
          ref,
          Array.from(ref, (v) => 1e-6 * Math.abs(v) + 1e-9),
        );
      });
    }
  }

  it('wgslLoader covers every weight type', () => {
    for (const t of [
      'F32',
      'F16',
      'BF16',
      'Q8_0',
      'Q4_0',
      'Q5_0',
      'Q4_K',
      'Q6_K',
      'Q5_K',
      'Q3_K',
      'Q2_K',
      'Q4_1',
      'Q5_1',
      'IQ4_NL',
      'IQ4_XS',
    ] as const)
      expect(wgslLoader('w', t)).toContain('fn ld_w');
  });
});
