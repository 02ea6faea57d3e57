import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CompareJson, type DraftJson, deviceGoals, goalsTable, type ProfileJson } from './goals.ts';

// Figures shaped as compare.ts / profile.ts / draft.ts write them; the values are made up to sit on both
// sides of each goal.
const t = (mean: number) => ({ mean });
const compare: CompareJson = {
  nPrompt: 512,
  nGen: 128,
  bandwidthGBs: 3855,
  rows: [
    {
      model: 'llama-3.1-8b-q4_k_m',
      // 290 tok/s × 4.68e9 B = 1,357 GB/s: 35.2% of 3,855 GB/s.
      ours: {
        tests: { pp512: t(5000), tg128: t(290), 'tg128 @ d4096': t(270) },
        bytesPerToken: 4.68e9,
        kernels: {
          prefill: {
            matmul: 'tile',
            tileTrials: [
              { tile: 'float', ms: 1.33 },
              { tile: 'sgmat', ms: 0.41 },
            ],
            subgroupMatrix: { chosen: true, tile: 'f16 16x16x16' },
          },
        },
      },
      llama: { tests: { pp512: t(4875), tg128: t(188), 'tg128 @ d4096': t(173) } },
    },
    {
      model: 'llama-3.2-1b-q4_k_m',
      ours: {
        tests: { pp512: t(3050), tg128: t(371.5), 'tg128 @ d4096': t(241.5) },
        kernels: {
          prefill: { matmul: 'tile', subgroupMatrix: { chosen: false, reason: 'self-test failed' } },
        },
      },
      llama: { tests: { pp512: t(32373), tg128: t(484.2), 'tg128 @ d4096': t(426) } },
    },
    // A row llama.cpp did not run: no ratio, and the others still count.
    { model: 'llama-3.1-8b-q4_0', ours: { tests: { tg128: t(132) } }, llama: { error: 'killed' } },
  ],
};
const profile: ProfileJson = {
  rows: [
    { model: 'synthetic:llama-3.2-1b-q4_k_m', argmaxUs: 12.5, busyFraction: 0.97 },
    { model: 'synthetic:llama-3.1-8b-q4_k_m', argmaxUs: 18, busyFraction: 0.93 },
    { model: 'synthetic:x', skipped: 'past the budget' },
  ],
};
const draft: DraftJson = {
  rows: [
    { target: '8b', draft: '1b', speedup: 2.1, acceptance: 0.3, sameOutput: true },
    { target: '1b-q8_0', draft: '1b-q4_0', speedup: 1.5, acceptance: 0.92, sameOutput: true },
    { target: '8b', draft: 'lookup', skipped: 'past the deadline' },
  ],
};

describe('deviceGoals', () => {
  const goals = deviceGoals({ compare, profile, draft });
  const by = (s: string) => {
    const g = goals.find((x) => x.goal.includes(s));
    if (!g) throw new Error(`no goal ${s}`);
    return g;
  };

  it('decode and prefill ratios per row, met only when every row reaches 1.0×', () => {
    const gap = '; no figure for llama-3.1-8b-q4_0';
    expect(by('decode tg128 ≥ 1.0×').measured).toBe(
      `llama-3.1-8b-q4_k_m 1.54×, llama-3.2-1b-q4_k_m 0.77×${gap}`,
    );
    expect(by('decode tg128 ≥ 1.0×').met).toBe(false);
    expect(by('at depth 4096 ≥ 1.0×').measured).toBe(
      `llama-3.1-8b-q4_k_m 1.56×, llama-3.2-1b-q4_k_m 0.57×${gap}`,
    );
    expect(by('prefill pp512').measured).toBe(`llama-3.1-8b-q4_k_m 1.03×, llama-3.2-1b-q4_k_m 0.09×${gap}`);
    expect(by('prefill pp512').met).toBe(false);
    // Depth retention is ours alone: 270/290 = 0.93, 241.5/371.5 = 0.65.
    expect(by('÷ at depth 0').measured).toBe(`llama-3.1-8b-q4_k_m 0.93, llama-3.2-1b-q4_k_m 0.65${gap}`);
    expect(by('÷ at depth 0').met).toBe(false);
  });

  it('"every row" is met only with every row measured: a missing row leaves it open', () => {
    const fast = (m: string, depth?: boolean) => ({
      model: m,
      ours: { tests: { tg128: t(200), ...(depth ? { 'tg128 @ d4096': t(190) } : {}) } },
      llama: { tests: { tg128: t(100), ...(depth ? { 'tg128 @ d4096': t(90) } : {}) } },
    });
    const g = (rows: CompareJson['rows'], s: string) =>
      deviceGoals({ compare: { nPrompt: 512, nGen: 128, rows } }).find((x) => x.goal.includes(s))!;
    expect(g([fast('a', true), fast('b', true)], 'at depth 4096 ≥ 1.0×').met).toBe(true);
    // b's depth was skipped (the deadline): a's 2.11× alone does not make "every row".
    const open = g([fast('a', true), fast('b')], 'at depth 4096 ≥ 1.0×');
    expect(open.met).toBeUndefined();
    expect(open.measured).toBe('a 2.11×; no figure for b');
    expect(g([fast('a', true), fast('b')], '÷ at depth 0').met).toBeUndefined();
    expect(g([fast('a', true), fast('b', true)], '÷ at depth 0').met).toBe(true); // 0.95
  });

  it('the 8B Q4_K_M share of bandwidth, argmax and busy fraction', () => {
    expect(by('35% of the measured bandwidth').measured).toBe('35.2% (290.0 tok/s, 3855 GB/s)');
    expect(by('35% of the measured bandwidth').met).toBe(true);
    expect(by('argmax').met).toBe(true);
    expect(by('argmax').measured).toBe(
      'synthetic:llama-3.2-1b-q4_k_m 12.5 µs, synthetic:llama-3.1-8b-q4_k_m 18.0 µs',
    );
    expect(by('busy').met).toBe(false); // 0.93 on the 8B
  });

  it('the prefill tile each row chose, with the trial and the reason', () => {
    expect(by('prefill tile each row chose').measured).toBe(
      'llama-3.1-8b-q4_k_m: subgroup matrices f16 16x16x16 (trial float 1.330 ms / sgmat 0.410 ms); ' +
        'llama-3.2-1b-q4_k_m: tile; subgroup matrices not chosen: self-test failed',
    );
  });

  it('drafting counts only pairs with ≥ 70% acceptance toward 1.8×, and checks the tokens', () => {
    // 2.1× at 30% acceptance does not meet it; the 92% pair's 1.5× does not either.
    expect(by('1.8×').met).toBe(false);
    expect(by('1.8×').measured).toContain('1b-q8_0 > 1b-q4_0: 1.50× at 92% acceptance');
    const met = deviceGoals({
      draft: { rows: [{ target: 'a', draft: 'b', speedup: 1.85, acceptance: 0.7, sameOutput: true }] },
    });
    expect(met.find((g) => g.goal.includes('1.8×'))?.met).toBe(true);
    expect(by('identical').measured).toBe('2 of 2 pairs');
    const differ = deviceGoals({
      draft: { rows: [{ target: 'a', draft: 'b', speedup: 3, acceptance: 0.9, sameOutput: false }] },
    });
    expect(differ.find((g) => g.goal.includes('identical'))?.met).toBe(false);
    expect(differ.find((g) => g.goal.includes('1.8×'))?.measured).toContain('(TOKENS DIFFER)');
  });

  it('a phase not run gives "not measured", never a verdict', () => {
    const none = deviceGoals({});
    expect(none.every((g) => g.met === undefined)).toBe(true);
    expect(none.filter((g) => g.measured.startsWith('not measured')).length).toBe(none.length);
    expect(goalsTable(none)).toMatch(/^\| issue \| goal \| measured \| met \|/);
    expect(goalsTable(goals)).toContain('| 41 | prefill pp512 ≥ 1.0× llama.cpp Vulkan on every row |');
  });
});

describe('scripts/device/record.ts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'device-record-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (args: string[]) =>
    spawnSync('npx', ['tsx', 'scripts/device/record.ts', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('reads results.tar, the log and summary.md into one dated section; a software adapter is not written', () => {
    const res = join(dir, 'res');
    mkdirSync(res);
    const adapter = { vendor: 'google', architecture: 'swiftshader', isFallback: true };
    writeFileSync(
      join(res, 'compare.json'),
      JSON.stringify({ ...compare, adapter, date: '2026-12-05T20:00:00Z' }),
    );
    writeFileSync(join(res, 'draft.json'), JSON.stringify({ ...draft, adapter }));
    const out = join(dir, 'out');
    mkdirSync(out);
    expect(spawnSync('tar', ['-C', res, '-cf', join(out, 'results.tar'), '.']).status).toBe(0);
    writeFileSync(
      join(out, 'log.txt'),
      '[run 3s] unpacked into /tmp/wgpu-bench: v20.20.2, app commit 0123456789abcdef0123456789abcdef01234567\n' +
        'name, driver_version, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB\n',
    );
    writeFileSync(join(out, 'summary.md'), '## ours vs llama.cpp on the same GGUF files\n| a |\n');
    const r = run([out, '--no-write']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^<!-- bench:device 2026-12-05 -->\n## 2026-12-05: NVIDIA H100 80GB HBM3 /);
    expect(r.stdout).toContain('bundles of commit 0123456');
    expect(r.stdout).toContain('a SOFTWARE adapter: not GPU figures');
    expect(r.stdout).toContain('| 40 | decode tg128 ≥ 1.0× llama.cpp Vulkan on every row |');
    expect(r.stdout).toContain(
      '| 45 | drafted tokens identical to plain greedy decoding | 2 of 2 pairs | yes |',
    );
    expect(r.stdout).toContain('\n#### ours vs llama.cpp on the same GGUF files\n');
    expect(r.stdout.trimEnd().endsWith('<!-- /bench:device 2026-12-05 -->')).toBe(true);
    // Without --no-write, a software adapter's run is refused (the file is not touched).
    const bench = join(dir, 'BENCH.md');
    writeFileSync(bench, '# Benchmarks\n\nearlier\n');
    const refused = run([out, '--file', bench]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('not written: a software adapter');
    expect(readFileSync(bench, 'utf8')).toBe('# Benchmarks\n\nearlier\n');
    // --allow-software writes it, after what was there; a second write replaces the same date's section.
    expect(run([out, '--file', bench, '--allow-software']).status).toBe(0);
    expect(run([out, '--file', bench, '--allow-software']).status).toBe(0);
    const doc = readFileSync(bench, 'utf8');
    expect(doc.startsWith('# Benchmarks\n\nearlier\n\n<!-- bench:device 2026-12-05 -->')).toBe(true);
    expect(doc.split('<!-- bench:device 2026-12-05 -->').length).toBe(2);
  });

  it('a folder without results is refused with what summary.md says', () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    writeFileSync(join(empty, 'summary.md'), '## preflight failed: no usable WebGPU adapter\n');
    const r = run([empty]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no phase results');
    expect(r.stderr).toContain('preflight failed');
  });
});
