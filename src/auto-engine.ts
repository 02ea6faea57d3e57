/**
 * `createEngine({ backend })`'s engines other than the plain WebGPU worker: `'wllama'` (llama.cpp's wasm
 * build on the CPU, src/wllama/) and `'auto'`, which picks at its first load (src/core/backend-choice.ts:
 * WebGPU on a hardware adapter, wllama without WebGPU, without an adapter, or on a software adapter) and
 * reports the choice and its reason in `ModelInfo.backend` / `backendReason`. wllama's module is imported
 * on first use, so a site that never needs it never downloads it (in builds that split chunks).
 */
import { type BackendChoice, chooseBackend, type GpuLike } from './core/backend-choice.ts';
import { EngineError, terminatedError } from './core/errors.ts';
import type {
  ChatRequest,
  Engine,
  EngineStats,
  GenerateRequest,
  GenerateResult,
  LoadOptions,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from './core/types.ts';
import { checkLoadOptions, checkModelSource } from './core/validate.ts';

/** An engine `createEngine` returns: the {@link Engine} interface and `terminate()` (ends its worker). */
export interface PackageEngine extends Engine {
  /** Unloads and ends the engine's worker; the engine is unusable afterwards. */
  terminate(): Promise<void>;
  /** The loaded model's description (what the last load returned); undefined while none is loaded. */
  readonly modelInfo?: ModelInfo;
}

/** Options of the wllama backend as `createEngine` takes them. */
export interface WllamaOptions {
  /**
   * URL of `wllama.wasm` (the `@wllama/wllama` package's `esm/wasm/wllama.wasm`, same version). Default:
   * jsDelivr's copy of the version bundled here.
   */
  wllamaWasmUrl?: string;
  /** CPU threads: 'auto' (default; more than 1 only where the page is cross-origin isolated) or a number. */
  threads?: number | 'auto';
}

/** Makes the wllama engine (imported on first use). */
export async function makeWllamaEngine(o: WllamaOptions): Promise<PackageEngine> {
  const { WllamaEngine } = await import('./wllama/engine.ts');
  return new WllamaEngine({
    ...(o.wllamaWasmUrl ? { wasmUrl: o.wllamaWasmUrl } : {}),
    ...(o.threads !== undefined ? { threads: o.threads } : {}),
  });
}

/**
 * An engine that becomes the WebGPU or the wllama engine at its first `load`, by
 * {@link chooseBackend} (or as forced). Requests before a load reject with 'not_loaded'.
 */
export class AutoEngine implements PackageEngine {
  private engine?: PackageEngine;
  private choice?: BackendChoice;
  private terminated = false;
  private info?: ModelInfo;

  /**
   * @param makeWebGpu makes our WebGPU engine (a worker).
   * @param wllama the wllama backend's options.
   * @param gpu `navigator.gpu` (a stub in tests); default the page's.
   * @param force a backend to use without asking the adapter (`createEngine({ backend: 'wllama' })`).
   */
  constructor(
    private readonly makeWebGpu: () => PackageEngine,
    private readonly wllama: WllamaOptions = {},
    private readonly gpu: () => GpuLike | undefined = () =>
      (globalThis.navigator as { gpu?: GpuLike } | undefined)?.gpu,
    private readonly force?: BackendChoice['backend'],
  ) {}

  /** The first load's choice of backend and the engine made for it; a failure lets the next load try again. */
  private making?: Promise<void>;

  private async make(): Promise<void> {
    try {
      const choice: BackendChoice = this.force
        ? { backend: this.force, reason: `the site chose backend '${this.force}'` }
        : await chooseBackend(this.gpu());
      const engine = choice.backend === 'webgpu' ? this.makeWebGpu() : await makeWllamaEngine(this.wllama);
      if (this.terminated) {
        await engine.terminate();
        return;
      }
      this.engine = engine;
      this.choice = choice;
    } catch (e) {
      this.making = undefined;
      throw e;
    }
  }

  /** The choice made at the first load (undefined before it). */
  get backendChoice(): BackendChoice | undefined {
    return this.choice;
  }

  /**
   * Picks the backend (first call only), then loads with it. The result's `backend` and `backendReason`
   * say which and why.
   * @throws EngineError as the chosen engine's load; 'invalid_argument' for a `draft` when the choice is
   *   wllama (speculative decoding runs on our WebGPU engine only).
   */
  async load(source: ModelSource, options?: LoadOptions): Promise<ModelInfo> {
    if (this.terminated) throw terminatedError();
    checkModelSource(source);
    checkLoadOptions(options);
    // One choice and one engine, however many loads come before it is made (two made two workers).
    this.making ??= this.make();
    await this.making;
    if (this.terminated) throw terminatedError();
    if (!this.engine) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
    if (this.choice?.backend === 'wllama' && options?.draft !== undefined) {
      throw new EngineError(
        'invalid_argument',
        this.force
          ? `speculative decoding (draft) runs on our WebGPU engine only, and this engine was made with backend 'wllama': load without draft`
          : `speculative decoding (draft) runs on our WebGPU engine only; backend 'auto' chose wllama (${this.choice.reason}): load without draft`,
      );
    }
    const named = (info: ModelInfo | undefined): ModelInfo | undefined =>
      info && { ...info, backend: this.choice?.backend, backendReason: this.choice?.reason };
    try {
      this.info = named(await this.engine.load(source, options));
    } catch (e) {
      // A load that failed before freeing the loaded model leaves it loaded.
      this.info = named(this.engine.modelInfo);
      throw e;
    }
    return this.info as ModelInfo;
  }

  /**
   * The loaded model's description, as the last {@link load} returned it (while a load runs, and after one
   * that failed before freeing it, the model loaded before); undefined while none is loaded.
   */
  get modelInfo(): ModelInfo | undefined {
    return this.info;
  }

  private get loaded(): Engine {
    if (this.terminated) throw terminatedError();
    if (!this.engine) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
    return this.engine;
  }

  generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    return this.run((e) => e.generate(req, onToken, signal));
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult> {
    return this.run((e) => e.chat(req, onToken, signal));
  }
  tokenize(text: string, addBos?: boolean): Promise<number[]> {
    return this.run((e) => e.tokenize(text, addBos));
  }
  detokenize(ids: number[]): Promise<string> {
    return this.run((e) => e.detokenize(ids));
  }
  async stats(): Promise<EngineStats> {
    return this.engine ? this.engine.stats() : {};
  }
  async unload(): Promise<void> {
    this.info = undefined;
    await this.engine?.unload();
  }
  /** Ends the chosen engine (see its `terminate`); every later call rejects with 'not_loaded'. */
  async terminate(): Promise<void> {
    this.terminated = true;
    this.info = undefined;
    await this.engine?.terminate();
    this.engine = undefined;
  }

  private async run<T>(f: (e: Engine) => Promise<T>): Promise<T> {
    return f(this.loaded);
  }
}
