import { dirname } from 'node:path';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';
import { chromiumArgs, resolveChromium } from './src/cli/browser.ts';
import { findStories260K, stories260kMissingMessage } from './src/testing/models.ts';

const gpu = process.env.WEBGPU_GPU === '1';
/**
 * The test model, where src/testing/models.ts finds it ($STORIES260K, models/, ../shared/models/); browser
 * tests fetch it from Vite's `/@fs/` (src/testing/stories260k-url.ts), so its folder is served too.
 */
const STORIES260K = findStories260K();

export default defineConfig({
  server: { fs: { allow: ['..'] } },
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          environment: 'node',
          include: ['src/**/*.test.ts', 'scripts/**/*.test.ts'],
          exclude: ['**/*.browser.test.ts', 'node_modules/**'],
          // `npm test` runs these beside the end-to-end tests (scripts/test-side-by-side.mjs): a test that
          // takes 40 s alone on a 2-core machine needs more than Vitest's default there.
          testTimeout: 180_000,
        },
      },
      {
        server: { fs: { allow: ['..', ...(STORIES260K ? [dirname(STORIES260K)] : [])] } },
        // Imported lazily (src/model/grammar.ts): pre-bundled up front, or Vite finds it mid-run and
        // reloads the page under the test.
        optimizeDeps: { include: ['@mlc-ai/web-xgrammar'] },
        define: {
          __STORIES260K__: JSON.stringify(STORIES260K ?? ''),
          __STORIES260K_MISSING__: JSON.stringify(STORIES260K ? '' : stories260kMissingMessage()),
        },
        test: {
          name: 'browser',
          include: ['src/**/*.browser.test.ts'],
          testTimeout: 120_000,
          // Set-up hooks load models: on SwiftShader with 2 cores two loads of stories260K (shader
          // compilation) took 28-31 s, past vitest's 30 s default.
          hookTimeout: 120_000,
          globalSetup: ['src/testing/webllm-server.ts', 'src/testing/library-server.ts'],
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: { executablePath: resolveChromium().path, args: chromiumArgs({ gpu }) },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
