import { describe, expect, it } from 'vitest';
import { sampleResult } from '../testing/sample-result.ts';
import { parseResult, resultProblems } from './types.ts';

// biome-ignore lint/suspicious/noExplicitAny: the tests break a parsed file by hand, at any depth
type FileJson = Record<string, any>;

/** The sample result as a result file holds it (NaN written as null). */
const file = () => JSON.parse(JSON.stringify(sampleResult())) as FileJson;

/** Ways a result file goes wrong, each with the problem the schema must name first. */
const BROKEN: [string, (f: FileJson) => void, string][] = [
  ['a wrong version', (f) => (f.schemaVersion = 2), 'schemaVersion must be 1, got 2'],
  ['no date', (f) => (f.createdAt = 'last tuesday'), 'createdAt must be an ISO date'],
  ['no engine', (f) => delete f.engine, 'engine is missing'],
  ['a device that is text', (f) => (f.device = 'gpu'), 'device must be an object'],
  ['no fingerprint', (f) => delete f.device.fingerprint, 'device.fingerprint is missing'],
  [
    'a boolean that is text',
    (f) => (f.device.isFallbackAdapter = 'yes'),
    'device.isFallbackAdapter must be a boolean',
  ],
  ['model parameters as text', (f) => (f.model.parameters = '292K'), 'model.parameters must be a number'],
  ['runs not a list', (f) => (f.runs = {}), 'runs must be an array'],
  ['a run metric as text', (f) => (f.runs[1].ttftMs = 'fast'), 'runs[1].ttftMs must be a number'],
  [
    'a token count off its ids',
    (f) => (f.runs[0].outputTokens = 9),
    'runs[0].outputTokens differs from outputTokenIds.length',
  ],
  ['an ITL entry short', (f) => f.runs[0].itlMs.pop(), 'runs[0].itlMs must have outputTokens − 1 entries'],
  ['a summary field missing', (f) => delete f.summary.ttftMs.median, 'summary.ttftMs.median is missing'],
  ['a roofline without bandwidth', (f) => delete f.roofline.bandwidthGBs, 'roofline.bandwidthGBs is missing'],
  [
    'an unknown token count kind',
    (f) => (f.runs[0].tokenCount = 'guess'),
    'runs[0].tokenCount must be ids, usage, tokenizer or chunks',
  ],
];

describe('the one result schema', () => {
  it('takes the sample result back exactly, nulls as NaN', () => {
    expect(resultProblems(file())).toEqual([]);
    expect(parseResult(file())).toEqual(sampleResult());
  });

  it.each(BROKEN)('%s: the CLI check and the page import name the same problem', (_, breakIt, problem) => {
    const f = file();
    breakIt(f);
    expect(resultProblems(f)[0]).toBe(problem);
    expect(() => parseResult(f, 'result 2')).toThrow(`result 2.${problem}`);
  });

  it('lists every problem, not only the first', () => {
    const f = file();
    for (const [, breakIt] of BROKEN.slice(0, 3)) breakIt(f);
    expect(resultProblems(f)).toEqual(BROKEN.slice(0, 3).map(([, , p]) => p));
  });

  it('fills what an older or hand-made file lacks', () => {
    const f = file();
    delete f.device.features;
    delete f.device.limits;
    delete f.device.userAgent;
    delete f.load;
    delete f.plan;
    delete f.summary;
    for (const r of f.runs) {
      delete r.outputTokenIds;
      delete r.itlMs;
    }
    const r = parseResult(f);
    expect(r.device).toMatchObject({ features: [], limits: {}, userAgent: '' });
    expect(Object.values(r.load).every(Number.isNaN)).toBe(true);
    expect(r.plan).toEqual({ prompts: [], maxTokens: 0, runs: 0, warmup: 0, ignoreEos: false });
    expect(r.summary).toEqual({});
    expect(r.runs.map((x) => [x.outputTokenIds, x.itlMs])).toEqual([
      [[], []],
      [[], []],
      [[], []],
    ]);
  });

  it('is not an object: one line', () => {
    for (const x of [null, 3, 'x', []]) expect(resultProblems(x)).toEqual(['not a JSON object']);
    expect(() => parseResult([], 'result')).toThrow('result is not an object');
  });
});
