import { describe, expect, it } from 'vitest';
import { progressFromReport, tokensPerChunk } from './engine.ts';
import { webLlmError } from './errors.ts';

/** Strings as WebLLM's worker sends them (`err.toString()` of the errors in @mlc-ai/web-llm 0.2.86). */
const CASES: Array<[string, string]> = [
  [
    'ShaderF16SupportError: This model requires WebGPU extension shader-f16, which is not enabled in this browser. You can try to launch Chrome Canary in command line with flag "--enable-dawn-features=allow_unsafe_apis".',
    'feature_missing',
  ],
  [
    'FeatureSupportError: This model requires feature subgroups, which is not yet supported by this browser.',
    'feature_missing',
  ],
  [
    'WebGPUNotAvailableError: WebGPU is not supported in your current environment, but it is necessary to run the WebLLM engine. Please make sure that your browser supports WebGPU',
    'webgpu_unavailable',
  ],
  ['WebGPUNotFoundError: Cannot find WebGPU in the environment', 'webgpu_unavailable'],
  [
    'DeviceLostError: The WebGPU device was lost while loading the model. This issue often occurs due to running out of memory (OOM).',
    'device_lost',
  ],
  ['Error: Out of memory allocating buffer', 'out_of_memory'],
  ['TypeError: Failed to fetch', 'network'],
  ["TypeError: Failed to execute 'add' on 'Cache': Request failed", 'http_status'],
  [
    'Error: Failed to store http://127.0.0.1:1/m/mlc-chat-config.json with error: Error: Network response was not ok',
    'http_status',
  ],
  ['Error: Failed to store http://127.0.0.1:1/m/x.wasm with error: TypeError: Failed to fetch', 'network'],
  [
    'Error: ArtifactOPFSCache: Unable to fetch http://h/m/tensor-cache.json, received status 404',
    'http_status',
  ],
  ['Error: Cannot fetch http://h/m/params_shard_0.bin', 'network'],
  [
    'ModelNotFoundError: Cannot find model record in appConfig for X. Please check if the model ID is correct and included in the model_list configuration.',
    'model_not_found',
  ],
  [
    'ContextWindowSizeExceededError: Prompt tokens exceed context window size: number of prompt tokens: 5000; context window size: 4096',
    'context_overflow',
  ],
];

describe('WebLLM error strings → EngineError codes', () => {
  it.each(CASES)('%s', (text, code) => {
    const e = webLlmError(text);
    expect(e.code).toBe(code);
    expect(e.message).toContain('WebLLM');
  });
  it('keeps the HTTP status in the message', () => {
    expect(webLlmError('Error: ArtifactOPFSCache: Unable to fetch u, received status 404').message).toMatch(
      /HTTP 404/,
    );
  });
});

describe('WebLLM progress and token counts', () => {
  it('reads bytes from the fetch report', () => {
    const p = progressFromReport(
      {
        progress: 0.5,
        timeElapsed: 1,
        text: 'Fetching param cache[3/20]: 100MB fetched. 50% completed, 1 secs elapsed.',
      },
      5,
    );
    expect(p).toEqual({ phase: 'fetch', bytesDone: 100 * 2 ** 20, bytesTotal: 200 * 2 ** 20, tMs: 5 });
    expect(
      progressFromReport(
        { progress: 0.2, timeElapsed: 1, text: 'Loading model from cache[1/2]: 10MB loaded.' },
        0,
      ).phase,
    ).toBe('upload');
    expect(
      progressFromReport({ progress: 1, timeElapsed: 1, text: 'Finish loading on WebGPU' }, 0).phase,
    ).toBe('compile');
  });
  it('spreads usage tokens over chunks', () => {
    expect(tokensPerChunk(['a', 'b', 'c'], 3)).toEqual([1, 1, 1]);
    const k = tokensPerChunk(['a', 'bbbb', 'c'], 6);
    expect(k.reduce((a, b) => a + b, 0)).toBe(6);
    expect(k[1]).toBeGreaterThan(k[0]);
    expect(tokensPerChunk([], 0)).toEqual([]);
  });
});
