/**
 * Behind Vite's dev server (the command line's browser runtime, `npm run dev`), a missing model file is a
 * 404, not the app's index.html: so a split model with a part missing says the part is missing, by its
 * path, instead of "an HTML page" at an internal `/@fs/` address.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer, preview } from 'vite';
import { afterAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import { testModelFiles } from '../testing/library-server.ts';
import { missingFilesAre404 } from './vite-not-found.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'vite-not-found-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('missingFilesAre404', () => {
  it('a missing /@fs/ file or .gguf is a 404; a present one is served with ranges', async () => {
    writeFileSync(join(dir, 'here.gguf'), 'GGUF-here');
    const server = await createServer({
      root: ROOT,
      configFile: false,
      logLevel: 'error',
      server: { port: 0, host: '127.0.0.1', fs: { allow: [ROOT, dir] }, hmr: false },
      plugins: [missingFilesAre404()],
    });
    await server.listen();
    try {
      const addr = server.httpServer?.address();
      const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const missing = await fetch(`${base}/@fs${dir}/gone-00002-of-00003.gguf`);
      // Before: 200 with index.html (Vite's single-page fallback).
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe(`not found: /@fs${dir}/gone-00002-of-00003.gguf`);
      expect((await fetch(`${base}/models/gone.gguf`)).status).toBe(404);
      const here = await fetch(`${base}/@fs${dir}/here.gguf`, { headers: { Range: 'bytes=0-3' } });
      expect(here.status).toBe(206);
      expect(await here.text()).toBe('GGUF');
      expect((await fetch(`${base}/`)).status).toBe(200); // the app itself is untouched
    } finally {
      await server.close();
    }
  });

  it("npm run dev's server (vite.config.ts): a missing model URL is a typed error saying it was not found", async () => {
    const server = await createServer({
      root: ROOT,
      configFile: join(ROOT, 'vite.config.ts'),
      logLevel: 'error',
      server: { port: 0, host: '127.0.0.1', hmr: false },
    });
    await server.listen();
    try {
      const addr = server.httpServer?.address();
      const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const error = async (url: string) => {
        const e = await openGguf({ url }).then(
          () => undefined,
          (x: unknown) => x,
        );
        if (!isEngineError(e)) throw new Error(`expected an EngineError, got ${String(e)}`);
        return e;
      };
      // A .gguf path that is not there: a 404, never the page's index.html. (Not stories260K.gguf: npm run
      // setup links the test model into the repository's models/, which this server serves.)
      const missing = await error(`${base}/models/no-such-model.gguf`);
      expect(missing.code).toBe('http_status');
      expect(missing.message).toBe(
        `downloading ${base}/models/no-such-model.gguf failed with HTTP 404 Not Found: no file at this URL (check it)`,
      );
      // Any other path gets the app's index.html (Vite's single-page fallback, status 200): before, "not a
      // GGUF file: it starts with "<!do""; now the file was not found, by its URL.
      const fallback = await error(`${base}/models/no-such-model`);
      expect(fallback.code).toBe('http_status');
      expect(fallback.message).toMatch(
        new RegExp(
          `^${base}/models/no-such-model was not found: the server answered with an HTML page instead of a GGUF file`,
        ),
      );
      expect(fallback.message).not.toMatch(/not a GGUF file|<!do/i);
    } finally {
      await server.close();
    }
  });

  it('npm run preview (the widget demo): a missing model in the built folder is a 404, not index.html', async () => {
    const out = join(dir, 'built');
    mkdirSync(join(out, 'models'), { recursive: true });
    writeFileSync(join(out, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(out, 'models', 'here.gguf'), 'GGUF-here');
    const server = await preview({
      root: ROOT,
      configFile: join(ROOT, 'vite.config.ts'),
      logLevel: 'error',
      build: { outDir: out },
      preview: { port: 0, host: '127.0.0.1', open: false },
    });
    try {
      const addr = server.httpServer.address();
      const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const missing = await fetch(`${base}/models/stories260K.gguf`);
      // Before: 200 with the app's index.html (the preview server's single-page fallback).
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe('not found: /models/stories260K.gguf');
      expect(await (await fetch(`${base}/models/here.gguf`)).text()).toBe('GGUF-here');
      expect((await fetch(`${base}/`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('npm run generate (browser runtime), a split model with part 2 missing: says so, by its path', async () => {
    const files = await testModelFiles();
    for (const k of [1, 3]) {
      const name = `stories260K-0000${k}-of-00003.gguf`;
      writeFileSync(join(dir, name), files.get(name) as Uint8Array);
    }
    const r = await new Promise<{ code: number; stderr: string }>((ok) =>
      execFile(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/cli/generate.ts',
          '--model',
          join(dir, 'stories260K-00001-of-00003.gguf'),
          '--prompt',
          'Once',
        ],
        { cwd: ROOT, timeout: 120_000 },
        (err, _out, stderr) => ok({ code: err ? Number(err.code) : 0, stderr }),
      ),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error [invalid_argument]: split part 2 of 3 is missing: ${join(dir, 'stories260K-00002-of-00003.gguf')} was not found (no such file)`,
    );
    expect(r.stderr).not.toMatch(/HTML|@fs|127\.0\.0\.1/);
  });
});
