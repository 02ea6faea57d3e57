/**
 * The quantizer against llama.cpp bit for bit (tests/golden/quant.json, made by `npm run golden:quant`
 * from ggml's own `ggml_quantize_chunk` and `to_float`), round-trip error bounds per type, and the
 * block layouts spelled out on hand-made blocks (what a kernel must read).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import goldenQuant from '../../../tests/golden/quant.json';
import { mulberry32, randn } from '../util/prng.ts';
import { quantGoldenCases } from './quant-cases.ts';
import {
  bf16ToF32,
  dequantizeRow,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  hasCodec,
  quantizeRow,
  scaleMinK4,
} from './quantize.ts';

function sha256(b: Uint8Array | Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(b.buffer, b.byteOffset, b.byteLength))
    .digest('hex');
}

describe('bit-exact with ggml (golden from the prebuilt llama.cpp libraries)', () => {
  const cases = new Map(quantGoldenCases().map((c) => [c.name, c]));
  it.each(goldenQuant.blocks.map((b) => [`${b.case} ${b.type}`, b] as const))('%s', (_, b) => {
    const c = cases.get(b.case)!;
    expect(c.data.length).toBe(b.elements);
    const q = quantizeRow(b.type, c.data);
    expect(sha256(q), 'quantized bytes').toBe(b.quantizedSha256);
    expect(sha256(dequantizeRow(b.type, q, c.data.length)), 'dequantized floats').toBe(b.dequantizedSha256);
  });

  it('covers every type with a codec except F32', () => {
    const types = new Set(goldenQuant.blocks.map((b) => b.type));
    expect([...types].sort()).toEqual(['BF16', 'F16', 'Q4_0', 'Q4_K', 'Q5_0', 'Q6_K', 'Q8_0']);
  });
});

describe('round trip on random data', () => {
  // Normal values with three spreads and a small offset (no zeros, no blocks of equal values).
  const r = mulberry32(7);
  const n = 256 * 128;
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = randn(r) * (1 + 10 * (Math.floor(i / 256) % 3)) + 0.01;

  /** Largest |error| / (largest |x|) over 32-element blocks, and the relative RMS error. */
  function errors(type: string): { worst: number; relRmse: number; y: Float32Array } {
    const y = dequantizeRow(type, quantizeRow(type, x), n);
    let worst = 0;
    let se = 0;
    let sx = 0;
    for (let b = 0; b < n / 32; b++) {
      let amax = 0;
      let emax = 0;
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        amax = Math.max(amax, Math.abs(x[i]));
        emax = Math.max(emax, Math.abs(x[i] - y[i]));
        se += (x[i] - y[i]) ** 2;
        sx += x[i] ** 2;
      }
      worst = Math.max(worst, emax / amax);
    }
    return { worst, relRmse: Math.sqrt(se / sx), y };
  }

  // Bounds: half a step (d = amax/127, amax/8, amax/16), a whole step for Q4_0/Q5_0 at the clamped end
  // (+8 and +16 are not representable), plus |q|·|d − fp16(d)| ≤ amax·2⁻¹¹ from storing d in half.
  // K-quants: measured 0.102 / 0.072 (Q4_K) and 0.019 / 0.018 (Q6_K), bounds with some margin.
  it.each([
    ['Q8_0', 1 / 254 + 2 ** -11, 0.007],
    ['Q4_0', 1 / 8 + 2 ** -11, 0.1],
    ['Q5_0', 1 / 16 + 2 ** -11, 0.05],
    ['Q4_K', 0.13, 0.08],
    ['Q6_K', 0.025, 0.022],
  ])('%s: max error ≤ %f·amax per block, relative RMS error ≤ %f', (type, maxRel, rmse) => {
    const e = errors(type);
    expect(e.worst).toBeLessThanOrEqual(maxRel * (1 + 1e-6));
    expect(e.relRmse).toBeLessThanOrEqual(rmse);
    expect(e.relRmse).toBeGreaterThan(0);
  });

  it.each([
    ['F16', 2 ** -11],
    ['BF16', 2 ** -8],
  ])('%s: every value within a relative %f (round to nearest)', (type, rel) => {
    const y = dequantizeRow(type, quantizeRow(type, x), n);
    let worst = 0;
    for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(y[i] - x[i]) / Math.abs(x[i]));
    expect(worst).toBeLessThanOrEqual(rel);
  });

  it('F32 is stored as is', () => {
    expect(dequantizeRow('F32', quantizeRow('F32', x), n)).toEqual(x);
  });

  it('quantizing the dequantized values again changes nothing (Q8_0, Q4_0)', () => {
    for (const t of ['Q8_0', 'Q4_0']) {
      const q = quantizeRow(t, x);
      expect(quantizeRow(t, dequantizeRow(t, q, n))).toEqual(q);
    }
  });
});

describe('half and bfloat16', () => {
  it('rounds to nearest even, with subnormals, overflow and NaN as ggml', () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie → even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (up)
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // overflows to inf
    expect(f32ToF16(2 ** -24)).toBe(0x0001);
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // tie → even (zero)
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002);
    expect(f32ToF16(-0)).toBe(0x8000);
    expect(f32ToF16(Number.NaN)).toBe(0x7e00);
    expect(f16ToF32(0x3555)).toBe(0.333251953125);
    expect(f16ToF32(0xfbff)).toBe(-65504);
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(f32ToBf16(Number.NaN) & 0x7fc0).toBe(0x7fc0);
    expect(bf16ToF32(0xc040)).toBe(-3);
    for (let h = 0; h < 0x7c00; h += 7) expect(f32ToF16(f16ToF32(h))).toBe(h);
  });
});

describe('block layouts (what a kernel reads)', () => {
  const half = (v: number) => [f32ToF16(v) & 0xff, f32ToF16(v) >> 8];

  it('Q8_0: half d, then 32 signed bytes; x = d·q', () => {
    const b = new Uint8Array(34);
    b.set(half(0.5), 0);
    for (let j = 0; j < 32; j++) b[2 + j] = (j - 16) & 0xff;
    const y = dequantizeRow('Q8_0', b, 32);
    expect(Array.from(y)).toEqual(Array.from({ length: 32 }, (_, j) => (j - 16) * 0.5));
  });

  it('Q4_0: half d, then 16 bytes: low nibbles are elements 0–15, high nibbles 16–31; x = d·(q − 8)', () => {
    const b = new Uint8Array(18);
    b.set(half(2), 0);
    for (let j = 0; j < 16; j++) b[2 + j] = j | ((15 - j) << 4);
    const y = dequantizeRow('Q4_0', b, 32);
    for (let j = 0; j < 16; j++) {
      expect(y[j]).toBe((j - 8) * 2);
      expect(y[16 + j]).toBe((15 - j - 8) * 2);
    }
  });

  it('Q5_0: half d, u32 qh (bit j = high bit of element j), 16 nibble bytes as Q4_0; x = d·(q − 16)', () => {
    const b = new Uint8Array(22);
    b.set(half(1), 0);
    const qh = 0x80000001; // elements 0 and 31 get their 5th bit
    b.set([qh & 0xff, (qh >>> 8) & 0xff, (qh >>> 16) & 0xff, qh >>> 24], 2);
    for (let j = 0; j < 16; j++) b[6 + j] = 3 | (5 << 4);
    const y = dequantizeRow('Q5_0', b, 32);
    expect(y[0]).toBe(16 + 3 - 16);
    expect(y[1]).toBe(3 - 16);
    expect(y[16]).toBe(5 - 16);
    expect(y[31]).toBe(16 + 5 - 16);
  });

  it('Q4_K: d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles in 4 groups of 64 elements', () => {
    const b = new Uint8Array(144);
    b.set(half(0.5), 0); // d
    b.set(half(0.25), 2); // dmin
    // Sub-block j: scale 10 + j, min 40 + j (6 bits each; j ≥ 4 uses the packed high bits).
    const sc = b.subarray(4, 16);
    for (let j = 0; j < 8; j++) {
      const ls = 10 + j + (j >= 4 ? 40 : 0); // j ≥ 4: values ≥ 16 exercise the top 2 bits
      const lm = 40 + j - (j >= 4 ? 30 : 0);
      if (j < 4) {
        sc[j] = ls;
        sc[j + 4] = lm;
      } else {
        sc[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
        sc[j - 4] |= (ls >> 4) << 6;
        sc[j] |= (lm >> 4) << 6;
      }
    }
    for (let j = 0; j < 8; j++) {
      expect(scaleMinK4(j, b, 4)).toEqual([10 + j + (j >= 4 ? 40 : 0), 40 + j - (j >= 4 ? 30 : 0)]);
    }
    // qs: byte l of group g holds element 64g + l (low nibble) and 64g + 32 + l (high nibble).
    for (let g = 0; g < 4; g++)
      for (let l = 0; l < 32; l++) b[16 + 32 * g + l] = (l & 15) | ((15 - (l & 15)) << 4);
    const y = dequantizeRow('Q4_K', b, 256);
    for (let e = 0; e < 256; e++) {
      const j = e >> 5; // sub-block
      const [s, m] = scaleMinK4(j, b, 4);
      const l = e & 31;
      const q = e % 64 < 32 ? l & 15 : 15 - (l & 15);
      expect(y[e]).toBe(Math.fround(Math.fround(0.5 * s) * q) - Math.fround(0.25 * m));
    }
  });

  it('Q6_K: ql[128], qh[64], int8 scales[16], then half d; 2 groups of 128 elements', () => {
    const b = new Uint8Array(210);
    // Element e = 128h + 32k + l (k = 0..3, l = 0..31) has quant q(e) = e % 64 and scale index 8h + 2k + l/16.
    const q = (e: number) => e % 64;
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const e = (k: number) => 128 * h + 32 * k + l;
        b[64 * h + l] = (q(e(0)) & 15) | ((q(e(2)) & 15) << 4);
        b[64 * h + l + 32] = (q(e(1)) & 15) | ((q(e(3)) & 15) << 4);
        b[128 + 32 * h + l] =
          (q(e(0)) >> 4) | ((q(e(1)) >> 4) << 2) | ((q(e(2)) >> 4) << 4) | ((q(e(3)) >> 4) << 6);
      }
    }
    for (let i = 0; i < 16; i++) b[192 + i] = (i - 8) & 0xff;
    b.set(half(0.125), 208);
    const y = dequantizeRow('Q6_K', b, 256);
    for (let e = 0; e < 256; e++) {
      const scale = (e >> 4) - 8; // scales[e / 16]
      expect(y[e]).toBe(0.125 * scale * (q(e) - 32));
    }
  });
});

describe('errors', () => {
  it('refuses partial blocks, short buffers and types without a codec', () => {
    expect(() => quantizeRow('Q4_K', new Float32Array(32))).toThrow(/blocks of 256/);
    expect(() => dequantizeRow('Q8_0', new Uint8Array(33), 32)).toThrow(/need 34 bytes/);
    expect(() => quantizeRow('Q2_K', new Float32Array(256))).toThrow(/cannot be \(de\)quantized/);
    expect(hasCodec('Q4_K')).toBe(true);
    expect(hasCodec(12)).toBe(true);
    expect(hasCodec('IQ2_XS')).toBe(false);
    expect(hasCodec(999)).toBe(false);
  });
});
