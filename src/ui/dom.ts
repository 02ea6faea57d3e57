/**
 * Small DOM helpers shared by the page's views. Text always goes in as text (`append` of a string makes a
 * Text node): nothing here parses HTML, so model output and imported files can never inject markup.
 */

export type Child = Node | string | null | undefined | false;

/** Creates an element with attributes (`class`, `data-*`, aria-*, …) and children; text is never parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | undefined> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** A labelled form field: `<div class="field"><label for=id>…</label>control hint</div>`. */
export function field(
  label: string,
  control: HTMLElement,
  hint?: string,
  opts: { inline?: boolean } = {},
): HTMLDivElement {
  const id = control.id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  const lab = h('label', { for: id, class: 'field__label' }, label);
  return h(
    'div',
    { class: opts.inline ? 'field field--inline' : 'field' },
    opts.inline ? [control, lab] : [lab, control],
    hint ? h('p', { id: hintId, class: 'field__hint' }, hint) : null,
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
