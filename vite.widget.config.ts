import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { typeDeclarations } from './vite.dts.ts';

/**
 * The chat widget as a library (`npm run build:widget`): `dist/widget/webgpu-chat.js` (ES module) and
 * `dist/widget/webgpu-chat.iife.js` (a classic script that sets `window.WebGpuChat`), each one
 * self-contained file: the engine worker is inlined. Types: `dist/widget/webgpu-chat.d.ts`. Built after
 * the page (`vite build` empties `dist/`), so the page's preview server serves the widget and
 * `dist/widget-demo.html` beside it.
 */
export default defineConfig({
  // The grammar library (structured output) is left out of the packaged engine worker: see the stub.
  resolve: {
    alias: {
      '@mlc-ai/web-xgrammar': fileURLToPath(new URL('./src/model/xgrammar-absent.ts', import.meta.url)),
    },
  },
  publicDir: false,
  // Declarations: the widget's and what they import, in dist/widget/types/ (mirroring src/).
  plugins: [
    typeDeclarations({ entries: { 'webgpu-chat': 'src/widget/index.ts' }, root: 'src', files: 'imported' }),
  ],
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
