/**
 * "Choose a model": a GGUF file (picked or dropped; used in place as a Blob, never copied), a GGUF URL,
 * or a synthetic demo model (random weights made in the page), or a WebLLM catalogue model (loaded into
 * WebLLM's engine through `Session.useBackend('webllm')`; the others load into our engine). Loading shows
 * one progress bar per phase (fetch, upload, compile) with bytes and time, and can be cancelled. The
 * sources' panes are built in `model-source-panes.ts`, the progress bars in `load-phases.ts`.
 */

import { SYNTHETIC_FTYPES, SYNTHETIC_SHAPES, syntheticName, syntheticSize } from '../bench/synthetic.ts';
import { EngineError, isEngineError } from '../core/errors.ts';
import type { Engine, LoadProgress, ModelInfo, ModelSource } from '../core/types.ts';
import { isKvType } from '../core/validate.ts';
import { h } from '../dom/h.ts';
import { headerAsFile } from '../gguf/header.ts';
import { openGguf } from '../gguf/reader.ts';
import { parseSplitName } from '../gguf/split.ts';
import type { GgufFile } from '../gguf/types.ts';
import { isLocalSpec, LOCAL, ModelLibrary } from '../library/library.ts';
import { resolveModelSpec } from '../library/spec.ts';
import { fmtBytes, fmtMs, fmtParams } from '../util/format.ts';
import { syntheticGguf } from '../webgpu/model/synthetic.ts';
import { revealCard } from './dom.ts';
import { EngineChoice } from './engine-choice.ts';
import { KvContextOptions } from './kv-context.ts';
import { LibraryView } from './library-view.ts';
import { LoadPhases } from './load-phases.ts';
import {
  fileDropZone,
  kvTypeSelect,
  loadOptions,
  SOURCES,
  type SourceKind,
  sourceRadios,
  syntheticPane,
  syntheticShapeSelect,
  syntheticTypeSelect,
  syntheticTypesNote,
  urlPane,
} from './model-source-panes.ts';
import { RecommendedView } from './recommended-view.ts';
import type { Session } from './session.ts';
import { WebLlmPane } from './webllm-pane.ts';

const SOURCE_KEY = 'webgpu-llm-bench:model-source';

function lastSource(): string | null {
  try {
    return localStorage.getItem(SOURCE_KEY);
  } catch {
    return null;
  }
}

/** A model id from a file name or URL: the last path segment without `.gguf` and query. */
export function modelIdFromName(name: string): string {
  const last = name.split(/[?#]/)[0].split('/').filter(Boolean).pop() ?? name;
  let decoded = last;
  try {
    decoded = decodeURIComponent(last);
  } catch {
    // keep it as it is
  }
  // A split model is named by its prefix (NAME-00001-of-00003.gguf → NAME).
  return decoded.replace(/\.gguf$/i, '').replace(/-\d{5}-of-\d{5}$/, '') || 'model';
}

/** How long a cancelled load may take to stop by itself before the page gives it up, ms. */
const CANCEL_GRACE_MS = 800;
const GAVE_UP = 'the load did not stop within a second of the cancel: its worker is ended';

/** Rejects with EngineError('aborted', {@link GAVE_UP}) `ms` after `signal` aborts; never resolves. */
function abortedAfter(signal: AbortSignal, ms: number): Promise<never> {
  return new Promise((_, reject) => {
    const fire = () => setTimeout(() => reject(new EngineError('aborted', GAVE_UP)), ms);
    if (signal.aborted) fire();
    else signal.addEventListener('abort', fire, { once: true });
  });
}

export class ModelPicker {
  readonly element: HTMLElement;
  private kind: SourceKind = 'file';
  private readonly panes = new Map<SourceKind, HTMLElement>();
  private readonly fileInput: HTMLInputElement;
  private readonly urlInput: HTMLInputElement;
  private readonly keepCopy: HTMLInputElement;
  /** Load on a device with only WebGPU's default limits (LoadOptions.defaultLimits). */
  private readonly defaultLimits: HTMLInputElement;
  /** Element type of the KV cache (LoadOptions.kvType): f16 (default), f32, q8_0 or q4_0. */
  private readonly kvType: HTMLSelectElement;
  /** The context select and the KV cache's memory per type at it (LoadOptions.contextLength). */
  private readonly kvContext: KvContextOptions;
  /** The default-limits box, the KV and context selects: our engine's options, hidden for other sources. */
  private readonly localOptions: HTMLElement;
  private readonly keepFileCopy: HTMLInputElement;
  private readonly library = new LibraryView();
  /** Models to start with (hf: shorthands and synthetic shapes), under the file and URL sources. */
  private readonly recommended = new RecommendedView();
  private pickedParts: File[] = [];
  /**
   * The last model loaded by URL on our engine and its GGUF header as the engine read it at load
   * (`BenchWorkerEngine.modelHeader`: nothing fetched twice), for the context select's fit marks while
   * the URL box still names it.
   */
  private urlHeader?: { spec: string; header: GgufFile };
  /** Whether the context select shows {@link urlHeader} (the URL box names the model loaded from it). */
  private urlHeaderShown = false;
  private readonly shapeSelect: HTMLSelectElement;
  private readonly typeSelect: HTMLSelectElement;
  private readonly syntheticSize: HTMLElement;
  private readonly loadButton: HTMLButtonElement;
  private readonly cancelButton: HTMLButtonElement;
  /** One progress bar per load phase (src/ui/load-phases.ts). */
  private readonly phases = new LoadPhases();
  private readonly status: HTMLElement;
  /** Under the status once loaded: the way to the next step ({@link nextStepButton}). */
  private readonly next: HTMLElement;
  private readonly error: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly dropZone: HTMLElement;
  private pickedFile: File | undefined;
  /** The picked file's GGUF header (for the context and KV selects), read before it loads. */
  private pickedHeader: GgufFile | undefined;
  private controller: AbortController | undefined;
  private readonly webllm = new WebLlmPane();
  /** WebGPU, the CPU (wllama) or auto, for GGUF sources (src/ui/engine-choice.ts). */
  readonly engineChoice = new EngineChoice();

  constructor(private readonly session: Session) {
    // Source choice: a radio group styled as segments.
    const radios = sourceRadios(this.kind, (kind) => this.choose(kind));

    // File: a drop zone with a picker.
    this.fileInput = h('input', {
      type: 'file',
      id: 'model-file',
      accept: '.gguf,application/octet-stream',
      class: 'visually-hidden',
      multiple: '',
    });
    this.fileInput.addEventListener('change', () => {
      const files = [...(this.fileInput.files ?? [])];
      // Emptied, so picking the same file again (after a cancel or a failure) is a change that loads it.
      this.fileInput.value = '';
      this.pickFiles(files);
    });
    this.keepFileCopy = h('input', { type: 'checkbox', id: 'model-keep-file-copy' });
    this.dropZone = fileDropZone(this.fileInput, this.keepFileCopy, (files) => this.pickFiles(files));
    this.panes.set('file', h('div', { class: 'pane' }, this.dropZone));

    // URL.
    this.urlInput = h('input', {
      type: 'text',
      inputmode: 'url',
      id: 'model-url',
      class: 'input',
      placeholder: 'https://…/model.gguf  or  hf:OWNER/REPO/FILE.gguf',
      autocomplete: 'url',
      spellcheck: 'false',
    });
    this.keepCopy = h('input', { type: 'checkbox', id: 'model-keep-copy', checked: '' });
    this.defaultLimits = h('input', { type: 'checkbox', id: 'model-default-limits' });
    this.kvType = kvTypeSelect();
    this.kvContext = new KvContextOptions(this.kvType);
    this.wireSuggestions();
    this.urlInput.addEventListener('input', () => {
      if (this.kind === 'url') this.showUrlHeader();
    });
    this.urlInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void this.load();
    });
    this.panes.set('url', urlPane(this.urlInput, this.keepCopy));

    // Synthetic: a real model's shape and file type, random weights made on the GPU.
    this.shapeSelect = syntheticShapeSelect();
    this.typeSelect = syntheticTypeSelect();
    this.syntheticSize = h('p', {
      class: 'field__hint',
      'data-testid': 'synthetic-size',
      'aria-live': 'polite',
    });
    this.shapeSelect.addEventListener('change', () => this.describeSynthetic());
    this.typeSelect.addEventListener('change', () => this.describeSynthetic());
    this.panes.set('synthetic', syntheticPane(this.shapeSelect, this.typeSelect, this.syntheticSize));
    this.describeSynthetic();

    // WebLLM: the catalogue for this adapter (src/ui/webllm-pane.ts), filled when first shown.
    this.panes.set('webllm', this.webllm.element);
    this.webllm.onChange = () => this.refresh();

    // Remote: filled by src/ui/remote-view.ts (app.ts calls remotePane()).
    this.panes.set('remote', h('div', { class: 'pane', 'data-testid': 'remote-pane' }));

    this.loadButton = h('button', { type: 'button', class: 'button button--primary' }, 'Load model');
    this.loadButton.addEventListener('click', () => void this.load());
    this.cancelButton = h('button', { type: 'button', class: 'button' }, 'Cancel');
    this.cancelButton.addEventListener('click', () => this.controller?.abort());
    this.cancelButton.hidden = true;

    this.status = h('p', {
      class: 'status',
      role: 'status',
      'aria-live': 'polite',
      'data-testid': 'load-status',
    });
    this.next = h('p', { class: 'status' });
    this.next.hidden = true;
    this.error = h('div', { class: 'notice notice--warn', role: 'alert' });
    this.error.hidden = true;
    this.summary = h('div', { class: 'model-summary', 'data-testid': 'model-summary' });

    // Our engine's load options: not shown for a remote endpoint or WebLLM, which they do not apply to
    // (issue 46: they sat under the remote results).
    this.localOptions = h(
      'div',
      { 'data-testid': 'local-load-options' },
      ...loadOptions(this.defaultLimits, this.kvType, this.kvContext.element),
    );
    this.element = h(
      'section',
      { class: 'card', 'aria-labelledby': 'model-heading', 'data-card': 'model' },
      h('h2', { id: 'model-heading', class: 'card__title' }, 'Choose a model'),
      h('p', { id: 'model-source-label', class: 'field__label' }, 'Source'),
      radios,
      ...this.panes.values(),
      this.engineChoice.element,
      this.localOptions,
      h('div', { class: 'actions' }, this.loadButton, this.cancelButton),
      this.phases.element,
      this.status,
      this.next,
      this.error,
      this.summary,
      this.recommended.element,
      this.library.element,
    );
    // The source chosen last time (kept in localStorage), else a file.
    this.select(
      SOURCES.some((x) => x.kind === lastSource() && !x.coming) ? (lastSource() as SourceKind) : 'file',
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  /** Loads what the library's and the recommended list's buttons ask for, through the URL or synthetic pane. */
  private wireSuggestions(): void {
    this.library.onLoad = (spec) => {
      // Loads go through the URL pane (a local copy's spec is local:NAME).
      this.select('url');
      this.urlInput.value = spec;
      this.keepCopy.checked = true;
      void this.load();
    };
    this.recommended.onLoad = (spec) => {
      this.select('url');
      this.urlInput.value = spec;
      this.keepCopy.checked = true;
      void this.load();
      revealCard(this.phases.element, false, 'nearest');
    };
    this.recommended.onMemory = (mem) => this.kvContext.setMemory(mem);
    this.recommended.onSynthetic = (shape, ftype) => {
      this.select('synthetic');
      this.shapeSelect.value = shape;
      this.typeSelect.value = ftype;
      this.describeSynthetic();
      void this.load();
      revealCard(this.phases.element, false, 'nearest');
    };
  }

  /** The "Remote endpoint" pane, for the remote view to fill. */
  remotePane(): HTMLElement {
    return this.panes.get('remote') as HTMLElement;
  }

  private syntheticChoice() {
    const shape = SYNTHETIC_SHAPES.find((x) => x.id === this.shapeSelect.value) ?? SYNTHETIC_SHAPES[0];
    const ftype = SYNTHETIC_FTYPES.find((f) => f === this.typeSelect.value) ?? 'f32';
    return { shape, ftype, name: syntheticName(shape, ftype), ...syntheticSize(shape, ftype) };
  }

  private describeSynthetic(): void {
    const c = this.syntheticChoice();
    const header = syntheticGguf(c.name, 1, { tokenizer: false });
    this.syntheticSize.textContent = `${c.name}: ${fmtParams(c.params)} parameters, ${fmtBytes(c.bytes)} of weights on the GPU; ${syntheticTypesNote(header, c.ftype)}.`;
    if (this.kind === 'synthetic') this.kvContext.setModel(header);
  }

  /** The header the context and KV selects describe for the chosen source (a file's: read when picked). */
  private headerForKind(): void {
    this.urlHeaderShown = false;
    if (this.kind === 'synthetic') this.describeSynthetic();
    else if (this.kind === 'file' && this.pickedHeader) this.kvContext.setModel(this.pickedHeader);
    else if (this.kind === 'url') this.showUrlHeader(true);
    else this.kvContext.setModel(undefined);
  }

  /** The URL source's context select: the loaded URL model's header while the URL box names it, else plain. */
  private showUrlHeader(force = false): void {
    const u = this.urlHeader;
    const show = u !== undefined && u.spec === this.urlInput.value.trim();
    if (show === this.urlHeaderShown && !force) return;
    this.urlHeaderShown = show;
    this.kvContext.setModel(show ? u.header : undefined);
  }

  /** Chooses a source and checks its radio button. */
  private select(kind: SourceKind): void {
    const radio = this.element.querySelector<HTMLInputElement>(`#model-source-${kind}`);
    if (radio) radio.checked = true;
    this.choose(kind);
  }

  private choose(kind: SourceKind): void {
    this.kind = kind;
    try {
      localStorage.setItem(SOURCE_KEY, kind);
    } catch {
      // storage may be unavailable (private windows); the choice just is not kept
    }
    for (const [k, pane] of this.panes) pane.hidden = k !== kind;
    if (this.localOptions) this.localOptions.hidden = kind === 'remote' || kind === 'webllm';
    // Remote mode shows only what belongs to the remote run (issue 46: the wide remote card still showed
    // the Engine select and the last local load's Fetch / Upload / Compile bars under the remote results).
    // The local load's bars, status and summary come back with any other source; the Engine select is for
    // GGUF sources (WebLLM and a server run their own engines).
    if (this.engineChoice) this.engineChoice.element.hidden = kind === 'remote' || kind === 'webllm';
    for (const el of [this.phases?.element, this.status, this.summary])
      if (el) el.classList.toggle('is-remote-hidden', kind === 'remote');
    if (this.next) this.next.hidden = kind === 'remote' || this.next.childElementCount === 0;
    // The remote comparison's tables need the page's width (issue 46: a 494 px column at 1280 px cut its
    // sweep table while the right column stood empty): the card spans both columns while it is shown.
    this.element?.classList.toggle('card--wide', kind === 'remote');
    if (kind === 'webllm') void this.webllm.activate();
    this.headerForKind();
    this.library.element.hidden = kind !== 'url' && kind !== 'file';
    this.recommended.element.hidden = kind !== 'url' && kind !== 'file';
    if (kind === 'url' || kind === 'file') void this.library.refresh(this.session.task !== undefined);
    this.refresh();
  }

  /** Picked or dropped files: one GGUF, or all parts of a split model (loaded from its first part). */
  private pickFiles(files: File[]): void {
    if (files.length === 0) return;
    if (this.kind !== 'file') this.select('file');
    const first = files.find((f) => parseSplitName(f.name)?.no === 1) ?? files[0];
    // The pick before, given back if this file is refused (the Load button reloads the kept model's file).
    const before = { file: this.pickedFile, parts: this.pickedParts, header: this.pickedHeader };
    this.pickedFile = first;
    this.pickedParts = files.filter((f) => f !== first);
    this.pickedHeader = undefined;
    // The header first (a few hundred kB read from the file), so the context select offers its lengths.
    void openGguf({ blob: first, name: first.name }).then(
      (g) => {
        if (this.pickedFile !== first) return;
        this.pickedHeader = g;
        this.kvContext.setModel(g);
        void this.load();
      },
      (e: unknown) => {
        if (this.pickedFile !== first) return;
        // Not a whole GGUF file: refused here, before the load would unload the model that works.
        this.pickedFile = before.file;
        this.pickedParts = before.parts;
        this.pickedHeader = before.header;
        this.showError(e);
        const kept = this.session.model;
        this.status.textContent = kept
          ? `${first.name} was not loaded: ${kept.id} stays loaded.`
          : 'The model did not load.';
        this.refresh();
      },
    );
  }

  private refresh(): void {
    const busy = this.session.task !== undefined;
    const loading = this.session.task === 'load';
    this.loadButton.disabled = busy || (this.kind === 'webllm' && !this.webllm.selected());
    // A picked file loads at once; the button loads it again (with another context or cache type).
    this.loadButton.hidden = (this.kind === 'file' && !this.pickedFile) || this.kind === 'remote';
    this.fileInput.disabled = busy;
    this.cancelButton.hidden = !loading;
    this.dropZone.classList.toggle('drop--disabled', busy);
    this.library.setBusy(busy);
    this.recommended.setBusy(busy);
    // Out of the way once a model is loaded: the live view and results sit below this card.
    if (this.session.model) this.recommended.collapseOnce();
    this.renderSummary();
  }

  private renderSummary(): void {
    const m = this.session.model;
    if (!m) {
      this.summary.replaceChildren();
      return;
    }
    const row = (k: string, v: string, f: string) =>
      h('div', { class: 'kv__row' }, h('dt', {}, k), h('dd', { 'data-field': f }, v));
    const l = m.load;
    this.summary.replaceChildren(
      h(
        'dl',
        { class: 'kv kv--compact' },
        row('Model', `${m.id}${m.synthetic ? ' (synthetic, random weights)' : ''}`, 'model-id'),
        row('Source', m.sourceLabel, 'model-source'),
        this.session.backend === 'webllm'
          ? row(
              'Size',
              `${m.info.tensorTypes.join(', ')} · ~${fmtBytes(m.fileBytes)} GPU memory (WebLLM's estimate)`,
              'model-size',
            )
          : row(
              'Size',
              // The file's size and its weights' (what Fetch and Upload count) side by side: 1.19 MB read as
              // the file and 1.17 MB on the bars were the same model.
              `${fmtParams(m.info.nParams)} params · ${m.info.tensorTypes.join(', ')} · ${fmtBytes(m.fileBytes)} file, ${fmtBytes(m.info.weightBytes)} of weights`,
              'model-size',
            ),
        this.session.backend === 'webllm'
          ? row('Shape', `context ${m.info.contextLength} (WebLLM does not report the rest)`, 'model-shape')
          : row(
              'Shape',
              `${m.info.nLayers} layers · ${m.info.nEmbd} wide · vocabulary ${m.info.nVocab} · context ${m.info.contextLength}${m.info.kvType ? ` · ${m.info.kvType} KV cache` : ''}`,
              'model-shape',
            ),
        row(
          'Load',
          // wllama (the CPU) has no GPU upload or shaders: its phases are reading the file and loading it into
          // wasm memory.
          this.session.backend === 'wllama'
            ? `${fmtMs(l.totalMs)} (fetch ${fmtMs(l.downloadMs)}, load into wasm ${fmtMs(l.uploadMs)})`
            : `${fmtMs(l.totalMs)} (fetch ${fmtMs(l.downloadMs)}, upload ${fmtMs(l.uploadMs)}, compile ${fmtMs(l.compileMs)})`,
          'model-load',
        ),
      ),
    );
  }

  private onProgress(p: LoadProgress): void {
    if (!this.phases.update(p)) return;
    if (p.note) this.status.textContent = `${p.note[0].toUpperCase()}${p.note.slice(1)}.`;
  }

  /** Loads the chosen source. */
  /**
   * After a load, the way to what comes next when it is out of view (the Run button sat 3,700 px down at
   * 390 px wide): a button that brings the benchmark plan's Run button into view and focuses it; none
   * where the page has no plan.
   */
  private nextStepButton(): HTMLElement | string {
    const target = document.querySelector<HTMLElement>('[data-card="plan"] button[type="submit"]');
    if (!target) return '';
    return h(
      'button',
      {
        type: 'button',
        class: 'button button--link',
        'data-testid': 'load-next',
        onclick: () => {
          target.scrollIntoView({ block: 'center' });
          target.focus();
        },
      },
      'Next: run the benchmark',
    );
  }

  async load(): Promise<void> {
    if (!this.session.begin('load')) return;
    this.error.hidden = true;
    this.controller = new AbortController();
    const signal = this.controller.signal;
    this.phases.reset();
    this.next.hidden = true;
    // The progress where the eye is: at 1280×800 the bars began at the window's bottom edge, at 390×844
    // below it.
    this.phases.element.scrollIntoView({ block: 'nearest' });
    // Kept to show again if the load fails before the engine frees it (a 404, not a GGUF, a cancel while
    // downloading): our engine keeps the loaded model until the new file is read and checked.
    const previous = this.session.model;
    const previousBackend = this.session.backend;
    let used: Engine | undefined;
    let usedBackend: string | undefined;
    this.session.setModel(undefined);
    const t0 = performance.now();
    try {
      let source: ModelSource;
      let id: string;
      let sourceLabel: string;
      let fileBytes = 0;
      let synthetic = false;
      let cache = false;
      let webllm: Awaited<ReturnType<WebLlmPane['choice']>> | undefined;
      let header: GgufFile | undefined;
      if (this.kind === 'webllm') {
        webllm = await this.webllm.choice();
        source = { url: `webllm:${webllm.entry.id}` };
        id = webllm.entry.id;
        sourceLabel = webllm.base ? `${id} from ${webllm.base} (WebLLM)` : `${id} (WebLLM)`;
        fileBytes = (webllm.entry.vramMB ?? 0) * 1024 * 1024; // WebLLM records give no download size
      } else if (this.kind === 'file') {
        const f = this.pickedFile;
        if (!f) throw new Error('Choose a GGUF file first.');
        header = this.pickedHeader;
        source = this.pickedParts.length
          ? { blob: f, name: f.name, parts: this.pickedParts }
          : { blob: f, name: f.name };
        if (this.keepFileCopy.checked) {
          // Copied block by block into the library first; the load then reads (and checks) the copy.
          const lib = await ModelLibrary.open();
          const t = performance.now();
          let spec = '';
          let before = 0;
          for (const part of [f, ...this.pickedParts]) {
            const s = await lib.importBlob(part, part.name, {
              signal,
              onProgress: (p) =>
                this.onProgress({
                  ...p,
                  bytesDone: before + p.bytesDone,
                  bytesTotal: fileBytes,
                  tMs: performance.now() - t,
                }),
            });
            before += part.size;
            if (part === f) spec = s;
          }
          source = { url: spec };
          cache = true;
        }
        id = modelIdFromName(f.name);
        sourceLabel = `${f.name}${this.pickedParts.length ? ` + ${this.pickedParts.length} more parts` : ''} (local file)`;
        fileBytes = f.size + this.pickedParts.reduce((a, p) => a + p.size, 0);
      } else if (this.kind === 'url') {
        const url = this.urlInput.value.trim();
        if (!url) throw new Error('Enter the URL of a GGUF file, or hf:OWNER/REPO/FILE.gguf.');
        if (isLocalSpec(url)) {
          source = { url };
          cache = true;
          id = modelIdFromName(url.slice(LOCAL.length));
          sourceLabel = `${url.slice(LOCAL.length)} (a copy of a file from your disk)`;
        } else {
          const resolved = resolveModelSpec(url, { base: location.href });
          source = { url: resolved.hf ? resolved.spec : resolved.url };
          cache = this.keepCopy.checked;
          id = modelIdFromName(new URL(resolved.url).pathname);
          sourceLabel = resolved.hf ? `${resolved.spec} (Hugging Face)` : resolved.url;
        }
      } else {
        const c = this.syntheticChoice();
        source = { synthetic: c.name };
        header = syntheticGguf(c.name, 1, { tokenizer: false });
        id = c.name;
        sourceLabel = `${c.shape.label}, ${c.ftype.toUpperCase()}, random weights made on the GPU`;
        fileBytes = c.bytes;
        synthetic = true;
      }
      this.status.textContent = `Loading ${id}…`;
      // GGUF sources: the engine the page's choice resolves to (auto: WebGPU on a hardware adapter, else wllama).
      const choice = webllm ? undefined : await this.engineChoice.resolve();
      this.engineChoice.show(choice);
      this.phases.useBackend(webllm ? 'webllm' : (choice?.backend ?? 'webgpu'));
      usedBackend = webllm ? 'webllm' : (choice?.backend ?? 'webgpu');
      const engine = webllm
        ? await this.session.useBackend('webllm', webllm.config)
        : await this.session.useBackend(choice?.backend ?? 'webgpu');
      used = engine;
      const options = {
        cache,
        defaultLimits: !webllm && this.defaultLimits.checked,
        ...(webllm
          ? {}
          : {
              kvType: isKvType(this.kvType.value) ? this.kvType.value : 'f16',
              contextLength: this.kvContext.contextLength(),
            }),
      };
      // A cancel lands at the engine's next check of the signal; a worker busy in one long step (reading or
      // hashing a file, compiling shaders) saw it 16 s late. After CANCEL_GRACE_MS the load is given up:
      // the worker is ended below (its GPU memory goes with it) and the next load starts a fresh one.
      const loaded = await Promise.race([
        engine.load(source, { ...options, onProgress: (p) => this.onProgress(p), signal }),
        abortedAfter(signal, CANCEL_GRACE_MS),
      ]);
      const info = choice ? { ...loaded, backendReason: choice.reason } : loaded;
      if (info.limits?.defaultLimits) sourceLabel += ' · WebGPU default limits';
      if (info.cache && 'url' in source && isLocalSpec(source.url)) {
        sourceLabel += ' · kept in this browser';
      } else if (info.cache) {
        sourceLabel += info.cache.offline
          ? ' · the cached copy (the server could not be reached)'
          : info.cache.fromCache
            ? ' · the cached copy (unchanged on the server)'
            : ` · downloaded ${fmtBytes(info.cache.downloadedBytes)} and kept in this browser`;
      }
      // A URL model's header as our engine read it at load (no second fetch: e2e/library.spec.ts counts
      // the bytes), so the context select marks what fits as for a file.
      if (this.kind === 'url' && !webllm && choice?.backend !== 'wllama') {
        const read = await this.session.ourEngine.modelHeader().catch(() => undefined);
        if (read) {
          header = headerAsFile(read);
          this.urlHeader = { spec: this.urlInput.value.trim(), header };
          this.showUrlHeader(true);
        }
      }
      const stats = await engine.stats();
      const l = stats.load;
      this.phases.finish({ fetch: l?.fetchMs, upload: l?.uploadMs, compile: l?.compileMs });
      this.session.setModel({
        info,
        id,
        sourceLabel,
        synthetic,
        // By URL the size is known only once loaded (the same figure as for the file: not the weights').
        fileBytes: fileBytes || info.fileBytes || info.weightBytes,
        load: {
          totalMs: l?.totalMs ?? performance.now() - t0,
          downloadMs: l?.fetchMs ?? 0,
          uploadMs: l?.uploadMs ?? 0,
          compileMs: l?.compileMs ?? 0,
        },
        ...(webllm || synthetic ? {} : { source: { source, cache } }),
        // Our engine's own options, to load it again with another (the quality view); not for wllama.
        ...(webllm || choice?.backend === 'wllama' ? {} : { reload: { source, options } }),
        ...(header ? { header } : {}),
      });
      this.status.textContent = `Loaded ${id} in ${fmtMs(l?.totalMs ?? performance.now() - t0)}${
        info.cache?.offline
          ? ': offline, using the copy kept in this browser'
          : info.cache?.fromCache
            ? ' from the copy kept in this browser'
            : ''
      }.`;
      this.next.replaceChildren(this.nextStepButton());
      this.next.hidden = this.next.childElementCount === 0;
      this.status.scrollIntoView({ block: 'nearest' });
      this.element.dataset.loaded = id;
      if (webllm) this.webllm.refresh();
    } catch (e) {
      const aborted = signal.aborted || isEngineError(e, 'aborted') || (e as Error)?.name === 'AbortError';
      this.status.textContent = aborted ? 'Load cancelled.' : 'The model did not load.';
      // Still in the engine (the load failed before freeing it): shown as loaded again, and said.
      const still = (used as { modelInfo?: ModelInfo } | undefined)?.modelInfo;
      if (previous && still && usedBackend === previousBackend && still.name === previous.info.name) {
        this.session.setModel(previous);
        this.status.textContent = `${aborted ? 'Load cancelled' : 'The model did not load'}: ${previous.id} stays loaded.`;
      }
      this.engineChoice.loadFailed();
      if (!aborted) this.showError(e);
      this.phases.stop();
      if (isEngineError(e, 'device_lost') || (e as Error)?.message === GAVE_UP)
        await this.session.resetEngine();
    } finally {
      this.controller = undefined;
      this.session.end('load');
      if (this.kind === 'url' || this.kind === 'file') void this.library.refresh(false);
    }
  }

  private showError(e: unknown): void {
    const code = isEngineError(e) ? e.code : undefined;
    const message = e instanceof Error ? e.message : String(e);
    this.error.replaceChildren(h('strong', {}, code ? `Load failed (${code}): ` : 'Load failed: '), message);
    this.error.hidden = false;
  }
}
