/**
 * The streamed answer of one `/v1/chat/completions` or `/v1/completions` request, from its SSE data lines
 * to a {@link RemoteGenerateResult}: {@link CompletionStream} reads the lines (`data: [DONE]`, the JSON
 * chunks with their content or reasoning text, `usage`, llama-server's `timings`, the finish reason, an
 * error sent mid-stream, a server that keeps streaming past `max_tokens`) into content chunks with their
 * arrival times, and {@link assembleResult} turns the chunks into the result's token count and per-token
 * times (DESIGN.md: by tokens, never by chunks; see src/remote/engine.ts). No I/O and no timers: the
 * request, its timeouts and its errors are `RemoteEngine`'s.
 */
import { tokenTimesFromChunks } from '../core/metrics.ts';
import type { GenerateResult, TokenEvent, ToolCall } from '../core/types.ts';

/**
 * How many completion tokens past the request's `max_tokens` a server's `usage` may report: servers differ
 * by a few (an end-of-sequence or stop token counted, llama-server's and Ollama's own bookkeeping), never by
 * more; a larger count is a wrong answer, refused rather than turned into that many token times.
 */
export const USAGE_SLACK_TOKENS = 16;

/**
 * How many prompt tokens past the prompt's UTF-8 bytes a server's `usage` may report. A tokenizer makes at
 * most one token per byte (byte-level BPE; SentencePiece's byte fallback, plus its leading space), so what
 * is left is the chat template's markup and a server-side default system prompt (tens to a few hundred
 * tokens); 4096 covers either many times over.
 */
export const PROMPT_TEMPLATE_SLACK_TOKENS = 4096;

/** The most prompt tokens a server's `usage` may report for a prompt of `promptBytes` UTF-8 bytes. */
export function maxPromptTokensFor(promptBytes: number): number {
  return promptBytes + PROMPT_TEMPLATE_SLACK_TOKENS;
}

/**
 * The longest SSE line, and the longest event (its lines together), a stream may send: 4 Mi characters.
 * A real event is one JSON chunk of one or a few tokens (a few hundred bytes; a few KB with top-20
 * logprobs); the largest real ones, a final chunk repeating the whole answer (TGI's `generated_text`), are
 * about 150 KB for 32k tokens. 4 Mi is well above any of them and keeps what one event can hold in memory
 * to a few MB: a server that sends a 200 MB line is refused after 4 Mi characters, not after 2.7 GB.
 */
export const DEFAULT_MAX_EVENT_CHARS = 4 * 1024 * 1024;

/**
 * The most characters a token may add to the answer's text (content and reasoning together): the longest
 * tokens of real vocabularies (runs of spaces, of `=`, of `-`) hold a few dozen to a few hundred bytes, so
 * 1024 per token is ample; the whole answer may hold (max_tokens + {@link USAGE_SLACK_TOKENS}) × 1024.
 */
export const MAX_CHARS_PER_TOKEN = 1024;

/**
 * Watches the sizes of an SSE stream's lines and events as its text arrives, before the parser buffers
 * it: {@link feed} returns false once the line not yet ended, or the event's lines since the last blank
 * line, pass `maxChars` characters (CR, LF and CRLF end lines, as in the SSE specification).
 */
export class SseSizeGuard {
  /** Characters of the line not yet ended. */
  private line = 0;
  /** Characters of the current event's ended lines. */
  private event = 0;
  /** The last text ended with CR: an LF first in the next one ends no line. */
  private cr = false;
  constructor(readonly maxChars: number) {}

  /** Takes the stream's next text; false when a line or an event is now over the limit. */
  feed(text: string): boolean {
    const n = text.length;
    let i = this.cr && text.charCodeAt(0) === 10 ? 1 : 0;
    this.cr = false;
    let start = i;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const len = this.line + (i - start);
      this.event = len === 0 ? 0 : this.event + len;
      this.line = 0;
      if (this.event > this.maxChars) return false;
      if (c === 13) {
        if (i + 1 === n) this.cr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.line += n - start;
    return this.event + this.line <= this.maxChars;
  }
}

/** How a remote result's output tokens were counted. */
export type TokenCountSource = 'usage' | 'tokenizer' | 'chunks';

/** A remote generation: the usual result plus how its tokens were counted. */
export interface RemoteGenerateResult extends GenerateResult {
  tokenCount: TokenCountSource;
  approximate: boolean;
  /** Content chunks received. */
  chunks: number;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  /** llama-server's `timings` (its own prefill/decode tok/s), when it sends them. */
  serverTimings?: { prompt_per_second?: number; predicted_per_second?: number };
}

/** One content chunk of a stream: when it arrived (`performance.now()`) and its text, reasoning included. */
export interface ChunkRecord {
  tMs: number;
  text: string;
}

/** llama-server's own prefill/decode rates, as its stream's `timings` carry them. */
type ServerTimings = NonNullable<RemoteGenerateResult['serverTimings']>;

/** One JSON line of a completion stream (chat deltas or completion text; vLLM's and llama-server's extras). */
interface StreamLine {
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      /** vLLM's parsed tool calls, streamed: each index's id and name once, its arguments in pieces. */
      tool_calls?: {
        index?: number;
        id?: string;
        function?: { name?: string | null; arguments?: string | null };
      }[];
    };
    text?: string;
    finish_reason?: string | null;
  }[];
  usage?: RemoteGenerateResult['usage'] | null;
  /** llama-server's own timings (kept apart, in engineReported). */
  timings?: ServerTimings;
  error?: { message?: string } | string;
}

/**
 * One completion stream's state, fed the data of its SSE events in order ({@link onData}): the content
 * chunks, the text, usage, llama-server's timings, the finish reason, and whether reading must stop
 * ({@link stopped}: `[DONE]` arrived, the server broke the protocol, or it overran `maxTokens`).
 * Each content chunk is reported to `onToken` at once, as `countTokens` of it (at least one) token events.
 */
export class CompletionStream {
  readonly chunks: ChunkRecord[] = [];
  /** Tool calls the server parsed from the output (vLLM with tools), assembled from their deltas. */
  readonly toolCalls: ToolCall[] = [];
  /** The answer's content (reasoning text is counted and timed, but not part of it). */
  text = '';
  usage: RemoteGenerateResult['usage'];
  serverTimings: ServerTimings | undefined;
  finish: string | undefined;
  /** `data: [DONE]` arrived. */
  done = false;
  /** A content chunk arrived after `maxTokens` of them (each carries at least one token): the server overran. */
  overran = false;
  /** Why the stream is unreadable (a line that is not JSON, an error sent mid-stream), if it is. */
  protocolError: string | undefined;
  /** Characters of the answer's text so far, reasoning included. */
  private textChars = 0;

  /**
   * @param host the server's host, for messages.
   * @param maxTokens the request's max_tokens: more content chunks than this is an overrun, and `usage`
   *   may report at most {@link USAGE_SLACK_TOKENS} completion tokens more.
   * @param limits `promptBytes`: the prompt's UTF-8 bytes, which bound `usage.prompt_tokens`
   *   ({@link maxPromptTokensFor}); unbounded when not given.
   */
  constructor(
    private readonly host: string,
    private readonly maxTokens: number,
    private readonly countTokens?: (text: string) => number,
    private readonly onToken?: (e: TokenEvent) => void,
    private readonly limits: { promptBytes?: number } = {},
  ) {}

  /**
   * A server's `usage` as kept (its token counts only), or why it is refused: each count a non-negative
   * integer, completion tokens at most max_tokens + {@link USAGE_SLACK_TOKENS}, prompt tokens at most
   * {@link maxPromptTokensFor} the prompt. Nothing is sized by a count before it passes.
   */
  private checkUsage(u: unknown): { usage: RemoteGenerateResult['usage'] } | { error: string } {
    const h = this.host;
    if (typeof u !== 'object' || u === null || Array.isArray(u))
      return { error: `${h} sent a usage that is not an object: ${JSON.stringify(u).slice(0, 80)}` };
    const out: NonNullable<RemoteGenerateResult['usage']> = {};
    for (const k of ['prompt_tokens', 'completion_tokens'] as const) {
      const v = (u as Record<string, unknown>)[k];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
        return {
          error: `${h} reported usage.${k} = ${JSON.stringify(v)?.slice(0, 40)}: not a non-negative integer (the server's usage is wrong)`,
        };
      out[k] = v;
    }
    const c = out.completion_tokens;
    const cMax = this.maxTokens + USAGE_SLACK_TOKENS;
    if (c !== undefined && c > cMax)
      return {
        error: `${h} reported usage.completion_tokens = ${c}, but max_tokens asked for ${this.maxTokens} (at most ${cMax} accepted: max_tokens + ${USAGE_SLACK_TOKENS}); the server's usage is wrong`,
      };
    const p = out.prompt_tokens;
    const bytes = this.limits.promptBytes;
    if (p !== undefined && bytes !== undefined && p > maxPromptTokensFor(bytes))
      return {
        error: `${h} reported usage.prompt_tokens = ${p} for a prompt of ${bytes} UTF-8 byte(s) (at most ${maxPromptTokensFor(bytes)} accepted: a token per byte + ${PROMPT_TEMPLATE_SLACK_TOKENS} for the chat template); the server's usage is wrong`,
      };
    return { usage: out };
  }

  /** True once reading should stop: `[DONE]`, a protocol fault or an overrun. */
  get stopped(): boolean {
    return this.done || Boolean(this.protocolError) || this.overran;
  }

  /** Takes one SSE event's data; ignored once {@link stopped}. */
  onData(raw: string): void {
    if (this.stopped) return;
    const data = raw.trim();
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    let j: StreamLine;
    try {
      j = JSON.parse(data);
    } catch {
      this.protocolError = `${this.host} sent a malformed stream line (not JSON): ${JSON.stringify(data.slice(0, 80))}`;
      return;
    }
    if (j.error) {
      this.protocolError = `${this.host} reported an error mid-stream: ${typeof j.error === 'string' ? j.error : (j.error.message ?? 'unknown')}`;
      return;
    }
    if (j.usage !== undefined && j.usage !== null) {
      const u = this.checkUsage(j.usage);
      if ('error' in u) {
        this.protocolError = u.error;
        return;
      }
      this.usage = u.usage;
    }
    if (j.timings) this.serverTimings = j.timings;
    if (j.choices !== undefined && !Array.isArray(j.choices)) {
      // Before: `choices: null` threw inside the parser and read as a cut stream ("Cannot read properties of null").
      this.protocolError = `${this.host} sent a chunk whose choices is ${j.choices === null ? 'null' : typeof j.choices}, not a list: ${JSON.stringify(data.slice(0, 120))}`;
      return;
    }
    const c = j.choices?.[0];
    if (!c) return;
    if (c.finish_reason) this.finish = c.finish_reason;
    // Reasoning models stream their thinking first (vLLM: delta.reasoning_content / reasoning): those
    // are output tokens too (usage counts them), so they time the first token; the text keeps content only.
    const content = c.delta?.content ?? c.text ?? '';
    let callText = '';
    for (const d of c.delta?.tool_calls ?? []) {
      const i = d.index ?? this.toolCalls.length;
      this.toolCalls[i] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      const t = this.toolCalls[i];
      if (d.id) t.id = d.id;
      if (d.function?.name) t.function.name += d.function.name;
      if (d.function?.arguments) t.function.arguments += d.function.arguments;
      callText += (d.function?.name ?? '') + (d.function?.arguments ?? '');
    }
    // A tool call's name and arguments are output tokens too: they time the chunks, not the text.
    const piece = (c.delta?.reasoning_content ?? c.delta?.reasoning ?? '') + content + callText;
    if (piece === '') return;
    if (this.chunks.length >= this.maxTokens) {
      this.overran = true;
      return;
    }
    const maxChars = (this.maxTokens + USAGE_SLACK_TOKENS) * MAX_CHARS_PER_TOKEN;
    if (this.textChars + piece.length > maxChars) {
      this.protocolError = `${this.host} sent a chunk of ${piece.length} characters, taking the answer to ${this.textChars + piece.length}: more than max_tokens ${this.maxTokens} allows (at most ${maxChars} characters: ${MAX_CHARS_PER_TOKEN} a token for max_tokens + ${USAGE_SLACK_TOKENS}); stopped reading`;
      return;
    }
    this.textChars += piece.length;
    const tMs = performance.now();
    this.chunks.push({ tMs, text: piece });
    this.text += content;
    const k = this.countTokens ? Math.max(1, this.countTokens(piece)) : 1;
    const shown = piece.slice(0, piece.length - callText.length); // a call's text is not answer text
    if (this.onToken)
      for (let i = 0; i < k; i++) this.onToken({ tokenId: -1, text: i === 0 ? shown : '', tMs });
  }
}

/** Splits `total` tokens over chunks in proportion to `weights`, each non-empty chunk getting ≥ 1 when possible. */
export function spreadTokens(total: number, weights: readonly number[]): number[] {
  const n = weights.length;
  const out = new Array<number>(n).fill(0);
  if (n === 0 || total <= 0) return out;
  if (total <= n) {
    // Fewer tokens than chunks: one each for the first `total` chunks (the server counted fewer).
    for (let i = 0; i < total; i++) out[i] = 1;
    return out;
  }
  // One each, then the rest by largest remainder over the weights.
  const rest = total - n;
  const w = weights.map((x) => Math.max(0, x));
  const sum = w.reduce((a, b) => a + b, 0);
  const shares = w.map((x) => (sum > 0 ? (x / sum) * rest : rest / n));
  let given = 0;
  for (let i = 0; i < n; i++) {
    const f = Math.floor(shares[i]);
    out[i] = 1 + f;
    given += f;
  }
  const order = shares.map((s, i) => [s - Math.floor(s), i] as const).sort((a, b) => b[0] - a[0]);
  for (let k = 0; k < rest - given; k++) out[order[k % n][1]]++;
  return out;
}

/**
 * Builds the result: token counts (usage / tokenizer / chunks) and per-token times from chunk times.
 * `forced` is 'aborted' when the stream did not reach `[DONE]`: the finish reason then, and the server's
 * usage (if any) is not used for the count.
 */
export function assembleResult(
  tStartMs: number,
  chunks: readonly ChunkRecord[],
  text: string,
  usage: RemoteGenerateResult['usage'],
  finish: string | undefined,
  forced: 'aborted' | undefined,
  count: ((text: string) => number) | undefined,
): RemoteGenerateResult {
  let perChunk: number[];
  let tokenCount: TokenCountSource;
  // CompletionStream checked usage's counts against the request; anything else here counts as absent.
  const count0 = (x: number | undefined) => (Number.isSafeInteger(x) && (x as number) >= 0 ? x : undefined);
  const reported = count0(usage?.completion_tokens);
  if (reported !== undefined && reported >= 1 && !forced) {
    perChunk = spreadTokens(
      reported,
      chunks.map((c) => (count ? count(c.text) : c.text.length)),
    );
    tokenCount = 'usage';
  } else if (count) {
    perChunk = chunks.map((c) => Math.max(1, count(c.text)));
    tokenCount = 'tokenizer';
  } else {
    perChunk = chunks.map(() => 1);
    tokenCount = 'chunks';
  }
  const tokenTimesMs = tokenTimesFromChunks(
    chunks.map((c) => c.tMs),
    perChunk,
  );
  const n = tokenTimesMs.length;
  const promptTokens = count0(usage?.prompt_tokens) ?? 0;
  return {
    promptTokenIds: new Array<number>(promptTokens).fill(-1),
    outputTokenIds: new Array<number>(n).fill(-1),
    text,
    finishReason: forced ?? (finish === 'length' ? 'length' : 'stop'),
    tStartMs,
    tokenTimesMs,
    tokenCount,
    approximate: tokenCount === 'chunks',
    chunks: chunks.length,
    ...(usage
      ? { usage: { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens } }
      : {}),
  };
}
