#!/usr/bin/env node
/**
 * `npm run setup`, step one, in plain Node (no npm packages yet): installs the npm packages with `npm ci`
 * when node_modules is missing or older than package-lock.json (with PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1:
 * the tools use a system Chromium), then hands over to scripts/setup.ts (tsx), which finds or installs
 * Chromium, the Vulkan loader and the test model and prints the report.
 *
 * Options (passed on to setup.ts): --check (report only: install and download nothing), --help.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const check = args.includes('--check');

const major = Number(process.versions.node.split('.')[0]);
if (major < 20) {
  console.error(`setup: Node.js ${process.version} is too old: this project needs Node.js 20 or newer.`);
  process.exit(1);
}

/** Why `npm ci` is needed, or undefined when node_modules matches package-lock.json. */
function npmCiReason() {
  // npm writes node_modules/.package-lock.json at the end of every install.
  const hidden = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(hidden)) return 'node_modules is missing';
  if (statSync(hidden).mtimeMs < statSync(join(root, 'package-lock.json')).mtimeMs)
    return 'node_modules is older than package-lock.json';
  if (!existsSync(join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'))) return 'node_modules lacks tsx';
  return undefined;
}

let npmStep;
const reason = npmCiReason();
if (!reason) npmStep = 'found|node_modules matches package-lock.json';
else if (check) npmStep = `missing|${reason}|PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci`;
else {
  console.error(`setup: ${reason}: npm ci (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1)`);
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: root,
    stdio: 'inherit',
    env: { PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', ...process.env },
    shell: process.platform === 'win32',
  });
  if (r.status !== 0) {
    console.error(
      `setup: npm ci failed (exit ${r.status ?? r.signal ?? r.error?.message}); ` +
        'run `PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci` and read its errors (npm needs the registry).',
    );
    process.exit(1);
  }
  npmStep = `installed|npm ci (${reason})`;
}

if (!existsSync(join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'))) {
  console.error(
    'setup: node_modules has no tsx; run `PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci`, then `npm run setup` again.',
  );
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(root, 'scripts', 'setup.ts'), ...args],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, SETUP_NPM_STEP: npmStep },
  },
);
process.exit(r.status ?? 1);
