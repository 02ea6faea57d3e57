/**
 * `withOpenAI` (src/core/openai.ts) over a scripted fake Engine: the objects field by field, stream deltas
 * concatenating to the non-stream content over random scripts, include_usage, parameter mapping and
 * refusals, stop strings, aborts (signal, controller, leaving `for await`), and engine errors keeping their
 * codes.
 */
import { describe, expect, it } from 'vitest';
import { chatCompletionChunkProblems, chatCompletionProblems } from '../testing/openai-shapes.ts';
import { EngineError, type EngineErrorCode, isEngineError } from './errors.ts';
import {
  type ChatCompletionChunk,
  type ChatCompletionCreateParamsBase,
  type ChatCompletionStream,
  mapChatCompletionParams,
  StopFilter,
  withOpenAI,
} from './openai.ts';
import { inApiTerms } from './openai-request.ts';
import type {
  ChatRequest,
  Engine,
  EngineStats,
  FinishReason,
  GenerateResult,
  ModelInfo,
  ModelSource,
  TokenEvent,
  ToolCall,
} from './types.ts';
import { validateChatRequest } from './validate.ts';

interface Script {
  /** Output token texts; generation ends with 'stop' after the last one unless maxTokens comes first. */
  tokens: string[];
  /** ms between tokens (0: a microtask). */
  delayMs: number;
  /** Throw this code after this many tokens. */
  failAfter?: { tokens: number; code: EngineErrorCode };
  /** The result's text differs from the tokens' (an engine that flushes a last piece). */
  finalText?: string;
  /** Tool calls the result carries (its text then the content without their markup). */
  toolCalls?: ToolCall[];
}

/** A deterministic Engine: one generation at a time, like ours. */
class FakeEngine implements Engine {
  script: Script = { tokens: [' Hello', ' world', '!'], delayMs: 0 };
  requests: ChatRequest[] = [];
  busy = false;
  /** Set when a generation saw its signal aborted. */
  abortedRuns = 0;
  readonly extra = 'kept';
  ping() {
    return this.extra;
  }

  async load(_source?: ModelSource): Promise<ModelInfo> {
    return {
      name: 'fake-model',
      architecture: 'llama',
      nParams: 1,
      nLayers: 1,
      nEmbd: 1,
      nVocab: 1,
      contextLength: 64,
      weightBytes: 0,
      tensorTypes: [],
    };
  }
  async generate(): Promise<GenerateResult> {
    throw new EngineError('invalid_argument', 'not used');
  }
  async chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal) {
    if (this.busy)
      throw new EngineError('invalid_argument', 'a generation is already running on this engine');
    this.busy = true;
    this.requests.push(req);
    try {
      const s = this.script;
      const prompt = req.messages.flatMap((m) => m.content.split(/\s+/).filter(Boolean));
      const out: number[] = [];
      let text = '';
      let finish: FinishReason = 'stop';
      for (const t of s.tokens) {
        if (out.length >= (req.maxTokens ?? 128)) {
          finish = 'length';
          break;
        }
        if (s.failAfter && out.length === s.failAfter.tokens)
          throw new EngineError(s.failAfter.code, `scripted ${s.failAfter.code}`);
        await new Promise((r) => (s.delayMs ? setTimeout(r, s.delayMs) : queueMicrotask(() => r(0))));
        if (signal?.aborted) {
          this.abortedRuns++;
          finish = 'aborted';
          break;
        }
        out.push(out.length);
        text += t;
        onToken?.({ tokenId: out.length - 1, text: t, tMs: performance.now() });
      }
      if (s.failAfter && out.length === s.failAfter.tokens && finish !== 'aborted')
        throw new EngineError(s.failAfter.code, `scripted ${s.failAfter.code}`);
      return {
        promptTokenIds: prompt.map((_, i) => i),
        outputTokenIds: out,
        text: finish === 'aborted' ? text : (s.finalText ?? text),
        finishReason: finish,
        tStartMs: 0,
        tokenTimesMs: out.map(() => 0),
        ...(s.toolCalls ? { toolCalls: s.toolCalls } : {}),
      };
    } finally {
      this.busy = false;
    }
  }
  async tokenize(): Promise<number[]> {
    return [];
  }
  async detokenize(): Promise<string> {
    return '';
  }
  async stats(): Promise<EngineStats> {
    return {};
  }
  async unload(): Promise<void> {}
}

async function setup(script: Partial<Script> = {}) {
  const fake = new FakeEngine();
  fake.script = { ...fake.script, ...script };
  const engine = withOpenAI(fake);
  await engine.load({ url: 'fake' });
  return { fake, engine };
}

const USER = [{ role: 'user' as const, content: 'Once upon a time' }];

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

const joined = (chunks: ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

async function codeOf(p: Promise<unknown> | (() => Promise<unknown>)): Promise<EngineErrorCode | string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (isEngineError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
  throw new Error('expected an EngineError');
}

/** A seeded PRNG (mulberry32), so a failing random script can be reproduced. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('chat.completions.create, non-streaming', () => {
  it('returns a chat.completion in OpenAI’s shape, field by field', async () => {
    const { engine } = await setup();
    const before = Math.floor(Date.now() / 1000);
    const r = await engine.chat.completions.create({ model: 'anything', messages: USER, max_tokens: 16 });
    expect(Object.keys(r).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
    expect(r.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(r.object).toBe('chat.completion');
    expect(r.created).toBeGreaterThanOrEqual(before);
    expect(r.created).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(r.model).toBe('fake-model');
    expect(r.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: ' Hello world!', refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ]);
    expect(r.usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(chatCompletionProblems(r)).toEqual([]);
    expect(chatCompletionProblems(JSON.parse(JSON.stringify(r)))).toEqual([]);
  });

  it('max_tokens ends with finish_reason "length"', async () => {
    const { engine } = await setup();
    const r = await engine.chat.completions.create({ messages: USER, max_tokens: 2 });
    expect(r.choices[0].message.content).toBe(' Hello world');
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage.completion_tokens).toBe(2);
  });

  it('the model name comes from the engine when it was loaded elsewhere, or from the option', async () => {
    const fake = new FakeEngine() as FakeEngine & { modelId?: string };
    fake.modelId = 'Llama-3.2-1B-Instruct-q4f32_1-MLC';
    expect((await withOpenAI(fake).chat.completions.create({ messages: USER })).model).toBe(fake.modelId);
    expect(
      (await withOpenAI(fake, { model: 'mine' }).chat.completions.create({ messages: USER })).model,
    ).toBe('mine');
    expect((await withOpenAI(new FakeEngine()).chat.completions.create({ messages: USER })).model).toBe(
      'unknown',
    );
  });

  it('keeps the engine: other members, the Engine chat method, one engine underneath', async () => {
    const { fake, engine } = await setup();
    expect(engine.extra).toBe('kept');
    expect(engine.ping()).toBe('kept');
    expect(engine.ping).toBe(engine.ping);
    const r = await engine.chat({ messages: USER });
    expect(r.text).toBe(' Hello world!');
    expect(fake.requests).toHaveLength(1);
    expect(typeof engine.chat.completions.create).toBe('function');
  });
});

describe('chat.completions.create, streaming', () => {
  it('sends the role chunk, content deltas, then the finish chunk; no usage field without include_usage', async () => {
    const { engine } = await setup();
    const stream = await engine.chat.completions.create({ messages: USER, stream: true });
    const chunks = await collect(stream);
    const id = chunks[0].id;
    expect(id).toMatch(/^chatcmpl-/);
    for (const c of chunks) {
      expect(chatCompletionChunkProblems(c)).toEqual([]);
      expect(c.id).toBe(id);
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.created).toBe(chunks[0].created);
      expect(c.model).toBe('fake-model');
      expect('usage' in c).toBe(false);
    }
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: ' Hello' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: ' world' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: '!' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }],
    ]);
  });

  it('include_usage: usage null on every chunk, then a last chunk with empty choices and the counts', async () => {
    const { engine } = await setup();
    const chunks = await collect(
      await engine.chat.completions.create({
        messages: USER,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 2,
      }),
    );
    const last = chunks.at(-1) as ChatCompletionChunk;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 });
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('length');
    for (const c of chunks) expect(chatCompletionChunkProblems(c)).toEqual([]);
  });

  it('deltas concatenate to exactly the non-stream content (random scripts, stops and lengths)', async () => {
    const rand = rng(21);
    const alphabet = ['a', 'b', ' ', '\n', 'é', '日本', '🙂', ''];
    for (let run = 0; run < 60; run++) {
      const n = Math.floor(rand() * 12);
      const tokens = Array.from({ length: n }, () =>
        Array.from(
          { length: Math.floor(rand() * 4) },
          () => alphabet[Math.floor(rand() * alphabet.length)],
        ).join(''),
      );
      const stops = rand() < 0.5 ? [] : ['ab', 'b\n', '日本'].slice(0, 1 + Math.floor(rand() * 3));
      const maxTokens = 1 + Math.floor(rand() * 14);
      const { engine } = await setup({ tokens });
      const params = { messages: USER, max_tokens: maxTokens, stop: stops };
      const whole = await engine.chat.completions.create(params);
      const chunks = await collect(
        await engine.chat.completions.create({
          ...params,
          stream: true,
          stream_options: { include_usage: true },
        }),
      );
      const label = JSON.stringify({ run, tokens, stops, maxTokens });
      expect(joined(chunks), label).toBe(whole.choices[0].message.content);
      expect(chunks.at(-1)?.usage, label).toEqual(whole.usage);
      expect(chunks.at(-2)?.choices[0].finish_reason, label).toBe(whole.choices[0].finish_reason);
      // No empty content deltas past the role chunk; no stop string in the output.
      for (const c of chunks.slice(1, -2)) expect(c.choices[0].delta.content, label).not.toBe('');
      for (const s of stops) expect(whole.choices[0].message.content, label).not.toContain(s);
      // Without stop strings, the content is the engine's text up to max_tokens.
      if (stops.length === 0)
        expect(whole.choices[0].message.content).toBe(tokens.slice(0, maxTokens).join(''));
    }
  });

  it('passes on a last piece that only the result’s text carries', async () => {
    const { engine } = await setup({ tokens: ['a', 'b'], finalText: 'abc' });
    const chunks = await collect(await engine.chat.completions.create({ messages: USER, stream: true }));
    expect(joined(chunks)).toBe('abc');
  });

  it('a stream is iterated once', async () => {
    const { engine } = await setup();
    const stream = await engine.chat.completions.create({ messages: USER, stream: true });
    await collect(stream);
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/already iterated/);
  });
});

describe('parameters', () => {
  it('maps OpenAI’s names to the engine’s request, with OpenAI’s defaults', async () => {
    const { fake, engine } = await setup();
    await engine.chat.completions.create({ messages: USER });
    expect(fake.requests[0]).toEqual({ messages: USER, temperature: 1, topP: 1 });
    await engine.chat.completions.create({
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'one' },
            { type: 'text', text: 'two' },
          ],
        },
        { role: 'assistant', content: 'ok' },
      ],
      max_completion_tokens: 7,
      temperature: 0,
      top_p: 0.9,
      seed: 42,
      top_k: 40,
      min_p: 0.05,
      repetition_penalty: 1.1,
      n: 1,
      logprobs: false,
      tools: [],
      frequency_penalty: 0,
      presence_penalty: null,
      response_format: { type: 'text' },
      user: 'u1',
      metadata: { a: 'b' },
      store: false,
    });
    expect(fake.requests[1]).toEqual({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'one\ntwo' },
        { role: 'assistant', content: 'ok' },
      ],
      maxTokens: 7,
      temperature: 0,
      topP: 0.9,
      seed: 42,
      topK: 40,
      minP: 0.05,
      repetitionPenalty: 1.1,
    });
    // Issue 47 item 11: contents are text unless the caller opts in to special-token parsing.
    expect(mapChatCompletionParams({ messages: USER }).req.parseSpecialInContent).toBeUndefined();
    expect(
      mapChatCompletionParams({ messages: USER, parse_special_in_content: true }).req.parseSpecialInContent,
    ).toBe(true);
    expect(() => mapChatCompletionParams({ messages: USER, parse_special_in_content: 'yes' })).toThrow(
      /^parse_special_in_content must be true or false, got "yes"$/,
    );
    expect(mapChatCompletionParams({ messages: USER, stop: 'x' }).stops).toEqual(['x']);
    expect(mapChatCompletionParams({ messages: USER, stop: null }).stops).toEqual([]);
  });

  it('maps tools, tool_choice, parallel_tool_calls and tool messages to the engine’s names', () => {
    const tools = [
      { type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } },
    ];
    const { req } = mapChatCompletionParams({
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', content: 'ok', tool_call_id: 'c1' },
      ],
      tools,
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
    });
    expect(req.tools).toEqual(tools);
    expect(req.toolChoice).toEqual({ type: 'function', function: { name: 'f' } });
    expect(req.parallelToolCalls).toBe(false);
    expect(req.messages).toEqual([
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', content: 'ok', toolCallId: 'c1' },
    ]);
  });

  it('tool calls come back as message.tool_calls / delta.tool_calls with finish_reason tool_calls', async () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{"a":1}' } };
    const { engine: client } = await setup({
      tokens: ['<tool_call>{"name": "f"', ', "arguments": {"a": 1}}</tool_call>'],
      finalText: '',
      toolCalls: [call],
    });
    const params = { messages: USER, tools: [{ type: 'function' as const, function: { name: 'f' } }] };
    const r = await client.chat.completions.create(params);
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].message).toEqual({
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [call],
    });
    const deltas: unknown[] = [];
    for await (const c of await client.chat.completions.create({ ...params, stream: true }))
      deltas.push(c.choices[0]?.delta);
    // The call's markup never streams as content; the call comes whole, after the role chunk.
    expect(deltas).toEqual([{ role: 'assistant', content: '' }, { tool_calls: [{ index: 0, ...call }] }, {}]);
  });

  it('maps response_format to the engine’s responseFormat', () => {
    const map = (response_format: unknown) =>
      mapChatCompletionParams({ messages: USER, response_format }).req;
    expect(map({ type: 'text' }).responseFormat).toBeUndefined();
    expect(map(null).responseFormat).toBeUndefined();
    expect(map({ type: 'json_object' }).responseFormat).toEqual({ type: 'json_object' });
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    expect(
      map({ type: 'json_schema', json_schema: { name: 'A', schema, strict: true } }).responseFormat,
    ).toEqual({
      type: 'json_schema',
      name: 'A',
      schema,
      strict: true,
    });
    expect(map({ type: 'json_object', schema: '{"type":"array"}' }).responseFormat).toEqual({
      type: 'json_schema',
      schema: '{"type":"array"}',
    });
    expect(map({ type: 'grammar', grammar: 'root ::= "x"' }).responseFormat).toEqual({
      type: 'grammar',
      grammar: 'root ::= "x"',
    });
  });

  const refusals: [string, Record<string, unknown>, RegExp][] = [
    ['n', { n: 2 }, /^n must be 1/],
    ['logprobs', { logprobs: true }, /^logprobs is not supported/],
    ['top_logprobs', { top_logprobs: 3 }, /^top_logprobs/],
    [
      'a custom tool',
      { tools: [{ type: 'custom', custom: { name: 'f' } }] },
      /^tools\[0\] must be \{type: "function"/,
    ],
    [
      'a tool_choice word',
      { tool_choice: 'sometimes' },
      /^tool_choice must be "auto", "none", "required" or/,
    ],
    ['functions', { functions: [{ name: 'f' }] }, /^functions/],
    ['frequency_penalty', { frequency_penalty: 0.5 }, /^frequency_penalty .*repetition_penalty/],
    ['presence_penalty', { presence_penalty: -1 }, /^presence_penalty/],
    ['logit_bias', { logit_bias: { 1: 5 } }, /^logit_bias/],
    ['a response_format type', { response_format: { type: 'xml' } }, /^response_format.type must be/],
    [
      'a json_schema without a name',
      { response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      /^response_format.json_schema.name must be/,
    ],
    [
      'a json_schema schema that is not an object',
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'str' } } },
      /^response_format.json_schema.schema must be a JSON Schema object/,
    ],
    [
      'an empty grammar',
      { response_format: { type: 'grammar', grammar: ' ' } },
      /^response_format.grammar must be/,
    ],
    [
      'a stray response_format field',
      { response_format: { type: 'text', schema: '{}' } },
      /^response_format.schema is not supported/,
    ],
    ['an unknown field', { best_of: 2 }, /^best_of is not supported/],
    [
      "the engine API's camelCase for OpenAI's field",
      { maxTokens: 3 },
      /^maxTokens is not a chat\.completions field \(did you mean "max_tokens"\?\)$/,
    ],
    ['camelCase topP', { topP: 0.5 }, /\(did you mean "top_p"\?\)$/],
    ['audio', { audio: { voice: 'x' } }, /^audio is not supported/],
    ['store', { store: true }, /^store/],
    [
      'temperature above 2',
      { temperature: 2.5 },
      /^temperature must be a finite number ≥ 0 and ≤ 2, got 2.5/,
    ],
    ['top_p 0', { top_p: 0 }, /^top_p must be/],
    ['max_tokens 0', { max_tokens: 0 }, /^max_tokens must be an integer ≥ 1/],
    ['max_tokens 1.5', { max_tokens: 1.5 }, /^max_tokens must be an integer/],
    ['both max_tokens that differ', { max_tokens: 2, max_completion_tokens: 3 }, /differ/],
    ['seed 0.5', { seed: 0.5 }, /^seed must be an integer/],
    ['an empty stop', { stop: [''] }, /^stop\[0\] must be a non-empty string/],
    ['a stop number', { stop: 5 }, /^stop must be a string or an array/],
    [
      'stream_options without stream',
      { stream_options: { include_usage: true } },
      /only allowed with stream/,
    ],
    [
      'empty messages',
      { messages: [] },
      /^messages must be a non-empty array of \{role, content\}, got an empty array$/,
    ],
    [
      "the engine API's draft",
      { draft: { type: 'lookup' } },
      /^draft is not a chat\.completions field: speculative decoding is asked for through the engine API \(engine\.chat/,
    ],
    [
      'a tool message without tool_call_id',
      { messages: [{ role: 'tool', content: 'x' }] },
      /tool_call_id must name the call/,
    ],
    [
      'a function message',
      { messages: [{ role: 'function', content: 'x', name: 'f' }] },
      /role "function" is not supported/,
    ],
    ['an unknown role', { messages: [{ role: 'narrator', content: 'x' }] }, /^messages\[0\]\.role must be/],
    ['a message name', { messages: [{ role: 'user', content: 'x', name: 'bob' }] }, /^messages\[0\]\.name/],
    [
      'an image part',
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      /^messages\[0\]\.content\[0\] must be a text part/,
    ],
    ['null content', { messages: [{ role: 'assistant', content: null }] }, /^messages\[0\]\.content/],
  ];
  for (const [what, extra, message] of refusals)
    it(`refuses ${what} with invalid_argument naming the field, before the engine runs`, async () => {
      const { fake, engine } = await setup();
      const params = { messages: USER, ...extra } as unknown as ChatCompletionCreateParamsBase;
      const e = await engine.chat.completions.create(params).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
      expect((e as Error).message).toMatch(message);
      expect(fake.requests).toHaveLength(0);
    });

  it('refuses request options other than signal', async () => {
    const { engine } = await setup();
    expect(await codeOf(engine.chat.completions.create({ messages: USER }, { timeout: 5 } as never))).toMatch(
      /^invalid_argument: request option timeout/,
    );
  });
});

describe('stop strings', () => {
  it('cuts before the stop string, never shows its start, stops the engine, counts tokens up to it', async () => {
    const { fake, engine } = await setup({ tokens: [' Hello', ' wor', 'ld', '!', ' more', ' text'] });
    const chunks = await collect(
      await engine.chat.completions.create({
        messages: USER,
        stream: true,
        stop: ['world', 'xyz'],
        stream_options: { include_usage: true },
      }),
    );
    const deltas = chunks.map((c) => c.choices[0]?.delta.content).filter((x) => x);
    expect(deltas).toEqual([' Hello', ' ']);
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(fake.abortedRuns).toBe(1);
    const r = await engine.chat.completions.create({ messages: USER, stop: 'world' });
    expect(r.choices[0].message.content).toBe(' Hello ');
    expect(r.choices[0].finish_reason).toBe('stop');
  });

  it('releases held-back text that never became a stop string', async () => {
    const { engine } = await setup({ tokens: ['a', 'wo', 'r'] });
    const r = await engine.chat.completions.create({ messages: USER, stop: ['world'] });
    expect(r.choices[0].message.content).toBe('awor');
    expect(r.choices[0].finish_reason).toBe('stop');
  });

  it('StopFilter: the earliest stop string wins; a prefix is held until decided', () => {
    const f = new StopFilter(['abc', 'bd']);
    expect(f.push('xa')).toEqual({ text: 'x', stopped: false });
    expect(f.push('b')).toEqual({ text: '', stopped: false });
    expect(f.push('d')).toEqual({ text: 'xa'.slice(1), stopped: true });
    const g = new StopFilter([]);
    expect(g.push('abc')).toEqual({ text: 'abc', stopped: false });
  });
});

describe('aborts and errors', () => {
  it('an aborted signal rejects the non-stream promise with EngineError("aborted") and stops the engine', async () => {
    const { fake, engine } = await setup({ tokens: Array(20).fill(' x'), delayMs: 5 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 30);
    expect(await codeOf(engine.chat.completions.create({ messages: USER }, { signal: ctl.signal }))).toMatch(
      /^aborted: /,
    );
    expect(fake.abortedRuns).toBe(1);
    expect(fake.busy).toBe(false);
    // A signal aborted before the call: rejected at once, the engine never runs.
    expect(await codeOf(engine.chat.completions.create({ messages: USER }, { signal: ctl.signal }))).toMatch(
      /^aborted: /,
    );
    expect(fake.requests).toHaveLength(1);
  });

  it('an aborted signal or the stream’s controller rejects the pending next() with "aborted"', async () => {
    for (const how of ['signal', 'controller'] as const) {
      const { fake, engine } = await setup({ tokens: Array(20).fill(' x'), delayMs: 5 });
      const ctl = new AbortController();
      const stream: ChatCompletionStream = await engine.chat.completions.create(
        { messages: USER, stream: true },
        { signal: ctl.signal },
      );
      const seen: string[] = [];
      const code = await codeOf(async () => {
        for await (const c of stream) {
          seen.push(c.choices[0]?.delta.content ?? '');
          if (seen.length === 3) (how === 'signal' ? ctl : stream.controller).abort();
        }
      });
      expect(code, how).toMatch(/^aborted: /);
      expect(seen.length, how).toBeGreaterThanOrEqual(3);
      expect(fake.abortedRuns, how).toBe(1);
    }
  });

  it('leaving for-await early aborts the generation and waits for the engine to be idle', async () => {
    const { fake, engine } = await setup({ tokens: Array(50).fill(' x'), delayMs: 5 });
    let n = 0;
    for await (const _ of await engine.chat.completions.create({ messages: USER, stream: true }))
      if (++n === 3) break;
    expect(fake.abortedRuns).toBe(1);
    expect(fake.busy).toBe(false);
    // The engine is free for the next request at once.
    fake.script = { tokens: ['ok'], delayMs: 0 };
    expect((await engine.chat.completions.create({ messages: USER })).choices[0].message.content).toBe('ok');
  });

  it('an engine error keeps its code: the non-stream promise, the stream’s next()', async () => {
    for (const code of ['device_lost', 'context_overflow', 'not_loaded'] as const) {
      const after = code === 'not_loaded' ? 0 : 2;
      const { fake, engine } = await setup({
        tokens: Array(5).fill(' x'),
        failAfter: { tokens: after, code },
      });
      expect(await codeOf(engine.chat.completions.create({ messages: USER }))).toMatch(
        new RegExp(`^${code}: `),
      );
      const seen: string[] = [];
      const got = await codeOf(async () => {
        for await (const c of await engine.chat.completions.create({ messages: USER, stream: true }))
          seen.push(c.choices[0]?.delta.content ?? '');
      });
      expect(got).toMatch(new RegExp(`^${code}: `));
      expect(seen).toEqual(['', ...Array(after).fill(' x')]);
      expect(fake.busy).toBe(false);
    }
  });

  it('an engine result that says "aborted" on its own is an "aborted" rejection too', async () => {
    const fake = new FakeEngine();
    const engine = withOpenAI({
      ...fake,
      load: fake.load,
      generate: fake.generate,
      tokenize: fake.tokenize,
      detokenize: fake.detokenize,
      stats: fake.stats,
      unload: fake.unload,
      chat: async (req: ChatRequest) => ({ ...(await fake.chat(req)), finishReason: 'aborted' as const }),
    });
    expect(await codeOf(engine.chat.completions.create({ messages: USER }))).toMatch(/^aborted: /);
  });
});

describe('one request at a time, in order', () => {
  const said = (req: ChatRequest) => req.messages[0]?.content;

  it('creates made at once wait for each other: each runs whole, in the order made, streamed or not', async () => {
    const { fake, engine } = await setup({ tokens: [' a', ' b', ' c'], delayMs: 3 });
    const first = engine.chat.completions.create({ messages: [{ role: 'user', content: 'one' }] });
    // A stream takes its place when its iteration begins (the engine starts at the first next()).
    const stream = await engine.chat.completions.create({
      messages: [{ role: 'user', content: 'two' }],
      stream: true,
    });
    const second = collect(stream);
    const third = engine.chat.completions.create({ messages: [{ role: 'user', content: 'three' }] });
    const [a, b, c] = await Promise.all([first, second, third]);
    expect(a.choices[0].message.content).toBe(' a b c');
    expect(joined(b)).toBe(' a b c');
    expect(c.choices[0].message.content).toBe(' a b c');
    expect(fake.requests.map(said)).toEqual(['one', 'two', 'three']);
    expect(fake.busy).toBe(false);
  });

  it('an abort while waiting rejects with "aborted" and gives up the place; the engine never sees it', async () => {
    const { fake, engine } = await setup({ tokens: Array(6).fill(' x'), delayMs: 3 });
    const ctl = new AbortController();
    const first = engine.chat.completions.create({ messages: [{ role: 'user', content: 'one' }] });
    const waiting = engine.chat.completions.create(
      { messages: [{ role: 'user', content: 'two' }] },
      { signal: ctl.signal },
    );
    const third = engine.chat.completions.create({ messages: [{ role: 'user', content: 'three' }] });
    ctl.abort();
    expect(await codeOf(waiting)).toMatch(/^aborted: .*after 0 token/);
    expect((await first).choices[0].message.content).toBe(' x x x x x x');
    expect((await third).choices[0].message.content).toBe(' x x x x x x');
    expect(fake.requests.map(said)).toEqual(['one', 'three']);
  });

  it('a failed request lets the next one run; two wrappers of one engine share the queue', async () => {
    const { fake, engine } = await setup({ tokens: [' x', ' y'], delayMs: 3 });
    const chat = fake.chat.bind(fake);
    fake.chat = async (req, onToken, signal) => {
      const r = await chat(req, onToken, signal);
      if (said(req) === 'one') throw new EngineError('device_lost', 'scripted device_lost');
      return r;
    };
    const other = withOpenAI(fake);
    const failing = engine.chat.completions.create({ messages: [{ role: 'user', content: 'one' }] });
    const next = other.chat.completions.create({ messages: [{ role: 'user', content: 'two' }] });
    expect(await codeOf(failing)).toMatch(/^device_lost: /);
    expect((await next).choices[0].message.content).toBe(' x y');
    expect(fake.requests.map(said)).toEqual(['one', 'two']);
  });
});

describe('an engine refusal in the request’s terms', () => {
  /** A fake that checks requests as our engines do (src/core/validate.ts). */
  async function validating() {
    const { fake, engine } = await setup();
    const chat = fake.chat.bind(fake);
    fake.chat = (req, onToken, signal) => {
      validateChatRequest(req);
      return chat(req, onToken, signal);
    };
    return { fake, engine };
  }

  it('tool_choice "required" without tools names tool_choice, not toolChoice', async () => {
    const { fake, engine } = await validating();
    const got = await codeOf(engine.chat.completions.create({ messages: USER, tool_choice: 'required' }));
    expect(got).toBe('invalid_argument: tool_choice "required" needs tools');
    expect(fake.requests).toHaveLength(0);
  });

  it('a named tool_choice that is not among the tools names tool_choice', async () => {
    const { engine } = await validating();
    const got = await codeOf(
      engine.chat.completions.create({
        messages: USER,
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'g' } },
      }),
    );
    expect(got).toMatch(
      /^invalid_argument: tool_choice names the function "g", which is not among the tools \(f\)$/,
    );
  });

  it('inApiTerms: a schema refusal names the form that carried it; code, details and cause kept', () => {
    const e = new EngineError('invalid_argument', 'responseFormat.schema cannot be compiled: bad "objekt"', {
      details: { contextLength: 7 },
    });
    const js = inApiTerms(e, { response_format: { type: 'json_schema' } }) as EngineError;
    expect(js.message).toBe('response_format.json_schema.schema cannot be compiled: bad "objekt"');
    expect(js.code).toBe('invalid_argument');
    expect(js.details).toEqual({ contextLength: 7 });
    expect(js.cause).toBe(e);
    const webllm = inApiTerms(e, { response_format: { type: 'json_object', schema: '{}' } }) as EngineError;
    expect(webllm.message).toBe('response_format.schema cannot be compiled: bad "objekt"');
    const unsupported = new EngineError(
      'unsupported',
      'this engine has no grammar compiler for responseFormat',
    );
    expect((inApiTerms(unsupported, {}) as Error).message).toBe(
      'this engine has no grammar compiler for response_format',
    );
    // Words that merely contain a field name, other codes, and messages naming none come back as they were.
    const other = new EngineError('invalid_argument', 'maxTokensPerStep and topPx are not fields');
    expect(inApiTerms(other, {})).toBe(other);
    const lost = new EngineError('device_lost', 'toolChoice');
    expect(inApiTerms(lost, {})).toBe(lost);
  });
});
