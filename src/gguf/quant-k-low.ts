/**
 * The low-bit K-quant codecs Q2_K and Q3_K (`make_q3_quants`, ggml's `nearest_int` over the whole
 * float range), bit for bit as ggml-quants.c (layouts and exactness rules: quantize.ts).
 */
import { f32ToF16 } from './half.ts';
import { F01, fr, GROUP_MAX_EPS, getHalf, nearestIntBits, setHalf } from './quant-common.ts';
import { makeQkx2Quants } from './quant-k.ts';

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
export function quantizeQ2_K(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q2_K: the blocks in `b` → y.length floats. */
export function dequantizeQ2_K(b: Uint8Array, y: Float32Array): void {
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
export function quantizeQ3_K(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q3_K: the blocks in `b` → y.length floats. */
export function dequantizeQ3_K(b: Uint8Array, y: Float32Array): void {
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
