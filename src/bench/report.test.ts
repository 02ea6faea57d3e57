/**
 * Merging hand-made result files into the comparison (rows, Markdown, self-contained HTML), the text
 * table `npm run bench` prints, and the structural check of a result file.
 */

import { describe, expect, it } from 'vitest';
import { summarize } from '../core/metrics.ts';
import { leaderboard, leaderboardMarkdown } from './leaderboard.ts';
import {
  type ChartBar,
  formatResultText,
  htmlReport,
  markdownReport,
  reportRows,
  svgBarChart,
} from './report.ts';
import { summaryText } from './result-io.ts';
import { type BenchResult, type BenchRun, resultProblems } from './types.ts';

function runOf(ttft: number, tpot: number, n = 5): BenchRun {
  const itl = Array.from({ length: n - 1 }, () => tpot);
  const e2e = ttft + tpot * (n - 1);
  return {
    prompt: 'Once upon a time',
    promptName: 'custom',
    promptTokens: 5,
    outputTokens: n,
    outputTokenIds: Array.from({ length: n }, (_, i) => i),
    text: 'x',
    ttftMs: ttft,
    itlMs: itl,
    tpotMs: tpot,
    e2eMs: e2e,
    prefillTokensPerSecond: 5000 / ttft,
    decodeTokensPerSecond: 1000 / tpot,
  };
}

function result(o: {
  device: string;
  fallback?: boolean;
  fp: string;
  model: string;
  tpots: number[];
  bw?: number;
}): BenchResult {
  const runs = o.tpots.map((t, i) => runOf(10 + i, t));
  return {
    schemaVersion: 1,
    createdAt: '2025-03-04T05:06:07.000Z',
    device: {
      vendor: 'v',
      architecture: 'a',
      description: o.device,
      isFallbackAdapter: o.fallback ?? false,
      features: [],
      limits: {},
      userAgent: 'ua',
      fingerprint: o.fp,
    },
    engine: 'webgpu',
    model: { id: o.model, architecture: 'llama', quantization: 'F32', parameters: 292800, bytes: 1171200 },
    load: { totalMs: 100, downloadMs: 10, uploadMs: 20, compileMs: 70 },
    plan: {
      prompts: [{ name: 'custom', text: 'Once upon a time' }],
      maxTokens: 5,
      runs: runs.length,
      warmup: 1,
      ignoreEos: false,
    },
    runs,
    summary: {
      ttftMs: summarize(runs.map((r) => r.ttftMs)),
      tpotMs: summarize(runs.map((r) => r.tpotMs)),
      decodeTokensPerSecond: summarize(runs.map((r) => r.decodeTokensPerSecond)),
    },
    ...(o.bw
      ? { roofline: { bandwidthGBs: o.bw, bytesPerToken: 1e6, fraction: 0.25, matmulGflops: 100 } }
      : {}),
  };
}

const A = result({
  device: 'NVIDIA RTX 4090',
  fp: 'aaaaaaaaaaaaaaaa',
  model: 'stories260K.gguf',
  tpots: [1, 2, 4],
  bw: 900,
});
const B = result({
  device: '',
  fallback: true,
  fp: 'bbbbbbbbbbbbbbbb',
  model: 'a|b<script>.gguf',
  tpots: [10],
});

describe('report rows and Markdown', () => {
  it('one row per file with medians, software adapters marked', () => {
    const rows = reportRows([A, B], ['a.json', 'b.json']);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      source: 'a.json',
      device: 'NVIDIA RTX 4090',
      software: false,
      runs: 3,
      bandwidthGBs: 900,
      roofline: 0.25,
    });
    expect(rows[0].decodeTps?.median).toBe(500);
    expect(rows[1].device).toBe('v a (software)');
    expect(rows[1].software).toBe(true);
    expect(rows[1].bandwidthGBs).toBeUndefined();
  });

  it('a Markdown table with a header, one line per result and escaped cells', () => {
    const md = markdownReport(reportRows([A, B]));
    const lines = md.split('\n').filter((l) => l.startsWith('|'));
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^\| Device \| Engine \| Model \| Runs \| Decode tok\/s \|/);
    expect(lines[1]).toMatch(/^\| --- \| --- \| --- \| ---: /);
    // Both run the same non-default setup (own prompts, 5 tokens): said once above, not in each Engine cell.
    expect(md).toMatch(/ All runs: own prompts [0-9a-f]{8}, 5 tokens\.\n/);
    expect(lines[2]).toMatch(/^\| NVIDIA RTX 4090 \| webgpu \| /);
    expect(lines[2]).toContain(' | stories260K.gguf (F32, 293K) | 3 | 500 ± 312 | 2 | 11 | – | – | 100 |');
    expect(lines[2]).toContain('| 900 | 25% | 100 |');
    expect(lines[3]).toContain('a\\|b&lt;script&gt;.gguf');
    expect(lines[3]).toContain('| – |'); // no roofline
    expect(md).toContain('(software)');
  });

  it('a remote server\'s model is named without the facts the server keeps (not "unknown, 0")', () => {
    const remote: BenchResult = {
      ...A,
      engine: 'remote',
      model: { id: 'test-model', architecture: 'remote', quantization: 'unknown', parameters: 0, bytes: 0 },
    };
    const rows = reportRows([remote, A]);
    const md = markdownReport(rows);
    expect(md).toContain('| test-model | 3 |');
    expect(md).toContain('| stories260K.gguf (F32, 293K) | 3 |');
    expect(md).not.toMatch(/unknown|test-model \(/);
    expect(summaryText(remote)).toMatch(/^test-model on NVIDIA RTX 4090 · remote: /);
    expect(leaderboardMarkdown(leaderboard(rows))).toContain('| test-model |');
    expect(htmlReport(rows, { title: 't' })).not.toContain('unknown');
  });
});

describe('Markdown from a hostile result file (issue 47 item 12)', () => {
  const hostile = result({
    device: 'GPU <img src=x onerror=alert(1)> | evil\n## injected',
    fp: 'ff`<script>alert(1)</script>',
    model: '<script>alert(1)</script>[click](https://evil.example)|x',
    tpots: [1],
  });
  hostile.engine = 'webgpu<b>bold</b>' as BenchResult['engine'];
  hostile.createdAt = '<i>x</i>2026-01-01T00:00:00Z';

  it('markdownReport and leaderboardMarkdown (bench:report --md) pass no HTML, link or table break through', () => {
    const rows = reportRows([hostile, A], ['h.json', 'a.json']);
    const md = markdownReport(rows) + leaderboardMarkdown(leaderboard(rows));
    // The only HTML left is the leaderboard's own <br> between a cell's lines.
    expect(md.replace(/<br>/g, '')).not.toMatch(/<[a-z/!]/i);
    expect(md).not.toMatch(/<script|<img|<b>|<i>|onerror=alert\(1\)>/i);
    expect(md).not.toMatch(/(?<!\\)\]\(https:\/\/evil/);
    expect(md).toContain('&lt;script&gt;alert(1)&lt;/script&gt;\\[click\\](https://evil.example)');
    expect(md).toContain('GPU &lt;img src=x onerror=alert(1)&gt; \\| evil ## injected');
    // No line break of the file's values: every table line keeps the header's number of cells.
    for (const table of md.split('\n\n').filter((b) => b.startsWith('|'))) {
      const lines = table.split('\n').filter((l) => l.startsWith('|'));
      const cells = (l: string) => l.replace(/\\\|/g, '').split('|').length;
      for (const l of lines) expect(cells(l), l).toBe(cells(lines[0]));
    }
    expect(md.split('\n').filter((l) => l.startsWith('## injected'))).toEqual([]);
    // The fingerprint's code span cannot be closed early.
    expect(md).toContain('`ffscriptalert(1)/script`');
  });
});

describe('HTML report', () => {
  it('is self-contained, escapes text and has one chart bar per result', () => {
    const html = htmlReport(reportRows([A, B]), { title: 'CI <run>' });
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('<title>CI &lt;run&gt;</title>');
    expect(html).not.toMatch(/<script|<link|src=|href=/i);
    expect(html).not.toContain('a|b<script>');
    expect(html).toContain('a|b&lt;script&gt;.gguf');
    expect((html.match(/<svg /g) ?? []).length).toBe(5);
    // Decode chart: a bar for each result; bandwidth chart: only A has one.
    const charts = html.split('<figure>').slice(1);
    expect((charts[0].match(/<rect /g) ?? []).length).toBe(2);
    expect((charts[4].match(/<rect /g) ?? []).length).toBe(1);
    // Bars coloured by device: two devices, two colours.
    const fills = new Set([...charts[0].matchAll(/fill="(#[0-9a-f]{6})"/g)].map((m) => m[1]));
    expect(fills.size).toBe(2);
    // Titles are HTML above the charts; the SVGs take the box's width (no fixed pixel width to scroll).
    expect((html.match(/<figure><figcaption>/g) ?? []).length).toBe(5);
    expect(html).not.toMatch(/<svg[^>]*min-width|min-width: 760px/);
    expect(charts[0]).toMatch(/<svg [^>]*width="100%"/);
  });

  it('draws a share on a fixed 0–100 scale, and other figures relative to the largest', () => {
    const bar = (value: number): ChartBar => ({ label: 'GPU', value, color: '#000' });
    const widths = (svg: string) =>
      [...svg.matchAll(/<rect [^>]*width="([\d.]+)%"/g)].map((m) => Number(m[1]));
    expect(widths(svgBarChart('share', '%', [bar(4.09), bar(4.14)], { max: 100 }))).toEqual([4.09, 4.14]);
    expect(widths(svgBarChart('speed', 'tok/s', [bar(50), bar(100)]))).toEqual([50, 100]);
    // Beyond the scale: cut at full width, the value still printed.
    const over = svgBarChart('share', '%', [bar(120)], { max: 100 });
    expect(widths(over)).toEqual([100]);
    expect(over).toContain('120 %');
    // A long label is cut, with the whole text in a tooltip.
    const long = 'A very long device name that does not fit a phone at all, no way';
    const svg = svgBarChart('t', 'x', [{ ...bar(1), label: long }]);
    expect(svg).toContain(`<title>${long}: 1 x</title>`);
    expect(svg).toContain('…</text>');
  });
});

describe('result text and validation', () => {
  it('the text table says what was measured', () => {
    const t = formatResultText(B, ['default model']);
    expect(t).toContain('SOFTWARE ADAPTER');
    expect(t).toContain('default model');
    expect(t).toMatch(/Decode \(tok\/s\)\s+1\s+100/);
    expect(t).toContain('Roofline: not measured.');
    expect(formatResultText(A)).toContain('measured read bandwidth 900 GB/s');
  });

  it('a remote result says the server holds the model, not "0 parameters" and "upload 0 ms" (issue 46, item 8)', () => {
    const remote = {
      ...A,
      engine: 'remote',
      model: { id: 'test-model', architecture: 'remote', quantization: 'unknown', parameters: 0, bytes: 0 },
      load: { totalMs: 12.5, downloadMs: 0, uploadMs: 0, compileMs: 0 },
    };
    const t = formatResultText(remote);
    expect(t).toContain('  model:   test-model (served remotely: its size and type are the server’s)');
    expect(t).toContain('  load:    12.5 ms (listing the server’s models; the server loaded the weights)');
    expect(t).not.toMatch(/0 parameters|0 B of weights|upload 0 ms/);
    expect(formatResultText(A)).toMatch(
      / {2}model: {3}\S+ \(\w+, \S+, [\d.]+\S* parameters, [\d.]+ \S+ of weights/,
    );
  });

  it('a wllama (CPU) result names its own load phases and says why it has no roofline (issue 46)', () => {
    const cpu = {
      ...B,
      engine: 'wllama',
      load: { totalMs: 61.5, downloadMs: 12.25, uploadMs: 49.25, compileMs: 0 },
    };
    const t = formatResultText(cpu);
    expect(t).toContain('  load:    61.5 ms (fetch 12.3 ms, load into wasm 49.3 ms)');
    expect(t).toContain('Roofline: not applicable to the CPU backend (no GPU kernels).');
    expect(t).not.toMatch(/GPU upload|shader compile|Roofline: not measured|SOFTWARE ADAPTER/);
    expect(t).toContain('not used: wllama runs llama.cpp’s wasm build on the CPU');
    // Our engine's report keeps its GPU phases.
    expect(formatResultText(B)).toContain('(download 10 ms, GPU upload 20 ms, shader compile 70 ms)');
    // Time outside the three phases is said, so the parts add up to the total.
    expect(formatResultText({ ...B, load: { ...B.load, totalMs: 3990 } })).toContain(
      '(download 10 ms, GPU upload 20 ms, shader compile 70 ms, the rest 3890 ms (header, tokenizer, kernel trials))',
    );
  });

  it('resultProblems accepts a result and names what is wrong with a broken one', () => {
    expect(resultProblems(JSON.parse(JSON.stringify(A)))).toEqual([]);
    expect(resultProblems(null)).toEqual(['not a JSON object']);
    const broken = JSON.parse(JSON.stringify(A));
    broken.schemaVersion = 2;
    delete broken.device.fingerprint;
    broken.runs[0].itlMs.pop();
    broken.runs[1].outputTokens = 99;
    const errs = resultProblems(broken);
    expect(errs).toContain('schemaVersion must be 1, got 2');
    expect(errs).toContain('device.fingerprint is missing');
    expect(errs).toContain('runs[0].itlMs must have outputTokens − 1 entries');
    expect(errs).toContain('runs[1].outputTokens differs from outputTokenIds.length');
  });
});
