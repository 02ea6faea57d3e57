/**
 * The wllama backend in real Chromium on the real model: greedy output equals llama.cpp's (node-llama-cpp's
 * CPU build, tests/golden/stories260K.json) token for token with both KV-cache types, the streamed events
 * match the result, and it reports the threads it runs with. (This test page is not cross-origin isolated,
 * so wllama runs single-threaded here.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import type { TokenEvent } from '../core/types.ts';
import { openGguf } from '../gguf/reader.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WllamaEngine } from './engine.ts';
import { LOCAL_WLLAMA_WASM } from './vite-wasm.ts';

const MODEL_URL = stories260kUrl();

describe.each([
  ['f32', golden.generation.cases],
  ['f16', golden.generationF16.cases],
] as const)('WllamaEngine on stories260K, %s KV cache', (kvType, cases) => {
  const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
  beforeAll(async () => {
    const phases = new Set<string>();
    const info = await engine.load(
      { url: MODEL_URL },
      { contextLength: 512, kvType, onProgress: (p) => phases.add(p.phase) },
    );
    expect(info).toMatchObject({
      backend: 'wllama',
      architecture: 'llama',
      nLayers: 5,
      nEmbd: 64,
      nVocab: 512,
      contextLength: 512,
      trainedContextLength: 2048,
      kvType,
      fileParts: 1,
      threads: { count: 1, multithread: false, crossOriginIsolated: false },
    });
    expect(info.fileBytes).toBeGreaterThan(1e6);
    // Weights are the tensors' data, as our engine counts them (not the file with its header and padding).
    const gguf = await openGguf({ url: MODEL_URL });
    const tensorBytes = [...gguf.tensors.values()].reduce((a, t) => a + t.nBytes, 0);
    expect(info.weightBytes).toBe(tensorBytes);
    expect(info.weightBytes).toBeLessThan(info.fileBytes ?? 0);
    expect([...phases]).toEqual(['fetch', 'upload']);
  });
  afterAll(() => engine.unload());

  it.each(cases.map((c) => [c.prompt.slice(0, 30), c] as const))(
    'greedy output equals llama.cpp for %j',
    async (_name, c) => {
      const events: TokenEvent[] = [];
      const r = await engine.generate(
        { prompt: c.prompt, maxTokens: c.outputIds.length, ignoreEos: true },
        (e) => events.push(e),
      );
      expect(r.outputTokenIds).toEqual(c.outputIds);
      expect(r.promptTokenIds).toEqual(c.promptIds);
      expect(r.finishReason).toBe('length');
      expect(events.map((e) => e.tokenId)).toEqual(c.outputIds);
      expect(events.map((e) => e.text).join('')).toBe(r.text);
      expect(r.tokenTimesMs).toEqual(events.map((e) => e.tMs));
      // Streamed text keeps the first token's leading space, as llama.cpp's token pieces and our engine do.
      expect(r.text).toBe(await engine.detokenize([1, ...c.outputIds]));
      const s = await engine.stats();
      expect(s.lastDecode?.tokens).toBe(c.outputIds.length);
      // llama.cpp reuses the longest prefix of the previous prompt (at least BOS) from its KV cache.
      expect(s.lastPrefill?.tokens).toBeGreaterThan(0);
      expect(s.lastPrefill?.tokens).toBeLessThanOrEqual(c.promptIds.length);
    },
  );
});
