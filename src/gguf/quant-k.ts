/**
 * The K-quant codecs Q4_K, Q5_K and Q6_K with their scale searches (`make_qkx2_quants`,
 * `make_qx_quants`), bit for bit as ggml-quants.c (layouts and exactness rules: quantize.ts).
 */
import { f16ToF32, f32ToF16 } from './half.ts';
import { F01, fr, GROUP_MAX_EPS, getHalf, nearestInt, nearestIntBits, setHalf } from './quant-common.ts';

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
export function makeQkx2Quants(
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

/** quantize_row_q4_K_ref. */
export function quantizeQ4_K(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q4_K: the blocks in `b` → y.length floats. */
export function dequantizeQ4_K(b: Uint8Array, y: Float32Array): void {
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
export function quantizeQ6_K(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q6_K: the blocks in `b` → y.length floats. */
export function dequantizeQ6_K(b: Uint8Array, y: Float32Array): void {
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

/** quantize_row_q5_K_ref. */
export function quantizeQ5_K(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q5_K: the blocks in `b` → y.length floats. */
export function dequantizeQ5_K(b: Uint8Array, y: Float32Array): void {
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
