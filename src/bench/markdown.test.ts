import { describe, expect, it } from 'vitest';
import { markdownCell, markdownTable } from './markdown.ts';

describe('markdownTable', () => {
  it('left-aligns the first column and right-aligns the rest by default', () => {
    expect(markdownTable(['model', 'tok/s', 'ms'], [['a', '1.5', '2']])).toEqual([
      '| model | tok/s | ms |',
      '| --- | ---: | ---: |',
      '| a | 1.5 | 2 |',
    ]);
  });

  it('takes a count of left-aligned columns', () => {
    expect(markdownTable(['a', 'b', 'c'], [], 2)[1]).toBe('| --- | --- | ---: |');
    expect(markdownTable(['a', 'b'], [], 0)[1]).toBe('| ---: | ---: |');
    expect(markdownTable(['a', 'b'], [], 5)[1]).toBe('| --- | --- |');
  });

  it('takes one alignment per column, missing ones left', () => {
    expect(markdownTable(['a', 'b', 'c', 'd'], [], ['right', 'center', 'left'])[1]).toBe(
      '| ---: | :---: | --- | --- |',
    );
  });

  it('escapes | and flattens newlines in the header and the cells', () => {
    expect(markdownTable(['a|b'], [['x | y\nz']])).toEqual(['| a\\|b |', '| --- |', '| x \\| y z |']);
    expect(markdownCell('p|q\nr')).toBe('p\\|q r');
  });

  it('writes the rows as given, an empty cell included', () => {
    expect(
      markdownTable(
        ['a', 'b'],
        [
          ['', '1'],
          ['x', ''],
        ],
      ).slice(2),
    ).toEqual(['|  | 1 |', '| x |  |']);
  });
});
