import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const ROOT = dirname(fileURLToPath(import.meta.url));

/**
 * Writes the widget's type declarations beside the bundles: `webgpu-chat.d.ts` re-exports
 * `types/widget/index.d.ts` (from `tsc -p tsconfig.widget.json`; imports rewritten to `.js`).
 */
function widgetTypes(): Plugin {
  let outDir = '';
  let done = false;
  return {
    name: 'webgpu-chat-types',
    apply: 'build',
    configResolved(c) {
      outDir = resolve(c.root, c.build.outDir);
    },
    closeBundle() {
      if (done) return;
      done = true;
      const tmp = mkdtempSync(join(tmpdir(), 'webgpu-chat-types-'));
      try {
        execFileSync(
          resolve(ROOT, 'node_modules/.bin/tsc'),
          ['-p', 'tsconfig.widget.json', '--outDir', tmp],
          {
            cwd: ROOT,
            stdio: 'inherit',
          },
        );
        const files = ['widget/index', 'widget/element', 'widget/backends', 'widget/registry', 'core/types'];
        for (const f of files) {
          const text = readFileSync(join(tmp, 'src', `${f}.d.ts`), 'utf8').replace(
            /(from\s+'\.{1,2}\/[^']+)\.ts'/g,
            "$1.js'",
          );
          mkdirSync(dirname(join(outDir, 'types', f)), { recursive: true });
          writeFileSync(join(outDir, 'types', `${f}.d.ts`), text);
        }
        writeFileSync(join(outDir, 'webgpu-chat.d.ts'), "export * from './types/widget/index.js';\n");
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The chat widget as a library (`npm run build:widget`): `dist/widget/webgpu-chat.js` (ES module) and
 * `dist/widget/webgpu-chat.iife.js` (a classic script that sets `window.WebGpuChat`), each one
 * self-contained file: the engine worker is inlined. Types: `dist/widget/webgpu-chat.d.ts`. Built after
 * the page (`vite build` empties `dist/`), so the page's preview server serves the widget and
 * `dist/widget-demo.html` beside it.
 */
export default defineConfig({
  publicDir: false,
  plugins: [widgetTypes()],
  // One file each: the worker's and the entry's lazy imports are inlined (no chunks beside them).
  worker: { format: 'es', rolldownOptions: { output: { codeSplitting: false } } },
  build: {
    target: 'es2022',
    outDir: 'dist/widget',
    emptyOutDir: true,
    sourcemap: false,
    rolldownOptions: { output: { codeSplitting: false } },
    lib: {
      entry: 'src/widget/index.ts',
      name: 'WebGpuChat',
      formats: ['es', 'iife'],
      fileName: (format) => (format === 'es' ? 'webgpu-chat.js' : `webgpu-chat.${format}.js`),
    },
  },
});
