import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';
import { chromiumArgs, resolveChromium } from './src/cli/browser.ts';

const gpu = process.env.WEBGPU_GPU === '1';
/** `../shared` beside the repository (the test model lives in `../shared/models/`). */
const SHARED_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../shared');

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
          testTimeout: 60_000,
        },
      },
      {
        server: { fs: { allow: ['..'] } },
        define: { __SHARED_DIR__: JSON.stringify(SHARED_DIR) },
        test: {
          name: 'browser',
          include: ['src/**/*.browser.test.ts'],
          testTimeout: 120_000,
          globalSetup: ['src/webllm/test-server.ts', 'src/library/test-server.ts'],
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
