import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { GGML_TYPES, GgmlTypeId, ggmlType, ggmlTypeByName, ggmlTypeName, tensorBytes } from './ggml-types.ts';

describe('ggml types', () => {
  it('has the block sizes of ggml-common.h', () => {
    const want: Record<string, [number, number, number]> = {
      F32: [0, 1, 4],
      F16: [1, 1, 2],
      Q4_0: [2, 32, 18],
      Q4_1: [3, 32, 20],
      Q5_0: [6, 32, 22],
      Q5_1: [7, 32, 24],
      Q8_0: [8, 32, 34],
      Q8_1: [9, 32, 36],
      Q2_K: [10, 256, 84],
      Q3_K: [11, 256, 110],
      Q4_K: [12, 256, 144],
      Q5_K: [13, 256, 176],
      Q6_K: [14, 256, 210],
      Q8_K: [15, 256, 292],
      IQ4_NL: [20, 32, 18],
      IQ4_XS: [23, 256, 136],
      I8: [24, 1, 1],
      I32: [26, 1, 4],
      BF16: [30, 1, 2],
      MXFP4: [39, 32, 17],
    };
    for (const [name, [id, bs, bb]] of Object.entries(want)) {
      const t = ggmlTypeByName(name);
      expect([t.id, t.blockSize, t.blockBytes], name).toEqual([id, bs, bb]);
      expect(ggmlType(id).name).toBe(name);
      expect(ggmlTypeName(id)).toBe(name);
    }
    expect(GgmlTypeId.Q6_K).toBe(14);
    expect(new Set(GGML_TYPES.map((t) => t.id)).size).toBe(GGML_TYPES.length);
    for (const t of GGML_TYPES) expect(t.quantized).toBe(t.blockSize > 1);
  });

  it('computes tensor sizes', () => {
    expect(tensorBytes(0, [64, 512])).toBe(131072);
    expect(tensorBytes(1, [64, 3])).toBe(384);
    expect(tensorBytes(2, [4096, 11008])).toBe((4096 / 32) * 18 * 11008);
    expect(tensorBytes(12, [4096, 4096])).toBe(16 * 144 * 4096);
    expect(tensorBytes(14, [256, 2, 3])).toBe(210 * 6);
    expect(tensorBytes(0, [])).toBe(4);
    expect(tensorBytes(0, [0, 5])).toBe(0);
  });

  it('throws on unknown ids and impossible shapes, naming the tensor', () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        if (isEngineError(e)) return e;
      }
      throw new Error('expected an EngineError');
    };
    const e = err(() => tensorBytes(4, [32], 'blk.0.attn_q.weight'));
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toContain('type id 4 (tensor blk.0.attn_q.weight)');
    expect(err(() => ggmlType(1234)).code).toBe('unsupported_model');
    const b = err(() => tensorBytes(12, [100, 3], 'x.weight'));
    expect(b.code).toBe('gguf_invalid');
    expect(b.message).toMatch(/x\.weight.*Q4_K.*256.*100/);
    expect(err(() => tensorBytes(0, [-1])).code).toBe('gguf_invalid');
    expect(err(() => tensorBytes(0, [2 ** 32, 2 ** 32])).code).toBe('gguf_invalid');
    expect(err(() => ggmlTypeByName('Q9_9')).code).toBe('invalid_argument');
    expect(ggmlTypeName(77)).toBe('type77');
  });
});
