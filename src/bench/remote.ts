/**
 * The benchmark on a remote OpenAI-compatible server: the same plan and metric definitions as local runs
 * (src/bench/runner.ts, metrics.ts), plus a concurrency sweep as in `vllm bench serve --max-concurrency N`,
 * and the comparison of a local and a remote result. No DOM: the page and `npm run bench -- --engine remote`
 * (in Node, where CORS does not apply) both call {@link runRemoteBench}.
 *
 * Faults: a request that fails keeps what arrived before the fault as a run marked `partial` with its
 * `error`; the benchmark stops at the first fault and the result is marked `partial`, with the error also
 * thrown as `RemoteBenchError` carrying that partial result.
 */

import { EngineError, isEngineError } from '../core/errors.ts';
import { type Summary, summarize } from '../core/metrics.ts';
import { parseInteger } from '../core/validate.ts';
import { type RemoteEngine, RemoteError } from '../remote/engine.ts';
import type { RemoteGenerateResult } from '../remote/stream.ts';
import { benchRunFrom, buildResult, summarizeRuns, validatePlan } from './runner.ts';
import {
  type BenchDevice,
  type BenchPlan,
  type BenchPrompt,
  type BenchResult,
  type BenchRun,
  type BenchSweepPoint,
  nanLoad,
} from './types.ts';

/** Progress of {@link runRemoteBench}. */
export type RemoteBenchEvent =
  | { type: 'loaded'; model: string; models: string[]; loadMs: number }
  | { type: 'run-start'; index: number; total: number; promptName: string; warmup: boolean }
  | { type: 'run-done'; index: number; total: number; warmup: boolean; run: BenchRun }
  | { type: 'sweep-start'; concurrency: number }
  | { type: 'sweep-done'; point: BenchSweepPoint }
  | { type: 'warning'; message: string };

export interface RemoteBenchOptions {
  engine: RemoteEngine;
  plan: BenchPlan;
  /** Concurrency levels for the sweep (e.g. [1, 4, 16]); none = no sweep. */
  concurrency?: number[];
  signal?: AbortSignal;
  onEvent?: (e: RemoteBenchEvent) => void;
  /** Streams each token of the sequential runs (the page's live view). */
  onToken?: (text: string, tMs: number) => void;
}

/** A failed benchmark with what was measured before the fault. */
export class RemoteBenchError extends EngineError {
  /**
   * The result so far, `partial`, with the failure as its `error` (a result file then says what failed);
   * a Stop (`aborted`) is no failure and has none (bench:report: "stopped early").
   */
  readonly result: BenchResult;
  constructor(cause: EngineError, result: BenchResult) {
    super(cause.code, cause.message, { cause });
    this.result =
      cause.code === 'aborted'
        ? { ...result, partial: true }
        : { ...result, partial: true, error: { code: cause.code, message: cause.message } };
  }
}

/** The device block of a remote result: the server, named by host. */
export function remoteDevice(host: string): BenchDevice {
  const ua =
    typeof navigator !== 'undefined' && navigator.userAgent
      ? navigator.userAgent
      : `node ${typeof process !== 'undefined' ? process.version : ''}`;
  return {
    vendor: 'remote',
    architecture: 'openai-compatible',
    description: `OpenAI-compatible server at ${host}`,
    isFallbackAdapter: false,
    features: [],
    limits: {},
    userAgent: ua,
    fingerprint: `remote:${host}`,
    label: `remote ${host}`,
  };
}

/** A {@link BenchRun} from a remote generation (token ids are unknown remotely: none are stored). */
export function remoteRun(prompt: BenchPrompt, r: RemoteGenerateResult, err?: EngineError): BenchRun {
  const run = benchRunFrom(prompt, r);
  return {
    ...run,
    // No usage counted the prompt (promptTokens 0): its prefill rate is unknown, not 0 tok/s.
    ...(run.promptTokens === 0 ? { prefillTokensPerSecond: Number.NaN } : {}),
    outputTokenIds: [],
    tokenCount: r.tokenCount,
    ...(r.approximate ? { approximate: true } : {}),
    engineReported: {
      chunks: r.chunks,
      ...(r.usage?.completion_tokens !== undefined ? { completionTokens: r.usage.completion_tokens } : {}),
      ...(r.usage?.prompt_tokens !== undefined ? { promptTokens: r.usage.prompt_tokens } : {}),
      ...(r.serverTimings?.prompt_per_second !== undefined
        ? { serverPrefillTokensPerSecond: r.serverTimings.prompt_per_second }
        : {}),
      ...(r.serverTimings?.predicted_per_second !== undefined
        ? { serverDecodeTokensPerSecond: r.serverTimings.predicted_per_second }
        : {}),
    },
    ...(err ? { partial: true, error: { code: err.code, message: err.message } } : {}),
  };
}

async function one(
  engine: RemoteEngine,
  plan: BenchPlan,
  prompt: BenchPrompt,
  signal: AbortSignal | undefined,
  onToken?: (text: string, tMs: number) => void,
): Promise<{ run?: BenchRun; error?: EngineError }> {
  try {
    const r = (await engine.generate(
      { prompt: prompt.text, maxTokens: plan.maxTokens, ignoreEos: plan.ignoreEos, ...(plan.sampling ?? {}) },
      onToken ? (e) => onToken(e.text, e.tMs) : undefined,
      signal,
    )) as RemoteGenerateResult;
    if (r.finishReason === 'aborted') throw new EngineError('aborted', 'the benchmark was stopped');
    return { run: remoteRun(prompt, r) };
  } catch (e) {
    const err = e instanceof EngineError ? e : new EngineError('network', String((e as Error)?.message ?? e));
    const partial = e instanceof RemoteError ? e.partial : undefined;
    return { run: partial ? remoteRun(prompt, partial, err) : undefined, error: err };
  }
}

const SWEEP_METRICS = ['ttftMs', 'tpotMs', 'itlMs', 'e2eMs'] as const;

/** One sweep level: `n` requests at once (prompts in turn), timed from the first start to the last end. */
export async function sweepPoint(
  engine: RemoteEngine,
  plan: BenchPlan,
  n: number,
  signal?: AbortSignal,
): Promise<BenchSweepPoint> {
  const t0 = performance.now();
  const outs = await Promise.all(
    Array.from({ length: n }, (_, i) => one(engine, plan, plan.prompts[i % plan.prompts.length], signal)),
  );
  const durationMs = performance.now() - t0;
  const ok = outs.filter((o) => !o.error && o.run).map((o) => o.run as BenchRun);
  const errors = outs
    .filter((o) => o.error)
    .map((o) => ({ code: o.error?.code ?? '', message: o.error?.message ?? '' }));
  const summary: Record<string, Summary> = {};
  for (const k of SWEEP_METRICS) {
    const v = (k === 'itlMs' ? ok.flatMap((r) => r.itlMs) : ok.map((r) => r[k])).filter(Number.isFinite);
    if (v.length) summary[k] = summarize(v);
  }
  const tokens = ok.reduce((s, r) => s + r.outputTokens, 0);
  return {
    concurrency: n,
    requests: n,
    completed: ok.length,
    failed: n - ok.length,
    durationMs,
    requestThroughput: (ok.length * 1000) / durationMs,
    outputTokenThroughput: (tokens * 1000) / durationMs,
    summary,
    ...(errors.length ? { errors } : {}),
  };
}

/** What {@link remoteResult} builds a result from. */
export interface RemoteResultInput {
  host: string;
  api: 'chat' | 'completions';
  /** The model the server runs (as asked for, or `unknown`, before its listing came back). */
  model: string;
  /** Listing the server's models (NaN before it came back). */
  loadMs: number;
  plan: BenchPlan;
  runs: BenchRun[];
  sweep: BenchSweepPoint[];
  partial: boolean;
}

/**
 * A remote result file: the server as device, its runs (a run cut by a fault kept, left out of the
 * summary), the sweep, `partial` for a benchmark that stopped early. {@link runRemoteBench} builds its
 * results with it, and the command line the result of a run interrupted by a signal.
 */
export function remoteResult(i: RemoteResultInput): BenchResult {
  const r = buildResult({
    device: remoteDevice(i.host),
    engine: 'remote',
    model: { id: i.model, architecture: 'remote', quantization: 'unknown', parameters: 0, bytes: 0 },
    // Before the listing came back there is no load at all: every time NaN (null in the file), not 0.
    load: Number.isNaN(i.loadMs)
      ? nanLoad()
      : { totalMs: i.loadMs, downloadMs: 0, uploadMs: 0, compileMs: 0 },
    plan: i.plan,
    runs: i.runs,
  });
  return {
    ...r,
    summary: summarizeRuns(i.runs.filter((x) => !x.partial)),
    endpoint: { host: i.host, api: i.api },
    ...(i.sweep.length ? { sweep: i.sweep } : {}),
    ...(i.partial ? { partial: true } : {}),
  };
}

/**
 * Lists the server's models and checks the chosen one, runs the plan (warm-up, then measured runs one at a
 * time), then the concurrency sweep.
 * @throws RemoteBenchError (with the partial result and its `error`) when listing the models fails or at
 *   the first failing request.
 */
export async function runRemoteBench(opts: RemoteBenchOptions): Promise<BenchResult> {
  const { engine, plan } = opts;
  validatePlan(plan);
  const onEvent = opts.onEvent ?? (() => {});
  const t0 = performance.now();
  try {
    await engine.load(undefined, { signal: opts.signal });
  } catch (e) {
    if (!isEngineError(e)) throw e;
    // The listing failed (nothing listening, an unknown model, a 401): the result file still says so.
    throw new RemoteBenchError(
      e,
      remoteResult({
        host: engine.host,
        api: engine.api,
        model: engine.model ?? 'unknown',
        loadMs: Number.NaN,
        plan,
        runs: [],
        sweep: [],
        partial: true,
      }),
    );
  }
  const loadMs = performance.now() - t0;
  const model = engine.model ?? '';
  onEvent({ type: 'loaded', model, models: engine.models, loadMs });
  const runs: BenchRun[] = [];
  const sweep: BenchSweepPoint[] = [];
  const build = (partial: boolean): BenchResult =>
    remoteResult({ host: engine.host, api: engine.api, model, loadMs, plan, runs, sweep, partial });
  const stopped = () => new EngineError('aborted', 'the benchmark was stopped');
  const total = plan.prompts.length * plan.runs;
  const steps: { prompt: BenchPrompt; warmup: boolean; index: number }[] = [];
  for (let i = 0; i < plan.warmup; i++) steps.push({ prompt: plan.prompts[0], warmup: true, index: i });
  for (const prompt of plan.prompts)
    for (let k = 0; k < plan.runs; k++)
      steps.push({ prompt, warmup: false, index: steps.length - plan.warmup });
  for (const s of steps) {
    if (opts.signal?.aborted) throw new RemoteBenchError(stopped(), build(true));
    const n = s.warmup ? plan.warmup : total;
    onEvent({ type: 'run-start', index: s.index, total: n, promptName: s.prompt.name, warmup: s.warmup });
    const o = await one(engine, plan, s.prompt, opts.signal, opts.onToken);
    if (o.run && !s.warmup) runs.push(o.run);
    if (o.run) onEvent({ type: 'run-done', index: s.index, total: n, warmup: s.warmup, run: o.run });
    if (o.error) throw new RemoteBenchError(o.error, build(true));
  }
  const levels = opts.concurrency ?? [];
  if (typeof window !== 'undefined' && engine.host !== 'invalid-url' && levels.some((c) => c > 6))
    onEvent({
      type: 'warning',
      message:
        'a browser opens at most 6 connections to one HTTP/1.1 server: levels above 6 queue in the browser, not the server (use npm run bench -- --engine remote for those)',
    });
  for (const c of levels) {
    if (opts.signal?.aborted) throw new RemoteBenchError(stopped(), build(true));
    onEvent({ type: 'sweep-start', concurrency: c });
    const p = await sweepPoint(engine, plan, c, opts.signal);
    sweep.push(p);
    onEvent({ type: 'sweep-done', point: p });
    if (p.errors?.length)
      onEvent({
        type: 'warning',
        message: `${p.failed} of ${p.requests} requests failed at concurrency ${c}: ${p.errors[0].message}`,
      });
  }
  return build(false);
}

/** Parses `1,4,16` into sorted unique positive integers. @throws EngineError('invalid_argument'). */
export function parseConcurrency(s: string): number[] {
  const out = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => {
      const n = parseInteger(x) ?? Number.NaN;
      if (!(n >= 1 && n <= 1024))
        throw new EngineError('invalid_argument', `concurrency levels are integers 1–1024, got "${x}"`);
      return n;
    });
  return [...new Set(out)].sort((a, b) => a - b);
}

/** One side of a comparison. */
export interface SideFigures {
  label: string;
  ttftMs?: number;
  tpotMs?: number;
  decodeTokensPerSecond?: number;
  e2eMs?: number;
}

export function sideFigures(r: BenchResult, label: string): SideFigures {
  return {
    label,
    ttftMs: r.summary.ttftMs?.median,
    tpotMs: r.summary.tpotMs?.median,
    decodeTokensPerSecond: r.summary.decodeTokensPerSecond?.median,
    e2eMs: r.summary.e2eMs?.median,
  };
}

const f1 = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

/**
 * The plain sentence: which is faster end to end (median E2E of the same prompts) and by how much, with
 * the decode speed and time to first token beside it. `sameModel: false` (the two sides ran different
 * models) words the verdict as two setups, never "faster for you".
 */
export function compareSentence(
  local: SideFigures,
  remote: SideFigures,
  opts: { sameModel?: boolean } = {},
): string {
  return compareParts(local, remote, opts).join(' ') || 'Not enough measurements to compare.';
}

/** {@link compareSentence}'s sentences: the verdict first, then decode and first-token figures. */
export function compareParts(
  local: SideFigures,
  remote: SideFigures,
  { sameModel = true }: { sameModel?: boolean } = {},
): string[] {
  const parts: string[] = [];
  if (local.e2eMs !== undefined && remote.e2eMs !== undefined && local.e2eMs > 0 && remote.e2eMs > 0) {
    const [fast, slow] = local.e2eMs <= remote.e2eMs ? [local, remote] : [remote, local];
    const x = (slow.e2eMs as number) / (fast.e2eMs as number);
    const times = `(${f1(fast.e2eMs as number)} ms vs ${f1(slow.e2eMs as number)} ms median)`;
    parts.push(
      x < 1.05
        ? `${local.label} and ${remote.label} take about the same time per request (${f1(local.e2eMs)} vs ${f1(remote.e2eMs)} ms median)${sameModel ? '' : ', each on its own model'}.`
        : sameModel
          ? `${fast.label} is faster for you: ${f1(x)}× quicker per request ${times}.`
          : `${fast.label} took ${f1(x)}× less time per request than ${slow.label} ${times}, but each ran its own model.`,
    );
  }
  if (local.decodeTokensPerSecond !== undefined && remote.decodeTokensPerSecond !== undefined)
    parts.push(
      `Decode: ${local.label} ${f1(local.decodeTokensPerSecond)} tok/s, ${remote.label} ${f1(remote.decodeTokensPerSecond)} tok/s.`,
    );
  if (local.ttftMs !== undefined && remote.ttftMs !== undefined)
    parts.push(
      `First token: ${local.label} ${f1(local.ttftMs)} ms, ${remote.label} ${f1(remote.ttftMs)} ms.`,
    );
  return parts;
}
