/**
 * Load-time repacking of ggml blocks into 16-byte-aligned planes, on the GPU as the weights are uploaded
 * (and its CPU twin {@link repackHost} for tests): all blocks' quants first, then their other fields,
 * then their f16 scales `d` two to a word. Every plane but the last is a whole number of 16-byte units per
 * block, so kernels read quants with aligned `vec4<u32>` loads and no stitching. The planar tensor takes
 * the planes' bytes ({@link planarBlockBytes} per block), rounded up to 16. `token_embd` is never
 * repacked (read a row at a time by the embedding).
 *
 * Which types have planes, their layout and why, are each type's block decoder's (`planes` in
 * kernels/quants/<type>.ts): Q4_0, Q8_0 and Q5_0 (2-byte-aligned blocks: their fields copied into planes by
 * {@link repackWGSL}'s generic kernel, a thread per pair of blocks), Q6_K (the same kernel, its ql and qh
 * reordered by sub-block), Q4_K (a kernel of its own, a thread per block: each sub-block's nibbles in
 * Q4_0's order and its 6-bit scale and min unpacked to bytes, 148 bytes per block).
 */
import { WEIGHT_BLOCK, type WeightType } from './common.ts';
import { DECODERS, type PlaneField } from './quants/index.ts';

/** Types repacked at load. */
export const PLANAR_TYPES: readonly WeightType[] = ['Q4_0', 'Q8_0', 'Q5_0', 'Q6_K', 'Q4_K'];

/** True when `t` is repacked into planes at load. */
export function isPlanarType(t: WeightType): boolean {
  return PLANAR_TYPES.includes(t);
}

/** The fields of a block, in plane order, without `d` (the last plane, 2 bytes at raw offset `dRaw`). */
export function planeFields(t: WeightType): { fields: PlaneField[]; dRaw: number } {
  const own = DECODERS[t].planes?.fields;
  if (!own) throw new Error(`${t} is not repacked`);
  return own;
}

/** Byte offset of each plane (by field name, and `d`) for `nBlocks` blocks. */
export function planeOffsets(t: WeightType, nBlocks: number): Record<string, number> {
  const { fields } = planeFields(t);
  const out: Record<string, number> = {};
  let o = 0;
  for (const f of fields) {
    out[f.name] = o;
    o += f.bytes * nBlocks;
  }
  out.d = o;
  return out;
}

/**
 * Bytes of the planar tensor: the raw size rounded up to 16 (kernels bind it as `array<vec4<u32>>`, whose
 * length counts whole 16-byte elements only, so the `d` plane's last word must lie in a whole one).
 */
export function planarBytes(t: WeightType, nBlocks: number): number {
  return Math.ceil((planarBlockBytes(t) * nBlocks) / 16) * 16;
}

/** Bytes per block in planes (the decoder's: the raw block's, except Q4_K's 148, its scales unpacked to bytes). */
export function planarBlockBytes(t: WeightType): number {
  return DECODERS[t].planes?.blockBytes ?? WEIGHT_BLOCK[t].bytes;
}

/**
 * The repacking kernel for blocks of `t`. Bindings: 0 params (uniform: u32 block count, padded to 16
 * bytes; {@link repackParams}), 1 src (the raw blocks, array<u32>), 2 dst (the planes, array<u32>). One
 * thread per pair of blocks (the pair's two `d` share a word). Dispatch {@link repackWorkgroups}.
 */
export function repackWGSL(t: WeightType): string {
  const own = DECODERS[t].planes?.kernel;
  if (own) return own.wgsl;
  const B = WEIGHT_BLOCK[t].bytes;
  const { fields, dRaw } = planeFields(t);
  const reorder = DECODERS[t].planes?.reorderWGSL;
  let planeWords = 0; // words per block of the planes before this one, times n
  const copies = fields
    .map((f) => {
      const line = f.reordered
        ? ''
        : `      for (var j = 0u; j < ${f.bytes / 4}u; j++) { dst[${planeWords}u * n + b * ${f.bytes / 4}u + j] = rd32(o + ${f.raw}u + 4u * j); }`;
      planeWords += f.bytes / 4;
      return line;
    })
    .concat(reorder ? [reorder] : [])
    .filter((l) => l)
    .join('\n');
  return `struct Params { n: u32, p1: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
fn rd32(o: u32) -> u32 {
  let w0 = src[o >> 2u];
  let sh = (o & 3u) * 8u;
  if (sh == 0u) { return w0; }
  return (w0 >> sh) | (src[(o >> 2u) + 1u] << (32u - sh));
}
fn rd16(o: u32) -> u32 { return (src[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu; }
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = params.n;
  let p = gid.x + gid.y * nw.x * 64u;
  if (2u * p >= n) { return; }
  for (var h = 0u; h < 2u; h++) {
    let b = 2u * p + h;
    if (b < n) {
      let o = b * ${B}u;
${copies}
    }
  }
  let b1 = 2u * p + 1u;
  let d1 = select(0u, rd16(b1 * ${B}u + ${dRaw}u), b1 < n);
  dst[${planeWords}u * n + p] = rd16(2u * p * ${B}u + ${dRaw}u) | (d1 << 16u);
}`;
}

/** The uniform of {@link repackWGSL}: the block count. */
export function repackParams(nBlocks: number): Uint32Array {
  return Uint32Array.of(nBlocks, 0, 0, 0);
}

/** Workgroups [x, y] for {@link repackWGSL}(t): one thread per pair of blocks (a type with its own kernel, Q4_K: per block), 64 per workgroup. */
export function repackWorkgroups(nBlocks: number, t?: WeightType): [number, number] {
  // A type with a kernel of its own (Q4_K): a thread per block; the others: a thread per pair of blocks.
  const perBlock = t !== undefined && DECODERS[t].planes?.kernel !== undefined;
  const n = Math.ceil((perBlock ? nBlocks : Math.ceil(nBlocks / 2)) / 64);
  const x = Math.min(n, 65535);
  return [x, Math.ceil(n / x)];
}

/** The same repacking on the CPU (tests): raw blocks → planes. */
export function repackHost(t: WeightType, raw: Uint8Array, nBlocks: number): Uint8Array {
  const own = DECODERS[t].planes?.kernel;
  if (own) {
    const out = new Uint8Array(planarBytes(t, nBlocks));
    own.host(raw, nBlocks, out);
    return out;
  }
  const B = WEIGHT_BLOCK[t].bytes;
  const { fields, dRaw } = planeFields(t);
  const off = planeOffsets(t, nBlocks);
  const out = new Uint8Array(planarBytes(t, nBlocks));
  const reorder = DECODERS[t].planes?.reorderHost;
  for (let b = 0; b < nBlocks; b++) {
    for (const f of fields)
      if (!f.reordered)
        out.set(raw.subarray(b * B + f.raw, b * B + f.raw + f.bytes), off[f.name] + b * f.bytes);
    reorder?.(raw, b, nBlocks, out);
    out[off.d + 2 * b] = raw[b * B + dRaw];
    out[off.d + 2 * b + 1] = raw[b * B + dRaw + 1];
  }
  return out;
}
