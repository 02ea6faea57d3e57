/**
 * `npm run quantize` as a user meets it, in this process (src/testing/cli-in-process.ts; the spawned entry
 * point is src/cli/usage.test.ts's and args.test.ts's): `--help` on stdout, and the arguments that cannot
 * give a model (an output folder that does not exist, a part of a split model) refused before any tensor is
 * quantized, naming what is wrong.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { writeTinyModel } from '../testing/gguf-util.ts';
import { useTempDirs } from '../testing/temp-dir.ts';

const tempDir = useTempDirs();

describe('npm run quantize', () => {
  it('--help: the usage on stdout, exit 0 (it was on stderr)', async () => {
    const r = await runCliInProcess('quantize', ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: npm run quantize -- IN\.gguf OUT\.gguf TYPE/);
    expect(r.stderr).toBe('');
  });

  it('a missing argument: the error in the common form, then the usage, on stderr (exit 2)', async () => {
    const r = await runCliInProcess('quantize', ['in.gguf', 'out.gguf']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error \[invalid_argument\]: give IN\.gguf, OUT\.gguf and TYPE \(got 2 arguments\)\n\nusage: npm run quantize/,
    );
  });

  it('an output folder that does not exist: a usage error naming it, before any tensor is quantized (exit 2)', async () => {
    const dir = tempDir('quant-cli-');
    const model = writeTinyModel(dir, 5);
    const out = join(dir, 'no', 'such', 'q.gguf');
    const r = await runCliInProcess('quantize', [model, out, 'Q8_0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `error [invalid_argument]: OUT.gguf ${out}: the folder ${join(dir, 'no', 'such')} does not exist ` +
        `(create it first: mkdir -p ${join(dir, 'no', 'such')})\n(npm run quantize -- --help lists the options)\n`,
    );
    expect(r.stdout).toBe(''); // no "[   1/…] token_embd.weight …" line: nothing was quantized
    // An output path that is a folder: refused the same way, not after the work as EISDIR.
    const isDir = await runCliInProcess('quantize', [model, dir, 'Q8_0']);
    expect(isDir.code).toBe(2);
    expect(isDir.stderr).toContain(`error [invalid_argument]: OUT.gguf ${dir} is a folder: give a file name`);
    expect(isDir.stdout).toBe('');
    // The same model into a folder that exists: quantized.
    const ok = await runCliInProcess('quantize', [model, join(dir, 'q.gguf'), 'Q8_0']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`wrote ${join(dir, 'q.gguf')}: Q8_0`);
  });

  it('a part of a split model is refused, naming the part, before anything is written (exit 1)', async () => {
    const dir = tempDir('quant-cli-');
    const split = await runCliInProcess('gguf-split', [
      writeTinyModel(dir, 5),
      join(dir, 'm'),
      '--n-parts',
      '2',
    ]);
    expect(split.code, split.stderr).toBe(0);
    const first = join(dir, 'm-00001-of-00002.gguf');
    const before = readdirSync(dir).sort();
    for (const [k, part] of [first, join(dir, 'm-00002-of-00002.gguf')].entries()) {
      const out = join(dir, `q${k}.gguf`);
      const r = await runCliInProcess('quantize', [part, out, 'Q8_0']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(
        `error [invalid_argument]: ${part} is part ${k + 1} of 2 of a split model (split.count 2): quantize ` +
          'takes a whole model',
      );
      expect(r.stderr).toContain(`llama-gguf-split --merge ${first} MERGED.gguf`);
      expect(existsSync(out)).toBe(false);
    }
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});
