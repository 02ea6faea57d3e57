/**
 * The engine API a worker hosting an engine exposes through comlink ({@link WorkerApi}: served by
 * src/webgpu/worker-host.ts in `workers/engine.worker.ts`), and {@link WorkerEngine}, the page-side
 * `Engine` that forwards to it. Engine only: the bench extension (llama-bench, kernel profiles) is
 * src/bench/worker-api.ts's `BenchWorkerApi` / `BenchWorkerEngine` over `workers/bench.worker.ts`, so
 * nothing here imports src/bench.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from './comlink.ts';
import { EngineError, terminatedError } from './errors.ts';
import type {
  ChatRequest,
  Engine,
  EngineStats,
  GenerateRequest,
  GenerateResult,
  LoadOptions,
  LoadProgress,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from './types.ts';
import {
  checkLoadOptions,
  checkModelSource,
  validateChatRequest,
  validateGenerateRequest,
} from './validate.ts';

/**
 * What the engine worker exposes. Callbacks are comlink proxies; cancellation is by request id. Errors are
 * `EngineError`s and cross with their codes (src/core/comlink.ts).
 */
export interface WorkerApi {
  load(
    source: ModelSource,
    options: Omit<LoadOptions, 'onProgress' | 'signal'>,
    onProgress?: (p: LoadProgress) => void,
    loadId?: number,
  ): Promise<ModelInfo>;
  /** `WebGpuEngine.setDraft`: a draft model beside the loaded target (undefined drops it); cancellable by id. */
  setDraft(
    source: ModelSource | undefined,
    options: Pick<LoadOptions, 'cache' | 'batchSize'>,
    onProgress?: (p: LoadProgress) => void,
    loadId?: number,
  ): Promise<ModelInfo['draft']>;
  generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    requestId?: number,
  ): Promise<GenerateResult>;
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, requestId?: number): Promise<GenerateResult>;
  /**
   * Aborts the load or generation with this id; an id above any the worker has seen is kept, and the
   * request that comes with it starts aborted.
   */
  cancel(id: number): void;
  tokenize(text: string, addBos?: boolean): Promise<number[]>;
  detokenize(ids: number[]): Promise<string>;
  /** Teacher-forced NLL and top-1 per position (`WebGpuEngine.scoreTokens`); cancellable by id. */
  scoreTokens(ids: number[], requestId?: number): Promise<{ nll: Float64Array; top1: Int32Array }>;
  stats(): Promise<EngineStats>;
  unload(): Promise<void>;
  /** `WebGpuEngine.modelInfo`: the loaded model's description, undefined while none is loaded. */
  modelInfo(): Promise<ModelInfo | undefined>;
  /** Adapter facts of the worker's device (after load). */
  adapterInfo(): Promise<
    | { vendor: string; architecture: string; device: string; description: string; isFallback: boolean }
    | undefined
  >;
}

let nextId = 1;

/** How long {@link WorkerEngine.terminate} lets the worker unload (free its GPU memory) before ending it. */
const TERMINATE_UNLOAD_MS = 2000;

/**
 * An `Engine` on the page that runs in a Worker exposing {@link WorkerApi} (`workers/engine.worker.ts`, or
 * the bench worker through src/bench/worker-api.ts's subclass `BenchWorkerEngine`). Token timestamps are
 * taken in the worker when the token id is read back; the page never sets the clock (performance.now()
 * origins differ between page and worker, so `tMs` values are in the worker's timeline: use differences
 * only).
 */
export class WorkerEngine implements Engine {
  readonly worker: Worker;
  /**
   * The worker's comlink proxy. Private so that the package's declarations never name comlink's types (a
   * consumer would need `comlink` installed to check them with `skipLibCheck: false`).
   */
  private readonly remote: Comlink.Remote<WorkerApi>;
  /** Set by {@link terminate}: every call then rejects ('not_loaded'). */
  private terminated = false;
  /** The loaded model: what the last load returned, or after a failed one what the worker still has. */
  private info?: ModelInfo;
  /** Rejecters of the calls in flight, so that {@link terminate} settles them (a dead worker never answers). */
  private readonly inFlight = new Set<(e: EngineError) => void>();
  constructor(worker: Worker) {
    installErrorTransfer();
    this.worker = worker;
    this.remote = Comlink.wrap<WorkerApi>(worker);
  }

  /**
   * Runs one call to the worker: rejected at once after {@link terminate}, and rejected ('aborted') by a
   * terminate that comes while it runs; for subclasses' methods too (src/bench/worker-api.ts).
   * @throws EngineError('not_loaded') after terminate.
   */
  protected call<T>(run: () => Promise<T>): Promise<T> {
    if (this.terminated) return Promise.reject(terminatedError());
    return new Promise<T>((resolve, reject) => {
      this.inFlight.add(reject);
      run()
        .then(resolve, reject)
        .finally(() => this.inFlight.delete(reject));
    });
  }

  /**
   * Runs `run` with a fresh request id that aborting `signal` cancels in the worker (`cancel(id)`); for
   * subclasses that add methods of an extended worker API (src/bench/worker-api.ts).
   */
  protected withSignal<T>(signal: AbortSignal | undefined, run: (id: number) => Promise<T>): Promise<T> {
    return this.call(() => {
      const id = nextId++;
      const onAbort = () => void this.remote.cancel(id);
      // An already aborted signal: the cancel goes first (messages on one port arrive in order), and the
      // worker keeps it for the id it has not seen yet, so the request starts aborted. Sent after the
      // request, it arrived once the prefill had run and one token was out.
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      return run(id).finally(() => signal?.removeEventListener('abort', onAbort));
    });
  }

  load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    try {
      checkModelSource(source);
      checkLoadOptions(options);
      if (options.draft !== undefined) checkModelSource(options.draft, 'the draft model source');
    } catch (e) {
      return Promise.reject(e);
    }
    const { onProgress, signal, ...rest } = options;
    return this.withSignal(signal, (id) =>
      this.remote.load(source, rest, onProgress ? Comlink.proxy(onProgress) : undefined, id),
    ).then(
      (info) => {
        this.info = info;
        return info;
      },
      async (e: unknown) => {
        // A load that failed before freeing the loaded model leaves it loaded (WebGpuEngine.load).
        this.info = this.terminated ? undefined : await this.remote.modelInfo().catch(() => undefined);
        throw e;
      },
    );
  }

  /**
   * The loaded model's description, as the last {@link load} returned it (its draft as the last
   * {@link setDraft} left it); while a load runs, the model loaded before it; after a load that failed,
   * the model the worker still has (one that failed before freeing it keeps it), else undefined;
   * undefined before a load, after {@link unload} or {@link terminate}. Read
   * without a call to the worker, e.g. by `withOpenAI` for its objects' `model`.
   */
  get modelInfo(): ModelInfo | undefined {
    return this.info;
  }
  /**
   * Loads `source` as the draft model beside the loaded target, replacing any draft; `undefined` drops it
   * (our WebGPU engine's `setDraft`). A failure leaves the target loaded, without a draft.
   * @returns the draft's facts, undefined when dropped.
   * @throws EngineError as `WebGpuEngine.setDraft`: 'not_loaded', 'invalid_argument' (another vocabulary),
   *   'out_of_memory' (it does not fit beside the target), a fetch or parse error, 'aborted'.
   */
  setDraft(
    source: ModelSource | undefined,
    options: Pick<LoadOptions, 'cache' | 'batchSize' | 'signal' | 'onProgress'> = {},
  ): Promise<ModelInfo['draft']> {
    try {
      if (source !== undefined) checkModelSource(source, 'the draft model source');
    } catch (e) {
      return Promise.reject(e);
    }
    const { onProgress, signal, ...rest } = options;
    return this.withSignal(signal, (id) =>
      this.remote.setDraft(source, rest, onProgress ? Comlink.proxy(onProgress) : undefined, id),
    ).then(
      (draft) => {
        this.setInfoDraft(draft);
        return draft;
      },
      (e: unknown) => {
        // A failure leaves the target loaded without a draft (WebGpuEngine.setDraft).
        this.setInfoDraft(undefined);
        throw e;
      },
    );
  }

  private setInfoDraft(draft: ModelInfo['draft']): void {
    if (!this.info) return;
    const { draft: _old, ...rest } = this.info;
    this.info = draft ? { ...rest, draft } : rest;
  }
  generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    // Checked on this side too: a request that cannot be cloned would otherwise fail as a DataCloneError.
    try {
      validateGenerateRequest(req);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.withSignal(signal, (id) =>
      this.remote.generate(req, onToken ? Comlink.proxy(onToken) : undefined, id),
    );
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult> {
    try {
      validateChatRequest(req);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.withSignal(signal, (id) =>
      this.remote.chat(req, onToken ? Comlink.proxy(onToken) : undefined, id),
    );
  }
  tokenize(text: string, addBos?: boolean): Promise<number[]> {
    return this.call(() => this.remote.tokenize(text, addBos));
  }
  detokenize(ids: number[]): Promise<string> {
    return this.call(() => this.remote.detokenize(ids));
  }
  /** Teacher-forced scoring (perplexity): NLL of ids[i + 1] and the top-1 token after ids[0..i]. */
  scoreTokens(ids: number[], signal?: AbortSignal): Promise<{ nll: Float64Array; top1: Int32Array }> {
    return this.withSignal(signal, (id) => this.remote.scoreTokens(ids, id));
  }
  /** Adapter facts of the worker's device (after load; undefined before). */
  adapterInfo(): ReturnType<WorkerApi['adapterInfo']> {
    return this.call(() => this.remote.adapterInfo());
  }
  stats(): Promise<EngineStats> {
    return this.call(() => this.remote.stats());
  }
  unload(): Promise<void> {
    this.info = undefined;
    return this.call(() => this.remote.unload());
  }
  /**
   * Unloads (the worker frees its GPU memory; at most {@link TERMINATE_UNLOAD_MS}) and ends the worker. A
   * load or request still running rejects with 'aborted'; every later call with 'not_loaded'. Calling it
   * again does nothing.
   */
  async terminate(): Promise<void> {
    if (this.terminated) return;
    this.terminated = true;
    this.info = undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.remote.unload().catch(() => undefined),
      new Promise((r) => {
        timer = setTimeout(r, TERMINATE_UNLOAD_MS);
      }),
    ]);
    clearTimeout(timer);
    this.worker.terminate();
    const gone = new EngineError('aborted', 'the engine was terminated during this call');
    for (const reject of this.inFlight) reject(gone);
    this.inFlight.clear();
  }
}
