/**
 * Behind Vite's dev server (the command line's browser runtime, `npm run dev`), a missing model file is a
 * 404, not the app's index.html: so a split model with a part missing says the part is missing, by its
 * path, instead of "an HTML page" at an internal `/@fs/` address.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'vite';
import { afterAll, describe, expect, it } from 'vitest';
import { testModelFiles } from '../library/test-server.ts';
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
      `error [http_status]: split part 2 of 3 is missing: ${join(dir, 'stories260K-00002-of-00003.gguf')} was not found (HTTP 404)`,
    );
    expect(r.stderr).not.toMatch(/HTML|@fs|127\.0\.0\.1/);
  });
});
