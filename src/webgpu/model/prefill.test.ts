import { describe, expect, it } from 'vitest';
import { defaultBatchSize, firstPrefillBatch, nextPrefillBatch } from './prefill.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

describe('defaultBatchSize', () => {
  const llama8b = { nEmbd: 4096, nFF: 14336, nVocab: 128256, qDim: 4096 };
  const gpu = { isFallback: false, maxStorageBufferBindingSize: 4 * GiB, maxBufferSize: 4 * GiB };

  it('is 512 on a GPU with room, 64 on a software adapter, never above the context', () => {
    expect(defaultBatchSize({ ...gpu, ...llama8b, contextLength: 4096 })).toBe(512);
    expect(defaultBatchSize({ ...gpu, ...llama8b, isFallback: true, contextLength: 4096 })).toBe(64);
    expect(defaultBatchSize({ ...gpu, ...llama8b, isFallback: true, contextLength: 40 })).toBe(40);
    expect(defaultBatchSize({ ...gpu, ...llama8b, contextLength: 300 })).toBe(288);
    expect(defaultBatchSize({ ...gpu, ...llama8b, contextLength: 20 })).toBe(20);
  });

  it('fits the widest per-batch buffer (B × nVocab × 4 here) into a binding and a buffer', () => {
    // The spec's default limits: 128 MiB per binding, 256 MiB per buffer: 128 MiB / (128256 × 4) = 261.6.
    const b = defaultBatchSize({
      ...llama8b,
      isFallback: false,
      maxStorageBufferBindingSize: 128 * MiB,
      maxBufferSize: 256 * MiB,
      contextLength: 8192,
    });
    expect(b).toBe(256);
    expect(b * llama8b.nVocab * 4).toBeLessThanOrEqual(128 * MiB);
    // maxBufferSize below the binding limit, and the engine's own binding cap, count too.
    expect(
      defaultBatchSize({ ...gpu, ...llama8b, maxBufferSize: 64 * MiB, contextLength: 8192 }),
    ).toBeLessThanOrEqual(Math.floor((64 * MiB) / (128256 * 4)));
    expect(defaultBatchSize({ ...gpu, ...llama8b, maxBindingBytes: 32 * MiB, contextLength: 8192 })).toBe(64);
    // nFF wider than the vocabulary (stories260K's 172 vs 512 is not; this is).
    expect(
      defaultBatchSize({
        ...gpu,
        nEmbd: 64,
        nFF: 100_000,
        nVocab: 512,
        qDim: 64,
        maxStorageBufferBindingSize: 100 * MiB,
        contextLength: 4096,
      }),
    ).toBe(256);
  });
});

describe('adaptive prefill batches', () => {
  const o = { tile: 8, max: 512, targetMs: 100 };

  it('start at one tile (at most the capacity)', () => {
    expect(firstPrefillBatch(o)).toBe(8);
    expect(firstPrefillBatch({ tile: 32, max: 20 })).toBe(20);
  });

  it('grow toward the target at most 4× a batch, to the capacity, in multiples of the tile', () => {
    // A GPU: 8 tokens in 1 ms → 800 wanted; capped at 4 × 8, then 4 × 32 …, then 512.
    let T = firstPrefillBatch(o);
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      T = nextPrefillBatch({ tokens: T, ms: 1 }, o);
      seen.push(T);
    }
    expect(seen).toEqual([32, 128, 512, 512, 512]);
    expect(nextPrefillBatch({ tokens: 8, ms: 1 }, { ...o, max: 60 })).toBe(32);
    expect(nextPrefillBatch({ tokens: 32, ms: 1 }, { ...o, max: 60 })).toBe(60);
  });

  it('stay small on a slow adapter and shrink after a slow batch', () => {
    // ~30 tok/s: 8 tokens in 267 ms → 3 tokens per 100 ms, so one tile.
    expect(nextPrefillBatch({ tokens: 8, ms: 267 }, o)).toBe(8);
    // 0.5 tok/ms → 50 tokens → 48.
    expect(nextPrefillBatch({ tokens: 64, ms: 128 }, o)).toBe(48);
    expect(nextPrefillBatch({ tokens: 256, ms: 1000 }, o)).toBe(24);
    // A tile of 32: never below it.
    expect(nextPrefillBatch({ tokens: 32, ms: 1000 }, { ...o, tile: 32 })).toBe(32);
  });

  it('keep one tile at a target of 0, and survive a 0 ms measurement', () => {
    expect(nextPrefillBatch({ tokens: 8, ms: 5 }, { ...o, targetMs: 0 })).toBe(8);
    expect(nextPrefillBatch({ tokens: 8, ms: 0 }, o)).toBe(32);
  });
});
