/**
 * Q6_K: 256 weights in 210 bytes (ggml-common.h `block_q6_K`), 8 sub-blocks of 32, 16 scales of 16.
 *
 * ggml's block (2 bytes past a word boundary for odd blocks):
 * - bytes 0–127: ql[128], low 4 bits: element 128h + 32c + l (c < 4, l < 32) at ql[64h + 32(c & 1) + l],
 *   nibble c / 2
 * - bytes 128–191: qh[64], high 2 bits: at qh[32h + l] >> 2c
 * - bytes 192–207: int8 scales[16], one per 16 weights (sub-block 4h + c: scales[8h + 2c], [8h + 2c + 1])
 * - bytes 208–209: f16 d
 *
 * Planes of n blocks (repack.ts, the raw sizes): ql [n × 8 × 16] at 0 (sub-block j of block b at 128b +
 * 16j, Q4_0's nibble order: byte i holds weight i low and i + 16 high), qh [n × 8 × 8] at 128n (sub-block
 * j at 128n + 64b + 8j: two words, weights 0–15 then 16–31; byte k of a word holds weights k, k + 4,
 * k + 8, k + 12 of its half at bits 0, 2, 4, 6, so `(word >> 2m) & 0x03030303` lines up with the nibbles of
 * weights 4m … 4m + 3), scales [n × 16] at 192n (as raw: sub-block j's two at 2j), d [n × 2] at 208n.
 *
 * Dequantization (ggml-quants.c `dequantize_row_q6_K`): w = d·scale·(q − 32), q the 6-bit quant; the
 * chunk dots apply the −32 once per 16-weight scale through the activations' half sums.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}, {@link planarLoader}); mmv.ts `chunkDot`
 * ({@link chunkDot}, {@link planarChunkDot}); mmv-int.ts `intChunkDot` (planes only:
 * {@link planarIntChunkDot}); mmm.ts's int8 tile ({@link intLoader}); repack.ts ({@link planes}).
 */
import { WEIGHT_BLOCK } from '../common.ts';
import {
  type BlockDecoder,
  byteReaders,
  type ChunkCtx,
  dqi32Head,
  type IntChunkCtx,
  planarD,
  planeByte,
  planeDFn,
  U8N,
  u8x4n,
} from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 256u) * 210u;
  let r = i % 256u;
  let h = r / 128u;
  let c = (r % 128u) / 32u;
  let l = r % 32u;
  let ql = rd8_${n}(o + h * 64u + l + (c & 1u) * 32u);
  let qh = rd8_${n}(o + 128u + h * 32u + l);
  let q = i32(((ql >> ((c / 2u) * 4u)) & 0xfu) | (((qh >> (c * 2u)) & 3u) << 4u)) - 32;
  return f16_${n}(o + 208u) * i8_${n}(o + 192u + h * 8u + l / 16u + c * 2u) * f32(q);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 256u) * 210u;
  let r = i % 256u;
  let h = r / 128u;
  let c = (r % 128u) / 32u;
  let d = f16_${n}(o + 208u);
  let s0 = d * i8_${n}(o + 192u + h * 8u + c * 2u);
  let s1 = d * i8_${n}(o + 192u + h * 8u + c * 2u + 1u);
  let qlb = o + h * 64u + (c & 1u) * 32u;
  let qhb = o + 128u + h * 32u;
  let shl = (c / 2u) * 4u;
  let shh = c * 2u;
  for (var l = 0u; l < 32u; l += 4u) {
    let ql = rd32_${n}(qlb + l) >> shl;
    let qh = rd32_${n}(qhb + l) >> shh;
    let sc = select(s0, s1, l >= 16u);
    for (var b = 0u; b < 4u; b++) {
      let q = i32(((ql >> (b * 8u)) & 0xfu) | (((qh >> (b * 8u)) & 3u) << 4u)) - 32;
      (*out)[l + b] = sc * f32(q);
    }
  }
}`;
}

/**
 * loader.ts over the planes: `d_<n>(bi)`, `sc_<n>(bi, k)` (int8 scale k of block bi; mmm.ts's planar int8
 * loader uses both), `ld_<n>`, `dq32_<n>`.
 */
function planarLoader(n: string, nB: number): string {
  const QH = 32 * nB;
  const SC = 192 * nB;
  const DW = (208 * nB) / 4;
  return `${planeDFn(n, DW)}
fn sc_${n}(bi: u32, k: u32) -> f32 { return f32(i32(${planeByte(n, `${SC}u + bi * 16u + k`)} << 24u) >> 24u); }
fn ld_${n}(i: u32) -> f32 {
  let bi = i / 256u;
  let j = (i % 256u) / 32u;
  let l = i % 32u;
  let m = l % 16u;
  let ql = ${planeByte(n, `bi * 128u + j * 16u + m`)};
  let qh = ${n}[${QH}u + bi * 16u + j * 2u + l / 16u] >> ((m % 4u) * 8u + (m / 4u) * 2u);
  let q = i32(select(ql & 0xfu, ql >> 4u, l >= 16u) | ((qh & 3u) << 4u)) - 32;
  return d_${n}(bi) * sc_${n}(bi, j * 2u + l / 16u) * f32(q);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 256u;
  let j = (i % 256u) / 32u;
  let d = d_${n}(bi);
  let s0 = d * sc_${n}(bi, j * 2u);
  let s1 = d * sc_${n}(bi, j * 2u + 1u);
  let ha = ${n}[${QH}u + bi * 16u + j * 2u];
  let hb = ${n}[${QH}u + bi * 16u + j * 2u + 1u];
  for (var w = 0u; w < 4u; w++) {
    let q = ${n}[bi * 32u + j * 4u + w];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let s = b * 8u + w * 2u;
      (*out)[4u * w + b] = s0 * f32(i32((v & 0xfu) | (((ha >> s) & 3u) << 4u)) - 32);
      (*out)[4u * w + b + 16u] = s1 * f32(i32((v >> 4u) | (((hb >> s) & 3u) << 4u)) - 32);
    }
  }
}`;
}

/**
 * mmv float chunk dot over ggml's blocks. Sub-block cc of 32: half h = cc/4, k = cc%4: ql bytes h·64 +
 * (k&1)·32 + l (nibble k/2), qh bytes 128 + h·32 + l (bits 2k), scales h·8 + 2k (l < 16) and +1 (l ≥ 16).
 */
function chunkDot({ w, K, p, X, sum }: ChunkCtx): string {
  const lines = [
    `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;`,
    `let ${p}o = ${p}bi * 210u; let ${p}odd = (${p}o & 2u) != 0u;`,
    `let ${p}lw = (${p}o + ${p}hh * 64u + (${p}k & 1u) * 32u) >> 2u; let ${p}hw = (${p}o + 128u + ${p}hh * 32u) >> 2u;`,
    `let ${p}so = ${p}o + 192u + ${p}hh * 8u + ${p}k * 2u; let ${p}sw = ${w}[${p}so >> 2u] >> ((${p}so & 2u) * 8u);`,
    `let ${p}dd = unpack2x16float(${w}[(${p}o + 208u) >> 2u]); let ${p}d = select(${p}dd.x, ${p}dd.y, ${p}odd);`,
    `let ${p}sc0 = ${p}d * f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = ${p}d * f32((bitcast<i32>(${p}sw) << 16u) >> 24u);`,
    `let ${p}ls = (${p}k / 2u) * 4u; let ${p}hs = ${p}k * 2u;`,
  ];
  for (let j = 0; j <= 8; j++)
    lines.push(`let ${p}a${j} = ${w}[${p}lw + ${j}u]; let ${p}b${j} = ${w}[${p}hw + ${j}u];`);
  for (let j = 0; j < 8; j++) {
    const L = `select(${p}a${j}, (${p}a${j} >> 16u) | (${p}a${j + 1} << 16u), ${p}odd)`;
    const H = `select(${p}b${j}, (${p}b${j} >> 16u) | (${p}b${j + 1} << 16u), ${p}odd)`;
    lines.push(
      `let ${p}f${j} = ${u8x4n(`((${L} >> ${p}ls) & 0x0f0f0f0fu) | (((${H} >> ${p}hs) & 0x03030303u) << 4u)`)};`,
    );
  }
  const half = (from: number, tt: number) =>
    Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
  // q − 32 through the chunk's half sums: Σ(q − 32)·x = Σq·x − 32·Σx per 16-weight scale.
  lines.push(
    sum(
      (tt) =>
        `${p}sc0 * (${U8N} * (${half(0, tt)}) - 32.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${half(4, tt)}) - 32.0 * xhi${tt})`,
    ),
  );
  return lines.join('\n');
}

/**
 * A planar chunk's loads (float and integer chunk dots; c = chunk, row = weight row, prefix p): the
 * block `bi`, sub-block `j`, its nibbles `q` (vec4), its high-bit words `ha` (weights 0–15) and `hb`
 * (16–31) and its two int8 scales in the low 16 bits of `sw`.
 */
function planarLoads(w: string, K: number, p: string, nB: number): string {
  return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}q = ${w}[${p}bi * 8u + ${p}j];
let ${p}hv = ${w}[${8 * nB}u + ${p}bi * 4u + ${p}j / 2u]; let ${p}odd = (${p}j & 1u) == 1u;
let ${p}ha = select(${p}hv.x, ${p}hv.z, ${p}odd); let ${p}hb = select(${p}hv.y, ${p}hv.w, ${p}odd);
let ${p}sw = ${w}[${12 * nB}u + ${p}bi][${p}j / 2u] >> ((${p}j & 1u) * 16u);`;
}

/**
 * WGSL: the high 2 bits of word j (0–3) of a planar high-bit word `h` moved to bits 4–5 of each byte, one
 * shift and one mask: byte k of `h` holds them at bits 2j, 2j + 1, so `(h << (4 − 2j)) & 0x30303030`
 * (`h & 0x30303030` for j = 2, `(h >> 2) & …` for j = 3); the bits a left shift carries into the next
 * byte land outside the mask. Equal to `((h >> 2j) & 0x03030303) << 4` with one or two operations fewer.
 */
export function q6kHighBits(h: string, j: number): string {
  const s = 4 - 2 * j;
  const moved = s > 0 ? `(${h} << ${s}u)` : s < 0 ? `(${h} >> ${-s}u)` : h;
  return `(${moved} & 0x30303030u)`;
}

/** The 6-bit quants of sub-block word j (0–3: weights 4j…; `hi`: the high nibbles, weights 16 + 4j…). */
const planarWord = (p: string, j: number, hi: boolean) =>
  hi
    ? `((${p}q.${'xyzw'[j]} >> 4u) & 0x0f0f0f0fu) | ${q6kHighBits(`${p}hb`, j)}`
    : `(${p}q.${'xyzw'[j]} & 0x0f0f0f0fu) | ${q6kHighBits(`${p}ha`, j)}`;

/**
 * mmv float chunk dot over the planes: chunk j's nibbles (one vec4), its high bits (half a vec4), its two
 * int8 scales, the block's f16 d: 24 bytes per 32 weights.
 */
function planarChunkDot({ w, K, p, X, sum }: ChunkCtx, nB: number): string {
  const lines = [
    planarLoads(w, K, p, nB),
    planarD(w, p, `${208 * nB}u + 2u * ${p}bi`, '\n'),
    `let ${p}sc0 = ${p}d * f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = ${p}d * f32((bitcast<i32>(${p}sw) << 16u) >> 24u);`,
  ];
  for (let j = 0; j < 4; j++) {
    lines.push(
      `let ${p}f${j} = ${u8x4n(planarWord(p, j, false))};`,
      `let ${p}f${j + 4} = ${u8x4n(planarWord(p, j, true))};`,
    );
  }
  const part = (from: number, tt: number) =>
    Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
  lines.push(
    sum(
      (tt) =>
        `${p}sc0 * (${U8N} * (${part(0, tt)}) - 32.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${part(4, tt)}) - 32.0 * xhi${tt})`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk over the planes: d·dx·(sc0·(Σq·qx − 32·Σqx) + sc1·(…)) per 16-weight half. */
function planarIntChunkDot({ w, K, p, sum, dots }: IntChunkCtx, nB: number): string {
  const words = [0, 1, 2, 3]
    .map((j) => `(${planarWord(p, j, false)})`)
    .concat([0, 1, 2, 3].map((j) => `(${planarWord(p, j, true)})`));
  return `${planarLoads(w, K, p, nB)}
${planarD(w, p, `${208 * nB}u + 2u * ${p}bi`, ' ')}
let ${p}sc0 = f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = f32((bitcast<i32>(${p}sw) << 16u) >> 24u);
${sum((tt) => `${p}d * dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)} - 32 * qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)} - 32 * qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (d·sc0, d·sc1, −32·d·sc0, −32·d·sc1). */
function intLoader(n: string, nB?: number): string {
  if (nB !== undefined)
    return `${dqi32Head(n)}
  let bi = i / 256u; let j = (i % 256u) / 32u;
  let d = d_${n}(bi); let s0 = d * sc_${n}(bi, j * 2u); let s1 = d * sc_${n}(bi, j * 2u + 1u);
  let ha = ${n}[${32 * nB}u + bi * 16u + j * 2u]; let hb = ${n}[${32 * nB}u + bi * 16u + j * 2u + 1u];
  for (var w = 0u; w < 4u; w++) {
    let q = ${n}[bi * 32u + j * 4u + w];
    (*out)[w] = (q & 0x0f0f0f0fu) | (((ha >> (2u * w)) & 0x03030303u) << 4u);
    (*out)[w + 4u] = ((q >> 4u) & 0x0f0f0f0fu) | (((hb >> (2u * w)) & 0x03030303u) << 4u);
  }
  return vec4<f32>(s0, s1, -32.0 * s0, -32.0 * s1);
}`;
  return `${dqi32Head(n)}
  let bi = i / 256u; let r = i % 256u; let h = r / 128u; let c = (r % 128u) / 32u;
  let o = bi * 210u; let d = f16_${n}(o + 208u);
  let s0 = d * i8_${n}(o + 192u + h * 8u + c * 2u); let s1 = d * i8_${n}(o + 192u + h * 8u + c * 2u + 1u);
  let qlb = o + h * 64u + (c & 1u) * 32u; let qhb = o + 128u + h * 32u;
  let shl = (c / 2u) * 4u; let shh = c * 2u;
  for (var j = 0u; j < 8u; j++) {
    let ql = rd32_${n}(qlb + 4u * j) >> shl;
    let qh = rd32_${n}(qhb + 4u * j) >> shh;
    (*out)[j] = (ql & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u);
  }
  return vec4<f32>(s0, s1, -32.0 * s0, -32.0 * s1);
}`;
}

/**
 * repack.ts (inside its per-block loop: block b at byte o of src, n blocks): the ql and qh planes in
 * sub-block order. Sub-block j = 4h + c of the raw block takes the nibbles at ql[64h + 32(c & 1) + l] >>
 * 4(c / 2) and the 2 bits at qh[32h + l] >> 2c, l = 0..31.
 */
const REORDER_WGSL = `      for (var j = 0u; j < 8u; j++) {
        let lb = o + (j / 4u) * 64u + (j & 1u) * 32u; let sl = ((j % 4u) / 2u) * 4u;
        let hb = o + 128u + (j / 4u) * 32u; let sh = (j % 4u) * 2u;
        var ha = 0u; var hb2 = 0u;
        for (var k = 0u; k < 4u; k++) {
          dst[b * 32u + j * 4u + k] = ((rd32(lb + 4u * k) >> sl) & 0x0f0f0f0fu) | (((rd32(lb + 16u + 4u * k) >> sl) & 0x0f0f0f0fu) << 4u);
          ha |= ((rd32(hb + 4u * k) >> sh) & 0x03030303u) << (2u * k);
          hb2 |= ((rd32(hb + 16u + 4u * k) >> sh) & 0x03030303u) << (2u * k);
        }
        dst[32u * n + b * 16u + j * 2u] = ha;
        dst[32u * n + b * 16u + j * 2u + 1u] = hb2;
      }`;

/** {@link REORDER_WGSL} on the CPU (tests): block b's ql and qh planes into `out` (the planar tensor). */
function reorderHost(raw: Uint8Array, b: number, n: number, out: Uint8Array): void {
  const o = b * WEIGHT_BLOCK.Q6_K.bytes;
  const rd32 = (x: number) => (raw[x] | (raw[x + 1] << 8) | (raw[x + 2] << 16) | (raw[x + 3] << 24)) >>> 0;
  const put = (x: number, v: number) => {
    for (let i = 0; i < 4; i++) out[x + i] = (v >>> (8 * i)) & 0xff;
  };
  for (let j = 0; j < 8; j++) {
    const lb = o + (j >> 2) * 64 + (j & 1) * 32;
    const sl = ((j % 4) >> 1) * 4;
    const hb = o + 128 + (j >> 2) * 32;
    const sh = (j % 4) * 2;
    let ha = 0;
    let hb2 = 0;
    for (let k = 0; k < 4; k++) {
      put(
        b * 128 + j * 16 + 4 * k,
        ((rd32(lb + 4 * k) >>> sl) & 0x0f0f0f0f) | (((rd32(lb + 16 + 4 * k) >>> sl) & 0x0f0f0f0f) << 4),
      );
      ha |= ((rd32(hb + 4 * k) >>> sh) & 0x03030303) << (2 * k);
      hb2 |= ((rd32(hb + 16 + 4 * k) >>> sh) & 0x03030303) << (2 * k);
    }
    put(128 * n + b * 64 + j * 8, ha >>> 0);
    put(128 * n + b * 64 + j * 8 + 4, hb2 >>> 0);
  }
}

export const Q6_K: BlockDecoder = {
  loader,
  planarLoader,
  bindingType: 'array<u32>',
  needsXsum: false,
  needsXhalf: true,
  chunkDot,
  planarChunkDot,
  planarIntChunkDot,
  intLoader,
  planes: {
    blockBytes: 210,
    fields: {
      fields: [
        { name: 'ql', raw: 0, bytes: 128, reordered: true },
        { name: 'qh', raw: 128, bytes: 64, reordered: true },
        { name: 'scales', raw: 192, bytes: 16 },
      ],
      dRaw: 208,
    },
    reorderWGSL: REORDER_WGSL,
    reorderHost,
  },
  // i8 scale·(q − 32): σ ≈ 1370.
  syntheticFill: { scales: [{ at: 208, holds: 'd' }], stdAtUnitD: 1370 },
};
