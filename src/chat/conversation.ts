/**
 * One chat conversation, shared by the page's Chat tab (ui/chat-view.ts) and `<webgpu-chat>`
 * (widget/element.ts): the turns sent so far, one answer at a time through any backend's `Engine.chat`, the
 * oldest turns forgotten when the conversation outgrows the model's context, and the answer's figures
 * (vLLM's per-request definitions, core/metrics.ts) with the line both views show under the log.
 * DOM-free; the log itself is transcript.ts.
 */

import { EngineError } from '../core/errors.ts';
import { requestMetrics, tokensPerTargetPass } from '../core/metrics.ts';
import type {
  ChatMessage,
  ChatRequest,
  FinishReason,
  GenerateResult,
  SpeculativeStats,
  TokenEvent,
} from '../core/types.ts';
import { fmtCount, fmtMs, fmtRate } from '../util/format.ts';

/** A backend's chat call: `Engine.chat`, or a wrapper of it (the widget's shared-engine lease). */
export type ChatCall = (
  req: ChatRequest,
  onToken: (e: TokenEvent) => void,
  signal: AbortSignal,
) => Promise<GenerateResult>;

/** One answer's settings. */
export interface TurnSettings {
  /** Output tokens at most, ≥ 1. */
  maxTokens: number;
  /** 0 = greedy; otherwise sampled with a fresh seed per answer. */
  temperature: number;
  /** A system message put before the turns (not kept in {@link Conversation.messages}); blank = none. */
  system?: string;
  /**
   * The model's context, tokens: when given, the oldest turns are forgotten before the answer so that it
   * has room for `maxTokens` (at most half the context), estimated from the last answer's depth.
   */
  contextLength?: number;
  /**
   * More of the request, sent as given: speculative decoding (`draft`), structured output
   * (`responseFormat`), tools (`tools`, `toolChoice`).
   */
  request?: Pick<ChatRequest, 'draft' | 'responseFormat' | 'tools' | 'toolChoice'>;
}

/** An answer's figures, as `<webgpu-chat>`'s `done` event reports them. */
export interface AnswerSummary {
  text: string;
  finishReason: FinishReason;
  outputTokens: number;
  /** The prompt the answer was conditioned on: every remembered turn, templated, BOS included. */
  promptTokens: number;
  /** Decode speed, (n − 1) / (t_last − t_first) tokens per second (vLLM's output throughput per request); null under 2 tokens. */
  tokensPerSecond: number | null;
  /** The KV depth decode reached: prompt tokens + output tokens. */
  contextTokens: number;
  /** Time to the first token, ms (vLLM's TTFT); null when no token came out. */
  ttftMs: number | null;
  /** Speculative decoding's counts (GenerateResult.speculative), where the answer drafted (draft-model). */
  speculative?: SpeculativeStats;
  /** finishReason 'length' with fewer tokens than max tokens: the context was full. */
  contextFull?: boolean;
}

/**
 * The turns of one conversation. {@link answer} sends one user message and keeps the answer; a failed
 * answer leaves the question out of the turns (so the next turn is not built on it), and a conversation
 * that outgrows the context forgets its oldest turns (user-first, so roles still alternate) instead of
 * failing.
 */
export class Conversation {
  /** The turns the next answer is conditioned on, user and assistant alternating. */
  readonly messages: ChatMessage[] = [];

  /** The KV depth the last answer reached (its prompt and output tokens), for {@link makeRoom}. */
  private lastDepth = 0;

  /** Forgets every turn. */
  clear(): void {
    this.messages.length = 0;
    this.lastDepth = 0;
  }

  /**
   * Forgets the oldest turns (user-first) until the remembered ones, estimated at the last answer's tokens
   * per character, leave `room` tokens for a message of `chars` characters and its answer. Without this a
   * long conversation left an answer a few tokens before the context ended ("Cut at max tokens" at 2).
   */
  private makeRoom(contextLength: number, room: number, chars: number): void {
    const size = (m: ChatMessage[]) => m.reduce((a, x) => a + x.content.length, 0);
    const before = size(this.messages);
    if (this.lastDepth === 0 || before === 0) return;
    const perChar = this.lastDepth / before;
    const need = (kept: number) => kept * perChar + chars * perChar + room;
    while (this.messages.length > 0 && need(size(this.messages)) > contextLength) {
      this.messages.shift();
      while (this.messages.length > 0 && this.messages[0].role !== 'user') this.messages.shift();
    }
  }

  /**
   * Sends `content` as the next user turn and waits for the answer, streamed through `onToken`.
   * Resolves undefined when `signal` was aborted before the engine was called; an abort during the answer
   * resolves with finishReason 'aborted' and what was written (kept as the assistant's turn).
   * @throws EngineError `invalid_argument` on an empty message; the backend's error otherwise (the user turn
   * is removed again). A `context_overflow` is retried with the oldest turns left out, and thrown only
   * when the new message alone does not fit.
   */
  async answer(
    content: string,
    settings: TurnSettings,
    chat: ChatCall,
    onToken: (e: TokenEvent) => void,
    signal: AbortSignal,
  ): Promise<GenerateResult | undefined> {
    if (!content.trim()) throw new EngineError('invalid_argument', 'The message is empty.');
    const ctx = settings.contextLength;
    if (ctx !== undefined && ctx > 0)
      this.makeRoom(ctx, Math.min(settings.maxTokens, Math.floor(ctx / 2)), content.length);
    this.messages.push({ role: 'user', content });
    const system = settings.system?.trim();
    const sys: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
    const base = {
      ...(settings.request ?? {}),
      maxTokens: settings.maxTokens,
      ...(settings.temperature > 0
        ? { temperature: settings.temperature, seed: Math.floor(Math.random() * 2 ** 31) }
        : {}),
    };
    let history = [...this.messages];
    try {
      for (;;) {
        if (signal.aborted) {
          this.messages.pop();
          return undefined;
        }
        try {
          const r = await chat({ ...base, messages: [...sys, ...history] }, onToken, signal);
          // Turns that no longer fit are forgotten (the screen keeps them).
          this.messages.splice(0, this.messages.length - history.length);
          this.lastDepth = r.promptTokenIds.length + r.outputTokenIds.length;
          // The calls the model made stay in its turn (the chat template shows them to it next time).
          this.messages.push({
            role: 'assistant',
            content: r.text,
            ...(r.toolCalls?.length ? { toolCalls: r.toolCalls } : {}),
          });
          return r;
        } catch (e) {
          if (errorCode(e) !== 'context_overflow' || history.length <= 1) throw e;
          // The conversation outgrew the context: forget the oldest turn and try again.
          history = history.slice(1);
          while (history.length > 1 && history[0].role !== 'user') history = history.slice(1);
        }
      }
    } catch (e) {
      this.messages.pop();
      throw e;
    }
  }
}

/**
 * The figures of an answer (undefined: aborted before the engine was called). `maxTokens` (the request's)
 * tells an answer cut by the context's end from one cut at max tokens.
 */
export function summarizeAnswer(r: GenerateResult | undefined, maxTokens?: number): AnswerSummary {
  const n = r?.outputTokenIds.length ?? 0;
  const promptTokens = r?.promptTokenIds.length ?? 0;
  const m =
    r && n > 0
      ? requestMetrics({ tStartMs: r.tStartMs, tokenTimesMs: r.tokenTimesMs, promptTokens })
      : undefined;
  const tps = m?.decodeTokPerS;
  return {
    text: r?.text ?? '',
    finishReason: r?.finishReason ?? 'aborted',
    outputTokens: n,
    promptTokens,
    tokensPerSecond: tps !== undefined && Number.isFinite(tps) ? tps : null,
    contextTokens: promptTokens + n,
    ttftMs: m && Number.isFinite(m.ttftMs) ? m.ttftMs : null,
    ...(r?.speculative ? { speculative: { ...r.speculative } } : {}),
    ...(r?.finishReason === 'length' && maxTokens !== undefined && n < maxTokens
      ? { contextFull: true }
      : {}),
  };
}

/**
 * Speculative decoding's counts in words: "12 of 15 drafted tokens accepted, 2.40 tokens per pass" (the
 * output tokens after the first, which the prefill gives, ÷ the target's passes); undefined without them.
 */
export function speculativeWords(s: AnswerSummary): string | undefined {
  const spec = s.speculative;
  if (!spec) return undefined;
  const perPass =
    spec.targetPasses > 0 ? tokensPerTargetPass(s.outputTokens, spec.targetPasses).toFixed(2) : '–';
  return `${spec.accepted} of ${spec.drafted} drafted tokens accepted, ${perPass} tokens per pass`;
}

/** Why an answer ended, in words (`contextFull`: cut by the context's end, AnswerSummary.contextFull). */
export function finishWords(f: FinishReason, contextFull = false): string {
  return f === 'stop'
    ? 'end of text'
    : f === 'length'
      ? contextFull
        ? 'context full'
        : 'max tokens'
      : 'stopped';
}

/**
 * The note under an answer that did not end by itself ('Stopped.', 'Cut at max tokens.', 'Cut at the end of
 * the context.'), or undefined.
 */
export function finishNote(f: FinishReason, contextFull = false): string | undefined {
  return f === 'stop'
    ? undefined
    : f === 'length'
      ? contextFull
        ? 'Cut at the end of the context.'
        : 'Cut at max tokens.'
      : 'Stopped.';
}

/**
 * The line under the log: "Last answer: 20 tokens (max tokens) · 41.2 tok/s at 25 tokens of context".
 * `first` (the conversation's first answer at a smaller depth) adds "(first answer: … at …)", and
 * `ttft` adds "· first token after … ms" (the page shows both; the widget neither).
 * `drafting` and `firstDrafting` name the speculative decoding each answer ran with ("lookup", "draft
 * model X"; absent: none): a drafted answer's speed says ", with drafting: lookup", and where either of
 * the two compared answers drafted, both say whether they did, so a drafted speed is never read against
 * a plain one unknowingly.
 */
export function answerLine(
  s: AnswerSummary,
  opts: { first?: AnswerSummary; ttft?: boolean; drafting?: string; firstDrafting?: string } = {},
): string {
  const n = s.outputTokens;
  if (n === 0) return s.finishReason === 'aborted' ? 'Stopped before the first token.' : 'No answer.';
  const f = opts.first;
  const compared =
    s.tokensPerSecond !== null &&
    f !== undefined &&
    f.tokensPerSecond !== null &&
    f.contextTokens < s.contextTokens;
  const draftWords = (d: string | undefined, always: boolean): string =>
    d ? `, with drafting: ${d}` : always ? ', without drafting' : '';
  const either = Boolean(opts.drafting || (compared && opts.firstDrafting));
  let speed =
    s.tokensPerSecond !== null
      ? `${fmtRate(s.tokensPerSecond)} at ${fmtCount(s.contextTokens)} tokens of context${draftWords(opts.drafting, either)}`
      : `${fmtCount(s.contextTokens)} tokens of context`;
  if (compared)
    speed += ` (first answer: ${fmtRate(f.tokensPerSecond as number)} at ${fmtCount(f.contextTokens)}${draftWords(opts.firstDrafting, either)})`;
  const ttft = opts.ttft && s.ttftMs !== null ? ` · first token after ${fmtMs(s.ttftMs)}` : '';
  return `Last answer: ${n} token${n === 1 ? '' : 's'} (${finishWords(s.finishReason, s.contextFull)}) · ${speed}${ttft}`;
}

/** An error's `code` (EngineError, or one that crossed a worker or came from another backend), or undefined. */
function errorCode(e: unknown): string | undefined {
  const code = e && typeof e === 'object' ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}
