/**
 * ggml tensor types: ids as in ggml's `ggml.h` (`enum ggml_type`), block sizes and bytes per block as in
 * `ggml-common.h` (the `block_*` structs) and `ggml.c` (`type_traits`). A tensor row of `ne[0]` elements
 * is stored as `ne[0] / blockSize` blocks of `blockBytes` bytes each.
 */
import { EngineError } from '../core/errors.ts';

/** One ggml type. */
export interface GgmlType {
  /** GGML_TYPE_* id, as stored in GGUF tensor infos. */
  id: number;
  /** Name as ggml prints it (`ggml_type_name`), e.g. 'Q4_K'. */
  name: string;
  /** Elements per block (1 for plain types). */
  blockSize: number;
  /** Bytes per block. */
  blockBytes: number;
  /** True for block-quantized types. */
  quantized: boolean;
}

function t(id: number, name: string, blockSize: number, blockBytes: number): GgmlType {
  return { id, name, blockSize, blockBytes, quantized: blockSize > 1 };
}

/**
 * Every type a GGUF file may hold. Ids 4–5 (Q4_2, Q4_3), 31–33 (Q4_0_4_4…) and 36–38 (IQ4_NL_4_4…) were
 * removed from ggml and are not valid in files.
 */
export const GGML_TYPES: readonly GgmlType[] = [
  t(0, 'F32', 1, 4),
  t(1, 'F16', 1, 2),
  t(2, 'Q4_0', 32, 18), // half d; u8 qs[16]
  t(3, 'Q4_1', 32, 20), // half d, m; u8 qs[16]
  t(6, 'Q5_0', 32, 22), // half d; u8 qh[4]; u8 qs[16]
  t(7, 'Q5_1', 32, 24), // half d, m; u8 qh[4]; u8 qs[16]
  t(8, 'Q8_0', 32, 34), // half d; i8 qs[32]
  t(9, 'Q8_1', 32, 36), // half d, s; i8 qs[32]
  t(10, 'Q2_K', 256, 84), // u8 scales[16]; u8 qs[64]; half d, dmin
  t(11, 'Q3_K', 256, 110), // u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
  t(12, 'Q4_K', 256, 144), // half d, dmin; u8 scales[12]; u8 qs[128]
  t(13, 'Q5_K', 256, 176), // half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
  t(14, 'Q6_K', 256, 210), // u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
  t(15, 'Q8_K', 256, 292), // float d; i8 qs[256]; i16 bsums[16]
  t(16, 'IQ2_XXS', 256, 66),
  t(17, 'IQ2_XS', 256, 74),
  t(18, 'IQ3_XXS', 256, 98),
  t(19, 'IQ1_S', 256, 50),
  t(20, 'IQ4_NL', 32, 18),
  t(21, 'IQ3_S', 256, 110),
  t(22, 'IQ2_S', 256, 82),
  t(23, 'IQ4_XS', 256, 136),
  t(24, 'I8', 1, 1),
  t(25, 'I16', 1, 2),
  t(26, 'I32', 1, 4),
  t(27, 'I64', 1, 8),
  t(28, 'F64', 1, 8),
  t(29, 'IQ1_M', 256, 56),
  t(30, 'BF16', 1, 2),
  t(34, 'TQ1_0', 256, 54),
  t(35, 'TQ2_0', 256, 66),
  t(39, 'MXFP4', 32, 17), // u8 e (E8M0); u8 qs[16]
  t(40, 'NVFP4', 64, 36), // u8 d[4] (UE4M3); u8 qs[32]
];

const BY_ID = new Map(GGML_TYPES.map((x) => [x.id, x]));
const BY_NAME = new Map(GGML_TYPES.map((x) => [x.name, x]));

/** Ids of the common types, for readable code: `GgmlTypeId.Q4_K`. */
export const GgmlTypeId = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  BF16: 30,
} as const;

function where(tensorName?: string): string {
  return tensorName ? ` (tensor ${tensorName})` : '';
}

/** The type with this id, or undefined. */
export function findGgmlType(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/**
 * The type with this id.
 * @throws EngineError('unsupported_model') for ids this engine does not know (removed or newer types).
 */
export function ggmlType(id: number, tensorName?: string): GgmlType {
  const ty = BY_ID.get(id);
  if (!ty) {
    throw new EngineError(
      'unsupported_model',
      `unknown ggml tensor type id ${id}${where(tensorName)}: the file may come from a newer llama.cpp than ` +
        `this engine knows (known ids: ${GGML_TYPES.map((x) => x.id).join(', ')})`,
    );
  }
  return ty;
}

/** The type with this name ('F32', 'Q4_K', …). @throws EngineError('invalid_argument') when unknown. */
export function ggmlTypeByName(name: string): GgmlType {
  const ty = BY_NAME.get(name);
  if (!ty) throw new EngineError('invalid_argument', `unknown ggml type name "${name}"`);
  return ty;
}

/** The ggml name of a type id ('F32', 'Q4_K'), or `type<id>` for unknown ids. */
export function ggmlTypeName(id: number): string {
  return BY_ID.get(id)?.name ?? `type${id}`;
}

/** Number of elements of a shape (product of its dimensions; 1 for a scalar `[]`). */
export function shapeElements(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Bytes a tensor of this type and shape (ggml order, `shape[0]` innermost) takes in a GGUF file.
 * @throws EngineError('unsupported_model') for unknown type ids; ('gguf_invalid') when a dimension is not
 *   a non-negative safe integer, `shape[0]` is not a multiple of the block size, or the size overflows.
 */
export function tensorBytes(type: number, shape: readonly number[], tensorName?: string): number {
  const ty = ggmlType(type, tensorName);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new EngineError(
        'gguf_invalid',
        `tensor shape [${shape.join(', ')}]${where(tensorName)} has an invalid dimension ${d}`,
      );
    }
  }
  const ne0 = shape.length > 0 ? shape[0] : 1;
  if (ne0 % ty.blockSize !== 0) {
    throw new EngineError(
      'gguf_invalid',
      `tensor shape [${shape.join(', ')}]${where(tensorName)}: ${ty.name} stores blocks of ${ty.blockSize} ` +
        `elements, but the row length ${ne0} is not a multiple of ${ty.blockSize}`,
    );
  }
  const bytes = (shapeElements(shape) / ty.blockSize) * ty.blockBytes;
  if (!Number.isSafeInteger(bytes)) {
    throw new EngineError(
      'gguf_invalid',
      `tensor shape [${shape.join(', ')}]${where(tensorName)} is too large (${bytes} bytes)`,
    );
  }
  return bytes;
}
