/** The command line's static server: range parsing, range and HEAD requests, no escape from the root. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTempDirs } from '../testing/temp-dir.ts';
import { parseRange, type StaticServer, startStaticServer } from './static-server.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

describe('parseRange', () => {
  it('reads one byte range against a size', () => {
    expect(parseRange(undefined, 10)).toBeUndefined();
    expect(parseRange('bytes=0-3', 10)).toEqual({ start: 0, end: 3 });
    expect(parseRange('bytes=4-', 10)).toEqual({ start: 4, end: 9 });
    expect(parseRange('bytes=5-100', 10)).toEqual({ start: 5, end: 9 });
    expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
    expect(parseRange('bytes=10-', 10)).toBeNull();
    expect(parseRange('bytes=5-2', 10)).toBeNull();
    expect(parseRange('items=0-1', 10)).toBeUndefined();
  });
});

describe('startStaticServer', () => {
  const dir = tempDir('static-');
  writeFileSync(join(dir, 'index.html'), '<p>hi</p>');
  const model = join(tempDir('model-'), 'm.gguf');
  writeFileSync(model, Buffer.from('GGUF0123456789'));
  let s: StaticServer;
  afterAll(() => s?.close());

  it('serves the root, a model with ranges and HEAD, and nothing outside', async () => {
    s = await startStaticServer(dir);
    const index = await fetch(`${s.base}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/text\/html/);
    expect(await index.text()).toBe('<p>hi</p>');
    const url = s.addModel(model);
    expect(url).toBe(`${s.base}/__model/m.gguf`);
    const part = await fetch(url, { headers: { Range: 'bytes=4-7' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 4-7/14');
    expect(await part.text()).toBe('0123');
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe('14');
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect((await fetch(url, { headers: { Range: 'bytes=20-' } })).status).toBe(416);
    expect((await fetch(`${s.base}/__model/other.gguf`)).status).toBe(404);
    expect((await fetch(`${s.base}/%2e%2e/%2e%2e/etc/passwd`)).status).toBeGreaterThanOrEqual(400);
  });

  it('a split model: the other parts are served beside the first, missing ones are 404, and messages name paths', async () => {
    const d = tempDir('static-split-');
    const first = join(d, 'x-00001-of-00003.gguf');
    writeFileSync(first, 'GGUF1');
    writeFileSync(join(d, 'x-00003-of-00003.gguf'), 'GGUF3');
    const url = s.addModel(first);
    const third = url.replace('00001-of', '00003-of');
    expect(await (await fetch(third)).text()).toBe('GGUF3');
    const second = url.replace('00001-of', '00002-of');
    expect((await fetch(second)).status).toBe(404);
    // Before: only the first part's URL was turned back into a path; a message about part 2 kept
    // http://127.0.0.1:PORT/__model/x-00002-of-00003.gguf.
    expect(s.localPaths(`split part 2 of 3 is missing: ${second} was not found (HTTP 404)`)).toBe(
      `split part 2 of 3 is missing: ${join(d, 'x-00002-of-00003.gguf')} was not found (HTTP 404)`,
    );
    expect(s.localPaths(`${url} and ${third}`)).toBe(`${first} and ${join(d, 'x-00003-of-00003.gguf')}`);
  });
});
