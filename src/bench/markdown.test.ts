import { describe, expect, it } from 'vitest';
import { markdownCell, markdownCode, markdownTable, markdownText } from './markdown.ts';

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

describe('markdownText and markdownCode (issue 47 item 12)', () => {
  it('makes HTML, links, images, emphasis and code spans inert; line breaks spaces', () => {
    expect(markdownText('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(markdownText('<img src=x onerror=alert(1)>')).toBe('&lt;img src=x onerror=alert(1)&gt;');
    expect(markdownText('![x](https://t.example/p.png) [a](javascript:x) *b* `c` \\d &amp;')).toBe(
      '!\\[x\\](https://t.example/p.png) \\[a\\](javascript:x) \\*b\\* \\`c\\` \\\\d &amp;amp;',
    );
    expect(markdownText('a\r\nb\rc\nd')).toBe('a b c d');
    expect(markdownText('NVIDIA RTX 4090 · stories260K.gguf (Q4_K_M)')).toBe(
      'NVIDIA RTX 4090 · stories260K.gguf (Q4_K_M)',
    );
    // In a table the cell escape adds the pipe's.
    expect(markdownTable(['a'], [[markdownText('x|<b>y</b>')]])[2]).toBe('| x\\|&lt;b&gt;y&lt;/b&gt; |');
  });

  it('a code span that cannot be closed early', () => {
    expect(markdownCode('ab`<b>c\nd')).toBe('`abbc d`');
    expect(markdownCode('0123abcd')).toBe('`0123abcd`');
  });
});
