/**
 * One default plan for the page and `npm run bench` (issue 19): the CLI's --help names the same numbers
 * the page's form starts with (both read src/bench/default-plan.ts).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PLAN, defaultPlanText } from './default-plan.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('DEFAULT_PLAN', () => {
  it('is the plan npm run bench has always had: short prompts, 128 tokens × 2 runs, 1 warm-up', () => {
    expect(DEFAULT_PLAN).toEqual({
      promptSet: 'short',
      maxTokens: 128,
      runs: 2,
      warmup: 1,
      ignoreEos: false,
    });
    expect(defaultPlanText()).toBe('short prompts, 128 tokens × 2 runs per prompt, 1 warm-up run, greedy');
  });

  it('bench --help gives the same defaults and says the page shares them', async () => {
    const stdout = await new Promise<string>((ok, fail) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/cli/bench.ts', '--help'],
        { cwd: ROOT, timeout: 60_000 },
        (err, out) => (err ? fail(err) : ok(out)),
      ),
    );
    expect(stdout).toMatch(/^ {2}--max-tokens N +new tokens per run \(default 128\)$/m);
    expect(stdout).toMatch(/^ {2}--runs N +measured runs per prompt \(default 2\)$/m);
    expect(stdout).toMatch(/^ {2}--warmup N +warm-up runs, not counted \(default 1\)$/m);
    expect(stdout).toMatch(/short, medium, long, all \(default: short\)/);
    expect(stdout.replace(/\s+/g, ' ')).toContain(
      `The default plan (${defaultPlanText()}) is the benchmark page's default too`,
    );
  });
});
