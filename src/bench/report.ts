/**
 * Result files as people read them, with no DOM and no Node: the text table `npm run bench` prints, and the
 * Markdown table and self-contained HTML page (inline SVG charts) `npm run bench:report` makes from several
 * result files. (A result file's check is `resultProblems` in types.ts, the one schema.)
 */

import { fnv1a64 } from '../core/hash.ts';
import type { Summary } from '../core/metrics.ts';
import type { SamplingParams } from '../core/types.ts';
import { fmtBytes, fmtParams, fmtPct, fmtSig } from '../util/format.ts';
import { escapeHtml as esc } from '../util/html.ts';
import { DEFAULT_PLAN } from './default-plan.ts';
import { LEADERBOARD_CSS, leaderboard, leaderboardHtml } from './leaderboard.ts';
import { markdownTable, markdownText } from './markdown.ts';
import { PROMPT_SETS } from './prompts.ts';
import { prefillVsMatmulText } from './roofline.ts';
import { type BenchResult, modelFacts } from './types.ts';

/** The measured runs of a constrained plan whose answer was cut before the format's value was complete. */
export function cutConstrainedRuns(r: Pick<BenchResult, 'runs' | 'constrained'>): number {
  return r.constrained ? r.runs.filter((x) => x.formatComplete === false).length : 0;
}

// ---------------------------------------------------------------------------------------------- checks

// ---------------------------------------------------------------------------------------------- numbers

// ---------------------------------------------------------------------------------------------- one result

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|\bwarp\b/i;

/** True when the result was measured on a software (CPU) adapter. */
export function isSoftwareResult(r: BenchResult): boolean {
  const d = r.device;
  return (
    d.isFallbackAdapter || SOFTWARE.test([d.vendor, d.architecture, d.device ?? '', d.description].join(' '))
  );
}

/** The device as a person names it. */
export function deviceName(r: BenchResult): string {
  const d = r.device;
  const name =
    d.label ||
    d.description ||
    [d.vendor, d.architecture, d.device].filter((s) => s?.trim()).join(' ') ||
    'unknown adapter';
  return isSoftwareResult(r) && !/software/i.test(name) ? `${name} (software)` : name;
}

/** Rows of the per-metric summary: label, unit key, and the summary. */
const METRIC_ROWS: { key: string; label: string }[] = [
  { key: 'ttftMs', label: 'TTFT (ms)' },
  { key: 'tpotMs', label: 'TPOT (ms)' },
  { key: 'itlMs', label: 'ITL (ms)' },
  { key: 'e2eMs', label: 'E2E latency (ms)' },
  { key: 'prefillTokensPerSecond', label: 'Prefill (tok/s)' },
  { key: 'decodeTokensPerSecond', label: 'Decode (tok/s)' },
];

/** Left-aligned first column, right-aligned others, two spaces apart. */
export function textTable(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * The text `npm run bench` prints on stdout: what was measured (device, whether it is a software adapter,
 * model, plan, load), the summary of each metric, and the roofline.
 * @param notes extra lines under the heading (e.g. why this model was chosen).
 */
/**
 * A plan's sampling in words: `greedy` (no temperature), else `temperature 0.8, top-p 0.95, seed 1` (the
 * parameters that are set, in llama.cpp's flag names).
 */
export function samplingText(s: SamplingParams | undefined): string {
  if (!s?.temperature) return 'greedy';
  const parts = [`temperature ${s.temperature}`];
  if (s.topK !== undefined) parts.push(`top-k ${s.topK}`);
  if (s.topP !== undefined) parts.push(`top-p ${s.topP}`);
  if (s.minP !== undefined) parts.push(`min-p ${s.minP}`);
  if (s.repetitionPenalty !== undefined) parts.push(`repeat-penalty ${s.repetitionPenalty}`);
  if (s.seed !== undefined) parts.push(`seed ${s.seed}`);
  return parts.join(', ');
}

/**
 * The load's time outside its three phases (the header and tokenizer, the kernels' timed trials at load),
 * as `, the rest N ms (header, tokenizer, kernel trials)`, or '' when under 1 ms or not a number.
 */
function loadRest(l: BenchResult['load']): string {
  const rest = l.totalMs - l.downloadMs - l.uploadMs - l.compileMs;
  return Number.isFinite(rest) && rest >= 1
    ? `, the rest ${fmtSig(rest)} ms (header, tokenizer, kernel trials)`
    : '';
}

export function formatResultText(r: BenchResult, notes: string[] = []): string {
  const out: string[] = [];
  const m = r.model;
  const p = r.plan;
  out.push('WebGPU LLM benchmark');
  out.push(`  device:  ${deviceName(r)}  [fingerprint ${r.device.fingerprint}]`);
  // wllama never uses the adapter: the run measures the processor whatever the device line says.
  if (r.engine === 'wllama')
    out.push(
      '           not used: wllama runs llama.cpp’s wasm build on the CPU; these figures measure the processor.',
    );
  else if (isSoftwareResult(r))
    out.push(
      '           SOFTWARE ADAPTER: WebGPU runs on the CPU here; these figures measure the processor, not a GPU.',
    );
  out.push(`  engine:  ${r.engine}`);
  // A remote server does not say its model's size or type: those are left out, not printed as 0.
  const remote = r.engine === 'remote';
  const facts = remote
    ? ['served remotely: its size and type are the server’s']
    : [
        m.architecture,
        m.quantization,
        `${fmtParams(m.parameters)} parameters`,
        `${fmtBytes(m.bytes)} of weights`,
        ...(m.kvType ? [`${m.kvType} KV cache`] : []),
      ];
  out.push(
    `  model:   ${m.id} (${facts.join(', ')})${m.synthetic ? ' — synthetic: random weights, real speed, noise for text' : ''}`,
  );
  for (const n of notes) out.push(`           ${n}`);
  const nRuns = p.prompts.length * p.runs;
  out.push(
    `  plan:    ${p.prompts.length} prompt${p.prompts.length === 1 ? '' : 's'} × ${p.runs} run${p.runs === 1 ? '' : 's'} = ${nRuns} measured (+${p.warmup} warm-up), up to ${p.maxTokens} new tokens, ${samplingText(p.sampling)}${p.ignoreEos ? ', EOS ignored' : ''}`,
  );
  if (p.draft || r.constrained)
    out.push(
      `           ${[
        ...(p.draft
          ? [
              `speculative decoding by ${p.draft.type === 'lookup' ? 'prompt lookup' : `draft model ${p.draft.model ?? ''}`.trim()}${p.draft.draftMax !== undefined ? `, draft-max ${p.draft.draftMax}` : ''}`,
            ]
          : []),
        ...(r.constrained ? [`constrained output: ${r.constrained.kind} ${r.constrained.hash}`] : []),
      ].join('; ')}`,
    );
  const cut = cutConstrainedRuns(r);
  if (cut > 0)
    out.push(
      `           ${cut} of ${r.runs.length} run${r.runs.length === 1 ? ' was' : 's were'} cut at ${p.maxTokens} tokens before the value was complete: their answers do not parse`,
    );
  const tokIn = r.runs.map((x) => x.promptTokens);
  const tokOut = r.runs.map((x) => x.outputTokens);
  if (r.runs.length > 0)
    out.push(
      `  tokens:  prompt ${Math.min(...tokIn)}–${Math.max(...tokIn)}, output ${Math.min(...tokOut)}–${Math.max(...tokOut)} per run`,
    );
  const l = r.load;
  // wllama (llama.cpp's wasm build) runs on the CPU: its load reads the file and loads it into wasm memory;
  // it has no GPU upload and no shaders to compile (issue 46: its report named both).
  const cpu = r.engine === 'wllama';
  out.push(
    remote
      ? `  load:    ${fmtSig(l.totalMs)} ms (listing the server’s models; the server loaded the weights)`
      : cpu
        ? `  load:    ${fmtSig(l.totalMs)} ms (fetch ${fmtSig(l.downloadMs)} ms, load into wasm ${fmtSig(l.uploadMs)} ms)`
        : `  load:    ${fmtSig(l.totalMs)} ms (download ${fmtSig(l.downloadMs)} ms, GPU upload ${fmtSig(l.uploadMs)} ms, shader compile ${fmtSig(l.compileMs)} ms${loadRest(l)})`,
  );
  out.push('');
  const rows: string[][] = [['metric', 'n', 'mean', 'median', 'p90', 'p99', 'std', 'min', 'max']];
  for (const { key, label } of METRIC_ROWS) {
    const s: Summary | undefined = r.summary[key];
    if (!s) rows.push([label, '0', '–', '–', '–', '–', '–', '–', '–']);
    else
      rows.push([
        label,
        String(s.n),
        fmtSig(s.mean),
        fmtSig(s.median),
        fmtSig(s.p90),
        fmtSig(s.p99),
        fmtSig(s.std),
        fmtSig(s.min),
        fmtSig(s.max),
      ]);
  }
  out.push(textTable(rows));
  out.push('');
  const sp = r.speculative;
  if (sp) {
    out.push(
      `Speculative: ${sp.accepted} of ${sp.drafted} drafted tokens accepted (${fmtPct(sp.acceptanceRate)}), ${fmtSig(sp.tokensPerTargetPass)} tokens per target pass; median decode ${fmtSig(r.summary.decodeTokensPerSecond?.median)} tok/s vs ${fmtSig(sp.baseline.decodeTokensPerSecond)} without drafting (${sp.baseline.runs} baseline runs): ${fmtSig(sp.speedup)}×${sp.sameOutput === undefined ? '' : sp.sameOutput ? '; same output as without drafting' : '; OUTPUT DIFFERS from the run without drafting'}.`,
    );
    out.push('');
  }
  const rf = r.roofline;
  if (rf) {
    out.push(
      `Roofline: measured read bandwidth ${fmtSig(rf.bandwidthGBs)} GB/s; decode reads ~${fmtBytes(rf.bytesPerToken)} per token, so median decode uses ${fmtPct(rf.fraction)} of it.`,
    );
    if (rf.matmulGflops !== undefined)
      out.push(
        `          measured f32 matmul ${fmtSig(rf.matmulGflops)} GFLOP/s; median prefill reaches ${prefillVsMatmulText(rf.prefillFraction, fmtPct)}.`,
      );
  } else if (cpu) out.push('Roofline: not applicable to the CPU backend (no GPU kernels).');
  else if (remote) out.push('Roofline: not applicable to a remote server (its GPU is not this one).');
  else out.push('Roofline: not measured.');
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------- many results

/** Why a partial result stopped: `interrupted in download`, `failed: stream_cut`, or `stopped early` (an older file). */
export function partialWhy(r: Pick<ReportRow, 'interrupted' | 'failed'>): string {
  if (r.interrupted) return `interrupted in ${r.interrupted}`;
  if (r.failed) return `failed: ${r.failed}`;
  return 'stopped early';
}

/** `id (facts)`, or the id alone where there are no facts ({@link modelFacts}). */
export const withFacts = (id: string, facts: string): string => (facts ? `${id} (${facts})` : id);

/** One result file reduced to the figures a comparison shows. */
export interface ReportRow {
  source: string;
  device: string;
  software: boolean;
  fingerprint: string;
  engine: string;
  model: string;
  quantization: string;
  parameters: number;
  runs: number;
  decodeTps?: Summary;
  tpotMs?: Summary;
  ttftMs?: Summary;
  prefillTps?: Summary;
  e2eMs?: Summary;
  bandwidthGBs?: number;
  roofline?: number;
  matmulGflops?: number;
  loadMs: number;
  createdAt: string;
  /** The page's "Your CPU" figures (result.cpu): wllama's median decode tok/s and GPU ÷ CPU at decode. */
  cpu?: { decodeTps: number; decodeRatio: number; threads: number };
  /** {@link speculativeText} of a drafting result. */
  speculative?: string;
  /** A `--llama-bench` result (pp/tg `tests`, no prompt-plan runs): left out of the leaderboard. */
  llamaBench?: boolean;
  /** The run stopped early (result.partial: interrupted or failed): fewer runs than planned; left out of the leaderboard. */
  partial?: boolean;
  /** Where a run stopped by a signal stopped (result.interrupted.phase: `download`, `load`, `runs`, …). */
  interrupted?: string;
  /** The error code of a run stopped by a failure (result.error.code: `stream_cut`, `network`, …). */
  failed?: string;
  /** `engine` carries more than the engine's name (drafting, constrained output, a non-default setup). */
  labelled?: boolean;
  /** The result's own `engine` (`webgpu`); absent: `engine`. */
  engineName?: string;
  /** {@link engineLabel} without the setup (drafting and constrained output kept); absent: `engine`. */
  engineBase?: string;
  /** {@link setupParts}: what of the plan and cache is not the default (`engine` ends with them). */
  setup?: string[];
}

/**
 * The setup parts ({@link setupParts}) every row shares, in the first row's order: stated once beside a
 * table or the leaderboard ("All runs: 16 tokens, kv f32") instead of in every engine label. Empty when
 * there are no rows or one runs the default.
 */
export function commonSetup(rows: readonly Pick<ReportRow, 'setup'>[]): string[] {
  if (rows.length === 0) return [];
  return (rows[0].setup ?? []).filter((part) => rows.every((r) => (r.setup ?? []).includes(part)));
}

/**
 * A row's engine as a table that states `common` once shows it: {@link engineLabel} less the setup parts
 * every row shares (`webgpu · temperature 1.5` where all ran 16 tokens).
 */
export function shownEngine(r: ReportRow, common: readonly string[]): string {
  if (common.length === 0 || !r.setup) return r.engine;
  const rest = r.setup.filter((part) => !common.includes(part));
  return `${r.engineBase ?? r.engine}${rest.length > 0 ? ` · ${rest.join(', ')}` : ''}`;
}

/**
 * The sentence that states a setup common to all results (`All runs: 16 tokens, kv f32.`), or ''. `what`
 * names the results it is true of: the leaderboard's are the ranked ones (`All ranked runs`), partial files
 * left out, so its sentence may differ from the all-results table's.
 */
export function commonSetupText(common: readonly string[], what = 'All runs'): string {
  return common.length > 0 ? `${what}: ${common.join(', ')}.` : '';
}

/** Rows for a set of results (in the given order); `sources` name them (file names). */
export function reportRows(results: readonly BenchResult[], sources: readonly string[] = []): ReportRow[] {
  return results.map((r, i) => reportRow(r, sources[i] ?? `result ${i + 1}`));
}

/** One result's row ({@link reportRows}). */
function reportRow(r: BenchResult, source: string): ReportRow {
  const engine = engineLabel(r);
  return {
    source,
    device: deviceName(r),
    software: isSoftwareResult(r),
    fingerprint: r.device.fingerprint,
    engine,
    model: r.model.id,
    quantization: r.model.quantization,
    parameters: r.model.parameters,
    runs: r.runs.length,
    decodeTps: r.summary.decodeTokensPerSecond,
    tpotMs: r.summary.tpotMs,
    ttftMs: r.summary.ttftMs,
    prefillTps: r.summary.prefillTokensPerSecond,
    e2eMs: r.summary.e2eMs,
    bandwidthGBs: r.roofline?.bandwidthGBs,
    roofline: r.roofline?.fraction,
    matmulGflops: r.roofline?.matmulGflops,
    loadMs: r.load.totalMs,
    createdAt: r.createdAt,
    ...(r.cpu
      ? { cpu: { decodeTps: r.cpu.decodeTokS, decodeRatio: r.cpu.ratio.decode, threads: r.cpu.threads } }
      : {}),
    ...(r.speculative ? { speculative: speculativeText(r.speculative) } : {}),
    ...(r.llamaBench ? { llamaBench: true } : {}),
    ...(r.partial ? { partial: true } : {}),
    ...(r.interrupted ? { interrupted: r.interrupted.phase } : {}),
    ...(r.error ? { failed: r.error.code } : {}),
    ...(engine !== r.engine ? { labelled: true } : {}),
    engineName: r.engine,
    engineBase: engineBaseLabel(r),
    setup: setupParts(r),
  };
}

/** A plan's prompts in words: `short prompts` (a built-in set), `all prompts`, or `own prompts` and a hash. */
function promptsText(prompts: BenchResult['plan']['prompts']): string {
  const text = (ps: readonly { name: string; text: string }[]) =>
    JSON.stringify(ps.map((p) => [p.name, p.text]));
  const own = text(prompts);
  for (const [name, set] of Object.entries(PROMPT_SETS)) if (text(set) === own) return `${name} prompts`;
  if (text(Object.values(PROMPT_SETS).flat()) === own) return 'all prompts';
  return `own prompts ${fnv1a64(own).slice(0, 8)}`;
}

/** The KV cache type a result ran: `f16` (also when unrecorded), `q8_0`, or `K/V` where they differ. */
export function kvTypeText(m: Pick<BenchResult['model'], 'kvType' | 'kvTypeV'>): string {
  const k = m.kvType ?? 'f16';
  return m.kvTypeV && m.kvTypeV !== k ? `${k}/${m.kvTypeV}` : k;
}

/**
 * Where a result's plan and cache differ from the default plan (src/bench/default-plan.ts) in what changes
 * its figures: the prompt set, tokens per run, EOS ignored, sampling, the KV cache type (f16 by default).
 * Empty for a default plan; e.g. `16 tokens, kv f32, temperature 1.5`.
 */
export function setupText(r: Pick<BenchResult, 'plan' | 'model'>): string {
  return setupParts(r).join(', ');
}

/** {@link setupText}'s parts: `['16 tokens', 'kv f32', 'temperature 1.5']` (sampling is one part). */
export function setupParts(r: Pick<BenchResult, 'plan' | 'model'>): string[] {
  const p = r.plan;
  const parts: string[] = [];
  if (p.prompts.length > 0) {
    const set = promptsText(p.prompts);
    if (set !== `${DEFAULT_PLAN.promptSet} prompts`) parts.push(set);
  }
  if (p.maxTokens > 0 && p.maxTokens !== DEFAULT_PLAN.maxTokens) parts.push(`${p.maxTokens} tokens`);
  if (p.ignoreEos !== DEFAULT_PLAN.ignoreEos) parts.push('EOS ignored');
  const kv = kvTypeText(r.model);
  if (kv !== 'f16') parts.push(`kv ${kv}`);
  if (p.sampling?.temperature) parts.push(samplingText(p.sampling));
  return parts;
}

/**
 * The engine as comparisons name it: with `+ lookup` / `+ draft MODEL` for a drafting plan,
 * `, json_schema fnv1a64:…` for a constrained one and `· SETUP` ({@link setupText}) for a plan or cache
 * other than the default, so the leaderboard and tables (which group by engine) never rank such runs
 * against free, plain, default ones as if they were the same.
 */
export function engineLabel(
  r: Pick<BenchResult, 'engine' | 'plan' | 'constrained'> & Partial<Pick<BenchResult, 'model'>>,
): string {
  const setup = r.model ? setupText({ plan: r.plan, model: r.model }) : '';
  return `${engineBaseLabel(r)}${setup ? ` · ${setup}` : ''}`;
}

/** {@link engineLabel} without the setup: the engine with its drafting and constrained output. */
function engineBaseLabel(r: Pick<BenchResult, 'engine' | 'plan' | 'constrained'>): string {
  const d = r.plan.draft;
  const draft = d ? (d.type === 'lookup' ? ' + lookup' : ` + draft ${d.model ?? 'model'}`) : '';
  const c = r.constrained;
  return `${r.engine}${draft}${c ? `, ${c.kind} ${c.hash}` : ''}`;
}

/** A drafting result in one line: acceptance, tokens per target pass, speed-up, same output. */
export function speculativeText(s: NonNullable<BenchResult['speculative']>): string {
  const same = s.sameOutput === undefined ? '' : s.sameOutput ? ', same output' : ', OUTPUT DIFFERS';
  return `${fmtPct(s.acceptanceRate)} of ${s.drafted} accepted, ${fmtSig(s.tokensPerTargetPass)} tokens/pass, ${fmtSig(s.speedup)}× decode${same}`;
}

const med = (s: Summary | undefined) => fmtSig(s?.median);
const medStd = (s: Summary | undefined) => (s ? `${fmtSig(s.median)} ± ${fmtSig(s.std, 2)}` : '–');

/** Columns of the comparison table: header and cell (`common`: the setup stated once, {@link commonSetup}). */
const COLUMNS: { head: string; cell: (r: ReportRow, common: readonly string[]) => string }[] = [
  { head: 'Device', cell: (r) => r.device },
  { head: 'Engine', cell: (r, common) => shownEngine(r, common) },
  { head: 'Model', cell: (r) => withFacts(r.model, modelFacts(r)) },
  {
    head: 'Runs',
    cell: (r) =>
      r.partial
        ? `${r.runs} (partial: ${partialWhy(r)})`
        : r.llamaBench
          ? `${r.runs} (llama-bench tests)`
          : String(r.runs),
  },
  { head: 'Decode tok/s', cell: (r) => medStd(r.decodeTps) },
  { head: 'TPOT ms', cell: (r) => med(r.tpotMs) },
  { head: 'TTFT ms', cell: (r) => med(r.ttftMs) },
  { head: 'Prefill tok/s', cell: (r) => med(r.prefillTps) },
  { head: 'E2E ms', cell: (r) => med(r.e2eMs) },
  { head: 'Load ms', cell: (r) => fmtSig(r.loadMs) },
  { head: 'Bandwidth GB/s', cell: (r) => fmtSig(r.bandwidthGBs) },
  { head: 'Roofline', cell: (r) => fmtPct(r.roofline) },
  { head: 'Matmul GFLOP/s', cell: (r) => fmtSig(r.matmulGflops) },
  { head: 'Date', cell: (r) => r.createdAt.slice(0, 10) },
];

/**
 * A Markdown comparison (for a CI job summary): one row per result, medians (decode ± standard deviation),
 * sorted as given. Software adapters are marked. Every cell goes through {@link markdownText}: a result
 * file's device, engine, model or date cannot bring HTML, a link or a table break into the summary.
 */
export function markdownReport(rows: readonly ReportRow[]): string {
  // A setup every result shares is said once, under the heading, not in every Engine cell.
  const common = commonSetup(rows);
  // Drafting results get a column of their own (acceptance, tokens per pass, speed-up over no drafting).
  const columns = rows.some((r) => r.speculative)
    ? [
        ...COLUMNS.slice(0, -1),
        { head: 'Speculative', cell: (r: ReportRow) => r.speculative ?? '–' },
        COLUMNS[COLUMNS.length - 1],
      ]
    : COLUMNS;
  const lines = [
    '## WebGPU LLM benchmark',
    '',
    `${rows.length} result${rows.length === 1 ? '' : 's'}; medians over measured runs (decode: median ± std). Roofline: decode's share of the measured memory bandwidth.${common.length > 0 ? ` ${markdownText(commonSetupText(common))}` : ''}`,
    '',
    ...markdownTable(
      columns.map((c) => c.head),
      rows.map((r) => columns.map((c) => markdownText(c.cell(r, common)))),
      3,
    ),
  ];
  if (rows.some((r) => r.software))
    lines.push(
      '',
      '_(software) = a CPU-emulated WebGPU adapter: those figures measure the processor, not a GPU._',
    );
  return `${lines.join('\n')}\n`;
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** One bar of {@link svgBarChart}: a two-line label (title, detail), the value, an optional min–max whisker. */
export interface ChartBar {
  label: string;
  detail?: string;
  value?: number;
  min?: number;
  max?: number;
  color: string;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const pct = (f: number) => `${(Math.min(1, Math.max(0, f)) * 100).toFixed(2)}%`;

/** How {@link svgBarChart} scales its bars. */
export interface ChartScale {
  /**
   * The value drawn full width (e.g. 100 for a percentage, so 4% is a short bar); bars beyond it are cut at
   * full width with their value still printed. Default: the largest value or whisker end.
   */
  max?: number;
}

/**
 * A horizontal bar chart as inline SVG that fits any width without scaling its text: each entry is its label
 * (device; then model and engine, smaller), and under it the bar (the median) with a min–max whisker when
 * given and the value at the bar's end (inside a long bar). Horizontal positions are percentages of the
 * SVG's width (`width="100%"`, a fixed height in px), so a 366 px phone box and a 1100 px desktop one both
 * show every bar and value whole. Labels longer than a phone's line are cut with "…" and carry the full text
 * in a `<title>` tooltip. With `scale.max` (a share's 100) a grid at 0, 25, 50, 75 and 100 is drawn and
 * labelled. The title is not in the SVG: {@link chartFigure} puts it above, as HTML. Entries without a value
 * are left out.
 */
export function svgBarChart(
  title: string,
  unit: string,
  bars: readonly ChartBar[],
  scale: ChartScale = {},
): string {
  const shown = bars.filter((b) => b.value !== undefined && Number.isFinite(b.value));
  const rowH = 58;
  const axis = scale.max !== undefined ? 20 : 0;
  const H = Math.max(1, shown.length) * rowH + axis + 4;
  const maxV = scale.max ?? Math.max(1e-12, ...shown.map((b) => Math.max(b.value as number, b.max ?? 0)));
  const f = (v: number) => Math.max(0, v) / maxV;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="100%" height="${H}" role="img" aria-label="${esc(title)}">`,
  ];
  if (scale.max !== undefined && shown.length > 0) {
    const bottom = shown.length * rowH + 4;
    for (const t of [0, 0.25, 0.5, 0.75, 1]) {
      parts.push(
        `<line class="grid" x1="${pct(t)}" x2="${pct(t)}" y1="34" y2="${bottom}" stroke="#ddd" stroke-width="1"/>`,
      );
      const anchor = t === 0 ? 'start' : t === 1 ? 'end' : 'middle';
      parts.push(
        `<text class="tick" x="${pct(t)}" y="${bottom + 14}" font-size="11" text-anchor="${anchor}">${esc(fmtSig(t * maxV))}${esc(unit)}</text>`,
      );
    }
  }
  if (shown.length === 0) parts.push('<text x="0" y="20" font-size="13">no data</text>');
  shown.forEach((b, i) => {
    const y = i * rowH;
    const v = b.value as number;
    const full = `${b.label}${b.detail ? ` · ${b.detail}` : ''}: ${fmtSig(v)} ${unit}`;
    const value = `${esc(fmtSig(v))} ${esc(unit)}`;
    const whisker =
      b.min !== undefined && b.max !== undefined && Number.isFinite(b.min) && Number.isFinite(b.max);
    // The value goes after the bar (or its whisker) while that leaves room for it (a third of the width);
    // a longer bar holds it inside, from its start.
    const end = Math.min(1, f(whisker ? Math.max(v, b.max as number) : v));
    parts.push(`<g class="bar"><title>${esc(full)}</title>`);
    parts.push(`<text x="0" y="${y + 15}" font-size="13">${esc(clip(b.label, 46))}</text>`);
    if (b.detail)
      parts.push(`<text x="0" y="${y + 30}" font-size="11" opacity="0.75">${esc(clip(b.detail, 56))}</text>`);
    parts.push(`<rect x="0" y="${y + 36}" width="${pct(f(v))}" height="16" fill="${b.color}" rx="2"/>`);
    if (whisker)
      parts.push(
        `<line x1="${pct(f(b.min as number))}" x2="${pct(f(b.max as number))}" y1="${y + 44}" y2="${y + 44}" stroke="#111" stroke-width="1.5"/>`,
      );
    parts.push(
      end <= 0.66 || f(v) < 0.3
        ? `<text x="${pct(end <= 0.66 ? end : f(v))}" dx="6" y="${y + 49}" font-size="13">${value}</text>`
        : `<text class="in" x="0" dx="6" y="${y + 49}" font-size="13" font-weight="600" fill="#fff">${value}</text>`,
    );
    parts.push('</g>');
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** A chart with its title (and an optional note on the scale) as HTML above it. */
export function chartFigure(
  title: string,
  unit: string,
  bars: readonly ChartBar[],
  scale: ChartScale & { note?: string } = {},
): string {
  const note = scale.note ? ` <span class="sub">${esc(scale.note)}</span>` : '';
  return `<figure><figcaption>${esc(title)}${note}</figcaption>\n${svgBarChart(title, unit, bars, scale)}</figure>`;
}

/** An ISO time as `2026-12-02 05:26 UTC` (anything else as it is). */
const when = (iso: string) =>
  /^\d{4}-\d\d-\d\dT\d\d:\d\d.*Z$/.test(iso) ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : iso;

/**
 * A self-contained HTML page (no external resources, no script): the leaderboard (devices × models, then a
 * ranked table per model; src/bench/leaderboard.ts), every result in one table, and bar charts. Tables fit
 * 1100 px and scroll sideways inside their boxes where they cannot (a phone), their device column sticky;
 * charts take the box's width (see {@link svgBarChart}), so the page itself fits a phone's width.
 */
export function htmlReport(
  rows: readonly ReportRow[],
  opts: { title?: string; generatedAt?: string } = {},
): string {
  const title = opts.title ?? 'WebGPU LLM benchmark leaderboard';
  const colors = new Map<string, string>();
  for (const r of rows)
    if (!colors.has(r.fingerprint)) colors.set(r.fingerprint, PALETTE[colors.size % PALETTE.length]);
  const common = commonSetup(rows);
  const label = (r: ReportRow) => ({
    label: r.device,
    // A partial result's bars (fewer runs than planned) say so, as its row in "All results" does.
    detail: `${withFacts(r.model, modelFacts({ quantization: r.quantization }))} · ${shownEngine(r, common)}${r.partial ? ` · partial: ${partialWhy(r)}` : ''}`,
  });
  const bar = (r: ReportRow, s: Summary | undefined): ChartBar => ({
    ...label(r),
    value: s?.median,
    min: s?.min,
    max: s?.max,
    color: colors.get(r.fingerprint) as string,
  });
  const charts = [
    chartFigure(
      'Decode tokens/s (median; line: min–max)',
      'tok/s',
      rows.map((r) => bar(r, r.decodeTps)),
    ),
    chartFigure(
      'Time to first token, ms (median; line: min–max)',
      'ms',
      rows.map((r) => bar(r, r.ttftMs)),
    ),
    chartFigure(
      'Prefill tokens/s (median; line: min–max)',
      'tok/s',
      rows.map((r) => bar(r, r.prefillTps)),
    ),
    chartFigure(
      "Roofline: decode's share of measured memory bandwidth, %",
      '%',
      rows.map((r) => ({
        ...label(r),
        value: r.roofline === undefined ? undefined : r.roofline * 100,
        color: colors.get(r.fingerprint) as string,
      })),
      { max: 100, note: '(bars on a fixed 0–100% scale)' },
    ),
    chartFigure(
      'Measured memory bandwidth, GB/s',
      'GB/s',
      rows.map((r) => ({ ...label(r), value: r.bandwidthGBs, color: colors.get(r.fingerprint) as string })),
    ),
  ];
  const table = [
    '<div class="scroll" tabindex="0" role="region" aria-label="All results"><table class="all"><thead><tr>',
    ...COLUMNS.map((c) => `<th scope="col">${esc(c.head)}</th>`),
    '</tr></thead><tbody>',
    ...rows.map(
      (r) =>
        `<tr title="${esc(r.source)}">${COLUMNS.map((c, i) =>
          i === 0
            ? `<th scope="row">${esc(c.cell(r, common))}</th>`
            : `<td${i === 3 ? ' class="num runs"' : i > 3 ? ' class="num"' : i === 2 ? ' class="model"' : ''}>${esc(c.cell(r, common))}</td>`,
        ).join('')}</tr>`,
    ),
    '</tbody></table></div>',
  ].join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #111; background: #fff; }
  h1 { font-size: 1.5rem; }
  table { border-collapse: collapse; width: 100%; margin: 1rem 0 2rem; font-size: 13px; }
  th, td { border-bottom: 1px solid #ddd; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  th { background: #f4f4f5; }
  figure { margin: 0 0 1.5rem; }
  .note { color: #555; }
  svg text { fill: #111; font-family: system-ui, sans-serif; }
  table.all th, table.all td { padding: 0.3rem 0.35rem; }
  table.all td.model { min-width: 7.5rem; overflow-wrap: anywhere; }
  table.all td.runs { white-space: normal; }
  figcaption { font-weight: 600; font-size: 1rem; margin: 1.25rem 0 0.4rem; }
  svg.chart { display: block; }
  svg text.in { fill: #fff; } svg line.grid { stroke: #ddd; } svg text.tick { opacity: 0.7; }${LEADERBOARD_CSS}
  @media (prefers-color-scheme: dark) {
    body { background: #111; color: #eee; } th { background: #222; } th, td { border-color: #333; }
    svg text { fill: #eee; } svg line { stroke: #eee; } .note { color: #aaa; }
    svg text.in { fill: #fff; } svg line.grid { stroke: #333; }
  }
</style>
</head>
<body>
<h1>${esc(title)}</h1>
<p class="note">${rows.length} result file${rows.length === 1 ? '' : 's'}${opts.generatedAt ? `, generated ${esc(when(opts.generatedAt))}` : ''}. Medians over measured runs (warm-up runs excluded); TTFT, TPOT, ITL and tokens/s follow vLLM's <code>bench serve</code> definitions.${rows.some((r) => r.software) ? ' “(software)” marks a CPU-emulated WebGPU adapter: those figures measure the processor, not a GPU.' : ''}</p>
${leaderboardHtml(leaderboard(rows))}
<h2>All results</h2>
${common.length > 0 ? `<p class="note setup">${esc(commonSetupText(common))} The engines below name only what differs.</p>\n` : ''}${table}
<h2>Charts</h2>
${charts.join('\n')}
</body>
</html>
`;
}
