/**
 * The one check of what callers hand the types.ts `Engine` API: every backend (src/webgpu/engine.ts,
 * src/remote/engine.ts, src/webllm/engine.ts, the worker proxy) calls {@link validateGenerateRequest} /
 * {@link validateChatRequest} first, so a wrong type or an out-of-range number is an
 * `EngineError('invalid_argument')` naming the field, never a TypeError from deep inside, a NaN that
 * silently means "greedy", or a value a server interprets its own way.
 *
 * The number rules here are the sampler's (src/webgpu/sampler.ts uses {@link checkSamplingParams}).
 */
import { EngineError } from './errors.ts';
import type { ChatRequest, GenerateRequest, KvType, ResponseFormat, SamplingParams } from './types.ts';

/** What a number must be: an integer or any finite number, within bounds (`above` is exclusive). */
export interface NumberRule {
  integer?: boolean;
  min?: number;
  /** Exclusive lower bound. */
  above?: number;
  max?: number;
}

/** A value for a message: strings quoted, other types named. */
function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

/** `an integer ≥ 0 and ≤ 9`, `a finite number > 0`: what a {@link NumberRule} asks for, for messages. */
export function describeRule(r: NumberRule): string {
  const parts: string[] = [];
  if (r.min !== undefined) parts.push(`≥ ${r.min}`);
  if (r.above !== undefined) parts.push(`> ${r.above}`);
  if (r.max !== undefined) parts.push(`≤ ${r.max}`);
  return `${r.integer ? 'an integer' : 'a finite number'}${parts.length ? ` ${parts.join(' and ')}` : ''}`;
}

/** True when `v` is a number that satisfies `rule`. */
export function satisfies(v: unknown, rule: NumberRule): v is number {
  if (typeof v !== 'number' || !Number.isFinite(v)) return false;
  if (rule.integer && !Number.isSafeInteger(v)) return false;
  if (rule.min !== undefined && v < rule.min) return false;
  if (rule.above !== undefined && !(v > rule.above)) return false;
  if (rule.max !== undefined && v > rule.max) return false;
  return true;
}

/**
 * Checks one optional number option (undefined passes).
 * @throws EngineError('invalid_argument') `"<name> must be <rule>, got <value>"`.
 */
export function checkNumberOption(name: string, v: unknown, rule: NumberRule): void {
  if (v === undefined) return;
  if (!satisfies(v, rule))
    throw new EngineError('invalid_argument', `${name} must be ${describeRule(rule)}, got ${show(v)}`);
}

/** The sampling parameters' rules (llama.cpp's ranges; see src/webgpu/sampler.ts). */
export const SAMPLING_RULES: Readonly<Record<keyof SamplingParams, NumberRule>> = {
  temperature: { min: 0 },
  topK: { integer: true, min: 0 },
  topP: { above: 0, max: 1 },
  minP: { min: 0, max: 1 },
  repetitionPenalty: { above: 0 },
  repetitionLastN: { integer: true, min: -1 },
  seed: { integer: true },
};

/**
 * Checks the sampling parameters that are set (undefined = the default).
 * @throws EngineError('invalid_argument') naming the first bad one.
 */
export function checkSamplingParams(p: SamplingParams): void {
  for (const [name, rule] of Object.entries(SAMPLING_RULES))
    checkNumberOption(name, (p as Record<string, unknown>)[name], rule);
}

/** The context (tokens) a load takes when `LoadOptions.contextLength` is absent, below the trained one. */
export const DEFAULT_CONTEXT_LENGTH = 2048;

/**
 * The context length (tokens) every engine loads with (LoadOptions.contextLength): `requested`, else
 * min(trained, {@link DEFAULT_CONTEXT_LENGTH}), never above `trained` (the GGUF's `{arch}.context_length`).
 */
export function loadContextLength(trained: number, requested?: number): number {
  return Math.min(requested ?? Math.min(trained, DEFAULT_CONTEXT_LENGTH), trained);
}

/** The KV-cache element types ({@link KvType}), the default first. */
export const KV_TYPES: readonly KvType[] = ['f16', 'f32', 'q8_0', 'q4_0'];

/** Bytes per KV-cache element: 4 for f32, 2 for f16, 34/32 for q8_0, 18/32 for q4_0 (ggml_row_size / 32 values). */
export function kvTypeBytes(t: KvType): number {
  return t === 'f32' ? 4 : t === 'q8_0' ? 34 / 32 : t === 'q4_0' ? 18 / 32 : 2;
}

/** True for a {@link KV_TYPES} name. */
export function isKvType(v: unknown): v is KvType {
  return typeof v === 'string' && (KV_TYPES as readonly string[]).includes(v);
}

/**
 * Checks an optional KV-cache type (LoadOptions.kvType; undefined passes).
 * @throws EngineError('invalid_argument') `kvType must be f16, f32, q8_0 or q4_0, got …`.
 */
export function checkKvType(v: unknown, name = 'kvType'): asserts v is KvType | undefined {
  if (v !== undefined && !isKvType(v))
    throw new EngineError(
      'invalid_argument',
      `${name} must be one of ${KV_TYPES.join(', ')}, got ${show(v)}`,
    );
}

function checkBoolean(name: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'boolean')
    throw new EngineError('invalid_argument', `${name} must be true or false, got ${show(v)}`);
}

/** Fields of both request kinds ({@link GENERATE_FIELDS}, {@link CHAT_FIELDS}). */
const COMMON_FIELDS = ['maxTokens', 'ignoreEos', 'returnLogits', 'responseFormat', 'draft'];

/** The fields a `GenerateRequest` has (types.ts); any other is refused. */
export const GENERATE_FIELDS: readonly string[] = [
  'prompt',
  'promptTokenIds',
  ...COMMON_FIELDS,
  ...Object.keys(SAMPLING_RULES),
];

/** The fields a `ChatRequest` has (types.ts); any other is refused. */
export const CHAT_FIELDS: readonly string[] = [
  'messages',
  'parseSpecialInContent',
  'tools',
  'toolChoice',
  'parallelToolCalls',
  ...COMMON_FIELDS,
  ...Object.keys(SAMPLING_RULES),
];

/**
 * Refuses a field the request does not have (set to anything but undefined): a misspelt or snake_case
 * field (`max_tokens`) would otherwise be ignored and the default run unnoticed.
 * @throws EngineError('invalid_argument') naming the field, with the camelCase field it may mean.
 */
function checkFields(
  r: Record<string, unknown>,
  known: readonly string[],
  what: string,
  subject = `the ${what} request has`,
): void {
  const extra = Object.keys(r).filter((k) => r[k] !== undefined && !known.includes(k));
  if (extra.length === 0) return;
  const k = extra[0];
  // snake_case or another case of a field (context_length, kvtype) where the field is meant.
  const folded = k.replace(/_/g, '').toLowerCase();
  const meant =
    known.find((f) => f.toLowerCase() === folded) ??
    (k === 'max_completion_tokens' && known.includes('maxTokens') ? 'maxTokens' : undefined);
  const hint = meant ? ` (did you mean ${JSON.stringify(meant)}?)` : '';
  throw new EngineError(
    'invalid_argument',
    `${subject} no field ${JSON.stringify(k)}${hint}; ${subject.endsWith('have') ? 'they take' : 'it takes'} ${known.join(', ')}`,
  );
}

/** The fields of `LoadOptions` (types.ts); any other is refused. */
export const LOAD_OPTION_FIELDS: readonly string[] = [
  'contextLength',
  'batchSize',
  'onProgress',
  'signal',
  'cache',
  'defaultLimits',
  'kvType',
  'kvTypeK',
  'kvTypeV',
  'draft',
];

/**
 * Checks load options before anything loads: an object (or undefined) with no field `LoadOptions` lacks
 * (a misspelt `kvtype` would otherwise load with the default cache), and the KV types.
 * @throws EngineError('invalid_argument') naming the field (`did you mean "kvType"?`) or the bad type.
 */
export function checkLoadOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new EngineError('invalid_argument', `the load options must be an object, got ${show(options)}`);
  const o = options as Record<string, unknown>;
  checkFields(o, LOAD_OPTION_FIELDS, 'load', 'the load options have');
  checkNumberOption('contextLength', o.contextLength, { integer: true, min: 1 });
  checkNumberOption('batchSize', o.batchSize, { integer: true, min: 1 });
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function')
    throw new EngineError('invalid_argument', `onProgress must be a function, got ${show(o.onProgress)}`);
  const sig = o.signal as { aborted?: unknown; addEventListener?: unknown } | undefined;
  if (sig !== undefined && (typeof sig !== 'object' || sig === null || typeof sig.aborted !== 'boolean'))
    throw new EngineError('invalid_argument', `signal must be an AbortSignal, got ${show(o.signal)}`);
  checkKvType(o.kvType);
  checkKvType(o.kvTypeK, 'kvTypeK');
  checkKvType(o.kvTypeV, 'kvTypeV');
  checkBoolean('defaultLimits', o.defaultLimits);
}

/**
 * The generate request of a chat request whose prompt is made (`prompt` or `promptTokenIds` added by the
 * caller): the chat-only fields left out, so that it passes {@link validateGenerateRequest}.
 */
export function chatGenerateFields(req: ChatRequest): Omit<GenerateRequest, 'prompt' | 'promptTokenIds'> {
  const { messages, parseSpecialInContent, tools, toolChoice, parallelToolCalls, ...rest } = req;
  return rest;
}

function checkCommon(req: unknown, what: string): asserts req is Record<string, unknown> {
  if (typeof req !== 'object' || req === null || Array.isArray(req))
    throw new EngineError('invalid_argument', `the ${what} request must be an object, got ${show(req)}`);
  const r = req as Record<string, unknown>;
  checkFields(r, what === 'chat' ? CHAT_FIELDS : GENERATE_FIELDS, what);
  checkSamplingParams(r as SamplingParams);
  checkNumberOption('maxTokens', r.maxTokens, { integer: true, min: 0 });
  checkBoolean('ignoreEos', r.ignoreEos);
  checkBoolean('returnLogits', r.returnLogits);
  checkResponseFormat(r.responseFormat);
  checkDraft(r.draft);
}

/** The speculative-decoding limits (GenerateRequest.draft): draftMax 1..16, ngramMax 1..8. */
export const DRAFT_LIMITS = { draftMax: 16, ngramMax: 8 } as const;

/**
 * Checks GenerateRequest.draft: an object `{ type: 'lookup' | 'model', draftMax?: 1..16, ngramMax?: 1..8 }`.
 * @throws EngineError('invalid_argument') naming the bad field.
 */
export function checkDraft(d: unknown): void {
  if (d === undefined) return;
  if (typeof d !== 'object' || d === null || Array.isArray(d))
    throw new EngineError(
      'invalid_argument',
      `draft must be an object such as { type: 'lookup' }, got ${show(d)}`,
    );
  const o = d as Record<string, unknown>;
  checkFields(o, ['type', 'draftMax', 'ngramMax'], 'draft', 'draft has');
  if (o.type !== 'lookup' && o.type !== 'model')
    throw new EngineError('invalid_argument', `draft.type must be 'lookup' or 'model', got ${show(o.type)}`);
  checkNumberOption('draft.draftMax', o.draftMax, { integer: true, min: 1, max: DRAFT_LIMITS.draftMax });
  checkNumberOption('draft.ngramMax', o.ngramMax, { integer: true, min: 1, max: DRAFT_LIMITS.ngramMax });
}

/** Whether a parsed JSON value can be a JSON Schema: an object or a boolean (JSON Schema 2020-12 §4.3). */
export function isJsonSchemaValue(v: unknown): boolean {
  return typeof v === 'boolean' || (typeof v === 'object' && v !== null && !Array.isArray(v));
}

/**
 * Checks a {@link ResponseFormat}'s shape (not whether its schema or grammar compiles: the engine that
 * compiles it says so, before any token).
 * @throws EngineError('invalid_argument') naming the bad field.
 */
export function checkResponseFormat(v: unknown): asserts v is ResponseFormat | undefined {
  if (v === undefined) return;
  const bad = (m: string) => new EngineError('invalid_argument', `responseFormat${m}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw bad(` must be an object {type, …}, got ${show(v)}`);
  const f = v as Record<string, unknown>;
  const fields = (...known: string[]) =>
    checkFields(f, ['type', ...known], 'responseFormat', 'responseFormat has');
  switch (f.type) {
    case 'text':
      fields();
      return;
    case 'json_object':
      // WebLLM's form: a schema under json_object. Dropping it would give JSON that ignores the schema.
      if (f.schema !== undefined)
        throw bad(
          ` {type: 'json_object'} takes no schema (any JSON object); for output that follows a schema use {type: 'json_schema', schema}`,
        );
      fields();
      return;
    case 'json_schema': {
      // The OpenAI wire form, where the engine's own is meant.
      if (f.json_schema !== undefined && f.schema === undefined)
        throw bad(
          ` takes the schema as {type: 'json_schema', schema, name?, strict?}; {json_schema: {…}} is the OpenAI wire form, which chat.completions.create takes`,
        );
      fields('schema', 'name', 'strict');
      const s = f.schema;
      if (typeof s === 'string') {
        let parsed: unknown;
        try {
          parsed = JSON.parse(s);
        } catch (e) {
          throw bad(`.schema is not JSON: ${(e as Error).message}`);
        }
        // The grammar library's own words for anything else are its C++ check's.
        if (!isJsonSchemaValue(parsed))
          throw bad(`.schema must be a JSON Schema (an object, or true/false), got ${show(parsed)}`);
      } else if (typeof s !== 'object' || s === null || Array.isArray(s))
        throw bad(`.schema must be a JSON Schema object (or its JSON text), got ${show(s)}`);
      if (f.name !== undefined && typeof f.name !== 'string')
        throw bad(`.name must be a string, got ${show(f.name)}`);
      checkBoolean('responseFormat.strict', f.strict);
      return;
    }
    case 'structural_tag':
      if (typeof f.format !== 'object' || f.format === null || Array.isArray(f.format))
        throw bad(`.format must be a structural tag format object {type, …}, got ${show(f.format)}`);
      fields('format');
      return;
    case 'grammar':
      fields('grammar');
      if (typeof f.grammar !== 'string' || f.grammar.trim() === '')
        throw bad(`.grammar must be a non-empty grammar text (EBNF/GBNF, rule root), got ${show(f.grammar)}`);
      return;
    default:
      throw bad(
        `.type must be "text", "json_object", "json_schema", "grammar" or "structural_tag", got ${show(f.type)}`,
      );
  }
}

/**
 * Checks a `ModelSource` (types.ts) before anything is fetched: an object with one of `url` (a non-empty
 * string: a URL, a path relative to the page, an `hf:` shorthand), `blob` (a Blob or File; `parts` an
 * array of them), `path` (a non-empty string) or `synthetic` (a string).
 * @param what the source's name in messages (`the draft model source` for `LoadOptions.draft`).
 * @throws EngineError('invalid_argument') saying what it got and the forms a source takes.
 */
export function checkModelSource(source: unknown, what = 'the model source'): void {
  const forms = "{ url: '…' }, { blob: file }, { path: '…' } (Node) or { synthetic: 'SHAPE-TYPE' }";
  if (typeof source !== 'object' || source === null || Array.isArray(source))
    throw new EngineError(
      'invalid_argument',
      `${what} must be an object: ${forms}, got ${show(source)}${typeof source === 'string' ? ` (for a URL: load({ url: ${show(source)} }))` : ''}`,
    );
  const o = source as Record<string, unknown>;
  const kinds = ['url', 'blob', 'path', 'synthetic'].filter((k) => o[k] !== undefined);
  if (kinds.length !== 1)
    throw new EngineError(
      'invalid_argument',
      `${what} must have one of url, blob, path or synthetic, got ${kinds.length ? kinds.join(' and ') : 'none'}: ${forms}`,
    );
  const k = kinds[0];
  const v = o[k];
  const isBlob = (b: unknown) => typeof Blob !== 'undefined' && b instanceof Blob;
  if (k === 'blob' ? !isBlob(v) : typeof v !== 'string' || (k !== 'synthetic' && v.trim() === ''))
    throw new EngineError(
      'invalid_argument',
      `${what}'s ${k} must be ${k === 'blob' ? 'a Blob or File' : 'a non-empty string'}, got ${show(v)}`,
    );
  if (k === 'blob' && o.parts !== undefined && !(Array.isArray(o.parts) && o.parts.every(isBlob)))
    throw new EngineError(
      'invalid_argument',
      `${what}'s parts must be an array of Blobs (a split GGUF's files), got ${show(o.parts)}`,
    );
}

/**
 * Checks a completion request's types and ranges: `prompt` a string, `promptTokenIds` an array of integers
 * ≥ 0 (not both), `maxTokens` an integer ≥ 0, the sampling numbers in range, the flags booleans, and no
 * field a `GenerateRequest` does not have ({@link GENERATE_FIELDS}).
 * @throws EngineError('invalid_argument') naming the first bad field.
 */
export function validateGenerateRequest(req: unknown): asserts req is GenerateRequest {
  checkCommon(req, 'generate');
  if (req.prompt !== undefined && typeof req.prompt !== 'string')
    throw new EngineError('invalid_argument', `prompt must be a string, got ${show(req.prompt)}`);
  if (req.prompt !== undefined && req.promptTokenIds !== undefined)
    throw new EngineError(
      'invalid_argument',
      'give prompt (text) or promptTokenIds (token ids), not both: one of them would be left unused',
    );
  const ids = req.promptTokenIds;
  if (ids !== undefined) {
    if (!Array.isArray(ids))
      throw new EngineError(
        'invalid_argument',
        `promptTokenIds must be an array of token ids, got ${show(ids)}`,
      );
    const i = ids.findIndex((id) => !satisfies(id, { integer: true, min: 0 }));
    if (i >= 0)
      throw new EngineError(
        'invalid_argument',
        `promptTokenIds[${i}] must be an integer ≥ 0 (a token id), got ${show(ids[i])}`,
      );
  }
}

const ROLES: readonly string[] = ['system', 'user', 'assistant', 'tool'];
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Checks a chat request's `tools`, `toolChoice` and `parallelToolCalls`: each tool `{type: 'function',
 * function: {name, description?, parameters?, strict?}}` with a unique name of 1–64 of [A-Za-z0-9_-];
 * `toolChoice` 'auto' | 'none' | 'required' | {type: 'function', function: {name}} naming one of them.
 * @throws EngineError('invalid_argument') naming the problem (an unknown tool name in toolChoice).
 */
export function checkTools(req: Record<string, unknown>): void {
  const bad = (m: string) => new EngineError('invalid_argument', m);
  const tools = req.tools;
  const names = new Set<string>();
  if (tools !== undefined) {
    if (!Array.isArray(tools))
      throw bad(`tools must be an array of {type: "function", function}, got ${show(tools)}`);
    tools.forEach((t: unknown, i) => {
      const o = t as { type?: unknown; function?: Record<string, unknown> } | null;
      if (
        typeof o !== 'object' ||
        o === null ||
        o.type !== 'function' ||
        typeof o.function !== 'object' ||
        o.function === null
      )
        throw bad(`tools[${i}] must be {type: "function", function: {name, parameters}}, got ${show(t)}`);
      const f = o.function;
      if (typeof f.name !== 'string' || !TOOL_NAME.test(f.name))
        throw bad(
          `tools[${i}].function.name must be 1-64 characters of a-z, A-Z, 0-9, _ and -, got ${show(f.name)}`,
        );
      if (names.has(f.name)) throw bad(`tools[${i}].function.name ${show(f.name)} is given twice`);
      names.add(f.name);
      const p = f.parameters;
      if (p !== undefined && (typeof p !== 'object' || p === null || Array.isArray(p)))
        throw bad(`tools[${i}].function.parameters must be a JSON Schema object, got ${show(p)}`);
      if (f.description !== undefined && typeof f.description !== 'string')
        throw bad(`tools[${i}].function.description must be a string, got ${show(f.description)}`);
      checkBoolean(`tools[${i}].function.strict`, f.strict);
    });
  }
  checkBoolean('parallelToolCalls', req.parallelToolCalls);
  const c = req.toolChoice;
  if (c === undefined || c === 'auto' || c === 'none') return;
  if (c === 'required') {
    if (names.size === 0) throw bad('toolChoice "required" needs tools');
    return;
  }
  const name = (c as { type?: unknown; function?: { name?: unknown } } | null)?.function?.name;
  if (
    typeof c !== 'object' ||
    c === null ||
    (c as { type?: unknown }).type !== 'function' ||
    typeof name !== 'string'
  )
    throw bad(
      `toolChoice must be "auto", "none", "required" or {type: "function", function: {name}}, got ${show(c)}`,
    );
  if (!names.has(name))
    throw bad(
      `toolChoice names the function ${show(name)}, which is not among the tools (${[...names].join(', ') || 'none given'})`,
    );
}

/**
 * Checks a chat request: `messages` a non-empty array of `{role: 'system'|'user'|'assistant', content:
 * string}`, and the same numbers and flags as {@link validateGenerateRequest}.
 * @throws EngineError('invalid_argument') naming the first bad field.
 */
export function validateChatRequest(req: unknown): asserts req is ChatRequest {
  checkCommon(req, 'chat');
  const psc = (req as { parseSpecialInContent?: unknown }).parseSpecialInContent;
  if (psc !== undefined && typeof psc !== 'boolean')
    throw new EngineError(
      'invalid_argument',
      `parseSpecialInContent must be true or false, got ${show(psc)}`,
    );
  const m = req.messages;
  if (!Array.isArray(m) || m.length === 0)
    throw new EngineError(
      'invalid_argument',
      `messages must be a non-empty array of {role, content}, got ${Array.isArray(m) ? 'an empty array' : show(m)}`,
    );
  m.forEach((msg: unknown, i) => {
    const o = msg as { role?: unknown; content?: unknown } | null;
    if (typeof o !== 'object' || o === null)
      throw new EngineError('invalid_argument', `messages[${i}] must be {role, content}, got ${show(msg)}`);
    if (typeof o.role !== 'string' || !ROLES.includes(o.role))
      throw new EngineError(
        'invalid_argument',
        `messages[${i}].role must be one of ${ROLES.join(', ')}, got ${show(o.role)}`,
      );
    if (typeof o.content !== 'string')
      throw new EngineError(
        'invalid_argument',
        `messages[${i}].content must be a string, got ${show(o.content)}`,
      );
    const tm = o as { toolCalls?: unknown; toolCallId?: unknown };
    if (tm.toolCallId !== undefined && typeof tm.toolCallId !== 'string')
      throw new EngineError(
        'invalid_argument',
        `messages[${i}].toolCallId must be a string, got ${show(tm.toolCallId)}`,
      );
    if (tm.toolCalls !== undefined) {
      const ok =
        o.role === 'assistant' &&
        Array.isArray(tm.toolCalls) &&
        tm.toolCalls.every(
          (t: { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null) =>
            typeof t?.id === 'string' &&
            typeof t.function?.name === 'string' &&
            typeof t.function.arguments === 'string',
        );
      if (!ok)
        throw new EngineError(
          'invalid_argument',
          `messages[${i}].toolCalls must be an assistant's [{id, type: "function", function: {name, arguments}}]`,
        );
    }
  });
  checkTools(req as Record<string, unknown>);
}

/**
 * Strict decimal reading of a number typed by a person (a command-line flag, a form field): digits with
 * an optional sign, point and exponent; no blanks, hex, `Infinity` or empty string (which `Number()` reads
 * as 0). Returns undefined for anything else.
 */
export function parseDecimal(s: string): number | undefined {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Text typed by a person (a flag, an attribute, a form field) read strictly by `rule` (an integer rule
 * reads decimal digits only) and checked against it; undefined when it is no such number.
 */
export function readRuleText(text: string, rule: NumberRule): number | undefined {
  const n = rule.integer ? parseInteger(text) : parseDecimal(text);
  return satisfies(n, rule) ? n : undefined;
}

/** Strict reading of an integer typed by a person: decimal digits with an optional sign, nothing else. */
export function parseInteger(s: string): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * For engines that cannot constrain their output (wllama here): refuses a request's structured output
 * (`responseFormat` other than text) and its `tools` (the chat template would not see them and no call
 * would come back) rather than answering free text as if they had been honoured.
 * @throws EngineError('unsupported') naming the engine and the field.
 */
export function refuseConstraints(
  req: { responseFormat?: { type: string }; tools?: unknown },
  engine: string,
): void {
  if (req.responseFormat !== undefined && req.responseFormat.type !== 'text')
    throw new EngineError(
      'unsupported',
      `structured output (responseFormat ${req.responseFormat.type}) runs on our WebGPU engine, WebLLM and remote servers, not on ${engine}: its answer would not be constrained`,
    );
  if (req.tools !== undefined)
    throw new EngineError(
      'unsupported',
      `tool calling (tools) runs on our WebGPU engine and remote servers, not on ${engine}`,
    );
}

/**
 * For engines without speculative decoding (remote servers, WebLLM): refuses a request's `draft` or a
 * load's `draft` rather than ignoring it.
 * @throws EngineError('invalid_argument') naming the engine.
 */
export function refuseDraft(what: { draft?: unknown }, engine: string): void {
  if (what.draft !== undefined) {
    throw new EngineError(
      'invalid_argument',
      `speculative decoding (draft) runs on our WebGPU engine only, not on ${engine}`,
    );
  }
}

/**
 * Checks `tokenize`'s arguments: a string, and `addBos` a boolean or undefined.
 * @throws EngineError('invalid_argument') saying what it got.
 */
export function checkTokenizeArgs(text: unknown, addBos: unknown): void {
  if (typeof text !== 'string')
    throw new EngineError('invalid_argument', `tokenize takes a string, got ${show(text)}`);
  checkBoolean('addBos', addBos);
}

/**
 * Checks `detokenize`'s argument: an array of integer token ids (the vocabulary's range is the
 * tokenizer's to check).
 * @throws EngineError('invalid_argument') saying what it got.
 */
export function checkTokenIds(ids: unknown): void {
  if (!Array.isArray(ids) || !ids.every((x) => Number.isInteger(x)))
    throw new EngineError(
      'invalid_argument',
      `detokenize takes an array of integer token ids, got ${show(ids)}`,
    );
}
