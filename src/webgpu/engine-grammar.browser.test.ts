/**
 * Structured output through the WebGPU engine (stories260K): the mask applied on the GPU (kernels/mask.ts
 * between the output matmul and the argmax or the GPU sampler) gives the same tokens as the CPU path that
 * reads the logits back and masks them on the host (`returnLogits`, `sampling: 'cpu'`); outputs under
 * random-ish schemas parse and validate with ajv; a grammar that allows one string produces it; a bad
 * schema or grammar fails with invalid_argument before any token, and the engine still works after;
 * with speculative decoding by lookup, greedy output is the constrained loop's token for token.
 * The bulk of the schema checks runs on the CPU in model/grammar.test.ts.
 */
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { withOpenAI } from '../core/openai.ts';
import type { GenerateRequest, ToolDefinition } from '../core/types.ts';
import { type GgufMetadataEntry, kv, writeGguf } from '../gguf/writer.ts';
import { openModelSource } from '../library/opener.ts';
import { randomLlamaParts } from '../model/random-model.ts';
import { BYTE_TO_CHAR } from '../model/tokenizer/unicode.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';

const MODEL_URL = stories260kUrl();

const SCHEMAS: Record<string, unknown>[] = [
  {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 6 },
      age: { type: 'integer', minimum: -20, maximum: 120 },
      tags: { type: 'array', items: { enum: ['a', 'bc', 'd'] }, maxItems: 3 },
    },
    required: ['name', 'age', 'tags'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: {
      ok: { type: 'boolean' },
      inner: {
        type: 'object',
        properties: {
          color: { enum: ['red', 'green', null] },
          n: { type: 'integer', minimum: 0, maximum: 9 },
        },
        required: ['color', 'n'],
        additionalProperties: false,
      },
    },
    required: ['ok', 'inner'],
    additionalProperties: false,
  },
  { type: 'array', items: { type: 'integer', minimum: 0, maximum: 99 }, minItems: 1, maxItems: 4 },
];

describe('structured output in the WebGPU engine', () => {
  const gpu = new WebGpuEngine({ openModel: openModelSource });
  const cpu = new WebGpuEngine({ openModel: openModelSource, sampling: 'cpu' });
  const plain: GenerateRequest = {
    prompt: 'Once upon a time',
    maxTokens: 24,
    ignoreEos: true,
    temperature: 0,
  };
  let plainIds: number[];
  beforeAll(async () => {
    await gpu.load({ url: MODEL_URL }, { contextLength: 256 });
    await cpu.load({ url: MODEL_URL }, { contextLength: 256 });
    plainIds = (await gpu.generate(plain)).outputTokenIds; // before any constrained request
  });
  afterAll(async () => {
    await gpu.dispose();
    await cpu.dispose();
  });

  const base: GenerateRequest = { prompt: 'Once upon a time', maxTokens: 120 };

  it('outputs under JSON schemas parse and validate (ajv), greedy and sampled, as the CPU path picks them', async () => {
    const ajv = new Ajv({ strict: false });
    for (const [i, schema] of SCHEMAS.entries()) {
      const validate = ajv.compile(schema);
      for (const params of [
        { temperature: 0 },
        { temperature: 1.3, seed: i },
        { temperature: 0.8, topK: 20, seed: 9 },
      ]) {
        const req: GenerateRequest = { ...base, ...params, responseFormat: { type: 'json_schema', schema } };
        const a = await gpu.generate(req);
        const what = `${JSON.stringify(schema)} ${JSON.stringify(params)}: ${JSON.stringify(a.text)}`;
        expect(a.finishReason, what).toBe('stop');
        expect(a.formatComplete, what).toBe(true);
        expect(validate(JSON.parse(a.text)), `${what} ${ajv.errorsText(validate.errors)}`).toBe(true);
        // The host-masked path: logits read back, masked on the CPU, picked by the CPU sampler.
        const b = await (params.temperature ? cpu : gpu).generate({
          ...req,
          returnLogits: params.temperature === 0,
        });
        expect(b.outputTokenIds, what).toEqual(a.outputTokenIds);
      }
    }
  });

  it('withOpenAI: response_format json_schema gives content that validates, streamed or not', async () => {
    const schema = SCHEMAS[0];
    const validate = new Ajv({ strict: false }).compile(schema);
    const client = withOpenAI(gpu);
    const params = {
      messages: [{ role: 'user' as const, content: 'Once upon a time' }],
      max_tokens: 120,
      temperature: 0.7,
      seed: 1,
      response_format: {
        type: 'json_schema' as const,
        json_schema: { name: 'person', schema, strict: true },
      },
    };
    const r = await client.chat.completions.create(params);
    expect(r.choices[0].finish_reason).toBe('stop');
    expect(validate(JSON.parse(r.choices[0].message.content ?? ''))).toBe(true);
    let streamed = '';
    for await (const c of await client.chat.completions.create({ ...params, stream: true }))
      streamed += c.choices[0]?.delta.content ?? '';
    expect(streamed).toBe(r.choices[0].message.content);
  });

  it('a grammar that allows exactly one string produces it', async () => {
    const want = 'Lily saw a big red ball.';
    for (const temperature of [0, 1.5]) {
      const r = await gpu.generate({
        ...base,
        temperature,
        seed: 5,
        responseFormat: { type: 'grammar', grammar: `root ::= ${JSON.stringify(want)}` },
      });
      expect(r.text).toBe(want);
      expect(r.finishReason).toBe('stop');
    }
  });

  it('formatComplete: whole where the grammar may end, false when max tokens cut it mid-value, absent unconstrained', async () => {
    const digits = { type: 'grammar' as const, grammar: 'root ::= ("yes" | "no") " " [0-9]+' };
    const whole = await gpu.generate({ prompt: 'Tell me', maxTokens: 12, responseFormat: digits });
    expect(whole.text).toMatch(/^(yes|no) [0-9]+$/);
    expect([whole.finishReason, whole.formatComplete]).toEqual(['length', true]);
    const cut = await gpu.generate({ prompt: 'Tell me', maxTokens: 1, responseFormat: digits });
    expect([cut.finishReason, cut.formatComplete]).toEqual(['length', false]);
    const json = await gpu.generate({ ...base, maxTokens: 3, responseFormat: { type: 'json_object' } });
    expect(() => JSON.parse(json.text)).toThrow();
    expect([json.finishReason, json.formatComplete]).toEqual(['length', false]);
    // The host-masked path says the same.
    const host = await cpu.generate({
      prompt: 'Tell me',
      maxTokens: 12,
      temperature: 0.5,
      seed: 3,
      responseFormat: digits,
    });
    expect(host.text).toMatch(/^(yes|no) [0-9]+$/);
    expect(host.formatComplete).toBe(true);
    expect((await gpu.generate({ ...base, maxTokens: 2 })).formatComplete).toBeUndefined();
  });

  it('a bad grammar or schema, tools without a tool template: invalid_argument before any token; the engine still generates after', async () => {
    for (const responseFormat of [
      { type: 'grammar' as const, grammar: 'root ::= ("a" ' },
      { type: 'json_schema' as const, schema: { type: 'nonsense' } },
    ]) {
      let tokens = 0;
      const e = await gpu.generate({ ...base, responseFormat }, () => tokens++).catch((x: unknown) => x);
      expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
      expect(tokens).toBe(0);
    }
    // stories260K has no chat template, so no tool support.
    let tokens = 0;
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    const e = await gpu
      .chat({ messages: [{ role: 'user', content: 'x' }], tools }, () => tokens++)
      .catch((x: unknown) => x);
    expect(isEngineError(e, 'invalid_argument') && /no tool support/.test(e.message), String(e)).toBe(true);
    expect(tokens).toBe(0);
    const r = await gpu.generate({ ...base, maxTokens: 8, ignoreEos: true });
    expect(r.outputTokenIds.length).toBe(8);
  });

  it('with drafting by lookup: greedy output is constrained greedy decoding’s, sampled output validates', async () => {
    const ajv = new Ajv({ strict: false });
    // JSON in the prompt gives the lookup n-grams to draft from (its keys, its punctuation).
    const prompt =
      'Once upon a time {"name":"Lily","age":7,"tags":["a","bc"]} {"ok":true,"inner":{"color":"red","n":3}}';
    let drafted = 0;
    let accepted = 0;
    for (const [i, schema] of SCHEMAS.entries()) {
      const validate = ajv.compile(schema);
      const req: GenerateRequest = { prompt, maxTokens: 80, responseFormat: { type: 'json_schema', schema } };
      const plainOut = await gpu.generate({ ...req, temperature: 0 });
      for (const draftMax of [1, 3, 6]) {
        const spec = await gpu.generate({ ...req, temperature: 0, draft: { type: 'lookup', draftMax } });
        const what = `schema ${i}, draftMax ${draftMax}: ${JSON.stringify(spec.text)}`;
        expect(spec.outputTokenIds, what).toEqual(plainOut.outputTokenIds);
        expect([spec.finishReason, spec.formatComplete], what).toEqual([plainOut.finishReason, true]);
        const s = spec.speculative!;
        // Each pass keeps its accepted drafts plus one token of its own; the first token is the prefill's.
        expect(s.targetPasses + s.accepted, what).toBe(spec.outputTokenIds.length - 1);
        drafted += s.drafted;
        accepted += s.accepted;
      }
      const sampled = await gpu.generate({ ...req, temperature: 1.2, seed: i, draft: { type: 'lookup' } });
      const what = `schema ${i} sampled: ${JSON.stringify(sampled.text)}`;
      expect(sampled.finishReason, what).toBe('stop');
      expect(validate(JSON.parse(sampled.text)), `${what} ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
    expect(accepted).toBeGreaterThan(10);
    expect(accepted).toBeLessThan(drafted);
  });

  it('unconstrained greedy decode is unchanged after constrained requests', async () => {
    await gpu.generate({ ...base, responseFormat: { type: 'json_object' }, maxTokens: 10 });
    expect((await gpu.generate(plain)).outputTokenIds).toEqual(plainIds);
  });
});

/** A Hermes/Qwen-style template: the tools as JSON in the system turn, calls in <tool_call> blocks. */
const HERMES =
  "{%- if tools %}{{ '<|im_start|>system\\n# Tools\\n<tools>' }}{%- for t in tools %}{{ t | tojson }}{%- endfor %}" +
  '{{ \'</tools>\\nReturn calls as <tool_call>\\n{"name": <name>, "arguments": <args>}\\n</tool_call><|im_end|>\\n\' }}{%- endif %}' +
  "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

/** A random-weight byte-level BPE model (every byte a token) whose GGUF carries {@link HERMES}. */
function hermesModel(): Blob {
  const merges = ['Ġ a', 'Ġ t', 'h e', 'Ġt he', 'i n', 'e r'];
  const tokens = [...BYTE_TO_CHAR, ...merges.map((m) => m.replace(' ', '')), '<|im_start|>', '<|im_end|>'];
  const types = tokens.map((_, i) => (i < tokens.length - 2 ? 1 : 3));
  const parts = randomLlamaParts({
    seed: 43,
    nLayers: 2,
    nEmbd: 32,
    nFF: 64,
    nHead: 4,
    nHeadKv: 2,
    nVocab: tokens.length,
    contextLength: 1024,
  });
  const metadata: GgufMetadataEntry[] = [
    ...parts.metadata.filter((e) => !e.key.startsWith('tokenizer.')),
    kv.string('tokenizer.ggml.model', 'gpt2'),
    kv.string('tokenizer.ggml.pre', 'qwen2'),
    kv.strings('tokenizer.ggml.tokens', tokens),
    kv.i32s('tokenizer.ggml.token_type', types),
    kv.strings('tokenizer.ggml.merges', merges),
    kv.u32('tokenizer.ggml.eos_token_id', tokens.length - 1),
    kv.bool('tokenizer.ggml.add_bos_token', false),
    kv.string('tokenizer.chat_template', HERMES),
  ];
  return new Blob([writeGguf({ metadata, tensors: parts.tensors }) as Uint8Array<ArrayBuffer>]);
}

describe('tool calls through the WebGPU engine (a Hermes-template model)', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  const params = {
    type: 'object',
    // ASCII by pattern: a random-weight byte-level model writes invalid UTF-8 inside free strings, which
    // xgrammar 0.1.27 lets through and the decoder shows as U+FFFD (see model/grammar.ts).
    properties: {
      city: { type: 'string', pattern: '^[a-z]{1,4}$' },
      days: { type: 'integer', minimum: 1, maximum: 7 },
    },
    required: ['city', 'days'],
    additionalProperties: false,
  };
  const tools: ToolDefinition[] = [
    { type: 'function', function: { name: 'get_weather', parameters: params } },
    { type: 'function', function: { name: 'get_time' } },
  ];
  const messages = [{ role: 'user' as const, content: 'Weather in Oslo?' }];
  beforeAll(async () => {
    await engine.load({ blob: hermesModel() }, { contextLength: 1024 });
  });
  afterAll(() => engine.dispose());

  it('required / named: the GPU-masked output is a call whose arguments validate (ajv)', async () => {
    const validate = new Ajv({ strict: false }).compile(params);
    for (const toolChoice of ['required', { type: 'function', function: { name: 'get_weather' } }] as const) {
      const r = await engine.chat({
        messages,
        tools,
        toolChoice,
        parallelToolCalls: false,
        maxTokens: 300,
        temperature: 1,
        seed: 4,
      });
      const what = `${JSON.stringify(toolChoice)}: ${JSON.stringify(r.text)}`;
      expect(r.finishReason, what).toBe('stop');
      expect(r.toolCalls?.length, what).toBe(1);
      const call = r.toolCalls?.[0];
      if (typeof toolChoice === 'object') expect(call?.function.name).toBe('get_weather');
      const args = JSON.parse(call?.function.arguments ?? 'null');
      if (call?.function.name === 'get_weather')
        expect(validate(args), `${what} ${call?.function.arguments}`).toBe(true);
      else expect(args, what).toBeTypeOf('object');
    }
  });

  it('withOpenAI: message.tool_calls and finish_reason tool_calls', async () => {
    const r = await withOpenAI(engine).chat.completions.create({
      messages,
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 300,
      seed: 2,
    });
    expect(r.choices[0].finish_reason, JSON.stringify(r.choices[0].message)).toBe('tool_calls');
    const calls = r.choices[0].message.tool_calls ?? [];
    expect(calls.map((c) => c.function.name)).toEqual(['get_weather']);
    expect(calls[0].id).toMatch(/^call_/);
  });

  it('an unknown tool in tool_choice: invalid_argument before any token', async () => {
    let tokens = 0;
    const e = await engine
      .chat({ messages, tools, toolChoice: { type: 'function', function: { name: 'nope' } } }, () => tokens++)
      .catch((x: unknown) => x);
    expect(isEngineError(e, 'invalid_argument') && /not among the tools/.test(e.message), String(e)).toBe(
      true,
    );
    expect(tokens).toBe(0);
  });
});
