/**
 * The benchmark as the page runs it, with no DOM: load a model into the engine worker, run a plan
 * ({@link runBenchmark}), measure the roofline, read the device, and build the result file. The page UI
 * and `npm run bench` both call {@link runBench}; the command line reaches it through `window.benchApi`,
 * which {@link installBenchApi} sets up (the page entry calls it).
 *
 * Progress goes to the `onEvent` callback as {@link BenchEvent}s (for the command line, to
 * `window.__benchEvent`, which Playwright exposes).
 */
import { EngineError } from '../engine/errors.ts';
import type { Engine, LoadProgress, ModelInfo, ModelSource } from '../engine/types.ts';
import { WorkerEngine } from '../engine/worker-api.ts';
import { createGpuContext } from '../webgpu/device.ts';
import { readBenchDevice } from './device.ts';
import {
  type BandwidthResult,
  buildRoofline,
  type MatmulResult,
  measureBandwidth,
  measureMatmul,
} from './roofline.ts';
import { benchLoadFrom, benchModelFrom, buildResult, runBenchmark, summarizeRuns } from './runner.ts';
import type { BenchDevice, BenchPlan, BenchResult, BenchRoofline, BenchRun } from './types.ts';

/** Where the model comes from. */
export type BenchModelSpec =
  /** A GGUF URL (a local file is served to the page by the command line). `id` names it in results. */
  | { url: string; id?: string }
  /**
   * A synthetic model, `synthetic:SHAPE-TYPE` (real shapes, seeded random weights made on the GPU by the
   * engine; src/webgpu/model/synthetic.ts). Speed is real, text is noise.
   */
  | { synthetic: string; seed?: number }
  /** A file the person picked or dropped. */
  | { blob: Blob; id: string };

/** What to run. */
export interface BenchOptions {
  model: BenchModelSpec;
  /** Only 'webgpu' so far. */
  engine?: string;
  plan: BenchPlan;
  /** KV cache length; default the engine's (min(model's context, 2048)). */
  contextLength?: number;
  /** Bound on the model load and on each request, ms (default: none). */
  timeoutMs?: number;
  /** Measure bandwidth and matmul throughput after the runs (default true). */
  roofline?: boolean;
  /** Stops everything; the promise rejects with EngineError('aborted'). */
  signal?: AbortSignal;
}

/** Progress of {@link runBench}, in order. */
export type BenchEvent =
  | { type: 'device'; device: BenchDevice }
  | { type: 'load-start'; modelId: string }
  | { type: 'load-progress'; progress: LoadProgress }
  | { type: 'loaded'; model: BenchResult['model']; load: BenchResult['load']; info: ModelInfo }
  | { type: 'run-start'; index: number; total: number; promptName: string; warmup: boolean }
  | { type: 'run-done'; index: number; total: number; warmup: boolean; run: BenchRun }
  | { type: 'roofline-start' }
  | { type: 'roofline-done'; bandwidth: BandwidthResult; matmul: MatmulResult; roofline: BenchRoofline }
  | { type: 'warning'; message: string };

/** What the command line calls in the page. */
export interface BenchApi {
  runFromCli(opts: Omit<BenchOptions, 'signal'>): Promise<BenchResult>;
}

declare global {
  interface Window {
    benchApi?: BenchApi;
    /** Set by the command line (Playwright's exposeFunction) to receive progress. */
    __benchEvent?: (e: BenchEvent) => void;
  }
}

/** The engines {@link runBench} can run. */
export const BENCH_ENGINES = ['webgpu'] as const;

function modelId(spec: BenchModelSpec): string {
  if ('synthetic' in spec)
    return spec.synthetic.startsWith('synthetic:') ? spec.synthetic : `synthetic:${spec.synthetic}`;
  if ('blob' in spec) return spec.id;
  return spec.id ?? spec.url;
}

function modelSource(spec: BenchModelSpec): ModelSource {
  if ('synthetic' in spec) return { synthetic: modelId(spec), seed: spec.seed };
  if ('blob' in spec) return { blob: spec.blob, name: spec.id };
  return { url: spec.url };
}

/**
 * Runs `work` with a signal that fires after `ms` (or with `outer`); a timeout becomes EngineError('timeout')
 * with `what` in its message. If the work ignores the abort for 2 s more, the promise rejects anyway.
 */
async function bounded<T>(
  ms: number | undefined,
  outer: AbortSignal | undefined,
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ctl = new AbortController();
  const onOuter = () => ctl.abort();
  outer?.addEventListener('abort', onOuter, { once: true });
  if (outer?.aborted) ctl.abort();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let grace: ReturnType<typeof setTimeout> | undefined;
  const timeoutError = () =>
    new EngineError(
      'timeout',
      `${what} did not finish within ${(ms ?? 0) / 1000} s (raise --timeout-s if it is only slow)`,
    );
  const guard = new Promise<never>((_, reject) => {
    if (!(ms !== undefined && ms > 0)) return;
    timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
      grace = setTimeout(() => reject(timeoutError()), 2000);
    }, ms);
  });
  try {
    const p = work(ctl.signal);
    p.catch(() => undefined);
    return await Promise.race([p, guard]);
  } catch (e) {
    if (timedOut) throw timeoutError();
    throw e;
  } finally {
    clearTimeout(timer);
    clearTimeout(grace);
    outer?.removeEventListener('abort', onOuter);
  }
}

/** Mean context length during decode over the runs: prompt + half the output. */
function meanDecodeContext(runs: readonly BenchRun[]): number {
  if (runs.length === 0) return 0;
  let s = 0;
  for (const r of runs) s += r.promptTokens + r.outputTokens / 2;
  return s / runs.length;
}

/** Measures bandwidth and matmul throughput on a device of its own, and the roofline of the runs. */
async function measureRoofline(
  info: ModelInfo,
  runs: readonly BenchRun[],
  onEvent: (e: BenchEvent) => void,
): Promise<BenchRoofline | undefined> {
  onEvent({ type: 'roofline-start' });
  let gpu: Awaited<ReturnType<typeof createGpuContext>> | undefined;
  try {
    gpu = await createGpuContext();
    const bandwidth = await measureBandwidth(gpu.device);
    const matmul = await measureMatmul(gpu.device);
    const s = summarizeRuns(runs);
    const decode = s.decodeTokensPerSecond?.median;
    if (decode === undefined) {
      onEvent({ type: 'warning', message: 'no run produced two tokens or more: no decode roofline' });
      return undefined;
    }
    const roofline = buildRoofline({
      model: info,
      bandwidthGBs: bandwidth.GBs,
      matmulGflops: matmul.GFLOPs,
      decodeTokensPerSecond: decode,
      prefillTokensPerSecond: s.prefillTokensPerSecond?.median,
      contextUsed: meanDecodeContext(runs),
    });
    onEvent({ type: 'roofline-done', bandwidth, matmul, roofline });
    return roofline;
  } catch (e) {
    onEvent({ type: 'warning', message: `roofline measurement failed: ${(e as Error)?.message ?? e}` });
    return undefined;
  } finally {
    gpu?.device.destroy();
  }
}

/** Creates the engine for a name. @throws EngineError('invalid_argument') for an unknown engine. */
function createEngine(name: string): Engine {
  if (name === 'webgpu')
    return new WorkerEngine(
      new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
    );
  throw new EngineError(
    'invalid_argument',
    `unknown engine "${name}" (available: ${BENCH_ENGINES.join(', ')})`,
  );
}

/** Unloads (waiting at most 1 s: a stuck worker must not hang the benchmark) and ends a worker engine. */
async function closeEngine(engine: Engine): Promise<void> {
  await Promise.race([engine.unload().catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
  if (engine instanceof WorkerEngine) engine.worker.terminate();
}

/**
 * The whole benchmark: device facts, model load (timed, with progress), warm-up and measured runs,
 * roofline, result file. The engine (its worker) is closed before the roofline is measured, so the
 * measurement has the GPU's memory to itself.
 * @throws EngineError from the engine; 'timeout' past `timeoutMs`; 'aborted' when `signal` fires.
 */
export async function runBench(
  opts: BenchOptions,
  onEvent: (e: BenchEvent) => void = () => {},
): Promise<BenchResult> {
  const engineName = opts.engine ?? 'webgpu';
  const device = await readBenchDevice();
  onEvent({ type: 'device', device });
  const engine = createEngine(engineName);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await closeEngine(engine);
  };
  try {
    const id = modelId(opts.model);
    onEvent({ type: 'load-start', modelId: id });
    const t0 = performance.now();
    const info = await bounded(opts.timeoutMs, opts.signal, `loading the model ${id}`, (signal) =>
      engine.load(modelSource(opts.model), {
        contextLength: opts.contextLength,
        signal,
        onProgress: (progress) => onEvent({ type: 'load-progress', progress }),
      }),
    );
    const load = benchLoadFrom(await engine.stats(), performance.now() - t0);
    const model = benchModelFrom(info, { id, synthetic: info.synthetic || 'synthetic' in opts.model });
    onEvent({ type: 'loaded', model, load, info });

    const plan = opts.plan;
    const total = plan.prompts.length * plan.runs;
    let current = 0;
    const runs = await runBenchmark(engine, plan, {
      signal: opts.signal,
      requestTimeoutMs: opts.timeoutMs,
      onRunStart: (index, prompt, warmup) => {
        current = index;
        onEvent({
          type: 'run-start',
          index,
          total: warmup ? plan.warmup : total,
          promptName: prompt.name,
          warmup,
        });
      },
      onRunDone: (run, warmup) =>
        onEvent({ type: 'run-done', index: current, total: warmup ? plan.warmup : total, warmup, run }),
    });
    await close();
    const roofline = opts.roofline === false ? undefined : await measureRoofline(info, runs, onEvent);
    return buildResult({ device, engine: engineName, model, load, plan, runs, roofline });
  } finally {
    await close();
  }
}

/** Sets `window.benchApi` (idempotent). Call once from the page entry. */
export function installBenchApi(): void {
  if (typeof window === 'undefined' || window.benchApi) return;
  window.benchApi = {
    runFromCli: (opts) => runBench(opts, (e) => window.__benchEvent?.(e)),
  };
}
