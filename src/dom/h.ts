/**
 * The one DOM helper of the page (src/ui) and the chat widget (src/widget): `h(tag, attrs, ...children)`.
 * Text always goes in as text (`append` of a string makes a Text node): nothing here parses HTML, so model
 * output and imported files can never inject markup.
 */

/** A child: a node or text; null, undefined and false are skipped (for `cond && h(...)`). */
export type Child = Node | string | null | undefined | false;

/**
 * What `h` sets on the element: a string is an attribute (`class`, `data-*`, `aria-*`, …), `true` an empty
 * attribute and `false`/`null`/`undefined` none; a function under `onNAME` listens to the event `NAME`;
 * `props` assigns element properties (`value`, `checked`) after the attributes.
 */
export type Attrs<E extends HTMLElement> = {
  props?: Partial<E>;
} & Record<string, string | boolean | null | undefined | ((e: Event) => void) | Partial<E>>;

/** Creates an element with attributes, handlers, properties and children; text is never parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs<HTMLElementTagNameMap[K]> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'props' || v === undefined || v === null || v === false) continue;
    if (typeof v === 'function') {
      if (!/^on[a-z]/.test(k)) throw new TypeError(`h(): a function must be an onEVENT handler, not "${k}"`);
      el.addEventListener(k.slice(2), v);
    } else if (typeof v === 'string' || v === true) el.setAttribute(k, v === true ? '' : v);
    else throw new TypeError(`h(): "${k}" must be a string, a boolean or an onEVENT handler`);
  }
  if (attrs.props) Object.assign(el, attrs.props);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}
