/**
 * "Remote endpoint" in "Choose a model": an OpenAI-compatible server (vLLM, llama-server, Ollama, a hosted
 * API) benchmarked with the page's plan (src/bench/remote.ts), shown beside the last local result of the
 * same prompts with a plain sentence saying which is faster and by how much, and a concurrency sweep
 * (throughput against latency, as `vllm bench serve`).
 *
 * The API key lives in this object's memory; it goes to `sessionStorage` only while "Remember for this
 * session" is ticked, and never into a result, the URL, the history or a log.
 */

import {
  compareParts,
  parseConcurrency,
  RemoteBenchError,
  runRemoteBench,
  sideFigures,
} from '../bench/remote.ts';
import { resultFileName, resultToJson } from '../bench/result-io.ts';
import type { BenchPlan, BenchResult, BenchRun, BenchSweepPoint } from '../bench/types.ts';
import { isEngineError } from '../core/errors.ts';
import { h } from '../dom/h.ts';
import { type RemoteApi, RemoteEngine } from '../remote/engine.ts';
import { fmtMs, fmtNum, fmtRate, niceStep } from '../util/format.ts';
import { download, field } from './dom.ts';
import type { Session } from './session.ts';

const KEY_STORAGE = 'webgpu-llm-bench:remote-api-key';
const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Output-token throughput (x) against median E2E latency (y), one point per concurrency level. */
export function sweepChart(points: readonly BenchSweepPoint[]): SVGSVGElement {
  const W = 480;
  const H = 260;
  const m = { l: 56, r: 16, t: 16, b: 44 };
  const xs = points.map((p) => p.outputTokenThroughput);
  const ys = points.map((p) => p.summary.e2eMs?.median ?? 0);
  // Four grid steps of a round size past the data (0, 100, 200…, not 0.00, 75.3, 151…).
  const xStep = niceStep((Math.max(1, ...xs) * 1.1) / 4);
  const yStep = niceStep((Math.max(1, ...ys) * 1.15) / 4);
  const xMax = 4 * xStep;
  const yMax = 4 * yStep;
  const X = (v: number) => m.l + (v / xMax) * (W - m.l - m.r);
  const Y = (v: number) => H - m.b - (v / yMax) * (H - m.t - m.b);
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    class: 'sweep-chart',
    role: 'img',
    'aria-label': `Throughput against latency: ${points.map((p) => `${p.concurrency} at once, ${fmtNum(p.outputTokenThroughput)} tokens/s, ${fmtNum(ys[points.indexOf(p)])} ms`).join('; ')}`,
  });
  for (let i = 0; i <= 4; i++) {
    const yv = yStep * i;
    const xv = xStep * i;
    root.append(
      svg('line', { x1: m.l, x2: W - m.r, y1: Y(yv), y2: Y(yv), class: 'sweep-chart__grid' }),
      svg(
        'text',
        { x: m.l - 6, y: Y(yv) + 4, 'text-anchor': 'end', class: 'sweep-chart__tick' },
        yv === 0 ? '0' : fmtNum(yv),
      ),
      svg(
        'text',
        { x: X(xv), y: H - m.b + 16, 'text-anchor': 'middle', class: 'sweep-chart__tick' },
        xv === 0 ? '0' : fmtNum(xv),
      ),
    );
  }
  root.append(
    svg(
      'text',
      { x: (W + m.l) / 2, y: H - 6, 'text-anchor': 'middle', class: 'sweep-chart__axis' },
      'output tokens/s (all requests)',
    ),
    svg(
      'text',
      {
        x: 12,
        y: (H - m.b) / 2,
        transform: `rotate(-90 12 ${(H - m.b) / 2})`,
        'text-anchor': 'middle',
        class: 'sweep-chart__axis',
      },
      'median E2E latency, ms',
    ),
    svg('polyline', {
      points: xs.map((x, i) => `${X(x)},${Y(ys[i])}`).join(' '),
      class: 'sweep-chart__line',
    }),
  );
  points.forEach((p, i) => {
    root.append(
      svg('circle', { cx: X(xs[i]), cy: Y(ys[i]), r: 4, class: 'sweep-chart__dot' }),
      svg('text', { x: X(xs[i]) + 7, y: Y(ys[i]) - 7, class: 'sweep-chart__label' }, `N=${p.concurrency}`),
    );
  });
  return root;
}

/**
 * The concurrency sweep of a remote result: its chart and a table with a column per concurrency level and
 * a row per figure (a row per level needed 8 columns: 582 px in a 494 px pane, E2E p99 scrolled out).
 */
function sweepSection(sweep: readonly BenchSweepPoint[]): HTMLElement {
  const rows: [string, (p: BenchSweepPoint) => string][] = [
    ['Completed', (p) => `${p.completed}/${p.requests}`],
    ['Requests/s', (p) => fmtNum(p.requestThroughput)],
    ['Output tok/s', (p) => fmtNum(p.outputTokenThroughput)],
    ['TTFT p50', (p) => fmtMs(p.summary.ttftMs?.median)],
    ['TTFT p99', (p) => fmtMs(p.summary.ttftMs?.p99)],
    ['E2E p50', (p) => fmtMs(p.summary.e2eMs?.median)],
    ['E2E p99', (p) => fmtMs(p.summary.e2eMs?.p99)],
  ];
  return h(
    'div',
    { class: 'remote__sweep', 'data-testid': 'remote-sweep' },
    h('h3', {}, 'Concurrency sweep'),
    sweepChart(sweep),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Concurrency sweep', tabindex: '0' },
      h(
        'table',
        { class: 'data' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'At once'),
            ...sweep.map((p) => h('th', { scope: 'col' }, String(p.concurrency))),
          ),
        ),
        h(
          'tbody',
          {},
          rows.map(([label, get]) =>
            h('tr', {}, h('th', { scope: 'row' }, label), ...sweep.map((p) => h('td', {}, get(p)))),
          ),
        ),
      ),
    ),
  );
}

/** The Live card's hooks for a remote run (src/ui/bench-view.ts: remoteLive()). */
export interface RemoteLive {
  runStart(label: string, promptText: string): void;
  token(text: string): void;
  runDone(run: BenchRun): void;
}

export class RemoteView {
  readonly element: HTMLElement;
  private readonly url: HTMLInputElement;
  private readonly model: HTMLSelectElement;
  private readonly api: HTMLSelectElement;
  private readonly key: HTMLInputElement;
  private readonly remember: HTMLInputElement;
  private readonly concurrency: HTMLInputElement;
  private readonly listButton: HTMLButtonElement;
  private readonly cancelListButton: HTMLButtonElement;
  private readonly runButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  /**
   * Called with each progress line of a remote run (the page's Live card shows it: it said "Not started."
   * while a remote run went on below the fold).
   */
  onStatus: ((text: string) => void) | undefined;
  private readonly error: HTMLElement;
  private readonly results: HTMLElement;
  private controller: AbortController | undefined;
  /** The model listing in flight ("Cancel listing" shows meanwhile). */
  private listing: AbortController | undefined;
  /**
   * The URL and key the model list was fetched with: an edit of either clears the list (it named server A's
   * models, and Run sent A's model name to server B).
   */
  private listedFor: string | undefined;
  private lastRemote: BenchResult | undefined;
  private warnings: string[] = [];

  /** Called with each finished remote result (the app stores it in the history). */
  onResult: ((r: BenchResult) => Promise<unknown>) | undefined;
  /** Called with the runs a failed or stopped remote run kept (the app shows them, marked, in Results). */
  onPartial: ((r: BenchResult) => void) | undefined;
  /**
   * The Live card's streamed text and token timeline, fed by a remote run as by a local one (the remote
   * run sent its tokens nowhere: the card stayed empty while they arrived).
   */
  live: RemoteLive | undefined;

  constructor(
    private readonly session: Session,
    private readonly plan: () => BenchPlan,
  ) {
    this.url = h('input', {
      type: 'url',
      id: 'remote-url',
      class: 'input',
      placeholder: 'http://localhost:8000',
      autocomplete: 'url',
      spellcheck: 'false',
    });
    this.model = h(
      'select',
      { id: 'remote-model', class: 'input' },
      h('option', { value: '' }, 'list the models first'),
    );
    this.api = h(
      'select',
      { id: 'remote-api', class: 'input' },
      h('option', { value: 'chat' }, 'Chat completions'),
      h('option', { value: 'completions' }, 'Completions'),
    );
    this.key = h('input', {
      type: 'password',
      id: 'remote-key',
      class: 'input',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'optional',
    });
    this.remember = h('input', { type: 'checkbox', id: 'remote-remember', class: 'switch', role: 'switch' });
    let stored: string | null = null;
    try {
      stored = sessionStorage.getItem(KEY_STORAGE);
    } catch {
      stored = null;
    }
    if (stored) {
      this.key.value = stored;
      this.remember.checked = true;
    }
    const syncStorage = () => {
      try {
        if (this.remember.checked && this.key.value) sessionStorage.setItem(KEY_STORAGE, this.key.value);
        else sessionStorage.removeItem(KEY_STORAGE);
      } catch {
        // storage blocked: the key stays in memory only
      }
    };
    this.remember.addEventListener('change', syncStorage);
    this.key.addEventListener('input', syncStorage);
    this.key.addEventListener('input', () => this.forgetModels());
    this.concurrency = h('input', {
      type: 'text',
      id: 'remote-concurrency',
      class: 'input',
      value: '1,4',
      inputmode: 'numeric',
    });

    this.listButton = h('button', { type: 'button', class: 'button' }, 'List models');
    this.listButton.addEventListener('click', () => void this.listModels());
    // A server that takes the connection and never answers held "Listing models…" for a minute with no
    // way out. (A separate button: blurring the URL field lists on `change`, so a List button that turned
    // into Cancel was cancelled by the very click that blurred the field.)
    this.cancelListButton = h('button', { type: 'button', class: 'button' }, 'Cancel listing');
    this.cancelListButton.hidden = true;
    this.cancelListButton.addEventListener('click', () => this.listing?.abort());
    this.url.addEventListener('input', () => this.forgetModels());
    this.url.addEventListener('change', () => {
      if (this.listedFor !== this.listKey()) void this.listModels();
    });
    this.model.addEventListener('change', () => this.refresh());
    this.runButton = h('button', { type: 'button', class: 'button button--primary' }, 'Run remote benchmark');
    this.runButton.addEventListener('click', () => void this.run());
    this.stopButton = h('button', { type: 'button', class: 'button' }, 'Stop');
    this.stopButton.hidden = true;
    this.stopButton.addEventListener('click', () => this.controller?.abort());

    this.status = h('p', {
      class: 'status',
      role: 'status',
      'aria-live': 'polite',
      'data-testid': 'remote-status',
    });
    this.error = h('div', { class: 'notice notice--warn', role: 'alert', 'data-testid': 'remote-error' });
    this.error.hidden = true;
    this.results = h('div', { class: 'remote-results', 'data-testid': 'remote-results' });

    this.element = h(
      'div',
      { class: 'remote' },
      field('Server URL', this.url, 'vLLM, llama-server, Ollama or any OpenAI-compatible API.'),
      h('div', { class: 'actions' }, this.listButton, this.cancelListButton),
      h('div', { class: 'pane__row' }, field('Server model', this.model), field('Endpoint', this.api)),
      h(
        'div',
        { class: 'pane__row' },
        field('API key', this.key, 'Kept in this tab’s memory; never in results or exports.'),
        field(
          'Concurrency sweep',
          this.concurrency,
          'Requests at once, e.g. 1,4 (empty: none). A browser opens at most 6 connections per server.',
        ),
      ),
      field('Remember the key for this session', this.remember, undefined, { inline: true }),
      h(
        'p',
        { class: 'field__hint' },
        'Runs the “Benchmark plan” card’s prompts against the server. The server must allow this page’s origin (CORS); for vLLM: ',
        h('code', {}, `--allowed-origins '["${location.origin}"]'`),
        '.',
      ),
      h('div', { class: 'actions' }, this.runButton, this.stopButton),
      this.status,
      this.error,
      this.results,
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  private refresh(): void {
    const busy = this.session.task !== undefined;
    // Run needs a model listed at the URL now in the field (a typed model is not offered), and no listing
    // in flight.
    this.runButton.disabled = busy || this.listing !== undefined || !this.model.value;
    this.listButton.disabled = busy || this.listing !== undefined;
    this.cancelListButton.hidden = this.listing === undefined;
    this.stopButton.hidden = this.controller === undefined;
    if (this.lastRemote) this.showResults(this.lastRemote);
  }

  private engine(): RemoteEngine {
    return new RemoteEngine({
      baseUrl: this.url.value.trim(),
      model: this.model.value || undefined,
      api: this.api.value as RemoteApi,
      apiKey: this.key.value || undefined,
    });
  }

  /** A remote run's progress line, here and in the Live card ({@link onStatus}). */
  private say(text: string): void {
    this.status.textContent = text;
    this.onStatus?.(text);
  }

  private showError(e: unknown, what: string, text?: string): void {
    const code = isEngineError(e) ? e.code : undefined;
    this.error.replaceChildren(
      h('strong', {}, `${what}${code ? ` (${code})` : ''}: `),
      text ?? (e instanceof Error ? e.message : String(e)),
    );
    this.error.hidden = false;
  }

  /** Where the model list comes from: the URL and key now in the fields. */
  private listKey(): string {
    return JSON.stringify([this.url.value.trim(), this.key.value]);
  }

  /** Empties the model list (and stops a listing in flight): Run waits for a new listing. */
  private clearModels(): void {
    this.listing?.abort();
    this.listing = undefined; // its answer is dropped, and says nothing
    this.listedFor = undefined;
    this.model.replaceChildren(h('option', { value: '' }, 'list the models first'));
    this.refresh();
  }

  /** An edit of the URL or key: the list named another server's models (or was fetched with another key). */
  private forgetModels(): void {
    if (this.listing || (this.listedFor !== undefined && this.listedFor !== this.listKey())) {
      this.clearModels();
      this.status.textContent = 'Server changed: list its models.';
    }
  }

  /**
   * Fills the model list from `/v1/models`; while it waits, "Cancel listing" shows and Run and List are
   * off. A failed or cancelled listing leaves the list empty (not the last server's models).
   */
  async listModels(): Promise<void> {
    if (!this.url.value.trim()) return;
    this.listing?.abort();
    const keep = this.model.value;
    this.clearModels();
    const ctl = new AbortController();
    this.listing = ctl;
    const key = this.listKey();
    this.error.hidden = true;
    this.status.textContent = 'Listing models…';
    this.refresh();
    try {
      const models = await this.engine().listModels(ctl.signal);
      if (ctl.signal.aborted) return;
      this.model.replaceChildren(...models.map((m) => h('option', { value: m }, m)));
      if (models.includes(keep)) this.model.value = keep;
      this.listedFor = key;
      this.status.textContent = `${models.length} model${models.length === 1 ? '' : 's'} on the server.`;
    } catch (e) {
      if (this.listing !== ctl) return; // replaced by a newer listing or an edit: that one speaks
      if (isEngineError(e, 'aborted')) {
        this.status.textContent = 'Listing cancelled.';
        return;
      }
      this.status.textContent = 'Could not list the models.';
      this.showError(e, 'Listing failed', listingHint(e));
    } finally {
      if (this.listing === ctl) this.listing = undefined;
      this.refresh();
    }
  }

  async run(): Promise<void> {
    let plan: BenchPlan;
    let concurrency: number[];
    let engine: RemoteEngine;
    this.error.hidden = true;
    try {
      plan = this.plan();
      concurrency = this.concurrency.value.trim() ? parseConcurrency(this.concurrency.value) : [];
      if (!this.model.value) await this.listModels();
      engine = this.engine();
    } catch (e) {
      this.showError(e, 'Cannot start');
      return;
    }
    if (!this.session.begin('bench')) return;
    this.controller = new AbortController();
    this.refresh();
    this.element.dataset.state = 'running';
    this.say('Starting…');
    this.warnings = [];
    try {
      const result = await runRemoteBench({
        engine,
        plan,
        concurrency,
        signal: this.controller.signal,
        onToken: (text) => this.live?.token(text),
        onEvent: (e) => {
          if (e.type === 'run-start') {
            this.say(`${e.warmup ? 'Warm-up' : 'Run'} ${e.index + 1} of ${e.total} · ${e.promptName}`);
            this.live?.runStart(
              `${e.warmup ? 'warm-up' : 'run'} ${e.index + 1} of ${e.total}`,
              plan.prompts.find((p) => p.name === e.promptName)?.text ?? '',
            );
          } else if (e.type === 'run-done') this.live?.runDone(e.run);
          else if (e.type === 'sweep-start') this.say(`Sweep: ${e.concurrency} requests at once…`);
          else if (e.type === 'warning') this.warnings.push(e.message);
        },
      });
      this.lastRemote = result;
      // Kept in History with the page's own runs (it was not saved at all).
      void this.onResult?.(result);
      this.say(
        `Done: ${result.runs.length} measured run${result.runs.length === 1 ? '' : 's'} on ${engine.host}${result.sweep ? `, sweep ${result.sweep.map((p) => p.concurrency).join(', ')}` : ''}.`,
      );
      this.showResults(result);
    } catch (e) {
      if (e instanceof RemoteBenchError && e.result.runs.length) {
        this.lastRemote = e.result;
        this.showResults(e.result);
        this.onPartial?.(e.result);
      }
      this.say(isEngineError(e, 'aborted') ? 'Stopped.' : 'The remote benchmark failed.');
      if (!isEngineError(e, 'aborted'))
        this.showError(
          e,
          'Remote benchmark failed',
          isEngineError(e, 'timeout')
            ? `${timeoutText(e.message)}. The page waits no longer than this: check that the server is not overloaded or still loading its model, or run the command line (npm run bench -- --engine remote) with a longer timeout.`
            : undefined,
        );
    } finally {
      this.controller = undefined;
      this.element.dataset.state = 'idle';
      this.session.end('bench');
    }
  }

  private showResults(remote: BenchResult): void {
    const local =
      this.session.lastResult && this.session.lastResult.engine !== 'remote'
        ? this.session.lastResult
        : undefined;
    const host = remote.endpoint?.host ?? 'remote';
    const remoteLabel = `Remote (${host})`;
    const localLabel = 'This GPU';
    const samePrompts =
      local !== undefined &&
      JSON.stringify(local.plan.prompts.map((p) => p.text)) ===
        JSON.stringify(remote.plan.prompts.map((p) => p.text));
    const rows: [string, string, (r: BenchResult) => string][] = [
      ['Model', 'model', (r) => r.model.id],
      ['TTFT', 'ttft', (r) => fmtMs(r.summary.ttftMs?.median)],
      ['TPOT', 'tpot', (r) => fmtMs(r.summary.tpotMs?.median)],
      ['Decode', 'decode', (r) => fmtRate(r.summary.decodeTokensPerSecond?.median)],
      ['E2E', 'e2e', (r) => fmtMs(r.summary.e2eMs?.median)],
      [
        'Output tokens',
        'tokens',
        (r) => r.runs.map((x) => `${x.outputTokens}${x.approximate ? '≈' : ''}`).join(', '),
      ],
    ];
    const table = h(
      'table',
      { class: 'data', 'data-testid': 'remote-compare-table' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'Median'),
          local ? h('th', { scope: 'col' }, localLabel) : null,
          h('th', { scope: 'col' }, 'Remote', h('br'), h('small', {}, host)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map(([label, key, get]) =>
          h(
            'tr',
            { 'data-row': key },
            h('th', { scope: 'row' }, label),
            local ? h('td', {}, get(local)) : null,
            h('td', {}, get(remote)),
          ),
        ),
      ),
    );
    // Two models are two setups, not this GPU against the server on the same work: said above the
    // verdict (it compared stories260K here with test-model there without a word), and the verdict words
    // them as setups rather than "faster for you".
    const sameModel = local !== undefined && sameModelId(local.model.id, remote.model.id);
    const parts = local
      ? compareParts(sideFigures(local, localLabel), sideFigures(remote, remoteLabel), { sameModel })
      : [];
    const sentence = h(
      'p',
      { class: 'remote__verdict', 'data-testid': 'remote-compare' },
      local
        ? [
            h('strong', {}, parts[0] ?? 'Not enough measurements to compare.'),
            parts.length > 1 ? ` ${parts.slice(1).join(' ')}` : '',
            samePrompts
              ? ''
              : ' (The two runs used different prompts: run both with the same plan for a fair comparison.)',
          ]
        : 'Run the benchmark on a local model too (same plan) to see this GPU beside the server.',
    );
    const notes: HTMLElement[] = [];
    if (local && !sameModel)
      notes.push(
        h(
          'p',
          { class: 'notice notice--warn', 'data-testid': 'remote-model-warning' },
          h('strong', {}, 'Different models: '),
          `this GPU ran ${local.model.id}, the server ran ${remote.model.id}. The figures compare the two setups, not the two machines on the same model: load the server's model here (or serve this one) for that.`,
        ),
      );
    if (remote.partial)
      notes.push(
        h(
          'p',
          { class: 'notice notice--warn' },
          remote.error
            ? `Partial: a request failed part-way (${remote.error.code}); what arrived before is kept and marked.`
            : 'Partial: stopped before the plan was done; what was measured is kept.',
        ),
      );
    for (const w of this.warnings) notes.push(h('p', { class: 'field__hint' }, `Note: ${w}.`));
    if (remote.runs.some((r) => r.approximate))
      notes.push(
        h(
          'p',
          { class: 'field__hint' },
          '≈ the server sent no token usage: tokens counted as chunks (approximate).',
        ),
      );
    const sweep = remote.sweep?.length ? sweepSection(remote.sweep) : null;
    const save = h('button', { type: 'button', class: 'button' }, 'Download JSON');
    save.addEventListener('click', () =>
      download(`remote-${resultFileName(remote, 'json')}`, resultToJson(remote), 'application/json'),
    );
    const warning = notes.find((n) => n.dataset.testid === 'remote-model-warning');
    this.results.replaceChildren(
      h('h3', {}, local ? 'This GPU beside the server' : 'Remote results'),
      warning ?? '',
      sentence,
      h(
        'div',
        { class: 'table-wrap', role: 'region', 'aria-label': 'Local and remote', tabindex: '0' },
        table,
      ),
      ...notes.filter((n) => n !== warning),
      sweep ?? '',
      h('div', { class: 'actions' }, save),
    );
  }
}

/**
 * A listing's failure as the page words it, or undefined to show the engine's message. A timeout's message
 * ends "raise firstTokenTimeoutMs to wait longer", an option of the JS API the page has no control for:
 * the page says what its user can do instead.
 */
export function listingHint(e: unknown): string | undefined {
  if (!isEngineError(e, 'timeout')) return undefined;
  const m = /^(.*) did not answer within ([\d.]+) s\b/.exec(e.message);
  const what = m ? `${m[1]} took the connection but sent no answer within ${m[2]} s` : timeoutText(e.message);
  return `${what}. Check that the URL is the server's (an OpenAI-compatible API answers GET /v1/models) and that the server is not stuck or still loading its model, then list again.`;
}

/** A run's timeout message without the API's "raise OPTION to wait longer" (the page has no such field). */
export function timeoutText(message: string): string {
  return message.replace(/:? raise \S+ to wait longer\.?$/, '');
}

/**
 * Whether a local model id and a server's model name name the same model: equal once the folder, a
 * `.gguf` extension and case are set aside (`stories260K.gguf` and `stories260k`; a server's
 * `org/Model-Q4_K_M.gguf` and a local `Model-Q4_K_M.gguf`).
 */
export function sameModelId(a: string, b: string): boolean {
  const norm = (s: string) =>
    s
      .split('/')
      .pop()!
      .replace(/\.gguf$/i, '')
      .toLowerCase();
  return norm(a) === norm(b);
}
