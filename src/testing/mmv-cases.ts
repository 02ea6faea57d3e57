/**
 * The per-weight-type cases of mmvWGSL's tests (mmv.browser.test.ts, mmv-kquants.browser.test.ts: two
 * files so that `npm run test:browser` can run them in two processes at once): the layouts tried on this
 * adapter, one test per weight type (and planar repacking) that runs every layout against float64, and
 * one that runs the wide layouts (64–256 lanes) at a K long enough for several passes over it.
 */
import { it } from 'vitest';
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

/** One case of {@link mmvCase}: N rows of K weights, T tokens in groups of TT, RMSNorm folded in or not. */
interface MmvCase {
  type: WeightType;
  planar: boolean;
  K: number;
  N: number;
  T: number;
  TT: number;
  norm: boolean;
}

/**
 * Builds one mmvWGSL kernel of `layout` for a case, runs it on random weights (quantized by our
 * ggml-exact quantizer) and activations, and checks it against float64: |gpu − ref| ≤ 2e-5·Σ|terms| +
 * 1e-6, plus two rounding steps of the int8 activations on the integer-dot path.
 */
async function mmvCase(
  device: GPUDevice,
  name: string,
  layout: MmvLayout,
  { type, planar, K, N, T, TT, norm }: MmvCase,
): Promise<void> {
  const { seed, rng } = freshRng();
  const raw = quantizedRows(type, K, N, rng);
  const nBlocks = (N * K) / WEIGHT_BLOCK[type].size; // blocks as the engine counts them (Q4_K, Q6_K: 256)
  const bytes = planar ? repackHost(type, raw.bytes, nBlocks) : raw.bytes;
  const w = raw.w;
  const x = randomF32(rng, T * K);
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
  const y = storageFrom(device, new Float32Array(T * N).fill(Number.NaN));
  const bufs = [uniformFrom(device, packStep(T, 0)), storageFrom(device, x)];
  if (g) bufs.push(storageFrom(device, g));
  bufs.push(storageFrom(device, bytes), y);
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

/**
 * Defines one test per type (two for a type mmv can repack into planes): N = 37 rows, every layout of
 * {@link layouts}, 1–19 tokens with and without RMSNorm, against float64 ({@link mmvCase}).
 */
export function mmvTypeTests(types: MmvTypeCase[]): void {
  for (const { type, K } of types) {
    for (const { planar } of variants([type])) {
      it(`${type}${planar ? ' repacked into planes' : ''} K=${K}: every layout, 1 to 19 tokens, with and without RMSNorm, equals float64`, async () => {
        const device = (await testGpu()).device;
        for (const { name, layout } of await layouts()) {
          // Each (tokens per workgroup, norm) pair is its own shader, whose compilation is most of this
          // test's time on a software adapter, so each layout runs the groups it is used with: decode (1
          // token) and a partial group of 4 (decode of several tokens; small models' software prefill)
          // everywhere; two groups of 8, the second partial, with one row group per thread (the software
          // prefill without shareX); 19 tokens in groups of 16 with shared activations (the software
          // prefill of large models).
          for (const [T, TT, norm] of [
            [1, 1, true],
            [3, 4, false],
            ...(layout.lanes === 1 && !layout.shareX ? ([[13, 8, true]] as const) : []),
            ...(layout.shareX ? ([[19, 16, true]] as const) : []),
          ] as const) {
            await mmvCase(device, name, layout, { type, planar, K, N: 37, T, TT, norm });
          }
        }
      });
    }
  }
}

/**
 * K of {@link mmvWideKTests}: 523 chunks of 32 weights for the 32-weight block types, 520 (65 blocks)
 * for the 256-weight ones — more than two passes of 256 lanes, and a partial last pass of 64, 128 and 256
 * lanes (523 = 8·64 + 11, 520 = 8·64 + 8); off every multiple of 512 and 1024.
 */
export function wideK(type: WeightType): number {
  return WEIGHT_BLOCK[type].size === 256 ? 256 * 65 : 32 * 523;
}

/**
 * Defines one test per type (two for a type mmv can repack into planes) for the layouts of
 * {@link layouts} with lane groups of 64 or more lanes (the GPU shapes: kernels/tune.ts mmvCandidates,
 * whose float layouts stop at 128 lanes, so no float 256-lane one here) at a K ({@link wideK}) that runs
 * their loop over K's chunks (`c += lanes`) at least three times, the last pass partial — as every 8B
 * model's matmul does (K = 4096, 14336), and mmvTypeTests' K ≤ 768 never does.
 * N = 11 rows; 1 token (groups of 1, RMSNorm folded in) and 2 and 4 tokens (groups of 4, no norm: one
 * shader for both), against float64 ({@link mmvCase}).
 */
export function mmvWideKTests(types: WeightType[]): void {
  for (const { type, planar } of variants(types)) {
    const K = wideK(type);
    it(`${type}${planar ? ' repacked into planes' : ''} K=${K}, wide lane groups (64–256 lanes): several passes over K, the last partial, 1, 2 and 4 tokens, equals float64`, async () => {
      const device = (await testGpu()).device;
      const wide = (await layouts()).filter(({ layout }) => layout.lanes >= 64);
      if (!wide.length) throw new Error('no layout of 64 or more lanes on this adapter');
      for (const { name, layout } of wide) {
        for (const [T, TT, norm] of [
          [1, 1, true],
          [2, 4, false],
          [4, 4, false],
        ] as const) {
          await mmvCase(device, name, layout, { type, planar, K, N: 11, T, TT, norm });
        }
      }
    });
  }
}
