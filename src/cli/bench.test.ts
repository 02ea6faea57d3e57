/**
 * `npm run bench` as a user runs it (headless Chromium on the built page): the result file is valid, its
 * tokens equal llama.cpp's greedy continuation (tests/golden), its timings are positive and consistent;
 * a missed threshold exits 3; a bad path, a 404 URL and a server that never answers end non-zero with a
 * clear message within a bounded time; `--gpu` refuses a software adapter (exit 1, naming
 * `--allow-software`) and still writes `--junit` and `--summary-md`, which `--allow-software` fills with
 * the run's figures.
 */

import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import type { BenchResult } from '../bench/types.ts';
import { resultProblems } from '../bench/types.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { startModelServer, testModelFiles } from '../testing/library-server.ts';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { fmtSig } from '../util/format.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

const ROOT = resolve(import.meta.dirname, '../..');
const cacheHome = tempDir('bench-cache-');
const MODEL = stories260kPath();

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function bench(args: string[], timeoutMs = 180_000): Promise<CliRun> {
  const t0 = performance.now();
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/bench.ts', ...args],
      // A cache directory of its own, so URL runs never touch the user's ~/.cache.
      {
        cwd: ROOT,
        timeout: timeoutMs,
        maxBuffer: 16 << 20,
        env: { ...process.env, XDG_CACHE_HOME: cacheHome },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        ok({ code, stdout, stderr, ms: performance.now() - t0 });
      },
    );
  });
}

/** A local server: `/missing.gguf` answers 404 (with CORS, as public hosts do); `/hang.gguf` never answers. */
let server: Server;
let base = '';
/** Requests `/hang…` has had (a test waits for its download to reach the server). */
let hangRequests = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    const cors = {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': '*',
      'Access-Control-Expose-Headers': '*',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    if (req.url?.startsWith('/hang')) {
      hangRequests++;
      return; // never answers
    }
    res.writeHead(404, { ...cors, 'Content-Type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('npm run bench', () => {
  const c = golden.generation.cases[0];

  it('stories260K: a valid result file with llama.cpp greedy tokens and consistent timings', async () => {
    const out = join(tempDir('bench-'), 'out.json');
    const r = await bench(['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '40', '--json', out]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j.schemaVersion).toBe(1);
    expect(j.engine).toBe('webgpu');
    expect(j.model).toMatchObject({ id: 'stories260K.gguf', architecture: 'llama', quantization: 'F32' });
    // CPU match: llama.cpp's greedy tokens fed to our engine; F32 agrees everywhere.
    expect(j.quality).toMatchObject({ top1Agreement: 1, positions: 40 });
    expect(j.quality?.reference).toMatch(/^llama\.cpp \(node-llama-cpp 3\.21\.1/);
    expect(r.stdout).toMatch(
      /CPU match: our top-1 agrees with llama\.cpp .* at 100(\.0)?\s?% of 40 greedy positions/,
    );
    expect(j.device.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(j.plan).toMatchObject({ maxTokens: 40, runs: 2, warmup: 1, ignoreEos: false });
    expect(j.runs).toHaveLength(2);
    for (const run of j.runs) {
      expect(run.prompt).toBe(c.prompt);
      expect(run.promptTokens).toBe(c.promptIds.length);
      expect(run.outputTokenIds).toEqual(c.outputIds.slice(0, 40));
      const n = run.outputTokens;
      expect(n).toBe(40);
      expect(run.ttftMs).toBeGreaterThan(0);
      expect(run.e2eMs).toBeGreaterThanOrEqual(run.ttftMs);
      const span = run.e2eMs - run.ttftMs;
      expect(span).toBeGreaterThan(0);
      const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);
      expect(rel(run.decodeTokensPerSecond, ((n - 1) * 1000) / span)).toBeLessThan(1e-9);
      expect(rel(run.tpotMs, span / (n - 1))).toBeLessThan(1e-9);
      expect(rel(run.prefillTokensPerSecond, (run.promptTokens * 1000) / run.ttftMs)).toBeLessThan(1e-9);
      expect(run.itlMs).toHaveLength(n - 1);
      expect(Math.abs(run.itlMs.reduce((a, b) => a + b, 0) - span)).toBeLessThan(1e-6);
      for (const g of run.itlMs) expect(g).toBeGreaterThanOrEqual(0);
    }
    expect(j.summary.decodeTokensPerSecond.n).toBe(2);
    expect(j.summary.itlMs.n).toBe(78);
    expect(j.load.totalMs).toBeGreaterThan(0);
    expect(j.roofline?.bandwidthGBs).toBeGreaterThan(0);
    expect(j.roofline?.bytesPerToken).toBeGreaterThan(j.model.bytes * 0.5);
    expect(j.roofline?.fraction).toBeGreaterThan(0);
    // The table on stdout says what was measured.
    expect(r.stdout).toContain('stories260K.gguf');
    expect(r.stdout).toMatch(/Decode \(tok\/s\)\s+2\s/);
    expect(r.stdout).toContain('Roofline: measured read bandwidth');
    if (j.device.isFallbackAdapter) expect(r.stdout).toContain('SOFTWARE ADAPTER');
    // Progress went to stderr.
    expect(r.stderr).toMatch(/loaded stories260K\.gguf/);
    expect(r.stderr).toMatch(/run 2\/2/);
  }, 240_000); // runs the CLI (Node, Chromium or Dawn, SwiftShader): near vitest's 60 s on this loaded 2-core machine

  it('--lookup: llama.cpp greedy tokens, the speculative block, and the baseline run without drafting', async () => {
    const out = join(tempDir('bench-'), 'out.json');
    const r = await bench([
      ...['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '40', '--runs', '1', '--warmup', '0'],
      ...['--lookup', '--draft-max', '4', '--no-roofline', '--no-cpu-match', '--json', out],
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j.plan.draft).toEqual({ type: 'lookup', draftMax: 4 });
    // Drafting changes nothing in the output: llama.cpp's greedy tokens.
    expect(j.runs[0].outputTokenIds).toEqual(c.outputIds.slice(0, 40));
    const s = j.speculative!;
    const run = j.runs[0].speculative!;
    expect(s).toMatchObject({ draft: 'lookup', draftMax: 4, sameOutput: true, baseline: { runs: 1 } });
    expect([s.drafted, s.accepted, s.targetPasses]).toEqual([run.drafted, run.accepted, run.targetPasses]);
    expect(s.accepted).toBeLessThanOrEqual(s.drafted);
    expect(s.targetPasses).toBeGreaterThanOrEqual(Math.ceil(39 / 5)); // at most draft-max + 1 tokens a pass
    expect(s.targetPasses).toBeLessThanOrEqual(39);
    expect(s.tokensPerTargetPass).toBeCloseTo(39 / s.targetPasses, 12);
    expect(s.speedup).toBeCloseTo(
      j.summary.decodeTokensPerSecond.median / s.baseline.decodeTokensPerSecond,
      12,
    );
    expect(r.stdout).toMatch(
      /Speculative: \d+ of \d+ drafted tokens accepted .* same output as without drafting/,
    );
    expect(r.stderr).toMatch(/baseline \(no drafting\) run 1\/1/);
  }, 240_000);

  it('--draft with the model itself: every drafted token accepted, the draft served and named', async () => {
    const out = join(tempDir('bench-'), 'out.json');
    const r = await bench([
      ...['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '24', '--runs', '1', '--warmup', '0'],
      ...['--draft', MODEL, '--draft-max', '3', '--no-roofline', '--no-cpu-match', '--json', out],
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j.plan.draft).toEqual({ type: 'model', draftMax: 3, model: 'stories260K.gguf' });
    expect(j.runs[0].outputTokenIds).toEqual(c.outputIds.slice(0, 24));
    const s = j.speculative!;
    // A draft identical to the target agrees everywhere: full acceptance, up to draft-max + 1 tokens a pass.
    expect(s).toMatchObject({ draft: 'stories260K.gguf', acceptanceRate: 1, sameOutput: true });
    expect(s.accepted).toBe(s.drafted);
    expect(s.targetPasses).toBeLessThanOrEqual(Math.ceil(23 / 3));
  }, 240_000);

  it('--grammar: every run follows the grammar and the result is marked constrained', async () => {
    const dir = tempDir('bench-');
    const grammar = join(dir, 'yes-no.gbnf');
    writeFileSync(grammar, 'root ::= "yes" | "no"');
    const out = join(dir, 'out.json');
    const r = await bench([
      ...['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '8', '--runs', '1', '--warmup', '0'],
      ...['--grammar', grammar, '--no-roofline', '--no-cpu-match', '--json', out],
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(['yes', 'no']).toContain(j.runs[0].text);
    expect(j.constrained?.kind).toBe('grammar');
    expect(j.constrained?.hash).toMatch(/^fnv1a64:[0-9a-f]{16}$/);
    expect(r.stdout).toContain(`constrained output: grammar ${j.constrained?.hash}`);
    // The answer ended with the grammar: whole, and nothing to warn about.
    expect(j.runs[0]).toMatchObject({ finishReason: 'stop', formatComplete: true });
    expect(r.stderr).not.toMatch(/were cut/);
    // A grammar longer than --max-tokens: the run is measured, and said to be cut where a person looks.
    writeFileSync(grammar, 'root ::= "yes, yes, yes, and yes"');
    const cut = await bench([
      ...['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '2', '--runs', '1', '--warmup', '0'],
      ...['--grammar', grammar, '--no-roofline', '--no-cpu-match', '--json', out],
    ]);
    expect(cut.code, cut.stderr).toBe(0);
    const jc = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(jc.runs[0]).toMatchObject({ finishReason: 'length', formatComplete: false, outputTokens: 2 });
    expect(cut.stderr).toContain(
      'bench: warning: 1 of 1 measured runs were cut at --max-tokens 2 before the grammar was complete: their answers do not parse',
    );
    expect(cut.stdout).toContain('1 of 1 run was cut at 2 tokens before the value was complete');
  }, 240_000);

  it('sampling flags go into every request and the plan; --kv-type reaches the load and the result', async () => {
    const out = join(tempDir('bench-'), 'out.json');
    const r = await bench([
      ...['--model', MODEL, '--prompt', c.prompt, '--max-tokens', '12', '--ignore-eos'],
      ...['--runs', '2', '--warmup', '0', '--no-roofline', '--no-cpu-match', '--json', out],
      ...['--temperature', '0.8', '--top-k', '40', '--top-p', '0.95', '--min-p', '0.05'],
      ...['--repeat-penalty', '1.1', '--seed', '3', '--kv-type', 'f32'],
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j.plan.sampling).toEqual({
      temperature: 0.8,
      topK: 40,
      topP: 0.95,
      minP: 0.05,
      repetitionPenalty: 1.1,
      seed: 3,
    });
    expect(r.stdout).toMatch(
      /temperature 0\.8, top-k 40, top-p 0\.95, min-p 0\.05, repeat-penalty 1\.1, seed 3, EOS ignored/,
    );
    // The same seed gives the same tokens in every run.
    expect(j.runs).toHaveLength(2);
    expect(j.runs[1].outputTokenIds).toEqual(j.runs[0].outputTokenIds);
    // model.kvType is what the engine reports it ran (ModelInfo.kvType).
    expect(j.model.kvType).toBe('f32');
    expect(r.stdout).toContain('f32 KV cache');
  }, 240_000); // runs the CLI (Node, Chromium or Dawn, SwiftShader): near vitest's 60 s on this loaded 2-core machine

  it('exits 3 when a threshold is missed', async () => {
    const r = await bench([
      '--model',
      MODEL,
      '--prompt',
      c.prompt,
      '--max-tokens',
      '4',
      '--runs',
      '1',
      '--warmup',
      '0',
      '--no-roofline',
      // Nothing here reads llama.cpp's CPU match (the first test does): a child process and a llama.cpp
      // load spared (CI's 90-minute limit).
      '--no-cpu-match',
      '--fail-under-decode-tps',
      '1e12',
      '--fail-over-ttft-ms',
      '0.000001',
    ]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/threshold missed: median decode .* below --fail-under-decode-tps/);
    expect(r.stderr).toMatch(/threshold missed: median TTFT .* above --fail-over-ttft-ms/);
    expect(r.stdout).toContain('Decode (tok/s)');
  }, 240_000); // with the CPU match it took 58.8 s of vitest's 60 s here under load, and once timed out

  /** The JUnit file as a CI reader sees it: the one suite and its test cases. */
  function junitOf(file: string) {
    const doc = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (n) => ['testsuite', 'testcase', 'property'].includes(n),
    }).parse(readFileSync(file, 'utf8'));
    const suite = doc.testsuites.testsuite[0];
    return { suites: doc.testsuites, suite, cases: suite.testcase as Record<string, unknown>[] };
  }

  it('--gpu on a software adapter: exit 1 naming --allow-software, with a JUnit <error> and the summary', async () => {
    const dir = tempDir('bench-gpu-');
    const junit = join(dir, 'j.xml');
    const md = join(dir, 's.md');
    writeFileSync(md, '# earlier step\n');
    // A real GGUF with the CPU match on: the guard must stop before llama.cpp generates anything.
    const r = await bench([
      ...['--gpu', '--model', MODEL, '--prompt', c.prompt, '--max-tokens', '4', '--runs', '1'],
      ...['--warmup', '0', '--no-roofline', '--fail-under-decode-tps', '1'],
      ...['--junit', junit, '--summary-md', md],
    ]);
    // This machine's Chromium has SwiftShader only; on a GPU machine the run passes instead.
    if (!/software adapter \(CPU\)/.test(r.stderr)) {
      expect(r.code, r.stderr).toBe(0);
      return;
    }
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /error \[software_adapter\]: --gpu was given but the WebGPU adapter, .*swiftshader.*, is a software one \(the adapter reports isFallbackAdapter.*pass --allow-software to run on it anyway/,
    );
    // Refused as soon as the page read the adapter: no CPU match, no model load begun, no run. The device
    // line comes once, then the error.
    expect(r.stderr).not.toMatch(/CPU match|llama\.cpp generating/);
    expect(r.stderr).not.toMatch(/bench: loading |loaded stories260K|run 1\/1/);
    expect(r.stderr.match(/device: /g)).toHaveLength(1);
    expect(r.stderr.indexOf('device: ')).toBeLessThan(r.stderr.indexOf('error [software_adapter]'));
    expect(r.stderr).toContain('docs/gpu-ci.md#only-a-software-adapter');
    const j = junitOf(junit);
    expect(j.suites).toMatchObject({ tests: '2', failures: '0', errors: '1', skipped: '1' });
    expect(j.cases[0]).toMatchObject({
      name: 'benchmark completed',
      error: { type: 'software_adapter' },
    });
    expect(String((j.cases[0].error as { message: string }).message)).toContain('--allow-software');
    expect(j.cases[1]).toMatchObject({
      name: 'median decode tok/s >= 1',
      skipped: { message: expect.any(String) },
    });
    const text = readFileSync(md, 'utf8');
    expect(text.startsWith('# earlier step\n### WebGPU LLM benchmark: stories260K.gguf — failed\n')).toBe(
      true,
    );
    expect(text).toMatch(/\| stories260K\.gguf \| .*swiftshader.* \| software \(CPU\) \| – \|/);
    expect(text).toContain('**The benchmark failed:** error [software_adapter]: ');
  }, 240_000); // a stories260K load took 58 s on this 2-core machine under load

  it('--gpu --allow-software runs; --junit and --summary-md hold the figures, a missed threshold a failure', async () => {
    const dir = tempDir('bench-gpu-');
    const junit = join(dir, 'j.xml');
    const md = join(dir, 's.md');
    const json = join(dir, 'r.json');
    const r = await bench([
      ...['--gpu', '--allow-software', '--model', MODEL, '--prompt', c.prompt, '--max-tokens', '6'],
      ...['--runs', '1', '--warmup', '0', '--no-roofline', '--no-cpu-match', '--json', json],
      ...['--fail-under-decode-tps', '0.001', '--fail-over-ttft-ms', '0.000001'],
      ...['--junit', junit, '--summary-md', md],
    ]);
    expect(r.code, r.stderr).toBe(3);
    const res = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    if (res.device.isFallbackAdapter) expect(r.stderr).toMatch(/running on it because of --allow-software/);
    expect(r.stderr.match(/device: /g)).toHaveLength(1);
    const decode = res.summary.decodeTokensPerSecond.median;
    const ttft = res.summary.ttftMs.median;
    const j = junitOf(junit);
    expect(j.suites).toMatchObject({ tests: '3', failures: '1', errors: '0', skipped: '0' });
    expect(j.suite.name).toMatch(/^bench: stories260K\.gguf on /);
    expect(j.cases.map((x) => x.name)).toEqual([
      'benchmark completed',
      'median decode tok/s >= 0.001',
      'median TTFT ms <= 0.000001',
    ]);
    expect(j.cases[1].failure).toBeUndefined();
    const f = j.cases[2].failure as { message: string; type: string; '#text': string };
    expect(f.type).toBe('threshold');
    expect(f.message).toBe(`median TTFT ${fmtSig(ttft)} ms is above --fail-over-ttft-ms 0.000001`);
    expect(r.stderr).toContain(`threshold missed: ${f.message}`);
    const text = readFileSync(md, 'utf8');
    expect(text).toContain('### WebGPU LLM benchmark: stories260K.gguf (F32) — threshold missed');
    expect(text).toContain(
      `| ${fmtSig(ttft)} | ${fmtSig(res.summary.prefillTokensPerSecond?.median)} | ${fmtSig(decode)} | ${fmtSig(res.summary.tpotMs.median)} | ✓ median decode tok/s >= 0.001 (${fmtSig(decode)})<br>✗ median TTFT ms <= 0.000001 (${fmtSig(ttft)}) |`,
    );
  }, 240_000); // a stories260K load took 58 s on this 2-core machine under load

  // Usage errors run in this process (src/testing/cli-in-process.ts), sparing a `tsx` start-up each (CI's
  // 90-minute limit); src/cli/usage.test.ts spawns bench for a missing model file as a user runs it.
  it('fails clearly and fast for a missing model file', async () => {
    const t0 = performance.now();
    const r = await runCliInProcess('bench', ['--model', '/nonexistent/model.gguf']);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /error \[invalid_argument\]: cannot open model file \/nonexistent\/model\.gguf: no such file/,
    );
  });

  it('a local file that is not GGUF fails the run (exit 1) before Chromium, and --junit / --summary-md say so', async () => {
    const dir = tempDir('bench-notgguf-');
    const model = join(dir, 'notes.gguf');
    writeFileSync(model, 'these are notes, not a model\n');
    const junit = join(dir, 'out', 'j.xml');
    const md = join(dir, 's.md');
    const t0 = performance.now();
    const r = await runCliInProcess('bench', [
      ...['--model', model, '--fail-under-decode-tps', '1', '--junit', junit, '--summary-md', md],
    ]);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/error \[gguf_invalid\]: .*notes\.gguf/);
    expect(r.stderr).not.toMatch(/Chromium|device: /);
    const j = junitOf(junit);
    expect(j.suites).toMatchObject({ tests: '2', failures: '0', errors: '1', skipped: '1' });
    expect(j.cases[0]).toMatchObject({ name: 'benchmark completed', error: { type: 'gguf_invalid' } });
    expect(readFileSync(md, 'utf8')).toContain('**The benchmark failed:** error [gguf_invalid]: ');
  });

  it('an unwritable --json is refused before anything runs (exit 2), not after the run', async () => {
    const t0 = performance.now();
    const r = await runCliInProcess('bench', ['--model', MODEL, '--json', '/proc/r.json']);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/error \[invalid_argument\]: --json \/proc\/r\.json cannot be written \(ENOENT/);
  });

  it('Ctrl-C mid-run writes what was measured: a partial result, the JUnit error, exit 130', async () => {
    const dir = tempDir('bench-int-');
    const out = join(dir, 'r.json');
    const junit = join(dir, 'j.xml');
    const args = ['--model', MODEL, '--runs', '50', '--max-tokens', '24', '--prompt', 'Once upon a time'];
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/bench.ts',
        ...args,
        '--no-roofline',
        '--no-cpu-match',
        '--json',
        out,
        '--junit',
        junit,
      ],
      { cwd: ROOT, env: { ...process.env, XDG_CACHE_HOME: cacheHome } },
    );
    let stderr = '';
    const code = await new Promise<number | null>((ok) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d;
        // Two measured runs done: interrupt as a person would.
        if (/^bench: run 2\/50 /m.test(stderr) && !child.killed) child.kill('SIGINT');
      });
      child.on('exit', (c) => ok(c));
    });
    expect(code, stderr).toBe(130);
    expect(stderr).toMatch(/interrupted \(SIGINT\) after \d+ of 50 measured runs/);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j.partial).toBe(true);
    expect(j.interrupted).toEqual({ signal: 'SIGINT', phase: 'runs' });
    expect(j.runs.length).toBeGreaterThanOrEqual(2);
    expect(j.runs.length).toBeLessThan(50);
    expect(j.summary.decodeTokensPerSecond?.median).toBeGreaterThan(0);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<error[^>]*aborted/);
  }, 240_000);

  it('SIGTERM before the model loaded still writes --json: partial, no runs, the phase; exit 143', async () => {
    const dir = tempDir('bench-term-');
    const out = join(dir, 'r.json');
    const junit = join(dir, 'j.xml');
    const had = hangRequests;
    // The download of a URL that never answers: the signal comes while the model is being fetched.
    const child = spawn(
      process.execPath,
      [
        ...['--import', 'tsx', 'src/cli/bench.ts', '--model', `${base}/hang.gguf`, '--timeout-s', '120'],
        ...['--no-roofline', '--json', out, '--junit', junit],
      ],
      { cwd: ROOT, env: { ...process.env, XDG_CACHE_HOME: cacheHome } },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    const poll = setInterval(() => {
      if (hangRequests > had && !child.killed) child.kill('SIGTERM');
    }, 50);
    const code = await new Promise<number | null>((ok) => child.on('exit', (c) => ok(c)));
    clearInterval(poll);
    expect(code, stderr).toBe(143);
    expect(stderr).toMatch(/interrupted \(SIGTERM\) before the model loaded \(download\)/);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(resultProblems(j)).toEqual([]);
    expect(j).toMatchObject({
      schemaVersion: 1,
      engine: 'webgpu',
      partial: true,
      interrupted: { signal: 'SIGTERM', phase: 'download' },
      runs: [],
      summary: {},
    });
    expect(j.model.id).toBe(`${base}/hang.gguf`);
    expect(j.load.totalMs).toBeNull(); // NaN, as JSON writes it
    expect(readFileSync(junit, 'utf8')).toMatch(/<error[^>]*aborted/);
  }, 240_000);

  it('fails clearly for bad arguments (exit 2)', async () => {
    const r = await runCliInProcess('bench', ['--runs', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--runs must be an integer ≥ 1/);
  });

  it('--engine webllm needs a model id (exit 2); offline, a WebLLM load ends with network', async () => {
    const r = await runCliInProcess('bench', ['--engine', 'webllm']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--engine webllm needs --model ID/);
    const o = await bench(
      [
        '--engine',
        'webllm',
        '--model',
        'SmolLM2-135M-Instruct-q0f32-MLC',
        '--timeout-s',
        '30',
        '--no-roofline',
      ],
      90_000,
    );
    expect(o.code).toBe(1);
    // No network on the development machine; with network this is a real benchmark (docs/webllm.md).
    expect(o.stderr).toMatch(/error \[(network|timeout)\]: /);
  });

  it('a URL is downloaded once: the second run sends no bytes and says it used the cached copy', async () => {
    const files = await testModelFiles();
    const host = await startModelServer(files);
    const splitBytes = [1, 2, 3].reduce(
      (a, k) => a + (files.get(`stories260K-0000${k}-of-00003.gguf`)?.length ?? 0),
      0,
    );
    try {
      const dir = tempDir('bench-cache-dir-');
      const args = ['--model', `${host.url}/range/stories260K-00001-of-00003.gguf`, '--cache-dir', dir];
      const quick = [
        '--runs',
        '1',
        '--warmup',
        '0',
        '--max-tokens',
        '4',
        '--no-roofline',
        '--prompt',
        'Once upon a time',
      ];
      // The first run without llama.cpp's CPU match (a child process and a llama.cpp load: seconds of CI's
      // 90 minutes), which nothing here reads; the second, on the cached copy, is checked with it.
      const first = await bench([...args, ...quick, '--no-cpu-match']);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toMatch(/download .*100%/);
      expect(host.stats.bodyBytes).toBe(splitBytes);
      host.reset();
      const second = await bench([...args, ...quick]);
      expect(second.code, second.stderr).toBe(0);
      expect(host.stats.bodyBytes).toBe(0);
      expect(host.stats.requests.every((r) => r.method === 'HEAD')).toBe(true);
      expect(second.stdout).toMatch(/model from the cache \(.*\), unchanged on the server/);
      // The cached copy decodes the same greedy tokens as llama.cpp (the CPU match on the cached file).
      expect(second.stdout).toMatch(/CPU match: our top-1 agrees with .* at 100(\.0)?%/);
    } finally {
      await host.close();
    }
  }, 240_000); // runs the CLI (Node, Chromium or Dawn, SwiftShader): near vitest's 60 s on this loaded 2-core machine

  it('fails clearly for a URL that answers 404', async () => {
    const r = await bench(['--model', `${base}/missing.gguf`, '--timeout-s', '20'], 90_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \[http_status\]: .*missing\.gguf.*HTTP 404/);
    expect(r.ms).toBeLessThan(60_000);
  });

  it('gives up on a server that never answers after --timeout-s', async () => {
    const r = await bench(['--model', `${base}/hang.gguf`, '--timeout-s', '3'], 90_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \[timeout\]: .*(did not finish within 3 s|sent nothing)/);
    expect(r.ms).toBeLessThan(60_000);
  });
});
