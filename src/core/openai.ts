/**
 * An OpenAI-shaped API over any {@link Engine} (our WebGPU engine or its worker, WebLLM, a remote server):
 * `withOpenAI(engine).chat.completions.create({ messages, stream, max_tokens, temperature, top_p, seed,
 * stop, stream_options: { include_usage } })` returns `chat.completion` objects, or an async iterable of
 * `chat.completion.chunk` objects, in OpenAI's wire shape, as the OpenAI SDK and WebLLM's `MLCEngine` do,
 * so code written for either runs unchanged. DOM-free and Node-free: it only calls the Engine interface.
 *
 * Sources: the OpenAI API reference (Chat Completions: "Create chat completion", "The chat completion
 * object", "The chat completion chunk object"; https://platform.openai.com/docs/api-reference/chat), the
 * official `openai` npm package's types (`openai/resources/chat/completions`, checked against ours in
 * `openai.test-d.ts`), and WebLLM's `openai_api_protocols/chat_completion.ts` (whose `create` overloads
 * this copies: a Promise of the completion, or a Promise of an AsyncIterable of chunks).
 *
 * Rules (docs/openai-api.md says the same):
 * - Fields the engines cannot honour are refused with `EngineError('invalid_argument')` naming the field,
 *   never silently ignored: `n` other than 1, `logprobs`/`top_logprobs`, `functions`/`function_call` (use
 *   `tools`/`tool_choice`, which are honoured), non-zero `frequency_penalty`/`presence_penalty`,
 *   `logit_bias`, audio, and any field not listed in {@link ChatCompletionCreateParamsBase}; the `function`
 *   role, message `name`s, and content parts other than text. An engine's own refusal of a mapped field
 *   names it as the request does (`tool_choice`, not the engine API's `toolChoice`).
 * - Defaults are OpenAI's: `temperature` 1 and `top_p` 1 when omitted (the Engine API's own default is
 *   greedy; pass `temperature: 0` for greedy). Without `max_tokens` the engine's default applies (128 tokens
 *   for ours and remote servers), not "until the context is full" as OpenAI does.
 * - `model` does not choose a model: the loaded one answers (as llama-server does), and the objects'
 *   `model` names it.
 * - `stop` strings end generation where one first appears; the text from it on is not returned (OpenAI's
 *   rule). The engines have no stop strings of their own, so this is done here, for every backend: text that
 *   could be the start of a stop string is held back until it is known not to be; when one appears the
 *   engine's generation is aborted. `completion_tokens` then counts the tokens up to the one that completed
 *   the stop string.
 * - Aborts: the `signal` of the request options (the SDK's second argument) or the stream's `controller`
 *   stops the generation; the promise (non-streaming) or the pending `next()` (streaming) rejects with
 *   `EngineError('aborted')`, the code every backend uses. An engine result that says `aborted` without
 *   either is reported the same way (OpenAI has no `aborted` finish reason; WebLLM's `abort` is not in the
 *   SDK's types). A consumer that leaves `for await` early (`break`, `return`, a throw) aborts the
 *   generation and the iterator's `return()` waits until the engine is idle again.
 * - Errors from the engine keep their `EngineError` codes: they reject the non-streaming promise, or the
 *   streaming iterator's `next()`.
 */
import { EngineError, isEngineError } from './errors.ts';
import { inApiTerms, type MappedRequest, mapChatCompletionParams, requestSignal } from './openai-request.ts';
import type { Engine, GenerateResult, TokenEvent } from './types.ts';

// The request checks live in openai-request.ts; they are part of this entry's API (`./openai`).
export { type MappedRequest, mapChatCompletionParams } from './openai-request.ts';

// ---------------------------------------------------------------------------------------------------
// Request types: a superset of what the OpenAI SDK's and WebLLM's request types allow, so their requests
// type-check here; what the engines cannot do is typed loosely and refused at run time.
// ---------------------------------------------------------------------------------------------------

/** A content part: only `{type: 'text', text}` parts are accepted (joined with '\n', as vLLM does). */
export interface ChatCompletionContentPart {
  type: string;
  text?: string;
}

/**
 * A message. Roles `system`, `developer` (treated as `system`, as OpenAI does for models without a
 * developer role), `user`, `assistant` (with `tool_calls`) and `tool` (with `tool_call_id`) are accepted;
 * `function` is typed (the SDK has it) but refused, as is a `name`.
 */
export interface ChatCompletionMessageParam {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | ReadonlyArray<ChatCompletionContentPart> | null;
  name?: string;
  /** An assistant message's tool calls (its content may then be null). */
  tool_calls?: ReadonlyArray<unknown> | null;
  /** A `tool` message: the id of the call it answers. */
  tool_call_id?: string | null;
}

/** `response_format` (see {@link ChatCompletionCreateParamsBase.response_format}). */
export type ChatCompletionResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' /** WebLLM's form: JSON Schema text. */; schema?: string }
  | {
      type: 'json_schema';
      json_schema: {
        name: string;
        schema?: Record<string, unknown>;
        strict?: boolean | null;
        description?: string;
      };
    }
  | { type: 'grammar'; grammar: string };

/** `stream_options`: `include_usage` adds a last chunk with `usage` and empty `choices`. */
export interface ChatCompletionStreamOptions {
  include_usage?: boolean | null;
  /** Accepted and without effect here (OpenAI pads chunks with random text against size side channels). */
  include_obfuscation?: boolean | null;
}

/** The request: OpenAI's names, units and ranges. */
export interface ChatCompletionCreateParamsBase {
  messages: ReadonlyArray<ChatCompletionMessageParam>;
  /** Not a choice: the loaded model answers; the result's `model` names it. */
  model?: string | null;
  stream?: boolean | null;
  /** Only with `stream: true`. */
  stream_options?: ChatCompletionStreamOptions | null;
  /** The most completion tokens, an integer ≥ 1 (default: the engine's, 128 for ours). */
  max_tokens?: number | null;
  /** OpenAI's newer name for `max_tokens`; both may be given only with the same value. */
  max_completion_tokens?: number | null;
  /** Sampling temperature in [0, 2]; 0 = greedy. Default 1 (OpenAI's). */
  temperature?: number | null;
  /** Nucleus sampling mass in (0, 1]; default 1 (off). */
  top_p?: number | null;
  /** Seed of the sampler's PRNG (an integer): the same seed, request and engine give the same output. */
  seed?: number | null;
  /** Up to any number of non-empty strings: generation ends before the first one that appears. */
  stop?: string | ReadonlyArray<string> | null;
  /** Only 1 (or null). */
  n?: number | null;
  /** Only false (or null). */
  logprobs?: boolean | null;
  /** Only null/0 (no log-probabilities). */
  top_logprobs?: number | null;
  /** Only 0 (or null): the engines have the CTRL repetition penalty instead (`repetition_penalty`). */
  frequency_penalty?: number | null;
  /** Only 0 (or null). */
  presence_penalty?: number | null;
  /** vLLM's extension: keep the k most likely tokens, an integer ≥ 0 (0 = off). */
  top_k?: number | null;
  /** vLLM's extension: drop tokens with p < min_p · p_max, in [0, 1] (0 = off). */
  min_p?: number | null;
  /** vLLM's and WebLLM's extension: CTRL repetition penalty > 0 (1 = off). */
  repetition_penalty?: number | null;
  /**
   * Function tools `{type: 'function', function: {name, description, parameters, strict}}`, given to the
   * model's chat template (one without tool support: invalid_argument); its calls come back as
   * `message.tool_calls` / `delta.tool_calls` with finish_reason 'tool_calls'.
   */
  tools?: ReadonlyArray<unknown> | null;
  /** 'auto' (default), 'none', 'required' or {type: 'function', function: {name}} (one of the tools). */
  tool_choice?: unknown;
  /** Refused unless empty. */
  functions?: ReadonlyArray<unknown> | null;
  /** Refused unless 'none'. */
  function_call?: unknown;
  /** With tool_choice 'required': false allows one call only. */
  parallel_tool_calls?: boolean | null;
  /** Refused unless empty. */
  logit_bias?: Record<string, number> | null;
  /**
   * Structured output: `{type: 'text'}` (default), `{type: 'json_object'}` (a JSON object),
   * `{type: 'json_schema', json_schema: {name, schema, strict}}` (JSON valid against `schema`), or
   * WebLLM's `{type: 'grammar', grammar}` (EBNF/GBNF, rule `root`) and `{type: 'json_object', schema}`.
   * The engine constrains every token to it (ours: xgrammar's mask applied on the GPU); one that cannot
   * refuses with `unsupported`. Typed loosely too (WebLLM's type has every field optional), checked at run time.
   */
  response_format?: ChatCompletionResponseFormat | { type?: string } | null;
  /** Informational, accepted and not used. */
  user?: string | null;
  metadata?: Record<string, string> | null;
  safety_identifier?: string | null;
  prompt_cache_key?: string | null;
  /** Only false (or null): nothing is stored. */
  store?: boolean | null;
}

/** A request for one `chat.completion` object. */
export interface ChatCompletionCreateParamsNonStreaming extends ChatCompletionCreateParamsBase {
  stream?: false | null;
}

/** A request for a stream of `chat.completion.chunk` objects. */
export interface ChatCompletionCreateParamsStreaming extends ChatCompletionCreateParamsBase {
  stream: true;
}

/** Either request. */
export type ChatCompletionCreateParams =
  | ChatCompletionCreateParamsNonStreaming
  | ChatCompletionCreateParamsStreaming;

/** The second argument of `create`, as the OpenAI SDK's request options: only `signal`. */
export interface ChatCompletionRequestOptions {
  signal?: AbortSignal | null;
}

// ---------------------------------------------------------------------------------------------------
// Response types (OpenAI's wire shape; assignable to the SDK's `ChatCompletion` / `ChatCompletionChunk`).
// ---------------------------------------------------------------------------------------------------

/**
 * Why a choice ended: `stop` (end of generation or a stop string), `length` (`max_tokens`, the context),
 * or `tool_calls` (the answer is tool calls).
 */
export type ChatCompletionFinishReason = 'stop' | 'length' | 'tool_calls';

/** A tool call of the answer (OpenAI's shape; `arguments` is JSON text). */
export interface ChatCompletionMessageToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A streamed tool call: here each call comes whole, in one chunk, with its `index`. */
export interface ChatCompletionChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** Token counts of one request. */
export interface CompletionUsage {
  /** Tokens of the rendered prompt (chat template included), as the engine counted them. */
  prompt_tokens: number;
  /** Tokens generated (an end-of-generation token included; up to a stop string's last token). */
  completion_tokens: number;
  /** prompt_tokens + completion_tokens. */
  total_tokens: number;
}

/** The answer of a non-streaming completion. */
export interface ChatCompletionMessage {
  role: 'assistant';
  /** The text; null when the answer is only tool calls (OpenAI's rule). */
  content: string | null;
  refusal: null;
  /** The tool calls, when the model made any (with `tools`). */
  tool_calls?: ChatCompletionMessageToolCall[];
}

/** The `chat.completion` object: the whole answer of a non-streaming request. */
export interface ChatCompletion {
  /** `chatcmpl-…`, the same for every chunk of a stream. */
  id: string;
  object: 'chat.completion';
  /** Unix time in seconds when the request started. */
  created: number;
  /** The loaded model's name. */
  model: string;
  choices: Array<{
    index: number;
    message: ChatCompletionMessage;
    finish_reason: ChatCompletionFinishReason;
    logprobs: null;
  }>;
  usage: CompletionUsage;
}

/** What one chunk adds: the role (first chunk only) and a piece of the content. */
export interface ChatCompletionChunkDelta {
  role?: 'assistant';
  content?: string;
  /** Tool calls, after the content (with `tools`: see {@link withOpenAI}'s rules). */
  tool_calls?: ChatCompletionChunkToolCall[];
}

/** A `chat.completion.chunk` object: one piece of a streamed answer. */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  /** One choice, except the `include_usage` chunk, whose `choices` is empty. */
  choices: Array<{
    index: number;
    delta: ChatCompletionChunkDelta;
    finish_reason: ChatCompletionFinishReason | null;
    logprobs: null;
  }>;
  /** Only with `stream_options.include_usage`: null on every chunk but the last, which carries the counts. */
  usage?: CompletionUsage | null;
}

/**
 * A stream of chunks: async-iterable once, like the OpenAI SDK's `Stream` (whose `controller` it also has:
 * `controller.abort()` stops the generation, and the pending `next()` rejects with EngineError('aborted')).
 */
export interface ChatCompletionStream extends AsyncIterable<ChatCompletionChunk> {
  readonly controller: AbortController;
}

/** `engine.chat.completions`. */
export interface ChatCompletions {
  create(
    params: ChatCompletionCreateParamsNonStreaming,
    options?: ChatCompletionRequestOptions,
  ): Promise<ChatCompletion>;
  create(
    params: ChatCompletionCreateParamsStreaming,
    options?: ChatCompletionRequestOptions,
  ): Promise<ChatCompletionStream>;
  create(
    params: ChatCompletionCreateParamsBase,
    options?: ChatCompletionRequestOptions,
  ): Promise<ChatCompletion | ChatCompletionStream>;
}

/** An engine with `chat.completions`: `chat` stays the Engine's method, with `completions` on it. */
export type OpenAIEngine<T extends Engine = Engine> = T & {
  chat: T['chat'] & { completions: ChatCompletions };
};

/** Options of {@link withOpenAI}. */
export interface WithOpenAIOptions {
  /**
   * The `model` field of the objects. Default: the name `load()` (called through the wrapper) returned,
   * else what the engine knows (our WebGpuEngine's `modelInfo.name`, WebLLM's `modelId`, a remote
   * engine's `model`), else 'unknown'.
   */
  model?: string;
}

// ---------------------------------------------------------------------------------------------------
// Stop strings.
// ---------------------------------------------------------------------------------------------------

/**
 * Cuts streamed text at the first stop string. `push` returns the text that is safe to show (never a stop
 * string, nor the start of one that may still complete) and whether a stop string appeared; `flush`
 * returns the held-back rest at the end of generation.
 */
export class StopFilter {
  private buf = '';
  constructor(private readonly stops: readonly string[]) {}

  /** Adds streamed text: what may be shown now, and whether a stop string appeared. */
  push(text: string): { text: string; stopped: boolean } {
    this.buf += text;
    if (this.stops.length === 0) return { text: this.flush(), stopped: false };
    let cut = -1;
    for (const s of this.stops) {
      const i = this.buf.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      const out = this.buf.slice(0, cut);
      this.buf = '';
      return { text: out, stopped: true };
    }
    // Hold back the longest tail that is the start of a stop string.
    let hold = 0;
    for (const s of this.stops)
      for (let k = Math.min(s.length - 1, this.buf.length); k > hold; k--)
        if (this.buf.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
    const out = this.buf.slice(0, this.buf.length - hold);
    this.buf = this.buf.slice(this.buf.length - hold);
    return { text: out, stopped: false };
  }

  /** The held-back rest, at the end of generation. */
  flush(): string {
    const out = this.buf;
    this.buf = '';
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------
// The wrapper.
// ---------------------------------------------------------------------------------------------------

function completionId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  const hex = c?.randomUUID
    ? c.randomUUID().replaceAll('-', '')
    : Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join('');
  return `chatcmpl-${hex}`;
}

function abortedError(tokens: number): EngineError {
  return new EngineError(
    'aborted',
    `the chat completion was stopped (its signal or the stream's controller was aborted) after ${tokens} token(s)`,
  );
}

/**
 * Requests on one engine run one at a time, in the order they were made (WebLLM's engine and a server's
 * queue do the same): every `create` on any wrapper of the engine waits here until the ones before it
 * have ended, so two at once never meet an engine that is still generating.
 */
class RequestQueue {
  private tail: Promise<void> = Promise.resolve();

  /**
   * Waits for the requests made before this one; resolves with the function that lets the next one go.
   * @throws EngineError('aborted') when one of `signals` aborts while waiting (the place is given up).
   */
  enter(signals: readonly AbortSignal[]): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const before = this.tail;
    this.tail = before.then(() => mine);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        for (const s of signals) s.removeEventListener('abort', onAbort);
        release();
        reject(abortedError(0));
      };
      for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
      void before.then(() => {
        if (signals.some((s) => s.aborted)) return;
        for (const s of signals) s.removeEventListener('abort', onAbort);
        resolve(release);
      });
    });
  }
}

const queues = new WeakMap<Engine, RequestQueue>();

/** The request queue of `engine`, shared by every {@link withOpenAI} wrapper of it. */
function queueOf(engine: Engine): RequestQueue {
  let q = queues.get(engine);
  if (!q) {
    q = new RequestQueue();
    queues.set(engine, q);
  }
  return q;
}

interface RunContext {
  engine: Engine;
  mapped: MappedRequest;
  /** The request as given to `create` (errors are worded in its terms: {@link inApiTerms}). */
  params: unknown;
  model: string;
  /** The caller's signal and the stream's controller: either aborts as the user's stop. */
  userSignals: AbortSignal[];
}

/**
 * The one generation path: streaming yields these chunks; non-streaming concatenates their deltas, so both
 * give the same text. The engine starts at the first `next()`.
 */
async function* chunks(ctx: RunContext, usageChunk: boolean): AsyncGenerator<ChatCompletionChunk, void> {
  const { engine, mapped, model, userSignals } = ctx;
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  const usageNull = mapped.includeUsage ? { usage: null } : {};
  const chunk = (
    delta: ChatCompletionChunkDelta,
    finish: ChatCompletionFinishReason | null = null,
  ): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...usageNull,
  });
  const userAborted = () => userSignals.some((s) => s.aborted);
  if (userAborted()) throw abortedError(0);
  const release = await queueOf(engine).enter(userSignals);
  // With tools the text may turn out to be a call: held until the end, then content and/or tool_calls.
  const holdForTools = Boolean(mapped.req.tools?.length) && mapped.req.toolChoice !== 'none';
  let held = '';

  const ctl = new AbortController();
  const onAbort = () => ctl.abort();
  for (const s of userSignals) s.addEventListener('abort', onAbort, { once: true });
  if (userAborted()) ctl.abort();

  const filter = new StopFilter(mapped.stops);
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  let settled = false;
  let result: GenerateResult | undefined;
  let error: unknown;
  let tokens = 0;
  let seen = '';
  /** Tokens up to the one that completed a stop string (undefined: no stop string appeared). */
  let stoppedAt: number | undefined;
  const onToken = (e: TokenEvent) => {
    if (stoppedAt !== undefined) return;
    tokens++;
    seen += e.text;
    const out = filter.push(e.text);
    if (out.text) queue.push(out.text);
    if (out.stopped) {
      stoppedAt = tokens;
      ctl.abort();
    }
    wake?.();
  };
  const running = Promise.resolve()
    .then(() => engine.chat(mapped.req, onToken, ctl.signal))
    .then(
      (r) => {
        result = r;
      },
      (e) => {
        error = inApiTerms(e, ctx.params);
      },
    )
    .finally(() => {
      settled = true;
      release();
      wake?.();
    });

  try {
    yield chunk({ role: 'assistant', content: '' });
    for (;;) {
      while (queue.length > 0) {
        const text = queue.shift() as string;
        if (holdForTools) held += text;
        else yield chunk({ content: text });
      }
      if (settled) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
    let finish: ChatCompletionFinishReason;
    if (stoppedAt !== undefined) {
      // Our abort for a stop string: an 'aborted' end is expected; any other error still counts.
      if (error !== undefined && !isEngineError(error, 'aborted')) throw error;
      if (held) yield chunk({ content: held });
      finish = 'stop';
    } else {
      if (error !== undefined) {
        if (isEngineError(error, 'aborted') && userAborted()) throw abortedError(tokens);
        throw error;
      }
      const r = result as GenerateResult;
      if (r.finishReason === 'aborted' || userAborted()) throw abortedError(tokens);
      // The result's text is the whole answer; the token events should add up to it. If an engine's final
      // text carries more (e.g. a last piece flushed at the end), pass that on too.
      const calls = holdForTools ? (r.toolCalls ?? []) : [];
      if (calls.length > 0) {
        // The engine parsed calls: its text is the content without their markup.
        if (r.text) yield chunk({ content: r.text });
        for (const [index, c] of calls.entries())
          yield chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { ...c.function } }] });
        finish = 'tool_calls';
      } else {
        if (r.text.length > seen.length && r.text.startsWith(seen)) {
          const out = filter.push(r.text.slice(seen.length));
          if (out.text) {
            if (holdForTools) held += out.text;
            else yield chunk({ content: out.text });
          }
          if (out.stopped) stoppedAt = tokens;
        }
        if (stoppedAt === undefined) held += filter.flush();
        if (held) yield chunk({ content: held });
        held = '';
        finish = stoppedAt !== undefined || r.finishReason === 'stop' ? 'stop' : 'length';
      }
    }
    yield chunk({}, finish);
    if (usageChunk) {
      const promptTokens = result?.promptTokenIds.length ?? 0;
      const completionTokens = stoppedAt ?? result?.outputTokenIds.length ?? tokens;
      yield {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      };
    }
  } finally {
    for (const s of userSignals) s.removeEventListener('abort', onAbort);
    if (!settled) {
      // The consumer left early: stop the engine and wait until it is idle, so the next request finds it free.
      ctl.abort();
      await running;
    }
  }
}

class Stream implements ChatCompletionStream {
  readonly controller = new AbortController();
  private used = false;
  constructor(private readonly ctx: Omit<RunContext, 'userSignals'> & { signal?: AbortSignal }) {}

  [Symbol.asyncIterator](): AsyncIterator<ChatCompletionChunk> {
    if (this.used)
      throw new EngineError(
        'invalid_argument',
        'this chat completion stream was already iterated: iterate it once',
      );
    this.used = true;
    const { signal, ...rest } = this.ctx;
    return chunks(
      { ...rest, userSignals: [this.controller.signal, ...(signal ? [signal] : [])] },
      this.ctx.mapped.includeUsage,
    );
  }
}

async function createCompletion(
  engine: Engine,
  modelName: () => string,
  params: unknown,
  options: unknown,
): Promise<ChatCompletion | ChatCompletionStream> {
  const mapped = mapChatCompletionParams(params);
  const signal = requestSignal(options);
  if (signal?.aborted) throw abortedError(0);
  const ctx = { engine, mapped, params, model: modelName() };
  if (mapped.stream) return new Stream({ ...ctx, signal });

  let content = '';
  const toolCalls: ChatCompletionMessageToolCall[] = [];
  let finish: ChatCompletionFinishReason = 'stop';
  let usage: CompletionUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let id = '';
  let created = 0;
  for await (const c of chunks({ ...ctx, userSignals: signal ? [signal] : [] }, true)) {
    id = c.id;
    created = c.created;
    const choice = c.choices[0];
    if (choice?.delta.content) content += choice.delta.content;
    for (const t of choice?.delta.tool_calls ?? [])
      toolCalls.push({
        id: t.id ?? '',
        type: 'function',
        function: { name: t.function?.name ?? '', arguments: t.function?.arguments ?? '' },
      });
    if (choice?.finish_reason) finish = choice.finish_reason;
    if (c.usage) usage = c.usage;
  }
  return {
    id,
    object: 'chat.completion',
    created,
    model: ctx.model,
    choices: [
      {
        index: 0,
        message:
          toolCalls.length > 0
            ? { role: 'assistant', content: content || null, refusal: null, tool_calls: toolCalls }
            : { role: 'assistant', content, refusal: null },
        finish_reason: finish,
        logprobs: null,
      },
    ],
    usage,
  };
}

/** What an engine says its loaded model is called, without asking it (see {@link WithOpenAIOptions.model}). */
function engineModelName(engine: Engine): string | undefined {
  const e = engine as { modelInfo?: { name?: unknown }; modelId?: unknown; model?: unknown };
  for (const v of [e.modelInfo?.name, e.modelId, e.model]) if (typeof v === 'string' && v) return v;
  return undefined;
}

/**
 * Adds `chat.completions.create` to any engine. The result is the engine itself behind a Proxy: every
 * member (methods bound to the engine, `terminate()`, a remote engine's `models`, …) works as before, and
 * `chat` is still the Engine's `chat` method, with `completions` on it. Requests run one at a time in the
 * order they were made (every wrapper of one engine shares the queue): a `create` while another runs waits
 * for it, and an abort while it waits rejects with `EngineError('aborted')`.
 *
 * @example
 * const engine = withOpenAI(new WorkerEngine(worker));
 * await engine.load({ url: '/models/stories260K.gguf' });
 * const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 16 });
 */
export function withOpenAI<T extends Engine>(engine: T, options: WithOpenAIOptions = {}): OpenAIEngine<T> {
  let loadedName: string | undefined;
  const modelName = () => options.model ?? loadedName ?? engineModelName(engine) ?? 'unknown';
  const completions: ChatCompletions = {
    create: ((params: unknown, opts?: unknown) =>
      createCompletion(engine, modelName, params, opts)) as ChatCompletions['create'],
  };
  const chat = Object.assign((...args: Parameters<Engine['chat']>) => engine.chat(...args), { completions });
  const load: Engine['load'] = async (source, opts) => {
    const info = await engine.load(source, opts);
    loadedName = info.name;
    return info;
  };
  const unload: Engine['unload'] = async () => {
    loadedName = undefined;
    await engine.unload();
  };
  const bound = new Map<unknown, unknown>();
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'chat') return chat;
      if (prop === 'load') return load;
      if (prop === 'unload') return unload;
      const v = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      let b = bound.get(v);
      if (!b) {
        b = (v as (...a: unknown[]) => unknown).bind(target);
        bound.set(v, b);
      }
      return b;
    },
  }) as OpenAIEngine<T>;
}
