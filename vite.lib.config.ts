import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const ROOT = dirname(fileURLToPath(import.meta.url));

/**
 * The package's entry points (package.json `exports`): `.` the engine API, `./widget` the `<webgpu-chat>`
 * element, `./openai` the OpenAI-shaped wrapper (`withOpenAI`). Each is `dist/lib/NAME.js` with `dist/lib/NAME.d.ts` beside it.
 */
export const LIB_ENTRIES: Record<string, string> = {
  index: 'src/index.ts',
  widget: 'src/widget/index.ts',
  openai: 'src/core/openai.ts',
};

/** Every `*.d.ts` under `dir`, as paths relative to it. */
function declarations(dir: string, base = dir): string[] {
  return readdirSync(join(base === dir ? dir : base), { withFileTypes: true }).flatMap((e) => {
    const p = join(base, e.name);
    if (e.isDirectory()) return declarations(dir, p);
    return e.name.endsWith('.d.ts') ? [relative(dir, p)] : [];
  });
}

/**
 * Type declarations: `tsc -p tsconfig.lib.json` (TypeScript 7 emits declarations only) into a temporary
 * folder, relative `.ts` imports rewritten to `.js` (tsc keeps them as written in `.d.ts` files), copied to
 * `dist/lib/types/`, and one `NAME.d.ts` per entry that re-exports its module.
 */
function libTypes(): Plugin {
  let outDir = '';
  let done = false;
  return {
    name: 'webgpu-llm-lib-types',
    apply: 'build',
    configResolved(c) {
      outDir = resolve(c.root, c.build.outDir);
    },
    closeBundle() {
      if (done) return;
      done = true;
      const tmp = mkdtempSync(join(tmpdir(), 'webgpu-llm-lib-types-'));
      try {
        execFileSync(resolve(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.lib.json', '--outDir', tmp], {
          cwd: ROOT,
          stdio: 'inherit',
        });
        for (const f of declarations(tmp)) {
          const text = readFileSync(join(tmp, f), 'utf8').replace(
            /((?:from\s+|import\()\s*['"]\.{1,2}\/[^'"]+)\.ts(['"])/g,
            '$1.js$2',
          );
          const to = join(outDir, 'types', f);
          mkdirSync(dirname(to), { recursive: true });
          writeFileSync(to, text);
        }
        for (const [name, entry] of Object.entries(LIB_ENTRIES))
          writeFileSync(
            join(outDir, `${name}.d.ts`),
            `export * from './types/${entry.replace(/\.ts$/, '.js')}';\n`,
          );
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The npm package's library build (`npm pack` runs it through `prepack`): ES modules in `dist/lib/`, one
 * per entry, with what they share in chunks beside them (the engine worker is inlined once, in a chunk both
 * entries import). Every dependency is bundled, so the package needs nothing at run time. The CDN-style
 * single files are `vite.widget.config.ts`'s.
 */
export default defineConfig({
  publicDir: false,
  plugins: [libTypes()],
  worker: { format: 'es', rolldownOptions: { output: { codeSplitting: false } } },
  build: {
    target: 'es2022',
    outDir: 'dist/lib',
    emptyOutDir: true,
    sourcemap: false,
    lib: {
      entry: LIB_ENTRIES,
      formats: ['es'],
      fileName: (_format, name) => `${name}.js`,
    },
  },
});
