/**
 * The worker that hosts our WebGPU engine behind comlink. The page talks to it through
 * `WorkerEngine` (src/engine/worker-api.ts).
 */
import * as Comlink from 'comlink';
import { profileGpu, runLlamaBench } from '../src/bench/llama-bench-gpu.ts';
import { installErrorTransfer } from '../src/engine/comlink.ts';
import { EngineError } from '../src/engine/errors.ts';
import type { WorkerApi } from '../src/engine/worker-api.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';

installErrorTransfer();
const engine = new WebGpuEngine();
const controllers = new Map<number, AbortController>();

function track<T>(id: number | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const c = new AbortController();
  if (id !== undefined) controllers.set(id, c);
  return run(c.signal).finally(() => {
    if (id !== undefined) controllers.delete(id);
  });
}

const api: WorkerApi = {
  load: (source, options, onProgress, id) =>
    track(id, (signal) => engine.load(source, { ...options, onProgress, signal })),
  generate: (req, onToken, id) => track(id, (signal) => engine.generate(req, onToken, signal)),
  chat: (req, onToken, id) => track(id, (signal) => engine.chat(req, onToken, signal)),
  cancel: (id) => controllers.get(id)?.abort(),
  tokenize: (text, addBos) => engine.tokenize(text, addBos),
  detokenize: (ids) => engine.detokenize(ids),
  scoreTokens: (ids, id) => track(id, (signal) => engine.scoreTokens(ids, signal)),
  stats: () => engine.stats(),
  unload: () => engine.unload(),
  llamaBench: (req, onProgress, id) =>
    track(id, async (signal) => {
      const model = engine.llama;
      if (!model) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
      const tests = await runLlamaBench(model, req.plan, onProgress, signal);
      const gpu = req.profile === false ? undefined : await profileGpu(model, req.profile);
      return { tests, gpu };
    }),
  adapterInfo: async () => engine.gpuContext?.info,
};

Comlink.expose(api);
