/**
 * The runner's speculative-decoding and constrained-output parts on hand-made runs with known answers: the
 * `speculative` block (acceptance, tokens per target pass, speed-up, same output), the baseline plan, the
 * constraint mark, what every request carries, and the result schema's round trip of the new fields
 * (JSON and CSV).
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../core/types.ts';
import { sampleResult } from '../testing/sample-result.ts';
import { csvToResults, resultsToCsv } from './csv.ts';
import { engineLabel, formatResultText, markdownReport, reportRows, setupText } from './report.ts';
import { parseResultsJson, resultToJson } from './result-io.ts';
import {
  baselinePlan,
  benchRunFrom,
  buildResult,
  constraintMark,
  planRequest,
  runBenchmark,
  runPlanWithBaseline,
  speculativeSummary,
} from './runner.ts';
import type { BenchPlan, BenchRun } from './types.ts';
import { resultProblems } from './types.ts';

const P = { name: 'p', text: 'hello' };

/** A run of `ids` with one token every `gapMs` after a 10 ms TTFT, and its drafting figures. */
function run(ids: number[], gapMs: number, spec?: BenchRun['speculative']): BenchRun {
  const times = ids.map((_, i) => 10 + gapMs * i);
  const r: GenerateResult = {
    promptTokenIds: [1, 2, 3],
    outputTokenIds: ids,
    text: ids.join(' '),
    finishReason: 'length',
    tStartMs: 0,
    tokenTimesMs: times,
    ...(spec ? { speculative: spec } : {}),
  };
  return benchRunFrom(P, r);
}

const LOOKUP: BenchPlan = {
  prompts: [P],
  maxTokens: 9,
  runs: 2,
  warmup: 1,
  ignoreEos: true,
  draft: { type: 'lookup', draftMax: 4 },
};

describe('speculativeSummary', () => {
  it('totals the runs and divides by the baseline (known figures)', () => {
    const ids = [5, 6, 7, 8, 9, 10, 11, 12, 13];
    // Run 1: 12 drafted, 6 accepted, 4 passes for 8 decoded tokens; run 2: 8 drafted, 2 accepted, 6 passes.
    const drafted = [
      run(ids, 2, { drafted: 12, accepted: 6, targetPasses: 4 }),
      run(ids, 4, { drafted: 8, accepted: 2, targetPasses: 6 }),
    ];
    // Baseline: 10 ms and 8 ms per token → 100 and 125 tok/s; drafted: 500 and 250 tok/s.
    const baseline = [run(ids, 10), run(ids, 8)];
    const s = speculativeSummary(LOOKUP, drafted, baseline, 'lookup');
    expect(s).toEqual({
      draft: 'lookup',
      draftMax: 4,
      drafted: 20,
      accepted: 8,
      targetPasses: 10,
      acceptanceRate: 0.4,
      tokensPerTargetPass: 16 / 10,
      baseline: { runs: 2, decodeTokensPerSecond: 112.5, e2eMs: (90 + 74) / 2 },
      speedup: 375 / 112.5,
      sameOutput: true,
    });
  });

  it('reports a differing output, nothing drafted as NaN, and no sameOutput for sampled plans', () => {
    const a = [run([1, 2, 3], 5, { drafted: 0, accepted: 0, targetPasses: 2 })];
    const b = [run([1, 2, 4], 5)];
    const s = speculativeSummary(LOOKUP, a, b, 'lookup');
    expect(s.sameOutput).toBe(false);
    expect(s.acceptanceRate).toBeNaN();
    expect(s.tokensPerTargetPass).toBe(1);
    expect(s.speedup).toBe(1);
    const sampled = speculativeSummary({ ...LOOKUP, sampling: { temperature: 0.7 } }, a, b, 'lookup');
    expect('sameOutput' in sampled).toBe(false);
    // A different length is a different output too.
    expect(speculativeSummary(LOOKUP, a, [run([1, 2], 5)], 'lookup').sameOutput).toBe(false);
  });

  it('refuses a plan without draft and unpaired runs', () => {
    const a = [run([1, 2], 5)];
    expect(() => speculativeSummary({ ...LOOKUP, draft: undefined }, a, a, 'x')).toThrow(EngineError);
    expect(() => speculativeSummary(LOOKUP, a, [], 'lookup')).toThrow(/1 drafted runs but 0 baseline/);
  });

  it('baselinePlan drops the draft, keeps the rest (its warm-up too)', () => {
    const b = baselinePlan(LOOKUP);
    expect(b).toEqual({ prompts: [P], maxTokens: 9, runs: 2, warmup: 1, ignoreEos: true });
    expect(LOOKUP.draft).toBeDefined(); // not mutated
  });
});

describe('constraintMark', () => {
  it('names the kind and hashes the schema independently of its formatting', () => {
    const a = constraintMark({ type: 'json_schema', schema: '{"type":"object"}' });
    const b = constraintMark({ type: 'json_schema', schema: '{\n  "type": "object"\n}' });
    const c = constraintMark({ type: 'json_schema', schema: { type: 'object' } });
    expect(a.kind).toBe('json_schema');
    expect(a.hash).toMatch(/^fnv1a64:[0-9a-f]{16}$/);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(constraintMark({ type: 'json_schema', schema: '{"type":"array"}' }).hash).not.toBe(a.hash);
    // The FNV-1a 64 offset basis: the hash of the empty text.
    expect(constraintMark({ type: 'json_object' })).toEqual({
      kind: 'json_object',
      hash: 'fnv1a64:cbf29ce484222325',
    });
    const g = constraintMark({ type: 'grammar', grammar: 'root ::= "a"' });
    expect(g.kind).toBe('grammar');
    expect(g.hash).not.toBe(constraintMark({ type: 'grammar', grammar: 'root ::= "b"' }).hash);
    expect(() => constraintMark({ type: 'json_schema', schema: '{' })).toThrow(/not JSON/);
  });
});

describe('requests and results of a drafting or constrained plan', () => {
  it('every request carries the draft and the response format; the baseline none', async () => {
    const calls: GenerateRequest[] = [];
    const engine = {
      async generate(req: GenerateRequest): Promise<GenerateResult> {
        calls.push(req);
        return {
          promptTokenIds: [1],
          outputTokenIds: [7, 8],
          text: 'ab',
          finishReason: 'length',
          tStartMs: 0,
          tokenTimesMs: [1, 2],
          ...(req.draft ? { speculative: { drafted: 3, accepted: 1, targetPasses: 1 } } : {}),
        };
      },
    } as unknown as Engine;
    const runs = await runBenchmark(engine, LOOKUP);
    expect(calls).toHaveLength(3); // 1 warm-up + 2 measured
    for (const c of calls) expect(c.draft).toEqual({ type: 'lookup', draftMax: 4 });
    expect(runs[0].speculative).toEqual({ drafted: 3, accepted: 1, targetPasses: 1 });
    await runBenchmark(engine, baselinePlan(LOOKUP));
    expect(calls.slice(3).map((c) => c.draft)).toEqual([undefined, undefined, undefined]);
    const fmt = { type: 'grammar' as const, grammar: 'root ::= "x"' };
    expect(planRequest({ ...LOOKUP, draft: undefined, responseFormat: fmt }, P)).toEqual({
      prompt: 'hello',
      maxTokens: 9,
      ignoreEos: true,
      responseFormat: fmt,
    });
  });

  it('a drafting plan runs its baseline first: the requests of a plain run of the plan, then the drafted ones (issue 46)', async () => {
    const log = (calls: GenerateRequest[]) =>
      ({
        async generate(req: GenerateRequest): Promise<GenerateResult> {
          calls.push(req);
          return {
            promptTokenIds: [1],
            outputTokenIds: [7, 8, 9],
            text: 'abc',
            finishReason: 'length',
            tStartMs: 0,
            tokenTimesMs: [1, 2 + calls.length, 4 + calls.length],
            ...(req.draft ? { speculative: { drafted: 2, accepted: 1, targetPasses: 1 } } : {}),
          };
        },
      }) as unknown as Engine;
    const Q = { name: 'q', text: 'world' };
    const plan: BenchPlan = { ...LOOKUP, prompts: [P, Q], runs: 2, warmup: 2 };
    // What a plain bench of the plan sends on a fresh load.
    const plainCalls: GenerateRequest[] = [];
    await runBenchmark(log(plainCalls), baselinePlan(plan));
    const calls: GenerateRequest[] = [];
    const order: string[] = [];
    const hooks = (tag: string) => ({
      onRunStart: (_i: number, p: { name: string }, warm: boolean) =>
        order.push(`${tag}:${warm ? 'w' : 'r'}:${p.name}`),
    });
    const { runs, baseline } = await runPlanWithBaseline(log(calls), plan, {
      run: hooks('draft'),
      baseline: hooks('base'),
    });
    expect(calls.slice(0, plainCalls.length)).toEqual(plainCalls);
    expect(calls.slice(plainCalls.length).every((c) => c.draft?.type === 'lookup')).toBe(true);
    expect(calls).toHaveLength(2 * plainCalls.length);
    expect(order).toEqual([
      ...['base:w:p', 'base:w:p', 'base:r:p', 'base:r:p', 'base:r:q', 'base:r:q'],
      ...['draft:w:p', 'draft:w:p', 'draft:r:p', 'draft:r:p', 'draft:r:q', 'draft:r:q'],
    ]);
    expect(baseline?.map((r) => r.promptName)).toEqual(['p', 'p', 'q', 'q']);
    expect(runs.every((r) => r.speculative?.drafted === 2)).toBe(true);
    // A plan without drafting runs once, with no baseline.
    const plain = await runPlanWithBaseline(log([]), baselinePlan(plan));
    expect(plain.baseline).toBeUndefined();
    expect(plain.runs).toHaveLength(4);
    await expect(runPlanWithBaseline(log([]), { ...plan, runs: 0 })).rejects.toThrow(/runs must be/);
  });

  it('the new fields pass the schema, round-trip through JSON and CSV, and show in the reports', () => {
    const ids = [5, 6, 7];
    const runs = [
      run(ids, 2, { drafted: 4, accepted: 2, targetPasses: 1 }),
      run(ids, 2, { drafted: 4, accepted: 2, targetPasses: 1 }),
    ];
    const speculative = speculativeSummary(LOOKUP, runs, [run(ids, 4), run(ids, 4)], 'lookup');
    const base = sampleResult();
    const r = buildResult({ ...base, plan: LOOKUP, runs, speculative });
    expect(resultProblems(JSON.parse(resultToJson(r)))).toEqual([]);
    expect(parseResultsJson(resultToJson(r))).toEqual([r]);
    expect(csvToResults(resultsToCsv([r]))).toEqual([r]);
    expect(formatResultText(r)).toMatch(
      /Speculative: 4 of 8 drafted tokens accepted \(50(\.0)?%\), 2 tokens per target pass; .* 2×; same output/,
    );
    expect(engineLabel(r)).toMatch(/^webgpu \+ lookup · own prompts [0-9a-f]{8}, 9 tokens, EOS ignored$/);
    const md = markdownReport(reportRows([r, base]));
    expect(md).toContain('| Speculative |');
    expect(md).toMatch(/50(\.0)?% of 8 accepted, 2 tokens\/pass, 2× decode, same output/);

    const constrained = buildResult({
      ...base,
      plan: { ...base.plan, responseFormat: { type: 'json_schema', schema: '{"type":"object"}' } },
    });
    expect(constrained.constrained).toEqual(
      constraintMark({ type: 'json_schema', schema: { type: 'object' } }),
    );
    expect(parseResultsJson(resultToJson(constrained))).toEqual([constrained]);
    expect(csvToResults(resultsToCsv([constrained]))).toEqual([constrained]);
    // Never ranked with the free run of the same engine: its engine label differs.
    expect(engineLabel(constrained)).toBe(
      `webgpu, json_schema ${constrained.constrained?.hash} · ${setupText(constrained)}`,
    );
    expect(formatResultText(constrained)).toContain(
      `constrained output: json_schema ${constrained.constrained?.hash}`,
    );
    expect(formatResultText(constrained)).not.toMatch(/cut at/);
    // Each run's finish reason and whether its answer is whole: kept through JSON and CSV; cut runs said.
    const cutRuns = buildResult({
      ...constrained,
      runs: constrained.runs.map((x, i) => ({
        ...x,
        finishReason: i === 0 ? ('length' as const) : ('stop' as const),
        formatComplete: i !== 0,
      })),
    });
    expect(cutRuns.runs.length).toBeGreaterThan(1);
    expect(resultProblems(JSON.parse(resultToJson(cutRuns)))).toEqual([]);
    expect(parseResultsJson(resultToJson(cutRuns))).toEqual([cutRuns]);
    expect(csvToResults(resultsToCsv([cutRuns]))).toEqual([cutRuns]);
    expect(formatResultText(cutRuns)).toContain(
      `1 of ${cutRuns.runs.length} runs were cut at ${base.plan.maxTokens} tokens before the value was complete: their answers do not parse`,
    );
    expect(
      resultProblems({
        ...JSON.parse(resultToJson(cutRuns)),
        runs: [{ ...cutRuns.runs[0], finishReason: 'eos' }],
      }),
    ).toEqual(['runs[0].finishReason must be stop, length or aborted']);
    // A bad mark is refused by the one schema.
    expect(
      resultProblems({ ...JSON.parse(resultToJson(constrained)), constrained: { kind: 'regex', hash: 'x' } }),
    ).toEqual(['constrained.kind must be json_object, json_schema, grammar or structural_tag']);
  });
});
