/**
 * Finds NaN and ±infinity in a tensor's bytes as they stream past ({@link NonFiniteScanner}): every value
 * of an F32, F16 or BF16 tensor, and the f16 scales (`d`, and `dmin` / `m` where the type has one) of every
 * block of a quantized one, the only fields of those blocks that can hold a non-finite number (the rest are
 * small integers). A model whose weights hold one produces NaN logits, which the engine reports naming the
 * tensor (src/webgpu/generation.ts).
 *
 * Block layouts: ggml's `ggml-common.h` (block_q4_0 … block_q6_K, block_iq4_nl, block_iq4_xs).
 */
import { bf16ToF32, f16ToF32 } from './half.ts';
import type { TensorChunk } from './types.ts';

/** Where a quantized type keeps its f16 scales: block bytes and the byte offsets of its f16 fields. */
const SCALE_FIELDS: Record<string, { bytes: number; fields: { at: number; name: string }[] }> = {
  Q4_0: { bytes: 18, fields: [{ at: 0, name: 'd' }] },
  Q4_1: {
    bytes: 20,
    fields: [
      { at: 0, name: 'd' },
      { at: 2, name: 'm' },
    ],
  },
  Q5_0: { bytes: 22, fields: [{ at: 0, name: 'd' }] },
  Q5_1: {
    bytes: 24,
    fields: [
      { at: 0, name: 'd' },
      { at: 2, name: 'm' },
    ],
  },
  Q8_0: { bytes: 34, fields: [{ at: 0, name: 'd' }] },
  IQ4_NL: { bytes: 18, fields: [{ at: 0, name: 'd' }] },
  IQ4_XS: { bytes: 136, fields: [{ at: 0, name: 'd' }] },
  Q2_K: {
    bytes: 84,
    fields: [
      { at: 80, name: 'd' },
      { at: 82, name: 'dmin' },
    ],
  },
  Q3_K: { bytes: 110, fields: [{ at: 108, name: 'd' }] },
  Q4_K: {
    bytes: 144,
    fields: [
      { at: 0, name: 'd' },
      { at: 2, name: 'dmin' },
    ],
  },
  Q5_K: {
    bytes: 176,
    fields: [
      { at: 0, name: 'd' },
      { at: 2, name: 'dmin' },
    ],
  },
  Q6_K: { bytes: 210, fields: [{ at: 208, name: 'd' }] },
};

/** The first non-finite number found in a tensor. */
export interface NonFiniteValue {
  /** GGUF tensor name. */
  tensor: string;
  /** ggml type name. */
  type: string;
  /** NaN, Infinity or -Infinity. */
  value: number;
  /** Where: "element 17" (F32/F16/BF16) or "block 3's scale d" (quantized). */
  where: string;
}

/** "NaN", "+infinity" or "-infinity". */
export function describeNonFinite(v: number): string {
  return Number.isNaN(v) ? 'NaN' : v > 0 ? '+infinity' : '-infinity';
}

/**
 * Checks the chunks of a tensor stream ({@link import('./types.ts').GgufFile.streamTensorData}) and keeps
 * the first non-finite value. Values or blocks split across two chunks are put together. Types it does not
 * know are not checked.
 */
export class NonFiniteScanner {
  /** The first non-finite value seen, if any. */
  found: NonFiniteValue | undefined;
  /** The start of an element or block cut at a chunk's end, by tensor name. */
  private carry: { tensor: string; offset: number; bytes: Uint8Array } | undefined;

  /** Checks one chunk (after the first find, nothing more is checked). */
  scan(c: TensorChunk): void {
    if (this.found) return;
    const t = c.tensor;
    const unit = unitBytes(t.typeName);
    if (unit === undefined) return;
    let bytes = c.bytes;
    let offset = c.offset;
    if (
      this.carry &&
      this.carry.tensor === t.name &&
      this.carry.offset + this.carry.bytes.length === offset
    ) {
      const joined = new Uint8Array(this.carry.bytes.length + bytes.length);
      joined.set(this.carry.bytes);
      joined.set(bytes, this.carry.bytes.length);
      bytes = joined;
      offset = this.carry.offset;
    }
    this.carry = undefined;
    // Start at a whole unit (a chunk starting mid-unit without its carry: skip to the next boundary).
    const skip = (unit - (offset % unit)) % unit;
    const whole = Math.floor((bytes.length - skip) / unit) * unit;
    if (skip + whole < bytes.length)
      this.carry = { tensor: t.name, offset: offset + skip + whole, bytes: bytes.slice(skip + whole) };
    if (whole <= 0) return;
    const found = firstNonFinite(t.typeName, bytes.subarray(skip, skip + whole), (offset + skip) / unit);
    if (found) this.found = { tensor: t.name, type: t.typeName, ...found };
  }
}

/** Bytes of one element (F32, F16, BF16) or block (quantized); undefined for types not checked. */
function unitBytes(type: string): number | undefined {
  if (type === 'F32') return 4;
  if (type === 'F16' || type === 'BF16') return 2;
  return SCALE_FIELDS[type]?.bytes;
}

/**
 * The first non-finite value in whole elements or blocks of `type`, numbered from `first`.
 * @param bytes whole units only.
 */
export function firstNonFinite(
  type: string,
  bytes: Uint8Array,
  first = 0,
): { value: number; where: string } | undefined {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (type === 'F32') {
    if (bytes.byteOffset % 4 === 0) {
      const f = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
      for (let i = 0; i < f.length; i++) {
        const v = f[i];
        if (v - v !== 0) return { value: v, where: `element ${first + i}` };
      }
      return undefined;
    }
    for (let i = 0; i + 4 <= bytes.length; i += 4) {
      const v = dv.getFloat32(i, true);
      if (v - v !== 0) return { value: v, where: `element ${first + i / 4}` };
    }
    return undefined;
  }
  if (type === 'F16' || type === 'BF16') {
    // All exponent bits set: ±infinity (mantissa 0) or NaN.
    const exp = type === 'F16' ? 0x7c00 : 0x7f80;
    if (bytes.byteOffset % 2 === 0) {
      const u = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length >> 1);
      for (let i = 0; i < u.length; i++) {
        const h = u[i];
        if ((h & exp) === exp)
          return { value: type === 'F16' ? f16ToF32(h) : bf16ToF32(h), where: `element ${first + i}` };
      }
      return undefined;
    }
    for (let i = 0; i + 2 <= bytes.length; i += 2) {
      const h = dv.getUint16(i, true);
      if ((h & exp) === exp)
        return { value: type === 'F16' ? f16ToF32(h) : bf16ToF32(h), where: `element ${first + i / 2}` };
    }
    return undefined;
  }
  const layout = SCALE_FIELDS[type];
  if (!layout) return undefined;
  for (let b = 0; b + layout.bytes <= bytes.length; b += layout.bytes) {
    for (const f of layout.fields) {
      const h = dv.getUint16(b + f.at, true);
      if ((h & 0x7c00) === 0x7c00)
        return { value: f16ToF32(h), where: `block ${first + b / layout.bytes}'s scale ${f.name}` };
    }
  }
  return undefined;
}
