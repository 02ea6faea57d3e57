/**
 * `withOpenAI` against the remote client's wire-format fixtures: the OpenAI-compatible test server
 * (src/testing/openai-server.ts, vLLM's streaming format, the same one src/remote/*.test.ts use). Its raw chunks
 * pass the shared shape check (src/testing/openai-shapes.ts) that ours pass, ours have the same keys and
 * value types chunk for chunk (apart from the differences named below), and the remote backend behind
 * `withOpenAI` gives the server's text, finish reason and usage, with its faults' codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteEngine } from '../remote/engine.ts';
import { type OpenAiTestServer, startOpenAiServer } from '../testing/openai-server.ts';
import { chatCompletionChunkProblems, chatCompletionProblems, skeleton } from '../testing/openai-shapes.ts';
import { isEngineError } from './errors.ts';
import { type ChatCompletionChunk, withOpenAI } from './openai.ts';

let server: OpenAiTestServer;
beforeAll(async () => {
  server = await startOpenAiServer();
});
afterAll(async () => {
  await server.close();
});

const MESSAGES = [{ role: 'user' as const, content: 'Once upon a time' }];

/** The server's own chunks for one streamed request (the fixture), parsed from its SSE. */
async function rawChunks(body: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test-model', messages: MESSAGES, stream: true, ...body }),
  });
  const text = await res.text();
  const data = text
    .split('\n\n')
    .map((e) => e.trim())
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  expect(data.at(-1)).toBe('[DONE]');
  return data.slice(0, -1).map((d) => JSON.parse(d));
}

async function remote() {
  const e = withOpenAI(new RemoteEngine({ baseUrl: server.url, model: 'test-model' }));
  await e.load();
  return e;
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>) {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

/** Drops the keys OpenAI's reference has and vLLM's fixture does not, or the reverse, named here. */
function withoutKeys(o: unknown, path: string[]): unknown {
  const c = structuredClone(o) as Record<string, unknown>;
  let at: Record<string, unknown> = c;
  for (const k of path.slice(0, -1))
    at = (Array.isArray(at[k]) ? (at[k] as unknown[])[0] : at[k]) as typeof at;
  delete at[path.at(-1) as string];
  return c;
}

describe('the wire fixtures (src/testing/openai-server.ts, vLLM’s format)', () => {
  it('pass the shared shape check, as ours do', async () => {
    server.set({ delayMs: 1, firstDelayMs: 1 });
    const raw = await rawChunks({ max_tokens: 5, stream_options: { include_usage: true } });
    expect(raw.length).toBe(1 + 5 + 1 + 1); // role, five tokens, finish, usage
    for (const c of raw) expect(chatCompletionChunkProblems(c), JSON.stringify(c)).toEqual([]);
    // The check is not vacuous: a chunk with a wrong field fails it.
    expect(chatCompletionChunkProblems({ ...raw[1], created: Date.now() })).toEqual([
      'created looks like milliseconds, not seconds',
    ]);
    expect(chatCompletionChunkProblems({ ...raw[1], object: 'chat.completion' })).toHaveLength(1);
    expect(
      chatCompletionChunkProblems({ ...raw[1], choices: [{ delta: {}, finish_reason: 'abort' }] }),
    ).toEqual([
      'choices[0].index is missing',
      'choices[0].index must be 0',
      'choices[0].finish_reason must be null or one of stop, length, tool_calls, content_filter, function_call',
    ]);
  });

  it('ours have the same keys and value types, chunk for chunk', async () => {
    server.set({ delayMs: 1, firstDelayMs: 1 });
    const engine = await remote();
    const raw = await rawChunks({ max_tokens: 5 });
    const ours = await collect(
      await engine.chat.completions.create({ messages: MESSAGES, max_tokens: 5, stream: true }),
    );
    expect(ours.length).toBe(raw.length);
    // Role chunk and content chunks: identical skeletons.
    for (let i = 0; i < raw.length - 1; i++)
      expect(skeleton(ours[i]), `chunk ${i}`).toEqual(skeleton(raw[i]));
    // The finish chunk: vLLM adds its `stop_reason` extension and an empty `content`; OpenAI sends `delta: {}`.
    const rawFinish = withoutKeys(withoutKeys(raw.at(-1), ['choices', 'stop_reason']), [
      'choices',
      'delta',
      'content',
    ]);
    expect(skeleton(ours.at(-1))).toEqual(skeleton(rawFinish));
    // With include_usage: the usage chunk is the same; ours also put `usage: null` on the other chunks, as
    // OpenAI's reference says ("All other chunks will also include a usage field, but with a null value"),
    // where vLLM leaves the field out.
    const rawU = await rawChunks({ max_tokens: 5, stream_options: { include_usage: true } });
    const oursU = await collect(
      await engine.chat.completions.create({
        messages: MESSAGES,
        max_tokens: 5,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(skeleton(oursU.at(-1))).toEqual(skeleton(rawU.at(-1)));
    expect(oursU.at(-1)?.usage).toEqual(rawU.at(-1)?.usage);
    expect(oursU.length).toBe(rawU.length);
    for (let i = 0; i < rawU.length - 2; i++) {
      expect(oursU[i].usage, `chunk ${i}`).toBeNull();
      expect(skeleton(withoutKeys(oursU[i], ['usage'])), `chunk ${i}`).toEqual(skeleton(rawU[i]));
    }
  });
});

describe('the remote backend behind withOpenAI', () => {
  it('gives the server’s text, finish reason, usage and model; streaming gives the same text', async () => {
    server.set({ delayMs: 1, firstDelayMs: 1, tokensPerChunk: 2 });
    const engine = await remote();
    const r = await engine.chat.completions.create({
      model: 'test-model',
      messages: MESSAGES,
      max_tokens: 5,
    });
    expect(chatCompletionProblems(r)).toEqual([]);
    expect(r.model).toBe('test-model');
    expect(r.choices[0].message.content).toBe(' tok0 tok1 tok2 tok3 tok4');
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage).toEqual({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    const chunks = await collect(
      await engine.chat.completions.create({
        messages: MESSAGES,
        max_tokens: 5,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(r.choices[0].message.content);
    expect(chunks.at(-1)?.usage).toEqual(r.usage);
    const all = await engine.chat.completions.create({ messages: MESSAGES, max_tokens: 16 });
    expect(all.choices[0].finish_reason).toBe('stop');
  });

  it('stop strings cut the remote text too (done on this side) and end the request', async () => {
    server.set({ delayMs: 5, firstDelayMs: 1 });
    const engine = await remote();
    const r = await engine.chat.completions.create({ messages: MESSAGES, max_tokens: 16, stop: [' tok3'] });
    expect(r.choices[0].message.content).toBe(' tok0 tok1 tok2');
    expect(r.choices[0].finish_reason).toBe('stop');
    expect(r.usage.completion_tokens).toBe(4);
  });

  it('server faults keep their codes; an abort is "aborted"', async () => {
    const engine = await remote();
    const code = async (p: () => Promise<unknown>) =>
      p().then(
        () => 'resolved',
        (e) => (isEngineError(e) ? e.code : String(e)),
      );
    server.set({ fault: '500' });
    expect(await code(() => engine.chat.completions.create({ messages: MESSAGES }))).toBe('server_error');
    server.set({ fault: 'cut', faultAfterChunks: 2, delayMs: 1, firstDelayMs: 1 });
    expect(
      await code(async () =>
        collect(await engine.chat.completions.create({ messages: MESSAGES, stream: true })),
      ),
    ).toBe('stream_cut');
    server.set({ delayMs: 20, firstDelayMs: 1 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 60);
    expect(
      await code(() =>
        engine.chat.completions.create({ messages: MESSAGES, max_tokens: 16 }, { signal: ctl.signal }),
      ),
    ).toBe('aborted');
  });
});
