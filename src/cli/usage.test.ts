/**
 * The commands' surface as a user meets it: `--help` prints on stdout and exits 0 (generate used to print
 * it on stderr); bench and generate name the Chromium the same way (`--chromium PATH`, with `--browser
 * PATH` a documented alias that works the same); bench lists every flag it takes.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function cli(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', `src/cli/${script}.ts`, ...args],
      { cwd: ROOT, timeout: 60_000, env },
      (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

describe('--help', () => {
  it.each(['bench', 'generate', 'perplexity'])('%s --help: the usage on stdout, exit 0', async (script) => {
    const r = await cli(script, ['--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^usage: npm run ${script} -- `));
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^ {2}--chromium PATH {2,}Chromium to use/m);
    expect(r.stdout).toMatch(/^ {2}--browser PATH {2,}alias of --chromium$/m);
  });

  it('bench --help lists every flag bench reads, --no-cpu-match and --verbose among them', async () => {
    const r = await cli('bench', ['--help']);
    for (const flag of [
      '--no-cpu-match',
      '--verbose',
      '--no-roofline',
      '--kv-type',
      '--default-limits',
      '--junit',
      '--summary-md',
      '--allow-software',
      '--headed',
    ])
      expect(r.stdout).toMatch(new RegExp(`^ {2}${flag}\\b`, 'm'));
  });

  it.runIf(process.platform === 'linux')(
    'bench --headed with no display: a usage error naming xvfb-run (exit 2)',
    async () => {
      const { DISPLAY: _d, WAYLAND_DISPLAY: _w, ...env } = process.env;
      const r = await cli('bench', ['--headed', '--model', 'synthetic:stories260k-f32'], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--headed needs a display and none is set ($DISPLAY)');
      expect(r.stderr).toContain('xvfb-run -a npm run bench -- --headed');
    },
  );

  it('bench with an empty --junit or --summary-md (an unset $GITHUB_STEP_SUMMARY): exit 2', async () => {
    const r = await cli('bench', ['--summary-md', '', '--model', 'synthetic:stories260k-f32']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--summary-md is empty: give the file to append to (is $GITHUB_STEP_SUMMARY set?)',
    );
    const j = await cli('bench', ['--junit=', '--model', 'synthetic:stories260k-f32']);
    expect(j.code).toBe(2);
    expect(j.stderr).toContain('--junit is empty');
  });

  it('generate --help names the timing summary on stderr', async () => {
    const r = await cli('generate', ['--help']);
    expect(r.stdout).toMatch(/timing summary goes to stderr: prompt\s+eval time \(TTFT/);
  });

  it('generate without --model: the error and the usage on stderr, exit 2', async () => {
    const r = await cli('generate', ['--prompt', 'x']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error \[invalid_argument\]: --model is required\n\nusage: npm run generate/);
  });
});

describe('--chromium PATH and its alias --browser PATH', () => {
  it.each(['--chromium', '--browser'])(
    'bench %s /nonexistent: the same error naming the path',
    async (flag) => {
      const r = await cli('bench', [flag, '/nonexistent/chrome', '--model', 'synthetic:stories260k-f32']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('Chromium not found at /nonexistent/chrome (given as an option)');
    },
  );

  it.each(['bench', 'generate'])('%s with both, different paths: a usage error (exit 2)', async (script) => {
    const r = await cli(script, [
      '--chromium',
      '/a/chrome',
      '--browser',
      '/b/chrome',
      '--model',
      'synthetic:stories260k-f32',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('error [invalid_argument]: --browser is an alias of --chromium');
  });
});
