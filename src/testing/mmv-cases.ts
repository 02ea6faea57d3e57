/**
 * The per-weight-type cases of mmvWGSL's tests (mmv.browser.test.ts, mmv-kquants.browser.test.ts: two
 * files so that `npm run test:browser` can run them in two processes at once): the layouts tried on this
 * adapter, one test per weight type (and planar repacking) that runs every layout against float64 (the wide
 * layouts, 64–256 lanes, at a K long enough for several passes over it) with a token grouping and RMSNorm
 * setting that rotate over the types, and one that checks the rotation's coverage.
 */
import { expect, it } from 'vitest';
import { packStep, WEIGHT_BLOCK, type WeightType } from '../webgpu/kernels/common.ts';
import type { MatmulSegment } from '../webgpu/kernels/matmul.ts';
import { type MmvLayout, mmvWGSL, mmvWorkgroupsX } from '../webgpu/kernels/mmv.ts';
import { isPlanarType, repackHost } from '../webgpu/kernels/repack.ts';
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
} from './kernel-util.ts';

const EPS = 1e-5;

/** The mmv layouts this adapter can run, named for the failure messages. */
export async function layouts(): Promise<{ name: string; layout: MmvLayout }[]> {
  const gpu = await testGpu();
  const sgMin = (gpu.adapter.info as { subgroupMinSize?: number }).subgroupMinSize ?? 0;
  const packed = (navigator.gpu.wgslLanguageFeatures as Set<string>).has('packed_4x8_integer_dot_product');
  const out: { name: string; layout: MmvLayout }[] = [
    { name: 'rows ×2', layout: { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false } },
    { name: 'rows ×3 packed', layout: { lanes: 1, units: 3, threads: 32, reduce: 'shared', packed } },
    { name: 'ksplit 8 shared', layout: { lanes: 8, units: 1, threads: 64, reduce: 'shared', packed } },
    // Lane groups wider than a subgroup (the GPU candidates' shape without subgroups), two per workgroup,
    // 3 rows each, reduced by the tree (32 lanes through it: engine.browser.test.ts's forced paths).
    {
      name: 'ksplit 64 shared ×3',
      layout: { lanes: 64, units: 3, threads: 128, reduce: 'shared', packed: false },
    },
  ];
  if (gpu.hasSubgroups && sgMin >= 2) {
    const lanes = Math.min(sgMin, 32);
    out.push({
      name: `ksplit ${lanes} subgroup`,
      layout: { lanes, units: 2, threads: 64, reduce: 'subgroup', packed },
    });
    out.push({
      name: '2 lanes subgroup',
      layout: { lanes: 2, units: 1, threads: 64, reduce: 'subgroup', packed: false },
    });
    // The GPU shape (kernels/tune.ts mmvCandidates): a workgroup of 128 lanes on 2 rows, shuffles within
    // runs of the adapter's subgroup size, then the runs through workgroup memory.
    out.push({
      name: `ksplit 128 hybrid ${lanes} ×2`,
      layout: { lanes: 128, units: 2, threads: 128, reduce: 'hybrid', shuffleLanes: lanes, packed },
    });
    if (packed) {
      out.push({
        name: `ksplit ${lanes} subgroup int8`,
        layout: { lanes, units: 1, threads: 64, reduce: 'subgroup', packed, intDot: true },
      });
      out.push({
        name: `ksplit 256 hybrid ${lanes} ×4 int8`,
        layout: {
          lanes: 256,
          units: 4,
          threads: 256,
          reduce: 'hybrid',
          shuffleLanes: lanes,
          packed,
          intDot: true,
        },
      });
    }
  }
  // Activations shared through subgroups (the software adapters' prefill layout) where every subgroup has
  // the same size.
  const sgMax = (gpu.adapter.info as { subgroupMaxSize?: number }).subgroupMaxSize ?? 0;
  if (gpu.hasSubgroups && sgMin === sgMax && [2, 4, 8].includes(sgMin)) {
    out.push({
      name: `rows ×4 shareX ${sgMin}`,
      layout: { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed, shareX: sgMin },
    });
    // The software adapters' prefill layout (webgpu/kernel-plan.ts prefillMatmulFor): 8 rows per thread.
    out.push({
      name: `rows ×8 shareX ${sgMin}`,
      layout: { lanes: 1, units: 8, threads: 8, reduce: 'shared', packed, shareX: sgMin },
    });
    if (packed) {
      out.push({
        name: `rows ×2 int8 shareX ${sgMin}`,
        layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed, intDot: true, shareX: sgMin },
      });
    }
  }
  if (packed) {
    out.push(
      {
        name: 'rows ×2 int8',
        layout: { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed, intDot: true },
      },
      {
        name: 'ksplit 8 shared int8',
        layout: { lanes: 8, units: 2, threads: 64, reduce: 'shared', packed, intDot: true },
      },
    );
  }
  return out;
}

/**
 * Whether mmv's integer-dot path covers this weight (mirrors mmv.ts: planar Q8_0/Q4_0/Q6_K, Q4_K, raw
 * Q5_K/Q3_K/Q2_K).
 */
function intDotCovers(type: WeightType, planar: boolean): boolean {
  if (!planar && ['Q5_K', 'Q3_K', 'Q2_K'].includes(type)) return true;
  return type === 'Q4_K' || (planar && ['Q8_0', 'Q4_0', 'Q6_K'].includes(type));
}

/** A weight type and the K (off every multiple) its test uses. */
export interface MmvTypeCase {
  type: WeightType;
  K: number;
}

/** The weight type's variants tested: raw, and repacked into planes where mmv can read them so. */
function variants(types: WeightType[]): { type: WeightType; planar: boolean }[] {
  return types.flatMap((type) =>
    isPlanarType(type)
      ? [
          { type, planar: false },
          { type, planar: true },
        ]
      : [{ type, planar: false }],
  );
}

/**
 * One shader of {@link mmvCase}: N rows of K weights in groups of TT tokens, RMSNorm folded in or not, run
 * for each token count of Ts.
 */
interface MmvCase {
  type: WeightType;
  planar: boolean;
  K: number;
  N: number;
  Ts: readonly number[];
  TT: number;
  norm: boolean;
}

/**
 * Builds one mmvWGSL kernel of `layout` for a case, runs it on random weights (quantized by our
 * ggml-exact quantizer, once for every token count) and on fresh random activations for each token count
 * of `Ts`, and checks each against float64: |gpu − ref| ≤ 2e-5·Σ|terms| + 1e-6, plus two rounding steps of
 * the int8 activations on the integer-dot path. The token counts share the compiled shader (the
 * compilation is most of the time on a software adapter; a dispatch and its reference are cheap).
 */
async function mmvCase(
  device: GPUDevice,
  name: string,
  layout: MmvLayout,
  { type, planar, K, N, Ts, TT, norm }: MmvCase,
): Promise<void> {
  const { seed, rng } = freshRng();
  const raw = quantizedRows(type, K, N, rng);
  const nBlocks = (N * K) / WEIGHT_BLOCK[type].size; // blocks as the engine counts them (Q4_K, Q6_K: 256)
  const bytes = planar ? repackHost(type, raw.bytes, nBlocks) : raw.bytes;
  const w = raw.w;
  const g = norm ? randomF32(rng, K, 0.5).map((v) => v + 1) : undefined;
  const seg: MatmulSegment = {
    nUnits: N,
    weights: [{ type, planar: planar ? nBlocks : undefined }],
    dots: [{ w: 0, row: 'u' }],
    epilogue: `y[t * ${N}u + u] = d0;`,
  };
  const code = mmvWGSL({
    K,
    TT,
    norm: norm ? { eps: EPS, type: 'F32' } : undefined,
    segments: [seg],
    extra: ['var<storage, read_write> y: array<f32>'],
    layout,
  });
  const wBuf = storageFrom(device, bytes);
  const gBuf = g ? storageFrom(device, g) : undefined;
  for (const T of Ts) {
    const x = randomF32(rng, T * K);
    const y = storageFrom(device, new Float32Array(T * N).fill(Number.NaN));
    const bufs = [uniformFrom(device, packStep(T, 0)), storageFrom(device, x)];
    if (gBuf) bufs.push(gBuf);
    bufs.push(wBuf, y);
    await runWGSL(device, code, bufs, [mmvWorkgroupsX([seg], layout), Math.ceil(T / TT)]);
    const got = await readF32(device, y, T * N);
    const int8 = layout.intDot && intDotCovers(type, planar) ? int8Activations(x, T, K, g) : undefined;
    const xn = int8 ? int8.out : normed(x, T, K, EPS, g);
    const ref = new Float64Array(T * N);
    const tol = new Float64Array(T * N);
    for (let t = 0; t < T; t++) {
      for (let n = 0; n < N; n++) {
        const [s, a] = refDot(w, n, xn, t, K);
        ref[t * N + n] = s;
        // The int8 path: allow two activations to round one step the other way (a value within f32
        // rounding of a half), at the largest |w|·step of the row.
        let flip = 0;
        if (int8)
          for (let k = 0; k < K; k++) flip = Math.max(flip, Math.abs(w[n * K + k]) * int8.step[t * K + k]);
        tol[t * N + n] = 2e-5 * a + 1e-6 + 2 * flip;
      }
    }
    assertClose(
      `${type}${planar ? ' planar' : ''} ${name} K=${K} N=${N} T=${T} TT=${TT} norm=${norm} seed ${seed}`,
      got,
      ref,
      tol,
    );
  }
}

/**
 * The token groupings a layout is used with, each one shader, and the token counts run through it:
 * groups of 1 (decode; 2 tokens: two workgroups along y) and of 4 (decode of several tokens, small
 * models' software prefill: a partial group, a full one, a full one and a partial one) everywhere; groups
 * of 8 with one row group per thread (the software prefill without shareX) and of 16 with shared
 * activations (the software prefill of large models), each with 1 token, a full group and a full group
 * and a partial one.
 */
export function tokenGroups(layout: MmvLayout): { TT: number; Ts: readonly number[] }[] {
  return [
    { TT: 1, Ts: [1, 2] },
    { TT: 4, Ts: [2, 3, 4, 5] },
    ...(layout.lanes === 1 && !layout.shareX ? [{ TT: 8, Ts: [1, 8, 13] }] : []),
    ...(layout.shareX ? [{ TT: 16, Ts: [1, 16, 19] }] : []),
  ];
}

/**
 * K of the wide layouts' cases: 523 chunks of 32 weights for the 32-weight block types, 520 (65 blocks)
 * for the 256-weight ones — more than two passes of 256 lanes, and a partial last pass of 64, 128 and 256
 * lanes (523 = 8·64 + 11, 520 = 8·64 + 8); off every multiple of 512 and 1024.
 */
export function wideK(type: WeightType): number {
  return WEIGHT_BLOCK[type].size === 256 ? 256 * 65 : 32 * 523;
}

/** One shader of a type test: the layout, its token grouping, RMSNorm or not, K and N. */
interface PlannedCase {
  name: string;
  layout: MmvLayout;
  TT: number;
  Ts: readonly number[];
  norm: boolean;
  K: number;
  N: number;
}

/**
 * The cases of the v-th type variant (of a file's list, {@link variants}): every layout of
 * {@link layouts} once, with one of its {@link tokenGroups} and RMSNorm on or off, rotating with v + the
 * layout's index, so that over 2·(its groupings) consecutive variants (≤ 6; every file has 8 or more)
 * each layout runs each grouping with and without RMSNorm, and each variant runs groups of 1 and of 4,
 * with and without RMSNorm, over the layouts ({@link mmvTypeTests}' first test checks both). Each
 * (layout, grouping, norm) shader is most of a case's time on a software adapter, so a case is one of
 * them rather than all (a type's unpacking is the same code in every token slot and every layout).
 * Layouts of 64 or more lanes (the GPU shapes: kernels/tune.ts mmvCandidates) run at {@link wideK} with
 * N = 11 rows, where their loop over K's chunks (`c += lanes`) makes several passes, the last partial, as
 * every 8B model's matmul does (K = 4096, 14336) (wide lane groups with fewer chunks than lanes: the
 * multi-segment tests of mmv.browser.test.ts, K = 256 and 512); the others at the type's K (off every
 * multiple), N = 37.
 */
export function planCases(
  v: number,
  type: WeightType,
  K: number,
  ls: { name: string; layout: MmvLayout }[],
): PlannedCase[] {
  return ls.map(({ name, layout }, l) => {
    const groups = tokenGroups(layout);
    const r = v + l;
    const { TT, Ts } = groups[r % groups.length];
    const norm = Math.floor(r / groups.length) % 2 === 0;
    const wide = layout.lanes >= 64;
    return { name, layout, TT, Ts, norm, K: wide ? wideK(type) : K, N: wide ? 11 : 37 };
  });
}

/**
 * Defines two tests per type (four for a type mmv can repack into planes) that run {@link planCases}
 * against float64 ({@link mmvCase}), the wide layouts' cases in the second, and before them one that checks that the rotation covers every
 * layout with every token grouping with and without RMSNorm, and every variant with groups of 1 and of 4
 * with and without RMSNorm and at the wide K.
 */
export function mmvTypeTests(types: MmvTypeCase[]): void {
  const vs = types.flatMap(({ type, K }) => variants([type]).map((v) => ({ ...v, K })));
  it('the rotation runs every layout with each of its token groupings with and without RMSNorm, and each weight type with groups of 1 and of 4, with and without RMSNorm, at its K and the wide K', async () => {
    const ls = await layouts();
    if (!ls.some(({ layout }) => layout.lanes >= 64))
      throw new Error('no layout of 64 or more lanes on this adapter');
    const plans = vs.map(({ type, K }, v) => planCases(v, type, K, ls));
    const seen = (p: PlannedCase) => `${p.name} TT=${p.TT} norm=${p.norm}`;
    const run = new Set(plans.flat().map(seen));
    for (const { name, layout } of ls)
      for (const { TT } of tokenGroups(layout))
        for (const norm of [true, false])
          expect(run, 'layout × grouping × norm').toContain(`${name} TT=${TT} norm=${norm}`);
    vs.forEach(({ type, planar, K }, v) => {
      const got = new Set(plans[v].map((p) => `TT=${p.TT} norm=${p.norm}`));
      for (const TT of [1, 4])
        for (const norm of [true, false]) expect(got, `${type} ${planar}`).toContain(`TT=${TT} norm=${norm}`);
      expect(
        plans[v].some((p) => p.K === K),
        `${type} ${planar} K`,
      ).toBe(true);
      expect(
        plans[v].some((p) => p.K === wideK(type)),
        `${type} ${planar} wide K`,
      ).toBe(true);
    });
  });
  vs.forEach(({ type, planar, K }, v) => {
    // Two tests per variant, the wide layouts apart, to keep each well under the timeout on a loaded machine.
    for (const wide of [false, true]) {
      const what = wide
        ? `the wide layouts (64–256 lanes) at K=${wideK(type)}`
        : `every other layout at K=${K}`;
      it(`${type}${planar ? ' repacked into planes' : ''}: ${what}, 1 to 19 tokens in its groupings, RMSNorm on and off (rotating), equals float64`, async () => {
        const device = (await testGpu()).device;
        const cases = planCases(v, type, K, await layouts()).filter((c) => c.layout.lanes >= 64 === wide);
        if (!cases.length) throw new Error('no layout here');
        for (const { name, layout, TT, Ts, norm, K: k, N } of cases)
          await mmvCase(device, name, layout, { type, planar, K: k, N, Ts, TT, norm });
      });
    }
  });
}
