/**
 * matmulWGSL against a float64 CPU reference: residual, RMSNorm + SwiGLU, F16 weights, several
 * segments (split tensors with rowStart), lastTokenOnly, and the fused QKV + RoPE + KV-store kernel
 * exactly as LlamaModel builds it. Sizes avoid multiples of the workgroup (64) and the K tile (64).
 * Bound per output: |gpu − ref| ≤ 1e-5·Σ|terms| + 1e-6 (terms = the products summed, plus any added value).
 */
import { describe, expect, it } from 'vitest';
import {
  assertClose,
  assertEqual,
  f16Bits,
  f16Value,
  freshRng,
  packF16,
  randInt,
  randomF32,
  readF32,
  readU32,
  refDot,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import type { Rng } from '../../util/prng.ts';
import { ropeTable } from '../model/state.ts';
import { bindingNames } from './bindings.ts';
import { packStep, type WeightType, wgslArrayType } from './common.ts';
import { headSlotDims, qkvRopeMatmul, type WeightParts } from './llama-ops.ts';
import { wgslLoader } from './loader.ts';
import { type MatmulSegment, matmulWGSL, matmulWorkgroupsX } from './matmul.ts';

const REL = 1e-5;
const ABS = 1e-6;
const EPS = 1e-5;

/** A weight or vector as the GPU stores it (`data`) and as the GPU reads it (`vals`, float64). */
interface HostWeight {
  type: WeightType;
  data: Float32Array | Uint32Array;
  vals: Float64Array;
}

function hostWeight(rng: Rng, n: number, type: WeightType, std = 0.5, mean = 0): HostWeight {
  const raw = randomF32(rng, n, std).map((v) => v + mean);
  if (type === 'F32') return { type, data: raw, vals: Float64Array.from(raw) };
  const { words, rounded } = packF16(raw);
  return { type, data: words, vals: rounded };
}

/** RMSNorm of each of the T rows of x [T, K] (ggml_rms_norm, then × g), in float64. */
function rmsnormRef(x: Float32Array, T: number, K: number, g: ArrayLike<number>, eps: number): Float64Array {
  const out = new Float64Array(T * K);
  for (let t = 0; t < T; t++) {
    let ss = 0;
    for (let k = 0; k < K; k++) ss += x[t * K + k] ** 2;
    const inv = 1 / Math.sqrt(ss / K + eps);
    for (let k = 0; k < K; k++) out[t * K + k] = x[t * K + k] * inv * g[k];
  }
  return out;
}

const tolOf = (sumAbs: number) => REL * sumAbs + ABS;

const residualSeg = (type: WeightType, N: number, out = 'y'): MatmulSegment => ({
  nUnits: N,
  weights: [{ type }],
  dots: [{ w: 0, row: 'u' }],
  epilogue: `${out}[t * ${N}u + u] += d0;`,
});

const swigluSeg = (gate: WeightType, up: WeightType, N: number, out = 'hb'): MatmulSegment => ({
  nUnits: N,
  weights: [{ type: gate }, { type: up }],
  dots: [
    { w: 0, row: 'u' },
    { w: 1, row: 'u' },
  ],
  epilogue: `${out}[t * ${N}u + u] = d0 / (1.0 + exp(-d0)) * d1;`,
});

/** Reference SwiGLU of one unit and its bound (error of gate and up propagated through silu(g)·u). */
function swigluRef(g: [number, number], u: [number, number]): [number, number] {
  const sg = g[0] / (1 + Math.exp(-g[0]));
  const v = sg * u[0];
  // |d silu/dg| ≤ 1.1; exp and the division add a few ulp of |v|.
  return [v, REL * (1.1 * Math.abs(u[0]) * g[1] + Math.abs(sg) * u[1] + Math.abs(v)) + ABS];
}

describe('matmulWGSL', () => {
  it('F16 packing matches the GPU loader (even and odd elements)', async () => {
    const device = await testDevice();
    const { seed, rng } = freshRng();
    // Normal f16 values only (GPUs may flush f16 subnormals), plus fixed edge cases.
    const fixed = [1, -1, 65504, -65504, 2 ** -14, 1 / 3, -0.1, 0.5 + 2 ** -11, 1 + 3 * 2 ** -11];
    const n = 101;
    const vals = Float64Array.from({ length: n }, (_, i) =>
      i < fixed.length ? fixed[i] : (rng() - 0.5) * 200,
    );
    const { words, rounded } = packF16(vals);
    // Round-to-nearest-even at exact halfway points.
    expect(f16Value(f16Bits(1 + 2 ** -11))).toBe(1);
    expect(f16Value(f16Bits(1 + 3 * 2 ** -11))).toBe(1 + 2 ** -9);
    expect(f16Bits(65520)).toBe(0x7c00);
    expect(f16Bits(-(2 ** -24))).toBe(0x8001);
    const f16round = (Math as unknown as { f16round?: (x: number) => number }).f16round;
    if (f16round) {
      for (let i = 0; i < 2000; i++) {
        const x = (rng() - 0.5) * 2 ** (randInt(rng, 40) - 24);
        expect(f16Value(f16Bits(x)), `x=${x} seed ${seed}`).toBe(f16round(x));
      }
    }
    const code = `@group(0) @binding(0) var<storage, read> w: ${wgslArrayType('F16')};
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
${wgslLoader('w', 'F16')}
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < ${n}u) { out[g.x] = ld_w(g.x); }
}`;
    const out = storageFrom(device, new Float32Array(n));
    await runWGSL(device, code, [storageFrom(device, words), out], [Math.ceil(n / 64)]);
    assertEqual(`f16 loader (seed ${seed})`, await readF32(device, out, n), rounded);
  });

  for (const c of [
    { K: 172, N: 67, T: 1, TT: 1, type: 'F32' as WeightType },
    { K: 100, N: 130, T: 11, TT: 8, type: 'F32' as WeightType },
    { K: 37, N: 67, T: 3, TT: 8, type: 'F32' as WeightType },
    { K: 37, N: 130, T: 11, TT: 8, type: 'F16' as WeightType },
  ]) {
    it(`residual y += W·x (${c.type}, K=${c.K}, N=${c.N}, T=${c.T}, TT=${c.TT})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { K, N, T, TT } = c;
      const x = randomF32(rng, T * K);
      const W = hostWeight(rng, N * K, c.type);
      const y0 = randomF32(rng, (T + 1) * N); // one spare row that must stay untouched
      const y = storageFrom(device, y0);
      const code = matmulWGSL({
        K,
        TT,
        segments: [residualSeg(c.type, N)],
        extra: ['var<storage, read_write> y: array<f32>'],
      });
      const step = uniformFrom(device, packStep(T, 1 + randInt(rng, 50)));
      await runWGSL(
        device,
        code,
        [step, storageFrom(device, x), storageFrom(device, W.data), y],
        [matmulWorkgroupsX([{ nUnits: N }]), Math.ceil(T / TT)],
      );
      const ref = Float64Array.from(y0);
      const tol = new Float64Array(ref.length);
      for (let t = 0; t < T; t++) {
        for (let u = 0; u < N; u++) {
          const [s, a] = refDot(W.vals, u, x, t, K);
          ref[t * N + u] = y0[t * N + u] + s;
          tol[t * N + u] = tolOf(a + Math.abs(y0[t * N + u]));
        }
      }
      assertClose(`residual (seed ${seed})`, await readF32(device, y), ref, tol);
    });
  }

  for (const c of [
    { K: 100, N: 130, T: 1, TT: 1, gate: 'F32', up: 'F32', g: 'F32' },
    { K: 172, N: 67, T: 11, TT: 8, gate: 'F32', up: 'F32', g: 'F32' },
    { K: 37, N: 130, T: 3, TT: 8, gate: 'F16', up: 'F16', g: 'F16' },
  ] as { K: number; N: number; T: number; TT: number; gate: WeightType; up: WeightType; g: WeightType }[]) {
    it(`RMSNorm + SwiGLU (gate ${c.gate}, up ${c.up}, norm ${c.g}, K=${c.K}, N=${c.N}, T=${c.T}, TT=${c.TT})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { K, N, T, TT } = c;
      const x = randomF32(rng, T * K, 2);
      const g = hostWeight(rng, K, c.g, 0.3, 1);
      const Wg = hostWeight(rng, N * K, c.gate);
      const Wu = hostWeight(rng, N * K, c.up);
      const hb0 = randomF32(rng, (T + 1) * N); // one spare row that must stay untouched
      const hb = storageFrom(device, hb0);
      const code = matmulWGSL({
        K,
        TT,
        norm: { eps: EPS, type: c.g },
        segments: [swigluSeg(c.gate, c.up, N)],
        extra: ['var<storage, read_write> hb: array<f32>'],
      });
      const bufs = [
        uniformFrom(device, packStep(T, randInt(rng, 100))),
        storageFrom(device, x),
        storageFrom(device, g.data),
        storageFrom(device, Wg.data),
        storageFrom(device, Wu.data),
        hb,
      ];
      await runWGSL(device, code, bufs, [matmulWorkgroupsX([{ nUnits: N }]), Math.ceil(T / TT)]);
      const xn = rmsnormRef(x, T, K, g.vals, EPS);
      const ref = Float64Array.from(hb0);
      const tol = new Float64Array(ref.length);
      for (let t = 0; t < T; t++) {
        for (let u = 0; u < N; u++) {
          [ref[t * N + u], tol[t * N + u]] = swigluRef(
            refDot(Wg.vals, u, xn, t, K),
            refDot(Wu.vals, u, xn, t, K),
          );
        }
      }
      assertClose(`swiglu (seed ${seed})`, await readF32(device, hb), ref, tol);
    });
  }

  for (const c of [
    { T: 11, TT: 8, type: 'F32' as WeightType },
    { T: 1, TT: 1, type: 'F16' as WeightType },
    { T: 3, TT: 8, type: 'F16' as WeightType },
  ]) {
    it(`several segments in one dispatch, split tensor with rowStart (${c.type}, T=${c.T}, TT=${c.TT})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { T, TT } = c;
      const K = 100;
      const NA = 130; // logical tensor A [K, 130] split by rows into bindings [0, 67) and [67, 130)
      const split = 67;
      const NB = 37; // B [K, 37]: residual into y2
      const NF = 67; // gate/up [K, 67]: SwiGLU into hb
      const x = randomF32(rng, T * K);
      const g = hostWeight(rng, K, 'F32', 0.3, 1);
      const A = hostWeight(rng, NA * K, c.type);
      const A0 = A.type === 'F32' ? A.data.slice(0, split * K) : packF16(A.vals.slice(0, split * K)).words;
      const A1 = A.type === 'F32' ? A.data.slice(split * K) : packF16(A.vals.slice(split * K)).words;
      const B = hostWeight(rng, NB * K, 'F32');
      const Wg = hostWeight(rng, NF * K, c.type);
      const Wu = hostWeight(rng, NF * K, 'F32');
      const segments: MatmulSegment[] = [
        {
          nUnits: split,
          weights: [{ type: c.type, rowStart: 0 }],
          dots: [{ w: 0, row: 'u' }],
          epilogue: `o[t * ${NA}u + u] = d0;`,
        },
        {
          nUnits: NA - split,
          weights: [{ type: c.type, rowStart: split }],
          dots: [{ w: 0, row: 'u' }],
          epilogue: `o[t * ${NA}u + ${split}u + u] = d0;`,
        },
        residualSeg('F32', NB, 'y2'),
        swigluSeg(c.type, 'F32', NF, 'hb'),
      ];
      const code = matmulWGSL({
        K,
        TT,
        norm: { eps: EPS, type: 'F32' },
        segments,
        extra: [
          'var<storage, read_write> o: array<f32>',
          'var<storage, read_write> y2: array<f32>',
          'var<storage, read_write> hb: array<f32>',
        ],
      });
      const o0 = randomF32(rng, (T + 1) * NA);
      const y20 = randomF32(rng, (T + 1) * NB);
      const hb0 = randomF32(rng, (T + 1) * NF);
      const [o, y2, hb] = [o0, y20, hb0].map((a) => storageFrom(device, a));
      const bufs = [
        uniformFrom(device, packStep(T, 4)),
        storageFrom(device, x),
        storageFrom(device, g.data),
        storageFrom(device, A0),
        storageFrom(device, A1),
        storageFrom(device, B.data),
        storageFrom(device, Wg.data),
        storageFrom(device, Wu.data),
        o,
        y2,
        hb,
      ];
      await runWGSL(device, code, bufs, [matmulWorkgroupsX(segments), Math.ceil(T / TT)]);
      const xn = rmsnormRef(x, T, K, g.vals, EPS);
      const refO = Float64Array.from(o0);
      const tolO = new Float64Array(refO.length);
      const refY = Float64Array.from(y20);
      const tolY = new Float64Array(refY.length);
      const refH = Float64Array.from(hb0);
      const tolH = new Float64Array(refH.length);
      for (let t = 0; t < T; t++) {
        for (let u = 0; u < NA; u++) {
          const [s, a] = refDot(A.vals, u, xn, t, K);
          refO[t * NA + u] = s;
          tolO[t * NA + u] = tolOf(a);
        }
        for (let u = 0; u < NB; u++) {
          const [s, a] = refDot(B.vals, u, xn, t, K);
          refY[t * NB + u] = y20[t * NB + u] + s;
          tolY[t * NB + u] = tolOf(a + Math.abs(y20[t * NB + u]));
        }
        for (let u = 0; u < NF; u++) {
          [refH[t * NF + u], tolH[t * NF + u]] = swigluRef(
            refDot(Wg.vals, u, xn, t, K),
            refDot(Wu.vals, u, xn, t, K),
          );
        }
      }
      assertClose(`split tensor A (seed ${seed})`, await readF32(device, o), refO, tolO);
      assertClose(`residual B (seed ${seed})`, await readF32(device, y2), refY, tolY);
      assertClose(`swiglu (seed ${seed})`, await readF32(device, hb), refH, tolH);
    });
  }

  for (const c of [
    { T: 1, type: 'F32' as WeightType },
    { T: 3, type: 'F16' as WeightType },
    { T: 11, type: 'F32' as WeightType },
  ]) {
    it(`lastTokenOnly logits, output split in two bindings (${c.type}, T=${c.T})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { T } = c;
      const K = 172;
      const parts = [
        { rowStart: 0, rowCount: 67 },
        { rowStart: 67, rowCount: 63 },
      ];
      const nVocab = 130;
      const x = randomF32(rng, T * K, 3);
      const g = hostWeight(rng, K, 'F32', 0.3, 1);
      const W = hostWeight(rng, nVocab * K, c.type);
      const partData = parts.map((p) => {
        const v = W.vals.slice(p.rowStart * K, (p.rowStart + p.rowCount) * K);
        return c.type === 'F32' ? Float32Array.from(v) : packF16(v).words;
      });
      // As LlamaModel.build() makes the output kernel.
      const segments: MatmulSegment[] = parts.map((p) => ({
        nUnits: p.rowCount,
        weights: [{ type: c.type, rowStart: p.rowStart }],
        dots: [{ w: 0, row: 'u' }],
        epilogue: `logits[${p.rowStart}u + u] = d0;`,
      }));
      const code = matmulWGSL({
        K,
        TT: 1,
        norm: { eps: EPS, type: 'F32' },
        lastTokenOnly: true,
        segments,
        extra: ['var<storage, read_write> logits: array<f32>'],
      });
      const l0 = randomF32(rng, nVocab + 3);
      const logits = storageFrom(device, l0);
      const bufs = [
        uniformFrom(device, packStep(T, 9)),
        storageFrom(device, x),
        storageFrom(device, g.data),
        ...partData.map((d) => storageFrom(device, d)),
        logits,
      ];
      await runWGSL(device, code, bufs, [matmulWorkgroupsX(segments), 1]);
      const xn = rmsnormRef(x, T, K, g.vals, EPS);
      const ref = Float64Array.from(l0);
      const tol = new Float64Array(ref.length);
      for (let u = 0; u < nVocab; u++) {
        const [s, a] = refDot(W.vals, u, xn, T - 1, K);
        ref[u] = s;
        tol[u] = tolOf(a);
      }
      assertClose(`logits (seed ${seed})`, await readF32(device, logits), ref, tol);
    });
  }

  type QkvCase = {
    nEmbd: number;
    nHead: number;
    nHeadKv: number;
    headDim: number;
    ropeDim: number;
    ropeType: 'norm' | 'neox';
    base: number;
    T: number;
    TT: number;
    pos0: number;
    type: WeightType;
    /** KV-cache type (default f32). */
    kv?: 'f16' | 'f32';
  };
  const qkvCases: QkvCase[] = [
    {
      nEmbd: 100,
      nHead: 6,
      nHeadKv: 2,
      headDim: 12,
      ropeDim: 8,
      ropeType: 'neox',
      base: 10000,
      T: 3,
      TT: 8,
      pos0: 9,
      type: 'F32',
      kv: 'f16',
    },
    {
      nEmbd: 172,
      nHead: 6,
      nHeadKv: 6,
      headDim: 8,
      ropeDim: 8,
      ropeType: 'norm',
      base: 10000,
      T: 1,
      TT: 1,
      pos0: 150,
      type: 'F16',
      kv: 'f16',
    },
    {
      nEmbd: 100,
      nHead: 6,
      nHeadKv: 2,
      headDim: 12,
      ropeDim: 12,
      ropeType: 'norm',
      base: 10000,
      T: 3,
      TT: 8,
      pos0: 5,
      type: 'F32',
    },
    {
      nEmbd: 37,
      nHead: 12,
      nHeadKv: 4,
      headDim: 12,
      ropeDim: 8,
      ropeType: 'norm',
      base: 1e6,
      T: 11,
      TT: 8,
      pos0: 20,
      type: 'F16',
    },
    {
      nEmbd: 172,
      nHead: 6,
      nHeadKv: 6,
      headDim: 8,
      ropeDim: 8,
      ropeType: 'norm',
      base: 10000,
      T: 1,
      TT: 1,
      pos0: 150,
      type: 'F32',
    },
    {
      nEmbd: 100,
      nHead: 6,
      nHeadKv: 2,
      headDim: 12,
      ropeDim: 8,
      ropeType: 'neox',
      base: 10000,
      T: 1,
      TT: 1,
      pos0: 7,
      type: 'F32',
    },
    {
      nEmbd: 172,
      nHead: 12,
      nHeadKv: 4,
      headDim: 8,
      ropeDim: 8,
      ropeType: 'neox',
      base: 500000,
      T: 11,
      TT: 8,
      pos0: 3,
      type: 'F16',
    },
  ];
  for (const c of qkvCases) {
    const kv = c.kv ?? 'f32';
    it(`fused QKV + RoPE (${c.ropeType}, hd=${c.headDim}, ropeDim=${c.ropeDim}) + KV store (${c.type}, nEmbd=${c.nEmbd}, nHead=${c.nHead}/${c.nHeadKv}, T=${c.T}, TT=${c.TT}, pos0=${c.pos0}, ${kv} cache)`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { nEmbd: K, nHead, nHeadKv, headDim: HD, ropeDim: RD, T, TT, pos0 } = c;
      const qDim = nHead * HD;
      const kvDim = nHeadKv * HD;
      const nCtx = pos0 + T + 2;
      const x = randomF32(rng, T * K);
      const g = hostWeight(rng, K, 'F32', 0.3, 1);
      const Wq = hostWeight(rng, qDim * K, c.type);
      const Wk = hostWeight(rng, kvDim * K, c.type);
      const Wv = hostWeight(rng, kvDim * K, c.type);
      const one = (N: number): WeightParts => ({ type: c.type, parts: [{ rowStart: 0, rowCount: N }] });
      const spec = qkvRopeMatmul(
        {
          nEmbd: K,
          nHead,
          nHeadKv,
          headDim: HD,
          ropeDim: RD,
          neox: c.ropeType === 'neox',
          norm: { eps: EPS, type: 'F32' },
          bias: false,
          deferRope: false,
          kvType: kv,
        },
        one(qDim),
        one(kvDim),
        one(kvDim),
      );
      const code = matmulWGSL({ ...spec, TT });
      const q0 = randomF32(rng, (T + 1) * qDim);
      const k0 = randomF32(rng, nCtx * kvDim);
      const v0 = randomF32(rng, nCtx * kvDim);
      // An f16 cache starts as the f16 words of k0/v0 (and is compared after rounding them).
      const cacheInit = (a: Float32Array) => (kv === 'f16' ? packF16(a).words : a);
      const qout = storageFrom(device, q0);
      const kc = storageFrom(device, cacheInit(k0));
      const vc = storageFrom(device, cacheInit(v0));
      // Bound by name, as LlamaModel.build() binds them.
      const named: Record<string, GPUBuffer> = {
        step: uniformFrom(device, packStep(T, pos0)),
        x: storageFrom(device, x),
        gnorm: storageFrom(device, g.data),
        w_attn_q: storageFrom(device, Wq.data),
        w_attn_k: storageFrom(device, Wk.data),
        w_attn_v: storageFrom(device, Wv.data),
        rope: storageFrom(device, ropeTable(nCtx, RD, c.base)),
        q_out: qout,
        k_cache: kc,
        v_cache: vc,
      };
      expect([...bindingNames(code)].sort()).toEqual(Object.keys(named).sort());
      const bufs = bindingNames(code).map((n) => named[n]);
      await runWGSL(device, code, bufs, [matmulWorkgroupsX(spec.segments), Math.ceil(T / TT)]);

      const xn = rmsnormRef(x, T, K, g.vals, EPS);
      /** Projection of token t through W (N rows), with llama.cpp RoPE at position pos when `rope`. */
      const project = (W: HostWeight, N: number, t: number, pos: number, rope: boolean) => {
        const raw = new Float64Array(N);
        const abs = new Float64Array(N);
        for (let r = 0; r < N; r++) [raw[r], abs[r]] = refDot(W.vals, r, xn, t, K);
        const out = Float64Array.from(raw);
        const tol = abs.map(tolOf);
        if (rope) {
          for (let h = 0; h < N / HD; h++) {
            for (let i = 0; i < RD / 2; i++) {
              const [a, b] = c.ropeType === 'neox' ? [i, i + RD / 2] : [2 * i, 2 * i + 1];
              const theta = pos * c.base ** ((-2 * i) / RD);
              const [ia, ib] = [h * HD + a, h * HD + b];
              out[ia] = raw[ia] * Math.cos(theta) - raw[ib] * Math.sin(theta);
              out[ib] = raw[ia] * Math.sin(theta) + raw[ib] * Math.cos(theta);
              tol[ia] = tol[ib] = tolOf(abs[ia] + abs[ib]);
            }
          }
        }
        return { out, tol };
      };
      // Q and K heads are stored in slot order (headSlotDims): slot s of a head holds dimension dims[s].
      const dims = headSlotDims(HD, RD, c.ropeType === 'neox');
      const toSlots = (a: Float64Array) => {
        const o = new Float64Array(a.length);
        for (let h = 0; h < a.length / HD; h++)
          for (let k = 0; k < HD; k++) o[h * HD + k] = a[h * HD + dims[k]];
        return o;
      };
      const refQ = Float64Array.from(q0);
      const tolQ = new Float64Array(refQ.length);
      const refK = Float64Array.from(k0);
      const tolK = new Float64Array(refK.length);
      const refV = Float64Array.from(v0);
      const tolV = new Float64Array(refV.length);
      for (let t = 0; t < T; t++) {
        const pos = pos0 + t;
        const q = project(Wq, qDim, t, pos, true);
        refQ.set(toSlots(q.out), t * qDim);
        tolQ.set(toSlots(q.tol), t * qDim);
        const k = project(Wk, kvDim, t, pos, true);
        refK.set(toSlots(k.out), pos * kvDim);
        tolK.set(toSlots(k.tol), pos * kvDim);
        const v = project(Wv, kvDim, t, pos, false);
        refV.set(v.out, pos * kvDim);
        tolV.set(v.tol, pos * kvDim);
      }
      // Untouched entries (spare q row, cache rows outside pos0..pos0+T−1) have tolerance 0.
      assertClose(`q after RoPE (seed ${seed})`, await readF32(device, qout), refQ, tolQ);
      if (kv === 'f16') {
        // The cache holds the f16 rounding of the f32 result: allow the rounding (2^-11 relative) on top.
        const read = async (b: GPUBuffer, n: number) => {
          const h = new Uint16Array((await readU32(device, b, n / 2)).buffer);
          return Float64Array.from(h, f16Value);
        };
        const n = nCtx * kvDim;
        const loose = (ref: Float64Array, tol: Float64Array) =>
          tol.map((x, i) => x + Math.abs(ref[i]) * 2 ** -11);
        const kRef = Float64Array.from(refK, (v, i) => (tolK[i] === 0 ? packF16([v]).rounded[0] : v));
        const vRef = Float64Array.from(refV, (v, i) => (tolV[i] === 0 ? packF16([v]).rounded[0] : v));
        assertClose(`K cache f16 (seed ${seed})`, await read(kc, n), kRef, loose(kRef, tolK));
        assertClose(`V cache f16 (seed ${seed})`, await read(vc, n), vRef, loose(vRef, tolV));
      } else {
        assertClose(`K cache (seed ${seed})`, await readF32(device, kc), refK, tolK);
        assertClose(`V cache (seed ${seed})`, await readF32(device, vc), refV, tolV);
      }
    });
  }
});
