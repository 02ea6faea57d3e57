/**
 * The benchmark's default plan, one for both places that run it: the page's plan form (src/ui/bench-view.ts)
 * and `npm run bench` (src/cli/bench.ts, its flags' defaults and --help). Figures taken with the defaults
 * on the page and on the command line are then measured the same way and can be compared.
 */
import type { PromptSetName } from './prompts.ts';

/** The default plan: the built-in prompt set, tokens per run, measured runs per prompt, warm-up runs. */
export const DEFAULT_PLAN = {
  /** The built-in prompt set (three short prompts). */
  promptSet: 'short' as PromptSetName,
  /** New tokens per run. */
  maxTokens: 128,
  /** Measured runs per prompt. */
  runs: 2,
  /** Warm-up runs (the first prompt), not counted. */
  warmup: 1,
  /** Stop at end-of-generation (false: fixed-length decode is an option, `--ignore-eos`). */
  ignoreEos: false,
} as const;

/** The default plan in words, e.g. "short prompts, 128 tokens × 2 runs per prompt, 1 warm-up run, greedy". */
export function defaultPlanText(): string {
  const p = DEFAULT_PLAN;
  return (
    `${p.promptSet} prompts, ${p.maxTokens} tokens × ${p.runs} runs per prompt, ` +
    `${p.warmup} warm-up run${p.warmup === 1 ? '' : 's'}, greedy${p.ignoreEos ? ', EOS ignored' : ''}`
  );
}
