/**
 * `npm run bench:node`'s command line (scripts/bench-node.ts): --help and bad arguments are answered before
 * any GPU work, as the other commands answer them (src/cli/run.ts runCli): usage on stdout with exit 0, or
 * `error [invalid_argument]: …` with exit 2, never a Node stack trace.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isUsageError } from '../src/cli/args.ts';
import { parseBenchNodeArgs, USAGE } from './bench-node.ts';

const ROOT = resolve(import.meta.dirname, '..');

/** The script run as `npm run bench:node` runs it (tsx), with `args`. */
function benchNode(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench-node.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('bench:node command line', () => {
  it('--help prints the usage on stdout and exits 0', () => {
    const r = benchNode('--help');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${USAGE}\n`);
    expect(r.stdout).toMatch(/^usage: npm run bench:node -- /);
    expect(r.stderr).toBe('');
  });

  it('an unknown flag and a bad number are usage errors: one error line, exit 2, no stack trace', () => {
    for (const [args, message] of [
      [['--nope'], "error [invalid_argument]: Unknown option '--nope'"],
      [['--reps', '0'], 'error [invalid_argument]: --reps must be an integer ≥ 1, got "0"'],
    ] as const) {
      const r = benchNode(...args);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr.split('\n')).toEqual([message, '(npm run bench:node -- --help lists the options)', '']);
      expect(r.stdout).toBe('');
    }
  });

  it('reads the options, with their defaults', () => {
    expect(parseBenchNodeArgs([])).toEqual({
      models: ['synthetic:stories260k-f32', 'synthetic:stories15m-q4_0'],
      nPrompt: 128,
      nGen: 64,
      reps: 3,
      gpu: false,
      budgetS: 300,
      json: undefined,
      md: undefined,
    });
    expect(
      parseBenchNodeArgs([
        '--models',
        'a.gguf,,b.gguf',
        '--n-prompt',
        '16',
        '--n-gen',
        '8',
        '--reps',
        '1',
        '--gpu',
        '--budget-s',
        '2.5',
        '--json',
        'out/r.json',
        '--md',
        'out/r.md',
      ]),
    ).toEqual({
      models: ['a.gguf', 'b.gguf'],
      nPrompt: 16,
      nGen: 8,
      reps: 1,
      gpu: true,
      budgetS: 2.5,
      json: 'out/r.json',
      md: 'out/r.md',
    });
    expect(parseBenchNodeArgs(['-h'])).toBe('help');
    for (const bad of [['--n-gen', 'abc'], ['--budget-s', '0'], ['--wat'], ['--json']]) {
      let thrown: unknown;
      try {
        parseBenchNodeArgs(bad);
      } catch (e) {
        thrown = e;
      }
      expect(isUsageError(thrown), `${bad.join(' ')}: ${thrown}`).toBe(true);
    }
  });
});
