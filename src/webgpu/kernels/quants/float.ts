/**
 * F32, F16 and BF16: one weight per element, no blocks.
 *
 * Layout: F32 4 bytes; F16 (IEEE half) and BF16 (the top 16 bits of an f32) 2 bytes, two to a u32 word
 * (element 2k in the low half). F16 is read with `unpack2x16float` (no shader-f16 needed), BF16 by
 * shifting into f32 bits.
 *
 * No planes, no integer-dot path.
 *
 * Used by: loader.ts `wgslLoader` (`ld_<n>` only: float weights have no `dq32_`; matmul.ts's general
 * kernels, mmm.ts's float tile, embed, norms); mmv.ts `chunkDot` ({@link chunkDot}, F32 bound as
 * `array<vec4<f32>>`, F16/BF16 as `array<vec4<u32>>`).
 */
import type { BlockDecoder, ChunkCtx } from './shared.ts';

/** mmv chunk dot of F32: 8 vec4 of weights. */
function chunkDotF32({ w, K, p, X, sum }: ChunkCtx): string {
  const loads = Array.from({ length: 8 }, (_, j) => `let ${p}w${j} = ${w}[${p}b + ${j}u];`).join(' ');
  return `let ${p}b = row * ${K / 4}u + c * 8u; ${loads}
${sum((tt) => Array.from({ length: 8 }, (_, j) => `dot(${p}w${j}, ${X(tt, j)})`).join(' + '))}`;
}

/** mmv chunk dot of F16 or (`bf`) BF16: 4 vec4<u32> of 8 halves each. */
function chunkDot16({ w, K, p, X, sum }: ChunkCtx, bf: boolean): string {
  const cvt = (v: string) =>
    !bf
      ? `vec4<f32>(unpack2x16float(${v}.x), unpack2x16float(${v}.y))`
      : `bitcast<vec4<f32>>(vec4<u32>(${v}.x << 16u, ${v}.x & 0xffff0000u, ${v}.y << 16u, ${v}.y & 0xffff0000u))`;
  const cvt2 = (v: string) =>
    !bf
      ? `vec4<f32>(unpack2x16float(${v}.z), unpack2x16float(${v}.w))`
      : `bitcast<vec4<f32>>(vec4<u32>(${v}.z << 16u, ${v}.z & 0xffff0000u, ${v}.w << 16u, ${v}.w & 0xffff0000u))`;
  const lines = [`let ${p}b = row * ${K / 8}u + c * 4u;`];
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}q${j} = ${w}[${p}b + ${j}u]; let ${p}w${2 * j} = ${cvt(`${p}q${j}`)}; let ${p}w${2 * j + 1} = ${cvt2(`${p}q${j}`)};`,
    );
  }
  lines.push(sum((tt) => Array.from({ length: 8 }, (_, j) => `dot(${p}w${j}, ${X(tt, j)})`).join(' + ')));
  return lines.join('\n');
}

export const F32: BlockDecoder = {
  loader: (n) => `fn ld_${n}(i: u32) -> f32 { return ${n}[i]; }`,
  bindingType: 'array<vec4<f32>>',
  needsXsum: false,
  needsXhalf: false,
  chunkDot: chunkDotF32,
};

export const F16: BlockDecoder = {
  loader: (n) =>
    `fn ld_${n}(i: u32) -> f32 { let p = unpack2x16float(${n}[i >> 1u]); return select(p.x, p.y, (i & 1u) == 1u); }`,
  bindingType: 'array<vec4<u32>>',
  needsXsum: false,
  needsXhalf: false,
  chunkDot: (c) => chunkDot16(c, false),
};

export const BF16: BlockDecoder = {
  loader: (n) =>
    `fn ld_${n}(i: u32) -> f32 { return bitcast<f32>(((${n}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu) << 16u); }`,
  bindingType: 'array<vec4<u32>>',
  needsXsum: false,
  needsXhalf: false,
  chunkDot: (c) => chunkDot16(c, true),
};
