/**
 * Charts for the page: the token timeline (uPlot: token index against ms since request start, live for
 * the current run, then every measured run of a result overlaid), and a bar list comparing decode rates
 * (plain elements: labels wrap on a phone and a screen reader reads it as a list).
 *
 * Every chart has a text alternative next to it (the results table, the bar values); the canvas itself is
 * `aria-hidden`.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../dom/h.ts';
import { fmtNum, niceCeil } from '../util/format.ts';

/** One run's token times, ms since its request start (index i = output token i + 1). */
export type TokenTimes = readonly number[];

/** Token times of a run from its TTFT and inter-token gaps: [ttft, ttft + itl0, …]. */
export function tokenTimesFromRun(ttftMs: number, itlMs: readonly number[]): number[] {
  const out = [ttftMs];
  let t = ttftMs;
  for (const d of itlMs) {
    t += d;
    out.push(t);
  }
  return out;
}

const PALETTE = ['#4f46e5', '#0ea5e9', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#ec4899', '#14b8a6'];

/**
 * A colour for each of `n` series, none repeated: the palette while it lasts, else `n` hues spread evenly
 * around the colour wheel (a plan of 3 prompts × 3 runs has 9 runs).
 */
export function seriesColors(n: number): string[] {
  if (n <= PALETTE.length) return PALETTE.slice(0, n);
  return Array.from({ length: n }, (_, i) => `hsl(${Math.round(245 + (i * 360) / n) % 360} 70% 48%)`);
}

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/**
 * Token index (y) against ms since request start (x), one series per run. Redraws are batched to one per
 * animation frame, so streaming at any rate costs at most one draw per frame.
 */
export class TokenChart {
  readonly element: HTMLElement;
  private plot: uPlot | undefined;
  private runs: { label: string; times: number[] }[] = [];
  private pending = false;
  private readonly resize: ResizeObserver;
  private readonly height: number;

  constructor(opts: { label: string; height?: number }) {
    this.height = opts.height ?? 220;
    this.element = h('div', { class: 'chart', role: 'img', 'aria-label': opts.label });
    this.resize = new ResizeObserver(() => this.fit());
    this.resize.observe(this.element);
  }

  /** Starts over with one empty series (a new live run). */
  startRun(label: string): void {
    this.runs = [{ label, times: [] }];
    this.rebuild();
  }

  /** Adds a token to the last series at `tMs` since its request start. */
  push(tMs: number): void {
    if (!this.runs.length) this.runs.push({ label: 'run', times: [] });
    this.runs[this.runs.length - 1].times.push(tMs);
    this.count();
    this.schedule();
  }

  /** Replaces everything with these runs (e.g. every measured run of a result). */
  show(runs: { label: string; times: TokenTimes }[]): void {
    this.runs = runs.map((r) => ({ label: r.label, times: [...r.times] }));
    this.rebuild();
  }

  clear(): void {
    this.runs = [];
    this.rebuild();
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.plot?.setData(this.data());
    });
  }

  private data(): uPlot.AlignedData {
    if (this.runs.length === 1) {
      const t = this.runs[0].times;
      return [t, t.map((_, i) => i + 1)];
    }
    if (this.runs.length === 0) return [[], []];
    const tables = this.runs.map((r) => [r.times, r.times.map((_, i) => i + 1)] as uPlot.AlignedData);
    return uPlot.join(tables);
  }

  private width(): number {
    return Math.max(200, Math.floor(this.element.clientWidth || 600));
  }

  private fit(): void {
    if (this.plot && this.element.clientWidth > 0 && this.plot.width !== this.width())
      this.plot.setSize({ width: this.width(), height: this.height });
  }

  /** The tokens drawn, on the element for tests (a canvas tells them nothing). */
  private count(): void {
    this.element.dataset.tokens = String(this.runs.reduce((n, r) => n + r.times.length, 0));
  }

  private rebuild(): void {
    this.count();
    this.plot?.destroy();
    const text = cssVar('--muted', '#5b6575');
    const grid = cssVar('--border', '#dde1e7');
    const axis = (label: string): uPlot.Axis => ({
      label,
      stroke: text,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 },
      labelSize: 22,
      font: '12px system-ui, sans-serif',
      labelFont: '12px system-ui, sans-serif',
    });
    const series: uPlot.Series[] = [{ label: 'ms' }];
    const colors = seriesColors(this.runs.length);
    this.runs.forEach((r, i) => {
      const color = colors[i];
      series.push({
        label: r.label,
        stroke: color,
        width: 2,
        spanGaps: true,
        points: { show: (u: uPlot) => (u.data[0]?.length ?? 0) < 80, size: 5, fill: color },
        value: (_u: uPlot, v: number | null) => (v == null ? '–' : `token ${v}`),
      });
    });
    const opts: uPlot.Options = {
      width: this.width(),
      height: this.height,
      // A key of the runs' colours only: a live legend would show the hovered values, and placeholders
      // ("ms: --", "run 1: –") while nothing is hovered.
      legend: { show: this.runs.length > 1, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        // From 0 to a round number past the data, so the ticks fall on round numbers (0, 200, 400, 600
        // instead of 0.00, 279, 558).
        x: { time: false, range: (_u, _min, max) => [0, niceCeil(Math.max(1, max))] },
        y: { range: (_u, _min, max) => [0, niceCeil(Math.max(1, max))] },
      },
      axes: [
        {
          ...axis('ms since request start'),
          values: (_u, ticks) => ticks.map((t) => t.toLocaleString('en-US', { maximumFractionDigits: 2 })),
        },
        axis('token'),
      ],
      series,
    };
    this.plot = new uPlot(opts, this.data(), this.element);
    this.plot.root.setAttribute('aria-hidden', 'true');
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
  }
}

/** One bar of a {@link barList}. */
export interface Bar {
  label: string;
  value: number;
  /** Shown after the value, e.g. "tok/s". */
  unit: string;
  /** Smaller text under the label. */
  detail?: string;
  /** Marks a bar (e.g. this device) with a stronger colour. */
  highlight?: boolean;
}

/** A horizontal bar list: label, bar scaled to the largest value, value. */
export function barList(title: string, bars: readonly Bar[]): HTMLElement {
  const max = Math.max(...bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)), 1e-12);
  return h(
    'ul',
    { class: 'bars', 'aria-label': title },
    bars.map((b) => {
      const pct = Number.isFinite(b.value) ? Math.max(0.5, (b.value / max) * 100) : 0;
      const bar = h('span', { class: 'bars__fill', 'aria-hidden': 'true' });
      bar.style.width = `${pct}%`;
      return h(
        'li',
        { class: b.highlight ? 'bars__row bars__row--mine' : 'bars__row' },
        h(
          'span',
          { class: 'bars__label' },
          h('span', { class: 'bars__name' }, b.label),
          b.detail ? h('span', { class: 'bars__detail' }, b.detail) : null,
        ),
        h('span', { class: 'bars__track' }, bar),
        h('span', { class: 'bars__value' }, `${fmtNum(b.value)} ${b.unit}`),
      );
    }),
  );
}
