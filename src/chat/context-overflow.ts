/**
 * A context overflow in a surface's own words. The engine's message advises the API's `contextLength` and
 * the CLI's `--ctx`; the widget sets its context with an attribute, the page with a select before loading.
 */
import { isEngineError } from '../core/errors.ts';

/**
 * Words a `context_overflow` from the error's details (EngineErrorDetails: context length, prompt tokens)
 * and `advice` (e.g. "shorten the message or set a larger context-length attribute on the widget");
 * `subject` names what did not fit ("the message", "the prompt"). An error without details (WebLLM's, a
 * remote server's) keeps `message` and gets the advice after it.
 */
export function contextOverflowText(
  e: unknown,
  message: string,
  advice: string,
  subject = 'the message',
): string {
  const d = isEngineError(e) ? e.details : undefined;
  if (d?.contextLength === undefined) return `${message} (${advice})`;
  if (d.promptTokens === undefined)
    return `${subject} does not fit the context of ${d.contextLength} tokens; ${advice}`;
  const least = d.promptTokensAtLeast ? 'at least ' : '';
  return `${subject} needs ${least}${d.promptTokens} tokens but the context holds ${d.contextLength} (and one must be left for the answer); ${advice}`;
}

/** The page's advice: its context is the Context select beside the model, read when the model loads. */
export const PAGE_CONTEXT_ADVICE = 'choose a larger Context beside the model and load it again';
