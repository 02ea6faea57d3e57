/**
 * Structured output through the WebGPU engine (stories260K): the mask applied on the GPU (kernels/mask.ts
 * between the output matmul and the argmax or the GPU sampler) gives the same tokens as the CPU path that
 * reads the logits back and masks them on the host (`returnLogits`, `sampling: 'cpu'`); outputs under
 * random-ish schemas parse and validate with ajv; a grammar that allows one string produces it; a bad
 * schema or grammar fails with invalid_argument before any token, and the engine still works after.
 * The bulk of the schema checks runs on the CPU in model/grammar.test.ts.
 */
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { withOpenAI } from '../core/openai.ts';
import type { GenerateRequest } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
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

  it('a bad grammar or schema: invalid_argument before any token; the engine still generates after', async () => {
    for (const responseFormat of [
      { type: 'grammar' as const, grammar: 'root ::= ("a" ' },
      { type: 'json_schema' as const, schema: { type: 'nonsense' } },
    ]) {
      let tokens = 0;
      const e = await gpu.generate({ ...base, responseFormat }, () => tokens++).catch((x: unknown) => x);
      expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
      expect(tokens).toBe(0);
    }
    const r = await gpu.generate({ ...base, maxTokens: 8, ignoreEos: true });
    expect(r.outputTokenIds.length).toBe(8);
  });

  it('unconstrained greedy decode is unchanged after constrained requests', async () => {
    await gpu.generate({ ...base, responseFormat: { type: 'json_object' }, maxTokens: 10 });
    expect((await gpu.generate(plain)).outputTokenIds).toEqual(plainIds);
  });
});
