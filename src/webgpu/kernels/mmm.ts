/**
 * Matrix × matrix kernel for prefill on GPUs: a register-tiled GEMM with the fused RMSNorm, segments and
 * epilogues of matmul.ts `matmulWGSL` (same bindings, so one bind group serves either).
 *
 * Shapes (ggml order): x [T, K] f32 (T tokens), W [K, N] (N rows of K weights, any {@link WeightType}),
 * y per the epilogue (residual add, SwiGLU, RoPE + KV store, plain store).
 *
 * Tiling (the structure of llama.cpp's ggml-webgpu `mul_mat_reg_tile.wgsl` and of our roofline kernel,
 * src/bench/roofline.ts): a workgroup of 64 threads (8 × 8) computes a tile of {@link TILE_TOKENS} = 32
 * tokens × {@link TILE_ROWS} = 64 weight rows; thread (tx, ty) owns rows tx + 8r (r < 8) and tokens
 * ty + 8i (i < 4): 32 f32 accumulators in named registers. K advances in steps of 32 (one Q4_0/Q8_0/Q5_0
 * block, one Q4_K/Q6_K sub-block): each thread dequantizes one weight row's 32 weights once into a
 * workgroup-memory tile (`dq32_<w>`, aligned words where the weight was repacked into planes), two
 * threads per token load its 32 activations (× the norm weight), then every thread does 8 × 32 `dot` of
 * vec4s from the two tiles (rows padded to 9 vec4 so the threads of a warp hit distinct banks). The
 * RMSNorm's sum of squares comes from the same activation loads and its 1/rms multiplies the finished
 * dots (no extra pass over x). Units of 2 dot products (a RoPE pair, gate and up) keep both rows in one
 * thread: a segment of D dots per unit covers 64 / D units per workgroup.
 *
 * Workgroup memory: 2 × (32 + 64) × 9 × 16 B ≈ 13.5 KiB + 256 B, under WebGPU's default 16 KiB.
 * Dispatch ({@link mmmWorkgroupsX}, ceil(T / {@link TILE_TOKENS})).
 */
import { f32Lit, isQuantized, type WeightType } from './common.ts';
import { bindingsWGSL, type MatmulOptions, type MatmulSegment, weightVar } from './matmul.ts';
import { DECODERS } from './quants/index.ts';

/** Tokens per workgroup tile. */
export const TILE_TOKENS = 32;
/** Weight rows per workgroup tile. */
export const TILE_ROWS = 64;
/** vec4 slots per tile row: 8 for the 32 values of a K-step, plus one of padding. */
const ROW_V4 = 9;

/** Options of {@link mmmWGSL} beyond the matmul's. */
export interface MmmOptions {
  /**
   * The integer-dot tile (WGSL language feature `packed_4x8_integer_dot_product`): each token's 32
   * activations of a K-step (× the norm weight) rounded to int8 with one scale (amax / 127, ggml's
   * quantize_row_q8_0), each weight row's 32 quants kept as integers in the workgroup tile with their
   * scales and offsets (w = s·q + m per 16-weight half), and the products summed with `dot4I8Packed`:
   * 8 packed dot products per row and token instead of 32 multiply-adds, and a quarter of the tile's
   * workgroup memory traffic (llama.cpp's MMQ scheme). Only for {@link INT_DOT_TYPES}.
   */
  intDot?: boolean;
}

/** Weight types the integer-dot tile takes (their quants are integers below 64 with per-16 scales). */
export const INT_DOT_TYPES: readonly WeightType[] = [
  'Q4_0',
  'Q5_0',
  'Q8_0',
  'Q4_K',
  'Q6_K',
  'Q5_K',
  'Q3_K',
  'Q2_K',
];

/** True when every weight of `o` is of an {@link INT_DOT_TYPES} type (the integer-dot tile can run it). */
export function mmmIntDotCovers(o: Pick<MatmulOptions, 'segments'>): boolean {
  return o.segments.every((s) => s.weights.every((w) => INT_DOT_TYPES.includes(w.type)));
}

/** Accumulator of slot r (a tile row of the thread) and token i. */
const acc = (r: number, i: number) => `a${r}_${i}`;

/**
 * Units of `s` per workgroup (`rows`, default {@link TILE_ROWS}, over its dot products per unit; the large
 * subgroup-matrix tile of kernels/mmm-sgmat.ts has 128 rows).
 */
export function unitsPerTile(s: { dots: readonly unknown[] }, rows = TILE_ROWS): number {
  return rows / s.dots.length;
}

/**
 * Workgroup ranges [start, end) along x allotted to each segment for workgroup tiles of `rows` weight
 * rows (default {@link TILE_ROWS}); the last end is the dispatch size.
 */
export function mmmRanges(
  segments: MatmulOptions['segments'],
  rows = TILE_ROWS,
): { start: number; end: number }[] {
  let start = 0;
  return segments.map((s) => {
    const r = { start, end: start + Math.ceil(s.nUnits / unitsPerTile(s, rows)) };
    start = r.end;
    return r;
  });
}

/**
 * Workgroups along x for {@link mmmWGSL} with these segments (or for a tile of `rows` weight rows: the
 * large subgroup-matrix tile, kernels/mmm-sgmat.ts `sgmatTileDims`).
 */
export function mmmWorkgroupsX(segments: MatmulOptions['segments'], rows = TILE_ROWS): number {
  return mmmRanges(segments, rows).at(-1)?.end ?? 0;
}

/**
 * The kernel's WGSL (options as matmul.ts `matmulWGSL`; `TT` is ignored, the tile is 32 tokens).
 * Bindings: 0 step, 1 x, [2 gnorm], each segment's weights, then `extra`.
 * @throws Error for `lastTokenOnly` (the logits of one token are a matrix × vector: use mmv) or a segment
 *   with more than 2 dot products per unit.
 */
export function mmmWGSL(o: MatmulOptions, opts: MmmOptions = {}): string {
  if (o.lastTokenOnly)
    throw new Error('mmmWGSL computes whole token tiles; lastTokenOnly needs a decode kernel');
  for (const s of o.segments) {
    if (s.dots.length < 1 || s.dots.length > 2)
      throw new Error(`mmmWGSL takes 1–2 dots per unit (got ${s.dots.length})`);
  }
  if (opts.intDot) {
    if (!mmmIntDotCovers(o))
      throw new Error(
        `the integer-dot tile takes ${INT_DOT_TYPES.join(', ')} weights only (got ${o.segments
          .flatMap((s) => s.weights.map((w) => w.type))
          .join(', ')})`,
      );
    return mmmIntWGSL(o);
  }
  const { K } = o;
  const lines = bindingsWGSL(o);
  lines.push(`
const K: u32 = ${K}u;
var<workgroup> xs: array<vec4<f32>, ${TILE_TOKENS * ROW_V4}>; // [token][9]: x · gnorm of this K-step
var<workgroup> ws: array<vec4<f32>, ${TILE_ROWS * ROW_V4}>; // [tile row][9]: dequantized weights
var<workgroup> red: array<f32, 64>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = lid / 8u;
  let t0 = wg.y * ${TILE_TOKENS}u;
  let nT = step.nTokens;
  // Activation loads: token lt of the tile, half lh of the K-step (16 values).
  let lt = lid / 2u;
  let lh = lid % 2u;
  let xrow = min(t0 + lt, nT - 1u) * K;
  var ss = 0.0;
  // Weight loads: tile row 8r + c holds slot r of column c (unit c + 8·(r / D), dot r % D).
  var seg = 0u;
  var ub = 0u;`);
  lines.push(...segmentSelect(o));
  lines.push(`  for (var k0 = 0u; k0 < K; k0 += 32u) {
    for (var j = 0u; j < 4u; j++) {
      let k = k0 + lh * 16u + j * 4u;
      let v = vec4<f32>(ldx(xrow, k), ldx(xrow, k + 1u), ldx(xrow, k + 2u), ldx(xrow, k + 3u));
      ${
        o.norm
          ? `ss += dot(v, v);
      let g = vec4<f32>(ld_gnorm(min(k, K - 1u)), ld_gnorm(min(k + 1u, K - 1u)), ld_gnorm(min(k + 2u, K - 1u)), ld_gnorm(min(k + 3u, K - 1u)));
      xs[lt * ${ROW_V4}u + lh * 4u + j] = v * g;`
          : `xs[lt * ${ROW_V4}u + lh * 4u + j] = v;`
      }
    }`);
  lines.push(
    ...floatWeightStage(
      o,
      `for (var e = 0u; e < 8u; e++) { ws[rho * ${ROW_V4}u + e] = vec4<f32>(q[4u * e], q[4u * e + 1u], q[4u * e + 2u], q[4u * e + 3u]); }`,
      '    ',
    ),
  );
  lines.push('    workgroupBarrier();');
  lines.push('    for (var kk = 0u; kk < 8u; kk++) {');
  for (let i = 0; i < 4; i++) lines.push(`      let x${i} = xs[(ty + ${8 * i}u) * ${ROW_V4}u + kk];`);
  for (let r = 0; r < 8; r++) {
    lines.push(
      `      { let w = ws[(tx + ${8 * r}u) * ${ROW_V4}u + kk]; ${[0, 1, 2, 3].map((i) => `${acc(r, i)} += dot(w, x${i});`).join(' ')} }`,
    );
  }
  lines.push('    }\n    workgroupBarrier();\n  }');
  if (o.norm) {
    lines.push(`  red[lid] = ss;
  workgroupBarrier();`);
    for (let i = 0; i < 4; i++) {
      lines.push(
        `  let inv${i} = inverseSqrt((red[2u * (ty + ${8 * i}u)] + red[2u * (ty + ${8 * i}u) + 1u]) / f32(K) + ${f32Lit(o.norm.eps)});`,
      );
    }
  }
  lines.push(...epilogues(o));
  lines.push('}');
  return lines.join('\n');
}

/**
 * WGSL: each segment's float weight staging for K-step `k0`: thread `lid` dequantizes tile row `rho`'s 32
 * weights ({@link loaderMap}) into `var q: array<f32, 32>` (the `dq32_<w>` loaders, or the float readers
 * with zeros past K), then runs `store` (which writes `q` into the caller's workgroup tile).
 * Shared by the float tile and the subgroup-matrix tile (mmm-sgmat.ts).
 */
export function floatWeightStage(o: MatmulOptions, store: string, indent: string): string[] {
  return o.segments.map((s, si) => {
    const D = s.dots.length;
    const dq = (di: number) => {
      const wname = weightVar(s, si, s.dots[di].w);
      const row = `(${s.dots[di].row})`;
      return isQuantized(s.weights[s.dots[di].w].type)
        ? `dq32_${wname}(${row} * K + k0, &q);`
        : `for (var e = 0u; e < 32u; e++) { q[e] = select(0.0, ld_${wname}(${row} * K + min(k0 + e, K - 1u)), k0 + e < K); }`;
    };
    return `${indent}${si ? 'else ' : ''}if (seg == ${si}u) {
${indent}  ${loaderMap(s)}
${indent}  var q: array<f32, 32>;
${indent}  ${D === 1 ? dq(0) : `if (d == 0u) { ${dq(0)} } else { ${dq(1)} }`}
${indent}  ${store}
${indent}}`;
  });
}

/**
 * WGSL: the workgroup's segment `seg` and first unit `ub` (workgroup tiles of `rows` weight rows, default
 * {@link TILE_ROWS}; with `half`, also `uph`, the segment's units per 64 rows, which the caller declares),
 * and the 32 zeroed accumulators.
 */
export function segmentSelect(o: MatmulOptions, rows = TILE_ROWS, half = false): string[] {
  const lines = mmmRanges(o.segments, rows).map(
    (r, i) =>
      `  ${i ? 'else ' : ''}if (wg.x < ${r.end}u) { seg = ${i}u; ub = (wg.x - ${r.start}u) * ${unitsPerTile(o.segments[i], rows)}u;${half ? ` uph = ${unitsPerTile(o.segments[i])}u;` : ''} }`,
  );
  for (let r = 0; r < 8; r++) for (let i = 0; i < 4; i++) lines.push(`  var ${acc(r, i)} = 0.0;`);
  return lines;
}

/**
 * WGSL: which tile row `rho` thread `lid` fills and from which unit `u` (clamped into the segment). D = 1:
 * slot lid / 8 of column lid % 8. D = 2: dot `d` = lid / 32 (uniform per 32-thread warp, so the two
 * weights' loaders do not diverge within one), unit slot (lid % 32) / 8.
 */
export function loaderMap(s: MatmulSegment): string {
  const last = `${s.nUnits - 1}u`;
  return s.dots.length === 1
    ? `let c = lid % 8u; let r = lid / 8u; let u = min(ub + c + 8u * r, ${last}); let rho = lid;`
    : `let c = lid % 8u; let d = lid / 32u; let j = (lid % 32u) / 8u; let u = min(ub + c + 8u * j, ${last}); let rho = 8u * (2u * j + d) + c;`;
}

/** WGSL: every segment's epilogue over the thread's units and tokens (`inv{i}`: the norm's 1/rms). */
export function epilogues(o: MatmulOptions): string[] {
  return o.segments.map((s, si) => {
    const D = s.dots.length;
    const body: string[] = [];
    for (let j = 0; j < 8 / D; j++) {
      body.push(`    { let u = ub + tx + ${8 * j}u; if (u < ${s.nUnits}u) {`);
      for (let i = 0; i < 4; i++) {
        const ds = s.dots
          .map((_, di) => `let d${di} = ${acc(j * D + di, i)}${o.norm ? ` * inv${i}` : ''};`)
          .join(' ');
        body.push(`      { let t = t0 + ty + ${8 * i}u; if (t < nT) { let pos = step.pos0 + t; ${ds}
        ${s.epilogue}
      } }`);
      }
      body.push('    } }');
    }
    return `  ${si ? 'else ' : ''}if (seg == ${si}u) {\n${body.join('\n')}\n  }`;
  });
}

/**
 * WGSL `fn dqi32_<n>(i: u32, out: ptr<function, array<u32, 8>>) -> vec4<f32>`: the 32 quants from element
 * i (a multiple of 32) of weight `n` as 8 words of 4 int8 (weights 4j..4j+3 in word j, all below 64), and
 * (s0, s1, m0, m1) such that weight e = s_h·q[e] + m_h for its half h = e / 16 (ggml-quants.c's
 * dequantize_row_*: Q4_0 d·(q − 8), Q5_0 d·(q − 16), Q8_0 d·q, Q4_K d·sc·q − dmin·m, Q6_K d·sc_h·(q − 32),
 * Q5_K d·sc·q − dmin·m with 5-bit q, Q3_K d·(sc_h − 32)·(q − 4) with 3-bit q, Q2_K d·sc_h·q − dmin·m_h).
 * Uses the readers {@link bindingsWGSL} emits for the binding (byte readers, or the planes' `d_`/`sc_`).
 */
function intLoaderWGSL(n: string, t: WeightType, planarBlocks?: number): string {
  const dec = DECODERS[t];
  if (!dec.intLoader) throw new Error(`${t} has no integer-dot loader`);
  return dec.intLoader(n, planarBlocks);
}

/**
 * WGSL: the integer tiles' weight loaders (`dqi32_<w>` for every weight of `o`, {@link intLoaderWGSL}).
 */
export function intLoadersWGSL(o: MatmulOptions): string[] {
  return o.segments.flatMap((s, si) =>
    s.weights.map((w, wi) => intLoaderWGSL(weightVar(s, si, wi), w.type, w.planar)),
  );
}

/**
 * WGSL: ggml's quantize_row_q8_0 of one token's 32 activations of K-step `k0` (× the norm weight, whose
 * sum of squares goes to `ss`), for the integer tiles: reads `xrow`, declares `q0`..`q7` (4 int8 each,
 * activations 4j..4j+3 in `q{j}`, `pack4xI8`) and `dx` (amax / 127).
 */
export function quantizeActivationsWGSL(o: MatmulOptions, indent: string): string[] {
  const lines: string[] = [];
  for (let j = 0; j < 8; j++) {
    const k = `k0 + ${4 * j}u`;
    lines.push(
      `      let v${j} = vec4<f32>(ldx(xrow, ${k}), ldx(xrow, ${k} + 1u), ldx(xrow, ${k} + 2u), ldx(xrow, ${k} + 3u));`,
    );
    if (o.norm) {
      lines.push(
        `      ss += dot(v${j}, v${j});`,
        `      let e${j} = v${j} * vec4<f32>(ld_gnorm(min(${k}, K - 1u)), ld_gnorm(min(${k} + 1u, K - 1u)), ld_gnorm(min(${k} + 2u, K - 1u)), ld_gnorm(min(${k} + 3u, K - 1u)));`,
      );
    } else lines.push(`      let e${j} = v${j};`);
  }
  const ab = Array.from({ length: 8 }, (_, j) => `abs(e${j})`);
  lines.push(
    `      let am = max(max(max(${ab[0]}, ${ab[1]}), max(${ab[2]}, ${ab[3]})), max(max(${ab[4]}, ${ab[5]}), max(${ab[6]}, ${ab[7]})));`,
    '      let dx = max(max(am.x, am.y), max(am.z, am.w)) / 127.0;',
    '      let ix = select(0.0, 1.0 / dx, dx > 0.0);',
  );
  for (let j = 0; j < 8; j++) lines.push(`      let q${j} = pack4xI8(vec4<i32>(round(e${j} * ix)));`);
  return lines.map((l) => l.replace(/^ {6}/, indent));
}

/**
 * WGSL (after {@link quantizeActivationsWGSL}): `qlo`, `qhi`, the sums of the int8 activations of each
 * half; the activation factors are then {@link XF_WGSL}.
 */
export function activationSumsWGSL(indent: string): string[] {
  return [
    `${indent}let qlo = ${[0, 1, 2, 3].map((j) => `dot4I8Packed(q${j}, 0x01010101u)`).join(' + ')};`,
    `${indent}let qhi = ${[4, 5, 6, 7].map((j) => `dot4I8Packed(q${j}, 0x01010101u)`).join(' + ')};`,
  ];
}

/** WGSL: a token's activation factors (dx, dx·Σq[0..16), dx·Σq[16..32), 0) for {@link intScaleTerm}. */
export const XF_WGSL = 'vec4<f32>(dx, dx * f32(qlo), dx * f32(qhi), 0.0)';

/**
 * WGSL: each segment's integer weight staging for K-step `k0`: thread `lid` turns tile row `rho`'s 32
 * quants ({@link loaderMap}) into `var q: array<u32, 8>` (4 int8 each) and `var sc: vec4<f32>` (s0, s1,
 * m0, m1: weight e = s_h·q[e] + m_h for its half h), then runs `store`.
 */
export function intWeightStage(o: MatmulOptions, store: string, indent: string): string[] {
  return o.segments.map((s, si) => {
    const D = s.dots.length;
    const dq = (di: number) =>
      `sc = dqi32_${weightVar(s, si, s.dots[di].w)}((${s.dots[di].row}) * K + k0, &q);`;
    return `${indent}${si ? 'else ' : ''}if (seg == ${si}u) {
${indent}  ${loaderMap(s)}
${indent}  var q: array<u32, 8>;
${indent}  var sc: vec4<f32>;
${indent}  ${D === 1 ? dq(0) : `if (d == 0u) { ${dq(0)} } else { ${dq(1)} }`}
${indent}  ${store}
${indent}}`;
  });
}

/**
 * WGSL: the integer tiles' scale epilogue of one block: `acc += dx·(s0·lo + s1·hi) + m0·dx·Σq_lo +
 * m1·dx·Σq_hi`, with `lo`, `hi` the integer dots (as f32) of the block's halves, `xf` the activation
 * factors ({@link quantizeActivationsWGSL}'s `xfv`), `f` the weight row's (s0, s1, m0, m1).
 */
export function intScaleTerm(acc: string, xf: string, f: string, lo: string, hi: string): string {
  return `${acc} += ${xf}.x * (${f}.x * ${lo} + ${f}.y * ${hi}) + ${f}.z * ${xf}.y + ${f}.w * ${xf}.z;`;
}

/**
 * The integer-dot variant of {@link mmmWGSL} ({@link MmmOptions.intDot}): the same tile (32 tokens × 64
 * rows, 4 × 8 outputs per thread), segments and epilogues. Per K-step of 32, threads 0–31 each load one
 * token's 32 activations (× gnorm), round them to int8 with one scale dx (and keep dx·Σq of each half, for
 * the weights' offsets), while every thread turns one weight row's 32 quants into 8 words of int8 with
 * their (s0, s1, m0, m1); then each output gets dx·(s0·Σ_lo + s1·Σ_hi) + m0·dx·Σq_lo + m1·dx·Σq_hi from
 * 8 `dot4I8Packed`. The result is the dot product with the int8-rounded activations (exactly what the
 * float64 reference of the tests computes), as llama.cpp's q8_1 activations give its MMQ kernels.
 */
function mmmIntWGSL(o: MatmulOptions): string {
  const { K } = o;
  const lines = [...bindingsWGSL(o), ...intLoadersWGSL(o)];
  lines.push(`
const K: u32 = ${K}u;
var<workgroup> xq: array<vec4<u32>, ${TILE_TOKENS * 2}>; // [token][2]: int8 activations of this K-step
var<workgroup> xf: array<vec4<f32>, ${TILE_TOKENS}>; // [token]: (dx, dx·Σq[0..16), dx·Σq[16..32), 0)
var<workgroup> wq: array<vec4<u32>, ${TILE_ROWS * 2}>; // [tile row][2]: the row's 32 quants as int8
var<workgroup> wf: array<vec4<f32>, ${TILE_ROWS}>; // [tile row]: (s0, s1, m0, m1)
var<workgroup> red: array<f32, ${TILE_TOKENS}>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = lid / 8u;
  let t0 = wg.y * ${TILE_TOKENS}u;
  let nT = step.nTokens;
  // Activation loads: thread lid < 32 takes token lid of the tile, all 32 values of the K-step.
  let xrow = min(t0 + lid % ${TILE_TOKENS}u, nT - 1u) * K;
  var ss = 0.0;
  var seg = 0u;
  var ub = 0u;`);
  lines.push(...segmentSelect(o));
  lines.push(`  for (var k0 = 0u; k0 < K; k0 += 32u) {
    if (lid < ${TILE_TOKENS}u) {`);
  lines.push(...quantizeActivationsWGSL(o, '      '));
  lines.push(
    '      xq[2u * lid] = vec4<u32>(q0, q1, q2, q3);',
    '      xq[2u * lid + 1u] = vec4<u32>(q4, q5, q6, q7);',
    ...activationSumsWGSL('      '),
    `      xf[lid] = ${XF_WGSL};`,
    '    }',
  );
  lines.push(
    ...intWeightStage(
      o,
      `wq[2u * rho] = vec4<u32>(q[0], q[1], q[2], q[3]);
      wq[2u * rho + 1u] = vec4<u32>(q[4], q[5], q[6], q[7]);
      wf[rho] = sc;`,
      '    ',
    ),
  );
  lines.push('    workgroupBarrier();');
  for (let i = 0; i < 4; i++) {
    lines.push(
      `    let xa${i} = xq[2u * (ty + ${8 * i}u)]; let xb${i} = xq[2u * (ty + ${8 * i}u) + 1u]; let xf${i} = xf[ty + ${8 * i}u];`,
    );
  }
  const d4 = (w: string, x: string) =>
    ['x', 'y', 'z', 'w'].map((c) => `dot4I8Packed(${w}.${c}, ${x}.${c})`).join(' + ');
  for (let r = 0; r < 8; r++) {
    const body = [0, 1, 2, 3]
      .map((i) =>
        intScaleTerm(acc(r, i), `xf${i}`, 'f', `f32(${d4('wa', `xa${i}`)})`, `f32(${d4('wb', `xb${i}`)})`),
      )
      .join('\n        ');
    lines.push(`    { let wa = wq[2u * (tx + ${8 * r}u)]; let wb = wq[2u * (tx + ${8 * r}u) + 1u]; let f = wf[tx + ${8 * r}u];
        ${body} }`);
  }
  lines.push('    workgroupBarrier();\n  }');
  if (o.norm) {
    lines.push(`  if (lid < ${TILE_TOKENS}u) { red[lid] = ss; }
  workgroupBarrier();`);
    for (let i = 0; i < 4; i++)
      lines.push(`  let inv${i} = inverseSqrt(red[ty + ${8 * i}u] / f32(K) + ${f32Lit(o.norm.eps)});`);
  }
  lines.push(...epilogues(o));
  lines.push('}');
  return lines.join('\n');
}
