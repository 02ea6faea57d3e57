/**
 * Matrix × matrix kernel for prefill on GPUs: a register-tiled GEMM with the fused RMSNorm, segments and
 * epilogues of {@link matmulWGSL} (same bindings, so one bind group serves either).
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
import { f32Lit, isQuantized } from './common.ts';
import { bindingsWGSL, type MatmulOptions, weightVar } from './matmul.ts';

/** Tokens per workgroup tile. */
export const TILE_TOKENS = 32;
/** Weight rows per workgroup tile. */
export const TILE_ROWS = 64;
/** vec4 slots per tile row: 8 for the 32 values of a K-step, plus one of padding. */
const ROW_V4 = 9;

/** Units of `s` per workgroup (64 rows over its dot products per unit). */
function unitsPerTile(s: { dots: readonly unknown[] }): number {
  return TILE_ROWS / s.dots.length;
}

/** Workgroup ranges [start, end) along x allotted to each segment; the last end is the dispatch size. */
export function mmmRanges(segments: MatmulOptions['segments']): { start: number; end: number }[] {
  let start = 0;
  return segments.map((s) => {
    const r = { start, end: start + Math.ceil(s.nUnits / unitsPerTile(s)) };
    start = r.end;
    return r;
  });
}

/** Workgroups along x for {@link mmmWGSL} with these segments. */
export function mmmWorkgroupsX(segments: MatmulOptions['segments']): number {
  return mmmRanges(segments).at(-1)?.end ?? 0;
}

/**
 * The kernel's WGSL (options as {@link matmulWGSL}; `TT` is ignored, the tile is 32 tokens).
 * Bindings: 0 step, 1 x, [2 gnorm], each segment's weights, then `extra`.
 * @throws Error for `lastTokenOnly` (the logits of one token are a matrix × vector: use mmv) or a segment
 *   with more than 2 dot products per unit.
 */
export function mmmWGSL(o: MatmulOptions): string {
  if (o.lastTokenOnly)
    throw new Error('mmmWGSL computes whole token tiles; lastTokenOnly needs a decode kernel');
  for (const s of o.segments) {
    if (s.dots.length < 1 || s.dots.length > 2)
      throw new Error(`mmmWGSL takes 1–2 dots per unit (got ${s.dots.length})`);
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
  mmmRanges(o.segments).forEach((r, i) => {
    lines.push(
      `  ${i ? 'else ' : ''}if (wg.x < ${r.end}u) { seg = ${i}u; ub = (wg.x - ${r.start}u) * ${unitsPerTile(o.segments[i])}u; }`,
    );
  });
  const acc = (r: number, i: number) => `a${r}_${i}`;
  for (let r = 0; r < 8; r++) for (let i = 0; i < 4; i++) lines.push(`  var ${acc(r, i)} = 0.0;`);
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
  o.segments.forEach((s, si) => {
    const D = s.dots.length;
    const dq = (di: number) => {
      const wname = weightVar(s, si, s.dots[di].w);
      const row = `(${s.dots[di].row})`;
      return isQuantized(s.weights[s.dots[di].w].type)
        ? `dq32_${wname}(${row} * K + k0, &q);`
        : `for (var e = 0u; e < 32u; e++) { q[e] = select(0.0, ld_${wname}(${row} * K + min(k0 + e, K - 1u)), k0 + e < K); }`;
    };
    // D = 1: thread lid loads slot lid / 8 of column lid % 8. D = 2: dot lid / 32 (uniform per 32-thread
    // warp, so the two weights' loaders do not diverge within one), unit slot (lid % 32) / 8.
    const map =
      D === 1
        ? 'let c = lid % 8u; let r = lid / 8u; let u = min(ub + c + 8u * r, LAST); let rho = lid;'
        : 'let c = lid % 8u; let d = lid / 32u; let j = (lid % 32u) / 8u; let u = min(ub + c + 8u * j, LAST); let rho = 8u * (2u * j + d) + c;';
    lines.push(`    ${si ? 'else ' : ''}if (seg == ${si}u) {
      ${map.replace('LAST', `${s.nUnits - 1}u`)}
      var q: array<f32, 32>;
      ${D === 1 ? dq(0) : `if (d == 0u) { ${dq(0)} } else { ${dq(1)} }`}
      for (var e = 0u; e < 8u; e++) { ws[rho * ${ROW_V4}u + e] = vec4<f32>(q[4u * e], q[4u * e + 1u], q[4u * e + 2u], q[4u * e + 3u]); }
    }`);
  });
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
  o.segments.forEach((s, si) => {
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
    lines.push(`  ${si ? 'else ' : ''}if (seg == ${si}u) {\n${body.join('\n')}\n  }`);
  });
  lines.push('}');
  return lines.join('\n');
}
