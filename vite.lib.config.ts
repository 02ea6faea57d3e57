import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { typeDeclarations } from './vite.dts.ts';

/**
 * The package's entry points (package.json `exports`): `.` the engine API, `./widget` the `<webgpu-chat>`
 * element, `./openai` the OpenAI-shaped wrapper (`withOpenAI`). Each is `dist/lib/NAME.js` with `dist/lib/NAME.d.ts` beside it.
 */
export const LIB_ENTRIES: Record<string, string> = {
  index: 'src/index.ts',
  widget: 'src/widget/index.ts',
  openai: 'src/core/openai.ts',
};

/**
 * The npm package's library build (`npm pack` runs it through `prepack`): ES modules in `dist/lib/`, one
 * per entry, with what they share in chunks beside them (the engine worker is inlined once, in a chunk both
 * entries import). Every dependency is bundled, so the package needs nothing at run time. The CDN-style
 * single files are `vite.widget.config.ts`'s.
 */
export default defineConfig({
  // The grammar library (structured output) is left out of the packaged engine worker: see the stub.
  resolve: {
    alias: {
      '@mlc-ai/web-xgrammar': fileURLToPath(new URL('./src/model/xgrammar-absent.ts', import.meta.url)),
    },
  },
  publicDir: false,
  // Declarations: every one tsc writes for tsconfig.lib.json, in dist/lib/types/src/.
  plugins: [typeDeclarations({ entries: LIB_ENTRIES, root: '.', files: 'all' })],
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
