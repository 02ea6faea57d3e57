/**
 * Q8_0: 32 weights in 34 bytes (ggml-common.h `block_q8_0`); 2 bytes past a word boundary for even blocks'
 * quants.
 *
 * ggml's block: bytes 0–1 f16 d, bytes 2–33 qs[32] (int8).
 *
 * Planes of n blocks (repack.ts, the raw sizes): qs [n × 32] at 0, d [n × 2] at 32n.
 *
 * Dequantization (ggml-quants.c `dequantize_row_q8_0`): w = d·q. The float chunk dots read each int8 as
 * (q + 128) / 255 through `unpack4x8unorm` of the bytes with their sign bits flipped: Σq·x = 255·Σu·x − 128·Σx.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}, {@link planarLoader}); mmv.ts `chunkDot`
 * ({@link chunkDot}, {@link planarChunkDot}); mmv-int.ts `intChunkDot` (planes only:
 * {@link planarIntChunkDot}); mmm.ts's int8 tile ({@link intLoader}); repack.ts ({@link Q8_0}`.planes`).
 */
import {
  type BlockDecoder,
  byteReaders,
  type ChunkCtx,
  dqi32Head,
  type IntChunkCtx,
  planarD,
  planeByte,
  planeDFn,
  stitched,
  U8N,
  u8x4n,
} from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn ld_${n}(i: u32) -> f32 { let o = (i / 32u) * 34u; return f16_${n}(o) * i8_${n}(o + 2u + i % 32u); }
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 32u) * 34u;
  let d = f16_${n}(o);
  for (var j = 0u; j < 32u; j += 4u) {
    let q = rd32_${n}(o + 2u + j);
    (*out)[j] = d * f32(i32(q << 24u) >> 24u); (*out)[j + 1u] = d * f32(i32(q << 16u) >> 24u);
    (*out)[j + 2u] = d * f32(i32(q << 8u) >> 24u); (*out)[j + 3u] = d * f32(i32(q) >> 24u);
  }
}`;
}

/** loader.ts over the planes: `d_<n>(bi)` (mmm.ts's planar int8 loader uses it too), `ld_<n>`, `dq32_<n>`. */
function planarLoader(n: string, nB: number): string {
  return `${planeDFn(n, (32 * nB) / 4)}
fn ld_${n}(i: u32) -> f32 { let bi = i / 32u; return d_${n}(bi) * f32(i32(${planeByte(n, `bi * 32u + i % 32u`)} << 24u) >> 24u); }
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 32u;
  let d = d_${n}(bi);
  for (var j = 0u; j < 8u; j++) {
    let q = ${n}[bi * 8u + j];
    (*out)[4u * j] = d * f32(i32(q << 24u) >> 24u); (*out)[4u * j + 1u] = d * f32(i32(q << 16u) >> 24u);
    (*out)[4u * j + 2u] = d * f32(i32(q << 8u) >> 24u); (*out)[4u * j + 3u] = d * f32(i32(q) >> 24u);
  }
}`;
}

/** mmv float chunk dot over ggml's blocks: the 32 int8 start at byte 34·bi + 2, 4-byte aligned for odd bi. */
function chunkDot({ w, K, p, X, XS, sum }: ChunkCtx): string {
  const lines = [
    `let ${p}bi = row * ${K / 32}u + c; let ${p}o = ${p}bi * 34u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
    `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
  ];
  const q = stitched(p, w, `${p}wi`, 8);
  lines.push(q.loads);
  for (let j = 0; j < 8; j++) lines.push(`let ${p}f${j} = ${u8x4n(`${q.word(j)} ^ 0x80808080u`)};`);
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${U8N} * (${Array.from({ length: 8 }, (_, j) => `dot(${p}f${j}, ${X(tt, j)})`).join(' + ')}) - 128.0 * ${XS(tt)})`,
    ),
  );
  return lines.join('\n');
}

/** The planar chunk's 32 int8 as two vec4 `qa`, `qb` (float and integer chunk dots). */
const planarQuants = (w: string, K: number, p: string) =>
  `let ${p}bi = row * ${K / 32}u + c; let ${p}qa = ${w}[2u * ${p}bi]; let ${p}qb = ${w}[2u * ${p}bi + 1u];`;

const WORDS = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'];

/** mmv float chunk dot over the planes, as the raw one. */
function planarChunkDot({ w, K, p, X, XS, sum }: ChunkCtx, nB: number): string {
  const lines = [planarQuants(w, K, p), planarD(w, p, `${32 * nB}u + 2u * ${p}bi`, '\n')];
  WORDS.forEach((wd, j) => {
    lines.push(`let ${p}f${j} = ${u8x4n(`${p}${wd} ^ 0x80808080u`)};`);
  });
  lines.push(
    sum(
      (tt) =>
        `${p}d * (${U8N} * (${WORDS.map((_, j) => `dot(${p}f${j}, ${X(tt, j)})`).join(' + ')}) - 128.0 * ${XS(tt)})`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk over the planes: d·dx·Σq·qx. */
function planarIntChunkDot({ w, K, p, sum, dots }: IntChunkCtx, nB: number): string {
  const words = WORDS.map((x) => `${p}${x}`);
  return `${planarQuants(w, K, p)}
${planarD(w, p, `${32 * nB}u + 2u * ${p}bi`, ' ')}
${sum((tt) => `${p}d * dx${tt} * f32(${dots(words, tt)})`)}`;
}

/** mmm.ts's int8 loader: (d, d, 0, 0). */
function intLoader(n: string, nB?: number): string {
  return nB !== undefined
    ? `${dqi32Head(n)}
  let bi = i / 32u; let d = d_${n}(bi);
  for (var j = 0u; j < 8u; j++) { (*out)[j] = ${n}[bi * 8u + j]; }
  return vec4<f32>(d, d, 0.0, 0.0);
}`
    : `${dqi32Head(n)}
  let o = (i / 32u) * 34u; let d = f16_${n}(o);
  for (var j = 0u; j < 8u; j++) { (*out)[j] = rd32_${n}(o + 2u + 4u * j); }
  return vec4<f32>(d, d, 0.0, 0.0);
}`;
}

export const Q8_0: BlockDecoder = {
  loader,
  planarLoader,
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  chunkDot,
  planarChunkDot,
  planarIntChunkDot,
  intLoader,
  planes: { blockBytes: 34, fields: { fields: [{ name: 'qs', raw: 2, bytes: 32 }], dRaw: 0 } },
  // q ∈ [−128, 127]: σ ≈ 74.
  syntheticFill: { scales: [{ at: 0, holds: 'd' }], stdAtUnitD: 74 },
};
