/**
 * The leaderboard's merge and ranking on hand-made report rows: devices by fingerprint, the newest result
 * per device, model and engine, models by coverage, the geometric-mean score and shared ranks, missing
 * figures, and the HTML (escaped, fingerprints and dates shown, no script).
 */

import { describe, expect, it } from 'vitest';
import { summarize } from '../core/metrics.ts';
import { sampleResult, sampleRun } from '../testing/sample-result.ts';
import { cpuComparisonFrom } from './cpu-compare.ts';
import {
  cellKey,
  entryEngine,
  leaderboard,
  leaderboardHtml,
  leaderboardMarkdown,
  modelKey,
} from './leaderboard.ts';
import { PROMPT_SETS } from './prompts.ts';
import { htmlReport, markdownReport, type ReportRow, reportRows } from './report.ts';
import { interruptedResult } from './runner.ts';
import { type BenchResult, resultProblems } from './types.ts';

let n = 0;
/** A row: decode/prefill/TTFT medians as given (a one-value summary each), or none when undefined. */
function row(o: {
  fp: string;
  device?: string;
  model?: string;
  quant?: string;
  engine?: string;
  decode?: number;
  prefill?: number;
  ttft?: number;
  date?: string;
  software?: boolean;
  cpu?: ReportRow['cpu'];
}): ReportRow {
  n++;
  const s = (v: number | undefined) => (v === undefined ? undefined : summarize([v]));
  return {
    source: `r${n}.json`,
    device: o.device ?? `GPU ${o.fp}`,
    software: o.software ?? false,
    fingerprint: o.fp,
    engine: o.engine ?? 'webgpu',
    model: o.model ?? 'stories260K.gguf',
    quantization: o.quant ?? 'F32',
    parameters: 292_800,
    runs: 3,
    decodeTps: s(o.decode),
    tpotMs: s(o.decode === undefined ? undefined : 1000 / o.decode),
    ttftMs: s(o.ttft ?? 10),
    prefillTps: s(o.prefill ?? 500),
    e2eMs: undefined,
    loadMs: 100,
    createdAt: o.date ?? '2026-01-01T00:00:00.000Z',
    ...(o.cpu ? { cpu: o.cpu } : {}),
  };
}

describe('leaderboard', () => {
  it('is empty for no rows', () => {
    const lb = leaderboard([]);
    expect(lb).toMatchObject({ devices: [], models: [], rankings: [] });
    expect(leaderboardHtml(lb)).toContain('0 devices × 0 models');
  });

  it('makes a devices × models matrix: models by coverage, devices by geometric-mean relative decode', () => {
    const rows = [
      row({ fp: 'aaaa', model: 'small.gguf', decode: 100 }),
      row({ fp: 'aaaa', model: 'big.gguf', decode: 10 }),
      row({ fp: 'bbbb', model: 'small.gguf', decode: 50 }),
      row({ fp: 'bbbb', model: 'big.gguf', decode: 20 }),
      row({ fp: 'cccc', model: 'small.gguf', decode: 80 }),
    ];
    const lb = leaderboard(rows);
    // small.gguf: 3 devices, big.gguf: 2.
    expect(lb.models.map((m) => [m.key, m.devices, m.bestDecode])).toEqual([
      ['small.gguf (F32)', 3, 100],
      ['big.gguf (F32)', 2, 20],
    ]);
    // aaaa: sqrt(1 · 0.5) = 0.707; bbbb: sqrt(0.5 · 1) = 0.707 (a tie: shared rank, by name); cccc: 0.8.
    expect(lb.devices.map((d) => [d.fingerprint, d.rank])).toEqual([
      ['cccc', 1],
      ['aaaa', 2],
      ['bbbb', 2],
    ]);
    expect(lb.devices[0].score).toBeCloseTo(0.8, 12);
    expect(lb.devices[1].score).toBeCloseTo(Math.SQRT1_2, 12);
    expect(lb.cells.get(cellKey('cccc', 'big.gguf (F32)'))).toBeUndefined();
    expect(lb.cells.get(cellKey('bbbb', 'big.gguf (F32)'))?.[0].row.decodeTps?.median).toBe(20);
    // Per-model rankings: fastest first.
    expect(lb.rankings[0].entries.map((e) => [e.row.fingerprint, e.rank])).toEqual([
      ['aaaa', 1],
      ['cccc', 2],
      ['bbbb', 3],
    ]);
    expect(lb.rankings[1].entries.map((e) => [e.row.fingerprint, e.rank])).toEqual([
      ['bbbb', 1],
      ['aaaa', 2],
    ]);
  });

  it('keeps the newest result per device, model and engine, in any input order', () => {
    const old = row({ fp: 'aaaa', device: 'Old label', decode: 300, date: '2025-06-01T00:00:00Z' });
    const mid = row({ fp: 'aaaa', device: 'Mid label', decode: 200, date: '2025-09-01T00:00:00Z' });
    const now = row({ fp: 'aaaa', device: 'New label', decode: 100, date: '2026-02-01T00:00:00Z' });
    for (const order of [
      [old, mid, now],
      [now, old, mid],
      [mid, now, old],
    ]) {
      const lb = leaderboard(order);
      expect(lb.devices).toHaveLength(1);
      expect(lb.devices[0]).toMatchObject({ name: 'New label', results: 3, latest: now.createdAt, rank: 1 });
      const cell = lb.cells.get(cellKey('aaaa', modelKey(now)));
      expect(cell).toHaveLength(1);
      expect(cell?.[0].row).toBe(now);
      expect(cell?.[0].older).toBe(2);
      expect(lb.models[0].bestDecode).toBe(100); // not the older 300
    }
  });

  it('shows every engine of a device on a model, fastest first, and separates quantizations', () => {
    const lb = leaderboard([
      row({ fp: 'aaaa', engine: 'wllama', decode: 40 }),
      row({ fp: 'aaaa', engine: 'webgpu', decode: 90 }),
      row({ fp: 'aaaa', engine: 'webllm', decode: 120, quant: 'q4f16_1' }),
    ]);
    expect(lb.models.map((m) => m.key).sort()).toEqual([
      'stories260K.gguf (F32)',
      'stories260K.gguf (q4f16_1)',
    ]);
    expect(lb.cells.get(cellKey('aaaa', 'stories260K.gguf (F32)'))?.map((e) => e.row.engine)).toEqual([
      'webgpu',
      'wllama',
    ]);
    const html = leaderboardHtml(lb);
    // More than one engine on the page: cells name theirs.
    expect(html).toContain('wllama · <time');
    expect((html.match(/class="entry best"/g) ?? []).length).toBe(2); // one star per model
  });

  it('ranks devices without a decode figure last and leaves them unranked per model', () => {
    const lb = leaderboard([
      row({ fp: 'zzzz', device: 'A first by name', decode: undefined }),
      row({ fp: 'yyyy', device: 'Slow', decode: 5 }),
      row({ fp: 'xxxx', device: 'Fast', decode: 50 }),
    ]);
    expect(lb.devices.map((d) => [d.name, d.rank])).toEqual([
      ['Fast', 1],
      ['Slow', 2],
      ['A first by name', 3],
    ]);
    expect(lb.devices[0].score).toBe(1);
    expect(lb.devices[1].score).toBeCloseTo(0.1, 12);
    expect(lb.devices[2].score).toBeUndefined();
    expect(lb.rankings[0].entries.map((e) => e.rank)).toEqual([1, 2, undefined]);
    const html = leaderboardHtml(lb);
    expect(html).toContain('no decode figure');
    expect(html).toMatch(/<td class="num">–<\/td><th scope="row"><span class="dev">A first by name/);
  });

  it('equal decode medians share a rank in a model ranking', () => {
    const lb = leaderboard([
      row({ fp: 'aaaa', decode: 10 }),
      row({ fp: 'bbbb', decode: 30 }),
      row({ fp: 'cccc', decode: 30 }),
      row({ fp: 'dddd', decode: 20 }),
    ]);
    expect(lb.rankings[0].entries.map((e) => [e.row.fingerprint, e.rank])).toEqual([
      ['bbbb', 1],
      ['cccc', 1],
      ['dddd', 3],
      ['aaaa', 4],
    ]);
  });

  it('HTML: fingerprints, dates and figures shown, text escaped, software marked, one engine not repeated', () => {
    const lb = leaderboard([
      row({
        fp: 'f00dfeedcafe0001',
        device: 'Evil <img src=x> GPU',
        model: 'a"b<c>.gguf',
        decode: 123.456,
        prefill: 4567.8,
        ttft: 12.34,
        date: '2026-03-04T05:06:07.000Z',
      }),
      row({ fp: 'f00dfeedcafe0002', device: 'SwiftShader Device', software: true, decode: 3 }),
      row({ fp: 'f00dfeedcafe0003', device: 'llvmpipe (software)', software: true, decode: 2 }),
    ]);
    const html = leaderboardHtml(lb);
    expect(html).not.toContain('<img');
    expect(html).toContain('Evil &lt;img src=x&gt; GPU');
    expect(html).toContain('a&quot;b&lt;c&gt;.gguf');
    expect(html).toContain('<code class="fp" title="device fingerprint">f00dfeedcafe0001</code>');
    expect(html).toContain('123<small> tok/s</small>');
    expect(html).toContain('prefill 4568 tok/s</span> · <span class="nw">TTFT 12.3 ms');
    expect(html).toContain('<time datetime="2026-03-04T05:06:07.000Z">2026-03-04</time>');
    expect(html).not.toContain('webgpu · <time'); // a single engine: not repeated in every cell
    // "software" added where the name does not say so already.
    expect((html.match(/<span class="sw">software<\/span>/g) ?? []).length).toBe(2); // SwiftShader's, in the matrix and the ranking
    expect(html).not.toMatch(/<script|<link|<img/i);
  });

  it("shows a device's own CPU figure (the page's wllama run) in its cell, its ranking row and Markdown", () => {
    const lb = leaderboard([
      row({
        fp: 'f00dfeedcafe0001',
        decode: 300,
        cpu: { decodeTps: 41.25, decodeRatio: 300 / 41.25, threads: 4 },
      }),
      row({ fp: 'f00dfeedcafe0002', decode: 200 }),
    ]);
    const html = leaderboardHtml(lb);
    // 300 / 41.25 = 7.27…: two significant figures.
    expect(html).toContain('<span class="sub cpu">CPU 41.3 tok/s · GPU 7.3×</span>');
    expect((html.match(/class="sub cpu"/g) ?? []).length).toBe(1); // the device without one shows none
    expect(html).toContain('<th scope="col" class="num">GPU ÷ CPU</th>');
    expect(html).toMatch(/title="CPU 41.3 tok\/s · GPU 7.3×">7.3×<\/td>/);
    expect(html).toMatch(/500<\/td><td class="num">10<\/td><td class="num">–<\/td><td class="num">3<\/td>/);
    expect(leaderboardMarkdown(lb)).toContain('<br>CPU 41.3 tok/s · GPU 7.3×<br>');
  });

  it('reportRows carries a result’s cpu block', () => {
    const c = cpuComparisonFrom(sampleResult().summary, [sampleRun({ decodeTokensPerSecond: 12.5 })], {
      threads: 2,
      crossOriginIsolated: true,
    });
    const [withCpu, without] = reportRows([{ ...sampleResult(), cpu: c }, sampleResult()]);
    expect(withCpu.cpu).toEqual({ decodeTps: 12.5, decodeRatio: c.ratio.decode, threads: 2 });
    expect(without.cpu).toBeUndefined();
  });

  it('leaves interrupted results out and never ranks a non-default plan or cache as the default one', () => {
    const plain = sampleResult({
      createdAt: '2026-01-01T00:00:00.000Z',
      plan: { prompts: [...PROMPT_SETS.short], maxTokens: 128, runs: 2, warmup: 1, ignoreEos: false },
    });
    const short16 = sampleResult({
      createdAt: '2026-01-02T00:00:00.000Z',
      plan: { ...plain.plan, maxTokens: 16, sampling: { temperature: 1.5 } },
      model: { ...plain.model, kvType: 'f32' },
    });
    const cut = sampleResult({ createdAt: '2026-01-03T00:00:00.000Z', plan: plain.plan, partial: true });
    const failed = sampleResult({
      createdAt: '2026-01-04T00:00:00.000Z',
      plan: plain.plan,
      partial: true,
      error: { code: 'stream_cut', message: 'the stream ended without [DONE]' },
    });
    const rows = reportRows([plain, short16, cut, failed]);
    expect(rows.map((r) => r.engine)).toEqual([
      'webgpu',
      'webgpu · 16 tokens, kv f32, temperature 1.5',
      'webgpu',
      'webgpu',
    ]);
    const lb = leaderboard(rows);
    expect(lb.partial).toBe(2);
    // The newest plain results are a partial one and a failed one: left out, so the complete one stands.
    const cell = lb.cells.get(cellKey(plain.device.fingerprint, modelKey(rows[0]))) ?? [];
    expect(cell.map((e) => e.row.source).sort()).toEqual(['result 1', 'result 2']);
    const md = leaderboardMarkdown(lb);
    expect(md).toContain('webgpu · 16 tokens, kv f32, temperature 1.5 · ');
    expect(md).toContain('2 partial results are left out (interrupted or failed: fewer runs than planned).');
    expect(leaderboardHtml(lb)).toContain('2 partial results are left out');
    // A failed run is said to have failed, with its code, not "interrupted" (it was not); a file without
    // either (older) is "stopped early".
    const table = markdownReport(rows);
    expect(table).toContain('| 3 (partial: failed: stream_cut) |');
    // …and its bars in the report's charts say so too (they looked like any other result's).
    const html = htmlReport(rows, { title: 't' });
    expect(html).toContain(' · partial: failed: stream_cut');
    expect(table).toContain('| 3 (partial: stopped early) |');
    expect(table).not.toContain('interrupted)');
  });

  it('reads a result interrupted before the model loaded: listed with its phase, left out of the leaderboard', () => {
    const plain = sampleResult({
      createdAt: '2026-01-01T00:00:00.000Z',
      plan: { prompts: [...PROMPT_SETS.short], maxTokens: 128, runs: 2, warmup: 1, ignoreEos: false },
    });
    // As bench:report reads it: the JSON file (NaN written as null), not the object.
    const early = JSON.parse(
      JSON.stringify(
        interruptedResult({
          signal: 'SIGTERM',
          phase: 'download',
          engine: 'webgpu',
          plan: plain.plan,
          modelId: 'https://example.com/m.gguf',
          createdAt: '2026-01-02T00:00:00.000Z',
        }),
      ),
    ) as BenchResult;
    expect(resultProblems(early)).toEqual([]);
    expect(early).toMatchObject({ partial: true, runs: [], summary: {}, interrupted: { phase: 'download' } });
    const rows = reportRows([plain, early], ['a.json', 'b.json']);
    expect(rows[1]).toMatchObject({
      partial: true,
      interrupted: 'download',
      runs: 0,
      device: 'unknown adapter',
      engine: 'webgpu',
    });
    const lb = leaderboard(rows);
    expect(lb.partial).toBe(1);
    expect(lb.devices.map((d) => d.fingerprint)).toEqual([plain.device.fingerprint]);
    expect(lb.models.map((m) => m.id)).toEqual([plain.model.id]);
    expect(leaderboardMarkdown(lb)).toContain('1 partial result is left out');
    const md = markdownReport(rows);
    expect(md).toContain('| https://example.com/m.gguf | 0 (partial: interrupted in download) | – |');
    const html = htmlReport(rows, { title: 't' });
    expect(html).toContain('0 (partial: interrupted in download)');
    expect(html).toContain('1 partial result is left out');
  });

  it('a --llama-bench result (tests, no runs) is listed as such and left out of the leaderboard, not ranked empty', () => {
    const plain = sampleResult({ createdAt: '2026-01-01T00:00:00.000Z' });
    const lbench = sampleResult({
      createdAt: '2026-01-02T00:00:00.000Z',
      runs: [],
      summary: {},
      llamaBench: { nPrompt: [512], nGen: [128], depths: [0], reps: 5 },
      device: { ...plain.device, fingerprint: 'ffffffffffffffff' },
    } as Partial<BenchResult>);
    const rows = reportRows([plain, lbench], ['a.json', 'b.json']);
    expect(rows[1]).toMatchObject({ llamaBench: true, runs: 0 });
    const lb = leaderboard(rows);
    expect(lb.llamaBench).toBe(1);
    expect(lb.partial).toBe(0);
    expect(lb.devices.map((d) => d.fingerprint)).toEqual([plain.device.fingerprint]);
    expect(leaderboardMarkdown(lb)).toContain(
      '1 --llama-bench result is left out (pp/tg tests, not prompt-plan runs).',
    );
    expect(markdownReport(rows)).toContain('| 0 (llama-bench tests) |');
    // Alone, it makes no leaderboard entry at all (it was ranked 1 with "–" tok/s).
    const alone = leaderboard(reportRows([lbench]));
    expect(alone.devices).toEqual([]);
    expect(leaderboardMarkdown(alone)).not.toContain('**–**');
  });

  describe('a setup common to every result is said once, the labels keep what differs', () => {
    const base = sampleResult();
    const plan0 = { prompts: [...PROMPT_SETS.short], maxTokens: 128, runs: 2, warmup: 1, ignoreEos: false };
    /** A result on its own device (fingerprint `fp`), with `maxTokens`, a KV type and sampling as given. */
    const on = (
      fp: string,
      o: { tokens?: number; kv?: 'f32' | 'q8_0'; temperature?: number; engine?: string; partial?: boolean },
    ) =>
      sampleResult({
        createdAt: '2026-01-01T00:00:00.000Z',
        device: { ...base.device, fingerprint: fp, label: `GPU ${fp}` },
        engine: o.engine ?? 'webgpu',
        plan: {
          ...plan0,
          maxTokens: o.tokens ?? 128,
          ...(o.temperature ? { sampling: { temperature: o.temperature } } : {}),
        },
        model: { ...base.model, ...(o.kv ? { kvType: o.kv } : {}) },
        ...(o.partial ? { partial: true } : {}),
      });
    const engines = (lb: ReturnType<typeof leaderboard>) =>
      lb.rankings.flatMap((r) => r.entries.map((e) => entryEngine(lb, e.row)));

    it('all share it: stated once in the lead (HTML and Markdown), each label plain', () => {
      const rows = reportRows([
        on('aaaa', { tokens: 16, kv: 'f32' }),
        on('bbbb', { tokens: 16, kv: 'f32' }),
        on('cccc', { tokens: 16, kv: 'f32', engine: 'wllama' }),
      ]);
      expect(rows[0].engine).toBe('webgpu · 16 tokens, kv f32'); // grouping still by the full label
      const lb = leaderboard(rows);
      expect(lb.common).toEqual(['16 tokens', 'kv f32']);
      expect(engines(lb).sort()).toEqual(['webgpu', 'webgpu', 'wllama']);
      const html = leaderboardHtml(lb);
      expect(html).toMatch(/<p class="lead">[^<]*All ranked runs: 16 tokens, kv f32\.<\/p>/);
      expect(html).not.toContain('· 16 tokens');
      expect(html).toContain('<td>wllama</td>');
      const md = leaderboardMarkdown(lb);
      expect(md).toContain('All ranked runs: 16 tokens, kv f32.');
      expect(md).not.toContain('kv f32 ·');
      expect(md).toContain('wllama · 2026-01-01');
      // The per-file table and the page: said once above the table, not in its Engine cells.
      const table = markdownReport(rows);
      expect(table).toContain('All runs: 16 tokens, kv f32.');
      expect(table).toMatch(/^\| GPU aaaa \(software\) \| webgpu \| /m);
      const page = htmlReport(rows, { title: 't' });
      expect(page).toContain('<p class="note setup">All runs: 16 tokens, kv f32.');
      expect(page).not.toContain('webgpu · 16 tokens');
      expect(page).not.toContain('wllama · 16 tokens');
    });

    it('all one engine sharing it: the engine is not named in the cells at all', () => {
      const lb = leaderboard(reportRows([on('aaaa', { tokens: 16 }), on('bbbb', { tokens: 16 })]));
      expect(lb.common).toEqual(['16 tokens']);
      const md = leaderboardMarkdown(lb);
      expect(md).not.toContain('webgpu ·');
      expect(leaderboardHtml(lb)).not.toContain('webgpu · <time');
    });

    it('some share a part: the shared part in the lead, the rest in each label', () => {
      const rows = reportRows([
        on('aaaa', { tokens: 16, kv: 'f32' }),
        on('bbbb', { tokens: 16, temperature: 1.5 }),
        on('cccc', { tokens: 16 }),
      ]);
      const lb = leaderboard(rows);
      expect(lb.common).toEqual(['16 tokens']);
      expect(engines(lb).sort()).toEqual(['webgpu', 'webgpu · kv f32', 'webgpu · temperature 1.5']);
      expect(leaderboardMarkdown(lb)).toContain('All ranked runs: 16 tokens.');
      expect(leaderboardHtml(lb)).toContain('<td>webgpu · temperature 1.5</td>');
      expect(markdownReport(rows)).toMatch(/^\| GPU bbbb \(software\) \| webgpu · temperature 1\.5 \| /m);
    });

    it('none share one: no "All runs", every label as before', () => {
      const rows = reportRows([
        on('aaaa', { tokens: 16 }),
        on('bbbb', { kv: 'f32' }),
        on('cccc', {}), // the default plan
      ]);
      const lb = leaderboard(rows);
      expect(lb.common).toEqual([]);
      expect(engines(lb).sort()).toEqual(['webgpu', 'webgpu · 16 tokens', 'webgpu · kv f32']);
      expect(leaderboardHtml(lb)).not.toContain('All runs');
      expect(leaderboardMarkdown(lb)).not.toContain('All runs');
      expect(markdownReport(rows)).not.toContain('All runs');
      expect(htmlReport(rows)).not.toContain('All runs');
    });

    it('an interrupted result left out of the leaderboard does not keep its common setup from it', () => {
      const rows = reportRows([
        on('aaaa', { tokens: 16 }),
        on('bbbb', { tokens: 16 }),
        on('cccc', { partial: true }),
      ]);
      const lb = leaderboard(rows);
      expect(lb.common).toEqual(['16 tokens']);
      // "All results" lists the interrupted default-plan one too: nothing common there.
      expect(markdownReport(rows)).not.toContain('All runs');
      expect(markdownReport(rows)).toMatch(/^\| GPU aaaa \(software\) \| webgpu · 16 tokens \| /m);
    });
  });

  it('is the top of the bench:report page', () => {
    const html = htmlReport([row({ fp: 'aaaa', decode: 10 }), row({ fp: 'bbbb', decode: 20 })], {
      title: 't',
    });
    const lb = html.indexOf('<section id="leaderboard"');
    expect(lb).toBeGreaterThan(0);
    expect(html.indexOf('<section id="rankings"')).toBeGreaterThan(lb);
    expect(html.indexOf('<h2>All results</h2>')).toBeGreaterThan(lb);
    expect(html).not.toMatch(/<script|<link|src=|href=|url\(|@import/i);
  });

  it('Markdown: the same matrix for a job summary, devices in rank order with fingerprints, cells escaped', () => {
    const lb = leaderboard([
      row({ fp: 'aaaa', device: 'Slow | GPU', decode: 10, date: '2026-01-02T00:00:00Z' }),
      row({
        fp: 'bbbb',
        device: 'Fast GPU',
        decode: 40,
        prefill: 900,
        ttft: 3,
        date: '2026-01-03T00:00:00Z',
      }),
      row({ fp: 'bbbb', model: 'other.gguf', engine: 'webllm', decode: 7 }),
    ]);
    const md = leaderboardMarkdown(lb);
    const lines = md.split('\n').filter((l) => l.startsWith('|'));
    expect(lines).toEqual([
      '| # | Device | stories260K.gguf (F32) | other.gguf (F32) |',
      '| --- | --- | ---: | ---: |',
      '| 1 | Fast GPU `bbbb` | **40** tok/s ★<br>prefill 900 tok/s · TTFT 3 ms<br>webgpu · 2026-01-03 | **7** tok/s ★<br>prefill 500 tok/s · TTFT 10 ms<br>webllm · 2026-01-01 |',
      '| 2 | Slow \\| GPU `aaaa` | **10** tok/s<br>prefill 500 tok/s · TTFT 10 ms<br>webgpu · 2026-01-02 | – |',
    ]);
    expect(md).toContain('2 devices × 2 models');
    expect(leaderboardMarkdown(leaderboard([]))).toBe('');
  });
});
