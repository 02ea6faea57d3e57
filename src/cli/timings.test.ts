/**
 * generate's closing timing summary (src/cli/timings.ts): llama-cli's three lines, from the engine's
 * timestamps by src/core/metrics.ts's definitions (prompt eval = TTFT, eval = the n − 1 tokens after the
 * first).
 */
import { describe, expect, it } from 'vitest';
import { contextNote, formatTimings } from './timings.ts';

const result = (promptTokens: number, tStartMs: number, tokenTimesMs: number[]) => ({
  promptTokenIds: Array.from({ length: promptTokens }, (_, i) => i),
  tStartMs,
  tokenTimesMs,
  finishReason: 'length' as const,
});

describe('formatTimings', () => {
  it("prompt eval = TTFT over the prompt's tokens, eval = the tokens after the first, total = E2E", () => {
    // 10 prompt tokens; first token 100 ms after the start, then 3 more 20 ms apart.
    const text = formatTimings(result(10, 1000, [1100, 1120, 1140, 1160]));
    expect(text.split('\n')).toEqual([
      'prompt eval time =     100.00 ms /    10 tokens (   10.00 ms per token,   100.00 tokens per second)',
      '       eval time =      60.00 ms /     3 tokens (   20.00 ms per token,    50.00 tokens per second)',
      '      total time =     160.00 ms /    14 tokens',
    ]);
  });

  it('one output token: no decode rate; none: says so instead of dividing by zero', () => {
    const one = formatTimings(result(4, 0, [8])).split('\n');
    expect(one[0]).toBe(
      'prompt eval time =       8.00 ms /     4 tokens (    2.00 ms per token,   500.00 tokens per second)',
    );
    expect(one[1]).toBe(
      '       eval time =       0.00 ms /     0 tokens (     n/a ms per token,      n/a tokens per second)',
    );
    expect(formatTimings({ ...result(4, 0, []), finishReason: 'aborted' })).toBe(
      'no timings: no output token came (finish reason aborted), so there is no TTFT or decode rate',
    );
  });
});

describe('contextNote (issue 47: --ctx above the model context was cut without a word)', () => {
  it('says the cap when the engine gave less than asked, nothing otherwise', () => {
    expect(contextNote(100_000, 2048)).toBe(
      "note: --ctx 100000 is above the model's training context, so the context is 2048 tokens (the model's own; past it a model's output is unreliable)",
    );
    expect(contextNote(2048, 2048)).toBeUndefined();
    expect(contextNote(512, 2048)).toBeUndefined();
    expect(contextNote(undefined, 2048)).toBeUndefined();
  });
});
