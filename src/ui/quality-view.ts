/**
 * "Quality: perplexity per KV cache type" (issue 44): the fidelity a quantized KV cache costs, on the
 * loaded model (our engine). Loads the model again with each cache type (f16, q8_0, q4_0: K and V alike,
 * as llama.cpp's `-ctk/-ctv`), scores the same text teacher-forced (bench/perplexity.ts, the field's
 * `llama-perplexity`, as `npm run perplexity -- --kv-type T`), shows the perplexities side by side with
 * each one's difference from f16 in %, and loads the model back as it was.
 */

import { kvShapeOf, kvTypeUnusable } from '../bench/kv-memory.ts';
import { perplexity } from '../bench/perplexity.ts';
import { isEngineError } from '../core/errors.ts';
import type { KvType } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { fmtMs } from '../util/format.ts';
import type { Session } from './session.ts';

/** The default text: the start of tests/data/ppl-story.txt (the CLI's perplexity test text). */
export const QUALITY_TEXT =
  'Once upon a time, there was a little girl named Mia. She lived in a small house near a big green hill. ' +
  'Mia had a red kite and a brown dog named Pip. Every morning, Mia and Pip ran up the hill to fly the kite.\n\n' +
  'One day, the wind was very strong. The kite went up, up, up into the sky.';

/** The cache types compared, f16 (the reference) first. */
export const QUALITY_TYPES: readonly KvType[] = ['f16', 'q8_0', 'q4_0'];

/**
 * The card's closing line: how many cache types were scored out of how many, naming those that could not
 * run (their rows say why), e.g. `Done: 1 of 3 cache types scored (q8_0, q4_0 not run)`.
 */
export function qualitySummary(rows: readonly QualityRow[], total: number, stopped: boolean): string {
  const scored = rows.filter((r) => r.error === undefined).length;
  const notRun = rows.filter((r) => r.error !== undefined).map((r) => r.kvType);
  return `${stopped ? 'Stopped' : 'Done'}: ${scored} of ${total} cache types scored${
    notRun.length ? ` (${notRun.join(', ')} not run)` : ''
  }`;
}

/** One cache type's outcome: its perplexity, or why it could not run (e.g. a head size not a multiple of 32). */
export interface QualityRow {
  kvType: KvType;
  perplexity?: number;
  tokens?: number;
  error?: string;
  ms?: number;
}

/**
 * The difference of `ppl` from f16's `base` in percent: 100 · (ppl − base) / base; null when either is
 * missing or `base` is not positive.
 */
export function pplDeltaPercent(ppl: number | undefined, base: number | undefined): number | null {
  if (ppl === undefined || base === undefined || !(base > 0) || !Number.isFinite(ppl)) return null;
  return (100 * (ppl - base)) / base;
}

/** "+0.42 %", "−1.30 %", "0.00 %" (a no-break space before %); "—" for null. */
export function fmtDelta(d: number | null): string {
  if (d === null) return '—';
  const s = Math.abs(d).toFixed(2);
  return `${d > 0 && s !== '0.00' ? '+' : d < 0 && s !== '0.00' ? '−' : ''}${s}\u00a0%`;
}

const NEED_MODEL = 'Load a model (our engine) first.';
/** Why the comparison cannot run on the loaded model's engine (the page knows which one it is). */
const needOurs = (backend: string) =>
  `Our WebGPU engine only: this model runs ${backend === 'wllama' ? 'on the CPU (llama.cpp wasm)' : 'in WebLLM'}; load it with Engine: WebGPU to compare cache types.`;

export class QualityView {
  readonly element: HTMLElement;
  private readonly text: HTMLTextAreaElement;
  private readonly runButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  /** Which cache types this model cannot take, said before the run (their rows then say it too). */
  private readonly hint: HTMLElement;
  private readonly table: HTMLElement;
  private controller: AbortController | undefined;

  constructor(private readonly session: Session) {
    this.text = h('textarea', { id: 'quality-text', class: 'input', rows: '4', spellcheck: 'false' });
    this.text.value = QUALITY_TEXT;
    this.runButton = h('button', { type: 'button', class: 'button' }, 'Perplexity per KV cache type');
    this.runButton.addEventListener('click', () => void this.run());
    this.stopButton = h('button', { type: 'button', class: 'button' }, 'Stop');
    this.stopButton.addEventListener('click', () => this.controller?.abort());
    this.stopButton.hidden = true;
    this.status = h('p', {
      class: 'status',
      role: 'status',
      'aria-live': 'polite',
      'data-testid': 'quality-status',
    });
    this.table = h('div', { class: 'table-wrap', 'data-testid': 'quality-table' });
    this.hint = h('p', { class: 'field__hint', 'data-testid': 'quality-hint' });
    this.element = h(
      'section',
      { class: 'card card--wide', 'aria-labelledby': 'quality-heading', 'data-card': 'quality' },
      h('h2', { id: 'quality-heading', class: 'card__title' }, 'Quality: perplexity per KV cache type'),
      h(
        'p',
        { class: 'card__lede' },
        'What a quantized KV cache costs: the loaded model scores the same text with an f16, a q8_0 and a q4_0 cache ' +
          '(loaded again for each, then back as it was). Lower perplexity is better; the difference is from f16.',
      ),
      h('label', { for: 'quality-text', class: 'field__label' }, 'Text'),
      this.text,
      this.hint,
      h('div', { class: 'actions' }, this.runButton, this.stopButton),
      this.status,
      this.table,
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  private refresh(): void {
    const m = this.session.model;
    this.runButton.disabled = this.session.task !== undefined || !m?.reload;
    if (this.controller) return;
    if (!m) this.table.replaceChildren(); // a new load: the last model's figures go
    const need = !m ? NEED_MODEL : m.reload ? undefined : needOurs(this.session.backend);
    // The last run's line stays until it no longer applies (another model, or none).
    if (need) this.status.textContent = need;
    else if (this.status.dataset.need) this.status.textContent = '';
    if (need) this.status.dataset.need = 'true';
    else delete this.status.dataset.need;
    const unusable = m?.reload ? this.unusable() : [];
    this.hint.textContent = unusable.length
      ? `${unusable.map((u) => u.kvType).join(' and ')} ${unusable.length === 1 ? unusable[0].why : unusable[0].why.replace(/^needs /, 'need ')}: ${unusable.length === 1 ? 'it is' : 'they are'} listed as not run, without loading the model again.`
      : '';
    this.hint.hidden = unusable.length === 0;
  }

  /** The cache types the loaded model cannot take (its head size; src/bench/kv-memory.ts `kvTypeUnusable`). */
  private unusable(): { kvType: KvType; why: string }[] {
    const header = this.session.model?.header;
    if (!header) return [];
    const { headDim } = kvShapeOf(header);
    return QUALITY_TYPES.flatMap((kvType) => {
      const why = kvTypeUnusable(kvType, headDim);
      return why ? [{ kvType, why }] : [];
    });
  }

  /** Scores the text with each cache type, then loads the model back with its own options. */
  async run(): Promise<void> {
    const m = this.session.model;
    if (!m?.reload || !this.session.begin('bench')) return;
    const { source, options } = m.reload;
    const engine = this.session.ourEngine;
    this.controller = new AbortController();
    const signal = this.controller.signal;
    this.stopButton.hidden = false;
    const rows: QualityRow[] = [];
    const text = this.text.value;
    // A text too short to score is said before the model is loaded again three times.
    try {
      const n =
        (await engine.tokenize(text, false)).length + ((await engine.tokenize('', true)).length > 0 ? 1 : 0);
      if (n < 2) {
        this.status.textContent = 'The text is too short: perplexity needs at least two tokens.';
        this.controller = undefined;
        this.stopButton.hidden = true;
        this.session.end('bench');
        return;
      }
    } catch {
      // the loop below says what fails
    }
    const unusable = new Map(this.unusable().map((u) => [u.kvType, u.why]));
    try {
      for (const kvType of QUALITY_TYPES) {
        if (signal.aborted) break;
        const why = unusable.get(kvType);
        if (why) {
          rows.push({ kvType, error: `a ${kvType} cache ${why}` });
          this.render(rows);
          continue;
        }
        this.status.textContent = `Loading ${m.id} with a ${kvType} KV cache…`;
        const t0 = performance.now();
        try {
          const info = await engine.load(source, { ...options, kvType, signal });
          this.status.textContent = `Scoring with a ${kvType} KV cache…`;
          const ids = await engine.tokenize(text, true);
          const plain = await engine.tokenize(text, false);
          const bos = ids.length > plain.length ? ids[0] : undefined;
          const r = await perplexity(ids, info.contextLength, (w) => engine.scoreTokens(w, signal), bos);
          rows.push({ kvType, perplexity: r.perplexity, tokens: r.tokens, ms: performance.now() - t0 });
        } catch (e) {
          if (signal.aborted || isEngineError(e, 'aborted')) break;
          rows.push({ kvType, error: e instanceof Error ? e.message : String(e) });
        }
        this.render(rows);
      }
    } finally {
      this.status.textContent = signal.aborted
        ? 'Stopped. Loading the model back…'
        : 'Loading the model back…';
      try {
        const info = await engine.load(source, options);
        this.session.setModel({ ...m, info });
        this.status.textContent = `${qualitySummary(rows, QUALITY_TYPES.length, signal.aborted)}; ${m.id} is loaded as before.`;
      } catch (e) {
        this.session.setModel(undefined);
        this.status.textContent = `The model could not be loaded back: ${e instanceof Error ? e.message : String(e)}`;
      }
      this.controller = undefined;
      this.stopButton.hidden = true;
      this.session.end('bench');
    }
  }

  private render(rows: QualityRow[]): void {
    const base = rows.find((r) => r.kvType === 'f16')?.perplexity;
    this.table.replaceChildren(
      h(
        'table',
        { class: 'data' },
        h('caption', { class: 'visually-hidden' }, 'Perplexity per KV cache type'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'KV cache'),
            h('th', {}, 'Perplexity'),
            h('th', {}, 'vs f16'),
            h('th', {}, 'Tokens'),
          ),
        ),
        h(
          'tbody',
          {},
          rows.map((r) =>
            h(
              'tr',
              { 'data-kv': r.kvType, title: r.ms === undefined ? '' : `loaded and scored in ${fmtMs(r.ms)}` },
              h('td', {}, r.kvType),
              r.error
                ? h('td', { colspan: '3' }, `not run: ${r.error}`)
                : [
                    h('td', { 'data-field': 'ppl' }, r.perplexity?.toFixed(4) ?? '—'),
                    h(
                      'td',
                      { 'data-field': 'delta' },
                      r.kvType === 'f16' ? '—' : fmtDelta(pplDeltaPercent(r.perplexity, base)),
                    ),
                    h('td', { 'data-field': 'tokens' }, String(r.tokens ?? '—')),
                  ],
            ),
          ),
        ),
      ),
    );
  }
}
