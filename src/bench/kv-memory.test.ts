import { describe, expect, it } from 'vitest';
import { syntheticGguf } from '../webgpu/model/synthetic.ts';
import {
  contextChoices,
  contextFits,
  kvBytesByType,
  kvBytesPerTokenLayer,
  kvCacheBytes,
  kvRowBytes,
  kvShapeOf,
  kvTypeUnusable,
} from './kv-memory.ts';
import type { MemoryProbe } from './llama-bench.ts';
import { modelFits } from './llama-bench-gpu.ts';

const GiB = 1024 ** 3;
const mem = (allocatable: number, binding = 2 * GiB): MemoryProbe => ({
  maxBufferBytes: binding,
  maxBindingBytes: binding,
  allocatableBytes: allocatable,
  capped: false,
  capBytes: 64 * GiB,
  chunkBytes: 256 * 1024 ** 2,
  ms: 1,
});

describe('KV cache memory per type', () => {
  it("Llama-3.1-8B's bytes per token per layer are llama.cpp's: 4,096 f16, 2,176 q8_0, 1,152 q4_0", () => {
    const s = kvShapeOf(syntheticGguf('synthetic:llama-3.1-8b-q4_k_m', 1, { tokenizer: false }));
    expect(s).toMatchObject({ nLayers: 32, nHeadKv: 8, headDim: 128, contextLength: 131072 });
    expect(kvBytesPerTokenLayer(s, 'f16')).toBe(4096);
    expect(kvBytesPerTokenLayer(s, 'q8_0')).toBe(2176);
    expect(kvBytesPerTokenLayer(s, 'q4_0')).toBe(1152);
    expect(kvBytesPerTokenLayer(s, 'f32')).toBe(8192);
    // K and V apart (llama.cpp's -ctk q8_0 -ctv q4_0): 1,088 + 576.
    expect(kvBytesPerTokenLayer(s, 'q8_0', 'q4_0')).toBe(1088 + 576);
    // The figures: 128 KiB per token in f16, 512 MiB at 4,096 tokens, 16 GiB at 131,072.
    expect(kvCacheBytes(s, 1, 'f16')).toBe(128 * 1024);
    expect(kvCacheBytes(s, 4096, 'f16')).toBe(512 * 1024 ** 2);
    expect(kvCacheBytes(s, 131072, 'f16')).toBe(16 * GiB);
    expect(kvBytesByType(s, 4096).map((x) => x.bytes)).toEqual(
      [4096, 8192, 2176, 1152].map((b) => b * 32 * 4096),
    );
  });
  it('rows are ggml_row_size: whole blocks of 32 for the quantized types, on odd widths too', () => {
    for (const n of [32, 96, 1024, 5 * 32 * 7]) {
      expect(kvRowBytes('q8_0', n)).toBe((n / 32) * 34);
      expect(kvRowBytes('q4_0', n)).toBe((n / 32) * 18);
    }
    expect(kvRowBytes('q8_0', 33)).toBe(68);
    expect(kvRowBytes('f16', 37)).toBe(74);
    expect(() => kvCacheBytes({ nLayers: 1, nHeadKv: 1, headDim: 64 }, 0, 'f16')).toThrow(RangeError);
    expect(() => kvCacheBytes({ nLayers: 1, nHeadKv: 1, headDim: 64 }, 1.5, 'f16')).toThrow(RangeError);
  });
  it("agrees with the fit verdict's KV bytes (the page's two figures are one computation's)", () => {
    const file = syntheticGguf('synthetic:qwen2.5-0.5b-q8_0', 1, { tokenizer: false });
    const s = kvShapeOf(file);
    for (const t of ['f16', 'q8_0', 'q4_0'] as const)
      expect(modelFits(file, mem(64 * GiB), 3000, t).kvBytes).toBe(kvCacheBytes(s, 3000, t));
  });
  it("a sliding-window model's cache still holds the whole context on every layer", () => {
    const s = kvShapeOf(syntheticGguf('synthetic:gemma-3-1b-q8_0', 1, { tokenizer: false }));
    expect(s.slidingWindow).toBeGreaterThan(0);
    expect(kvCacheBytes(s, 8192, 'f16')).toBe(s.nLayers * 8192 * s.nHeadKv * s.headDim * 2 * 2);
  });
});

describe('context lengths up to the trained maximum', () => {
  it('offers powers of two from 512, then the maximum', () => {
    expect(contextChoices(131072)).toEqual([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]);
    expect(contextChoices(3000)).toEqual([512, 1024, 2048, 3000]);
    expect(contextChoices(256)).toEqual([256]);
  });
  it('marks each length with the first cache type that fits: f16, then q8_0, then q4_0, else none', () => {
    const file = syntheticGguf('synthetic:llama-3.1-8b-q4_k_m', 1, { tokenizer: false });
    const s = kvShapeOf(file);
    // Memory for 65,536 tokens of q4_0 cache (2.25 GiB): so 32,768 of q8_0 (2.125 GiB) and 16,384 of f16
    // (2 GiB) fit too, 32,768 of f16 (4 GiB) and 131,072 of q4_0 (4.5 GiB) do not.
    const m = mem(modelFits(file, mem(1e15), 65536, 'q4_0').needBytes + 1024 ** 2);
    const fits = contextFits(file, m, contextChoices(s.contextLength));
    const by = Object.fromEntries(fits.map((f) => [f.contextLength, f.kvType]));
    expect(by).toEqual({
      512: 'f16',
      1024: 'f16',
      2048: 'f16',
      4096: 'f16',
      8192: 'f16',
      16384: 'f16',
      32768: 'q8_0',
      65536: 'q4_0',
      131072: null,
    });
    const none = fits.at(-1)!;
    expect(none.verdict.ok).toBe(false);
    expect(none.verdict.kvType).toBe('q4_0');
    expect(none.verdict.reason).toMatch(/short by/);
  });
  it("a cache layer larger than the adapter's largest binding does not fit, whatever the memory", () => {
    const file = syntheticGguf('synthetic:llama-3.1-8b-q4_k_m', 1, { tokenizer: false });
    // One layer's K at 131,072 tokens: 256 MiB f16, 136 MiB q8_0, 72 MiB q4_0.
    const at = (binding: number) => contextFits(file, mem(1e15, binding * 1024 ** 2), [131072])[0];
    expect(at(64).kvType).toBe(null);
    expect(at(64).verdict.reason).toMatch(
      /K cache at 131072 tokens is 72\.0 MiB, more than the largest binding/,
    );
    expect(at(128).kvType).toBe('q4_0');
    expect(at(200).kvType).toBe('q8_0');
    expect(at(300).kvType).toBe('f16');
  });
  it('never offers a quantized cache to heads that are not a multiple of 32 (stories260K: 8); f16 or none', () => {
    const file = syntheticGguf('synthetic:stories260k-f32', 1, { tokenizer: false });
    expect(kvShapeOf(file).headDim).toBe(8);
    expect(kvTypeUnusable('q8_0', 8)).toMatch(/multiple of 32 \(this model's: 8\)/);
    expect(kvTypeUnusable('q4_0', 8)).toBeDefined();
    expect(kvTypeUnusable('f16', 8)).toBeUndefined();
    expect(kvTypeUnusable('q4_0', 128)).toBeUndefined();
    // Memory for 512 tokens of f16: 1,024 tokens of q4_0 (0.56 of the bytes) would fit, but cannot be used.
    const m = mem(modelFits(file, mem(1e15), 512, 'f16').needBytes + 1);
    const fits = contextFits(file, m, [512, 1024]);
    expect(fits.map((f) => f.kvType)).toEqual(['f16', null]);
    expect(fits[1].verdict.kvType).toBe('f16');
  });
});
