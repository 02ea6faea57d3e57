/**
 * The runner on hand-made timelines with known answers (several tokens per chunk, one-token outputs,
 * EOS at once, the engine's clock versus the caller's) and on a fake engine (warm-up, order, hooks,
 * abort, timeout); summaries and the result file.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import type { Engine, GenerateRequest, GenerateResult, TokenEvent } from '../core/types.ts';
import {
  benchLoadFrom,
  benchModelFrom,
  benchRunFrom,
  buildResult,
  runBenchmark,
  summarizeRuns,
  validatePlan,
} from './runner.ts';
import type { BenchDevice, BenchPlan, BenchRun } from './types.ts';
import { resultProblems } from './types.ts';

function gen(tStartMs: number, tokenTimesMs: number[], promptTokens = 5): GenerateResult {
  return {
    promptTokenIds: Array.from({ length: promptTokens }, (_, i) => i + 1),
    outputTokenIds: tokenTimesMs.map((_, i) => 100 + i),
    text: 'x'.repeat(tokenTimesMs.length),
    finishReason: 'length',
    tStartMs,
    tokenTimesMs,
  };
}
const P = { name: 'p', text: 'hello' };

describe('benchRunFrom', () => {
  it('computes every metric of a timeline from the engine clock', () => {
    const r = benchRunFrom(P, gen(100, [150, 160, 170, 180]));
    expect(r).toMatchObject({
      prompt: 'hello',
      promptName: 'p',
      promptTokens: 5,
      outputTokens: 4,
      outputTokenIds: [100, 101, 102, 103],
      ttftMs: 50,
      e2eMs: 80,
      itlMs: [10, 10, 10],
      tpotMs: 10,
      decodeTokensPerSecond: 100,
      prefillTokensPerSecond: 100,
    });
  });

  it("starts at the caller's timestamp when the engine shares its clock, else at the engine's", () => {
    // In-page engine: its tStartMs (100) lies between the caller's 90 and 200.
    expect(benchRunFrom(P, gen(100, [150, 160]), 90, 200).ttftMs).toBe(60);
    // Worker engine: its timeline starts later, so its numbers are smaller than the caller's.
    expect(benchRunFrom(P, gen(5, [55, 65]), 9000, 9100).ttftMs).toBe(50);
  });

  it('several tokens per chunk share a timestamp (zero gaps), one-token outputs have no decode rate', () => {
    const chunked = benchRunFrom(P, gen(0, [10, 10, 10, 30, 30]));
    expect(chunked.itlMs).toEqual([0, 0, 20, 0]);
    expect(chunked.decodeTokensPerSecond).toBe(4000 / 20);
    const one = benchRunFrom(P, gen(0, [25]));
    expect(one.outputTokens).toBe(1);
    expect(one.itlMs).toEqual([]);
    expect(one.tpotMs).toBeNaN();
    expect(one.decodeTokensPerSecond).toBeNaN();
    expect(one.e2eMs).toBe(25);
  });
});

const run = (ttft: number, times: number[]): BenchRun => benchRunFrom(P, gen(0, [ttft, ...times]));

describe('summarizeRuns', () => {
  it('summarizes per run, pools ITL gaps, and leaves out non-finite values', () => {
    const runs = [run(10, [20, 30]), run(20, [40]), run(30, [])];
    const s = summarizeRuns(runs);
    expect(s.ttftMs).toMatchObject({ n: 3, mean: 20, median: 20, min: 10, max: 30 });
    expect(s.ttftMs.std).toBeCloseTo(Math.sqrt(200 / 3), 12);
    expect(s.itlMs).toMatchObject({ n: 3, mean: 40 / 3, median: 10, min: 10, max: 20 });
    // The one-token run has no decode figures: n = 2.
    expect(s.decodeTokensPerSecond).toMatchObject({ n: 2, min: 50, max: 100 });
    expect(s.tpotMs).toMatchObject({ n: 2, mean: 15 });
    expect(s.e2eMs).toMatchObject({ n: 3, median: 30 });
    expect(Object.keys(s)).toEqual([
      'ttftMs',
      'tpotMs',
      'itlMs',
      'e2eMs',
      'prefillTokensPerSecond',
      'decodeTokensPerSecond',
    ]);
  });

  it('omits a metric with no finite value (only one-token runs; zero decode spans)', () => {
    const s = summarizeRuns([run(10, []), run(20, [])]);
    expect(s.decodeTokensPerSecond).toBeUndefined();
    expect(s.tpotMs).toBeUndefined();
    expect(s.itlMs).toBeUndefined();
    expect(s.ttftMs.n).toBe(2);
    const z = summarizeRuns([run(10, [10])]); // EOS arrived with the first token: span 0
    expect(z.decodeTokensPerSecond).toBeUndefined();
    expect(z.tpotMs.mean).toBe(0);
    expect(summarizeRuns([])).toEqual({});
  });
});

const DEVICE: BenchDevice = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: '',
  isFallbackAdapter: true,
  features: ['timestamp-query'],
  limits: { maxBufferSize: 1 << 30 },
  userAgent: 'test',
  fingerprint: '0123456789abcdef',
  label: 'google swiftshader (software)',
};
const PLAN: BenchPlan = { prompts: [P], maxTokens: 8, runs: 2, warmup: 1, ignoreEos: false };

describe('buildResult', () => {
  it('makes a valid schemaVersion 1 file with the summary of its runs', () => {
    const runs = [run(10, [20, 30]), run(12, [22, 34])];
    const info = {
      name: 'm',
      architecture: 'llama',
      nParams: 1000,
      nLayers: 2,
      nEmbd: 8,
      nVocab: 32,
      contextLength: 64,
      weightBytes: 4000,
      tensorTypes: ['F32', 'F16'],
    };
    const r = buildResult({
      device: DEVICE,
      engine: 'webgpu',
      model: benchModelFrom(info, { id: 'm.gguf' }),
      load: benchLoadFrom({ load: { fetchMs: 1, uploadMs: 2, compileMs: 3, totalMs: 7 } }),
      plan: PLAN,
      runs,
      createdAt: '2025-01-02T03:04:05.000Z',
    });
    expect(r.schemaVersion).toBe(1);
    expect(r.createdAt).toBe('2025-01-02T03:04:05.000Z');
    expect(r.model).toEqual({
      id: 'm.gguf',
      architecture: 'llama',
      quantization: 'F32+F16',
      parameters: 1000,
      bytes: 4000,
      contextLength: 64,
    });
    expect(r.load).toEqual({ totalMs: 7, downloadMs: 1, uploadMs: 2, compileMs: 3 });
    expect(r.summary).toEqual(summarizeRuns(runs));
    expect('roofline' in r).toBe(false);
    expect(resultProblems(JSON.parse(JSON.stringify(r)))).toEqual([]);
    expect(benchLoadFrom({}, 42)).toEqual({ totalMs: 42, downloadMs: 0, uploadMs: 0, compileMs: 0 });
    expect(benchModelFrom(info, { id: 's', synthetic: true }).synthetic).toBe(true);
  });
});

/** An engine that answers from a script: token i of a run at t0 + 10 + 5·i (its own clock, from 0). */
class FakeEngine implements Partial<Engine> {
  calls: GenerateRequest[] = [];
  clock = -1e9; // a worker-like timeline, always before the caller's
  constructor(private readonly behaviour: 'ok' | 'honours-abort' | 'ignores-abort' = 'ok') {}
  async generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    this.calls.push(req);
    if (this.behaviour !== 'ok') {
      await new Promise<void>((resolve) => {
        if (this.behaviour === 'honours-abort')
          signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      return { ...gen(0, [1]), finishReason: 'aborted' };
    }
    this.clock += 1000;
    const t0 = this.clock;
    const n = req.maxTokens ?? 1;
    const times = Array.from({ length: n }, (_, i) => t0 + 10 + 5 * i);
    for (const [i, tMs] of times.entries()) onToken?.({ tokenId: i, text: 't', tMs });
    return { ...gen(t0, times, (req.prompt ?? '').length), outputTokenIds: times.map((_, i) => i) };
  }
}

describe('runBenchmark', () => {
  it('runs warm-ups on the first prompt (not returned), then runs × prompts in order, calling the hooks', async () => {
    const e = new FakeEngine();
    const plan: BenchPlan = {
      prompts: [
        { name: 'a', text: 'aa' },
        { name: 'b', text: 'bbbb' },
      ],
      maxTokens: 3,
      runs: 2,
      warmup: 2,
      ignoreEos: true,
      sampling: { temperature: 0.5, seed: 7 },
    };
    const log: string[] = [];
    let tokens = 0;
    const runs = await runBenchmark(e as unknown as Engine, plan, {
      onRunStart: (i, p, w) => log.push(`start ${w ? 'w' : 'm'}${i} ${p.name}`),
      onRunDone: (r, w) => log.push(`done ${w ? 'w' : 'm'} ${r.promptName}`),
      onToken: () => tokens++,
    });
    expect(runs.map((r) => r.promptName)).toEqual(['a', 'a', 'b', 'b']);
    expect(runs.map((r) => r.promptTokens)).toEqual([2, 2, 4, 4]);
    expect(log).toEqual([
      'start w0 a',
      'done w a',
      'start w1 a',
      'done w a',
      'start m0 a',
      'done m a',
      'start m1 a',
      'done m a',
      'start m2 b',
      'done m b',
      'start m3 b',
      'done m b',
    ]);
    expect(tokens).toBe(6 * 3);
    expect(e.calls).toHaveLength(6);
    expect(e.calls[0]).toEqual({ prompt: 'aa', maxTokens: 3, ignoreEos: true, temperature: 0.5, seed: 7 });
    for (const r of runs)
      expect(r).toMatchObject({
        ttftMs: 10,
        e2eMs: 20,
        tpotMs: 5,
        itlMs: [5, 5],
        decodeTokensPerSecond: 200,
      });
  });

  it('rejects a bad plan', async () => {
    expect(() => validatePlan({ ...PLAN, prompts: [] })).toThrow(/no prompts/);
    expect(() => validatePlan({ ...PLAN, maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => validatePlan({ ...PLAN, runs: 1.5 })).toThrow(/runs/);
    expect(() => validatePlan({ ...PLAN, warmup: -1 })).toThrow(/warmup/);
    await expect(
      runBenchmark(new FakeEngine() as unknown as Engine, { ...PLAN, runs: 0 }),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });

  it('stops with EngineError("aborted") when the signal fires', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(
      runBenchmark(new FakeEngine() as unknown as Engine, PLAN, { signal: ctl.signal }),
    ).rejects.toMatchObject({
      code: 'aborted',
    });
  });

  it('times out a request: at once when the engine honours the abort, after a grace period when it does not', async () => {
    const t0 = performance.now();
    const err = await runBenchmark(new FakeEngine('honours-abort') as unknown as Engine, PLAN, {
      requestTimeoutMs: 50,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err.code).toBe('timeout');
    expect(err.message).toMatch(/did not finish within 50 ms/);
    expect(performance.now() - t0).toBeLessThan(1500);
    const t1 = performance.now();
    const err2 = await runBenchmark(new FakeEngine('ignores-abort') as unknown as Engine, PLAN, {
      requestTimeoutMs: 50,
    }).catch((e) => e);
    expect(err2.code).toBe('timeout');
    expect(performance.now() - t1).toBeLessThan(4000);
  });
});
