/**
 * The Engine contract every backend runs (issue 48): the same requests, events, errors, abort and unload
 * behaviour whatever the backend, so the chat tab, the widget and the benchmark never ask which one they
 * hold. Each backend calls {@link describeEngineContract} from its own test file (Node or browser):
 * src/webgpu/contract.browser.test.ts, src/wllama/contract.browser.test.ts, src/remote/contract.test.ts.
 *
 * What it checks, against the request itself (not against a backend's own numbers): one `onToken` event
 * per output token, in order, all before the promise resolves, none after; the result's text is the
 * events' texts joined, its token times are the events' times, non-decreasing and after `tStartMs`;
 * `maxTokens` with `ignoreEos` gives exactly that many tokens and finishReason 'length'; a greedy request
 * repeated gives the same output; bad requests reject with EngineError 'invalid_argument' and leave the
 * engine usable; an abort before the request gives 'aborted' and no tokens, one during the stream
 * 'aborted' with fewer tokens than asked, and the next request works; before load and after unload,
 * requests reject with 'not_loaded', and unload twice is safe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import type { Engine, GenerateResult, ModelInfo, TokenEvent } from '../core/types.ts';

/** A backend under the contract. */
export interface ContractSubject {
  /** For the test names. */
  name: string;
  /** A new, unloaded engine (called in tests and hooks, never while tests are collected). */
  make(): Engine;
  /** Loads the test model into `engine`. */
  load(engine: Engine): Promise<ModelInfo>;
  /** A prompt the model continues for at least {@link ContractSubject.streamTokens} tokens. */
  prompt: string;
  /**
   * Output tokens a long request asks for (the abort test stops it after 2): at most what the backend can
   * give for `prompt` (the scripted server's token list).
   */
  streamTokens: number;
  /** The backend reports real token ids (false: -1, as a remote server's text stream has none). */
  tokenIds: boolean;
  /**
   * The engine answers before `load` (a remote engine made with a model name has nothing to load): the
   * before-load test then checks that it answers instead of rejecting with 'not_loaded'.
   */
  readyBeforeLoad?: boolean;
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    expect(isEngineError(e), String(e)).toBe(true);
    expect((e as EngineError).code, (e as Error).message).toBe(code);
    return e as EngineError;
  }
  throw new Error(`expected EngineError '${code}', but the promise resolved`);
}

/** Checks what every result must satisfy against the events streamed for it. */
function checkAgainstEvents(r: GenerateResult, events: TokenEvent[], tokenIds: boolean): void {
  expect(r.tokenTimesMs).toEqual(events.map((e) => e.tMs));
  expect(r.outputTokenIds).toHaveLength(events.length);
  if (tokenIds) {
    expect(r.outputTokenIds).toEqual(events.map((e) => e.tokenId));
    for (const id of r.outputTokenIds) expect(Number.isInteger(id) && id >= 0).toBe(true);
  }
  expect(r.text).toBe(events.map((e) => e.text).join(''));
  let prev = r.tStartMs;
  for (const t of r.tokenTimesMs) {
    expect(t).toBeGreaterThanOrEqual(prev);
    prev = t;
  }
}

/** Registers the contract's tests for one backend. */
export function describeEngineContract(s: ContractSubject): void {
  describe(`Engine contract: ${s.name}`, () => {
    it(
      s.readyBeforeLoad
        ? 'answers before load (nothing to load)'
        : 'rejects requests before load with not_loaded',
      async () => {
        const e = s.make();
        if (s.readyBeforeLoad) {
          const r = await e.generate({ prompt: s.prompt, maxTokens: 2, ignoreEos: true });
          expect(r.outputTokenIds).toHaveLength(2);
        } else {
          await rejectsWith(e.generate({ prompt: s.prompt, maxTokens: 2 }), 'not_loaded');
          await rejectsWith(
            e.chat({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 2 }),
            'not_loaded',
          );
        }
        await e.unload();
      },
    );

    describe('loaded', () => {
      let engine: Engine;
      beforeAll(async () => {
        engine = s.make();
        await s.load(engine);
      });
      afterAll(() => engine.unload());

      it('streams one event per token, in order, all before the result and none after', async () => {
        const events: TokenEvent[] = [];
        const n = Math.min(5, s.streamTokens);
        const r = await engine.generate({ prompt: s.prompt, maxTokens: n, ignoreEos: true }, (e) =>
          events.push(e),
        );
        const atResolve = events.length;
        expect(r.finishReason).toBe('length');
        expect(r.outputTokenIds).toHaveLength(n);
        checkAgainstEvents(r, events, s.tokenIds);
        await new Promise((res) => setTimeout(res, 50));
        expect(events).toHaveLength(atResolve);
      });

      it('gives the same greedy output for the same request', async () => {
        const req = { prompt: s.prompt, maxTokens: 4, ignoreEos: true, temperature: 0 };
        const a = await engine.generate(req);
        const b = await engine.generate(req);
        expect(b.text).toBe(a.text);
        expect(b.outputTokenIds).toEqual(a.outputTokenIds);
      });

      it('chats: streamed events match the result, at most maxTokens tokens', async () => {
        const events: TokenEvent[] = [];
        const r = await engine.chat({ messages: [{ role: 'user', content: s.prompt }], maxTokens: 3 }, (e) =>
          events.push(e),
        );
        expect(['stop', 'length']).toContain(r.finishReason);
        expect(r.outputTokenIds.length).toBeLessThanOrEqual(3);
        checkAgainstEvents(r, events, s.tokenIds);
      });

      it('rejects bad requests with invalid_argument and stays usable', async () => {
        await rejectsWith(engine.generate({ prompt: s.prompt, temperature: -1 }), 'invalid_argument');
        await rejectsWith(engine.generate({ prompt: s.prompt, maxTokens: 1.5 }), 'invalid_argument');
        await rejectsWith(engine.chat({ messages: [] }), 'invalid_argument');
        await rejectsWith(
          engine.chat({ messages: [{ role: 'robot' as 'user', content: 'x' }] }),
          'invalid_argument',
        );
        const r = await engine.generate({ prompt: s.prompt, maxTokens: 2, ignoreEos: true });
        expect(r.outputTokenIds).toHaveLength(2);
      });

      it('an abort before the request gives finishReason aborted and no tokens', async () => {
        const ctl = new AbortController();
        ctl.abort();
        const events: TokenEvent[] = [];
        const r = await engine.generate(
          { prompt: s.prompt, maxTokens: 4, ignoreEos: true },
          (e) => events.push(e),
          ctl.signal,
        );
        expect(r.finishReason).toBe('aborted');
        expect(r.outputTokenIds).toHaveLength(0);
        expect(events).toHaveLength(0);
      });

      it('an abort during the stream ends it early with aborted; the next request works', async () => {
        const ctl = new AbortController();
        const events: TokenEvent[] = [];
        const r = await engine.generate(
          { prompt: s.prompt, maxTokens: s.streamTokens, ignoreEos: true },
          (e) => {
            events.push(e);
            if (events.length === 2) ctl.abort();
          },
          ctl.signal,
        );
        expect(r.finishReason).toBe('aborted');
        expect(r.outputTokenIds.length).toBeGreaterThanOrEqual(2);
        expect(r.outputTokenIds.length).toBeLessThan(s.streamTokens);
        checkAgainstEvents(r, events, s.tokenIds);
        const next = await engine.generate({ prompt: s.prompt, maxTokens: 3, ignoreEos: true });
        expect(next.finishReason).toBe('length');
        expect(next.outputTokenIds).toHaveLength(3);
      });

      // Last: it unloads the engine the tests above share (one load per backend keeps the suite short).
      it('after unload, requests reject with not_loaded; unload twice is safe', async () => {
        await engine.unload();
        await engine.unload();
        await rejectsWith(engine.generate({ prompt: s.prompt, maxTokens: 2 }), 'not_loaded');
        await rejectsWith(
          engine.chat({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 2 }),
          'not_loaded',
        );
      });
    });
  });
}
