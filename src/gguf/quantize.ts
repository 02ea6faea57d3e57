/**
 * Quantization and dequantization of ggml tensor data, bit for bit as ggml's reference C code
 * (`ggml/src/ggml-quants.c`: `quantize_row_*_ref`, `dequantize_row_*`; block layouts from
 * `ggml-common.h`; F16/BF16 from `ggml-impl.h`) at the llama.cpp that node-llama-cpp 3.21.1 ships.
 *
 * Exactness: ggml does this arithmetic in IEEE binary32. Every operation here is a float64 operation
 * rounded to binary32 with `Math.fround` (for + − × ÷ and √ of binary32 inputs this gives the correctly
 * rounded binary32 result, because binary64 has more than 2·24 + 2 bits), in the C code's evaluation
 * order, with no fused multiply-add (as the prebuilt `libggml-base` computes; checked against it in
 * `quantize.test.ts` through the golden file `tests/golden/quant.json`, see `scripts/golden-quant.ts`).
 *
 * Block layouts (little-endian; `half` = IEEE binary16 bits):
 * - Q8_0: 32 elements in 34 bytes: half d; int8 qs[32]. x = d·q.
 * - Q4_0: 32 in 18: half d; u8 qs[16]: low nibbles are elements 0–15, high nibbles 16–31. x = d·(q − 8).
 * - Q5_0: 32 in 22: half d; u8 qh[4] (bit j = 5th bit of element j); u8 qs[16] as Q4_0. x = d·(q − 16).
 * - Q4_K: 256 in 144: half d, dmin; u8 scales[12] (eight 6-bit scales and mins, see {@link scaleMinK4});
 *   u8 qs[128]: for each 64 elements, 32 bytes whose low nibbles are the first 32 and high nibbles the
 *   next 32. Sub-block j (32 elements): x = d·sc_j·q − dmin·m_j.
 * - Q6_K: 256 in 210: u8 ql[128] (low 4 bits); u8 qh[64] (high 2 bits); int8 scales[16]; half d.
 *   Sub-block of 16: x = d·scale·(q − 32).
 * - Q5_K: 256 in 176: half d, dmin; u8 scales[12] as Q4_K; u8 qh[32] (bit s of byte l = 5th bit of
 *   element 32s + l); u8 qs[128] as Q4_K. Sub-block s (32): x = d·sc_s·(q + 16·h) − dmin·m_s.
 * - Q3_K: 256 in 110: u8 hmask[32] (bit 4h + j of byte l: high bit of element 128h + 32j + l); u8
 *   qs[64] (2 bits per element, byte 32h + l at shift 2j); u8 scales[12] (sixteen 6-bit scales, see
 *   {@link q3kScale}); half d. Group of 16 g: x = d·(sc_g − 32)·(q − 4·!hbit).
 * - Q2_K: 256 in 84: u8 scales[16] (low nibble scale, high nibble min); u8 qs[64] as Q3_K's qs; half
 *   d, dmin. Group of 16 g: x = d·(sc_g & 15)·q − dmin·(sc_g >> 4).
 * - Q4_1: 32 in 20: half d, m; u8 qs[16] as Q4_0. x = d·q + m.
 * - Q5_1: 32 in 24: half d, m; u8 qh[4]; u8 qs[16] as Q5_0. x = d·q + m.
 * - IQ4_NL: 32 in 18: half d; u8 qs[16] as Q4_0. x = d·kvalues_iq4nl[q] ({@link KVALUES_IQ4NL}).
 * - IQ4_XS: 256 in 136: half d; u16 scales_h (2 high bits per block of 32); u8 scales_l[4] (low 4
 *   bits, block 2k in the low nibble of byte k); u8 qs[128], 16 bytes per block of 32 as IQ4_NL.
 *   Block ib: x = d·(ls − 32)·kvalues_iq4nl[q].
 */
import { EngineError } from '../core/errors.ts';
import { findGgmlType, type GgmlType, ggmlType, ggmlTypeByName } from './ggml-types.ts';

const fr = Math.fround;

// ---------------------------------------------------------------------------------------------------
// Half and bfloat16

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * IEEE binary16 bits of `v` (first rounded to binary32), round to nearest even, overflow to ±inf, NaN
 * to a quiet NaN with the sign kept: ggml's `GGML_FP32_TO_FP16`.
 */
export function f32ToF16(v: number): number {
  f32Scratch[0] = v;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | (mant ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal
    const m = mant | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++; // a carry rounds into the exponent, as it should
  return sign | h;
}

/** binary16 bits → value, exact (a table of all 65,536). */
const F16_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) t[h] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) t[h] = mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return t;
})();

/** The value of binary16 bits `h` (exact): ggml's `GGML_FP16_TO_FP32`. */
export function f16ToF32(h: number): number {
  return F16_TABLE[h & 0xffff];
}

/**
 * bfloat16 bits of `v` (first rounded to binary32): round to nearest even, NaN kept quiet; ggml's
 * `ggml_compute_fp32_to_bf16` (which `ggml_quantize_chunk` uses for BF16; subnormals are kept).
 */
export function f32ToBf16(v: number): number {
  f32Scratch[0] = v;
  const u = u32Scratch[0];
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16) & 0xffff;
}

/** The value of bfloat16 bits `h` (exact). */
export function bf16ToF32(h: number): number {
  u32Scratch[0] = (h & 0xffff) << 16;
  return f32Scratch[0];
}

// ---------------------------------------------------------------------------------------------------
// Helpers as in ggml-quants.c

/** ggml's `nearest_int`: round to nearest, ties to even (the 1.5·2^23 trick), for |f| ≤ 4194303. */
function nearestInt(f: number): number {
  return fr(f + 12582912) - 12582912;
}

/** C's `roundf`: halves away from zero. */
function roundf(v: number): number {
  return v >= 0 ? Math.floor(v + 0.5) : -Math.floor(-v + 0.5);
}

/** `GROUP_MAX_EPS` (1e-15f). */
const GROUP_MAX_EPS = fr(1e-15);
/** `0.1f`. */
const F01 = fr(0.1);

/**
 * ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0–7) from the 12 packed bytes at
 * `q[off..off+12)`. j < 4: scale = q[j] & 63, min = q[j+4] & 63; j ≥ 4: the low 4 bits come from
 * q[j+4] (scale in the low nibble, min in the high) and the top 2 bits from the top bits of q[j−4]
 * (scale) and q[j] (min).
 */
export function scaleMinK4(j: number, q: Uint8Array, off: number): [scale: number, min: number] {
  if (j < 4) return [q[off + j] & 63, q[off + j + 4] & 63];
  return [
    (q[off + j + 4] & 0xf) | ((q[off + j - 4] >> 6) << 4),
    (q[off + j + 4] >> 4) | ((q[off + j] >> 6) << 4),
  ];
}

/** ggml's `make_qkx2_quants` (scale and min of one sub-block, weighted least squares over a grid). */
function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  weights: Float32Array,
  L: Uint8Array,
  lo: number,
  Laux: Uint8Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad: boolean,
): [scale: number, theMin: number] {
  let min = x[xo];
  let max = x[xo];
  let sumW = weights[0];
  let sumX = fr(sumW * x[xo]);
  for (let i = 1; i < n; i++) {
    const xi = x[xo + i];
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const w = weights[i];
    sumW = fr(sumW + w);
    sumX = fr(sumX + fr(w * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return [0, -min];
  }
  let iscale = fr(nmax / fr(max - min));
  let scale = fr(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const l = nearestInt(fr(iscale * fr(x[xo + i] - min)));
    L[lo + i] = Math.max(0, Math.min(nmax, l));
    let diff = fr(fr(fr(scale * L[lo + i]) + min) - x[xo + i]);
    diff = useMad ? Math.abs(diff) : fr(diff * diff);
    bestError = fr(bestError + fr(weights[i] * diff));
  }
  if (nstep < 1) return [scale, -min];
  for (let is = 0; is <= nstep; is++) {
    iscale = fr(fr(fr(rmin + fr(rdelta * is)) + nmax) / fr(max - min));
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i];
      let l = nearestInt(fr(iscale * fr(xi - min)));
      l = Math.max(0, Math.min(nmax, l));
      Laux[i] = l;
      const w = weights[i];
      const wl = fr(w * l);
      sumL = fr(sumL + wl);
      sumL2 = fr(sumL2 + fr(wl * l));
      sumXL = fr(sumXL + fr(wl * xi));
    }
    const D = fr(fr(sumW * sumL2) - fr(sumL * sumL));
    if (D > 0) {
      let thisScale = fr(fr(fr(sumW * sumXL) - fr(sumX * sumL)) / D);
      let thisMin = fr(fr(fr(sumL2 * sumX) - fr(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fr(sumXL / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        let diff = fr(fr(fr(thisScale * Laux[i]) + thisMin) - x[xo + i]);
        diff = useMad ? Math.abs(diff) : fr(diff * diff);
        curError = fr(curError + fr(weights[i] * diff));
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  return [scale, -min];
}

/**
 * ggml's `make_qx_quants` with `qw = NULL` and `rmse_type` 1 (weights x²), as Q6_K uses it: symmetric
 * quants in [−nmax, nmax−1], stored in L as q + nmax; returns the scale.
 */
function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Int8Array,
  lo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  let iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i];
    let l = nearestInt(fr(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l + nmax;
    const w = fr(xi * xi);
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  let scale = suml2 ? fr(sumlx / suml2) : 0;
  let best = fr(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fr(-fr(nmax + fr(F01 * is)) / max);
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i];
      let l = nearestInt(fr(iscale * xi));
      l = Math.max(-nmax, Math.min(nmax - 1, l));
      const w = fr(xi * xi);
      sumlx = fr(sumlx + fr(fr(w * xi) * l));
      suml2 = fr(suml2 + fr(fr(w * l) * l));
    }
    if (suml2 > 0 && fr(sumlx * sumlx) > fr(best * suml2)) {
      for (let i = 0; i < n; i++) {
        const l = nearestInt(fr(iscale * x[xo + i]));
        L[lo + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, l));
      }
      scale = fr(sumlx / suml2);
      best = fr(scale * sumlx);
    }
  }
  return scale;
}

// ---------------------------------------------------------------------------------------------------
// Per-type block codecs

function setHalf(out: Uint8Array, o: number, h: number): void {
  out[o] = h & 0xff;
  out[o + 1] = h >>> 8;
}

function getHalf(b: Uint8Array, o: number): number {
  return F16_TABLE[b[o] | (b[o + 1] << 8)];
}

/** quantize_row_q8_0_ref. */
function quantizeQ8_0(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 34;
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      const a = Math.abs(x[xo + j]);
      amax = Math.max(amax, a); // MAX(amax, a)
    }
    const d = fr(amax / 127);
    const id = d ? fr(1 / d) : 0;
    setHalf(out, o, f32ToF16(d));
    for (let j = 0; j < 32; j++) out[o + 2 + j] = roundf(fr(x[xo + j] * id)) & 0xff;
  }
}

function dequantizeQ8_0(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 34;
    const d = getHalf(b, o);
    for (let j = 0; j < 32; j++) y[i * 32 + j] = ((b[o + 2 + j] << 24) >> 24) * d;
  }
}

/** quantize_row_q4_0_ref. */
function quantizeQ4_0(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 18;
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = fr(max / -8);
    const id = d ? fr(1 / d) : 0;
    setHalf(out, o, f32ToF16(d));
    for (let j = 0; j < 16; j++) {
      const x0 = fr(x[xo + j] * id);
      const x1 = fr(x[xo + 16 + j] * id);
      const xi0 = Math.min(15, Math.trunc(fr(x0 + 8.5)));
      const xi1 = Math.min(15, Math.trunc(fr(x1 + 8.5)));
      out[o + 2 + j] = xi0 | (xi1 << 4);
    }
  }
}

function dequantizeQ4_0(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = getHalf(b, o);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j];
      y[i * 32 + j] = ((q & 0xf) - 8) * d;
      y[i * 32 + j + 16] = ((q >> 4) - 8) * d;
    }
  }
}

/** quantize_row_q5_0_ref (llama.cpp's fallback for Q4_K rows that are not a multiple of 256). */
function quantizeQ5_0(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 22;
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = fr(max / -16);
    const id = d ? fr(1 / d) : 0;
    setHalf(out, o, f32ToF16(d));
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fr(x[xo + j] * id);
      const x1 = fr(x[xo + 16 + j] * id);
      const xi0 = Math.min(31, Math.trunc(fr(x0 + 16.5)));
      const xi1 = Math.min(31, Math.trunc(fr(x1 + 16.5)));
      out[o + 6 + j] = (xi0 & 0xf) | ((xi1 & 0xf) << 4);
      qh |= ((xi0 & 0x10) >>> 4) << j;
      qh |= ((xi1 & 0x10) >>> 4) << (j + 16);
    }
    out[o + 2] = qh & 0xff;
    out[o + 3] = (qh >>> 8) & 0xff;
    out[o + 4] = (qh >>> 16) & 0xff;
    out[o + 5] = (qh >>> 24) & 0xff;
  }
}

function dequantizeQ5_0(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 22;
    const d = getHalf(b, o);
    const qh = (b[o + 2] | (b[o + 3] << 8) | (b[o + 4] << 16) | (b[o + 5] << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const xh0 = ((qh >>> j) << 4) & 0x10;
      const xh1 = (qh >>> (j + 12)) & 0x10;
      const q = b[o + 6 + j];
      y[i * 32 + j] = (((q & 0xf) | xh0) - 16) * d;
      y[i * 32 + j + 16] = (((q >> 4) | xh1) - 16) * d;
    }
  }
}

/**
 * x86's float → int conversion (`cvttss2si`, what `(int8_t)f` / `(uint8_t)f` compile to): truncation,
 * with NaN and out-of-range values giving 0x80000000; then C keeps the low 8 bits.
 */
function truncToU8(v: number): number {
  const t = Math.trunc(v);
  return (Number.isFinite(t) && Math.abs(t) < 2 ** 31 ? t : -(2 ** 31)) & 0xff;
}

/** The same, read back as `int8_t`. */
function truncToI8(v: number): number {
  return (truncToU8(v) << 24) >> 24;
}

/** quantize_row_q4_1_ref: x ≈ d·q + m with m the block minimum, d = (max − min)/15. */
function quantizeQ4_1(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 20;
    let min = 3.4028234663852886e38;
    let max = -3.4028234663852886e38;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 15);
    const id = d ? fr(1 / d) : 0;
    setHalf(out, o, f32ToF16(d));
    setHalf(out, o + 2, f32ToF16(min));
    for (let j = 0; j < 16; j++) {
      const x0 = fr(fr(x[xo + j] - min) * id);
      const x1 = fr(fr(x[xo + 16 + j] - min) * id);
      const xi0 = Math.min(15, truncToI8(fr(x0 + 0.5))) & 0xff;
      const xi1 = Math.min(15, truncToI8(fr(x1 + 0.5))) & 0xff;
      out[o + 4 + j] = (xi0 | (xi1 << 4)) & 0xff;
    }
  }
}

/** dequantize_row_q4_1: x = q·d + m. */
function dequantizeQ4_1(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 20;
    const d = getHalf(b, o);
    const m = getHalf(b, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j];
      y[i * 32 + j] = fr((q & 0xf) * d) + m;
      y[i * 32 + j + 16] = fr((q >> 4) * d) + m;
    }
  }
}

/** quantize_row_q5_1_ref: x ≈ d·q + m with m the block minimum, d = (max − min)/31. */
function quantizeQ5_1(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 24;
    let min = 3.4028234663852886e38;
    let max = -3.4028234663852886e38;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 31);
    const id = d ? fr(1 / d) : 0;
    setHalf(out, o, f32ToF16(d));
    setHalf(out, o + 2, f32ToF16(min));
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fr(fr(x[xo + j] - min) * id);
      const x1 = fr(fr(x[xo + 16 + j] - min) * id);
      const xi0 = truncToU8(fr(x0 + 0.5));
      const xi1 = truncToU8(fr(x1 + 0.5));
      out[o + 8 + j] = (xi0 & 0xf) | ((xi1 & 0xf) << 4);
      qh |= ((xi0 & 0x10) >>> 4) << j;
      qh |= ((xi1 & 0x10) >>> 4) << (j + 16);
    }
    out[o + 4] = qh & 0xff;
    out[o + 5] = (qh >>> 8) & 0xff;
    out[o + 6] = (qh >>> 16) & 0xff;
    out[o + 7] = (qh >>> 24) & 0xff;
  }
}

/** dequantize_row_q5_1: x = q·d + m, q the 4 low bits from qs and the 5th from qh. */
function dequantizeQ5_1(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 24;
    const d = getHalf(b, o);
    const m = getHalf(b, o + 2);
    const qh = (b[o + 4] | (b[o + 5] << 8) | (b[o + 6] << 16) | (b[o + 7] << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const xh0 = ((qh >>> j) << 4) & 0x10;
      const xh1 = (qh >>> (j + 12)) & 0x10;
      const q = b[o + 8 + j];
      y[i * 32 + j] = fr(((q & 0xf) | xh0) * d) + m;
      y[i * 32 + j + 16] = fr(((q >> 4) | xh1) * d) + m;
    }
  }
}

/**
 * ggml-common.h's `kvalues_iq4nl`: the 16 non-linear levels of IQ4_NL and IQ4_XS (x = d·kvalues[q]).
 */
export const KVALUES_IQ4NL: readonly number[] = [
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];
const KV = Int8Array.from(KVALUES_IQ4NL);

/** ggml-quants.c's `best_index_int8(16, kvalues_iq4nl, x)`: the index of the nearest level (ties up). */
function bestIndexIq4(x: number): number {
  if (x <= KV[0]) return 0;
  if (x >= KV[15]) return 15;
  let ml = 0;
  let mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < KV[mav]) mu = mav;
    else ml = mav;
  }
  return fr(x - KV[mu - 1]) < fr(KV[mu] - x) ? mu - 1 : mu;
}

/**
 * ggml-quants.c's `quantize_row_iq4_nl_impl` with `quant_weights = NULL` and `ntry = 7` (what
 * `quantize_iq4_nl` / `quantize_iq4_xs`, and so `ggml_quantize_chunk`, run without an importance
 * matrix) on `superBlock` elements of x at `xo` (32: IQ4_NL; 256: IQ4_XS) in blocks of 32. Writes the
 * half d at `dO`, the 4-bit indices at `qO` (superBlock/2 bytes) and, for 256, the 6-bit block
 * scales (`scales_h` u16 at `shO`, `scales_l[4]` at `slO`).
 */
function quantizeIq4Impl(
  superBlock: number,
  x: Float32Array,
  xo: number,
  out: Uint8Array,
  dO: number,
  qO: number,
  shO: number,
  slO: number,
  L: Uint8Array,
  scales: Float32Array,
  weight: Float32Array,
): void {
  const ntry = 7;
  const nb = superBlock / 32;
  out.fill(0, qO, qO + superBlock / 2);
  setHalf(out, dO, 0);
  let maxScale = 0;
  let amaxScale = 0;
  for (let ib = 0; ib < nb; ib++) {
    const xb = xo + ib * 32;
    const lb = ib * 32;
    for (let j = 0; j < 32; j++) weight[j] = fr(x[xb + j] * x[xb + j]);
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const ax = Math.abs(x[xb + j]);
      if (ax > amax) {
        amax = ax;
        max = x[xb + j];
      }
    }
    if (amax < GROUP_MAX_EPS) {
      scales[ib] = 0;
      continue;
    }
    let d = fr(-max / KV[0]);
    let id = fr(1 / d);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const l = bestIndexIq4(fr(id * x[xb + j]));
      L[lb + j] = l;
      const q = KV[l];
      const w = weight[j];
      sumqx = fr(sumqx + fr(fr(w * q) * x[xb + j]));
      sumq2 = fr(sumq2 + fr(fr(w * q) * q));
    }
    d = sumq2 > 0 ? fr(sumqx / sumq2) : 0;
    let best = fr(d * sumqx);
    for (let itry = -ntry; itry <= ntry; itry++) {
      id = fr((itry + KV[0]) / max);
      sumqx = 0;
      sumq2 = 0;
      for (let j = 0; j < 32; j++) {
        const q = KV[bestIndexIq4(fr(id * x[xb + j]))];
        const w = weight[j];
        sumqx = fr(sumqx + fr(fr(w * q) * x[xb + j]));
        sumq2 = fr(sumq2 + fr(fr(w * q) * q));
      }
      if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
        d = fr(sumqx / sumq2);
        best = fr(d * sumqx);
      }
    }
    scales[ib] = d;
    const absD = Math.abs(d);
    if (absD > amaxScale) {
      amaxScale = absD;
      maxScale = d;
    }
  }
  if (nb > 1) {
    out[shO] = 0;
    out[shO + 1] = 0;
    let sh = 0;
    const d = fr(-maxScale / 32);
    setHalf(out, dO, f32ToF16(d));
    const id = d ? fr(1 / d) : 0;
    for (let ib = 0; ib < nb; ib++) {
      let l = nearestInt(fr(id * scales[ib]));
      l = Math.max(-32, Math.min(31, l));
      const dl = fr(d * l);
      const idl = dl ? fr(1 / dl) : 0;
      for (let j = 0; j < 32; j++) L[ib * 32 + j] = bestIndexIq4(fr(idl * x[xo + ib * 32 + j]));
      l += 32;
      const lL = l & 0xf;
      const lH = l >> 4;
      if (ib % 2 === 0) out[slO + (ib >> 1)] = lL;
      else out[slO + (ib >> 1)] |= lL << 4;
      sh |= lH << (2 * ib);
    }
    out[shO] = sh & 0xff;
    out[shO + 1] = (sh >>> 8) & 0xff;
  } else {
    setHalf(out, dO, f32ToF16(scales[0]));
    const id = scales[0] ? fr(1 / scales[0]) : 0;
    for (let j = 0; j < superBlock; j++) L[j] = bestIndexIq4(fr(id * x[xo + j]));
  }
  for (let i = 0; i < superBlock / 32; i++) {
    for (let j = 0; j < 16; j++) out[qO + 16 * i + j] = L[32 * i + j] | (L[32 * i + 16 + j] << 4);
  }
}

/** quantize_iq4_nl without an importance matrix (what ggml_quantize_chunk runs for IQ4_NL). */
function quantizeIq4Nl(x: Float32Array, out: Uint8Array): void {
  const L = new Uint8Array(32);
  const scales = new Float32Array(1);
  const weight = new Float32Array(32);
  for (let i = 0; i < x.length / 32; i++) {
    quantizeIq4Impl(32, x, i * 32, out, i * 18, i * 18 + 2, -1, -1, L, scales, weight);
  }
}

/** dequantize_row_iq4_nl: x = d·kvalues_iq4nl[q]. */
function dequantizeIq4Nl(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = getHalf(b, o);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j];
      y[i * 32 + j] = d * KV[q & 0xf];
      y[i * 32 + j + 16] = d * KV[q >> 4];
    }
  }
}

/** quantize_iq4_xs without an importance matrix (what ggml_quantize_chunk runs for IQ4_XS). */
function quantizeIq4Xs(x: Float32Array, out: Uint8Array): void {
  const L = new Uint8Array(256);
  const scales = new Float32Array(8);
  const weight = new Float32Array(32);
  for (let i = 0; i < x.length / 256; i++) {
    const o = i * 136;
    quantizeIq4Impl(256, x, i * 256, out, o, o + 8, o + 2, o + 4, L, scales, weight);
  }
}

/**
 * dequantize_row_iq4_xs: block ib (32 elements) has the 6-bit scale ls = (scales_l nibble) |
 * (2 bits of scales_h) << 4; x = d·(ls − 32)·kvalues_iq4nl[q].
 */
function dequantizeIq4Xs(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 136;
    const d = getHalf(b, o);
    const sh = b[o + 2] | (b[o + 3] << 8);
    for (let ib = 0; ib < 8; ib++) {
      const ls = ((b[o + 4 + (ib >> 1)] >> (4 * (ib % 2))) & 0xf) | (((sh >> (2 * ib)) & 3) << 4);
      const dl = fr(d * (ls - 32));
      const q = o + 8 + 16 * ib;
      const yo = i * 256 + 32 * ib;
      for (let j = 0; j < 16; j++) {
        y[yo + j] = dl * KV[b[q + j] & 0xf];
        y[yo + j + 16] = dl * KV[b[q + j] >> 4];
      }
    }
  }
}

/** quantize_row_q4_K_ref. */
function quantizeQ4_K(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 256;
  const L = new Uint8Array(256);
  const Laux = new Uint8Array(32);
  const weights = new Float32Array(32);
  const mins = new Float32Array(8);
  const scales = new Float32Array(8);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * 144;
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const sx = xo + 32 * j;
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = fr(sumX2 + fr(x[sx + l] * x[sx + l]));
      const avX = fr(Math.sqrt(fr(sumX2 / 32)));
      for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(x[sx + l]));
      const [s, m] = makeQkx2Quants(32, 15, x, sx, weights, L, 32 * j, Laux, -1, F01, 20, false);
      scales[j] = s;
      mins[j] = m;
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
    const sc = o + 4; // scales[12]
    for (let k = 0; k < 12; k++) out[sc + k] = 0;
    for (let j = 0; j < 8; j++) {
      const ls = Math.min(63, nearestInt(fr(invScale * scales[j])) & 0xff);
      const lm = Math.min(63, nearestInt(fr(invMin * mins[j])) & 0xff);
      if (j < 4) {
        out[sc + j] = ls;
        out[sc + j + 4] = lm;
      } else {
        out[sc + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
        out[sc + j - 4] |= (ls >> 4) << 6;
        out[sc + j] |= (lm >> 4) << 6;
      }
    }
    const dh = f32ToF16(fr(maxScale / 63));
    const dminh = f32ToF16(fr(maxMin / 63));
    setHalf(out, o, dh);
    setHalf(out, o + 2, dminh);
    const dF = f16ToF32(dh);
    const dminF = f16ToF32(dminh);
    for (let j = 0; j < 8; j++) {
      const [s, m] = scaleMinK4(j, out, sc);
      const d = fr(dF * s);
      if (!d) continue;
      const dm = fr(dminF * m);
      for (let ii = 0; ii < 32; ii++) {
        const l = nearestInt(fr(fr(x[xo + 32 * j + ii] + dm) / d));
        L[32 * j + ii] = Math.max(0, Math.min(15, l));
      }
    }
    const q = o + 16;
    for (let j = 0; j < 256; j += 64) {
      const qo = q + j / 2;
      for (let l = 0; l < 32; l++) out[qo + l] = L[j + l] | (L[j + l + 32] << 4);
    }
  }
}

function dequantizeQ4_K(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 144;
    const d = getHalf(b, o);
    const min = getHalf(b, o + 2);
    let q = o + 16;
    let yo = i * 256;
    for (let j = 0, is = 0; j < 256; j += 64, is += 2) {
      const [sc1, m1s] = scaleMinK4(is, b, o + 4);
      const d1 = fr(d * sc1);
      const m1 = fr(min * m1s);
      const [sc2, m2s] = scaleMinK4(is + 1, b, o + 4);
      const d2 = fr(d * sc2);
      const m2 = fr(min * m2s);
      for (let l = 0; l < 32; l++) y[yo++] = fr(d1 * (b[q + l] & 0xf)) - m1;
      for (let l = 0; l < 32; l++) y[yo++] = fr(d2 * (b[q + l] >> 4)) - m2;
      q += 32;
    }
  }
}

/** quantize_row_q6_K_ref. */
function quantizeQ6_K(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 256;
  const L = new Int8Array(256);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * 210;
    const qlO = o;
    const qhO = o + 128;
    const scO = o + 192;
    const dO = o + 208;
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const scale = makeQxQuants(16, 32, x, xo + 16 * ib, L, 16 * ib);
      scales[ib] = scale;
      const absScale = Math.abs(scales[ib]);
      if (absScale > maxAbsScale) {
        maxAbsScale = absScale;
        maxScale = scales[ib];
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      out.fill(0, o, o + 210);
      continue;
    }
    const iscale = fr(-128 / maxScale);
    const dh = f32ToF16(fr(1 / iscale));
    setHalf(out, dO, dh);
    const dF = f16ToF32(dh);
    const sc = new Int8Array(16);
    for (let ib = 0; ib < 16; ib++) sc[ib] = Math.min(127, nearestInt(fr(iscale * scales[ib])));
    for (let ib = 0; ib < 16; ib++) out[scO + ib] = sc[ib] & 0xff;
    for (let j = 0; j < 16; j++) {
      const d = fr(dF * sc[j]);
      if (!d) continue;
      for (let ii = 0; ii < 16; ii++) {
        let l = nearestInt(fr(x[xo + 16 * j + ii] / d));
        l = Math.max(-32, Math.min(31, l));
        L[16 * j + ii] = l + 32;
      }
    }
    let ql = qlO;
    let qh = qhO;
    for (let j = 0; j < 256; j += 128) {
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l] & 0xf;
        const q2 = L[j + l + 32] & 0xf;
        const q3 = L[j + l + 64] & 0xf;
        const q4 = L[j + l + 96] & 0xf;
        out[ql + l] = q1 | (q3 << 4);
        out[ql + l + 32] = q2 | (q4 << 4);
        out[qh + l] =
          (L[j + l] >> 4) |
          ((L[j + l + 32] >> 4) << 2) |
          ((L[j + l + 64] >> 4) << 4) |
          ((L[j + l + 96] >> 4) << 6);
      }
      ql += 64;
      qh += 32;
    }
  }
}

function dequantizeQ6_K(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 210;
    const d = getHalf(b, o + 208);
    let ql = o;
    let qh = o + 128;
    let sc = o + 192;
    let yo = i * 256;
    for (let n = 0; n < 256; n += 128) {
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const q1 = ((b[ql + l] & 0xf) | (((b[qh + l] >> 0) & 3) << 4)) - 32;
        const q2 = ((b[ql + l + 32] & 0xf) | (((b[qh + l] >> 2) & 3) << 4)) - 32;
        const q3 = ((b[ql + l] >> 4) | (((b[qh + l] >> 4) & 3) << 4)) - 32;
        const q4 = ((b[ql + l + 32] >> 4) | (((b[qh + l] >> 6) & 3) << 4)) - 32;
        const s = (k: number) => (b[sc + is + k] << 24) >> 24;
        y[yo + l] = fr(d * s(0)) * q1;
        y[yo + l + 32] = fr(d * s(2)) * q2;
        y[yo + l + 64] = fr(d * s(4)) * q3;
        y[yo + l + 96] = fr(d * s(6)) * q4;
      }
      yo += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Q2_K, Q3_K, Q5_K (ggml-quants.c: quantize_row_q{2,3,5}_K_ref, dequantize_row_q{2,3,5}_K)

/**
 * ggml's `nearest_int` bit for bit over the whole float range: the low 23 bits of the binary32 sum
 * f + 1.5·2^23, minus 2^22 (equal to {@link nearestInt} for |f| ≤ 4194303, where ggml asserts; release
 * builds compile the assert out, so larger values give these bits, and the callers clamp them).
 */
function nearestIntBits(f: number): number {
  f32Scratch[0] = f + 12582912;
  return (u32Scratch[0] & 0x7fffff) - 0x400000;
}

/**
 * ggml's `make_q3_quants` with `do_rmse` true (as quantize_row_q3_K_ref calls it): symmetric quants in
 * [−nmax, nmax−1] refined by up to 5 passes of coordinate descent on Σx²-weighted error, stored in L as
 * q + nmax (all-zero groups: L = 0 and scale 0); returns the scale.
 */
function makeQ3Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Int8Array,
  lo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  const iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i];
    let l = nearestIntBits(fr(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l;
    const w = fr(xi * xi);
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let nChanged = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i];
      const w = fr(xi * xi);
      const li = L[lo + i];
      let slx = fr(sumlx - fr(fr(w * xi) * li));
      if (slx > 0) {
        let sl2 = fr(suml2 - fr(fr(w * li) * li));
        let newL = nearestIntBits(fr(fr(xi * sl2) / slx));
        newL = Math.max(-nmax, Math.min(nmax - 1, newL));
        if (newL !== li) {
          slx = fr(slx + fr(fr(w * xi) * newL));
          sl2 = fr(sl2 + fr(fr(w * newL) * newL));
          if (sl2 > 0 && fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            L[lo + i] = newL;
            sumlx = slx;
            suml2 = sl2;
            nChanged++;
          }
        }
      }
    }
    if (!nChanged) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] += nmax;
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}

/** quantize_row_q2_K_ref. */
function quantizeQ2_K(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 256;
  const L = new Uint8Array(256);
  const Laux = new Uint8Array(16);
  const weights = new Float32Array(16);
  const mins = new Float32Array(16);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * 84; // scales[16], qs[64], d, dmin
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 16; j++) {
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(x[xo + 16 * j + l]);
      const [s, m] = makeQkx2Quants(16, 3, x, xo + 16 * j, weights, L, 16 * j, Laux, -0.5, F01, 15, true);
      scales[j] = s;
      mins[j] = m;
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    if (maxScale > 0) {
      const iscale = fr(15 / maxScale);
      for (let j = 0; j < 16; j++) out[o + j] = nearestIntBits(fr(iscale * scales[j])) & 0xff;
      setHalf(out, o + 80, f32ToF16(fr(maxScale / 15)));
    } else {
      for (let j = 0; j < 16; j++) out[o + j] = 0;
      setHalf(out, o + 80, f32ToF16(0));
    }
    if (maxMin > 0) {
      const iscale = fr(15 / maxMin);
      for (let j = 0; j < 16; j++) out[o + j] |= (nearestIntBits(fr(iscale * mins[j])) << 4) & 0xff;
      setHalf(out, o + 82, f32ToF16(fr(maxMin / 15)));
    } else {
      setHalf(out, o + 82, f32ToF16(0));
    }
    const dF = getHalf(out, o + 80);
    const dminF = getHalf(out, o + 82);
    for (let j = 0; j < 16; j++) {
      const d = fr(dF * (out[o + j] & 0xf));
      if (!d) continue;
      const dm = fr(dminF * (out[o + j] >> 4));
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestIntBits(fr(fr(x[xo + 16 * j + ii] + dm) / d));
        L[16 * j + ii] = Math.max(0, Math.min(3, l));
      }
    }
    for (let j = 0; j < 256; j += 128) {
      const qo = o + 16 + j / 4;
      for (let l = 0; l < 32; l++) {
        out[qo + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
      }
    }
  }
}

function dequantizeQ2_K(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 84;
    const d = getHalf(b, o + 80);
    const min = getHalf(b, o + 82);
    let q = o + 16;
    let yo = i * 256;
    let is = 0;
    for (let n = 0; n < 256; n += 128) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 32; half += 16) {
          const sc = b[o + is++];
          const dl = fr(d * (sc & 0xf));
          const ml = fr(min * (sc >> 4));
          for (let l = 0; l < 16; l++) y[yo++] = fr(dl * ((b[q + half + l] >> shift) & 3)) - ml;
        }
      }
      q += 32;
    }
  }
}

/** quantize_row_q3_K_ref. */
function quantizeQ3_K(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 256;
  const L = new Int8Array(256);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * 110; // hmask[32], qs[64], scales[12], d
    const sc = o + 96;
    let maxScale = 0;
    let amax = 0;
    for (let j = 0; j < 16; j++) {
      scales[j] = makeQ3Quants(16, 4, x, xo + 16 * j, L, 16 * j);
      const scale = Math.abs(scales[j]);
      if (scale > amax) {
        amax = scale;
        maxScale = scales[j];
      }
    }
    out.fill(0, sc, sc + 12);
    if (maxScale) {
      const iscale = fr(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        let l = (nearestIntBits(fr(iscale * scales[j])) << 24) >> 24; // int8_t
        l = Math.max(-32, Math.min(31, l)) + 32;
        if (j < 8) out[sc + j] = l & 0xf;
        else out[sc + j - 8] |= (l & 0xf) << 4;
        l >>= 4;
        out[sc + (j % 4) + 8] |= l << (2 * Math.floor(j / 4));
      }
      setHalf(out, o + 108, f32ToF16(fr(1 / iscale)));
    } else {
      setHalf(out, o + 108, f32ToF16(0));
    }
    const dAll = getHalf(out, o + 108);
    for (let j = 0; j < 16; j++) {
      const s = q3kScale(out, sc, j);
      const d = fr(dAll * s);
      if (!d) continue;
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestIntBits(fr(x[xo + 16 * j + ii] / d));
        L[16 * j + ii] = Math.max(-4, Math.min(3, l)) + 4;
      }
    }
    out.fill(0, o, o + 32);
    let m = 0;
    let hm = 1;
    for (let j = 0; j < 256; j++) {
      if (L[j] > 3) {
        out[o + m] |= hm;
        L[j] -= 4;
      }
      if (++m === 32) {
        m = 0;
        hm <<= 1;
      }
    }
    for (let j = 0; j < 256; j += 128) {
      const qo = o + 32 + j / 4;
      for (let l = 0; l < 32; l++) {
        out[qo + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
      }
    }
  }
}

/**
 * Q3_K's 6-bit scale of 16-weight group j (0–15) minus 32, from the 12 packed bytes at `q[off..)`: low 4
 * bits from byte j (j < 8, low nibble) or j − 8 (high nibble), top 2 bits from byte 8 + j % 4 at bit
 * 2·⌊j/4⌋ (quantize_row_q3_K_ref; dequantize_row_q3_K's kmask shuffle gives the same).
 */
export function q3kScale(q: Uint8Array, off: number, j: number): number {
  const lo = j < 8 ? q[off + j] & 0xf : q[off + j - 8] >> 4;
  return (lo | (((q[off + 8 + (j % 4)] >> (2 * Math.floor(j / 4))) & 3) << 4)) - 32;
}

function dequantizeQ3_K(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const dAll = getHalf(b, o + 108);
    let q = o + 32;
    let yo = i * 256;
    let is = 0;
    let m = 1;
    for (let n = 0; n < 256; n += 128) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 32; half += 16) {
          const dl = fr(dAll * q3kScale(b, o + 96, is++));
          for (let l = 0; l < 16; l++) {
            const v = ((b[q + half + l] >> shift) & 3) - (b[o + half + l] & m ? 0 : 4);
            y[yo++] = dl * v;
          }
        }
        m <<= 1;
      }
      q += 32;
    }
  }
}

/** quantize_row_q5_K_ref. */
function quantizeQ5_K(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 256;
  const L = new Uint8Array(256);
  const Laux = new Uint8Array(32);
  const weights = new Float32Array(32);
  const mins = new Float32Array(8);
  const scales = new Float32Array(8);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * 176; // d, dmin, scales[12], qh[32], qs[128]
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const sx = xo + 32 * j;
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = fr(sumX2 + fr(x[sx + l] * x[sx + l]));
      const avX = fr(Math.sqrt(fr(sumX2 / 32)));
      for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(x[sx + l]));
      const [s, m] = makeQkx2Quants(32, 31, x, sx, weights, L, 32 * j, Laux, -0.5, F01, 15, false);
      scales[j] = s;
      mins[j] = m;
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
    const sc = o + 4;
    for (let k = 0; k < 12; k++) out[sc + k] = 0;
    for (let j = 0; j < 8; j++) {
      const ls = Math.min(63, nearestIntBits(fr(invScale * scales[j])) & 0xff);
      const lm = Math.min(63, nearestIntBits(fr(invMin * mins[j])) & 0xff);
      if (j < 4) {
        out[sc + j] = ls;
        out[sc + j + 4] = lm;
      } else {
        out[sc + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
        out[sc + j - 4] |= (ls >> 4) << 6;
        out[sc + j] |= (lm >> 4) << 6;
      }
    }
    setHalf(out, o, f32ToF16(fr(maxScale / 63)));
    setHalf(out, o + 2, f32ToF16(fr(maxMin / 63)));
    const dF = getHalf(out, o);
    const dminF = getHalf(out, o + 2);
    for (let j = 0; j < 8; j++) {
      const [s, m] = scaleMinK4(j, out, sc);
      const d = fr(dF * s);
      if (!d) continue;
      const dm = fr(dminF * m);
      for (let ii = 0; ii < 32; ii++) {
        const l = nearestIntBits(fr(fr(x[xo + 32 * j + ii] + dm) / d));
        L[32 * j + ii] = Math.max(0, Math.min(31, l));
      }
    }
    const qh = o + 16;
    out.fill(0, qh, qh + 32);
    let ql = o + 48;
    let m1 = 1;
    let m2 = 2;
    for (let n = 0; n < 256; n += 64) {
      for (let j = 0; j < 32; j++) {
        let l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          out[qh + j] |= m1;
        }
        let l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          out[qh + j] |= m2;
        }
        out[ql + j] = l1 | (l2 << 4);
      }
      m1 <<= 2;
      m2 <<= 2;
      ql += 32;
    }
  }
}

function dequantizeQ5_K(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 176;
    const d = getHalf(b, o);
    const min = getHalf(b, o + 2);
    const qh = o + 16;
    let ql = o + 48;
    let yo = i * 256;
    let u1 = 1;
    let u2 = 2;
    for (let is = 0; is < 8; is += 2) {
      const [sc1, m1s] = scaleMinK4(is, b, o + 4);
      const d1 = fr(d * sc1);
      const m1 = fr(min * m1s);
      const [sc2, m2s] = scaleMinK4(is + 1, b, o + 4);
      const d2 = fr(d * sc2);
      const m2 = fr(min * m2s);
      for (let l = 0; l < 32; l++) y[yo++] = fr(d1 * ((b[ql + l] & 0xf) + (b[qh + l] & u1 ? 16 : 0))) - m1;
      for (let l = 0; l < 32; l++) y[yo++] = fr(d2 * ((b[ql + l] >> 4) + (b[qh + l] & u2 ? 16 : 0))) - m2;
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Public API

interface Codec {
  quantize(x: Float32Array, out: Uint8Array): void;
  dequantize(b: Uint8Array, y: Float32Array): void;
}

const CODECS: Record<string, Codec> = {
  F32: {
    quantize: (x, out) => out.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength)),
    dequantize: (b, y) => {
      const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
      for (let i = 0; i < y.length; i++) y[i] = dv.getFloat32(4 * i, true);
    },
  },
  F16: {
    quantize: (x, out) => {
      for (let i = 0; i < x.length; i++) setHalf(out, 2 * i, f32ToF16(x[i]));
    },
    dequantize: (b, y) => {
      for (let i = 0; i < y.length; i++) y[i] = F16_TABLE[b[2 * i] | (b[2 * i + 1] << 8)];
    },
  },
  BF16: {
    quantize: (x, out) => {
      for (let i = 0; i < x.length; i++) setHalf(out, 2 * i, f32ToBf16(x[i]));
    },
    dequantize: (b, y) => {
      for (let i = 0; i < y.length; i++) y[i] = bf16ToF32(b[2 * i] | (b[2 * i + 1] << 8));
    },
  },
  Q8_0: { quantize: quantizeQ8_0, dequantize: dequantizeQ8_0 },
  Q4_0: { quantize: quantizeQ4_0, dequantize: dequantizeQ4_0 },
  Q5_0: { quantize: quantizeQ5_0, dequantize: dequantizeQ5_0 },
  Q4_K: { quantize: quantizeQ4_K, dequantize: dequantizeQ4_K },
  Q6_K: { quantize: quantizeQ6_K, dequantize: dequantizeQ6_K },
  Q5_K: { quantize: quantizeQ5_K, dequantize: dequantizeQ5_K },
  Q3_K: { quantize: quantizeQ3_K, dequantize: dequantizeQ3_K },
  Q2_K: { quantize: quantizeQ2_K, dequantize: dequantizeQ2_K },
  Q4_1: { quantize: quantizeQ4_1, dequantize: dequantizeQ4_1 },
  Q5_1: { quantize: quantizeQ5_1, dequantize: dequantizeQ5_1 },
  IQ4_NL: { quantize: quantizeIq4Nl, dequantize: dequantizeIq4Nl },
  IQ4_XS: { quantize: quantizeIq4Xs, dequantize: dequantizeIq4Xs },
};

/** Types {@link quantizeRow} writes and {@link dequantizeRow} reads. */
export const CODEC_TYPES: readonly string[] = Object.keys(CODECS);

function resolveType(type: number | string): GgmlType {
  return typeof type === 'number' ? ggmlType(type) : ggmlTypeByName(type);
}

function codecFor(ty: GgmlType): Codec {
  const c = CODECS[ty.name];
  if (!c) {
    throw new EngineError(
      'unsupported_model',
      `ggml type ${ty.name} cannot be (de)quantized here; supported: ${CODEC_TYPES.join(', ')}`,
    );
  }
  return c;
}

/** True when {@link quantizeRow} and {@link dequantizeRow} handle this type. */
export function hasCodec(type: number | string): boolean {
  const name = typeof type === 'number' ? findGgmlType(type)?.name : type;
  return name !== undefined && Object.hasOwn(CODECS, name);
}

function checkLength(ty: GgmlType, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0 || n % ty.blockSize !== 0) {
    throw new EngineError(
      'invalid_argument',
      `${ty.name} stores blocks of ${ty.blockSize} elements; ${n} elements is not a whole number of blocks`,
    );
  }
}

/**
 * Quantizes `x` (any number of whole blocks: one row, or a whole tensor of rows, which is the same
 * thing for these types) to `type`, exactly as ggml's `quantize_row_*_ref` / `ggml_quantize_chunk`
 * without an importance matrix.
 * @param type ggml type id or name: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, Q4_1, Q5_1,
 *   IQ4_NL, IQ4_XS,
 *   Q5_K, Q3_K, Q2_K.
 * @returns `x.length / blockSize · blockBytes` bytes.
 * @throws EngineError('invalid_argument') when x.length is not a multiple of the block size;
 *   ('unsupported_model') for other types.
 */
export function quantizeRow(type: number | string, x: Float32Array): Uint8Array {
  const ty = resolveType(type);
  const codec = codecFor(ty);
  checkLength(ty, x.length);
  const out = new Uint8Array((x.length / ty.blockSize) * ty.blockBytes);
  codec.quantize(x, out);
  return out;
}

/**
 * Decodes `n` elements of `type` from `bytes` (which must hold at least their blocks) to float32,
 * exactly as ggml's `dequantize_row_*` (and `ggml_fp16_to_fp32_row`, `ggml_bf16_to_fp32_row`): the
 * reference for the GPU kernels.
 * @throws EngineError('invalid_argument') when n is not a whole number of blocks or `bytes` is too
 *   short; ('unsupported_model') for other types.
 */
export function dequantizeRow(type: number | string, bytes: Uint8Array, n: number): Float32Array {
  const ty = resolveType(type);
  const codec = codecFor(ty);
  checkLength(ty, n);
  const need = (n / ty.blockSize) * ty.blockBytes;
  if (bytes.length < need) {
    throw new EngineError(
      'invalid_argument',
      `${n} ${ty.name} elements need ${need} bytes, but only ${bytes.length} were given`,
    );
  }
  const y = new Float32Array(n);
  codec.dequantize(bytes, y);
  return y;
}
