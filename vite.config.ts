import { defineConfig } from 'vite';
import { missingFilesAre404 } from './src/cli/vite-not-found.ts';

export default defineConfig({
  build: { target: 'es2022', sourcemap: true },
  worker: { format: 'es' },
  server: { fs: { allow: ['..'] } },
  // A missing model file (a split model's absent part) is a 404, not the app's index.html.
  plugins: [missingFilesAre404()],
});
