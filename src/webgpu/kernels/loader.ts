/**
 * WGSL that reads weights in their ggml types, for the kernels that read a weight element by element or 32
 * at a time (matmul.ts's general kernels, embed.ts, headnorm.ts, postnorm.ts): {@link wgslLoader}'s
 * `ld_<name>` and `dq32_<name>` per type, in ggml's block layout or repacked into planes
 * (kernels/repack.ts), with the byte readers and scale decoders they share, and IQ4's value table.
 * Formulas: ggml-quants.c `dequantize_row_*`. mmv.ts and mmm.ts have their own, faster readers.
 */
import type { WeightType } from './common.ts';
import { DECODERS } from './quants/index.ts';
import { byteReaders } from './quants/shared.ts';

/**
 * ggml-common.h's `kvalues_iq4nl` (the 16 levels of IQ4_NL / IQ4_XS) as a WGSL `const` f32 array
 * called `name`.
 */
export function iq4KvaluesWgsl(name: string): string {
  return `const ${name} = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);`;
}

/**
 * WGSL for reading a weight bound as `<name>`:
 * `fn ld_<name>(i: u32) -> f32` reads element i (row-major, in elements) for every type, and for
 * quantized types also `fn dq32_<name>(i: u32, out: ptr<function, array<f32, 32>>)` decoding the 32
 * weights starting at element i (a multiple of 32) with the block's scale read once.
 */
export function wgslLoader(n: string, t: WeightType, planarBlocks?: number): string {
  const d = DECODERS[t];
  if (d) {
    if (planarBlocks === undefined) return d.loader(n);
    if (!d.planarLoader) throw new Error(`${t} has no planar layout`);
    return d.planarLoader(n, planarBlocks);
  }
  if (planarBlocks !== undefined) throw new Error(`${t} has no planar layout`);
  return blockLoader(n, t);
}

/** {@link wgslLoader} of the float types and the 32-weight block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, IQ4_XS). */
function blockLoader(n: string, t: WeightType): string {
  switch (t) {
    case 'F32':
      return `fn ld_${n}(i: u32) -> f32 { return ${n}[i]; }`;
    case 'F16':
      return `fn ld_${n}(i: u32) -> f32 { let p = unpack2x16float(${n}[i >> 1u]); return select(p.x, p.y, (i & 1u) == 1u); }`;
    case 'BF16':
      return `fn ld_${n}(i: u32) -> f32 { return bitcast<f32>(((${n}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu) << 16u); }`;
    case 'Q4_1':
    case 'Q5_1': {
      // Q4_1 (20 B) and Q5_1 (24 B) blocks are 4-byte aligned: word 0 = f16 d | f16 m, [Q5_1: word 1 =
      // qh], then 4 words of nibbles as Q4_0; w = d·q + m.
      const q5 = t === 'Q5_1';
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
    case 'IQ4_NL':
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
    case 'IQ4_XS':
      // 136-byte blocks (8-byte aligned): word 0 = f16 d | u16 scales_h, word 1 = scales_l[4], then 8
      // sub-blocks of 16 bytes (4 words) of nibbles as IQ4_NL; w = d·(ls − 32)·kvalues[q].
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
    default:
      throw new Error(`blockLoader: not for ${t}`);
  }
}
