/**
 * A form that names every wrong field at once (the benchmark plan, the chat's settings): each field is read
 * with {@link FieldReader} (an error is kept, not thrown, and the next field is still read), then
 * {@link showFieldErrors} says them all in a notice by the form's button (one line, or a list), marks each
 * field `aria-invalid`, focuses the first, and takes a field's line away when it is typed in.
 * The form needs `novalidate`: the browser's own check stopped the submit at the first field out of its
 * min/max (one bubble, one field at a time) before the form's code could name them all.
 */
import { h } from '../dom/h.ts';
import { FieldError } from './number-field.ts';

/** Every wrong field of a form, in the form's order. */
export class FieldErrors extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.map((e) => e.message).join('; '));
  }
}

/** The errors in `e` (a {@link FieldErrors}, a {@link FieldError}, or any other error said on `fallback`). */
export function fieldErrorsOf(e: unknown, fallback: HTMLElement): FieldError[] {
  if (e instanceof FieldErrors) return e.errors;
  if (e instanceof FieldError) return [e];
  return [new FieldError(fallback, e instanceof Error ? e.message : String(e))];
}

/** Reads a form's fields one after another, keeping each one's error instead of stopping at the first. */
export class FieldReader {
  readonly errors: FieldError[] = [];

  /** @param fallback the field an error other than a {@link FieldError} is said on */
  constructor(private readonly fallback: HTMLElement) {}

  /** `read()`'s value, or `otherwise` when it threw (the error is kept). */
  read<T>(read: () => T, otherwise: T): T {
    try {
      return read();
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      this.errors.push(...fieldErrorsOf(e, this.fallback));
      return otherwise;
    }
  }

  /** Keeps an error on `field` (a check across fields). */
  add(field: HTMLElement, message: string): void {
    this.errors.push(new FieldError(field, message));
  }

  /** @throws FieldErrors naming every field read wrong so far, when there is one. */
  check(): void {
    if (this.errors.length) throw new FieldErrors(this.errors);
  }
}

/** What a notice shows now: the fields it marked, and the listeners that take their lines away. */
const shown = new WeakMap<HTMLElement, { fields: HTMLElement[]; listeners: AbortController }>();

/**
 * Says `errors` in `notice` (one line, or "N fields to fix:" and a list), shows it, marks each field
 * invalid and focuses the first. Typing in a field (or changing a select) takes its line away and its mark
 * off, and the count follows; the notice hides when no line is left. What the notice said before is taken
 * back first.
 * @param onChange called with the errors still unfixed in one line ('' when none) each time one is fixed
 *   (a live status that repeats them).
 * @returns the errors in one line ("…; …"), for a live status.
 */
export function showFieldErrors(
  notice: HTMLElement,
  errors: FieldError[],
  onChange?: (left: string) => void,
): string {
  clearFieldErrors(notice);
  const listeners = new AbortController();
  shown.set(notice, { fields: errors.map((e) => e.field), listeners });
  const lines = errors.map((e) => h('li', {}, e.message));
  const head = h('p', {}, `${errors.length} fields to fix:`);
  notice.replaceChildren(
    ...(errors.length === 1 ? [errors[0].message] : [head, h('ul', { class: 'form-errors' }, lines)]),
  );
  const left = () => errors.filter((_, i) => lines[i].isConnected);
  notice.hidden = false;
  errors.forEach((e, i) => {
    const field = e.field;
    field.setAttribute('aria-invalid', 'true');
    const fixed = new AbortController();
    const signal = AbortSignal.any([fixed.signal, listeners.signal]);
    const clear = () => {
      fixed.abort();
      field.removeAttribute('aria-invalid');
      lines[i].remove();
      const rest = errors.length === 1 ? [] : left();
      if (rest.length === 0) notice.hidden = true;
      else head.textContent = rest.length === 1 ? '1 field to fix:' : `${rest.length} fields to fix:`;
      onChange?.(rest.map((r) => r.message).join('; '));
    };
    // A select says a new choice with change only; a text field with input.
    field.addEventListener('input', clear, { signal });
    field.addEventListener('change', clear, { signal });
  });
  errors[0].field.focus();
  return errors.map((e) => e.message).join('; ');
}

/** Hides `notice` and takes back what {@link showFieldErrors} said in it (the fields' marks, its listeners). */
export function clearFieldErrors(notice: HTMLElement): void {
  notice.hidden = true;
  const was = shown.get(notice);
  if (!was) return;
  shown.delete(notice);
  was.listeners.abort();
  for (const field of was.fields) field.removeAttribute('aria-invalid');
}
