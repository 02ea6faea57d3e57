/**
 * Compile-time checks (run by `tsc --noEmit -p .`; nothing here executes): code written for the official
 * `openai` SDK or for WebLLM's `MLCEngine` type-checks against `withOpenAI(engine).chat.completions`.
 * - The SDK's and WebLLM's request types are accepted by `create` (streaming and not).
 * - Our results are assignable to the SDK's `ChatCompletion` and `ChatCompletionChunk`.
 * - `create` picks the right result from `stream`.
 * `openai` is a devDependency used only by this file (imports are types only).
 */
import type * as WebLLM from '@mlc-ai/web-llm';
import type OpenAI from 'openai';
import { createEngine } from '../index.ts';
import type { RemoteEngine } from '../remote/engine.ts';
import type { WebLlmEngine } from '../webllm/engine.ts';
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParamsBase,
  type ChatCompletionCreateParamsStreaming,
  type ChatCompletionStream,
  withOpenAI,
} from './openai.ts';
import type { Engine } from './types.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(_: T) => undefined;

export async function sdkCodeRunsUnchanged(engine: Engine, signal: AbortSignal): Promise<string> {
  const client = withOpenAI(engine);

  // Non-streaming, exactly as written for the SDK.
  const params: OpenAI.ChatCompletionCreateParamsNonStreaming = {
    model: 'gpt-4o-mini',
    messages: [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
    ],
    max_tokens: 16,
    temperature: 0,
    top_p: 1,
    seed: 1,
    stop: ['\n\n'],
  };
  const done: OpenAI.ChatCompletion = await client.chat.completions.create(params, { signal });
  const text: string | null = done.choices[0].message.content;
  const usage: OpenAI.CompletionUsage | undefined = done.usage;

  // Streaming, with usage.
  const sparams: OpenAI.ChatCompletionCreateParamsStreaming = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hi' }],
    stream: true,
    stream_options: { include_usage: true },
  };
  const stream = await client.chat.completions.create(sparams);
  let out = '';
  for await (const chunk of stream) {
    const c: OpenAI.ChatCompletionChunk = chunk;
    out += c.choices[0]?.delta?.content ?? '';
    if (c.usage) out += c.usage.total_tokens;
  }
  stream.controller.abort();

  // Inline literals (excess property checks apply) and the general params type.
  await client.chat.completions.create({ model: 'x', messages: [{ role: 'system', content: 's' }], n: 1 });
  const general: OpenAI.ChatCompletionCreateParams = params;
  await client.chat.completions.create(general);
  return `${text}${usage?.total_tokens}${out}`;
}

export async function webllmCodeRunsUnchanged(engine: Engine): Promise<void> {
  const client = withOpenAI(engine);
  const req: WebLLM.ChatCompletionRequestNonStreaming = {
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 8,
    temperature: 0,
  };
  const r = await client.chat.completions.create(req);
  const sreq: WebLLM.ChatCompletionRequestStreaming = {
    messages: [{ role: 'user', content: 'Hi' }],
    stream: true,
    stream_options: { include_usage: true },
  };
  const chunks: AsyncIterable<ChatCompletionChunk> = await client.chat.completions.create(sreq);
  // WebLLM's results carry WebLLM's own `usage.extra` figures; ours are OpenAI's shape, so only the
  // parts code reads are checked.
  const content: string | null = r.choices[0].message.content;
  for await (const c of chunks) void [content, c.choices[0]?.delta.content];
}

// `create` returns a completion without `stream`, a stream with `stream: true`.
declare const client: ReturnType<typeof withOpenAI<Engine>>;
declare const base: ChatCompletionCreateParamsBase;
declare const streaming: ChatCompletionCreateParamsStreaming;
export async function overloads(): Promise<void> {
  const a = await client.chat.completions.create({ messages: [] });
  assertType<Equal<typeof a, ChatCompletion>>(true);
  const b = await client.chat.completions.create(streaming);
  assertType<Equal<typeof b, ChatCompletionStream>>(true);
  const c = await client.chat.completions.create(base);
  assertType<Equal<typeof c, ChatCompletion | ChatCompletionStream>>(true);
  // @ts-expect-error a stream is not a completion
  const d: OpenAI.ChatCompletion = await client.chat.completions.create(streaming);
  // The engine's own chat method is still there.
  const e = await client.chat({ messages: [{ role: 'user', content: 'x' }] });
  void [d, e.text];
}

/**
 * README's "OpenAI-shaped API" example: the body word for word, between the markers (README imports
 * `createEngine` from 'webgpu-llm-bench' and `withOpenAI` from 'webgpu-llm-bench/openai'; here the same
 * symbols come from the source files, `./index.ts` and `./openai.ts`). e2e/package.spec.ts also compiles the
 * README's block as pasted against the packed package.
 */
export async function readmeExample(): Promise<void> {
  // --- README example start ---
  const out = document.body.appendChild(document.createElement('output'));
  const engine = withOpenAI(createEngine());
  await engine.load({ url: '/models/stories260K.gguf' });

  // Not streaming: one chat.completion.
  const r = await engine.chat.completions.create({
    messages: [{ role: 'user', content: 'Once upon a time' }],
    max_tokens: 32,
    temperature: 0,
  });
  console.log(r.choices[0].message.content, r.usage); // usage: {prompt_tokens, completion_tokens, total_tokens}

  // Streaming: chat.completion.chunk objects; with include_usage the last one has `choices: []` and usage.
  const ctl = new AbortController();
  const stream = await engine.chat.completions.create(
    {
      messages: [{ role: 'user', content: 'Once upon a time' }],
      stream: true,
      stream_options: { include_usage: true },
      stop: ['\n'],
    },
    { signal: ctl.signal },
  );
  for await (const chunk of stream) {
    out.textContent += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) console.log(chunk.usage);
  }
  await engine.terminate();
  // --- README example end ---
}

/** The same over WebLLM or a remote server (in this repository; the package exports only our engine). */
export async function readmeOthers(remote: RemoteEngine, webllm: WebLlmEngine): Promise<void> {
  const r2 = await withOpenAI(remote).chat.completions.create({
    messages: [{ role: 'user', content: 'Hi' }],
  });
  const r3 = await withOpenAI(webllm).chat.completions.create({
    messages: [{ role: 'user', content: 'Hi' }],
  });
  void [r2, r3];
}
