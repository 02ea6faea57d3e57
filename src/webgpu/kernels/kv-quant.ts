/**
 * The quantized KV cache: K and V rows stored as ggml's Q8_0 or Q4_0 blocks (llama.cpp's `-ctk/-ctv
 * q8_0|q4_0`), written by {@link kvQuantizeWGSL} as each token arrives and read by every attention kernel
 * through the loaders of {@link quantKvDecl}.
 *
 * Layouts (ggml-common.h): Q8_0 `{ f16 d; int8 qs[32] }`, 34 bytes per 32 values, x = d · q; Q4_0
 * `{ f16 d; u8 qs[16] }`, 18 bytes per 32 values, value j (< 16) in the low nibble of qs[j] and value
 * j + 16 in its high nibble, x = d · (q − 8). A cache row [kvDim] is kvDim / 32 consecutive blocks
 * (ggml_row_size), rows packed back to back with no padding: a block starts on any even byte, so the
 * kernels read and write 16-bit halves of u32 words.
 *
 * The quantizer follows ggml-quants.c `quantize_row_q8_0_ref` / `quantize_row_q4_0_ref` bit for bit (our
 * CPU codecs src/gguf/quant-legacy.ts, checked against llama.cpp's bytes in tests/golden/quant.json):
 * WGSL's f32 division may be off by 2.5 ulp and its f32 → f16 conversion may round either way, so the
 * kernel divides with a correctly rounded `div_rn` (the quotient's neighbours checked by their exact
 * residual, Dekker's product) and converts to f16 by bits (round to nearest even); C's `roundf` (half
 * away from zero) is spelled out, WGSL's `round` being half to even.
 */
import type { KvType } from '../../core/types.ts';
import { STEP_WGSL } from './common.ts';

/** The block-quantized KV-cache types. */
export type QuantKvType = 'q8_0' | 'q4_0';

/** Is `t` a block-quantized cache type (Q8_0, Q4_0)? */
export function isQuantKv(t: KvType): t is QuantKvType {
  return t === 'q8_0' || t === 'q4_0';
}

/** Values per block of the quantized cache types (ggml's QK8_0 = QK4_0 = 32). */
export const KV_BLOCK = 32;

/** Bytes per block: Q8_0 34, Q4_0 18 (ggml_type_size). */
export function kvBlockBytes(t: QuantKvType): number {
  return t === 'q8_0' ? 34 : 18;
}

/**
 * Bytes of one cache row of `kvDim` values (ggml_row_size): 4 or 2 per value for f32/f16, 34 or 18 per 32
 * for Q8_0/Q4_0.
 * @throws Error for a quantized type and kvDim not a multiple of 32.
 */
export function kvRowBytes(t: KvType, kvDim: number): number {
  if (!isQuantKv(t)) return kvDim * (t === 'f32' ? 4 : 2);
  if (kvDim % KV_BLOCK !== 0)
    throw new Error(`a ${t} KV cache needs rows of whole 32-value blocks, got ${kvDim}`);
  return (kvDim / KV_BLOCK) * kvBlockBytes(t);
}

/** WGSL: `<name>_h(b)`, the u16 at even byte b, and `<name>_w(b)`, the 4 bytes at even byte b, of `name`. */
function byteReaders(name: string): string {
  return `fn ${name}_h(b: u32) -> u32 { return (${name}[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu; }
fn ${name}_w(b: u32) -> u32 {
  let w = b >> 2u;
  if ((b & 2u) == 0u) { return ${name}[w]; }
  return (${name}[w] >> 16u) | (${name}[w + 1u] << 16u);
}`;
}

/**
 * WGSL declaration of a quantized cache binding `name` (array<u32>) with its loaders `ld_<name>4(i)` (values
 * i..i+3 as vec4<f32>, i a multiple of 4) and `ld_<name>2(i)` (values i, i+1, i even); i is the value's index
 * in the cache [nCtx · kvDim].
 */
export function quantKvDecl(binding: string, name: string, t: QuantKvType, access = 'read'): string {
  const head = `${binding} var<storage, ${access}> ${name}: array<u32>;
${byteReaders(name)}`;
  if (t === 'q8_0') {
    return `${head}
fn ld_${name}4(i: u32) -> vec4<f32> {
  let b = (i >> 5u) * 34u;
  let w = ${name}_w(b + 2u + (i & 31u));
  let q = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w)) >> vec4<u32>(24u);
  return vec4<f32>(q) * unpack2x16float(${name}_h(b)).x;
}
fn ld_${name}2(i: u32) -> vec2<f32> {
  let b = (i >> 5u) * 34u;
  let h = ${name}_h(b + 2u + (i & 31u));
  let q = vec2<i32>(bitcast<i32>(h << 24u), bitcast<i32>(h << 16u)) >> vec2<u32>(24u);
  return vec2<f32>(q) * unpack2x16float(${name}_h(b)).x;
}`;
  }
  return `${head}
fn ld_${name}4(i: u32) -> vec4<f32> {
  let b = (i >> 5u) * 18u;
  let e = i & 31u;
  let n = (${name}_w(b + 2u + (e & 15u)) >> select(0u, 4u, e >= 16u)) & 0x0f0f0f0fu;
  let q = vec4<f32>(f32(n & 0xffu), f32((n >> 8u) & 0xffu), f32((n >> 16u) & 0xffu), f32(n >> 24u));
  return (q - 8.0) * unpack2x16float(${name}_h(b)).x;
}
fn ld_${name}2(i: u32) -> vec2<f32> {
  let b = (i >> 5u) * 18u;
  let e = i & 31u;
  let n = (${name}_h(b + 2u + (e & 15u)) >> select(0u, 4u, e >= 16u)) & 0x0f0fu;
  return (vec2<f32>(f32(n & 0xffu), f32(n >> 8u)) - 8.0) * unpack2x16float(${name}_h(b)).x;
}`;
}

/**
 * WGSL helpers of the quantizer: correctly rounded division, f32 → f16 bits (nearest even), C's roundf.
 * `div_rn` takes WGSL's quotient (within 2.5 ulp) and keeps, of it and its three neighbours either side,
 * the one with the smallest exact residual |a − b·q| (Dekker's two-product with Veltkamp's split: every
 * partial product is exact, so a fused multiply-add changes nothing).
 */
const QUANT_HELPERS = `fn split12(a: f32) -> vec2<f32> { let c = 4097.0 * a; let hi = c - (c - a); return vec2<f32>(hi, a - hi); }
/** |a − b·q|, exact but for the last rounding (a − fl(b·q) is exact by Sterbenz's lemma near a/b). */
fn resid(a: f32, b: f32, q: f32) -> f32 {
  let p = b * q;
  let B = split12(b);
  let Q = split12(q);
  let err = ((B.x * Q.x - p) + B.x * Q.y + B.y * Q.x) + B.y * Q.y;
  return abs((a - p) - err);
}
/** a / b rounded to nearest (a, b finite, b ≠ 0), as C's float division. */
fn div_rn(a: f32, b: f32) -> f32 {
  let q0 = a / b;
  if (q0 == 0.0) { return q0; }
  var best = q0;
  var r = resid(a, b, q0);
  for (var k = 1u; k <= 3u; k++) {
    for (var s = 0u; s < 2u; s++) {
      let bits = select(bitcast<u32>(q0) - k, bitcast<u32>(q0) + k, s == 0u);
      let c = bitcast<f32>(bits);
      let rc = resid(a, b, c);
      if (rc < r) { r = rc; best = c; }
    }
  }
  return best;
}
/** IEEE binary16 bits of x, rounded to nearest even (as ggml's GGML_FP32_TO_FP16). */
fn f16_bits(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a >= 0x47800000u) { return sign | select(0x7c00u, 0x7e00u, a > 0x7f800000u); }
  if (a < 0x38800000u) { return sign | (bitcast<u32>(bitcast<f32>(a) + 0.5) - 0x3f000000u); }
  return sign | ((a + 0xc8000fffu + ((a >> 13u) & 1u)) >> 13u);
}
/** C's roundf: nearest, halves away from zero. */
fn roundf(x: f32) -> f32 { let t = trunc(x); return t + select(0.0, sign(x), abs(x - t) >= 0.5); }`;

/** WGSL: `put_<name>(hi, v)` stores the u16 v as half hi of the atomic cache `name`; `put2_<name>(w, v)` a whole word. */
function halfWriters(name: string): string {
  return `fn put_${name}(hi: u32, v: u32) {
  let w = hi >> 1u;
  let sh = (hi & 1u) * 16u;
  atomicAnd(&${name}[w], ~(0xffffu << sh));
  atomicOr(&${name}[w], v << sh);
}
fn put2_${name}(w: u32, v: u32) { atomicStore(&${name}[w], v); }`;
}

/** WGSL: quantizes block `blk` of row t of `src` [T, kvDim] f32 into row pos of cache `name` as type `t`. */
function blockWriter(name: string, src: string, t: QuantKvType, kvDim: number): string {
  const nb = kvDim / KV_BLOCK;
  const NH = kvBlockBytes(t) / 2;
  const body =
    t === 'q8_0'
      ? `  var amax = 0.0;
  for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(${src}[x0 + j])); }
  let d = div_rn(amax, 127.0);
  let id = select(0.0, div_rn(1.0, d), d != 0.0);
  h[0] = f16_bits(d);
  for (var j = 0u; j < 16u; j++) {
    let a = u32(i32(roundf(${src}[x0 + 2u * j] * id))) & 0xffu;
    let b = u32(i32(roundf(${src}[x0 + 2u * j + 1u] * id))) & 0xffu;
    h[1u + j] = a | (b << 8u);
  }`
      : `  var amax = 0.0;
  var mx = 0.0;
  for (var j = 0u; j < 32u; j++) { let v = ${src}[x0 + j]; if (amax < abs(v)) { amax = abs(v); mx = v; } }
  let d = mx * -0.125;
  let id = select(0.0, div_rn(1.0, d), d != 0.0);
  h[0] = f16_bits(d);
  var qs: array<u32, 16>;
  for (var j = 0u; j < 16u; j++) {
    let a = u32(min(15, i32(${src}[x0 + j] * id + 8.5)));
    let b = u32(min(15, i32(${src}[x0 + 16u + j] * id + 8.5)));
    qs[j] = a | (b << 4u);
  }
  for (var j = 0u; j < 8u; j++) { h[1u + j] = qs[2u * j] | (qs[2u * j + 1u] << 8u); }`;
  return `fn quantize_${name}(t: u32, pos: u32, blk: u32) {
  let x0 = t * ${kvDim}u + blk * 32u;
  var h: array<u32, ${NH}>;
${body}
  let hb = (pos * ${nb}u + blk) * ${NH}u;
  var k = 0u;
  loop {
    if (k >= ${NH}u) { break; }
    if (((hb + k) & 1u) == 0u && k + 1u < ${NH}u) {
      put2_${name}((hb + k) >> 1u, h[k] | (h[k + 1u] << 16u));
      k += 2u;
    } else {
      put_${name}(hb + k, h[k]);
      k += 1u;
    }
  }
}`;
}

/** Threads per workgroup of {@link kvQuantizeWGSL}. */
export const KV_QUANT_THREADS = 64;

/**
 * Quantize-on-write: rows t < step.nTokens of `k_new`/`v_new` [T, kvDim] f32 (the QKV kernel's K after RoPE
 * and its V) → rows step.pos0 + t of the caches `kc`/`vc` [nCtx, kvDim] as Q8_0 or Q4_0 blocks
 * (ggml-quants.c quantize_row_q8_0_ref / quantize_row_q4_0_ref, bit for bit). Only the quantized halves
 * are bound: a float K or V is stored by the QKV kernel itself. One thread per block; neighbouring blocks
 * (and rows) share u32 words, so the caches are written with atomics, 16 bits at a time.
 * Bindings: step, then k_new, kc (K quantized), then v_new, vc (V quantized), numbered in that order. Dispatch
 * ({@link kvQuantizeWorkgroupsX}, T).
 * @throws Error when neither type is quantized or kvDim is not a multiple of 32.
 */
export function kvQuantizeWGSL(o: { kvDim: number; kType: KvType; vType: KvType }): string {
  const parts = [
    { t: o.kType, src: 'k_new', dst: 'kc' },
    { t: o.vType, src: 'v_new', dst: 'vc' },
  ].filter((p): p is typeof p & { t: QuantKvType } => isQuantKv(p.t));
  if (parts.length === 0 || o.kvDim % KV_BLOCK !== 0)
    throw new Error(`kv quantize: nothing to quantize or kvDim ${o.kvDim} not whole blocks`);
  const nb = o.kvDim / KV_BLOCK;
  const decls = parts
    .map(
      (p, i) => `@group(0) @binding(${1 + 2 * i}) var<storage, read> ${p.src}: array<f32>;
@group(0) @binding(${2 + 2 * i}) var<storage, read_write> ${p.dst}: array<atomic<u32>>;
${halfWriters(p.dst)}
${blockWriter(p.dst, p.src, p.t, o.kvDim)}`,
    )
    .join('\n');
  const calls = parts
    .map((p, i) => `  if (g / ${nb}u == ${i}u) { quantize_${p.dst}(t, step.pos0 + t, g % ${nb}u); }`)
    .join('\n');
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
${QUANT_HELPERS}
${decls}

@compute @workgroup_size(${KV_QUANT_THREADS})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let g = gid.x;
  let t = wg.y;
  if (g >= ${parts.length * nb}u || t >= step.nTokens) { return; }
${calls}
}`;
}

/** Workgroups along x of {@link kvQuantizeWGSL}: a thread per block of each quantized half of a row. */
export function kvQuantizeWorkgroupsX(o: { kvDim: number; kType: KvType; vType: KvType }): number {
  const halves = Number(isQuantKv(o.kType)) + Number(isQuantKv(o.vType));
  return Math.ceil((halves * o.kvDim) / KV_BLOCK / KV_QUANT_THREADS);
}
