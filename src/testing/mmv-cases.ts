/**
 * The per-weight-type cases of mmvWGSL's tests (mmv.browser.test.ts, mmv-kquants.browser.test.ts: two
 * files so that `npm run test:browser` can run them in two processes at once): the layouts tried on this
 * adapter, and one test per weight type (and planar repacking) that runs every layout against float64.
 */
import { it } from 'vitest';
import { packStep, type WeightType } from '../webgpu/kernels/common.ts';
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

/**
 * Defines one test per type (two for a type mmv can repack into planes): N = 37 rows, every layout of
 * {@link layouts}, 1–19 tokens with and without RMSNorm, against float64 (bound |gpu − ref| ≤
 * 2e-5·Σ|terms| + 1e-6, plus two rounding steps of the int8 activations on the integer-dot path).
 */
export function mmvTypeTests(types: MmvTypeCase[]): void {
  for (const { type, K, planar } of types.flatMap((t) =>
    isPlanarType(t.type)
      ? [
          { ...t, planar: false },
          { ...t, planar: true },
        ]
      : [{ ...t, planar: false }],
  )) {
    it(`${type}${planar ? ' repacked into planes' : ''} K=${K}: every layout, 1 to 19 tokens, with and without RMSNorm, equals float64`, async () => {
      const gpu = await testGpu();
      const device = gpu.device;
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
          const { seed, rng } = freshRng();
          const N = 37;
          const raw = quantizedRows(type, K, N, rng);
          const nBlocks = (N * K) / (type === 'Q6_K' ? 256 : 32);
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
              // The int8 path: allow two activations to round one step the other way (a value within
              // f32 rounding of a half), at the largest |w|·step of the row.
              let flip = 0;
              if (int8)
                for (let k = 0; k < K; k++)
                  flip = Math.max(flip, Math.abs(w[n * K + k]) * int8.step[t * K + k]);
              tol[t * N + n] = 2e-5 * a + 1e-6 + 2 * flip;
            }
          }
          assertClose(
            `${type}${planar ? ' planar' : ''} ${name} T=${T} TT=${TT} norm=${norm} seed ${seed}`,
            got,
            ref,
            tol,
          );
        }
      }
    });
  }
}
