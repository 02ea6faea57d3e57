/**
 * The fused matrix kernel: optional RMSNorm of the input, then y = W·x for one or more weight
 * "segments", then an epilogue per output unit (residual add, SwiGLU, RoPE + KV-cache store, plain store).
 *
 * Shapes (ggml order, inner first): input x [T, K] (T tokens of K floats, row-major), weight W [K, N]
 * (N rows of K contiguous elements). For decode T = 1 (a GEMV); for prefill T ≤ batch size (a GEMM,
 * TT tokens per thread so each weight element read serves TT tokens).
 *
 * Layout: one thread computes one output unit (1–2 dot products, e.g. a RoPE pair of rows or the gate
 * and up rows of SwiGLU) for TT tokens; 64 threads share an input tile [TT, KT] in workgroup memory,
 * normalised there when `norm` is set. RMSNorm as ggml's `ggml_rms_norm`: x / sqrt(mean(x²) + eps), then
 * multiplied by the norm weight.
 *
 * Segments let one dispatch cover several weights (Q, K and V; or the parts of a tensor split across
 * bindings): workgroups are allotted to segments in order, so the branch on the segment is uniform per
 * workgroup.
 */
import { EngineError } from '../../core/errors.ts';
import { f32Lit, isQuantized, STEP_WGSL, type WeightType, WG, wgslArrayType } from './common.ts';
import { wgslLoader } from './loader.ts';

/** One weight binding read by a segment. */
export interface SegmentWeight {
  type: WeightType;
  /** Repacked into planes at load (kernels/repack.ts): the binding's block count. */
  planar?: number;
  /** First row of this binding within the logical tensor (for tensors split across bindings). */
  rowStart?: number;
  /**
   * The binding's name (a WGSL identifier, e.g. `attn_q` or `ffn_gate_1` for a second part), which the
   * caller binds its buffer to (kernels/bindings.ts); default `w{segment}_{index}`.
   */
  binding?: string;
}

/** A group of output units computed from the same weight binding(s). */
export interface MatmulSegment {
  /** Number of output units (threads) in this segment. */
  nUnits: number;
  /** Weights this segment reads (bound in order after the common bindings). */
  weights: SegmentWeight[];
  /**
   * Dot products per unit: `w` indexes `weights`, `row` is a WGSL u32 expression of the unit index `u`
   * (0-based within the segment) giving the weight row (already relative to the binding's rowStart).
   */
  dots: { w: number; row: string }[];
  /**
   * WGSL statements run for each unit `u` and token `t` (batch index; `pos` = absolute position) with
   * the results in `d0`, `d1`, … (f32).
   */
  epilogue: string;
  /**
   * Bindings only this segment's epilogue uses (WGSL declarations as {@link MatmulOptions.extra}); a
   * kernel declares the union of its segments' in order, after `extra`, each once.
   */
  extra?: string[];
}

/** Options for {@link matmulWGSL}. */
export interface MatmulOptions {
  /** Inner dimension K (elements per weight row and per input row). */
  K: number;
  /** Tokens per thread (1 for decode, 4–8 for prefill). */
  TT: number;
  /** Fuse an RMSNorm of the input with this eps (binding `gnorm` holds the norm weight [K]). */
  norm?: { eps: number; type: WeightType };
  /** Read only the batch's last token (for the final logits). */
  lastTokenOnly?: boolean;
  segments: MatmulSegment[];
  /**
   * Extra bindings (outputs and side inputs) as WGSL declarations without the `@group @binding` prefix,
   * e.g. `var<storage, read_write> y: array<f32>`.
   */
  extra?: string[];
}

/** The WGSL variable (= binding name) of weight `wi` of segment `si` ({@link SegmentWeight.binding}). */
export function weightVar(s: MatmulSegment, si: number, wi: number): string {
  return s.weights[wi].binding ?? `w${si}_${wi}`;
}

/** `o.extra` then every segment's own extra declarations, each once, in order. */
export function extraBindings(o: Pick<MatmulOptions, 'extra' | 'segments'>): string[] {
  return [...new Set([...(o.extra ?? []), ...o.segments.flatMap((s) => s.extra ?? [])])];
}

/** Storage buffers a matmul kernel binds: x, [gnorm], every weight, every extra binding except uniforms. */
export function matmulStorageBindings(o: Pick<MatmulOptions, 'extra' | 'segments' | 'norm'>): number {
  const weights = new Set(o.segments.flatMap((s, si) => s.weights.map((_, wi) => weightVar(s, si, wi))));
  const extra = extraBindings(o).filter((e) => !e.startsWith('var<uniform>'));
  return 1 + (o.norm ? 1 : 0) + weights.size + extra.length;
}

/**
 * Splits a matmul into as few kernels as fit `maxStorage` storage buffers per shader stage (WebGPU's
 * `maxStorageBuffersPerShaderStage`, 8 by default), each taking whole consecutive segments; one kernel
 * (the options unchanged) where they all fit. Every kernel is a dispatch of its own.
 * @throws EngineError('unsupported_model') when one segment alone needs more bindings than that.
 */
export function fitStorageBindings<O extends Pick<MatmulOptions, 'extra' | 'segments' | 'norm'>>(
  o: O,
  maxStorage: number,
): O[] {
  if (matmulStorageBindings(o) <= maxStorage) return [o];
  const out: O[] = [];
  let cur: MatmulSegment[] = [];
  for (const s of o.segments) {
    const alone = matmulStorageBindings({ ...o, segments: [s] });
    if (alone > maxStorage) {
      throw new EngineError(
        'unsupported_model',
        `a fused matmul needs ${alone} storage buffers in one shader stage, but this device allows ${maxStorage} (maxStorageBuffersPerShaderStage)`,
      );
    }
    if (cur.length && matmulStorageBindings({ ...o, segments: [...cur, s] }) > maxStorage) {
      out.push({ ...o, segments: cur });
      cur = [];
    }
    cur.push(s);
  }
  if (cur.length) out.push({ ...o, segments: cur });
  return out;
}

/**
 * Input-tile width in elements along K: the whole row where it fits in 8 KiB of workgroup memory per
 * token group (fewer barriers), else chunks, rounded to the workgroup size.
 */
function tileK(K: number, TT: number): number {
  const cap = Math.max(WG, Math.floor(2048 / TT / WG) * WG);
  return Math.min(Math.ceil(K / WG) * WG, cap);
}

/**
 * Workgroup ranges [start, end) along x allotted to each segment when every workgroup covers
 * `unitsPerWg` output units; the last range's end is the dispatch size.
 */
export function segmentRanges(
  segments: readonly { nUnits: number }[],
  unitsPerWg: number,
): { start: number; end: number }[] {
  let start = 0;
  return segments.map((s) => {
    const r = { start, end: start + Math.ceil(s.nUnits / unitsPerWg) };
    start = r.end;
    return r;
  });
}

function workgroupsX(segments: readonly { nUnits: number }[], unitsPerWg: number): number {
  return segmentRanges(segments, unitsPerWg).at(-1)?.end ?? 0;
}

/**
 * The bindings every matmul variant declares, in order: 0 step, 1 x, [gnorm], each segment's weights,
 * then `extra`; with a loader function per weight.
 */
export function bindingsWGSL(o: MatmulOptions): string[] {
  const lines: string[] = [STEP_WGSL];
  let b = 0;
  lines.push(`@group(0) @binding(${b++}) var<uniform> step: Step;`);
  lines.push(`@group(0) @binding(${b++}) var<storage, read> x: array<f32>;`);
  if (o.norm) {
    lines.push(`@group(0) @binding(${b++}) var<storage, read> gnorm: ${wgslArrayType(o.norm.type)};`);
    lines.push(wgslLoader('gnorm', o.norm.type));
  }
  o.segments.forEach((s, si) => {
    s.weights.forEach((w, wi) => {
      const name = weightVar(s, si, wi);
      lines.push(`@group(0) @binding(${b++}) var<storage, read> ${name}: ${wgslArrayType(w.type)};`);
      lines.push(wgslLoader(name, w.type, w.planar));
    });
  });
  for (const e of extraBindings(o)) lines.push(`@group(0) @binding(${b++}) ${e};`);
  return lines;
}

/** Bindings: 0 step, 1 x, [2 gnorm], then each segment's weights, then `extra` in order. */
export function matmulWGSL(o: MatmulOptions): string {
  const TT = o.TT;
  const lines = bindingsWGSL(o);

  const K = o.K;
  const KT = tileK(K, TT);
  const maxDots = Math.max(...o.segments.map((s) => s.dots.length));
  const tBase = o.lastTokenOnly ? 'step.nTokens - 1u' : 't0';
  const nT = o.lastTokenOnly ? '1u' : 'step.nTokens';
  lines.push(`
const K: u32 = ${K}u;
const KT: u32 = ${KT}u;
const TT: u32 = ${TT}u;
var<workgroup> xs: array<f32, ${TT * KT}>;
var<workgroup> red: array<f32, ${TT * WG}>;
var<workgroup> invs: array<f32, ${TT}>;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t0 = wg.y * TT;          // first token of this workgroup, relative to the batch
  let nT = ${nT};              // tokens to compute
  let xrow0 = ${tBase};        // input row of token t0
`);
  if (o.norm) {
    // Each thread publishes partial sums of squares for every token; thread tt < TT adds them up.
    lines.push(`
  for (var tt = 0u; tt < TT; tt++) {
    var s = 0.0;
    if (t0 + tt < nT) {
      let base = (xrow0 + tt) * K;
      for (var k = lid; k < K; k += ${WG}u) { let v = x[base + k]; s += v * v; }
    }
    red[tt * ${WG}u + lid] = s;
  }
  workgroupBarrier();
  if (lid < TT) {
    var s = 0.0;
    for (var i = 0u; i < ${WG}u; i++) { s += red[lid * ${WG}u + i]; }
    invs[lid] = inverseSqrt(s / f32(K) + ${f32Lit(o.norm.eps)});
  }
  workgroupBarrier();
  var inv: array<f32, ${TT}>;
  for (var tt = 0u; tt < TT; tt++) { inv[tt] = invs[tt]; }`);
  }
  // Segment selection, uniform per workgroup.
  const segInfo = segmentRanges(o.segments, WG);
  lines.push(`
  var seg = 0u;
  var u = 0u;`);
  segInfo.forEach((si, i) => {
    lines.push(
      `  ${i ? 'else ' : ''}if (wg.x < ${si.end}u) { seg = ${i}u; u = (wg.x - ${si.start}u) * ${WG}u + lid; }`,
    );
  });
  lines.push(`
  var acc: array<array<f32, ${TT}>, ${maxDots}>;
  for (var k0 = 0u; k0 < K; k0 += KT) {
    for (var i = lid; i < TT * KT; i += ${WG}u) {
      let tt = i / KT;
      let k = k0 + i % KT;
      var v = 0.0;
      if (t0 + tt < nT && k < K) {
        v = x[(xrow0 + tt) * K + k];${o.norm ? '\n        v = v * inv[tt] * ld_gnorm(k);' : ''}
      }
      xs[i] = v;
    }
    workgroupBarrier();
    let kn = min(KT, K - k0);`);
  o.segments.forEach((s, si) => {
    const rows = s.dots.map((d, di) => `let r${di} = (${d.row}) * K + k0;`).join(' ');
    const quant = s.dots.every((d) => isQuantized(s.weights[d.w].type));
    let body: string;
    if (quant) {
      // Quantized weights: decode 32 at a time (the block's scale read once), then 32 × TT FMAs.
      const decl = s.dots.map((_, di) => `var q${di}: array<f32, 32>;`).join(' ');
      const loads = s.dots.map((d, di) => `dq32_${weightVar(s, si, d.w)}(r${di} + kb, &q${di});`).join(' ');
      const fmas = s.dots.map((_, di) => `acc[${di}][tt] += q${di}[e] * xv;`).join(' ');
      body = `${decl}
      for (var kb = 0u; kb < kn; kb += 32u) {
        ${loads}
        for (var e = 0u; e < 32u; e++) {
          for (var tt = 0u; tt < TT; tt++) { let xv = xs[tt * KT + kb + e]; ${fmas} }
        }
      }`;
    } else {
      const loads = s.dots
        .map((d, di) => `let wv${di} = ld_${weightVar(s, si, d.w)}(r${di} + kk);`)
        .join(' ');
      const fmas = s.dots.map((_, di) => `acc[${di}][tt] += wv${di} * xv;`).join(' ');
      body = `for (var kk = 0u; kk < kn; kk++) {
        ${loads}
        for (var tt = 0u; tt < TT; tt++) { let xv = xs[tt * KT + kk]; ${fmas} }
      }`;
    }
    lines.push(`    ${si ? 'else ' : ''}if (seg == ${si}u && u < ${s.nUnits}u) {
      ${rows}
      ${body}
    }`);
  });
  lines.push(`    workgroupBarrier();
  }`);
  o.segments.forEach((s, si) => {
    const ds = s.dots.map((_, di) => `let d${di} = acc[${di}][tt];`).join(' ');
    lines.push(`  ${si ? 'else ' : ''}if (seg == ${si}u && u < ${s.nUnits}u) {
    for (var tt = 0u; tt < TT; tt++) {
      let t = t0 + tt;
      if (t >= nT) { break; }
      let pos = step.pos0 + ${o.lastTokenOnly ? 'step.nTokens - 1u' : 't'};
      ${ds}
      ${s.epilogue}
    }
  }`);
  });
  lines.push('}');
  return lines.join('\n');
}

/** Workgroups along x for a matmul with these segments. */
export function matmulWorkgroupsX(segments: { nUnits: number }[]): number {
  return workgroupsX(segments, WG);
}

/** Lanes (threads) that share one output unit in {@link gemvWGSL}, and units per workgroup. */
const GEMV_LANES = 32;
const GEMV_UNITS = 8;

/**
 * The K-split variant of {@link matmulWGSL} for one token per workgroup row (decode on hardware GPUs):
 * 32 adjacent threads share each output unit and stride along K together, so weight reads are
 * coalesced and every unit's work is spread over a warp; partial sums are reduced in workgroup memory.
 * Same bindings, segments and epilogues as {@link matmulWGSL} (TT is ignored). Dispatch
 * ({@link gemvWorkgroupsX}, T). On software adapters the thread-per-unit {@link matmulWGSL} is faster
 * (barriers and idle lanes cost more there than memory access patterns).
 */
export function gemvWGSL(o: MatmulOptions): string {
  const W = GEMV_LANES * GEMV_UNITS;
  const lines = bindingsWGSL(o);
  const K = o.K;
  const maxDots = Math.max(...o.segments.map((s) => s.dots.length));
  lines.push(`
const K: u32 = ${K}u;
var<workgroup> red: array<f32, ${W * maxDots}>;
var<workgroup> rs: array<f32, ${W}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = ${o.lastTokenOnly ? '0u' : 'wg.y'};
  let xrow = ${o.lastTokenOnly ? 'step.nTokens - 1u' : 'wg.y'};
  let pos = step.pos0 + xrow;
  let lane = lid % ${GEMV_LANES}u;
  let xb = xrow * K;`);
  if (o.norm) {
    lines.push(`
  var ss = 0.0;
  for (var k = lid; k < K; k += ${W}u) { let v = x[xb + k]; ss += v * v; }
  rs[lid] = ss;
  workgroupBarrier();
  for (var off = ${W / 2}u; off > 0u; off >>= 1u) {
    if (lid < off) { rs[lid] += rs[lid + off]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(rs[0] / f32(K) + ${f32Lit(o.norm.eps)});`);
  }
  const X = (k: string) => (o.norm ? `(x[xb + ${k}] * inv * ld_gnorm(${k}))` : `x[xb + ${k}]`);
  const segInfo = segmentRanges(o.segments, GEMV_UNITS);
  lines.push(`
  var seg = 0u;
  var u = 0u;`);
  segInfo.forEach((si, i) => {
    lines.push(
      `  ${i ? 'else ' : ''}if (wg.x < ${si.end}u) { seg = ${i}u; u = (wg.x - ${si.start}u) * ${GEMV_UNITS}u + lid / ${GEMV_LANES}u; }`,
    );
  });
  lines.push(`  var acc: array<f32, ${maxDots}>;`);
  o.segments.forEach((s, si) => {
    const rows = s.dots.map((d, di) => `let r${di} = (${d.row}) * K;`).join(' ');
    const quant = s.dots.every((d) => isQuantized(s.weights[d.w].type));
    let body: string;
    if (quant) {
      const decl = s.dots.map((_, di) => `var q${di}: array<f32, 32>;`).join(' ');
      const loads = s.dots.map((d, di) => `dq32_${weightVar(s, si, d.w)}(r${di} + k0, &q${di});`).join(' ');
      const fmas = s.dots.map((_, di) => `acc[${di}] += q${di}[e] * xv;`).join(' ');
      body = `${decl}
    for (var k0 = lane * 32u; k0 < K; k0 += ${GEMV_LANES * 32}u) {
      ${loads}
      for (var e = 0u; e < 32u; e++) { let xv = ${X('k0 + e')}; ${fmas} }
    }`;
    } else {
      const fmas = s.dots
        .map((d, di) => `acc[${di}] += ld_${weightVar(s, si, d.w)}(r${di} + k) * xv;`)
        .join(' ');
      body = `for (var k = lane; k < K; k += ${GEMV_LANES}u) { let xv = ${X('k')}; ${fmas} }`;
    }
    lines.push(`  ${si ? 'else ' : ''}if (seg == ${si}u && u < ${s.nUnits}u) {
    ${rows}
    ${body}
  }`);
  });
  lines.push(`  for (var d = 0u; d < ${maxDots}u; d++) { red[d * ${W}u + lid] = acc[d]; }
  workgroupBarrier();
  for (var off = ${GEMV_LANES / 2}u; off > 0u; off >>= 1u) {
    if (lane < off) {
      for (var d = 0u; d < ${maxDots}u; d++) { red[d * ${W}u + lid] += red[d * ${W}u + lid + off]; }
    }
    workgroupBarrier();
  }
  if (lane != 0u) { return; }`);
  o.segments.forEach((s, si) => {
    const ds = s.dots.map((_, di) => `let d${di} = red[${di * W}u + lid];`).join(' ');
    lines.push(`  ${si ? 'else ' : ''}if (seg == ${si}u && u < ${s.nUnits}u) {
    ${ds}
    ${s.epilogue}
  }`);
  });
  lines.push('}');
  return lines.join('\n');
}

/** Workgroups along x for {@link gemvWGSL} with these segments. */
export function gemvWorkgroupsX(segments: { nUnits: number }[]): number {
  return workgroupsX(segments, GEMV_UNITS);
}

/** Threads per workgroup in {@link rowsWGSL}. */
const ROWS_WG = 64;

/**
 * The barrier-free variant for one token per workgroup row (decode on software adapters): one thread
 * per output unit computes the RMSNorm of the input itself and reads the input straight from the storage
 * buffer, so there is no workgroup memory and no barrier (on SwiftShader a barrier costs about as much
 * as 20 µs of arithmetic per workgroup). Same bindings, segments and epilogues as {@link matmulWGSL}.
 * Dispatch ({@link rowsWorkgroupsX}, T).
 */
export function rowsWGSL(o: MatmulOptions): string {
  const lines = bindingsWGSL(o);
  const K = o.K;
  lines.push(`
const K: u32 = ${K}u;

@compute @workgroup_size(${ROWS_WG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = ${o.lastTokenOnly ? '0u' : 'wg.y'};
  let xrow = ${o.lastTokenOnly ? 'step.nTokens - 1u' : 'wg.y'};
  let pos = step.pos0 + xrow;
  let xb = xrow * K;`);
  const ranges = segmentRanges(o.segments, ROWS_WG);
  o.segments.forEach((s, si) => {
    const { start, end } = ranges[si];
    lines.push(
      `  ${si ? 'else ' : ''}if (wg.x < ${end}u) { let u = (wg.x - ${start}u) * ${ROWS_WG}u + lid; if (u < ${s.nUnits}u) { seg${si}(u, t, pos, xb); } }`,
    );
  });
  lines.push('}');
  const X = (k: string) => (o.norm ? `x[xb + ${k}] * inv * ld_gnorm(${k})` : `x[xb + ${k}]`);
  o.segments.forEach((s, si) => {
    const rows = s.dots.map((d, di) => `let r${di} = (${d.row}) * K;`).join(' ');
    const accs = s.dots.map((_, di) => `var a${di} = 0.0;`).join(' ');
    const quant = s.dots.every((d) => isQuantized(s.weights[d.w].type));
    let body: string;
    if (quant) {
      const decl = s.dots.map((_, di) => `var q${di}: array<f32, 32>;`).join(' ');
      const loads = s.dots.map((d, di) => `dq32_${weightVar(s, si, d.w)}(r${di} + k0, &q${di});`).join(' ');
      const fmas = s.dots.map((_, di) => `a${di} += q${di}[e] * xv;`).join(' ');
      body = `${decl}
  for (var k0 = 0u; k0 < K; k0 += 32u) {
    ${loads}
    for (var e = 0u; e < 32u; e++) { let xv = ${X('k0 + e')}; ${fmas} }
  }`;
    } else {
      const fmas = s.dots.map((d, di) => `a${di} += ld_${weightVar(s, si, d.w)}(r${di} + k) * xv;`).join(' ');
      body = `for (var k = 0u; k < K; k++) { let xv = ${X('k')}; ${fmas} }`;
    }
    const ds = s.dots.map((_, di) => `let d${di} = a${di};`).join(' ');
    lines.push(`fn seg${si}(u: u32, t: u32, pos: u32, xb: u32) {${
      o.norm
        ? `
  var ss = 0.0;
  for (var k = 0u; k < K; k++) { let v = x[xb + k]; ss += v * v; }
  let inv = inverseSqrt(ss / f32(K) + ${f32Lit(o.norm.eps)});`
        : ''
    }
  ${rows} ${accs}
  ${body}
  ${ds}
  ${s.epilogue}
}`);
  });
  return lines.join('\n');
}

/** Workgroups along x for {@link rowsWGSL} with these segments. */
export function rowsWorkgroupsX(segments: { nUnits: number }[]): number {
  return workgroupsX(segments, ROWS_WG);
}
