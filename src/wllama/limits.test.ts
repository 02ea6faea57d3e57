/**
 * The wllama backend's limits (limits.ts): wasm32's 4 GiB, wllama's 2 GiB per file, and threads only with
 * SharedArrayBuffer on a cross-origin isolated page, each refused with its typed error and what to do.
 */
import { describe, expect, it } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import {
  checkFileSizes,
  checkWasmMemory,
  chooseThreads,
  WASM_MEMORY_BYTES,
  WASM_OVERHEAD_BYTES,
  WLLAMA_FILE_BYTES,
} from './limits.ts';

function errorOf(f: () => unknown): EngineError {
  try {
    f();
  } catch (e) {
    if (isEngineError(e)) return e;
    throw e;
  }
  throw new Error('expected an EngineError');
}

const GiB = 1024 ** 3;
const isolated = { crossOriginIsolated: true, SharedArrayBuffer, navigator: { hardwareConcurrency: 8 } };
const plain = { crossOriginIsolated: false, SharedArrayBuffer, navigator: { hardwareConcurrency: 8 } };
const noSab = { crossOriginIsolated: true, navigator: { hardwareConcurrency: 8 } };

describe('checkFileSizes', () => {
  it('takes files up to 2 GiB and unknown sizes', () => {
    expect(() => checkFileSizes([WLLAMA_FILE_BYTES], 'm.gguf')).not.toThrow();
    expect(() => checkFileSizes([1.9 * GiB, 1.9 * GiB, undefined], 'm.gguf')).not.toThrow();
  });
  it('refuses one file over 2 GiB, saying how to split it', () => {
    const e = errorOf(() => checkFileSizes([WLLAMA_FILE_BYTES + 1], 'big.gguf'));
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toMatch(/^big\.gguf is 2\.00 GiB;/);
    expect(e.message).toContain('llama-gguf-split --split-max-size');
    expect(e.message).toContain('npm run gguf-split');
  });
  it('names the part of a split model that is too large', () => {
    const e = errorOf(() => checkFileSizes([GiB, 2.5 * GiB], 'm-00001-of-00002.gguf'));
    expect(e.message).toMatch(/^part 2 of m-00001-of-00002\.gguf is 2\.50 GiB/);
  });
});

describe('checkWasmMemory', () => {
  it('takes a model that fits 4 GiB with the KV cache and the overhead', () => {
    expect(() => checkWasmMemory(WASM_MEMORY_BYTES - WASM_OVERHEAD_BYTES - 1000, 1000)).not.toThrow();
  });
  it('refuses one byte more, with the sizes', () => {
    const e = errorOf(() => checkWasmMemory(3.5 * GiB, 0.5 * GiB - WASM_OVERHEAD_BYTES + 1));
    expect(e.code).toBe('out_of_memory');
    expect(e.message).toMatch(/needs about 4\.00 GiB \(weights 3\.50 GiB, KV cache 0\.38 GiB\)/);
    expect(e.message).toContain('shorter contextLength');
  });
});

describe('chooseThreads', () => {
  it("'auto' is half the cores where threads can run, else 1", () => {
    expect(chooseThreads('auto', isolated)).toBe(4);
    expect(chooseThreads('auto', { ...isolated, navigator: { hardwareConcurrency: 3 } })).toBe(1);
    expect(chooseThreads('auto', plain)).toBe(1);
    expect(chooseThreads('auto', noSab)).toBe(1);
  });
  it('a number is used where threads can run; 1 runs anywhere', () => {
    expect(chooseThreads(6, isolated)).toBe(6);
    expect(chooseThreads(1, plain)).toBe(1);
  });
  it('threads forced without SharedArrayBuffer: feature_missing naming the headers', () => {
    for (const g of [plain, noSab]) {
      const e = errorOf(() => chooseThreads(2, g));
      expect(e.code).toBe('feature_missing');
      expect(e.message).toContain('Cross-Origin-Opener-Policy: same-origin');
      expect(e.message).toContain('Cross-Origin-Embedder-Policy: require-corp');
    }
  });
  it.each([0, -1, 1.5, Number.NaN])('refuses %s threads', (n) => {
    expect(errorOf(() => chooseThreads(n, isolated)).code).toBe('invalid_argument');
  });
});
