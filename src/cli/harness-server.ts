/**
 * Starts Vite (serving `src/cli/harness.html` and the engine worker) and a headless Chromium page on
 * it, for the command-line tools' browser runtime. A local model file is served by Vite from its path
 * (`/@fs/...`, with HTTP range support).
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { createServer } from 'vite';
import { EngineError } from '../engine/errors.ts';
import { chromiumArgs, resolveChromium } from './browser.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Runs `fn` with a page that has `window.harness` ready. Errors thrown in the page keep their
 * EngineError code. Closes the browser and the server afterwards.
 * @param opts.modelPath absolute path of a local model to serve; `fn` gets its URL.
 */
export async function withHarnessPage<T>(
  opts: { gpu?: boolean; chromium?: string; modelPath?: string },
  fn: (page: Page, modelUrl: string) => Promise<T>,
): Promise<T> {
  const allow = [ROOT];
  if (opts.modelPath) allow.push(dirname(opts.modelPath));
  const server = await createServer({
    root: ROOT,
    configFile: false,
    logLevel: 'error',
    server: { port: 0, host: '127.0.0.1', fs: { allow }, hmr: false },
    worker: { format: 'es' },
    optimizeDeps: { noDiscovery: true, include: ['comlink', '@huggingface/gguf'] },
  });
  await server.listen();
  const addr = server.httpServer?.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const base = `http://127.0.0.1:${port}`;
  const browser = await chromium.launch({
    executablePath: resolveChromium(opts.chromium).path,
    args: chromiumArgs({ gpu: opts.gpu }),
    headless: true,
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/src/cli/harness.html`);
    await page.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
    const modelUrl = opts.modelPath ? `${base}/@fs${opts.modelPath}` : '';
    try {
      return await fn(page, modelUrl);
    } catch (e) {
      const m = /EngineError[^:]*: ?(.*)/s.exec(String((e as Error).message));
      const code =
        /\b(webgpu_unavailable|feature_missing|device_lost|out_of_memory|gguf_invalid|unsupported_model|context_overflow|network|timeout|http_status|aborted|invalid_argument|not_loaded)\b/.exec(
          String(e),
        );
      if (code) throw new EngineError(code[1] as never, m ? m[1] : String(e));
      throw e;
    }
  } finally {
    await browser.close();
    await server.close();
  }
}
