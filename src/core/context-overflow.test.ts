import { describe, expect, it } from 'vitest';
import { checkPromptLength } from '../model/tokenizer/prompt-bound.ts';
import { widgetContextMessage } from '../widget/element.ts';
import { EngineError, isEngineError } from './errors.ts';

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
    // What the backend said stays (wllama's llama.cpp words: the one diagnosis when its pattern caught
    // something else).
    const said = new EngineError('context_overflow', 'x', {
      details: { contextLength: 512, said: 'llama.cpp: failed to find a memory slot for batch of size 64' },
    });
    expect(widgetContextMessage(said, said.message)).toBe(
      'the message does not fit the context of 512 tokens (llama.cpp: failed to find a memory slot for batch of size 64); shorten the message or set a larger context-length attribute on the widget',
    );
  });

  it("leaves out the larger context where the context loaded is already the model's most", () => {
    const e = new EngineError('context_overflow', 'x', {
      details: { contextLength: 2048, promptTokens: 2100 },
    });
    expect(widgetContextMessage(e, e.message, { contextLength: 2048, trainedContextLength: 2048 })).toBe(
      "the message needs 2100 tokens but the context holds 2048 (and one must be left for the answer); shorten the message (the context is already the model's most, 2048 tokens)",
    );
    // Below the most, or the most not known (WebLLM, a remote server): the attribute is the advice.
    for (const info of [
      { contextLength: 512, trainedContextLength: 2048 },
      { contextLength: 2048 },
      undefined,
    ])
      expect(widgetContextMessage(e, e.message, info)).toMatch(
        /; shorten the message or set a larger context-length attribute on the widget$/,
      );
  });

  it('keeps a message without details (WebLLM, a remote server) and adds the attribute after it', () => {
    const e = new EngineError('context_overflow', 'Prompt tokens exceed context window size');
    expect(widgetContextMessage(e, e.message)).toBe(
      'Prompt tokens exceed context window size (shorten the message or set a larger context-length attribute on the widget)',
    );
    expect(widgetContextMessage({ code: 'context_overflow', message: 'm' }, 'm')).toMatch(
      /^m \(shorten the message/,
    );
  });
});
