/**
 * The model picker's "WebLLM model" pane: WebLLM's catalogue filtered for this adapter (src/webllm/catalog.ts;
 * models this adapter cannot run are listed disabled, with the reason), which are cached, storage use and
 * quota, deleting a cached model, a self-hosted base URL and the cache backend. WebLLM itself (a large
 * module) is imported only when the pane is first shown. The picker's "Load model" button loads the chosen
 * model into the page (through the session, as the WebLLM backend) with {@link WebLlmPane.choice}.
 */
import type { AppConfig } from '@mlc-ai/web-llm';
import { h } from '../dom/h.ts';
import { fmtBytes } from '../util/format.ts';
import { type CatalogEntry, filterCatalog, selfHostedRecord } from '../webllm/catalog.ts';
import type { WebLlmConfig } from '../webllm/engine.ts';
import { field } from './dom.ts';

type CacheBackend = NonNullable<AppConfig['cacheBackend']>;

export class WebLlmPane {
  readonly element: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly baseInput: HTMLInputElement;
  private readonly cacheSelect: HTMLSelectElement;
  private readonly info: HTMLElement;
  private readonly storage: HTMLElement;
  private readonly deleteButton: HTMLButtonElement;
  private entries: CatalogEntry[] = [];
  private started = false;
  /** Called when the choice changes (the picker enables its Load button for an offered model). */
  onChange: (() => void) | undefined;

  constructor() {
    this.select = h('select', { id: 'webllm-model', class: 'input', 'data-testid': 'webllm-model' });
    this.baseInput = h('input', {
      id: 'webllm-base',
      class: 'input',
      type: 'url',
      // Short enough for the pane at 1280 and 390 px (the longer one was cut); the hint says the rest.
      placeholder: 'optional',
    });
    this.cacheSelect = h(
      'select',
      { id: 'webllm-cache', class: 'input' },
      ['cache', 'indexeddb', 'opfs'].map((c) => h('option', { value: c }, c)),
    );
    this.info = h('p', {
      class: 'field__hint webllm__info',
      'data-testid': 'webllm-info',
      'aria-live': 'polite',
    });
    this.storage = h('p', { class: 'field__hint', 'data-testid': 'webllm-storage' });
    this.deleteButton = h('button', { type: 'button', class: 'button' }, 'Delete from cache');
    this.deleteButton.addEventListener('click', () => void this.deleteSelected());
    this.select.addEventListener('change', () => this.describe());
    this.cacheSelect.addEventListener('change', () => void this.refreshCache());
    this.element = h(
      'div',
      { class: 'pane', 'data-testid': 'webllm-pane' },
      field('WebLLM model', this.select, 'MLC prebuilt models; those this adapter cannot run are disabled.'),
      this.info,
      h(
        'div',
        { class: 'pane__row' },
        field(
          'Self-hosted base URL',
          this.baseInput,
          'Optional, e.g. https://example.org/mlc-models/: weights at BASE/MODEL_ID/, the library at BASE/LIB.wasm.',
        ),
        field('Cache', this.cacheSelect),
      ),
      h('div', { class: 'actions' }, this.deleteButton),
      this.storage,
      h(
        'p',
        { class: 'notice notice--info', 'data-testid': 'webllm-notice' },
        'Load model downloads the model from huggingface.co (or the base URL) and its library from GitHub, ' +
          'caches them in this browser, and runs it in WebLLM’s worker for the Benchmark and Chat tabs; ' +
          'our engine’s model is unloaded first. llama-bench tests and the roofline stay with our engine.',
      ),
    );
  }

  /** The chosen model when this adapter can run it (the picker loads it), else undefined. */
  selected(): CatalogEntry | undefined {
    return this.entries.find((e) => e.ok && e.id === this.select.value);
  }

  /** What a load of the chosen model needs: the chosen model, and WebLlmEngine's config (base URL, cache). */
  async choice(): Promise<{ entry: CatalogEntry; config: WebLlmConfig; base: string }> {
    const entry = this.selected();
    if (!entry) throw new Error('Choose a WebLLM model that this adapter can run.');
    const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
    const appConfig = this.appConfig(prebuiltAppConfig);
    return {
      entry,
      config: { appConfig, cacheBackend: appConfig.cacheBackend },
      base: this.baseInput.value.trim(),
    };
  }

  /** Re-reads which models are cached (after a load has filled the cache). */
  refresh(): void {
    if (this.started) void this.refreshCache();
  }

  /** The app config as chosen here: the prebuilt catalogue, or its records re-pointed at the base URL. */
  appConfig(base: AppConfig): AppConfig {
    const url = this.baseInput.value.trim();
    const list = url ? base.model_list.map((r) => selfHostedRecord(r, url, location.href)) : base.model_list;
    return { model_list: list, cacheBackend: this.cacheSelect.value as CacheBackend };
  }

  /** Fills the pane the first time it is shown. */
  async activate(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.info.textContent = 'Reading the catalogue…';
    try {
      const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
      const adapter = await navigator.gpu?.requestAdapter();
      if (!adapter) {
        this.info.textContent = 'No WebGPU adapter: WebLLM cannot run in this browser.';
        return;
      }
      this.entries = filterCatalog(prebuiltAppConfig, {
        features: adapter.features as unknown as Iterable<string>,
        limits: adapter.limits,
      });
      this.render();
      await this.refreshCache();
    } catch (e) {
      this.info.textContent = `The WebLLM catalogue could not be read: ${(e as Error)?.message ?? e}`;
    }
  }

  private render(): void {
    const current = this.select.value;
    this.select.replaceChildren(
      ...this.entries.map((e) => {
        // Short, so the select is not cut ("~608 MB GPU me"); the line under it says the rest.
        const size = e.vramMB ? ` · ~${fmtBytes(e.vramMB * 1024 * 1024)}` : '';
        const label = e.ok
          ? `${e.id}${size}${e.cached ? ' · cached' : ''}`
          : `${e.id} — not offered: ${e.reasons.join('; ')}`;
        const o = h('option', { value: e.id, 'data-ok': String(e.ok) }, label);
        o.disabled = !e.ok;
        return o;
      }),
    );
    const first = this.entries.find((e) => e.ok);
    this.select.value = this.entries.some((e) => e.id === current && e.ok) ? current : (first?.id ?? '');
    this.describe();
  }

  private describe(): void {
    const ok = this.entries.filter((e) => e.ok).length;
    const e = this.entries.find((x) => x.id === this.select.value);
    this.info.textContent =
      `${ok} of ${this.entries.length} models offered on this adapter. ` +
      (e
        ? `${e.id}: ${e.vramMB ? `~${fmtBytes(e.vramMB * 1024 * 1024)} of GPU memory (WebLLM's figure); ` : ''}${e.cached ? 'cached' : 'not cached'}; download size unknown until its tensor-cache.json is read` +
          (e.requiredFeatures.length ? `; needs ${e.requiredFeatures.join(', ')}` : '')
        : '');
    this.deleteButton.disabled = !e?.cached;
    this.onChange?.();
  }

  private async refreshCache(): Promise<void> {
    try {
      const { hasModelInCache, prebuiltAppConfig } = await import('@mlc-ai/web-llm');
      const config = this.appConfig(prebuiltAppConfig);
      await Promise.all(
        this.entries.map(async (e) => {
          e.cached = await hasModelInCache(e.id, config).catch(() => false);
        }),
      );
      this.render();
      const est = await navigator.storage?.estimate?.();
      this.storage.textContent = est
        ? `Storage: ${fmtBytes(est.usage ?? 0)} used of ${fmtBytes(est.quota ?? 0)} allowed to this page.`
        : 'Storage use is not reported by this browser.';
    } catch (e) {
      this.storage.textContent = `The cache could not be read: ${(e as Error)?.message ?? e}`;
    }
  }

  private async deleteSelected(): Promise<void> {
    const id = this.select.value;
    if (!id) return;
    const { deleteModelAllInfoInCache, prebuiltAppConfig } = await import('@mlc-ai/web-llm');
    await deleteModelAllInfoInCache(id, this.appConfig(prebuiltAppConfig)).catch(() => undefined);
    await this.refreshCache();
  }
}
