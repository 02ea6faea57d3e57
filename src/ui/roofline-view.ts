/**
 * "Measure GPU": the device's memory bandwidth and f32 matmul rate, measured by src/bench/roofline.ts on a
 * device of the page's own (the engine's worker keeps its device). Remembered per device fingerprint in
 * localStorage, so a reload keeps it. Software adapters are labelled loudly: their figures are the CPU's.
 * The reading against a model needs the bytes our kernels read per token, so WebLLM runs get none (said here).
 */

import { deviceFingerprint } from '../bench/fingerprint.ts';
import { type AdapterSnapshot, isSoftwareAdapter } from '../bench/gpu-report.ts';
import { buildRoofline, measureBandwidth, measureMatmul, prefillVsMatmulText } from '../bench/roofline.ts';
import type { BenchResult, BenchRoofline } from '../bench/types.ts';
import type { ModelInfo } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { fmtNum, fmtPct } from '../util/format.ts';
import type { DeviceMeasurement, Session } from './session.ts';

const STORE_PREFIX = 'webgpu-llm-bench.measurement.';

/** What to call a software adapter, e.g. "SwiftShader". */
export function softwareName(a: AdapterSnapshot): string {
  const m = /swiftshader|llvmpipe|lavapipe|softpipe|warp/i.exec(
    [a.vendor, a.architecture, a.device, a.description].join(' '),
  );
  if (!m) return 'Software adapter';
  const name = m[0].toLowerCase();
  return name === 'swiftshader' ? 'SwiftShader' : name === 'warp' ? 'WARP' : name;
}

/** The loud label for software adapters: "SwiftShader: CPU emulation, not your GPU". */
export function softwareWarning(a: AdapterSnapshot): string {
  return `${softwareName(a)}: CPU emulation, not your GPU`;
}

/** The roofline block of a result, when the device has been measured. */
export function rooflineFor(
  info: ModelInfo,
  m: DeviceMeasurement | undefined,
  result: Pick<BenchResult, 'runs' | 'summary'>,
): BenchRoofline | undefined {
  const decode = result.summary.decodeTokensPerSecond?.median;
  if (!m || decode === undefined || !Number.isFinite(decode)) return undefined;
  const runs = result.runs;
  const contextUsed = runs.length
    ? runs.reduce((s, r) => s + r.promptTokens + r.outputTokens / 2, 0) / runs.length
    : 0;
  return buildRoofline({
    model: info,
    bandwidthGBs: m.bandwidthGBs,
    matmulGflops: m.matmulGflops,
    decodeTokensPerSecond: decode,
    prefillTokensPerSecond: result.summary.prefillTokensPerSecond?.median,
    contextUsed,
  });
}

/** The sentences under a result: decode against bandwidth, prefill against the matmul rate. */
export function rooflineSentences(r: BenchRoofline | undefined, prefillTokPerS?: number): string[] {
  if (!r) return [];
  const out = [
    `Decode reaches ${fmtPct(r.fraction)} of what your GPU's memory allows (${fmtNum(r.bandwidthGBs)} GB/s measured, ` +
      `${fmtNum(r.bytesPerToken / 1e6)} MB read per token).`,
  ];
  if (r.matmulGflops !== undefined && r.prefillFraction !== undefined && prefillTokPerS !== undefined)
    out.push(
      `Prefill runs at ${fmtNum(r.prefillFraction * r.matmulGflops)} GFLOP/s; the measured f32 matmul rate is ` +
        `${fmtNum(r.matmulGflops)} GFLOP/s, and prefill reaches ${prefillVsMatmulText(r.prefillFraction, fmtPct)}.`,
    );
  return out;
}

async function measure(): Promise<DeviceMeasurement> {
  const adapter = await navigator.gpu?.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('WebGPU gave no adapter');
  const requiredFeatures: GPUFeatureName[] = adapter.features.has('timestamp-query')
    ? ['timestamp-query']
    : [];
  const device = await adapter.requestDevice({
    label: 'roofline',
    requiredFeatures,
    requiredLimits: {
      maxBufferSize: adapter.limits.maxBufferSize,
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    },
  });
  try {
    const bw = await measureBandwidth(device);
    const mm = await measureMatmul(device);
    return { bandwidthGBs: bw.GBs, matmulGflops: mm.GFLOPs, measuredAt: new Date().toISOString() };
  } finally {
    device.destroy();
  }
}

export class RooflineView {
  readonly element: HTMLElement;
  private readonly button: HTMLButtonElement;
  private readonly figures: HTMLElement;
  private readonly warning: HTMLElement;
  private readonly status: HTMLElement;
  private readonly webllmNote: HTMLElement;
  private running = false;

  constructor(private readonly session: Session) {
    this.button = h('button', { type: 'button', class: 'button' }, 'Measure GPU');
    this.button.addEventListener('click', () => void this.run());
    this.figures = h('dl', { class: 'figures', 'data-testid': 'gpu-figures' });
    this.warning = h('p', { class: 'notice notice--warn', 'data-testid': 'software-warning' });
    this.warning.hidden = true;
    this.status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
    this.webllmNote = h(
      'p',
      { class: 'muted', 'data-testid': 'roofline-webllm' },
      'The loaded WebLLM model gets no roofline reading: the bytes its kernels read per token are not known. ' +
        'The measurement itself is the GPU’s and holds for our engine’s models.',
    );
    this.element = h(
      'section',
      { class: 'card', 'aria-labelledby': 'roofline-heading', 'data-card': 'roofline' },
      h('h2', { id: 'roofline-heading', class: 'card__title' }, 'What your GPU allows'),
      h(
        'p',
        { class: 'card__lede' },
        'Decode reads every weight once per token, so memory bandwidth bounds it; prefill is bound by ' +
          'matrix-multiply speed. Measure both to see how close the model comes.',
      ),
      this.warning,
      this.figures,
      this.webllmNote,
      h('div', { class: 'actions' }, this.button),
      this.status,
    );
    session.addEventListener('change', () => this.render());
    this.render();
  }

  /** Restores a stored measurement for the session's device. */
  restore(): void {
    const a = this.session.adapter;
    if (!a || this.session.measurement) return;
    try {
      const raw = localStorage.getItem(STORE_PREFIX + deviceFingerprint(a).id);
      if (raw) this.session.setMeasurement(JSON.parse(raw) as DeviceMeasurement);
    } catch {
      // storage unavailable: measure again
    }
  }

  private render(): void {
    const a = this.session.adapter;
    const m = this.session.measurement;
    this.warning.hidden = !(a && isSoftwareAdapter(a));
    if (a && isSoftwareAdapter(a))
      this.warning.replaceChildren(
        h('strong', {}, `${softwareWarning(a)}. `),
        'These figures are your processor running GPU code, not a graphics card.',
      );
    const item = (k: string, v: string, f: string) =>
      h('div', { class: 'figure' }, h('dt', {}, k), h('dd', { 'data-field': f }, v));
    this.figures.replaceChildren(
      item('Memory bandwidth', m ? `${fmtNum(m.bandwidthGBs)} GB/s` : 'not measured', 'bandwidth'),
      item('Matmul (f32)', m?.matmulGflops ? `${fmtNum(m.matmulGflops)} GFLOP/s` : 'not measured', 'matmul'),
    );
    this.webllmNote.hidden = !this.session.model || this.session.ours;
    if (this.session.backend === 'wllama')
      this.webllmNote.textContent =
        'The loaded model runs on the CPU (llama.cpp wasm): a GPU roofline says nothing about it.';
    else
      this.webllmNote.textContent =
        'The loaded WebLLM model gets no roofline reading: the bytes its kernels read per token are not known. ' +
        'The measurement itself is the GPU’s and holds for our engine’s models.';
    this.button.disabled = this.running || !a || this.session.task === 'bench';
    this.button.textContent = m ? 'Measure again' : 'Measure GPU';
  }

  async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.element.setAttribute('aria-busy', 'true');
    this.status.textContent = 'Measuring memory bandwidth and matmul speed…';
    this.render();
    try {
      const m = await measure();
      this.session.setMeasurement(m);
      const a = this.session.adapter;
      if (a) {
        try {
          localStorage.setItem(STORE_PREFIX + deviceFingerprint(a).id, JSON.stringify(m));
        } catch {
          // not stored; fine
        }
      }
      this.status.textContent = `Measured: ${fmtNum(m.bandwidthGBs)} GB/s, ${fmtNum(m.matmulGflops)} GFLOP/s.`;
    } catch (e) {
      this.status.textContent = `Measurement failed: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      this.running = false;
      this.element.removeAttribute('aria-busy');
      this.render();
    }
  }
}
