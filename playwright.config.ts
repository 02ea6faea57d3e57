import { defineConfig } from '@playwright/test';
import { chromiumArgs, resolveChromium } from './src/cli/browser.ts';

/**
 * End-to-end tests against the built app (`npm run test:e2e` builds first), served by `vite preview`,
 * in the Chromium that `resolveChromium()` finds (never a downloaded one).
 */
export default defineConfig({
  testDir: 'e2e',
  workers: 1,
  reporter: 'list',
  timeout: 60_000,
  use: {
    baseURL: 'http://localhost:4173',
    trace: 'off',
  },
  webServer: {
    command: 'npx vite preview --port 4173 --strictPort',
    url: 'http://localhost:4173',
    reuseExistingServer: !process.env.CI,
    timeout: 60_000,
  },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        viewport: { width: 1280, height: 800 },
        launchOptions: { executablePath: resolveChromium().path, args: chromiumArgs() },
      },
    },
  ],
});
