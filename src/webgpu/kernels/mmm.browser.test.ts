/**
 * mmmWGSL (the prefill matrix × matrix tile kernel) against float64 on random inputs: every weight type
 * (raw and repacked into planes), token counts and row counts off every tile multiple (T = 1, 7, 33, 65;
 * N = 37, 101 against tiles of 32 tokens × 64 rows), RMSNorm fused or not, float rows whose K is not a
 * multiple of 32 (stories260K's ffn_down has K = 172), two-dot units reading two weights of different
 * types (SwiGLU of gate and up) beside a second segment in one dispatch. Weights are quantized by our
 * ggml-exact quantizer and the reference uses ggml's dequantization (src/gguf/quantize.ts).
 * Bound per output: |gpu − ref| ≤ 2e-5·Σ|terms| + 1e-6 (f32 accumulation over ≤ 768 terms).
 * The integer-dot tile (`intDot`, where the adapter has WGSL's packed_4x8_integer_dot_product) against
 * float64 of the same weights and the activations rounded to int8 per 32 (ggml's quantize_row_q8_0), with
 * room for two activations rounding one step the other way.
 */
import { describe, expect, it } from 'vitest';
import {
  assertClose,
  freshRng,
  int8Activations,
  normed,
  quantizedRows,
  randomF32,
  readF32,
  refDot,
  runWGSL,
  storageFrom,
  testGpu,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { packStep, WEIGHT_BLOCK, type WeightType } from './common.ts';
import type { MatmulSegment } from './matmul.ts';
import { INT_DOT_TYPES, mmmWGSL, mmmWorkgroupsX, TILE_TOKENS } from './mmm.ts';
import { isPlanarType, repackHost } from './repack.ts';

const EPS = 1e-5;

const TYPES: { type: WeightType; K: number }[] = [
  { type: 'F32', K: 172 },
  { type: 'F16', K: 100 },
  { type: 'BF16', K: 224 },
  { type: 'Q8_0', K: 352 },
  { type: 'Q4_0', K: 224 },
  { type: 'Q5_0', K: 160 },
  { type: 'Q4_K', K: 768 },
  { type: 'Q6_K', K: 512 },
  { type: 'Q4_1', K: 224 },
  { type: 'Q5_1', K: 160 },
  { type: 'IQ4_NL', K: 352 },
  { type: 'IQ4_XS', K: 512 },
  { type: 'Q5_K', K: 512 },
  { type: 'Q3_K', K: 768 },
  { type: 'Q2_K', K: 768 },
];

describe('mmmWGSL', () => {
  for (const { type, K, planar, intDot } of TYPES.flatMap((t) =>
    (isPlanarType(t.type) ? [false, true] : [false]).flatMap((planar) =>
      (INT_DOT_TYPES.includes(t.type) ? [false, true] : [false]).map((intDot) => ({ ...t, planar, intDot })),
    ),
  )) {
    // The integer-dot tile shares the float tile's indexing, tested on all four: two cases keep its time down.
    it(`${type}${planar ? ' repacked into planes' : ''}${intDot ? ' integer dot' : ''} K=${K}: T = ${intDot ? '7, 65' : '1, 7, 33, 65'} tokens, N off the tile, with and without RMSNorm, equals float64`, async (ctx) => {
      const gpu = await testGpu();
      const { device } = gpu;
      if (intDot && !gpu.wgslFeatures.has('packed_4x8_integer_dot_product')) ctx.skip();
      // Two shaders (N and the norm are compiled in, T and pos0 are uniforms), each run at two token
      // counts: compiling dominates a case on SwiftShader. N = 37 is one partial row tile, 101 a whole
      // one and a partial one; T = 1, 7 are within one token tile, 33 and 65 end one past a tile.
      const cases = [
        [1, 37, true, 0],
        [7, 101, false, 3],
        [33, 37, true, 0],
        [65, 101, false, 9],
      ] as const;
      for (const [T, N, norm, pos0] of intDot ? ([cases[1], [65, 37, true, 9]] as const) : cases) {
        const { seed, rng } = freshRng();
        const raw = quantizedRows(type, K, N, rng);
        const nBlocks = (N * K) / WEIGHT_BLOCK[type].size;
        const bytes = planar ? repackHost(type, raw.bytes, nBlocks) : raw.bytes;
        const x = randomF32(rng, T * K);
        const g = norm ? randomF32(rng, K, 0.5).map((v) => v + 1) : undefined;
        // The epilogue also writes pos, so the test sees that pos = pos0 + t.
        const seg: MatmulSegment = {
          nUnits: N,
          weights: [{ type, planar: planar ? nBlocks : undefined }],
          dots: [{ w: 0, row: 'u' }],
          epilogue: `y[t * ${N}u + u] = d0; p[t * ${N}u + u] = f32(pos);`,
        };
        const code = mmmWGSL(
          {
            K,
            TT: TILE_TOKENS,
            norm: norm ? { eps: EPS, type: 'F32' } : undefined,
            segments: [seg],
            extra: ['var<storage, read_write> y: array<f32>', 'var<storage, read_write> p: array<f32>'],
          },
          { intDot },
        );
        const y = storageFrom(device, new Float32Array(T * N).fill(Number.NaN));
        const p = storageFrom(device, new Float32Array(T * N).fill(Number.NaN));
        const bufs = [uniformFrom(device, packStep(T, pos0)), storageFrom(device, x)];
        if (g) bufs.push(storageFrom(device, g));
        bufs.push(storageFrom(device, bytes), y, p);
        await runWGSL(device, code, bufs, [mmmWorkgroupsX([seg]), Math.ceil(T / TILE_TOKENS)]);
        const got = await readF32(device, y, T * N);
        const int8 = intDot ? int8Activations(x, T, K, g, EPS) : undefined;
        const xn = int8 ? int8.out : normed(x, T, K, EPS, g);
        const ref = new Float64Array(T * N);
        const tol = new Float64Array(T * N);
        const refPos = new Float64Array(T * N);
        for (let t = 0; t < T; t++) {
          for (let n = 0; n < N; n++) {
            const [s, a] = refDot(raw.w, n, xn, t, K);
            ref[t * N + n] = s;
            let flip = 0;
            if (int8)
              for (let k = 0; k < K; k++)
                flip = Math.max(flip, Math.abs(raw.w[n * K + k]) * int8.step[t * K + k]);
            tol[t * N + n] = 2e-5 * a + 1e-6 + 2 * flip;
            refPos[t * N + n] = pos0 + t;
          }
        }
        const label = `${type}${planar ? ' planar' : ''}${intDot ? ' int8' : ''} T=${T} N=${N} norm=${norm} seed ${seed}`;
        assertClose(label, got, ref, tol);
        assertClose(`${label} pos`, await readF32(device, p, T * N), refPos, new Float64Array(T * N));
      }
    });
  }

  for (const intDot of [false, true])
    it(`two-dot units (SwiGLU of a Q4_K gate and a Q6_K up) beside a Q8_0 segment with a reversed row order, 70 tokens${intDot ? ', integer dot' : ''}`, async (ctx) => {
      const gpu = await testGpu();
      const { device } = gpu;
      if (intDot && !gpu.wgslFeatures.has('packed_4x8_integer_dot_product')) ctx.skip();
      const K = 256;
      const { seed, rng } = freshRng();
      const T = 70;
      const NA = 45;
      const NB = 67;
      const gate = quantizedRows('Q4_K', K, NA, rng);
      const up = quantizedRows('Q6_K', K, NA, rng);
      const other = quantizedRows('Q8_0', K, NB, rng);
      const x = randomF32(rng, T * K);
      const g = randomF32(rng, K, 0.5).map((v) => v + 1);
      const segs: MatmulSegment[] = [
        {
          nUnits: NA,
          weights: [{ type: 'Q4_K' }, { type: 'Q6_K' }],
          dots: [
            { w: 0, row: 'u' },
            { w: 1, row: 'u' },
          ],
          epilogue: `hb[t * ${NA}u + u] = d0 / (1.0 + exp(-d0)) * d1;`,
        },
        {
          nUnits: NB,
          weights: [{ type: 'Q8_0' }],
          dots: [{ w: 0, row: `${NB - 1}u - u` }],
          epilogue: `y[t * ${NB}u + u] = d0;`,
        },
      ];
      const code = mmmWGSL(
        {
          K,
          TT: TILE_TOKENS,
          norm: { eps: EPS, type: 'F32' },
          segments: segs,
          extra: ['var<storage, read_write> hb: array<f32>', 'var<storage, read_write> y: array<f32>'],
        },
        { intDot },
      );
      const hb = storageFrom(device, new Float32Array(T * NA).fill(Number.NaN));
      const y = storageFrom(device, new Float32Array(T * NB).fill(Number.NaN));
      await runWGSL(
        device,
        code,
        [
          uniformFrom(device, packStep(T, 0)),
          storageFrom(device, x),
          storageFrom(device, g),
          storageFrom(device, gate.bytes),
          storageFrom(device, up.bytes),
          storageFrom(device, other.bytes),
          hb,
          y,
        ],
        [mmmWorkgroupsX(segs), Math.ceil(T / TILE_TOKENS)],
      );
      const int8 = intDot ? int8Activations(x, T, K, g, EPS) : undefined;
      const xn = int8 ? int8.out : normed(x, T, K, EPS, g);
      // The integer-dot path: two activations may round one step the other way, at the row's largest |w|.
      const flip = (w: Float64Array | Float32Array, n: number, t: number) => {
        let f = 0;
        if (int8) for (let k = 0; k < K; k++) f = Math.max(f, Math.abs(w[n * K + k]) * int8.step[t * K + k]);
        return 2 * f;
      };
      const refH = new Float64Array(T * NA);
      const tolH = new Float64Array(T * NA);
      const refY = new Float64Array(T * NB);
      const tolY = new Float64Array(T * NB);
      for (let t = 0; t < T; t++) {
        for (let n = 0; n < NA; n++) {
          const [a, aa] = refDot(gate.w, n, xn, t, K);
          const [b, ba] = refDot(up.w, n, xn, t, K);
          const silu = a / (1 + Math.exp(-a));
          refH[t * NA + n] = silu * b;
          tolH[t * NA + n] =
            4e-5 * (aa * Math.abs(b) + ba * Math.abs(silu)) +
            1e-6 +
            flip(gate.w, n, t) * Math.abs(b) * 1.1 +
            flip(up.w, n, t) * (Math.abs(silu) + flip(gate.w, n, t));
        }
        for (let n = 0; n < NB; n++) {
          const [s, a] = refDot(other.w, NB - 1 - n, xn, t, K);
          refY[t * NB + n] = s;
          tolY[t * NB + n] = 2e-5 * a + 1e-6 + flip(other.w, NB - 1 - n, t);
        }
      }
      assertClose(
        `swiglu${intDot ? ' int8' : ''} seed ${seed}`,
        await readF32(device, hb, T * NA),
        refH,
        tolH,
      );
      assertClose(`segment 2 seed ${seed}`, await readF32(device, y, T * NB), refY, tolY);
    });

  it('refuses lastTokenOnly and units of more than two dot products', () => {
    const seg = { nUnits: 1, weights: [{ type: 'F32' as const }], dots: [{ w: 0, row: 'u' }], epilogue: '' };
    expect(() => mmmWGSL({ K: 64, TT: 32, segments: [seg], lastTokenOnly: true })).toThrow(/lastTokenOnly/);
    expect(() =>
      mmmWGSL({ K: 64, TT: 32, segments: [{ ...seg, dots: [seg.dots[0], seg.dots[0], seg.dots[0]] }] }),
    ).toThrow(/1–2 dots/);
    expect(() => mmmWGSL({ K: 64, TT: 32, segments: [seg] }, { intDot: true })).toThrow(
      /integer-dot tile takes/,
    );
  });
});
