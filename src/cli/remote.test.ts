/**
 * `npm run bench -- --engine remote …` as a person runs it, against the OpenAI-compatible test server:
 * the table, the sweep, the JSON (engine "remote", the host, never the key), a fault's exit status and its
 * partial JSON; `--junit` and `--summary-md` for a run with a missed threshold and for a fault.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchResult, resultProblems } from '../bench/types.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { type OpenAiTestServer, startOpenAiServer } from '../testing/openai-server.ts';
import { isRemoteArgv } from './remote.ts';

let server: OpenAiTestServer;
let dir: string;
beforeAll(async () => {
  server = await startOpenAiServer();
  dir = mkdtempSync(join(tmpdir(), 'remote-cli-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const KEY = 'sk-cli-SECRET-abcdef';

/** `npm run bench` spawned, as a person runs it (the first test). */
function spawnBench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', 'bench', '--', ...args],
      { env: { ...process.env, TEST_REMOTE_KEY: KEY }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The same command in this process (src/testing/cli-in-process.ts) for the other tests: each `npm run`
 * costs seconds of start-up (npm, tsx) of CI's 90 minutes, and the remote engine is Node's HTTP alone.
 */
function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCliInProcess('bench', args, { TEST_REMOTE_KEY: KEY });
}

/**
 * `npm run bench` spawned (a signal must reach a process of its own: the handler exits), sent `signal` once
 * `ready(stderr)` says so; its exit code and stderr.
 */
function interruptBench(
  args: string[],
  signal: NodeJS.Signals,
  ready: (stderr: string) => boolean,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bench.ts', ...args], {
    cwd: join(import.meta.dirname, '../..'),
    env: { ...process.env, TEST_REMOTE_KEY: KEY },
  });
  let stderr = '';
  let sent = false;
  const poll = setInterval(() => {
    if (!sent && ready(stderr)) {
      sent = true;
      child.kill(signal);
    }
  }, 50);
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  return new Promise((ok) => {
    child.on('exit', (code) => {
      clearInterval(poll);
      ok({ code, stderr });
    });
  });
}

/** A JUnit file parsed as CI readers parse it. */
function junit(file: string) {
  return new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (n) => ['testsuite', 'testcase'].includes(n),
  }).parse(readFileSync(file, 'utf8'));
}

describe('isRemoteArgv', () => {
  it('reads the last --engine, in either spelling, as parseArgs does', () => {
    expect(isRemoteArgv(['--engine', 'remote'])).toBe(true);
    expect(isRemoteArgv(['--model', 'm', '--engine=remote'])).toBe(true);
    expect(isRemoteArgv(['--engine', 'webgpu', '--engine', 'remote'])).toBe(true);
    expect(isRemoteArgv(['--engine=remote', '--engine', 'webgpu'])).toBe(false);
    expect(isRemoteArgv(['--engine', 'webllm'])).toBe(false);
    expect(isRemoteArgv(['--model', 'remote'])).toBe(false);
    expect(isRemoteArgv([])).toBe(false);
  });
});

describe('npm run bench -- --engine remote', () => {
  it('runs the plan and the sweep, writes JSON without the key', async () => {
    server.set({ apiKey: KEY, firstDelayMs: 20, delayMs: 5 });
    const json = join(dir, 'r.json');
    const r = await spawnBench([
      '--engine',
      'remote',
      '--base-url',
      server.url,
      '--model',
      'test-model',
      '--api-key-env',
      'TEST_REMOTE_KEY',
      '--concurrency',
      '1,4',
      '--max-tokens',
      '8',
      '--runs',
      '1',
      '--json',
      json,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('engine:  remote');
    expect(r.stdout).toContain('concurrency sweep');
    const out = readFileSync(json, 'utf8');
    expect(out).not.toContain(KEY);
    expect(r.stdout + r.stderr).not.toContain(KEY);
    const res = JSON.parse(out) as BenchResult;
    expect(res.engine).toBe('remote');
    expect(res.endpoint?.host).toBe(new URL(server.url).host);
    expect(res.runs).toHaveLength(3);
    expect(res.runs[0].outputTokens).toBe(8);
    expect(res.sweep?.map((p) => p.concurrency)).toEqual([1, 4]);
  });

  it('--junit and --summary-md: a missed threshold is a <failure>, the summary appended', async () => {
    server.set({ firstDelayMs: 20, delayMs: 5 });
    const xml = join(dir, 'ok.xml');
    const md = join(dir, 'ok.md');
    const args = ['--engine', 'remote', '--base-url', server.url, '--model', 'test-model', '--prompt', 'Hi'];
    const more = ['--max-tokens', '6', '--runs', '2', '--warmup', '0', '--junit', xml, '--summary-md', md];
    const r = await bench([
      ...args,
      ...more,
      '--fail-under-decode-tps',
      '0.01',
      '--fail-over-ttft-ms',
      '0.001',
    ]);
    expect(r.code, r.stderr).toBe(3);
    const j = junit(xml);
    expect(j.testsuites).toMatchObject({ tests: '3', failures: '1', errors: '0', skipped: '0' });
    const cases = j.testsuites.testsuite[0].testcase;
    expect(cases.map((c: { name: string }) => c.name)).toEqual([
      'benchmark completed',
      'median decode tok/s >= 0.01',
      'median TTFT ms <= 0.001',
    ]);
    expect(cases[2].failure.message).toMatch(/^median TTFT [\d.]+ ms is above --fail-over-ttft-ms 0\.001$/);
    expect(r.stderr).toContain(`threshold missed: ${cases[2].failure.message}`);
    const r2 = await bench([...args, ...more]);
    expect(r2.code, r2.stderr).toBe(0);
    const text = readFileSync(md, 'utf8');
    expect(text.match(/^### WebGPU LLM benchmark: /gm)).toHaveLength(2);
    expect(text).toContain('— threshold missed');
    expect(text).toContain('— done');
  });

  it('a fault exits 1 with its code, and the partial JSON is written', async () => {
    server.set({ fault: 'cut', faultAfterChunks: 2, delayMs: 5 });
    const json = join(dir, 'cut.json');
    const r = await bench([
      '--engine',
      'remote',
      '--base-url',
      server.url,
      '--prompt',
      'Hi',
      '--warmup',
      '0',
      '--json',
      json,
      '--junit',
      join(dir, 'cut.xml'),
      '--fail-under-decode-tps',
      '1',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \[stream_cut\]/);
    const j = junit(join(dir, 'cut.xml'));
    expect(j.testsuites).toMatchObject({ tests: '2', failures: '0', errors: '1', skipped: '1' });
    expect(j.testsuites.testsuite[0].testcase[0].error).toMatchObject({ type: 'stream_cut' });
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(res.partial).toBe(true);
    expect(res.runs[0].partial).toBe(true);
    expect(res.runs[0].outputTokens).toBe(2);
    // Its progress line says it failed (it read like a finished run's, the error after it).
    expect(r.stderr).toMatch(
      /run 1\/\d+ \[[^\]]+\] failed \(stream_cut\) after 2 (\(approx\.\) )?tokens, kept as partial\n/,
    );
    // The file says what failed (it said only "partial"), and bench:report calls it failed, not interrupted.
    expect(res.error).toEqual({ code: 'stream_cut', message: expect.stringMatching(/\S/) });
    expect(res.interrupted).toBeUndefined();
    expect(r.stderr).toMatch(/wrote .*cut\.json \(partial: failed with stream_cut after 1 measured run\)/);
  });

  it('a warm-up that fails says so and keeps no run; a server without usage prints its prompt tokens as ?', async () => {
    server.set({ fault: 'cut', faultAfterChunks: 2, delayMs: 5 });
    const json = join(dir, 'cut-warmup.json');
    const base = ['--engine', 'remote', '--base-url', server.url, '--prompt', 'Hi'];
    const r = await bench([...base, '--warmup', '1', '--json', json]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /warm-up 1\/\d+ \[[^\]]+\] failed \(stream_cut\) after 2 (\(approx\.\) )?tokens; a warm-up, so not kept\n/,
    );
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(res.runs).toEqual([]);
    expect(res.error?.code).toBe('stream_cut');
    server.set({ usage: false, delayMs: 1 });
    const ok = await bench([...base, '--warmup', '0', '--max-tokens', '8']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toMatch(/run 1\/\d+ \[[^\]]+\] \? → 8 (\(approx\.\) )?tokens: TTFT /);
    server.set({});
  });

  it('a server that cannot be listed (nothing listening) still gets --json: partial, its error, no runs, no load', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const json = join(dir, 'refused.json');
    const xml = join(dir, 'refused.xml');
    const r = await bench([
      ...['--engine', 'remote', '--base-url', url, '--prompt', 'Hi', '--json', json, '--junit', xml],
    ]);
    // JUnit names the server (no model was listed), not an `unknown` model.
    const suite = junit(xml).testsuites.testsuite[0] as { name: string };
    expect(suite.name.startsWith(`bench: ${url.replace('http://', '')} on `)).toBe(true);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \[network\]: connection refused/);
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(resultProblems(res)).toEqual([]);
    expect(res).toMatchObject({ partial: true, runs: [], summary: {}, error: { code: 'network' } });
    expect(res.load).toEqual({ totalMs: null, downloadMs: null, uploadMs: null, compileMs: null });
    expect(r.stderr).toMatch(/wrote .*refused\.json \(partial: failed with network after 0 measured runs\)/);
  });

  it('--request-timeout-s ends a server that streams forever: exit 1 [timeout], partial JSON', async () => {
    server.set({ fault: 'overrun', delayMs: 50 });
    const json = join(dir, 'deadline.json');
    const args = ['--engine', 'remote', '--base-url', server.url, '--prompt', 'Hi', '--warmup', '0'];
    // A max_tokens the server's 50 ms per token cannot reach before the 1 s deadline.
    const r = await bench([...args, '--max-tokens', '1000', '--request-timeout-s', '1', '--json', json]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \[timeout\]: .*did not finish the request within 1 s \(request timeout/);
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(res.partial).toBe(true);
    expect(res.runs[0].partial).toBe(true);
    expect(res.runs[0].outputTokens).toBeGreaterThan(0);
    expect(res.runs[0].outputTokens).toBeLessThan(1000);
    const bad = await bench([...args, '--request-timeout-s', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--request-timeout-s must be a finite number > 0 and ≤ 2147483, got "soon"/);
  });

  it('--timeout-s bounds GET /v1/models: a server that never answers it ends as [timeout] (issue 47, item 4)', async () => {
    server.set({ fault: 'stall-models' });
    const t0 = performance.now();
    const json = join(dir, 'stall-models.json');
    const r = await bench([
      ...['--engine', 'remote', '--base-url', server.url, '--prompt', 'Hi'],
      ...['--timeout-s', '1', '--json', json],
    ]);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(JSON.parse(readFileSync(json, 'utf8'))).toMatchObject({
      partial: true,
      runs: [],
      error: { code: 'timeout' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error [timeout]: ${server.url}/v1/models did not answer within 1 s (first-token timeout, which bounds the model list too): raise --timeout-s to wait longer`,
    );
  });

  it('a server that wants a key, none given: the error says how to pass one', async () => {
    server.set({ apiKey: KEY });
    const r = await bench(['--engine', 'remote', '--base-url', server.url, '--prompt', 'Hi']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error \[unauthorized\]: .*HTTP 401: a valid API key is needed.*; pass one with --api-key-env VAR \(the name of an environment variable that holds it\)\n$/,
    );
    server.set({});
  });

  it('a server that echoes the key in its 401: the key is on no output and in no file (issue 47 item 10)', async () => {
    // The Authorization header the server got, echoed in its error message (and in a custom field).
    const echo = createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `invalid header Authorization: ${auth} (key ${KEY})` } }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
      const files = { json: join(dir, 'leak.json'), junit: join(dir, 'leak.xml'), md: join(dir, 'leak.md') };
      const r = await bench([
        ...['--engine', 'remote', '--base-url', url, '--model', 'm', '--api-key-env', 'TEST_REMOTE_KEY'],
        ...['--prompt', 'Hi', '--warmup', '0', '--json', files.json, '--junit', files.junit],
        ...['--summary-md', files.md, '--fail-under-decode-tps', '1'],
      ]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/error \[unauthorized\]: .*HTTP 401/);
      expect(r.stderr).toContain('; check the key in the environment variable --api-key-env names\n');
      expect(r.stderr).toContain('Bearer [redacted]');
      const written = [
        r.stdout,
        r.stderr,
        readFileSync(files.junit, 'utf8'),
        readFileSync(files.md, 'utf8'),
        readFileSync(files.json, 'utf8'),
      ];
      // The result file records the failure too, with the key redacted there as everywhere.
      expect(JSON.parse(readFileSync(files.json, 'utf8')).error).toMatchObject({ code: 'unauthorized' });
      expect(readFileSync(files.md, 'utf8')).toContain('unauthorized');
      for (const text of written) {
        expect(text).not.toContain(KEY);
        expect(text).not.toContain('SECRET-abcdef');
      }
    } finally {
      await new Promise((r) => echo.close(r));
    }
  });

  it('SIGTERM before the model list came back still writes --json: partial, no runs, phase load; exit 143', async () => {
    server.set({ fault: 'stall-models' });
    const files = { json: join(dir, 'term.json'), junit: join(dir, 'term.xml') };
    const seen = server.log.length;
    const r = await interruptBench(
      [
        ...['--engine', 'remote', '--base-url', server.url, '--model', 'test-model', '--prompt', 'Hi'],
        ...['--json', files.json, '--junit', files.junit],
      ],
      'SIGTERM',
      () => server.log.slice(seen).some((q) => q.path === '/v1/models'),
    );
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toMatch(/interrupted \(SIGTERM\) before the server's model list came back/);
    const res = JSON.parse(readFileSync(files.json, 'utf8')) as BenchResult;
    expect(resultProblems(res)).toEqual([]);
    expect(res).toMatchObject({
      engine: 'remote',
      partial: true,
      interrupted: { signal: 'SIGTERM', phase: 'load' },
      runs: [],
      summary: {},
    });
    expect(res.model.id).toBe('test-model');
    expect(junit(files.junit).testsuites.testsuite[0].testcase[0].error).toMatchObject({ type: 'aborted' });
  }, 60_000);

  it('Ctrl-C mid-run writes the runs so far: partial, phase runs; exit 130', async () => {
    server.set({ firstDelayMs: 20, delayMs: 40 });
    const json = join(dir, 'int.json');
    const r = await interruptBench(
      [
        ...['--engine', 'remote', '--base-url', server.url, '--prompt', 'Hi', '--warmup', '0'],
        ...['--runs', '50', '--max-tokens', '16', '--json', json],
      ],
      'SIGINT',
      (stderr) => /^run 2\/50 /m.test(stderr.replace(/^bench[^:]*: /gm, '')),
    );
    expect(r.code, r.stderr).toBe(130);
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(resultProblems(res)).toEqual([]);
    expect(res).toMatchObject({ partial: true, interrupted: { signal: 'SIGINT', phase: 'runs' } });
    expect(res.runs.length).toBeGreaterThanOrEqual(2);
    expect(res.runs.length).toBeLessThan(50);
    expect(res.summary.decodeTokensPerSecond?.median).toBeGreaterThan(0);
  }, 60_000);

  it('bad arguments exit 2', async () => {
    const r = await bench(['--engine', 'remote']);
    expect(r.code).toBe(2);
    // Worded as every command's bad argument: the code, the message, where the options are listed.
    expect(r.stderr).toBe(
      'error [invalid_argument]: --engine remote needs --base-url URL\n(npm run bench -- --engine remote --help lists the options)\n',
    );
    const u = await bench(['--engine', 'remote', '--base-url', 'http://x', '--bogus']);
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(/^error \[invalid_argument\]: .*--bogus/);
  });
});
