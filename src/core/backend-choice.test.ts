/**
 * backend 'auto' (backend-choice.ts) for each kind of adapter, with a stubbed `navigator.gpu`: none, one
 * that throws, hangs or finds no adapter, fallback adapters (flag on the info, the older flag on the
 * adapter, SwiftShader named without the flag, Mesa's llvmpipe), and hardware adapters.
 */
import { describe, expect, it } from 'vitest';
import { type AdapterLike, chooseBackend, type GpuLike, softwareAdapterName } from './backend-choice.ts';

const gpuWith = (adapter: AdapterLike | null): GpuLike & { calls: unknown[] } => {
  const calls: unknown[] = [];
  return {
    calls,
    requestAdapter: async (o) => {
      calls.push(o);
      return adapter;
    },
  };
};

describe('chooseBackend', () => {
  it('picks wllama without navigator.gpu', async () => {
    const c = await chooseBackend(undefined);
    expect(c.backend).toBe('wllama');
    expect(c.reason).toMatch(/no WebGPU \(navigator\.gpu is missing\)/);
  });

  it('picks wllama when requestAdapter rejects, naming the error', async () => {
    const c = await chooseBackend({ requestAdapter: () => Promise.reject(new Error('GPU process crashed')) });
    expect(c).toEqual({
      backend: 'wllama',
      reason:
        "WebGPU could not start (GPU process crashed), so the model runs on the CPU (llama.cpp's wasm build)",
    });
  });

  it('picks wllama when requestAdapter never answers', async () => {
    const c = await chooseBackend({ requestAdapter: () => new Promise(() => {}) }, 30);
    expect(c.backend).toBe('wllama');
    expect(c.reason).toMatch(/no answer within 0\.03 s/);
  });

  it('picks wllama when there is no adapter', async () => {
    const c = await chooseBackend(gpuWith(null));
    expect(c.backend).toBe('wllama');
    expect(c.reason).toMatch(/no adapter/);
  });

  it.each([
    [
      'flag on the info',
      { info: { vendor: 'google', architecture: 'x', isFallbackAdapter: true } },
      'google x',
    ],
    ['older flag on the adapter', { isFallbackAdapter: true, info: { vendor: 'acme' } }, 'acme'],
    [
      'SwiftShader without the flag',
      { info: { vendor: 'google', architecture: 'swiftshader' } },
      'SwiftShader',
    ],
    [
      'SwiftShader in the description',
      { info: { description: 'SwiftShader Device (Subzero)' } },
      'SwiftShader',
    ],
    ['llvmpipe', { info: { vendor: 'mesa', description: 'llvmpipe (LLVM 15.0.7, 256 bits)' } }, 'llvmpipe'],
    ['flag, empty info', { info: { isFallbackAdapter: true } }, 'a fallback adapter'],
  ] as const)('picks wllama on a software adapter: %s', async (_n, adapter, name) => {
    const gpu = gpuWith(adapter);
    const c = await chooseBackend(gpu);
    expect(c.backend).toBe('wllama');
    expect(c.reason).toContain(`software one (${name})`);
    expect(softwareAdapterName(adapter)).toBe(name);
    expect(gpu.calls).toEqual([{ powerPreference: 'high-performance' }]);
  });

  it.each([
    [{ info: { vendor: 'nvidia', architecture: 'ada', isFallbackAdapter: false } }, 'nvidia ada'],
    [{ info: { vendor: 'apple', architecture: 'metal-3' } }, 'apple metal-3'],
    [{ info: { description: 'Intel(R) UHD Graphics 620' } }, 'Intel(R) UHD Graphics 620'],
    [{}, 'a GPU'],
  ] as const)('picks WebGPU on a hardware adapter %j', async (adapter, name) => {
    const c = await chooseBackend(gpuWith(adapter));
    expect(c).toEqual({ backend: 'webgpu', reason: `WebGPU runs on a hardware adapter (${name})` });
    expect(softwareAdapterName(adapter)).toBeUndefined();
  });
});
