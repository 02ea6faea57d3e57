/**
 * WebLLM's worker sends errors as strings (`err.toString()`: "Name: message"), so the class is lost. This
 * maps those strings to our EngineError codes. The patterns are the message formats in
 * `@mlc-ai/web-llm` 0.2.86 (`lib/index.js`: its error classes, its cache classes' fetch errors) and the
 * browser's own fetch / Cache API errors; `errors.test.ts` checks each against the real text.
 */
import { EngineError, type EngineErrorCode, isEngineError } from '../core/errors.ts';

/** [pattern, code, advice]: the first matching row wins, so specific rows come before general ones. */
export const WEBLLM_ERROR_TABLE: ReadonlyArray<readonly [RegExp, EngineErrorCode, string]> = [
  // ShaderF16SupportError / FeatureSupportError.
  [/shader-f16/i, 'feature_missing', 'this model needs shader-f16: pick a q4f32/q0f32 model'],
  [/requires feature \S+, which is not yet supported/i, 'feature_missing', 'pick another model'],
  // WebGPUNotAvailableError, WebGPUNotFoundError; tvmjs's detectGPUDevice failing.
  [
    /WebGPU is not supported|Cannot find WebGPU|WebGPUNotFoundError|WebGPUNotAvailableError|Cannot find adapter/i,
    'webgpu_unavailable',
    'use a browser with WebGPU enabled',
  ],
  // DeviceLostError (WebLLM says it is often out of memory; the code stays device_lost).
  [
    /device was lost|DeviceLostError|GPUDevice was lost/i,
    'device_lost',
    'reload the page or pick a smaller model',
  ],
  [/out of memory|OutOfMemory|\bOOM\b|allocation failed/i, 'out_of_memory', 'pick a smaller model'],
  // ContextWindowSizeExceededError.
  [/exceed context window size/i, 'context_overflow', 'shorten the prompt'],
  // ModelNotFoundError.
  [/Cannot find model record in appConfig/i, 'model_not_found', 'check the model id'],
  // ArtifactOPFSCache / ArtifactCrossOriginStorageCache: "Unable to fetch URL, received status 404".
  [/received status \d{3}/i, 'http_status', 'check the model URL'],
  // IndexedDB cache: "Failed to store URL with error: Error: Network response was not ok" (non-2xx);
  // a network failure there ends in "TypeError: Failed to fetch", caught by the network row first.
  [
    /Failed to fetch|NetworkError when attempting|network error|ERR_[A-Z_]+|Load failed/i,
    'network',
    'check the connection',
  ],
  [/Network response was not ok/i, 'http_status', 'check the model URL'],
  // Cache API `cache.add()` rejects with "Failed to execute 'add' on 'Cache': Request failed" on a non-2xx.
  [/on 'Cache': Request failed|Request failed/i, 'http_status', 'check the model URL'],
  // tvmjs "Cannot fetch URL" after a cache miss.
  [/Cannot fetch /i, 'network', 'check the model URL and the connection'],
  [
    /Missing `model_lib`|Make sure |is not a valid URL|Invalid URL/i,
    'invalid_argument',
    'fix the app config',
  ],
  [/not loaded with a model|Model not loaded/i, 'not_loaded', 'load a model first'],
  [/abort/i, 'aborted', ''],
];

/** The EngineError for a WebLLM error (a string from the worker, or an Error in the same thread). */
export function webLlmError(e: unknown): EngineError {
  if (isEngineError(e)) return e;
  const text = typeof e === 'string' ? e : e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  for (const [re, code, advice] of WEBLLM_ERROR_TABLE) {
    if (!re.test(text)) continue;
    const status = /status (\d{3})/.exec(text)?.[1];
    const msg = `WebLLM: ${text.replace(/^Error: /, '')}${status ? ` (HTTP ${status})` : ''}${advice ? ` — ${advice}` : ''}`;
    return new EngineError(code, msg, { cause: e });
  }
  return new EngineError('unsupported_model', `WebLLM: ${text}`, { cause: e });
}
