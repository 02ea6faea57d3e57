/** The engine's own figures beside ours in the result view (WebLLM's usage.extra, kept apart). */
import { describe, expect, it } from 'vitest';
import type { BenchRun } from '../bench/types.ts';
import { engineFigureRows } from './bench-result.ts';

const run = (engineReported?: Record<string, number>): BenchRun => ({
  prompt: 'p',
  promptTokens: 1,
  outputTokens: 2,
  outputTokenIds: [-1, -1],
  text: 'ab',
  ttftMs: 10,
  itlMs: [5],
  tpotMs: 5,
  e2eMs: 15,
  prefillTokensPerSecond: 100,
  decodeTokensPerSecond: 200,
  ...(engineReported ? { engineReported } : {}),
});

describe('engineFigureRows', () => {
  it('medians of the engine’s figures, seconds as ms, our median beside the matching metric', () => {
    const rows = engineFigureRows({
      runs: [
        run({ decode_tokens_per_s: 40, time_to_first_token_s: 0.1, custom: 7 }),
        run({ decode_tokens_per_s: 60, time_to_first_token_s: 0.3 }),
        run({ decode_tokens_per_s: 50, time_to_first_token_s: 0.2 }),
      ],
      summary: {
        decodeTokensPerSecond: { mean: 1, median: 55, p90: 1, p99: 1, std: 0, min: 1, max: 1, n: 3 },
      } as never,
    });
    expect(rows).toEqual([
      { key: 'decode_tokens_per_s', label: 'Decode (tok/s)', median: 50, ours: 55 },
      { key: 'time_to_first_token_s', label: 'TTFT (ms)', median: 200 },
      { key: 'custom', label: 'custom', median: 7 },
    ]);
  });
  it('nothing when no run carries engine figures (our engine)', () => {
    expect(engineFigureRows({ runs: [run(), run()], summary: {} })).toEqual([]);
  });
});
