/**
 * Shape checks of OpenAI's chat wire objects (tests only): `chat.completion` and `chat.completion.chunk`
 * as the OpenAI API reference defines them ("The chat completion object", "The chat completion chunk
 * object"), with the extensions vLLM sends (`stop_reason`, `delta.reasoning_content`). Each returns the
 * problems found (empty when the object fits), naming the path, so one helper checks both what the test
 * server (openai-server.ts, vLLM's format) sends and what src/core/openai.ts makes.
 */

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const FINISH = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'];

/** Keys outside `allowed`, and `required` keys that are missing. */
function keys(o: Obj, path: string, required: string[], optional: string[]): string[] {
  const out: string[] = [];
  for (const k of required) if (!(k in o)) out.push(`${path}.${k} is missing`);
  for (const k of Object.keys(o))
    if (!required.includes(k) && !optional.includes(k)) out.push(`${path}.${k} is not an OpenAI field`);
  return out;
}

function usageProblems(u: unknown, path: string): string[] {
  if (!isObj(u)) return [`${path} must be an object`];
  const out = keys(
    u,
    path,
    ['prompt_tokens', 'completion_tokens', 'total_tokens'],
    ['prompt_tokens_details', 'completion_tokens_details'],
  );
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'])
    if (k in u && !isInt(u[k])) out.push(`${path}.${k} must be an integer ≥ 0`);
  if (isInt(u.prompt_tokens) && isInt(u.completion_tokens) && isInt(u.total_tokens))
    if ((u.prompt_tokens as number) + (u.completion_tokens as number) !== u.total_tokens)
      out.push(`${path}.total_tokens must be prompt_tokens + completion_tokens`);
  return out;
}

function headProblems(o: Obj, object: string): string[] {
  const out: string[] = [];
  if (typeof o.id !== 'string' || o.id === '') out.push('id must be a non-empty string');
  if (o.object !== object) out.push(`object must be "${object}", got ${JSON.stringify(o.object)}`);
  if (!isInt(o.created)) out.push('created must be unix seconds (an integer)');
  else if ((o.created as number) > 1e11) out.push('created looks like milliseconds, not seconds');
  if (typeof o.model !== 'string' || o.model === '') out.push('model must be a non-empty string');
  if (!Array.isArray(o.choices)) out.push('choices must be an array');
  if ('system_fingerprint' in o && typeof o.system_fingerprint !== 'string')
    out.push('system_fingerprint must be a string');
  return out;
}

const HEAD = ['id', 'object', 'created', 'model', 'choices'];
const HEAD_OPTIONAL = ['system_fingerprint', 'service_tier', 'usage'];

/** Problems of a `chat.completion.chunk` (empty: it fits). */
export function chatCompletionChunkProblems(v: unknown): string[] {
  if (!isObj(v)) return ['a chunk must be an object'];
  const out = [...keys(v, 'chunk', HEAD, HEAD_OPTIONAL), ...headProblems(v, 'chat.completion.chunk')];
  if ('usage' in v && v.usage !== null) out.push(...usageProblems(v.usage, 'usage'));
  if (!Array.isArray(v.choices)) return out;
  if (v.choices.length === 0 && !isObj(v.usage))
    out.push('only the include_usage chunk (with usage) has empty choices');
  v.choices.forEach((c: unknown, i: number) => {
    const p = `choices[${i}]`;
    if (!isObj(c)) {
      out.push(`${p} must be an object`);
      return;
    }
    out.push(...keys(c, p, ['index', 'delta', 'finish_reason'], ['logprobs', 'stop_reason']));
    if (c.index !== i) out.push(`${p}.index must be ${i}`);
    if (c.finish_reason !== null && !FINISH.includes(c.finish_reason as string))
      out.push(`${p}.finish_reason must be null or one of ${FINISH.join(', ')}`);
    if ('logprobs' in c && c.logprobs !== null && !isObj(c.logprobs)) out.push(`${p}.logprobs must be null`);
    const d = c.delta;
    if (!isObj(d)) {
      out.push(`${p}.delta must be an object`);
      return;
    }
    out.push(...keys(d, `${p}.delta`, [], ['role', 'content', 'refusal', 'tool_calls', 'reasoning_content']));
    if ('role' in d && d.role !== 'assistant') out.push(`${p}.delta.role must be "assistant"`);
    if ('content' in d && d.content !== null && typeof d.content !== 'string')
      out.push(`${p}.delta.content must be a string or null`);
  });
  return out;
}

/** Problems of a `chat.completion` (empty: it fits). */
export function chatCompletionProblems(v: unknown): string[] {
  if (!isObj(v)) return ['a completion must be an object'];
  const out = [...keys(v, 'completion', HEAD, HEAD_OPTIONAL), ...headProblems(v, 'chat.completion')];
  if ('usage' in v) out.push(...usageProblems(v.usage, 'usage'));
  if (!Array.isArray(v.choices)) return out;
  if (v.choices.length === 0) out.push('choices must not be empty');
  v.choices.forEach((c: unknown, i: number) => {
    const p = `choices[${i}]`;
    if (!isObj(c)) {
      out.push(`${p} must be an object`);
      return;
    }
    out.push(...keys(c, p, ['index', 'message', 'finish_reason', 'logprobs'], ['stop_reason']));
    if (c.index !== i) out.push(`${p}.index must be ${i}`);
    if (!FINISH.includes(c.finish_reason as string))
      out.push(`${p}.finish_reason must be one of ${FINISH.join(', ')}`);
    if (c.logprobs !== null && !isObj(c.logprobs)) out.push(`${p}.logprobs must be null or an object`);
    const m = c.message;
    if (!isObj(m)) {
      out.push(`${p}.message must be an object`);
      return;
    }
    out.push(
      ...keys(
        m,
        `${p}.message`,
        ['role', 'content'],
        ['refusal', 'tool_calls', 'annotations', 'audio', 'function_call', 'reasoning_content'],
      ),
    );
    if (m.role !== 'assistant') out.push(`${p}.message.role must be "assistant"`);
    if (m.content !== null && typeof m.content !== 'string')
      out.push(`${p}.message.content must be a string or null`);
  });
  return out;
}

/**
 * The type skeleton of a JSON value: the same keys with each leaf replaced by its type name (`'string'`,
 * `'number'`, `'null'`, …), arrays by their first element's skeleton. Two wire objects "have the same
 * shape" when their skeletons are equal.
 */
export function skeleton(v: unknown): unknown {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length === 0 ? [] : [skeleton(v[0])];
  if (isObj(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, skeleton(v[k])]),
    );
  return typeof v;
}
