import { defineConfig } from 'vite';
import { missingFilesAre404 } from './src/cli/vite-not-found.ts';

export default defineConfig({
  build: { target: 'es2022', sourcemap: true },
  worker: { format: 'es' },
  server: { fs: { allow: ['..'] } },
  // The first `npm run dev` pre-bundles every dependency at once: Vite's scan starts from the HTML pages
  // and does not follow `new Worker(new URL(...))`, so a dependency only the workers import (comlink's
  // peers in the engine, @huggingface/jinja, hash-wasm, xgrammar, WebLLM's worker) was found while the
  // page loaded, re-bundled, and the page's in-flight imports got "504 Outdated Optimize Dep": a blank
  // panel until a reload (issue 46). The workers are entries of the scan too.
  optimizeDeps: {
    entries: ['index.html', 'src/bench/wllama.html', 'src/cli/harness.html', 'workers/*.worker.ts'],
  },
  // A missing model file (a split model's absent part) is a 404, not the app's index.html.
  plugins: [missingFilesAre404()],
});
