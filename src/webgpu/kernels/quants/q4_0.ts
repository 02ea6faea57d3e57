/**
 * Q4_0: 32 weights in 18 bytes (ggml-common.h `block_q4_0`); 2 bytes past a word boundary for odd blocks.
 *
 * ggml's block: bytes 0–1 f16 d, bytes 2–17 qs[16]: byte i's low nibble is weight i, its high nibble
 * weight i + 16.
 *
 * Planes of n blocks (repack.ts, the raw sizes): qs [n × 16] at 0, d [n × 2] at 16n.
 *
 * Dequantization (ggml-quants.c `dequantize_row_q4_0`): w = d·(q − 8); the float chunk dots apply the
 * −8 once per chunk as −8·d·Σx.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}, {@link planarLoader}); mmv.ts `chunkDot`
 * ({@link chunkDot}, {@link planarChunkDot}); mmv-int.ts `intChunkDot` (planes only:
 * {@link planarIntChunkDot}); mmm.ts's int8 tile ({@link intLoader}); repack.ts ({@link Q4_0}`.planes`).
 * Q5_0 (quants/q5_0.ts), whose planes are Q4_0's plus a plane of fifth bits, shares the planar loader and
 * float chunk dot ({@link nibblePlanarLoader}, {@link nibblePlanarChunkDot}).
 */
import {
  type BlockDecoder,
  byteReaders,
  C4,
  type ChunkCtx,
  dqi32Head,
  hi4,
  type IntChunkCtx,
  nib,
  planarD,
  planarNibbleWords,
  planeByte,
  planeDFn,
  stitched,
  U8N,
  u8x4,
  u8x4n,
} from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 32u) * 18u;
  let j = i % 32u;
  let q = rd8_${n}(o + 2u + j % 16u);
  return f16_${n}(o) * (f32(select(q & 0xfu, q >> 4u, j >= 16u)) - 8.0);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 32u) * 18u;
  let d = f16_${n}(o);
  for (var j = 0u; j < 16u; j += 4u) {
    let q = rd32_${n}(o + 2u + j);
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[j + b] = d * (f32(v & 0xfu) - 8.0);
      (*out)[j + b + 16u] = d * (f32(v >> 4u) - 8.0);
    }
  }
}`;
}

/**
 * loader.ts over Q4_0's or (`q5`) Q5_0's planes: `d_<n>(bi)` (mmm.ts's planar int8 loaders use it too),
 * `ld_<n>`, `dq32_<n>`; Q5_0 adds the fifth bit from its qh plane at 16n and takes 16 off instead of 8.
 */
export function nibblePlanarLoader(n: string, nB: number, q5: boolean): string {
  const qh = q5 ? `let qh = ${n}[${(16 * nB) / 4}u + bi];` : '';
  const hi = (k: string) => (q5 ? ` | (((qh >> (${k})) & 1u) << 4u)` : '');
  const off = q5 ? '16.0' : '8.0';
  return `${planeDFn(n, ((q5 ? 20 : 16) * nB) / 4)}
fn ld_${n}(i: u32) -> f32 {
  let bi = i / 32u; let j = i % 32u; ${qh}
  let q = ${planeByte(n, `bi * 16u + j % 16u`)};
  return d_${n}(bi) * (f32(select(q & 0xfu, q >> 4u, j >= 16u)${hi('j')}) - ${off});
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 32u;
  let d = d_${n}(bi); ${qh}
  for (var j = 0u; j < 4u; j++) {
    let q = ${n}[bi * 4u + j];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let k = 4u * j + b;
      (*out)[k] = d * (f32((v & 0xfu)${hi('k')}) - ${off});
      (*out)[k + 16u] = d * (f32((v >> 4u)${hi('k + 16u')}) - ${off});
    }
  }
}`;
}

/** mmv float chunk dot over ggml's blocks: d·(Σq·x − 8·Σx), the nibbles stitched across words for odd blocks. */
function chunkDot({ w, K, p, X, XS, sum }: ChunkCtx): string {
  const lines = [
    `let ${p}bi = row * ${K / 32}u + c; let ${p}o = ${p}bi * 18u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
    `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
  ];
  const q = stitched(p, w, `${p}wi`, 4);
  lines.push(q.loads);
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}q${j} = ${q.word(j)}; let ${p}lo${j} = ${u8x4n(`${p}q${j} & 0x0f0f0f0fu`)}; let ${p}hi${j} = ${u8x4n(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`)};`,
    );
  }
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${U8N} * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')}) - 8.0 * ${XS(tt)})`,
    ),
  );
  return lines.join('\n');
}

/**
 * mmv float chunk dot over Q4_0's or (`q5`) Q5_0's planes: the chunk's 16 bytes as one vec4 `q`, its d,
 * [Q5_0: its qh word]. Q4_0 unpacks with u8x4n (×1/255, undone once per chunk); Q5_0 adds its fifth bits
 * to whole values.
 */
export function nibblePlanarChunkDot(
  { w, K, p, packed, X, XS, sum }: ChunkCtx,
  nB: number,
  q5: boolean,
): string {
  const lines = [
    `let ${p}bi = row * ${K / 32}u + c; let ${p}q = ${w}[${p}bi];`,
    planarD(w, p, `${(q5 ? 20 : 16) * nB}u + 2u * ${p}bi`, '\n'),
  ];
  if (q5) lines.push(`let ${p}qh = ${w}[${nB}u + (${p}bi >> 2u)][${p}bi & 3u];`);
  const un = (v: string) => (q5 ? u8x4(v, packed) : u8x4n(v));
  for (let j = 0; j < 4; j++) {
    const bits = (from: number) =>
      q5
        ? ` + 16.0 * vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${from}u, ${from + 1}u, ${from + 2}u, ${from + 3}u)) & vec4<u32>(1u))`
        : '';
    lines.push(
      `let ${p}lo${j} = ${un(`${p}q.${C4[j]} & 0x0f0f0f0fu`)}${bits(4 * j)};`,
      `let ${p}hi${j} = ${un(`(${p}q.${C4[j]} >> 4u) & 0x0f0f0f0fu`)}${bits(16 + 4 * j)};`,
    );
  }
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${q5 ? '' : `${U8N} * `}(${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')}) - ${q5 ? '16.0' : '8.0'} * ${XS(tt)})`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk over the planes: d·dx·(Σq·qx − 8·Σqx). */
function planarIntChunkDot({ w, K, p, sum, dots }: IntChunkCtx, nB: number): string {
  const { lo, hi } = planarNibbleWords(p);
  return `let ${p}bi = row * ${K / 32}u + c; let ${p}q = ${w}[${p}bi];
${planarD(w, p, `${16 * nB}u + 2u * ${p}bi`, ' ')}
${sum((tt) => `${p}d * dx${tt} * f32(${dots(lo, tt)} + ${dots(hi, tt, 4)} - 8 * (qlo${tt} + qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (d, d, −8·d, −8·d). */
function intLoader(n: string, nB?: number): string {
  const word =
    nB !== undefined ? (j: string) => `${n}[bi * 4u + ${j}]` : (j: string) => `rd32_${n}(o + 2u + 4u * ${j})`;
  return `${dqi32Head(n)}
  let bi = i / 32u; let o = bi * 18u; let d = ${nB !== undefined ? `d_${n}(bi)` : `f16_${n}(o)`};
  for (var j = 0u; j < 4u; j++) { let q = ${word('j')}; (*out)[j] = ${nib('q')}; (*out)[j + 4u] = ${hi4('q')}; }
  return vec4<f32>(d, d, -8.0 * d, -8.0 * d);
}`;
}

export const Q4_0: BlockDecoder = {
  loader,
  planarLoader: (n, nB) => nibblePlanarLoader(n, nB, false),
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  chunkDot,
  planarChunkDot: (c, nB) => nibblePlanarChunkDot(c, nB, false),
  planarIntChunkDot,
  intLoader,
  planes: { blockBytes: 18, fields: { fields: [{ name: 'qs', raw: 2, bytes: 16 }], dRaw: 0 } },
  // q − 8 ∈ [−8, 7]: σ ≈ 4.6.
  syntheticFill: { scales: [{ at: 0, holds: 'd' }], stdAtUnitD: 4.6 },
};
