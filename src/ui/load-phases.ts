/**
 * The load progress of "Choose a model" (src/ui/model-picker.ts): one row per load phase (download and
 * verify, shown only when they happen; fetch, upload to GPU, compile shaders), each a bar with its bytes or
 * pipelines, the download's rate and time left, and the time since the phase started. The rows carry
 * `data-state` (waiting, running, done, stopped, skipped) for the tests and the styles.
 */

import type { LoadPhase, LoadProgress } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { fmtBytes, fmtMs } from '../util/format.ts';

const PHASES: { phase: LoadPhase; label: string; unit: 'bytes' | 'count'; optional?: boolean }[] = [
  { phase: 'download', label: 'Download', unit: 'bytes', optional: true },
  { phase: 'verify', label: 'Verify', unit: 'bytes', optional: true },
  { phase: 'fetch', label: 'Fetch', unit: 'bytes' },
  { phase: 'upload', label: 'Upload to GPU', unit: 'bytes' },
  { phase: 'compile', label: 'Compile shaders', unit: 'count' },
];

/** A time left for people: "8 s", "3 min", "1 h 5 min". */
export function fmtEta(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

interface PhaseRow {
  row: HTMLElement;
  bar: HTMLProgressElement;
  text: HTMLElement;
  startMs?: number;
  /** The text before the time ("1.17 MB of 1.17 MB"), or 'starting' before a total came. */
  amount?: string;
}

/** The progress bars of a load, one per phase, in a group hidden until the first load. */
export class LoadPhases {
  /** The group of rows (`.phases`). */
  readonly element: HTMLElement;
  private readonly rows = new Map<LoadPhase, PhaseRow>();

  constructor() {
    this.element = h('div', { class: 'phases', 'aria-label': 'Load progress', role: 'group' });
    for (const { phase, label, optional } of PHASES) {
      const id = `load-${phase}`;
      const bar = h('progress', { id, class: 'phase__bar', max: '1', 'aria-describedby': `${id}-text` });
      const text = h('span', { id: `${id}-text`, class: 'phase__text' }, 'waiting');
      const row = h(
        'div',
        { class: 'phase', 'data-phase': phase },
        h('label', { for: id, class: 'phase__label' }, label),
        bar,
        text,
      );
      row.hidden = Boolean(optional);
      this.rows.set(phase, { row, bar, text });
      this.element.append(row);
    }
    this.element.hidden = true;
  }

  /**
   * Names the phases the engine taking this load has: our WebGPU engine uploads to the GPU and compiles
   * shaders; wllama (llama.cpp's wasm build on the CPU) reads the file into wasm memory and compiles nothing,
   * so its `upload` row reads "Load into wasm" and its compile row is hidden (a wllama load showed "Upload to
   * GPU" and "Compile shaders"; issue 46). Call after {@link reset}.
   */
  useBackend(backend: 'webgpu' | 'wllama' | 'webllm'): void {
    const cpu = backend === 'wllama';
    const upload = this.rows.get('upload');
    const label = upload?.row.querySelector('label');
    if (label) label.textContent = cpu ? 'Load into wasm' : 'Upload to GPU';
    const compile = this.rows.get('compile');
    if (compile) compile.row.hidden = cpu;
    this.cpu = cpu;
  }

  /** True while the rows are named for wllama (see {@link useBackend}). */
  private cpu = false;

  /** Shows the group with every phase waiting (the optional ones hidden until they report). */
  reset(): void {
    this.element.hidden = false;
    for (const [phase, r] of this.rows) {
      r.row.hidden =
        Boolean(PHASES.find((x) => x.phase === phase)?.optional) || (this.cpu && phase === 'compile');
      r.bar.value = 0;
      r.bar.removeAttribute('value'); // indeterminate until the phase reports a total
      r.text.textContent = 'waiting';
      r.startMs = undefined;
      r.amount = undefined;
      r.row.dataset.state = 'waiting';
    }
  }

  /** Shows a progress report on its phase's row; false (and nothing shown) for a phase without one. */
  update(p: LoadProgress): boolean {
    const r = this.rows.get(p.phase);
    if (!r) return false;
    // Fetch and upload stream together; both are over once compilation starts.
    if (p.phase === 'compile')
      for (const phase of ['fetch', 'upload'] as const) {
        const prev = this.rows.get(phase);
        if (prev && prev.row.dataset.state === 'running') prev.row.dataset.state = 'done';
      }
    const order = PHASES.findIndex((x) => x.phase === p.phase);
    if (this.cpu && p.phase === 'compile') return false;
    r.row.hidden = false;
    r.startMs ??= p.tMs;
    r.row.dataset.state = p.bytesTotal > 0 && p.bytesDone >= p.bytesTotal ? 'done' : 'running';
    const unit = PHASES[order].unit;
    if (p.bytesTotal > 0) {
      r.bar.max = p.bytesTotal;
      r.bar.value = p.bytesDone;
    }
    const amount =
      p.phase === 'download' && /cached copy/.test(p.note ?? '')
        ? `${fmtBytes(p.bytesTotal)} kept in this browser`
        : p.bytesTotal > 0
          ? unit === 'bytes'
            ? `${fmtBytes(p.bytesDone)} of ${fmtBytes(p.bytesTotal)}`
            : `${p.bytesDone} of ${p.bytesTotal} pipelines`
          : 'starting';
    const rate =
      p.phase === 'download' && p.bytesPerSec
        ? ` · ${fmtBytes(p.bytesPerSec)}/s${p.etaMs !== undefined && p.bytesDone < p.bytesTotal ? ` · ${fmtEta(p.etaMs)} left` : ''}`
        : '';
    r.amount = `${amount}${rate}`;
    r.text.textContent = `${r.amount} · ${fmtMs(p.tMs - r.startMs)}`;
    return true;
  }

  /**
   * Marks every phase done (the model loaded). `times`: the engine's own time for a phase (EngineStats'
   * load: fetchMs, uploadMs, compileMs), shown in place of the span between its first and last report, so
   * the bars say what the model summary says (fetch and upload stream while other work runs: a fetch
   * spanned 5.8 s of the load while reading took 51 ms). A phase that never got a total (a synthetic
   * model has nothing to fetch) says so instead of "starting".
   */
  finish(times: Partial<Record<LoadPhase, number>> = {}): void {
    for (const [phase, r] of this.rows) {
      r.row.dataset.state = 'done';
      if (r.amount === undefined || r.amount === 'starting') {
        if (!r.row.hidden) r.text.textContent = 'nothing to do';
        r.bar.max = 1;
        r.bar.value = 1;
      } else if (times[phase] !== undefined) r.text.textContent = `${r.amount} · ${fmtMs(times[phase])}`;
    }
  }

  /**
   * Marks the running phases stopped (the load failed or was cancelled), and the ones still waiting
   * "not reached" (they will not run now; state `skipped`).
   */
  stop(): void {
    for (const r of this.rows.values())
      if (r.row.dataset.state === 'running') {
        r.row.dataset.state = 'stopped';
        r.text.textContent = r.text.textContent?.replace(/^starting · .*$/, 'stopped') ?? 'stopped';
        r.bar.value = 0;
      } else if (r.row.dataset.state === 'waiting') {
        r.row.dataset.state = 'skipped';
        r.text.textContent = 'not reached';
      }
  }
}
