/**
 * The request side of the OpenAI-shaped API (src/core/openai.ts): a `chat.completions.create` request
 * checked and mapped to the engine's {@link ChatRequest} ({@link mapChatCompletionParams}), and the
 * request options (the SDK's second argument) read ({@link requestSignal}). What the engines cannot honour
 * is refused with `EngineError('invalid_argument')` naming the field, never silently ignored: the rules are
 * listed in openai.ts's header. DOM-free and Node-free, like the rest of src/core.
 */
import { EngineError, isEngineError } from './errors.ts';
import type { ChatMessage, ChatRequest, ResponseFormat, ToolDefinition } from './types.ts';
import { checkNumberOption, type NumberRule } from './validate.ts';

const bad = (message: string) => new EngineError('invalid_argument', message);

const show = (v: unknown): string =>
  typeof v === 'string'
    ? JSON.stringify(v)
    : Array.isArray(v)
      ? v.length === 0
        ? 'an empty array'
        : 'an array'
      : v === null
        ? 'null'
        : String(v);

/** Fields that have a meaning here; anything else set (not undefined/null) is refused. */
const HANDLED = new Set([
  'messages',
  'model',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'seed',
  'stop',
  'top_k',
  'min_p',
  'repetition_penalty',
  'parse_special_in_content',
  'n',
  'logprobs',
  'top_logprobs',
  'frequency_penalty',
  'presence_penalty',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'parallel_tool_calls',
  'logit_bias',
  'response_format',
  'user',
  'metadata',
  'safety_identifier',
  'prompt_cache_key',
  'store',
]);

const isSet = (v: unknown) => v !== undefined && v !== null;
const isEmpty = (v: unknown) =>
  !isSet(v) ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && Object.keys(v as object).length === 0);

/** What a request becomes: the engine's chat request, the stop strings and the stream options. */
export interface MappedRequest {
  req: ChatRequest;
  stops: string[];
  stream: boolean;
  includeUsage: boolean;
}

function num(name: string, v: unknown, rule: NumberRule): number | undefined {
  if (!isSet(v)) return undefined;
  checkNumberOption(name, v, rule);
  return v as number;
}

function messageOf(m: unknown, i: number): ChatMessage {
  const at = `messages[${i}]`;
  if (typeof m !== 'object' || m === null || Array.isArray(m))
    throw bad(`${at} must be an object {role, content}, got ${show(m)}`);
  const o = m as Record<string, unknown>;
  const role = o.role;
  if (role === 'function')
    throw bad(`${at}.role "function" is not supported: use tools and role "tool" (OpenAI's current form)`);
  if (role !== 'system' && role !== 'developer' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    throw bad(`${at}.role must be "system", "developer", "user", "assistant" or "tool", got ${show(role)}`);
  const extra = role === 'assistant' ? ['tool_calls'] : role === 'tool' ? ['tool_call_id'] : [];
  for (const [k, v] of Object.entries(o)) {
    if (k === 'role' || k === 'content' || extra.includes(k) || !isSet(v)) continue;
    throw bad(
      k === 'name'
        ? `${at}.name is not supported: the chat templates here have no participant names`
        : `${at}.${k} is not supported (only role and content${extra.length ? ` and ${extra[0]}` : ''} are)`,
    );
  }
  let content: string;
  if (typeof o.content === 'string') content = o.content;
  else if (Array.isArray(o.content)) {
    const texts = o.content.map((p: unknown, j: number) => {
      const part = p as { type?: unknown; text?: unknown } | null;
      if (part?.type !== 'text' || typeof part.text !== 'string')
        throw bad(
          `${at}.content[${j}] must be a text part {type: "text", text}, got ${part && typeof part === 'object' ? `type ${show(part.type)}` : show(part)}: these engines read text only`,
        );
      return part.text;
    });
    content = texts.join('\n');
  } else if (role === 'assistant' && !isSet(o.content) && isSet(o.tool_calls)) content = '';
  else throw bad(`${at}.content must be a string or an array of text parts, got ${show(o.content)}`);
  const out: ChatMessage = { role: role === 'developer' ? 'system' : role, content };
  if (role === 'tool') {
    if (typeof o.tool_call_id !== 'string' || o.tool_call_id === '')
      throw bad(`${at}.tool_call_id must name the call this answers, got ${show(o.tool_call_id)}`);
    out.toolCallId = o.tool_call_id;
  }
  if (role === 'assistant' && isSet(o.tool_calls)) {
    if (!Array.isArray(o.tool_calls))
      throw bad(`${at}.tool_calls must be an array, got ${show(o.tool_calls)}`);
    out.toolCalls = o.tool_calls.map((t: unknown, j: number) => {
      const c = t as {
        id?: unknown;
        type?: unknown;
        function?: { name?: unknown; arguments?: unknown };
      } | null;
      if (
        typeof c?.id !== 'string' ||
        (isSet(c.type) && c.type !== 'function') ||
        typeof c.function?.name !== 'string' ||
        typeof c.function.arguments !== 'string'
      )
        throw bad(`${at}.tool_calls[${j}] must be {id, type: "function", function: {name, arguments}}`);
      return {
        id: c.id,
        type: 'function',
        function: { name: c.function.name, arguments: c.function.arguments },
      };
    });
  }
  return out;
}

/**
 * OpenAI's `tools` / `tool_choice` / `parallel_tool_calls` → the engine's (function tools only; the
 * engine checks names, schemas and that a named choice is among them).
 * @throws EngineError('invalid_argument') naming the bad field.
 */
function mapTools(p: Record<string, unknown>, req: ChatRequest): void {
  if (isSet(p.tools)) {
    if (!Array.isArray(p.tools)) throw bad(`tools must be an array, got ${show(p.tools)}`);
    req.tools = p.tools.map((t: unknown, i: number) => {
      const o = t as { type?: unknown; function?: Record<string, unknown> } | null;
      if (o?.type !== 'function' || typeof o.function !== 'object' || o.function === null)
        throw bad(
          `tools[${i}] must be {type: "function", function: {name, parameters}} (only function tools are supported)`,
        );
      const f = o.function;
      const fn: ToolDefinition['function'] = { name: f.name as string };
      if (isSet(f.description)) fn.description = f.description as string;
      if (isSet(f.parameters)) fn.parameters = f.parameters as Record<string, unknown>;
      if (isSet(f.strict)) fn.strict = f.strict as boolean;
      return { type: 'function', function: fn };
    });
  }
  const c = p.tool_choice;
  if (isSet(c)) {
    if (c === 'auto' || c === 'none' || c === 'required') req.toolChoice = c;
    else {
      const name = (c as { type?: unknown; function?: { name?: unknown } }).function?.name;
      if (typeof c !== 'object' || (c as { type?: unknown }).type !== 'function' || typeof name !== 'string')
        throw bad(
          `tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}, got ${show(c)}`,
        );
      req.toolChoice = { type: 'function', function: { name } };
    }
  }
  if (isSet(p.parallel_tool_calls)) {
    if (typeof p.parallel_tool_calls !== 'boolean')
      throw bad(`parallel_tool_calls must be true or false, got ${show(p.parallel_tool_calls)}`);
    req.parallelToolCalls = p.parallel_tool_calls;
  }
}

/**
 * Checks a request and maps it to the engine's {@link ChatRequest}: `max_tokens` → maxTokens,
 * `temperature` (default 1) → temperature, `top_p` (default 1) → topP, `seed`, `top_k` → topK, `min_p` →
 * minP, `repetition_penalty` → repetitionPenalty, our `parse_special_in_content` (true or false) →
 * parseSpecialInContent (ChatRequest's opt-in to reading special-token texts in the contents as tokens);
 * `stop` to a list of strings.
 * @throws EngineError('invalid_argument') naming the first field it cannot honour.
 */
export function mapChatCompletionParams(params: unknown): MappedRequest {
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    throw bad(`the request must be an object {messages, …}, got ${show(params)}`);
  const p = params as Record<string, unknown>;
  for (const [k, v] of Object.entries(p)) {
    if (HANDLED.has(k) || !isSet(v)) continue;
    // The engine API's camelCase (maxTokens, topP) where OpenAI's snake_case is meant.
    const snake = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snake !== k && HANDLED.has(snake))
      throw bad(`${k} is not a chat.completions field (did you mean ${JSON.stringify(snake)}?)`);
    if (k === 'draft')
      throw bad(
        'draft is not a chat.completions field: speculative decoding is asked for through the engine API (engine.chat or engine.generate with draft); create runs without it',
      );
    throw bad(`${k} is not supported by this engine; leave it out`);
  }

  if (!Array.isArray(p.messages) || p.messages.length === 0)
    throw bad(`messages must be a non-empty array of {role, content}, got ${show(p.messages)}`);
  const messages = p.messages.map(messageOf);

  if (isSet(p.model) && typeof p.model !== 'string')
    throw bad(`model must be a string, got ${show(p.model)}`);
  if (isSet(p.stream) && typeof p.stream !== 'boolean')
    throw bad(`stream must be true or false, got ${show(p.stream)}`);
  const stream = p.stream === true;
  let includeUsage = false;
  if (isSet(p.stream_options)) {
    if (!stream) throw bad('stream_options is only allowed with stream: true (as OpenAI)');
    const so = p.stream_options as Record<string, unknown>;
    if (typeof so !== 'object' || Array.isArray(so))
      throw bad(`stream_options must be an object, got ${show(so)}`);
    for (const [k, v] of Object.entries(so)) {
      if (!isSet(v)) continue;
      if (k !== 'include_usage' && k !== 'include_obfuscation')
        throw bad(`stream_options.${k} is not supported (include_usage is)`);
      if (typeof v !== 'boolean') throw bad(`stream_options.${k} must be true or false, got ${show(v)}`);
    }
    includeUsage = so.include_usage === true;
  }

  // Refused unless neutral: each names the field.
  if (isSet(p.n) && p.n !== 1) throw bad(`n must be 1 (one choice per request), got ${show(p.n)}`);
  if (isSet(p.logprobs) && p.logprobs !== false)
    throw bad('logprobs is not supported: these engines return no log-probabilities');
  if (isSet(p.top_logprobs) && p.top_logprobs !== 0)
    throw bad('top_logprobs is not supported: these engines return no log-probabilities');
  if (!isEmpty(p.functions)) throw bad('functions is not supported: use tools (OpenAI’s current form)');
  if (isSet(p.function_call) && p.function_call !== 'none')
    throw bad('function_call is not supported: use tool_choice (OpenAI’s current form)');
  for (const k of ['frequency_penalty', 'presence_penalty'] as const)
    if (isSet(p[k]) && p[k] !== 0)
      throw bad(`${k} is not supported (only 0): use repetition_penalty (CTRL-style, > 1 penalises) instead`);
  if (!isEmpty(p.logit_bias)) throw bad('logit_bias is not supported by these engines');
  const responseFormat = mapResponseFormat(p.response_format);
  if (isSet(p.store) && p.store !== false) throw bad('store is not supported: nothing is stored here');
  for (const k of ['user', 'safety_identifier', 'prompt_cache_key'] as const)
    if (isSet(p[k]) && typeof p[k] !== 'string') throw bad(`${k} must be a string, got ${show(p[k])}`);

  let maxTokens = num('max_tokens', p.max_tokens, { integer: true, min: 1 });
  const maxCompletion = num('max_completion_tokens', p.max_completion_tokens, { integer: true, min: 1 });
  if (maxTokens !== undefined && maxCompletion !== undefined && maxTokens !== maxCompletion)
    throw bad(`max_tokens (${maxTokens}) and max_completion_tokens (${maxCompletion}) differ: give one`);
  maxTokens ??= maxCompletion;

  let stops: string[] = [];
  if (typeof p.stop === 'string') stops = [p.stop];
  else if (Array.isArray(p.stop)) stops = [...p.stop];
  else if (isSet(p.stop)) throw bad(`stop must be a string or an array of strings, got ${show(p.stop)}`);
  stops.forEach((s, i) => {
    if (typeof s !== 'string' || s === '')
      throw bad(
        `stop${typeof p.stop === 'string' ? '' : `[${i}]`} must be a non-empty string, got ${show(s)}`,
      );
  });

  const req: ChatRequest = {
    messages,
    temperature: num('temperature', p.temperature, { min: 0, max: 2 }) ?? 1,
    topP: num('top_p', p.top_p, { above: 0, max: 1 }) ?? 1,
  };
  if (maxTokens !== undefined) req.maxTokens = maxTokens;
  if (responseFormat) req.responseFormat = responseFormat;
  mapTools(p, req);
  if (req.tools?.length === 0) delete req.tools;
  const seed = num('seed', p.seed, { integer: true });
  if (seed !== undefined) req.seed = seed;
  const topK = num('top_k', p.top_k, { integer: true, min: 0 });
  if (topK !== undefined) req.topK = topK;
  const minP = num('min_p', p.min_p, { min: 0, max: 1 });
  if (minP !== undefined) req.minP = minP;
  const rep = num('repetition_penalty', p.repetition_penalty, { above: 0 });
  if (rep !== undefined) req.repetitionPenalty = rep;
  if (isSet(p.parse_special_in_content)) {
    if (typeof p.parse_special_in_content !== 'boolean')
      throw bad(`parse_special_in_content must be true or false, got ${show(p.parse_special_in_content)}`);
    req.parseSpecialInContent = p.parse_special_in_content;
  }
  return { req, stops, stream, includeUsage };
}

/**
 * OpenAI's `response_format` → the engine's {@link ResponseFormat}: `{type: 'text'}` (none),
 * `{type: 'json_object'}`, `{type: 'json_schema', json_schema: {name, schema, strict, description}}`, and
 * WebLLM's forms `{type: 'json_object', schema: '<JSON Schema text>'}` and `{type: 'grammar', grammar}`
 * (EBNF/GBNF). Undefined for none or text.
 * @throws EngineError('invalid_argument') naming the bad field.
 */
export function mapResponseFormat(v: unknown): ResponseFormat | undefined {
  if (!isSet(v)) return undefined;
  if (typeof v !== 'object' || Array.isArray(v))
    throw bad(`response_format must be an object {type, …}, got ${show(v)}`);
  const f = v as Record<string, unknown>;
  const only = (allowed: string[]) => {
    for (const [k, x] of Object.entries(f))
      if (!allowed.includes(k) && isSet(x))
        throw bad(
          `response_format.${k} is not supported with type ${show(f.type)} (${allowed.join(', ')} are)`,
        );
  };
  switch (f.type) {
    case 'text':
      only(['type']);
      return undefined;
    case 'json_object': {
      // WebLLM's form of a schema: {type: 'json_object', schema: '<JSON Schema text>'}.
      only(['type', 'schema']);
      if (!isSet(f.schema)) return { type: 'json_object' };
      if (typeof f.schema !== 'string')
        throw bad(`response_format.schema must be JSON Schema text (WebLLM's form), got ${show(f.schema)}`);
      try {
        JSON.parse(f.schema);
      } catch (e) {
        throw bad(`response_format.schema is not JSON: ${(e as Error).message}`);
      }
      return { type: 'json_schema', schema: f.schema };
    }
    case 'json_schema': {
      only(['type', 'json_schema']);
      const js = f.json_schema as Record<string, unknown> | undefined;
      if (typeof js !== 'object' || js === null || Array.isArray(js))
        throw bad(`response_format.json_schema must be an object {name, schema, strict}, got ${show(js)}`);
      for (const [k, x] of Object.entries(js))
        if (!['name', 'schema', 'strict', 'description'].includes(k) && isSet(x))
          throw bad(
            `response_format.json_schema.${k} is not supported (name, schema, strict, description are)`,
          );
      if (typeof js.name !== 'string' || js.name === '')
        throw bad(`response_format.json_schema.name must be a non-empty string, got ${show(js.name)}`);
      const schema = js.schema ?? {};
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
        throw bad(`response_format.json_schema.schema must be a JSON Schema object, got ${show(schema)}`);
      if (isSet(js.strict) && typeof js.strict !== 'boolean')
        throw bad(`response_format.json_schema.strict must be true or false, got ${show(js.strict)}`);
      const out: ResponseFormat = {
        type: 'json_schema',
        name: js.name,
        schema: schema as Record<string, unknown>,
      };
      if (typeof js.strict === 'boolean') out.strict = js.strict;
      return out;
    }
    case 'grammar':
      only(['type', 'grammar']);
      if (typeof f.grammar !== 'string' || f.grammar.trim() === '')
        throw bad(
          `response_format.grammar must be a non-empty EBNF/GBNF grammar (rule root), got ${show(f.grammar)}`,
        );
      return { type: 'grammar', grammar: f.grammar };
    default:
      throw bad(
        `response_format.type must be "text", "json_object", "json_schema" or "grammar", got ${show(f.type)}`,
      );
  }
}

/** The engine API's request fields and OpenAI's names for them, for {@link inApiTerms}. */
const API_NAMES: ReadonlyArray<readonly [string, string]> = [
  ['parallelToolCalls', 'parallel_tool_calls'],
  ['parseSpecialInContent', 'parse_special_in_content'],
  ['repetitionPenalty', 'repetition_penalty'],
  ['responseFormat', 'response_format'],
  ['toolChoice', 'tool_choice'],
  ['toolCallId', 'tool_call_id'],
  ['toolCalls', 'tool_calls'],
  ['maxTokens', 'max_tokens'],
  ['topP', 'top_p'],
  ['topK', 'top_k'],
  ['minP', 'min_p'],
];

/**
 * An engine's error about a mapped request, in the request's own terms: the engines check the request
 * they get (src/core/validate.ts, the grammar compiler) and name the engine API's fields (`toolChoice`,
 * `responseFormat.schema`); under `chat.completions.create` those are OpenAI's (`tool_choice`,
 * `response_format.json_schema.schema`). Only `invalid_argument` and `unsupported` errors name fields; any
 * other error, or one naming none, comes back as it was. The code, details and cause are kept.
 * @param params the request as given to `create` (for which form of `response_format` carried a schema).
 */
export function inApiTerms(e: unknown, params: unknown): unknown {
  if (!(isEngineError(e, 'invalid_argument') || isEngineError(e, 'unsupported'))) return e;
  const format = (params as { response_format?: { type?: unknown } } | null)?.response_format;
  const schemaField =
    format?.type === 'json_schema' ? 'response_format.json_schema.schema' : 'response_format.schema';
  let message = e.message.replace(/\bresponseFormat\.schema\b/g, schemaField);
  for (const [ours, theirs] of API_NAMES) message = message.replace(new RegExp(`\\b${ours}\\b`, 'g'), theirs);
  if (message === e.message) return e;
  return new EngineError(e.code, message, { cause: e, ...(e.details ? { details: e.details } : {}) });
}

/**
 * The `signal` of `create`'s request options (undefined when none is given).
 * @throws EngineError('invalid_argument') for options that are not an object, or that set anything else.
 */
export function requestSignal(options: unknown): AbortSignal | undefined {
  let signal: AbortSignal | undefined;
  if (isSet(options)) {
    if (typeof options !== 'object')
      throw bad(`the request options must be an object {signal}, got ${show(options)}`);
    for (const [k, v] of Object.entries(options as object))
      if (k !== 'signal' && isSet(v)) throw bad(`request option ${k} is not supported (signal is)`);
    signal = (options as { signal?: AbortSignal | null }).signal ?? undefined;
  }
  return signal;
}
