import { defineConfig } from 'vite';

/**
 * The chat widget as a library (`npm run build:widget`): `dist/widget/webgpu-chat.js` (ES module) and
 * `dist/widget/webgpu-chat.iife.js` (a classic script that sets `window.WebGpuChat`), each self-contained:
 * the engine worker is inlined. Built after the page (`vite build` empties `dist/`), so the page's
 * preview server serves the widget and `dist/widget-demo.html` beside it.
 */
export default defineConfig({
  publicDir: false,
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
