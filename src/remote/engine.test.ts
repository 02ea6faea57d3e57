/**
 * RemoteEngine and the remote benchmark against the OpenAI-compatible test server (src/testing/openai-server.ts,
 * vLLM's wire format) on 127.0.0.1: timing against scripted delays, token counting, every fault with its
 * code and partial results, the concurrency sweep, and that the API key never reaches a result.
 *
 * Tolerance: a measured TTFT is at least the scripted first delay and at most 100 ms more (event loop and
 * loopback jitter on a busy 2-core machine); a measured TPOT is within 40 % + 5 ms of the scripted one.
 * Timing runs start with one warm-up request (not counted), as benchmarks do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compareSentence,
  parseConcurrency,
  RemoteBenchError,
  remoteResult,
  runRemoteBench,
} from '../bench/remote.ts';
import type { BenchPlan } from '../bench/types.ts';
import { EngineError, isEngineError } from '../core/errors.ts';
import type { GenerateRequest } from '../core/types.ts';
import { type OpenAiTestServer, startOpenAiServer } from '../testing/openai-server.ts';
import {
  apiRoot,
  DEFAULT_FIRST_TOKEN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  endpointHost,
  MAX_ERROR_BODY_CHARS,
  MAX_MODEL_LIST_CHARS,
  RemoteEngine,
  type RemoteError,
  retryAfterMs,
} from './engine.ts';
import {
  CompletionStream,
  DEFAULT_MAX_EVENT_CHARS,
  MAX_CHARS_PER_TOKEN,
  PROMPT_TEMPLATE_SLACK_TOKENS,
  SseSizeGuard,
  spreadTokens,
  USAGE_SLACK_TOKENS,
} from './stream.ts';

let server: OpenAiTestServer;
beforeAll(async () => {
  server = await startOpenAiServer();
});
afterAll(async () => {
  await server.close();
});

const plan = (over: Partial<BenchPlan> = {}): BenchPlan => ({
  prompts: [{ name: 'p', text: 'Once upon a time' }],
  maxTokens: 8,
  runs: 1,
  warmup: 0,
  ignoreEos: true,
  ...over,
});

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;

async function engine(over: Partial<ConstructorParameters<typeof RemoteEngine>[0]> = {}) {
  const e = new RemoteEngine({ baseUrl: server.url, model: 'test-model', ...over });
  await e.load();
  return e;
}

async function faultOf(p: Promise<unknown>): Promise<RemoteError> {
  try {
    await p;
  } catch (e) {
    return e as RemoteError;
  }
  throw new Error('expected a fault');
}

describe('helpers', () => {
  it('normalizes the base URL and refuses keys in it', () => {
    expect(apiRoot('http://h:8000')).toBe('http://h:8000/v1');
    expect(apiRoot('http://h:8000/v1/')).toBe('http://h:8000/v1');
    expect(() => apiRoot('http://u:secret@h:8000')).toThrow(/key field/);
  });
  it('takes an address typed without a scheme as http:// (issue 46, item 6), and refuses other schemes', () => {
    expect(apiRoot('localhost:18800')).toBe('http://localhost:18800/v1');
    expect(apiRoot(' 10.0.0.5:8000/v1 ')).toBe('http://10.0.0.5:8000/v1');
    expect(apiRoot('gpu-box:8000/')).toBe('http://gpu-box:8000/v1');
    expect(apiRoot('https://api.example.com')).toBe('https://api.example.com/v1');
    expect(endpointHost('localhost:18800')).toBe('localhost:18800');
    expect(() => apiRoot('ftp://h:21')).toThrow(/must be http or https, got ftp:/);
  });
  it('reads Retry-After as seconds or a date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 5000)).toBe(5000);
    expect(retryAfterMs(null)).toBeUndefined();
  });
  it('spreads reported tokens over chunks', () => {
    expect(spreadTokens(8, [1, 1, 1, 1])).toEqual([2, 2, 2, 2]);
    expect(spreadTokens(2, [1, 1, 1])).toEqual([1, 1, 0]);
    expect(spreadTokens(6, [4, 1, 1]).reduce((a, b) => a + b)).toBe(6);
  });
  it("a failure's result says what failed; a Stop's is partial with no error (no failure)", () => {
    const plan = { prompts: [{ name: 'p', text: 'Hi' }], maxTokens: 8, runs: 1, warmup: 0, ignoreEos: false };
    const base = remoteResult({
      host: 'h',
      api: 'chat',
      model: 'm',
      loadMs: 5,
      plan,
      runs: [],
      sweep: [],
      partial: false,
    });
    const cut = new RemoteBenchError(new EngineError('stream_cut', 'the stream ended'), base).result;
    expect(cut).toMatchObject({ partial: true, error: { code: 'stream_cut', message: 'the stream ended' } });
    const stop = new RemoteBenchError(new EngineError('aborted', 'the benchmark was stopped'), base).result;
    expect(stop.partial).toBe(true);
    expect(stop.error).toBeUndefined();
    // Not listed yet: no load at all (null in the file), not 0.
    const early = remoteResult({
      host: 'h',
      api: 'chat',
      model: 'm',
      loadMs: Number.NaN,
      plan,
      runs: [],
      sweep: [],
      partial: true,
    });
    expect(Object.values(early.load).every(Number.isNaN)).toBe(true);
  });
  it('parses concurrency lists', () => {
    expect(parseConcurrency('16,1,4,4')).toEqual([1, 4, 16]);
    expect(() => parseConcurrency('0')).toThrow();
  });
  it('says which side is faster and by how much', () => {
    const s = compareSentence(
      { label: 'This GPU', e2eMs: 400, decodeTokensPerSecond: 20, ttftMs: 50 },
      { label: 'remote h', e2eMs: 100, decodeTokensPerSecond: 90, ttftMs: 30 },
    );
    expect(s).toMatch(/^remote h is faster for you: 4\.00× quicker per request/);
    // Different models: two setups compared, not this machine against the server on the same work.
    const other = compareSentence(
      { label: 'This GPU', e2eMs: 400 },
      { label: 'remote h', e2eMs: 100 },
      { sameModel: false },
    );
    expect(other).toBe(
      'remote h took 4.00× less time per request than This GPU (100 ms vs 400 ms median), but each ran its own model.',
    );
    expect(
      compareSentence({ label: 'A', e2eMs: 100 }, { label: 'B', e2eMs: 102 }, { sameModel: false }),
    ).toBe('A and B take about the same time per request (100 vs 102 ms median), each on its own model.');
  });
});

describe('timing against scripted delays (vLLM wire format)', () => {
  for (const api of ['chat', 'completions'] as const)
    it(`${api}: one token per chunk`, async () => {
      server.set({ firstDelayMs: 80, delayMs: 25 });
      const e = await engine({ api });
      const tokens: number[] = [];
      const r = await runRemoteBench({
        engine: e,
        plan: plan({ warmup: 1 }),
        onToken: (_t, tMs) => tokens.push(tMs),
      });
      const run = r.runs[0];
      expect(run.outputTokens).toBe(8);
      expect(run.tokenCount).toBe('usage');
      expect(run.approximate).toBeUndefined();
      expect(run.promptTokens).toBe(4);
      expect(run.prefillTokensPerSecond).toBeCloseTo((4 * 1000) / run.ttftMs, 6);
      expect(run.text).toBe(' tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
      expect(run.ttftMs).toBeGreaterThanOrEqual(78);
      expect(run.ttftMs).toBeLessThan(80 + 100);
      expect(Math.abs(run.tpotMs - 25)).toBeLessThan(25 * 0.4 + 5);
      expect(tokens.length).toBe(16); // warm-up and measured run
      expect(r.engine).toBe('remote');
      expect(r.endpoint).toEqual({ host: new URL(server.url).host, api });
    });

  it('several tokens per chunk arrive together (usage count, spread over chunks)', async () => {
    server.set({ firstDelayMs: 60, delayMs: 20, tokensPerChunk: 4 });
    const e = await engine();
    const r = await runRemoteBench({ engine: e, plan: plan({ maxTokens: 12, warmup: 1 }) });
    const run = r.runs[0];
    expect(run.outputTokens).toBe(12);
    // Chunks of 4 every 80 ms: ITLs are 0,0,0,80,0,0,0,80,0,0,0; TPOT = 2·80 / 11.
    const zeros = run.itlMs.filter((x) => x < 3).length;
    expect(zeros).toBe(9);
    for (const gap of run.itlMs.filter((x) => x >= 3)) expect(Math.abs(gap - 80)).toBeLessThan(80 * 0.4 + 5);
    expect(Math.abs(run.tpotMs - 160 / 11)).toBeLessThan((160 / 11) * 0.4 + 5);
    expect(run.ttftMs).toBeGreaterThanOrEqual(58);
  });

  it('without usage: a tokenizer counts, else chunks are counted and marked approximate', async () => {
    server.set({ delayMs: 5, tokensPerChunk: 2, usage: false });
    const withTok = await runRemoteBench({ engine: await engine({ countTokens: words }), plan: plan() });
    expect(withTok.runs[0].outputTokens).toBe(8);
    expect(withTok.runs[0].tokenCount).toBe('tokenizer');
    const chunks = await runRemoteBench({ engine: await engine(), plan: plan() });
    expect(chunks.runs[0].outputTokens).toBe(4);
    expect(chunks.runs[0].tokenCount).toBe('chunks');
    expect(chunks.runs[0].approximate).toBe(true);
    // Nothing counted the prompt: its prefill rate is unknown (null in the file), not 0 tok/s.
    for (const r of [withTok, chunks]) {
      expect(r.runs[0].promptTokens).toBe(0);
      expect(r.runs[0].prefillTokensPerSecond).toBeNaN();
      expect(r.summary.prefillTokensPerSecond).toBeUndefined();
      expect(r.summary.decodeTokensPerSecond?.median).toBeGreaterThan(0);
    }
  });

  it('a reasoning model: thinking tokens time the first token and count, the text is the answer', async () => {
    server.set({ firstDelayMs: 40, delayMs: 5, reasoningTokens: 3 });
    const r = await runRemoteBench({ engine: await engine(), plan: plan() });
    const run = r.runs[0];
    expect(run.outputTokens).toBe(8);
    expect(run.text).toBe(' tok3 tok4 tok5 tok6 tok7');
    expect(run.ttftMs).toBeLessThan(40 + 100);
  });

  it('concurrency sweep: request and token throughput, percentiles per level', async () => {
    server.set({ firstDelayMs: 30, delayMs: 5 });
    const r = await runRemoteBench({ engine: await engine(), plan: plan(), concurrency: [1, 4] });
    expect(r.sweep?.map((p) => p.concurrency)).toEqual([1, 4]);
    const [p1, p4] = r.sweep ?? [];
    expect(p4.completed).toBe(4);
    expect(p4.outputTokenThroughput).toBeGreaterThan(p1.outputTokenThroughput * 1.5);
    expect(p4.summary.ttftMs.p90).toBeGreaterThanOrEqual(28);
    expect(p4.summary.e2eMs.n).toBe(4);
  });
});

describe('faults: code, message, partial results', () => {
  it('an engine without speculative decoding (a remote server) refuses draft before any request', async () => {
    const e = new RemoteEngine({ baseUrl: 'http://127.0.0.1:9', model: 'm' });
    for (const call of [
      () => e.generate({ prompt: 'x', draft: { type: 'lookup' } }),
      () => e.chat({ messages: [{ role: 'user', content: 'x' }], draft: { type: 'lookup' } }),
      () => e.load(undefined, { draft: { url: 'http://127.0.0.1:9/d.gguf' } }),
    ]) {
      const err = await call().catch((x) => x);
      expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
      expect(String(err)).toMatch(/WebGPU engine only, not on a remote server/);
    }
  });
  it('connection refused', async () => {
    const closed = await startOpenAiServer();
    await closed.close(); // a port nothing listens on now
    const e = new RemoteEngine({ baseUrl: closed.url, model: 'm' });
    const err = await faultOf(e.load());
    expect(err.code).toBe('network');
    expect(err.message).toMatch(/connection refused/);
  });
  it('DNS failure', async () => {
    const e = new RemoteEngine({ baseUrl: 'http://no-such-host.invalid:8000', model: 'm' });
    const err = await faultOf(e.load());
    expect(err.code).toBe('network');
    expect(err.message).toMatch(/DNS lookup failed|could not reach/);
  });
  it('401 and 403', async () => {
    server.set({ apiKey: 'sk-right' });
    const err = await faultOf(engine({ apiKey: 'sk-wrong' }));
    expect(err.code).toBe('unauthorized');
    expect(err.message).toMatch(/HTTP 401/);
    expect(err.message).not.toContain('sk-wrong');
    server.set({ fault: '403' });
    const e = await engine();
    const err2 = await faultOf(e.generate({ prompt: 'x' }));
    expect(err2.code).toBe('unauthorized');
  });
  it('unknown model (404), at load and at request', async () => {
    server.set({});
    const err = await faultOf(engine({ model: 'nope' }));
    expect(err.code).toBe('model_not_found');
    expect(err.message).toMatch(/test-model/);
    server.set({ fault: '404' });
    const e = await engine();
    expect((await faultOf(e.generate({ prompt: 'x' }))).code).toBe('model_not_found');
  });
  it('429: honours Retry-After, then gives up after bounded retries', async () => {
    server.set({ fault: '429', retryAfterS: 0.2, failTimes: 2 });
    const e = await engine({ maxRetries: 3 });
    const t0 = performance.now();
    const r = await e.generate({ prompt: 'x', maxTokens: 2 });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(390);
    expect(r.outputTokenIds.length).toBe(2);
    server.set({ fault: '429', retryAfterS: 0, failTimes: Number.POSITIVE_INFINITY });
    const err = await faultOf((await engine({ maxRetries: 2 })).generate({ prompt: 'x' }));
    expect(err.code).toBe('rate_limited');
    expect(err.message).toMatch(/after 2 retries/);
  });
  it('429 with a Retry-After longer than the first-token timeout names the rate limiting (issue 47)', async () => {
    server.set({ fault: '429', retryAfterS: 5, failTimes: Number.POSITIVE_INFINITY });
    const err = await faultOf(
      (await engine({ firstTokenTimeoutMs: 300, maxRetries: 3 })).generate({ prompt: 'x' }),
    );
    // Before: a plain first-token 'timeout' that said nothing of the 429.
    expect(err.code).toBe('rate_limited');
    expect(err.message).toMatch(/sent no token within 0\.3 s \(first-token timeout\)/);
    expect(err.message).toMatch(
      /meanwhile 127\.0\.0\.1:\d+ rate-limited the request: HTTP 429 1 time\(s\), asking to wait 5\.0 s in all, Retry-After/,
    );
  });
  it('an answer that is no event stream says what it was (issue 47): an HTML page, a non-streamed JSON, choices null', async () => {
    const cases = [
      [
        'html',
        'protocol',
        /answered HTTP 200 with an HTML page \(Content-Type text\/html; charset=utf-8\) instead of an event stream: the base URL is probably not an OpenAI-compatible API .*began "<!doctype html>/,
      ],
      [
        'json-answer',
        'protocol',
        /answered with one non-streamed JSON completion instead of an event stream: it ignored "stream": true/,
      ],
      ['choices-null', 'protocol', /sent a chunk whose choices is null, not a list/],
    ] as const;
    for (const [fault, code, msg] of cases) {
      server.set({ fault });
      const err = await faultOf((await engine()).generate({ prompt: 'x' }));
      // Before: stream_cut "closed the connection early" (html, json) or "Cannot read properties of null".
      expect(err.code, `${fault}: ${err.message}`).toBe(code);
      expect(err.message).toMatch(msg);
      expect(err.message).not.toMatch(/closed the connection early|Cannot read properties/);
    }
  });
  it('5xx', async () => {
    server.set({ fault: '500' });
    const err = await faultOf((await engine()).generate({ prompt: 'x' }));
    expect(err.code).toBe('server_error');
    expect(err.message).toMatch(/HTTP 500.*Internal server error/);
  });
  const partialCases = [
    { fault: 'malformed', code: 'protocol', msg: /malformed stream line/ },
    { fault: 'cut', code: 'stream_cut', msg: /before data: \[DONE\]|broke/ },
    { fault: 'stall-mid', code: 'timeout', msg: /idle timeout/ },
  ] as const;
  for (const c of partialCases)
    it(`${c.fault}: ${c.code}, partial run kept and marked`, async () => {
      server.set({ fault: c.fault, faultAfterChunks: 3, delayMs: 5 });
      const e = await engine({ idleTimeoutMs: 300 });
      const err = await faultOf(runRemoteBench({ engine: e, plan: plan() }));
      expect(err).toBeInstanceOf(RemoteBenchError);
      expect(isEngineError(err, c.code)).toBe(true);
      expect(err.message).toMatch(c.msg);
      const result = (err as unknown as RemoteBenchError).result;
      expect(result.partial).toBe(true);
      expect(result.runs[0].partial).toBe(true);
      expect(result.runs[0].outputTokens).toBe(3);
      expect(result.runs[0].error?.code).toBe(c.code);
    });
  it('a server that streams past max_tokens: stops reading at max_tokens, protocol, partial kept', async () => {
    server.set({ fault: 'overrun', delayMs: 2 });
    const e = await engine();
    const t0 = performance.now();
    const err = await faultOf(runRemoteBench({ engine: e, plan: plan({ maxTokens: 8 }) }));
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(isEngineError(err, 'protocol')).toBe(true);
    expect(err.message).toMatch(/overran max_tokens: it kept streaming past the 8 token\(s\) asked for/);
    const run = (err as unknown as RemoteBenchError).result.runs[0];
    expect(run.partial).toBe(true);
    expect(run.outputTokens).toBe(8);
    expect(run.text).toBe(' tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
  }, 15_000);
  it('keep-alive comments (": ping") do not re-arm the idle timer: a pinging stall is an idle timeout', async () => {
    server.set({ fault: 'ping-mid', faultAfterChunks: 3, delayMs: 20 });
    const e = await engine({ idleTimeoutMs: 300 });
    const t0 = performance.now();
    const err = await faultOf(e.generate({ prompt: 'x', maxTokens: 8 }));
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(/idle timeout; keep-alive comments do not count/);
    expect(err.partial?.outputTokenIds.length).toBe(3);
    expect(err.partial?.finishReason).toBe('aborted');
  }, 15_000);
  it('the overall request deadline ends a stream that is slow but never stalls, partial kept', async () => {
    // A token every 100 ms never trips the idle timeout; 16 of them need 1.5 s, the deadline is 0.45 s.
    server.set({ firstDelayMs: 20, delayMs: 100 });
    const e = await engine({ requestTimeoutMs: 450 });
    const t0 = performance.now();
    const err = await faultOf(e.generate({ prompt: 'x', maxTokens: 16 }));
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(440);
    expect(ms).toBeLessThan(1400);
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(
      /did not finish the request within 0\.45 s \(request timeout; \d+ chunk\(s\) had arrived\)/,
    );
    const n = err.partial?.outputTokenIds.length ?? 0;
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThan(16);
  }, 15_000);
  it('first-token timeout', async () => {
    server.set({ fault: 'stall-first' });
    const e = await engine({ firstTokenTimeoutMs: 300 });
    const err = await faultOf(e.generate({ prompt: 'x' }));
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(/first-token timeout/);
    expect(err.partial).toBeUndefined();
  });
  it('abort ends the request as aborted', async () => {
    server.set({ delayMs: 50 });
    const e = await engine();
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 150);
    const r = await e.generate({ prompt: 'x', maxTokens: 16 }, undefined, ctl.signal);
    expect(r.finishReason).toBe('aborted');
  });
});

describe('GET /v1/models is under the timeouts and the abort (issue 47, item 4)', () => {
  it('the defaults: the first-token timeout (60 s) bounds the model list, the request timeout (600 s) too', () => {
    expect(DEFAULT_FIRST_TOKEN_TIMEOUT_MS).toBe(60_000);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBe(600_000);
  });
  for (const fault of ['stall-models', 'stall-models-body'] as const)
    it(`${fault}: a timeout naming the URL and the option to raise`, async () => {
      server.set({ fault });
      const t0 = performance.now();
      const err = await faultOf(
        new RemoteEngine({ baseUrl: server.url, model: 'test-model', firstTokenTimeoutMs: 300 }).load(),
      );
      const ms = performance.now() - t0;
      expect(ms).toBeGreaterThanOrEqual(290);
      expect(ms).toBeLessThan(2000);
      expect(isEngineError(err, 'timeout')).toBe(true);
      expect(err.message).toBe(
        `${server.url}/v1/models did not answer within 0.3 s (first-token timeout, which bounds the model list too): raise firstTokenTimeoutMs to wait longer`,
      );
    });
  it('the request timeout when shorter, named as the caller names it', async () => {
    server.set({ fault: 'stall-models' });
    const e = new RemoteEngine({
      baseUrl: server.url,
      requestTimeoutMs: 200,
      timeoutOptionNames: { requestTimeoutMs: '--request-timeout-s' },
    });
    const err = await faultOf(e.listModels());
    expect(err.code).toBe('timeout');
    expect(err.message).toBe(
      `${server.url}/v1/models did not answer within 0.2 s (request timeout): raise --request-timeout-s to wait longer`,
    );
  });
  it('the caller’s abort ends the wait as aborted', async () => {
    server.set({ fault: 'stall-models' });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    const t0 = performance.now();
    const err = await faultOf(
      new RemoteEngine({ baseUrl: server.url }).load(undefined, { signal: ctl.signal }),
    );
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(err.code).toBe('aborted');
  });
  it('a server that answers is listed as before', async () => {
    server.set({ models: ['a', 'b'] });
    expect(await new RemoteEngine({ baseUrl: server.url, firstTokenTimeoutMs: 300 }).listModels()).toEqual([
      'a',
      'b',
    ]);
  });
});

describe("a server's usage is checked against the request (issue 47, item 5)", () => {
  it("the slack: 16 completion tokens past max_tokens, 4096 prompt tokens past the prompt's bytes", () => {
    expect(USAGE_SLACK_TOKENS).toBe(16);
    expect(PROMPT_TEMPLATE_SLACK_TOKENS).toBe(4096);
  });
  const refused = [
    {
      usage: { prompt_tokens: 4, completion_tokens: 1e12 },
      msg: 'reported usage.completion_tokens = 1000000000000, but max_tokens asked for 8 (at most 24 accepted: max_tokens + 16)',
    },
    {
      usage: { prompt_tokens: 4, completion_tokens: 5e6 },
      msg: 'reported usage.completion_tokens = 5000000, but max_tokens asked for 8 (at most 24 accepted: max_tokens + 16)',
    },
    { usage: { prompt_tokens: 4, completion_tokens: 25 }, msg: 'reported usage.completion_tokens = 25, but' },
    {
      usage: { prompt_tokens: -5, completion_tokens: 8 },
      msg: 'reported usage.prompt_tokens = -5: not a non-negative integer',
    },
    {
      usage: { prompt_tokens: 4, completion_tokens: 2.5 },
      msg: 'reported usage.completion_tokens = 2.5: not a',
    },
    { usage: { prompt_tokens: '4', completion_tokens: 8 }, msg: 'reported usage.prompt_tokens = "4": not a' },
    {
      usage: { prompt_tokens: 1e300, completion_tokens: 8 },
      msg: 'reported usage.prompt_tokens = 1e+300: not a',
    },
    {
      // "Once upon a time": 16 bytes.
      usage: { prompt_tokens: 16 + 4096 + 1, completion_tokens: 8 },
      msg: 'reported usage.prompt_tokens = 4113 for a prompt of 16 UTF-8 byte(s) (at most 4112 accepted',
    },
    { usage: 7, msg: 'sent a usage that is not an object: 7' },
  ];
  for (const c of refused)
    it(`refused: ${JSON.stringify(c.usage)}`, async () => {
      server.set({ delayMs: 1, usageOverride: c.usage });
      const t0 = performance.now();
      const err = await faultOf(
        (await engine({ api: 'completions' })).generate({ prompt: 'Once upon a time', maxTokens: 8 }),
      );
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(isEngineError(err, 'protocol')).toBe(true);
      expect(err.message).toContain(`${new URL(server.url).host} ${c.msg}`);
      // What arrived is kept, counted by chunks: the server's number sized nothing.
      expect(err.partial?.outputTokenIds.length).toBe(8);
      expect(err.partial?.promptTokenIds.length).toBe(0);
      expect(err.partial?.usage).toBeUndefined();
    });
  it("accepted: the slack's edge, a zero and a usage without counts", async () => {
    server.set({ delayMs: 1, usageOverride: { prompt_tokens: 4112, completion_tokens: 24 } });
    const e = await engine({ api: 'completions' });
    const r = await e.generate({ prompt: 'Once upon a time', maxTokens: 8 });
    expect(r.outputTokenIds.length).toBe(24);
    expect(r.promptTokenIds.length).toBe(4112);
    server.set({ delayMs: 1, usageOverride: { prompt_tokens: 0, completion_tokens: null } });
    const r2 = await e.generate({ prompt: 'Once upon a time', maxTokens: 8 });
    expect(r2.tokenCount).toBe('chunks');
    expect(r2.outputTokenIds.length).toBe(8);
    expect(r2.usage).toEqual({ prompt_tokens: 0 });
  });
  it("a chat prompt is bounded by its roles' and contents' bytes (UTF-8, not characters)", async () => {
    // "user" (4) + "héllo" (6 bytes): at most 10 + 4096.
    server.set({ delayMs: 1, usageOverride: { prompt_tokens: 4107, completion_tokens: 2 } });
    const e = await engine();
    const err = await faultOf(e.chat({ messages: [{ role: 'user', content: 'héllo' }], maxTokens: 2 }));
    expect(err.message).toContain('usage.prompt_tokens = 4107 for a prompt of 10 UTF-8 byte(s)');
    server.set({ delayMs: 1, usageOverride: { prompt_tokens: 4106, completion_tokens: 2 } });
    expect(
      (await e.chat({ messages: [{ role: 'user', content: 'héllo' }], maxTokens: 2 })).promptTokenIds.length,
    ).toBe(4106);
  });
});

describe('one SSE line, event and chunk are bounded (issue 47, item 6)', () => {
  const sleepMs = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** The server stopped writing: the client cancelled the stream. */
  async function expectCancelled(bigChunkChars: number) {
    await sleepMs(100);
    const a = server.faultChars;
    await sleepMs(200);
    expect(server.faultChars).toBe(a);
    expect(a).toBeLessThan(bigChunkChars);
  }
  it('the limits: 4 Mi characters an event, 1024 characters a token', () => {
    expect(DEFAULT_MAX_EVENT_CHARS).toBe(4 * 1024 * 1024);
    expect(MAX_CHARS_PER_TOKEN).toBe(1024);
  });
  it('SseSizeGuard: lines across feeds, CR, LF and CRLF (split too), blank lines end events', () => {
    const g = new SseSizeGuard(10);
    expect(g.feed('data: 1234')).toBe(true); // 10: at the limit
    expect(g.feed('\n\n')).toBe(true);
    expect(g.feed('data:\r')).toBe(true);
    expect(g.feed('\ndata:\r\n')).toBe(true); // the split CRLF ends one line: 10 in this event
    expect(g.feed('\r\n')).toBe(true); // blank: a new event
    expect(g.feed('0123456789')).toBe(true);
    expect(g.feed('x')).toBe(false); // 11 on one line
    const e = new SseSizeGuard(10);
    expect(e.feed('abcd\nefgh\n')).toBe(true);
    expect(e.feed('ijk\n')).toBe(false); // 11 in one event, no line over 4
  });
  it("a chunk's text: (max_tokens + 16) × 1024 characters in all, one more is refused", () => {
    const line = (t: string) => JSON.stringify({ choices: [{ text: t }] });
    const s = new CompletionStream('h', 2);
    s.onData(line('x'.repeat(18 * 1024 - 1)));
    s.onData(line('y'));
    expect(s.protocolError).toBeUndefined();
    expect(s.chunks.length).toBe(2);
    const t = new CompletionStream('h', 2);
    t.onData(line('x'.repeat(18 * 1024 + 1)));
    expect(t.protocolError).toBe(
      'h sent a chunk of 18433 characters, taking the answer to 18433: more than max_tokens 2 allows (at most 18432 characters: 1024 a token for max_tokens + 16); stopped reading',
    );
  });
  it('a line that never ends, at the default limit: refused after 4 Mi characters, stream cancelled', async () => {
    const big = 200 * 1024 * 1024;
    server.set({ fault: 'big-chunk', bigChunkChars: big, delayMs: 1 });
    const t0 = performance.now();
    const err = await faultOf((await engine()).generate({ prompt: 'x', maxTokens: 8 }));
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(isEngineError(err, 'protocol')).toBe(true);
    expect(err.message).toBe(
      `${new URL(server.url).host} sent an SSE line or event longer than 4194304 characters (the limit, maxEventChars; a real event is one JSON chunk of a few hundred): stopped reading`,
    );
    expect(err.partial?.outputTokenIds.length).toBe(2);
    await expectCancelled(big);
  }, 15_000);
  for (const fault of ['big-chunk', 'long-event'] as const)
    it(`${fault}: past maxEventChars, a typed error naming the limit, stream cancelled`, async () => {
      // 64 MiB, more than the loopback's socket buffers hold: the server's writes stop when the client cancels.
      server.set({ fault, bigChunkChars: 64 * 1024 * 1024, delayMs: 1 });
      const err = await faultOf(
        (await engine({ maxEventChars: 65536 })).generate({ prompt: 'x', maxTokens: 8 }),
      );
      expect(err.code).toBe('protocol');
      expect(err.message).toMatch(
        /sent an SSE line or event longer than 65536 characters \(the limit, maxEventChars/,
      );
      await expectCancelled(64 * 1024 * 1024);
    });
  it('a 100,000-character chunk for max_tokens 17: refused (at most 33,792 characters)', async () => {
    server.set({ fault: 'big-chunk', bigChunkChars: 100_000, delayMs: 1 });
    const err = await faultOf((await engine()).generate({ prompt: 'x', maxTokens: 17 }));
    expect(err.code).toBe('protocol');
    expect(err.message).toContain(
      'sent a chunk of 100000 characters, taking the answer to 100010: more than max_tokens 17 allows (at most 33792 characters',
    );
    expect(err.partial?.text).toBe(' tok0 tok1');
  });
  it('the bodies read whole are bounded too: a model list at 16 Mi characters, an error body at 64 Ki', () => {
    expect(MAX_MODEL_LIST_CHARS).toBe(16 * 1024 * 1024);
    expect(MAX_ERROR_BODY_CHARS).toBe(64 * 1024);
  });
  it('a model list that never ends: refused after 16 Mi characters, the answer cancelled', async () => {
    const big = 200 * 1024 * 1024;
    server.set({ fault: 'huge-models', bigChunkChars: big });
    const t0 = performance.now();
    const err = await faultOf(new RemoteEngine({ baseUrl: server.url }).load());
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(err.code).toBe('protocol');
    expect(err.message).toBe(
      `${server.url}/v1/models sent more than 16777216 characters (the limit of a model list): stopped reading`,
    );
    await expectCancelled(big);
  }, 15_000);
  it('a long model list under the limit is read', async () => {
    server.set({ fault: 'huge-models', bigChunkChars: 28 * 2048 * 16 });
    const e = new RemoteEngine({ baseUrl: server.url, model: 'test-model' });
    await e.load();
    expect(e.models.length).toBe(2048 * 16 + 1);
  });
  it('an error body that never ends: 64 Ki characters read, the answer cancelled, the status reported', async () => {
    const big = 200 * 1024 * 1024;
    server.set({ fault: 'huge-error', bigChunkChars: big });
    const t0 = performance.now();
    const err = await faultOf((await engine()).generate({ prompt: 'x' }));
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(err.code).toBe('server_error');
    expect(err.message).toMatch(/failed with HTTP 500 \(the server said: Internal error: x{100}/);
    await expectCancelled(big);
  }, 15_000);
  it('maxEventChars must be a positive integer', () => {
    expect(() => new RemoteEngine({ baseUrl: server.url, maxEventChars: 0 })).toThrow(
      /maxEventChars must be/,
    );
  });
});

describe('the API key', () => {
  it('is sent as a bearer header and never appears in the result JSON', async () => {
    const key = 'sk-test-SECRET-1234567890';
    server.set({ apiKey: key });
    const e = await engine({ apiKey: key });
    const r = await runRemoteBench({ engine: e, plan: plan(), concurrency: [2] });
    const json = JSON.stringify(r);
    expect(json).not.toContain(key);
    expect(json).not.toContain('SECRET');
    expect(JSON.stringify(e)).not.toContain(key);
    expect(server.log.at(-1)?.auth).toBe(true);
  });
});

describe('structured output passes through to the server (issue 43)', () => {
  const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
  it('response_format for JSON, structured_outputs.grammar for a grammar, nothing for text; the answer as sent', async () => {
    server.set({ tokens: ['{"a":', ' 1}'] });
    const e = await engine({ api: 'chat' });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const cases: [GenerateRequest['responseFormat'], Record<string, unknown>][] = [
      [{ type: 'json_object' }, { response_format: { type: 'json_object' } }],
      [
        { type: 'json_schema', name: 'A', schema, strict: true },
        { response_format: { type: 'json_schema', json_schema: { name: 'A', schema, strict: true } } },
      ],
      [
        { type: 'json_schema', schema: JSON.stringify(schema) },
        { response_format: { type: 'json_schema', json_schema: { name: 'response', schema } } },
      ],
      [{ type: 'grammar', grammar: 'root ::= "x"' }, { structured_outputs: { grammar: 'root ::= "x"' } }],
    ];
    for (const [responseFormat, want] of cases) {
      const r = await e.chat({ messages, maxTokens: 8, responseFormat });
      expect(r.text).toBe('{"a": 1}');
      const body = server.bodies[server.bodies.length - 1];
      for (const [k, v] of Object.entries(want)) expect(body[k], k).toEqual(v);
      for (const k of ['response_format', 'structured_outputs'])
        if (!(k in want)) expect(body[k], `${k} absent`).toBeUndefined();
    }
    await e.chat({ messages, maxTokens: 8, responseFormat: { type: 'text' } });
    const last = server.bodies[server.bodies.length - 1];
    expect(last.response_format).toBeUndefined();
    expect(last.structured_outputs).toBeUndefined();
    server.set({});
  });

  it('a schema the server refuses (HTTP 400): invalid_argument with its message', async () => {
    server.set({ fault: '400' });
    const e = await engine({ api: 'chat' });
    const err = await faultOf(
      e.chat({
        messages: [{ role: 'user', content: 'hi' }],
        responseFormat: { type: 'json_schema', schema },
      }),
    );
    expect(isEngineError(err, 'invalid_argument')).toBe(true);
    expect(err.message).toMatch(/HTTP 400.*Invalid JSON schema/);
    server.set({});
  });
});

describe('tools pass through to the server; its parsed calls come back (issue 43)', () => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    },
  ];
  it('sends tools, tool_choice, tool messages in wire names; returns delta.tool_calls as toolCalls', async () => {
    server.set({ tokens: [], toolCalls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }] });
    const e = await engine({ api: 'chat' });
    const messages = [
      { role: 'user' as const, content: 'weather?' },
      {
        role: 'assistant' as const,
        content: '',
        toolCalls: [
          { id: 'c1', type: 'function' as const, function: { name: 'get_weather', arguments: '{}' } },
        ],
      },
      { role: 'tool' as const, content: '20 C', toolCallId: 'c1' },
    ];
    const r = await e.chat({ messages, tools, toolChoice: 'required', maxTokens: 8 });
    expect(r.toolCalls).toEqual([
      {
        id: 'chatcmpl-tool-0',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
      },
    ]);
    expect(r.text).toBe('');
    const body = server.bodies[server.bodies.length - 1];
    expect(body.tools).toEqual(tools);
    expect(body.tool_choice).toBe('required');
    expect(body.messages).toEqual([
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      },
      { role: 'tool', content: '20 C', tool_call_id: 'c1' },
    ]);
    server.set({});
  });

  it('the completions API refuses tools with unsupported', async () => {
    const e = await engine({ api: 'completions' });
    const err = await faultOf(e.chat({ messages: [{ role: 'user', content: 'x' }], tools }));
    expect(isEngineError(err, 'unsupported')).toBe(true);
  });
});

describe('a server that echoes the API key (issue 47, item 10, through the JS API)', () => {
  it('keeps the key out of the RemoteError of a 401, a 500 and a model list', async () => {
    const key = `sk-echo-${Math.random().toString(36).slice(2)}abcdef`;
    // A proxy's debug answer: the request's Authorization header in the error message.
    const { createServer } = await import('node:http');
    let status = 401;
    const echo = createServer((req, res) => {
      res.writeHead(req.url?.endsWith('/models') ? (status === 401 ? 200 : status) : status, {
        'content-type': 'application/json',
      });
      res.end(
        req.url?.endsWith('/models') && status === 401
          ? JSON.stringify({ data: [{ id: 'm' }] })
          : JSON.stringify({ error: { message: `bad header: ${req.headers.authorization}` } }),
      );
    });
    await new Promise<void>((ok) => echo.listen(0, '127.0.0.1', ok));
    const url = `http://127.0.0.1:${(echo.address() as { port: number }).port}`;
    try {
      const e = new RemoteEngine({ baseUrl: url, model: 'm', apiKey: key });
      await e.load();
      const unauthorized = await faultOf(e.generate({ prompt: 'x', maxTokens: 2 }));
      expect(unauthorized.code).toBe('unauthorized');
      expect(unauthorized.message).toContain('(the server said: bad header: Bearer [redacted])');
      status = 500;
      const failed = await faultOf(e.chat({ messages: [{ role: 'user', content: 'x' }], maxTokens: 2 }));
      expect(failed.code).toBe('server_error');
      const list = await faultOf(e.listModels());
      for (const err of [unauthorized, failed, list]) expect(err.message).not.toContain(key.slice(3));
    } finally {
      await new Promise((ok) => echo.close(ok));
    }
  });
});
