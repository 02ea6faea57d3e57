/**
 * `npm run generate` as a user runs it, in both runtimes: the JSON output equals llama.cpp's greedy
 * tokens (tests/golden), the streamed text is printed, and bad input exits non-zero with the error code.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = resolve(ROOT, '../shared/models/stories260K.gguf');
const run = promisify(execFile);

async function generate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli/generate.ts', ...args], {
      cwd: ROOT,
      timeout: 120_000,
    });
    return { code: 0, ...r };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

describe('npm run generate', () => {
  const c = golden.generation.cases[0];
  it.each(['browser', 'node'])(
    'runtime %s: greedy tokens equal llama.cpp and --json has the documented shape',
    async (runtime) => {
      const out = join(mkdtempSync(join(tmpdir(), 'gen-')), 'out.json');
      const r = await generate([
        '--runtime',
        runtime,
        '--model',
        MODEL,
        '--prompt',
        c.prompt,
        '--max-tokens',
        '24',
        '--json',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      const j = JSON.parse(readFileSync(out, 'utf8'));
      expect(Object.keys(j).sort()).toEqual(['outputTokenIds', 'promptTokenIds', 'text']);
      expect(j.promptTokenIds).toEqual(c.promptIds);
      expect(j.outputTokenIds).toEqual(c.outputIds.slice(0, 24));
      expect(r.stdout).toContain(j.text);
    },
  );

  it('fails with the error code for a prompt longer than the context', async () => {
    const r = await generate([
      '--runtime',
      'node',
      '--model',
      MODEL,
      '--prompt',
      'Once upon a time '.repeat(100),
      '--ctx',
      '64',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\[context_overflow\].*tokens but the context holds 64/);
  });

  it('fails clearly for a missing file', async () => {
    const r = await generate(['--model', '/nonexistent/model.gguf']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\[invalid_argument\]: .*no such file/);
  });
});
