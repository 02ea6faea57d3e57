/**
 * The benchmark's worker: the engine worker's API (src/webgpu/worker-host.ts) plus the bench extension
 * (src/bench/worker-host.ts: llama-bench tests and the kernel profile), over one engine. The benchmark page
 * (src/ui/session.ts) and `npm run bench` (src/bench/page-api.ts) talk to it through `BenchWorkerEngine`
 * (src/bench/worker-api.ts). The library and the widget use `workers/engine.worker.ts`, which has none of
 * this.
 */

import * as Comlink from 'comlink';
import type { BenchWorkerApi } from '../src/bench/worker-api.ts';
import { benchWorkerApi } from '../src/bench/worker-host.ts';
import { installErrorTransfer } from '../src/core/comlink.ts';
import { openModelSource } from '../src/library/opener.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';
import { createWorkerHost } from '../src/webgpu/worker-host.ts';

installErrorTransfer();
const engine = new WebGpuEngine({ openModel: openModelSource });
const host = createWorkerHost(engine);
const api: BenchWorkerApi = { ...host.api, ...benchWorkerApi(engine, host) };
Comlink.expose(api);
