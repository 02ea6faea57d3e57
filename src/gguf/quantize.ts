/**
 * Quantization and dequantization of ggml tensor data, bit for bit as ggml's reference C code
 * (`ggml/src/ggml-quants.c`: `quantize_row_*_ref`, `dequantize_row_*`; block layouts from
 * `ggml-common.h`; F16/BF16 from `ggml-impl.h`) at the llama.cpp that node-llama-cpp 3.21.1 ships.
 *
 * Exactness: ggml does this arithmetic in IEEE binary32. Every operation here is a float64 operation
 * rounded to binary32 with `Math.fround` (for + − × ÷ and √ of binary32 inputs this gives the correctly
 * rounded binary32 result, because binary64 has more than 2·24 + 2 bits), in the C code's evaluation
 * order, with no fused multiply-add (as the prebuilt `libggml-base` computes; checked against it in
 * `quantize.test.ts` through the golden file `tests/golden/quant.json`, see `scripts/golden-quant.ts`).
 *
 * Block layouts (little-endian; `half` = IEEE binary16 bits):
 * - Q8_0: 32 elements in 34 bytes: half d; int8 qs[32]. x = d·q.
 * - Q4_0: 32 in 18: half d; u8 qs[16]: low nibbles are elements 0–15, high nibbles 16–31. x = d·(q − 8).
 * - Q5_0: 32 in 22: half d; u8 qh[4] (bit j = 5th bit of element j); u8 qs[16] as Q4_0. x = d·(q − 16).
 * - Q4_K: 256 in 144: half d, dmin; u8 scales[12] (eight 6-bit scales and mins, see quant-k.ts `scaleMinK4`);
 *   u8 qs[128]: for each 64 elements, 32 bytes whose low nibbles are the first 32 and high nibbles the
 *   next 32. Sub-block j (32 elements): x = d·sc_j·q − dmin·m_j.
 * - Q6_K: 256 in 210: u8 ql[128] (low 4 bits); u8 qh[64] (high 2 bits); int8 scales[16]; half d.
 *   Sub-block of 16: x = d·scale·(q − 32).
 * - Q5_K: 256 in 176: half d, dmin; u8 scales[12] as Q4_K; u8 qh[32] (bit s of byte l = 5th bit of
 *   element 32s + l); u8 qs[128] as Q4_K. Sub-block s (32): x = d·sc_s·(q + 16·h) − dmin·m_s.
 * - Q3_K: 256 in 110: u8 hmask[32] (bit 4h + j of byte l: high bit of element 128h + 32j + l); u8
 *   qs[64] (2 bits per element, byte 32h + l at shift 2j); u8 scales[12] (sixteen 6-bit scales, see
 *   quant-k-low.ts `q3kScale`); half d. Group of 16 g: x = d·(sc_g − 32)·(q − 4·!hbit).
 * - Q2_K: 256 in 84: u8 scales[16] (low nibble scale, high nibble min); u8 qs[64] as Q3_K's qs; half
 *   d, dmin. Group of 16 g: x = d·(sc_g & 15)·q − dmin·(sc_g >> 4).
 * - Q4_1: 32 in 20: half d, m; u8 qs[16] as Q4_0. x = d·q + m.
 * - Q5_1: 32 in 24: half d, m; u8 qh[4]; u8 qs[16] as Q5_0. x = d·q + m.
 * - IQ4_NL: 32 in 18: half d; u8 qs[16] as Q4_0. x = d·kvalues_iq4nl[q] (quant-legacy.ts `KVALUES_IQ4NL`).
 * - IQ4_XS: 256 in 136: half d; u16 scales_h (2 high bits per block of 32); u8 scales_l[4] (low 4
 *   bits, block 2k in the low nibble of byte k); u8 qs[128], 16 bytes per block of 32 as IQ4_NL.
 *   Block ib: x = d·(ls − 32)·kvalues_iq4nl[q].
 *
 * The codecs: quant-legacy.ts (32-element blocks, IQ4_XS), quant-k.ts (Q4_K, Q5_K, Q6_K), quant-k-low.ts
 * (Q2_K, Q3_K); half.ts holds F16/BF16, quant-common.ts the helpers they share.
 */

import { EngineError } from '../core/errors.ts';
import { findGgmlType, type GgmlType, ggmlType, ggmlTypeByName } from './ggml-types.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half.ts';
import { setHalf } from './quant-common.ts';
import {
  dequantizeQ4_K,
  dequantizeQ5_K,
  dequantizeQ6_K,
  quantizeQ4_K,
  quantizeQ5_K,
  quantizeQ6_K,
} from './quant-k.ts';
import { dequantizeQ2_K, dequantizeQ3_K, quantizeQ2_K, quantizeQ3_K } from './quant-k-low.ts';
import {
  dequantizeIq4Nl,
  dequantizeIq4Xs,
  dequantizeQ4_0,
  dequantizeQ4_1,
  dequantizeQ5_0,
  dequantizeQ5_1,
  dequantizeQ8_0,
  quantizeIq4Nl,
  quantizeIq4Xs,
  quantizeQ4_0,
  quantizeQ4_1,
  quantizeQ5_0,
  quantizeQ5_1,
  quantizeQ8_0,
} from './quant-legacy.ts';

// ---------------------------------------------------------------------------------------------------
// Public API

interface Codec {
  quantize(x: Float32Array, out: Uint8Array): void;
  dequantize(b: Uint8Array, y: Float32Array): void;
}

const CODECS: Record<string, Codec> = {
  F32: {
    quantize: (x, out) => out.set(new Uint8Array(x.buffer, x.byteOffset, x.byteLength)),
    dequantize: (b, y) => {
      const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
      for (let i = 0; i < y.length; i++) y[i] = dv.getFloat32(4 * i, true);
    },
  },
  F16: {
    quantize: (x, out) => {
      for (let i = 0; i < x.length; i++) setHalf(out, 2 * i, f32ToF16(x[i]));
    },
    dequantize: (b, y) => {
      for (let i = 0; i < y.length; i++) y[i] = f16ToF32(b[2 * i] | (b[2 * i + 1] << 8));
    },
  },
  BF16: {
    quantize: (x, out) => {
      for (let i = 0; i < x.length; i++) setHalf(out, 2 * i, f32ToBf16(x[i]));
    },
    dequantize: (b, y) => {
      for (let i = 0; i < y.length; i++) y[i] = bf16ToF32(b[2 * i] | (b[2 * i + 1] << 8));
    },
  },
  Q8_0: { quantize: quantizeQ8_0, dequantize: dequantizeQ8_0 },
  Q4_0: { quantize: quantizeQ4_0, dequantize: dequantizeQ4_0 },
  Q5_0: { quantize: quantizeQ5_0, dequantize: dequantizeQ5_0 },
  Q4_K: { quantize: quantizeQ4_K, dequantize: dequantizeQ4_K },
  Q6_K: { quantize: quantizeQ6_K, dequantize: dequantizeQ6_K },
  Q5_K: { quantize: quantizeQ5_K, dequantize: dequantizeQ5_K },
  Q3_K: { quantize: quantizeQ3_K, dequantize: dequantizeQ3_K },
  Q2_K: { quantize: quantizeQ2_K, dequantize: dequantizeQ2_K },
  Q4_1: { quantize: quantizeQ4_1, dequantize: dequantizeQ4_1 },
  Q5_1: { quantize: quantizeQ5_1, dequantize: dequantizeQ5_1 },
  IQ4_NL: { quantize: quantizeIq4Nl, dequantize: dequantizeIq4Nl },
  IQ4_XS: { quantize: quantizeIq4Xs, dequantize: dequantizeIq4Xs },
};

/** Types {@link quantizeRow} writes and {@link dequantizeRow} reads. */
export const CODEC_TYPES: readonly string[] = Object.keys(CODECS);

function resolveType(type: number | string): GgmlType {
  return typeof type === 'number' ? ggmlType(type) : ggmlTypeByName(type);
}

function codecFor(ty: GgmlType): Codec {
  const c = CODECS[ty.name];
  if (!c) {
    throw new EngineError(
      'unsupported_model',
      `ggml type ${ty.name} cannot be (de)quantized here; supported: ${CODEC_TYPES.join(', ')}`,
    );
  }
  return c;
}

/** True when {@link quantizeRow} and {@link dequantizeRow} handle this type. */
export function hasCodec(type: number | string): boolean {
  const name = typeof type === 'number' ? findGgmlType(type)?.name : type;
  return name !== undefined && Object.hasOwn(CODECS, name);
}

function checkLength(ty: GgmlType, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0 || n % ty.blockSize !== 0) {
    throw new EngineError(
      'invalid_argument',
      `${ty.name} stores blocks of ${ty.blockSize} elements; ${n} elements is not a whole number of blocks`,
    );
  }
}

/**
 * Quantizes `x` (any number of whole blocks: one row, or a whole tensor of rows, which is the same
 * thing for these types) to `type`, exactly as ggml's `quantize_row_*_ref` / `ggml_quantize_chunk`
 * without an importance matrix.
 * @param type ggml type id or name: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, Q4_1, Q5_1,
 *   IQ4_NL, IQ4_XS,
 *   Q5_K, Q3_K, Q2_K.
 * @returns `x.length / blockSize · blockBytes` bytes.
 * @throws EngineError('invalid_argument') when x.length is not a multiple of the block size;
 *   ('unsupported_model') for other types.
 */
export function quantizeRow(type: number | string, x: Float32Array): Uint8Array {
  const ty = resolveType(type);
  const codec = codecFor(ty);
  checkLength(ty, x.length);
  const out = new Uint8Array((x.length / ty.blockSize) * ty.blockBytes);
  codec.quantize(x, out);
  return out;
}

/**
 * Decodes `n` elements of `type` from `bytes` (which must hold at least their blocks) to float32,
 * exactly as ggml's `dequantize_row_*` (and `ggml_fp16_to_fp32_row`, `ggml_bf16_to_fp32_row`): the
 * reference for the GPU kernels.
 * @throws EngineError('invalid_argument') when n is not a whole number of blocks or `bytes` is too
 *   short; ('unsupported_model') for other types.
 */
export function dequantizeRow(type: number | string, bytes: Uint8Array, n: number): Float32Array {
  const ty = resolveType(type);
  const codec = codecFor(ty);
  checkLength(ty, n);
  const need = (n / ty.blockSize) * ty.blockBytes;
  if (bytes.length < need) {
    throw new EngineError(
      'invalid_argument',
      `${n} ${ty.name} elements need ${need} bytes, but only ${bytes.length} were given`,
    );
  }
  const y = new Float32Array(n);
  codec.dequantize(bytes, y);
  return y;
}
