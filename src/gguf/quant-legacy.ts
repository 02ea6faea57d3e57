/**
 * The 32-element block codecs (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL) and IQ4_XS, bit for bit as
 * ggml-quants.c's `quantize_row_*_ref` and `dequantize_row_*` (layouts and exactness rules: quantize.ts).
 */
import { f32ToF16 } from './half.ts';
import {
  fr,
  GROUP_MAX_EPS,
  getHalf,
  nearestInt,
  roundf,
  setHalf,
  truncToI8,
  truncToU8,
} from './quant-common.ts';

/** quantize_row_q8_0_ref. */
export function quantizeQ8_0(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q8_0: the blocks in `b` → y.length floats. */
export function dequantizeQ8_0(b: Uint8Array, y: Float32Array): void {
  const nb = y.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 34;
    const d = getHalf(b, o);
    for (let j = 0; j < 32; j++) y[i * 32 + j] = ((b[o + 2 + j] << 24) >> 24) * d;
  }
}

/** quantize_row_q4_0_ref. */
export function quantizeQ4_0(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q4_0: the blocks in `b` → y.length floats. */
export function dequantizeQ4_0(b: Uint8Array, y: Float32Array): void {
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
export function quantizeQ5_0(x: Float32Array, out: Uint8Array): void {
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

/** dequantize_row_q5_0: the blocks in `b` → y.length floats. */
export function dequantizeQ5_0(b: Uint8Array, y: Float32Array): void {
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

/** quantize_row_q4_1_ref: x ≈ d·q + m with m the block minimum, d = (max − min)/15. */
export function quantizeQ4_1(x: Float32Array, out: Uint8Array): void {
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
export function dequantizeQ4_1(b: Uint8Array, y: Float32Array): void {
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
export function quantizeQ5_1(x: Float32Array, out: Uint8Array): void {
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
export function dequantizeQ5_1(b: Uint8Array, y: Float32Array): void {
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
export function quantizeIq4Nl(x: Float32Array, out: Uint8Array): void {
  const L = new Uint8Array(32);
  const scales = new Float32Array(1);
  const weight = new Float32Array(32);
  for (let i = 0; i < x.length / 32; i++) {
    quantizeIq4Impl(32, x, i * 32, out, i * 18, i * 18 + 2, -1, -1, L, scales, weight);
  }
}

/** dequantize_row_iq4_nl: x = d·kvalues_iq4nl[q]. */
export function dequantizeIq4Nl(b: Uint8Array, y: Float32Array): void {
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
export function quantizeIq4Xs(x: Float32Array, out: Uint8Array): void {
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
export function dequantizeIq4Xs(b: Uint8Array, y: Float32Array): void {
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
