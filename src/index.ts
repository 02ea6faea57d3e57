/**
 * The package's engine API (`import { createEngine } from 'webgpu-llm-bench'`): our WebGPU engine in a
 * Web Worker, driven from the page. The worker is inlined into the library build (a `blob:` worker), so a
 * site's bundler has no worker file to find and nothing to configure.
 *
 * ```ts
 * const engine = createEngine();
 * await engine.load({ url: '/models/stories260K.gguf' });
 * const r = await engine.generate({ prompt: 'Once upon a time', maxTokens: 20, temperature: 0 }, (t) => show(t.text));
 * await engine.terminate();
 * ```
 */
import EngineWorker from '../workers/engine.worker.ts?worker&inline';
import { AutoEngine, type PackageEngine, type WllamaOptions } from './auto-engine.ts';
import type { LoadOptions, ModelInfo, ModelSource } from './core/types.ts';
import { WorkerEngine } from './core/worker-api.ts';

export type { PackageEngine, WllamaOptions } from './auto-engine.ts';
export { AutoEngine } from './auto-engine.ts';
export type { BackendChoice } from './core/backend-choice.ts';
export { chooseBackend } from './core/backend-choice.ts';

export type { EngineErrorCode } from './core/errors.ts';

import { EngineError } from './core/errors.ts';

export { EngineError, isEngineError } from './core/errors.ts';
export type {
  BackendKind,
  CacheOption,
  ChatMessage,
  ChatRequest,
  Engine,
  EngineStats,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  KvType,
  LoadOptions,
  LoadPhase,
  LoadProgress,
  ModelInfo,
  ModelSource,
  SamplingParams,
  TokenEvent,
} from './core/types.ts';
export { WorkerEngine };

/** Options of {@link createEngine}. */
export interface CreateEngineOptions extends WllamaOptions {
  /** The worker's name (shown in the browser's developer tools). Default "webgpu-llm engine". */
  name?: string;
  /**
   * Which engine runs the model: 'webgpu' (default: our engine, in a worker), 'wllama' (llama.cpp's wasm
   * build on the CPU), or 'auto': WebGPU on a hardware adapter, wllama where there is no WebGPU, no
   * adapter, or only a software adapter (SwiftShader), chosen at the first load and reported in
   * `ModelInfo.backend` / `backendReason`.
   */
  backend?: 'webgpu' | 'wllama' | 'auto';
}

/**
 * A URL source made absolute against the page (`document.baseURI`): the worker is a `blob:` worker, where
 * `/models/x.gguf` or `models/x.gguf` would mean nothing. `hf:` shorthands and other sources pass as they are.
 */
function resolveSource(source: ModelSource): ModelSource {
  // Anything but a non-empty URL string passes as it is, for WorkerEngine's check to refuse with its reason.
  const url = (source as { url?: unknown } | null | undefined)?.url;
  if (typeof url !== 'string' || url.trim() === '' || /^hf:/i.test(url) || typeof document === 'undefined')
    return source;
  return { ...source, url: new URL(url, document.baseURI).href };
}

/** {@link WorkerEngine} whose `load` and `setDraft` resolve relative model URLs (a draft's too) against the page. */
class PageEngine extends WorkerEngine {
  override load(source: ModelSource, options?: LoadOptions): Promise<ModelInfo> {
    const draft = options?.draft;
    return super.load(resolveSource(source), draft ? { ...options, draft: resolveSource(draft) } : options);
  }
  override setDraft(
    source: ModelSource | undefined,
    options?: Parameters<WorkerEngine['setDraft']>[1],
  ): Promise<ModelInfo['draft']> {
    return super.setDraft(source && resolveSource(source), options);
  }
}

/**
 * A new engine in its own Web Worker: `load` a GGUF (URL, `hf:` shorthand, File/Blob), then `generate` or
 * `chat` (streamed through `onToken`); a relative model URL is relative to the page, as in `fetch`, `tokenize`, `stats`, `unload`; `terminate()` ends the worker. Every
 * method may reject with an {@link EngineError} (its `code` says what failed).
 * @throws EngineError('unsupported') where there is no Web Worker (Node); ('invalid_argument') for another backend.
 */
export function createEngine(options?: CreateEngineOptions & { backend?: 'webgpu' }): WorkerEngine;
export function createEngine(options: CreateEngineOptions & { backend: 'wllama' | 'auto' }): PackageEngine;
export function createEngine(options: CreateEngineOptions = {}): WorkerEngine | PackageEngine {
  // The options first: a wrong backend name is the caller's to fix wherever it runs.
  const backend = options.backend ?? 'webgpu';
  if (backend !== 'webgpu' && backend !== 'auto' && backend !== 'wllama')
    throw new EngineError(
      'invalid_argument',
      `backend must be 'webgpu', 'wllama' or 'auto', got ${JSON.stringify(backend)}`,
    );
  // Node (a script, server-side rendering) has no Web Worker: say so as an EngineError, not a ReferenceError.
  if (typeof Worker === 'undefined')
    throw new EngineError(
      'unsupported',
      'createEngine runs the engine in a Web Worker, which this environment lacks: the package runs models in browsers only ' +
        '(on a server-rendered page, create the engine in the browser; to run models from Node, use the command line ' +
        'of the webgpu-llm-bench repository, which the npm package does not include: its docs/cli.md)',
    );
  const webgpu = () => new PageEngine(new EngineWorker({ name: options.name ?? 'webgpu-llm engine' }));
  if (backend === 'webgpu') return webgpu();
  return new AutoEngine(webgpu, options, undefined, backend === 'wllama' ? 'wllama' : undefined);
}
