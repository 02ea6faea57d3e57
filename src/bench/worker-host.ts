/**
 * The worker side of the bench extension ({@link BenchWorkerApi}'s own methods), for
 * `workers/bench.worker.ts`: llama-bench tests and the kernel profile on the engine's loaded model.
 */
import { EngineError } from '../core/errors.ts';
import type { WorkerApi } from '../core/worker-api.ts';
import type { WebGpuEngine } from '../webgpu/engine.ts';
import { ordered, type WorkerHost } from '../webgpu/worker-host.ts';
import { profileGpu, runLlamaBench } from './llama-bench-gpu.ts';
import type { BenchWorkerApi } from './worker-api.ts';

/**
 * The methods {@link BenchWorkerApi} adds to the engine API, over `engine`; cancellable through `host`'s
 * `cancel(id)`. `llamaBench` throws EngineError('not_loaded') when no model is loaded, and the errors of
 * `runLlamaBench` (`aborted`, `context_overflow`).
 */
export function benchWorkerApi(
  engine: WebGpuEngine,
  host: Pick<WorkerHost, 'track'>,
): Omit<BenchWorkerApi, keyof WorkerApi> {
  return {
    llamaBench: (req, onProgress, id) =>
      host.track(id, async (signal) => {
        const model = engine.llama;
        if (!model) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
        return ordered(onProgress, async (cb) => {
          const tests = await runLlamaBench(model, req.plan, cb, signal);
          const gpu = req.profile === false ? undefined : await profileGpu(model, req.profile);
          return { tests, gpu };
        });
      }),
    modelHeader: async () => engine.modelHeader,
  };
}
