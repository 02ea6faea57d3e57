/**
 * The page entry: four tabs (Benchmark, Chat, History, GPU) as an ARIA tablist, with the views wired to
 * one {@link Session} (the engine worker and the loaded model). The tab follows the URL hash
 * (`#benchmark`, `#chat`, `#history`, `#gpu`). Also installs `window.benchApi` for `npm run bench`.
 */

import { openHistory } from '../bench/history.ts';
import { isOurKernels } from '../bench/kernel-readings.ts';
import { installBenchApi } from '../bench/page-api.ts';
import { h } from '../dom/h.ts';
import { BenchView } from './bench-view.ts';
import { ChatView } from './chat-view.ts';
import { CpuCompareView } from './cpu-compare-view.ts';
import { HistoryView } from './history-view.ts';
import { LlamaBenchView } from './llama-bench-view.ts';
import { ModelPicker } from './model-picker.ts';
import { QualityView } from './quality-view.ts';
import { RemoteView } from './remote-view.ts';
import { renderKernels, startGpuReport } from './report.ts';
import { RooflineView } from './roofline-view.ts';
import { Session } from './session.ts';

const TABS = ['benchmark', 'chat', 'history', 'gpu'] as const;
type Tab = (typeof TABS)[number];

/** The tablist: click, arrow keys (Left/Right, Home/End; automatic activation) and the URL hash. */
class Tabs {
  private readonly buttons: HTMLButtonElement[];
  onSelect: ((tab: Tab) => void) | undefined;
  current: Tab = 'benchmark';

  constructor(root: HTMLElement) {
    this.buttons = [...root.querySelectorAll<HTMLButtonElement>('[role="tab"]')];
    this.buttons.forEach((b, i) => {
      b.addEventListener('click', () => this.select(TABS[i], { updateHash: true }));
      b.addEventListener('keydown', (e) => {
        const n = this.buttons.length;
        const to =
          e.key === 'ArrowRight'
            ? (i + 1) % n
            : e.key === 'ArrowLeft'
              ? (i - 1 + n) % n
              : e.key === 'Home'
                ? 0
                : e.key === 'End'
                  ? n - 1
                  : -1;
        if (to < 0) return;
        e.preventDefault();
        this.select(TABS[to], { updateHash: true });
        this.buttons[to].focus();
      });
    });
    window.addEventListener('hashchange', () => {
      const t = Tabs.fromHash();
      if (t) this.select(t);
    });
  }

  static fromHash(): Tab | undefined {
    const h = location.hash.slice(1);
    return (TABS as readonly string[]).includes(h) ? (h as Tab) : undefined;
  }

  select(tab: Tab, opts: { updateHash?: boolean } = {}): void {
    this.current = tab;
    TABS.forEach((t, i) => {
      const on = t === tab;
      const b = this.buttons[i];
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
      const panel = document.getElementById(`panel-${t}`);
      if (panel) panel.hidden = !on;
    });
    if (opts.updateHash && location.hash !== `#${tab}`) history.replaceState(null, '', `#${tab}`);
    this.onSelect?.(tab);
  }
}

function main(): void {
  installBenchApi();
  const session = new Session();
  const picker = new ModelPicker(session);
  const roofline = new RooflineView(session);
  const bench = new BenchView(session, picker.element, roofline.element);
  const remoteView = new RemoteView(session, () => bench.plan());
  picker.remotePane().append(remoteView.element);
  const chat = new ChatView(session);
  const historyView = new HistoryView(session, () => openHistory());

  const benchRoot = document.getElementById('bench-root');
  const webgpuNotice = h('div', { class: 'notice notice--warn', role: 'alert', 'data-testid': 'no-webgpu' });
  webgpuNotice.hidden = true;
  const cpuView = new CpuCompareView(session);
  bench.element.append(
    cpuView.element,
    new LlamaBenchView(session).element,
    new QualityView(session).element,
  );
  benchRoot?.replaceChildren(webgpuNotice, bench.element);
  document.getElementById('chat-root')?.replaceChildren(chat.element);
  document.getElementById('history-root')?.replaceChildren(historyView.element);

  const tablist = document.querySelector<HTMLElement>('[role="tablist"]');
  if (!tablist) return;
  const tabs = new Tabs(tablist);
  tabs.onSelect = (t) => {
    if (t === 'history') void historyView.reload();
  };
  tabs.select(Tabs.fromHash() ?? 'benchmark');

  chat.onNeedModel = () => {
    tabs.select('benchmark', { updateHash: true });
    document.getElementById('model-heading')?.scrollIntoView({ block: 'start' });
  };
  historyView.onShow = (r) => {
    bench.showResult(r, false);
    tabs.select('benchmark', { updateHash: true });
    const results = document.getElementById('results-heading');
    results?.setAttribute('tabindex', '-1');
    results?.focus();
  };
  bench.onResult = async (r) => {
    await historyView.save(r);
    cpuView.afterGpuRun(r);
  };
  cpuView.onResult = async (r) => {
    bench.showResult(r, false);
    await historyView.save(r);
  };
  remoteView.live = bench.remoteLive();
  // The Results card shows the remote run (it kept the last local run's, under "Live: Remote · Done").
  remoteView.onPartial = (r) => bench.showResult(r, true);
  remoteView.onResult = async (r) => {
    bench.showResult(r, false);
    await historyView.save(r);
  };
  remoteView.onStatus = (t) => bench.showLiveStatus(`Remote · ${t}`);

  // The GPU tab's "Kernels of the loaded model": what our engine chose at the last load, and why.
  const kernelsRoot = document.getElementById('gpu-kernels');
  // Redrawn only when the model or backend changes (the session's `change` also fires for every task).
  let kernelsShown: unknown = null;
  const showKernels = () => {
    const m = session.model;
    const key = m?.info ?? 'none'; // each load gives a new ModelInfo
    if (!kernelsRoot || key === kernelsShown) return;
    kernelsShown = key;
    const backendName = { webgpu: 'our engine', webllm: 'WebLLM', wllama: 'llama.cpp (wasm, CPU)' }[
      session.backend
    ];
    renderKernels(
      kernelsRoot,
      !m
        ? { kind: 'none' }
        : session.backend === 'webgpu' && isOurKernels(m.info.kernels)
          ? { kind: 'ours', model: m.id, kernels: m.info.kernels }
          : { kind: 'other', backend: backendName, model: m.id },
    );
  };
  session.addEventListener('change', showKernels);
  showKernels();

  void startGpuReport().then((probe) => {
    if (probe.status === 'ok' || probe.status === 'device-failed') session.setAdapter(probe.adapter);
    if (probe.status !== 'ok') {
      const gpuLink = h('a', { href: '#gpu' }, 'the GPU tab');
      // The engine choice becomes auto, which runs models on the CPU (llama.cpp's wasm build).
      picker.engineChoice.noAdapter();
      webgpuNotice.replaceChildren(
        h(
          'strong',
          {},
          'WebGPU is not available in this browser: models run on the CPU instead (llama.cpp compiled to WebAssembly). ',
        ),
        'See ',
        gpuLink,
        ' for why and what you can do.',
      );
      webgpuNotice.hidden = false;
    }
    roofline.restore();
    void historyView.reload();
    document.body.dataset.app = 'ready';
  });
}

main();
