/**
 * `RemoteEngine`: the {@link Engine} interface over an OpenAI-compatible server (vLLM, llama.cpp's
 * `llama-server`, Ollama, a hosted API). Streams `/v1/chat/completions` or `/v1/completions` with
 * `stream: true, stream_options: {include_usage: true}` and parses the SSE with `eventsource-parser`.
 * Runs in the page and in Node (global `fetch`); no DOM.
 *
 * Token counting (DESIGN.md: by tokens, never by chunks): the count is the server's
 * `usage.completion_tokens`; without usage, the `countTokens` function when given (a tokenizer), else one
 * token per content chunk, marked approximate. Chunk arrival times become token times with
 * `tokenTimesFromChunks` (src/core/metrics.ts): the tokens of one chunk share its timestamp. When usage
 * says more tokens than the chunks could each carry one of, the tokens are spread over the chunks by the
 * tokenizer's count per chunk (or the chunk's characters), so several tokens in one chunk arrive together.
 * The stream's data lines and that counting are src/remote/stream.ts ({@link CompletionStream},
 * {@link assembleResult}); this file holds the requests, their timeouts and retries, and the errors.
 *
 * The API key stays in this object's memory: it goes only into the `Authorization` header, never into a
 * URL, a result, an error message or a log.
 *
 * Faults become {@link RemoteError}s (an EngineError) with a code and a message a person can act on; the
 * tokens that arrived before a fault are kept on the error as `partial`.
 */
import { createParser } from 'eventsource-parser';
import { EngineError, type EngineErrorCode } from '../core/errors.ts';
import type {
  ChatMessage,
  ChatRequest,
  Engine,
  EngineStats,
  GenerateRequest,
  LoadOptions,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from '../core/types.ts';
import {
  checkLoadOptions,
  checkNumberOption,
  refuseDraft,
  validateChatRequest,
  validateGenerateRequest,
} from '../core/validate.ts';
import { redactSecrets } from '../util/redact.ts';
import {
  assembleResult,
  CompletionStream,
  DEFAULT_MAX_EVENT_CHARS,
  type RemoteGenerateResult,
  SseSizeGuard,
} from './stream.ts';

/** Which OpenAI endpoint a remote engine streams: `/v1/chat/completions` or `/v1/completions`. */
export type RemoteApi = 'chat' | 'completions';

/** Default overall deadline of one remote request, ms (10 minutes). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000;
/** Default first-token timeout, ms (1 minute); it also bounds the wait for `GET /v1/models`'s answer. */
export const DEFAULT_FIRST_TOKEN_TIMEOUT_MS = 60_000;
/** Default mid-stream idle timeout, ms (30 s). */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;

/**
 * The most characters of `GET /v1/models`'s answer read (16 Mi): a list of a few hundred models with
 * descriptions (OpenRouter's) is 1-2 MB; a longer answer is refused, not held in memory whole.
 */
export const MAX_MODEL_LIST_CHARS = 16 * 1024 * 1024;
/** The most characters of an error answer's body read (64 Ki): its message shows 300 of them at most. */
export const MAX_ERROR_BODY_CHARS = 64 * 1024;

/** A response's body as text, reading at most `maxChars` characters; the rest is cancelled unread. */
async function readCapped(res: Response, maxChars: number): Promise<{ text: string; over: boolean }> {
  if (!res.body) return { text: '', over: false };
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { text: text + dec.decode(), over: false };
      text += dec.decode(value, { stream: true });
      if (text.length > maxChars) return { text: text.slice(0, maxChars), over: true };
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** The timeouts of a {@link RemoteConfig}, by the name of their option. */
export type RemoteTimeoutOption = 'firstTokenTimeoutMs' | 'idleTimeoutMs' | 'requestTimeoutMs';

/** What a {@link RemoteEngine} talks to, and its timeouts and retries. */
export interface RemoteConfig {
  /** Server root, e.g. `http://localhost:8000` (a trailing `/v1` is accepted). */
  baseUrl: string;
  /** Model name as `/v1/models` lists it; default the first listed. */
  model?: string;
  /** Chat completions (default) or plain completions. */
  api?: RemoteApi;
  /** Bearer token; kept in memory only. */
  apiKey?: string;
  /**
   * No first content chunk within this many ms → EngineError('timeout') (default 60 000). It also bounds the
   * wait for `GET /v1/models`'s whole answer (the server's first answer at load).
   */
  firstTokenTimeoutMs?: number;
  /**
   * No stream event for this many ms mid-stream → EngineError('timeout') (default 30 000). SSE comments
   * (`: ping` keep-alives) do not count: a server that only pings is stalled.
   */
  idleTimeoutMs?: number;
  /**
   * The whole request (connection, every token, `data: [DONE]`; `GET /v1/models` too) must end within this many ms, else
   * EngineError('timeout') with the tokens so far as `partial` (default {@link DEFAULT_REQUEST_TIMEOUT_MS}).
   */
  requestTimeoutMs?: number;
  /** Retries after a 429 (default 3), waiting `Retry-After` (capped by `maxRetryWaitMs`, default 30 000). */
  maxRetries?: number;
  maxRetryWaitMs?: number;
  /**
   * How the caller names the timeout options in a timeout's message ("raise --request-timeout-s to wait
   * longer"): the command line passes its flags; default the option names above.
   */
  timeoutOptionNames?: Partial<Record<RemoteTimeoutOption, string>>;
  /**
   * The longest SSE line or event (characters) a stream may send (default {@link DEFAULT_MAX_EVENT_CHARS},
   * 4 Mi); past it the stream is cancelled and the request fails with EngineError('protocol').
   */
  maxEventChars?: number;
  /** Token counter for servers that omit usage (e.g. the model's tokenizer). */
  countTokens?: (text: string) => number;
  /** Replaces the global fetch (tests). */
  fetch?: typeof fetch;
}

/** An EngineError from a remote server, with the tokens received before the fault. */
export class RemoteError extends EngineError {
  /** What arrived before the fault (at least one token), or undefined. */
  partial?: RemoteGenerateResult;
  /** HTTP status, when the server answered. */
  status?: number;
  constructor(
    code: EngineErrorCode,
    message: string,
    opts: { cause?: unknown; partial?: RemoteGenerateResult; status?: number } = {},
  ) {
    super(code, message, { cause: opts.cause });
    this.partial = opts.partial;
    this.status = opts.status;
  }
}

/**
 * A base URL as people type vLLM's address: without a scheme (`localhost:8000`, `10.0.0.5:8000/v1`) it is
 * taken as `http://…`; anything with `scheme://` is left as it is.
 */
export function withScheme(baseUrl: string): string {
  const s = baseUrl.trim();
  return /^[a-z][a-z\d+.-]*:\/\//i.test(s) || s === '' ? s : `http://${s}`;
}

/** The host of a base URL (what results record; never credentials or the path). */
export function endpointHost(baseUrl: string): string {
  try {
    return new URL(withScheme(baseUrl)).host;
  } catch {
    return 'invalid-url';
  }
}

/** `http://h:8000`, `http://h:8000/`, `http://h:8000/v1`, `h:8000` → `http://h:8000/v1`. */
export function apiRoot(baseUrl: string): string {
  let u: URL;
  try {
    u = new URL(withScheme(baseUrl));
  } catch {
    throw new EngineError('invalid_argument', `"${baseUrl}" is not a URL (e.g. http://localhost:8000)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new EngineError('invalid_argument', `the base URL must be http or https, got ${u.protocol}`);
  if (u.username || u.password)
    throw new EngineError('invalid_argument', 'put the API key in the key field, not in the URL');
  const path = u.pathname.replace(/\/+$/, '');
  return `${u.origin}${path.endsWith('/v1') ? path : `${path}/v1`}`;
}

/** `Retry-After` in ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, nowMs = Date.now()): number | undefined {
  if (!value) return undefined;
  const s = Number(value.trim());
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const d = Date.parse(value);
  return Number.isNaN(d) ? undefined : Math.max(0, d - nowMs);
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** The UTF-8 bytes of a prompt, or of a chat's roles and contents (what bounds the server's prompt_tokens). */
function utf8Bytes(input: string | ChatMessage[]): number {
  const enc = new TextEncoder();
  const bytes = (t: string) => enc.encode(t).length;
  return typeof input === 'string'
    ? bytes(input)
    : input.reduce((n, m) => n + bytes(String(m.role)) + bytes(String(m.content)), 0);
}

/** max_tokens when the request gives none (the Engine interface's default). */
const DEFAULT_MAX_TOKENS = 128;

const isBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined';

/** The CORS advice shown when the browser refused a cross-origin answer. */
export function corsAdvice(host: string): string {
  const origin = isBrowser() ? location.origin : 'this page’s origin';
  return (
    `the server at ${host} answered, but the browser refused to let this page read the answer (CORS): ` +
    `the server must allow the origin ${origin}. For vLLM, start it with ` +
    `\`vllm serve MODEL --allowed-origins '["${origin}"]'\` (and --allowed-headers '["authorization","content-type"]' ` +
    `if you send a key); for llama-server it is allowed by default; or run \`npm run bench -- --engine remote\` ` +
    'from the command line, where CORS does not apply.'
  );
}

/** The {@link Engine} interface over an OpenAI-compatible server (this file's header says how). */
export class RemoteEngine implements Engine {
  private readonly root: string;
  readonly host: string;
  readonly api: RemoteApi;
  model: string | undefined;
  /** Models `/v1/models` listed at the last load. */
  models: string[] = [];
  private readonly apiKey: string | undefined;
  private readonly cfg: RemoteConfig;
  private loadMs = 0;
  private last?: { ttftMs: number; tokens: number; decodeMs: number };

  /** @throws EngineError('invalid_argument') for a bad base URL, timeout or retry count. */
  constructor(cfg: RemoteConfig) {
    this.root = apiRoot(cfg.baseUrl);
    // A timer longer than 2^31 − 1 ms (or NaN) fires at once: refuse it rather than time out every request.
    const ms = { above: 0, max: 2 ** 31 - 1 };
    checkNumberOption('firstTokenTimeoutMs', cfg.firstTokenTimeoutMs, ms);
    checkNumberOption('idleTimeoutMs', cfg.idleTimeoutMs, ms);
    checkNumberOption('requestTimeoutMs', cfg.requestTimeoutMs, ms);
    checkNumberOption('maxRetryWaitMs', cfg.maxRetryWaitMs, { min: 0, max: 2 ** 31 - 1 });
    checkNumberOption('maxRetries', cfg.maxRetries, { integer: true, min: 0 });
    checkNumberOption('maxEventChars', cfg.maxEventChars, { integer: true, min: 1 });
    this.host = endpointHost(cfg.baseUrl);
    this.api = cfg.api ?? 'chat';
    this.model = cfg.model;
    this.apiKey = cfg.apiKey || undefined;
    // Keep the config without the key, so nothing that prints it can leak it.
    this.cfg = { ...cfg, apiKey: undefined };
  }

  /** Not enumerable in JSON: a result or log that serializes the engine never shows the key. */
  toJSON(): Record<string, unknown> {
    return { host: this.host, api: this.api, model: this.model };
  }

  private get fetchFn(): typeof fetch {
    return this.cfg.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  }

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: json ? 'application/json' : 'text/event-stream' };
    if (json) h['content-type'] = 'application/json';
    if (this.apiKey) h.authorization = `Bearer ${this.apiKey}`;
    return h;
  }

  /** fetch with faults mapped to codes; 429 retried after Retry-After (bounded). */
  private async request(
    path: string,
    init: RequestInit,
    signal?: AbortSignal,
    onRateLimited?: (waitMs: number) => void,
  ): Promise<Response> {
    const url = `${this.root}${path}`;
    const maxRetries = this.cfg.maxRetries ?? 3;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchFn(url, { ...init, signal });
      } catch (e) {
        if (signal?.aborted) throw new RemoteError('aborted', 'the request was stopped', { cause: e });
        throw await this.connectionError(e);
      }
      if (res.ok) return res;
      const body = await readCapped(res, MAX_ERROR_BODY_CHARS).then(
        (r) => r.text,
        () => '',
      );
      if (res.status === 429 && attempt < maxRetries) {
        const wait = Math.min(
          retryAfterMs(res.headers.get('retry-after')) ?? 1000 * 2 ** attempt,
          this.cfg.maxRetryWaitMs ?? 30_000,
        );
        onRateLimited?.(wait);
        await sleep(wait, signal);
        if (signal?.aborted) throw new RemoteError('aborted', 'the request was stopped');
        continue;
      }
      throw this.statusError(res.status, body, attempt);
    }
  }

  private statusError(status: number, body: string, retries: number): RemoteError {
    let detail = '';
    try {
      const j = JSON.parse(body) as {
        error?: { message?: string } | string;
        message?: string;
        detail?: string;
      };
      detail =
        (typeof j.error === 'string' ? j.error : j.error?.message) ?? j.message ?? String(j.detail ?? '');
    } catch {
      detail = body.slice(0, 200);
    }
    const said = detail ? ` (the server said: ${detail.slice(0, 300)})` : '';
    const h = this.host;
    if (status === 401 || status === 403)
      return new RemoteError(
        'unauthorized',
        `${h} refused the request with HTTP ${status}: ${status === 401 ? 'a valid API key is needed' : 'this key may not use this model'}${said}`,
        { status },
      );
    if (status === 404)
      return new RemoteError(
        'model_not_found',
        `${h} answered HTTP 404: unknown model "${this.model}" or no such endpoint (${this.api === 'chat' ? '/v1/chat/completions' : '/v1/completions'}); the server lists: ${this.models.join(', ') || '(none)'}${said}`,
        { status },
      );
    if (status === 429)
      return new RemoteError(
        'rate_limited',
        `${h} is rate-limiting (HTTP 429) and still was after ${retries} retr${retries === 1 ? 'y' : 'ies'} honouring Retry-After${said}`,
        { status },
      );
    if (status >= 500)
      return new RemoteError('server_error', `${h} failed with HTTP ${status}${said}`, { status });
    if (status === 400)
      // vLLM's BadRequestError: a request it cannot serve (a response_format schema or grammar it cannot
      // compile, a prompt past its context), before any token.
      return new RemoteError('invalid_argument', `${h} refused the request (HTTP 400)${said}`, { status });
    return new RemoteError('http_status', `${h} answered HTTP ${status}${said}`, { status });
  }

  /** A fetch that threw: connection refused, DNS, or (in a browser) CORS. */
  private async connectionError(e: unknown): Promise<RemoteError> {
    const cause = (e as { cause?: { code?: string } })?.cause;
    const code = cause?.code ?? (e as { code?: string })?.code;
    const h = this.host;
    if (code === 'ECONNREFUSED')
      return new RemoteError(
        'network',
        `connection refused by ${h}: nothing is listening there (is the server running, on this port?)`,
        { cause: e },
      );
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
      return new RemoteError('network', `DNS lookup failed for ${h.split(':')[0]}: check the host name`, {
        cause: e,
      });
    if (isBrowser()) {
      // A browser hides why a fetch failed. A no-cors request reaches a server that is up (an opaque answer);
      // if it does while the real request failed, the server refused this origin.
      let reachable = false;
      try {
        await this.fetchFn(`${this.root}/models`, { mode: 'no-cors', signal: AbortSignal.timeout(5000) });
        reachable = true;
      } catch {
        reachable = false;
      }
      if (reachable) return new RemoteError('cors', corsAdvice(h), { cause: e });
      return new RemoteError(
        'network',
        `could not reach ${h}: connection refused, unknown host, or a network failure (is the server running and the URL right?)`,
        { cause: e },
      );
    }
    return new RemoteError(
      'network',
      `could not reach ${h}: ${(e as Error)?.message ?? e}${code ? ` (${code})` : (e as { cause?: Error })?.cause?.message ? ` (${(e as { cause?: Error }).cause?.message})` : ''}`,
      { cause: e },
    );
  }

  /** " raise OPTION to wait longer", with the caller's name for the option. */
  private raise(option: RemoteTimeoutOption): string {
    return `raise ${this.cfg.timeoutOptionNames?.[option] ?? option} to wait longer`;
  }

  /**
   * The model ids the server lists at `/v1/models`. The whole answer (headers and JSON) must arrive within
   * the first-token timeout (it is the server's first answer) and the request timeout, whichever is shorter.
   * @throws RemoteError('timeout') naming the URL and the option to raise; ('aborted') when `signal` aborts.
   */
  listModels(signal?: AbortSignal): Promise<string[]> {
    return this.listModelsOnce(signal).catch((e: unknown) => Promise.reject(this.redacted(e)));
  }

  private async listModelsOnce(signal?: AbortSignal): Promise<string[]> {
    const url = `${this.root}/models`;
    const firstMs = this.cfg.firstTokenTimeoutMs ?? DEFAULT_FIRST_TOKEN_TIMEOUT_MS;
    const requestMs = this.cfg.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const [ms, option, what]: [number, RemoteTimeoutOption, string] =
      firstMs <= requestMs
        ? [firstMs, 'firstTokenTimeoutMs', 'first-token timeout, which bounds the model list too']
        : [requestMs, 'requestTimeoutMs', 'request timeout'];
    const ctl = new AbortController();
    const onOuter = () => ctl.abort();
    signal?.addEventListener('abort', onOuter, { once: true });
    if (signal?.aborted) ctl.abort();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, ms);
    const fault = (e: unknown): RemoteError | undefined => {
      if (timedOut)
        return new RemoteError(
          'timeout',
          `${url} did not answer within ${ms / 1000} s (${what}): ${this.raise(option)}`,
          { cause: e },
        );
      if (signal?.aborted) return new RemoteError('aborted', 'the request was stopped', { cause: e });
      return undefined;
    };
    try {
      let res: Response;
      try {
        res = await this.request('/models', { method: 'GET', headers: this.headers(true) }, ctl.signal);
      } catch (e) {
        throw fault(e) ?? e;
      }
      let body: { text: string; over: boolean };
      try {
        body = await readCapped(res, MAX_MODEL_LIST_CHARS);
      } catch (e) {
        throw fault(e) ?? new RemoteError('protocol', `${url} did not answer JSON`, { cause: e });
      }
      if (body.over)
        throw new RemoteError(
          'protocol',
          `${url} sent more than ${MAX_MODEL_LIST_CHARS} characters (the limit of a model list): stopped reading`,
        );
      let j: { data?: { id?: string }[] };
      try {
        j = JSON.parse(body.text) as typeof j;
      } catch (e) {
        // An HTML page (a web app's answer for a path it does not know): the hint a run's HTML answer has.
        const type = res.headers.get('content-type') ?? '';
        const text = body.text.trimStart();
        if (/html/i.test(type) || /^</.test(text))
          throw new RemoteError(
            'protocol',
            `${url} answered HTTP ${res.status} with an HTML page (Content-Type ${type || 'none'}) instead of JSON: the base URL is probably not an OpenAI-compatible API (it answers GET /v1/models with a JSON list); the page began ${JSON.stringify(text.slice(0, 80))}`,
            { cause: e },
          );
        throw new RemoteError('protocol', `${url} did not answer JSON`, { cause: e });
      }
      this.models = (Array.isArray(j?.data) ? j.data : []).map((m) => String(m?.id ?? '')).filter(Boolean);
      return this.models;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onOuter);
    }
  }

  /**
   * Lists the models and picks one: the config's, or `{url: NAME}` / `{path: NAME}` naming it, else the first.
   * @throws RemoteError('model_not_found') when the server does not list it.
   */
  async load(source?: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    checkLoadOptions(options);
    refuseDraft(options, 'a remote server');
    const t0 = performance.now();
    const models = await this.listModels(options.signal);
    const wanted =
      (source && 'url' in source && source.url) ||
      (source && 'path' in source && source.path) ||
      this.model ||
      models[0];
    if (!wanted) throw new RemoteError('model_not_found', `${this.host} lists no models at /v1/models`);
    if (models.length > 0 && !models.includes(wanted))
      throw new RemoteError(
        'model_not_found',
        `${this.host} does not serve the model "${wanted}"; it lists: ${models.join(', ')}`,
      );
    this.model = wanted;
    this.loadMs = performance.now() - t0;
    return {
      name: wanted,
      architecture: 'remote',
      nParams: 0,
      nLayers: 0,
      nEmbd: 0,
      nVocab: 0,
      contextLength: 0,
      weightBytes: 0,
      tensorTypes: [],
    };
  }

  /** @throws RemoteError for server faults; EngineError('invalid_argument') for a bad request. */
  async generate(req: GenerateRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal) {
    validateGenerateRequest(req);
    refuseDraft(req, 'a remote server');
    if (req.prompt === undefined)
      throw new EngineError('invalid_argument', 'a remote server takes text prompts, not token ids');
    if (this.api === 'chat')
      return this.stream(req, [{ role: 'user', content: req.prompt }], onToken, signal);
    return this.stream(req, req.prompt, onToken, signal);
  }

  /** @throws RemoteError for server faults; EngineError('invalid_argument') for a bad request. */
  async chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal) {
    validateChatRequest(req);
    refuseDraft(req, 'a remote server');
    if (this.api === 'chat') return this.stream(req, req.messages, onToken, signal);
    if (
      (req.tools?.length && req.toolChoice !== 'none') ||
      req.messages.some((m) => m.role === 'tool' || m.toolCalls)
    )
      throw new EngineError('unsupported', 'tools need the chat API (api: "chat"); /v1/completions has none');
    return this.stream(req, req.messages.map((m) => m.content).join('\n'), onToken, signal);
  }

  private body(req: Omit<GenerateRequest, 'prompt'>, input: string | ChatMessage[]): Record<string, unknown> {
    const b: Record<string, unknown> = {
      model: this.model,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
      temperature: req.temperature ?? 0,
    };
    if (typeof input === 'string') b.prompt = input;
    else
      b.messages = input.map((m) => ({
        role: m.role,
        content: m.content,
        ...(m.toolCalls ? { tool_calls: m.toolCalls } : {}),
        ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
      }));
    // Tools as OpenAI's wire names; vLLM renders them with the model's template and parses the calls
    // (its --enable-auto-tool-choice / --tool-call-parser), streaming them back as delta.tool_calls.
    const c = req as ChatRequest;
    if (c.tools?.length) b.tools = c.tools;
    if (c.toolChoice !== undefined) b.tool_choice = c.toolChoice;
    if (c.parallelToolCalls !== undefined) b.parallel_tool_calls = c.parallelToolCalls;
    if (req.ignoreEos) b.ignore_eos = true; // vLLM and llama-server extension
    if (req.seed !== undefined) b.seed = req.seed;
    if (req.topP !== undefined && req.topP < 1) b.top_p = req.topP;
    if (req.topK) b.top_k = req.topK;
    if (req.minP) b.min_p = req.minP;
    if (req.repetitionPenalty !== undefined && req.repetitionPenalty !== 1)
      b.repetition_penalty = req.repetitionPenalty;
    const f = req.responseFormat;
    // Structured output, in vLLM's terms: OpenAI's response_format for JSON; a grammar as vLLM's
    // `structured_outputs: {grammar}` (vLLM ≥ 0.10; EBNF/GBNF through xgrammar, its default backend).
    if (f?.type === 'json_object') b.response_format = { type: 'json_object' };
    else if (f?.type === 'json_schema')
      b.response_format = {
        type: 'json_schema',
        json_schema: {
          name: f.name ?? 'response',
          schema: typeof f.schema === 'string' ? JSON.parse(f.schema) : f.schema,
          ...(f.strict !== undefined ? { strict: f.strict } : {}),
        },
      };
    else if (f?.type === 'grammar') b.structured_outputs = { grammar: f.grammar };
    else if (f?.type === 'structural_tag') b.response_format = { type: 'structural_tag', format: f.format };
    return b;
  }

  /**
   * `e` with the API key (and any bearer token or sk- key) redacted from its message: a server may echo
   * the Authorization header in an error body or an SSE error event, and an error's message reaches
   * pages, logs and result files (issue 47, item 10; the CLI redacts what it writes as well).
   */
  private redacted(e: unknown): unknown {
    if (e instanceof Error) e.message = redactSecrets(e.message, [this.apiKey]);
    return e;
  }

  private stream(
    req: Omit<GenerateRequest, 'prompt'>,
    input: string | ChatMessage[],
    onToken: ((e: TokenEvent) => void) | undefined,
    outer: AbortSignal | undefined,
  ): Promise<RemoteGenerateResult> {
    return this.streamOnce(req, input, onToken, outer).catch((e: unknown) =>
      Promise.reject(this.redacted(e)),
    );
  }

  private async streamOnce(
    req: Omit<GenerateRequest, 'prompt'>,
    input: string | ChatMessage[],
    onToken: ((e: TokenEvent) => void) | undefined,
    outer: AbortSignal | undefined,
  ): Promise<RemoteGenerateResult> {
    if (!this.model) throw new EngineError('not_loaded', 'no remote model chosen: call load() first');
    const ctl = new AbortController();
    const onOuter = () => ctl.abort();
    outer?.addEventListener('abort', onOuter, { once: true });
    if (outer?.aborted) ctl.abort();
    const firstMs = this.cfg.firstTokenTimeoutMs ?? DEFAULT_FIRST_TOKEN_TIMEOUT_MS;
    const idleMs = this.cfg.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    const requestMs = this.cfg.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const maxTokens = req.maxTokens ?? DEFAULT_MAX_TOKENS;
    let timeoutMsg: string | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (ms: number, msg: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timeoutMsg ??= msg;
        ctl.abort();
      }, ms);
    };
    const idleMsg = `${this.host} stalled mid-stream: no stream event for ${idleMs / 1000} s (idle timeout; keep-alive comments do not count): ${this.raise('idleTimeoutMs')}`;

    const s = new CompletionStream(this.host, maxTokens, this.cfg.countTokens, onToken, {
      promptBytes: utf8Bytes(input),
    });
    const { chunks } = s;
    const tStartMs = performance.now();
    const result = (): RemoteGenerateResult => ({
      ...this.assemble(s, tStartMs),
      ...(s.serverTimings ? { serverTimings: s.serverTimings } : {}),
    });
    const fail = (code: EngineErrorCode, message: string, cause?: unknown) =>
      new RemoteError(code, message, { cause, partial: chunks.length > 0 ? result() : undefined });

    // The overall deadline: never re-armed, so a server that streams forever (tokens, empty chunks) ends too.
    const deadline = setTimeout(() => {
      timeoutMsg ??= `${this.host} did not finish the request within ${requestMs / 1000} s (request timeout; ${chunks.length} chunk(s) had arrived): ${this.raise('requestTimeoutMs')}`;
      ctl.abort();
    }, requestMs);
    arm(
      firstMs,
      `${this.host} sent no token within ${firstMs / 1000} s (first-token timeout): ${this.raise('firstTokenTimeoutMs')}`,
    );
    // 429s answered on the way (each waited for as the server asked): a timeout during them says so.
    const limited = { times: 0, waitMs: 0 };
    const rateNote = () =>
      limited.times > 0
        ? ` (meanwhile ${this.host} rate-limited the request: HTTP 429 ${limited.times} time(s), asking to wait ${(limited.waitMs / 1000).toFixed(1)} s in all, Retry-After)`
        : '';
    try {
      let res: Response;
      try {
        res = await this.request(
          this.api === 'chat' ? '/chat/completions' : '/completions',
          { method: 'POST', headers: this.headers(true), body: JSON.stringify(this.body(req, input)) },
          ctl.signal,
          (waitMs) => {
            limited.times++;
            limited.waitMs += waitMs;
          },
        );
      } catch (e) {
        if (timeoutMsg)
          throw fail(limited.times > 0 ? 'rate_limited' : 'timeout', timeoutMsg + rateNote(), e);
        if ((e as EngineError).code === 'aborted' && outer?.aborted)
          return { ...result(), finishReason: 'aborted' };
        throw e;
      }
      if (!res.body) throw fail('protocol', `${this.host} sent no body`);
      // Every event (a data line) after the first token re-arms the idle timer; SSE comments do not
      // (eventsource-parser reports them to onComment only), so `: ping` alone cannot keep a stall alive.
      const parser = createParser({
        onEvent: (ev) => {
          sawEvent = true;
          s.onData(ev.data);
          if (chunks.length > 0 && !s.stopped) arm(idleMs, idleMsg);
        },
      });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      // The answer's first characters, to say what it was when it was no event stream at all.
      let head = '';
      let sawEvent = false;
      // Sizes are checked before the parser buffers the text: a line that never ends costs at most the limit.
      const maxEvent = this.cfg.maxEventChars ?? DEFAULT_MAX_EVENT_CHARS;
      const guard = new SseSizeGuard(maxEvent);
      try {
        for (;;) {
          const { value, done: eof } = await reader.read();
          if (eof) break;
          const text = dec.decode(value, { stream: true });
          if (head.length < 512) head += text.slice(0, 512 - head.length);
          if (!guard.feed(text)) {
            s.protocolError ??= `${this.host} sent an SSE line or event longer than ${maxEvent} characters (the limit, maxEventChars; a real event is one JSON chunk of a few hundred): stopped reading`;
            break;
          }
          parser.feed(text);
          if (s.stopped) break;
        }
      } catch (e) {
        if (timeoutMsg) throw fail('timeout', timeoutMsg, e);
        if (outer?.aborted) return { ...result(), finishReason: 'aborted' };
        throw fail(
          'stream_cut',
          `the stream from ${this.host} broke after ${chunks.length} chunk(s): ${(e as Error)?.message ?? e}`,
          e,
        );
      } finally {
        reader.cancel().catch(() => undefined);
      }
      if (s.protocolError) throw fail('protocol', s.protocolError);
      if (s.overran)
        throw fail(
          'protocol',
          `${this.host} overran max_tokens: it kept streaming past the ${maxTokens} token(s) asked for; stopped reading after ${maxTokens} chunk(s), kept as a partial result`,
        );
      if (!s.done && !sawEvent) {
        const notStream = this.notAnEventStream(res, head);
        if (notStream) throw fail('protocol', notStream);
      }
      if (!s.done)
        throw fail(
          'stream_cut',
          `the stream from ${this.host} ended before data: [DONE] (after ${chunks.length} chunk(s)): the server closed the connection early`,
        );
      if (chunks.length === 0 && s.toolCalls.length === 0)
        throw fail(
          'protocol',
          `${this.host} finished the stream without any text (finish_reason ${s.finish})`,
        );
      return result();
    } finally {
      clearTimeout(timer);
      clearTimeout(deadline);
      outer?.removeEventListener('abort', onOuter);
    }
  }

  /**
   * What a 200 answer without a single SSE event was, when it was plainly no event stream: an HTML page
   * (a web app's answer for a path it does not know: the base URL is wrong) or JSON (a non-streamed
   * completion: the server ignored `stream: true`). Undefined when it may have been a stream cut short.
   */
  private notAnEventStream(res: Response, head: string): string | undefined {
    const type = res.headers.get('content-type') ?? '';
    if (/event-stream/i.test(type)) return undefined;
    const text = head.trimStart();
    const began = JSON.stringify(text.slice(0, 80));
    const h = this.host;
    if (/html/i.test(type) || /^</.test(text))
      return `${h} answered HTTP ${res.status} with an HTML page (Content-Type ${type || 'none'}) instead of an event stream: the base URL is probably not an OpenAI-compatible API (it usually ends in /v1); the page began ${began}`;
    if (/json/i.test(type) || /^[{[]/.test(text)) {
      let completion = false;
      try {
        const j = JSON.parse(text) as { object?: string; choices?: unknown };
        completion = Array.isArray(j.choices) || /completion/.test(String(j.object ?? ''));
      } catch {
        completion = /"choices"\s*:/.test(text); // longer than the part kept
      }
      return completion
        ? `${h} answered with one non-streamed JSON completion instead of an event stream: it ignored "stream": true, so no token times can be measured; the answer began ${began}`
        : `${h} answered HTTP ${res.status} with JSON (Content-Type ${type || 'none'}) instead of an event stream; it began ${began}`;
    }
    return undefined;
  }

  /** {@link assembleResult}, noting the result's prefill and decode times for {@link stats}. */
  private assemble(stream: CompletionStream, tStartMs: number): RemoteGenerateResult {
    const r = assembleResult(
      tStartMs,
      stream.chunks,
      stream.text,
      stream.usage,
      stream.finish,
      stream.done ? undefined : 'aborted',
      this.cfg.countTokens,
    );
    if (stream.toolCalls.length > 0) r.toolCalls = stream.toolCalls.filter(Boolean);
    const t = r.tokenTimesMs;
    const n = t.length;
    if (n >= 1) this.last = { ttftMs: t[0] - tStartMs, tokens: n, decodeMs: t[n - 1] - t[0] };
    return r;
  }

  /** As many ids (all -1) as `countTokens` counts in `text`; none without it. */
  async tokenize(text: string): Promise<number[]> {
    // Servers differ (vLLM has /tokenize, others none): count with the configured tokenizer, ids unknown.
    const n = this.cfg.countTokens ? this.cfg.countTokens(text) : 0;
    return new Array<number>(n).fill(-1);
  }

  /** @throws EngineError('invalid_argument'): a remote server's ids are unknown here. */
  async detokenize(): Promise<string> {
    throw new EngineError('invalid_argument', 'a remote server does not detokenize ids here');
  }

  /** The load time (listing the models) and the last request's prefill (TTFT) and decode times. */
  async stats(): Promise<EngineStats> {
    const l = this.last;
    return {
      load: { fetchMs: this.loadMs, uploadMs: 0, compileMs: 0, totalMs: this.loadMs },
      ...(l
        ? {
            lastPrefill: { tokens: 0, ms: l.ttftMs },
            lastDecode: { tokens: Math.max(0, l.tokens - 1), ms: l.decodeMs },
          }
        : {}),
    };
  }

  /** Forgets the chosen model (the server is not told). */
  async unload(): Promise<void> {
    this.model = undefined;
  }
}
