/**
 * The backends the widget can chat with, behind one small interface. `webgpu` is our engine in a Web
 * Worker (the worker is inlined into the widget bundle, so one script file is all a page needs).
 * `remote` runs the project's OpenAI-compatible client (src/remote/engine.ts) on the page when that module
 * is in the build (found at build time through `import.meta.glob`, loaded on first use); `webllm`, and
 * `remote` in a build without it, fail with a clear "not available in this build" error. `wllama` runs
 * llama.cpp's wasm build on the CPU, on the page (wllama starts its own worker; src/wllama/); `auto`
 * is resolved to `webgpu` or `wllama` by the element before a backend is made (src/core/backend-choice.ts).
 */
import EngineWorker from '../../workers/engine.worker.ts?worker&inline';
import { EngineError } from '../core/errors.ts';
import type {
  ChatRequest,
  GenerateResult,
  KvType,
  LoadProgress,
  ModelInfo,
  TokenEvent,
} from '../core/types.ts';
import { WorkerEngine } from '../core/worker-api.ts';
import type { WllamaEngine } from '../wllama/engine.ts';
import type { Disposable, EngineFactory } from './registry.ts';

/**
 * Backends the widget knows by name: `auto` picks `webgpu` on a hardware adapter and `wllama` where there
 * is no WebGPU, no adapter, or only a software adapter.
 */
export type WidgetEngineKind = 'webgpu' | 'webllm' | 'remote' | 'wllama' | 'auto';

/** Every value of the `engine` attribute ({@link WidgetEngineKind}), the default first. */
export const WIDGET_ENGINES: readonly WidgetEngineKind[] = ['webgpu', 'wllama', 'auto', 'remote', 'webllm'];

/** What a widget needs from a backend. */
export interface ChatBackend extends Disposable {
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult>;
}

/** Where the model comes from. */
export interface BackendSpec {
  engine: WidgetEngineKind;
  /** GGUF URL (webgpu, wllama), WebLLM model id (webllm), model name on the server (remote). */
  model: string;
  /** OpenAI-compatible server base URL (remote). */
  baseUrl?: string;
  /** KV-cache size in tokens (webgpu). */
  contextLength?: number;
  /** KV-cache element type (webgpu; LoadOptions.kvType): f16 (default), f32, q8_0 or q4_0. */
  kvType?: KvType;
  /**
   * webgpu: keep the GGUF in the page origin's model library (OPFS; src/library/): downloaded once,
   * loaded from disk afterwards, also offline. The element's `cache` attribute ("off" turns it off).
   */
  cache?: boolean;
  /** wllama: URL of `wllama.wasm` (the element's `wllama-wasm` attribute; default jsDelivr's copy). */
  wasmUrl?: string;
  /**
   * webgpu: a draft model for speculative decoding (LoadOptions.draft), a GGUF URL, `hf:` file or
   * `synthetic:` name: the element's `draft-model` attribute when it is not `lookup`.
   */
  draft?: string;
}

/** Error `code` of the widget's own failures (beside the engine's EngineError codes). */
export const NOT_AVAILABLE = 'not_available';

/** An error for a backend this build does not contain. */
export class WidgetError extends Error {
  override name = 'WidgetError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The remote client's module, when the build has it (an empty record otherwise). */
interface RemoteModule {
  RemoteEngine: new (cfg: {
    baseUrl: string;
    model?: string;
  }) => Pick<WorkerEngine, 'chat' | 'unload'> & { load(): Promise<ModelInfo> };
}
const remoteModules = import.meta.glob<RemoteModule>('../remote/engine.ts');

class RemoteBackend implements ChatBackend {
  private engine: InstanceType<RemoteModule['RemoteEngine']> | undefined;
  async load(spec: BackendSpec): Promise<ModelInfo> {
    const loader = Object.values(remoteModules)[0];
    if (!loader) throw new WidgetError(NOT_AVAILABLE, 'the remote backend is not available in this build');
    if (!spec.baseUrl)
      throw new WidgetError('invalid_argument', 'engine="remote" needs a base-url attribute (the server)');
    const { RemoteEngine } = await loader();
    this.engine = new RemoteEngine({ baseUrl: spec.baseUrl, ...(spec.model ? { model: spec.model } : {}) });
    return this.engine.load();
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult> {
    if (!this.engine) return Promise.reject(new WidgetError('not_loaded', 'the remote backend is not ready'));
    return this.engine.chat(req, onToken, signal);
  }
  dispose(): void {
    void this.engine?.unload().catch(() => undefined);
    this.engine = undefined;
  }
}

/** Workers made by this module and not yet terminated (a debug counter for tests and host pages). */
export const workerCounter = { created: 0, live: 0 };

class WebGpuBackend implements ChatBackend {
  private readonly engine: WorkerEngine;
  private terminated = false;
  constructor() {
    this.engine = new WorkerEngine(new EngineWorker({ name: 'webgpu-chat engine' }));
    workerCounter.created++;
    workerCounter.live++;
  }
  async load(spec: BackendSpec, onProgress: (p: LoadProgress) => void): Promise<ModelInfo> {
    const url = /^hf:/i.test(spec.model) ? spec.model : new URL(spec.model, document.baseURI).href;
    const info = await this.engine.load(
      { url },
      {
        onProgress,
        ...(spec.contextLength ? { contextLength: spec.contextLength } : {}),
        ...(spec.kvType ? { kvType: spec.kvType } : {}),
        ...(spec.cache ? { cache: true } : {}),
      },
    );
    if (!spec.draft) return info;
    // The draft after the target, so that its failure is said as the draft's (it read as the model's).
    const draft = spec.draft.startsWith('synthetic:')
      ? { synthetic: spec.draft }
      : { url: /^hf:/i.test(spec.draft) ? spec.draft : new URL(spec.draft, document.baseURI).href };
    try {
      await this.engine.setDraft(draft, { onProgress, ...(spec.cache ? { cache: true } : {}) });
    } catch (e) {
      const { code, message } = describeError(e);
      throw new WidgetError(code, `the draft model (draft-model="${spec.draft}") did not load: ${message}`);
    }
    return this.engine.modelInfo ?? info;
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult> {
    return this.engine.chat(req, onToken, signal);
  }
  async dispose(): Promise<void> {
    if (this.terminated) return;
    this.terminated = true;
    workerCounter.live--;
    // Terminate at once: an unload round trip could wait behind a running request.
    this.engine.worker.terminate();
  }
}

/**
 * llama.cpp's wasm build on the CPU (src/wllama/engine.ts), on the page; its module is imported on first
 * use (a chunk of its own in the npm package's build; inlined in the single-file widget builds).
 */
class WllamaBackend implements ChatBackend {
  private engine: WllamaEngine | undefined;
  private disposed = false;
  async load(spec: BackendSpec, onProgress: (p: LoadProgress) => void): Promise<ModelInfo> {
    const { WllamaEngine } = await import('../wllama/engine.ts');
    if (this.disposed) throw new WidgetError('aborted', 'the widget was removed while its engine loaded');
    const engine = new WllamaEngine(spec.wasmUrl ? { wasmUrl: spec.wasmUrl } : {});
    this.engine = engine;
    const url = /^hf:/i.test(spec.model) ? spec.model : new URL(spec.model, document.baseURI).href;
    const info = await engine.load(
      { url },
      {
        onProgress,
        ...(spec.contextLength ? { contextLength: spec.contextLength } : {}),
        ...(spec.kvType ? { kvType: spec.kvType } : {}),
        ...(spec.cache ? { cache: true } : {}),
      },
    );
    // Removed while loading: free the model now that the load is over (unload during it frees nothing).
    if (this.disposed) {
      await engine.unload();
      throw new WidgetError('aborted', 'the widget was removed while its engine loaded');
    }
    return info;
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult> {
    if (!this.engine) return Promise.reject(new WidgetError('not_loaded', 'the wllama backend is not ready'));
    return this.engine.chat(req, onToken, signal);
  }
  dispose(): void {
    this.disposed = true;
    void this.engine?.unload();
    this.engine = undefined;
  }
}

/** Says why WebGPU cannot run here, or undefined when an adapter is available. */
export async function webGpuMissingReason(): Promise<string | undefined> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu)
    return window.isSecureContext
      ? 'this browser does not support WebGPU (navigator.gpu is missing)'
      : 'WebGPU needs a secure context (https or localhost), and this page is not one';
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return 'WebGPU is present but no GPU adapter is available (blocked or unsupported GPU)';
  } catch (e) {
    return `WebGPU could not start: ${e instanceof Error ? e.message : String(e)}`;
  }
  return undefined;
}

/** Makes the registry factory for `spec`. Unavailable backends give a factory whose load rejects. */
export function backendFactory(spec: BackendSpec): EngineFactory<ChatBackend> {
  return (onProgress) => {
    if (spec.engine === 'webgpu') {
      const engine = new WebGpuBackend();
      return { engine, ready: engine.load(spec, onProgress) };
    }
    if (spec.engine === 'wllama') {
      const engine = new WllamaBackend();
      return { engine, ready: engine.load(spec, onProgress) };
    }
    if (spec.engine === 'remote' && isAvailable('remote')) {
      const engine = new RemoteBackend();
      return { engine, ready: engine.load(spec) };
    }
    const known = (WIDGET_ENGINES as readonly string[]).includes(spec.engine);
    const code = known ? NOT_AVAILABLE : 'invalid_argument';
    const why =
      spec.engine === 'webllm'
        ? 'engine="webllm" (MLC WebLLM models) is not available in this build of the widget'
        : spec.engine === 'remote'
          ? 'engine="remote" (an OpenAI-compatible server) is not available in this build of the widget'
          : `the engine attribute must be one of ${WIDGET_ENGINES.join(', ')}, got ${JSON.stringify(String(spec.engine))}`;
    const failed: ChatBackend = {
      chat: () => Promise.reject(new WidgetError(code, why)),
      dispose: () => undefined,
    };
    return { engine: failed, ready: Promise.reject(new WidgetError(code, why)) };
  };
}

/** True when `kind` can run in this build. */
export function isAvailable(kind: string): boolean {
  return (
    kind === 'webgpu' ||
    kind === 'wllama' ||
    kind === 'auto' ||
    (kind === 'remote' && Object.keys(remoteModules).length > 0)
  );
}

/** `{code, message}` of any error (EngineError codes kept). */
export function describeError(e: unknown): { code: string; message: string } {
  if (e instanceof WidgetError || e instanceof EngineError) return { code: e.code, message: e.message };
  if (e && typeof e === 'object' && 'code' in e && typeof (e as { code: unknown }).code === 'string')
    return { code: (e as { code: string }).code, message: String((e as { message?: unknown }).message ?? e) };
  return { code: 'unknown', message: e instanceof Error ? e.message : String(e) };
}
