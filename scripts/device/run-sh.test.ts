import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The device run's shell scripts and preflight, checked here where no GPU is: the GPU machine gives one
// run per session, so what can be checked without it is checked before it.
const dir = mkdtempSync(join(tmpdir(), 'device-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bash(script: string, env: Record<string, string> = {}) {
  return spawnSync('bash', [script], {
    encoding: 'utf8',
    env: { ...process.env, OUT: join(dir, 'out'), ...env },
    timeout: 60_000,
  });
}

describe('scripts/device shell scripts', () => {
  it('parse (bash -n)', () => {
    for (const s of ['scripts/device/run.sh', 'scripts/device/pack.sh']) {
      const r = spawnSync('bash', ['-n', s], { encoding: 'utf8' });
      expect(r.stderr, s).toBe('');
      expect(r.status, s).toBe(0);
    }
  });

  it('an unknown PLAN stops before anything is unpacked', () => {
    const r = bash('scripts/device/run.sh', { PLAN: 'everything' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown PLAN=everything (issues, or unset)');
  });

  it('PLAN=issues gives every phase its share and ends inside the 600 s of one device call (PRINT_PLAN)', () => {
    const r = bash('scripts/device/run.sh', { PLAN: 'issues', PRINT_PLAN: '1' });
    expect(r.status, r.stderr).toBe(0);
    // "PHASE: starts at Ts, left Ls, soft Ss, hard Hs", each phase started after the one before ran to
    // its hard limit (the worst case), the set-up taking 20 s.
    const rows = [
      ...r.stdout.matchAll(/^(\w+): starts at (\d+)s, left (-?\d+)s, soft (-?\d+)s, hard (-?\d+)s$/gm),
    ].map((m) => ({ phase: m[1], start: +m[2], left: +m[3], soft: +m[4], hard: +m[5] }));
    expect(rows.map((x) => x.phase)).toEqual(['profile', 'compare', 'draft', 'small']);
    // Enough for each phase's work on an H100/H200: the 1B and 8B profiles, three compare files at two
    // depths, three draft pairs, two 8B loads of the small phase.
    const least: Record<string, number> = { profile: 60, compare: 140, draft: 100, small: 70 };
    for (const x of rows) {
      expect(x.soft, x.phase).toBeGreaterThanOrEqual(least[x.phase]);
      expect(x.hard, x.phase).toBeGreaterThan(x.soft);
    }
    for (let i = 1; i < rows.length; i++) expect(rows[i].start).toBe(rows[i - 1].start + rows[i - 1].hard);
    // The profile phase's models, then the decode attention sweep (attention-depth.ts) in its last 25 s.
    const split = /^profile: models until (\d+)s, then the decode attention for (\d+)s$/m.exec(r.stdout);
    expect(split, r.stdout).not.toBeNull();
    expect(Number(split![1])).toBeGreaterThanOrEqual(40);
    expect(Number(split![2])).toBe(25);
    expect(Number(split![1]) + Number(split![2])).toBe(rows[0].soft);
    const end = Number(/^end: (\d+)s at the latest/m.exec(r.stdout)?.[1]);
    expect(end).toBe(rows.at(-1)!.start + rows.at(-1)!.hard);
    expect(end).toBeLessThanOrEqual(560);
    // A smaller TOTAL_S: the later phases' reserves stay, so the first phase is the one skipped, and said so.
    const short = bash('scripts/device/run.sh', { PLAN: 'issues', PRINT_PLAN: '1', TOTAL_S: '300' });
    expect(short.stdout).toMatch(
      /^profile: skipped at 20s \(left -110s: too little; fewer PHASES or a larger TOTAL_S\)$/m,
    );
    expect(short.stdout).toMatch(/^compare: starts at 20s, left 40s/m);
    // The default phases keep their earlier shape: synthetic keeps its reserve after compare.
    const plain = bash('scripts/device/run.sh', { PRINT_PLAN: '1' });
    expect(plain.stdout).toMatch(/^compare: starts at 180s, left 210s/m);
    expect(plain.stdout).toMatch(/^synthetic: starts at 395s, left 105s, soft 55s/m);
  });
});

describe('scripts/device/preflight.ts', () => {
  it('prints the adapter and exits as its verdict says', () => {
    for (const args of [[], ['--gpu']]) {
      const json = join(dir, `pre${args.length}.json`);
      const r = spawnSync('npx', ['tsx', 'scripts/device/preflight.ts', ...args, '--json', json], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      const line = r.stdout.split('\n').find((l) => l.startsWith('preflight: '));
      expect(line, r.stderr).toBeDefined();
      const v = JSON.parse(line!.slice('preflight: '.length));
      expect(JSON.parse(readFileSync(json, 'utf8'))).toEqual(v);
      // 4: no adapter; 3: a software one where a GPU was asked for; 0: otherwise.
      const expected = v.error ? 4 : args.length && v.software.length ? 3 : 0;
      expect(r.status).toBe(expected);
      expect(v.exit).toBe(expected);
      if (!v.error) expect(typeof v.description).toBe('string');
    }
    // Without --gpu the tests' SwiftShader driver is used, so this machine has an adapter.
    const plain = JSON.parse(readFileSync(join(dir, 'pre0.json'), 'utf8'));
    expect(plain.driver).toMatch(/swiftshader/i);
    expect(plain.error).toBeUndefined();
  });
});
