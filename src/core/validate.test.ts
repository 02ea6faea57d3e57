/**
 * The engine API's one request check (src/core/validate.ts): each wrong type or range is
 * EngineError('invalid_argument') naming the field, and every backend (our WebGPU engine, remote servers,
 * WebLLM) refuses the same bad requests before doing anything. The strict number readers the command lines
 * use are checked here too.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openModelSource } from '../library/opener.ts';
import { RemoteEngine } from '../remote/engine.ts';
import { type OpenAiTestServer, startOpenAiServer } from '../testing/openai-server.ts';
import { WebGpuEngine } from '../webgpu/engine.ts';
import { WebLlmEngine } from '../webllm/engine.ts';
import { WllamaEngine } from '../wllama/engine.ts';
import { type EngineError, isEngineError } from './errors.ts';
import type { ChatRequest, Engine, GenerateRequest } from './types.ts';
import {
  chatGenerateFields,
  checkDraft,
  checkLoadOptions,
  checkModelSource,
  checkResponseFormat,
  checkTokenIds,
  checkTokenizeArgs,
  parseDecimal,
  parseInteger,
  validateChatRequest,
  validateGenerateRequest,
} from './validate.ts';

/** The EngineError `f` throws (synchronously or as a rejection); fails the test when it throws none. */
async function errorOf(f: () => unknown): Promise<EngineError> {
  try {
    await f();
  } catch (e) {
    expect(isEngineError(e), String(e)).toBe(true);
    return e as EngineError;
  }
  throw new Error('expected an EngineError');
}

const BAD_GENERATE: [string, unknown, RegExp][] = [
  ['prompt a number', { prompt: 12345 }, /^prompt must be a string, got 12345$/],
  [
    'temperature NaN',
    { prompt: 'x', temperature: Number.NaN },
    /^temperature must be a finite number ≥ 0, got NaN$/,
  ],
  ['temperature a string', { prompt: 'x', temperature: 'abc' }, /^temperature must be .*, got "abc"$/],
  ['temperature < 0', { prompt: 'x', temperature: -1 }, /^temperature must be a finite number ≥ 0, got -1$/],
  ['seed not an integer', { prompt: 'x', seed: 1.5 }, /^seed must be an integer, got 1\.5$/],
  ['seed a string', { prompt: 'x', seed: '7' }, /^seed must be an integer, got "7"$/],
  ['maxTokens a string', { prompt: 'x', maxTokens: '' }, /^maxTokens must be an integer ≥ 0, got ""$/],
  ['maxTokens Infinity', { prompt: 'x', maxTokens: Number.POSITIVE_INFINITY }, /^maxTokens must be/],
  ['topK negative', { prompt: 'x', topK: -2 }, /^topK must be an integer ≥ 0, got -2$/],
  ['topP 0', { prompt: 'x', topP: 0 }, /^topP must be a finite number > 0 and ≤ 1, got 0$/],
  ['minP > 1', { prompt: 'x', minP: 2 }, /^minP must be a finite number ≥ 0 and ≤ 1, got 2$/],
  [
    'repetitionPenalty 0',
    { prompt: 'x', repetitionPenalty: 0 },
    /^repetitionPenalty must be a finite number > 0/,
  ],
  ['ignoreEos a string', { prompt: 'x', ignoreEos: 'yes' }, /^ignoreEos must be true or false, got "yes"$/],
  ['promptTokenIds a string', { promptTokenIds: '1,2' }, /^promptTokenIds must be an array/],
  ['a token id -1', { promptTokenIds: [1, -1] }, /^promptTokenIds\[1\] must be an integer ≥ 0/],
  ['no object', null, /^the generate request must be an object, got null$/],
  [
    'max_tokens (snake_case)',
    { prompt: 'x', max_tokens: 3 },
    /^the generate request has no field "max_tokens" \(did you mean "maxTokens"\?\); it takes prompt, promptTokenIds, maxTokens,/,
  ],
  [
    'a misspelt field',
    { prompt: 'x', temprature: 0.5 },
    /^the generate request has no field "temprature"; it takes/,
  ],
  ['chat messages in a generate request', { messages: [] }, /^the generate request has no field "messages"/],
  [
    'prompt and promptTokenIds both',
    { prompt: 'x', promptTokenIds: [1, 2] },
    /^give prompt \(text\) or promptTokenIds \(token ids\), not both/,
  ],
];

const BAD_CHAT: [string, unknown, RegExp][] = [
  [
    'messages a string',
    { messages: 'hi' },
    /^messages must be a non-empty array of \{role, content\}, got "hi"$/,
  ],
  ['messages empty', { messages: [] }, /got an empty array$/],
  [
    'a bad role',
    { messages: [{ role: 'robot', content: 'x' }] },
    /^messages\[0\]\.role must be one of system, user, assistant, tool, got "robot"$/,
  ],
  [
    'an unknown tool in toolChoice',
    {
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f' } }],
      toolChoice: { type: 'function', function: { name: 'g' } },
    },
    /^toolChoice names the function "g", which is not among the tools \(f\)$/,
  ],
  [
    'a tool name with a space',
    { messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'a b' } }] },
    /^tools\[0\]\.function\.name must be 1-64 characters/,
  ],
  [
    'toolChoice required without tools',
    { messages: [{ role: 'user', content: 'x' }], toolChoice: 'required' },
    /^toolChoice "required" needs tools$/,
  ],
  [
    'toolCalls on a user message',
    { messages: [{ role: 'user', content: 'x', toolCalls: [] }] },
    /^messages\[0\]\.toolCalls must be an assistant's/,
  ],
  [
    'content a number',
    { messages: [{ role: 'user', content: 5 }] },
    /^messages\[0\]\.content must be a string, got 5$/,
  ],
  [
    'temperature NaN',
    { messages: [{ role: 'user', content: 'x' }], temperature: Number.NaN },
    /^temperature must be/,
  ],
  [
    'top_p (snake_case)',
    { messages: [{ role: 'user', content: 'x' }], top_p: 0.5 },
    /^the chat request has no field "top_p" \(did you mean "topP"\?\)/,
  ],
  [
    'max_completion_tokens',
    { messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 5 },
    /^the chat request has no field "max_completion_tokens" \(did you mean "maxTokens"\?\)/,
  ],
  [
    'a prompt in a chat request',
    { messages: [{ role: 'user', content: 'x' }], prompt: 'y' },
    /no field "prompt"/,
  ],
];

const BAD_SOURCE: [string, unknown, RegExp][] = [
  [
    'a string',
    '/models/a.gguf',
    /^the model source must be an object: .*, got "\/models\/a\.gguf" \(for a URL: load\(\{ url: "\/models\/a\.gguf" \}\)\)$/,
  ],
  ['nothing', undefined, /^the model source must be an object/],
  ['a number url', { url: 123 }, /^the model source's url must be a non-empty string, got 123$/],
  ['an empty url', { url: ' ' }, /^the model source's url must be a non-empty string/],
  [
    'no kind',
    { file: 'a.gguf' },
    /^the model source must have one of url, blob, path or synthetic, got none/,
  ],
  ['two kinds', { url: 'a', path: 'b' }, /got url and path/],
  ['a blob that is a string', { blob: 'a.gguf' }, /^the model source's blob must be a Blob or File/],
  [
    'parts not Blobs',
    { blob: new Blob([]), parts: ['x'] },
    /^the model source's parts must be an array of Blobs/,
  ],
];

describe('validateGenerateRequest / validateChatRequest', () => {
  it.each(BAD_GENERATE)('generate: %s → invalid_argument', async (_n, req, msg) => {
    const e = await errorOf(() => validateGenerateRequest(req));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(msg);
  });
  it.each(BAD_CHAT)('chat: %s → invalid_argument', async (_n, req, msg) => {
    const e = await errorOf(() => validateChatRequest(req));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(msg);
  });
  it('accepts good requests, defaults left unset', () => {
    expect(() => validateGenerateRequest({})).not.toThrow();
    expect(() =>
      validateGenerateRequest({
        prompt: 'x',
        maxTokens: 0,
        temperature: 0.7,
        seed: -1,
        topK: 40,
        topP: 1,
        minP: 0,
        repetitionPenalty: 1.1,
        repetitionLastN: -1,
        ignoreEos: true,
      }),
    ).not.toThrow();
    expect(() => validateGenerateRequest({ promptTokenIds: [1, 2, 3] })).not.toThrow();
    expect(() => validateChatRequest({ messages: [{ role: 'system', content: '' }] })).not.toThrow();
    // A field set to undefined is as if absent (spreads of optional settings).
    expect(() => validateGenerateRequest({ prompt: 'x', max_tokens: undefined })).not.toThrow();
  });
  it('a chat request less its chat fields is a generate request', () => {
    const chat: ChatRequest = {
      messages: [{ role: 'user', content: 'x' }],
      parseSpecialInContent: true,
      tools: [{ type: 'function', function: { name: 'f' } }],
      toolChoice: 'auto',
      parallelToolCalls: false,
      maxTokens: 4,
      temperature: 0.5,
      draft: { type: 'lookup' },
    };
    const gen = chatGenerateFields(chat);
    expect(gen).toEqual({ maxTokens: 4, temperature: 0.5, draft: { type: 'lookup' } });
    expect(() => validateGenerateRequest({ ...gen, promptTokenIds: [1] })).not.toThrow();
    expect(() => validateGenerateRequest({ ...chat, promptTokenIds: [1] })).toThrow(/no field "messages"/);
  });
});

describe('checkLoadOptions', () => {
  it('takes every LoadOptions field, undefined ones and none', () => {
    expect(() => checkLoadOptions(undefined)).not.toThrow();
    expect(() => checkLoadOptions({})).not.toThrow();
    const all = {
      contextLength: 256,
      batchSize: 32,
      onProgress: () => undefined,
      signal: new AbortController().signal,
      cache: true,
      defaultLimits: false,
      kvType: 'q8_0',
      kvTypeK: 'f32',
      kvTypeV: 'q4_0',
      draft: { url: '/d.gguf' },
      somethingUnset: undefined,
    };
    expect(() => checkLoadOptions(all)).not.toThrow();
  });

  it('names a case or underscore slip of a field', async () => {
    for (const [k, meant] of [
      ['KVTYPE', 'kvType'],
      ['batch_size', 'batchSize'],
      ['Default_Limits', 'defaultLimits'],
    ])
      expect((await errorOf(() => checkLoadOptions({ [k]: 1 }))).message).toContain(
        `have no field "${k}" (did you mean "${meant}"?)`,
      );
  });
});

describe('checkLoadOptions: values', () => {
  it('refuses sizes that are not positive integers, a callback that is not one, a signal that is not one', async () => {
    for (const [o, msg] of [
      [{ contextLength: 0 }, /^contextLength must be an integer ≥ 1, got 0$/],
      [{ contextLength: 2.5 }, /^contextLength must be an integer ≥ 1, got 2\.5$/],
      [{ contextLength: '100' }, /^contextLength must be an integer ≥ 1, got "100"$/],
      [{ batchSize: Number.NaN }, /^batchSize must be an integer ≥ 1, got NaN$/],
      [{ batchSize: -5 }, /^batchSize must be an integer ≥ 1, got -5$/],
      [{ batchSize: 2.5 }, /^batchSize must be/],
      [{ onProgress: 5 }, /^onProgress must be a function, got 5$/],
      [{ signal: {} }, /^signal must be an AbortSignal, got/],
    ] as const) {
      const e = await errorOf(() => checkLoadOptions(o));
      expect(e.code, JSON.stringify(o)).toBe('invalid_argument');
      expect(e.message).toMatch(msg);
    }
    const n = 1 + Math.floor(Math.random() * 4096);
    expect(() => checkLoadOptions({ contextLength: n, batchSize: n })).not.toThrow();
  });
});

describe('draft and responseFormat: nested fields', () => {
  it('a field a draft does not have is refused, naming the one meant', async () => {
    const e = await errorOf(() => checkDraft({ type: 'lookup', draft_max: 2 }));
    expect(e.message).toMatch(/^draft has no field "draft_max" \(did you mean "draftMax"\?\)/);
  });
  it("WebLLM's json_object schema and the OpenAI wire form say what the engine takes; unknown fields are named", async () => {
    const schema = { type: 'object' };
    expect((await errorOf(() => checkResponseFormat({ type: 'json_object', schema }))).message).toMatch(
      /takes no schema .*use \{type: 'json_schema', schema\}/,
    );
    expect(
      (await errorOf(() => checkResponseFormat({ type: 'json_schema', json_schema: { name: 'x', schema } })))
        .message,
    ).toMatch(/OpenAI wire form, which chat\.completions\.create takes/);
    expect(
      (await errorOf(() => checkResponseFormat({ type: 'grammar', grammar: 'root ::= "a"', x: 1 }))).message,
    ).toMatch(/^responseFormat has no field "x"; it takes type, grammar/);
    for (const ok of [
      { type: 'text' },
      { type: 'json_object' },
      { type: 'json_schema', schema, name: 'n', strict: true },
      { type: 'grammar', grammar: 'root ::= "a"' },
      { type: 'structural_tag', format: { type: 'const_string', value: 'a' } },
      { type: 'json_schema', schema: 'true' },
      { type: 'json_schema', schema: '{"type": "integer"}' },
    ])
      expect(() => checkResponseFormat(ok), JSON.stringify(ok)).not.toThrow();
  });
  it('a schema given as JSON text must be a schema (an object or a boolean), not any JSON value', async () => {
    for (const [text, shown] of [
      ['42', '42'],
      ['"object"', '"object"'],
      ['[{"type": "object"}]', 'an array'],
      ['null', 'null'],
    ]) {
      const e = await errorOf(() => checkResponseFormat({ type: 'json_schema', schema: text }));
      expect(e.code).toBe('invalid_argument');
      expect(e.message).toBe(
        `responseFormat.schema must be a JSON Schema (an object, or true/false), got ${shown}`,
      );
    }
  });
});

describe('checkModelSource', () => {
  it.each(BAD_SOURCE)('%s → invalid_argument', async (_n, source, msg) => {
    const e = await errorOf(() => checkModelSource(source));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(msg);
  });
  it('takes every form of a source', () => {
    for (const s of [
      { url: 'https://example.com/a.gguf' },
      { url: 'hf:owner/repo/a.gguf' },
      { blob: new Blob([new Uint8Array(4)]), name: 'a.gguf' },
      { blob: new Blob([]), parts: [new Blob([])] },
      { path: '/tmp/a.gguf' },
      { synthetic: 'stories260k-q8_0', seed: 3 },
    ])
      expect(() => checkModelSource(s), JSON.stringify(s)).not.toThrow();
  });
});

describe('strict number reading (command lines)', () => {
  it('reads decimals and integers, refuses what Number() would bend', () => {
    expect(parseDecimal('0.5')).toBe(0.5);
    expect(parseDecimal('-2')).toBe(-2);
    expect(parseDecimal('1e3')).toBe(1000);
    expect(parseDecimal('.5')).toBe(0.5);
    for (const s of ['', ' ', 'abc', 'NaN', 'Infinity', '0x10', ' 5', '5 ', '1,5', '1e999'])
      expect(parseDecimal(s), JSON.stringify(s)).toBeUndefined();
    expect(parseInteger('42')).toBe(42);
    expect(parseInteger('-3')).toBe(-3);
    for (const s of ['', '1.0', '1e3', '0x10', 'abc', '99999999999999999999'])
      expect(parseInteger(s), JSON.stringify(s)).toBeUndefined();
  });
});

describe('every backend refuses a bad request with invalid_argument', () => {
  let server: OpenAiTestServer;
  beforeAll(async () => {
    server = await startOpenAiServer({ delayMs: 1, firstDelayMs: 1 });
  });
  afterAll(() => server.close());

  const badGenerate = [
    { prompt: 12345 },
    { prompt: 'x', temperature: Number.NaN },
    { prompt: 'x', maxTokens: '8' },
  ];
  const badChat = [{ messages: 'hi' }, { messages: [{ role: 'user', content: 'x' }], seed: 'abc' }];

  /** The engines, each ready to generate (so a bad request is the only thing that can stop it). */
  async function engines(): Promise<[string, Engine][]> {
    const remote = new RemoteEngine({ baseUrl: server.url, model: 'test-model' });
    await remote.load();
    // WebLLM with a stand-in for its engine that would stream an answer to anything.
    const webllm = new WebLlmEngine();
    const answer = async () =>
      (async function* () {
        yield { choices: [{ text: 'ok', delta: { content: 'ok' } }] };
      })();
    (webllm as unknown as { mlc: unknown }).mlc = {
      completions: { create: answer },
      chat: { completions: { create: answer } },
      interruptGenerate() {},
      unload: async () => undefined,
    };
    // No model loaded: before the check it answered not_loaded, whatever the request.
    return [
      ['webgpu', new WebGpuEngine({ openModel: openModelSource })],
      ['remote', remote],
      ['webllm', webllm],
    ];
  }

  it('generate and chat of each backend', async () => {
    for (const [name, engine] of await engines()) {
      for (const req of badGenerate) {
        const e = await errorOf(() => engine.generate(req as unknown as GenerateRequest));
        expect(e.code, `${name} ${JSON.stringify(req)}: ${e.message}`).toBe('invalid_argument');
      }
      for (const req of badChat) {
        const e = await errorOf(() => engine.chat(req as unknown as ChatRequest));
        expect(e.code, `${name} ${JSON.stringify(req)}: ${e.message}`).toBe('invalid_argument');
      }
    }
    // And the remote engine still answers a good request afterwards.
    const remote = (await engines())[1][1];
    const r = await remote.generate({ prompt: 'x', maxTokens: 3 });
    expect(r.outputTokenIds.length).toBe(3);
  });

  it('load of each backend refuses a misspelt or unknown option before anything (a kvtype would load f16)', async () => {
    const makers: [string, () => Engine][] = [
      ['webgpu', () => new WebGpuEngine({ openModel: openModelSource })],
      ['remote', () => new RemoteEngine({ baseUrl: server.url, model: 'test-model' })],
      ['webllm', () => new WebLlmEngine()],
      ['wllama', () => new WllamaEngine()],
    ];
    const listed = server.log.length;
    for (const [name, make] of makers) {
      for (const [options, message] of [
        [
          { kvtype: 'q8_0' },
          /^the load options have no field "kvtype" \(did you mean "kvType"\?\); they take contextLength, /,
        ],
        [{ context_length: 512 }, /have no field "context_length" \(did you mean "contextLength"\?\)/],
        [{ threads: 4 }, /have no field "threads"; they take/],
        ['fast', /^the load options must be an object, got "fast"$/],
        [{ kvTypeV: 'q5_0' }, /^kvTypeV must be one of f16, f32, q8_0, q4_0, got "q5_0"$/],
        [{ defaultLimits: 'yes' }, /^defaultLimits must be true or false/],
      ] as const) {
        const e = await errorOf(() => make().load({ url: 'http://127.0.0.1:9/x.gguf' }, options as never));
        expect(e.code, `${name} ${JSON.stringify(options)}: ${e.message}`).toBe('invalid_argument');
        expect(e.message, name).toMatch(message);
      }
    }
    // The remote engine never listed the server's models: refused before any request.
    expect(server.log.length).toBe(listed);
  });

  it('remote: a timeout a timer cannot hold is refused when the engine is made', async () => {
    for (const cfg of [{ requestTimeoutMs: Number.NaN }, { idleTimeoutMs: 2 ** 31 }, { maxRetries: 1.5 }]) {
      const e = await errorOf(() => new RemoteEngine({ baseUrl: server.url, ...cfg }));
      expect(e.code, JSON.stringify(cfg)).toBe('invalid_argument');
    }
  });
});

describe('tokenize and detokenize arguments', () => {
  it('a string and a boolean; an array of integers', async () => {
    expect((await errorOf(() => checkTokenizeArgs(5, undefined))).message).toBe(
      'tokenize takes a string, got 5',
    );
    expect((await errorOf(() => checkTokenizeArgs('a', 'yes'))).message).toMatch(/^addBos must be/);
    expect((await errorOf(() => checkTokenIds('1,2'))).message).toMatch(
      /^detokenize takes an array of integer/,
    );
    expect((await errorOf(() => checkTokenIds([1, 2.5]))).code).toBe('invalid_argument');
    expect(() => checkTokenizeArgs('', true)).not.toThrow();
    expect(() => checkTokenIds([0, 7])).not.toThrow();
  });
});
