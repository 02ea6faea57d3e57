/**
 * The WGSL byte-unpacking expressions the chunk dots of mmv-chunk.ts and mmv-chunk-k.ts share: 4 bytes as
 * floats (with or without `unpack4xU8`, or scaled by 1/255 through `unpack4x8unorm`), and words of ggml's
 * 2-byte-aligned blocks stitched into whole words.
 */

/** WGSL expression: 4 bytes of `v` as vec4<f32>, unsigned. */
export function u8x4(v: string, packed: boolean): string {
  return packed
    ? `vec4<f32>(unpack4xU8(${v}))`
    : `vec4<f32>((vec4<u32>(${v}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u))`;
}

/**
 * WGSL expression: 4 bytes of `v` as vec4<f32> scaled by 1/255 (`unpack4x8unorm`, core WGSL): the
 * caller multiplies the chunk's dot product by 255 once ({@link U8N}). On SwiftShader it costs ~20% less
 * per weight than `unpack4xU8` and a conversion (bench-floor / the Q4_0 and Q6_K decode kernels); a value
 * n comes back as n·(1 ± 2⁻²³), well inside the float64 tests' tolerance.
 */
export function u8x4n(v: string): string {
  return `unpack4x8unorm(${v})`;
}

/** The factor that undoes {@link u8x4n}'s 1/255. */
export const U8N = '255.0';

/**
 * Statements loading `n` + 1 words from word `wi` of `w` as `${p}v0…` and the expression of stitched
 * word j: a block field 2 bytes past a word boundary when `${p}odd` (ggml's 2-byte-aligned blocks).
 */
export function stitched(
  p: string,
  w: string,
  wi: string,
  n: number,
): { loads: string; word: (j: number) => string } {
  const loads = Array.from({ length: n + 1 }, (_, j) => `let ${p}v${j} = ${w}[${wi} + ${j}u];`).join('\n');
  return { loads, word: (j) => `select(${p}v${j}, (${p}v${j} >> 16u) | (${p}v${j + 1} << 16u), ${p}odd)` };
}
