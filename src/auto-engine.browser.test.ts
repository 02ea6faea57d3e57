/**
 * backend 'auto' in real Chromium: on this machine's SwiftShader adapter it picks wllama by itself and
 * answers stories260K with llama.cpp's greedy tokens; a stubbed hardware adapter gets the WebGPU engine;
 * 'wllama' forced skips the adapter. (The per-adapter-kind choice is unit-tested in
 * src/core/backend-choice.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import golden from '../tests/golden/stories260K.json';
import { AutoEngine, type PackageEngine } from './auto-engine.ts';
import type { ModelInfo } from './core/types.ts';
import { stories260kUrl } from './testing/stories260k-url.ts';
import { LOCAL_WLLAMA_WASM } from './wllama/vite-wasm.ts';

const wasm = { wllamaWasmUrl: LOCAL_WLLAMA_WASM };
const c = golden.generationF16.cases[0];
const noWebGpu = (): PackageEngine => {
  throw new Error('the WebGPU engine was made');
};

async function answers(engine: AutoEngine): Promise<ModelInfo> {
  const info = await engine.load({ url: stories260kUrl() }, { contextLength: 256 });
  const r = await engine.generate({ prompt: c.prompt, maxTokens: 16, ignoreEos: true });
  expect(r.outputTokenIds).toEqual(c.outputIds.slice(0, 16));
  return info;
}

describe('AutoEngine', () => {
  it("picks wllama on this machine's software adapter and answers like llama.cpp", async (ctx) => {
    const adapter = await navigator.gpu?.requestAdapter();
    if (adapter?.info.architecture !== 'swiftshader') ctx.skip(); // a GPU runner: the hardware case below
    const engine = new AutoEngine(noWebGpu, wasm);
    try {
      const info = await answers(engine);
      expect(info.backend).toBe('wllama');
      expect(info.backendReason).toMatch(/software one \(SwiftShader\)/);
      expect(engine.backendChoice?.backend).toBe('wllama');
      // The load's description stays readable (withOpenAI names its objects' model from it).
      expect(engine.modelInfo).toEqual(info);
      await engine.unload();
      expect(engine.modelInfo).toBeUndefined();
    } finally {
      await engine.terminate();
    }
  });

  it("'wllama' forced never asks for an adapter", async () => {
    const gpu = () => {
      throw new Error('asked for navigator.gpu');
    };
    const engine = new AutoEngine(noWebGpu, wasm, gpu, 'wllama');
    try {
      // A draft (speculative decoding, ours alone) is refused with the choice's reason, not dropped.
      await expect(
        engine.load({ url: stories260kUrl() }, { draft: { url: stories260kUrl() } }),
      ).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringMatching(
          /only, and this engine was made with backend 'wllama': load without draft$/,
        ),
      });
      const info = await answers(engine);
      await expect(engine.generate({ prompt: c.prompt, draft: { type: 'lookup' } })).rejects.toMatchObject({
        code: 'invalid_argument',
      });
      expect(info).toMatchObject({ backend: 'wllama', backendReason: "the site chose backend 'wllama'" });
    } finally {
      await engine.terminate();
    }
  });

  it('a hardware adapter gets the WebGPU engine', async () => {
    const loads: unknown[] = [];
    const fake: PackageEngine = {
      load: async (src) => {
        loads.push(src);
        return {
          name: 'm',
          architecture: 'llama',
          nParams: 1,
          nLayers: 1,
          nEmbd: 1,
          nVocab: 1,
          contextLength: 1,
          weightBytes: 1,
          tensorTypes: [],
        };
      },
      generate: () => Promise.reject(new Error('unused')),
      chat: () => Promise.reject(new Error('unused')),
      tokenize: async () => [7],
      detokenize: async () => 'x',
      stats: async () => ({}),
      unload: async () => {},
      terminate: async () => {},
    };
    const gpu = { requestAdapter: async () => ({ info: { vendor: 'nvidia', architecture: 'ada' } }) };
    const engine = new AutoEngine(
      () => fake,
      wasm,
      () => gpu,
    );
    // Two first loads at once: one choice, one engine (it made two workers, one left running).
    let made = 0;
    const twice = new AutoEngine(
      () => {
        made++;
        return fake;
      },
      wasm,
      () => gpu,
    );
    await Promise.all([twice.load({ url: 'a.gguf' }), twice.load({ url: 'b.gguf' })]);
    expect(made).toBe(1);
    loads.length = 0;
    const info = await engine.load({ url: 'x.gguf' });
    expect(loads).toEqual([{ url: 'x.gguf' }]);
    expect(info).toMatchObject({
      backend: 'webgpu',
      backendReason: 'WebGPU runs on a hardware adapter (nvidia ada)',
    });
    expect(await engine.tokenize('a')).toEqual([7]);
    // A source that is none is refused before any engine sees it; after terminate, every call is refused.
    await expect(engine.load('x.gguf' as never)).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(loads).toHaveLength(1);
    await engine.terminate();
    await expect(engine.load({ url: 'x.gguf' })).rejects.toMatchObject({ code: 'not_loaded' });
    await expect(engine.tokenize('a')).rejects.toMatchObject({ code: 'not_loaded' });
    expect(loads).toHaveLength(1);
  });
});
