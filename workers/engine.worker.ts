/**
 * The worker that hosts our WebGPU engine behind comlink: the engine API alone ({@link WorkerApi},
 * src/webgpu/worker-host.ts), no benchmark or profiler code. The page talks to it through `WorkerEngine`
 * (src/core/worker-api.ts); the library (`createEngine`) and the widget inline it. The benchmark page
 * and `npm run bench` use `workers/bench.worker.ts`, this API plus llama-bench and the kernel profile.
 */

import * as Comlink from 'comlink';
import { installErrorTransfer } from '../src/core/comlink.ts';
import type { WorkerApi } from '../src/core/worker-api.ts';
import { openModelSource } from '../src/library/opener.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';
import { createWorkerHost } from '../src/webgpu/worker-host.ts';

installErrorTransfer();
const api: WorkerApi = createWorkerHost(new WebGpuEngine({ openModel: openModelSource })).api;
Comlink.expose(api);
