/**
 * The "Your CPU (llama.cpp wasm)" card: after a GPU run, the same model (the same source: file, URL,
 * `hf:`, the library's copy) and the same plan run through the wllama backend (src/wllama/engine.ts) on
 * this computer's CPU, shown beside the GPU's medians with the ratio (src/bench/cpu-compare.ts), and
 * saved into the GPU result's `cpu` block (so History and the leaderboard show it).
 *
 * Started by its button, or after each GPU run when "Also measure my CPU" is ticked. It holds the
 * session's `bench` task while it runs (one long task at a time); Stop aborts the load or the runs. A
 * failure (a model over wasm's memory, a file over wllama's 2 GB without splits) is a typed message in
 * the card. wllama's module and wasm are loaded on first use (the wasm from this page's own server).
 */
import { cpuComparisonFrom, decodeRatioSentence, fmtRatio } from '../bench/cpu-compare.ts';
import { isSoftwareBenchDevice } from '../bench/device.ts';
import { runBenchmark } from '../bench/runner.ts';
import type { BenchResult, BenchRun, CpuComparison } from '../bench/types.ts';
import { isEngineError } from '../core/errors.ts';
import type { Engine } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { fmtMs, fmtRate } from '../util/format.ts';
import type { Session } from './session.ts';

/** How the card makes its CPU engine (tests pass a stand-in; the page: WllamaEngine with Vite's wasm URL). */
export type CpuEngineMaker = () => Promise<Engine>;

async function defaultMaker(): Promise<Engine> {
  const [{ WllamaEngine }, { LOCAL_WLLAMA_WASM }] = await Promise.all([
    import('../wllama/engine.ts'),
    import('../wllama/vite-wasm.ts'),
  ]);
  // Every run prefills its whole prompt, as on the GPU (no prompt-prefix reuse between runs).
  return new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM, reusePromptPrefix: false });
}

/** What the page must send for wasm threads, said once in the card. */
const ISOLATION_HINT =
  'More than one thread needs a cross-origin isolated page: the server sends Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp (or credentialless). Without them llama.cpp runs on one thread.';

export class CpuCompareView {
  readonly element: HTMLElement;
  /** A result with its `cpu` block added: save it (History) and show it. */
  onResult: ((r: BenchResult) => Promise<void> | void) | undefined;
  private readonly auto: HTMLInputElement;
  private readonly runButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly error: HTMLElement;
  private readonly figures: HTMLElement;
  private controller: AbortController | undefined;
  /** A GPU result waiting for the engine to be free ("Also measure my CPU"). */
  private pending: BenchResult | undefined;

  constructor(
    private readonly session: Session,
    private readonly makeEngine: CpuEngineMaker = defaultMaker,
  ) {
    this.auto = h('input', { type: 'checkbox', id: 'cpu-auto', 'data-testid': 'cpu-auto' });
    this.runButton = h(
      'button',
      { type: 'button', class: 'button', 'data-testid': 'cpu-run', onclick: () => void this.run() },
      'Measure my CPU',
    );
    this.stopButton = h(
      'button',
      {
        type: 'button',
        class: 'button',
        'data-testid': 'cpu-stop',
        onclick: () => {
          this.pending = undefined;
          this.controller?.abort();
        },
      },
      'Stop',
    );
    this.status = h('p', { class: 'status', role: 'status', 'data-testid': 'cpu-status' });
    this.error = h('div', { class: 'notice notice--warn', role: 'alert', 'data-testid': 'cpu-error' });
    this.error.hidden = true;
    this.figures = h('div', { 'data-testid': 'cpu-figures' });
    this.element = h(
      'section',
      { class: 'card card--wide', 'aria-labelledby': 'cpu-heading', 'data-card': 'cpu' },
      h('h2', { id: 'cpu-heading', class: 'card__title' }, 'Your CPU (llama.cpp wasm)'),
      h(
        'p',
        { class: 'card__lede' },
        "The last GPU result's model and plan, run again on this computer's CPU by llama.cpp compiled to WebAssembly (wllama): how much faster the GPU is.",
      ),
      h('label', { class: 'check', for: 'cpu-auto' }, this.auto, 'Also measure my CPU after each GPU run'),
      h('div', { class: 'actions' }, this.runButton, this.stopButton),
      this.status,
      this.error,
      this.figures,
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  /** Why the CPU cannot be measured now, or undefined when it can. */
  private blocker(): string | undefined {
    const r = this.session.lastResult;
    const m = this.session.model;
    if (!r) return 'Run the benchmark on the GPU first.';
    if (r.engine !== 'webgpu') return 'The last result is not a WebGPU run of this page’s engine.';
    if (!m || m.id !== r.model.id) return `Load ${r.model.id} again to measure it on the CPU.`;
    if (!m.source) return 'Synthetic and WebLLM models have no GGUF file for llama.cpp.';
    return undefined;
  }

  private refresh(): void {
    const running = this.controller !== undefined;
    const why = this.blocker();
    this.runButton.disabled = running || why !== undefined || this.session.task !== undefined;
    this.stopButton.disabled = !running;
    // What blocks the button, or that nothing does (the blocker's words stayed after a GPU run had lifted it).
    if (!running && !this.status.dataset.kept)
      this.status.textContent = why ?? 'Ready: the same plan on the CPU (llama.cpp wasm), one click.';
    const r = this.session.lastResult;
    if (!running) this.figures.replaceChildren(...(r?.cpu ? this.table(r, r.cpu) : []));
    if (this.pending && !this.session.task && !running) {
      const p = this.pending;
      this.pending = undefined;
      if (p === this.session.lastResult) void this.run();
    }
  }

  /** Called with each finished GPU result: measures the CPU once the engine is free, when asked to. */
  afterGpuRun(r: BenchResult): void {
    if (!this.auto.checked || r.engine !== 'webgpu') return;
    this.pending = r;
    queueMicrotask(() => this.refresh());
  }

  /**
   * Runs the last GPU result's plan on the CPU and adds the `cpu` block to that result (then `onResult`).
   * Errors are shown in the card (their EngineError code and message), never thrown.
   */
  async run(): Promise<void> {
    const gpu = this.session.lastResult;
    const model = this.session.model;
    if (this.blocker() || !gpu || !model?.source || this.controller) return;
    if (!this.session.begin('bench')) return;
    const controller = new AbortController();
    this.controller = controller;
    const signal = controller.signal;
    this.error.hidden = true;
    delete this.status.dataset.kept;
    this.refresh();
    let engine: Engine | undefined;
    const done: BenchRun[] = [];
    const total = gpu.plan.prompts.length * gpu.plan.runs;
    try {
      this.status.textContent = `Loading ${model.id} into llama.cpp (wasm)…`;
      engine = await this.makeEngine();
      const info = await engine.load(model.source.source, { signal, cache: model.source.cache });
      const runs = await runBenchmark(engine, gpu.plan, {
        signal,
        onRunStart: (i, p, warm) => {
          this.status.textContent = warm
            ? `CPU warm-up ${i + 1} of ${gpu.plan.warmup} · ${p.name}`
            : `CPU run ${i + 1} of ${total} · ${p.name}`;
        },
        onRunDone: (run, warm) => {
          if (!warm) done.push(run);
        },
      });
      const cpu = cpuComparisonFrom(gpu.summary, runs, {
        threads: info.threads?.count ?? 1,
        crossOriginIsolated: info.threads?.crossOriginIsolated ?? globalThis.crossOriginIsolated === true,
      });
      const updated: BenchResult = { ...gpu, cpu };
      this.status.textContent = `Done: ${runs.length} CPU run${runs.length === 1 ? '' : 's'}.`;
      this.status.dataset.kept = '1';
      this.controller = undefined;
      this.session.setLastResult(updated);
      await this.onResult?.(updated);
    } catch (e) {
      const stopped = signal.aborted || isEngineError(e, 'aborted');
      this.status.dataset.kept = '1';
      if (stopped) {
        this.status.textContent = `Stopped after ${done.length} of ${total} CPU runs; nothing saved.`;
      } else {
        this.status.textContent = 'The CPU run failed.';
        const code = isEngineError(e) ? e.code : 'error';
        this.error.replaceChildren(h('strong', {}, `${code}: `), e instanceof Error ? e.message : String(e));
        this.error.dataset.code = code;
        this.error.hidden = false;
      }
    } finally {
      this.controller = undefined;
      // wllama's memory (the model's copy in wasm) back, whatever happened.
      await engine?.unload().catch(() => undefined);
      this.session.end('bench');
    }
  }

  /** The GPU's and the CPU's medians side by side, the ratios, the sentence and the threads line. */
  private table(r: BenchResult, c: CpuComparison): Node[] {
    const s = r.summary;
    const row = (name: string, key: string, gpu: string, cpu: string, ratio: number) =>
      h(
        'tr',
        { 'data-metric': key },
        h('th', { scope: 'row' }, name),
        h('td', { class: 'num' }, gpu),
        h('td', { class: 'num' }, cpu),
        h('td', { class: 'num', 'data-field': `ratio-${key}` }, fmtRatio(ratio)),
      );
    const sentence = decodeRatioSentence(c);
    return [
      ...(sentence
        ? [
            h(
              'p',
              { class: 'cpu__sentence', 'data-testid': 'cpu-sentence' },
              `On ${r.model.id}, ${sentence}.`,
            ),
          ]
        : []),
      ...(isSoftwareBenchDevice(r.device)
        ? [
            h(
              'p',
              { class: 'notice', 'data-testid': 'cpu-software-note' },
              'This GPU is a software adapter (a CPU emulating a GPU): both columns ran on this CPU, so the ratio compares two ways of using it, not a GPU with a CPU.',
            ),
          ]
        : []),
      h(
        'div',
        {
          class: 'table-wrap',
          role: 'region',
          'aria-label': 'GPU and CPU medians',
          tabindex: '0',
          style: 'overflow-x: auto',
        },
        h(
          'table',
          { class: 'data', 'data-testid': 'cpu-table' },
          h('caption', { class: 'visually-hidden' }, 'GPU and CPU medians'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              // "GPU ÷ CPU" read as the TTFT cells' quotient was upside down: the column is how many times
              // faster the GPU is (a time's ratio is the CPU's ÷ the GPU's), and says so.
              ['Metric', 'This GPU', 'Your CPU', 'Speed-up'].map((t, i) =>
                h(
                  'th',
                  {
                    scope: 'col',
                    class: i ? 'num' : undefined,
                    ...(i === 3
                      ? { title: 'How many times faster this GPU is: rates GPU ÷ CPU, TTFT CPU ÷ GPU' }
                      : {}),
                  },
                  t,
                ),
              ),
            ),
          ),
          h(
            'tbody',
            {},
            row('TTFT', 'ttft', fmtMs(s.ttftMs?.median), fmtMs(c.ttftMs), c.ratio.ttft),
            row(
              'Prefill',
              'prefill',
              fmtRate(s.prefillTokensPerSecond?.median),
              fmtRate(c.prefillTokS),
              c.ratio.prefill,
            ),
            row(
              'Decode',
              'decode',
              fmtRate(s.decodeTokensPerSecond?.median),
              fmtRate(c.decodeTokS),
              c.ratio.decode,
            ),
          ),
        ),
      ),
      h(
        'p',
        { class: 'field__hint', 'data-testid': 'cpu-threads' },
        'Speed-up: how many times faster this GPU is than your CPU (for TTFT, the CPU’s time ÷ the GPU’s). ',
        `Medians of ${c.runs} CPU run${c.runs === 1 ? '' : 's'} on ${c.threads} thread${c.threads === 1 ? '' : 's'}; this page is ${c.crossOriginIsolated ? '' : 'not '}cross-origin isolated. `,
        c.crossOriginIsolated ? '' : ISOLATION_HINT,
      ),
    ];
  }
}
