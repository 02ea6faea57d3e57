import { defineConfig } from '@playwright/test';
import { chromiumArgs, resolveChromium } from './src/cli/browser.ts';

/** The port `vite preview` serves this checkout's build on (`E2E_PORT`, default 4173). */
const PORT = Number(process.env.E2E_PORT ?? 4173);

/**
 * End-to-end tests against the built app (`npm run test:e2e` builds first), served by `vite preview`,
 * in the Chromium that `resolveChromium()` finds (never a downloaded one). The server is never reused:
 * a server already on the port (another checkout's `vite preview`) would be tested in this build's
 * place, so the run stops and says the port is taken instead (set E2E_PORT to use another).
 */
export default defineConfig({
  testDir: 'e2e',
  workers: 1,
  reporter: 'list',
  // `npm test` runs these beside the unit tests (scripts/test-side-by-side.mjs): the slowest take 45 s alone.
  timeout: 120_000,
  use: {
    baseURL: `http://localhost:${PORT}`,
    trace: 'off',
    // The page's engine default is Auto, which on SwiftShader runs models on wllama; the specs test our
    // WebGPU engine, so they start as a user who picked it (e2e/cpu-compare.spec.ts tests the default).
    storageState: {
      cookies: [],
      origins: [
        {
          origin: `http://localhost:${PORT}`,
          localStorage: [{ name: 'webgpu-llm-bench:engine', value: 'webgpu' }],
        },
      ],
    },
  },
  webServer: {
    command: `npx vite preview --port ${PORT} --strictPort`,
    url: `http://localhost:${PORT}`,
    reuseExistingServer: false,
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
