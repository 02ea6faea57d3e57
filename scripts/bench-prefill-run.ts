// One bench-prefill run's state: its clock and log, the environment and results it reports, number helpers.
import { cpus, loadavg } from 'node:os';
import { type AdapterInfo, benchShape, cpuModel, gitCommit } from './bench-common.ts';
import type { EngineId } from './bench-prefill-args.ts';

/** The test model's shape (bench-common's `bench-60m`). */
export const shape = benchShape();

/** When the run started (performance.now()). */
export const t0 = performance.now();
/** Prints `[bench:prefill Ns] s` to stderr, N the seconds since the start. */
export const log = (s: string) =>
  console.error(`[bench:prefill ${((performance.now() - t0) / 1000).toFixed(0)}s] ${s}`);

/**
 * What `harness.stopToIdle` returns (src/bench/stop-latency.ts's StopToIdleResult; the fields read here,
 * declared here so this script does not depend on that module at compile time).
 */
export interface StopToIdleResult {
  promptTokens: number;
  abortAtMs: number;
  stopToIdleMs: number | null;
  finishReason: string;
  duringPrefill: boolean;
  prefill?: { tokens: number; done: number; batches: number };
  meanBatchMs?: number;
}

/** One prefill measurement of one engine on one prompt. */
export interface PrefillRun {
  promptTokens: number;
  ttftMs: number;
  prefillTokPerS: number;
  /** wllama: llama.cpp's own prompt timing (prompt_n ÷ prompt_ms), without the page ↔ worker trips. */
  internalTokPerS?: number;
}

/** An engine's runs on one prompt, and the error that ended them if one did. */
export type Cell = { runs: PrefillRun[]; error?: string };
/** Part 1's results for one type. */
export interface TypeRow {
  type: string;
  mib: number;
  /** Per prompt target: the text's token count (ours) and the engines' runs. */
  prompts: { target: number; tokens: number; cells: Partial<Record<EngineId, Cell>> }[];
}

/** Mean and population standard deviation. */
export type Stat = { mean: number; std: number };

/** What the run measured, part by part. */
export interface PrefillResults {
  /** Part 1. */
  typeRows: TypeRow[];
  /** Part 3. */
  ttft: { tokens: number; runs: number[]; error?: string } | undefined;
  /** Part 4. */
  stops: StopToIdleResult[];
  stopError: string | undefined;
  /** Part 2: tok/s by depth. */
  pp: { ours?: Map<number, Stat>; oursError?: string; llama?: Map<number, Stat>; llamaError?: string };
}

/** The machine, versions and settings the section reports, filled in as the run learns them. */
export const env = {
  date: new Date().toISOString().slice(0, 10),
  cpu: cpuModel(),
  nCpu: cpus().length,
  loadBefore: loadavg(),
  loadAfter: undefined as number[] | undefined,
  commit: gitCommit(['src/webgpu', 'src/core', 'src/gguf', 'src/model', 'src/cli', 'workers']),
  chromium: undefined as string | undefined,
  adapter: undefined as AdapterInfo | undefined,
  wllama: undefined as { libllama: string; threads: number; multithread: boolean } | undefined,
  llamaCpp: undefined as string | undefined,
  oursBatch: undefined as number | undefined,
  oursPrefill: undefined as unknown,
};
/** This run's results. */
export const results: PrefillResults = {
  typeRows: [],
  ttft: undefined,
  stops: [],
  stopError: undefined,
  pp: {},
};

// ---------------------------------------------------------------------------------------------------
// Small helpers

/** The median; NaN for none. */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** Mean and population std of `xs`. */
export const meanStd = (xs: number[]): Stat => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return { mean, std: Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length) };
};
/** A figure with 3–4 significant digits (thousands grouped); a dash when missing or not finite. */
export const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x)
    ? '—'
    : x >= 1000
      ? Math.round(x).toLocaleString('en-US')
      : x >= 100
        ? x.toFixed(0)
        : x >= 10
          ? x.toFixed(1)
          : x.toFixed(2);
/** `a ÷ b` as `N.NN×`, or a dash. */
export const ratio = (a?: number, b?: number) =>
  a !== undefined && b !== undefined && b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '—';
/** `mean ± std`, or a dash. */
export const tps = (s?: Stat) => (s ? `${f(s.mean)} ± ${f(s.std)}` : '—');
