/**
 * Tool calls in a model's own words: which format a chat template asks for, the constraint that makes the
 * model write a well-formed call (its arguments valid against the function's schema), and the parser that
 * turns the output into OpenAI's `tool_calls`. Two families cover the GGUF templates that take `tools`:
 *
 * - `hermes` (Qwen 2.5 / 3, Hermes 2 Pro / 3, and templates that teach `<tool_call>`): each call is
 *   `<tool_call>\n{"name": NAME, "arguments": {…}}\n</tool_call>`, text may come before the calls
 *   (Qwen's template text; vLLM's `hermes` tool parser);
 * - `llama3` (Llama 3.1 / 3.2 / 3.3 JSON tool calling): the whole answer is `{"name": NAME,
 *   "parameters": {…}}`, optionally after `<|python_tag|>` (Meta's prompt format docs; vLLM's `llama3_json`
 *   parser), several separated by `;`.
 *
 * The constraint is an xgrammar structural tag (model/grammar.ts): the call's fixed text around a JSON
 * schema, so the GPU mask forces the markup and the arguments' schema where the request asks for it.
 */
import { EngineError } from '../core/errors.ts';
import type { ChatMessage, ResponseFormat, ToolCall, ToolChoice, ToolDefinition } from '../core/types.ts';

/** The tool-call format a chat template teaches. */
export type ToolCallFormat = 'hermes' | 'llama3';

/**
 * The tool-call format of `template`.
 * @throws EngineError('invalid_argument') when the template never reads `tools` (no tool support) or
 *   teaches a format other than the two known ones.
 */
export function toolCallFormat(template: string | null): ToolCallFormat {
  if (template === null || !/\btools\b/.test(template))
    throw new EngineError(
      'invalid_argument',
      "this model's chat template has no tool support (it never reads `tools`); leave tools out or use a model whose template takes them (Llama 3.1+, Qwen 2.5/3, Hermes)",
    );
  if (template.includes('<tool_call>')) return 'hermes';
  if (
    template.includes('<|python_tag|>') ||
    template.includes('"parameters"') ||
    template.includes('ipython')
  )
    return 'llama3';
  throw new EngineError(
    'invalid_argument',
    "this model's chat template takes tools in a format not known here (known: Hermes/Qwen <tool_call>, Llama 3.x JSON)",
  );
}

/** The fixed text before a call's arguments and after them, in `format`. */
function callMarkup(format: ToolCallFormat, name: string): { begin: string; end: string } {
  return format === 'hermes'
    ? { begin: `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": `, end: '}\n</tool_call>' }
    : { begin: `{"name": ${JSON.stringify(name)}, "parameters": `, end: '}' };
}

/** A tool's arguments schema: its `parameters` where `strict` asks (or `always`), else any object. */
function argumentsSchema(t: ToolDefinition, always: boolean): Record<string, unknown> {
  const p = t.function.parameters;
  return (always || t.function.strict) && p ? p : { type: 'object' };
}

/**
 * The constraint of a tool request ({@link ResponseFormat} 'structural_tag'), or undefined for none:
 * `required` → one call or more (one with `parallel` false), each call's markup fixed and its arguments
 * valid against the function's `parameters`; a named function → exactly one call of it, likewise; `auto`
 * with a `strict` tool (Hermes format only: its calls start with a trigger, `<tool_call>`) → free text,
 * but any call well-formed with strict tools' arguments valid; `none` or `auto` otherwise → no constraint.
 */
export function toolConstraint(
  format: ToolCallFormat,
  tools: readonly ToolDefinition[],
  choice: ToolChoice,
  parallel = true,
): ResponseFormat | undefined {
  const tag = (t: ToolDefinition, always: boolean) => {
    const { begin, end } = callMarkup(format, t.function.name);
    return {
      type: 'tag',
      begin,
      content: { type: 'json_schema', json_schema: argumentsSchema(t, always) },
      end,
    };
  };
  if (choice === 'none') return undefined;
  if (typeof choice === 'object') {
    const t = tools.find((x) => x.function.name === choice.function.name);
    if (!t)
      throw new EngineError(
        'invalid_argument',
        `toolChoice names an unknown function ${choice.function.name}`,
      );
    return { type: 'structural_tag', format: tag(t, true) };
  }
  if (choice === 'required')
    return {
      type: 'structural_tag',
      format: {
        type: 'tags_with_separator',
        tags: tools.map((t) => tag(t, true)),
        separator: format === 'hermes' ? '\n' : '; ',
        at_least_one: true,
        stop_after_first: !parallel,
      },
    };
  if (format === 'hermes' && tools.some((t) => t.function.strict))
    return {
      type: 'structural_tag',
      format: {
        type: 'triggered_tags',
        triggers: ['<tool_call>'],
        tags: tools.map((t) => tag(t, false)),
        stop_after_first: !parallel,
      },
    };
  return undefined;
}

let nextId = 0;
/** An OpenAI-style call id (`call_` and 24 characters), unique within this page or process. */
function callId(): string {
  const rand = Math.floor(Math.random() * 2 ** 48).toString(36);
  return `call_${(rand + (nextId++).toString(36)).padStart(24, '0').slice(-24)}`;
}

/** A parsed call object → a ToolCall, when its name is one of `names` and its arguments an object. */
function toCall(
  o: unknown,
  argKey: 'arguments' | 'parameters',
  names: ReadonlySet<string>,
): ToolCall | undefined {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return undefined;
  const r = o as Record<string, unknown>;
  const args = r[argKey] ?? r.arguments ?? r.parameters ?? {};
  if (typeof r.name !== 'string' || !names.has(r.name)) return undefined;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined;
  return { id: callId(), type: 'function', function: { name: r.name, arguments: JSON.stringify(args) } };
}

/**
 * Splits a model's answer into its text and its tool calls, in `format` ({@link ToolCallFormat}); only
 * calls of the given tools count (anything else stays text). `content` is the text without the calls'
 * markup, trimmed ('' when the answer was only calls).
 */
export function parseToolCalls(
  text: string,
  format: ToolCallFormat,
  tools: readonly ToolDefinition[],
): { content: string; calls: ToolCall[] } {
  const names = new Set(tools.map((t) => t.function.name));
  const calls: ToolCall[] = [];
  if (format === 'hermes') {
    const content = text.replace(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g, (whole, body: string) => {
      let o: unknown;
      try {
        o = JSON.parse(body);
      } catch {
        return whole;
      }
      const c = toCall(o, 'arguments', names);
      if (!c) return whole;
      calls.push(c);
      return '';
    });
    return { content: calls.length ? content.trim() : text, calls };
  }
  const body = text.replace(/^\s*(<\|python_tag\|>)?/, '').trim();
  if (!body.startsWith('{')) return { content: text, calls };
  for (const part of splitTopLevel(body)) {
    let o: unknown;
    try {
      o = JSON.parse(part);
    } catch {
      return { content: text, calls: [] };
    }
    const c = toCall(o, 'parameters', names);
    if (!c) return { content: text, calls: [] };
    calls.push(c);
  }
  return { content: '', calls };
}

/** `a; b; c` split at the `;` outside JSON strings and brackets (Llama 3's several calls). */
function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inStr = false;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inStr) {
      if (ch === '\\') i++;
      else if (ch === '"') inStr = false;
    } else if (ch === '"') inStr = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
    else if (ch === ';' && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(s.slice(start).trim());
  return out.filter((p) => p !== '');
}

/**
 * The messages as a chat template reads them (Hugging Face's `apply_chat_template` conventions): an
 * assistant's calls as `tool_calls: [{id, type, function: {name, arguments}}]` with the arguments parsed
 * to an object (Llama 3.1's and Qwen 2.5's templates write them with `tojson`), a tool's answer with
 * `tool_call_id`.
 */
export function templateMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    const o: Record<string, unknown> = { role: m.role, content: m.content };
    if (m.toolCalls)
      o.tool_calls = m.toolCalls.map((c) => {
        let args: unknown = c.function.arguments;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          // kept as text: the template shows what was given
        }
        return { id: c.id, type: 'function', function: { name: c.function.name, arguments: args } };
      });
    if (m.toolCallId !== undefined) o.tool_call_id = m.toolCallId;
    return o;
  });
}
