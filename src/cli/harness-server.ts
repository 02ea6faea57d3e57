/**
 * Starts Vite (serving `src/cli/harness.html` and the engine worker) and a headless Chromium page on
 * it, for the command-line tools' browser runtime. A local model file is served by Vite from its path
 * (`/@fs/...`, with HTTP range support; a missing one is a 404), and errors name it by that path.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { createServer } from 'vite';
import { EngineError, type EngineErrorCode } from '../core/errors.ts';
import { chromiumArgs, resolveChromium } from './browser.ts';
import { missingFilesAre404 } from './vite-not-found.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Runs `fn` with a page that has `window.harness` ready. Errors thrown in the page keep their
 * EngineError code. Closes the browser and the server afterwards.
 * @param opts.modelPath absolute path of a local model to serve; `fn` gets its URL.
 */
export async function withHarnessPage<T>(
  opts: { gpu?: boolean; chromium?: string; modelPath?: string; otherPaths?: string[] },
  fn: (page: Page, modelUrl: string, urlOf: (path: string) => string) => Promise<T>,
): Promise<T> {
  const allow = [ROOT];
  if (opts.modelPath) allow.push(dirname(opts.modelPath));
  for (const p of opts.otherPaths ?? []) allow.push(dirname(p));
  const server = await createServer({
    root: ROOT,
    configFile: false,
    logLevel: 'error',
    server: { port: 0, host: '127.0.0.1', fs: { allow }, hmr: false },
    worker: { format: 'es' },
    optimizeDeps: { noDiscovery: true, include: ['comlink', '@huggingface/gguf'] },
    // A missing file (a split model's absent part) is a 404, not Vite's index.html fallback.
    plugins: [missingFilesAre404()],
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
      return await fn(page, modelUrl, (path) => `${base}/@fs${path}`);
    } catch (e) {
      // Name local files by their paths (the model, and a split model's other parts beside it), never by
      // the internal address this server gave them.
      if (e instanceof Error) e.message = e.message.split(`${base}/@fs`).join('');
      throw e;
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

/**
 * Calls `window.harness[method](...args)` in the page. An error thrown there comes back as an
 * EngineError with its code (page.evaluate alone would keep only the message).
 */
export async function callHarness<T>(page: Page, method: string, ...args: unknown[]): Promise<T> {
  const r = (await page.evaluate(
    async ([m, a]) => {
      try {
        const h = (window as unknown as { harness: Record<string, (...x: unknown[]) => Promise<unknown>> })
          .harness;
        return { ok: true, value: await h[m as string](...(a as unknown[])) };
      } catch (e) {
        const err = e as { name?: string; code?: string; message?: string };
        return { ok: false, error: { name: err.name, code: err.code, message: err.message ?? String(e) } };
      }
    },
    [method, args] as const,
  )) as { ok: true; value: T } | { ok: false; error: { name?: string; code?: string; message: string } };
  if (r.ok) return r.value;
  if (r.error.name === 'EngineError' && r.error.code)
    throw new EngineError(r.error.code as EngineErrorCode, r.error.message);
  throw new Error(r.error.message);
}
