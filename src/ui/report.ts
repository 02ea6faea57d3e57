/**
 * The GPU tab of the page: asks for WebGPU once, then renders the adapter, its LLM features, its
 * limits, plain-language readings and the device fingerprint into `#gpu-report` (see `index.html`).
 * The reading itself lives in `gpu-report.ts` (no DOM); this file only builds elements.
 *
 * For tests and later tabs, `#gpu-report` carries `data-gpu-status` (`pending`, then a {@link GpuStatus})
 * and the last probe is kept on `window.__gpuProbe`.
 */

import { type DeviceFingerprint, deviceFingerprint } from '../bench/fingerprint.ts';
import {
  type AdapterSnapshot,
  explainProblem,
  type GpuProbe,
  type GpuReport,
  type GpuStatus,
  type Level,
  probeGpu,
  type Reading,
  readReport,
} from '../bench/gpu-report.ts';
import { kernelReadings } from '../bench/kernel-readings.ts';
import { type Child, h } from '../dom/h.ts';
import type { KernelsInfo } from '../webgpu/kernel-plan.ts';

declare global {
  interface Window {
    __gpuProbe?: GpuProbe;
  }
}

const LEVEL_ICON: Record<Level, string> = { ok: '✓', info: 'i', warn: '!' };
const LEVEL_LABEL: Record<Level, string> = { ok: 'Good', info: 'Note', warn: 'Warning' };

function badge(text: string, level: Level, key: string): HTMLLIElement {
  return h(
    'li',
    { class: `badge badge--${level}`, 'data-badge': key },
    h('span', { class: 'badge__icon', 'aria-hidden': 'true' }, LEVEL_ICON[level]),
    text,
  );
}

function card(title: string, id: string, opts: { wide?: boolean; tone?: Level } = {}, ...body: Child[]) {
  const headingId = `${id}-heading`;
  const cls = ['card', opts.wide ? 'card--wide' : '', opts.tone ? `card--${opts.tone}` : ''].filter(Boolean);
  return h(
    'section',
    { class: cls.join(' '), 'aria-labelledby': headingId, 'data-card': id },
    h('h2', { id: headingId, class: 'card__title' }, title),
    ...body,
  );
}

function statusBadges(r: GpuReport | undefined, webgpuOk: boolean): HTMLUListElement {
  const list = h('ul', { class: 'badges', 'aria-label': 'Status' });
  list.append(
    badge(webgpuOk ? 'WebGPU available' : 'WebGPU unavailable', webgpuOk ? 'ok' : 'warn', 'webgpu'),
  );
  if (r) {
    list.append(
      r.software
        ? badge('Software adapter', 'warn', 'software')
        : badge('Hardware adapter', 'ok', 'hardware'),
    );
    for (const f of r.features)
      list.append(badge(`${f.name}${f.present ? '' : ' missing'}`, f.present ? 'ok' : 'warn', f.name));
  }
  return list;
}

function adapterCard(r: GpuReport): HTMLElement {
  const s = r.snapshot;
  const row = (label: string, field: string, value: string) =>
    h(
      'div',
      { class: 'kv__row' },
      h('dt', {}, label),
      h('dd', { 'data-field': field }, value || h('span', { class: 'muted' }, 'not reported')),
    );
  return card(
    'Adapter',
    'adapter',
    {},
    h(
      'dl',
      { class: 'kv' },
      row('Vendor', 'vendor', s.vendor),
      row('Architecture', 'architecture', s.architecture),
      row('Device', 'device', s.device),
      row('Description', 'description', s.description),
      row(
        'Fallback adapter',
        'isFallbackAdapter',
        s.isFallbackAdapter ? 'Yes (software, for compatibility)' : 'No',
      ),
    ),
    r.software
      ? h('p', { class: 'card__foot' }, `Treated as software: ${r.softwareReasons.join('; ')}.`)
      : null,
  );
}

function fingerprintCard(fp: DeviceFingerprint): HTMLElement {
  const copy = h('button', { type: 'button', class: 'button', 'aria-describedby': 'fingerprint-id' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(fp.id);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Copy failed';
    }
    setTimeout(() => {
      copy.textContent = 'Copy';
    }, 1500);
  });
  return card(
    'Device fingerprint',
    'fingerprint',
    {},
    h(
      'p',
      { class: 'fingerprint' },
      h('code', { id: 'fingerprint-id', class: 'fingerprint__id', 'data-testid': 'fingerprint-id' }, fp.id),
      copy,
    ),
    h('p', { class: 'fingerprint__label', 'data-testid': 'fingerprint-label' }, fp.label),
    h(
      'p',
      { class: 'card__foot' },
      'A stable id for this adapter, from its vendor, architecture, device, description, fallback flag, ' +
        'LLM features and the limits below. The same GPU and driver give the same id.',
    ),
  );
}

function readingsList(readings: readonly Reading[], label?: string): HTMLUListElement {
  return h(
    'ul',
    { class: 'readings', ...(label ? { 'aria-label': label } : {}) },
    readings.map((x) =>
      h(
        'li',
        { class: `reading reading--${x.level}`, 'data-level': x.level },
        h(
          'span',
          { class: 'reading__icon', role: 'img', 'aria-label': LEVEL_LABEL[x.level] },
          LEVEL_ICON[x.level],
        ),
        h(
          'div',
          {},
          h('p', { class: 'reading__text' }, x.text),
          x.detail ? h('p', { class: 'reading__detail' }, x.detail) : null,
        ),
      ),
    ),
  );
}

function readingsCard(r: GpuReport): HTMLElement {
  return card('What this means', 'readings', {}, readingsList(r.readings));
}

/** What {@link renderKernels} shows: our engine's loaded model, another backend's, or none. */
export type LoadedKernels =
  | { kind: 'none' }
  | { kind: 'other'; backend: string; model: string }
  | { kind: 'ours'; model: string; kernels: KernelsInfo };

/**
 * Renders "Kernels of the loaded model" into `root` (`#gpu-kernels`, below the adapter report): our
 * engine's kernel choices as readings ({@link kernelReadings}), or a line saying why there are none.
 */
export function renderKernels(root: HTMLElement, loaded: LoadedKernels): void {
  const body =
    loaded.kind === 'ours'
      ? [
          h('p', { class: 'card__foot' }, `${loaded.model}: what this load chose on this adapter, and why.`),
          readingsList(kernelReadings(loaded.kernels), 'Kernels'),
        ]
      : [
          h(
            'p',
            { class: 'muted' },
            loaded.kind === 'other'
              ? `${loaded.model} runs on ${loaded.backend}, which does not report its kernels.`
              : 'Load a model with our engine (Benchmark tab) to see which kernels it runs here and why: the prefill tile, subgroup matrices chosen or not, attention and decode.',
          ),
        ];
  root.replaceChildren(
    h('div', { class: 'grid' }, card('Kernels of the loaded model', 'kernels', { wide: true }, ...body)),
  );
  root.dataset.kernels = loaded.kind;
}

function featuresCard(r: GpuReport): HTMLElement {
  return card(
    'Features for LLMs',
    'features',
    {},
    h(
      'ul',
      { class: 'features' },
      r.features.map((f) =>
        h(
          'li',
          { class: 'feature', 'data-feature': f.name, 'data-present': String(f.present) },
          h(
            'div',
            { class: 'feature__head' },
            h('code', {}, f.name),
            h(
              'span',
              { class: `pill pill--${f.present ? 'ok' : 'warn'}` },
              f.present ? 'Available' : 'Missing',
            ),
          ),
          h('p', { class: 'feature__meaning' }, f.meaning),
        ),
      ),
    ),
  );
}

// The limits table has explicit ARIA roles because narrow screens restyle it as blocks, which makes
// some screen readers drop the implicit table semantics.

function limitsCard(r: GpuReport): HTMLElement {
  return card(
    'Limits',
    'limits',
    { wide: true },
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-labelledby': 'limits-heading', tabindex: '0' },
      h(
        'table',
        { class: 'limits', role: 'table' },
        h('caption', { class: 'visually-hidden' }, 'Adapter limits that matter for LLM inference'),
        h(
          'thead',
          { role: 'rowgroup' },
          h(
            'tr',
            { role: 'row' },
            h('th', { scope: 'col', role: 'columnheader' }, 'Limit'),
            h('th', { scope: 'col', role: 'columnheader', class: 'num' }, 'Value'),
            h('th', { scope: 'col', role: 'columnheader' }, 'What it bounds'),
          ),
        ),
        h(
          'tbody',
          { role: 'rowgroup' },
          r.limits.map((l) =>
            h(
              'tr',
              {
                role: 'row',
                'data-limit': l.name,
                'data-value': l.value === undefined ? undefined : String(l.value),
              },
              h('th', { scope: 'row', role: 'rowheader' }, h('code', {}, l.name)),
              h(
                'td',
                { role: 'cell', class: 'num limits__value' },
                h('span', { class: 'limits__shown' }, l.shown),
                l.unit === 'bytes' && l.value !== undefined
                  ? h('span', { class: 'limits__exact' }, `${l.value.toLocaleString('en-US')} bytes`)
                  : null,
              ),
              h('td', { role: 'cell', class: 'limits__meaning' }, l.meaning),
            ),
          ),
        ),
      ),
    ),
  );
}

function everythingCard(s: AdapterSnapshot): HTMLElement {
  return card(
    'Everything the adapter reports',
    'all',
    { wide: true },
    h(
      'details',
      { class: 'all' },
      h('summary', {}, `${s.features.length} features and ${Object.keys(s.limits).length} limits`),
      h('h3', {}, 'Features'),
      h(
        'ul',
        { class: 'chips' },
        s.features.map((f) => h('li', {}, h('code', {}, f))),
      ),
      h('h3', {}, 'Limits'),
      h(
        'dl',
        { class: 'kv kv--dense' },
        Object.entries(s.limits).map(([k, v]) =>
          h(
            'div',
            { class: 'kv__row' },
            h('dt', {}, h('code', {}, k)),
            h('dd', {}, v.toLocaleString('en-US')),
          ),
        ),
      ),
    ),
  );
}

function problemCard(p: Exclude<GpuProbe, { status: 'ok' }>): HTMLElement {
  const x = explainProblem(p);
  return h(
    'section',
    {
      class: 'card card--wide card--warn problem',
      role: 'alert',
      'aria-labelledby': 'problem-heading',
      'data-testid': 'gpu-problem',
      'data-problem': p.status,
    },
    h('h2', { id: 'problem-heading', class: 'card__title' }, x.title),
    h('p', { class: 'problem__detail' }, x.detail),
    h('h3', {}, 'What you can do'),
    h(
      'ol',
      { class: 'problem__actions' },
      x.actions.map((a) => h('li', {}, a)),
    ),
  );
}

/** Renders a probe into the container (replacing what was there). */
export function renderProbe(root: HTMLElement, probe: GpuProbe): void {
  const adapter = probe.status === 'ok' || probe.status === 'device-failed' ? probe.adapter : undefined;
  const report = adapter ? readReport(adapter) : undefined;
  const parts: HTMLElement[] = [statusBadges(report, probe.status === 'ok')];
  const grid = h('div', { class: 'grid' });
  if (probe.status !== 'ok') grid.append(problemCard(probe));
  if (report) {
    grid.append(
      readingsCard(report),
      adapterCard(report),
      featuresCard(report),
      fingerprintCard(deviceFingerprint(report.snapshot)),
      limitsCard(report),
      everythingCard(report.snapshot),
    );
  }
  parts.push(grid);
  root.replaceChildren(...parts);
  root.dataset.gpuStatus = probe.status satisfies GpuStatus;
  root.removeAttribute('aria-busy');
}

/** Probes WebGPU once and renders the report into `#gpu-report`; resolves with the probe. */
export async function startGpuReport(): Promise<GpuProbe> {
  const probe = await probeGpu({ gpu: navigator.gpu, isSecureContext: window.isSecureContext });
  window.__gpuProbe = probe;
  const root = document.getElementById('gpu-report');
  if (root) renderProbe(root, probe);
  return probe;
}
