/**
 * The built page for the command-line benchmark: `vite build` (with the project's vite.config.ts) into a
 * folder of its own, `dist/bench/` ({@link BENCH_PAGE_DIR}), redone only when an input changed since the
 * last build there. It never writes elsewhere, so `npm run build`'s `dist/index.html` and `npm run
 * build:widget`'s `dist/widget/` stay as they are. The build adds one entry, `src/bench/page-api-entry.ts`,
 * listed in the manifest, which the command loads into the page when the page's own entry does not install
 * `window.benchApi`. Vite's output (warnings such as "(!) Some chunks are larger than 500 kB" and
 * Rolldown's `[PLUGIN_TIMINGS]`) is held back unless `verbose`; a quiet build says only how many warnings
 * it had.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InlineConfig, Logger } from 'vite';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where `npm run bench` builds the page: a folder of its own, beside (never over) other builds. */
export const BENCH_PAGE_DIR = join(ROOT, 'dist', 'bench');

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

/** `s` without ANSI escape sequences (colours, cursor moves), for a log that is not a terminal. */
export function stripAnsi(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is exactly what is being removed.
  return s.replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '');
}

/**
 * A Vite logger for the command's builds. Quiet (`verbose` false): warnings are counted, not printed, and
 * info lines are dropped. Verbose: every line goes to `write`, with ANSI codes removed unless `colour`.
 * Errors always go to `write`.
 */
export function buildLogger(
  verbose: boolean,
  write: (line: string) => void,
  colour = false,
): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const warned = new Set<string>();
  const out = (msg: string) => {
    const text = colour ? msg : stripAnsi(msg);
    for (const line of text.replace(/^\n+|\n+$/g, '').split('\n')) write(line);
  };
  const logger: Logger & { warnings: string[] } = {
    warnings,
    hasWarned: false,
    info(msg) {
      if (verbose) out(msg);
    },
    warn(msg) {
      logger.hasWarned = true;
      warnings.push(stripAnsi(msg).trim());
      if (verbose) out(msg);
    },
    warnOnce(msg) {
      if (warned.has(msg)) return;
      warned.add(msg);
      logger.warn(msg);
    },
    error(msg) {
      out(msg);
    },
    clearScreen() {},
    hasErrorLogged: () => false,
  };
  return logger;
}

/** The built page: its folder and the URL path of the bench-API entry chunk. */
export interface BuiltPage {
  dir: string;
  /** e.g. `/assets/bench-api-abc123.js` */
  benchEntry: string;
  /** True when this call ran the build. */
  built: boolean;
}

/** Options of {@link ensureBuiltPage}. */
export interface EnsureBuiltPageOptions {
  /** Output folder (default {@link BENCH_PAGE_DIR}); only this folder is written or emptied. */
  outDir?: string;
  /** Progress lines (to stderr in the command). */
  log?: (s: string) => void;
  /** Build even when the stamp matches. */
  force?: boolean;
  /** Print Vite's own lines (its warnings and notes) on `log`; else only a count of warnings. */
  verbose?: boolean;
  /** Keep ANSI colour codes in Vite's lines (default: when stderr is a terminal). */
  colour?: boolean;
  /** The project to fingerprint and build (default {@link ROOT}). */
  root?: string;
  /** Runs the build (default: Vite's `build`); replaceable in tests. */
  build?: (config: InlineConfig) => Promise<unknown>;
}

/**
 * Builds the page into `outDir` (default `dist/bench/`) unless a build of the same inputs is there: the
 * stamp (`.bench-build.json` in `outDir`) records the inputs' fingerprint and the bench entry, and a build
 * without this stamp (such as one of `npm run build`) is never reused or overwritten.
 */
export async function ensureBuiltPage(opts: EnsureBuiltPageOptions = {}): Promise<BuiltPage> {
  const root = opts.root ?? ROOT;
  const outDir = opts.outDir ?? (opts.root ? join(root, 'dist', 'bench') : BENCH_PAGE_DIR);
  const fp = inputsFingerprint(root);
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
  const log = opts.log ?? (() => {});
  log(`building the page (vite build → ${relative(root, outDir) || outDir})…`);
  const t0 = performance.now();
  const logger = buildLogger(
    opts.verbose ?? false,
    (line) => log(`vite: ${line}`),
    opts.colour ?? Boolean(process.stderr.isTTY),
  );
  const build = opts.build ?? (await import('vite')).build;
  await build({
    root,
    configFile: join(root, 'vite.config.ts'),
    // 'warn' even when verbose: at 'info' Rolldown's native reporter writes its progress straight to fd 1,
    // the command's stdout, where the table goes. Vite's warnings and notes reach the logger either way.
    logLevel: 'warn',
    customLogger: logger,
    build: {
      outDir,
      emptyOutDir: true,
      manifest: true,
      rolldownOptions: {
        input: { index: join(root, 'index.html'), 'bench-api': join(root, BENCH_ENTRY) },
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
  const n = logger.warnings.length;
  const quietNote =
    !opts.verbose && n > 0 ? ` (${n} Vite warning${n === 1 ? '' : 's'}; --verbose prints them)` : '';
  log(`built in ${((performance.now() - t0) / 1000).toFixed(1)} s${quietNote}`);
  return { dir: outDir, benchEntry: `/${entry}`, built: true };
}
