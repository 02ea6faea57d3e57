/**
 * The command-line benchmark's page build (src/cli/page-build.ts): it builds into a folder of its own
 * (`dist/bench/`), so `npm run build`'s page and `npm run build:widget`'s `dist/widget/` survive it; it
 * builds again only when an input changed; Vite's warnings stay out of the log unless --verbose.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InlineConfig } from 'vite';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../testing/temp-dir.ts';
import {
  BENCH_PAGE_DIR,
  buildLogger,
  ensureBuiltPage,
  inputsFingerprint,
  ROOT,
  stripAnsi,
} from './page-build.ts';

const tempDir = useTempDirs();

const ESC = '\u001b';
const CHUNK_WARNING = `${ESC}[33m(!) Some chunks are larger than 500 kB after minification.${ESC}[39m`;
const TIMINGS_WARNING = `${ESC}[33m[PLUGIN_TIMINGS] Warning: Your build spent significant time in plugins.${ESC}[39m`;

/** A project folder with the inputs the fingerprint reads, and a page that `npm run build` made. */
function fakeProject(): string {
  const root = tempDir('page-build-');
  mkdirSync(join(root, 'src'), { recursive: true });
  writeFileSync(join(root, 'index.html'), '<!doctype html>');
  writeFileSync(join(root, 'src', 'main.ts'), 'export const a = 1;');
  // What `npm run build` and `npm run build:widget` leave: no bench stamp.
  mkdirSync(join(root, 'dist', 'widget'), { recursive: true });
  writeFileSync(join(root, 'dist', 'index.html'), 'the page of npm run build');
  writeFileSync(join(root, 'dist', 'widget', 'webgpu-chat.js'), 'the widget');
  return root;
}

/**
 * Stands in for Vite's build: empties `build.outDir` as Vite's emptyOutDir does, writes a page and its
 * manifest, and sends `warnings` to the config's logger.
 */
function fakeVite(warnings: string[] = []) {
  const calls: InlineConfig[] = [];
  const build = async (c: InlineConfig) => {
    calls.push(c);
    const out = c.build?.outDir as string;
    rmSync(out, { recursive: true, force: true });
    mkdirSync(join(out, '.vite'), { recursive: true });
    mkdirSync(join(out, 'assets'), { recursive: true });
    writeFileSync(join(out, 'index.html'), '<!doctype html>');
    writeFileSync(join(out, 'assets', 'bench-api-x.js'), '');
    writeFileSync(
      join(out, '.vite', 'manifest.json'),
      JSON.stringify({ 'src/bench/page-api-entry.ts': { file: 'assets/bench-api-x.js' } }),
    );
    c.customLogger?.info('dist/bench/index.html  0.5 kB');
    for (const w of warnings) c.customLogger?.warn(w);
  };
  return { build, calls };
}

describe('ensureBuiltPage', () => {
  it('builds into dist/bench/ by default: the page and widget of npm run build are kept', async () => {
    expect(BENCH_PAGE_DIR).toBe(join(ROOT, 'dist', 'bench'));
    const root = fakeProject();
    const vite = fakeVite();
    const page = await ensureBuiltPage({ root, build: vite.build });
    expect(page).toEqual({
      dir: join(root, 'dist', 'bench'),
      benchEntry: '/assets/bench-api-x.js',
      built: true,
    });
    expect(vite.calls[0].build?.outDir).toBe(join(root, 'dist', 'bench'));
    // Before: `dist/` itself was the output and was emptied, widget and all.
    expect(readFileSync(join(root, 'dist', 'widget', 'webgpu-chat.js'), 'utf8')).toBe('the widget');
    expect(readFileSync(join(root, 'dist', 'index.html'), 'utf8')).toBe('the page of npm run build');
  });

  it('builds again only when an input changed', async () => {
    const root = fakeProject();
    const vite = fakeVite();
    const lines: string[] = [];
    const opts = { root, build: vite.build, log: (s: string) => lines.push(s) };
    expect((await ensureBuiltPage(opts)).built).toBe(true);
    expect((await ensureBuiltPage(opts)).built).toBe(false);
    expect(vite.calls).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('building'))).toHaveLength(1);
    writeFileSync(join(root, 'src', 'main.ts'), 'export const a = 22;'); // another size
    expect((await ensureBuiltPage(opts)).built).toBe(true);
    expect(vite.calls).toHaveLength(2);
    // A broken stamp, or a missing page, is rebuilt.
    writeFileSync(join(root, 'dist', 'bench', '.bench-build.json'), '{');
    expect((await ensureBuiltPage(opts)).built).toBe(true);
    rmSync(join(root, 'dist', 'bench', 'index.html'));
    expect((await ensureBuiltPage(opts)).built).toBe(true);
    expect(vite.calls).toHaveLength(4);
  });

  it("quiet: Vite's warnings are counted, not printed; --verbose prints them without ANSI codes", async () => {
    const quiet: string[] = [];
    await ensureBuiltPage({
      root: fakeProject(),
      build: fakeVite([CHUNK_WARNING, TIMINGS_WARNING]).build,
      log: (s) => quiet.push(s),
    });
    expect(quiet.join('\n')).not.toMatch(/\(!\)|PLUGIN_TIMINGS|0\.5 kB/);
    expect(quiet.join('\n')).not.toContain(ESC);
    expect(quiet.at(-1)).toMatch(/^built in \d+\.\d s \(2 Vite warnings; --verbose prints them\)$/);

    const loud: string[] = [];
    await ensureBuiltPage({
      root: fakeProject(),
      build: fakeVite([CHUNK_WARNING, TIMINGS_WARNING]).build,
      log: (s) => loud.push(s),
      verbose: true,
    });
    expect(loud).toContain('vite: (!) Some chunks are larger than 500 kB after minification.');
    expect(loud).toContain('vite: [PLUGIN_TIMINGS] Warning: Your build spent significant time in plugins.');
    expect(loud).toContain('vite: dist/bench/index.html  0.5 kB');
    expect(loud.join('\n')).not.toContain(ESC);
    expect(loud.at(-1)).toMatch(/^built in \d+\.\d s$/);
  });

  it("the project's real build: into its own folder, quiet, and reused while the sources are unchanged", async () => {
    const out = join(tempDir('page-build-real-'), 'dist');
    mkdirSync(join(out, 'widget'), { recursive: true });
    writeFileSync(join(out, 'widget', 'webgpu-chat.js'), 'the widget');
    const lines: string[] = [];
    const opts = { outDir: join(out, 'bench'), log: (s: string) => lines.push(s) };
    const fpBefore = inputsFingerprint();
    const first = await ensureBuiltPage(opts);
    expect(first.built).toBe(true);
    expect(existsSync(join(first.dir, 'index.html'))).toBe(true);
    expect(existsSync(join(first.dir, first.benchEntry))).toBe(true);
    expect(readFileSync(join(out, 'widget', 'webgpu-chat.js'), 'utf8')).toBe('the widget');
    // The lines the person sees: the start, the end; none of Vite's raw warnings or colour codes.
    expect(lines[0]).toMatch(/^building the page \(vite build → /);
    expect(lines.at(-1)).toMatch(/^built in \d+\.\d s/);
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).not.toMatch(/\(!\)|PLUGIN_TIMINGS/);
    expect(lines.join('\n')).not.toContain(ESC);
    const again = await ensureBuiltPage(opts);
    // Unchanged sources: the same build, not redone. (Where someone edited a source meanwhile, in a shared
    // work tree, a new build is the right answer.)
    if (inputsFingerprint() === fpBefore) {
      expect(again).toEqual({ ...first, built: false });
      expect(lines).toHaveLength(2);
    } else expect(again.built).toBe(true);
  }, 300_000);

  it("--verbose, a real build: Vite's warnings on the log, stdout (the command's table) untouched", async () => {
    const dir = tempDir('page-build-verbose-');
    const script = join(dir, 'build.mts');
    writeFileSync(
      script,
      `import { ensureBuiltPage } from ${JSON.stringify(join(ROOT, 'src/cli/page-build.ts'))};\n` +
        `await ensureBuiltPage({ outDir: process.argv[2], verbose: true, log: (s) => process.stderr.write(s + '\\n') });\n`,
    );
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((ok) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', script, join(dir, 'dist', 'bench')],
        { cwd: ROOT, timeout: 240_000 },
        (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
      ),
    );
    expect(r.code, r.stderr).toBe(0);
    // Before: Rolldown's reporter wrote "transforming...", "rendering chunks..." here, at log level info.
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('vite: (!) Some chunks are larger than 500 kB after minification.');
    expect(r.stderr).not.toContain(ESC);
    expect(r.stderr).toMatch(/^built in \d+\.\d s$/m);
  }, 300_000);
});

describe('buildLogger', () => {
  it('errors always pass; colour is kept only when asked', () => {
    const plain: string[] = [];
    buildLogger(false, (l) => plain.push(l)).error(`${ESC}[31mbuild failed${ESC}[39m\nsecond line`);
    expect(plain).toEqual(['build failed', 'second line']);
    const coloured: string[] = [];
    const l = buildLogger(true, (x) => coloured.push(x), true);
    l.warn(CHUNK_WARNING);
    l.warnOnce('once');
    l.warnOnce('once');
    expect(coloured).toEqual([CHUNK_WARNING, 'once']);
    expect(l.warnings).toEqual(['(!) Some chunks are larger than 500 kB after minification.', 'once']);
    expect(l.hasWarned).toBe(true);
  });

  it('stripAnsi removes colour and cursor sequences only', () => {
    expect(stripAnsi(`${ESC}[1m${ESC}[33m[PLUGIN_TIMINGS]${ESC}[39m${ESC}[22m ok ${ESC}[2K`)).toBe(
      '[PLUGIN_TIMINGS] ok ',
    );
    expect(stripAnsi('50 % [ok]')).toBe('50 % [ok]');
  });
});
