/** The roofline's arithmetic (no GPU): the hash the kernels use, bytes per token, fractions. */
import { describe, expect, it } from 'vitest';
import {
  buildRoofline,
  decodeBytesPerToken,
  hashSumU32,
  hashU32,
  prefillFlopsPerToken,
  rooflineFraction,
} from './roofline.ts';

/** The same hash with BigInt arithmetic, as an independent reference. */
function hashRef(i: number): number {
  const M = 0xffffffffn;
  let x = (BigInt(i) * 0x9e3779b1n) & M;
  x ^= x >> 16n;
  x = (x * 0x85ebca6bn) & M;
  x ^= x >> 13n;
  return Number(x);
}

describe('hash', () => {
  it('matches a BigInt reference and sums mod 2^32', () => {
    for (const i of [0, 1, 2, 3, 1000, 65535, 0x7fffffff, 0x80000000, 0xfffffffe])
      expect(hashU32(i)).toBe(hashRef(i));
    let s = 0n;
    for (let i = 0; i < 5000; i++) s += BigInt(hashRef(i));
    expect(hashSumU32(5000)).toBe(Number(s & 0xffffffffn));
  });
});

const M = { nParams: 1_000_000, weightBytes: 4_000_000, nEmbd: 100, nVocab: 1000, nLayers: 4 };

describe('bytes per token and fractions', () => {
  it('reads every weight once but only one embedding row, plus the KV cache', () => {
    // Embedding table: 1000 × 100 params × 4 bytes; one row (400 bytes) is read.
    expect(decodeBytesPerToken(M, 0)).toBe(4_000_000 - 999 * 100 * 4);
    expect(decodeBytesPerToken({ ...M, tiedEmbeddings: true }, 0)).toBe(4_000_000);
    // KV: 2 (K and V) × 4 layers × 10 positions × kvDim 50 × 4 bytes.
    expect(decodeBytesPerToken({ ...M, kvDim: 50 }, 10) - decodeBytesPerToken(M, 0)).toBe(
      2 * 4 * 10 * 50 * 4,
    );
    // Default kvDim = nEmbd.
    expect(decodeBytesPerToken(M, 10) - decodeBytesPerToken(M, 0)).toBe(2 * 4 * 10 * 100 * 4);
    // The engine's KV type (ModelInfo.kvType): 2 bytes per element for f16, 4 for f32.
    const kv = (m: typeof M & { kvType?: 'f16' | 'f32' }) =>
      decodeBytesPerToken(m, 10) - decodeBytesPerToken(m, 0);
    expect(kv({ ...M, kvType: 'f16' })).toBe(2 * 4 * 10 * 100 * 2);
    expect(kv({ ...M, kvType: 'f32' })).toBe(2 * 4 * 10 * 100 * 4);
  });

  it('fractions of bandwidth and matmul rate', () => {
    expect(rooflineFraction(100, 1e9, 200)).toBe(0.5);
    expect(prefillFlopsPerToken(M)).toBe(2 * (1_000_000 - 100_000));
    const r = buildRoofline({
      model: { ...M, tiedEmbeddings: true },
      bandwidthGBs: 8,
      matmulGflops: 20,
      decodeTokensPerSecond: 1000,
      prefillTokensPerSecond: 5000,
      contextUsed: 0,
    });
    expect(r).toEqual({
      bandwidthGBs: 8,
      bytesPerToken: 4e6,
      fraction: 0.5,
      matmulGflops: 20,
      prefillFraction: 0.5,
    });
    expect(
      buildRoofline({ model: M, bandwidthGBs: 1, decodeTokensPerSecond: 1, contextUsed: 0 }),
    ).not.toHaveProperty('matmulGflops');
  });
});
