/**
 * Runs a {@link BenchPlan} on a loaded {@link Engine} and turns the generations into {@link BenchRun}s,
 * summaries and a {@link BenchResult}. No DOM: runs in a page or a worker (the page UI and `npm run bench`
 * share it).
 *
 * Timing: each request's metrics come from its {@link GenerateResult} (`tStartMs`, `tokenTimesMs`), which are
 * in the engine's own clock (for a {@link import('../core/worker-api.ts').WorkerEngine}, the worker's
 * timeline; see metrics.ts). When the engine's clock is visibly the caller's (its `tStartMs` falls between
 * the caller's `performance.now()` just before `generate` and just after it resolved, as for an engine
 * running on the page), the request starts at the caller's timestamp instead, so TTFT includes the call.
 */
import { EngineError } from '../core/errors.ts';
import { fnv1a64 } from '../core/hash.ts';
import { requestMetrics, type Summary, summarize } from '../core/metrics.ts';
import type {
  Engine,
  EngineStats,
  GenerateRequest,
  GenerateResult,
  ModelInfo,
  ResponseFormat,
  TokenEvent,
} from '../core/types.ts';
import type {
  BenchConstrained,
  BenchDevice,
  BenchPlan,
  BenchPrompt,
  BenchResult,
  BenchRoofline,
  BenchRun,
  BenchSpeculative,
  InterruptPhase,
} from './types.ts';
import { nanLoad } from './types.ts';

/** Callbacks and limits for {@link runBenchmark}. */
export interface RunHooks {
  /** Before each request. `index` counts warm-up and measured runs separately, from 0. */
  onRunStart?(index: number, prompt: BenchPrompt, warmup: boolean): void;
  /** Each streamed token (only asked of the engine when given: a worker engine pays a message per token). */
  onToken?(e: TokenEvent, runIndex: number): void;
  /** After each request, with its metrics (warm-up runs too, flagged). */
  onRunDone?(run: BenchRun, warmup: boolean): void;
  /** Stops the benchmark: the current request ends and {@link runBenchmark} rejects with EngineError('aborted'). */
  signal?: AbortSignal;
  /** Bound on each request in ms; past it the request is aborted and the benchmark rejects with EngineError('timeout'). */
  requestTimeoutMs?: number;
}

/** How long to wait for an engine to return after a timed-out request was aborted. */
const ABORT_GRACE_MS = 2000;

/** Checks a plan's numbers. @throws EngineError('invalid_argument') naming the first bad field. */
export function validatePlan(plan: BenchPlan): void {
  const bad = (msg: string) => new EngineError('invalid_argument', msg);
  if (!Array.isArray(plan.prompts) || plan.prompts.length === 0) throw bad('the plan has no prompts');
  for (const p of plan.prompts)
    if (typeof p.text !== 'string' || p.text === '') throw bad(`prompt ${p.name || '?'} has no text`);
  if (!(Number.isInteger(plan.maxTokens) && plan.maxTokens >= 1))
    throw bad(`maxTokens must be an integer ≥ 1, got ${plan.maxTokens}`);
  if (!(Number.isInteger(plan.runs) && plan.runs >= 1))
    throw bad(`runs must be an integer ≥ 1, got ${plan.runs}`);
  if (!(Number.isInteger(plan.warmup) && plan.warmup >= 0))
    throw bad(`warmup must be an integer ≥ 0, got ${plan.warmup}`);
  if (plan.draft && plan.draft.type !== 'lookup' && plan.draft.type !== 'model')
    throw bad(`draft.type must be lookup or model, got ${String(plan.draft.type)}`);
}

/**
 * One request's {@link BenchRun}, from its result.
 * @param requestStartMs the caller's `performance.now()` just before `generate` (used when in the engine's clock).
 * @param requestEndMs the caller's `performance.now()` just after `generate` resolved.
 */
export function benchRunFrom(
  prompt: BenchPrompt,
  r: GenerateResult,
  requestStartMs?: number,
  requestEndMs?: number,
): BenchRun {
  const sameClock =
    requestStartMs !== undefined &&
    requestEndMs !== undefined &&
    requestStartMs <= r.tStartMs &&
    r.tStartMs <= requestEndMs;
  const m = requestMetrics({
    tStartMs: sameClock ? requestStartMs : r.tStartMs,
    tokenTimesMs: r.tokenTimesMs,
    promptTokens: r.promptTokenIds.length,
  });
  return {
    prompt: prompt.text,
    promptName: prompt.name,
    promptTokens: m.promptTokens,
    outputTokens: m.outputTokens,
    outputTokenIds: [...r.outputTokenIds],
    text: r.text,
    ttftMs: m.ttftMs,
    itlMs: m.itlMs,
    tpotMs: m.tpotMs,
    e2eMs: m.e2eMs,
    prefillTokensPerSecond: m.prefillTokPerS,
    decodeTokensPerSecond: m.decodeTokPerS,
    // An engine's own figures (WebLLM's usage.extra), kept apart from ours.
    ...('engineReported' in r && r.engineReported
      ? { engineReported: r.engineReported as Record<string, number> }
      : {}),
    ...(r.speculative
      ? {
          speculative: {
            drafted: r.speculative.drafted,
            accepted: r.speculative.accepted,
            targetPasses: r.speculative.targetPasses,
          },
        }
      : {}),
    ...(r.finishReason ? { finishReason: r.finishReason } : {}),
    ...(r.formatComplete !== undefined ? { formatComplete: r.formatComplete } : {}),
  };
}

/** The request a plan sends for one prompt: its sampling, drafting and response format. */
export function planRequest(plan: BenchPlan, prompt: BenchPrompt): GenerateRequest {
  return {
    prompt: prompt.text,
    maxTokens: plan.maxTokens,
    ignoreEos: plan.ignoreEos,
    ...(plan.sampling ?? {}),
    ...(plan.draft
      ? {
          draft: {
            type: plan.draft.type,
            ...(plan.draft.draftMax !== undefined ? { draftMax: plan.draft.draftMax } : {}),
          },
        }
      : {}),
    ...(plan.responseFormat ? { responseFormat: plan.responseFormat } : {}),
  };
}

/** One request with the plan's settings, bounded by `hooks.requestTimeoutMs`. */
async function timedRequest(
  engine: Engine,
  plan: BenchPlan,
  prompt: BenchPrompt,
  runIndex: number,
  hooks: RunHooks,
): Promise<BenchRun> {
  const ctl = new AbortController();
  const onOuterAbort = () => ctl.abort();
  hooks.signal?.addEventListener('abort', onOuterAbort, { once: true });
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const timeoutMs = hooks.requestTimeoutMs;
  const timeoutError = () =>
    new EngineError(
      'timeout',
      `request "${prompt.name}" did not finish within ${timeoutMs} ms (the engine or device is not answering, or the run is longer than the time allowed)`,
    );
  const guard = new Promise<never>((_, reject) => {
    if (timeoutMs === undefined || !(timeoutMs > 0)) return;
    timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
      graceTimer = setTimeout(() => reject(timeoutError()), ABORT_GRACE_MS);
    }, timeoutMs);
  });
  const onToken = hooks.onToken;
  try {
    const t0 = performance.now();
    const gen = engine.generate(
      planRequest(plan, prompt),
      onToken ? (e) => onToken(e, runIndex) : undefined,
      ctl.signal,
    );
    gen.catch(() => undefined); // a late failure after a timeout must not go unhandled
    const r = await Promise.race([gen, guard]);
    const t1 = performance.now();
    if (r.finishReason === 'aborted') {
      if (timedOut) throw timeoutError();
      throw new EngineError('aborted', 'the benchmark was stopped');
    }
    if (r.outputTokenIds.length === 0)
      throw new EngineError('invalid_argument', `request "${prompt.name}" produced no output token`);
    return benchRunFrom(prompt, r, t0, t1);
  } finally {
    clearTimeout(timer);
    clearTimeout(graceTimer);
    hooks.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * Runs the plan: `plan.warmup` warm-up requests on the first prompt (not returned), then `plan.runs`
 * measured requests per prompt, in order. Greedy unless `plan.sampling` says otherwise.
 * @returns the measured runs.
 * @throws EngineError from the engine, 'aborted' when `hooks.signal` fires, 'timeout' past
 *   `hooks.requestTimeoutMs`, 'invalid_argument' for a bad plan.
 */
export async function runBenchmark(
  engine: Engine,
  plan: BenchPlan,
  hooks: RunHooks = {},
): Promise<BenchRun[]> {
  validatePlan(plan);
  const checkAbort = () => {
    if (hooks.signal?.aborted) throw new EngineError('aborted', 'the benchmark was stopped');
  };
  for (let i = 0; i < plan.warmup; i++) {
    checkAbort();
    const prompt = plan.prompts[0];
    hooks.onRunStart?.(i, prompt, true);
    const run = await timedRequest(engine, plan, prompt, i, hooks);
    hooks.onRunDone?.(run, true);
  }
  const runs: BenchRun[] = [];
  for (const prompt of plan.prompts) {
    for (let k = 0; k < plan.runs; k++) {
      checkAbort();
      const i = runs.length;
      hooks.onRunStart?.(i, prompt, false);
      const run = await timedRequest(engine, plan, prompt, i, hooks);
      runs.push(run);
      hooks.onRunDone?.(run, false);
    }
  }
  return runs;
}

/** The metrics {@link summarizeRuns} summarizes, in display order. */
export const SUMMARY_METRICS = [
  'ttftMs',
  'tpotMs',
  'itlMs',
  'e2eMs',
  'prefillTokensPerSecond',
  'decodeTokensPerSecond',
] as const;
export type SummaryMetric = (typeof SUMMARY_METRICS)[number];

/**
 * Summary per metric over measured runs: `ttftMs`, `tpotMs`, `e2eMs`, `prefillTokensPerSecond`,
 * `decodeTokensPerSecond` (one value per run) and `itlMs` (every gap of every run, pooled, as vLLM does).
 * Values that are not finite (decode metrics of one-token runs, a zero time span) are left out; a metric
 * with no values left is absent.
 */
export function summarizeRuns(runs: readonly BenchRun[]): Record<string, Summary> {
  const out: Record<string, Summary> = {};
  for (const key of SUMMARY_METRICS) {
    const values = (key === 'itlMs' ? runs.flatMap((r) => r.itlMs) : runs.map((r) => r[key])).filter((v) =>
      Number.isFinite(v),
    );
    if (values.length > 0) out[key] = summarize(values);
  }
  return out;
}

/** The `model` block of a result from the engine's {@link ModelInfo}. */
export function benchModelFrom(
  info: ModelInfo,
  opts: { id: string; synthetic?: boolean; bytes?: number },
): BenchResult['model'] {
  return {
    id: opts.id,
    architecture: info.architecture,
    quantization: info.tensorTypes.length === 0 ? 'unknown' : info.tensorTypes.join('+'),
    parameters: info.nParams,
    bytes: opts.bytes ?? info.weightBytes,
    ...(opts.synthetic ? { synthetic: true } : {}),
    ...(info.kernels ? { kernels: info.kernels } : {}),
    ...(info.limits ? { limits: info.limits } : {}),
    ...(info.kvType ? { kvType: info.kvType } : {}),
    ...(info.kvTypeV ? { kvTypeV: info.kvTypeV } : {}),
    ...(info.contextLength > 0 ? { contextLength: info.contextLength } : {}),
  };
}

/** The `load` block of a result from the engine's stats (zeros where the engine reported nothing). */
export function benchLoadFrom(stats: EngineStats, fallbackTotalMs = 0): BenchResult['load'] {
  const l = stats.load;
  return {
    totalMs: l?.totalMs ?? fallbackTotalMs,
    downloadMs: l?.fetchMs ?? 0,
    uploadMs: l?.uploadMs ?? 0,
    compileMs: l?.compileMs ?? 0,
  };
}

/** Everything {@link buildResult} needs. */
export interface BuildResultInput {
  device: BenchDevice;
  engine: string;
  model: BenchResult['model'];
  load: BenchResult['load'];
  plan: BenchPlan;
  runs: BenchRun[];
  roofline?: BenchRoofline;
  /** With a drafting plan: {@link speculativeSummary} of the runs and their baseline. */
  speculative?: BenchSpeculative;
  /** Default: now. */
  createdAt?: Date | string;
}

/** A whole result file (`schemaVersion: 1`), with the summary computed from the runs. */
export function buildResult(input: BuildResultInput): BenchResult {
  const createdAt =
    input.createdAt === undefined
      ? new Date().toISOString()
      : typeof input.createdAt === 'string'
        ? input.createdAt
        : input.createdAt.toISOString();
  return {
    schemaVersion: 1,
    createdAt,
    device: input.device,
    engine: input.engine,
    model: input.model,
    load: input.load,
    plan: input.plan,
    runs: input.runs,
    summary: summarizeRuns(input.runs),
    ...(input.roofline ? { roofline: input.roofline } : {}),
    ...(input.speculative ? { speculative: input.speculative } : {}),
    ...(input.plan.responseFormat ? { constrained: constraintMark(input.plan.responseFormat) } : {}),
  };
}

/** Everything {@link interruptedResult} needs: what the run had learned when the signal came. */
export interface InterruptedResultInput {
  signal: string;
  phase: InterruptPhase;
  engine: string;
  plan: BenchPlan;
  /** The model as the command line named it (used while no model has loaded). */
  modelId: string;
  /** The KV cache types asked for (K's, V's): the placeholder model's, so reports label the setup. */
  kvType?: BenchResult['model']['kvType'];
  kvTypeV?: BenchResult['model']['kvTypeV'];
  device?: BenchDevice;
  /** The loaded model and its load; absent when the signal came before the load finished. */
  model?: BenchResult['model'];
  load?: BenchResult['load'];
  runs?: BenchRun[];
  /** Default: now. */
  createdAt?: Date | string;
}

/** The device of a result interrupted before the page reported one: every field empty (`unknown adapter`). */
const UNKNOWN_DEVICE: BenchDevice = {
  vendor: '',
  architecture: '',
  description: '',
  isFallbackAdapter: false,
  features: [],
  limits: {},
  userAgent: '',
  fingerprint: '',
};

/**
 * The result of a run stopped by a signal (Ctrl-C, SIGTERM), marked `partial` with `interrupted: {signal,
 * phase}`: the runs measured so far on the loaded model, or, before the model loaded, no runs, load times
 * NaN, the model as the command line named it (architecture and quantization `unknown`, sizes NaN, the KV
 * cache types asked for) and the device the page reported (else an empty one). Valid against the schema,
 * so a CI job that archives `--json` always finds a file, and `bench:report` lists it and leaves it out of
 * the leaderboard.
 */
export function interruptedResult(input: InterruptedResultInput): BenchResult {
  const loaded = input.model !== undefined && input.load !== undefined;
  const r = buildResult({
    device: input.device ?? UNKNOWN_DEVICE,
    engine: input.engine,
    model: input.model ?? {
      id: input.modelId,
      architecture: 'unknown',
      quantization: 'unknown',
      parameters: Number.NaN,
      bytes: Number.NaN,
      ...(input.kvType ? { kvType: input.kvType } : {}),
      ...(input.kvTypeV ? { kvTypeV: input.kvTypeV } : {}),
    },
    load: input.load ?? nanLoad(),
    plan: input.plan,
    runs: loaded ? (input.runs ?? []) : [],
    ...(input.createdAt !== undefined ? { createdAt: input.createdAt } : {}),
  });
  return { ...r, partial: true, interrupted: { signal: input.signal, phase: input.phase } };
}

// --- Speculative decoding and constrained output ---------------------------------------------------

/**
 * The plan of a drafting plan's baseline: the same prompts, runs, warm-up and sampling without `draft`.
 * {@link runPlanWithBaseline} runs it first on the freshly loaded model, as a plain `npm run bench` of the
 * plan runs.
 */
export function baselinePlan(plan: BenchPlan): BenchPlan {
  const { draft: _draft, ...rest } = plan;
  return rest;
}

/**
 * A plan, and for a drafting plan its baseline, on one loaded model. A drafting plan runs its baseline
 * first ({@link baselinePlan}: its warm-up, then its measured runs, the requests of a plain `npm run bench`
 * of the plan in the same order on the same fresh load), then the drafted plan (its own warm-up, which warms
 * the verify passes, then its runs). The baseline used to run after the drafted runs, on a model they had
 * warmed further than a plain bench's, so it was not that bench's measurement (issue 46: 152 vs 134 tok/s
 * median for stories260K on SwiftShader); now the two make the same requests in the same order.
 * @param hooks `run`: the drafted (or plain) plan's; `baseline`: the baseline's.
 * @returns the plan's measured runs and, for a drafting plan, the baseline's (in the same order).
 * @throws what {@link runBenchmark} throws.
 */
export async function runPlanWithBaseline(
  engine: Engine,
  plan: BenchPlan,
  hooks: { run?: RunHooks; baseline?: RunHooks } = {},
): Promise<{ runs: BenchRun[]; baseline?: BenchRun[] }> {
  validatePlan(plan);
  const baseline = plan.draft ? await runBenchmark(engine, baselinePlan(plan), hooks.baseline) : undefined;
  const runs = await runBenchmark(engine, plan, hooks.run);
  return baseline ? { runs, baseline } : { runs };
}

/**
 * The result's `speculative` block from the drafted runs and the baseline runs of the same plan (in the
 * same order). See {@link BenchSpeculativeSchema} for each figure's definition.
 * @param draftId 'lookup' or the draft model's id.
 * @throws EngineError('invalid_argument') when the plan has no draft or the two lists differ in length.
 */
export function speculativeSummary(
  plan: BenchPlan,
  runs: readonly BenchRun[],
  baseline: readonly BenchRun[],
  draftId: string,
): BenchSpeculative {
  if (!plan.draft) throw new EngineError('invalid_argument', 'the plan has no draft: nothing to summarize');
  if (runs.length !== baseline.length)
    throw new EngineError(
      'invalid_argument',
      `${runs.length} drafted runs but ${baseline.length} baseline runs: they must pair up`,
    );
  let drafted = 0;
  let accepted = 0;
  let targetPasses = 0;
  let decoded = 0;
  for (const r of runs) {
    drafted += r.speculative?.drafted ?? 0;
    accepted += r.speculative?.accepted ?? 0;
    // A run without the engine's figures decoded one token per pass.
    targetPasses += r.speculative?.targetPasses ?? Math.max(0, r.outputTokens - 1);
    decoded += Math.max(0, r.outputTokens - 1);
  }
  const withDraft = summarizeRuns(runs);
  const without = summarizeRuns(baseline);
  const tps = withDraft.decodeTokensPerSecond?.median ?? Number.NaN;
  const base = without.decodeTokensPerSecond?.median ?? Number.NaN;
  const greedy = !plan.sampling?.temperature;
  return {
    draft: draftId,
    ...(plan.draft.draftMax !== undefined ? { draftMax: plan.draft.draftMax } : {}),
    drafted,
    accepted,
    targetPasses,
    acceptanceRate: drafted > 0 ? accepted / drafted : Number.NaN,
    tokensPerTargetPass: targetPasses > 0 ? decoded / targetPasses : Number.NaN,
    baseline: {
      runs: baseline.length,
      decodeTokensPerSecond: base,
      e2eMs: without.e2eMs?.median ?? Number.NaN,
    },
    speedup: base > 0 ? tps / base : Number.NaN,
    ...(greedy
      ? {
          sameOutput: runs.every((r, i) => {
            const b = baseline[i].outputTokenIds;
            const a = r.outputTokenIds;
            return a.length === b.length && a.every((t, k) => t === b[k]);
          }),
        }
      : {}),
  };
}

/**
 * A response format's mark for results: its kind and an FNV-1a 64-bit hash (src/core/hash.ts) of its
 * schema (canonical JSON text: a schema given as text is parsed first, so formatting does not change the
 * hash), grammar or structural tag. `json_object` hashes the empty string.
 * @throws EngineError('invalid_argument') for a schema text that is not JSON.
 */
export function constraintMark(format: Exclude<ResponseFormat, { type: 'text' }>): BenchConstrained {
  let text: string;
  if (format.type === 'json_schema') {
    let schema: unknown = format.schema;
    if (typeof schema === 'string') {
      try {
        schema = JSON.parse(schema);
      } catch (e) {
        throw new EngineError('invalid_argument', `the JSON schema is not JSON: ${(e as Error).message}`);
      }
    }
    text = JSON.stringify(schema);
  } else if (format.type === 'grammar') text = format.grammar;
  else if (format.type === 'structural_tag') text = JSON.stringify(format.format);
  else text = '';
  return { kind: format.type, hash: `fnv1a64:${fnv1a64(text)}` };
}
