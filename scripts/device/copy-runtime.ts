/**
 * Copies the runtime packages the device bundles import (they are left external by esbuild: native
 * addons and packages that find their files by path) into `DEST/node_modules`, trimmed to what runs:
 *
 * - `webgpu`: package.json, index.js and dist/linux-x64/dawn.node (Dawn for Node).
 * - `node-llama-cpp` with every package it depends on, transitively (resolved as Node resolves them
 *   from node_modules); its llama/ folder keeps only the release JSON files (the llama.cpp sources and
 *   git bundle are for building from source, which `build: 'never'` never does). Type declarations,
 *   source maps and docs are dropped.
 * - `@node-llama-cpp/linux-x64-vulkan` (the prebuilt Vulkan llama.cpp), and with `--cpu` also
 *   `@node-llama-cpp/linux-x64` (the CPU build).
 *
 *   tsx scripts/device/copy-runtime.ts DEST [--cpu]
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NM = join(ROOT, 'node_modules');
const dest = process.argv[2];
if (!dest) {
  console.error('usage: copy-runtime.ts DEST [--cpu]');
  process.exit(2);
}
const withCpu = process.argv.includes('--cpu');
const destNm = resolve(dest, 'node_modules');

/** Files never needed at run time. */
function keep(path: string): boolean {
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (/\.(d\.ts|d\.mts|d\.cts|map|md|markdown|ts)$/.test(base) && !/\.node$/.test(base)) return false;
  if (/^(CHANGELOG|HISTORY|AUTHORS|CONTRIBUTING)/i.test(base)) return false;
  return true;
}

function copyFiltered(from: string, to: string): void {
  cpSync(from, to, {
    recursive: true,
    dereference: true,
    filter: (src) => {
      if (statSync(src).isDirectory()) {
        const b = src.slice(src.lastIndexOf('/') + 1);
        return (
          !['test', 'tests', '__tests__', 'docs', 'example', 'examples', '.github'].includes(b) ||
          src === from
        );
      }
      return keep(src);
    },
  });
}

/** The package directory `name` resolves to from `fromDir`, as Node's node_modules lookup finds it. */
function findPackage(name: string, fromDir: string): string | undefined {
  let d = fromDir;
  for (;;) {
    const p = join(d, 'node_modules', name);
    if (existsSync(join(p, 'package.json'))) return p;
    const up = dirname(d);
    if (up === d || !up.startsWith(ROOT)) return undefined;
    d = up;
  }
}

const packages = new Set<string>();
function walk(dir: string): void {
  if (packages.has(dir)) return;
  packages.add(dir);
  const pj = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  for (const dep of Object.keys({ ...pj.dependencies, ...pj.optionalDependencies })) {
    if (dep.startsWith('@node-llama-cpp/')) continue;
    const p = findPackage(dep, dir);
    if (p) walk(p); // optional platform packages of other systems are absent: fine
  }
}
walk(join(NM, 'node-llama-cpp'));

mkdirSync(destNm, { recursive: true });
let n = 0;
for (const dir of packages) {
  const rel = relative(NM, dir);
  const to = join(destNm, rel);
  if (rel === 'node-llama-cpp') {
    mkdirSync(join(to, 'llama'), { recursive: true });
    for (const f of ['package.json', 'LICENSE']) cpSync(join(dir, f), join(to, f));
    copyFiltered(join(dir, 'dist'), join(to, 'dist'));
    copyFiltered(join(dir, 'bins'), join(to, 'bins'));
    for (const f of readdirSync(join(dir, 'llama')))
      if (f.endsWith('.json')) cpSync(join(dir, 'llama', f), join(to, 'llama', f));
    if (existsSync(join(dir, 'node_modules')))
      copyFiltered(join(dir, 'node_modules'), join(to, 'node_modules'));
  } else {
    copyFiltered(dir, to);
  }
  n++;
}
const prebuilt = ['@node-llama-cpp/linux-x64-vulkan', ...(withCpu ? ['@node-llama-cpp/linux-x64'] : [])];
for (const p of prebuilt) copyFiltered(join(NM, p), join(destNm, p));
const wg = join(NM, 'webgpu');
mkdirSync(join(destNm, 'webgpu/dist/linux-x64'), { recursive: true });
for (const f of ['package.json', 'index.js', 'LICENSE.md']) cpSync(join(wg, f), join(destNm, 'webgpu', f));
cpSync(join(wg, 'dist/linux-x64/dawn.node'), join(destNm, 'webgpu/dist/linux-x64/dawn.node'));
console.error(
  `copied node-llama-cpp and ${n - 1} packages it needs, ${prebuilt.join(', ')}, webgpu into ${destNm}`,
);
