import 'fake-indexeddb/auto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleResult, sampleRun } from '../testing/sample-result.ts';
import { compareByModelAndDevice, type History, openHistory } from './history.ts';
import { engineLabel } from './report.ts';
import type { BenchResult } from './types.ts';

let dbCount = 0;
let h: History;
beforeEach(async () => {
  h = await openHistory(`test-${dbCount++}`);
});
afterEach(() => h.close());

const other = (createdAt: string, fingerprint = 'ffffeeeeddddcccc') => {
  const r = sampleResult({ createdAt });
  r.device = { ...r.device, fingerprint, label: 'Other GPU' };
  return r;
};

describe('history store', () => {
  it('adds, lists newest first (per device or all), gets and deletes', async () => {
    const a = sampleResult();
    const b = other('2025-03-01T00:00:00.000Z');
    const c = sampleResult({ createdAt: '2025-06-01T00:00:00.000Z' });
    for (const r of [a, b, c]) await h.add(r);
    const mine = await h.list(a.device.fingerprint);
    expect(mine.map((e) => e.createdAt)).toEqual([c.createdAt, a.createdAt]);
    expect(mine[1].result).toEqual(a); // NaN and nested fields survive structured clone
    expect((await h.list()).map((e) => e.createdAt)).toEqual([c.createdAt, b.createdAt, a.createdAt]);
    await h.delete(mine[0].key);
    expect(await h.get(mine[0].key)).toBeUndefined();
    expect(await h.list(a.device.fingerprint)).toHaveLength(1);
  });

  it('stores the same result once (import twice), and counts what was new', async () => {
    const a = sampleResult();
    expect(await h.addMany([a, other('2025-03-01T00:00:00.000Z')])).toEqual({ added: 2, replaced: 0 });
    expect(await h.addMany([a])).toEqual({ added: 0, replaced: 1 });
    expect(await h.list()).toHaveLength(2);
  });

  it('lists devices and clears one device or all', async () => {
    await h.addMany([sampleResult(), other('2025-03-01T00:00:00.000Z'), other('2025-04-01T00:00:00.000Z')]);
    const devices = await h.devices();
    expect(devices).toEqual(
      expect.arrayContaining([
        { fingerprint: '0123456789abcdef', label: 'SwiftShader Device (Subzero) (software)', count: 1 },
        { fingerprint: 'ffffeeeeddddcccc', label: 'Other GPU', count: 2 },
      ]),
    );
    await h.clear('ffffeeeeddddcccc');
    expect(await h.list()).toHaveLength(1);
    await h.clear();
    expect(await h.list()).toHaveLength(0);
  });

  it('survives closing and reopening', async () => {
    const name = `test-reopen-${dbCount++}`;
    const first = await openHistory(name);
    await first.add(sampleResult());
    first.close();
    const again = await openHistory(name);
    expect(await again.list()).toHaveLength(1);
    again.close();
  });
});

describe('comparison by model × device', () => {
  it('takes the median of the results’ median decode rates and sorts fastest first', () => {
    const fast = (d: number, createdAt: string, fp?: string) => {
      const r = fp ? other(createdAt, fp) : sampleResult({ createdAt });
      const runs = [sampleRun({ decodeTokensPerSecond: d })];
      r.runs = runs;
      r.summary = sampleResult({ runs }).summary;
      return r;
    };
    const bars = compareByModelAndDevice([
      fast(100, '1'),
      fast(300, '2'),
      fast(200, '3'),
      fast(1000, '4', 'gpu2'),
    ]);
    expect(bars.map((b) => [b.fingerprint, b.decodeTokPerS, b.results])).toEqual([
      ['gpu2', 1000, 1],
      ['0123456789abcdef', 200, 3],
    ]);
    expect(bars[1].label).toBe(
      `stories260K · SwiftShader Device (Subzero) (software) · ${engineLabel(sampleResult())}`,
    );
  });

  it('keeps drafted, constrained and other-KV-cache runs apart from plain ones (the leaderboard’s engine label)', () => {
    const at = (d: number, change: (r: BenchResult) => void) => {
      const runs = [sampleRun({ decodeTokensPerSecond: d })];
      const r = sampleResult({ runs });
      change(r);
      return r;
    };
    const plain = [at(100, () => {}), at(120, () => {})];
    const lookup = at(40, (r) => {
      r.plan.draft = { type: 'lookup' };
    });
    const schema = at(60, (r) => {
      r.constrained = { kind: 'json_schema', hash: 'fnv1a64:0123456789abcdef' };
    });
    const q8 = at(90, (r) => {
      r.model.kvType = 'q8_0';
    });
    const bars = compareByModelAndDevice([...plain, lookup, schema, q8]);
    expect(bars.map((b) => [b.engine, b.decodeTokPerS, b.results])).toEqual([
      [engineLabel(plain[0]), 110, 2],
      [engineLabel(q8), 90, 1],
      [engineLabel(schema), 60, 1],
      [engineLabel(lookup), 40, 1],
    ]);
    expect(engineLabel(lookup)).toMatch(/^webgpu \+ lookup · /);
    expect(engineLabel(schema)).toMatch(/^webgpu, json_schema fnv1a64:0123456789abcdef · /);
    expect(engineLabel(q8)).toMatch(/kv q8_0$/);
    expect(bars[3].label).toBe(
      `stories260K · SwiftShader Device (Subzero) (software) · ${engineLabel(lookup)}`,
    );
  });
});
