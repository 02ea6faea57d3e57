/**
 * The model library in real Chromium: the engine loads URLs through the Origin Private File System cache.
 * The host is src/testing/library-server.ts on 127.0.0.1 (another origin, with CORS), which counts the bytes
 * it sends.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { LoadProgress } from '../core/types.ts';
import type { ServerStats } from '../testing/library-server.ts';
import { WebGpuEngine } from '../webgpu/engine.ts';
import { ModelLibrary } from './library.ts';
import { openModelSource } from './opener.ts';

const server = inject('libraryServer');
const SINGLE = `${server}/range/stories260K.gguf`;
const SPLIT = `${server}/range/stories260K-00001-of-00003.gguf`;
const PROMPT = 'Once upon a time, there was a little';

const control = (what: string) => fetch(`${server}/_control/${what}`);
const stats = async () => (await (await control('stats')).json()) as ServerStats;

async function greedy(engine: WebGpuEngine, n = 24): Promise<number[]> {
  const ids = await engine.tokenize(PROMPT, true);
  return (await engine.generate({ promptTokenIds: ids, maxTokens: n, ignoreEos: true })).outputTokenIds;
}

describe('engine loads through the OPFS model library', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  let reference: number[];

  beforeAll(async () => {
    // The reference: the same model straight from the server, no cache.
    await engine.load({ url: SINGLE });
    reference = await greedy(engine);
  });
  beforeEach(async () => {
    await (await ModelLibrary.open()).clear();
    await control('reset');
  });
  afterAll(() => engine.dispose());

  it('downloads once; the second load sends no bytes (one HEAD) and gives the same tokens', async () => {
    const phases: LoadProgress[] = [];
    const a = await engine.load({ url: SINGLE }, { cache: true, onProgress: (p) => phases.push(p) });
    const size = a.fileBytes as number;
    expect(a.cache).toMatchObject({
      fromCache: false,
      offline: false,
      downloadedBytes: size,
      location: 'OPFS models/',
    });
    expect((await stats()).bodyBytes).toBe(size);
    expect(phases.map((p) => p.phase)).toContain('download');
    expect(phases.find((p) => p.phase === 'download' && p.bytesDone === size)).toBeTruthy();
    expect(await greedy(engine)).toEqual(reference);

    await control('reset');
    const b = await engine.load({ url: SINGLE }, { cache: true });
    expect(b.cache).toMatchObject({ fromCache: true, offline: false, downloadedBytes: 0 });
    const s = await stats();
    expect(s.bodyBytes).toBe(0);
    expect(s.requests.map((r) => r.method)).toEqual(['HEAD']);
    expect(await greedy(engine)).toEqual(reference);

    const [entry] = await (await ModelLibrary.open()).list();
    expect(entry).toMatchObject({ name: 'stories260K.gguf', size, complete: true, parts: 1, url: SINGLE });
  });

  it('with the network gone, the cached copy loads and the load says so', async () => {
    await engine.load({ url: SINGLE }, { cache: true });
    await control('offline?on=1');
    const notes: string[] = [];
    const info = await engine.load(
      { url: SINGLE },
      { cache: true, onProgress: (p) => p.note && notes.push(p.note) },
    );
    await control('offline?on=0');
    expect(info.cache).toMatchObject({ fromCache: true, offline: true });
    expect(notes).toContain('the server cannot be reached: using the cached copy');
    expect(await greedy(engine)).toEqual(reference);
    // Without a cached copy, the same URL offline is a clear network error.
    await (await ModelLibrary.open()).clear();
    await control('offline?on=1');
    let err: unknown;
    try {
      await engine.load({ url: SINGLE }, { cache: true });
    } catch (e) {
      err = e;
    }
    await control('offline?on=0');
    expect(isEngineError(err, 'network'), String(err)).toBe(true);
  });

  it('a flipped byte in the cached copy is detected, the copy fetched again, and the model still right', async () => {
    const a = await engine.load({ url: SINGLE }, { cache: true });
    const size = a.fileBytes as number;
    // Inside the tensor data, then inside the header (block 1's first bytes: the GGUF version field),
    // which must be found by the block's SHA-256 too, not read as a malformed GGUF.
    for (const at of [Math.floor(size * 0.6), 5]) {
      // Damage the stored block in OPFS, as a disk error or a half-written file would.
      const [meta] = await (await ModelLibrary.open()).store.listMeta();
      const dir = await (
        await (await navigator.storage.getDirectory()).getDirectoryHandle('models')
      ).getDirectoryHandle(meta.key);
      const handle = await dir.getFileHandle('000000');
      const bytes = new Uint8Array(await (await handle.getFile()).arrayBuffer());
      bytes[at] ^= 0x04;
      const w = await handle.createWritable();
      await w.write(bytes);
      await w.close();

      await control('reset');
      const notes: string[] = [];
      const b = await engine.load(
        { url: SINGLE },
        { cache: true, onProgress: (p) => p.note && notes.push(p.note) },
      );
      expect(notes.some((n) => /cached copy of stories260K\.gguf is damaged \(block 1 of 1/.test(n))).toBe(
        true,
      );
      expect(b.cache?.fromCache).toBe(false);
      expect((await stats()).bodyBytes).toBe(size);
      expect(await greedy(engine)).toEqual(reference);
    }
  });

  it('a split model (3 parts) loads from its first part, cached or not, with the same greedy tokens', async () => {
    const a = await engine.load({ url: SPLIT }, { cache: true });
    expect(a.fileParts).toBe(3);
    expect(await greedy(engine)).toEqual(reference);
    await control('reset');
    const b = await engine.load({ url: SPLIT }, { cache: true });
    expect(b.cache?.fromCache).toBe(true);
    expect((await stats()).bodyBytes).toBe(0);
    const direct = await engine.load({ url: SPLIT });
    expect(direct.fileParts).toBe(3);
    expect(await greedy(engine)).toEqual(reference);
    const [entry] = await (await ModelLibrary.open()).list();
    expect(entry.parts).toBe(3);
  });

  it('bad URLs end in clear errors and leave the engine usable', async () => {
    for (const [url, code] of [
      // An HTML answer (a dev server's index.html, a login page) is the file not found, by its URL.
      [`${server}/html/model.gguf`, 'http_status'],
      [`${server}/status/404/model.gguf`, 'http_status'],
      [`${server}/status/403/model.gguf`, 'http_status'],
    ] as const) {
      let err: unknown;
      try {
        await engine.load({ url }, { cache: true });
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, code), `${url}: ${err}`).toBe(true);
    }
    expect(await (await ModelLibrary.open()).list()).toEqual([]);
    await engine.load({ url: SINGLE }, { cache: true });
    expect(await greedy(engine)).toEqual(reference);
  });
});
