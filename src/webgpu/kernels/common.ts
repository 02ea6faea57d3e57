/**
 * Shared pieces of the WGSL kernels. Kernels are generated from TypeScript template functions (not
 * `.wgsl` files imported with `?raw`) so the same engine runs under Vite, in Vitest and in plain Node
 * (tsx) without a bundler; model dimensions are baked in as constants, so each pipeline is specialised
 * to one shape (the pipeline cache key is the generated source).
 */
import { ggmlTypeByName } from '../../gguf/ggml-types.ts';

/** Threads per workgroup used by every kernel (x dimension). */
export const WG = 64;

/**
 * Per-step parameters, one 16-byte uniform written with `queue.writeBuffer` before each submit:
 * `nTokens` = tokens in this batch (T), `pos0` = position of the batch's first token in the sequence.
 * Defined once here; {@link packStep} packs it.
 */
export const STEP_WGSL = `struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };`;

/** Bytes of the Step uniform. */
export const STEP_BYTES = 16;

/** Packs the Step uniform (see {@link STEP_WGSL}). */
export function packStep(nTokens: number, pos0: number, out = new Uint32Array(4)): Uint32Array {
  out[0] = nTokens;
  out[1] = pos0;
  out[2] = 0;
  out[3] = 0;
  return out;
}

/**
 * Weight storage types the kernels read, all dequantized in the kernel (never expanded in memory): F32,
 * F16 and BF16 one weight per element, the others ggml's quantized blocks (`ggml-common.h`). Each type's
 * layout, dequantization and the kernels that read it are in the header of its block decoder,
 * kernels/quants/<type>.ts (float.ts for the float types; quants/index.ts lists them). Blocks are read
 * from u32 words at byte offsets, so rows need no alignment.
 */
export type WeightType =
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'Q8_0'
  | 'Q4_0'
  | 'Q5_0'
  | 'Q4_K'
  | 'Q6_K'
  | 'Q4_1'
  | 'Q5_1'
  | 'IQ4_NL'
  | 'IQ4_XS'
  | 'Q5_K'
  | 'Q3_K'
  | 'Q2_K';

/** All weight types the kernels support, by ggml type name. */
export const WEIGHT_TYPES: readonly WeightType[] = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q5_0',
  'Q4_K',
  'Q6_K',
  'Q4_1',
  'Q5_1',
  'IQ4_NL',
  'IQ4_XS',
  'Q5_K',
  'Q3_K',
  'Q2_K',
];

/** Block size (weights) and bytes per block for each weight type: gguf/ggml-types.ts's (ggml-common.h). */
export const WEIGHT_BLOCK: Record<WeightType, { size: number; bytes: number }> = Object.fromEntries(
  WEIGHT_TYPES.map((t) => {
    const g = ggmlTypeByName(t);
    return [t, { size: g.blockSize, bytes: g.blockBytes }];
  }),
) as Record<WeightType, { size: number; bytes: number }>;

/** True for block-quantized types (read 32 weights at a time by `dq32_<name>`). */
export function isQuantized(t: WeightType): boolean {
  return WEIGHT_BLOCK[t].size > 1;
}

/** Bytes of one row of K weights. @throws Error when K is not a multiple of the block size. */
export function rowBytes(t: WeightType, K: number): number {
  const b = WEIGHT_BLOCK[t];
  if (K % b.size !== 0)
    throw new Error(`a row of ${K} ${t} weights is not a whole number of ${b.size}-weight blocks`);
  return (K / b.size) * b.bytes;
}

/** WGSL storage array element type for a weight type. */
export function wgslArrayType(t: WeightType): string {
  return t === 'F32' ? 'array<f32>' : 'array<u32>';
}

/** Formats a number as a WGSL f32 literal. */
export function f32Lit(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`non-finite constant ${x}`);
  const s = x.toExponential(9);
  return `${s}f`;
}

/**
 * Scratch buffers for a load-time trial or self-test: `buf(data | bytes, usage)` creates a buffer labelled
 * `label` (size rounded up to 16 bytes, at least 16; `data` written at offset 0; usage STORAGE | COPY_DST
 * unless given), and `destroy()` frees every buffer made (call it in a `finally`, so GPU memory is released
 * on every path).
 */
export function scratchBuffers(
  device: GPUDevice,
  label: string,
): { buf: (data: ArrayBufferView | number, usage?: number) => GPUBuffer; destroy: () => void } {
  const made: GPUBuffer[] = [];
  return {
    buf(data, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) {
      const size = typeof data === 'number' ? data : data.byteLength;
      const b = device.createBuffer({ label, size: Math.max(16, Math.ceil(size / 16) * 16), usage });
      if (typeof data !== 'number')
        device.queue.writeBuffer(b, 0, data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
      made.push(b);
      return b;
    },
    destroy() {
      for (const b of made) b.destroy();
      made.length = 0;
    },
  };
}
