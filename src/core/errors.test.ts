import * as Comlink from 'comlink';
import { describe, expect, it } from 'vitest';
import { checkPromptLength } from '../model/tokenizer/prompt-bound.ts';
import { widgetContextMessage } from '../widget/element.ts';
import { installErrorTransfer } from './comlink.ts';
import { EngineError, isEngineError } from './errors.ts';

describe('EngineError details', () => {
  it('survive toJSON/fromJSON and structured clone', () => {
    const e = new EngineError('context_overflow', 'too long', {
      details: { contextLength: 2048, promptTokens: 2301 },
    });
    const back = EngineError.fromJSON(structuredClone(e.toJSON()));
    expect(back).toBeInstanceOf(EngineError);
    expect(back.code).toBe('context_overflow');
    expect(back.details).toEqual({ contextLength: 2048, promptTokens: 2301 });
    // An error without details has none, and no `details` key in its JSON.
    const plain = new EngineError('network', 'offline');
    expect(plain.details).toBeUndefined();
    expect('details' in plain.toJSON()).toBe(false);
    expect(EngineError.fromJSON(plain.toJSON()).details).toBeUndefined();
  });

  it('keep the cause as before: present when given, absent when not', () => {
    const cause = new Error('inner');
    expect(new EngineError('network', 'x', { cause }).cause).toBe(cause);
    expect('cause' in new EngineError('network', 'x', { details: { contextLength: 1 } })).toBe(false);
  });

  it('cross a comlink boundary (the engine worker) with code and details', async () => {
    installErrorTransfer();
    const { port1, port2 } = new MessageChannel();
    const api = {
      fail(n: number): number {
        throw new EngineError('context_overflow', `needs ${n}`, {
          details: { contextLength: 64, promptTokens: n, promptTokensAtLeast: true },
        });
      },
    };
    Comlink.expose(api, port1 as unknown as Comlink.Endpoint);
    const remote = Comlink.wrap<typeof api>(port2 as unknown as Comlink.Endpoint);
    const err = await remote.fail(97).then(
      () => undefined,
      (e: unknown) => e,
    );
    port1.close();
    port2.close();
    expect(isEngineError(err, 'context_overflow')).toBe(true);
    expect((err as EngineError).details).toEqual({
      contextLength: 64,
      promptTokens: 97,
      promptTokensAtLeast: true,
    });
  });
});

describe('context_overflow in the widget', () => {
  const tok = { maxPieceChars: 4 };
  const thrown = (f: () => void): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    throw new Error('did not throw');
  };

  it('is worded from the details, naming the attribute and never the API option or flag', () => {
    // 1,001 characters at ≤ 4 per token: at least 251 tokens, +1 for the BOS = 252.
    const e = thrown(() => checkPromptLength(1001, tok, 200, 1));
    expect(isEngineError(e, 'context_overflow')).toBe(true);
    expect((e as EngineError).details).toEqual({
      contextLength: 200,
      promptTokens: 252,
      promptTokensAtLeast: true,
    });
    const text = widgetContextMessage(e, (e as EngineError).message);
    expect(text).toBe(
      'the message needs at least 252 tokens but the context holds 200 (and one must be left for the answer); shorten the message or set a larger context-length attribute on the widget',
    );
    expect(text).not.toMatch(/contextLength|--ctx/);
  });

  it('says an exact count plainly, and a context alone when the count is unknown', () => {
    const exact = new EngineError('context_overflow', 'x', {
      details: { contextLength: 512, promptTokens: 530 },
    });
    expect(widgetContextMessage(exact, exact.message)).toMatch(
      /^the message needs 530 tokens but the context holds 512 /,
    );
    const ctxOnly = new EngineError('context_overflow', 'x', { details: { contextLength: 512 } });
    expect(widgetContextMessage(ctxOnly, ctxOnly.message)).toBe(
      'the message does not fit the context of 512 tokens; shorten the message or set a larger context-length attribute on the widget',
    );
  });

  it('keeps a message without details (WebLLM, a remote server) and adds the attribute after it', () => {
    const e = new EngineError('context_overflow', 'Prompt tokens exceed context window size');
    expect(widgetContextMessage(e, e.message)).toBe(
      'Prompt tokens exceed context window size (in the widget: shorten the message or set a larger context-length attribute on the widget)',
    );
    expect(widgetContextMessage({ code: 'context_overflow', message: 'm' }, 'm')).toMatch(
      /^m \(in the widget:/,
    );
  });
});
