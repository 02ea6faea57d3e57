/**
 * The charts of the llama-bench card (src/ui/llama-bench-view.ts): a small responsive SVG line chart
 * ({@link lineChart}, axes from 0, ticks, one colour per series, a legend), and the two drawn with it:
 * tokens/s against KV depth for the tests just run ({@link depthChart}), and decode tokens/s against model
 * size and quantization for the models tested this session ({@link sizeChart}). DOM only: the numbers
 * come from the view.
 */
import type { LlamaBenchTest } from '../bench/llama-bench.ts';
import { h } from '../dom/h.ts';
import { fmtBytes, fmtNum, niceStep } from '../util/format.ts';

const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  ...children: (SVGElement | string)[]
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

/** A series of a {@link lineChart}. */
interface Series {
  label: string;
  points: { x: number; y: number; tip?: string }[];
  /** Draw lines between points (false: a scatter). */
  line?: boolean;
}

/** One llama-bench run kept for the size chart. */
export interface SizePoint {
  model: string;
  quant: string;
  bytes: number;
  tg: number;
  pp?: number;
}

const COLORS = ['var(--accent, #2563eb)', '#d97706', '#059669', '#9333ea', '#dc2626'];

/** A small responsive SVG chart: axes from 0, ticks, one colour per series, a legend. */
function lineChart(
  title: string,
  xLabel: string,
  yLabel: string,
  series: Series[],
  opts: { logX?: boolean; xMark?: { x: number; label: string } } = {},
): HTMLElement {
  const W = 400;
  const H = 220;
  const m = { l: 48, r: 12, t: 10, b: 38 };
  const all = series.flatMap((s) => s.points);
  const fig = h('figure', { class: 'lb-chart' }, h('figcaption', { class: 'lb-chart__title' }, title));
  if (all.length === 0) {
    fig.append(h('p', { class: 'card__lede' }, 'No data yet.'));
    return fig;
  }
  const tx = (x: number) => (opts.logX ? Math.log10(Math.max(x, 1)) : x);
  const xs = all.map((p) => tx(p.x));
  let x0 = opts.logX ? Math.min(...xs) : 0;
  let x1 = Math.max(...xs, opts.xMark ? tx(opts.xMark.x) : -Infinity);
  if (x1 <= x0) {
    x1 = x0 + 1;
    x0 = opts.logX ? x0 - 1 : x0;
  }
  // Four grid steps of a round size past the data (0, 50, 100, 150, 200, not 0.00, 46.7, 93.4…).
  const yStep = niceStep((Math.max(...all.map((p) => p.y)) * 1.05) / 4 || 0.25);
  const y1 = 4 * yStep;
  const X = (x: number) => m.l + ((tx(x) - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (y: number) => H - m.b - (y / y1) * (H - m.t - m.b);
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-label': title,
    class: 'lb-chart__svg',
  });
  root.append(
    svg('line', { x1: m.l, y1: H - m.b, x2: W - m.r, y2: H - m.b, class: 'lb-axis' }),
    svg('line', { x1: m.l, y1: m.t, x2: m.l, y2: H - m.b, class: 'lb-axis' }),
  );
  for (let i = 0; i <= 4; i++) {
    const v = yStep * i;
    root.append(
      svg('line', { x1: m.l, y1: Y(v), x2: W - m.r, y2: Y(v), class: 'lb-grid' }),
      svg(
        'text',
        { x: m.l - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'lb-tick' },
        v === 0 ? '0' : fmtNum(v),
      ),
    );
  }
  const xt = [...new Set(all.map((p) => p.x))].sort((a, b) => a - b);
  for (const v of xt.length <= 8 ? xt : xt.filter((_, i) => i % Math.ceil(xt.length / 8) === 0)) {
    root.append(
      svg(
        'text',
        {
          x: X(v),
          y: H - m.b + 16,
          // The last tick at the right edge would be cut in half: end-anchored there.
          'text-anchor': X(v) > W - m.r - 16 ? 'end' : 'middle',
          class: 'lb-tick',
        },
        opts.logX ? fmtBytes(v) : String(v),
      ),
    );
  }
  root.append(
    svg('text', { x: (m.l + W - m.r) / 2, y: H - 6, 'text-anchor': 'middle', class: 'lb-label' }, xLabel),
    svg(
      'text',
      {
        x: 12,
        y: (m.t + H - m.b) / 2,
        'text-anchor': 'middle',
        class: 'lb-label',
        transform: `rotate(-90 12 ${(m.t + H - m.b) / 2})`,
      },
      yLabel,
    ),
  );
  if (opts.xMark) {
    const xm = X(opts.xMark.x);
    root.append(
      svg('line', { x1: xm, y1: m.t, x2: xm, y2: H - m.b, class: 'lb-mark' }),
      svg(
        'text',
        { x: xm - 4, y: m.t + 10, 'text-anchor': 'end', class: 'lb-tick lb-mark__label' },
        opts.xMark.label,
      ),
    );
  }
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    if (s.line !== false && pts.length > 1)
      root.append(
        svg('polyline', {
          points: pts.map((p) => `${X(p.x)},${Y(p.y)}`).join(' '),
          fill: 'none',
          stroke: c,
          'stroke-width': 2,
        }),
      );
    for (const p of pts) {
      const dot = svg('circle', { cx: X(p.x), cy: Y(p.y), r: 4, fill: c });
      dot.append(svg('title', {}, p.tip ?? `${s.label}: ${fmtNum(p.y)}`));
      root.append(dot);
    }
  });
  // The SVG scales with its box (viewBox 400 wide): at 390 px of screen a 12-unit tick was drawn ≈ 10 px.
  // `--lb-scale` (px per unit) lets llama-bench.css keep the text at least 12 px wherever it is drawn.
  if (typeof ResizeObserver !== 'undefined')
    new ResizeObserver(() => {
      const w = root.getBoundingClientRect().width;
      if (w > 0) fig.style.setProperty('--lb-scale', String(w / W));
    }).observe(root);
  fig.append(
    root,
    h(
      'ul',
      { class: 'lb-legend' },
      series.map((s, i) => {
        const sw = h('span', { class: 'lb-legend__swatch', 'aria-hidden': 'true' });
        sw.style.background = COLORS[i % COLORS.length];
        return h('li', {}, sw, s.label);
      }),
    ),
  );
  return fig;
}

/** Tokens/s against KV depth: prefill (pp) and decode (tg) tests, the axis reaching the loaded context `ctx`. */
export function depthChart(tests: readonly LlamaBenchTest[], ctx: number | undefined): HTMLElement {
  const byKind = (kind: 'pp' | 'tg'): Series => ({
    label: kind === 'pp' ? 'prefill (pp)' : 'decode (tg)',
    points: tests
      .filter((t) => (kind === 'pp' ? t.nPrompt : t.nGen) > 0)
      .map((t) => ({
        x: t.depth,
        y: t.tokensPerSecond.mean,
        tip: `${t.name}: ${fmtNum(t.tokensPerSecond.mean)} tok/s`,
      })),
  });
  return lineChart(
    'Tokens/s against KV depth',
    'KV depth (tokens)',
    'tok/s',
    [byKind('pp'), byKind('tg')],
    ctx ? { xMark: { x: ctx, label: `context ${ctx}` } } : {},
  );
}

/** Decode tokens/s against model size (log scale), one scatter series per quantization. */
export function sizeChart(sizePoints: readonly SizePoint[]): HTMLElement {
  const quants = [...new Set(sizePoints.map((p) => p.quant))];
  return lineChart(
    'Decode tokens/s against model size and quantization (this session)',
    'weights',
    'tg tok/s',
    quants.map((q) => ({
      label: q,
      line: false,
      points: sizePoints
        .filter((p) => p.quant === q)
        .map((p) => ({
          x: p.bytes,
          y: p.tg,
          tip: `${p.model} (${fmtBytes(p.bytes)}): ${fmtNum(p.tg)} tok/s`,
        })),
    })),
    { logX: true },
  );
}
