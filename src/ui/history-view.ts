/**
 * The history tab: results saved in this browser (src/bench/history.ts), this device's by default; delete,
 * export and import JSON and CSV, copy a shareable summary, and a chart comparing decode speed per model ×
 * device across everything stored.
 */

import { fmtRatio } from '../bench/cpu-compare.ts';
import { csvToResults, resultsToCsv } from '../bench/csv.ts';
import { compareByModelAndDevice, type History, type HistoryEntry } from '../bench/history.ts';
import { engineLabel } from '../bench/report.ts';
import { parseResultsJson, resultFileName, resultToJson, summaryText } from '../bench/result-io.ts';
import type { BenchResult } from '../bench/types.ts';
import { h } from '../dom/h.ts';
import { fmtMs, fmtRate } from '../util/format.ts';
import { barList } from './charts.ts';
import { copyText, download, field } from './dom.ts';
import type { Session } from './session.ts';

const ALL = '*';

export class HistoryView {
  readonly element: HTMLElement;
  private readonly deviceSelect: HTMLSelectElement;
  private readonly list: HTMLElement;
  private readonly compare: HTMLElement;
  private readonly status: HTMLElement;
  private readonly importInput: HTMLInputElement;
  private readonly exportJson: HTMLButtonElement;
  private readonly exportCsv: HTMLButtonElement;
  private entries: HistoryEntry[] = [];
  /** Results in the store on every device (the empty list says where they are). */
  private totalCount = 0;
  private userChose = false;
  private store: History | undefined;
  private storeError: string | undefined;

  /** Asked to show a stored result in the Benchmark tab. */
  onShow: ((r: BenchResult) => void) | undefined;

  constructor(
    private readonly session: Session,
    private readonly open: () => Promise<History>,
  ) {
    this.deviceSelect = h('select', { id: 'history-device', class: 'input' });
    this.deviceSelect.addEventListener('change', () => {
      this.userChose = true;
      void this.reload();
    });
    this.importInput = h('input', {
      type: 'file',
      id: 'history-import',
      accept: '.json,.csv,application/json,text/csv',
      class: 'visually-hidden',
      multiple: '',
    });
    this.importInput.addEventListener('change', () => void this.importFiles());
    this.exportJson = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.exportShown('json') },
      'Export JSON',
    );
    this.exportCsv = h('button', { type: 'button', class: 'button' }, 'Export CSV');
    this.exportCsv.addEventListener('click', () => this.exportShown('csv'));
    this.status = h('p', {
      class: 'status',
      role: 'status',
      'aria-live': 'polite',
      'data-testid': 'history-status',
    });
    this.list = h('ol', { class: 'entries', 'aria-label': 'Saved results', 'data-testid': 'history-list' });
    this.compare = h('div', { class: 'compare' });

    this.element = h(
      'div',
      { class: 'grid' },
      h(
        'section',
        { class: 'card card--wide', 'aria-labelledby': 'history-list-heading' },
        h('h2', { id: 'history-list-heading', class: 'card__title' }, 'Saved results'),
        h(
          'div',
          { class: 'toolbar' },
          field('Show', this.deviceSelect),
          h(
            'div',
            { class: 'actions' },
            h('label', { for: 'history-import', class: 'button' }, 'Import JSON or CSV'),
            this.importInput,
            this.exportJson,
            this.exportCsv,
          ),
        ),
        this.status,
        this.list,
      ),
      h(
        'section',
        { class: 'card card--wide', 'aria-labelledby': 'compare-heading', 'data-card': 'compare' },
        h('h2', { id: 'compare-heading', class: 'card__title' }, 'Decode speed by model and device'),
        h(
          'p',
          { class: 'card__lede' },
          'Every result stored in this browser, all devices: the median over results of each result’s median decode rate.',
        ),
        this.compare,
      ),
    );
    session.addEventListener('change', () => this.syncDevices());
  }

  private fingerprint(): string | undefined {
    return this.session.benchDevice()?.fingerprint;
  }

  private async db(): Promise<History | undefined> {
    if (this.store || this.storeError) return this.store;
    try {
      this.store = await this.open();
    } catch (e) {
      this.storeError = e instanceof Error ? e.message : String(e);
    }
    return this.store;
  }

  /** Adds a result to the store and refreshes the list. */
  async save(r: BenchResult): Promise<boolean> {
    const db = await this.db();
    if (!db) return false;
    await db.add(r);
    await this.reload();
    return true;
  }

  private syncDevicesPending = false;
  private syncDevices(): void {
    if (this.syncDevicesPending || this.deviceSelect.options.length) return;
    if (!this.fingerprint()) return;
    this.syncDevicesPending = true;
    void this.reload().finally(() => {
      this.syncDevicesPending = false;
    });
  }

  /** Reads the store again and renders. */
  async reload(): Promise<void> {
    const db = await this.db();
    if (!db) {
      this.status.textContent = `The history is unavailable in this browser: ${this.storeError}`;
      return;
    }
    const mine = this.fingerprint();
    const devices = await db.devices();
    const mineCount = devices.find((d) => d.fingerprint === mine)?.count ?? 0;
    this.totalCount = devices.reduce((s, d) => s + d.count, 0);
    // This device's results first; with none yet (e.g. only remote runs), every device's.
    const chosen = (this.userChose && this.deviceSelect.value) || (mine && mineCount > 0 ? mine : ALL);
    const options: { value: string; label: string }[] = [];
    if (mine) options.push({ value: mine, label: `This device (${mineCount})` });
    options.push({ value: ALL, label: `All devices (${this.totalCount})` });
    for (const d of devices)
      if (d.fingerprint !== mine) options.push({ value: d.fingerprint, label: `${d.label} (${d.count})` });
    this.deviceSelect.replaceChildren(...options.map((o) => h('option', { value: o.value }, o.label)));
    this.deviceSelect.value = options.some((o) => o.value === chosen) ? chosen : options[0].value;

    const filter = this.deviceSelect.value === ALL ? undefined : this.deviceSelect.value;
    this.entries = await db.list(filter);
    this.renderList();
    this.renderCompare((await db.list()).map((e) => e.result));
  }

  private renderList(): void {
    const mine = this.fingerprint();
    this.exportJson.disabled = this.entries.length === 0;
    this.exportCsv.disabled = this.entries.length === 0;
    if (!this.entries.length) {
      this.list.replaceChildren(
        h(
          'li',
          { class: 'entries__empty muted' },
          this.totalCount > 0
            ? `No results for this choice; ${this.totalCount} under “All devices”.`
            : 'No results yet. Run a benchmark, or import a result file.',
        ),
      );
      return;
    }
    this.list.replaceChildren(
      ...this.entries.map((e) => {
        const r = e.result;
        const s = r.summary;
        const when = new Date(r.createdAt);
        const title = `${r.model.id} · ${engineLabel(r)}`;
        const act = (label: string, fn: () => void | Promise<void>, cls = 'button button--small') => {
          const b = h(
            'button',
            { type: 'button', class: cls, 'aria-label': `${label}: ${title}, ${r.createdAt}` },
            label,
          );
          b.addEventListener('click', () => void fn());
          return b;
        };
        const copied = h('span', { class: 'status', role: 'status' });
        return h(
          'li',
          { class: 'entry', 'data-key': e.key, 'data-testid': 'history-entry' },
          h(
            'div',
            { class: 'entry__head' },
            h(
              'h3',
              { class: 'entry__title' },
              title,
              r.model.synthetic ? h('span', { class: 'pill pill--info' }, 'synthetic') : null,
            ),
            h(
              'time',
              { datetime: r.createdAt, class: 'entry__time muted' },
              Number.isNaN(when.getTime()) ? r.createdAt : when.toLocaleString(),
            ),
          ),
          h(
            'p',
            { class: 'entry__device muted' },
            `${r.device.label ?? r.device.description}${r.device.fingerprint === mine ? ' (this device)' : ''}`,
          ),
          h(
            'dl',
            { class: 'entry__stats' },
            h(
              'div',
              {},
              h('dt', {}, 'Decode'),
              h('dd', { 'data-field': 'decode' }, fmtRate(s.decodeTokensPerSecond?.median)),
            ),
            h('div', {}, h('dt', {}, 'Prefill'), h('dd', {}, fmtRate(s.prefillTokensPerSecond?.median))),
            h('div', {}, h('dt', {}, 'TTFT'), h('dd', {}, fmtMs(s.ttftMs?.median))),
            h('div', {}, h('dt', {}, 'Runs'), h('dd', {}, String(r.runs.length))),
            r.cpu
              ? h(
                  'div',
                  {},
                  h('dt', {}, 'vs CPU'),
                  h(
                    'dd',
                    {
                      'data-field': 'cpu',
                      title: `llama.cpp wasm on ${r.cpu.threads} thread(s): GPU ÷ CPU at decode`,
                    },
                    `${fmtRatio(r.cpu.ratio.decode)} (CPU ${fmtRate(r.cpu.decodeTokS)})`,
                  ),
                )
              : null,
          ),
          h(
            'div',
            { class: 'actions' },
            act('Show', () => this.onShow?.(r)),
            act('Export JSON', () =>
              download(resultFileName(r, 'json'), resultToJson(r), 'application/json'),
            ),
            act('Copy summary', async () => {
              try {
                await copyText(summaryText(r));
                copied.textContent = 'Copied.';
              } catch {
                copied.textContent = 'Copy failed.';
              }
            }),
            act('Delete', () => this.remove(e), 'button button--small button--danger'),
            copied,
          ),
        );
      }),
    );
  }

  private renderCompare(all: BenchResult[]): void {
    const bars = compareByModelAndDevice(all);
    const mine = this.fingerprint();
    this.compare.replaceChildren(
      bars.length
        ? barList(
            'Decode tokens per second by model and device',
            bars.map((b) => ({
              label: b.model + (b.engine === 'webgpu' ? '' : ` (${b.engine})`),
              detail: `${b.device}${b.fingerprint === mine ? ' · this device' : ''} · ${b.results} result${b.results === 1 ? '' : 's'}`,
              value: b.decodeTokPerS,
              unit: 'tok/s',
              highlight: b.fingerprint === mine,
            })),
          )
        : h('p', { class: 'muted' }, 'Nothing to compare yet.'),
    );
  }

  private async remove(e: HistoryEntry): Promise<void> {
    const db = await this.db();
    if (!db) return;
    await db.delete(e.key);
    this.status.textContent = `Deleted ${e.result.model.id} from ${new Date(e.createdAt).toLocaleString()}.`;
    await this.reload();
    (this.list.querySelector('button') as HTMLButtonElement | null)?.focus();
  }

  private exportShown(kind: 'json' | 'csv'): void {
    const results = this.entries.map((e) => e.result);
    if (!results.length) return;
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    if (kind === 'json')
      download(
        results.length === 1 ? resultFileName(results[0], 'json') : `bench-history-${stamp}.json`,
        resultToJson(results.length === 1 ? results[0] : results),
        'application/json',
      );
    else download(`bench-history-${stamp}.csv`, resultsToCsv(results), 'text/csv');
  }

  private async importFiles(): Promise<void> {
    const files = [...(this.importInput.files ?? [])];
    this.importInput.value = '';
    const db = await this.db();
    if (!db || !files.length) return;
    const messages: string[] = [];
    let added = 0;
    let replaced = 0;
    for (const f of files) {
      try {
        const text = await f.text();
        const csv = /\.csv$/i.test(f.name) || (!/\.json$/i.test(f.name) && !/^\s*[[{]/.test(text));
        const results = csv ? csvToResults(text) : parseResultsJson(text);
        const n = await db.addMany(results);
        added += n.added;
        replaced += n.replaced;
      } catch (e) {
        messages.push(`${f.name}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.status.textContent = [
      `Imported ${added} new result${added === 1 ? '' : 's'}${replaced ? `, ${replaced} already stored` : ''}.`,
      ...messages.map((m) => `Not imported: ${m}`),
    ].join(' ');
    await this.reload();
  }
}
