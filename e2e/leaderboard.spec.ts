/**
 * `npm run bench:report -- FILES --html FILE`, the shareable leaderboard, end to end: varied result files
 * (five devices, one a software adapter, three models, two engines, an older result replaced by a newer
 * one) are written to a temporary folder, the command makes the page, and Chromium opens it from disk:
 * no request leaves the file, the devices × models matrix ranks the devices with their fingerprints and
 * dates, each model has its ranking; at 1280 px every table fits its box; at 390 px the page does not
 * overflow (the tables scroll inside their boxes, the device column of each, "All results" included, stays
 * in view), the charts fit the width and a share (roofline) is drawn on a fixed 0–100% scale. Screenshots
 * at 1280×800 and 390×844, light and dark, go to `$SCREENSHOT_DIR` when set, else to the test's output
 * folder.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect, type Page, type TestInfo, test } from '@playwright/test';
import { DEFAULT_PLAN } from '../src/bench/default-plan.ts';
import { PROMPT_SETS } from '../src/bench/prompts.ts';
import type { BenchResult, BenchRun } from '../src/bench/types.ts';
import { summarize } from '../src/core/metrics.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A result of `runs` measured runs around the given decode, prefill and TTFT. */
function result(o: {
  device: string;
  vendor: string;
  fp: string;
  model: string;
  quant: string;
  params: number;
  engine?: string;
  decode: number;
  prefill: number;
  ttft: number;
  date: string;
  fallback?: boolean;
  /** Decode's share of the measured memory bandwidth (0–1), for the roofline chart. */
  roofline?: number;
}): BenchResult {
  const runs: BenchRun[] = [0.97, 1, 1.03].map((k) => {
    const tpot = 1000 / (o.decode * k);
    const n = 32;
    return {
      prompt: 'Once upon a time',
      promptName: 'short',
      promptTokens: 5,
      outputTokens: n,
      outputTokenIds: Array.from({ length: n }, (_, i) => i + 2),
      text: 'x',
      ttftMs: o.ttft / k,
      itlMs: Array.from({ length: n - 1 }, () => tpot),
      tpotMs: tpot,
      e2eMs: o.ttft / k + tpot * (n - 1),
      prefillTokensPerSecond: o.prefill * k,
      decodeTokensPerSecond: o.decode * k,
    };
  });
  const s = (f: (r: BenchRun) => number) => summarize(runs.map(f));
  return {
    schemaVersion: 1,
    createdAt: o.date,
    device: {
      vendor: o.vendor,
      architecture: '',
      description: o.device,
      isFallbackAdapter: o.fallback ?? false,
      features: ['shader-f16'],
      limits: {},
      userAgent: 'Mozilla/5.0',
      fingerprint: o.fp,
    },
    engine: o.engine ?? 'webgpu',
    model: {
      id: o.model,
      architecture: 'llama',
      quantization: o.quant,
      parameters: o.params,
      bytes: o.params,
    },
    load: { totalMs: 900, downloadMs: 300, uploadMs: 200, compileMs: 400 },
    // The default plan (src/bench/default-plan.ts): engines are labelled plainly. A plan of its own would
    // add its setup to every label (report.ts setupText; unit tests in src/bench/leaderboard.test.ts).
    plan: {
      prompts: [...PROMPT_SETS[DEFAULT_PLAN.promptSet]],
      maxTokens: DEFAULT_PLAN.maxTokens,
      runs: 3,
      warmup: DEFAULT_PLAN.warmup,
      ignoreEos: DEFAULT_PLAN.ignoreEos,
    },
    runs,
    ...(o.roofline !== undefined
      ? {
          roofline: {
            bandwidthGBs: 1000,
            bytesPerToken: (o.roofline * 1e12) / o.decode,
            fraction: o.roofline,
          },
        }
      : {}),
    summary: {
      ttftMs: s((r) => r.ttftMs),
      tpotMs: s((r) => r.tpotMs),
      itlMs: s((r) => r.tpotMs),
      e2eMs: s((r) => r.e2eMs),
      prefillTokensPerSecond: s((r) => r.prefillTokensPerSecond),
      decodeTokensPerSecond: s((r) => r.decodeTokensPerSecond),
    },
  };
}

const STORIES = { model: 'stories260K.gguf', quant: 'F32', params: 292_800 };
const LLAMA = { model: 'Llama-3.2-1B-Instruct-Q4_K_M.gguf', quant: 'Q4_K_M', params: 1_235_814_432 };
const QWEN = { model: 'Qwen3-0.6B-Q8_0.gguf', quant: 'Q8_0', params: 596_049_920 };
const DEV = {
  rtx: { device: 'NVIDIA GeForce RTX 4090', vendor: 'nvidia', fp: '9f1c2e7a40b3d815' },
  m3: { device: 'Apple M3 Max', vendor: 'apple', fp: '3b7e90c1d2a46f08' },
  uhd: { device: 'Intel(R) UHD Graphics 630', vendor: 'intel', fp: 'c40a5d9e8f172b36' },
  adreno: { device: 'Qualcomm Adreno (TM) 740', vendor: 'qualcomm', fp: '7d2b6c0e1f9a3845' },
  swift: { device: 'Google SwiftShader', vendor: 'google', fp: '0e5f1a2b3c4d6978', fallback: true },
};
const FILES: Record<string, BenchResult> = {
  'rtx-stories.json': result({
    ...DEV.rtx,
    ...STORIES,
    decode: 2150,
    prefill: 41000,
    ttft: 2.1,
    date: '2026-11-20T10:00:00.000Z',
    roofline: 0.0409,
  }),
  'rtx-llama.json': result({
    ...DEV.rtx,
    ...LLAMA,
    decode: 182,
    prefill: 3900,
    ttft: 18,
    date: '2026-11-20T10:05:00.000Z',
    roofline: 0.62,
  }),
  'rtx-llama-webllm.json': result({
    ...DEV.rtx,
    ...LLAMA,
    engine: 'webllm',
    decode: 205,
    prefill: 5200,
    ttft: 14,
    date: '2026-11-21T09:00:00.000Z',
  }),
  'rtx-qwen.json': result({
    ...DEV.rtx,
    ...QWEN,
    decode: 240,
    prefill: 6100,
    ttft: 12,
    date: '2026-11-20T10:10:00.000Z',
  }),
  'm3-stories.json': result({
    ...DEV.m3,
    ...STORIES,
    decode: 1650,
    prefill: 30500,
    ttft: 2.6,
    date: '2026-11-18T08:00:00.000Z',
    roofline: 0.0414,
  }),
  'm3-llama-old.json': result({
    ...DEV.m3,
    ...LLAMA,
    decode: 71,
    prefill: 1500,
    ttft: 44,
    date: '2026-10-02T08:00:00.000Z',
  }),
  'm3-llama.json': result({
    ...DEV.m3,
    ...LLAMA,
    decode: 96,
    prefill: 2100,
    ttft: 31,
    date: '2026-11-18T08:10:00.000Z',
  }),
  'uhd-stories.json': result({
    ...DEV.uhd,
    ...STORIES,
    decode: 610,
    prefill: 9100,
    ttft: 6.5,
    date: '2026-11-15T12:00:00.000Z',
  }),
  'uhd-qwen.json': result({
    ...DEV.uhd,
    ...QWEN,
    decode: 21,
    prefill: 310,
    ttft: 160,
    date: '2026-11-15T12:20:00.000Z',
  }),
  'adreno-stories.json': result({
    ...DEV.adreno,
    ...STORIES,
    decode: 420,
    prefill: 5200,
    ttft: 9.8,
    date: '2026-11-22T19:30:00.000Z',
  }),
  'swift-stories.json': result({
    ...DEV.swift,
    ...STORIES,
    decode: 95,
    prefill: 800,
    ttft: 41,
    date: '2026-12-01T03:00:00.000Z',
  }),
  // A run that failed (a remote server's cut stream): left out of the leaderboard, its long Runs cell
  // ("3 (partial: failed: stream_cut)") wrapping inside "All results" at 1280 px.
  'uhd-qwen-failed.json': {
    ...result({ ...DEV.uhd, ...QWEN, decode: 20, prefill: 300, ttft: 170, date: '2026-11-16T12:20:00.000Z' }),
    partial: true,
    error: { code: 'stream_cut', message: 'the stream broke after 2 chunk(s)' },
  },
};

let dir = '';
let reportFile = '';

test.beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'leaderboard-'));
  const files = Object.entries(FILES).map(([name, r]) => {
    writeFileSync(join(dir, name), JSON.stringify(r));
    return join(dir, name);
  });
  reportFile = join(dir, 'leaderboard.html');
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
      'src/cli/bench-report.ts',
      ...files,
      '--html',
      reportFile,
      '--title',
      'Leaderboard <test>',
      '--md',
      join(dir, 'report.md'),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  );
});

test.afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Opens the page from disk and returns every request it made (the file itself excluded). */
async function open(page: Page): Promise<string[]> {
  const url = pathToFileURL(reportFile).href;
  const requests: string[] = [];
  page.on('request', (r) => {
    if (r.url() !== url) requests.push(r.url());
  });
  await page.goto(url);
  await page.waitForLoadState('load');
  return requests;
}

/** The viewport as a visitor first sees it (`NAME.png`) and the whole page (`NAME-full.png`). */
async function shoot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  const d = process.env.SCREENSHOT_DIR;
  const path = (f: string) => (d ? resolve(d, f) : testInfo.outputPath(f));
  await page.screenshot({ path: path(`${name}.png`) });
  await page.screenshot({ path: path(`${name}-full.png`), fullPage: true });
}

test('the leaderboard: devices × models ranked, fingerprints and dates, rankings per model, self-contained', async ({
  page,
}, testInfo) => {
  const requests = await open(page);
  await expect(page).toHaveTitle('Leaderboard <test>');
  const matrix = page.locator('table.matrix');
  // Models by how many devices ran them: stories260K (5), then Llama (2) and Qwen (2) by name.
  await expect(matrix.locator('thead th.model')).toHaveCount(3);
  const heads = await matrix.locator('thead th.model').allTextContents();
  expect(heads[0]).toMatch(/^stories260K\.gguf/);
  expect(heads[0]).toContain('5 devices');
  expect(heads[1]).toMatch(/^Llama-3\.2-1B/);
  expect(heads[2]).toMatch(/^Qwen3-0\.6B/);

  // Devices ranked: the RTX 4090 is fastest everywhere; the software adapter last; each with its fingerprint.
  const rows = matrix.locator('tbody tr');
  await expect(rows).toHaveCount(5);
  const fps = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-fingerprint')));
  expect(fps[0]).toBe(DEV.rtx.fp);
  expect(fps.at(-1)).toBe(DEV.swift.fp);
  for (const [i, fp] of fps.entries()) {
    await expect(rows.nth(i).locator('th code.fp')).toHaveText(fp as string);
    await expect(rows.nth(i).locator('th .rank')).toHaveText(String(i + 1));
  }
  await expect(rows.last().locator('th .dev')).toHaveText('Google SwiftShader (software)');

  // The RTX's cells: stories260K's figures with the date; both engines on Llama, webllm (faster) first.
  const rtx = rows.first().locator('td');
  await expect(rtx.nth(0).locator('.decode')).toHaveText('2150 tok/s ★');
  await expect(rtx.nth(0)).toContainText('prefill 41000 tok/s · TTFT 2.1 ms');
  await expect(rtx.nth(0).locator('time')).toHaveText('2026-11-20');
  await expect(rtx.nth(1).locator('.entry')).toHaveCount(2);
  await expect(rtx.nth(1).locator('.entry').first()).toContainText('webllm');
  await expect(rtx.nth(1).locator('.entry').first().locator('.decode')).toHaveText('205 tok/s ★');
  // The M3's Llama cell is its newer result (96 tok/s, November), not the October one.
  const m3 = rows.nth(1);
  await expect(m3).toHaveAttribute('data-fingerprint', DEV.m3.fp);
  await expect(m3.locator('td').nth(1).locator('.decode')).toHaveText('96 tok/s');
  await expect(m3.locator('td').nth(1).locator('time')).toHaveText('2026-11-18');
  // Not measured: a dash.
  await expect(rows.nth(3).locator('td').nth(1)).toHaveText('–');
  // One star per model.
  await expect(matrix.locator('.entry.best')).toHaveCount(3);

  // Rankings per model: stories260K's five, fastest first, with dates.
  const rankings = page.locator('#rankings table.ranking');
  await expect(rankings).toHaveCount(3);
  const storiesRank = rankings.first().locator('tbody tr');
  await expect(storiesRank).toHaveCount(5);
  const firstCells = await storiesRank.evaluateAll((trs) => trs.map((tr) => tr.children[0].textContent));
  expect(firstCells).toEqual(['1', '2', '3', '4', '5']);
  await expect(storiesRank.first()).toContainText('NVIDIA GeForce RTX 4090');
  await expect(storiesRank.last()).toContainText('Google SwiftShader');
  await expect(storiesRank.last().locator('time')).toHaveText('2026-12-01');
  // Every file is still in "All results" (the older M3 result included).
  await expect(page.locator('table.all tbody tr')).toHaveCount(Object.keys(FILES).length);

  // The Markdown (--md, for a CI job summary) has the same matrix: the RTX first, the software adapter last.
  const md = readFileSync(join(dir, 'report.md'), 'utf8');
  const mdRows = md.split('\n').filter((l) => /^\| \d+ \| /.test(l));
  expect(mdRows).toHaveLength(5);
  expect(mdRows[0]).toContain(`NVIDIA GeForce RTX 4090 \`${DEV.rtx.fp}\``);
  expect(mdRows[0]).toContain('**2150** tok/s ★<br>prefill 41000 tok/s · TTFT 2.1 ms<br>webgpu · 2026-11-20');
  expect(mdRows[4]).toContain(DEV.swift.fp);

  expect(requests).toEqual([]);
  // The desktop page fits its width, and so does every table in its box (no column cut behind a
  // scrollbar): the matrix, the rankings and "All results" with its fourteen columns.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
  const boxes = await page.locator('.scroll').evaluateAll((els) =>
    els.map((el) => ({
      table: el.firstElementChild?.className,
      scrollW: el.scrollWidth,
      clientW: el.clientWidth,
    })),
  );
  expect(boxes.map((b) => b.table)).toEqual(['matrix', 'ranking', 'ranking', 'ranking', 'all']);
  for (const b of boxes) expect(b.scrollW, `${b.table} fits its box`).toBeLessThanOrEqual(b.clientW);
  await shoot(page, testInfo, 'leaderboard-1280');
  // Dark mode: the sticky device column keeps the page's background (no light strip over the cells).
  await page.emulateMedia({ colorScheme: 'dark' });
  const bg = await rows
    .first()
    .locator('th')
    .evaluate((th) => [
      getComputedStyle(th).backgroundColor,
      getComputedStyle(document.body).backgroundColor,
    ]);
  expect(bg[0]).toBe(bg[1]);
  // The scroll boxes' edge shadow (shown while a table overflows) is drawn over the dark page, not white.
  const boxBg = await page
    .locator('.scroll')
    .first()
    .evaluate((el) => getComputedStyle(el).backgroundImage);
  expect(boxBg).toContain('rgb(17, 17, 17)');
  expect(boxBg).not.toContain('rgb(255, 255, 255) 40%');
  await shoot(page, testInfo, 'leaderboard-1280-dark');
});

test('at phone width (390 px) the page does not overflow: the tables scroll in their boxes', async ({
  page,
}, testInfo) => {
  await page.setViewportSize({ width: 390, height: 844 });
  const requests = await open(page);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  const box = page.locator('.scroll').filter({ has: page.locator('table.matrix') });
  const { scrollW, clientW } = await box.evaluate((el) => ({
    scrollW: el.scrollWidth,
    clientW: el.clientWidth,
  }));
  expect(clientW).toBeLessThanOrEqual(390);
  expect(scrollW).toBeGreaterThan(clientW);
  // Scrolled to the end, the device column is still where it was (sticky) and the last model is in view.
  const device = box.locator('tbody tr').first().locator('th');
  const before = await device.boundingBox();
  await box.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
  const after = await device.boundingBox();
  expect(after?.x).toBeCloseTo(before?.x ?? Number.NaN, 0);
  const lastCell = box.locator('tbody tr').first().locator('td').last();
  const cellBox = await lastCell.boundingBox();
  expect(cellBox && cellBox.x + cellBox.width).toBeLessThanOrEqual(390 + 1);
  await box.evaluate((el) => el.scrollTo({ left: 0 }));
  // Text stays readable: the matrix's figures are at least 14 px.
  const px = await box
    .locator('.decode')
    .first()
    .evaluate((el) => Number.parseFloat(getComputedStyle(el).fontSize));
  expect(px).toBeGreaterThanOrEqual(14);
  // "All results" too: its device column stays in view when the table is scrolled to its last column.
  const all = page.locator('.scroll').filter({ has: page.locator('table.all') });
  const allW = await all.evaluate((el) => ({ scrollW: el.scrollWidth, clientW: el.clientWidth }));
  expect(allW.scrollW).toBeGreaterThan(allW.clientW);
  const allDevice = all.locator('tbody tr').first().locator('th[scope="row"]');
  expect(await allDevice.evaluate((th) => getComputedStyle(th).position)).toBe('sticky');
  const allBefore = await allDevice.boundingBox();
  await all.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
  const allAfter = await allDevice.boundingBox();
  expect(allAfter?.x).toBeCloseTo(allBefore?.x ?? Number.NaN, 0);
  const date = all.locator('tbody tr').first().locator('td').last();
  const dateBox = await date.boundingBox();
  expect(dateBox && dateBox.x + dateBox.width).toBeLessThanOrEqual(390 + 1);
  await all.evaluate((el) => el.scrollTo({ left: 0 }));

  // Charts fit the phone's width (no sideways scrolling): each SVG is as wide as its figure, every bar and
  // its value inside it; the title is HTML above the chart.
  const figures = page.locator('figure');
  await expect(figures).toHaveCount(5);
  const fit = await figures.evaluateAll((fs) =>
    fs.map((f) => {
      const svg = f.querySelector('svg') as SVGSVGElement;
      const box = f.getBoundingClientRect();
      const s = svg.getBoundingClientRect();
      const right = Math.max(
        ...[...svg.querySelectorAll('rect, text')].map((e) => e.getBoundingClientRect().right),
      );
      return {
        title: f.querySelector('figcaption')?.textContent ?? '',
        scrollW: f.scrollWidth,
        clientW: f.clientWidth,
        svgW: s.width,
        boxW: box.width,
        overshoot: right - s.right,
      };
    }),
  );
  for (const c of fit) {
    expect(c.boxW, c.title).toBeLessThanOrEqual(390);
    expect(c.scrollW, c.title).toBeLessThanOrEqual(c.clientW);
    expect(c.svgW, c.title).toBeLessThanOrEqual(c.boxW + 0.5);
    expect(c.overshoot, `${c.title}: bars and values inside the chart`).toBeLessThanOrEqual(0.5);
  }
  // A share is drawn on a fixed 0–100% scale: the RTX's 4.09% of bandwidth is a short bar (at most a
  // tenth of the plot), not a full-width one because it is the largest share.
  const roofline = figures.filter({ hasText: 'share of measured memory bandwidth' });
  await expect(roofline.locator('figcaption')).toContainText('0–100%');
  const share = await roofline.evaluate((f) => {
    const svg = f.querySelector('svg') as SVGSVGElement;
    const bars = [...svg.querySelectorAll('g.bar')].map((g) => ({
      title: g.querySelector('title')?.textContent ?? '',
      w: (g.querySelector('rect') as SVGRectElement).getBoundingClientRect().width,
    }));
    return { plotW: svg.getBoundingClientRect().width, bars };
  });
  const small = share.bars.find((b) => b.title.includes('4.09 %'));
  const big = share.bars.find((b) => b.title.includes('62 %'));
  expect(small?.w).toBeGreaterThan(0);
  expect(small?.w).toBeLessThanOrEqual(share.plotW * 0.1);
  expect(big?.w).toBeCloseTo(share.plotW * 0.62, 0);
  expect(requests).toEqual([]);
  await shoot(page, testInfo, 'leaderboard-390');
  // And each part as a phone shows it, scrolled to its heading.
  for (const [i, part] of ['rankings', 'all-results', 'charts'].entries()) {
    await page
      .locator('h2')
      .nth(i + 1)
      .evaluate((h) => h.scrollIntoView({ block: 'start' }));
    const d = process.env.SCREENSHOT_DIR;
    const f = `leaderboard-390-${part}.png`;
    await page.screenshot({ path: d ? resolve(d, f) : testInfo.outputPath(f) });
  }
  // Dark mode at phone width: the sticky device columns keep the page's background.
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await allDevice.evaluate((th) => [
    getComputedStyle(th).backgroundColor,
    getComputedStyle(document.body).backgroundColor,
  ]);
  expect(dark[0]).toBe(dark[1]);
  await page.evaluate(() => window.scrollTo(0, 0));
  await shoot(page, testInfo, 'leaderboard-390-dark');
  await page
    .locator('h2')
    .nth(3)
    .evaluate((h) => h.scrollIntoView({ block: 'start' }));
  const d = process.env.SCREENSHOT_DIR;
  const f = 'leaderboard-390-dark-charts.png';
  await page.screenshot({ path: d ? resolve(d, f) : testInfo.outputPath(f) });
});
