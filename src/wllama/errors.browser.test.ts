/**
 * The wllama backend's typed errors in real Chromium (this test page is not cross-origin isolated): threads
 * forced without SharedArrayBuffer, a model past wasm's 4 GiB and a file past 2 GiB refused from the
 * header before any byte is read (the engine stays unloaded), sources and requests wllama cannot take, and
 * an engine that keeps working after each refused request.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WllamaEngine } from './engine.ts';
import { LOCAL_WLLAMA_WASM } from './vite-wasm.ts';

async function rejects(p: Promise<unknown>, code: string): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    expect(isEngineError(e), String(e)).toBe(true);
    expect((e as EngineError).code, (e as Error).message).toBe(code);
    return e as EngineError;
  }
  throw new Error(`expected EngineError '${code}', but it resolved`);
}

const small = () =>
  new Blob([
    makeRandomLlamaGguf({
      seed: 7,
      nLayers: 2,
      nEmbd: 64,
      nFF: 96,
      nHead: 4,
      nVocab: 300,
      contextLength: 10_000_000,
    }) as BlobPart,
  ]);

describe('WllamaEngine typed errors', () => {
  it('refuses threads forced without SharedArrayBuffer (feature_missing), before loading', async () => {
    expect(crossOriginIsolated).toBe(false);
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM, threads: 2 });
    const e = await rejects(engine.load({ url: stories260kUrl() }), 'feature_missing');
    expect(e.message).toContain('Cross-Origin-Embedder-Policy');
    expect(engine.modelInfo).toBeUndefined();
  });

  it('refuses a model whose KV cache passes 4 GiB (out_of_memory), from its header', async () => {
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
    // 2 layers × 9,000,000 positions × 64 (K/V width) × 2 (K and V) × 2 bytes (f16) = 4.29 GiB.
    const e = await rejects(
      engine.load({ blob: small(), name: 'long.gguf' }, { contextLength: 9_000_000 }),
      'out_of_memory',
    );
    expect(e.message).toMatch(/KV cache 4\.29 GiB/);
    await rejects(engine.generate({ prompt: 'x' }), 'not_loaded');
  });

  it('refuses a file over 2 GiB that is not split (unsupported_model), without reading it', async () => {
    const blob = small();
    Object.defineProperty(blob, 'size', { value: 2.5 * 1024 ** 3 });
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
    const e = await rejects(
      engine.load({ blob, name: 'big.gguf' }, { contextLength: 64 }),
      'unsupported_model',
    );
    expect(e.message).toMatch(/^big\.gguf is 2\.50 GiB; .*split/);
  });

  it('refuses a wasm it cannot fetch (http_status, network), promptly, and loads after it', async () => {
    const wasmUrl = new URL('/wasm/nope.wasm', location.href).href;
    const missing = new WllamaEngine({ wasmUrl });
    // A 404 (wllama alone never settled: its worker aborts on the empty response, unheard). This test
    // server answers a missing file with its HTML page, so the 404 is stubbed for the wasm's URL alone.
    const realFetch = globalThis.fetch;
    const stub = vi
      .spyOn(globalThis, 'fetch')
      .mockImplementation((input, init) =>
        String(input instanceof Request ? input.url : input) === wasmUrl
          ? Promise.resolve(new Response('', { status: 404, statusText: 'Not Found' }))
          : realFetch(input, init),
      );
    let e: EngineError;
    try {
      e = await rejects(missing.load({ url: stories260kUrl() }), 'http_status');
    } finally {
      stub.mockRestore();
    }
    expect(e.message).toContain(wasmUrl);
    expect(e.message).toMatch(/HTTP 404 Not Found.*wllamaWasmUrl/);
    expect(missing.modelInfo).toBeUndefined();
    // The server's HTML page where the wasm should be: "not found" too.
    e = await rejects(missing.load({ url: stories260kUrl() }), 'http_status');
    expect(e.message).toMatch(/nope\.wasm was not found: the server answered with an HTML page/);
    // Unreachable (nothing listens on port 9, the discard port): no answer at all.
    const gone = new WllamaEngine({ wasmUrl: 'http://127.0.0.1:9/wllama.wasm' });
    e = await rejects(gone.load({ url: stories260kUrl() }), 'network');
    expect(e.message).toMatch(
      /http:\/\/127\.0\.0\.1:9\/wllama\.wasm.*serve @wllama\/wllama@3\.13\.0's esm\/wasm\/wllama\.wasm/,
    );
    // The engine is left usable: a good wasm URL loads the model.
    missing.config.wasmUrl = LOCAL_WLLAMA_WASM;
    try {
      await missing.load({ url: stories260kUrl() }, { contextLength: 64 });
      const r = await missing.generate({ prompt: 'Once upon a time', maxTokens: 3, ignoreEos: true });
      expect(r.outputTokenIds).toEqual([432, 383, 286]);
    } finally {
      await missing.unload();
    }
  }, 30_000);

  it('an aborted load is aborted (while the wasm and the model are fetched), and the next load works', async () => {
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
    const ctl = new AbortController();
    ctl.abort();
    await rejects(engine.load({ url: stories260kUrl() }, { signal: ctl.signal }), 'aborted');
    const mid = new AbortController();
    const p = engine.load({ url: stories260kUrl() }, { signal: mid.signal });
    setTimeout(() => mid.abort(), 5);
    await rejects(p, 'aborted');
    expect(engine.modelInfo).toBeUndefined();
    try {
      // unload() during a load stops it (it used to finish, a model loaded after unload had returned).
      let unloaded = false;
      const during = engine.load(
        { url: stories260kUrl() },
        {
          contextLength: 64,
          onProgress: (p) => {
            if (p.phase === 'upload' && !unloaded) {
              unloaded = true;
              void engine.unload();
            }
          },
        },
      );
      await rejects(during, 'not_loaded');
      expect(engine.modelInfo).toBeUndefined();
      const info = await engine.load({ url: stories260kUrl() }, { contextLength: 64 });
      expect(info.backend).toBe('wllama');
      // A load that fails on its file leaves the loaded model as it was.
      await rejects(engine.load({ url: new URL('/no-such-model.gguf', location.href).href }), 'http_status');
      expect(engine.modelInfo).toEqual(info);
      const r = await engine.generate({ prompt: 'Once upon a time', maxTokens: 4 });
      expect(r.outputTokenIds).toHaveLength(4);
    } finally {
      await engine.unload();
    }
  });

  it('refuses sources wllama cannot run (invalid_argument)', async () => {
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
    await rejects(engine.load({ synthetic: 'stories260K-F32' }), 'invalid_argument');
    await rejects(engine.load({ path: '/models/x.gguf' }), 'invalid_argument');
    // Speculative decoding is ours alone: a draft is refused by name, not dropped.
    const e = await rejects(
      engine.load({ url: stories260kUrl() }, { draft: { url: stories260kUrl() } }),
      'invalid_argument',
    );
    expect(e.message).toMatch(
      /^speculative decoding \(draft\) runs on our WebGPU engine only, not on llama\.cpp's wasm build/,
    );
  });

  describe('loaded', () => {
    const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
    beforeAll(() => engine.load({ url: stories260kUrl() }, { contextLength: 64 }));
    afterAll(() => engine.unload());

    it('refuses token-id prompts and logits, and a prompt past the context; then still answers', async () => {
      await rejects(engine.generate({ promptTokenIds: [1, 403] }), 'invalid_argument');
      await rejects(engine.generate({ prompt: 'Once', returnLogits: true }), 'invalid_argument');
      await rejects(engine.generate({ prompt: 'Once', draft: { type: 'lookup' } }), 'invalid_argument');
      await rejects(
        engine.chat({ messages: [{ role: 'user', content: 'Once' }], draft: { type: 'lookup' } }),
        'invalid_argument',
      );
      // Structured output and tools cannot be honoured by llama.cpp's wasm here: refused, never free text.
      const sf = await rejects(
        engine.chat({
          messages: [{ role: 'user', content: 'Once' }],
          responseFormat: { type: 'json_schema', schema: { type: 'object' } },
        }),
        'unsupported',
      );
      expect(sf.message).toMatch(
        /^structured output \(responseFormat json_schema\) runs on our WebGPU engine/,
      );
      await rejects(
        engine.generate({ prompt: 'Once', responseFormat: { type: 'json_object' } }),
        'unsupported',
      );
      await rejects(
        engine.chat({
          messages: [{ role: 'user', content: 'Once' }],
          tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        }),
        'unsupported',
      );
      // Plain text is no constraint: answered.
      await engine.generate({ prompt: 'Once', maxTokens: 1, responseFormat: { type: 'text' } });
      // Past the context by its tokens (16 × 4–5 tokens), and by its characters alone: refused, not truncated.
      const e = await rejects(
        engine.generate({ prompt: 'Once upon a time '.repeat(16), maxTokens: 4 }),
        'context_overflow',
      );
      expect(e.message).toMatch(/^the prompt has \d+ tokens but the context holds 64/);
      await rejects(engine.generate({ prompt: 'Once upon a time '.repeat(400) }), 'context_overflow');
      const r = await engine.generate({ prompt: 'Once upon a time', maxTokens: 3, ignoreEos: true });
      expect(r.outputTokenIds).toEqual([432, 383, 286]);
    });

    it("tokenize and detokenize are llama.cpp's (our tokenizer)", async () => {
      expect(await engine.tokenize('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
      expect(await engine.detokenize([403, 407, 261, 378])).toBe('Once upon a time');
    });
  });
});
