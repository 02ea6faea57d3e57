/**
 * WebLlmEngine's streaming logic against a stand-in for WebLLM's engine (no model can be loaded here):
 * token counts from usage, WebLLM's usage.extra kept in engineReported, abort → 'aborted' with the engine
 * still usable, and the first-token timeout. The real worker's paths are in engine.browser.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { TokenEvent } from '../core/types.ts';
import { WebLlmEngine } from './engine.ts';

interface FakeChunk {
  choices: { text: string }[];
  usage?: { prompt_tokens: number; completion_tokens: number; extra: Record<string, number> };
}

/** A fake MLC engine whose completions stream `pieces` (one per `gapMs`), stopping on interruptGenerate(). */
function fakeMlc(
  pieces: string[],
  opts: { gapMs?: number; firstDelayMs?: number; completionTokens?: number } = {},
) {
  const state = { interrupted: false, interrupts: 0 };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  return {
    state,
    interruptGenerate() {
      state.interrupted = true;
      state.interrupts++;
    },
    unload: async () => undefined,
    completions: {
      async create(): Promise<AsyncIterable<FakeChunk>> {
        state.interrupted = false;
        return (async function* () {
          await sleep(opts.firstDelayMs ?? 0);
          let n = 0;
          for (const p of pieces) {
            if (state.interrupted) break;
            n++;
            yield { choices: [{ text: p }] };
            await sleep(opts.gapMs ?? 1);
          }
          yield {
            choices: [],
            usage: {
              prompt_tokens: 5,
              completion_tokens: opts.completionTokens ?? n,
              extra: { prefill_tokens_per_s: 100, decode_tokens_per_s: 50 },
            },
          };
        })();
      },
    },
  };
}

function withFake(engine: WebLlmEngine, mlc: unknown): WebLlmEngine {
  (engine as unknown as { mlc: unknown }).mlc = mlc;
  return engine;
}

describe('WebLlmEngine streaming (fake WebLLM engine)', () => {
  it('counts tokens from usage and keeps usage.extra apart', async () => {
    const engine = withFake(new WebLlmEngine(), fakeMlc(['Hel', 'lo', ' world'], { completionTokens: 4 }));
    const events: TokenEvent[] = [];
    const r = await engine.generate({ prompt: 'x', maxTokens: 10 }, (e) => events.push(e));
    expect(r.text).toBe('Hello world');
    expect(r.promptTokenIds.length).toBe(5);
    expect(r.outputTokenIds.length).toBe(4);
    expect(r.tokenTimesMs.length).toBe(4);
    expect(r.chunks).toBe(3);
    expect(events.length).toBe(3);
    expect(r.engineReported).toEqual({ prefill_tokens_per_s: 100, decode_tokens_per_s: 50 });
    expect(r.finishReason).toBe('stop');
  });

  it('an abort interrupts generation; the next request runs', async () => {
    const mlc = fakeMlc(['a', 'b', 'c', 'd', 'e', 'f'], { gapMs: 30 });
    const engine = withFake(new WebLlmEngine(), mlc);
    const ctl = new AbortController();
    const r = await engine.generate({ prompt: 'x' }, () => ctl.abort(), ctl.signal);
    expect(r.finishReason).toBe('aborted');
    expect(mlc.state.interrupts).toBe(1);
    expect(r.text.length).toBeLessThan(6);
    const r2 = await engine.generate({ prompt: 'x' });
    expect(r2.text).toBe('abcdef');
  });

  it('no first token within the timeout: EngineError(timeout), and the engine needs a new load', async () => {
    const engine = withFake(
      new WebLlmEngine({ firstTokenTimeoutMs: 100 }),
      fakeMlc(['a'], { firstDelayMs: 2000 }),
    );
    const e = await engine.generate({ prompt: 'x' }).catch((err) => err);
    expect(isEngineError(e, 'timeout')).toBe(true);
    const e2 = await engine.generate({ prompt: 'x' }).catch((err) => err);
    expect(isEngineError(e2, 'not_loaded')).toBe(true);
  });
});

describe('structured output through WebLLM (issue 43)', () => {
  it('maps responseFormat to WebLLM’s chat response_format; completions refuse it with unsupported', async () => {
    const seen: Record<string, unknown>[] = [];
    const mlc = {
      ...fakeMlc([]),
      chat: {
        completions: {
          async create(params: Record<string, unknown>) {
            seen.push(params);
            return (async function* () {
              yield { choices: [{ delta: { content: '{}' } }] };
            })();
          },
        },
      },
    };
    const engine = withFake(new WebLlmEngine(), mlc);
    const messages = [{ role: 'user' as const, content: 'x' }];
    const schema = { type: 'object' };
    await engine.chat({ messages, responseFormat: { type: 'json_object' } });
    await engine.chat({ messages, responseFormat: { type: 'json_schema', schema } });
    await engine.chat({ messages, responseFormat: { type: 'grammar', grammar: 'root ::= "{}"' } });
    await engine.chat({ messages, responseFormat: { type: 'text' } });
    expect(seen.map((p) => p.response_format)).toEqual([
      { type: 'json_object' },
      { type: 'json_object', schema: '{"type":"object"}' },
      { type: 'grammar', grammar: 'root ::= "{}"' },
      undefined,
    ]);
    const e = await engine.generate({ prompt: 'x', responseFormat: { type: 'json_object' } }).catch((x) => x);
    expect(isEngineError(e, 'unsupported')).toBe(true);
  });
});
