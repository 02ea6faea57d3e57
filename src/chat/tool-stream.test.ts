/**
 * ToolCallStreamGate against the whole-answer parser (model/tool-calls.ts parseToolCalls, the reference for
 * what is content and what is a call): for answers in both formats, split into random pieces (1–6
 * characters, seeded), the released text is exactly the content before the first call, and never any
 * markup; an answer without calls comes out whole.
 */
import { describe, expect, it } from 'vitest';
import { parseToolCalls } from '../model/tool-calls.ts';
import { ToolCallStreamGate } from './tool-stream.ts';

/** mulberry32: a small seeded PRNG, so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function stream(text: string, seed: number): { shown: string; held: boolean } {
  const next = rng(seed);
  const gate = new ToolCallStreamGate();
  let shown = '';
  for (let i = 0; i < text.length; ) {
    const n = 1 + Math.floor(next() * 6);
    shown += gate.push(text.slice(i, i + n));
    i += n;
  }
  const held = gate.held;
  return { shown: shown + gate.flush(), held };
}

const TOOLS = ['get_weather', 'f'].map((name) => ({ type: 'function' as const, function: { name } }));
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const CASES: { text: string; format: 'hermes' | 'llama3'; shown: string }[] = [
  { text: `Let me check.\n${CALL}`, format: 'hermes', shown: 'Let me check.\n' },
  { text: CALL, format: 'hermes', shown: '' },
  {
    text: `a < b and <tool_ is not a tag; then ${CALL}${CALL}`,
    format: 'hermes',
    shown: 'a < b and <tool_ is not a tag; then ',
  },
  {
    text: 'No call here, just text with < and <tool.',
    format: 'hermes',
    shown: 'No call here, just text with < and <tool.',
  },
  { text: ' {"name": "get_weather", "parameters": {"city": "Paris"}}', format: 'llama3', shown: '' },
  { text: '<|python_tag|>{"name": "f", "parameters": {}}', format: 'llama3', shown: '' },
  {
    text: 'It is sunny. {"name": "f"} is how a call looks.',
    format: 'llama3',
    shown: 'It is sunny. {"name": "f"} is how a call looks.',
  },
  { text: '<|python tag is not the tag', format: 'llama3', shown: '<|python tag is not the tag' },
];

describe('ToolCallStreamGate', () => {
  it('releases the content before the first call, never markup, under any split', () => {
    for (const c of CASES) {
      const parsed = parseToolCalls(c.text, c.format, TOOLS);
      for (let seed = 1; seed <= 25; seed++) {
        const { shown, held } = stream(c.text, seed);
        expect(shown, `${JSON.stringify(c.text)} seed ${seed}`).toBe(c.shown);
        expect(shown).not.toContain('<tool_call>');
        expect(shown).not.toContain('<|python_tag|>');
        // The parser's content starts with what was shown; with no call the whole text was shown.
        expect(parsed.content.trimEnd().startsWith(shown.trimEnd())).toBe(true);
        if (parsed.calls.length === 0) expect(shown).toBe(c.text);
        else expect(held).toBe(true);
      }
    }
  });
});
