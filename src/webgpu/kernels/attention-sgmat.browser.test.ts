/**
 * The prefill attention on subgroup matrices (attention-sgmat.ts) against a float64 causal softmax
 * attention, on SwiftShader, which has no subgroup matrices: the kernel runs through the TEST DOUBLE
 * src/testing/sgmat-emulator.ts (the documented load/store/multiply semantics in plain WGSL). Prompt
 * lengths 1, 7, 33, 100, 257 at cached depths 0, 17, 300; GQA 1, 4, 8; head sizes 64, 80, 128; f16, f32,
 * Q8_0/Q4_0 caches; soft-cap and a sliding window; the 16×16×16 and 16×8×8 configurations. The reference
 * reads what the kernel reads (q · scale, K and V rounded to f16; quantized rows dequantized); the
 * tolerance covers P rounded to f16 (2⁻¹¹ of each weight) and f32 sums.
 * The load-time self-test (attention-sgmat-check.ts): the comparison passes a correct stand-in (the float
 * kernel itself) and fails it with the causal mask off by one position, saying where, and a
 * compile error; the emulated kernel passes it; the choice over configurations on a stubbed adapter falls
 * through a failing one and records each verdict, and says why where the adapter has no subgroup matrices.
 */
import { describe, expect, it } from 'vitest';
import { dequantizeRow, quantizeRow } from '../../gguf/quantize.ts';
import type { LlamaConfig } from '../../model/config.ts';
import {
  assertClose,
  freshRng,
  packF16,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  testGpu,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import { emulateSubgroupMatrix } from '../../testing/sgmat-emulator.ts';
import type { GpuContext, SubgroupMatrixConfig } from '../device.ts';
import { resolvePrefillAttention } from '../kernel-plan.ts';
import { type AttentionPolicy, GPU_ATTENTION } from '../model/options.ts';
import type { KvType } from './attention.ts';
import { prefillAttentionWGSL, prefillAttentionWorkgroups } from './attention-prefill.ts';
import {
  prefillAttentionSgmatWGSL,
  type SgmatAttentionOptions,
  type SgmatAttentionTile,
  sgmatAttentionPlan,
  sgmatAttentionProblem,
  sgmatAttentionWorkgroups,
} from './attention-sgmat.ts';
import {
  type AttentionCandidate,
  type AttentionShape,
  type AttentionTimer,
  type AttentionTrial,
  checkAttentionAgainstFloat,
  chooseSgmatAttention,
  type SgmatAttentionKernel,
  timeAttentionKernels,
} from './attention-sgmat-check.ts';
import { packStep } from './common.ts';

const T16: SgmatAttentionTile = { M: 16, N: 16, K: 16, subgroupSize: 32 };
const T8: SgmatAttentionTile = { M: 16, N: 8, K: 8, subgroupSize: 32 };

/** f16 rounding of one value (as the kernel's `f16(x)`). */
const f16 = (x: number) => packF16([x]).rounded[0];

/** A cache [nCtx, kvDim] of random rows as the GPU holds it and as the kernel reads it (f16-rounded after decoding). */
function cache(rng: () => number, nCtx: number, kvDim: number, kv: KvType) {
  const x = randomF32(rng, nCtx * kvDim);
  if (kv === 'f32') return { gpu: x as ArrayBufferView, ref: Float64Array.from(x, f16) };
  if (kv === 'f16') {
    const p = packF16(x);
    return { gpu: p.words as ArrayBufferView, ref: p.rounded };
  }
  const type = kv === 'q8_0' ? 'Q8_0' : 'Q4_0';
  const rows: Uint8Array[] = [];
  const ref = new Float64Array(nCtx * kvDim);
  for (let r = 0; r < nCtx; r++) {
    const q = quantizeRow(type, x.subarray(r * kvDim, (r + 1) * kvDim));
    rows.push(q);
    ref.set(Float64Array.from(dequantizeRow(type, q, kvDim), f16), r * kvDim);
  }
  const bytes = new Uint8Array(Math.ceil((rows.length * rows[0].length) / 4) * 4);
  rows.forEach((q, r) => {
    bytes.set(q, r * q.length);
  });
  return { gpu: bytes as ArrayBufferView, ref };
}

/** Causal GQA attention in float64 with soft-cap and window: [out, tol] for T tokens at pos0. */
function reference(
  q: Float32Array,
  k: Float64Array,
  v: Float64Array,
  o: SgmatAttentionOptions,
  T: number,
  pos0: number,
): [Float64Array, Float64Array] {
  const HD = o.headDim;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const out = new Float64Array(T * qDim);
  const tol = new Float64Array(T * qDim);
  const sc = Math.fround(o.scale);
  for (let t = 0; t < T; t++) {
    const pos = pos0 + t;
    const lo = o.window ? Math.max(0, pos + 1 - o.window) : 0;
    for (let h = 0; h < o.nHead; h++) {
      const kvh = Math.floor(h / (o.nHead / o.nHeadKv));
      const qs = Array.from({ length: HD }, (_, d) => f16(Math.fround(q[t * qDim + h * HD + d] * sc)));
      const s: number[] = [];
      const sAbs: number[] = [];
      for (let j = lo; j <= pos; j++) {
        let a = 0;
        let b = 0;
        for (let d = 0; d < HD; d++) {
          const p = qs[d] * k[j * kvDim + kvh * HD + d];
          a += p;
          b += Math.abs(p);
        }
        s.push(o.softcap ? o.softcap * Math.tanh(a / o.softcap) : a);
        sAbs.push(b);
      }
      const m = Math.max(...s);
      const w = s.map((x) => Math.exp(x - m));
      const l = w.reduce((a, b) => a + b, 0);
      for (let d = 0; d < HD; d++) {
        let acc = 0;
        for (let i = 0; i < w.length; i++) acc += (w[i] / l) * v[(lo + i) * kvDim + kvh * HD + d];
        let bound = 0;
        for (let i = 0; i < w.length; i++) {
          const vv = v[(lo + i) * kvDim + kvh * HD + d];
          bound += (w[i] / l) * (Math.abs(vv) + Math.abs(vv - acc) * (2 + 1e-3 * sAbs[i]));
        }
        out[t * qDim + h * HD + d] = acc;
        // P in f16: each weight off by ≤ 2⁻¹¹ relative (the sum divides by the same rounded weights);
        // f32 scores and sums: a few ulp of their terms.
        tol[t * qDim + h * HD + d] = 1.5e-3 * bound + 1e-6;
      }
    }
  }
  return [out, tol];
}

interface Case {
  HD: number;
  G: number;
  nHeadKv: number;
  kv: KvType;
  vKv?: KvType;
  tile: SgmatAttentionTile;
  kvTile?: number;
  softcap?: number;
  window?: number;
  /** (T, pos0) runs of the one compiled kernel. */
  runs: [number, number][];
}

const CASES: Case[] = [
  {
    HD: 64,
    G: 1,
    nHeadKv: 2,
    kv: 'f16',
    tile: T16,
    runs: [
      [1, 0],
      [7, 17],
      [33, 300],
    ],
  },
  {
    HD: 80,
    G: 4,
    nHeadKv: 1,
    kv: 'f32',
    tile: T16,
    kvTile: 16,
    runs: [
      [100, 0],
      [7, 300],
    ],
  },
  {
    HD: 128,
    G: 8,
    nHeadKv: 1,
    kv: 'f16',
    tile: T16,
    kvTile: 16,
    runs: [
      [257, 0],
      [33, 17],
    ],
  },
  { HD: 64, G: 4, nHeadKv: 2, kv: 'q8_0', vKv: 'q4_0', tile: T8, runs: [[33, 17]] },
  { HD: 64, G: 1, nHeadKv: 1, kv: 'f16', tile: T16, softcap: 5, window: 20, runs: [[100, 17]] },
  // 8 lanes per softmax row (M = 8, subgroups of 64; the others: 2).
  { HD: 80, G: 2, nHeadKv: 2, kv: 'f16', tile: { M: 8, N: 8, K: 8, subgroupSize: 64 }, runs: [[45, 3]] },
];

/** The kernel's WGSL through the emulator (the adapter here has no subgroup matrices). */
const emulated = (o: SgmatAttentionOptions) =>
  emulateSubgroupMatrix(prefillAttentionSgmatWGSL(o), o.tile, o.tile.subgroupSize);

describe('prefillAttentionSgmatWGSL through the emulator (test double)', () => {
  for (const c of CASES) {
    const name = `hd ${c.HD}, GQA ${c.G}, ${c.kv}${c.vKv ? `/${c.vKv}` : ''}, ${c.tile.M}x${c.tile.N}x${c.tile.K}${c.softcap ? `, softcap ${c.softcap}` : ''}${c.window ? `, window ${c.window}` : ''}: ${c.runs.map(([T, p]) => `T ${T} @ ${p}`).join(', ')}`;
    it(name, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const o: SgmatAttentionOptions = {
        nHead: c.nHeadKv * c.G,
        nHeadKv: c.nHeadKv,
        headDim: c.HD,
        scale: 1 / Math.sqrt(c.HD),
        kvType: c.kv,
        ...(c.vKv ? { vKvType: c.vKv } : {}),
        tile: c.tile,
        ...(c.kvTile ? { kvTile: c.kvTile } : {}),
        // The emulator stages f16 as f32 (twice the bytes) within SwiftShader's 32 KiB: half of it, or
        // the cases' explicit 16-position tiles, which fit.
        maxWorkgroupBytes: c.kvTile ? 32768 : 16384,
        ...(c.softcap ? { softcap: c.softcap } : {}),
        ...(c.window ? { window: c.window } : {}),
      };
      const code = emulated(o);
      const qDim = o.nHead * c.HD;
      const kvDim = c.nHeadKv * c.HD;
      for (const [T, pos0] of c.runs) {
        const nCtx = pos0 + T + 5;
        // Softcap cases get larger scores, so the cap matters.
        const q = randomF32(rng, T * qDim, c.softcap ? 4 : 1);
        const k = cache(rng, nCtx, kvDim, c.kv);
        const v = cache(rng, nCtx, kvDim, c.vKv ?? c.kv);
        const [ref, tol] = reference(q, k.ref, v.ref, o, T, pos0);
        // A spare row past the batch must stay untouched.
        const out0 = randomF32(rng, (T + 1) * qDim);
        const fullRef = Float64Array.from(out0);
        fullRef.set(ref);
        const fullTol = new Float64Array(fullRef.length);
        fullTol.set(tol);
        const out = storageFrom(device, out0);
        const bufs = [
          uniformFrom(device, packStep(T, pos0)),
          storageFrom(device, q),
          storageFrom(device, k.gpu),
          storageFrom(device, v.gpu),
          out,
        ];
        await runWGSL(device, code, bufs, sgmatAttentionWorkgroups(o, T));
        const p = sgmatAttentionPlan(o);
        assertClose(
          `T ${T} @ ${pos0} (${p.tokensPerTile} tokens × ${p.headsPerGroup} heads, KV tile ${p.kvTile}; seed ${seed})`,
          await readF32(device, out),
          fullRef,
          fullTol,
        );
        for (const b of bufs) b.destroy();
      }
    }, 300_000);
  }
});

describe('sgmatAttentionPlan', () => {
  it('refuses head sizes the configuration does not tile, and plans within the workgroup memory', () => {
    const shape = { nHead: 8, nHeadKv: 2, headDim: 80, scale: 1, kvType: 'f16' as const };
    expect(sgmatAttentionProblem(shape, T16)).toBeUndefined();
    expect(sgmatAttentionProblem(shape, { ...T16, K: 32 })).toMatch(/head size 80 is not a multiple/);
    expect(sgmatAttentionProblem({ ...shape, headDim: 8 }, T16)).toMatch(/head size 8/);
    expect(sgmatAttentionProblem({ ...shape, headDim: 320 }, T16)).toMatch(/above 256/);
    for (const headDim of [64, 80, 128, 256]) {
      const p = sgmatAttentionPlan({ ...shape, headDim, tile: T16, maxWorkgroupBytes: 49152 });
      expect(p.workgroupBytes).toBeLessThanOrEqual(49152);
      expect(p.kvTile % 16).toBe(0);
      expect(p.headsPerGroup * p.tokensPerTile).toBeLessThanOrEqual(16);
    }
    expect(() => sgmatAttentionPlan({ ...shape, headDim: 256, tile: T16, maxWorkgroupBytes: 16384 })).toThrow(
      /workgroup memory/,
    );
    expect(() => sgmatAttentionPlan({ ...shape, tile: T16, kvTile: 24 })).toThrow(/kvTile 24/);
  });
});

/**
 * The float kernel's `tiled` layout (the reference's own WGSL, so it compiles once) as a stand-in
 * candidate; `bug` plants a fault in its WGSL.
 */
function standIn(bug?: (code: string) => string): AttentionCandidate {
  const layout = { kind: 'tiled' as const };
  return {
    wgsl: (o) => {
      const code = prefillAttentionWGSL({ ...o, layout });
      return bug ? bug(code) : code;
    },
    workgroups: (o, T) => prefillAttentionWorkgroups({ ...o, layout }, T),
  };
}

/** The causal mask one position late (a row sees its next token). */
const maskOffByOne = (code: string) => {
  const bad = code.replace('tile + c > pos)', 'tile + c > pos + 1u)');
  if (bad === code) throw new Error('the planted off-by-one did not apply');
  return bad;
};

const SHAPE: AttentionShape = { nHead: 4, nHeadKv: 1, headDim: 64, scale: 0.125, kvType: 'f16' };
/** The stand-ins' shape: a small head (the float kernel compiles slowly on SwiftShader at 64). */
const SMALL: AttentionShape = { ...SHAPE, headDim: 16, scale: 0.25 };

describe('checkAttentionAgainstFloat (the self-test)', () => {
  it('passes a correct stand-in; fails the causal mask off by one and a compile error, saying where', async () => {
    const gpu = await testGpu();
    expect(await checkAttentionAgainstFloat(gpu, standIn(), SMALL)).toEqual({ ok: true, cases: 2 });
    const late = await checkAttentionAgainstFloat(gpu, standIn(maskOffByOne), SMALL);
    expect(late.ok).toBe(false);
    expect(!late.ok && late.reason).toMatch(
      /^37 tokens at 0: token \d+, head \d, dim \d+: .* against the float kernel's .* \(tolerance /,
    );
    const broken = await checkAttentionAgainstFloat(
      gpu,
      standIn((c) => `${c}\nfn broken( {`),
      SMALL,
    );
    expect(broken).toMatchObject({ ok: false, cases: 0 });
    expect(!broken.ok && broken.reason).toMatch(/^compile failed: /);
  }, 120_000);

  it('the kernel through the emulator (test double) passes it: GQA 4, hd 64, f16 cache, 16x16x16', async () => {
    const gpu = await testGpu();
    const kvTile = 16;
    const r = await checkAttentionAgainstFloat(
      gpu,
      {
        wgsl: (o) => emulated({ ...o, tile: T16, kvTile, maxWorkgroupBytes: 32768 }),
        workgroups: (o, T) => sgmatAttentionWorkgroups({ ...o, tile: T16, kvTile }, T),
      },
      SHAPE,
    );
    expect(r).toEqual({ ok: true, cases: 2 });
  }, 300_000);
});

describe('chooseSgmatAttention', () => {
  const cfg = (M: number, N: number, K: number): SubgroupMatrixConfig => ({
    componentType: 'f16',
    resultComponentType: 'f32',
    M,
    N,
    K,
  });
  const claiming = (gpu: GpuContext, usable: SubgroupMatrixConfig[]): GpuContext => ({
    ...gpu,
    subgroupMaxSize: 32,
    subgroupMatrix: { available: true, configs: usable, usable },
  });
  /** Stand-ins for the configurations' kernels: the float kernel, off by one for N = 16. */
  const standIns: SgmatAttentionKernel = {
    wgsl: (o) => standIn(o.tile.N === 16 ? maskOffByOne : undefined).wgsl(o),
    workgroups: (o, T) => standIn(o.tile.N === 16 ? maskOffByOne : undefined).workgroups(o, T),
  };

  it('the real adapter: the reason, nothing compiled; a stubbed one (test double): a failing configuration falls through to the next, one that cannot take the head size is not tried, all failing gives the reasons', async () => {
    const real = await testGpu();
    const none = await chooseSgmatAttention(real, SMALL);
    expect(none).toMatchObject({ selfTest: [] });
    expect(none.reason).toMatch(/^no subgroup matrices: /);
    const gpu = claiming(real, [cfg(16, 32, 32), cfg(16, 16, 16), cfg(16, 8, 8)]);
    const c = await chooseSgmatAttention(gpu, SMALL, standIns, 16);
    expect(c.tile).toEqual({ M: 16, N: 8, K: 8, subgroupSize: 32 });
    expect(c.kvTile).toBe(16);
    expect(c.selfTest.map((t) => [t.config, t.ok])).toEqual([
      ['f16→f32 16x32x32', false],
      ['f16→f32 16x16x16', false],
      ['f16→f32 16x8x8', true],
    ]);
    expect(c.selfTest[0].reason).toMatch(/^not tried: .*head size 16 is not a multiple/);
    expect(c.selfTest[1].reason).toMatch(/^37 tokens at 0: token \d+/);
    const all = await chooseSgmatAttention(claiming(real, [cfg(16, 16, 16)]), SMALL, standIns, 16);
    expect(all.tile).toBeUndefined();
    expect(all.reason).toMatch(/failed its self-test .* 16x16x16: 37 tokens at 0: token/);
  }, 120_000);
});

describe('the timed trial of the sgmat attention against the float one (resolvePrefillAttention, not forced)', () => {
  const cfg16: SubgroupMatrixConfig = {
    componentType: 'f16',
    resultComponentType: 'f32',
    M: 16,
    N: 16,
    K: 16,
  };
  /** The real adapter claiming one f16 configuration (TEST DOUBLE: SwiftShader has none), 16 KiB of workgroup memory for the emulator's f32 staging. */
  const claiming = (gpu: GpuContext): GpuContext => ({
    ...gpu,
    subgroupMaxSize: 32,
    subgroupMatrix: { available: true, configs: [cfg16], usable: [cfg16] },
    limits: { ...gpu.limits, maxComputeWorkgroupStorageSize: 16384 },
  });
  /** The model: SMALL's attention (4 query heads of 16 over 1 KV head). */
  const model = { nHead: 4, nHeadKv: 1, headDim: 16 } as LlamaConfig;
  const kv = { kvType: 'f16' as const };
  const policy: AttentionPolicy = { ...GPU_ATTENTION, prefill: { kind: 'tiled' } };
  const emulatedKernel: SgmatAttentionKernel = { wgsl: emulated, workgroups: sgmatAttentionWorkgroups };
  const neverTimed: AttentionTimer = () => {
    throw new Error('the trial ran');
  };

  it('with the emulated feature: self-tested, both kernels timed (the real timer runs them), the faster chosen, both times recorded', async () => {
    const gpu = claiming(await testGpu());
    const calls: AttentionTrial[][] = [];
    const timer =
      (fake: AttentionTrial[]): AttentionTimer =>
      async (g, m, candidates) => {
        // The real timer on the emulated kernel and the float one (a short batch: SwiftShader), then the
        // injected times, so the choice is deterministic.
        const real = await timeAttentionKernels(g, m, candidates, 24);
        calls.push(real);
        return fake;
      };
    const fast = await resolvePrefillAttention(gpu, model, policy, kv, false, {
      make: emulatedKernel,
      time: timer([
        { kernel: 'sgmat', ms: 1.5 },
        { kernel: 'float', ms: 2.5 },
      ]),
    });
    expect(calls).toHaveLength(1);
    expect(calls[0].map((t) => t.kernel)).toEqual(['sgmat', 'float']);
    for (const t of calls[0]) expect(t.ms).toBeGreaterThan(0);
    expect(fast.attention.prefill).toMatchObject({
      kind: 'sgmat',
      tile: { M: 16, N: 16, K: 16, subgroupSize: 32 },
    });
    expect(fast.choice).toMatchObject({
      tile: { M: 16, N: 16, K: 16 },
      selfTest: [{ config: 'f16→f32 16x16x16', ok: true }],
      trial: [
        { kernel: 'sgmat', ms: 1.5 },
        { kernel: 'float', ms: 2.5 },
      ],
    });
    expect(fast.choice?.reason).toBeUndefined();
    const slow = await resolvePrefillAttention(gpu, model, policy, kv, false, {
      make: emulatedKernel,
      time: async () => [
        { kernel: 'sgmat', ms: 3.25 },
        { kernel: 'float', ms: 2 },
      ],
    });
    expect(slow.attention).toEqual(policy);
    expect(slow.choice?.tile).toBeUndefined();
    expect(slow.choice?.trial).toEqual([
      { kernel: 'sgmat', ms: 3.25 },
      { kernel: 'float', ms: 2 },
    ]);
    expect(slow.choice?.reason).toBe(
      'slower than the float prefill attention in the timed trial (3.25 ms against 2.00 ms for 512 tokens)',
    );
  }, 300_000);

  it('a self-test failure skips the trial and says why; forcing the float kernel skips both; no feature, nothing runs', async () => {
    const real = await testGpu();
    const gpu = claiming(real);
    const offByOne = standIn(maskOffByOne);
    const broken: SgmatAttentionKernel = {
      wgsl: (o) => offByOne.wgsl(o),
      workgroups: (o, T) => offByOne.workgroups(o, T),
    };
    const failed = await resolvePrefillAttention(gpu, model, policy, kv, false, {
      make: broken,
      time: neverTimed,
    });
    expect(failed.attention).toEqual(policy);
    expect(failed.choice?.trial).toBeUndefined();
    expect(failed.choice?.reason).toMatch(/failed its self-test .* 16x16x16: 37 tokens at 0: token/);
    const notCalled: SgmatAttentionKernel = {
      wgsl: () => {
        throw new Error('the self-test ran');
      },
      workgroups: () => [1, 1],
    };
    // Forced: the float layout given (attention.prefill), the default float-or-sgmat trial never runs.
    expect(
      await resolvePrefillAttention(gpu, model, policy, kv, true, { make: notCalled, time: neverTimed }),
    ).toEqual({
      attention: policy,
    });
    // SwiftShader as it is (no subgroup matrices): no self-test, no trial, no extra load time.
    expect(
      await resolvePrefillAttention(real, model, policy, kv, false, { make: notCalled, time: neverTimed }),
    ).toEqual({
      attention: policy,
    });
  }, 120_000);
});
