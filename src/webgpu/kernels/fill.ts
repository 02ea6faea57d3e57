/**
 * Fills a weight buffer on the GPU with seeded pseudo-random contents in a weight type's layout, for
 * synthetic models (real shapes, random weights). Every block's scale fields hold a finite f16 scale
 * chosen so weights have a standard deviation near `std`; all other bytes are random. Which bytes are
 * scale fields and what they get is each type's block decoder's `syntheticFill` (quants/<type>.ts). One
 * thread per u32 word, so no two threads touch the same word.
 */
import { isQuantized, WEIGHT_BLOCK, type WeightType } from './common.ts';
import { DECODERS } from './quants/index.ts';

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
 * The min factor written for a block type without a min field (its `mbits` line is emitted but unused):
 * Q4_K's 7.5, as before the types' facts moved to their decoders, so the WGSL stays the same.
 */
const UNUSED_MIN_PER_D = 7.5;

/** Bindings: 0 params (uniform), 1 out (array<u32>). Dispatch (min(n, 65535), ceil(n / 65535)) workgroups of 64, n = ceil(nWords / 64). */
export function fillWGSL(t: WeightType): string {
  const bb = WEIGHT_BLOCK[t].bytes;
  // The type's f16 scale fields, σ at d = 1 and min factor: its block decoder's (quants/ `syntheticFill`).
  const fill = DECODERS[t].syntheticFill;
  if (isQuantized(t) && !fill) throw new Error(`weight type ${t}'s block decoder has no syntheticFill`);
  const div = fill?.stdAtUnitD ?? 1;
  const minPerD = fill?.minPerD ?? UNUSED_MIN_PER_D;
  // Each scale field's 2 bytes take those of dbits (d) or mbits (the min) instead of random ones.
  const fieldCode = (fill?.scales ?? [])
    .map(
      ({ at, holds }) =>
        `if (off >= ${at}u && off < ${at + 2}u) { bv = (${holds === 'd' ? 'dbits' : 'mbits'} >> ((off - ${at}u) * 8u)) & 0xffu; }`,
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
    let mbits = pack2x16float(vec2<f32>(${minPerD.toFixed(1)} * p.sd / ${div.toFixed(1)}, 0.0)) & 0xffffu;
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
