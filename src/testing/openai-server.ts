/**
 * An OpenAI-compatible test server (Node http, 127.0.0.1 only) that speaks vLLM's streaming wire format:
 * `GET /v1/models`, `POST /v1/chat/completions` and `POST /v1/completions` with `stream: true`
 * (`chat.completion.chunk` chunks with `choices[].delta.content`, `text_completion` chunks with
 * `choices[].text`, a final chunk with `finish_reason`, the usage chunk with empty `choices` when
 * `stream_options.include_usage`, then `data: [DONE]`), with scripted delays and faults.
 *
 * Timing script: the first chunk comes `firstDelayMs` after the request, then one chunk every
 * `delayMs × tokensPerChunk` ms, so the scripted TTFT is `firstDelayMs` and the scripted TPOT `delayMs`
 * (tokens of one chunk arrive together). Tests change `server.script` between requests.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

/** Every fault the server can script (the `fault` field; `--fault` when run by hand). */
export const FAULTS = [
  'none',
  '401',
  '403',
  '404',
  '429',
  '400',
  '500',
  'malformed',
  'cut',
  'stall-first',
  'stall-mid',
  'overrun',
  'ping-mid',
  'stall-models',
  'stall-models-body',
  'big-chunk',
  'long-event',
  'huge-models',
  'huge-error',
  'html',
  'json-answer',
  'choices-null',
] as const;
export type Fault = (typeof FAULTS)[number];

export interface Script {
  /** Model names `/v1/models` lists (default ['test-model']). */
  models: string[];
  /** Tool calls streamed (chat API) after the tokens, as vLLM streams parsed calls (default none). */
  toolCalls: { name: string; arguments: string }[];
  /** Output tokens (words; default 16 × " tok"). Output stops at max_tokens. */
  tokens: string[];
  tokensPerChunk: number;
  firstDelayMs: number;
  delayMs: number;
  /** Send the usage chunk when asked (default true); false acts like a server that omits usage. */
  usage: boolean;
  fault: Fault;
  /**
   * For 'malformed', 'cut', 'stall-mid' and 'ping-mid': after how many content chunks. 'overrun' ignores
   * max_tokens and streams a token every `delayMs` until the client hangs up; 'ping-mid' then sends only
   * `: ping` SSE comments, one every `delayMs`, until the client hangs up. 'stall-models' accepts
   * `GET /v1/models` and never answers; 'stall-models-body' sends its headers and half its JSON, then nothing.
   * 'big-chunk' sends one chunk whose text is `bigChunkChars` × "x" (in 64 KiB writes, stopping when the
   * client hangs up; the line ends only after the last), 'long-event' one event of `bigChunkChars`
   * characters as `data:` lines of 1 KiB without a blank line; both then go on as usual. 'huge-models'
   * answers `GET /v1/models` with a list of `bigChunkChars` characters, 'huge-error' a completion request
   * with an HTTP 500 whose body is that long (64 KiB writes, stopping when the client hangs up).
   * 'html' answers a completion request with a 200 HTML page (a web app's answer for an unknown path),
   * 'json-answer' with one non-streamed `chat.completion` JSON (a server that ignores `stream: true`),
   * 'choices-null' streams chunks whose `choices` is null.
   */
  faultAfterChunks: number;
  /** For '429': Retry-After seconds, and how many 429s before answering normally (Infinity: always). */
  retryAfterS: number;
  failTimes: number;
  /** Require this bearer key (401 otherwise). */
  apiKey?: string;
  /** Send CORS headers allowing every origin (default true). */
  cors: boolean;
  /** Chat: the first this-many tokens stream as `delta.reasoning_content` (a reasoning model). */
  reasoningTokens: number;
  /** The usage chunk's `usage` instead of the counted one (a server whose numbers are wrong or hostile). */
  usageOverride?: unknown;
  /** For 'big-chunk' and 'long-event': the size, characters (default 1 MiB). */
  bigChunkChars: number;
}

export const DEFAULT_SCRIPT: Script = {
  models: ['test-model'],
  toolCalls: [],
  tokens: Array.from({ length: 16 }, (_, i) => ` tok${i}`),
  tokensPerChunk: 1,
  firstDelayMs: 20,
  delayMs: 10,
  usage: true,
  fault: 'none',
  faultAfterChunks: 2,
  retryAfterS: 0,
  failTimes: 1,
  cors: true,
  reasoningTokens: 0,
  bigChunkChars: 1024 * 1024,
};

export interface OpenAiTestServer {
  /** `http://127.0.0.1:PORT` (no /v1). */
  url: string;
  script: Script;
  /** Requests seen (method, path, authorization header present). */
  log: { method: string; path: string; auth: boolean }[];
  /** The JSON bodies of the completion requests seen, in order. */
  bodies: Record<string, unknown>[];
  /** Characters 'big-chunk' and 'long-event' have written since the last {@link set}. */
  readonly faultChars: number;
  /** Sets the script (starting from the defaults) and resets the 429 counter. */
  set(s: Partial<Script>): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (d) => {
      s += d;
    });
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });
}

/** Starts the server on 127.0.0.1, on `port` (default: a free one). */
export async function startOpenAiServer(initial: Partial<Script> = {}, port = 0): Promise<OpenAiTestServer> {
  const state = { script: { ...DEFAULT_SCRIPT, ...initial }, rateLimited: 0, faultChars: 0 };
  /** Writes `text`, waiting for the socket to drain (or close) when its buffer is full. */
  const send = async (res: ServerResponse, text: string) => {
    if (res.write(text) || res.destroyed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  const log: OpenAiTestServer['log'] = [];
  const bodies: OpenAiTestServer['bodies'] = [];
  const sockets = new Set<import('node:net').Socket>();

  /** Writes `head`, then `piece` until `bigChunkChars` characters are written or the client hangs up. */
  const sendMany = async (res: ServerResponse, head: string, piece: string) => {
    res.write(head);
    for (let left = state.script.bigChunkChars; left > 0 && !res.destroyed; left -= piece.length) {
      const text = left < piece.length ? piece.slice(0, left) : piece;
      await send(res, text);
      state.faultChars += text.length;
    }
  };
  const cors = (res: ServerResponse) => {
    if (!state.script.cors) return;
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'authorization, content-type');
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-expose-headers', 'retry-after');
  };
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    cors(res);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const errorBody = (message: string, type: string, code: number) => ({
    object: 'error',
    message,
    type,
    param: null,
    code,
  });

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const s = state.script;
    log.push({ method: req.method ?? '', path: url.pathname, auth: Boolean(req.headers.authorization) });
    if (req.method === 'OPTIONS') {
      cors(res);
      res.writeHead(204);
      res.end();
      return;
    }
    if (s.apiKey !== undefined && req.headers.authorization !== `Bearer ${s.apiKey}`) {
      json(res, 401, { error: errorBody('Unauthorized', 'invalid_request_error', 401) });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      if (s.fault === 'stall-models') return; // the connection stays open, silent
      if (s.fault === 'huge-models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        await sendMany(res, '{"object":"list","data":[', '{"id":"m","object":"model"},'.repeat(2048));
        if (!res.destroyed) res.end('{"id":"test-model"}]}');
        return;
      }
      if (s.fault === 'stall-models-body') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"object": "list", "data": [');
        return;
      }
      json(res, 200, {
        object: 'list',
        data: s.models.map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'vllm',
          root: id,
          max_model_len: 2048,
        })),
      });
      return;
    }
    const chat = url.pathname === '/v1/chat/completions';
    if (req.method !== 'POST' || !(chat || url.pathname === '/v1/completions')) {
      json(res, 404, { detail: 'Not Found' });
      return;
    }
    const raw = JSON.parse(await readBody(req)) as Record<string, unknown>;
    bodies.push(raw);
    const body = raw as {
      model: string;
      max_tokens?: number;
      stream?: boolean;
      stream_options?: { include_usage?: boolean };
      prompt?: string;
      messages?: { content: string }[];
    };
    if (s.fault === '401' || s.fault === '403') {
      json(res, Number(s.fault), { error: errorBody('Forbidden', 'invalid_request_error', Number(s.fault)) });
      return;
    }
    if (s.fault === '404' || !s.models.includes(body.model)) {
      json(res, 404, {
        error: errorBody(`The model \`${body.model}\` does not exist.`, 'NotFoundError', 404),
      });
      return;
    }
    if (s.fault === '429' && state.rateLimited < s.failTimes) {
      state.rateLimited++;
      json(
        res,
        429,
        { error: errorBody('Too many requests', 'rate_limit', 429) },
        {
          'retry-after': String(s.retryAfterS),
        },
      );
      return;
    }
    if (s.fault === 'huge-error') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      await sendMany(res, 'Internal error: ', 'x'.repeat(65536));
      if (!res.destroyed) res.end();
      return;
    }
    if (s.fault === '400') {
      // vLLM's answer to a request it cannot serve, e.g. a response_format schema it cannot compile.
      json(res, 400, { error: errorBody('Invalid JSON schema: scripted refusal', 'BadRequestError', 400) });
      return;
    }
    if (s.fault === '500') {
      json(res, 500, { error: errorBody('Internal server error', 'InternalServerError', 500) });
      return;
    }

    if (s.fault === 'html') {
      cors(res);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<!doctype html><html><head><title>My App</title></head><body><div id="root"></div></body></html>',
      );
      return;
    }
    if (s.fault === 'json-answer') {
      json(res, 200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: body.model,
        choices: [
          { index: 0, message: { role: 'assistant', content: s.tokens.join('') }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 3, completion_tokens: s.tokens.length, total_tokens: 3 + s.tokens.length },
      });
      return;
    }
    if (s.fault === 'choices-null') {
      cors(res);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.end(
        `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', model: body.model, choices: null })}\n\ndata: [DONE]\n\n`,
      );
      return;
    }
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${Math.random().toString(16).slice(2, 18)}`;
    const created = Math.floor(Date.now() / 1000);
    const object = chat ? 'chat.completion.chunk' : 'text_completion';
    const n = Math.min(s.tokens.length, body.max_tokens ?? 16);
    const promptText = body.prompt ?? (body.messages ?? []).map((m) => m.content).join(' ');
    const promptTokens = promptText.split(/\s+/).filter(Boolean).length;
    const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id, object, created, model: body.model, choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
    const content = (text: string, finish: string | null, role = false, reasoning = false) =>
      chat
        ? chunk({
            delta: role
              ? { role: 'assistant', content: text }
              : reasoning
                ? { reasoning_content: text }
                : { content: text },
            logprobs: null,
            finish_reason: finish,
            ...(finish ? { stop_reason: null } : {}),
          })
        : chunk({ text, logprobs: null, finish_reason: finish, stop_reason: null }, { usage: null });

    cors(res);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    res.flushHeaders();
    if (s.fault === 'stall-first') return; // never sends a token; the client times out
    await sleep(s.firstDelayMs);
    let sent = 0;
    let chunks = 0;
    if (s.fault === 'overrun') {
      for (let i = 0; !res.destroyed; i++) {
        res.write(content(` tok${i}`, null, chat && i === 0));
        await sleep(s.delayMs);
      }
      return;
    }
    while (sent < n) {
      if (res.destroyed) return;
      if (chunks === s.faultAfterChunks) {
        if (s.fault === 'malformed') {
          res.write('data: {"id": "broken", "choices": [\n\n');
        } else if (s.fault === 'cut') {
          res.socket?.destroy();
          return;
        } else if (s.fault === 'big-chunk' || s.fault === 'long-event') {
          const long = s.fault === 'long-event';
          const piece = 'x'.repeat(long ? 1024 : 65536);
          if (!long)
            res.write(
              chat
                ? `data: {"id":"${id}","object":"${object}","choices":[{"index":0,"delta":{"content":"`
                : `data: {"id":"${id}","object":"${object}","choices":[{"index":0,"text":"`,
            );
          for (let left = s.bigChunkChars; left > 0 && !res.destroyed; left -= piece.length) {
            const text = left < piece.length ? piece.slice(0, left) : piece;
            await send(res, long ? `data: ${text}\n` : text);
            state.faultChars += text.length;
          }
          if (res.destroyed) return;
          res.write(long ? '\n' : '"},"finish_reason":null}]}\n\n');
        } else if (s.fault === 'stall-mid')
          return; // keeps the connection open, silent
        else if (s.fault === 'ping-mid') {
          // Keep-alive comments only, as proxies and some servers send: alive, but no token ever comes.
          while (!res.destroyed) {
            res.write(': ping\n\n');
            await sleep(s.delayMs);
          }
          return;
        }
      }
      const k = Math.min(s.tokensPerChunk, n - sent);
      const text = s.tokens.slice(sent, sent + k).join('');
      if (chat && chunks === 0) res.write(content('', null, true));
      res.write(content(text, null, false, sent < s.reasoningTokens));
      sent += k;
      chunks++;
      if (sent < n) await sleep(s.delayMs * k);
    }
    // vLLM with tools: each parsed call as deltas (its id and name, then its arguments in two pieces).
    s.toolCalls.forEach((t, index) => {
      const half = Math.ceil(t.arguments.length / 2);
      const call = (fn: Record<string, unknown>, first: boolean) =>
        chunk({
          delta: {
            tool_calls: [
              { index, ...(first ? { id: `chatcmpl-tool-${index}`, type: 'function' } : {}), function: fn },
            ],
          },
          logprobs: null,
          finish_reason: null,
        });
      if (chat && n === 0 && index === 0) res.write(content('', null, true));
      res.write(call({ name: t.name, arguments: t.arguments.slice(0, half) }, true));
      res.write(call({ arguments: t.arguments.slice(half) }, false));
    });
    res.write(content('', s.toolCalls.length > 0 ? 'tool_calls' : n < s.tokens.length ? 'length' : 'stop'));
    if (s.usage && body.stream_options?.include_usage)
      res.write(
        chunk(null, {
          usage:
            'usageOverride' in s
              ? s.usageOverride
              : { prompt_tokens: promptTokens, total_tokens: promptTokens + n, completion_tokens: n },
        }),
      );
    res.write('data: [DONE]\n\n');
    res.end();
  });
  server.on('connection', (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    get script() {
      return state.script;
    },
    set script(v: Script) {
      state.script = v;
    },
    log,
    bodies,
    get faultChars() {
      return state.faultChars;
    },
    set(s) {
      state.script = { ...DEFAULT_SCRIPT, ...s };
      state.rateLimited = 0;
      state.faultChars = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const SERVE_USAGE =
  'usage: npx tsx src/testing/openai-server.ts --serve [--fault NAME] [--fault-after N] [--delay MS] [--first-delay MS] [--port N]';

/**
 * Reads `--serve`'s options into a script and a port: `--fault` one of {@link FAULTS} (default none),
 * `--fault-after` content chunks before a mid-stream fault (default 2), `--delay` the TPOT and
 * `--first-delay` the TTFT in ms (default 20 each), `--port` (default a free one).
 * @throws Error naming the option and the accepted values, for an unknown option or a bad value.
 */
export function parseServeArgs(argv: readonly string[]): { script: Partial<Script>; port: number } {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      serve: { type: 'boolean' },
      fault: { type: 'string' },
      'fault-after': { type: 'string' },
      delay: { type: 'string' },
      'first-delay': { type: 'string' },
      port: { type: 'string' },
    },
    strict: true,
  });
  const int = (name: string, v: string | undefined, dflt: number, max: number): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!/^\d+$/.test(v) || n > max) throw new Error(`--${name} must be an integer 0..${max}, got "${v}"`);
    return n;
  };
  const fault = values.fault ?? 'none';
  if (!(FAULTS as readonly string[]).includes(fault))
    throw new Error(`--fault must be one of ${FAULTS.join(', ')}; got "${fault}"`);
  return {
    script: {
      fault: fault as Fault,
      faultAfterChunks: int('fault-after', values['fault-after'], DEFAULT_SCRIPT.faultAfterChunks, 10_000),
      delayMs: int('delay', values.delay, 20, 60_000),
      firstDelayMs: int('first-delay', values['first-delay'], DEFAULT_SCRIPT.firstDelayMs, 60_000),
    },
    port: int('port', values.port, 0, 65_535),
  };
}

/**
 * `npx tsx src/testing/openai-server.ts --serve [--fault NAME] …`: runs the server by hand (for trying the
 * page's remote mode, a fault included). Exits 2 with the usage on a bad option.
 */
if (process.argv[1]?.endsWith('openai-server.ts') && process.argv.includes('--serve')) {
  let opts: ReturnType<typeof parseServeArgs>;
  try {
    opts = parseServeArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`${(e as Error).message}\n${SERVE_USAGE}`);
    process.exit(2);
  }
  void startOpenAiServer(opts.script, opts.port).then((s) =>
    console.log(
      `OpenAI-compatible test server at ${s.url} (fault: ${s.script.fault}${s.script.fault === 'none' ? '' : `, after ${s.script.faultAfterChunks} chunks where it applies`})`,
    ),
  );
}
