/**
 * Q5_0: 32 weights in 22 bytes (ggml-common.h `block_q5_0`; llama.cpp's fallback in K-quant files for rows
 * not divisible by 256); 2 bytes past a word boundary for odd blocks.
 *
 * ggml's block: bytes 0–1 f16 d, bytes 2–5 u32 qh (bit j: weight j's fifth bit), bytes 6–21 qs[16] as
 * Q4_0's (byte i: weight i low, weight i + 16 high).
 *
 * Planes of n blocks (repack.ts, the raw sizes): qs [n × 16] at 0, qh [n × 4] at 16n, d [n × 2] at 20n.
 *
 * Dequantization (ggml-quants.c `dequantize_row_q5_0`): w = d·(q − 16), q = nibble | fifth bit << 4.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}; planes: quants/q4_0.ts `nibblePlanarLoader`);
 * mmv.ts `chunkDot` ({@link chunkDot}; planes: `nibblePlanarChunkDot`); mmm.ts's int8 tile
 * ({@link intLoader}); repack.ts ({@link Q5_0}`.planes`). No integer-dot mmv chunk.
 */
import { nibblePlanarChunkDot, nibblePlanarLoader } from './q4_0.ts';
import { type BlockDecoder, byteReaders, type ChunkCtx, dqi32Head, hi4, nib, u8x4 } from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 32u) * 22u;
  let j = i % 32u;
  let qh = rd32_${n}(o + 2u);
  let q = rd8_${n}(o + 6u + j % 16u);
  let lo = select(q & 0xfu, q >> 4u, j >= 16u);
  let hi = (qh >> j) & 1u;
  return f16_${n}(o) * (f32(lo | (hi << 4u)) - 16.0);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 32u) * 22u;
  let d = f16_${n}(o);
  let qh = rd32_${n}(o + 2u);
  for (var j = 0u; j < 16u; j += 4u) {
    let q = rd32_${n}(o + 6u + j);
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let k = j + b;
      (*out)[k] = d * (f32((v & 0xfu) | (((qh >> k) & 1u) << 4u)) - 16.0);
      (*out)[k + 16u] = d * (f32((v >> 4u) | (((qh >> (k + 16u)) & 1u) << 4u)) - 16.0);
    }
  }
}`;
}

/** mmv float chunk dot over ggml's blocks: d·(Σq·x − 16·Σx), the block's 6 words stitched for odd blocks. */
function chunkDot({ w, K, p, packed, X, XS, sum }: ChunkCtx): string {
  const lines = [
    `let ${p}bi = row * ${K / 32}u + c; let ${p}o = ${p}bi * 22u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
  ];
  for (let j = 0; j <= 5; j++) lines.push(`let ${p}v${j} = ${w}[${p}wi + ${j}u];`);
  lines.push(
    `let ${p}dw = unpack2x16float(${p}v0); let ${p}d = select(${p}dw.x, ${p}dw.y, ${p}odd);`,
    `let ${p}qh = select((${p}v0 >> 16u) | (${p}v1 << 16u), ${p}v1, ${p}odd);`,
  );
  for (let j = 0; j < 4; j++) {
    const hl = `vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${4 * j}u, ${4 * j + 1}u, ${4 * j + 2}u, ${4 * j + 3}u)) & vec4<u32>(1u))`;
    const hh = `vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${16 + 4 * j}u, ${17 + 4 * j}u, ${18 + 4 * j}u, ${19 + 4 * j}u)) & vec4<u32>(1u))`;
    lines.push(
      `let ${p}q${j} = select((${p}v${j + 1} >> 16u) | (${p}v${j + 2} << 16u), ${p}v${j + 2}, ${p}odd);`,
      `let ${p}lo${j} = ${u8x4(`${p}q${j} & 0x0f0f0f0fu`, packed)} + 16.0 * ${hl};`,
      `let ${p}hi${j} = ${u8x4(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`, packed)} + 16.0 * ${hh};`,
    );
  }
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')} - 16.0 * ${XS(tt)})`,
    ),
  );
  return lines.join('\n');
}

/** mmm.ts's int8 loader: (d, d, −16·d, −16·d); `q5h_<n>` spreads 4 bits of qh to bit 4 of bytes 0–3. */
function intLoader(n: string, nB?: number): string {
  const word =
    nB !== undefined ? (j: string) => `${n}[bi * 4u + ${j}]` : (j: string) => `rd32_${n}(o + 6u + 4u * ${j})`;
  const qh = nB !== undefined ? `${n}[${(16 * nB) / 4}u + bi]` : `rd32_${n}(o + 2u)`;
  return `fn q5h_${n}(h: u32) -> u32 { return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u; }
${dqi32Head(n)}
  let bi = i / 32u; let o = bi * 22u; let d = ${nB !== undefined ? `d_${n}(bi)` : `f16_${n}(o)`}; let qh = ${qh};
  for (var j = 0u; j < 4u; j++) {
    let q = ${word('j')};
    (*out)[j] = (${nib('q')}) | q5h_${n}(qh >> (4u * j));
    (*out)[j + 4u] = (${hi4('q')}) | q5h_${n}(qh >> (16u + 4u * j));
  }
  return vec4<f32>(d, d, -16.0 * d, -16.0 * d);
}`;
}

export const Q5_0: BlockDecoder = {
  loader,
  planarLoader: (n, nB) => nibblePlanarLoader(n, nB, true),
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  chunkDot,
  planarChunkDot: (c, nB) => nibblePlanarChunkDot(c, nB, true),
  intLoader,
  planes: {
    blockBytes: 22,
    fields: {
      fields: [
        { name: 'qs', raw: 6, bytes: 16 },
        { name: 'qh', raw: 2, bytes: 4 },
      ],
      dRaw: 0,
    },
  },
  // q − 16 ∈ [−16, 15]: σ ≈ 9.2.
  syntheticFill: { scales: [{ at: 0, holds: 'd' }], stdAtUnitD: 9.2 },
};
