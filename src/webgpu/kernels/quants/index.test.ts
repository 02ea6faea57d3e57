/**
 * The block decoders' table (quants/index.ts) against the kernels' type lists and block sizes, and the
 * CPU twin of the planar repack (repack.ts `repackHost`) against ggml's raw blocks: every weight's quant,
 * scale and min read from the planes equal those read from the raw block (ggml-quants.c
 * dequantize_row_q4_K/q6_K).
 */
import { describe, expect, it } from 'vitest';
import { isQuantized, WEIGHT_BLOCK, WEIGHT_TYPES, type WeightType } from '../common.ts';
import { INT_DOT_TYPES } from '../mmm.ts';
import { usesIntDot } from '../mmv-int.ts';
import { isPlanarType, PLANAR_TYPES, planarBytes, planeOffsets, repackHost } from '../repack.ts';
import { DECODERS, mmvPreludes } from './index.ts';
import { iq4KvaluesWgsl } from './iq4.ts';
import { Q4K_SCALE_MIN } from './q4_k.ts';
import { q6kHighBits } from './q6_k.ts';

/** n random blocks of type t (a fixed LCG, so failures reproduce). */
function randomBlocks(t: WeightType, n: number, seed: number): Uint8Array {
  const out = new Uint8Array(WEIGHT_BLOCK[t].bytes * n);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

describe('block decoders', () => {
  it('has one decoder per weight type', () => {
    expect(Object.keys(DECODERS).sort()).toEqual([...WEIGHT_TYPES].sort());
  });

  it('has planes (repack, planar loader and chunk dot) exactly for the planar types', () => {
    for (const t of WEIGHT_TYPES) {
      const d = DECODERS[t];
      expect(d.planes !== undefined, t).toBe(isPlanarType(t));
      expect(d.planarLoader !== undefined, t).toBe(isPlanarType(t));
      expect(d.planarChunkDot !== undefined, t).toBe(isPlanarType(t));
      if (d.planarIntChunkDot) expect(isPlanarType(t), t).toBe(true);
    }
    expect(PLANAR_TYPES.filter((t) => !DECODERS[t].planes)).toEqual([]);
  });

  it('has an int8 loader exactly for the integer-dot tile types, and an integer-dot chunk only for them', () => {
    for (const t of WEIGHT_TYPES) {
      expect(DECODERS[t].intLoader !== undefined, t).toBe(INT_DOT_TYPES.includes(t));
      if (usesIntDot({ type: t }) || (isPlanarType(t) && usesIntDot({ type: t, planar: 1 })))
        expect(INT_DOT_TYPES, t).toContain(t);
    }
  });

  it('has a synthetic fill (fill.ts) exactly for the quantized types: one d, a min field exactly with minPerD', () => {
    for (const t of WEIGHT_TYPES) {
      const f = DECODERS[t].syntheticFill;
      expect(f !== undefined, t).toBe(isQuantized(t));
      if (!f) continue;
      expect(f.stdAtUnitD, t).toBeGreaterThan(0);
      expect(f.scales.filter((s) => s.holds === 'd').length, t).toBe(1);
      expect(f.scales.filter((s) => s.holds === 'min').length, t).toBe(f.minPerD === undefined ? 0 : 1);
      for (const s of f.scales) {
        expect(s.at % 2, t).toBe(0);
        expect(s.at + 2, t).toBeLessThanOrEqual(WEIGHT_BLOCK[t].bytes);
      }
    }
  });

  it("declares mmv's shared WGSL once each, Q4_K/Q5_K's before IQ4's", () => {
    const kv = iq4KvaluesWgsl('KVIQ4');
    expect(mmvPreludes(['IQ4_XS', 'Q5_K', 'Q4_K', 'IQ4_NL'])).toEqual([Q4K_SCALE_MIN, kv]);
    expect(mmvPreludes(['Q8_0', 'F16'])).toEqual([]);
  });
});

describe('repackHost (the CPU twin of the planar repack)', () => {
  it('Q4_K: every weight keeps its nibble, 6-bit scale and min (get_scale_min_k4), d and dmin', () => {
    const n = 5;
    const raw = randomBlocks('Q4_K', n, 1);
    const out = repackHost('Q4_K', raw, n);
    expect(out.length).toBe(planarBytes('Q4_K', n));
    for (let b = 0; b < n; b++) {
      const o = b * 144;
      const s = (k: number) => raw[o + 4 + k];
      for (let r = 0; r < 256; r++) {
        const j = r >> 5;
        const l = r & 31;
        const q = (raw[o + 16 + (j >> 1) * 32 + l] >> (4 * (j & 1))) & 15;
        const [sc, m] =
          j < 4
            ? [s(j) & 63, s(j + 4) & 63]
            : [(s(j + 4) & 0xf) | ((s(j - 4) >> 6) << 4), (s(j + 4) >> 4) | ((s(j) >> 6) << 4)];
        const pb = out[b * 128 + j * 16 + (l & 15)];
        expect(l < 16 ? pb & 15 : pb >> 4).toBe(q);
        expect(out[128 * n + 16 * b + 2 * j]).toBe(sc);
        expect(out[128 * n + 16 * b + 2 * j + 1]).toBe(m);
      }
      expect([...out.subarray(144 * n + 4 * b, 144 * n + 4 * b + 4)]).toEqual([...raw.subarray(o, o + 4)]);
    }
  });

  it('Q6_K: every weight keeps its 4 low and 2 high bits, its int8 scales and d', () => {
    const n = 3;
    const raw = randomBlocks('Q6_K', n, 2);
    const out = repackHost('Q6_K', raw, n);
    const off = planeOffsets('Q6_K', n);
    for (let b = 0; b < n; b++) {
      const o = b * 210;
      for (let r = 0; r < 256; r++) {
        const h = r >> 7;
        const c = (r & 127) >> 5;
        const l = r & 31;
        const ql = (raw[o + h * 64 + l + (c & 1) * 32] >> ((c >> 1) * 4)) & 15;
        const qh = (raw[o + 128 + h * 32 + l] >> (2 * c)) & 3;
        const j = r >> 5;
        const m = l & 15;
        const pb = out[off.ql + b * 128 + j * 16 + m];
        expect(l < 16 ? pb & 15 : pb >> 4).toBe(ql);
        const hb = off.qh + b * 64 + j * 8 + (l >> 4) * 4 + (m & 3);
        expect((out[hb] >> ((m >> 2) * 2)) & 3).toBe(qh);
      }
      expect([...out.subarray(off.scales + 16 * b, off.scales + 16 * b + 16)]).toEqual([
        ...raw.subarray(o + 192, o + 208),
      ]);
      expect([...out.subarray(off.d + 2 * b, off.d + 2 * b + 2)]).toEqual([
        ...raw.subarray(o + 208, o + 210),
      ]);
    }
  });

  it("Q6_K: the chunk dots' high-bit expression puts weight 4m + k's 2 high bits at bits 4–5 of byte k", () => {
    const n = 2;
    const raw = randomBlocks('Q6_K', n, 5);
    const out = repackHost('Q6_K', raw, n);
    const off = planeOffsets('Q6_K', n);
    const word = (at: number) =>
      (out[at] | (out[at + 1] << 8) | (out[at + 2] << 16) | (out[at + 3] << 24)) >>> 0;
    for (let m = 0; m < 4; m++) {
      // The WGSL expression (u32 literals, logical shifts) evaluated as JavaScript on the word `h`.
      const js = q6kHighBits('h', m)
        .replace(/(\d+)u\b/g, '$1')
        .replace(/>>/g, '>>>');
      const f = new Function('h', `return (${js}) >>> 0;`) as (h: number) => number;
      for (let b = 0; b < n; b++) {
        for (let j = 0; j < 8; j++) {
          for (let half = 0; half < 2; half++) {
            const v = f(word(off.qh + b * 64 + j * 8 + half * 4));
            for (let k = 0; k < 4; k++) {
              // Weight 16·half + 4m + k of sub-block j = 4h + c (q6_k.ts): its 2 high bits in ggml's block.
              const l = 16 * half + 4 * m + k;
              const qh = (raw[b * 210 + 128 + (j >> 2) * 32 + l] >> (2 * (j & 3))) & 3;
              expect((v >>> (8 * k)) & 0xff, `block ${b} sub-block ${j} weight ${l}`).toBe(qh << 4);
            }
          }
        }
      }
    }
  });

  it('Q4_0, Q8_0, Q5_0: the fields copied plane by plane, d two to a word', () => {
    for (const t of ['Q4_0', 'Q8_0', 'Q5_0'] as const) {
      const n = 7;
      const B = WEIGHT_BLOCK[t].bytes;
      const raw = randomBlocks(t, n, 3);
      const out = repackHost(t, raw, n);
      const off = planeOffsets(t, n);
      const fields = DECODERS[t].planes?.fields;
      if (!fields) throw new Error(`${t} has no plane fields`);
      for (let b = 0; b < n; b++) {
        for (const f of fields.fields) {
          expect(
            [...out.subarray(off[f.name] + b * f.bytes, off[f.name] + (b + 1) * f.bytes)],
            `${t} ${f.name}`,
          ).toEqual([...raw.subarray(b * B + f.raw, b * B + f.raw + f.bytes)]);
        }
        expect([...out.subarray(off.d + 2 * b, off.d + 2 * b + 2)]).toEqual([
          ...raw.subarray(b * B, b * B + 2),
        ]);
      }
    }
  });
});
