/**
 * The timing summary `npm run generate` prints on stderr at the end, in llama-cli's layout
 * (`llama_perf_context_print`: prompt eval, eval, total), from the engine's own timestamps and the
 * definitions of src/core/metrics.ts:
 *
 * - prompt eval time = TTFT (request start → first output token: tokenizing, prefill and the first
 *   token), over the prompt's tokens (BOS included): ms per token and prefill tok/s = prompt tokens ÷ TTFT;
 * - eval time = E2E − TTFT, over the n − 1 tokens after the first: TPOT and decode tok/s;
 * - total time = E2E (request start → last token), over prompt and output tokens.
 */
import { decodeTokPerS, e2eMs, prefillTokPerS, tpotMs, ttftMs } from '../core/metrics.ts';
import type { GenerateResult } from '../core/types.ts';

const f2 = (x: number, width: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a').padStart(width);
const n5 = (n: number) => String(n).padStart(5);

/**
 * The summary's lines (no trailing newline), e.g.
 * `prompt eval time =      45.12 ms /     9 tokens (    5.01 ms per token,   199.47 tokens per second)`.
 * A result without output tokens (stopped before the first) gives one line saying so.
 */
export function formatTimings(
  r: Pick<GenerateResult, 'promptTokenIds' | 'tStartMs' | 'tokenTimesMs' | 'finishReason'>,
): string {
  const g = { tStartMs: r.tStartMs, tokenTimesMs: r.tokenTimesMs, promptTokens: r.promptTokenIds.length };
  const nOut = r.tokenTimesMs.length;
  if (nOut === 0)
    return `no timings: no output token came (finish reason ${r.finishReason}), so there is no TTFT or decode rate`;
  const ttft = ttftMs(g);
  const e2e = e2eMs(g);
  const evalMs = e2e - ttft;
  return [
    `prompt eval time = ${f2(ttft, 10)} ms / ${n5(g.promptTokens)} tokens (${f2(g.promptTokens > 0 ? ttft / g.promptTokens : Number.NaN, 8)} ms per token, ${f2(prefillTokPerS(g), 8)} tokens per second)`,
    `       eval time = ${f2(evalMs, 10)} ms / ${n5(nOut - 1)} tokens (${f2(tpotMs(g), 8)} ms per token, ${f2(decodeTokPerS(g), 8)} tokens per second)`,
    `      total time = ${f2(e2e, 10)} ms / ${n5(g.promptTokens + nOut)} tokens`,
  ].join('\n');
}

/**
 * The line for a `--ctx` above what the model was trained for: the engine caps the context at the model's
 * own (`ModelInfo.contextLength` is what it got), which used to happen without a word. llama.cpp allows a
 * longer context with a warning; here the cap is said. Undefined when nothing was cut.
 */
export function contextNote(asked: number | undefined, got: number): string | undefined {
  if (asked === undefined || asked <= got) return undefined;
  return (
    `note: --ctx ${asked} is above the model's training context, so the context is ${got} tokens (the ` +
    "model's own; past it a model's output is unreliable)"
  );
}
