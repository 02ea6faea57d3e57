/**
 * The benchmark plan, the live view of the running request (streamed text and the token timeline) and the
 * results: one row per measured run, the summary over runs, the roofline reading, export and share.
 * Running is src/bench/runner.ts's `runPlanWithBaseline` (`runBenchmark`, after a drafting plan's baseline)
 * on the session's active backend (our engine or WebLLM, measured the same way through the Engine
 * interface); this file only collects the plan and shows progress.
 * An engine's own figures (WebLLM's `usage.extra`, a server's timings) are shown apart from ours.
 */

import { DEFAULT_PLAN, defaultPlanText } from '../bench/default-plan.ts';
import { type PromptSetName, promptsFor } from '../bench/prompts.ts';
import {
  baselinePlan,
  benchModelFrom,
  buildResult,
  runPlanWithBaseline,
  speculativeSummary,
} from '../bench/runner.ts';
import type { BenchPlan, BenchPrompt, BenchResult, BenchRun } from '../bench/types.ts';
import { contextAdvice, contextOverflowText, isEngineError } from '../core/errors.ts';
import { h } from '../dom/h.ts';
import { fmtMs, fmtRate } from '../util/format.ts';
import { resultCardChildren } from './bench-result.ts';
import { TokenChart, tokenTimesFromRun } from './charts.ts';
import { field, revealCard } from './dom.ts';
import { DraftChoice } from './draft-choice.ts';
import { clearFieldErrors, FieldReader, fieldErrorsOf, showFieldErrors } from './form-errors.ts';
import { PAGE_CONTEXT_ADVICE } from './kv-context.ts';
import { FieldError, readNumberField } from './number-field.ts';
import type { RemoteLive } from './remote-view.ts';
import { rooflineFor } from './roofline-view.ts';
import type { Session } from './session.ts';

type PromptChoice = PromptSetName | 'custom';

/**
 * The Prompts select's choices: a label short enough for the select at 390 px ("Short prompts (3, a
 * sentence each)" was cut there), and the detail said under it for the chosen one.
 */
const PROMPT_CHOICES: { value: PromptChoice; label: string; hint: string }[] = [
  { value: 'short', label: 'Short (3 prompts)', hint: 'three prompts of a sentence each' },
  { value: 'medium', label: 'Medium (2 prompts)', hint: 'two prompts of a paragraph each' },
  { value: 'long', label: 'Long (1 prompt)', hint: 'one prompt of a page' },
  { value: 'custom', label: 'Custom', hint: 'your own prompt, written below' },
];

function promptHint(choice: PromptChoice): string {
  return PROMPT_CHOICES.find((c) => c.value === choice)?.hint ?? '';
}

/** A whole-number field in [min, max]. @throws FieldError naming the field otherwise. */
function intValue(input: HTMLInputElement, label: string, min: number, max: number): number {
  return readNumberField(input, label, { integer: true, min, max });
}

function numberInput(id: string, value: number, min: number, max: number, step = 1): HTMLInputElement {
  return h('input', {
    type: 'number',
    id,
    class: 'input input--num',
    value: String(value),
    min: String(min),
    max: String(max),
    step: String(step),
    inputmode: step === 1 ? 'numeric' : 'decimal',
  });
}

export class BenchView {
  readonly element: HTMLElement;
  private readonly promptSelect: HTMLSelectElement;
  /** The chosen prompt set in words ("three prompts of a sentence each"), under the Prompts select. */
  private readonly promptHint: HTMLElement;
  private readonly customField: HTMLElement;
  private readonly customText: HTMLTextAreaElement;
  private readonly maxTokens: HTMLInputElement;
  private readonly runs: HTMLInputElement;
  private readonly warmup: HTMLInputElement;
  private readonly temperature: HTMLInputElement;
  private readonly ignoreEos: HTMLInputElement;
  /**
   * Speculative decoding for every run: none, prompt lookup or a draft model (src/ui/draft-choice.ts;
   * then also a baseline without it).
   */
  private readonly drafting: DraftChoice;
  private readonly draft: HTMLSelectElement;
  /** "timed against the same runs without it", under the Drafting select while a draft is chosen. */
  private readonly draftHint: HTMLElement;
  private readonly runButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly planHint: HTMLElement;
  /** A field the plan cannot use, said next to the Run button (not only in the Live card). */
  private readonly planError: HTMLElement;
  /** Whose run the Live card shows: this page's engine, or the remote benchmark's ({@link showLiveStatus}). */
  private liveOwner: 'local' | 'remote' = 'local';
  private readonly liveStatus: HTMLElement;
  private readonly streamPrompt: HTMLElement;
  private readonly streamOutput: HTMLElement;
  private readonly chart: TokenChart;
  private readonly results: HTMLElement;
  private readonly liveCard: HTMLElement;
  private readonly where: HTMLElement;
  private controller: AbortController | undefined;

  /** Called with each finished result (the app stores it in the history). */
  onResult: ((r: BenchResult) => Promise<void> | void) | undefined;

  constructor(
    private readonly session: Session,
    modelCard: HTMLElement,
    rooflineCard: HTMLElement,
  ) {
    this.promptSelect = h(
      'select',
      { id: 'plan-prompts', class: 'input' },
      PROMPT_CHOICES.map((c) => h('option', { value: c.value }, c.label)),
    );
    this.customText = h('textarea', {
      id: 'plan-custom',
      class: 'input textarea',
      rows: '3',
      placeholder: 'Once upon a time',
    });
    this.customField = field('Custom prompt', this.customText);
    this.promptSelect.addEventListener('change', () => this.syncCustom());
    this.promptHint = h('p', {}, promptHint(DEFAULT_PLAN.promptSet));
    const promptField = field('Prompts', this.promptSelect, this.promptHint);

    this.promptSelect.value = DEFAULT_PLAN.promptSet;
    this.maxTokens = numberInput('plan-max-tokens', DEFAULT_PLAN.maxTokens, 1, 4096);
    this.runs = numberInput('plan-runs', DEFAULT_PLAN.runs, 1, 100);
    this.warmup = numberInput('plan-warmup', DEFAULT_PLAN.warmup, 0, 20);
    this.temperature = numberInput('plan-temperature', 0, 0, 2, 0.05);
    this.ignoreEos = h('input', { type: 'checkbox', id: 'plan-ignore-eos', role: 'switch', class: 'switch' });
    this.ignoreEos.checked = DEFAULT_PLAN.ignoreEos;
    this.drafting = new DraftChoice(session, 'plan');
    this.draft = this.drafting.select;

    this.runButton = h('button', { type: 'submit', class: 'button button--primary' }, 'Run benchmark');
    this.stopButton = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.controller?.abort() },
      'Stop',
    );
    this.planHint = h('p', { class: 'field__hint', id: 'plan-hint' });
    this.planError = h('div', { class: 'notice notice--warn', role: 'alert', 'data-testid': 'plan-error' });
    this.planError.hidden = true;
    this.runButton.setAttribute('aria-describedby', 'plan-hint plan-where');
    this.where = h('p', { class: 'field__hint plan__where', id: 'plan-where', 'data-testid': 'plan-where' });
    this.setWhere('idle');

    // The hint is true only with a draft chosen: under None nothing is timed twice.
    this.draftHint = h('p', {}, 'timed against the same runs without it');
    const draftField = field('Drafting', this.draft, this.draftHint);
    this.draft.addEventListener('change', () => this.syncDraftHint());

    // novalidate: the browser's own check stopped the submit at the first field out of its min/max (one
    // bubble, one field at a time); plan() reads every field and names all that are wrong at once.
    const form = h(
      'form',
      { class: 'plan', 'aria-labelledby': 'plan-heading', novalidate: '' },
      promptField,
      this.customField,
      h(
        'div',
        { class: 'plan__numbers' },
        field('Max tokens', this.maxTokens),
        field('Runs per prompt', this.runs),
        field('Warm-up runs', this.warmup),
        field('Temperature', this.temperature, '0 = greedy'),
        draftField,
      ),
      this.drafting.extra,
      field('Ignore EOS (fixed-length decode)', this.ignoreEos, undefined, { inline: true }),
      h('div', { class: 'actions' }, this.runButton, this.stopButton),
      this.planError,
      this.planHint,
      this.where,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.run();
    });

    const planCard = h(
      'section',
      { class: 'card', 'aria-labelledby': 'plan-heading', 'data-card': 'plan' },
      h('h2', { id: 'plan-heading', class: 'card__title' }, 'Benchmark plan'),
      h(
        'p',
        { class: 'card__lede', 'data-testid': 'plan-defaults' },
        `Default: ${defaultPlanText()}, the same plan as `,
        h('code', {}, 'npm run bench'),
        ', so the figures compare.',
      ),
      form,
    );

    this.liveStatus = h(
      'p',
      { class: 'status', role: 'status', 'data-testid': 'run-status' },
      'Not started.',
    );
    this.streamPrompt = h('span', { class: 'stream__prompt' });
    this.streamOutput = h('span', { class: 'stream__output', 'data-testid': 'stream-output' });
    this.chart = new TokenChart({ label: 'Token index against milliseconds since request start' });
    this.liveCard = h(
      'section',
      { class: 'card card--wide', 'aria-labelledby': 'live-heading', 'data-card': 'live' },
      h('h2', { id: 'live-heading', class: 'card__title' }, 'Live'),
      this.liveStatus,
      h(
        'div',
        {
          class: 'stream',
          'aria-live': 'polite',
          'aria-label': 'Streamed text',
          role: 'log',
          tabindex: '0',
          'data-testid': 'stream',
        },
        this.streamPrompt,
        this.streamOutput,
      ),
      h('h3', {}, 'Token timeline'),
      this.chart.element,
    );

    this.results = h('section', {
      class: 'card card--wide results',
      'aria-labelledby': 'results-heading',
      'data-card': 'results',
      'data-testid': 'results',
    });
    this.results.hidden = true;

    this.element = h(
      'div',
      { class: 'grid grid--bench' },
      modelCard,
      h('div', { class: 'stack' }, planCard, rooflineCard),
      this.liveCard,
      this.results,
    );
    this.syncCustom();
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  /** The Drafting hint, shown only while a draft (lookup or a model) is chosen. */
  private syncDraftHint(): void {
    this.draftHint.hidden = this.draft.value === '';
  }

  private syncCustom(): void {
    this.customField.hidden = this.promptSelect.value !== 'custom';
    this.promptHint.textContent = promptHint(this.promptSelect.value as PromptChoice);
  }

  private refresh(): void {
    this.syncDraftHint();
    this.addLateRoofline();
    const running = this.session.task === 'bench';
    const model = this.session.model;
    this.runButton.disabled = !model || this.session.task !== undefined;
    this.stopButton.disabled = !running;
    this.planHint.textContent = running
      ? 'Running…'
      : !model
        ? 'Load a model first.'
        : this.session.task
          ? `Waiting for the ${this.session.task === 'chat' ? 'chat answer' : 'load'} to finish.`
          : `Runs on ${model.id}${this.session.ours ? '' : this.session.backend === 'wllama' ? ' on the CPU (llama.cpp wasm)' : ' in WebLLM'}.`;
  }

  /** A measurement taken after the last run: add the roofline reading to that result (and store it again). */
  private addLateRoofline(): void {
    const r = this.session.lastResult;
    const model = this.session.model;
    if (
      !r ||
      r.roofline ||
      r.engine !== 'webgpu' ||
      !this.session.measurement ||
      !model ||
      model.id !== r.model.id
    )
      return;
    const roofline = rooflineFor(model.info, this.session.measurement, r);
    if (!roofline) return;
    const updated = { ...r, roofline };
    this.session.setLastResult(updated);
    this.showResult(updated, false);
    void this.onResult?.(updated);
  }

  /**
   * The plan from the form.
   * @throws FieldErrors naming every field that is wrong (a custom set without text, a number field out of
   * its range, a draft model not loaded), all at once.
   */
  plan(): BenchPlan {
    const choice = this.promptSelect.value as PromptChoice;
    // Every field is read before any error is thrown, so that all the fields to fix are named at once
    // (one at a time, a plan with three empty fields took three presses of Run to learn them).
    const fields = new FieldReader(this.customText);
    const read = <T>(f: () => T, otherwise: T): T => fields.read(f, otherwise);
    const prompts = read(
      () => promptsFor(choice, choice === 'custom' ? this.customText.value : undefined),
      [],
    );
    const maxTokens = read(() => intValue(this.maxTokens, 'Max tokens', 1, 4096), 0);
    const runs = read(() => intValue(this.runs, 'Runs per prompt', 1, 100), 0);
    const warmup = read(() => intValue(this.warmup, 'Warm-up runs', 0, 20), 0);
    const temperature = read(() => readNumberField(this.temperature, 'Temperature', { min: 0, max: 2 }), 0);
    const draft = read(() => this.draftPlan(), {});
    fields.check();
    return {
      prompts,
      maxTokens,
      runs,
      warmup,
      ignoreEos: this.ignoreEos.checked,
      ...(temperature > 0 ? { sampling: { temperature, seed: 42 } } : {}),
      ...draft,
    };
  }

  /** The plan's drafting from the Drafting select. @throws FieldError for a draft model not loaded. */
  private draftPlan(): Pick<BenchPlan, 'draft'> {
    const d = this.drafting.request();
    if (!d) return {};
    return d.type === 'model' ? { draft: { type: 'model', model: this.drafting.label() } } : { draft: d };
  }

  async run(): Promise<void> {
    const model = this.session.model;
    if (!model) return;
    let plan: BenchPlan;
    try {
      plan = this.plan();
      if (plan.draft && !this.session.ours)
        throw new FieldError(
          this.draft,
          'Drafting runs on our WebGPU engine only; choose None for this backend.',
        );
    } catch (e) {
      // Where the eye is: under the button just pressed (a list when several fields are wrong), and on
      // the fields, the first focused (an empty Max tokens used to only take the focus); and in the Live card.
      this.liveStatus.textContent = showFieldErrors(
        this.planError,
        fieldErrorsOf(e, this.customText),
        (left) => {
          this.liveStatus.textContent = left || 'Not started.';
        },
      );
      return;
    }
    clearFieldErrors(this.planError);
    if (!this.session.begin('bench')) return;
    this.controller = new AbortController();
    const total = plan.prompts.length * plan.runs;
    const done: BenchRun[] = [];
    const doneTimes: { label: string; times: number[] }[] = [];
    // Live x axis: worker timestamps are in the worker's clock, so a token's time since the request is
    // (its tMs − the first token's tMs) + the page-side time to the first token. Replaced by the exact
    // times (TTFT + ITLs, from the engine's own timestamps) when the run ends.
    let pageStart = 0;
    let firstWorkerMs: number | undefined;
    let firstOffset = 0;
    let count = 0;
    let label = '';
    this.element.dataset.state = 'running';
    this.liveOwner = 'local';
    this.setWhere('live');
    revealCard(this.liveCard);
    let shown = false;
    let inBaseline = false;
    try {
      // Drafting: the same plan without it on the same load runs first (with its own warm-up, the
      // measurement a plain run of the plan makes), then the drafted runs, for the speed-up.
      const base = baselinePlan(plan);
      const { runs, baseline } = await runPlanWithBaseline(this.session.engine, plan, {
        baseline: {
          signal: this.controller.signal,
          onRunStart: (i, prompt: BenchPrompt, warm) => {
            inBaseline = true;
            this.liveStatus.textContent = `Baseline without drafting: ${warm ? `warm-up ${i + 1} of ${base.warmup}` : `run ${i + 1} of ${total}`} · ${prompt.name}`;
            // The card showed the last run's text and timeline while the baseline ran.
            this.streamPrompt.textContent = prompt.text;
            this.streamOutput.textContent = '';
            this.chart.clear();
          },
        },
        run: {
          signal: this.controller.signal,
          onRunStart: (i, prompt: BenchPrompt, warm) => {
            inBaseline = false;
            label = warm ? `warm-up ${i + 1} of ${plan.warmup}` : `run ${i + 1} of ${total}`;
            this.liveStatus.textContent = `${label[0].toUpperCase()}${label.slice(1)} · ${prompt.name} · starting`;
            this.streamPrompt.textContent = prompt.text;
            this.streamOutput.textContent = '';
            this.chart.startRun(label);
            pageStart = performance.now();
            firstWorkerMs = undefined;
            count = 0;
          },
          onToken: (e) => {
            if (firstWorkerMs === undefined) {
              firstWorkerMs = e.tMs;
              firstOffset = performance.now() - pageStart;
            }
            count++;
            this.streamOutput.append(e.text);
            this.chart.push(e.tMs - firstWorkerMs + firstOffset);
            if (count % 8 === 1)
              this.liveStatus.textContent = `${label[0].toUpperCase()}${label.slice(1)} · ${count} tokens`;
          },
          onRunDone: (run, warm) => {
            const times = tokenTimesFromRun(run.ttftMs, run.itlMs);
            this.chart.show([{ label, times }]);
            this.streamOutput.textContent = run.text;
            this.liveStatus.textContent =
              `${label[0].toUpperCase()}${label.slice(1)} done · ${run.outputTokens} tokens · ` +
              `TTFT ${fmtMs(run.ttftMs)} · decode ${fmtRate(run.decodeTokensPerSecond)}`;
            if (!warm) {
              done.push(run);
              doneTimes.push({ label: `run ${done.length}`, times });
            }
          },
        },
      });
      const speculative: BenchResult['speculative'] =
        plan.draft && baseline
          ? speculativeSummary(plan, runs, baseline, plan.draft.model ?? 'lookup')
          : undefined;
      const result = this.result(plan, runs, speculative);
      this.chart.show(doneTimes);
      this.liveStatus.textContent = `Done: ${runs.length} measured run${runs.length === 1 ? '' : 's'}.`;
      this.showResult(result, false);
      this.setWhere('results');
      shown = true;
      this.session.setLastResult(result);
      await this.onResult?.(result);
    } catch (e) {
      const stopped = isEngineError(e, 'aborted');
      this.liveStatus.textContent = stopped
        ? inBaseline
          ? `Stopped during the baseline without drafting, before the ${total} drafted run${total === 1 ? '' : 's'}.`
          : `Stopped after ${done.length} of ${total} measured runs.`
        : `The benchmark failed${isEngineError(e) ? ` (${e.code})` : ''}: ${
            isEngineError(e, 'context_overflow') && e.details?.contextLength !== undefined
              ? contextOverflowText(
                  e,
                  e.message,
                  contextAdvice(this.session.model?.info, 'shorten the prompts', PAGE_CONTEXT_ADVICE),
                  'a prompt',
                )
              : e instanceof Error
                ? e.message
                : String(e)
          }`;
      if (done.length) {
        this.chart.show(doneTimes);
        this.showResult(this.result(plan, done), true);
        this.setWhere('results');
        shown = true;
      }
      if (isEngineError(e, 'device_lost')) await this.session.resetEngine();
    } finally {
      this.controller = undefined;
      this.element.dataset.state = 'idle';
      this.session.end('bench');
      // After the views have redrawn for the idle session (the model card changes height), so the scroll
      // lands on the results' top.
      if (shown) requestAnimationFrame(() => revealCard(this.results));
      else this.setWhere('idle');
    }
  }

  /** The line under the Run button: where the run streams, then where its results are. */
  private setWhere(stage: 'idle' | 'live' | 'results'): void {
    this.where.replaceChildren(
      ...(stage === 'idle'
        ? ['A run streams under ', this.jump('Live', 'live'), ' below; its numbers follow under Results.']
        : stage === 'live'
          ? ['Running: the text streams under ', this.jump('Live', 'live'), ' below.']
          : [
              'Results are below, under ',
              this.jump('Results', 'results'),
              ' (the runs, the summary, export).',
            ]),
    );
  }

  /** A link that scrolls to the Live or Results card (the URL hash stays the tab's). */
  private jump(label: string, to: 'live' | 'results'): HTMLAnchorElement {
    const a = h('a', { href: `#${to}-heading` }, label);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      revealCard(to === 'live' ? this.liveCard : this.results, true);
    });
    return a;
  }

  private result(plan: BenchPlan, runs: BenchRun[], speculative?: BenchResult['speculative']): BenchResult {
    const model = this.session.model;
    const device = this.session.benchDevice();
    if (!model || !device) throw new Error('no model or device');
    const r = buildResult({
      device,
      engine: this.session.backend,
      model: benchModelFrom(model.info, { id: model.id, synthetic: model.synthetic, bytes: model.fileBytes }),
      load: model.load,
      plan,
      runs,
      ...(speculative ? { speculative } : {}),
    });
    // The roofline needs the bytes our kernels read per token; WebLLM's are not known.
    const roofline = this.session.ours ? rooflineFor(model.info, this.session.measurement, r) : undefined;
    if (roofline) r.roofline = roofline;
    return r;
  }

  /**
   * Shows another runner's progress in the Live card (the remote benchmark's: `Remote · Run 2 of 6 · …`); the
   * first such line clears the last local run's streamed text and timeline, which are not this run's.
   */
  showLiveStatus(text: string): void {
    if (this.liveOwner !== 'remote') {
      this.liveOwner = 'remote';
      this.streamPrompt.textContent = '';
      this.streamOutput.textContent = '';
      this.chart.clear();
    }
    this.liveStatus.textContent = text;
  }

  /**
   * The Live card's streamed text and token timeline for a remote run (src/ui/remote-view.ts): each run's
   * prompt and text as they arrive, its tokens on the timeline (page-side times, replaced by the run's
   * TTFT and ITLs when it ends). The remote run fed none of it: the card stayed empty while tokens came.
   */
  remoteLive(): RemoteLive {
    let start = 0;
    let label = '';
    return {
      runStart: (l, promptText) => {
        this.liveOwner = 'remote';
        label = l;
        start = performance.now();
        this.streamPrompt.textContent = promptText;
        this.streamOutput.textContent = '';
        this.chart.startRun(label);
      },
      token: (text) => {
        this.streamOutput.append(text);
        this.chart.push(performance.now() - start);
      },
      runDone: (run) => {
        this.chart.show([{ label, times: tokenTimesFromRun(run.ttftMs, run.itlMs) }]);
        this.streamOutput.textContent = run.text;
      },
    };
  }

  /** Shows a result (the last run's, or one picked in the history). */
  showResult(r: BenchResult, partial: boolean): void {
    this.results.replaceChildren(...resultCardChildren(r, partial, this.session.adapter));
    this.results.hidden = false;
  }
}
