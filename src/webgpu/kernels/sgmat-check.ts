/**
 * The load-time self-test of a prefill tile that is not the float tile (the subgroup-matrix tile,
 * kernels/mmm-sgmat.ts): before the first use on an adapter, the candidate kernel runs small problems of
 * odd sizes (37 tokens: a full and a partial token tile; 37 two-dot units and 70 one-dot units in two
 * segments: partial row tiles and both weight loaders; K of 3 blocks, 100 for float rows) for every weight
 * type (raw and repacked into planes) with the fused RMSNorm, beside the float tile (kernels/mmm.ts) on the
 * same inputs, and must match it: |candidate − float| ≤ {@link CHECK_TOLERANCE} · rms(float) for every
 * output (f16 operands give ~1e-3 of that; a wrong index gives ~1). A compile failure, a non-finite output
 * or a mismatch fails it with the reason, and the caller keeps the float tile (a driver that lies must
 * never give wrong tokens).
 */
import { hasCodec, quantizeRow } from '../../gguf/quantize.ts';
import { configName, type GpuContext } from '../device.ts';
import {
  isQuantized,
  packStep,
  scratchBuffers,
  WEIGHT_BLOCK,
  WEIGHT_TYPES,
  type WeightType,
} from './common.ts';
import type { MatmulOptions, MatmulSegment } from './matmul.ts';
import { INT_DOT_TYPES, mmmWGSL, mmmWorkgroupsX, TILE_TOKENS } from './mmm.ts';
import { type SgmatTile, sgmatTileWGSL } from './mmm-sgmat.ts';
import { isPlanarType, repackHost } from './repack.ts';

/** Largest |candidate − float tile| allowed, as a fraction of the float tile's rms output. */
export const CHECK_TOLERANCE = 0.02;

/**
 * What a candidate is checked against: the reference tile's WGSL, its name for the reasons, and the
 * largest |candidate − reference| allowed as a fraction of the reference's rms output.
 */
export interface CheckReference {
  name: string;
  wgsl: (o: MatmulOptions) => string;
  tolerance: number;
}

/** The float tile (kernels/mmm.ts) with {@link CHECK_TOLERANCE}: the reference of the f16 subgroup-matrix tile. */
export const FLOAT_REFERENCE: CheckReference = {
  name: 'float tile',
  wgsl: (o) => mmmWGSL(o),
  tolerance: CHECK_TOLERANCE,
};

/**
 * Largest |candidate − integer-dot tile| of the integer subgroup-matrix tile, as a fraction of the rms
 * output. Both round the same activations to the same int8 (one shared quantizer), form the same exact
 * integer dots (i32, no rounding) and apply the same scales in the same order per block, so they differ
 * only where f32 rounding does (d·(lo + hi) against d·lo + d·hi, fused multiply-adds): a few ulps of
 * 2^-24 over the problem's 3 blocks, ~1e-6 of rms; a wrong index or a lost half gives ~1.
 */
export const INT_CHECK_TOLERANCE = 1e-4;

/** The integer-dot tile (mmm.ts `intDot`): the reference of the integer subgroup-matrix tile. */
export const INT_DOT_REFERENCE: CheckReference = {
  name: 'integer-dot tile',
  wgsl: (o) => mmmWGSL(o, { intDot: true }),
  tolerance: INT_CHECK_TOLERANCE,
};

/**
 * A case of three weight types (the two-dot segment's gate and up, the one-dot segment's weights), K of
 * `blocks` of the largest block: one compile covers three types (tests of emulated kernels, which compile
 * slowly on SwiftShader).
 */
export type MixedCase = readonly [WeightType, WeightType, WeightType];

/** The self-test's verdict. */
export type TileCheck = { ok: true; cases: number } | { ok: false; reason: string; cases: number };

/**
 * A self-test problem's size: `tokens`, the units of the two-dot segment (`unitsA`) and of the one-dot
 * segment (`unitsB`), and K in weight blocks (`blocks`; 100 for float rows).
 */
export interface CheckProblem {
  tokens: number;
  unitsA: number;
  unitsB: number;
  blocks: number;
}

/** The load-time self-test's problem: a full and a partial token tile, partial row tiles, K of 3 blocks. */
export const CHECK_PROBLEM: CheckProblem = { tokens: 37, unitsA: 37, unitsB: 70, blocks: 3 };

/** A deterministic generator (mulberry32) so a failure reproduces. */
export function rng32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** N rows of K random weights (std 1/√K) quantized to `type`, rows back to back, padded to 16 bytes. */
function randomRows(type: WeightType, K: number, N: number, rng: () => number): Uint8Array {
  const rows: Uint8Array[] = [];
  for (let r = 0; r < N; r++) {
    const x = Float32Array.from({ length: K }, () => (rng() * 2 - 1) * Math.sqrt(3 / K));
    if (type === 'F32') rows.push(new Uint8Array(x.buffer));
    else rows.push(quantizeRow(type, x));
  }
  const out = new Uint8Array(Math.ceil(rows.reduce((a, b) => a + b.length, 0) / 16) * 16);
  let o = 0;
  for (const q of rows) {
    out.set(q, o);
    o += q.length;
  }
  return out;
}

/** The weight types the self-test covers: every type the tiles take that our quantizer writes. */
export function checkTypes(): WeightType[] {
  return WEIGHT_TYPES.filter((t) => t === 'F32' || hasCodec(t));
}

/** The weight types the integer tiles' self-test covers: INT_DOT_TYPES that our quantizer writes. */
export function checkIntTypes(): WeightType[] {
  return INT_DOT_TYPES.filter((t) => hasCodec(t));
}

/**
 * Runs the self-test of `candidate` (a WGSL generator with mmm.ts `mmmWGSL`'s bindings and dispatch) on
 * `gpu` against the float tile (or `against`: {@link INT_DOT_REFERENCE} for the integer tile), on
 * `problem` (default {@link CHECK_PROBLEM}; tests of emulated kernels pass smaller ones), each type raw and,
 * unless `planes` is false, repacked into planes where the type has them.
 * @param types the weight types to cover (default {@link checkTypes}: all), or {@link MixedCase}s.
 * @returns `{ ok: true }`, or `{ ok: false, reason }` naming the type, the first mismatching output or
 *   the compile error; never throws for the candidate's faults (a lost device still rejects).
 */
export async function checkTileAgainstFloat(
  gpu: GpuContext,
  candidate: (o: MatmulOptions) => string,
  types: readonly (WeightType | MixedCase)[] = checkTypes(),
  {
    against = FLOAT_REFERENCE,
    problem = CHECK_PROBLEM,
    planes = true,
  }: { against?: CheckReference; problem?: CheckProblem; planes?: boolean } = {},
): Promise<TileCheck> {
  const { tokens: T, unitsA: NA, unitsB: NB } = problem;
  const { device } = gpu;
  let cases = 0;
  const { buf, destroy } = scratchBuffers(device, 'tile-check');
  try {
    for (const [ci, entry] of types.entries()) {
      // One type for the three weights, or (gate, up, other) of a mixed case.
      const [tg, tu, to] = typeof entry === 'string' ? [entry, entry, entry] : entry;
      const mixed = [tg, tu, to];
      const name = typeof entry === 'string' ? entry : mixed.join('+');
      for (const planar of planes && mixed.every(isPlanarType) ? [false, true] : [false]) {
        const what = `${name}${planar ? ' planes' : ''}`;
        const K = mixed.every(isQuantized)
          ? problem.blocks * Math.max(...mixed.map((t) => WEIGHT_BLOCK[t].size))
          : 100;
        const rng = rng32(K * 7919 + ci);
        const wRows = (type: WeightType, n: number) => {
          const raw = randomRows(type, K, n, rng);
          const nBlocks = (n * K) / WEIGHT_BLOCK[type].size;
          return {
            bytes: planar ? repackHost(type, raw, nBlocks) : raw,
            planar: planar ? nBlocks : undefined,
          };
        };
        const gate = wRows(tg, NA);
        const up = wRows(tu, NA);
        const other = wRows(to, NB);
        const x = Float32Array.from({ length: T * K }, () => rng() * 2 - 1);
        const g = Float32Array.from({ length: K }, () => 0.5 + rng());
        const W = NA + NB;
        const segments: MatmulSegment[] = [
          {
            nUnits: NA,
            weights: [
              { type: tg, planar: gate.planar },
              { type: tu, planar: up.planar },
            ],
            dots: [
              { w: 0, row: 'u' },
              { w: 1, row: 'u' },
            ],
            epilogue: `y[t * ${W}u + u] = d0 - 0.5 * d1 + f32(pos);`,
          },
          {
            nUnits: NB,
            weights: [{ type: to, planar: other.planar }],
            dots: [{ w: 0, row: `${NB - 1}u - u` }],
            epilogue: `y[t * ${W}u + ${NA}u + u] = d0;`,
          },
        ];
        const o: MatmulOptions = {
          K,
          TT: TILE_TOKENS,
          norm: { eps: 1e-5, type: 'F32' },
          segments,
          extra: ['var<storage, read_write> y: array<f32>'],
        };
        const inputs = [
          buf(packStep(T, 3), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
          buf(x),
          buf(g),
          buf(gate.bytes),
          buf(up.bytes),
          buf(other.bytes),
        ];
        const run = async (code: string) => {
          const y = buf(
            new Float32Array(T * W).fill(Number.NaN),
            GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
          );
          device.pushErrorScope('validation');
          const module = device.createShaderModule({ label: 'tile-check', code });
          const info = await module.getCompilationInfo();
          const errs = info.messages.filter((m) => m.type === 'error');
          const pipeline = await device
            .createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } })
            .catch((e: unknown) => e as Error);
          const scoped = await device.popErrorScope();
          if (errs.length || scoped || pipeline instanceof Error)
            throw new CompileError(
              errs.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ') ||
                scoped?.message ||
                String(pipeline),
            );
          const p = pipeline as GPUComputePipeline;
          const group = device.createBindGroup({
            layout: p.getBindGroupLayout(0),
            entries: [...inputs, y].map((buffer, binding) => ({ binding, resource: { buffer } })),
          });
          const read = buf(T * W * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
          const enc = device.createCommandEncoder({ label: 'tile-check' });
          const pass = enc.beginComputePass();
          pass.setPipeline(p);
          pass.setBindGroup(0, group);
          pass.dispatchWorkgroups(mmmWorkgroupsX(segments), Math.ceil(T / TILE_TOKENS));
          pass.end();
          enc.copyBufferToBuffer(y, 0, read, 0, T * W * 4);
          device.queue.submit([enc.finish()]);
          await read.mapAsync(GPUMapMode.READ);
          const out = new Float32Array(read.getMappedRange().slice(0));
          read.unmap();
          return out;
        };
        const ref = await run(against.wgsl(o));
        let got: Float32Array;
        try {
          got = await run(candidate(o));
        } catch (e) {
          if (e instanceof CompileError)
            return { ok: false, cases, reason: `${what}: compile failed: ${e.message}` };
          throw e;
        }
        cases++;
        let ss = 0;
        for (const v of ref) ss += v * v;
        const tol = against.tolerance * Math.sqrt(ss / ref.length);
        for (let i = 0; i < ref.length; i++) {
          const d = Math.abs(got[i] - ref[i]);
          if (!(d <= tol)) {
            const t = Math.floor(i / W);
            const c = i % W;
            const where = c < NA ? `two-dot unit ${c}` : `one-dot unit ${c - NA}`;
            return {
              ok: false,
              cases,
              reason: `${what}: token ${t}, ${where}: ${got[i]} against the ${against.name}'s ${ref[i]} (tolerance ${tol.toPrecision(3)})`,
            };
          }
        }
      }
    }
    return { ok: true, cases };
  } finally {
    destroy();
  }
}

class CompileError extends Error {}

/**
 * The subgroup-matrix tile for an adapter, self-tested ({@link checkTileAgainstFloat}), or why none:
 * `tile` the first of the adapter's usable configurations (device.ts `SubgroupMatrixSupport.usable`, best
 * first) whose kernel passes; `reason` where none does or the adapter has none; `selfTest` each tried
 * configuration's verdict.
 */
export interface SgmatChoice {
  tile?: SgmatTile;
  reason?: string;
  selfTest: { config: string; ok: boolean; reason?: string }[];
}

const sgmatCache = new Map<string, SgmatChoice>();
const defaultMake = (o: MatmulOptions, t: SgmatTile) => sgmatTileWGSL(o, t);

/**
 * Self-tests the subgroup-matrix tile on `gpu` once per adapter (cached for the process) and returns the
 * tile to run or the reason there is none (device.ts's reason where the adapter offers no subgroup
 * matrices). `make` generates a configuration's WGSL (default mmm-sgmat.ts `sgmatTileWGSL`; tests inject doubles).
 * @throws what GPU work throws on a lost device; never for a kernel's fault.
 */
export async function chooseSubgroupMatrixTile(
  gpu: GpuContext,
  make: (o: MatmulOptions, t: SgmatTile) => string = defaultMake,
  types?: readonly WeightType[],
): Promise<SgmatChoice> {
  return chooseTile(gpu, false, make, types);
}

/**
 * The integer variant of {@link chooseSubgroupMatrixTile} (kernels/mmm-sgmat.ts `mmmSgmatIntWGSL`): each
 * of the adapter's i8 → i32 configurations (device.ts `SubgroupMatrixSupport.usableInt`, best first) is
 * self-tested against the integer-dot tile ({@link INT_DOT_REFERENCE}, every {@link checkIntTypes} type)
 * until one passes. Needs the integer-dot tile itself (WGSL's packed_4x8_integer_dot_product) as the
 * reference; the reason says which prerequisite is missing.
 * @throws what GPU work throws on a lost device; never for a kernel's fault.
 */
export async function chooseSubgroupMatrixIntTile(
  gpu: GpuContext,
  make: (o: MatmulOptions, t: SgmatTile) => string = defaultMake,
  types?: readonly WeightType[],
): Promise<SgmatChoice> {
  return chooseTile(gpu, true, make, types);
}

async function chooseTile(
  gpu: GpuContext,
  int: boolean,
  make: (o: MatmulOptions, t: SgmatTile) => string,
  types: readonly WeightType[] | undefined,
): Promise<SgmatChoice> {
  const s = gpu.subgroupMatrix;
  if (!s?.available) return { reason: s?.reason ?? 'no subgroup matrices', selfTest: [] };
  const configs = int ? (s.usableInt ?? []) : s.usable;
  if (int && configs.length === 0)
    return {
      reason: `no integer subgroup matrices: no i8 → i32 configuration with M, N, K in {8, 16, 32} among ${s.configs.map(configName).join(', ') || 'none reported'}`,
      selfTest: [],
    };
  if (int && !gpu.wgslFeatures.has('packed_4x8_integer_dot_product'))
    return {
      reason:
        'no integer subgroup matrices: the self-test compares against the integer-dot tile, which needs the WGSL language feature packed_4x8_integer_dot_product',
      selfTest: [],
    };
  const i = gpu.info;
  const cacheable = make === defaultMake && types === undefined;
  const key = `${int ? 'int|' : ''}${i.vendor}|${i.architecture}|${i.device}|${i.description}`;
  const hit = cacheable ? sgmatCache.get(key) : undefined;
  if (hit) return hit;
  const selfTest: SgmatChoice['selfTest'] = [];
  const subgroupSize = gpu.subgroupMaxSize as 32 | 64;
  let choice: SgmatChoice | undefined;
  for (const c of configs) {
    const tile: SgmatTile = { M: c.M, N: c.N, K: c.K, subgroupSize, ...(int ? { int: true } : {}) };
    const r = int
      ? await checkTileAgainstFloat(gpu, (o) => make(o, tile), types ?? checkIntTypes(), {
          against: INT_DOT_REFERENCE,
        })
      : await checkTileAgainstFloat(gpu, (o) => make(o, tile), types);
    selfTest.push({ config: configName(c), ok: r.ok, ...(r.ok ? {} : { reason: r.reason }) });
    if (r.ok) {
      choice = { tile, selfTest };
      break;
    }
  }
  choice ??= {
    reason: `the ${int ? 'integer ' : ''}subgroup-matrix tile failed its self-test against the ${int ? 'integer-dot' : 'float'} tile on every configuration (${selfTest.map((t) => `${t.config}: ${t.reason}`).join('; ')})`,
    selfTest,
  };
  if (cacheable) sgmatCache.set(key, choice);
  return choice;
}
