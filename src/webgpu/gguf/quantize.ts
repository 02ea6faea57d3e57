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
 */
import { EngineError } from '../../engine/errors.ts';
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
 * @param type ggml type id or name: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K.
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
