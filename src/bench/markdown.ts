/**
 * Markdown tables, the one helper every report and script writes them with (`| a | b |` lines, GitHub's
 * table syntax). DOM-free and dependency-free, so Node scripts, the CLI and the page share it.
 */

/** A column's alignment: `---` (left, the default for text), `---:` (right, for figures) or `:---:`. */
export type MarkdownAlign = 'left' | 'right' | 'center';

const ALIGN_ROW: Record<MarkdownAlign, string> = { left: '---', right: '---:', center: ':---:' };

/** A cell as Markdown: `|` escaped (it would end the cell) and a line break (CR, LF) turned into a space. */
export function markdownCell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\r\n?|\n/g, ' ');
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Text from outside (a result file, a server's message) made inert in Markdown, for a table cell, a
 * heading or a paragraph: HTML's `&`, `<` and `>` as entities (no tag, comment or autolink can start),
 * the characters of Markdown's inline syntax that a value could abuse (backslash, backtick, `*`, `[`, `]`:
 * code spans, emphasis, links and images) escaped with a backslash, and line breaks made spaces (a value
 * stays on its line). GitHub renders the result as the text. In a table, {@link markdownTable} also
 * escapes `|` (through {@link markdownCell}); elsewhere `|` means nothing.
 */
export function markdownText(s: string): string {
  return s
    .replace(/[\\`*[\]]/g, '\\$&')
    .replace(/[&<>]/g, (c) => HTML_ENTITIES[c] as string)
    .replace(/\r\n?|\n/g, ' ');
}

/**
 * An identifier from outside (a fingerprint) as an inline code span: backticks dropped, so the span cannot
 * end early, and `<` / `>` dropped too (inert in a code span, but not for every reader of the file); line
 * breaks made spaces.
 */
export function markdownCode(s: string): string {
  return `\`${s.replace(/[`<>]/g, '').replace(/\r\n?|\n/g, ' ')}\``;
}

/**
 * The lines of a Markdown table: the header, the alignment row, then the rows; each cell through
 * {@link markdownCell}. `align` is either how many leading columns are left-aligned (the others
 * right-aligned, as figures are; default 1) or one {@link MarkdownAlign} per column (missing ones left).
 */
export function markdownTable(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  align: number | readonly MarkdownAlign[] = 1,
): string[] {
  const alignOf = (i: number): MarkdownAlign =>
    typeof align === 'number' ? (i < align ? 'left' : 'right') : (align[i] ?? 'left');
  const line = (cells: readonly string[]) => `| ${cells.map(markdownCell).join(' | ')} |`;
  return [line(head), `| ${head.map((_, i) => ALIGN_ROW[alignOf(i)]).join(' | ')} |`, ...rows.map(line)];
}
