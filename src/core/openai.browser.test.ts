/**
 * `withOpenAI` over our real engine (the worker, as the page uses it) on stories260K, one load: greedy
 * `chat.completions.create` gives the engine's own greedy `chat()` text and token counts, streamed or not;
 * a stop string cuts that text; leaving `for await` early stops the generation and the engine answers the
 * next request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCompletionChunkProblems, chatCompletionProblems } from '../testing/openai-shapes.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { type ChatCompletionChunk, withOpenAI } from './openai.ts';
import type { GenerateResult, ModelInfo } from './types.ts';
import { WorkerEngine } from './worker-api.ts';

const MODEL_URL = new URL(stories260kUrl(), location.href).href;
const MESSAGES = [{ role: 'user' as const, content: 'Once upon a time there was a little girl' }];

describe('withOpenAI over our WebGPU engine (worker), stories260K', () => {
  const engine = withOpenAI(
    new WorkerEngine(
      new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
    ),
  );
  let ref: GenerateResult;
  let info: ModelInfo;
  beforeAll(async () => {
    info = await engine.load({ url: MODEL_URL }, { contextLength: 256 });
    expect(info.nVocab).toBe(512);
    ref = await engine.chat({ messages: MESSAGES, maxTokens: 16, temperature: 0 });
    expect(ref.outputTokenIds.length).toBeGreaterThan(0);
  });
  afterAll(() => engine.terminate());

  it('greedy create() gives chat()’s text and token counts', async () => {
    const r = await engine.chat.completions.create({
      model: 'ignored',
      messages: MESSAGES,
      max_tokens: 16,
      temperature: 0,
    });
    expect(chatCompletionProblems(r)).toEqual([]);
    // The loaded model's name (stories260K's general.name), not the `model` asked for.
    expect(r.model).toBe(info.name);
    expect(r.choices[0].message.content).toBe(ref.text);
    expect(r.choices[0].finish_reason).toBe(ref.finishReason);
    expect(r.usage).toEqual({
      prompt_tokens: ref.promptTokenIds.length,
      completion_tokens: ref.outputTokenIds.length,
      total_tokens: ref.promptTokenIds.length + ref.outputTokenIds.length,
    });
  });

  it('streaming gives the same text and usage', async () => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await engine.chat.completions.create({
      messages: MESSAGES,
      max_tokens: 16,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    }))
      chunks.push(c);
    for (const c of chunks) expect(chatCompletionChunkProblems(c)).toEqual([]);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(ref.text);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(ref.outputTokenIds.length);
    expect(chunks.at(-1)?.usage?.prompt_tokens).toBe(ref.promptTokenIds.length);
  });

  it('a stop string cuts the greedy text where it first appears', async () => {
    const words = ref.text.split(' ');
    const stop = ` ${words[Math.min(3, words.length - 1)]}`;
    const cut = ref.text.indexOf(stop);
    expect(cut).toBeGreaterThan(0);
    const r = await engine.chat.completions.create({
      messages: MESSAGES,
      max_tokens: 16,
      temperature: 0,
      stop,
    });
    expect(r.choices[0].message.content).toBe(ref.text.slice(0, cut));
    expect(r.choices[0].finish_reason).toBe('stop');
    expect(r.usage.completion_tokens).toBeLessThanOrEqual(ref.outputTokenIds.length);
  });

  it('leaving for-await early stops the generation; the next request runs', async () => {
    let n = 0;
    for await (const _ of await engine.chat.completions.create({
      messages: MESSAGES,
      max_tokens: 200,
      temperature: 0,
      stream: true,
    }))
      if (++n === 3) break;
    const stats = await engine.stats();
    // Two content deltas were read: the decode stopped a few tokens later (2 here), not at 200.
    expect(stats.lastDecode?.tokens).toBeLessThan(20);
    const r = await engine.chat.completions.create({ messages: MESSAGES, max_tokens: 16, temperature: 0 });
    expect(r.choices[0].message.content).toBe(ref.text);
  });
});
