/**
 * The quantizer against llama.cpp bit for bit (tests/golden/quant.json, made by `npm run golden:quant`
 * from ggml's own `ggml_quantize_chunk` and `to_float`), round-trip error bounds per type, and the
 * block layouts spelled out on hand-made blocks (what a kernel must read).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import goldenQuant from '../../tests/golden/quant.json';
import { quantGoldenCases } from '../testing/quant-cases.ts';
import { mulberry32, randn } from '../util/prng.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half.ts';
import { scaleMinK4 } from './quant-k.ts';
import { CODEC_TYPES, dequantizeRow, hasCodec, quantizeRow } from './quantize.ts';

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
    expect([...types].sort()).toEqual(CODEC_TYPES.filter((t) => t !== 'F32').sort());
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
    // Measured 0.061 / 0.036 (Q5_K), 0.239 / 0.151 (Q3_K), 0.412 / 0.297 (Q2_K; Lloyd–Max's 4 levels
    // on a normal give 0.34).
    ['Q5_K', 0.075, 0.045],
    ['Q3_K', 0.28, 0.17],
    ['Q2_K', 0.46, 0.33],
    // Q4_1/Q5_1: half a step (max − min)/30, /62 with max − min ≤ 2·amax, plus fp16 rounding of d
    // (≤ (max − min)·2⁻¹¹) and of m (≤ amax·2⁻¹¹). IQ4: measured 0.099 / 0.076 (IQ4_NL) and 0.118 /
    // 0.077 (IQ4_XS), bounds with some margin.
    ['Q4_1', 1 / 15 + 3 * 2 ** -11, 0.085],
    ['Q5_1', 1 / 31 + 3 * 2 ** -11, 0.042],
    ['IQ4_NL', 0.11, 0.082],
    ['IQ4_XS', 0.13, 0.082],
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

describe('block layouts of Q4_1, Q5_1, IQ4_NL, IQ4_XS', () => {
  const half = (v: number) => [f32ToF16(v) & 0xff, f32ToF16(v) >> 8];
  const KV = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

  it('Q4_1: half d, half m, 16 nibble bytes as Q4_0; x = d·q + m', () => {
    const b = new Uint8Array(20);
    b.set(half(0.5), 0);
    b.set(half(-3), 2);
    for (let j = 0; j < 16; j++) b[4 + j] = j | ((15 - j) << 4);
    const y = dequantizeRow('Q4_1', b, 32);
    for (let j = 0; j < 16; j++) {
      expect(y[j]).toBe(j * 0.5 - 3);
      expect(y[16 + j]).toBe((15 - j) * 0.5 - 3);
    }
  });

  it('Q5_1: half d, half m, u32 qh, 16 nibble bytes; x = d·q + m', () => {
    const b = new Uint8Array(24);
    b.set(half(0.25), 0);
    b.set(half(1), 2);
    const qh = 0x80000001;
    b.set([qh & 0xff, (qh >>> 8) & 0xff, (qh >>> 16) & 0xff, qh >>> 24], 4);
    for (let j = 0; j < 16; j++) b[8 + j] = 3 | (5 << 4);
    const y = dequantizeRow('Q5_1', b, 32);
    expect(y[0]).toBe(19 * 0.25 + 1);
    expect(y[1]).toBe(3 * 0.25 + 1);
    expect(y[16]).toBe(5 * 0.25 + 1);
    expect(y[31]).toBe(21 * 0.25 + 1);
  });

  it('IQ4_NL: half d, 16 nibble bytes indexing kvalues_iq4nl; x = d·kvalues[q]', () => {
    const b = new Uint8Array(18);
    b.set(half(0.125), 0);
    for (let j = 0; j < 16; j++) b[2 + j] = j | ((15 - j) << 4);
    const y = dequantizeRow('IQ4_NL', b, 32);
    for (let j = 0; j < 16; j++) {
      expect(y[j]).toBe(0.125 * KV[j]);
      expect(y[16 + j]).toBe(0.125 * KV[15 - j]);
    }
  });

  it('IQ4_XS: d, u16 scales_h, 4 bytes scales_l, 8 × 16 nibble bytes; x = d·(ls − 32)·kvalues[q]', () => {
    const b = new Uint8Array(136);
    b.set(half(0.5), 0);
    const ls = [0, 63, 32, 33, 17, 48, 5, 40]; // 6-bit scales of blocks 0–7
    let sh = 0;
    for (let ib = 0; ib < 8; ib++) {
      b[4 + (ib >> 1)] |= (ls[ib] & 15) << (4 * (ib % 2));
      sh |= (ls[ib] >> 4) << (2 * ib);
    }
    b.set([sh & 0xff, sh >> 8], 2);
    for (let ib = 0; ib < 8; ib++)
      for (let j = 0; j < 16; j++) b[8 + 16 * ib + j] = ((j + ib) & 15) | ((15 - j) << 4);
    const y = dequantizeRow('IQ4_XS', b, 256);
    for (let ib = 0; ib < 8; ib++) {
      for (let j = 0; j < 16; j++) {
        expect(y[32 * ib + j]).toBe(0.5 * (ls[ib] - 32) * KV[(j + ib) & 15]);
        expect(y[32 * ib + 16 + j]).toBe(0.5 * (ls[ib] - 32) * KV[15 - j]);
      }
    }
  });

  it('quantizing the dequantized values again changes nothing (Q4_1, Q5_1)', () => {
    const r = mulberry32(11);
    const x = new Float32Array(32 * 40).map(() => randn(r) * 0.3 + 0.1);
    for (const t of ['Q4_1', 'Q5_1']) {
      const q = quantizeRow(t, x);
      const again = quantizeRow(t, dequantizeRow(t, q, x.length));
      // m = fp16(min) and d = fp16((max − min)/15) re-derive to the same halves, and so do the codes.
      expect(again).toEqual(q);
    }
  });
});

describe('block layouts of Q5_K, Q3_K, Q2_K (ggml-common.h)', () => {
  const half = (v: number) => [f32ToF16(v) & 0xff, f32ToF16(v) >> 8];
  const fr = Math.fround;

  it('Q5_K: d, dmin, scales[12] as Q4_K, qh[32] (bit s of byte l), qs[128] as Q4_K', () => {
    const b = new Uint8Array(176);
    b.set(half(0.5), 0);
    b.set(half(0.25), 2);
    const sc = b.subarray(4, 16);
    const ls = (j: number) => 3 + 7 * j; // up to 52: the packed top bits
    const lm = (j: number) => 60 - 5 * j;
    for (let j = 0; j < 8; j++) {
      if (j < 4) {
        sc[j] = ls(j);
        sc[j + 4] = lm(j);
      } else {
        sc[j + 4] = (ls(j) & 0xf) | ((lm(j) & 0xf) << 4);
        sc[j - 4] |= (ls(j) >> 4) << 6;
        sc[j] |= (lm(j) >> 4) << 6;
      }
    }
    // Element e = 32s + l has q(e) = (7e + 3) % 32: low 4 bits in qs byte 32⌊s/2⌋ + l (nibble s & 1),
    // 5th bit in qh byte l, bit s.
    const q = (e: number) => (7 * e + 3) % 32;
    for (let e = 0; e < 256; e++) {
      const s5 = e >> 5;
      const l = e & 31;
      b[48 + 32 * (s5 >> 1) + l] |= (q(e) & 15) << (4 * (s5 & 1));
      b[16 + l] |= (q(e) >> 4) << s5;
    }
    const y = dequantizeRow('Q5_K', b, 256);
    for (let e = 0; e < 256; e++) {
      const j = e >> 5;
      expect(y[e]).toBe(fr(fr(fr(0.5 * ls(j)) * q(e)) - fr(0.25 * lm(j))));
    }
  });

  it('Q3_K: hmask[32], qs[64], 12 bytes of 6-bit scales, half d; x = d·(sc − 32)·(q − 4·!hbit)', () => {
    const b = new Uint8Array(110);
    // Group g of 16 has 6-bit scale sc(g): low 4 bits in byte g (g < 8, low nibble) or g − 8 (high
    // nibble), top 2 bits in byte 8 + g % 4 at bit 2⌊g/4⌋.
    const sc = (g: number) => (g * 13 + 5) % 64;
    for (let g = 0; g < 16; g++) {
      b[96 + (g & 7)] |= (sc(g) & 15) << (g < 8 ? 0 : 4);
      b[96 + 8 + (g % 4)] |= (sc(g) >> 4) << (2 * (g >> 2));
    }
    b.set(half(0.125), 108);
    // Element e = 128h + 32j + l: 2 low bits in qs byte 32h + l at shift 2j, high bit in hmask byte l,
    // bit 4h + j. Signed quant: (low | high << 2) − 4.
    const q = (e: number) => (5 * e + 1) % 8;
    for (let e = 0; e < 256; e++) {
      const h = e >> 7;
      const j = (e >> 5) & 3;
      const l = e & 31;
      b[32 + 32 * h + l] |= (q(e) & 3) << (2 * j);
      b[l] |= (q(e) >> 2) << (4 * h + j);
    }
    const y = dequantizeRow('Q3_K', b, 256);
    for (let e = 0; e < 256; e++) {
      const g = e >> 4; // group of 16 (8h + 2j + l/16)
      expect(y[e]).toBe(fr(fr(0.125 * (sc(g) - 32)) * (q(e) - 4)));
    }
  });

  it('Q2_K: scales[16] (low nibble scale, high nibble min), qs[64] as Q3_K, half d, dmin', () => {
    const b = new Uint8Array(84);
    const s = (g: number) => (g * 7 + 2) % 16;
    const m = (g: number) => (g * 5 + 9) % 16;
    for (let g = 0; g < 16; g++) b[g] = s(g) | (m(g) << 4);
    const q = (e: number) => (3 * e + 1) % 4;
    for (let e = 0; e < 256; e++) b[16 + 32 * (e >> 7) + (e & 31)] |= q(e) << (2 * ((e >> 5) & 3));
    b.set(half(0.75), 80);
    b.set(half(0.0625), 82);
    const y = dequantizeRow('Q2_K', b, 256);
    for (let e = 0; e < 256; e++) {
      const g = e >> 4;
      expect(y[e]).toBe(fr(fr(fr(0.75 * s(g)) * q(e)) - fr(0.0625 * m(g))));
    }
  });
});

describe('errors', () => {
  it('refuses partial blocks, short buffers and types without a codec', () => {
    expect(() => quantizeRow('Q4_K', new Float32Array(32))).toThrow(/blocks of 256/);
    expect(() => dequantizeRow('Q8_0', new Uint8Array(33), 32)).toThrow(/need 34 bytes/);
    expect(() => quantizeRow('IQ2_XS', new Float32Array(256))).toThrow(/cannot be \(de\)quantized/);
    expect(hasCodec('Q4_K')).toBe(true);
    expect(hasCodec(12)).toBe(true);
    expect(hasCodec('IQ2_XS')).toBe(false);
    expect(hasCodec(999)).toBe(false);
  });
});
