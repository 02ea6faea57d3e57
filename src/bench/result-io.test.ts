import { describe, expect, it } from 'vitest';
import { sampleResult } from '../testing/sample-result.ts';
import {
  checkResult,
  parseResultsJson,
  resultFileName,
  resultKey,
  resultToJson,
  summaryText,
} from './result-io.ts';

describe('result JSON files', () => {
  it('round-trip a result, NaN written as null and read back as NaN', () => {
    const r = sampleResult();
    const text = resultToJson(r);
    expect(text).toContain('"schemaVersion": 1');
    expect(JSON.parse(text).runs[2].tpotMs).toBeNull();
    expect(parseResultsJson(text)).toEqual([r]);
  });

  it('accept an array or {results: [...]}', () => {
    const a = sampleResult();
    const b = sampleResult({ createdAt: '2026-01-01T00:00:00.000Z' });
    expect(parseResultsJson(resultToJson([a, b]))).toEqual([a, b]);
    expect(parseResultsJson(JSON.stringify({ results: [a] }))).toEqual([a]);
  });

  it('reject other schema versions and malformed results with a reason', () => {
    expect(() => parseResultsJson('{"schemaVersion": 2}')).toThrow(/result.schemaVersion must be 1, got 2/);
    expect(() => parseResultsJson('nope')).toThrow(SyntaxError);
    const bad = { ...sampleResult(), runs: [{ prompt: 'x', text: 'y', ttftMs: 'fast' }] };
    expect(() => checkResult(JSON.parse(JSON.stringify(bad)))).toThrow(
      /result.runs\[0\].promptTokens is missing/,
    );
  });

  it('recompute a missing summary', () => {
    const r = JSON.parse(resultToJson(sampleResult()));
    delete r.summary;
    expect(checkResult(r).summary.ttftMs.n).toBe(3);
  });

  it('key, file name and shareable summary', () => {
    const r = sampleResult();
    expect(resultKey(r)).toBe('2025-01-02T03:04:05.678Z|0123456789abcdef|webgpu|stories260K');
    expect(resultFileName(r, 'json')).toBe('bench-stories260K-20250102-030405.json');
    const s = summaryText(r);
    expect(s).toContain(
      'stories260K (292K params, F32) on SwiftShader Device (Subzero) (software) · webgpu:',
    );
    expect(s).toContain('median of 3 runs');
    expect(s).toContain('2.84% of measured memory bandwidth (12.5 GB/s)');
    expect(s).toContain('software adapter');
    expect(s.length).toBeLessThan(400);
  });
});
