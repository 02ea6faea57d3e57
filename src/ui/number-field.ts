/**
 * Number fields read strictly (issue 18, item 6, on the page): a value the browser marks invalid
 * (`badInput` such as "1e", out of the field's min/max, off its step) or an empty field is an error that
 * names the field, never a silent default or a clamp.
 */
import { EngineError } from '../core/errors.ts';
import { describeRule, type NumberRule, readRuleText } from '../core/validate.ts';

/** An {@link EngineError} for a form field, with the field to focus. */
export class FieldError extends EngineError {
  constructor(
    /** The field said to be wrong: an input, a select or a text area. */
    readonly field: HTMLElement,
    message: string,
  ) {
    super('invalid_argument', message);
  }
}

/**
 * The value of a number `<input>` checked against `rule` (and the field's own min/max/step).
 * @throws FieldError `"<label> must be <rule>, got …"` for an empty, malformed or out-of-range value.
 */
export function readNumberField(input: HTMLInputElement, label: string, rule: NumberRule): number {
  const raw = input.value.trim();
  const n = readRuleText(raw, rule);
  if (!input.validity.valid || n === undefined) {
    const got = input.validity.badInput
      ? 'something that is not a number'
      : raw === ''
        ? 'nothing'
        : `"${raw}"`;
    throw new FieldError(input, `${label} must be ${describeRule(rule)}, got ${got}`);
  }
  return n;
}
