/**
 * Starts Vite (serving `src/cli/harness.html` and the engine worker) and a headless Chromium page on
 * it, for the command-line tools' browser runtime. A local model file is served by Vite from its path
 * (`/@fs/...`, with HTTP range support; a missing one is a 404), and errors name it by that path.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { createServer } from 'vite';
import { EngineError, type EngineErrorCode, type EngineErrorDetails } from '../core/errors.ts';
import { checkGgufHead } from '../gguf/reader.ts';
import { chromiumArgs, launchChromium } from './browser.ts';
import { missingFilesAre404 } from './vite-not-found.ts';

/** An error as a page hands it back through `page.evaluate` (a plain object: its class is lost). */
export interface PageError {
  name?: string;
  code?: unknown;
  message: string;
  details?: unknown;
}

/**
 * The error a page handed back, rebuilt on this side: an EngineError with its code and details where it
 * was one (by name, with a string code; a DOMException's numeric `code` is no EngineErrorCode), else a
 * plain Error with its message.
 */
export function errorFromPage(e: PageError): Error {
  if (e.name !== 'EngineError' || typeof e.code !== 'string' || !e.code) return new Error(e.message);
  const details = e.details && typeof e.details === 'object' ? (e.details as EngineErrorDetails) : undefined;
  return new EngineError(e.code as EngineErrorCode, e.message, details ? { details } : undefined);
}

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
  const browser = await launchChromium((o) => chromium.launch(o), opts.chromium, {
    args: chromiumArgs({ gpu: opts.gpu }),
    headless: true,
  }).catch(async (e) => {
    await server.close();
    throw e;
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/src/cli/harness.html`);
    await page.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
    const urlOf = (path: string) => `${base}/@fs${encodePath(path)}`;
    const modelUrl = opts.modelPath ? urlOf(opts.modelPath) : '';
    try {
      return await fn(page, modelUrl, urlOf);
    } catch (e) {
      throw localFileError(e, base);
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

/** A path as a URL's path: each segment percent-encoded (spaces, `#`, `?`, `%` in a file name). */
function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/**
 * An error from the page, said as the Node runtime says it (issue 47). Local files are named by their
 * paths as typed (the model, a split model's other parts beside it), never by the address this server
 * gave them (`BASE/@fs/...`, percent-encoded: a space shown as %20). And where the page could only see
 * an HTTP answer (`http_status`: a 404 for a directory, "an HTML page" for an HTML file), a local path it
 * names is checked here as Node's loader checks it ({@link asNodeSaysIt}).
 */
export function localFileError(e: unknown, base: string): unknown {
  if (!(e instanceof Error)) return e;
  const paths: string[] = [];
  const served = new RegExp(`${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/@fs(/[^\\s"'<>():;,]*)`, 'g');
  e.message = e.message.replace(served, (_, encoded: string) => {
    let path = encoded;
    try {
      path = decodeURIComponent(encoded);
    } catch {
      // not percent-encoding after all: shown as it is
    }
    paths.push(path);
    return path;
  });
  return asNodeSaysIt(e, paths);
}

/**
 * `e` said as the Node runtime would say it when it is an `http_status` from the page about one of the
 * local files `paths` (already named by path in its message): a directory is "not a regular file"
 * (invalid_argument), a file that is no GGUF is checkGgufHead's gguf_invalid, a missing one "was not found
 * (no such file)" (invalid_argument); a leading "split part K of N" is kept. Anything else: `e` itself.
 */
export function asNodeSaysIt(e: unknown, paths: readonly string[]): unknown {
  if (!(e instanceof EngineError) || e.code !== 'http_status') return e;
  for (const path of paths) {
    if (!e.message.includes(path)) continue;
    // A file that is not there: Node's words ("no such file") and code for the page's 404.
    if (!existsSync(path) && e.message.includes(`${path} was not found (HTTP 404)`)) {
      return new EngineError(
        'invalid_argument',
        e.message.replace(`${path} was not found (HTTP 404)`, `${path} was not found (no such file)`),
        { cause: e },
      );
    }
    const problem = nodeFileProblem(path);
    if (!problem) continue;
    const part = /^split part \d+ of \d+/.exec(e.message)?.[0];
    return new EngineError(problem.code, part ? `${part} (${path}): ${problem.message}` : problem.message, {
      cause: e,
    });
  }
  return e;
}

/** What Node's loader would say of the local file `path` (undefined: none there, or it reads as GGUF). */
function nodeFileProblem(path: string): EngineError | undefined {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    return undefined; // missing: the page's "was not found (HTTP 404)" is right
  }
  if (!st.isFile())
    return new EngineError('invalid_argument', `cannot open model file ${path}: not a regular file`);
  const head = new Uint8Array(8);
  let n = 0;
  try {
    const fd = openSync(path, 'r');
    try {
      n = readSync(fd, head, 0, 8, 0);
    } finally {
      closeSync(fd);
    }
    checkGgufHead(head.subarray(0, n), path);
  } catch (x) {
    return x instanceof EngineError ? x : undefined;
  }
  return undefined;
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
        const err = e as { name?: string; code?: unknown; message?: string; details?: unknown };
        return {
          ok: false,
          error: { name: err.name, code: err.code, message: err.message ?? String(e), details: err.details },
        };
      }
    },
    [method, args] as const,
  )) as { ok: true; value: T } | { ok: false; error: PageError };
  if (r.ok) return r.value;
  throw errorFromPage(r.error);
}
