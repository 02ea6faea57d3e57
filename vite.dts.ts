import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  /** The declarations to copy, relative to `root` and without `.d.ts`; default every one tsc writes. */
  files?: readonly string[];
}

/** Every `*.d.ts` under `dir`, as paths relative to it. */
function declarations(dir: string, base = dir): string[] {
  return readdirSync(base, { withFileTypes: true }).flatMap((e) => {
    const p = join(base, e.name);
    if (e.isDirectory()) return declarations(dir, p);
    return e.name.endsWith('.d.ts') ? [relative(dir, p)] : [];
  });
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
        for (const f of files?.map((f) => `${f}.d.ts`) ?? declarations(from)) {
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
