/**
 * The non-finite scan of weights as they stream: every value of F32, F16 and BF16 tensors and the f16
 * scales of quantized blocks (made here by our quantizer, then one scale overwritten), whole or cut across
 * chunks at every offset.
 */
import { describe, expect, it } from 'vitest';
import { f32ToBf16, f32ToF16 } from './half.ts';
import { firstNonFinite, NonFiniteScanner } from './non-finite.ts';
import { CODEC_TYPES, dequantizeRow, quantizeRow } from './quantize.ts';
import type { GgufTensorInfo } from './types.ts';

const info = (typeName: string): GgufTensorInfo => ({
  name: 'blk.1.attn_q.weight',
  type: 0,
  typeName,
  shape: [],
  fileOffset: 0,
  nBytes: 0,
});

function floats(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2;
  });
}

/** Feeds `bytes` to a scanner in chunks of `size` bytes (the last one shorter). */
function scanInChunks(typeName: string, bytes: Uint8Array, size: number) {
  const s = new NonFiniteScanner();
  for (let o = 0; o < bytes.length; o += size)
    s.scan({ tensor: info(typeName), offset: o, bytes: bytes.subarray(o, Math.min(bytes.length, o + size)) });
  return s.found;
}

describe('NonFiniteScanner', () => {
  it('finds NaN and ±infinity in F32, F16 and BF16 tensors, at the right element, across any chunking', () => {
    for (const [bad, label] of [
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      [Number.NEGATIVE_INFINITY, '-Infinity'],
    ] as const) {
      const f = floats(997, 3);
      const at = 613;
      f[at] = bad;
      const f32 = new Uint8Array(f.buffer);
      const f16 = new Uint8Array(Uint16Array.from(f, f32ToF16).buffer);
      const bf16 = new Uint8Array(Uint16Array.from(f, f32ToBf16).buffer);
      for (const [type, bytes] of [
        ['F32', f32],
        ['F16', f16],
        ['BF16', bf16],
      ] as const) {
        for (const chunk of [bytes.length, 4096, 1000, 7, 3]) {
          const got = scanInChunks(type, bytes, chunk);
          expect(got, `${type} ${label} in chunks of ${chunk}`).toMatchObject({
            tensor: 'blk.1.attn_q.weight',
            type,
            where: `element ${at}`,
          });
          expect(String(got?.value)).toBe(label);
        }
        // The same values without the bad one: nothing found.
        const ok = Float32Array.from(f, (v, i) => (i === at ? 0.5 : v));
        expect(firstNonFinite('F32', new Uint8Array(ok.buffer))).toBeUndefined();
      }
    }
  });

  it('finds a non-finite f16 scale in each quantized type, naming the block and field', () => {
    // Where each type keeps its f16 scales: ggml-common.h's block structs.
    const cases = [
      ['Q4_0', 18, 0, 'd'],
      ['Q4_1', 20, 2, 'm'],
      ['Q5_0', 22, 0, 'd'],
      ['Q5_1', 24, 0, 'd'],
      ['Q8_0', 34, 0, 'd'],
      ['IQ4_NL', 18, 0, 'd'],
      ['IQ4_XS', 136, 0, 'd'],
      ['Q2_K', 84, 82, 'dmin'],
      ['Q3_K', 110, 108, 'd'],
      ['Q4_K', 144, 2, 'dmin'],
      ['Q5_K', 176, 0, 'd'],
      ['Q6_K', 210, 208, 'd'],
    ] as const;
    for (const [type, blockBytes, fieldAt, field] of cases) {
      const n = 256 * 7;
      expect(CODEC_TYPES).toContain(type);
      const q = quantizeRow(type, floats(n, 11));
      expect(q.length % blockBytes).toBe(0);
      const blocks = q.length / blockBytes;
      expect(scanInChunks(type, q, 64), `${type} as quantized`).toBeUndefined();
      const block = blocks - 2;
      const bad = q.slice();
      new DataView(bad.buffer).setUint16(block * blockBytes + fieldAt, 0x7e00, true); // f16 NaN
      // The field is a scale of that block (the dequantizer, quant-*.ts, reads NaN there) and of no other.
      const x = dequantizeRow(type, bad, n);
      const perBlock = n / blocks;
      const nan = [...x.keys()].filter((i) => Number.isNaN(x[i]));
      expect(nan.length, type).toBeGreaterThan(0);
      expect(
        nan.every((i) => Math.floor(i / perBlock) === block),
        type,
      ).toBe(true);
      for (const chunk of [bad.length, 100, 33]) {
        const got = scanInChunks(type, bad, chunk);
        expect(got?.where, `${type} in chunks of ${chunk}`).toBe(`block ${block}'s scale ${field}`);
        expect(got?.value).toBeNaN();
      }
    }
  });
});
