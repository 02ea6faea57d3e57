import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { requestMetrics } from '../core/metrics.ts';
import type { ChatMessage, ChatRequest, GenerateResult, TokenEvent } from '../core/types.ts';
import { mulberry32 } from '../util/prng.ts';
import {
  answerLine,
  type ChatCall,
  Conversation,
  speculativeWords,
  summarizeAnswer,
} from './conversation.ts';

/**
 * A stand-in backend with a context of `nCtx` "tokens" (one per character of every message, as a
 * template would count them): it records each request, throws context_overflow like the engines
 * (core/types.ts `Engine.chat`) when the prompt plus max tokens does not fit, and answers with `reply`.
 */
function fakeChat(nCtx: number, reply = (req: ChatRequest) => `re:${req.messages.at(-1)?.content}`) {
  const calls: ChatRequest[] = [];
  const chat: ChatCall = async (req, onToken, signal) => {
    calls.push(structuredClone(req));
    const prompt = req.messages.reduce((n, m) => n + m.content.length, 0);
    if (prompt + (req.maxTokens ?? 0) > nCtx)
      throw new EngineError('context_overflow', `${prompt} > ${nCtx}`);
    const text = reply(req).slice(0, req.maxTokens);
    const t0 = 1000;
    const times: number[] = [];
    let out = '';
    for (let i = 0; i < text.length; i++) {
      if (signal.aborted) break;
      times.push(t0 + 50 + 10 * i);
      out += text[i];
      onToken({ tokenId: text.charCodeAt(i), text: text[i], tMs: times[i] } as TokenEvent);
    }
    return {
      text: out,
      finishReason: signal.aborted ? 'aborted' : out.length === req.maxTokens ? 'length' : 'stop',
      promptTokenIds: Array.from({ length: prompt }, (_, i) => i),
      outputTokenIds: Array.from(out, (c) => c.charCodeAt(0)),
      tStartMs: t0,
      tokenTimesMs: times,
    } as GenerateResult;
  };
  return { chat, calls };
}

const roles = (ms: ChatMessage[]) => ms.map((m) => m.role[0]).join('');

describe('Conversation', () => {
  it('keeps the turns alternating, sends the system message first and streams the answer', async () => {
    const c = new Conversation();
    const { chat, calls } = fakeChat(10_000);
    let streamed = '';
    const r = await c.answer(
      'hello',
      { maxTokens: 100, temperature: 0, system: ' be brief ' },
      chat,
      (e) => {
        streamed += e.text;
      },
      new AbortController().signal,
    );
    expect(r?.text).toBe('re:hello');
    expect(streamed).toBe('re:hello');
    await c.answer(
      'again',
      { maxTokens: 100, temperature: 0.7 },
      chat,
      () => {},
      new AbortController().signal,
    );
    expect(calls[0].messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello' },
    ]);
    expect(calls[0].temperature).toBeUndefined();
    expect(calls[1].messages.map((m) => m.content)).toEqual(['hello', 're:hello', 'again']);
    expect(calls[1].temperature).toBe(0.7);
    expect(Number.isInteger(calls[1].seed)).toBe(true);
    expect(roles(c.messages)).toBe('uaua');
  });

  it('forgets the oldest turns, user first, when the conversation outgrows the context (random lengths)', async () => {
    const rand = mulberry32(20);
    for (let trial = 0; trial < 20; trial++) {
      const nCtx = 60 + Math.floor(rand() * 140);
      const c = new Conversation();
      const { chat, calls } = fakeChat(nCtx);
      for (let turn = 0; turn < 12; turn++) {
        const msg = 'x'.repeat(1 + Math.floor(rand() * 20));
        const before = calls.length;
        const r = await c.answer(
          msg,
          { maxTokens: 7, temperature: 0 },
          chat,
          () => {},
          new AbortController().signal,
        );
        expect(r?.finishReason).toMatch(/^(stop|length)$/);
        const sent = calls.at(-1)!.messages;
        // What was sent fits, ends with the new message, starts with a user turn, and is the longest
        // suffix of the turns that fits (each retry dropped one user/assistant pair).
        expect(sent.reduce((n, m) => n + m.content.length, 0) + 7).toBeLessThanOrEqual(nCtx);
        expect(sent.at(-1)).toEqual({ role: 'user', content: msg });
        expect(sent[0].role).toBe('user');
        const tried = calls.slice(before);
        for (let i = 1; i < tried.length; i++)
          expect(tried[i].messages.length).toBe(tried[i - 1].messages.length - 2);
        expect(c.messages).toEqual([...sent, { role: 'assistant', content: r?.text }]);
        expect(roles(c.messages)).toMatch(/^(ua)+$/);
      }
    }
  });

  it('a message that alone does not fit throws context_overflow, and leaves the turns as they were', async () => {
    const c = new Conversation();
    const { chat } = fakeChat(40);
    await c.answer('hi', { maxTokens: 5, temperature: 0 }, chat, () => {}, new AbortController().signal);
    const before = structuredClone(c.messages);
    await expect(
      c.answer(
        'y'.repeat(50),
        { maxTokens: 5, temperature: 0 },
        chat,
        () => {},
        new AbortController().signal,
      ),
    ).rejects.toMatchObject({ code: 'context_overflow' });
    expect(c.messages).toEqual(before);
  });

  it('a failed answer takes its question out of the turns; other errors are not retried', async () => {
    const c = new Conversation();
    let n = 0;
    const failing: ChatCall = async () => {
      n++;
      throw new EngineError('device_lost', 'lost');
    };
    await expect(
      c.answer('q', { maxTokens: 5, temperature: 0 }, failing, () => {}, new AbortController().signal),
    ).rejects.toMatchObject({ code: 'device_lost' });
    expect(n).toBe(1);
    expect(c.messages).toEqual([]);
    await expect(
      c.answer('  ', { maxTokens: 5, temperature: 0 }, failing, () => {}, new AbortController().signal),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(n).toBe(1);
  });

  it('aborted before the call: undefined and no turn; aborted while answering: what was written is kept', async () => {
    const c = new Conversation();
    const { chat, calls } = fakeChat(1000);
    const a = new AbortController();
    a.abort();
    expect(await c.answer('q', { maxTokens: 5, temperature: 0 }, chat, () => {}, a.signal)).toBeUndefined();
    expect(calls).toHaveLength(0);
    expect(c.messages).toEqual([]);
    const b = new AbortController();
    const r = await c.answer(
      'abcdef',
      { maxTokens: 50, temperature: 0 },
      chat,
      (e) => {
        if (e.text === 'a') b.abort();
      },
      b.signal,
    );
    expect(r?.finishReason).toBe('aborted');
    expect(r?.text).toBe('re:a');
    expect(c.messages).toEqual([
      { role: 'user', content: 'abcdef' },
      { role: 'assistant', content: 're:a' },
    ]);
  });
});

describe('room for the answer', () => {
  /**
   * A backend as the engines are: a prompt over the context is context_overflow; otherwise the answer
   * runs until max tokens or the context's end (finishReason 'length' either way). One token per character.
   */
  function contextChat(nCtx: number): ChatCall {
    return async (req, onToken) => {
      const prompt = req.messages.reduce((n, m) => n + m.content.length, 0);
      // As the engines: one position must be left for the answer.
      if (prompt >= nCtx) throw new EngineError('context_overflow', `${prompt} ≥ ${nCtx}`);
      const n = Math.min(req.maxTokens ?? 0, nCtx - prompt);
      const out = 'x'.repeat(n);
      for (const ch of out) onToken({ tokenId: 120, text: ch, tMs: 1 } as TokenEvent);
      return {
        text: out,
        finishReason: 'length',
        promptTokenIds: Array.from({ length: prompt }, () => 1),
        outputTokenIds: Array.from({ length: n }, () => 120),
        tStartMs: 0,
        tokenTimesMs: Array.from({ length: n }, (_, i) => i + 1),
      } as GenerateResult;
    };
  }

  it('without the context length answers get cut by the context, and say so; with it, old turns make room', async () => {
    const rand = mulberry32(Date.now() >>> 0);
    const nCtx = 300 + Math.floor(rand() * 200);
    const maxTokens = 60 + Math.floor(rand() * 40);
    const message = () => 'm'.repeat(10 + Math.floor(rand() * 50));
    const plain = new Conversation();
    const roomy = new Conversation();
    let cut = 0;
    // At least 12 turns, and on until one answer was cut (some lengths take more turns to fill it).
    for (let turn = 0; turn < 12 || (cut === 0 && turn < 40); turn++) {
      const text = message();
      const a = summarizeAnswer(
        await plain.answer(
          text,
          { maxTokens, temperature: 0 },
          contextChat(nCtx),
          () => {},
          new AbortController().signal,
        ),
        maxTokens,
      );
      if (a.outputTokens < maxTokens) {
        cut++;
        expect(a.contextFull).toBe(true);
        expect(answerLine(a)).toMatch(/ \(context full\) · /);
      } else expect(a.contextFull).toBeUndefined();
      const b = summarizeAnswer(
        await roomy.answer(
          text,
          { maxTokens, temperature: 0, contextLength: nCtx },
          contextChat(nCtx),
          () => {},
          new AbortController().signal,
        ),
        maxTokens,
      );
      expect(b.outputTokens, `turn ${turn}`).toBe(maxTokens);
      expect(answerLine(b)).toMatch(/ \(max tokens\) · /);
      expect(roomy.messages.at(-2)).toEqual({ role: 'user', content: text });
      expect(roomy.messages[0].role).toBe('user');
    }
    expect(cut).toBeGreaterThan(0);
  });
});

describe('summarizeAnswer and answerLine', () => {
  it("give vLLM's per-request figures (core/metrics.ts) and the line under the log", async () => {
    const { chat } = fakeChat(10_000, () => 'x'.repeat(20));
    const r = (await new Conversation().answer(
      'hello',
      { maxTokens: 20, temperature: 0 },
      chat,
      () => {},
      new AbortController().signal,
    ))!;
    const s = summarizeAnswer(r);
    const m = requestMetrics({ tStartMs: r.tStartMs, tokenTimesMs: r.tokenTimesMs, promptTokens: 5 });
    // 20 tokens 10 ms apart: 19 gaps over 190 ms = 100 tok/s; the first after 50 ms.
    expect(s).toEqual({
      text: 'x'.repeat(20),
      finishReason: 'length',
      outputTokens: 20,
      promptTokens: 5,
      tokensPerSecond: m.decodeTokPerS,
      contextTokens: 25,
      ttftMs: 50,
    });
    expect(s.tokensPerSecond).toBeCloseTo(100, 10);
    expect(answerLine(s)).toBe('Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context');
    const first = { ...s, tokensPerSecond: 250, contextTokens: 12 };
    expect(answerLine(s, { first, ttft: true })).toBe(
      'Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context (first answer: 250 tok/s at 12) · first token after 50.0 ms',
    );
    // A first answer at the same depth or deeper is no comparison.
    expect(answerLine(s, { first: { ...first, contextTokens: 25 } })).not.toContain('first answer');
    // Drafting is said where either answer drafted: a drafted speed is never read against a plain one.
    expect(answerLine(s, { first, drafting: 'lookup' })).toBe(
      'Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context, with drafting: lookup (first answer: 250 tok/s at 12, without drafting)',
    );
    expect(answerLine(s, { first, firstDrafting: 'draft tiny' })).toBe(
      'Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context, without drafting (first answer: 250 tok/s at 12, with drafting: draft tiny)',
    );
    expect(answerLine(s, { drafting: 'lookup' })).toBe(
      'Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context, with drafting: lookup',
    );
    // A first answer at the same depth is no comparison, so its drafting is not said either.
    expect(answerLine(s, { first: { ...first, contextTokens: 25 }, firstDrafting: 'lookup' })).toBe(
      'Last answer: 20 tokens (max tokens) · 100 tok/s at 25 tokens of context',
    );
  });

  it('one token: no decode speed; none: why, in words', () => {
    const one = summarizeAnswer({
      text: 'a',
      finishReason: 'stop',
      promptTokenIds: [1, 2, 3],
      outputTokenIds: [7],
      tStartMs: 0,
      tokenTimesMs: [12],
    } as GenerateResult);
    expect(one).toMatchObject({ tokensPerSecond: null, contextTokens: 4, ttftMs: 12 });
    expect(answerLine(one)).toBe('Last answer: 1 token (end of text) · 4 tokens of context');
    const none = summarizeAnswer(undefined);
    expect(none).toMatchObject({
      finishReason: 'aborted',
      outputTokens: 0,
      tokensPerSecond: null,
      ttftMs: null,
    });
    expect(answerLine(none)).toBe('Stopped before the first token.');
    expect(answerLine({ ...none, finishReason: 'stop' })).toBe('No answer.');
  });

  it("speculative decoding's counts: kept in the summary (a copy), in words per target pass", () => {
    const r = {
      text: 'abcdefghijk',
      finishReason: 'length',
      promptTokenIds: [1, 2],
      outputTokenIds: [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
      tStartMs: 0,
      tokenTimesMs: [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
      speculative: { drafted: 9, accepted: 6, targetPasses: 4 },
    } as GenerateResult;
    const s = summarizeAnswer(r);
    expect(s.speculative).toEqual({ drafted: 9, accepted: 6, targetPasses: 4 });
    expect(s.speculative).not.toBe(r.speculative);
    // 10 tokens after the prefill's over 4 passes.
    expect(speculativeWords(s)).toBe('6 of 9 drafted tokens accepted, 2.50 tokens per pass');
    expect(speculativeWords({ ...s, speculative: { drafted: 0, accepted: 0, targetPasses: 0 } })).toBe(
      '0 of 0 drafted tokens accepted, – tokens per pass',
    );
    const plain = summarizeAnswer({ ...r, speculative: undefined });
    expect('speculative' in plain).toBe(false);
    expect(speculativeWords(plain)).toBeUndefined();
  });
});
