// bench-engine's protocol: prompts, runs and measured configurations, warm-ups, interleaved rounds, summaries.
import { type RequestMetrics, requestMetrics, type Summary, summarize } from '../src/core/metrics.ts';

/** Context length every engine is loaded with (the model's own). */
export const N_CTX = 2048;
/** A warm-up still running after this long marks the configuration as too slow for the full protocol. */
const WARMUP_BUDGET_MS = 6000;
/** Target wall time of one measured run of a slow configuration. */
const SLOW_RUN_MS = 3000;
/** Wall-time cap of one measured run (engines that can stop early); a slow configuration's cap. */
const RUN_CAP_MS = 10_000;
const SLOW_RUN_CAP_MS = 4000;
/** Measured runs of a slow configuration. */
const SLOW_RUNS = 3;

/** The prompts every engine gets, as text (each engine tokenizes it with BOS). */
export const PROMPTS = {
  short: 'Once upon a time',
  long:
    'Once upon a time, in a small town near the big forest, there lived a little girl named Lily. ' +
    'She had a red ball and a small dog called Max. Every day, Lily and Max went to the park to play. ' +
    'One sunny morning, Lily saw a big tree with a shiny apple on top.',
} as const;
export type PromptKey = keyof typeof PROMPTS;

/** One measured generation, whichever engine made it. */
export interface Run {
  tStartMs: number;
  tokenTimesMs: number[];
  promptTokens: number;
  outputTokenIds?: number[];
  text?: string;
  /** The engine's own prefill/decode rates where it reports them (wllama's llama.cpp timings). */
  internal?: { prefillTokPerS: number; decodeTokPerS: number };
  /** True when the run stopped at its deadline before making all its tokens. */
  cut?: boolean;
}

/** A generation function; `deadlineMs` (performance.now()) lets it stop early where it can. */
export type RunOnce = (prompt: string, nTokens: number, deadlineMs?: number) => Promise<Run>;

/** One configuration's results on one prompt: its runs' metrics and their summaries. */
export interface Measured {
  id: string;
  engine: string;
  runtime: string;
  threads: string;
  prompt: PromptKey;
  promptTokens: number;
  outputTokens: number;
  metrics: RequestMetrics[];
  prefill: Summary;
  decode: Summary;
  ttft: Summary;
  tpot: Summary;
  e2e: Summary;
  internal?: { prefill: Summary; decode: Summary };
  /** Set when the protocol was reduced. */
  reduced?: string;
  lastRun: Run;
}

/** What `--json FILE` holds: the environment, the options, the prompts and each measured configuration. */
export interface BenchEngineJson {
  env: Env;
  opts: unknown;
  prompts: Record<PromptKey, string>;
  results: (Omit<Measured, 'lastRun'> & { lastText: string })[];
}

/** `--runs`, `--warmup` and `--tokens`. */
export interface Opts {
  runs: number;
  warmup: number;
  tokens: number;
}

/** Writes a line to stderr. */
export function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

/** Who made a configuration's runs: its id, engine, runtime and threads, as the report names them. */
export type Meta = { id: string; engine: string; runtime: string; threads: string };

/** An engine configuration ready to generate. */
export interface Config {
  meta: Meta;
  runOnce: RunOnce;
}

/** What to measure of one configuration on one prompt, and the runs so far. */
export interface Plan {
  config: Config;
  prompt: PromptKey;
  nTokens: number;
  nRuns: number;
  /** Wall-time cap of each measured run. */
  capMs: number;
  reduced?: string;
  runs: Run[];
}

/**
 * Warm-up runs of one configuration on one prompt. A warm-up that cannot finish within
 * {@link WARMUP_BUDGET_MS} shrinks the plan (fewer tokens and runs) and says so.
 */
export async function warmUp(config: Config, prompt: PromptKey, o: Opts): Promise<Plan> {
  const plan: Plan = { config, prompt, nTokens: o.tokens, nRuns: o.runs, capMs: RUN_CAP_MS, runs: [] };
  for (let w = 0; w < o.warmup; w++) {
    const t0 = performance.now();
    const r = await config.runOnce(PROMPTS[prompt], o.tokens, t0 + WARMUP_BUDGET_MS);
    const got = r.tokenTimesMs.length;
    if (got < o.tokens) {
      // Too slow for the full protocol here: size runs to ~SLOW_RUN_MS from the warm-up's decode rate.
      const rate = got > 1 ? (got - 1) / ((r.tokenTimesMs[got - 1] - r.tokenTimesMs[0]) / 1000) : 0;
      plan.nTokens = Math.max(8, Math.min(o.tokens, Math.floor((rate * SLOW_RUN_MS) / 1000)));
      plan.nRuns = Math.min(o.runs, SLOW_RUNS);
      plan.capMs = SLOW_RUN_CAP_MS;
      plan.reduced = `warm-up made ${got} of ${o.tokens} tokens in ${(WARMUP_BUDGET_MS / 1000).toFixed(0)} s: measured ${plan.nRuns} runs of ${plan.nTokens} tokens`;
      log(`  ${config.meta.id} ${prompt}: ${plan.reduced}`);
      break;
    }
  }
  return plan;
}

/**
 * Measured runs, interleaved: round r runs every plan once (the order rotated by r), so background load
 * on a shared machine falls on all engines alike rather than on whichever ran in a bad minute.
 */
export async function runRounds(plans: Plan[], o: Opts): Promise<void> {
  for (let round = 0; round < o.runs; round++) {
    const due = plans.filter((p) => round < p.nRuns);
    const order = due.map((_, i) => due[(i + round) % due.length]);
    const t0 = performance.now();
    for (const p of order) {
      if (round >= p.nRuns) continue; // shrunk during this round
      const r = await p.config.runOnce(PROMPTS[p.prompt], p.nTokens, performance.now() + p.capMs);
      const got = r.tokenTimesMs.length;
      if (r.cut && got >= 1) {
        // The machine got slower under this configuration: keep the partial run (its rates are still
        // rates; with one token it has a TTFT only) and shrink what is left of the plan.
        const note = `run ${p.runs.length + 1} stopped at the ${(p.capMs / 1000).toFixed(0)} s cap after ${got} of ${p.nTokens} tokens`;
        p.reduced = p.reduced ? `${p.reduced}; ${note}` : note;
        p.nRuns = Math.min(p.nRuns, SLOW_RUNS);
        p.capMs = SLOW_RUN_CAP_MS;
        log(`  ${p.config.meta.id} ${p.prompt}: ${note}`);
      } else if (got !== p.nTokens) {
        throw new Error(
          `${p.config.meta.id} (${p.prompt}): run ${round} made ${got} tokens, expected exactly ${p.nTokens}`,
        );
      }
      p.runs.push(r);
    }
    log(
      `round ${round + 1}/${o.runs}: ${due.length} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
}

/** {@link summarize} over the values that are not NaN (a one-token run has no decode rate); all NaN when none is. */
function summarizeDefined(values: number[]): Summary {
  const v = values.filter((x) => !Number.isNaN(x));
  if (v.length > 0) return summarize(v);
  const n = Number.NaN;
  return { n: 0, mean: n, median: n, p90: n, p99: n, std: n, min: n, max: n };
}

/** Metrics and summaries of a finished plan. */
export function summarizePlan(plan: Plan): Measured {
  const { runs, config, prompt } = plan;
  const metrics = runs.map((r) => requestMetrics(r));
  const promptTokens = runs[0].promptTokens;
  if (runs.some((r) => r.promptTokens !== promptTokens))
    throw new Error(`${config.meta.id}: prompt length varies between runs`);
  const m: Measured = {
    ...config.meta,
    prompt,
    promptTokens,
    outputTokens: plan.nTokens,
    metrics,
    prefill: summarize(metrics.map((x) => x.prefillTokPerS)),
    decode: summarizeDefined(metrics.map((x) => x.decodeTokPerS)),
    ttft: summarize(metrics.map((x) => x.ttftMs)),
    tpot: summarizeDefined(metrics.map((x) => x.tpotMs)),
    e2e: summarize(metrics.map((x) => x.e2eMs)),
    reduced: plan.reduced,
    lastRun: runs[runs.length - 1],
  };
  if (runs.every((r) => r.internal)) {
    m.internal = {
      prefill: summarize(runs.map((r) => r.internal!.prefillTokPerS)),
      decode: summarize(runs.map((r) => r.internal!.decodeTokPerS)),
    };
  }
  log(
    `  ${config.meta.id.padEnd(18)} ${prompt.padEnd(5)} prompt ${promptTokens} tok: prefill ${fmt(m.prefill.median)} tok/s, decode ${fmt(m.decode.median)} tok/s (median of ${runs.length})`,
  );
  return m;
}

/** A figure rounded for the report (1,234 / 123 / 12.3 / 1.23 / 0.12); a dash for NaN. */
export function fmt(x: number): string {
  if (Number.isNaN(x)) return '—';
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1 || a === 0) return x.toFixed(2);
  return x.toPrecision(2);
}

/** What bench-engine reads of a WebGPU adapter (`harness.adapter()` in Chromium, the GPU context's info in Node). */
export type AdapterInfo = {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallback: boolean;
};

/** The machine, versions and commit a run reports, filled in as the engines load. */
export interface Env {
  date: string;
  cpu: string;
  nCpu: number;
  loadBefore: number[];
  loadAfter?: number[];
  chromium?: string;
  browserAdapter?: AdapterInfo;
  nodeAdapter?: AdapterInfo;
  wllama?: { libllama: string; multithread: boolean; threads: number; crossOriginIsolated: boolean };
  llamaCpp?: { release: string; cpuMathCores: number; maxThreads: number };
  commit: string;
}
