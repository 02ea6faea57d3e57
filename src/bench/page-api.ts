/**
 * The benchmark as the page runs it, with no DOM: load a model into the bench worker
 * (workers/bench.worker.ts: the engine worker's API plus llama-bench), run a plan
 * (runner.ts `runBenchmark`), measure the roofline, read the device, and build the result file. The page UI
 * and `npm run bench` both call {@link runBench}; the command line reaches it through `window.benchApi`,
 * which {@link installBenchApi} sets up (the page entry calls it).
 *
 * Progress goes to the `onEvent` callback as {@link BenchEvent}s (for the command line, to
 * `window.__benchEvent`, which Playwright exposes).
 */
import { EngineError } from '../core/errors.ts';
import type { Engine, KvType, LoadProgress, ModelInfo, ModelSource } from '../core/types.ts';
import { checkKvType } from '../core/validate.ts';
import { WorkerEngine } from '../core/worker-api.ts';
import { openGguf } from '../gguf/reader.ts';
import { createGpuContext } from '../webgpu/device.ts';
import { syntheticGguf } from '../webgpu/model/synthetic.ts';
import { readBenchDevice } from './device.ts';
import {
  type FitsVerdict,
  type GpuProfile,
  type LlamaBenchPlan,
  type LlamaBenchTest,
  type MemoryProbe,
  planContext,
  planProblem,
  type TokenCost,
  tokenCost,
} from './llama-bench.ts';
import { type LlamaBenchProgress, modelFits, probeMemory } from './llama-bench-gpu.ts';
import { top1Agreement } from './perplexity.ts';
import {
  type BandwidthResult,
  buildRoofline,
  type MatmulResult,
  measureBandwidth,
  measureMatmul,
} from './roofline.ts';
import {
  baselinePlan,
  benchLoadFrom,
  benchModelFrom,
  buildResult,
  runPlanWithBaseline,
  speculativeSummary,
  summarizeRuns,
} from './runner.ts';
import type { BenchDevice, BenchPlan, BenchResult, BenchRoofline, BenchRun } from './types.ts';
import { BenchWorkerEngine } from './worker-api.ts';

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
  /**
   * Request only the WebGPU spec's default limits for the engine's device and the memory probe, as a
   * phone or integrated GPU may grant them (LoadOptions.defaultLimits; `--default-limits`).
   */
  defaultLimits?: boolean;
  /**
   * KV-cache element type (LoadOptions.kvType; `--kv-type`): used for the load and for the memory verdict;
   * default the engine's (f16).
   */
  kvType?: KvType;
  /** The K or V cache's type apart (LoadOptions.kvTypeK/kvTypeV; `--kv-type-k/-v`), load and verdict alike. */
  kvTypeK?: KvType;
  kvTypeV?: KvType;
  /**
   * The draft model of a plan with `draft: {type: 'model'}`, loaded beside the target (LoadOptions.draft;
   * `--draft`). A plan with `draft` also runs its baseline: the same runs without drafting.
   */
  draftModel?: BenchModelSpec;
  /** Bound on the model load and on each request, ms (default: none). */
  timeoutMs?: number;
  /** Measure bandwidth and matmul throughput after the runs (default true). */
  roofline?: boolean;
  /** Stops everything; the promise rejects with EngineError('aborted'). */
  signal?: AbortSignal;
  /**
   * llama-bench mode: run these pp/tg tests (with the kernel profile) instead of the prompt plan. The
   * context is raised to what the deepest test needs (at most the model's).
   */
  llamaBench?: LlamaBenchPlan;
  /** Profile kernels with timestamp-query in llama-bench mode (default true). */
  profile?: boolean;
  /** Probe memory and give the model's fit verdict (default: in llama-bench mode). */
  probeMemory?: boolean | { capBytes?: number };
  /** Price a token: a remote instance's price per hour, or the local power draw and electricity price. */
  cost?: CostInput;
  /**
   * A reference run (llama.cpp's greedy tokens, made by the command line) to score our top-1 against,
   * teacher-forced: the result's `quality`.
   */
  cpuMatch?: { engine: string; promptIds: number[]; outputIds: number[] };
}

/** How to price a token (see {@link tokenCost}). */
export type CostInput =
  | { pricePerHour: number; currency?: string }
  | { powerW: number; pricePerKWh: number; currency?: string };

/** Progress of {@link runBench}, in order. */
export type BenchEvent =
  | { type: 'device'; device: BenchDevice }
  | { type: 'load-start'; modelId: string }
  | { type: 'load-progress'; progress: LoadProgress }
  | { type: 'loaded'; model: BenchResult['model']; load: BenchResult['load']; info: ModelInfo }
  /** `baseline`: a run of a drafting plan's baseline (the same plan without drafting), before the drafted runs. */
  | {
      type: 'run-start';
      index: number;
      total: number;
      promptName: string;
      warmup: boolean;
      baseline?: boolean;
    }
  | { type: 'run-done'; index: number; total: number; warmup: boolean; run: BenchRun; baseline?: boolean }
  | { type: 'roofline-start' }
  | { type: 'roofline-done'; bandwidth: BandwidthResult; matmul: MatmulResult; roofline: BenchRoofline }
  | { type: 'memory'; memory: MemoryProbe; fits?: FitsVerdict }
  | { type: 'llama-bench-progress'; progress: LlamaBenchProgress }
  | { type: 'llama-bench-done'; tests: LlamaBenchTest[]; gpu?: GpuProfile }
  | { type: 'warning'; message: string };

/** What the command line calls in the page. */
export interface BenchApi {
  runFromCli(opts: Omit<BenchOptions, 'signal'>): Promise<BenchResult>;
  /**
   * The device {@link runBench} would report, read on its own (nothing loaded): the command line's `--gpu`
   * guard checks it before it downloads a model or runs llama.cpp's CPU match.
   */
  readDevice(): Promise<BenchDevice>;
}

declare global {
  interface Window {
    benchApi?: BenchApi;
    /** Set by the command line (Playwright's exposeFunction) to receive progress. */
    __benchEvent?: (e: BenchEvent) => void;
  }
}

/** The engines {@link runBench} can run. */
export const BENCH_ENGINES = ['webgpu', 'wllama', 'webllm'] as const;

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
async function createEngine(name: string): Promise<Engine> {
  // WebLLM (src/webllm/) is loaded only when asked for: it is a large module.
  if (name === 'webllm') return new (await import('../webllm/engine.ts')).WebLlmEngine();
  // llama.cpp's wasm build on the CPU (src/wllama/), its wasm served by Vite; every run prefills its whole
  // prompt, as our engine does.
  if (name === 'wllama') {
    const [{ WllamaEngine }, { LOCAL_WLLAMA_WASM }] = await Promise.all([
      import('../wllama/engine.ts'),
      import('../wllama/vite-wasm.ts'),
    ]);
    return new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM, reusePromptPrefix: false });
  }
  if (name === 'webgpu')
    return new BenchWorkerEngine(
      new Worker(new URL('../../workers/bench.worker.ts', import.meta.url), { type: 'module' }),
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
  const draft = opts.plan.draft;
  if (draft && engineName !== 'webgpu')
    throw new EngineError(
      'invalid_argument',
      `speculative decoding runs only on the webgpu engine, not ${engineName}`,
    );
  if (draft?.type === 'model' && !opts.draftModel)
    throw new EngineError(
      'invalid_argument',
      "the plan drafts with a model (draft.type 'model') but no draftModel is given",
    );
  if (opts.draftModel && draft?.type !== 'model')
    throw new EngineError('invalid_argument', "a draftModel needs a plan with draft.type 'model'");
  if (draft && opts.llamaBench)
    throw new EngineError('invalid_argument', 'llama-bench tests decode without drafting: give no draft');
  checkKvType(opts.kvType);
  checkKvType(opts.kvTypeK, 'kvTypeK');
  checkKvType(opts.kvTypeV, 'kvTypeV');
  const device = await readBenchDevice();
  onEvent({ type: 'device', device });
  if (opts.llamaBench) {
    const problem = planProblem(opts.llamaBench);
    if (problem) throw new EngineError('invalid_argument', `llama-bench plan: ${problem}`);
  }
  const contextLength = opts.llamaBench
    ? Math.max(opts.contextLength ?? 0, planContext(opts.llamaBench))
    : opts.contextLength;
  const doProbe = opts.probeMemory ?? Boolean(opts.llamaBench);
  let memory: MemoryProbe | undefined;
  let fits: FitsVerdict | undefined;
  if (doProbe) {
    ({ memory, fits } = await probeAndFit(
      opts.model,
      contextLength,
      typeof doProbe === 'object' ? doProbe.capBytes : undefined,
      onEvent,
      opts.defaultLimits,
      opts.kvTypeK ?? opts.kvType,
      opts.kvTypeV ?? opts.kvType,
    ));
    if (fits && !fits.ok) {
      throw new EngineError(
        'out_of_memory',
        fits.certain === false
          ? `${modelId(opts.model)} may not fit this GPU: ${fits.reason} (raise the probe's cap, --probe-cap-gb, to probe further)`
          : `${modelId(opts.model)} does not fit this GPU: ${fits.reason}`,
      );
    }
  }
  const engine = await createEngine(engineName);
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
        contextLength,
        defaultLimits: opts.defaultLimits,
        ...(opts.kvType ? { kvType: opts.kvType } : {}),
        ...(opts.kvTypeK ? { kvTypeK: opts.kvTypeK } : {}),
        ...(opts.kvTypeV ? { kvTypeV: opts.kvTypeV } : {}),
        ...(opts.draftModel ? { draft: modelSource(opts.draftModel) } : {}),
        signal,
        onProgress: (progress) => onEvent({ type: 'load-progress', progress }),
      }),
    );
    const load = benchLoadFrom(await engine.stats(), performance.now() - t0);
    const model = benchModelFrom(info, { id, synthetic: info.synthetic || 'synthetic' in opts.model });
    onEvent({ type: 'loaded', model, load, info });

    if (opts.llamaBench) {
      const tests = await runLlamaBenchTests(engine, opts, info, onEvent);
      await close();
      const r = buildResult({ device, engine: engineName, model, load, plan: opts.plan, runs: [] });
      const tg = tests.tests.filter((t) => t.nGen > 0).sort((a, b) => a.depth - b.depth)[0];
      return {
        ...r,
        model: fits ? { ...r.model, fits } : r.model,
        llamaBench: opts.llamaBench,
        tests: tests.tests,
        ...(memory ? { memory } : {}),
        ...(tests.gpu ? { gpu: tests.gpu } : {}),
        ...costOf(opts.cost, tg?.tokensPerSecond.mean, onEvent),
      };
    }
    const plan = opts.plan;
    const total = plan.prompts.length * plan.runs;
    let current = 0;
    // A drafting plan's baseline (the same runs without drafting, on the same load, for the speed-up) runs
    // first: the measurement a plain bench of the plan makes (runPlanWithBaseline).
    const base = baselinePlan(plan);
    const { runs, baseline } = await runPlanWithBaseline(engine, plan, {
      run: {
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
      },
      baseline: {
        signal: opts.signal,
        requestTimeoutMs: opts.timeoutMs,
        onRunStart: (index, prompt, warmup) => {
          current = index;
          onEvent({
            type: 'run-start',
            index,
            total: warmup ? base.warmup : total,
            promptName: prompt.name,
            warmup,
            baseline: true,
          });
        },
        onRunDone: (run, warmup) =>
          onEvent({
            type: 'run-done',
            index: current,
            total: warmup ? base.warmup : total,
            warmup,
            run,
            baseline: true,
          }),
      },
    });
    let speculative: BenchResult['speculative'];
    if (draft && baseline) {
      const draftId = draft.type === 'lookup' ? 'lookup' : (draft.model ?? modelId(opts.draftModel!));
      speculative = speculativeSummary(plan, runs, baseline, draftId);
    }
    const quality = opts.cpuMatch ? await scoreAgainst(engine, opts.cpuMatch, onEvent) : undefined;
    await close();
    // The GPU's roofline says nothing about a CPU engine (wllama).
    const roofline =
      opts.roofline === false || engineName === 'wllama'
        ? undefined
        : await measureRoofline(info, runs, onEvent);
    const r = buildResult({ device, engine: engineName, model, load, plan, runs, roofline, speculative });
    return {
      ...r,
      ...(quality ? { quality } : {}),
      model: fits ? { ...r.model, fits } : r.model,
      ...(memory ? { memory } : {}),
      ...costOf(opts.cost, r.summary.decodeTokensPerSecond?.median, onEvent),
    };
  } finally {
    await close();
  }
}

/**
 * Feeds the reference's prompt and greedy tokens to our engine teacher-forced and returns the share of
 * positions where our top-1 equals the reference's token (undefined, with a warning, when the engine
 * cannot score).
 */
async function scoreAgainst(
  engine: unknown,
  ref: { engine: string; promptIds: number[]; outputIds: number[] },
  onEvent: (e: BenchEvent) => void,
): Promise<BenchResult['quality']> {
  const scorer = engine as { scoreTokens?: (ids: number[]) => Promise<{ top1: ArrayLike<number> }> };
  if (!scorer.scoreTokens || ref.outputIds.length === 0) {
    onEvent({ type: 'warning', message: 'this engine cannot score tokens: no CPU match' });
    return undefined;
  }
  const { top1 } = await scorer.scoreTokens([...ref.promptIds, ...ref.outputIds]);
  const p = ref.promptIds.length;
  const ours = ref.outputIds.map((_, i) => top1[p - 1 + i]);
  return {
    reference: ref.engine,
    top1Agreement: top1Agreement(ours, ref.outputIds),
    positions: ref.outputIds.length,
  };
}

/** The cost field for a result, or nothing (no price given, or no decode speed measured). */
function costOf(
  input: CostInput | undefined,
  tokensPerSecond: number | undefined,
  onEvent: (e: BenchEvent) => void,
): { cost?: TokenCost } {
  if (!input) return {};
  if (!(tokensPerSecond && tokensPerSecond > 0)) {
    onEvent({ type: 'warning', message: 'no decode speed was measured: no cost per token' });
    return {};
  }
  return {
    cost:
      'pricePerHour' in input
        ? tokenCost({ basis: 'remote', ...input, tokensPerSecond })
        : tokenCost({ basis: 'local', ...input, tokensPerSecond }),
  };
}

/**
 * Probes memory on a device of its own (destroyed afterwards) and, from the model's header (a synthetic
 * shape, or the GGUF header read by range requests), says whether it fits at `contextLength` with a KV
 * cache of `kvType` (default f16, the engine's).
 */
export async function probeAndFit(
  spec: BenchModelSpec,
  contextLength: number | undefined,
  capBytes: number | undefined,
  onEvent: (e: BenchEvent) => void = () => {},
  defaultLimits = false,
  kvType: KvType = 'f16',
  kvTypeV: KvType = kvType,
): Promise<{ memory?: MemoryProbe; fits?: FitsVerdict }> {
  let memory: MemoryProbe | undefined;
  let gpu: Awaited<ReturnType<typeof createGpuContext>> | undefined;
  try {
    gpu = await createGpuContext({ defaultLimits });
    memory = await probeMemory(gpu.device, { capBytes, isFallback: gpu.info.isFallback });
  } catch (e) {
    onEvent({ type: 'warning', message: `memory probe failed: ${(e as Error)?.message ?? e}` });
    return {};
  } finally {
    gpu?.device.destroy();
  }
  let fits: FitsVerdict | undefined;
  try {
    const file =
      'synthetic' in spec ? syntheticGguf(modelId(spec), spec.seed) : await openGguf(modelSource(spec));
    fits = modelFits(file, memory, contextLength, kvType, kvTypeV);
  } catch (e) {
    onEvent({ type: 'warning', message: `could not read the model header: ${(e as Error)?.message ?? e}` });
  }
  onEvent({ type: 'memory', memory, fits });
  return { memory, fits };
}

/** llama-bench mode: drops tests that do not fit the loaded context, runs the rest in the worker. */
async function runLlamaBenchTests(
  engine: Engine,
  opts: BenchOptions,
  info: ModelInfo,
  onEvent: (e: BenchEvent) => void,
): Promise<{ tests: LlamaBenchTest[]; gpu?: GpuProfile }> {
  if (!(engine instanceof BenchWorkerEngine))
    throw new EngineError('invalid_argument', 'llama-bench runs only on the webgpu engine');
  const plan = opts.llamaBench!;
  const ctx = info.contextLength;
  const biggest = Math.max(...plan.nPrompt, ...plan.nGen);
  const depths = plan.depths.filter((d) => d + biggest <= ctx);
  for (const d of plan.depths) {
    if (!depths.includes(d))
      onEvent({
        type: 'warning',
        message: `depth ${d} + ${biggest} tokens does not fit the context (${ctx}): skipped`,
      });
  }
  if (depths.length === 0)
    throw new EngineError('context_overflow', `no test fits the context (${ctx} tokens)`);
  const res = await engine.llamaBench(
    { plan: { ...plan, depths }, profile: opts.profile === false ? false : {} },
    (progress) => onEvent({ type: 'llama-bench-progress', progress }),
    opts.signal,
  );
  onEvent({ type: 'llama-bench-done', tests: res.tests, gpu: res.gpu });
  return res;
}

/** Sets `window.benchApi` (idempotent). Call once from the page entry. */
export function installBenchApi(): void {
  if (typeof window === 'undefined' || window.benchApi) return;
  window.benchApi = {
    runFromCli: (opts) => runBench(opts, (e) => window.__benchEvent?.(e)),
    readDevice: () => readBenchDevice(),
  };
}
