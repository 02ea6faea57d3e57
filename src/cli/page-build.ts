/**
 * The built page for the command-line benchmark: `vite build` into `dist/` (with the project's
 * vite.config.ts), redone when any input changed since the last build. The build adds one entry,
 * `src/bench/page-api-entry.ts`, listed in the manifest, which the command loads into the page when the
 * page's own entry does not install `window.benchApi`.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Files and folders whose changes make the build stale. */
const INPUTS = [
  'index.html',
  'vite.config.ts',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'src',
  'workers',
  'public',
];
const BENCH_ENTRY = 'src/bench/page-api-entry.ts';
const STAMP = '.bench-build.json';

/** `path:mtime:size` of every input file (tests excluded), sorted, joined. */
export function inputsFingerprint(root = ROOT): string {
  const out: string[] = [];
  const walk = (p: string) => {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const e of readdirSync(p)) walk(join(p, e));
    } else if (!/\.test\.ts$/.test(p)) out.push(`${relative(root, p)}:${Math.round(st.mtimeMs)}:${st.size}`);
  };
  for (const i of INPUTS) walk(join(root, i));
  return out.sort().join('\n');
}

/** The built page: its folder and the URL path of the bench-API entry chunk. */
export interface BuiltPage {
  dir: string;
  /** e.g. `/assets/bench-api-abc123.js` */
  benchEntry: string;
  /** True when this call ran the build. */
  built: boolean;
}

/**
 * Builds the page into `outDir` (default `dist/`) unless a build of the same inputs is there.
 * @param log progress lines (to stderr in the command).
 */
export async function ensureBuiltPage(
  opts: { outDir?: string; log?: (s: string) => void; force?: boolean } = {},
): Promise<BuiltPage> {
  const outDir = opts.outDir ?? join(ROOT, 'dist');
  const fp = inputsFingerprint();
  const stampPath = join(outDir, STAMP);
  if (!opts.force && existsSync(stampPath)) {
    try {
      const stamp = JSON.parse(readFileSync(stampPath, 'utf8')) as { inputs: string; benchEntry: string };
      if (
        stamp.inputs === fp &&
        existsSync(join(outDir, stamp.benchEntry)) &&
        existsSync(join(outDir, 'index.html'))
      )
        return { dir: outDir, benchEntry: `/${stamp.benchEntry}`, built: false };
    } catch {
      // A broken stamp: rebuild.
    }
  }
  opts.log?.(`building the page (vite build → ${relative(ROOT, outDir) || outDir})…`);
  const t0 = performance.now();
  const { build } = await import('vite');
  await build({
    root: ROOT,
    configFile: join(ROOT, 'vite.config.ts'),
    logLevel: 'warn',
    build: {
      outDir,
      emptyOutDir: true,
      manifest: true,
      rolldownOptions: {
        input: { index: join(ROOT, 'index.html'), 'bench-api': join(ROOT, BENCH_ENTRY) },
      },
    },
  });
  const manifest = JSON.parse(readFileSync(join(outDir, '.vite', 'manifest.json'), 'utf8')) as Record<
    string,
    { file: string }
  >;
  const entry = manifest[BENCH_ENTRY]?.file;
  if (!entry) throw new Error(`the build's manifest has no ${BENCH_ENTRY}`);
  // Inputs that changed during the build make the next run build again.
  writeFileSync(stampPath, JSON.stringify({ inputs: fp, benchEntry: entry }));
  opts.log?.(`built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { dir: outDir, benchEntry: `/${entry}`, built: true };
}
