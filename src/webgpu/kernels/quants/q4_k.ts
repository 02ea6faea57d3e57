/**
 * Q4_K: 256 weights in 144 bytes (ggml-common.h `block_q4_K`), 8 sub-blocks of 32.
 *
 * ggml's block (16-byte aligned, 9 × vec4<u32>):
 * - bytes 0–3: f16 d, f16 dmin
 * - bytes 4–15: scales[12], sub-block j's 6-bit scale sc and min m (ggml-quants.c `get_scale_min_k4`):
 *   j < 4: sc = scales[j] & 63, m = scales[j + 4] & 63; j ≥ 4: sc = (scales[j + 4] & 0xf) |
 *   ((scales[j − 4] >> 6) << 4), m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)
 * - bytes 16–143: qs[128], sub-blocks 2p and 2p + 1 the low and high nibbles of bytes 16 + 32p … + 31
 *
 * Planes of n blocks (repack.ts, 148 bytes per block, the numbers unchanged): qs [n × 8 × 16] at 0
 * (sub-block j of block b at 128b + 16j, Q4_0's nibble order: byte i holds weight i low and i + 16 high),
 * scale/min bytes [n × 8 × 2] at 128n (sub-block j: sc at 128n + 16b + 2j, m after it), (d, dmin)
 * [n × 4] at 144n.
 *
 * Dequantization (ggml-quants.c `dequantize_row_q4_K`): w = d·sc·q − dmin·m, q the 4-bit quant.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}, {@link planarLoader}: matmul.ts's general kernels,
 * mmm.ts's float tile, embed, norms); mmv.ts `chunkDot` ({@link chunkDot}, {@link planarChunkDot});
 * mmv-int.ts `intChunkDot` ({@link intChunkDot}, {@link planarIntChunkDot}); mmm.ts's int8 tile
 * ({@link intLoader}); repack.ts ({@link planes}). Q5_K shares the header's readers
 * ({@link q4kScaleMin}, {@link Q4K_SCALE_MIN}).
 */
import { scaleMinK4 } from '../../../gguf/quant-k.ts';
import {
  type BlockDecoder,
  byteReaders,
  C4,
  type ChunkCtx,
  dqi32Head,
  hi4,
  type IntChunkCtx,
  nib,
  planarNibbleWords,
  planeByte,
  U8N,
  u8x4n,
} from './shared.ts';

/**
 * ggml-quants.c `get_scale_min_k4` as WGSL, written once for every reader of the 12 scale bytes: the
 * 6-bit scale and min of sub-block `j` (a u32 expression), `lo` for j < 4, `hi` for j ≥ 4, over `b(k)`,
 * a u32 expression of scale byte k. j < 4: sc = b(j) & 63, m = b(j + 4) & 63; j ≥ 4: the low 4 bits
 * from b(j + 4) (sc the low nibble, m the high), the top 2 from b(j − 4) (sc) and b(j) (m).
 */
export function scaleMinWGSL(
  b: (k: string) => string,
  j: string,
): { lo: [string, string]; hi: [string, string] } {
  return {
    lo: [`${b(j)} & 63u`, `${b(`${j} + 4u`)} & 63u`],
    hi: [
      `(${b(`${j} + 4u`)} & 0xfu) | ((${b(`${j} - 4u`)} >> 6u) << 4u)`,
      `(${b(`${j} + 4u`)} >> 4u) | ((${b(j)} >> 6u) << 4u)`,
    ],
  };
}

/** WGSL body returning `vec2<f32>(sc, m)` of sub-block `j` ({@link scaleMinWGSL}). */
function scaleMinBody(b: (k: string) => string): string {
  const { lo, hi } = scaleMinWGSL(b, 'j');
  return `  if (j < 4u) { return vec2<f32>(f32(${lo[0]}), f32(${lo[1]})); }
  return vec2<f32>(f32(${hi[0]}), f32(${hi[1]}));`;
}

/**
 * WGSL `scmin_<n>(o, j) -> vec2<f32>`: sub-block j's 6-bit scale and min ({@link scaleMinWGSL}), scales
 * at byte offset `o` of the raw binding `n` (loader.ts and mmm.ts over ggml's blocks; Q5_K too).
 */
export function q4kScaleMin(n: string): string {
  return `fn scmin_${n}(o: u32, j: u32) -> vec2<f32> {
${scaleMinBody((k) => `rd8_${n}(o + ${k})`)}
}`;
}

/**
 * WGSL `q4kScaleMin(h, j) -> vec2<f32>`: sub-block j's 6-bit scale and min ({@link scaleMinWGSL}) from
 * the block's first vec4, declared once by mmv.ts for Q4_K and Q5_K.
 */
export const Q4K_SCALE_MIN = `fn scByte(h: vec4<u32>, k: u32) -> u32 {
  let wd = select(select(h.w, h.z, k < 8u), h.y, k < 4u);
  return (wd >> ((k & 3u) * 8u)) & 0xffu;
}
fn q4kScaleMin(h: vec4<u32>, j: u32) -> vec2<f32> {
${scaleMinBody((k) => `scByte(h, ${k})`)}
}`;

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
${q4kScaleMin(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 256u) * 144u;
  let r = i % 256u;
  let s = r / 32u;
  let sm = scmin_${n}(o + 4u, s);
  let q = rd8_${n}(o + 16u + (s / 2u) * 32u + r % 32u);
  let nib = select(q & 0xfu, q >> 4u, (s & 1u) == 1u);
  return f16_${n}(o) * sm.x * f32(nib) - f16_${n}(o + 2u) * sm.y;
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 256u) * 144u;
  let s = (i % 256u) / 32u;
  let sm = scmin_${n}(o + 4u, s);
  let d = f16_${n}(o) * sm.x;
  let m = f16_${n}(o + 2u) * sm.y;
  let qb = o + 16u + (s / 2u) * 32u;
  let sh = (s & 1u) * 4u;
  for (var l = 0u; l < 32u; l += 4u) {
    let q = rd32_${n}(qb + l) >> sh;
    (*out)[l] = d * f32(q & 0xfu) - m; (*out)[l + 1u] = d * f32((q >> 8u) & 0xfu) - m;
    (*out)[l + 2u] = d * f32((q >> 16u) & 0xfu) - m; (*out)[l + 3u] = d * f32((q >> 24u) & 0xfu) - m;
  }
}`;
}

/**
 * loader.ts over the planes: `q4kp_<n>(bi, j)` = (d·sc, dmin·m) of sub-block j of block bi (mmm.ts's
 * planar int8 loader uses it too), `ld_<n>`, `dq32_<n>`.
 */
function planarLoader(n: string, nB: number): string {
  return `fn q4kp_${n}(bi: u32, j: u32) -> vec2<f32> {
  let smw = ${n}[${32 * nB}u + bi * 4u + j / 2u] >> ((j & 1u) * 16u);
  let dm = unpack2x16float(${n}[${36 * nB}u + bi]);
  return vec2<f32>(dm.x * f32(smw & 0xffu), dm.y * f32((smw >> 8u) & 0xffu));
}
fn ld_${n}(i: u32) -> f32 {
  let bi = i / 256u; let r = i % 256u; let j = r / 32u; let l = r % 32u;
  let s = q4kp_${n}(bi, j);
  let q = ${planeByte(n, `bi * 128u + j * 16u + l % 16u`)};
  return s.x * f32(select(q & 0xfu, q >> 4u, l >= 16u)) - s.y;
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 256u;
  let j = (i % 256u) / 32u;
  let s = q4kp_${n}(bi, j);
  for (var w = 0u; w < 4u; w++) {
    let q = ${n}[bi * 32u + j * 4u + w];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[4u * w + b] = s.x * f32(v & 0xfu) - s.y;
      (*out)[4u * w + b + 16u] = s.x * f32(v >> 4u) - s.y;
    }
  }
}`;
}

/**
 * The mmv chunk header over ggml's blocks (float and integer chunk dots): block `bi`, sub-block `j`, the
 * header vec4 `h`, `ds` = d·sc, `mm` = dmin·m, the nibble shift `sh` and the sub-block's 32 bytes `qa`,
 * `qb` (two vec4; sub-blocks j and j + 1 share them, low and high nibbles).
 */
function rawChunkHeader(w: string, K: number, p: string): string {
  return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}h = ${w}[${p}bi * 9u];
let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);
let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;
let ${p}qa = ${w}[${p}bi * 9u + 1u + (${p}j / 2u) * 2u]; let ${p}qb = ${w}[${p}bi * 9u + 2u + (${p}j / 2u) * 2u];`;
}

/**
 * The mmv chunk header over the planes (float and integer chunk dots): block `bi`, sub-block `j`, its 16
 * bytes of nibbles `q` (one vec4), its scale and min bytes `smw`, `ds` = d·sc, `mm` = dmin·m.
 */
function planarChunkHeader(w: string, K: number, p: string, nB: number): string {
  return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}q = ${w}[${p}bi * 8u + ${p}j];
let ${p}smw = ${w}[${8 * nB}u + ${p}bi][${p}j / 2u] >> ((${p}j & 1u) * 16u);
let ${p}dm = unpack2x16float(${w}[${9 * nB}u + (${p}bi >> 2u)][${p}bi & 3u]);
let ${p}ds = ${p}dm.x * f32(${p}smw & 0xffu); let ${p}mm = ${p}dm.y * f32((${p}smw >> 8u) & 0xffu);`;
}

const RAW_WORDS = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'];

/** mmv float chunk dot over ggml's blocks: ds·Σq·x − mm·Σx. */
function chunkDot({ w, K, p, X, XS, sum }: ChunkCtx): string {
  const lines = [rawChunkHeader(w, K, p)];
  RAW_WORDS.forEach((wd, k) => {
    lines.push(`let ${p}f${k} = ${u8x4n(`(${p}${wd} >> ${p}sh) & 0x0f0f0f0fu`)};`);
  });
  lines.push(
    sum(
      (tt) =>
        `${p}ds * (${U8N} * (${RAW_WORDS.map((_, k) => `dot(${p}f${k}, ${X(tt, k)})`).join(' + ')})) - ${p}mm * ${XS(tt)}`,
    ),
  );
  return lines.join('\n');
}

/** mmv float chunk dot over the planes, summed in the raw layout's order (the same f32 results). */
function planarChunkDot({ w, K, p, X, XS, sum }: ChunkCtx, nB: number): string {
  const lines = [planarChunkHeader(w, K, p, nB)];
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}lo${j} = ${u8x4n(`${p}q.${C4[j]} & 0x0f0f0f0fu`)}; let ${p}hi${j} = ${u8x4n(`(${p}q.${C4[j]} >> 4u) & 0x0f0f0f0fu`)};`,
    );
  }
  const terms = (tt: number) =>
    [0, 1, 2, 3]
      .map((j) => `dot(${p}lo${j}, ${X(tt, j)})`)
      .concat([0, 1, 2, 3].map((j) => `dot(${p}hi${j}, ${X(tt, j + 4)})`));
  lines.push(sum((tt) => `${p}ds * (${U8N} * (${terms(tt).join(' + ')})) - ${p}mm * ${XS(tt)}`));
  return lines.join('\n');
}

/** mmv integer-dot chunk over ggml's blocks: dx·(ds·Σq·qx − mm·Σqx). */
function intChunkDot({ w, K, p, sum, dots }: IntChunkCtx): string {
  const words = RAW_WORDS.map((x) => `((${p}${x} >> ${p}sh) & 0x0f0f0f0fu)`);
  return `${rawChunkHeader(w, K, p)}
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(words, tt)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
}

/** mmv integer-dot chunk over the planes. */
function planarIntChunkDot({ w, K, p, sum, dots }: IntChunkCtx, nB: number): string {
  const { lo, hi } = planarNibbleWords(p);
  return `${planarChunkHeader(w, K, p, nB)}
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(lo, tt)} + ${dots(hi, tt, 4)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (d·sc, d·sc, −dmin·m, −dmin·m). */
function intLoader(n: string, nB?: number): string {
  if (nB !== undefined)
    return `${dqi32Head(n)}
  let bi = i / 256u; let j = (i % 256u) / 32u; let s = q4kp_${n}(bi, j);
  for (var w = 0u; w < 4u; w++) { let q = ${n}[bi * 32u + j * 4u + w]; (*out)[w] = ${nib('q')}; (*out)[w + 4u] = ${hi4('q')}; }
  return vec4<f32>(s.x, s.x, -s.y, -s.y);
}`;
  return `${dqi32Head(n)}
  let o = (i / 256u) * 144u; let s = (i % 256u) / 32u; let sm = scmin_${n}(o + 4u, s);
  let d = f16_${n}(o) * sm.x; let m = f16_${n}(o + 2u) * sm.y;
  let qb = o + 16u + (s / 2u) * 32u; let sh = (s & 1u) * 4u;
  for (var j = 0u; j < 8u; j++) { (*out)[j] = ${nib(`rd32_${n}(qb + 4u * j) >> sh`)}; }
  return vec4<f32>(d, d, -m, -m);
}`;
}

/** repack.ts's kernel for Q4_K (see the header): one thread per block. */
/** The repack's scale-and-min expressions over its byte reader `sb(b, k)`. */
const REPACK_SM = scaleMinWGSL((k) => `sb(b, ${k})`, 'j');

const REPACK_WGSL = `struct Params { n: u32, p1: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
fn sb(b: u32, k: u32) -> u32 { return (src[b * 36u + 1u + k / 4u] >> ((k % 4u) * 8u)) & 0xffu; }
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = params.n;
  let b = gid.x + gid.y * nw.x * 64u;
  if (b >= n) { return; }
  let o = b * 36u; // the raw block's first word: d | dmin << 16, then 3 words of scales, then 32 of qs
  for (var j = 0u; j < 8u; j++) {
    let q = o + 4u + (j / 2u) * 8u;
    let sh = (j & 1u) * 4u;
    for (var i = 0u; i < 4u; i++) {
      dst[b * 32u + j * 4u + i] = ((src[q + i] >> sh) & 0x0f0f0f0fu) | (((src[q + 4u + i] >> sh) & 0x0f0f0f0fu) << 4u);
    }
  }
  var sm: array<u32, 16>;
  for (var j = 0u; j < 4u; j++) { sm[2u * j] = ${REPACK_SM.lo[0]}; sm[2u * j + 1u] = ${REPACK_SM.lo[1]}; }
  for (var j = 4u; j < 8u; j++) { sm[2u * j] = ${REPACK_SM.hi[0]}; sm[2u * j + 1u] = ${REPACK_SM.hi[1]}; }
  for (var k = 0u; k < 4u; k++) {
    dst[32u * n + b * 4u + k] = sm[4u * k] | (sm[4u * k + 1u] << 8u) | (sm[4u * k + 2u] << 16u) | (sm[4u * k + 3u] << 24u);
  }
  dst[36u * n + b] = src[o];
}`;

/** {@link REPACK_WGSL} on the CPU (tests): n raw blocks → planes, into `out`. */
function repackHost(raw: Uint8Array, n: number, out: Uint8Array): void {
  for (let b = 0; b < n; b++) {
    const o = b * 144;
    for (let j = 0; j < 8; j++) {
      const q = o + 16 + (j >> 1) * 32;
      const hi = j & 1;
      for (let i = 0; i < 16; i++) {
        const lo = hi ? raw[q + i] >> 4 : raw[q + i] & 15;
        const up = hi ? raw[q + i + 16] >> 4 : raw[q + i + 16] & 15;
        out[b * 128 + j * 16 + i] = lo | (up << 4);
      }
      const [sc, m] = scaleMinK4(j, raw, o + 4);
      out[128 * n + b * 16 + 2 * j] = sc;
      out[128 * n + b * 16 + 2 * j + 1] = m;
    }
    out.set(raw.subarray(o, o + 4), 144 * n + b * 4);
  }
}

export const Q4_K: BlockDecoder = {
  loader,
  planarLoader,
  bindingType: 'array<vec4<u32>>',
  needsXsum: true,
  needsXhalf: false,
  mmvPrelude: Q4K_SCALE_MIN,
  chunkDot,
  planarChunkDot,
  intChunkDot,
  planarIntChunkDot,
  intLoader,
  planes: { blockBytes: 148, kernel: { wgsl: REPACK_WGSL, host: repackHost } },
  // sc·q, 6-bit sc, 4-bit q: σ ≈ 175; dmin = 7.5·d centres it.
  syntheticFill: {
    scales: [
      { at: 0, holds: 'd' },
      { at: 2, holds: 'min' },
    ],
    stdAtUnitD: 175,
    minPerD: 7.5,
  },
};
