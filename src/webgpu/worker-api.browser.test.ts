/**
 * The real engine worker behind comlink, as the page and the CLI use it: same tokens as llama.cpp,
 * EngineError codes survive the boundary, cancellation through an AbortSignal.
 */
import { afterAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { EngineError } from '../core/errors.ts';
import { withOpenAI } from '../core/openai.ts';
import type { LoadProgress } from '../core/types.ts';
import { WorkerEngine } from '../core/worker-api.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';

/** Holds the page's thread for `ms` (a page busy drawing), so messages from the worker queue up. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
}

const MODEL_URL = new URL(stories260kUrl(), location.href).href;

describe('WorkerEngine (workers/engine.worker.ts over comlink)', () => {
  const engine = new WorkerEngine(
    new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
  );
  afterAll(() => engine.terminate());

  it('loads with progress and generates llama.cpp’s greedy tokens', async () => {
    const progress: LoadProgress[] = [];
    const info = await engine.load(
      { url: MODEL_URL },
      { contextLength: 256, onProgress: (p) => progress.push(p) },
    );
    expect(info.nVocab).toBe(512);
    const upload = progress.filter((p) => p.phase === 'upload');
    expect(upload.at(-1)?.bytesDone).toBe(upload.at(-1)?.bytesTotal);
    expect(upload.at(-1)?.bytesTotal).toBe(info.weightBytes);
    const c = golden.generation.cases[0];
    const streamed: number[] = [];
    const r = await engine.generate({ prompt: c.prompt, maxTokens: 32, ignoreEos: true }, (e) =>
      streamed.push(e.tokenId),
    );
    expect(r.promptTokenIds).toEqual(c.promptIds);
    expect(r.outputTokenIds).toEqual(c.outputIds.slice(0, 32));
    // Every token callback has reached the page when the result does (no wait here).
    expect(streamed).toEqual(r.outputTokenIds);
    const stats = await engine.stats();
    expect(stats.load?.totalMs).toBeGreaterThan(0);
    expect(stats.lastDecode?.tokens).toBe(31);
    // The load's description, kept on this side: withOpenAI wrapped after the load names the model
    // (it said "unknown": the worker engine had no modelInfo).
    expect(engine.modelInfo).toEqual(info);
    const openai = withOpenAI(engine);
    const reply = await openai.chat.completions.create({
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 2,
    });
    expect(reply.model).toBe(info.name);
    expect(info.name).not.toBe('unknown');
  });

  it('delivers every token callback before the result, also for chat and back-to-back requests', async () => {
    // Callbacks travel over their own MessagePort and the result over the worker's; a widget once
    // appended the last token after showing the final text. Short requests, one after another, each
    // checked the moment its promise settles.
    const c = golden.generation.cases[0];
    for (let i = 0; i < 12; i++) {
      const maxTokens = 2 + (i % 5) * 3;
      const seen: number[] = [];
      const texts: string[] = [];
      const req = { maxTokens, ignoreEos: true };
      const r =
        i % 2 === 0
          ? await engine.generate({ ...req, prompt: c.prompt }, (e) => {
              seen.push(e.tokenId);
              busy(3);
            })
          : await engine.chat({ ...req, messages: [{ role: 'user', content: c.prompt }] }, (e) => {
              seen.push(e.tokenId);
              texts.push(e.text);
              busy(3);
            });
      expect(seen, `request ${i}`).toEqual(r.outputTokenIds);
      expect(r.outputTokenIds).toHaveLength(maxTokens);
      if (i % 2 === 1) expect(texts.join('')).toBe(r.text);
      if (i % 2 === 0) expect(r.outputTokenIds).toEqual(c.outputIds.slice(0, maxTokens));
    }
  });

  it("chat's answer starts at its first word: the first token's space prefix is dropped, streamed and whole", async () => {
    const texts: string[] = [];
    const messages = [{ role: 'user' as const, content: 'Once upon a time there' }];
    const r = await engine.chat({ messages, maxTokens: 4 }, (e) => texts.push(e.text));
    // stories260K has no chat template: the answer continues the text, whose next token is "▁was".
    expect(r.text).toMatch(/^was\b/);
    expect(texts.join('')).toBe(r.text);
    // generate keeps that space: a continuation is joined to its prompt.
    const g = await engine.generate({ prompt: 'Once upon a time there', maxTokens: 4 });
    expect(g.outputTokenIds).toEqual(r.outputTokenIds);
    expect(g.text).toBe(` ${r.text}`);
  });

  it('keeps the EngineError code across the worker boundary', async () => {
    const long = Array.from({ length: 300 }, (_, i) => 3 + (i % 400));
    const err = await engine.generate({ promptTokenIds: long }).catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe('context_overflow');
  });

  it('structured output in the worker: a one-string grammar gives that string; a bad one keeps its code', async () => {
    const grammar = 'root ::= "Tim and Sue"';
    const r = await engine.generate({
      prompt: 'Once',
      maxTokens: 40,
      responseFormat: { type: 'grammar', grammar },
    });
    expect(r.text).toBe('Tim and Sue');
    expect(r.finishReason).toBe('stop');
    const err = await engine
      .generate({ prompt: 'Once', responseFormat: { type: 'grammar', grammar: 'root ::= (' } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe('invalid_argument');
  });

  it('cancels through an AbortSignal and stays usable', async () => {
    const ac = new AbortController();
    let n = 0;
    const r = await engine.generate(
      { prompt: 'Once upon a time', maxTokens: 200, ignoreEos: true },
      () => {
        if (++n === 3) ac.abort();
      },
      ac.signal,
    );
    expect(r.finishReason).toBe('aborted');
    expect(r.outputTokenIds.length).toBeLessThan(200);
    const again = await engine.generate({
      promptTokenIds: golden.generation.cases[1].promptIds,
      maxTokens: 8,
    });
    expect(again.outputTokenIds).toEqual(golden.generation.cases[1].outputIds.slice(0, 8));
  });

  it('honours a signal aborted before the call (generate, chat, scoreTokens), then runs exactly', async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await engine.generate(
      { prompt: 'Once upon a time', maxTokens: 200, ignoreEos: true },
      undefined,
      ac.signal,
    );
    // Nothing runs, as on the engine itself (it once prefilled and gave one token before the cancel came).
    expect(r.finishReason).toBe('aborted');
    expect(r.outputTokenIds).toEqual([]);
    const c = await engine.chat(
      { messages: [{ role: 'user', content: 'Hi' }], maxTokens: 200, ignoreEos: true },
      undefined,
      ac.signal,
    );
    expect(c.finishReason).toBe('aborted');
    expect(c.outputTokenIds).toEqual([]);
    const { promptIds, outputIds } = golden.generation.cases[1];
    const scored = await engine.scoreTokens([...promptIds, ...outputIds], ac.signal).then(
      () => 'resolved',
      (e: unknown) => `${(e as EngineError).code}: ${(e as Error).message}`,
    );
    expect(scored).toMatch(/^aborted/);
    const again = await engine.generate({ promptTokenIds: promptIds, maxTokens: 8 });
    expect(again.outputTokenIds).toEqual(outputIds.slice(0, 8));
  });
  it('a load that fails before the upload leaves the loaded model loaded, and modelInfo says so', async () => {
    const before = engine.modelInfo;
    expect(before?.nVocab).toBe(512);
    const missing = new URL('/no-such-model-here.gguf', location.href).href;
    const err = await engine.load({ url: missing }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect(['http_status', 'gguf_invalid']).toContain((err as EngineError).code);
    expect(engine.modelInfo).toEqual(before);
    const { promptIds, outputIds } = golden.generation.cases[1];
    const again = await engine.generate({ promptTokenIds: promptIds, maxTokens: 8 });
    expect(again.outputTokenIds).toEqual(outputIds.slice(0, 8));
  });
});

describe('WorkerEngine.terminate', () => {
  const worker = () =>
    new WorkerEngine(
      new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
    );
  /** The EngineError code a promise rejects with within `ms` ('pending' when it has not settled). */
  const settled = (p: Promise<unknown>, ms = 5000) =>
    Promise.race([
      p.then(
        () => 'resolved',
        (e) => (e instanceof EngineError ? e.code : `not an EngineError: ${e}`),
      ),
      new Promise<string>((r) => setTimeout(() => r('pending'), ms)),
    ]);

  it('settles a generation it interrupts, then refuses every call with not_loaded', async () => {
    const engine = worker();
    await engine.load({ url: MODEL_URL }, { contextLength: 256 });
    let tokens = 0;
    const gen = engine.generate({ prompt: 'Once', maxTokens: 250, ignoreEos: true }, () => tokens++);
    while (tokens < 2) await new Promise((r) => setTimeout(r, 10));
    expect(engine.modelInfo?.nVocab).toBe(512);
    await engine.terminate();
    expect(engine.modelInfo).toBeUndefined();
    // The unload before the end stops it ('not_loaded'), or the end does ('aborted'): never pending.
    expect(['aborted', 'not_loaded']).toContain(await settled(gen));
    for (const call of [
      () => engine.generate({ prompt: 'x' }),
      () => engine.chat({ messages: [{ role: 'user', content: 'x' }] }),
      () => engine.load({ url: MODEL_URL }),
      () => engine.tokenize('x'),
      () => engine.stats(),
    ])
      expect(await settled(call(), 1000)).toBe('not_loaded');
    expect(await settled(engine.terminate(), 1000)).toBe('resolved');
  });

  it('settles a load it interrupts', async () => {
    const engine = worker();
    const load = engine.load({ url: MODEL_URL }, { contextLength: 256 });
    await new Promise((r) => setTimeout(r, 50));
    await engine.terminate();
    // A load that finished before the end resolves; otherwise it is refused, never left pending.
    expect(['resolved', 'aborted', 'not_loaded']).toContain(await settled(load));
  });

  it('refuses a source that is not one, before the worker sees it', async () => {
    const engine = worker();
    try {
      for (const bad of ['/models/stories260K.gguf', { url: 123 }, undefined])
        expect(await settled(engine.load(bad as never), 1000)).toBe('invalid_argument');
      expect(await settled(engine.generate({ prompt: 'x', max_tokens: 3 } as never), 1000)).toBe(
        'invalid_argument',
      );
    } finally {
      await engine.terminate();
    }
  });
});
