/**
 * What the page's views share: the active backend (our engine's worker, or WebLLM), the loaded model, the
 * device, and which long task holds the engine (one at a time: a load, a benchmark or a chat answer).
 * Views listen for `change` events.
 *
 * One backend holds a model at a time: loading into one frees the other (our worker is kept but unloaded;
 * WebLLM's engine is unloaded and its worker ended; wllama's the same). `engine` is the active backend as an {@link Engine}
 * (what the benchmark and the chat use); `ourEngine` is our engine's worker, for what only it can do
 * (llama-bench tests, kernel profiles).
 */
import { benchDeviceFromSnapshot, cpuBenchDevice } from '../bench/device.ts';
import type { AdapterSnapshot } from '../bench/gpu-report.ts';
import type { BenchDevice, BenchResult } from '../bench/types.ts';
import { BenchWorkerEngine } from '../bench/worker-api.ts';
import { EngineError } from '../core/errors.ts';
import type { Engine, LoadOptions, ModelInfo, ModelSource } from '../core/types.ts';
import type { GgufFile } from '../gguf/types.ts';
import type { WebLlmConfig } from '../webllm/engine.ts';

/**
 * Which engine runs the page's model: ours (`webgpu`), `@mlc-ai/web-llm` (`webllm`), or llama.cpp's wasm
 * build on the CPU (`wllama`, src/wllama/engine.ts: what the page's `auto` takes without a hardware GPU).
 */
export type Backend = 'webgpu' | 'webllm' | 'wllama';

/** How the session makes its engines (tests pass stand-ins; the page uses the defaults). */
export interface SessionEngines {
  /**
   * Our engine's worker (default: workers/bench.worker.ts behind comlink: the engine API plus llama-bench
   * and the kernel profile).
   */
  ours?: () => BenchWorkerEngine;
  /** A WebLLM engine (default: src/webllm/engine.ts's `WebLlmEngine`, imported on first use: a large module). */
  webllm?: (config: WebLlmConfig) => Engine | Promise<Engine>;
  /** A wllama engine (default: src/wllama/engine.ts's `WllamaEngine` with Vite's wasm URL, imported on first use). */
  wllama?: () => Engine | Promise<Engine>;
}

/** The page's wllama engine: the installed package's wasm served by Vite; every request prefills its whole prompt. */
async function defaultWllama(): Promise<Engine> {
  const [{ WllamaEngine }, { LOCAL_WLLAMA_WASM }] = await Promise.all([
    import('../wllama/engine.ts'),
    import('../wllama/vite-wasm.ts'),
  ]);
  return new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM, reusePromptPrefix: false });
}

/** A model loaded in the engine. */
export interface LoadedModel {
  info: ModelInfo;
  /** Id used in results: the file name without `.gguf`, the URL's file name, or the synthetic preset id. */
  id: string;
  /** How it was chosen, for display ("stories260K.gguf (file)"). */
  sourceLabel: string;
  synthetic: boolean;
  /** Size of the GGUF file in bytes. */
  fileBytes: number;
  load: BenchResult['load'];
  /**
   * The source it was loaded from and whether through the model library's cache, so that another backend
   * can load the same model ("Your CPU", src/ui/cpu-compare-view.ts); absent for WebLLM and synthetic models.
   */
  source?: { source: ModelSource; cache: boolean };
  /**
   * The model's GGUF header where the page has it (a synthetic shape's, a picked file's, or a URL model's as
   * our engine read it at load, gguf/header.ts `headerAsFile`): the fit views
   * size it by `modelFits` (weights, KV cache and run state), the one computation the page shows.
   */
  header?: GgufFile;
  /**
   * The id of the draft model loaded beside it for speculative decoding (our engine's setDraft, chosen in a
   * Drafting select: src/ui/draft-choice.ts); absent without one.
   */
  draftId?: string;
  /**
   * Our engine's source and load options (context, KV cache type, limits), so a view can load the same
   * model again with another option (the quality view's perplexity per cache type); absent for WebLLM and wllama.
   */
  reload?: {
    source: ModelSource;
    options: Pick<LoadOptions, 'contextLength' | 'kvType' | 'defaultLimits' | 'cache'>;
  };
}

/** Roofline measurements of this device (from "Measure GPU"). */
export interface DeviceMeasurement {
  bandwidthGBs: number;
  matmulGflops?: number;
  measuredAt: string;
}

export type Task = 'load' | 'bench' | 'chat';

/** Waits for `p` at most `ms` (an engine that no longer answers must not hold the page), ignoring failures. */
function settle(p: Promise<unknown> | undefined, ms = 2000): Promise<void> {
  if (!p) return Promise.resolve();
  let t: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((r) => {
      t = setTimeout(r, ms);
    }),
  ]).finally(() => clearTimeout(t));
}

export class Session extends EventTarget {
  private worker: BenchWorkerEngine | undefined;
  /** The other backend's engine when it is active: WebLLM's or wllama's (one at a time). */
  private webllm: Engine | undefined;
  /** The backend that holds (or last loaded) the model. */
  backend: Backend = 'webgpu';
  model: LoadedModel | undefined;
  /** The page's adapter (from the GPU probe), once known. */
  adapter: AdapterSnapshot | undefined;
  measurement: DeviceMeasurement | undefined;
  /** The long task that holds the engine now. */
  task: Task | undefined;
  /** Last finished benchmark result. */
  lastResult: BenchResult | undefined;

  constructor(private readonly makers: SessionEngines = {}) {
    super();
  }

  /** The active backend's engine (what the benchmark and the chat run on). */
  get engine(): Engine {
    if (this.backend === 'webgpu') return this.ourEngine;
    if (this.backend === 'wllama') {
      if (!this.webllm) throw new EngineError('not_loaded', 'no model is loaded in llama.cpp (wasm)');
      return this.webllm;
    }
    if (!this.webllm) throw new EngineError('not_loaded', 'no WebLLM model is loaded');
    return this.webllm;
  }

  /** Our engine's worker, started on first use (llama-bench and profiles need it, whatever the backend). */
  get ourEngine(): BenchWorkerEngine {
    this.worker ??= this.makers.ours
      ? this.makers.ours()
      : new BenchWorkerEngine(
          new Worker(new URL('../../workers/bench.worker.ts', import.meta.url), { type: 'module' }),
        );
    return this.worker;
  }

  /** True when our engine runs the page's model (llama-bench and the roofline apply). */
  get ours(): boolean {
    return this.backend === 'webgpu';
  }

  /**
   * Makes `backend` the active one for a load and frees the other one's model and GPU memory first: our
   * worker is kept but unloaded; a WebLLM or wllama engine is unloaded (its worker ends). wllama gets a fresh
   * engine (CPU memory only). A WebLLM load gets a fresh
   * engine with `webllm` (catalogue, base URL, cache backend). Clears the loaded model.
   * @returns the engine to load into.
   */
  async useBackend(backend: Backend, webllm: WebLlmConfig = {}): Promise<Engine> {
    this.setModel(undefined);
    const old = this.webllm;
    this.webllm = undefined;
    await settle(old?.unload());
    if (backend === 'webgpu') {
      this.backend = 'webgpu';
      this.changed();
      return this.ourEngine;
    }
    // Our model off the GPU; the worker stays for a later GGUF load (and an idle worker costs nothing).
    await settle(this.worker?.unload());
    if (backend === 'wllama') {
      const cpu = this.makers.wllama ? await this.makers.wllama() : await defaultWllama();
      this.webllm = cpu;
      this.backend = 'wllama';
      this.changed();
      return cpu;
    }
    const engine = this.makers.webllm
      ? await this.makers.webllm(webllm)
      : new (await import('../webllm/engine.ts')).WebLlmEngine(webllm);
    this.webllm = engine;
    this.backend = 'webllm';
    this.changed();
    return engine;
  }

  /** Throws away the active backend's engine (after a device loss), so the next use starts a fresh one. */
  async resetEngine(): Promise<void> {
    this.setModel(undefined);
    if (this.backend !== 'webgpu') {
      const e = this.webllm;
      this.webllm = undefined;
      await settle(e?.unload());
      return;
    }
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }

  /** Claims the engine for a task; false when another task holds it. */
  begin(task: Task): boolean {
    if (this.task) return false;
    this.task = task;
    this.changed();
    return true;
  }

  end(task: Task): void {
    if (this.task === task) this.task = undefined;
    this.changed();
  }

  setModel(m: LoadedModel | undefined): void {
    this.model = m;
    this.changed();
  }

  setAdapter(a: AdapterSnapshot | undefined): void {
    this.adapter = a;
    this.changed();
  }

  setMeasurement(m: DeviceMeasurement | undefined): void {
    this.measurement = m;
    this.changed();
  }

  setLastResult(r: BenchResult | undefined): void {
    this.lastResult = r;
    this.changed();
  }

  /** The device block of a result: the page's adapter; without one, the CPU for a wllama run. */
  benchDevice(): BenchDevice | undefined {
    if (this.adapter) return benchDeviceFromSnapshot(this.adapter, navigator.userAgent);
    // No adapter: only a CPU run (wllama) has a device to name.
    return this.backend === 'wllama'
      ? cpuBenchDevice(globalThis.navigator?.userAgent ?? '', globalThis.navigator?.hardwareConcurrency ?? 0)
      : undefined;
  }

  changed(): void {
    this.dispatchEvent(new Event('change'));
  }
}
