import { describe, expect, it } from 'vitest';
import { escapeHtml } from './html.ts';

describe('escapeHtml', () => {
  it('replaces the five characters HTML text and quoted attributes give meaning to, and only those', () => {
    expect(escapeHtml(`<a href="x" title='y'>Q4_K & "co"</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;Q4_K &amp; &quot;co&quot;&lt;/a&gt;',
    );
    // An entity already in the text is escaped again (it is text, not markup); other characters pass.
    expect(escapeHtml('&amp; ★ 1,234 tok/s – µs')).toBe('&amp;amp; ★ 1,234 tok/s – µs');
    expect(escapeHtml('')).toBe('');
  });
});
