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

/**
 * " · trying again (1 of 3)" for the model library's retry note (src/library/download.ts: "connection lost
 * at 0.6 MB; retrying (1 of 3)", asserted in src/library/library.test.ts), else "": a download waiting on
 * its retries showed its bytes alone, for minutes.
 */
export function retryWords(note: string | undefined): string {
  const m = note?.match(/retrying \((\d+) of (\d+)\)/);
  return m ? ` · trying again (${m[1]} of ${m[2]})` : '';
}
