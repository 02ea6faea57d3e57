/**
 * "Kept in this browser": the model library's listing (src/library/) in the page — each cached model with
 * its size, source and last use, a Load and a Delete button; Delete all; storage used and the quota from
 * `navigator.storage.estimate()`; and a button for `navigator.storage.persist()`. The engine worker does
 * the downloads; this view reads the same Origin Private File System from the page.
 */

import { h } from '../dom/h.ts';
import { isLocalSpec, type LibraryEntry, ModelLibrary } from '../library/library.ts';
import { OpfsStore } from '../library/store.ts';
import { fmtBytes } from '../util/format.ts';

/** How long ago an ISO date was, for people ("3 min ago"). */
export function fmtAgo(iso: string, now = Date.now()): string {
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (!Number.isFinite(s)) return 'unknown';
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} days ago`;
}

export class LibraryView {
  readonly element: HTMLElement;
  /** Called with an entry's spec when its Load button is pressed. */
  onLoad: (spec: string) => void = () => {};
  private readonly list: HTMLElement;
  private readonly storage: HTMLElement;
  private readonly clearButton: HTMLButtonElement;
  private readonly persistButton: HTMLButtonElement;
  private readonly message: HTMLElement;
  private library: Promise<ModelLibrary> | undefined;
  private busy = false;

  constructor() {
    this.list = h('ul', { class: 'library__list', 'data-testid': 'library-list' });
    this.storage = h('p', { class: 'field__hint', 'data-testid': 'library-storage' });
    this.message = h('p', { class: 'field__hint', role: 'status', 'aria-live': 'polite' });
    this.clearButton = h('button', { type: 'button', class: 'button button--small' }, 'Delete all');
    this.clearButton.addEventListener('click', () => void this.clear());
    this.persistButton = h(
      'button',
      { type: 'button', class: 'button button--small' },
      'Keep even when storage is low',
    );
    this.persistButton.title =
      'Asks the browser not to evict these models under storage pressure (navigator.storage.persist())';
    this.persistButton.addEventListener('click', () => void this.persist());
    this.element = h(
      'section',
      { class: 'library', 'aria-labelledby': 'library-heading', 'data-testid': 'library' },
      h('h3', { id: 'library-heading', class: 'library__title' }, 'Kept in this browser'),
      this.list,
      this.storage,
      h('div', { class: 'library__actions' }, this.clearButton, this.persistButton),
      this.message,
    );
    if (!OpfsStore.available()) {
      this.element.replaceChildren(
        h(
          'p',
          { class: 'field__hint' },
          'This browser has no Origin Private File System, so models cannot be kept here.',
        ),
      );
    }
  }

  private lib(): Promise<ModelLibrary> {
    this.library ??= ModelLibrary.open();
    return this.library;
  }

  /**
   * Enables or disables Load, Delete and Delete all while the engine is busy (a load may be reading a kept
   * copy), without reading the listing again.
   */
  setBusy(busy: boolean): void {
    this.busy = busy;
    for (const b of this.list.querySelectorAll('button')) b.disabled = busy;
    this.clearButton.disabled = busy || this.list.querySelector('.library__item') === null;
  }

  /** Reads the listing and the storage estimate again. */
  async refresh(disabled = this.busy): Promise<void> {
    this.busy = disabled;
    if (!OpfsStore.available()) return;
    let entries: LibraryEntry[];
    try {
      entries = await (await this.lib()).list();
    } catch (e) {
      this.message.textContent = `Cannot read the stored models: ${(e as Error).message}`;
      return;
    }
    this.list.replaceChildren(
      ...(entries.length
        ? entries.map((e) => this.row(e, disabled))
        : [
            h(
              'li',
              { class: 'library__empty' },
              'Nothing yet: models loaded with “Keep a copy” are kept here.',
            ),
          ]),
    );
    this.clearButton.disabled = disabled || entries.length === 0;
    const est = await (await this.lib()).estimate();
    this.storage.textContent =
      est?.usage !== undefined && est.quota !== undefined
        ? `This site uses ${fmtBytes(est.usage)} of the ${fmtBytes(est.quota)} the browser allows it.`
        : 'The browser does not say how much storage this site may use.';
    const persisted = await navigator.storage?.persisted?.().catch(() => false);
    this.persistButton.hidden = persisted === true;
    if (persisted) this.storage.textContent += ' Kept even when storage is low.';
  }

  private row(e: LibraryEntry, disabled: boolean): HTMLElement {
    const load = h(
      'button',
      { type: 'button', class: 'button button--small' },
      e.complete ? 'Load' : 'Resume',
    );
    load.disabled = disabled;
    load.addEventListener('click', () => this.onLoad(e.spec));
    const del = h(
      'button',
      { type: 'button', class: 'button button--small', 'aria-label': `Delete ${e.name}` },
      'Delete',
    );
    del.disabled = disabled;
    del.addEventListener('click', () => void this.remove(e));
    const state = e.complete
      ? `${fmtBytes(e.size)}${e.parts > 1 ? ` in ${e.parts} parts` : ''}${e.sha256Verified ? ' · SHA-256 checked' : ''}`
      : `partial: ${fmtBytes(e.storedBytes)} of ${fmtBytes(e.size)} (${Math.floor((100 * e.storedBytes) / Math.max(1, e.size))}%)`;
    return h(
      'li',
      {
        class: 'library__item',
        'data-key': e.key,
        'data-complete': String(e.complete),
        'data-stored-bytes': String(e.storedBytes),
      },
      h(
        'div',
        { class: 'library__info' },
        h('strong', { class: 'library__name' }, e.name),
        h('span', { class: 'library__meta' }, `${state} · used ${fmtAgo(e.lastUsedAt)}`),
        h(
          'span',
          { class: 'library__source', title: e.url },
          isLocalSpec(e.spec) ? 'a copy of a file from your disk' : e.spec,
        ),
      ),
      h('div', { class: 'library__buttons' }, load, del),
    );
  }

  private async remove(e: LibraryEntry): Promise<void> {
    await (await this.lib()).remove(e.key);
    this.message.textContent = `Deleted ${e.name}.`;
    await this.refresh();
  }

  private async clear(): Promise<void> {
    await (await this.lib()).clear();
    this.message.textContent = 'Deleted every stored model.';
    await this.refresh();
  }

  private async persist(): Promise<void> {
    const ok = await (await this.lib()).persist();
    this.message.textContent = ok
      ? 'The browser will keep these models even when storage runs low.'
      : 'The browser declined (it decides by how much you use this site; bookmarking it helps).';
    await this.refresh();
  }
}
