/**
 * `npm run gguf-split` writes the bytes llama.cpp's `llama-gguf-split --split-max-tensors 16` writes for
 * stories260K (the SHA-256s are llama-gguf-split's own output; see src/gguf/split.test.ts), and bad
 * arguments fail clearly: the flags by their names, before anything is read or written (in this process,
 * src/testing/cli-in-process.ts, past the spawned cases).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { writeTinyModel } from '../testing/gguf-util.ts';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = stories260kPath();

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/gguf-split.ts', ...args],
      { cwd: ROOT },
      (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

describe('npm run gguf-split', () => {
  it('writes the same three files as llama-gguf-split --split-max-tensors 16', async () => {
    const dir = tempDir('gguf-split-cli-');
    const r = await run([MODEL, join(dir, 'st'), '--split-max-tensors', '16']);
    expect(r.code, r.stderr).toBe(0);
    const hashes = [1, 2, 3].map((k) =>
      createHash('sha256')
        .update(readFileSync(join(dir, `st-0000${k}-of-00003.gguf`)))
        .digest('hex'),
    );
    expect(hashes).toEqual([
      'c252e9461f6e3a172171674d3a8dcbca0ca8e24cc79cf6b2da8436d4c366f1e8',
      '409dfd1d598f8cdeb35150d43af8795cc6067876891ca0245a180da259f0bc39',
      '2247769163c62dbba2866836395b07b8cc09b721ef007da3b552fc0173052b74',
    ]);
  });

  it('a bad size or a missing input is a clear error', async () => {
    const bad = await run([MODEL, join(tempDir('gguf-split-cli-'), 'x'), '--split-max-size', '12']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/error \[invalid_argument\]: --split-max-size wants a number > 0 with M or G/);
    const missing = await run(['/no/such.gguf', join(tempDir('gguf-split-cli-'), 'x')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/error \[invalid_argument\]: cannot open model file \/no\/such\.gguf/);
  });
});

describe('npm run gguf-split, in this process', () => {
  it('--help: the usage on stdout, exit 0 (it was on stderr)', async () => {
    const r = await runCliInProcess('gguf-split', ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: npm run gguf-split -- IN\.gguf OUT_PREFIX/);
    expect(r.stderr).toBe('');
  });

  it('a missing argument: the error in the common form, then the usage, on stderr (exit 2)', async () => {
    const r = await runCliInProcess('gguf-split', [MODEL]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error \[invalid_argument\]: give IN\.gguf and OUT_PREFIX \(got 1 argument\)\n\nusage: npm run gguf-split/,
    );
  });

  it('two part limits: a usage error naming the flags, not the options object (exit 2)', async () => {
    const dir = tempDir('gguf-split-cli-');
    const r = await runCliInProcess('gguf-split', [
      MODEL,
      join(dir, 'x'),
      '--n-parts',
      '2',
      '--split-max-tensors',
      '3',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'error [invalid_argument]: give at most one of --split-max-tensors, --split-max-size and --n-parts ' +
        '(got --split-max-tensors, --n-parts)\n(npm run gguf-split -- --help lists the options)\n',
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an output folder that does not exist: a usage error naming it, before the model is read (exit 2)', async () => {
    const dir = tempDir('gguf-split-cli-');
    const r = await runCliInProcess('gguf-split', [MODEL, join(dir, 'no', 'such', 'st'), '--n-parts', '2']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `error [invalid_argument]: OUT_PREFIX ${join(dir, 'no', 'such', 'st')}: the folder ${join(dir, 'no', 'such')} does not exist`,
    );
    expect(r.stderr).not.toContain('ENOENT');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a part of a split model is refused, naming the part, before anything is written (exit 1)', async () => {
    const dir = tempDir('gguf-split-cli-');
    const model = writeTinyModel(dir, 3);
    const made = await runCliInProcess('gguf-split', [model, join(dir, 'm'), '--n-parts', '3']);
    expect(made.code, made.stderr).toBe(0);
    const parts = [1, 2, 3].map((k) => join(dir, `m-0000${k}-of-00003.gguf`));
    const before = readdirSync(dir).sort();
    for (const [k, part] of parts.entries()) {
      const r = await runCliInProcess('gguf-split', [part, join(dir, `again${k}`), '--n-parts', '2']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(
        `error [invalid_argument]: ${part} is part ${k + 1} of 3 of a split model (split.count 3): gguf-split ` +
          'takes a whole model',
      );
      expect(r.stderr).toContain(`llama-gguf-split --merge ${parts[0]} MERGED.gguf`);
    }
    expect(readdirSync(dir).sort()).toEqual(before);
    // The whole model still splits (a split into one part is a whole model too: split.count 1).
    const one = await runCliInProcess('gguf-split', [model, join(dir, 'one'), '--n-parts', '1']);
    expect(one.code, one.stderr).toBe(0);
    const again = await runCliInProcess('gguf-split', [
      join(dir, 'one-00001-of-00001.gguf'),
      join(dir, 'two'),
      '--n-parts',
      '2',
    ]);
    expect(again.code, again.stderr).toBe(0);
  });
});
