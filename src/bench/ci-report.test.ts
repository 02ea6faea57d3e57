/**
 * The CI outputs of `npm run bench` (src/bench/ci-report.ts) on varied results: the JUnit XML parsed with a
 * real XML parser (fast-xml-parser) and checked as CI readers read it (`testsuites`/`testsuite` counts and
 * time, each `testcase`'s classname, name and time, `<failure>`/`<error>`/`<skipped>` with the measured
 * figure and the limit, awkward names escaped), the Markdown summary's table, and the software-adapter
 * reading the `--gpu` guard uses.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { summarize } from '../core/metrics.ts';
import { fmtSig } from '../util/format.ts';
import {
  checkThresholds,
  junitXml,
  softwareDeviceReasons,
  summaryMarkdown,
  type ThresholdOutcome,
  xmlEscape,
} from './ci-report.ts';
import { deviceName } from './report.ts';
import type { BenchDevice, BenchResult, BenchRun } from './types.ts';

/** A small deterministic PRNG (mulberry32), so a failure names the seed that made it. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HW: BenchDevice = {
  vendor: 'nvidia',
  architecture: 'ada',
  device: '',
  description: 'NVIDIA GeForce RTX 4090',
  isFallbackAdapter: false,
  features: ['shader-f16'],
  limits: {},
  userAgent: 'ua',
  fingerprint: '0123456789abcdef',
  label: 'NVIDIA GeForce RTX 4090',
};
const SWIFTSHADER: BenchDevice = {
  ...HW,
  vendor: 'google',
  architecture: 'swiftshader',
  description: 'SwiftShader Device (Subzero)',
  isFallbackAdapter: true,
  fingerprint: 'fedcba9876543210',
  label: 'SwiftShader Device (Subzero) (software)',
};

function run(ttft: number, tpot: number, n: number): BenchRun {
  return {
    prompt: 'p',
    promptName: 'custom',
    promptTokens: 8,
    outputTokens: n,
    outputTokenIds: Array.from({ length: n }, (_, i) => i),
    text: 'x',
    ttftMs: ttft,
    itlMs: Array.from({ length: n - 1 }, () => tpot),
    tpotMs: tpot,
    e2eMs: ttft + tpot * (n - 1),
    prefillTokensPerSecond: 8000 / ttft,
    decodeTokensPerSecond: 1000 / tpot,
  };
}

function result(
  r: () => number,
  o: { model?: string; device?: BenchDevice; nRuns?: number } = {},
): BenchResult {
  const runs = Array.from({ length: o.nRuns ?? 1 + Math.floor(r() * 4) }, () =>
    run(1 + r() * 500, 0.5 + r() * 50, 2 + Math.floor(r() * 60)),
  );
  return {
    schemaVersion: 1,
    createdAt: '2026-01-02T03:04:05.678Z',
    device: o.device ?? HW,
    engine: 'webgpu',
    model: {
      id: o.model ?? 'stories260K.gguf',
      architecture: 'llama',
      quantization: 'Q4_0',
      parameters: 1e6,
      bytes: 1e6,
    },
    load: { totalMs: 50 + r() * 1000, downloadMs: 1, uploadMs: 1, compileMs: 1 },
    plan: {
      prompts: [{ name: 'custom', text: 'p' }],
      maxTokens: 64,
      runs: runs.length,
      warmup: 0,
      ignoreEos: false,
    },
    runs,
    summary: {
      ttftMs: summarize(runs.map((x) => x.ttftMs)),
      tpotMs: summarize(runs.map((x) => x.tpotMs)),
      prefillTokensPerSecond: summarize(runs.map((x) => x.prefillTokensPerSecond)),
      decodeTokensPerSecond: summarize(runs.map((x) => x.decodeTokensPerSecond)),
    },
  };
}

/** The parser as CI readers use one: attributes kept as strings, repeated elements as arrays. */
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseAttributeValue: false,
  parseTagValue: false,
  isArray: (name) => ['testsuite', 'testcase', 'property'].includes(name),
});

interface Tc {
  classname: string;
  name: string;
  time: string;
  failure?: { message: string; type: string; '#text': string };
  error?: { message: string; type: string; '#text': string };
  skipped?: { message: string };
}
interface Suite {
  name: string;
  tests: string;
  failures: string;
  errors: string;
  skipped: string;
  time: string;
  timestamp: string;
  hostname: string;
  properties: { property: { name: string; value: string }[] };
  testcase: Tc[];
}

function parse(xml: string): { root: Suite & { testsuite: Suite[] }; suite: Suite } {
  expect(XMLValidator.validate(xml)).toBe(true);
  const doc = parser.parse(xml) as { testsuites: Suite & { testsuite: Suite[] } };
  expect(doc.testsuites.testsuite).toHaveLength(1);
  return { root: doc.testsuites, suite: doc.testsuites.testsuite[0] };
}

const SECONDS = /^\d+\.\d{3}$/;
/** The Ant/Jenkins JUnit schema's pattern for a suite's timestamp (no fraction, no zone). */
const JUNIT_TIMESTAMP = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$/;

describe('checkThresholds', () => {
  it('compares the medians, inclusive at the limit; an absent figure misses', () => {
    const r = rng(1);
    for (let i = 0; i < 50; i++) {
      const res = result(r);
      const decode = res.summary.decodeTokensPerSecond.median;
      const ttft = res.summary.ttftMs.median;
      const lo = decode * (0.5 + r());
      const hi = ttft * (0.5 + r());
      const o = checkThresholds(res, { failUnderDecodeTps: lo, failOverTtftMs: hi });
      expect(o.map((x) => x.flag)).toEqual(['--fail-under-decode-tps', '--fail-over-ttft-ms']);
      expect(o[0]).toMatchObject({ measured: decode, limit: lo, kind: 'min', passed: decode >= lo });
      expect(o[1]).toMatchObject({ measured: ttft, limit: hi, kind: 'max', passed: ttft <= hi });
      expect(o[0].message).toContain(`median decode ${fmtSig(decode)} tok/s is `);
      expect(o[1].message).toContain(`--fail-over-ttft-ms ${hi}`);
    }
    const res = result(r);
    expect(
      checkThresholds(res, { failUnderDecodeTps: res.summary.decodeTokensPerSecond.median })[0].passed,
    ).toBe(true);
    expect(checkThresholds(res, {})).toEqual([]);
    const none = { ...res, summary: {} };
    const [d, t] = checkThresholds(none, { failUnderDecodeTps: 0, failOverTtftMs: 1e9 });
    expect(d).toMatchObject({ passed: false, measured: undefined });
    expect(t).toMatchObject({ passed: false, measured: undefined });
    // The line bench prints after "threshold missed: ", unchanged from before this module.
    expect(d.message).toBe('median decode – tok/s is below --fail-under-decode-tps 0');
    expect(checkThresholds(undefined, { failOverTtftMs: 1e9 })).toEqual([
      expect.objectContaining({ flag: '--fail-over-ttft-ms', passed: false, measured: undefined }),
    ]);
  });
});

describe('checkThresholds on a --llama-bench result', () => {
  const test = (name: string, nPrompt: number, nGen: number, mean: number) => ({
    name,
    nPrompt,
    nGen,
    depth: 0,
    tokensPerSecond: { mean, std: 0 },
    samples: [mean],
  });
  it('holds the decode threshold against the slowest tg test (pp tests aside); no tg test misses it', () => {
    const r = rng(7);
    for (let i = 0; i < 30; i++) {
      const tg = [100 + 200 * r(), 100 + 200 * r(), 100 + 200 * r()];
      const tests = [
        test('pp512', 512, 0, 5 * r()), // far slower than any tg: must not count
        test('tg128', 0, 128, tg[0]),
        test('tg128 @ d512', 0, 128, tg[1]),
        test('tg32', 0, 32, tg[2]),
      ];
      const slowest = Math.min(...tg);
      const limit = slowest * (0.5 + r());
      const [o] = checkThresholds({ summary: {}, tests } as never, { failUnderDecodeTps: limit });
      expect(o).toMatchObject({ measured: slowest, passed: slowest >= limit, metric: 'slowest tg tok/s' });
      const name = tests[1 + tg.indexOf(slowest)].name;
      expect(o.message).toBe(
        `decode (the slowest tg test, ${name}) ${fmtSig(slowest)} tok/s is ${slowest >= limit ? 'at or above' : 'below'} --fail-under-decode-tps ${limit}`,
      );
    }
    const [none] = checkThresholds({ summary: {}, tests: [test('pp512', 512, 0, 900)] } as never, {
      failUnderDecodeTps: 1,
    });
    expect(none).toMatchObject({ passed: false, measured: undefined });
    expect(none.message).toBe('decode (no tg test ran) – tok/s is below --fail-under-decode-tps 1');
  });
});

describe('junitXml', () => {
  it('varied results: counts, times, test cases and failures as a JUnit reader sees them', () => {
    const r = rng(42);
    for (let i = 0; i < 40; i++) {
      const res = result(r, { device: r() < 0.5 ? HW : SWIFTSHADER });
      const decode = res.summary.decodeTokensPerSecond.median;
      const ttft = res.summary.ttftMs.median;
      const t = {
        failUnderDecodeTps: r() < 0.7 ? Math.round(decode * (0.5 + r()) * 100) / 100 : undefined,
        failOverTtftMs: r() < 0.7 ? Math.round(ttft * (0.5 + r()) * 100) / 100 : undefined,
      };
      const outcomes = checkThresholds(res, t);
      const timeS = 1 + r() * 100;
      const { root, suite } = parse(junitXml({ result: res, outcomes, timeS }));
      const failed = outcomes.filter((o) => !o.passed);
      for (const s of [root, suite]) {
        expect(s.tests).toBe(String(1 + outcomes.length));
        expect(s.failures).toBe(String(failed.length));
        expect(s.errors).toBe('0');
        expect(s.skipped).toBe('0');
        expect(s.time).toBe(timeS.toFixed(3));
      }
      const dev = res.device === HW ? 'NVIDIA GeForce RTX 4090' : 'SwiftShader Device (Subzero) (software)';
      expect(suite.name).toBe(`bench: stories260K.gguf on ${dev}`);
      // UTC whole seconds, no zone: the strict Ant/Jenkins schema's pattern.
      expect(suite.timestamp).toBe('2026-01-02T03:04:05');
      expect(suite.timestamp).toMatch(JUNIT_TIMESTAMP);
      expect(suite.hostname).toBe('localhost');
      const props = Object.fromEntries(suite.properties.property.map((p) => [p.name, p.value]));
      expect(props).toMatchObject({
        model: 'stories260K.gguf',
        adapter: res.device === HW ? 'hardware' : 'software',
        fingerprint: res.device.fingerprint,
        decode_tps_median: fmtSig(decode),
        ttft_ms_median: fmtSig(ttft),
      });
      expect(suite.testcase).toHaveLength(1 + outcomes.length);
      for (const tc of suite.testcase) {
        expect(tc.classname).toBe('bench.stories260K.gguf');
        expect(tc.time).toMatch(SECONDS);
        expect(tc.error).toBeUndefined();
      }
      const runMs = res.load.totalMs + res.runs.reduce((a, x) => a + x.e2eMs, 0);
      expect(suite.testcase[0].name).toBe('benchmark completed');
      expect(Number(suite.testcase[0].time)).toBeCloseTo(runMs / 1000, 3);
      expect(suite.testcase[0].failure).toBeUndefined();
      outcomes.forEach((o, k) => {
        const tc = suite.testcase[k + 1];
        const limit = o.kind === 'min' ? t.failUnderDecodeTps : t.failOverTtftMs;
        expect(tc.name).toBe(
          o.kind === 'min' ? `median decode tok/s >= ${limit}` : `median TTFT ms <= ${limit}`,
        );
        if (o.passed) expect(tc.failure).toBeUndefined();
        else {
          const measured = fmtSig(o.kind === 'min' ? decode : ttft);
          expect(tc.failure?.type).toBe('threshold');
          expect(tc.failure?.message).toBe(o.message);
          expect(tc.failure?.message).toContain(measured);
          expect(tc.failure?.message).toContain(String(limit));
          expect(tc.failure?.['#text']).toBe(
            `${o.metric}: measured ${measured} ${o.unit}, threshold ${o.kind === 'min' ? '>=' : '<='} ${limit} ${o.unit} (${o.flag})`,
          );
        }
      });
    }
  });

  it('a run with no thresholds is still a valid suite: one passing test case', () => {
    const res = result(rng(3), { nRuns: 2 });
    const { root, suite } = parse(junitXml({ result: res, outcomes: [] }));
    expect(root).toMatchObject({ tests: '1', failures: '0', errors: '0', skipped: '0' });
    expect(suite.testcase).toHaveLength(1);
    expect(suite.testcase[0].name).toBe('benchmark completed');
    const runMs = res.load.totalMs + res.runs[0].e2eMs + res.runs[1].e2eMs;
    expect(suite.time).toBe((runMs / 1000).toFixed(3));
  });

  it('escapes awkward model names, device names and messages', () => {
    const model = `a<b>&"c'd.gguf`;
    const device = { ...HW, label: `GPU "<x>" & 'y'`, description: `GPU "<x>" & 'y'` };
    const res = result(rng(5), { model, device });
    const outcomes = checkThresholds(res, { failUnderDecodeTps: 1e12 });
    const xml = junitXml({ result: res, outcomes });
    expect(xml).not.toContain(model);
    const { suite } = parse(xml);
    expect(suite.name).toBe(`bench: ${model} on GPU "<x>" & 'y'`);
    // The classname has only [A-Za-z0-9_.-] (reporters split on ':' or '/'); the suite's name keeps the id.
    expect(suite.testcase.map((t) => t.classname)).toEqual(['bench.a_b___c_d.gguf', 'bench.a_b___c_d.gguf']);
    expect(suite.testcase[1].failure?.message).toMatch(/below --fail-under-decode-tps 1000000000000$/);
    // Characters XML 1.0 forbids (a terminal colour code in an error) are dropped, not written.
    expect(xmlEscape('\u001b[31mred\u001b[0m <&>')).toBe('[31mred[0m &lt;&amp;&gt;');
  });

  it('a failed run: an <error> test case with the code and message, the thresholds skipped', () => {
    const outcomes: ThresholdOutcome[] = checkThresholds(result(rng(9)), {
      failUnderDecodeTps: 10,
      failOverTtftMs: 500,
    });
    const message = '--gpu: the WebGPU adapter is a software one (SwiftShader <CPU>); pass --allow-software';
    const xml = junitXml({
      outcomes,
      error: { code: 'software_adapter', message },
      device: SWIFTSHADER,
      modelId: 'stories260K.gguf',
      timeS: 12.5,
      hostname: 'gpu-runner-1',
    });
    const { root, suite } = parse(xml);
    for (const s of [root, suite])
      expect(s).toMatchObject({ tests: '3', failures: '0', errors: '1', skipped: '2', time: '12.500' });
    expect(suite.name).toBe('bench: stories260K.gguf on SwiftShader Device (Subzero) (software)');
    expect(suite.hostname).toBe('gpu-runner-1');
    expect(suite.testcase[0].name).toBe('benchmark completed');
    expect(suite.testcase[0].error).toEqual({
      message,
      type: 'software_adapter',
      '#text': `error [software_adapter]: ${message}`,
    });
    expect(suite.testcase.slice(1).map((t) => [t.name, t.skipped?.message])).toEqual([
      ['median decode tok/s >= 10', 'the benchmark did not complete'],
      ['median TTFT ms <= 500', 'the benchmark did not complete'],
    ]);
    // No thresholds, no device: still one test case with the error.
    const bare = parse(junitXml({ outcomes: [], error: { message: 'boom' } }));
    expect(bare.root).toMatchObject({ tests: '1', errors: '1', failures: '0', skipped: '0' });
    expect(bare.suite.testcase[0].error).toMatchObject({ type: 'error', '#text': 'error: boom' });
    expect(bare.suite.timestamp).toMatch(JUNIT_TIMESTAMP);
  });

  it('a synthetic model: a classname with no colon, the real name in the suite; the timestamp in UTC seconds', () => {
    const model = 'synthetic:llama-3.2-1b-q4_0';
    const res = { ...result(rng(13), { model }), createdAt: '2026-12-02T05:45:54.451Z' };
    const outcomes = checkThresholds(res, { failUnderDecodeTps: 1 });
    const { suite } = parse(junitXml({ result: res, outcomes }));
    expect(suite.testcase.map((t) => t.classname)).toEqual([
      'bench.synthetic_llama-3.2-1b-q4_0',
      'bench.synthetic_llama-3.2-1b-q4_0',
    ]);
    for (const t of suite.testcase) expect(t.classname).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(suite.name).toBe(`bench: ${model} on NVIDIA GeForce RTX 4090`);
    const props = Object.fromEntries(suite.properties.property.map((p) => [p.name, p.value]));
    expect(props.model).toBe(model);
    expect(suite.timestamp).toBe('2026-12-02T05:45:54');
    // A time with an offset is written in UTC; an explicit timestamp wins over createdAt.
    const off = parse(junitXml({ result: res, outcomes, timestamp: '2026-12-02T07:45:54.999+02:00' }));
    expect(off.suite.timestamp).toBe('2026-12-02T05:45:54');
    // With no result and no timestamp: now, in the same form.
    const t0 = Date.now();
    const now = parse(junitXml({ outcomes: [], error: { message: 'x' }, modelId: model }));
    expect(now.suite.timestamp).toMatch(JUNIT_TIMESTAMP);
    expect(Math.abs(Date.parse(`${now.suite.timestamp}Z`) - t0)).toBeLessThan(5000);
    expect(now.suite.testcase[0].classname).toBe('bench.synthetic_llama-3.2-1b-q4_0');
  });
});

describe('junitXml and summaryMarkdown of a --llama-bench result', () => {
  it("report each pp/tg test's mean ± std, not the prompt plan's (absent) medians", () => {
    const r = rng(11);
    for (let i = 0; i < 20; i++) {
      const means = [200 + 2000 * r(), 5 + 100 * r(), 5 + 100 * r()];
      const stds = means.map((m) => m * 0.1 * r());
      const tests = ['pp512', 'tg128', 'tg128 @ d4096'].map((name, k) => ({
        name,
        nPrompt: k === 0 ? 512 : 0,
        nGen: k === 0 ? 0 : 128,
        depth: k === 2 ? 4096 : 0,
        tokensPerSecond: { mean: means[k], std: stds[k] },
        samples: [means[k]],
      }));
      const res = { ...result(r), runs: [], summary: {}, tests } as unknown as BenchResult;
      const limit = Math.round(Math.min(means[1], means[2]) * (0.5 + r()));
      const outcomes = checkThresholds(res, { failUnderDecodeTps: limit });
      const { suite } = parse(junitXml({ result: res, outcomes }));
      const props = Object.fromEntries(suite.properties.property.map((p) => [p.name, p.value]));
      expect(props).toMatchObject({
        pp512_tps_mean: fmtSig(means[0]),
        tg128_tps_mean: fmtSig(means[1]),
        tg128_d4096_tps_mean: fmtSig(means[2]),
      });
      expect(Object.keys(props).filter((k) => k.endsWith('_median'))).toEqual([]);
      const out = (suite.testcase[0] as unknown as { 'system-out': string })['system-out'];
      expect(out).toBe(
        `llama-bench tests of stories260K.gguf on ${deviceName(res)} (tok/s, mean ± std): ${tests.map((t) => `${t.name} ${fmtSig(t.tokensPerSecond.mean)} ± ${fmtSig(t.tokensPerSecond.std)}`).join(', ')}`,
      );
      const [head, align, row] = summaryMarkdown({ result: res, outcomes }).split('\n').slice(2);
      const cells = (l: string) => l.split(' | ').map((c) => c.replace(/^\| | \|$/g, ''));
      expect(cells(head)).toEqual([
        'Model',
        'Device',
        'Adapter',
        'pp512 tok/s',
        'tg128 tok/s',
        'tg128 @ d4096 tok/s',
        'Thresholds',
      ]);
      expect(align).toBe('| --- | --- | --- | ---: | ---: | ---: | --- |');
      expect(cells(row).slice(3, 6)).toEqual(
        tests.map((t) => `${fmtSig(t.tokensPerSecond.mean)} ± ${fmtSig(t.tokensPerSecond.std)}`),
      );
      expect(row).not.toContain('–');
    }
  });
});

describe('summaryMarkdown', () => {
  /** The table's header and row as cells. */
  function table(md: string): { head: string[]; align: string[]; row: string[] } {
    const rows = md
      .split('\n')
      .filter((l) => l.startsWith('|'))
      .map((l) =>
        l
          .slice(2, -2)
          .split(/(?<!\\) \| /)
          .map((c) => c.replace(/\\\|/g, '|')),
      );
    expect(rows).toHaveLength(3);
    return { head: rows[0], align: rows[1], row: rows[2] };
  }

  it('one row with the medians, the adapter kind and each threshold ✓/✗', () => {
    const r = rng(11);
    for (let i = 0; i < 20; i++) {
      const sw = r() < 0.5;
      const res = result(r, { device: sw ? SWIFTSHADER : HW, model: 'm|odel.gguf' });
      const s = res.summary;
      const outcomes = checkThresholds(res, {
        failUnderDecodeTps: s.decodeTokensPerSecond.median * (0.5 + r()),
        failOverTtftMs: s.ttftMs.median * (0.5 + r()),
      });
      const md = summaryMarkdown({ result: res, outcomes });
      expect(md.endsWith('\n\n')).toBe(true);
      const missed = outcomes.filter((o) => !o.passed);
      expect(md.split('\n')[0]).toBe(
        `### WebGPU LLM benchmark: m|odel.gguf (Q4_0) — ${missed.length ? 'threshold missed' : 'thresholds met'}`,
      );
      const t = table(md);
      expect(t.head).toEqual([
        'Model',
        'Device',
        'Adapter',
        'TTFT median (ms)',
        'Prefill tok/s',
        'Decode tok/s',
        'TPOT median (ms)',
        'Thresholds',
      ]);
      // The figures right-aligned; the text columns, the thresholds' ✓/✗ lines included, left.
      expect(t.align).toEqual(['---', '---', '---', '---:', '---:', '---:', '---:', '---']);
      expect(t.row.slice(0, 7)).toEqual([
        'm|odel.gguf (Q4_0)',
        sw ? 'SwiftShader Device (Subzero) (software)' : 'NVIDIA GeForce RTX 4090',
        sw ? 'software (CPU)' : 'hardware',
        fmtSig(s.ttftMs.median),
        fmtSig(s.prefillTokensPerSecond?.median),
        fmtSig(s.decodeTokensPerSecond.median),
        fmtSig(s.tpotMs.median),
      ]);
      expect(t.row[7].split('<br>')).toEqual(
        outcomes.map(
          (o) =>
            `${o.passed ? '✓' : '✗'} ${o.kind === 'min' ? 'median decode tok/s >=' : 'median TTFT ms <='} ${o.limit} (${fmtSig(o.measured)})`,
        ),
      );
      for (const o of missed) expect(md).toContain(`**Threshold missed:** ${o.message}.`);
      expect(md.includes('Software adapter: WebGPU ran on the CPU')).toBe(sw);
    }
  });

  it('no thresholds: "none set"; a failed run: its error line and the thresholds not run', () => {
    const res = result(rng(2));
    const md = summaryMarkdown({ result: res, outcomes: [] });
    expect(md).toContain('— done');
    expect(table(md).row[7]).toBe('none set');
    const outcomes = checkThresholds(res, { failOverTtftMs: 5 });
    const f = summaryMarkdown({
      outcomes,
      error: { code: 'software_adapter', message: 'no GPU' },
      device: SWIFTSHADER,
      modelId: 'stories260K.gguf',
    });
    expect(f.split('\n')[0]).toBe('### WebGPU LLM benchmark: stories260K.gguf — failed');
    const row = table(f).row;
    expect(row.slice(2, 7)).toEqual(['software (CPU)', '–', '–', '–', '–']);
    expect(row[7]).toBe('– median TTFT ms <= 5 (not run)');
    expect(f).toContain('**The benchmark failed:** error [software_adapter]: no GPU');
  });
});

describe('summaryMarkdown with hostile text (issue 47 item 12)', () => {
  it("escapes a server's error message, the model id and the device: no HTML, link or line break", () => {
    const md = summaryMarkdown({
      outcomes: [],
      error: {
        code: 'http_status',
        message: 'HTTP 500 (the server said: <img src=x onerror=alert(1)>\n# hi [x](https://e.example) |)',
      },
      device: { ...SWIFTSHADER, label: '<script>alert(1)</script>' },
      modelId: 'm<b>\n### x',
    });
    expect(md).not.toMatch(/<img|<script|<b>/);
    expect(md).toContain('### WebGPU LLM benchmark: m&lt;b&gt; ### x — failed');
    expect(md).toContain(
      '**The benchmark failed:** error [http_status]: HTTP 500 (the server said: &lt;img src=x onerror=alert(1)&gt; # hi \\[x\\](https://e.example) |)',
    );
    expect(md.split('\n').filter((l) => l.startsWith('#'))).toHaveLength(1);
  });
});

describe('softwareDeviceReasons (the --gpu guard)', () => {
  it('SwiftShader, llvmpipe, the fallback flag and the fingerprint label count; a GPU does not', () => {
    expect(softwareDeviceReasons(HW)).toEqual([]);
    expect(
      softwareDeviceReasons({ ...HW, vendor: 'apple', architecture: 'metal-3', label: 'Apple M2' }),
    ).toEqual([]);
    expect(softwareDeviceReasons(SWIFTSHADER)).toContain('the adapter reports isFallbackAdapter');
    expect(softwareDeviceReasons({ ...HW, isFallbackAdapter: true })).toEqual([
      'the adapter reports isFallbackAdapter',
    ]);
    expect(softwareDeviceReasons({ ...HW, description: 'llvmpipe (LLVM 15.0.6, 256 bits)' })).toEqual([
      'its description names llvmpipe',
    ]);
    expect(softwareDeviceReasons({ ...HW, architecture: 'swiftshader' })).toEqual([
      'its architecture names swiftshader',
    ]);
    expect(softwareDeviceReasons({ ...HW, label: 'some adapter (software)' })).toEqual([
      'its fingerprint label "some adapter (software)" says software',
    ]);
  });
});

describe('a remote server', () => {
  it('is adapter "remote" in JUnit and "remote server" in the summary, never "hardware"', async () => {
    const { remoteDevice } = await import('./remote.ts');
    const res = result(rng(5), { device: remoteDevice('127.0.0.1:8000'), model: 'test-model' });
    const { suite } = parse(junitXml({ result: res, outcomes: [] }));
    expect(suite.properties.property.find((p) => p.name === 'adapter')?.value).toBe('remote');
    const row = summaryMarkdown({ result: res, outcomes: [] }).split('\n')[4];
    expect(row).toContain('| remote server |');
    expect(row).not.toContain('hardware');
  });
});
