/**
 * Numbers on the command line are read strictly (src/cli/args.ts): in-process for the readers, and for
 * every command (generate, bench, perplexity, quantize, models, gguf-split, bench --engine remote) a bad
 * number or option exits 2 with `error [invalid_argument]: --flag …` before any model is opened or any
 * request is sent.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { findStories260K } from '../testing/models.ts';
import {
  checkOutputFolder,
  chromiumArg,
  draftArgs,
  formatSpeculative,
  intArg,
  intListArg,
  isUsageError,
  kvTypeArg,
  kvTypesArg,
  numArg,
  samplingArgs,
  secondsArg,
  UsageError,
} from './args.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = findStories260K() ?? '/no/model.gguf'; // usage errors come first: the file need not exist

/** The command as a user runs it: a spawned `node --import tsx` (seconds of start-up on a loaded CI machine). */
function spawnCli(script: string, args: string[]): Promise<{ code: number; stderr: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', `src/cli/${script}.ts`, ...args],
      { cwd: ROOT, timeout: 60_000 },
      (err, _stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stderr, ms: performance.now() - t0 }),
    );
  });
}

describe('the readers', () => {
  it('intArg: integers only, in range; absent gives the default', () => {
    expect(intArg(undefined, 'runs', 1, 2)).toBe(2);
    expect(intArg('3', 'runs', 1, 2)).toBe(3);
    for (const v of ['', 'abc', 'NaN', '1.5', '1e1', '0x10', ' 3', '0'])
      expect(() => intArg(v, 'runs', 1, 2), JSON.stringify(v)).toThrow(UsageError);
    expect(() => intArg('', 'max-tokens', 1, 64)).toThrow(/^--max-tokens must be an integer ≥ 1, got ""$/);
    expect(() => intArg('70000', 'n-parts', 1, 0, 65535)).toThrow(/≥ 1 and ≤ 65535/);
  });
  it('numArg and secondsArg: finite decimals, bounds', () => {
    expect(numArg('0.5', 'x')).toBe(0.5);
    expect(numArg(undefined, 'x')).toBeUndefined();
    for (const v of ['', 'abc', 'NaN', 'Infinity', '0x10'])
      expect(() => numArg(v, 'x'), JSON.stringify(v)).toThrow(UsageError);
    expect(() => numArg('-1', 'fail-over-ttft-ms', { min: 0 })).toThrow(/≥ 0, got "-1"/);
    expect(() => secondsArg('0', 'timeout-s')).toThrow(/> 0/);
    // Beyond a timer's 2^31 − 1 ms, setTimeout fires at once: refused.
    expect(() => secondsArg('3000000', 'timeout-s')).toThrow(/≤ 2147483/);
    expect(secondsArg('2147483', 'timeout-s')).toBe(2147483);
  });
  it('intListArg', () => {
    expect(intListArg('0, 512', 'depth', 0, [0])).toEqual([0, 512]);
    expect(intListArg(undefined, 'depth', 0, [7])).toEqual([7]);
    for (const v of ['', '1,', 'a', '1.5', '-1'])
      expect(() => intListArg(v, 'depth', 0, [0]), JSON.stringify(v)).toThrow(UsageError);
  });
  it('draftArgs: --draft / --lookup / --draft-max as GenerateRequest.draft', () => {
    expect(draftArgs({})).toBeUndefined();
    expect(draftArgs({ lookup: true })).toEqual({ type: 'lookup' });
    expect(draftArgs({ lookup: true, 'draft-max': '16' })).toEqual({ type: 'lookup', draftMax: 16 });
    expect(draftArgs({ draft: 'd.gguf', 'draft-max': '1' })).toEqual({ type: 'model', draftMax: 1 });
    for (const bad of [
      { 'draft-max': '4' },
      { lookup: true, 'draft-max': '0' },
      { lookup: true, 'draft-max': '17' },
      { lookup: true, 'draft-max': 'x' },
      { lookup: true, draft: 'd.gguf' },
      { draft: '' },
    ])
      expect(() => draftArgs(bad), JSON.stringify(bad)).toThrow(UsageError);
    expect(
      formatSpeculative({
        outputTokenIds: [1, 2, 3, 4, 5],
        speculative: { drafted: 6, accepted: 3, targetPasses: 1 },
      }),
    ).toBe(
      'speculative: 3 of 6 drafted tokens accepted (50.0%), 1 target passes after the prefill, 4.00 tokens per pass',
    );
  });
  it('samplingArgs: the engine API rules, named by flag', () => {
    expect(samplingArgs({ temperature: '0.8', seed: '7', 'top-k': '40', 'top-p': '0.9' })).toEqual({
      temperature: 0.8,
      seed: 7,
      topK: 40,
      topP: 0.9,
    });
    expect(() => samplingArgs({ temperature: 'abc' })).toThrow(
      /^--temperature must be a finite number ≥ 0, got "abc"$/,
    );
    expect(() => samplingArgs({ temperature: 'NaN' })).toThrow(/--temperature/);
    expect(() => samplingArgs({ seed: 'abc' })).toThrow(/^--seed must be an integer, got "abc"$/);
    expect(() => samplingArgs({ 'top-p': '0' })).toThrow(/--top-p must be a finite number > 0 and ≤ 1/);
    expect(() => samplingArgs({ 'repeat-penalty': '' })).toThrow(/--repeat-penalty/);
  });
  it('kvTypeArg: f16, f32, q8_0 or q4_0 exactly; absent is the engine default', () => {
    expect(kvTypeArg(undefined)).toBeUndefined();
    for (const t of ['f16', 'f32', 'q8_0', 'q4_0']) expect(kvTypeArg(t)).toBe(t);
    for (const v of ['', 'F16', 'Q8_0', 'q5_0', 'q4_1', 'f16 ', 'fp16', 'bf16'])
      expect(() => kvTypeArg(v), JSON.stringify(v)).toThrow(UsageError);
    expect(() => kvTypeArg('F16')).toThrow(/^--kv-type must be f16, f32, q8_0 or q4_0, got "F16"$/);
  });
  it('kvTypesArg: --kv-type, --kv-type-k, --kv-type-v as LoadOptions, only those given', () => {
    expect(kvTypesArg({})).toEqual({});
    expect(kvTypesArg({ 'kv-type': 'q8_0' })).toEqual({ kvType: 'q8_0' });
    expect(kvTypesArg({ 'kv-type': 'f16', 'kv-type-v': 'q4_0' })).toEqual({ kvType: 'f16', kvTypeV: 'q4_0' });
    expect(kvTypesArg({ 'kv-type-k': 'q8_0' })).toEqual({ kvTypeK: 'q8_0' });
    expect(() => kvTypesArg({ 'kv-type-v': 'q5_0' })).toThrow(
      /^--kv-type-v must be f16, f32, q8_0 or q4_0, got "q5_0"$/,
    );
  });
  it('chromiumArg: --chromium or its alias --browser; both only when they agree', () => {
    expect(chromiumArg({})).toBeUndefined();
    expect(chromiumArg({ chromium: '/c' })).toBe('/c');
    expect(chromiumArg({ browser: '/b' })).toBe('/b');
    expect(chromiumArg({ chromium: '/c', browser: '/c' })).toBe('/c');
    expect(() => chromiumArg({ chromium: '/c', browser: '/b' })).toThrow(UsageError);
    expect(() => chromiumArg({ chromium: '/c', browser: '/b' })).toThrow(
      '--browser is an alias of --chromium; give one of them, not both ("/c", "/b")',
    );
  });
  it('isUsageError: ours and parseArgs errors', () => {
    expect(isUsageError(new UsageError('x'))).toBe(true);
    expect(isUsageError(Object.assign(new TypeError('x'), { code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }))).toBe(
      true,
    );
    expect(isUsageError(new Error('x'))).toBe(false);
  });
});

describe('checkOutputFolder', () => {
  it('refuses a file that cannot be opened even where the folder passes (/proc), and leaves no file behind', () => {
    expect(() => checkOutputFolder('/proc/x.json', '--json')).toThrow(
      /^--json \/proc\/x\.json cannot be written \(ENOENT.*\): give a writable path$/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'out-folder-'));
    try {
      const fresh = join(dir, 'new.json');
      checkOutputFolder(fresh, '--json');
      expect(existsSync(fresh)).toBe(false); // opened to check, removed again
      const kept = join(dir, 'kept.json');
      writeFileSync(kept, 'old');
      checkOutputFolder(kept, '--json');
      expect(readFileSync(kept, 'utf8')).toBe('old'); // an existing file is not touched
      expect(() => checkOutputFolder(join(dir, 'no', 'x.json'), '--json')).toThrow(
        /the folder .* does not exist/,
      );
      expect(() => checkOutputFolder(dir, '--json')).toThrow(/is a folder: give a file name$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('every command: a bad number or option exits 2, before any work', () => {
  // A missing model file would say "no such file" if the number got through.
  const cases: [string, string[], RegExp][] = [
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--temperature', 'abc'],
      /--temperature must be a finite number ≥ 0, got "abc"/,
    ],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--temperature', 'NaN'],
      /--temperature must be/,
    ],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--seed', 'abc'],
      /--seed must be an integer, got "abc"/,
    ],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--max-tokens', ''],
      /--max-tokens must be an integer ≥ 1, got ""/,
    ],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--ctx', '64k'],
      /--ctx must be an integer ≥ 1, got "64k"/,
    ],
    ['bench', ['--model', '/no/model.gguf', '--warmup', ''], /--warmup must be an integer ≥ 0, got ""/],
    [
      'bench',
      ['--model', '/no/model.gguf', '--timeout-s', '0x10'],
      /--timeout-s must be a finite number > 0/,
    ],
    ['bench', ['--llama-bench', '--reps', '2.5'], /--reps must be an integer ≥ 1, got "2\.5"/],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--kv-type', 'F16'],
      /--kv-type must be f16, f32, q8_0 or q4_0, got "F16"/,
    ],
    [
      'generate',
      ['--model', '/no/model.gguf', '--prompt', 'x', '--runtime', 'node', '--kv-type-k', 'q5_0'],
      /--kv-type-k must be f16, f32, q8_0 or q4_0, got "q5_0"/,
    ],
    [
      'bench',
      ['--model', '/no/model.gguf', '--kv-type', ''],
      /--kv-type must be f16, f32, q8_0 or q4_0, got ""/,
    ],
    ['bench', ['--model', '/no/model.gguf', '--kv-type-v', 'Q4_0'], /--kv-type-v must be .*, got "Q4_0"/],
    [
      'perplexity',
      ['--model', '/no/model.gguf', '--text', '/no/t.txt', '--kv-type', 'f8'],
      /--kv-type must be f16, f32, q8_0 or q4_0, got "f8"/,
    ],
    [
      'bench',
      ['--model', '/no/model.gguf', '--temperature', 'abc'],
      /--temperature must be a finite number ≥ 0, got "abc"/,
    ],
    ['bench', ['--model', '/no/model.gguf', '--top-p', '0'], /--top-p must be a finite number > 0 and ≤ 1/],
    ['bench', ['--model', '/no/model.gguf', '--top-k', '2.5'], /--top-k must be an integer ≥ 0, got "2\.5"/],
    ['bench', ['--model', '/no/model.gguf', '--min-p', '1.5'], /--min-p must be a finite number ≥ 0 and ≤ 1/],
    [
      'bench',
      ['--model', '/no/model.gguf', '--repeat-penalty', '0'],
      /--repeat-penalty must be a finite number > 0/,
    ],
    ['bench', ['--model', '/no/model.gguf', '--seed', 'x'], /--seed must be an integer, got "x"/],
    [
      'bench',
      ['--llama-bench', '--temperature', '0.8', '--top-p', '0.95'],
      /--temperature, --top-p apply to the prompt plan; --llama-bench's tg tests decode greedily/,
    ],
    [
      'perplexity',
      ['--model', '/no/model.gguf', '--text', '/no/t.txt', '--ctx', 'abc'],
      /--ctx must be an integer ≥ 2, got "abc"/,
    ],
    ['quantize', ['/no/in.gguf', '/no/out.gguf', 'Q9_9'], /unknown type Q9_9/],
    ['models', ['list', '--bogus'], /Unknown option '--bogus'/],
    [
      'gguf-split',
      [MODEL, '/no/such/dir/x', '--n-parts', ''],
      /--n-parts must be an integer ≥ 1 and ≤ 65535, got ""/,
    ],
    [
      'gguf-split',
      [MODEL, '/no/such/dir/x', '--split-max-tensors', 'abc'],
      /--split-max-tensors must be an integer ≥ 1/,
    ],
    [
      'bench',
      ['--engine', 'remote', '--base-url', 'http://127.0.0.1:9', '--max-tokens', 'abc'],
      /--max-tokens must be an integer ≥ 1, got "abc"/,
    ],
    [
      'bench',
      ['--engine', 'remote', '--base-url', 'http://127.0.0.1:9', '--fail-under-decode-tps', 'fast'],
      /--fail-under-decode-tps must be a finite number ≥ 0, got "fast"/,
    ],
    [
      'bench',
      ['--engine', 'remote', '--base-url', 'http://127.0.0.1:9', '--concurrency', ''],
      /--concurrency is empty/,
    ],
  ];
  // In this process (src/testing/cli-in-process.ts: the command's `main` and runCli's error report), since
  // 29 spawned runs took about a minute of CI's 90; the test below spawns each command's first case.
  it.each(cases)('%s %j', async (script, args, msg) => {
    const r = await runCliInProcess(script, args);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/error(?: \[invalid_argument\])?: /);
    expect(r.stderr).toMatch(msg);
  });

  it("each command's own entry point, spawned, exits 2 with the message (its first case above)", async () => {
    const first = [...new Map(cases.map((c) => [c[0], c] as const)).values()];
    expect(first.map((c) => c[0]).sort()).toEqual([
      'bench',
      'generate',
      'gguf-split',
      'models',
      'perplexity',
      'quantize',
    ]);
    for (const [script, args, msg] of first) {
      const r = await spawnCli(script, args);
      expect(r.code, `${script}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/error(?: \[invalid_argument\])?: /);
      expect(r.stderr).toMatch(msg);
    }
  }, 240_000); // six spawned commands, seconds of start-up each on a loaded 2-core machine
});
