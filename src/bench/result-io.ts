/**
 * Result files (JSON, `schemaVersion: 1`, see src/bench/types.ts) as the page reads and writes them, and
 * the short shareable summary. No DOM.
 *
 * JSON has no NaN: a metric that is undefined for a run (TPOT of a one-token output) is written as `null`
 * and read back as NaN.
 */

import { fmtMs, fmtNum, fmtParams, fmtPct } from '../util/format.ts';
import { withFacts } from './report.ts';
import { summarizeRuns } from './runner.ts';
import { type BenchResult, modelFacts, parseResult } from './types.ts';

/** A result as JSON text (NaN → null), indented. */
export function resultToJson(r: BenchResult | readonly BenchResult[]): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * Checks `x` against the result schema (src/bench/types.ts) and fills what an older or hand-made file may
 * lack: the schema's defaults, and the summary, recomputed from the runs.
 * @throws TypeError naming the first problem.
 */
export function checkResult(x: unknown, where = 'result'): BenchResult {
  const r = parseResult(x, where);
  return Object.keys(r.summary).length ? r : { ...r, summary: summarizeRuns(r.runs) };
}

/**
 * A result file's text → results. Accepts one result, an array of them, or `{results: [...]}`.
 * @throws SyntaxError when it is not JSON, TypeError when a result is malformed.
 */
export function parseResultsJson(text: string): BenchResult[] {
  const data: unknown = JSON.parse(text);
  const list = Array.isArray(data)
    ? data
    : isObj(data) && Array.isArray(data.results)
      ? data.results
      : [data];
  return list.map((x, i) => checkResult(x, list.length > 1 ? `result ${i + 1}` : 'result'));
}

/** The identity of a result in the history: the same file imported twice is stored once. */
export function resultKey(r: BenchResult): string {
  return [r.createdAt, r.device.fingerprint, r.engine, r.model.id].join('|');
}

/** A file name for a result: `bench-<model>-<yyyymmdd-hhmmss>.json`. */
export function resultFileName(r: BenchResult, ext: 'json' | 'csv'): string {
  const model =
    r.model.id
      .replace(/\.gguf$/i, '')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .slice(0, 40) || 'model';
  const t = r.createdAt.replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `bench-${model}-${t}.${ext}`;
}

/** The median decode tok/s of a result (NaN when no run decoded more than one token). */
export function decodeRate(r: BenchResult): number {
  return r.summary.decodeTokensPerSecond?.median ?? Number.NaN;
}

/**
 * A short text to share a result: model, device, the median figures and the roofline reading, e.g.
 * `stories260K (260K params, F32) on NVIDIA RTX 4090 · webgpu: decode 812 tok/s, prefill 2,310 tok/s,
 * TTFT 4.12 ms, TPOT 1.23 ms (median of 3 runs, 20 tokens) · 41% of measured memory bandwidth (812 GB/s)`.
 */
export function summaryText(r: BenchResult): string {
  const s = r.summary;
  const n = r.runs.length;
  const label = r.device.label || r.device.description || r.device.vendor || r.device.fingerprint;
  // "293K params, F32"; a remote server's model has neither (modelFacts).
  const params = r.model.parameters > 0 ? `${fmtParams(r.model.parameters)} params` : '';
  const facts = [params, modelFacts({ quantization: r.model.quantization })].filter(Boolean).join(', ');
  const parts = [
    `${withFacts(`${r.model.id}${r.model.synthetic ? ' (synthetic, random weights)' : ''}`, facts)} on ${label} · ${r.engine}:`,
    ` decode ${fmtNum(s.decodeTokensPerSecond?.median)} tok/s, prefill ${fmtNum(s.prefillTokensPerSecond?.median)} tok/s,` +
      ` TTFT ${fmtMs(s.ttftMs?.median)}, TPOT ${fmtMs(s.tpotMs?.median)}`,
    ` (median of ${n} run${n === 1 ? '' : 's'}, ${r.plan.maxTokens} max tokens)`,
  ];
  if (r.roofline && Number.isFinite(r.roofline.fraction))
    parts.push(
      ` · ${fmtPct(r.roofline.fraction)} of measured memory bandwidth (${fmtNum(r.roofline.bandwidthGBs)} GB/s)`,
    );
  if (r.device.isFallbackAdapter || /\(software\)/.test(r.device.label ?? ''))
    parts.push(' · software adapter: CPU emulation, not a GPU');
  parts.push(` · WebGPU LLM Bench, ${r.createdAt.slice(0, 10)}`);
  return parts.join('');
}
