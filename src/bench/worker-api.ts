/**
 * The bench extension of the engine's worker API: {@link BenchWorkerApi} (the engine API plus llama-bench
 * tests and the kernel profile), served by `workers/bench.worker.ts` (worker side: src/bench/worker-host.ts),
 * and {@link BenchWorkerEngine}, the page-side engine that adds {@link BenchWorkerEngine.llamaBench} and
 * {@link BenchWorkerEngine.modelHeader} to `WorkerEngine`. Used by the benchmark page (src/ui/session.ts) and `npm run bench` (page-api.ts); the
 * library and the widget use the engine worker, which has none of it.
 */
import * as Comlink from 'comlink';
import { type WorkerApi, WorkerEngine } from '../core/worker-api.ts';
import type { GgufHeader } from '../gguf/header.ts';
import type { GpuProfile, LlamaBenchPlan, LlamaBenchTest } from './llama-bench.ts';
import type { LlamaBenchProgress, ProfileOptions } from './llama-bench-gpu.ts';

/** What {@link BenchWorkerApi.llamaBench} runs: the tests, then (unless `profile` is false) the kernel profile. */
export interface LlamaBenchRequest {
  plan: LlamaBenchPlan;
  profile?: ProfileOptions | false;
}

/** What the bench worker exposes: the engine worker's API, and llama-bench. */
export interface BenchWorkerApi extends WorkerApi {
  /**
   * llama-bench tests and the kernel profile on the loaded model (src/bench/llama-bench-gpu.ts);
   * cancellable by id. Throws EngineError('not_loaded') before a load, `aborted` when cancelled,
   * `context_overflow` when a test's depth + size exceeds the loaded context.
   */
  llamaBench(
    req: LlamaBenchRequest,
    onProgress?: (p: LlamaBenchProgress) => void,
    requestId?: number,
  ): Promise<{ tests: LlamaBenchTest[]; gpu?: GpuProfile }>;
  /** The loaded model's GGUF header as read at load (`WebGpuEngine.modelHeader`); undefined before a load. */
  modelHeader(): Promise<GgufHeader | undefined>;
}

/**
 * {@link WorkerEngine} over the bench worker (`workers/bench.worker.ts`): the same engine, plus
 * {@link llamaBench}. Cancelling through `signal` uses the engine API's `cancel(id)`.
 */
export class BenchWorkerEngine extends WorkerEngine {
  /** A second comlink proxy on the same worker, typed with the bench methods (requests match by id). */
  private readonly bench: Comlink.Remote<BenchWorkerApi>;
  constructor(worker: Worker) {
    super(worker);
    this.bench = Comlink.wrap<BenchWorkerApi>(worker);
  }

  /** llama-bench tests and the kernel profile in the worker (see {@link BenchWorkerApi.llamaBench}). */
  llamaBench(
    req: LlamaBenchRequest,
    onProgress?: (p: LlamaBenchProgress) => void,
    signal?: AbortSignal,
  ): Promise<{ tests: LlamaBenchTest[]; gpu?: GpuProfile }> {
    return this.withSignal(signal, (id) =>
      this.bench.llamaBench(req, onProgress ? Comlink.proxy(onProgress) : undefined, id),
    );
  }

  /**
   * The loaded model's GGUF header as the worker read it at load, without the tokenizer's arrays
   * (gguf/header.ts `headerOf`; `headerAsFile` makes it a GgufFile for the fit estimates): nothing is read
   * from the model's source again. Undefined before a load.
   */
  modelHeader(): Promise<GgufHeader | undefined> {
    return this.bench.modelHeader();
  }
}
