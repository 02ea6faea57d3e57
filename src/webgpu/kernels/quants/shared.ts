/**
 * WGSL pieces the block decoders of quants/ share: byte readers over a `array<u32>` binding (for ggml's
 * blocks, which are only 2-byte aligned), byte unpacking four at a time for the matrix-vector chunk dots,
 * stitching of 2-byte-misaligned words, the f16 of a plane, and the skeleton of the int8 loader.
 */

/**
 * Byte-level readers over a `array<u32>` binding called `n` (loader.ts's raw loaders, mmm.ts's int8
 * loaders): `rd8_`, `rd16_`, `f16_`, `i8_` and `rd32_` at a byte offset.
 */
export function byteReaders(n: string): string {
  return `fn rd8_${n}(o: u32) -> u32 { return (${n}[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu; }
fn rd16_${n}(o: u32) -> u32 { return rd8_${n}(o) | (rd8_${n}(o + 1u) << 8u); }
fn f16_${n}(o: u32) -> f32 { return unpack2x16float(rd16_${n}(o)).x; }
fn i8_${n}(o: u32) -> f32 { return f32(i32(rd8_${n}(o) << 24u) >> 24u); }
fn rd32_${n}(o: u32) -> u32 {
  let w0 = ${n}[o >> 2u];
  let sh = (o & 3u) * 8u;
  if (sh == 0u) { return w0; }
  return (w0 >> sh) | (${n}[(o >> 2u) + 1u] << (32u - sh));
}`;
}

/** WGSL expression: the byte at byte offset `o` of the `array<u32>` binding `n` (a planar loader's reads). */
export function planeByte(n: string, o: string): string {
  return `((${n}[(${o}) >> 2u] >> (((${o}) & 3u) * 8u)) & 0xffu)`;
}

/**
 * WGSL `fn d_<n>(bi: u32) -> f32`: block bi's f16 `d` from the last plane (two to a word) at word `dW`
 * of a planar weight (loader.ts's planar loaders, which mmm.ts's int8 loaders reuse).
 */
export function planeDFn(n: string, dW: number): string {
  return `fn d_${n}(bi: u32) -> f32 { return unpack2x16float(${n}[${dW}u + (bi >> 1u)])[bi & 1u]; }`;
}

/** WGSL expression: 4 bytes of `v` as vec4<f32>, unsigned. */
export function u8x4(v: string, packed: boolean): string {
  return packed
    ? `vec4<f32>(unpack4xU8(${v}))`
    : `vec4<f32>((vec4<u32>(${v}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u))`;
}

/**
 * WGSL expression: 4 bytes of `v` as vec4<f32> scaled by 1/255 (`unpack4x8unorm`, core WGSL): the
 * caller multiplies the chunk's dot product by 255 once ({@link U8N}). On SwiftShader it costs ~20% less
 * per weight than `unpack4xU8` and a conversion (bench-floor / the Q4_0 and Q6_K decode kernels); a value
 * n comes back as n·(1 ± 2⁻²³), well inside the float64 tests' tolerance.
 */
export function u8x4n(v: string): string {
  return `unpack4x8unorm(${v})`;
}

/** The factor that undoes {@link u8x4n}'s 1/255. */
export const U8N = '255.0';

/**
 * Statements loading `n` + 1 words from word `wi` of `w` as `${p}v0…` and the expression of stitched
 * word j: a block field 2 bytes past a word boundary when `${p}odd` (ggml's 2-byte-aligned blocks).
 */
export function stitched(
  p: string,
  w: string,
  wi: string,
  n: number,
): { loads: string; word: (j: number) => string } {
  const loads = Array.from({ length: n + 1 }, (_, j) => `let ${p}v${j} = ${w}[${wi} + ${j}u];`).join('\n');
  return { loads, word: (j) => `select(${p}v${j}, (${p}v${j} >> 16u) | (${p}v${j + 1} << 16u), ${p}odd)` };
}

/**
 * Statements reading the f16 `d` at byte offset D of a planar weight bound as `array<vec4<u32>>` into
 * `${p}d` (the matrix-vector chunk dots): the 16-bit value into `${p}dW`, then `${p}d`, the two joined by
 * `sep` (a newline in the float chunk dots, a space in the integer ones).
 */
export function planarD(w: string, p: string, D: string, sep: string): string {
  return `let ${p}dD = ${D}; let ${p}dW = ${w}[${p}dD >> 4u][(${p}dD >> 2u) & 3u] >> (((${p}dD >> 1u) & 1u) * 16u);${sep}let ${p}d = unpack2x16float(${p}dW).x;`;
}

/** The vec4 components, in order. */
export const C4 = ['x', 'y', 'z', 'w'];

/**
 * The int8 words of a planar chunk whose 16 bytes `${p}q` (a vec4) hold weight i's nibble low and weight
 * i + 16's high (Q4_0's order; Q4_0's and Q4_K's planes): words 0–3 the low nibbles, 4–7 the high ones
 * (mmv-int.ts's integer-dot chunks).
 */
export function planarNibbleWords(p: string): { lo: string[]; hi: string[] } {
  return {
    lo: C4.map((c) => `(${p}q.${c} & 0x0f0f0f0fu)`),
    hi: C4.map((c) => `((${p}q.${c} >> 4u) & 0x0f0f0f0fu)`),
  };
}

/** The first line of mmm.ts's int8 loader `dqi32_<n>` (see {@link BlockDecoder.intLoader}). */
export function dqi32Head(n: string): string {
  return `fn dqi32_${n}(i: u32, out: ptr<function, array<u32, 8>>) -> vec4<f32> {`;
}

/** WGSL: the low nibbles of the 4 bytes of `v`. */
export const nib = (v: string) => `(${v}) & 0x0f0f0f0fu`;
/** WGSL: the high nibbles of the 4 bytes of `v`, shifted down. */
export const hi4 = (v: string) => `((${v}) >> 4u) & 0x0f0f0f0fu`;

/** What a matrix-vector float chunk dot is given (mmv.ts `chunkDot`). */
export interface ChunkCtx {
  /** The weight binding. */
  w: string;
  /** Row length in weights. */
  K: number;
  /** Prefix of the statements' names. */
  p: string;
  /** `unpack4xU8` available (WGSL language feature `packed_4x8_integer_dot_product`). */
  packed: boolean;
  /** Activations vec4 j (0..7) of the chunk for token tt. */
  X: (tt: number, j: number) => string;
  /** Σx of the chunk for token tt. */
  XS: (tt: number) => string;
  /** One `let ${p}s${tt} = …;` per token. */
  sum: (f: (tt: number) => string) => string;
}

/** What an integer-dot chunk is given (mmv-int.ts `intChunkDot`). */
export interface IntChunkCtx {
  w: string;
  K: number;
  p: string;
  /** One `let ${p}s${tt} = …;` per token. */
  sum: (f: (tt: number) => string) => string;
  /** `dot4I8Packed` of each word with the int8 activations of token tt from word `from`, summed. */
  dots: (words: string[], tt: number, from?: number) => string;
}

/**
 * Everything about one weight type's blocks the kernels use (quants/index.ts `DECODERS`). Raw: ggml's
 * blocks as in the file; planar: repacked into planes at load (repack.ts), `nB` blocks per binding.
 */
export interface BlockDecoder {
  /** loader.ts `wgslLoader`: `ld_<n>(i)` and (quantized) `dq32_<n>(i, out)` over ggml's blocks. */
  loader(n: string): string;
  /** loader.ts `wgslLoader` over the planes. */
  planarLoader?(n: string, nB: number): string;
  /** mmv.ts's binding element type of a raw weight (planes: always `array<vec4<u32>>`). */
  bindingType: string;
  /** The float chunk dot needs the chunk's Σx (an offset or min folded out of the loop). */
  needsXsum: boolean;
  /** The float chunk dot needs the chunk's half sums `xlo`, `xhi` (an offset or min per 16 weights). */
  needsXhalf: boolean;
  /** WGSL mmv.ts declares once for the type's chunk dots (shared constants and functions). */
  mmvPrelude?: string;
  /** mmv.ts's float chunk dot over ggml's blocks. */
  chunkDot(c: ChunkCtx): string;
  /** mmv.ts's float chunk dot over the planes. */
  planarChunkDot?(c: ChunkCtx, nB: number): string;
  /** mmv-int.ts's integer-dot chunk over ggml's blocks. */
  intChunkDot?(c: IntChunkCtx): string;
  /** mmv-int.ts's integer-dot chunk over the planes. */
  planarIntChunkDot?(c: IntChunkCtx, nB: number): string;
  /**
   * mmm.ts's int8 loader `dqi32_<n>(i, out) -> vec4<f32>` (raw when `nB` is undefined): the 32 quants
   * from element i as 8 words of int8 and (s0, s1, m0, m1), weight e = s_h·q[e] + m_h (h = e / 16).
   */
  intLoader?(n: string, nB?: number): string;
  /** repack.ts: the type's planes. */
  planes?: Planes;
  /** fill.ts's synthetic weights: the block's scale fields and the values they get (quantized types). */
  syntheticFill?: SyntheticFill;
}

/**
 * How fill.ts makes a quantized type's synthetic weights (real shapes, random contents): every byte of a
 * block is random except its f16 scale fields, which get d = std / {@link stdAtUnitD} (and the min
 * {@link minPerD}·d) so the weights come out finite with a standard deviation near the asked `std`.
 */
export interface SyntheticFill {
  /** The block's f16 scale fields, in block order: byte offset and whether it holds `d` or the min. */
  scales: readonly { at: number; holds: 'd' | 'min' }[];
  /**
   * About the weights' standard deviation at d = 1 with the other bytes uniform random: the σ of the
   * quantized integers times their sub-scales. fill.ts writes it with one decimal.
   */
  stdAtUnitD: number;
  /**
   * The min field as a multiple of d, which centres the weights on 0: dmin for the K-quants (subtracted,
   * so positive), m for Q4_1/Q5_1 (added, so negative). Absent when the block has no min field.
   */
  minPerD?: number;
}

/** One field of a block: its offset and length in the raw block (bytes, a multiple of 4 long). */
export interface PlaneField {
  name: string;
  raw: number;
  bytes: number;
  /** Written by the type's reordering (Q6_K's ql and qh), not copied. */
  reordered?: boolean;
}

/** repack.ts's planes of a type. */
export interface Planes {
  /** Bytes per block in planes. */
  blockBytes: number;
  /**
   * Copied field by field by repack.ts's generic kernel (a thread per pair of blocks, whose `d` share a
   * word): the fields in plane order, without `d` (the last plane, 2 bytes at raw offset `dRaw`), and the
   * type's reordering of its `reordered` fields (WGSL inside the per-block loop: block b at byte o of
   * src, n blocks; and its CPU twin into the planar tensor `out`).
   */
  fields?: { fields: PlaneField[]; dRaw: number };
  reorderWGSL?: string;
  reorderHost?(raw: Uint8Array, b: number, n: number, out: Uint8Array): void;
  /** A kernel of its own (a thread per block) and its CPU twin into `out` (planarBytes long). */
  kernel?: { wgsl: string; host(raw: Uint8Array, n: number, out: Uint8Array): void };
}
