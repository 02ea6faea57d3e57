/**
 * The worker that hosts our WebGPU engine behind comlink: the engine API alone ({@link WorkerApi},
 * src/engine/worker-host.ts), no benchmark or profiler code. The page talks to it through `WorkerEngine`
 * (src/engine/worker-api.ts); the library (`createEngine`) and the widget inline it. The benchmark page
 * and `npm run bench` use `workers/bench.worker.ts`, this API plus llama-bench and the kernel profile.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from '../src/engine/comlink.ts';
import type { WorkerApi } from '../src/engine/worker-api.ts';
import { createWorkerHost } from '../src/engine/worker-host.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';

installErrorTransfer();
const api: WorkerApi = createWorkerHost(new WebGpuEngine()).api;
Comlink.expose(api);
