/**
 * The prefill matmul tile on subgroup matrices (the GPU's matrix units: tensor cores, XMX; Dawn's feature
 * `chromium-experimental-subgroup-matrix`): the third tile kind beside mmm.ts's float and integer-dot
 * tiles, with the same workgroup tile (32 tokens × 64 weight rows), dispatch ({@link mmmWorkgroupsX}),
 * bindings, fused RMSNorm, segments and epilogues (RoPE + KV store, SwiGLU, residual: mmm.ts `epilogues`),
 * so one bind group serves any of the three.
 *
 * Per K-step of 32 the 64 threads (2 subgroups of 32, or 1 of 64) stage the step's activations (× the norm
 * weight) and the 64 weight rows, dequantized by the float tile's loaders (`dq32_<w>`), into workgroup
 * memory as f16 (rows of 32 halves padded to {@link SGMAT_STRIDE}); the K loop is double-buffered (step
 * s + 1 is staged while step s multiplies; one barrier per step). Each subgroup owns 64 / nSubgroups tile
 * rows × 32 tokens as (rows / M) × (32 / N) f32 result matrices and accumulates, per step, 32 / K products
 * `subgroupMatrixMultiplyAccumulate(left, right, acc)` of a left M×K weight matrix (row-major: tile row
 * m, k at m·stride + k) and a right K×N activation matrix (column-major: token n's k at n·stride + k).
 * The results go through workgroup memory (`cs`, [tile row][token]) into the float tile's 4 × 8
 * accumulators per thread, then the float tile's epilogues run unchanged.
 *
 * WGSL: the enum-template form of `subgroupMatrixLoad<T, row_major|col_major>(p, offset, stride)` and
 * `subgroupMatrixStore<row_major>(p, offset, value, stride)` (Dawn since 2026-06; the older form with a
 * bool majorness argument is deprecated), offsets and strides in array elements (Dawn/Tint wgsl.def; the
 * WGSL proposal gpuweb/gpuweb proposals/subgroup-matrix.md). Needs `shader-f16` and an f16 → f32
 * configuration with M, N, K in {8, 16, 32} (device.ts `subgroupMatrixSupport`).
 *
 * Precision: weights and activations × gnorm rounded to f16 (10-bit mantissa; |x·g| above 65,504 would be
 * infinite), products accumulated in f32; 1/rms applied to the f32 result as in the float tile.
 */
import type { SubgroupMatrixConfig } from '../device.ts';
import { f32Lit, type WeightType } from './common.ts';
import { bindingsWGSL, type MatmulOptions } from './matmul.ts';
import {
  activationSumsWGSL,
  epilogues,
  floatWeightStage,
  INT_DOT_TYPES,
  intLoadersWGSL,
  intScaleTerm,
  intWeightStage,
  mmmIntDotCovers,
  mmmWorkgroupsX,
  quantizeActivationsWGSL,
  segmentSelect,
  TILE_ROWS,
  TILE_TOKENS,
  XF_WGSL,
} from './mmm.ts';

export { mmmWorkgroupsX };

/** Halves per staged tile row: 32 of a K-step and 8 of padding (80 bytes: rows stay 16-byte aligned). */
export const SGMAT_STRIDE = 40;

/** The subgroup-matrix shape the kernel is generated for (M×N×K of an f16 → f32 configuration). */
export type SgmatShape = Pick<SubgroupMatrixConfig, 'M' | 'N' | 'K'>;

/**
 * A subgroup-matrix tile to generate: the shape, the subgroup size (the adapter's maximum), and `int` for
 * the integer variant ({@link mmmSgmatIntWGSL}, an i8 → i32 shape) instead of the f16 one.
 */
export type SgmatTile = SgmatShape & {
  subgroupSize: 32 | 64;
  int?: boolean;
  big?: boolean;
  /**
   * One K-step buffer instead of two (f16 tiles; the plan sets it on the large tile where the device's
   * workgroup memory is under the double-buffered tile's, e.g. 32 KiB): staging and multiplying take turns,
   * two barriers per step ({@link sgmatWorkgroupBytes}: the large tile's 47,616 B become 32,256 B).
   */
  singleBuffer?: boolean;
  /** The integer tile's unit of i8 load offsets and strides ({@link I8Units}; default 'words'). */
  i8Units?: I8Units;
};

/**
 * The unit in which the integer tile's `subgroupMatrixLoad` of i8 operands (packed 4 per word in
 * `array<i32>`) counts offsets and strides: 'words', elements of the array (32-bit words; Dawn's
 * enum-template form since commit 9361310a57, 2026-06-29, whose end2end SubgroupMatrixTests divide 8-bit
 * offsets and strides by 4), or 'bytes', i8 elements (the WGSL proposal's element-stride table and the
 * older Dawn doc). The sources disagree, so the load-time self-test (sgmat-check.ts) tries 'words' first
 * and 'bytes' on a mismatch, and the plan compiles the one that passed.
 */
export type I8Units = 'bytes' | 'words';

/** The order the self-test tries {@link I8Units} in: the newer evidence (Dawn's tests) first. */
export const I8_UNITS_ORDER: readonly I8Units[] = ['words', 'bytes'];

/**
 * Name of a tile for kernels.prefill and labels: `16x16x16` (f16), `i8 16x16x32` (the integer variant),
 * `16x16x16 64x128` (the large f16 tile: 64 tokens × 128 rows), ` 1-buffer` after a single-buffered one.
 */
export function sgmatName(c: SgmatShape & { int?: boolean; big?: boolean; singleBuffer?: boolean }): string {
  return `${c.int ? 'i8 ' : ''}${c.M}x${c.N}x${c.K}${c.big ? ' 64x128' : ''}${c.singleBuffer ? ' 1-buffer' : ''}`;
}

/**
 * The WGSL of `tile` for `o`: {@link mmmSgmatIntWGSL} where `tile.int`, else {@link mmmSgmatWGSL} (the
 * large tile where `tile.big`).
 * @throws Error for a large integer tile (not built) and what the generators throw.
 */
export function sgmatTileWGSL(o: MatmulOptions, tile: SgmatTile): string {
  if (tile.int && tile.big) throw new Error('the integer subgroup-matrix tile has no large variant');
  if (tile.int && tile.singleBuffer)
    throw new Error('the integer subgroup-matrix tile has no single-buffered variant');
  return tile.int
    ? mmmSgmatIntWGSL(o, tile, tile.subgroupSize, tile.i8Units)
    : mmmSgmatWGSL(o, tile, tile.subgroupSize, tile.big, tile.singleBuffer);
}

/** True when `tile` runs `o`'s weights (the integer variant: INT_DOT_TYPES only; the f16 one: all). */
export function sgmatTileCovers(o: Pick<MatmulOptions, 'segments'>, tile: SgmatTile): boolean {
  return !tile.int || mmmIntDotCovers(o);
}

/**
 * A subgroup-matrix tile's workgroup geometry: `tokens` × `rows` per workgroup and `threads` invocations
 * (2 per token to stage activations, 1 per weight row to stage weights). The tile of 32 × 64 (64
 * threads, mmm.ts's) or, with `big`, 64 tokens × 128 rows (128 threads: llama.cpp's WebGPU and Vulkan
 * coopmat GEMMs use 64–128-wide tiles with 4+ subgroups, ../shared/notes/gpu-kernel-designs.md): each
 * activation is read once per 128 weight rows and each weight once per 64 tokens, half the re-reads.
 */
export function sgmatTileDims(t: { big?: boolean }): { tokens: number; rows: number; threads: number } {
  return t.big
    ? { tokens: 2 * TILE_TOKENS, rows: 2 * TILE_ROWS, threads: 2 * TILE_ROWS }
    : { tokens: TILE_TOKENS, rows: TILE_ROWS, threads: TILE_ROWS };
}

/**
 * Workgroup memory of the f16 tile in bytes: two K-steps (one with `singleBuffer`) of f16 activations and
 * weights (rows of {@link SGMAT_STRIDE} halves), the f32 result tile (32 × 64; the large tile's results go
 * through it in two passes of 64 rows × 64 tokens) and the norm's f32 per thread. 32 × 64: 23,296 B;
 * large: 47,616 B, over the 32 KiB (32,768 B) many adapters grant, single-buffered 32,256 B. The f32
 * result tile cannot share the f16 staging's memory: WGSL has no aliasing of workgroup variables, and the
 * f16 operands load from an `array<f16>`, the f32 results store to an `array<f32>`.
 */
export function sgmatWorkgroupBytes(t: { big?: boolean; singleBuffer?: boolean }): number {
  const d = sgmatTileDims(t);
  const buffers = t.singleBuffer ? 1 : 2;
  return buffers * (d.tokens + d.rows) * SGMAT_STRIDE * 2 + TILE_ROWS * d.tokens * 4 + d.threads * 4;
}

/**
 * The tile's WGSL for `o` (matmul.ts options; `TT` ignored, the tile is 32 tokens, or 64 with `big`), on
 * subgroup matrices of shape `c` with subgroups of `subgroupSize` invocations. Dispatch:
 * ({@link mmmWorkgroupsX}(segments, rows), ceil(T / tokens)) of {@link sgmatTileDims}.
 * `big`: 64 tokens × 128 rows, 128 threads; subgroups of 32 own 64 rows × 32 tokens each (4 × 2 result
 * matrices at 16×16), of 64 own 64 rows × 64 tokens. Threads stage the weight row `lid` of the tile (the
 * float tile's loader map per 64-row half, `ub` advanced by the half's units) and token `lid / 2`'s half
 * `lid % 2` of a K-step. The epilogue runs in two passes of 64 rows: the subgroups of that half store
 * their results to `cs` ([row][token], 64 × 64), then thread `lid` takes the float tile's 4 × 8
 * accumulators of rows (tx + 8r) and tokens 32·(lid / 64) + ty + 8i and runs mmm.ts's epilogues with `ub`
 * and `t0` moved to its quadrant.
 * Bindings: 0 step, 1 x, [2 gnorm], each segment's weights, then `extra` (as mmm.ts `mmmWGSL`).
 * @throws Error for `lastTokenOnly`, more than 2 dots per unit, a subgroup size other than 32 or 64, or a
 *   shape whose M does not divide the subgroup's rows, N does not divide its tokens or K does not divide 32.
 */
export function mmmSgmatWGSL(
  o: MatmulOptions,
  c: SgmatShape,
  subgroupSize: number,
  big = false,
  singleBuffer = false,
): string {
  if (o.lastTokenOnly)
    throw new Error('mmmSgmatWGSL computes whole token tiles; lastTokenOnly needs a decode kernel');
  for (const s of o.segments) {
    if (s.dots.length < 1 || s.dots.length > 2)
      throw new Error(`mmmSgmatWGSL takes 1–2 dots per unit (got ${s.dots.length})`);
  }
  if (subgroupSize !== 32 && subgroupSize !== 64)
    throw new Error(`mmmSgmatWGSL is built for subgroups of 32 or 64 invocations (got ${subgroupSize})`);
  const { tokens: TT, rows: TR, threads } = sgmatTileDims({ big });
  const nSg = threads / subgroupSize;
  // Subgroups split the rows into 2 (or 1) parts, then the tokens.
  const rowParts = Math.min(nSg, 2);
  const tokParts = nSg / rowParts;
  const rowsPerSg = TR / rowParts;
  const toksPerSg = TT / tokParts;
  if (rowsPerSg % c.M || toksPerSg % c.N || 32 % c.K)
    throw new Error(
      `subgroup-matrix shape ${sgmatName(c)} does not tile ${rowsPerSg} rows × ${toksPerSg} tokens × 32 K`,
    );
  const mPer = rowsPerSg / c.M;
  const nPer = toksPerSg / c.N;
  const S = SGMAT_STRIDE;
  const xBuf = TT * S;
  const wBuf = TR * S;
  // K-step buffers: 2 (stage step s + 1 while multiplying step s) or 1 (take turns).
  const NB = singleBuffer ? 1 : 2;
  const { K } = o;
  const R = (n: number) => Array.from({ length: n }, (_, i) => i);
  const lines = [
    'enable f16;',
    'enable chromium_experimental_subgroup_matrix;',
    'diagnostic(off, chromium.subgroup_matrix_uniformity);',
    ...bindingsWGSL(o),
  ];
  lines.push(`
const K: u32 = ${K}u;
const STEPS: u32 = ${Math.ceil(K / 32)}u;
var<workgroup> xh: array<f16, ${NB * xBuf}>; // [buffer][token][${S}]: x · gnorm of a K-step
var<workgroup> wh: array<f16, ${NB * wBuf}>; // [buffer][tile row][${S}]: dequantized weights of a K-step
var<workgroup> cs: array<f32, ${TILE_ROWS * TT}>; // [tile row][token]: the results${big ? ' (64 rows per pass)' : ''}
var<workgroup> red: array<f32, ${threads}>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = ${big ? '(lid % 64u) / 8u' : 'lid / 8u'};
  let ${big ? 'tw' : 't0'} = wg.y * ${TT}u;
  let nT = step.nTokens;
  let lt = lid / 2u;
  let lh = lid % 2u;
  let xrow = min(${big ? 'tw' : 't0'} + lt, nT - 1u) * K;
  var ss = 0.0;`);
  if (tokParts === 1)
    lines.push(`  // This subgroup's tile rows: [sr, sr + ${rowsPerSg}).
  let sr = (lid / ${subgroupSize}u) * ${rowsPerSg}u;`);
  else
    lines.push(`  // This subgroup's tile rows [sr, sr + ${rowsPerSg}) and tokens [st, st + ${toksPerSg}).
  let sr = ((lid / ${subgroupSize}u) % ${rowParts}u) * ${rowsPerSg}u;
  let st = ((lid / ${subgroupSize}u) / ${rowParts}u) * ${toksPerSg}u;`);
  lines.push(`  var seg = 0u;
  var ub = 0u;`);
  if (big) lines.push("  var uph = 0u; // the segment's units per 64 rows");
  lines.push(...segmentSelect(o, TR, big));
  for (const m of R(mPer))
    for (const n of R(nPer)) lines.push(`  var c${m}_${n}: subgroup_matrix_result<f32, ${c.N}, ${c.M}>;`);
  lines.push(
    singleBuffer
      ? `  for (var s = 0u; s < STEPS; s++) {
    {
      // Stage K-step s (one buffer: the last step's multiply ended before the loop's barrier).
      let k0 = s * 32u;
      let xb = lt * ${S}u + lh * 16u;
      let wb = 0u;`
      : `  for (var s = 0u; s <= STEPS; s++) {
    if (s < STEPS) {
      // Stage K-step s into buffer s % 2.
      let k0 = s * 32u;
      let xb = (s % 2u) * ${xBuf}u + lt * ${S}u + lh * 16u;
      let wb = (s % 2u) * ${wBuf}u;`,
  );
  lines.push(`      for (var j = 0u; j < 4u; j++) {
        let k = k0 + lh * 16u + j * 4u;
        var v = vec4<f32>(ldx(xrow, k), ldx(xrow, k + 1u), ldx(xrow, k + 2u), ldx(xrow, k + 3u));
        ${
          o.norm
            ? `ss += dot(v, v);
        v *= vec4<f32>(ld_gnorm(min(k, K - 1u)), ld_gnorm(min(k + 1u, K - 1u)), ld_gnorm(min(k + 2u, K - 1u)), ld_gnorm(min(k + 3u, K - 1u)));`
            : ''
        }
        for (var e = 0u; e < 4u; e++) { xh[xb + j * 4u + e] = f16(v[e]); }
      }`);
  if (big) {
    // Weight row lid of the tile: row lid % 64 of 64-row half hh, whose units start uph further.
    lines.push(`      {
      let hh = lid / 64u;
      let ub = ub + hh * uph;
      let lid = lid % 64u;`);
    lines.push(
      ...floatWeightStage(
        o,
        `for (var e = 0u; e < 32u; e++) { wh[wb + (hh * 64u + rho) * ${S}u + e] = f16(q[e]); }`,
        '      ',
      ),
    );
    lines.push('      }');
  } else
    lines.push(
      ...floatWeightStage(
        o,
        `for (var e = 0u; e < 32u; e++) { wh[wb + rho * ${S}u + e] = f16(q[e]); }`,
        '      ',
      ),
    );
  lines.push('    }');
  lines.push(
    singleBuffer
      ? `    workgroupBarrier();
    {
      // Multiply K-step s.
      let xb = ${tokParts === 1 ? '0u' : `st * ${S}u`};
      let wb = 0u;`
      : `    if (s > 0u) {
      // Multiply K-step s - 1 from buffer (s - 1) % 2.
      let xb = ((s - 1u) % 2u) * ${xBuf}u${tokParts === 1 ? '' : ` + st * ${S}u`};
      let wb = ((s - 1u) % 2u) * ${wBuf}u;`,
  );
  for (const kk of R(32 / c.K)) {
    for (const m of R(mPer)) {
      lines.push(`      let oa${kk}_${m} = wb + (sr + ${m * c.M}u) * ${S}u + ${kk * c.K}u;`);
      lines.push(
        `      let lm${kk}_${m} = subgroupMatrixLoad<subgroup_matrix_left<f16, ${c.K}, ${c.M}>, row_major>(&wh, oa${kk}_${m}, ${S}u);`,
      );
    }
    for (const n of R(nPer)) {
      lines.push(`      let ob${kk}_${n} = xb + ${n * c.N * S}u + ${kk * c.K}u;`);
      lines.push(
        `      let rm${kk}_${n} = subgroupMatrixLoad<subgroup_matrix_right<f16, ${c.N}, ${c.K}>, col_major>(&xh, ob${kk}_${n}, ${S}u);`,
      );
    }
    for (const m of R(mPer))
      for (const n of R(nPer))
        lines.push(
          `      c${m}_${n} = subgroupMatrixMultiplyAccumulate(lm${kk}_${m}, rm${kk}_${n}, c${m}_${n});`,
        );
  }
  lines.push('    }\n    workgroupBarrier();\n  }');
  if (!big) {
    for (const m of R(mPer))
      for (const n of R(nPer)) {
        lines.push(`  let oc${m}_${n} = (sr + ${m * c.M}u) * ${TT}u + ${n * c.N}u;`);
        lines.push(`  subgroupMatrixStore<row_major>(&cs, oc${m}_${n}, c${m}_${n}, ${TT}u);`);
      }
    lines.push('  workgroupBarrier();');
    // Thread (tx, ty)'s accumulators, as in the float tile: slot r = tile row tx + 8r, token ty + 8i.
    for (const r of R(8))
      for (const i of R(4)) lines.push(`  a${r}_${i} = cs[(tx + ${8 * r}u) * ${TT}u + ty + ${8 * i}u];`);
    if (o.norm) {
      lines.push(`  red[lid] = ss;
  workgroupBarrier();`);
      for (const i of R(4)) {
        lines.push(
          `  let inv${i} = inverseSqrt((red[2u * (ty + ${8 * i}u)] + red[2u * (ty + ${8 * i}u) + 1u]) / f32(K) + ${f32Lit(o.norm.eps)});`,
        );
      }
    }
    lines.push(...epilogues(o));
    lines.push('}');
    return lines.join('\n');
  }
  // The large tile's epilogue: thread lid's tokens are 32 · (lid / 64) + ty + 8i in both passes.
  lines.push('  let th = (lid / 64u) * 32u;');
  if (o.norm) {
    lines.push(`  red[lid] = ss;
  workgroupBarrier();`);
    for (const i of R(4))
      lines.push(
        `  let inv${i} = inverseSqrt((red[2u * (th + ty + ${8 * i}u)] + red[2u * (th + ty + ${8 * i}u) + 1u]) / f32(K) + ${f32Lit(o.norm.eps)});`,
      );
  }
  lines.push(`  for (var p = 0u; p < 2u; p++) {
    // Pass p: rows [64p, 64p + 64) through cs.
    if (sr / 64u == p) {`);
  for (const m of R(mPer))
    for (const n of R(nPer)) {
      lines.push(
        `      let oc${m}_${n} = (sr % 64u + ${m * c.M}u) * ${TT}u + ${tokParts === 1 ? '' : 'st + '}${n * c.N}u;`,
      );
      lines.push(`      subgroupMatrixStore<row_major>(&cs, oc${m}_${n}, c${m}_${n}, ${TT}u);`);
    }
  lines.push('    }\n    workgroupBarrier();');
  for (const r of R(8))
    for (const i of R(4)) lines.push(`    a${r}_${i} = cs[(tx + ${8 * r}u) * ${TT}u + th + ty + ${8 * i}u];`);
  lines.push(`    {
    let ub = ub + p * uph;
    let t0 = tw + th;`);
  lines.push(...epilogues(o).map((l) => l.replace(/^/gm, '  ')));
  lines.push('    }\n    workgroupBarrier();\n  }');
  lines.push('}');
  return lines.join('\n');
}

/** Weight types whose integer loaders give one scale per 32 quants (s0 = s1, m0 = m1: one product per block). */
const ONE_SCALE_PER_32: readonly WeightType[] = ['Q4_0', 'Q5_0', 'Q8_0', 'Q4_K', 'Q5_K'];

/** Words (i32, 4 int8 each) per staged row of the integer tile: 32 quants and 16 bytes of padding. */
export const SGMAT_INT_STRIDE_WORDS = 12;

/** True when the integer subgroup-matrix tile needs a product per 16-quant half (Q6_K, Q3_K, Q2_K: per-16 scales). */
export function sgmatIntHalves(o: Pick<MatmulOptions, 'segments'>): boolean {
  return o.segments.some((s) => s.weights.some((w) => !ONE_SCALE_PER_32.includes(w.type)));
}

/**
 * Workgroup memory of {@link mmmSgmatIntWGSL} in bytes (`halves`: {@link sgmatIntHalves}): two K-steps of
 * int8 tiles and their factors, the step's integer dots, the norm's f32 per token (31,872 B with halves).
 */
export function sgmatIntWorkgroupBytes(halves: boolean): number {
  const H = halves ? 2 : 1;
  const W = SGMAT_INT_STRIDE_WORDS * 4;
  return (
    2 * (H * TILE_TOKENS + TILE_ROWS) * W +
    H * TILE_ROWS * TILE_TOKENS * 4 +
    2 * (TILE_TOKENS + TILE_ROWS) * 16 +
    TILE_TOKENS * 4
  );
}

/**
 * The integer variant of the subgroup-matrix tile (llama.cpp's MMQ scheme on the matrix units): for
 * {@link INT_DOT_TYPES} weights, with the integer-dot tile's pieces (mmm.ts): per K-step of 32 (one block
 * or sub-block), threads 0–31 round one token's activations (× gnorm) to int8 with one scale
 * (`quantizeActivationsWGSL`, ggml's quantize_row_q8_0), every thread stages one weight row's 32 quants as
 * int8 with its (s0, s1, m0, m1) (`intWeightStage`; no float expansion), then each subgroup multiplies its
 * rows × 32 tokens as i8 × i8 → i32 subgroup matrices (`subgroup_matrix_left<i8, K, M>` row-major from the
 * weight tile, `subgroup_matrix_right<i8, N, K>` column-major from the activation tile), stores the step's
 * exact integer dots to workgroup memory and each thread applies the block's scales to its 4 × 8 f32
 * accumulators (`intScaleTerm`). Types with per-16 scales (Q6_K, Q3_K, Q2_K; {@link sgmatIntHalves}) take
 * two products per step, against the activations with the other half zeroed. The result equals the
 * integer-dot tile's up to f32 rounding (same int8 activations, same exact integer dots, same scales).
 *
 * i8 operands live in `array<i32>` (4 per word, little-endian); load offsets and strides count `i8Units`
 * ({@link I8Units}): 'words' (default), elements of the array, as Dawn's enum-template form does since
 * 9361310a57 (its end2end SubgroupMatrixTests divide 8-bit offsets and strides by 4), or 'bytes', i8
 * elements, as the WGSL proposal's element-stride table (i8: 1 byte) and the older Dawn doc say. Which one
 * a driver does is settled at load by the self-test (sgmat-check.ts `chooseSubgroupMatrixIntTile`). Every
 * i8 offset and stride is a whole number of words in either unit (rows of {@link SGMAT_INT_STRIDE_WORDS}
 * words, buffers of whole rows, K-step parts of K ∈ {8, 16, 32} quants), so both variants read the same
 * bytes. Needs an i8 → i32 configuration with M, N, K in {8, 16, 32} (16×16×32 and 16×8×32 on
 * NVIDIA) and {@link sgmatIntWorkgroupBytes} of workgroup memory. The K loop is double-buffered as the f16
 * tile's (iteration s stages step s into buffer s % 2 while step s - 1 is multiplied from the other; two
 * barriers per step: after the step's integer dots are stored, after their scales are applied; the
 * single-buffered loop had three).
 * @throws Error for weights outside INT_DOT_TYPES, `lastTokenOnly`, more than 2 dots per unit, a subgroup
 *   size other than 32 or 64, a shape that does not tile the subgroup's rows × 32 tokens × 32, or
 *   (with 'words') a K that does not split a row into whole words.
 */
export function mmmSgmatIntWGSL(
  o: MatmulOptions,
  c: SgmatShape,
  subgroupSize: number,
  i8Units: I8Units = 'words',
): string {
  if (o.lastTokenOnly)
    throw new Error('mmmSgmatIntWGSL computes whole token tiles; lastTokenOnly needs a decode kernel');
  if (!mmmIntDotCovers(o))
    throw new Error(
      `the integer subgroup-matrix tile takes ${INT_DOT_TYPES.join(', ')} weights only (got ${o.segments
        .flatMap((s) => s.weights.map((w) => w.type))
        .join(', ')})`,
    );
  for (const s of o.segments) {
    if (s.dots.length < 1 || s.dots.length > 2)
      throw new Error(`mmmSgmatIntWGSL takes 1–2 dots per unit (got ${s.dots.length})`);
  }
  if (subgroupSize !== 32 && subgroupSize !== 64)
    throw new Error(`mmmSgmatIntWGSL is built for subgroups of 32 or 64 invocations (got ${subgroupSize})`);
  const rowsPerSg = TILE_ROWS / (64 / subgroupSize);
  if (rowsPerSg % c.M || TILE_TOKENS % c.N || 32 % c.K)
    throw new Error(
      `subgroup-matrix shape ${sgmatName(c)} does not tile ${rowsPerSg} rows × 32 tokens × 32 K`,
    );
  const halves = sgmatIntHalves(o);
  const H = halves ? 2 : 1;
  const mPer = rowsPerSg / c.M;
  const nPer = TILE_TOKENS / c.N;
  const SW = SGMAT_INT_STRIDE_WORDS;
  // i8 offsets and strides in the load's unit: U i8 per unit (4: words of the array, 1: bytes).
  const U = i8Units === 'words' ? 4 : 1;
  if (c.K % U) throw new Error(`a K of ${c.K} quants is not a whole number of words`);
  const SB = (SW * 4) / U; // the row stride
  const R = (n: number) => Array.from({ length: n }, (_, i) => i);
  const lines = [
    'enable chromium_experimental_subgroup_matrix;',
    'diagnostic(off, chromium.subgroup_matrix_uniformity);',
    ...bindingsWGSL(o),
    ...intLoadersWGSL(o),
  ];
  const XI = H * TILE_TOKENS * SW; // words of one buffer of xi
  const WI = TILE_ROWS * SW; // words of one buffer of wi
  lines.push(`
const K: u32 = ${o.K}u;
const STEPS: u32 = ${Math.ceil(o.K / 32)}u;
var<workgroup> xi: array<i32, ${2 * XI}>; // [buffer][half][token][${SW}]: int8 activations of a K-step${halves ? ' (half 0: quants 16..31 zeroed, half 1: 0..15 zeroed)' : ''}
var<workgroup> wi: array<i32, ${2 * WI}>; // [buffer][tile row][${SW}]: the row's 32 quants as int8
var<workgroup> xf: array<vec4<f32>, ${2 * TILE_TOKENS}>; // [buffer][token]: (dx, dx·Σq[0..16), dx·Σq[16..32), 0)
var<workgroup> wf: array<vec4<f32>, ${2 * TILE_ROWS}>; // [buffer][tile row]: (s0, s1, m0, m1)
var<workgroup> ci: array<i32, ${H * TILE_ROWS * TILE_TOKENS}>; // [half][tile row][token]: the step's integer dots
var<workgroup> red: array<f32, ${TILE_TOKENS}>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = lid / 8u;
  let t0 = wg.y * ${TILE_TOKENS}u;
  let nT = step.nTokens;
  let xrow = min(t0 + lid % ${TILE_TOKENS}u, nT - 1u) * K;
  var ss = 0.0;
  // This subgroup's tile rows: [sr, sr + ${rowsPerSg}).
  let sr = (lid / ${subgroupSize}u) * ${rowsPerSg}u;
  var seg = 0u;
  var ub = 0u;`);
  lines.push(...segmentSelect(o));
  for (const h of R(H))
    for (const m of R(mPer))
      for (const n of R(nPer))
        lines.push(`  var c${h}_${m}_${n}: subgroup_matrix_result<i32, ${c.N}, ${c.M}>;`);
  // Double-buffered K loop: iteration s stages step s into buffer s % 2 while the matrix units multiply
  // step s - 1 from buffer (s - 1) % 2; two barriers per step (the step's dots in ci, then ci free again).
  lines.push(`  for (var s = 0u; s <= STEPS; s++) {
    if (s < STEPS) {
    let k0 = s * 32u;
    let ib = s % 2u;
    if (lid < ${TILE_TOKENS}u) {`);
  lines.push(...quantizeActivationsWGSL(o, '      '));
  const words = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6', 'q7'];
  for (const h of R(H)) {
    const w = halves ? words.map((q, j) => (j < 4 === (h === 0) ? q : '0u')) : words;
    lines.push(
      `      ${w.map((q, j) => `xi[ib * ${XI}u + ${h * TILE_TOKENS * SW + j}u + lid * ${SW}u] = bitcast<i32>(${q});`).join(' ')}`,
    );
  }
  lines.push(...activationSumsWGSL('      '), `      xf[ib * ${TILE_TOKENS}u + lid] = ${XF_WGSL};`, '    }');
  lines.push(
    ...intWeightStage(
      o,
      `for (var e = 0u; e < 8u; e++) { wi[ib * ${WI}u + rho * ${SW}u + e] = bitcast<i32>(q[e]); }
      wf[ib * ${TILE_ROWS}u + rho] = sc;`,
      '    ',
    ),
  );
  lines.push(`    }
    let pb = (s + 1u) % 2u; // the buffer of step s - 1
    if (s > 0u) {
    let wo = pb * ${(WI * 4) / U}u;
    let xo = pb * ${(XI * 4) / U}u;`);
  for (const h of R(H))
    for (const m of R(mPer))
      for (const n of R(nPer))
        lines.push(`    c${h}_${m}_${n} = subgroup_matrix_result<i32, ${c.N}, ${c.M}>();`);
  for (const kk of R(32 / c.K)) {
    for (const m of R(mPer)) {
      lines.push(`    let oa${kk}_${m} = wo + (sr + ${m * c.M}u) * ${SB}u + ${(kk * c.K) / U}u;`);
      lines.push(
        `    let lm${kk}_${m} = subgroupMatrixLoad<subgroup_matrix_left<i8, ${c.K}, ${c.M}>, row_major>(&wi, oa${kk}_${m}, ${SB}u);`,
      );
    }
    for (const h of R(H))
      for (const n of R(nPer)) {
        lines.push(`    let ob${h}_${kk}_${n} = xo + ${(h * TILE_TOKENS + n * c.N) * SB + (kk * c.K) / U}u;`);
        lines.push(
          `    let rm${h}_${kk}_${n} = subgroupMatrixLoad<subgroup_matrix_right<i8, ${c.N}, ${c.K}>, col_major>(&xi, ob${h}_${kk}_${n}, ${SB}u);`,
        );
      }
    for (const h of R(H))
      for (const m of R(mPer))
        for (const n of R(nPer))
          lines.push(
            `    c${h}_${m}_${n} = subgroupMatrixMultiplyAccumulate(lm${kk}_${m}, rm${h}_${kk}_${n}, c${h}_${m}_${n});`,
          );
  }
  for (const h of R(H))
    for (const m of R(mPer))
      for (const n of R(nPer)) {
        lines.push(
          `    let oc${h}_${m}_${n} = ${h * TILE_ROWS * TILE_TOKENS}u + (sr + ${m * c.M}u) * ${TILE_TOKENS}u + ${n * c.N}u;`,
        );
        lines.push(
          `    subgroupMatrixStore<row_major>(&ci, oc${h}_${m}_${n}, c${h}_${m}_${n}, ${TILE_TOKENS}u);`,
        );
      }
  lines.push('    }\n    workgroupBarrier();\n    if (s > 0u) {');
  for (const i of R(4)) lines.push(`    let xf${i} = xf[pb * ${TILE_TOKENS}u + ty + ${8 * i}u];`);
  for (const r of R(8)) {
    const at = (h: number, i: number) =>
      `f32(ci[${h * TILE_ROWS * TILE_TOKENS}u + (tx + ${8 * r}u) * ${TILE_TOKENS}u + ty + ${8 * i}u])`;
    const body = R(4)
      .map((i) => intScaleTerm(`a${r}_${i}`, `xf${i}`, 'f', at(0, i), halves ? at(1, i) : '0.0'))
      .join('\n      ');
    lines.push(`    { let f = wf[pb * ${TILE_ROWS}u + tx + ${8 * r}u];\n      ${body} }`);
  }
  lines.push('    }\n    workgroupBarrier();\n  }');
  if (o.norm) {
    lines.push(`  if (lid < ${TILE_TOKENS}u) { red[lid] = ss; }
  workgroupBarrier();`);
    for (const i of R(4))
      lines.push(`  let inv${i} = inverseSqrt(red[ty + ${8 * i}u] / f32(K) + ${f32Lit(o.norm.eps)});`);
  }
  lines.push(...epilogues(o));
  lines.push('}');
  return lines.join('\n');
}
