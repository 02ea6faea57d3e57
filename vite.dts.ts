import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'vite';

const ROOT = dirname(fileURLToPath(import.meta.url));

/** What {@link typeDeclarations} writes beside a library build's bundles. */
export interface TypeDeclarationOptions {
  /** One `NAME.d.ts` beside the bundles per NAME, re-exporting the declarations of its entry module. */
  entries: Record<string, string>;
  /**
   * The folder that `types/` mirrors: `'.'` keeps the declarations' paths from the repository root
   * (`types/src/core/types.d.ts`), `'src'` from `src/` (`types/core/types.d.ts`).
   */
  root: '.' | 'src';
  /**
   * The declarations to copy: `'all'` every one tsc writes, `'imported'` those of the entries and what they
   * import, transitively (a widget-only build leaves out the engine API's).
   */
  files: 'all' | 'imported';
}

/** Every `*.d.ts` under `dir`, as paths relative to it. */
function declarations(dir: string, base = dir): string[] {
  return readdirSync(base, { withFileTypes: true }).flatMap((e) => {
    const p = join(base, e.name);
    if (e.isDirectory()) return declarations(dir, p);
    return e.name.endsWith('.d.ts') ? [relative(dir, p)] : [];
  });
}

/** A relative import or `import()` type in a declaration file: the specifier. */
const RELATIVE_IMPORT = /(?:from\s+|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g;

/** The declarations under `dir` (paths relative to it) of `entries` and of what they import, transitively. */
function imported(dir: string, entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const todo = [...entries];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    if (seen.has(f)) continue;
    const path = join(dir, f);
    if (!existsSync(path)) throw new Error(`type declarations: tsc wrote no ${f}`);
    seen.add(f);
    for (const [, spec] of readFileSync(path, 'utf8').matchAll(RELATIVE_IMPORT))
      todo.push(`${join(dirname(f), spec).replace(/\.(ts|js)$/, '')}.d.ts`);
  }
  return [...seen].sort();
}

/**
 * The type declarations of a library build (`vite.lib.config.ts`, `vite.widget.config.ts`): `tsc -p
 * tsconfig.lib.json` (TypeScript 7 emits declarations only) into a temporary folder, relative `.ts`
 * imports rewritten to `.js` (tsc keeps them as written in `.d.ts` files), copied to `types/` in the
 * build's output folder, and one `NAME.d.ts` per entry that re-exports its module.
 */
export function typeDeclarations({ entries, root, files }: TypeDeclarationOptions): Plugin {
  let outDir = '';
  let done = false;
  return {
    name: 'webgpu-llm-type-declarations',
    apply: 'build',
    configResolved(c) {
      outDir = resolve(c.root, c.build.outDir);
    },
    closeBundle() {
      if (done) return;
      done = true;
      const tmp = mkdtempSync(join(tmpdir(), 'webgpu-llm-types-'));
      try {
        execFileSync(resolve(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.lib.json', '--outDir', tmp], {
          cwd: ROOT,
          stdio: 'inherit',
        });
        const from = join(tmp, root);
        const dts = Object.values(entries).map((e) => relative(root, e).replace(/\.ts$/, '.d.ts'));
        for (const f of files === 'all' ? declarations(from) : imported(from, dts)) {
          const text = readFileSync(join(from, f), 'utf8').replace(
            /((?:from\s+|import\()\s*['"]\.{1,2}\/[^'"]+)\.ts(['"])/g,
            '$1.js$2',
          );
          const to = join(outDir, 'types', f);
          mkdirSync(dirname(to), { recursive: true });
          writeFileSync(to, text);
        }
        for (const [name, entry] of Object.entries(entries))
          writeFileSync(
            join(outDir, `${name}.d.ts`),
            `export * from './types/${relative(root, entry).replace(/\.ts$/, '.js')}';\n`,
          );
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}
