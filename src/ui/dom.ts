/**
 * The page's DOM helpers beyond `h` (src/dom/h.ts, shared with the widget): form fields, downloads, the
 * clipboard. Text always goes in as text: nothing here parses HTML.
 */
import { h } from '../dom/h.ts';

/**
 * A labelled form field: `<div class="field"><label for=id>…</label>control hint</div>`. `hint`: its text,
 * or the element itself when the caller rewrites it later (given the class `field__hint` and, unless it
 * has one, the id `${control.id}-hint`); either way the control is described by it.
 */
export function field(
  label: string,
  control: HTMLElement,
  hint?: string | HTMLElement,
  opts: { inline?: boolean } = {},
): HTMLDivElement {
  const id = control.id;
  const hintEl = typeof hint === 'string' ? (hint ? h('p', {}, hint) : undefined) : hint;
  if (hintEl) {
    hintEl.classList.add('field__hint');
    hintEl.id ||= `${id}-hint`;
    control.setAttribute('aria-describedby', hintEl.id);
  }
  const lab = h('label', { for: id, class: 'field__label' }, label);
  return h(
    'div',
    { class: opts.inline ? 'field field--inline' : 'field' },
    opts.inline ? [control, lab] : [lab, control],
    hintEl ?? null,
  );
}

/** Starts a browser download of `text` as a file. */
export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name });
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Writes text to the clipboard, falling back to a hidden textarea and execCommand where the API is missing. */
export async function copyText(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const ta = h('textarea', { 'aria-hidden': 'true' });
  ta.value = text;
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  document.body.append(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error('copy is not allowed here');
}

/**
 * Scrolls a card into view (its top at the top of the viewport, or as far as the page allows; `block` as
 * scrollIntoView's), smoothly unless the person asked for reduced motion. Nothing happens when the card is
 * already wholly in view, unless `always`.
 */
export function revealCard(card: HTMLElement, always = false, block: ScrollLogicalPosition = 'start'): void {
  const r = card.getBoundingClientRect();
  if (!always && r.top >= 0 && r.bottom <= window.innerHeight) return;
  const reduce = window.matchMedia?.('(prefers-reduced-motion: reduce)').matches ?? false;
  card.scrollIntoView({ behavior: reduce ? 'auto' : 'smooth', block });
}
