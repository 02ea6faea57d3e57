/**
 * The page's Drafting select (chat and benchmark) for speculative decoding: None, Prompt lookup, and a
 * draft model — the one loaded beside the target ("Draft model: NAME"), each complete model kept in this
 * browser (the library, src/library/), a GGUF file from the disk or a GGUF URL.
 *
 * Choosing a model loads it beside the page's model with the engine's `setDraft` (the model is not loaded
 * again; our engine checks the draft's vocabulary — size and token texts — before anything of it is
 * allocated). A refusal (a vocabulary that differs, a draft that does not fit, a fetch error) is said under
 * the select with the engine's code and message; the engine keeps the model, without a draft, and the
 * page goes on with it. Both views' selects follow
 * the session: the loaded draft is `session.model.draftId`.
 */
import { type EngineErrorCode, isEngineError } from '../core/errors.ts';
import type { DraftOptions, ModelSource } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { isLocalSpec, type LibraryEntry, ModelLibrary } from '../library/library.ts';
import { resolveModelSpec } from '../library/spec.ts';
import { OpfsStore } from '../library/store.ts';
import { modelIdFromName } from './model-picker.ts';
import { FieldError } from './number-field.ts';
import type { Session } from './session.ts';

/** The select's values: none, lookup, the loaded draft, a library model's spec, a file, a URL. */
const NONE = '';
const LOOKUP = 'lookup';
const LOADED = 'model';
const LIB = 'lib:';
const FILE = 'file';
const URL_CHOICE = 'url';

/** The request's drafting for a select value, or undefined for None ({@link DraftChoice.request}). */
export function draftRequestFor(value: string, loadedDraft: string | undefined): DraftOptions | undefined {
  if (value === NONE) return undefined;
  if (value === LOOKUP) return { type: 'lookup' };
  if (value === LOADED && loadedDraft) return { type: 'model' };
  throw new RangeError('Drafting: choose a draft model and wait until it has loaded beside the model');
}

export class DraftChoice {
  /** The select (put it in a field labelled "Drafting"). */
  readonly select: HTMLSelectElement;
  /** The file input, the URL row and the load status: put it under the field's row. */
  readonly extra: HTMLElement;
  private readonly fileInput: HTMLInputElement;
  private readonly urlRow: HTMLElement;
  private readonly urlInput: HTMLInputElement;
  private readonly status: HTMLElement;
  /** A draft model is loading (its own 'load' task must not clear its own lines). */
  private loadingDraft = false;
  /** The last value that is not a pending model choice (restored after a file dialog or a refusal). */
  private last = NONE;
  private entries: LibraryEntry[] = [];
  private shownKey = '';

  /** @param prefix the ids' prefix: `${prefix}-draft` (the select), `-draft-file`, `-draft-url`, `-draft-status`. */
  constructor(
    private readonly session: Session,
    prefix: string,
  ) {
    this.select = h('select', { id: `${prefix}-draft`, class: 'input' });
    this.fileInput = h('input', {
      type: 'file',
      id: `${prefix}-draft-file`,
      accept: '.gguf',
      'aria-label': 'Draft .gguf file',
    });
    this.fileInput.hidden = true;
    this.urlInput = h('input', {
      type: 'url',
      id: `${prefix}-draft-url`,
      class: 'input',
      placeholder: 'https://…/draft.gguf or hf:OWNER/REPO/FILE.gguf',
    });
    const urlButton = h('button', { type: 'button', class: 'button button--small' }, 'Load draft');
    urlButton.addEventListener('click', () => void this.loadUrl());
    this.urlRow = h(
      'div',
      { class: 'draft-choice__url' },
      h('label', { for: this.urlInput.id, class: 'field__label' }, 'URL of the draft .gguf'),
      h('div', { class: 'draft-choice__row' }, this.urlInput, urlButton),
    );
    this.urlRow.hidden = true;
    this.status = h('p', {
      class: 'field__hint draft-choice__status',
      id: `${prefix}-draft-status`,
      role: 'status',
      'aria-live': 'polite',
    });
    this.extra = h('div', { class: 'draft-choice' }, this.fileInput, this.urlRow, this.status);
    this.render();
    this.select.addEventListener('change', () => this.onChange());
    this.fileInput.addEventListener('change', () => {
      const f = this.fileInput.files?.[0];
      this.fileInput.value = '';
      if (f) void this.loadDraft({ blob: f, name: f.name }, modelIdFromName(f.name), false);
    });
    // The library changes with loads (a kept copy, a download): read it again when a task ends.
    let task = session.task;
    session.addEventListener('change', () => {
      if (task && !session.task) void this.refreshLibrary();
      // A refusal is said until the next task (a run, another load) starts; a line about the loaded draft
      // until the model it names is gone (another model loaded, or none).
      if (!task && session.task && this.status.dataset.kind === 'refused' && !this.loadingDraft) this.say('');
      if (this.status.dataset.kind === 'loaded' && !session.model?.draftId) this.say('');
      task = session.task;
      this.render();
    });
    void this.refreshLibrary();
  }

  /** The request's drafting for the current choice, undefined for None. @throws FieldError for a model choice not loaded. */
  request(): DraftOptions | undefined {
    try {
      return draftRequestFor(this.select.value, this.session.model?.draftId);
    } catch (e) {
      throw new FieldError(this.select as unknown as HTMLInputElement, (e as Error).message);
    }
  }

  /** The draft's name in results: 'lookup' or the loaded draft model's id. */
  label(): string {
    return this.select.value === LOADED ? (this.session.model?.draftId ?? 'draft') : 'lookup';
  }

  /** Reads the library's complete models again (for the select's list). */
  async refreshLibrary(): Promise<void> {
    if (!OpfsStore.available()) return;
    try {
      this.entries = (await (await ModelLibrary.open()).list()).filter((e) => e.complete);
    } catch {
      this.entries = []; // no listing, no library choices; the file and URL choices remain
    }
    this.render();
  }

  /** Rebuilds the options when the loaded draft or the library's models changed, keeping the choice. */
  private render(): void {
    const model = this.session.model;
    const draftId = model?.draftId;
    // Speculative decoding runs on our engine only: with a model on wllama (Auto without a GPU) or WebLLM,
    // the select is off at None and says why, rather than offering choices that a run would refuse.
    const offOn = model && !this.session.ours ? this.session.backend : undefined;
    const key = JSON.stringify([draftId, this.entries.map((e) => e.spec), offOn]);
    if (key === this.shownKey) return;
    this.shownKey = key;
    const value = this.select.value;
    this.select.replaceChildren(
      h('option', { value: NONE }, 'None'),
      h('option', { value: LOOKUP }, 'Prompt lookup'),
      h(
        'optgroup',
        { label: 'Draft model (same vocabulary)' },
        draftId ? h('option', { value: LOADED }, `Draft model: ${draftId} (loaded)`) : null,
        this.entries.map((e) => h('option', { value: LIB + e.spec }, `Draft model: ${e.name}`)),
        h('option', { value: FILE }, 'Draft model: a GGUF file…'),
        h('option', { value: URL_CHOICE }, 'Draft model: a GGUF URL…'),
      ),
    );
    const has = (v: string) => [...this.select.options].some((o) => o.value === v);
    if (!has(this.last)) this.last = NONE;
    // A pending choice (a library model, the file dialog) is never kept: it is not loaded.
    this.select.value = has(value) && !value.startsWith(LIB) && value !== FILE ? value : this.last;
    this.select.disabled = offOn !== undefined;
    if (offOn !== undefined) {
      this.select.value = NONE;
      this.last = NONE;
      this.urlRow.hidden = true;
      this.say(
        `Drafting runs on our WebGPU engine only: ${model?.id} runs ${offOn === 'wllama' ? 'on the CPU (llama.cpp wasm)' : 'in WebLLM'}; load it with Engine: WebGPU to draft.`,
        undefined,
        'off',
      );
    } else if (this.status.dataset.kind === 'off') {
      this.say('');
    }
  }

  private onChange(): void {
    const v = this.select.value;
    this.urlRow.hidden = v !== URL_CHOICE;
    if (v === NONE || v === LOOKUP || v === LOADED) {
      this.last = v;
      this.sayLoaded();
      return;
    }
    if (v === URL_CHOICE) {
      this.urlInput.focus();
      return;
    }
    if (v === FILE) {
      this.select.value = this.last;
      this.fileInput.click();
      return;
    }
    const spec = v.slice(LIB.length);
    const entry = this.entries.find((e) => e.spec === spec);
    void this.loadDraft(
      { url: spec },
      entry ? modelIdFromName(entry.name) : modelIdFromName(spec),
      !isLocalSpec(spec),
    );
  }

  private async loadUrl(): Promise<void> {
    const text = this.urlInput.value.trim();
    if (!text) {
      this.say('Enter the URL of a GGUF file, or hf:OWNER/REPO/FILE.gguf.');
      return;
    }
    let url: string;
    try {
      const r = resolveModelSpec(text, { base: location.href });
      url = r.hf ? r.spec : r.url;
      await this.loadDraft({ url }, modelIdFromName(new URL(r.url).pathname), false);
    } catch (e) {
      this.say(`Draft model: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /**
   * With a draft model loaded, whether this select uses it: "X drafts for Y." stayed under the select after
   * a switch to None or Prompt lookup, untrue there.
   */
  private sayLoaded(): void {
    const model = this.session.model;
    if (!model?.draftId) {
      this.say(''); // a new choice: an earlier refusal or note no longer applies
      return;
    }
    this.say(
      this.select.value === LOADED
        ? `${model.draftId} drafts for ${model.id}.`
        : `${model.draftId} stays loaded beside ${model.id}, unused${this.select.value === LOOKUP ? ' (prompt lookup drafts)' : ''}: choose it above to draft with it.`,
      undefined,
      'loaded',
    );
  }

  /**
   * `kind`: 'loaded' (about the loaded draft), 'refused' (a failed draft load), 'off' (the backend cannot
   * draft), else a passing note.
   */
  private say(text: string, code?: EngineErrorCode, kind?: 'loaded' | 'refused' | 'off'): void {
    this.status.textContent = text;
    if (code) this.status.dataset.code = code;
    else delete this.status.dataset.code;
    if (kind) this.status.dataset.kind = kind;
    else delete this.status.dataset.kind;
  }

  /**
   * Loads `source` as the draft beside the page's model (`setDraft`: the model is not loaded again); on a
   * refusal says the engine's error, and the model stays loaded without a draft.
   * @param viaLibrary read a URL spec through the model library (LoadOptions.cache).
   */
  private async loadDraft(source: ModelSource, id: string, viaLibrary: boolean): Promise<void> {
    const model = this.session.model;
    if (!model || !this.session.ours) {
      this.select.value = this.last;
      this.say(
        model
          ? 'A draft model runs on our WebGPU engine: load the model there (a GGUF file, URL or synthetic shape).'
          : 'Load a model first; the draft model is loaded beside it.',
      );
      return;
    }
    if (!this.session.begin('load')) {
      this.select.value = this.last;
      this.say('Wait for the running task to finish, then choose the draft model again.');
      return;
    }
    const engine = this.session.ourEngine;
    this.say(`Loading ${id} as the draft model beside ${model.id}…`);
    this.loadingDraft = true;
    try {
      const draft = await engine.setDraft(source, {
        cache: model.reload?.options.cache || viaLibrary,
      });
      this.session.setModel({ ...model, info: { ...model.info, draft }, draftId: id });
      this.select.value = LOADED;
      this.last = LOADED;
      this.say(
        `${id} drafts for ${model.id}${draft ? ` (${draft.nLayers} layers, ${draft.nEmbd} wide, ${(draft.nParams / 1e6).toPrecision(3)} M parameters)` : ''}.`,
        undefined,
        'loaded',
      );
    } catch (e) {
      const code = isEngineError(e) ? e.code : undefined;
      const message = e instanceof Error ? e.message : String(e);
      // The engine keeps the model (a refused draft frees what it had taken, and any draft before it).
      if (code === 'device_lost') this.session.setModel(undefined);
      else this.session.setModel({ ...model, info: { ...model.info, draft: undefined }, draftId: undefined });
      // Back to the choice before it (prompt lookup, None); a draft loaded before was freed with it.
      if (this.last === LOADED) this.last = NONE;
      this.select.value = this.last;
      this.say(
        `Draft model refused${code ? ` (${code})` : ''}: ${message}. ${
          code === 'device_lost'
            ? `${model.id} was lost with the GPU device; load it again in the Benchmark tab.`
            : `${model.id} stays loaded, without a draft.`
        }`,
        code,
        'refused',
      );
    } finally {
      this.loadingDraft = false;
      this.session.end('load');
    }
  }
}
