/**
 * "Your CPU (llama.cpp wasm)": the figures a GPU result is compared with. The page runs the GPU result's
 * model and plan through the wllama backend (src/wllama/engine.ts) and {@link cpuComparisonFrom} turns
 * those runs into a result's `cpu` block (src/bench/types.ts `CpuComparisonSchema`): medians and the
 * GPU ÷ CPU ratio per metric. No DOM: the page's card (src/ui/cpu-compare-view.ts) renders it.
 */
import type { Summary } from '../core/metrics.ts';
import { summarizeRuns } from './runner.ts';
import type { BenchResult, BenchRun, CpuComparison } from './types.ts';

/** The median of a summary, NaN when it is missing. */
const median = (s: Summary | undefined): number => s?.median ?? Number.NaN;

/** a ÷ b, NaN unless both are finite and b > 0. */
const ratio = (a: number, b: number): number =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN;

/**
 * The `cpu` block of a GPU result from the CPU's measured runs of the same plan.
 * @param gpu the GPU result's summary (its medians are the numerators).
 * @param runs the CPU's measured runs (warm-up excluded), as src/bench/runner.ts's `runBenchmark` gives.
 * @param threads wasm threads the CPU run used; `crossOriginIsolated` whether the page could use more than one.
 * @returns medians (TTFT ms, prefill and decode tokens/s) and ratios GPU ÷ CPU: prefill and decode as GPU
 *   rate / CPU rate, TTFT as CPU TTFT / GPU TTFT (> 1: the GPU answers sooner). A figure either side lacks
 *   (a one-token run has no decode rate) gives a NaN ratio, never a made-up one.
 */
export function cpuComparisonFrom(
  gpu: BenchResult['summary'],
  runs: readonly BenchRun[],
  opts: { engine?: string; threads: number; crossOriginIsolated: boolean; createdAt?: string },
): CpuComparison {
  const s = summarizeRuns(runs);
  const ttftMs = median(s.ttftMs);
  const prefillTokS = median(s.prefillTokensPerSecond);
  const decodeTokS = median(s.decodeTokensPerSecond);
  return {
    engine: opts.engine ?? 'wllama',
    threads: opts.threads,
    crossOriginIsolated: opts.crossOriginIsolated,
    runs: runs.length,
    ttftMs,
    prefillTokS,
    decodeTokS,
    ratio: {
      ttft: ratio(ttftMs, median(gpu.ttftMs)),
      prefill: ratio(median(gpu.prefillTokensPerSecond), prefillTokS),
      decode: ratio(median(gpu.decodeTokensPerSecond), decodeTokS),
    },
    createdAt: opts.createdAt ?? new Date().toISOString(),
  };
}

/** "7.3×", "2.0×", "0.48×" (two significant figures under 10, whole numbers above), "–" for NaN. */
export function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return '–';
  return `${x >= 10 ? Math.round(x) : x.toPrecision(2)}×`;
}

/**
 * One sentence for people: "this GPU is 7.3× your CPU at decode" (or "your CPU is 1.4× this GPU at
 * decode" when the CPU is faster, e.g. on a software adapter); undefined without a decode ratio.
 */
export function decodeRatioSentence(c: CpuComparison): string | undefined {
  const r = c.ratio.decode;
  if (!Number.isFinite(r) || r <= 0) return undefined;
  return r >= 1
    ? `this GPU is ${fmtRatio(r)} your CPU at decode`
    : `your CPU is ${fmtRatio(1 / r)} this GPU at decode`;
}
