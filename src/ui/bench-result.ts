/**
 * The Results card of the benchmark tab (src/ui/bench-view.ts), built from a {@link BenchResult}: the
 * headline medians, the roofline reading, the table of measured runs, the summary over runs, the engine's
 * own figures beside ours (WebLLM's `usage.extra`, kept apart from what this page measures) and the export
 * and copy buttons. DOM only, from the result and the page's adapter; the view decides when to show it.
 */

import { resultsToCsv } from '../bench/csv.ts';
import { type AdapterSnapshot, isSoftwareAdapter } from '../bench/gpu-report.ts';
import { resultFileName, resultToJson, summaryText } from '../bench/result-io.ts';
import { SUMMARY_METRICS, type SummaryMetric } from '../bench/runner.ts';
import type { BenchResult } from '../bench/types.ts';
import { summarize } from '../core/metrics.ts';
import { h } from '../dom/h.ts';
import { fmtCount, fmtMs, fmtNum, fmtPct, fmtRate, fmtSig } from '../util/format.ts';
import { copyText, download } from './dom.ts';
import { rooflineSentences, softwareWarning } from './roofline-view.ts';

const METRIC_LABEL: Record<SummaryMetric, string> = {
  ttftMs: 'TTFT (ms)',
  tpotMs: 'TPOT (ms)',
  itlMs: 'ITL (ms)',
  e2eMs: 'E2E latency (ms)',
  prefillTokensPerSecond: 'Prefill (tok/s)',
  decodeTokensPerSecond: 'Decode (tok/s)',
};

/** Names of the engines a result can come from, for sentences. */
const ENGINE_NAME: Record<string, string> = {
  webgpu: 'our engine',
  webllm: 'WebLLM',
  remote: 'the server',
  wllama: 'llama.cpp wasm',
};

/**
 * Known keys of engines' own figures (WebLLM's `usage.extra`; a remote server's usage, llama-server's
 * `timings` and the chunks it streamed: bench/remote.ts `remoteRun`), with labels, the metric of ours they
 * match, and `count` for whole numbers.
 */
const ENGINE_FIGURES: Record<
  string,
  { label: string; ours?: SummaryMetric; scale?: number; count?: boolean }
> = {
  chunks: { label: 'Content chunks streamed', count: true },
  promptTokens: { label: 'Prompt tokens (usage)', count: true },
  completionTokens: { label: 'Output tokens (usage)', count: true },
  serverPrefillTokensPerSecond: { label: 'Prefill (tok/s)', ours: 'prefillTokensPerSecond' },
  serverDecodeTokensPerSecond: { label: 'Decode (tok/s)', ours: 'decodeTokensPerSecond' },
  prefill_tokens_per_s: { label: 'Prefill (tok/s)', ours: 'prefillTokensPerSecond' },
  decode_tokens_per_s: { label: 'Decode (tok/s)', ours: 'decodeTokensPerSecond' },
  time_to_first_token_s: { label: 'TTFT (ms)', ours: 'ttftMs', scale: 1000 },
  time_per_output_token_s: { label: 'TPOT (ms)', ours: 'tpotMs', scale: 1000 },
  e2e_latency_s: { label: 'E2E latency (ms)', ours: 'e2eMs', scale: 1000 },
  grammar_init_s: { label: 'Grammar init (ms)', scale: 1000 },
  grammar_per_token_s: { label: 'Grammar per token (ms)', scale: 1000 },
};

/** The engine's own figures over a result's runs: one row per key, its median, and our median beside it. */
export function engineFigureRows(
  r: Pick<BenchResult, 'runs' | 'summary'>,
): { key: string; label: string; median: number; ours?: number; count?: boolean }[] {
  const keys = [...new Set(r.runs.flatMap((run) => Object.keys(run.engineReported ?? {})))];
  return keys.flatMap((key) => {
    const values = r.runs
      .map((run) => run.engineReported?.[key])
      .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (!values.length) return [];
    const known = ENGINE_FIGURES[key];
    const median = summarize(values).median * (known?.scale ?? 1);
    const ours = known?.ours ? r.summary[known.ours]?.median : undefined;
    return [
      {
        key,
        label: known?.label ?? key,
        median,
        ...(ours !== undefined ? { ours } : {}),
        ...(known?.count ? { count: true } : {}),
      },
    ];
  });
}

/** The table of measured runs, one row per run. */
function runsTable(r: BenchResult): HTMLTableElement {
  const cell = (label: string, metric: string, value: string) =>
    h('td', { class: 'num', role: 'cell', 'data-metric': metric, 'data-label': label }, value);
  return h(
    'table',
    // Explicit roles: narrow screens restyle the rows as blocks, which drops implicit table semantics.
    { class: 'data data--runs', role: 'table', 'data-testid': 'runs-table' },
    h('caption', { class: 'visually-hidden' }, 'Measured runs'),
    h(
      'thead',
      { role: 'rowgroup' },
      h(
        'tr',
        { role: 'row' },
        [
          '#',
          'Prompt',
          'Prompt tokens',
          'Output tokens',
          'TTFT',
          'TPOT',
          'E2E',
          'Prefill tok/s',
          'Decode tok/s',
        ].map((c, i) => h('th', { scope: 'col', class: i >= 2 ? 'num' : undefined }, c)),
      ),
    ),
    h(
      'tbody',
      { role: 'rowgroup' },
      r.runs.map((run, i) =>
        h(
          'tr',
          { 'data-run': String(i), role: 'row' },
          h('td', { class: 'num data__index', role: 'cell' }, String(i + 1)),
          h(
            'td',
            { class: 'data__prompt', title: run.prompt, role: 'cell' },
            h('span', { class: 'data__name' }, run.promptName ?? ''),
            ' ',
            h(
              'span',
              { class: 'muted' },
              run.prompt.length > 60 ? `${run.prompt.slice(0, 60)}…` : run.prompt,
            ),
          ),
          // 0: a remote server that sent no usage (every prompt has at least one token).
          cell('Prompt tokens', 'promptTokens', run.promptTokens > 0 ? String(run.promptTokens) : '?'),
          cell('Output tokens', 'outputTokens', String(run.outputTokens)),
          cell('TTFT', 'ttftMs', fmtMs(run.ttftMs)),
          cell('TPOT', 'tpotMs', fmtMs(run.tpotMs)),
          cell('E2E', 'e2eMs', fmtMs(run.e2eMs)),
          cell('Prefill tok/s', 'prefillTokensPerSecond', fmtNum(run.prefillTokensPerSecond)),
          cell('Decode tok/s', 'decodeTokensPerSecond', fmtNum(run.decodeTokensPerSecond)),
        ),
      ),
    ),
  );
}

/** The summary over the measured runs: mean, median, p90, p99 and std of each metric. */
function summaryTable(s: BenchResult['summary']): HTMLTableElement {
  return h(
    'table',
    { class: 'data', 'data-testid': 'summary-table' },
    h('caption', { class: 'visually-hidden' }, 'Summary over measured runs'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Metric', 'Mean', 'Median', 'p90', 'p99', 'Std'].map((c, i) =>
          h('th', { scope: 'col', class: i ? 'num' : undefined }, c),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      SUMMARY_METRICS.filter((m) => s[m]).map((m) =>
        h(
          'tr',
          { 'data-summary': m },
          h('th', { scope: 'row' }, METRIC_LABEL[m]),
          (['mean', 'median', 'p90', 'p99', 'std'] as const).map((k) =>
            h('td', { class: 'num' }, fmtNum(s[m][k])),
          ),
        ),
      ),
    ),
  );
}

/** The engine's own figures beside this page's medians, or nothing when the engine reported none. */
function engineOwnFigures(r: BenchResult, engineName: string): HTMLElement | '' {
  const figures = engineFigureRows(r);
  return figures.length
    ? h(
        'div',
        { 'data-testid': 'engine-reported' },
        h('h3', {}, `${engineName[0].toUpperCase()}${engineName.slice(1)}’s own figures`),
        h(
          'p',
          { class: 'muted' },
          `Reported by ${engineName} itself, not measured by this page; medians over the measured runs, ` +
            'beside this page’s own medians.',
        ),
        h(
          'div',
          {
            class: 'table-wrap',
            role: 'region',
            'aria-label': `${engineName}'s own figures`,
            tabindex: '0',
          },
          h(
            'table',
            { class: 'data' },
            h('caption', { class: 'visually-hidden' }, `${engineName}'s own figures`),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, 'Figure'),
                h(
                  'th',
                  { scope: 'col', class: 'num' },
                  `${engineName[0].toUpperCase()}${engineName.slice(1)} says`,
                ),
                h('th', { scope: 'col', class: 'num' }, 'Measured here'),
              ),
            ),
            h(
              'tbody',
              {},
              figures.map((f) =>
                h(
                  'tr',
                  { 'data-engine-figure': f.key },
                  h('th', { scope: 'row' }, f.label),
                  h(
                    'td',
                    { class: 'num' },
                    f.count && Number.isInteger(f.median) ? fmtCount(f.median) : fmtNum(f.median),
                  ),
                  h('td', { class: 'num' }, f.ours === undefined ? '—' : fmtNum(f.ours)),
                ),
              ),
            ),
          ),
        ),
      )
    : '';
}

/** The Export JSON, Export CSV and Copy summary buttons, with the line that says whether the copy worked. */
function resultActions(r: BenchResult): HTMLElement {
  const exportJson = h('button', { type: 'button', class: 'button' }, 'Export JSON');
  exportJson.addEventListener('click', () =>
    download(resultFileName(r, 'json'), resultToJson(r), 'application/json'),
  );
  const exportCsv = h('button', { type: 'button', class: 'button' }, 'Export CSV');
  exportCsv.addEventListener('click', () =>
    download(resultFileName(r, 'csv'), resultsToCsv([r]), 'text/csv'),
  );
  const copy = h('button', { type: 'button', class: 'button' }, 'Copy summary');
  const copied = h('span', { class: 'status', role: 'status' });
  copy.addEventListener('click', async () => {
    try {
      await copyText(summaryText(r));
      copied.textContent = 'Copied.';
    } catch {
      copied.textContent = 'Copy failed: this page may not use the clipboard.';
    }
  });
  return h('div', { class: 'actions' }, exportJson, exportCsv, copy, copied);
}

/**
 * The children of the Results card for a result (the last run's, or one picked in the history); `partial`
 * for a run stopped early (not saved), `adapter` the page's adapter (a software one gets a warning).
 */
export function resultCardChildren(
  r: BenchResult,
  partial: boolean,
  adapter: AdapterSnapshot | undefined,
): (Node | string)[] {
  const s = r.summary;
  // A remote run's rates are the server's, whatever adapter this page has.
  const software =
    r.engine !== 'remote' && (r.device.isFallbackAdapter || (adapter ? isSoftwareAdapter(adapter) : false));
  const headline = (label: string, value: string, f: string) =>
    h(
      'div',
      { class: 'stat' },
      h('dt', { class: 'stat__label' }, label),
      h('dd', { class: 'stat__value', 'data-field': f }, value),
    );
  const roofline = rooflineSentences(r.roofline, s.prefillTokensPerSecond?.median);
  const engineName = ENGINE_NAME[r.engine] ?? r.engine;
  return [
    h(
      'h2',
      { id: 'results-heading', class: 'card__title' },
      // Said in the title for a remote run: the card showed the last local run under "Live: Remote · Done".
      `${partial ? 'Results (stopped early, not saved)' : 'Results'}${r.engine === 'remote' ? ` · remote server ${r.endpoint?.host ?? ''}`.trimEnd() : ''}`,
    ),
    h(
      'p',
      { class: 'card__lede' },
      `${r.model.id}${r.model.synthetic ? ' (random weights: speed is real, text is noise)' : ''}` +
        `${r.engine === 'webgpu' ? '' : ` in ${engineName}`} on ` +
        // wllama's result carries the page's adapter as its device (History per device), but ran on the CPU.
        `${r.engine === 'wllama' ? 'this computer’s CPU' : (r.device.label ?? r.device.description)} · ${r.runs.length} measured run${r.runs.length === 1 ? '' : 's'}, ` +
        `${r.plan.maxTokens} max tokens, ${r.plan.sampling?.temperature ? `temperature ${r.plan.sampling.temperature}` : 'greedy'}` +
        `${r.plan.ignoreEos ? ', EOS ignored' : ''}` +
        // Said here too: a drafted run stopped early has no drafting block below (no baseline to compare).
        `${r.plan.draft ? `, drafting by ${r.plan.draft.type === 'lookup' ? 'prompt lookup' : `draft model ${r.plan.draft.model ?? ''}`.trimEnd()}` : ''}` +
        `${r.constrained ? `, constrained (${r.constrained.kind})` : ''}.`,
    ),
    software && adapter
      ? h(
          'p',
          { class: 'notice notice--warn', 'data-testid': 'result-software' },
          h('strong', {}, `${softwareWarning(adapter)}.`),
          ' These rates are your processor’s.',
        )
      : '',
    h(
      'dl',
      { class: 'stats' },
      headline('Decode', fmtRate(s.decodeTokensPerSecond?.median), 'decode'),
      headline('Prefill', fmtRate(s.prefillTokensPerSecond?.median), 'prefill'),
      headline('Time to first token', fmtMs(s.ttftMs?.median), 'ttft'),
      headline('Time per output token', fmtMs(s.tpotMs?.median), 'tpot'),
    ),
    h('p', { class: 'stats__note muted' }, 'Medians over the measured runs; warm-up runs are not counted.'),
    speculativeBlock(r),
    roofline.length
      ? h(
          'div',
          { class: 'roofline', 'data-testid': 'roofline-sentence' },
          roofline.map((t) => h('p', {}, t)),
        )
      : h(
          'p',
          { class: 'muted', 'data-testid': 'roofline-sentence' },
          r.engine === 'webgpu'
            ? 'Press “Measure GPU” (in “What your GPU allows”) to see how close decode comes to what its memory allows.'
            : `No roofline: it needs the bytes read per token, which only our engine’s kernels tell; ${engineName}’s are not known.`,
        ),
    h('h3', {}, 'Runs'),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Measured runs', tabindex: '0' },
      runsTable(r),
    ),
    h('h3', {}, 'Summary'),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Summary over runs', tabindex: '0' },
      summaryTable(s),
    ),
    engineOwnFigures(r, engineName),
    resultActions(r),
  ];
}

/**
 * A drafting result's figures (acceptance rate, tokens per target pass, the speed-up over the same runs
 * without drafting, whether the output was the same) and a constrained result's mark; '' for neither.
 */
function speculativeBlock(r: BenchResult): Node | string {
  const sp = r.speculative;
  const c = r.constrained;
  if (!sp && !c) return '';
  const lines: string[] = [];
  if (sp)
    lines.push(
      `Speculative decoding (${sp.draft === 'lookup' ? 'prompt lookup' : `draft model ${sp.draft}`}): ` +
        `${fmtPct(sp.acceptanceRate)} of ${sp.drafted} drafted tokens accepted, ` +
        `${fmtSig(sp.tokensPerTargetPass)} tokens per target pass; decode ${fmtSig(sp.speedup)}× ` +
        `the same runs without drafting (${fmtRate(sp.baseline.decodeTokensPerSecond)}` +
        `${sp.speedup < 1 ? ': slower with drafting' : ''})` +
        `${sp.sameOutput === undefined ? '.' : sp.sameOutput ? ', same output.' : ' — the output differs from the runs without drafting.'}`,
    );
  if (c)
    lines.push(`Constrained output: ${c.kind} ${c.hash}; compare only with runs under the same constraint.`);
  return h(
    'div',
    { class: 'notice notice--info', 'data-testid': 'result-speculative' },
    lines.map((t) => h('p', {}, t)),
  );
}
