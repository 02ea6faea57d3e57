/**
 * Fills a weight buffer on the GPU with seeded pseudo-random contents in a weight type's layout, for
 * synthetic models (real shapes, random weights). Every block's scale fields hold a finite f16 scale
 * chosen so weights have a standard deviation near `std`; all other bytes are random. One thread per
 * u32 word, so no two threads touch the same word.
 */
import { WEIGHT_BLOCK, type WeightType } from './common.ts';

/** Uniform: seed, tensor id, number of words, mode (0 matrix, 1 norm = 1 + noise, 2 bias), std (f32). */
export const FILL_PARAMS_BYTES = 32;

/** Packs the fill kernel's uniform. */
export function packFillParams(o: {
  seed: number;
  tensorId: number;
  nWords: number;
  mode: number;
  std: number;
}): ArrayBuffer {
  const b = new ArrayBuffer(FILL_PARAMS_BYTES);
  const u = new Uint32Array(b);
  const f = new Float32Array(b);
  u[0] = o.seed >>> 0;
  u[1] = o.tensorId >>> 0;
  u[2] = o.nWords >>> 0;
  u[3] = o.mode;
  f[4] = o.std;
  return b;
}

/**
 * Scale (f16 `d`) for a block type so weights come out with about the given std: `std` ÷ the std of
 * the quantised integers times their sub-scales (uniform random bytes): Q8_0 q ∈ [−128, 127] (σ ≈ 74);
 * Q4_0 q − 8 ∈ [−8, 7] (σ ≈ 4.6); Q4_K sc·q with 6-bit sc, 4-bit q (σ ≈ 175; dmin = 7.5·d centres it);
 * Q6_K i8 scale · (q − 32) (σ ≈ 1370); Q5_0 q − 16 (σ ≈ 9.2); Q4_1 / Q5_1 q ∈ [0, 15] / [0, 31] (σ ≈ 4.6 /
 * 9.2; m = −7.5·d / −15.5·d centres them); IQ4_NL the kvalues_iq4nl table (σ ≈ 66); IQ4_XS (ls − 32) ·
 * table (σ ≈ 1220); Q5_K sc·q with 5-bit q (σ ≈ 350; dmin = 15.5·d); Q3_K (sc − 32)·(q − 4) (σ ≈ 43);
 * Q2_K sc·q, 4-bit sc, 2-bit q (σ ≈ 9; dmin = 1.5·d).
 */
function blockScaleDivisor(t: WeightType): number {
  const div: Partial<Record<WeightType, number>> = {
    Q8_0: 74,
    Q4_0: 4.6,
    Q4_K: 175,
    Q6_K: 1370,
    Q5_0: 9.2,
    Q4_1: 4.6,
    Q5_1: 9.2,
    IQ4_NL: 66,
    IQ4_XS: 1220,
    Q5_K: 350,
    Q3_K: 43,
    Q2_K: 9,
  };
  return div[t] ?? 1;
}

/** The second f16 field (min) as a multiple of d: subtracted (dmin) for K-quants, added (m) for Q4_1/Q5_1. */
function blockMinFactor(t: WeightType): number {
  const f: Partial<Record<WeightType, number>> = { Q5_K: 15.5, Q2_K: 1.5, Q4_1: -7.5, Q5_1: -15.5 };
  return f[t] ?? 7.5;
}

/** Bindings: 0 params (uniform), 1 out (array<u32>). Dispatch (min(n, 65535), ceil(n / 65535)) workgroups of 64, n = ceil(nWords / 64). */
export function fillWGSL(t: WeightType): string {
  const bb = WEIGHT_BLOCK[t].bytes;
  const div = blockScaleDivisor(t);
  // Byte ranges [from, to) inside a block that hold f16 scales, and which value each gets (0: d, 1: dmin).
  const scaleFields: Record<string, [number, number, number][]> = {
    Q8_0: [[0, 2, 0]],
    Q4_0: [[0, 2, 0]],
    Q4_K: [
      [0, 2, 0],
      [2, 4, 1],
    ],
    Q6_K: [[208, 210, 0]],
    // ggml-common.h's block layouts: block_q5_0, block_q4_1, block_q5_1, block_iq4_nl, block_iq4_xs,
    // block_q5_K, block_q3_K (d last), block_q2_K (d, dmin last).
    Q5_0: [[0, 2, 0]],
    Q4_1: [
      [0, 2, 0],
      [2, 4, 1],
    ],
    Q5_1: [
      [0, 2, 0],
      [2, 4, 1],
    ],
    IQ4_NL: [[0, 2, 0]],
    IQ4_XS: [[0, 2, 0]],
    Q5_K: [
      [0, 2, 0],
      [2, 4, 1],
    ],
    Q3_K: [[108, 110, 0]],
    Q2_K: [
      [80, 82, 0],
      [82, 84, 1],
    ],
  };
  const fields = scaleFields[t] ?? [];
  const fieldCode = fields
    .map(
      ([a, b, which]) =>
        `if (off >= ${a}u && off < ${b}u) { bv = (${which === 0 ? 'dbits' : 'mbits'} >> ((off - ${a}u) * 8u)) & 0xffu; }`,
    )
    .join(' else ');
  const valueCode =
    t === 'F32'
      ? 'out[w] = bitcast<u32>(value(r));'
      : t === 'F16'
        ? 'out[w] = pack2x16float(vec2<f32>(value(r), value(hash(r ^ 0x9e3779b9u))));'
        : t === 'BF16'
          ? 'out[w] = (bitcast<u32>(value(r)) >> 16u) | (bitcast<u32>(value(hash(r ^ 0x9e3779b9u))) & 0xffff0000u);'
          : `let dbits = pack2x16float(vec2<f32>(p.sd / ${div.toFixed(1)}, 0.0)) & 0xffffu;
    let mbits = pack2x16float(vec2<f32>(${blockMinFactor(t).toFixed(1)} * p.sd / ${div.toFixed(1)}, 0.0)) & 0xffffu;
    var word = 0u;
    for (var j = 0u; j < 4u; j++) {
      let o = w * 4u + j;
      let off = o % ${bb}u;
      var bv = (r >> (j * 8u)) & 0xffu;
      ${fieldCode}
      word |= bv << (j * 8u);
    }
    out[w] = word;`;
  return `struct Params { seed: u32, tensorId: u32, nWords: u32, mode: u32, sd: f32, p5: u32, p6: u32, p7: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
fn hash(x: u32) -> u32 {
  var h = x * 747796405u + 2891336453u;
  h = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u;
  return (h >> 22u) ^ h;
}
// A value for matrices (uniform with the given std), norms (1 ± 0.1) or biases (± std).
fn value(r: u32) -> f32 {
  let u = f32(r >> 8u) / 16777216.0 * 2.0 - 1.0;
  if (p.mode == 1u) { return 1.0 + 0.1 * u; }
  return u * p.sd * 1.7320508;
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = g.y * nw.x * 64u + g.x;
  if (w >= p.nWords) { return; }
  let r = hash(hash(p.seed ^ (p.tensorId * 0x85ebca6bu)) + w);
  ${valueCode}
}`;
}
