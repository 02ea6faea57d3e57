/**
 * The commands' surface as a user meets it: `--help` prints on stdout and exits 0 (generate used to print
 * it on stderr); bench and generate name the Chromium the same way (`--chromium PATH`, with `--browser
 * PATH` a documented alias that works the same); bench lists every flag it takes.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-in-process.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The command spawned as a user runs it (`node --import tsx`: seconds of start-up on a loaded CI machine),
 * for what the real process shows: `--help` on stdout with exit 0, a usage error's exit 2, bench:report.
 */
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

/** The same in this process (src/testing/cli-in-process.ts), for the other cases: CI's 90-minute limit. */
const inProcess = runCliInProcess;

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
    const r = await inProcess('bench', ['--help']);
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
      const r = await inProcess('bench', ['--headed', '--model', 'synthetic:stories260k-f32'], {
        DISPLAY: undefined,
        WAYLAND_DISPLAY: undefined,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--headed needs a display and none is set ($DISPLAY)');
      expect(r.stderr).toContain('xvfb-run -a npm run bench -- --headed');
    },
  );

  it('bench with an empty --junit or --summary-md (an unset $GITHUB_STEP_SUMMARY): exit 2', async () => {
    const r = await inProcess('bench', ['--summary-md', '', '--model', 'synthetic:stories260k-f32']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--summary-md is empty: give the file to append to (is $GITHUB_STEP_SUMMARY set?)',
    );
    const j = await inProcess('bench', ['--junit=', '--model', 'synthetic:stories260k-f32']);
    expect(j.code).toBe(2);
    expect(j.stderr).toContain('--junit is empty');
  });

  it('generate --help names the timing summary on stderr', async () => {
    const r = await inProcess('generate', ['--help']);
    expect(r.stdout).toMatch(/timing summary goes to stderr: prompt\s+eval time \(TTFT/);
  });

  it('generate without --model: the error and the usage on stderr, exit 2', async () => {
    const r = await cli('generate', ['--prompt', 'x']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error \[invalid_argument\]: --model is required\n\nusage: npm run generate/);
  });
});

it('models with an unknown command names it (exit 2) before the usage', async () => {
  const r = await inProcess('models', ['frobnicate']);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(
    /^error \[invalid_argument\]: unknown command frobnicate: list, pull, rm or clear\n\nusage: npm run models/,
  );
});

describe('--chromium PATH and its alias --browser PATH', () => {
  it.each(['--chromium', '--browser'])(
    'bench %s /nonexistent: the same error naming the path',
    async (flag) => {
      const r = await inProcess('bench', [
        flag,
        '/nonexistent/chrome',
        '--model',
        'synthetic:stories260k-f32',
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        'error [invalid_argument]: Chromium not found at /nonexistent/chrome (given as an option)',
      );
    },
  );

  it('bench --chromium FILE that is not a browser: one line naming it (exit 2), not the launch log', async () => {
    const r = await inProcess('bench', [
      '--chromium',
      '/etc/hostname',
      '--model',
      'synthetic:stories260k-f32',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /error \[invalid_argument\]: Chromium at \/etc\/hostname \(given as an option\) did not start: .+\n/,
    );
    expect(r.stderr).not.toMatch(/\[pid=/);
  });

  it.each(['bench', 'generate'])('%s with both, different paths: a usage error (exit 2)', async (script) => {
    const r = await inProcess(script, [
      '--prompt',
      'x',
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

describe('usage errors as a person types them (issue 46, item 9)', () => {
  it("a negative number after its flag is that flag's value, refused by its own rule (exit 2)", async () => {
    const r = await inProcess('bench', ['--runs', '-1', '--model', 'synthetic:stories260k-f32']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error \[invalid_argument\]: --runs must be an integer ≥ 1, got "-1"/);
    expect(r.stderr).not.toContain('ambiguous');
    const g = await inProcess('generate', [
      '--model',
      'synthetic:stories260k-f32',
      '--prompt',
      'x',
      '--top-p',
      '-0.5',
    ]);
    expect(g.code).toBe(2);
    expect(g.stderr).toMatch(/^error \[invalid_argument\]: --top-p must be .*got "-0\.5"/);
  });

  it('a missing model file is a usage error (exit 2) in every command, and a non-GGUF file is refused before Chromium starts', async () => {
    // Spawned: each command's own entry point.
    for (const [script, args] of [
      ['bench', ['--model', '/no/such.gguf']],
      ['generate', ['--model', '/no/such.gguf', '--prompt', 'x']],
      ['perplexity', ['--model', '/no/such.gguf', '--text', 'README.md']],
      ['quantize', ['/no/such.gguf', '/tmp/never-written.gguf', 'Q8_0']],
    ] as const) {
      const r = await cli(script, [...args]);
      expect(r.code, `${script}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(
        /^error \[invalid_argument\]: cannot open model file \/no\/such\.gguf: no such file/,
      );
    }
    // With a Chromium that does not exist, only a check made before starting it can name the file.
    for (const [script, args] of [
      ['bench', ['--model', 'README.md']],
      ['generate', ['--model', 'README.md', '--prompt', 'x']],
    ] as const) {
      const r = await inProcess(script, [...args, '--chromium', '/nonexistent/chrome']);
      expect(r.code, `${script}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toMatch(
        /error \[gguf_invalid\]: .*README\.md is not a GGUF file: it starts with "# We"/,
      );
      expect(r.stderr).not.toContain('Chromium not found');
    }
  }, 240_000); // four spawned commands, seconds of start-up each (113 s here under a load of 10)

  it('generate without --prompt is a usage error, not a run from BOS', async () => {
    const r = await inProcess('generate', ['--model', 'synthetic:stories260k-f32']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('error [invalid_argument]: --prompt is required');
  });

  it('generate takes drafting with structured output (the engine runs both); perplexity names a missing --text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'usage-'));
    const schema = join(dir, 'schema.json');
    writeFileSync(schema, '{"type":"object"}');
    const r = await inProcess('generate', [
      '--model',
      'synthetic:stories260k-f32',
      '--prompt',
      'x',
      '--lookup',
      '--json-schema',
      schema,
      '--chromium',
      '/nonexistent/chrome',
    ]);
    rmSync(dir, { recursive: true, force: true });
    // Past the arguments' checks: what stops it is the browser that is not there.
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Chromium not found/);
    expect(r.stderr).not.toMatch(/combined/);
    const p = await inProcess('perplexity', ['--model', 'synthetic:stories260k-f32']);
    expect(p.code).toBe(2);
    expect(p.stderr).toContain('error [invalid_argument]: --text is missing');
  });

  it('bench:report names its errors with a code', async () => {
    const none = await cli('bench-report', []);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^error \[invalid_argument\]: no result files given/);
    const missing = await cli('bench-report', ['/no/such.json']);
    expect(missing.code).toBe(2); // a path that does not exist is a usage error, as for bench --model
    expect(missing.stderr).toMatch(/^error \[invalid_argument\]: \/no\/such\.json: no such file/);
    const notJson = await cli('bench-report', ['README.md']);
    expect(notJson.code).toBe(1); // a file that is there but is not a result
    expect(notJson.stderr).toMatch(/^error \[invalid_argument\]: README\.md: not JSON/);
    // An empty --md (an unset $GITHUB_STEP_SUMMARY) printed the report to stdout, exit 0.
    const empty = await cli('bench-report', ['README.md', '--md', '']);
    expect(empty).toMatchObject({ code: 2, stdout: '' });
    expect(empty.stderr).toBe('error [invalid_argument]: --md is empty: give the file to write\n');
    // --append-md alone printed the report to stdout as if it were not there.
    const append = await cli('bench-report', ['README.md', '--append-md']);
    expect(append).toMatchObject({ code: 2, stdout: '' });
    expect(append.stderr).toBe(
      'error [invalid_argument]: --append-md appends to the --md file: give --md FILE too\n',
    );
  });

  it('generate --json into a folder that does not exist is refused before anything loads (exit 2)', async () => {
    const r = await inProcess('generate', [
      '--model',
      'synthetic:stories260k-f32',
      '--prompt',
      'x',
      '--json',
      '/no/such/dir/out.json',
    ]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /^error \[invalid_argument\]: --json \/no\/such\/dir\/out\.json: the folder \/no\/such\/dir does not exist \(create it first: mkdir -p \/no\/such\/dir\)/,
    );
    expect(r.stderr).not.toMatch(/Chromium|loaded/);
  });

  it('bench --help fits in 110 columns', async () => {
    const r = await inProcess('bench', ['--help']);
    const long = r.stdout.split('\n').filter((l) => l.length > 110);
    expect(long).toEqual([]);
  });
});
