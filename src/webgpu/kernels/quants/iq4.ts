/**
 * IQ4_NL and IQ4_XS: 4-bit indices into ggml-common.h's non-linear grid `kvalues_iq4nl` (16 levels).
 *
 * ggml's blocks:
 * - IQ4_NL (`block_iq4_nl`): 32 weights in 18 bytes as Q4_0's (bytes 0–1 f16 d, bytes 2–17 qs[16]: byte i
 *   weight i low, i + 16 high); 2 bytes past a word boundary for odd blocks.
 * - IQ4_XS (`block_iq4_xs`): 256 weights in 136 bytes (8-byte aligned, 34 words): word 0 = f16 d | u16
 *   scales_h, word 1 = scales_l[4], then 8 sub-blocks of 16 bytes (4 words) of nibbles as IQ4_NL; sub-block
 *   s's 6-bit scale ls = (scales_l nibble s) | (scales_h bits 2s, 2s + 1) << 4.
 *
 * No planes (not repacked).
 *
 * Dequantization (ggml-quants.c `dequantize_row_iq4_nl`, `dequantize_row_iq4_xs`): w = d·kvalues[q]
 * (IQ4_XS: d·(ls − 32)·kvalues[q]).
 *
 * Used by: loader.ts `wgslLoader` ({@link loaderNL}, {@link loaderXS}); mmv.ts `chunkDot`
 * ({@link chunkDot}; the grid as mmv.ts's `KVIQ4`, {@link iq4KvaluesWgsl}). No integer-dot path.
 */
import { type BlockDecoder, byteReaders, type ChunkCtx, stitched } from './shared.ts';

/** ggml-common.h's `kvalues_iq4nl` as a WGSL `const` f32 array called `name`. */
export function iq4KvaluesWgsl(name: string): string {
  return `const ${name} = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);`;
}

/** loader.ts: IQ4_NL's `ld_<n>` and `dq32_<n>`. */
function loaderNL(n: string): string {
  return `${byteReaders(n)}
${iq4KvaluesWgsl(`kv_${n}`)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 32u) * 18u;
  let j = i % 32u;
  let q = rd8_${n}(o + 2u + j % 16u);
  return f16_${n}(o) * kv_${n}[select(q & 0xfu, q >> 4u, j >= 16u)];
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 32u) * 18u;
  let d = f16_${n}(o);
  for (var j = 0u; j < 16u; j += 4u) {
    let q = rd32_${n}(o + 2u + j);
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[j + b] = d * kv_${n}[v & 0xfu];
      (*out)[j + b + 16u] = d * kv_${n}[v >> 4u];
    }
  }
}`;
}

/** loader.ts: IQ4_XS's `dl_<n>(bw, s)` (sub-block s's d·(ls − 32)), `ld_<n>` and `dq32_<n>`. */
function loaderXS(n: string): string {
  return `${iq4KvaluesWgsl(`kv_${n}`)}
fn dl_${n}(bw: u32, s: u32) -> f32 {
  let h = ${n}[bw];
  let ls = ((${n}[bw + 1u] >> (4u * s)) & 0xfu) | (((h >> (16u + 2u * s)) & 3u) << 4u);
  return unpack2x16float(h).x * f32(i32(ls) - 32);
}
fn ld_${n}(i: u32) -> f32 {
  let bw = (i / 256u) * 34u;
  let r = i % 256u;
  let s = r / 32u;
  let j = r % 32u;
  let q = (${n}[bw + 2u + s * 4u + (j % 16u) / 4u] >> ((j % 4u) * 8u)) & 0xffu;
  return dl_${n}(bw, s) * kv_${n}[select(q & 0xfu, q >> 4u, j >= 16u)];
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let bw = (i / 256u) * 34u;
  let s = (i % 256u) / 32u;
  let dl = dl_${n}(bw, s);
  for (var j = 0u; j < 4u; j++) {
    let q = ${n}[bw + 2u + s * 4u + j];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[4u * j + b] = dl * kv_${n}[v & 0xfu];
      (*out)[4u * j + b + 16u] = dl * kv_${n}[v >> 4u];
    }
  }
}`;
}

/**
 * mmv float chunk dot (`xs`: IQ4_XS): the chunk's scale `d` and its 4 words of nibbles (IQ4_NL's stitched
 * across words for odd blocks), each nibble looked up in `KVIQ4`.
 */
function chunkDot({ w, K, p, X, sum }: ChunkCtx, xs: boolean): string {
  const lines: string[] = [];
  let word: (j: number) => string;
  if (!xs) {
    lines.push(
      `let ${p}bi = row * ${K / 32}u + c; let ${p}o = ${p}bi * 18u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
      `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
    );
    const q = stitched(p, w, `${p}wi`, 4);
    lines.push(q.loads);
    word = q.word;
  } else {
    lines.push(
      `let ${p}bw = (row * ${K / 256}u + c / 8u) * 34u; let ${p}s = c % 8u; let ${p}h = ${w}[${p}bw];`,
      `let ${p}ls = ((${w}[${p}bw + 1u] >> (4u * ${p}s)) & 0xfu) | (((${p}h >> (16u + 2u * ${p}s)) & 3u) << 4u);`,
      `let ${p}d = unpack2x16float(${p}h).x * f32(i32(${p}ls) - 32);`,
    );
    for (let j = 0; j < 4; j++) lines.push(`let ${p}v${j} = ${w}[${p}bw + 2u + 4u * ${p}s + ${j}u];`);
    word = (j) => `${p}v${j}`;
  }
  const kv = (v: string, sh: number[]) =>
    `vec4<f32>(${sh.map((s) => `KVIQ4[(${v} >> ${s}u) & 0xfu]`).join(', ')})`;
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}q${j} = ${word(j)}; let ${p}lo${j} = ${kv(`${p}q${j}`, [0, 8, 16, 24])}; let ${p}hi${j} = ${kv(`${p}q${j}`, [4, 12, 20, 28])};`,
    );
  }
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')})`,
    ),
  );
  return lines.join('\n');
}

/** mmv.ts's one copy of the grid for every IQ4 weight of a kernel. */
const KVIQ4 = iq4KvaluesWgsl('KVIQ4');

export const IQ4_NL: BlockDecoder = {
  loader: loaderNL,
  bindingType: 'array<u32>',
  needsXsum: false,
  needsXhalf: false,
  mmvPrelude: KVIQ4,
  chunkDot: (c) => chunkDot(c, false),
  // kvalues_iq4nl[q]: σ ≈ 66.
  syntheticFill: { scales: [{ at: 0, holds: 'd' }], stdAtUnitD: 66 },
};

export const IQ4_XS: BlockDecoder = {
  loader: loaderXS,
  bindingType: 'array<u32>',
  needsXsum: false,
  needsXhalf: false,
  mmvPrelude: KVIQ4,
  chunkDot: (c) => chunkDot(c, true),
  // (ls − 32)·kvalues_iq4nl[q]: σ ≈ 1220.
  syntheticFill: { scales: [{ at: 0, holds: 'd' }], stdAtUnitD: 1220 },
};
