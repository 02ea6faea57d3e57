/**
 * `npm run gguf-split` writes the bytes llama.cpp's `llama-gguf-split --split-max-tensors 16` writes for
 * stories260K (the SHA-256s are llama-gguf-split's own output; see src/gguf/split.test.ts), and bad
 * arguments fail clearly.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
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
