/** Built-in prompt sets and the prompts-file format. */
import { describe, expect, it } from 'vitest';
import { PROMPT_SETS, parsePromptsFile, promptsFor } from './prompts.ts';

const words = (s: string) => s.trim().split(/\s+/).length;

describe('prompt sets', () => {
  it('short, medium and long have the advertised sizes (about 1.3 tokens per English word)', () => {
    for (const p of PROMPT_SETS.short) expect(words(p.text)).toBeLessThanOrEqual(10);
    for (const p of PROMPT_SETS.medium) expect(words(p.text)).toBeGreaterThanOrEqual(70);
    for (const p of PROMPT_SETS.long) expect(words(p.text)).toBeGreaterThanOrEqual(400);
    const names = promptsFor('all').map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    expect(promptsFor('custom', 'hi')).toEqual([{ name: 'custom', text: 'hi' }]);
    expect(() => promptsFor('custom')).toThrow(/needs a prompt text/);
  });

  it('parses JSON arrays (strings or objects) and plain lines', () => {
    expect(parsePromptsFile('["a", {"name": "x", "text": "b"}, {"text": "c"}]')).toEqual([
      { name: 'prompt-1', text: 'a' },
      { name: 'x', text: 'b' },
      { name: 'prompt-3', text: 'c' },
    ]);
    expect(parsePromptsFile('one\n\n two \r\nthree\n')).toEqual([
      { name: 'prompt-1', text: 'one' },
      { name: 'prompt-2', text: ' two ' },
      { name: 'prompt-3', text: 'three' },
    ]);
    expect(() => parsePromptsFile('  ')).toThrow(/no prompt/);
    expect(() => parsePromptsFile('[{"name": "x"}]')).toThrow(/prompt 1 has no "text"/);
  });
});
