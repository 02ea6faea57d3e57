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
import { INT_DOT_TYPES, mmmWGSL, mmmWorkgroupsX, TILE_ROWS, TILE_TOKENS } from './mmm.ts';
import {
  I8_UNITS_ORDER,
  type I8Units,
  type SgmatTile,
  sgmatTileDims,
  sgmatTileWGSL,
  sgmatWorkgroupBytes,
} from './mmm-sgmat.ts';
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
export type TileCheck =
  | { ok: true; cases: number }
  /** `compileFailed`: the candidate did not compile (else it ran and mismatched or wrote out of place). */
  | { ok: false; reason: string; cases: number; compileFailed?: true };

/**
 * A self-test problem's size: `tokens`, the units of the two-dot segment (`unitsA`) and of the one-dot
 * segment (`unitsB`), and K in weight blocks (`blocks`; 100 for float rows).
 */
export interface CheckProblem {
  /** Token counts to run (one compile of each kernel serves all: the count is in the step uniform). */
  tokens: number | readonly number[];
  unitsA: number;
  unitsB: number;
  blocks: number;
}

/** The load-time self-test's problem: a full and a partial token tile, partial row tiles, K of 3 blocks. */
export const CHECK_PROBLEM: CheckProblem = { tokens: 37, unitsA: 37, unitsB: 70, blocks: 3 };

/**
 * The large tile's (64 tokens × 128 rows, mmm-sgmat.ts `sgmatTileDims`) self-test problem: a full and a
 * partial token tile (70 = 64 + 6), a partial row tile in the two-dot segment (37 units: 74 of 128 rows)
 * and a full and a partial one in the one-dot segment (135 = 128 + 7).
 */
export const BIG_CHECK_PROBLEM: CheckProblem = { tokens: 70, unitsA: 37, unitsB: 135, blocks: 3 };

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
    tile = { tokens: TILE_TOKENS, rows: TILE_ROWS },
  }: {
    against?: CheckReference;
    problem?: CheckProblem;
    planes?: boolean;
    /** The candidate's workgroup tile (its dispatch; mmm-sgmat.ts `sgmatTileDims`), default the float tile's. */
    tile?: { tokens: number; rows: number };
  } = {},
): Promise<TileCheck> {
  const { unitsA: NA, unitsB: NB } = problem;
  const tokenCounts = typeof problem.tokens === 'number' ? [problem.tokens] : problem.tokens;
  const T = Math.max(...tokenCounts);
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
        const inputs = [buf(x), buf(g), buf(gate.bytes), buf(up.bytes), buf(other.bytes)];
        const steps = new Map(
          tokenCounts.map((n) => [n, buf(packStep(n, 3), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST)]),
        );
        const pipelines = new Map<string, GPUComputePipeline>();
        const compile = async (code: string) => {
          const hit = pipelines.get(code);
          if (hit) return hit;
          const pipeline = await compileChecked(device, code, 'tile-check');
          pipelines.set(code, pipeline);
          return pipeline;
        };
        // Runs `code` at `nt` tokens on workgroup tiles `dims`: y [nt, W] (NaN where not written).
        const run = async (code: string, nt: number, dims: { tokens: number; rows: number }) => {
          const p = await compile(code);
          const y = buf(
            new Float32Array(T * W).fill(Number.NaN),
            GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
          );
          const group = device.createBindGroup({
            layout: p.getBindGroupLayout(0),
            entries: [steps.get(nt)!, ...inputs, y].map((buffer, binding) => ({
              binding,
              resource: { buffer },
            })),
          });
          const read = buf(T * W * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
          const enc = device.createCommandEncoder({ label: 'tile-check' });
          const pass = enc.beginComputePass();
          pass.setPipeline(p);
          pass.setBindGroup(0, group);
          pass.dispatchWorkgroups(mmmWorkgroupsX(segments, dims.rows), Math.ceil(nt / dims.tokens));
          pass.end();
          enc.copyBufferToBuffer(y, 0, read, 0, T * W * 4);
          device.queue.submit([enc.finish()]);
          await read.mapAsync(GPUMapMode.READ);
          const out = new Float32Array(read.getMappedRange().slice(0));
          read.unmap();
          return out;
        };
        for (const nt of tokenCounts) {
          const ref = await run(against.wgsl(o), nt, { tokens: TILE_TOKENS, rows: TILE_ROWS });
          let got: Float32Array;
          try {
            got = await run(candidate(o), nt, tile);
          } catch (e) {
            if (e instanceof CompileError)
              return {
                ok: false,
                cases,
                compileFailed: true,
                reason: `${what}: compile failed: ${e.message}`,
              };
            throw e;
          }
          cases++;
          // Rows past nt stay NaN in both (never written); compare the first nt.
          const n = nt * W;
          let ss = 0;
          for (let i = 0; i < n; i++) ss += ref[i] * ref[i];
          const tol = against.tolerance * Math.sqrt(ss / n);
          const at = tokenCounts.length > 1 ? ` (${nt} tokens)` : '';
          for (let i = 0; i < n; i++) {
            const d = Math.abs(got[i] - ref[i]);
            if (!(d <= tol)) {
              const t = Math.floor(i / W);
              const c = i % W;
              const where = c < NA ? `two-dot unit ${c}` : `one-dot unit ${c - NA}`;
              return {
                ok: false,
                cases,
                reason: `${what}: token ${t}${at}, ${where}: ${got[i]} against the ${against.name}'s ${ref[i]} (tolerance ${tol.toPrecision(3)})`,
              };
            }
          }
          // Nothing written past nt (a token guard lost would write there).
          for (let i = n; i < T * W; i++)
            if (!Number.isNaN(got[i]))
              return {
                ok: false,
                cases,
                reason: `${what}: token ${Math.floor(i / W)}${at} written past the ${nt} tokens`,
              };
        }
      }
    }
    return { ok: true, cases };
  } finally {
    destroy();
  }
}

/** A self-test candidate that does not compile (its message: the compiler's errors, else the validation error). */
export class CompileError extends Error {}

/**
 * Compiles `code` (entry point `main`, layout 'auto') for a load-time self-test.
 * @throws CompileError with the compilation messages, the validation error or the pipeline's rejection.
 */
export async function compileChecked(
  device: GPUDevice,
  code: string,
  label: string,
): Promise<GPUComputePipeline> {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ label, code });
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
  return pipeline;
}

/** A one-unit F32 problem to ask a generator whether it builds a configuration (no GPU work). */
const FIT_PROBE: MatmulOptions = {
  K: 32,
  TT: TILE_TOKENS,
  segments: [{ nUnits: 1, weights: [{ type: 'F32' }], dots: [{ w: 0, row: 'u' }], epilogue: 'y[t] = d0;' }],
  extra: ['var<storage, read_write> y: array<f32>'],
};

/**
 * The subgroup-matrix tile for an adapter, self-tested ({@link checkTileAgainstFloat}), or why none:
 * `tile` the first of the adapter's usable configurations (device.ts `SubgroupMatrixSupport.usable`, best
 * first) whose kernel passes (the integer tile: with the `i8Units` that passed); `reason` where none does
 * or the adapter has none; `selfTest` each tried configuration's verdict (the integer tile: per
 * configuration and i8 unit tried).
 */
export interface SgmatChoice {
  tile?: SgmatTile;
  reason?: string;
  selfTest: { config: string; ok: boolean; reason?: string; i8Units?: I8Units }[];
}

/** Tests' settings of {@link chooseSubgroupMatrixIntTile}: a smaller problem, no planes, the unit order. */
export interface IntChoiceOptions {
  problem?: CheckProblem;
  planes?: boolean;
  /** The i8 units to try, in order (default mmm-sgmat.ts `I8_UNITS_ORDER`: 'words', then 'bytes'). */
  units?: readonly I8Units[];
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
  return chooseTile(gpu, 'f16', make, types);
}

/**
 * The large f16 tile (64 tokens × 128 rows, kernels/mmm-sgmat.ts `sgmatTileDims`) as
 * {@link chooseSubgroupMatrixTile} chooses the 32 × 64 one: each usable f16 → f32 configuration
 * self-tested against the float tile on {@link BIG_CHECK_PROBLEM} until one passes. Double-buffered where
 * the device's maxComputeWorkgroupStorageSize (device.ts `SubgroupMatrixSupport.maxWorkgroupStorage`)
 * takes its `sgmatWorkgroupBytes` (47,616 B), else single-buffered (`singleBuffer`, 32,256 B: fits the
 * 32 KiB many adapters grant); none under that: the reason says so, nothing is compiled.
 * @throws what GPU work throws on a lost device; never for a kernel's fault.
 */
export async function chooseSubgroupMatrixBigTile(
  gpu: GpuContext,
  make: (o: MatmulOptions, t: SgmatTile) => string = defaultMake,
  types?: readonly WeightType[],
): Promise<SgmatChoice> {
  return chooseTile(gpu, 'big', make, types);
}

/**
 * The integer variant of {@link chooseSubgroupMatrixTile} (kernels/mmm-sgmat.ts `mmmSgmatIntWGSL`): each
 * of the adapter's i8 → i32 configurations (device.ts `SubgroupMatrixSupport.usableInt`, best first) is
 * self-tested against the integer-dot tile ({@link INT_DOT_REFERENCE}, every {@link checkIntTypes} type)
 * until one passes, in each unit of i8 load offsets and strides (mmm-sgmat.ts `I8Units`; the sources
 * disagree on the driver's): 'words' first (Dawn's end2end tests), 'bytes' where that mismatched (not
 * where it failed to compile: the other unit compiles the same constructs); the chosen tile carries the
 * unit that passed, and `selfTest` each try's verdict. Needs the integer-dot tile itself (WGSL's packed_4x8_integer_dot_product) as the
 * reference; the reason says which prerequisite is missing.
 * @throws what GPU work throws on a lost device; never for a kernel's fault.
 */
export async function chooseSubgroupMatrixIntTile(
  gpu: GpuContext,
  make: (o: MatmulOptions, t: SgmatTile) => string = defaultMake,
  types?: readonly (WeightType | MixedCase)[],
  opts?: IntChoiceOptions,
): Promise<SgmatChoice> {
  return chooseTile(gpu, 'int', make, types, opts);
}

async function chooseTile(
  gpu: GpuContext,
  kind: 'f16' | 'int' | 'big',
  make: (o: MatmulOptions, t: SgmatTile) => string,
  types: readonly (WeightType | MixedCase)[] | undefined,
  opts: IntChoiceOptions = {},
): Promise<SgmatChoice> {
  const int = kind === 'int';
  const big = kind === 'big';
  const s = gpu.subgroupMatrix;
  if (!s?.available) return { reason: s?.reason ?? 'no subgroup matrices', selfTest: [] };
  const storage = s.maxWorkgroupStorage ?? gpu.device.limits.maxComputeWorkgroupStorageSize;
  // The large tile double-buffered where the workgroup memory takes it, else single-buffered (32 KiB).
  const singleBuffer = big && storage < sgmatWorkgroupBytes({ big });
  if (big && storage < sgmatWorkgroupBytes({ big, singleBuffer }))
    return {
      reason: `no large subgroup-matrix tile: it needs ${sgmatWorkgroupBytes({ big })} bytes of workgroup memory, ${sgmatWorkgroupBytes({ big, singleBuffer })} single-buffered (the device grants ${storage})`,
      selfTest: [],
    };
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
  const cacheable =
    make === defaultMake && types === undefined && !opts.problem && !opts.units && opts.planes === undefined;
  const key = `${kind}|${i.vendor}|${i.architecture}|${i.device}|${i.description}`;
  const hit = cacheable ? sgmatCache.get(key) : undefined;
  if (hit) return hit;
  const selfTest: SgmatChoice['selfTest'] = [];
  const subgroupSize = gpu.subgroupMaxSize as 32 | 64;
  let choice: SgmatChoice | undefined;
  for (const c of configs) {
    const tile: SgmatTile = {
      M: c.M,
      N: c.N,
      K: c.K,
      subgroupSize,
      ...(int ? { int: true } : {}),
      ...(big ? { big: true } : {}),
      ...(singleBuffer ? { singleBuffer: true } : {}),
    };
    // A shape that does not tile the large tile's subgroup quadrants is not a candidate (the generator throws).
    try {
      if (big) make(FIT_PROBE, tile);
    } catch (e) {
      selfTest.push({ config: configName(c), ok: false, reason: `not generated: ${(e as Error).message}` });
      continue;
    }
    if (int) {
      for (const i8Units of opts.units ?? I8_UNITS_ORDER) {
        const t: SgmatTile = { ...tile, i8Units };
        const r = await checkTileAgainstFloat(gpu, (o) => make(o, t), types ?? checkIntTypes(), {
          against: INT_DOT_REFERENCE,
          ...(opts.problem ? { problem: opts.problem } : {}),
          ...(opts.planes === undefined ? {} : { planes: opts.planes }),
        });
        selfTest.push({ config: configName(c), i8Units, ok: r.ok, ...(r.ok ? {} : { reason: r.reason }) });
        if (r.ok) choice = { tile: t, selfTest };
        // Passed, or a compile failure (not the unit's fault: the other unit compiles the same constructs).
        if (r.ok || r.compileFailed) break;
      }
      if (choice) break;
      continue;
    }
    const r = await checkTileAgainstFloat(gpu, (o) => make(o, tile), types, {
      ...(big ? { problem: BIG_CHECK_PROBLEM, tile: sgmatTileDims(tile) } : {}),
    });
    selfTest.push({ config: configName(c), ok: r.ok, ...(r.ok ? {} : { reason: r.reason }) });
    if (r.ok) {
      choice = { tile, selfTest };
      break;
    }
  }
  choice ??= {
    reason: `the ${int ? 'integer ' : big ? 'large ' : ''}subgroup-matrix tile failed its self-test against the ${int ? 'integer-dot' : 'float'} tile on every configuration (${selfTest.map((t) => `${t.config}${t.i8Units ? ` (i8 offsets in ${t.i8Units})` : ''}: ${t.reason}`).join('; ')})`,
    selfTest,
  };
  if (cacheable) sgmatCache.set(key, choice);
  return choice;
}
