/**
 * IEEE binary16 and bfloat16 conversions, bit for bit as ggml (`ggml-impl.h`: `GGML_FP32_TO_FP16`,
 * `GGML_FP16_TO_FP32`, `ggml_compute_fp32_to_bf16`).
 */

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
