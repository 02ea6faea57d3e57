/**
 * The engine's messages in the widget's words: advice that names options a widget's reader does not have
 * (the API's `timeoutMs`, the CLI's `--timeout-s`) is left out.
 */

/** Advice clauses of engine messages that a widget's reader cannot follow, and what they become. */
const NOT_FOR_WIDGETS: readonly [RegExp, string][] = [
  [/, or raise the timeout: timeoutMs, or --timeout-s on npm run bench\)/g, ')'],
];

/** `message` without advice the widget's reader cannot follow. */
export function widgetWords(message: string): string {
  let m = message;
  for (const [re, to] of NOT_FOR_WIDGETS) m = m.replace(re, to);
  return m;
}
