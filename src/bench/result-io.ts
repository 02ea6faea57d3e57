/**
 * Result files (JSON, `schemaVersion: 1`, see src/bench/types.ts) as the page reads and writes them, and
 * the short shareable summary. No DOM.
 *
 * JSON has no NaN: a metric that is undefined for a run (TPOT of a one-token output) is written as `null`
 * and read back as NaN.
 */

import { fmtMs, fmtNum, fmtParams, fmtPct } from '../util/format.ts';
import { summarizeRuns } from './runner.ts';
import type { BenchResult, BenchRun } from './types.ts';

/** A result as JSON text (NaN → null), indented. */
export function resultToJson(r: BenchResult | readonly BenchResult[]): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A number field that JSON may have turned from NaN into null. */
function numOrNaN(x: unknown, where: string): number {
  if (x === null) return Number.NaN;
  if (typeof x !== 'number') throw new TypeError(`${where} should be a number`);
  return x;
}

function checkRun(x: unknown, where: string): BenchRun {
  if (!isObj(x)) throw new TypeError(`${where} is not an object`);
  for (const k of ['prompt', 'text'] as const)
    if (typeof x[k] !== 'string') throw new TypeError(`${where}.${k} should be a string`);
  const fields = [
    'promptTokens',
    'outputTokens',
    'ttftMs',
    'tpotMs',
    'e2eMs',
    'prefillTokensPerSecond',
    'decodeTokensPerSecond',
  ] as const;
  const out = { ...x } as unknown as BenchRun;
  for (const k of fields) (out as unknown as Record<string, number>)[k] = numOrNaN(x[k], `${where}.${k}`);
  out.itlMs = Array.isArray(x.itlMs) ? x.itlMs.map((v, i) => numOrNaN(v, `${where}.itlMs[${i}]`)) : [];
  out.outputTokenIds = Array.isArray(x.outputTokenIds) ? (x.outputTokenIds as number[]) : [];
  return out;
}

/**
 * Checks that `x` is a schemaVersion 1 result and fills what an older or hand-made file may lack (the
 * summary, recomputed from the runs). @throws TypeError naming the first problem.
 */
export function checkResult(x: unknown, where = 'result'): BenchResult {
  if (!isObj(x)) throw new TypeError(`${where} is not an object`);
  if (x.schemaVersion !== 1)
    throw new TypeError(`${where}.schemaVersion is ${JSON.stringify(x.schemaVersion)}, expected 1`);
  if (typeof x.createdAt !== 'string') throw new TypeError(`${where}.createdAt should be a string`);
  if (typeof x.engine !== 'string') throw new TypeError(`${where}.engine should be a string`);
  if (!isObj(x.device) || typeof x.device.fingerprint !== 'string')
    throw new TypeError(`${where}.device.fingerprint should be a string`);
  if (!isObj(x.model) || typeof x.model.id !== 'string')
    throw new TypeError(`${where}.model.id should be a string`);
  if (!Array.isArray(x.runs)) throw new TypeError(`${where}.runs should be an array`);
  const runs = x.runs.map((r, i) => checkRun(r, `${where}.runs[${i}]`));
  const device = x.device as unknown as BenchResult['device'];
  const result: BenchResult = {
    ...(x as unknown as BenchResult),
    device: {
      ...device,
      features: Array.isArray(device.features) ? device.features : [],
      limits: isObj(device.limits) ? device.limits : {},
      userAgent: typeof device.userAgent === 'string' ? device.userAgent : '',
    },
    load: isObj(x.load)
      ? (x.load as unknown as BenchResult['load'])
      : { totalMs: Number.NaN, downloadMs: Number.NaN, uploadMs: Number.NaN, compileMs: Number.NaN },
    plan: isObj(x.plan)
      ? (x.plan as unknown as BenchResult['plan'])
      : { prompts: [], maxTokens: 0, runs: runs.length, warmup: 0, ignoreEos: false },
    runs,
    summary:
      isObj(x.summary) && Object.keys(x.summary).length
        ? (x.summary as BenchResult['summary'])
        : summarizeRuns(runs),
  };
  return result;
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
  const parts = [
    `${r.model.id}${r.model.synthetic ? ' (synthetic, random weights)' : ''} (${fmtParams(r.model.parameters)} params, ${r.model.quantization}) on ${label} · ${r.engine}:`,
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
