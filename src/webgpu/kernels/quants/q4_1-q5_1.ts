/**
 * Q4_1 and Q5_1: 32 weights in 20 / 24 bytes (ggml-common.h `block_q4_1`, `block_q5_1`); 4-byte aligned.
 *
 * ggml's blocks: word 0 = f16 d | f16 m, [Q5_1: word 1 = u32 qh, bit j: weight j's fifth bit], then 4
 * words of nibbles as Q4_0's (byte i: weight i low, weight i + 16 high).
 *
 * No planes (not repacked).
 *
 * Dequantization (ggml-quants.c `dequantize_row_q4_1`, `dequantize_row_q5_1`): w = d·q + m (Q5_1: q =
 * nibble | fifth bit << 4), so the float chunk dots take Σw·x = d·Σq·x + m·Σx.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}); mmv.ts `chunkDot` ({@link chunkDot}). No
 * integer-dot path.
 */
import { type BlockDecoder, type ChunkCtx, U8N, u8x4, u8x4n } from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` (`q5`: Q5_1). */
function loader(n: string, q5: boolean): string {
  const B = q5 ? 24 : 20;
  const qs = q5 ? 8 : 4;
  const hi = (k: string) => (q5 ? ` | (((qh >> (${k})) & 1u) << 4u)` : '');
  const qh = q5 ? `let qh = ${n}[o / 4u + 1u];` : '';
  return `fn ld_${n}(i: u32) -> f32 {
  let o = (i / 32u) * ${B}u;
  let j = i % 32u; ${qh}
  let dm = unpack2x16float(${n}[o / 4u]);
  let q = (${n}[(o + ${qs}u) / 4u + (j % 16u) / 4u] >> ((j % 4u) * 8u)) & 0xffu;
  return dm.x * f32(select(q & 0xfu, q >> 4u, j >= 16u)${hi('j')}) + dm.y;
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 32u) * ${B}u; ${qh}
  let dm = unpack2x16float(${n}[o / 4u]);
  for (var j = 0u; j < 4u; j++) {
    let q = ${n}[(o + ${qs}u) / 4u + j];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let k = 4u * j + b;
      (*out)[k] = dm.x * f32((v & 0xfu)${hi('k')}) + dm.y;
      (*out)[k + 16u] = dm.x * f32((v >> 4u)${hi('k + 16u')}) + dm.y;
    }
  }
}`;
}

/** mmv float chunk dot (`q5`: Q5_1, its fifth bits added to whole values; Q4_1 unpacks with u8x4n). */
function chunkDot({ w, K, p, packed, X, XS, sum }: ChunkCtx, q5: boolean): string {
  const lines = [
    `let ${p}wi = (row * ${K / 32}u + c) * ${q5 ? 6 : 5}u; let ${p}dm = unpack2x16float(${w}[${p}wi]);`,
  ];
  if (q5) lines.push(`let ${p}qh = ${w}[${p}wi + 1u];`);
  const un = (v: string) => (q5 ? u8x4(v, packed) : u8x4n(v));
  const bits = (from: number) =>
    q5
      ? ` + 16.0 * vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${from}u, ${from + 1}u, ${from + 2}u, ${from + 3}u)) & vec4<u32>(1u))`
      : '';
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}q${j} = ${w}[${p}wi + ${(q5 ? 2 : 1) + j}u];`,
      `let ${p}lo${j} = ${un(`${p}q${j} & 0x0f0f0f0fu`)}${bits(4 * j)};`,
      `let ${p}hi${j} = ${un(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`)}${bits(16 + 4 * j)};`,
    );
  }
  lines.push(
    sum(
      (tt) =>
        `${p}dm.x * (${q5 ? '' : `${U8N} * `}(${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')})) + ${p}dm.y * ${XS(tt)}`,
    ),
  );
  return lines.join('\n');
}

export const Q4_1: BlockDecoder = {
  loader: (n) => loader(n, false),
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  chunkDot: (c) => chunkDot(c, false),
  // q ∈ [0, 15]: σ ≈ 4.6; m = −7.5·d centres it.
  syntheticFill: {
    scales: [
      { at: 0, holds: 'd' },
      { at: 2, holds: 'min' },
    ],
    stdAtUnitD: 4.6,
    minPerD: -7.5,
  },
};

export const Q5_1: BlockDecoder = {
  loader: (n) => loader(n, true),
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  chunkDot: (c) => chunkDot(c, true),
  // q ∈ [0, 31]: σ ≈ 9.2; m = −15.5·d centres it.
  syntheticFill: {
    scales: [
      { at: 0, holds: 'd' },
      { at: 2, holds: 'min' },
    ],
    stdAtUnitD: 9.2,
    minPerD: -15.5,
  },
};
