/**
 * Markdown tables, the one helper every report and script writes them with (`| a | b |` lines, GitHub's
 * table syntax). DOM-free and dependency-free, so Node scripts, the CLI and the page share it.
 */

/** A column's alignment: `---` (left, the default for text), `---:` (right, for figures) or `:---:`. */
export type MarkdownAlign = 'left' | 'right' | 'center';

const ALIGN_ROW: Record<MarkdownAlign, string> = { left: '---', right: '---:', center: ':---:' };

/** A cell as Markdown: `|` escaped (it would end the cell) and a newline turned into a space. */
export function markdownCell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
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
