/**
 * mmvWGSL (the decode matrix × vector kernels) against float64 on random inputs: the float and legacy
 * weight types (k-quants and IQ4_XS: mmv-kquants.browser.test.ts; the cases: mmv-cases.ts), the
 * thread-per-rows layout (lanes = 1) and K-split layouts reduced through subgroups and through workgroup
 * memory, packed-4×8 unpacking on and off, 1–2 tokens in groups of 1, 2–5 in groups of 4, 1, 8 and 13
 * in groups of 8 (the software adapters' prefill; partial token groups), 1, 16 and 19 in groups of 16 for
 * the shared-activation layouts, RMSNorm fused or not (each layout one grouping and norm setting per
 * type, rotating over the types: mmv-cases.ts planCases), two-dot units (SwiGLU) and several segments of
 * different types in one dispatch; the wide layouts (64–256 lanes) at K = 16736 (523 chunks: several
 * passes over K, the last partial).
 * Sizes are off every multiple of the layout (N prime-ish, K an odd number of chunks). Weights are
 * quantized by our ggml-exact quantizer and the reference uses ggml's dequantization (src/gguf/quantize.ts).
 * Bound per output: |gpu − ref| ≤ 2e-5·Σ|terms| + 1e-6.
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
import { layouts, type MmvTypeCase, mmvTypeTests } from '../../testing/mmv-cases.ts';
import { packStep } from './common.ts';
import type { MatmulSegment } from './matmul.ts';
import { mmvWGSL, mmvWorkgroupsX } from './mmv.ts';

const EPS = 1e-5;

describe('mmvWGSL', () => {
  it("the CI's SwiftShader runs every layout family, none left out for a missing feature", async (ctx) => {
    // layouts() leaves out what the adapter cannot run (subgroups, packed integer dots, one subgroup
    // size); on the adapter CI runs, each family must be there, or the tests below would test less
    // without a word. Other adapters: whatever they can run.
    const gpu = await testGpu();
    if (gpu.adapter.info.architecture !== 'swiftshader') ctx.skip();
    const ls = (await layouts()).map((l) => l.layout);
    expect(ls.some((l) => l.reduce === 'subgroup' && !l.intDot)).toBe(true);
    expect(ls.some((l) => l.reduce === 'hybrid' && !l.intDot)).toBe(true);
    expect(ls.some((l) => l.reduce === 'subgroup' && l.intDot)).toBe(true);
    expect(ls.some((l) => l.reduce === 'hybrid' && l.intDot && l.lanes === 256)).toBe(true);
    expect(ls.some((l) => l.shareX && !l.intDot)).toBe(true);
    expect(ls.some((l) => l.shareX && l.intDot)).toBe(true);
    expect(ls.some((l) => l.reduce === 'shared' && l.intDot && !l.shareX)).toBe(true);
    expect(ls.filter((l) => l.packed).length).toBeGreaterThan(0);
  });

  const types: MmvTypeCase[] = [
    { type: 'F32', K: 96 },
    { type: 'F16', K: 160 },
    { type: 'BF16', K: 224 },
    { type: 'Q8_0', K: 352 },
    { type: 'Q4_0', K: 224 },
    { type: 'Q5_0', K: 160 },
    { type: 'Q4_1', K: 224 },
    { type: 'Q5_1', K: 160 },
    { type: 'IQ4_NL', K: 352 },
  ];
  mmvTypeTests(types);

  it('two-dot units (SwiGLU of gate and up) and three segments of different types in one dispatch', async () => {
    const gpu = await testGpu();
    const device = gpu.device;
    const K = 256;
    for (const { name, layout } of await layouts()) {
      const { seed, rng } = freshRng();
      const T = 2;
      const NA = 29;
      const NB = 45;
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
      const code = mmvWGSL({
        K,
        TT: 1,
        norm: { eps: EPS, type: 'F32' },
        segments: segs,
        extra: ['var<storage, read_write> hb: array<f32>', 'var<storage, read_write> y: array<f32>'],
        layout,
      });
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
        [mmvWorkgroupsX(segs, layout), T],
      );
      const xn = normed(x, T, K, EPS, g);
      const int8 = layout.intDot ? int8Activations(x, T, K, g) : undefined;
      const refH = new Float64Array(T * NA);
      const tolH = new Float64Array(T * NA);
      const refY = new Float64Array(T * NB);
      const tolY = new Float64Array(T * NB);
      for (let t = 0; t < T; t++) {
        for (let n = 0; n < NA; n++) {
          // With the int8 path the Q4_K gate sees int8 activations; the Q6_K up (not planar) stays float.
          const [a, aa] = refDot(gate.w, n, int8 ? int8.out : xn, t, K);
          const [b, ba] = refDot(up.w, n, xn, t, K);
          let flip = 0;
          if (int8)
            for (let k = 0; k < K; k++)
              flip = Math.max(flip, Math.abs(gate.w[n * K + k]) * int8.step[t * K + k]);
          const silu = a / (1 + Math.exp(-a));
          refH[t * NA + n] = silu * b;
          tolH[t * NA + n] =
            4e-5 * (aa * Math.abs(b) + ba * Math.abs(silu)) + 1e-6 + 2.2 * flip * Math.abs(b);
        }
        for (let n = 0; n < NB; n++) {
          const [s, a] = refDot(other.w, NB - 1 - n, xn, t, K);
          refY[t * NB + n] = s;
          tolY[t * NB + n] = 2e-5 * a + 1e-6;
        }
      }
      assertClose(`swiglu ${name} seed ${seed}`, await readF32(device, hb, T * NA), refH, tolH);
      assertClose(`segment 2 ${name} seed ${seed}`, await readF32(device, y, T * NB), refY, tolY);
    }
  });

  it('IQ4_NL gate and IQ4_XS up (one kvalues table) beside a Q5_1 segment and a Q4_1 one in one dispatch', async () => {
    const gpu = await testGpu();
    const device = gpu.device;
    const K = 512;
    for (const { name, layout } of await layouts()) {
      const { seed, rng } = freshRng();
      const T = 3;
      const NA = 23;
      const NB = 41;
      const gate = quantizedRows('IQ4_NL', K, NA, rng);
      const up = quantizedRows('IQ4_XS', K, NA, rng);
      const b1 = quantizedRows('Q5_1', K, NB, rng);
      const b2 = quantizedRows('Q4_1', K, NB, rng);
      const x = randomF32(rng, T * K);
      const g = randomF32(rng, K, 0.5).map((v) => v + 1);
      const segs: MatmulSegment[] = [
        {
          nUnits: NA,
          weights: [{ type: 'IQ4_NL' }, { type: 'IQ4_XS' }],
          dots: [
            { w: 0, row: 'u' },
            { w: 1, row: 'u' },
          ],
          epilogue: `hb[t * ${NA}u + u] = d0 / (1.0 + exp(-d0)) * d1;`,
        },
        {
          nUnits: NB,
          weights: [{ type: 'Q5_1' }, { type: 'Q4_1' }],
          dots: [
            { w: 0, row: 'u' },
            { w: 1, row: `${NB - 1}u - u` },
          ],
          epilogue: `y[t * ${NB}u + u] = d0 - d1;`,
        },
      ];
      const code = mmvWGSL({
        K,
        TT: 2,
        norm: { eps: EPS, type: 'F32' },
        segments: segs,
        extra: ['var<storage, read_write> hb: array<f32>', 'var<storage, read_write> y: array<f32>'],
        layout,
      });
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
          storageFrom(device, b1.bytes),
          storageFrom(device, b2.bytes),
          hb,
          y,
        ],
        [mmvWorkgroupsX(segs, layout), Math.ceil(T / 2)],
      );
      // None of these types takes the integer-dot path: float activations in every layout.
      const xn = normed(x, T, K, EPS, g);
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
          tolH[t * NA + n] = 4e-5 * (aa * Math.abs(b) + ba * Math.abs(silu)) + 1e-6;
        }
        for (let n = 0; n < NB; n++) {
          const [s1, a1] = refDot(b1.w, n, xn, t, K);
          const [s2, a2] = refDot(b2.w, NB - 1 - n, xn, t, K);
          refY[t * NB + n] = s1 - s2;
          tolY[t * NB + n] = 2e-5 * (a1 + a2) + 1e-6;
        }
      }
      assertClose(`iq4 swiglu ${name} seed ${seed}`, await readF32(device, hb, T * NA), refH, tolH);
      assertClose(`q5_1 − q4_1 ${name} seed ${seed}`, await readF32(device, y, T * NB), refY, tolY);
    }
  });

  it('refuses K that is not a whole number of 32-weight chunks, and more than 16 tokens per workgroup', () => {
    const base = {
      segments: [
        { nUnits: 1, weights: [{ type: 'F32' as const }], dots: [{ w: 0, row: 'u' }], epilogue: '' },
      ],
      extra: [],
      layout: { lanes: 1, units: 1, threads: 64, reduce: 'shared' as const, packed: false },
    };
    expect(() => mmvWGSL({ ...base, K: 100, TT: 1 })).toThrow(/multiple of 32/);
    expect(() => mmvWGSL({ ...base, K: 64, TT: 17 })).toThrow(/1–16 tokens/);
  });
});
