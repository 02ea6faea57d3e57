/**
 * HTML text escaping for the pages built as strings (the report and leaderboard of `npm run bench:report
 * -- --html`). No DOM.
 */

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** `s` safe inside HTML text and double- or single-quoted attribute values (& < > " ' as entities). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);
}
