/**
 * Helpers the block codecs share, as in ggml-quants.c (see quantize.ts for the exactness rules: every
 * operation a binary32 one through `Math.fround`, in the C code's order).
 */
import { f16ToF32 } from './half.ts';

/** Rounds to binary32. */
export const fr = Math.fround;

/** ggml's `nearest_int`: round to nearest, ties to even (the 1.5·2^23 trick), for |f| ≤ 4194303. */
export function nearestInt(f: number): number {
  return fr(f + 12582912) - 12582912;
}

/** C's `roundf`: halves away from zero. */
export function roundf(v: number): number {
  return v >= 0 ? Math.floor(v + 0.5) : -Math.floor(-v + 0.5);
}

/** `GROUP_MAX_EPS` (1e-15f). */
export const GROUP_MAX_EPS = fr(1e-15);
/** `0.1f`. */
export const F01 = fr(0.1);

/**

/** Writes binary16 bits `h` little-endian at `out[o]`. */
export function setHalf(out: Uint8Array, o: number, h: number): void {
  out[o] = h & 0xff;
  out[o + 1] = h >>> 8;
}

/** The value of the little-endian binary16 at `b[o]`. */
export function getHalf(b: Uint8Array, o: number): number {
  return f16ToF32(b[o] | (b[o + 1] << 8));
}

/**
 * x86's float → int conversion (`cvttss2si`, what `(int8_t)f` / `(uint8_t)f` compile to): truncation,
 * with NaN and out-of-range values giving 0x80000000; then C keeps the low 8 bits.
 */
export function truncToU8(v: number): number {
  const t = Math.trunc(v);
  return (Number.isFinite(t) && Math.abs(t) < 2 ** 31 ? t : -(2 ** 31)) & 0xff;
}

/** The same, read back as `int8_t`. */
export function truncToI8(v: number): number {
  return (truncToU8(v) << 24) >> 24;
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * ggml's `nearest_int` bit for bit over the whole float range: the low 23 bits of the binary32 sum
 * f + 1.5·2^23, minus 2^22 (equal to {@link nearestInt} for |f| ≤ 4194303, where ggml asserts; release
 * builds compile the assert out, so larger values give these bits, and the callers clamp them).
 */
export function nearestIntBits(f: number): number {
  f32Scratch[0] = f + 12582912;
  return (u32Scratch[0] & 0x7fffff) - 0x400000;
}
