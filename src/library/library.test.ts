/**
 * The model library in Node (FsStore), against a local server that counts the bytes it sends
 * (src/testing/library-server.ts): download once, freshness check only on the second load, resume after a
 * cut, damaged copies detected, split models, Hugging Face shorthands, and the bad-input errors.
 */

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import { collectTensorData, errorOf } from '../testing/gguf-util.ts';
import { type ModelServer, startModelServer, testModelFiles } from '../testing/library-server.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { ModelLibrary } from './library.ts';
import { openModelFile } from './open.ts';
import { hfResolveUrl, parseHfShorthand, resolveModelSpec } from './spec.ts';
import { type CacheStore, type EntryMeta, entryKey, FsStore, LOCK_STALE_MS } from './store.ts';

const KiB = 1024;
let server: ModelServer;
let files: Map<string, Uint8Array>;
const model = () => files.get('stories260K.gguf') as Uint8Array;
const dirs: string[] = [];

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'model-lib-'));
  dirs.push(d);
  return d;
}

/** A library in a fresh directory: 64 KiB blocks, 256 KiB requests, no retry delay. */
async function lib(opts: { dir?: string; retries?: number; fetch?: typeof fetch; store?: CacheStore } = {}) {
  const store = opts.store ?? (await FsStore.open(opts.dir ?? tmp()));
  return new ModelLibrary(store, {
    blockBytes: 64 * KiB,
    requestBytes: 256 * KiB,
    retries: opts.retries ?? 3,
    retryDelayMs: () => 1,
    hfEndpoint: server.url,
    fetch: opts.fetch,
  });
}

/** Every byte of every tensor, through the library's verified reader. */
async function tensorsVia(parts: Parameters<typeof openModelFile>[0]) {
  return (await collectTensorData(await openModelFile(parts))).data;
}

beforeAll(async () => {
  files = await testModelFiles();
  server = await startModelServer(files);
});
afterAll(async () => {
  await server.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeEach(() => server.reset());

describe('specs', () => {
  it('resolves hf: shorthands and Hugging Face page URLs to download URLs', () => {
    expect(
      parseHfShorthand('hf:bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf'),
    ).toEqual({
      repo: 'bartowski/Llama-3.2-1B-Instruct-GGUF',
      path: 'Llama-3.2-1B-Instruct-Q4_K_M.gguf',
      revision: 'main',
    });
    const r = resolveModelSpec('hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/sub dir/q4_k_m.gguf@v1.0');
    expect(r.url).toBe(
      'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/v1.0/sub%20dir/q4_k_m.gguf',
    );
    expect(r.hf).toEqual({
      repo: 'Qwen/Qwen2.5-0.5B-Instruct-GGUF',
      path: 'sub dir/q4_k_m.gguf',
      revision: 'v1.0',
    });
    // The page URL people copy serves HTML; it becomes the resolve URL.
    expect(resolveModelSpec('https://huggingface.co/o/r/blob/main/m.gguf').url).toBe(
      'https://huggingface.co/o/r/resolve/main/m.gguf',
    );
    expect(resolveModelSpec('https://example.com/m.gguf?x=1').url).toBe('https://example.com/m.gguf?x=1');
    // Words typed into the URL box are refused, not fetched as a page-relative path (issue 46, item 6).
    for (const typed of ['not a url', 'model', 'localhost']) {
      expect(() => resolveModelSpec(typed, { base: 'http://localhost:4173/' })).toThrow(
        new RegExp(
          `^"${typed}" is not a URL or an hf:OWNER/REPO/FILE\\.gguf shorthand \\(a GGUF URL looks like`,
        ),
      );
    }
    expect(resolveModelSpec('models/m.gguf', { base: 'http://localhost:4173/x/' }).url).toBe(
      'http://localhost:4173/x/models/m.gguf',
    );
    expect(hfResolveUrl({ repo: 'o/r', path: 'a.gguf', revision: 'refs/pr/1' }, 'http://h')).toBe(
      'http://h/o/r/resolve/refs%2Fpr%2F1/a.gguf',
    );
  });

  it('a shorthand that names no file, or no repository, is a clear error', () => {
    for (const [spec, re] of [
      ['hf:owner/repo', /names the repository owner\/repo but no \.gguf file/],
      ['hf:owner/repo/README.md', /no \.gguf file/],
      ['hf:owner', /not a Hugging Face file/],
      ['ftp://x/y.gguf', /only http\(s\)/],
      ['not a url', /not a URL or an hf:/],
    ] as const) {
      let err: unknown;
      try {
        resolveModelSpec(spec);
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, 'invalid_argument'), spec).toBe(true);
      expect((err as Error).message).toMatch(re);
    }
  });
});

describe('download once, then load from the cache', () => {
  it('first load downloads the file; a second downloads nothing beyond a freshness check', async () => {
    const l = await lib();
    const url = `${server.url}/range/stories260K.gguf`;
    const progress: number[] = [];
    const a = await l.acquire(url, {
      onProgress: (p) => p.phase === 'download' && progress.push(p.bytesDone),
    });
    expect(a.fromCache).toBe(false);
    expect(a.downloadedBytes).toBe(model().length);
    expect(server.stats.bodyBytes).toBe(model().length);
    // In range requests of 256 KiB: 5 GETs for 1.1 MB, after one HEAD.
    const gets = server.stats.requests.filter((r) => r.method === 'GET');
    expect(gets.length).toBe(Math.ceil(model().length / (256 * KiB)));
    expect(gets.every((r) => /^bytes=\d+-\d+$/.test(r.range ?? ''))).toBe(true);
    expect(progress.at(-1)).toBe(model().length);
    expect((await tensorsVia({ byteParts: a.parts })).get('output.weight')).toEqual(
      (await collectTensorData(await openGguf({ path: STORIES_PATH }))).data.get('output.weight'),
    );

    server.reset();
    const b = await l.acquire(url);
    expect(b.fromCache).toBe(true);
    expect(b.offline).toBe(false);
    expect(server.stats.bodyBytes).toBe(0);
    expect(server.stats.requests).toEqual([
      { method: 'HEAD', path: '/range/stories260K.gguf', range: undefined },
    ]);
    // A second library over the same directory (a second CLI run) finds it too.
    server.reset();
    const c = await (await lib({ dir: (l.store as FsStore).location })).acquire(url);
    expect(c.fromCache).toBe(true);
    expect(server.stats.bodyBytes).toBe(0);
    // The cached file is the file.
    const path = (l.store as FsStore).filePath(c.parts[0].meta.key);
    expect(createHash('sha256').update(readFileSync(path)).digest('hex')).toBe(
      createHash('sha256').update(model()).digest('hex'),
    );
  });

  it('a file changed on the server (new ETag) is downloaded again', async () => {
    const name = 'changing.gguf';
    server.setFile(name, model());
    const l = await lib();
    await l.acquire(`${server.url}/range/${name}`);
    const changed = model().slice();
    changed[changed.length - 10] ^= 0xff;
    server.setFile(name, changed);
    server.reset();
    const a = await l.acquire(`${server.url}/range/${name}`);
    expect(a.fromCache).toBe(false);
    expect(server.stats.bodyBytes).toBe(changed.length);
    const got = await a.parts[0].read(changed.length - 16, changed.length);
    expect(got).toEqual(changed.subarray(changed.length - 16));
  });

  it('with the network gone, a cached copy is used and says so; without one, the error is clear', async () => {
    const l = await lib();
    const url = `${server.url}/range/stories260K.gguf`;
    await l.acquire(url);
    const dead = (async () => {
      throw new TypeError('fetch failed');
    }) as unknown as typeof fetch;
    const offline = await lib({ dir: (l.store as FsStore).location, fetch: dead });
    const notes: string[] = [];
    const a = await offline.acquire(url, { onProgress: (p) => p.note && notes.push(p.note) });
    expect(a.offline).toBe(true);
    expect(a.fromCache).toBe(true);
    expect(notes.join()).toMatch(/using the cached copy/);
    const e = await errorOf((await lib({ fetch: dead })).acquire(url));
    expect(e.code).toBe('network');
  });
});

describe('resume', () => {
  it('a transfer cut half-way resumes from where it stopped (one run, retried)', async () => {
    const l = await lib();
    const notes: string[] = [];
    const a = await l.acquire(`${server.url}/cut/stories260K.gguf`, {
      onProgress: (p) => p.note && notes.push(p.note),
    });
    expect(a.downloadedBytes).toBe(model().length);
    // The cut came half-way; the retry asked for the rest only (from where the bytes stopped arriving), so
    // the server sent about the file once, not a half plus a whole.
    expect(server.stats.bodyBytes).toBeGreaterThanOrEqual(model().length);
    expect(server.stats.bodyBytes).toBeLessThan(model().length * 1.25);
    // …and that retry started where the bytes stopped, in the middle of a 256 KiB request.
    const starts = server.stats.requests
      .filter((r) => r.method === 'GET')
      .map((r) => Number(/^bytes=(\d+)-/.exec(r.range ?? '')?.[1]));
    expect(starts.some((x) => x > 0 && x % (256 * KiB) !== 0)).toBe(true);
    expect(notes.some((n) => /connection lost .* retrying \(1 of 3\)/.test(n))).toBe(true);
    expect((await tensorsVia({ byteParts: a.parts })).size).toBe(48);
  });

  it('a download cut before its first whole block says nothing was kept (not "0 MB … kept")', async () => {
    const store = await FsStore.open(tmp());
    // One block larger than the file: the cut at half the file leaves no whole block.
    const l = new ModelLibrary(store, {
      blockBytes: 4 * 1024 * KiB,
      requestBytes: 8 * 1024 * KiB,
      retries: 0,
    });
    const e = await errorOf(l.acquire(`${server.url}/cut/stories260K.gguf`));
    expect(e.code).toBe('network');
    expect(e.message).toMatch(
      /after 0 retries; no whole block of 4\.2 MB had arrived, so nothing was kept: try again\)$/,
    );
  });

  it('a download cut with no retries left resumes in the next run from its last whole block', async () => {
    const dir = tmp();
    const url = `${server.url}/cut/stories260K.gguf`;
    // Whole-file requests here: the cut comes at half the file.
    const store = await FsStore.open(dir);
    const first = new ModelLibrary(store, { blockBytes: 64 * KiB, requestBytes: 8 * 1024 * KiB, retries: 0 });
    const e = await errorOf(first.acquire(url));
    expect(e.code).toBe('network');
    expect(e.message).toMatch(
      /after 0 retries; the 0\.\d MB downloaded so far are kept: try again to resume/,
    );
    const [partial] = await first.list();
    expect(partial.complete).toBe(false);
    // A partial download is KEY.gguf.part; only a complete one is KEY.gguf.
    expect(existsSync(store.filePath(partial.key))).toBe(false);
    expect(existsSync(`${store.filePath(partial.key)}.part`)).toBe(true);
    const half = Math.floor(model().length / 2);
    // Whole blocks only, up to where the cut came (how much of the last piece arrived depends on timing).
    expect(partial.storedBytes % (64 * KiB)).toBe(0);
    expect(partial.storedBytes).toBeGreaterThan(0);
    expect(partial.storedBytes).toBeLessThanOrEqual(half);

    // The next run (a new library over the same directory; the server cuts only once).
    const second = new ModelLibrary(await FsStore.open(dir), {
      blockBytes: 64 * KiB,
      requestBytes: 8 * 1024 * KiB,
    });
    server.stats.bodyBytes = 0;
    server.stats.requests = [];
    const notes: string[] = [];
    const a = await second.acquire(url, { onProgress: (p) => p.note && notes.push(p.note) });
    expect(a.downloadedBytes).toBe(model().length - partial.storedBytes);
    expect(server.stats.bodyBytes).toBe(model().length - partial.storedBytes);
    expect(server.stats.requests.find((r) => r.method === 'GET')?.range).toBe(
      `bytes=${partial.storedBytes}-${model().length - 1}`,
    );
    expect(notes.some((n) => n.startsWith('resumed at'))).toBe(true);
    expect((await tensorsVia({ byteParts: a.parts })).get('token_embd.weight')?.length).toBe(512 * 64 * 4);
  });

  it('a run killed at any point of a download (between any two writes, or mid-write) resumes correctly', async () => {
    // A store that dies after `n` writes: the n-th write is torn (half its bytes land) and every later
    // call fails, as when a process or tab goes away. The next run opens the same directory.
    class Killed extends Error {}
    const mortal = (store: FsStore, n: number): CacheStore => {
      let writes = 0;
      const tick = () => {
        if (++writes >= n) throw new Killed(`killed at write ${n}`);
      };
      const dead = () => {
        if (writes >= n) throw new Killed('dead');
      };
      /** `f` on the live store: a dead store throws; a write first counts (and may be the fatal one). */
      const live =
        <A extends unknown[], R>(f: (...a: A) => Promise<R>, write = false) =>
        async (...a: A): Promise<R> => {
          dead();
          if (write) tick();
          return f(...a);
        };
      return {
        kind: store.kind,
        location: store.location,
        filePath: (k) => store.filePath(k),
        getMeta: live((k: string) => store.getMeta(k)),
        listMeta: live(() => store.listMeta()),
        read: live((k: string, s: number, e: number, bs: number) => store.read(k, s, e, bs)),
        estimate: live(() => store.estimate()),
        remove: live((k: string) => store.remove(k), true),
        putMeta: live((m: EntryMeta) => store.putMeta(m), true),
        writeBlock: async (k, i, bs, b) => {
          dead();
          if (writes + 1 >= n) await store.writeBlock(k, i, bs, b.subarray(0, b.length >> 1)); // torn
          tick();
          return store.writeBlock(k, i, bs, b);
        },
        finish: live((k: string) => store.finish(k), true),
      };
    };
    const url = `${server.url}/range/stories260K.gguf`;
    const size = model().length;
    const bs = 64 * KiB;
    const want = createHash('sha256').update(model()).digest('hex');
    // Every write of one whole download: a block and its record per block, then finish and the last record.
    const nWrites = 2 * Math.ceil(size / bs) + 2;
    for (let n = 1; n <= nWrites; n++) {
      const dir = tmp();
      const dying = await lib({ dir, retries: 0, store: mortal(await FsStore.open(dir), n) });
      await expect(dying.acquire(url), `killed at write ${n}`).rejects.toThrow();
      const store = await FsStore.open(dir);
      const left = await store.listMeta();
      expect(left.length, `killed at write ${n}`).toBeLessThanOrEqual(1);
      const stored = left[0]?.bytesDone ?? 0;
      // What the record says is stored is whole blocks, or the whole file.
      expect(stored % bs === 0 || stored === size, `killed at write ${n}: ${stored} stored`).toBe(true);
      server.reset();
      const a = await (await lib({ dir })).acquire(url);
      expect(a.parts[0].meta.complete, `killed at write ${n}`).toBe(true);
      const gets = server.stats.requests.filter((r) => r.method === 'GET');
      // Only the rest is fetched, from exactly where the record says the stored bytes end.
      expect(server.stats.bodyBytes, `killed at write ${n}`).toBe(left[0]?.complete ? 0 : size - stored);
      if (stored < size && !left[0]?.complete)
        expect(gets[0]?.range).toMatch(new RegExp(`^bytes=${stored}-`));
      const path = store.filePath(a.parts[0].meta.key);
      expect(createHash('sha256').update(readFileSync(path)).digest('hex'), `killed at write ${n}`).toBe(
        want,
      );
      expect((await tensorsVia({ byteParts: a.parts })).size).toBe(48);
    }
  });

  it('progress after a resume or a restart: the rate counts this run’s bytes, never negative', async () => {
    const key = `${server.url}/range/stories260K.gguf`;
    /** A fetch that sends `key` to another route, its body in 64 KiB pieces 30 ms apart (≤ 2.2 MB/s). */
    const via = (route: string, throttle: boolean): typeof fetch => {
      return async (input, init) => {
        const res = await fetch(String(input).replace('/range/', `/${route}/`), init);
        if (!throttle || !res.body) return res;
        const reader = res.body.getReader();
        let buf = new Uint8Array(0);
        const body = new ReadableStream<Uint8Array>({
          async pull(ctl) {
            while (buf.length < 64 * KiB) {
              const r = await reader.read();
              if (r.done) break;
              const grown = new Uint8Array(buf.length + r.value.length);
              grown.set(buf);
              grown.set(r.value, buf.length);
              buf = grown;
            }
            if (buf.length === 0) return ctl.close();
            await new Promise((r) => setTimeout(r, 30));
            ctl.enqueue(buf.slice(0, 64 * KiB));
            buf = buf.slice(64 * KiB);
          },
          cancel: (why) => reader.cancel(why),
        });
        return new Response(body, { status: res.status, headers: res.headers });
      };
    };
    const opts = { blockBytes: 64 * KiB, requestBytes: 8 * 1024 * KiB, retryDelayMs: () => 1 };
    /** `throttledFrom`: the first event of the throttled transfer (earlier ones may be at any rate). */
    const check = (what: string, events: { bytesPerSec?: number; etaMs?: number }[], throttledFrom = 0) => {
      const rated = events.filter((e, i) => i >= throttledFrom && e.bytesPerSec !== undefined);
      expect(rated.length, what).toBeGreaterThan(0);
      for (const e of events) {
        if (e.bytesPerSec !== undefined)
          expect(e.bytesPerSec, `${what}: ${JSON.stringify(e)}`).toBeGreaterThanOrEqual(0);
        if (e.etaMs !== undefined) expect(e.etaMs, `${what}: ${JSON.stringify(e)}`).toBeGreaterThanOrEqual(0);
      }
      // One 64 KiB piece is made per 30 ms, but the stream's queue and the reader can each hold a piece
      // made earlier, so a window of T ≥ 100 ms (the meter's shortest) may see two pieces more than
      // T / 30 ms: at most (T / 0.03 + 2) · 64 KiB / T, largest at T = 0.1 s (3.5 MB/s). The bound was
      // 64 KiB / 30 ms (2.2 MB/s) and a loaded 2-core CI run measured 2.68 MB/s over such a window.
      const most = ((0.1 / 0.03 + 2) * (64 * KiB)) / 0.1;
      // Counting the bytes of earlier runs gave several MB/s more (the ~0.6 MB stored before a resume,
      // over the first windows), and going back to byte 0 on a restart gave a rate below zero and a
      // negative time left (checked above).
      for (const e of rated) expect(e.bytesPerSec, `${what}: ${JSON.stringify(e)}`).toBeLessThanOrEqual(most);
    };
    type Ev = { bytesDone: number; bytesPerSec?: number; etaMs?: number };

    // Resume: a partial entry (the first run cut half-way, no retries left), then a second run.
    const dir = tmp();
    const first = new ModelLibrary(await FsStore.open(dir), {
      ...opts,
      retries: 0,
      fetch: via('cut', false),
    });
    await errorOf(first.acquire(key));
    expect((await first.list())[0].storedBytes).toBeGreaterThan(0);
    const resumed: Ev[] = [];
    const second = new ModelLibrary(await FsStore.open(dir), { ...opts, fetch: via('range', true) });
    await second.acquire(key, { onProgress: (p) => p.phase === 'download' && resumed.push(p) });
    check('resume', resumed);

    // Restart within one run: cut half-way (fast), then, 3.1 s later (past the rate's 3 s window), the
    // retry's range is ignored (200, the whole file, slow), so the download starts again from byte 0.
    server.reset();
    let gets = 0;
    const cutThenNoRange: typeof fetch = (input, init) =>
      init?.method === 'HEAD' || gets++ > 0
        ? via('norange', true)(input, init)
        : via('cut', false)(input, init);
    const restarted: Ev[] = [];
    const third = new ModelLibrary(await FsStore.open(tmp()), {
      ...opts,
      retries: 2,
      retryDelayMs: () => 3100,
      fetch: cutThenNoRange,
    });
    const got = await third.acquire(key, { onProgress: (p) => p.phase === 'download' && restarted.push(p) });
    expect(got.parts[0].meta.complete).toBe(true);
    expect(gets).toBe(2);
    // It did restart; the cut first request is not throttled (on a loaded machine it lasts long enough
    // for a rate: 5.5 MB/s was seen), so the bound holds from the restart on.
    const restartAt = restarted.findIndex((e, i) => i > 0 && e.bytesDone < restarted[i - 1].bytesDone);
    expect(restartAt).toBeGreaterThan(0);
    check('restart', restarted, restartAt);
  });

  it('a transfer that stalls half-way says how much arrived before it stalled, even after retries', async () => {
    server.hold(600_000); // /slow/ sends the first 600,000 bytes, then nothing (the connection stays open)
    const l = new ModelLibrary(await FsStore.open(tmp()), {
      blockBytes: 64 * KiB,
      requestBytes: 8 * 1024 * KiB,
      retries: 1,
      retryDelayMs: () => 1,
      timeoutMs: 300,
    });
    const e = await errorOf(l.acquire(`${server.url}/slow/stories260K.gguf`));
    expect(e.code).toBe('timeout');
    // Before: "… sent nothing for 300 ms; the server is not answering", with 0.6 MB on the disk.
    expect(e.message).toMatch(
      /stories260K\.gguf stalled: 0\.6 MB \(600,000 bytes\) arrived, then nothing for 300 ms; the transfer stopped moving/,
    );
    expect(e.message).toMatch(/after 1 retries; the 0\.6 MB downloaded so far are kept: try again to resume/);
    expect(e.message).not.toMatch(/sent nothing/);
  });

  it('an aborted download keeps what it stored for the next run', async () => {
    const dir = tmp();
    const url = `${server.url}/range/stories260K.gguf`;
    const ctl = new AbortController();
    const l = await lib({ dir });
    const e = await errorOf(
      l.acquire(url, { signal: ctl.signal, onProgress: (p) => p.bytesDone > 500_000 && ctl.abort() }),
    );
    expect(e.code).toBe('aborted');
    const [partial] = await l.list();
    expect(partial.storedBytes).toBeGreaterThan(0);
    server.reset();
    const a = await (await lib({ dir })).acquire(url);
    expect(server.stats.bodyBytes).toBe(model().length - partial.storedBytes);
    expect(a.parts[0].meta.complete).toBe(true);
  });

  it('a damaged partial download is found before resuming and started over', async () => {
    const dir = tmp();
    const url = `${server.url}/cut/stories260K.gguf`;
    const store = await FsStore.open(dir);
    const l = new ModelLibrary(store, { blockBytes: 64 * KiB, requestBytes: 8 * 1024 * KiB, retries: 0 });
    await errorOf(l.acquire(url));
    const [partial] = await l.list();
    const path = `${store.filePath(partial.key)}.part`; // not yet complete: never named like a model
    const bytes = readFileSync(path);
    bytes[1000] ^= 1;
    writeFileSync(path, bytes);
    server.stats.bodyBytes = 0;
    const a = await new ModelLibrary(store, { blockBytes: 64 * KiB }).acquire(url);
    expect(server.stats.bodyBytes).toBe(model().length);
    expect(a.parts[0].meta.complete).toBe(true);
  });

  it('a server without range support still downloads (one GET); a cut there cannot resume and says so', async () => {
    const l = await lib();
    const a = await l.acquire(`${server.url}/norange/stories260K.gguf`);
    expect(a.parts[0].meta.acceptRanges).toBe(false);
    expect(server.stats.requests.filter((r) => r.method === 'GET').length).toBe(1);
    expect(server.stats.bodyBytes).toBe(model().length);
    const e = await errorOf((await lib({ retries: 1 })).acquire(`${server.url}/cutnorange/stories260K.gguf`));
    expect(e.code).toBe('network');
    expect(e.message).toMatch(
      /\(after 1 retries\)\. The server does not support range requests, so the download cannot be resumed/,
    );
    expect(await (await lib()).list()).toEqual([]);
  });
});

/**
 * A server that announces `extra` bytes more than the file has (HEAD's Content-Length and each 206's
 * Content-Range) and sends the real bytes; a range request past the end is a 416 carrying the real length
 * (RFC 9110 §15.5.17; without it when `lengthIn416` is false).
 */
async function overStatingServer(bytes: Uint8Array, extra: number, lengthIn416 = true) {
  const claimed = bytes.length + extra;
  const srv = createServer((req, res) => {
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-length': claimed, 'accept-ranges': 'bytes' });
      return void res.end();
    }
    const r = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
    const from = Number(r?.[1] ?? 0);
    if (from >= bytes.length) {
      res.writeHead(416, lengthIn416 ? { 'content-range': `bytes */${bytes.length}` } : {});
      return void res.end();
    }
    const to = Math.min(r?.[2] ? Number(r[2]) : claimed - 1, bytes.length - 1);
    res.writeHead(206, {
      'content-range': `bytes ${from}-${to}/${claimed}`,
      'content-length': to - from + 1,
    });
    res.end(bytes.subarray(from, to + 1));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/m.gguf`,
    close: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

describe('integrity', () => {
  it('a server that announces more bytes than it has: the error says so (not "changed"), nothing is kept', async () => {
    const n = model().length;
    const srv = await overStatingServer(model(), 1000);
    try {
      const l = await lib({ retries: 2 });
      const e = await errorOf(l.acquire(srv.url));
      expect(e.code).toBe('integrity');
      expect(e.message).toBe(
        `${srv.url}: the server announced ${(n + 1000).toLocaleString('en-US')} bytes but has ` +
          `${n.toLocaleString('en-US')}, all received (HTTP 416 for the rest): its announced size is ` +
          'wrong, or the file changed on the server; nothing was kept',
      );
      expect(await l.store.listMeta()).toEqual([]);
    } finally {
      await srv.close();
    }
    // A 416 that does not say the length: both readings are given, by the offset asked for.
    const bare = await overStatingServer(model(), 1000, false);
    try {
      const e = await errorOf((await lib({ retries: 2 })).acquire(bare.url));
      expect(e.code).toBe('integrity');
      expect(e.message).toBe(
        `${bare.url} has no bytes from ${n.toLocaleString('en-US')} (HTTP 416) though the server announced ` +
          `${(n + 1000).toLocaleString('en-US')} bytes: the file changed on the server, or its announced size is ` +
          'wrong; nothing was kept',
      );
    } finally {
      await bare.close();
    }
  });

  it('a flipped byte in the cached copy is detected when it is read, never handed on', async () => {
    const l = await lib();
    const a = await l.acquire(`${server.url}/range/stories260K.gguf`);
    const path = (l.store as FsStore).filePath(a.parts[0].meta.key);
    const bytes = readFileSync(path);
    const at = 700_000;
    bytes[at] ^= 0x10;
    writeFileSync(path, bytes);
    const b = await l.acquire(`${server.url}/range/stories260K.gguf`); // still "fresh" on the server
    const e = await errorOf(tensorsVia({ byteParts: b.parts }));
    expect(e.code).toBe('integrity');
    expect(e.message).toMatch(/cached copy of stories260K\.gguf is damaged \(block 11 of 19/);
    // Reads of blocks before the damage still work; the damaged block never comes back.
    expect((await b.parts[0].read(0, 4))[0]).toBe(0x47);
    await expect(b.parts[0].read(at, at + 1)).rejects.toMatchObject({ code: 'integrity' });
  });

  it('verifyCached checks every block of a cached copy before handing it out: a damaged one is downloaded again', async () => {
    const url = `${server.url}/range/stories260K.gguf`;
    for (const at of [10, 700_000, model().length - 1]) {
      const l = await lib();
      const a = await l.acquire(url);
      const path = (l.store as FsStore).filePath(a.parts[0].meta.key);
      const bytes = readFileSync(path);
      bytes[at] ^= 0x10;
      writeFileSync(path, bytes);
      server.reset();
      const notes: string[] = [];
      const b = await l.acquire(url, { verifyCached: true, onProgress: (p) => p.note && notes.push(p.note) });
      const block = Math.floor(at / (64 * KiB)) + 1;
      expect(notes).toContain(
        `integrity: the cached copy of stories260K.gguf is damaged (block ${block} of 19: its SHA-256 differs); it is deleted and will be downloaded again`,
      );
      // Downloaded again, whole, and what is on disk is the server's file.
      expect(b.fromCache).toBe(false);
      expect(server.stats.bodyBytes).toBe(model().length);
      expect(createHash('sha256').update(readFileSync(path)).digest('hex')).toBe(
        createHash('sha256').update(model()).digest('hex'),
      );
      // An intact copy is checked and used: no bytes sent.
      server.reset();
      const c = await l.acquire(url, { verifyCached: true });
      expect(c.fromCache).toBe(true);
      expect(server.stats.bodyBytes).toBe(0);
    }
  });

  it('verifyCached offline: a damaged copy is an integrity error (and deleted), a missing block too', async () => {
    const url = `${server.url}/range/stories260K.gguf`;
    const l = await lib();
    const a = await l.acquire(url);
    const path = (l.store as FsStore).filePath(a.parts[0].meta.key);
    writeFileSync(path, readFileSync(path).subarray(0, 100_000)); // cut short: blocks 2… are missing
    const e = await errorOf(l.acquire(url, { verifyCached: true, offline: true }));
    expect(e.code).toBe('integrity');
    expect(e.message).toMatch(/damaged \(block 2 of 19: 34,464 of 65,536 bytes are there\)/);
    expect(await l.list()).toEqual([]);
  });

  it('a SHA-256 that does not match ends the download and keeps nothing', async () => {
    const l = await lib();
    const e = await errorOf(l.acquire(`${server.url}/range/stories260K.gguf`, { sha256: 'ab'.repeat(32) }));
    expect(e.code).toBe('integrity');
    expect(e.message).toMatch(/expected abab/);
    expect(await l.list()).toEqual([]);
    const ok = await l.acquire(`${server.url}/range/stories260K.gguf`, {
      sha256: createHash('sha256').update(model()).digest('hex'),
    });
    expect(ok.parts[0].meta.sha256Verified).toBe(true);
  });
});

it('all the bytes a server announces, fewer than its GGUF needs (a wrong size, a cut file): kept nothing', async () => {
  // What a server whose Content-Length under-states the file sends: every announced byte, each block's
  // hash right, and a model cut short. Cut inside the tensor data, and inside the header.
  const l = await lib();
  const whole = model();
  const head = (await openGguf({ path: STORIES_PATH })).dataOffset;
  for (const [cut, why] of [
    [whole.length - 1 - Math.floor(Math.random() * 5000), /tensor \S+ needs bytes up to [\d,]+/],
    [Math.floor(head / 2), /its header runs past them/],
  ] as const) {
    const name = `short-${cut}.gguf`;
    server.setFile(name, whole.slice(0, cut));
    const e = await errorOf(l.acquire(`${server.url}/range/${name}`));
    expect(e.code).toBe('integrity');
    expect(e.message).toContain(`all ${cut.toLocaleString('en-US')} bytes the server announced arrived`);
    expect(e.message).toMatch(why);
    expect(e.message).toMatch(/nothing was kept$/);
    expect(await l.list()).toEqual([]);
    expect(readdirSync((l.store as FsStore).location)).not.toContainEqual(expect.stringMatching(/\.gguf/));
    server.setFile(name, whole);
    const ok = await l.acquire(`${server.url}/range/${name}`);
    expect(ok.parts[0].meta.size).toBe(whole.length);
    await l.remove(`${server.url}/range/${name}`);
  }
});

describe('one cache, several processes', () => {
  const url = () => `${server.url}/slow/stories260K.gguf`;

  it('two libraries on one directory fetching one file at once: one downloads, the other waits, then uses it', async () => {
    const dir = tmp();
    const [a, b] = [await lib({ dir }), await lib({ dir })];
    server.hold(512 * KiB); // the first download stops half-way until the other is seen waiting
    // Either may take the lock first (each sends its HEAD before locking; under load the second can win):
    // both report waits, and exactly one waits.
    const waits: string[] = [];
    const onWait = (h: string) => waits.push(h);
    const first = a.acquire(url(), { onWait });
    const second = b.acquire(url(), { onWait });
    await expect.poll(() => waits.length, { timeout: 20_000 }).toBe(1);
    server.hold(undefined);
    const got = await Promise.all([first, second]);
    expect(waits).toEqual([`process ${process.pid}`]);
    // The one that downloaded is not from the cache; the waiter sent one HEAD, no bytes.
    expect(got.map((g) => g.fromCache).sort()).toEqual([false, true]);
    expect(server.stats.bodyBytes).toBe(model().length);
    const ga = got.find((g) => !g.fromCache)!;
    const path = (a.store as FsStore).filePath(ga.parts[0].meta.key);
    expect(createHash('sha256').update(readFileSync(path)).digest('hex')).toBe(
      createHash('sha256').update(model()).digest('hex'),
    );
    expect(existsSync(`${join(dir, ga.parts[0].meta.key)}.lock`)).toBe(false);
  }, 40_000);

  it('records saved at once by two stores never collide (each writes its own temporary file)', async () => {
    const dir = tmp();
    const [a, b] = [await FsStore.open(dir), await FsStore.open(dir)];
    const l = await lib({ dir });
    const meta = (await l.acquire(`${server.url}/range/stories260K.gguf`)).parts[0].meta;
    // Before: both wrote KEY.json.tmp and one rename failed with ENOENT.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).putMeta({ ...meta, lastUsedAt: String(i) })),
    );
    expect((await a.getMeta(meta.key))?.complete).toBe(true);
  });

  it('a lock left by a process that is gone, or untouched for LOCK_STALE_MS, is broken', async () => {
    const dir = tmp();
    const l = await lib({ dir });
    const key = entryKey(`${server.url}/range/stories260K.gguf`);
    const lockPath = join(dir, `${key}.lock`);
    // A process that has exited: its pid is free.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    const deadPid = Number(dead.stdout.toString());
    writeFileSync(lockPath, JSON.stringify({ host: hostname(), pid: deadPid, nonce: 'dead' }));
    const waits: string[] = [];
    await l.acquire(`${server.url}/range/stories260K.gguf`, { onWait: (h) => waits.push(h) });
    expect(waits).toEqual([]);
    expect(existsSync(lockPath)).toBe(false);
    // A live process's lock (our parent's pid) that nobody has touched for longer than LOCK_STALE_MS.
    writeFileSync(lockPath, JSON.stringify({ host: hostname(), pid: process.ppid, nonce: 'frozen' }));
    const old = new Date(Date.now() - LOCK_STALE_MS - 1000);
    utimesSync(lockPath, old, old);
    await l.acquire(`${server.url}/range/stories260K.gguf`, { onWait: (h) => waits.push(h) });
    expect(waits).toEqual([]);
    expect(existsSync(lockPath)).toBe(false);
  });

  it('a download whose lock was taken over (it was paused past LOCK_STALE_MS) stops without writing', async () => {
    const dir = tmp();
    const a = await lib({ dir, retries: 0 });
    const key = entryKey(url());
    const lockPath = join(dir, `${key}.lock`);
    server.hold(512 * KiB); // the download stops half-way, as a paused process would
    const first = errorOf(a.acquire(url()));
    await expect.poll(() => existsSync(join(dir, `${key}.gguf.part`)), { timeout: 20_000 }).toBe(true);
    // Another process found the lock stale and took it: what this one writes next would mix with its.
    writeFileSync(lockPath, JSON.stringify({ host: hostname(), pid: process.ppid, nonce: 'new-owner' }));
    server.hold(undefined);
    const e = await first;
    expect(e.code).toBe('integrity');
    expect(e.message).toMatch(
      /another process took over the download of .* this process stops without writing/,
    );
    // The new owner's lock is left alone; nothing was called complete.
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).nonce).toBe('new-owner');
    expect(existsSync(join(dir, `${key}.gguf`))).toBe(false);
    expect((await (a.store as FsStore).getMeta(key))?.complete).not.toBe(true);
  }, 40_000);

  it('rm waits for a download of the entry in another process, then deletes it', async () => {
    const dir = tmp();
    const [a, b] = [await lib({ dir }), await lib({ dir })];
    const key = entryKey(url());
    server.hold(512 * KiB);
    const first = a.acquire(url());
    await expect.poll(() => existsSync(join(dir, `${key}.gguf.part`)), { timeout: 20_000 }).toBe(true);
    const waits: string[] = [];
    const removing = b.remove(url(), { onWait: (h) => waits.push(h) });
    await expect.poll(() => waits.length, { timeout: 20_000 }).toBe(1);
    expect(waits[0]).toBe(`process ${process.pid}`);
    // Before: rm deleted under the download, which went on and called a corrupt file complete.
    expect(existsSync(join(dir, `${key}.gguf.part`))).toBe(true);
    server.hold(undefined);
    const got = await first;
    expect(
      createHash('sha256')
        .update(readFileSync((a.store as FsStore).filePath(key)))
        .digest('hex'),
    ).toBe(createHash('sha256').update(model()).digest('hex'));
    expect(got.fromCache).toBe(false);
    await removing;
    expect(await b.list()).toEqual([]);
    expect(existsSync(join(dir, `${key}.gguf`))).toBe(false);
    expect(existsSync(join(dir, `${key}.lock`))).toBe(false);
  }, 40_000);

  it('a live lock makes a run wait, and an abort ends the wait', async () => {
    const dir = tmp();
    const l = await lib({ dir });
    const key = entryKey(`${server.url}/range/stories260K.gguf`);
    writeFileSync(
      join(dir, `${key}.lock`),
      JSON.stringify({ host: hostname(), pid: process.ppid, nonce: 'live' }),
    );
    const ctl = new AbortController();
    const waits: string[] = [];
    const p = errorOf(
      l.acquire(`${server.url}/range/stories260K.gguf`, { signal: ctl.signal, onWait: (h) => waits.push(h) }),
    );
    await expect.poll(() => waits.length).toBe(1);
    expect(waits[0]).toBe(`process ${process.ppid}`);
    ctl.abort();
    expect((await p).code).toBe('aborted');
    expect(server.stats.bodyBytes).toBe(0);
  });
});

describe('split models', () => {
  it('three parts download as one model and read back the same tensors as the single file', async () => {
    const l = await lib();
    const a = await l.acquire(`${server.url}/range/stories260K-00001-of-00003.gguf`);
    expect(a.parts.length).toBe(3);
    const sizes = [1, 2, 3].map(
      (k) => (files.get(`stories260K-0000${k}-of-00003.gguf`) as Uint8Array).length,
    );
    expect(server.stats.bodyBytes).toBe(sizes.reduce((x, y) => x + y));
    const merged = await openModelFile({ byteParts: a.parts });
    expect(merged.fileSize).toBe(sizes.reduce((x, y) => x + y));
    const single = (await collectTensorData(await openGguf({ path: STORIES_PATH }))).data;
    const got = (await collectTensorData(merged)).data;
    expect([...got.keys()].sort()).toEqual([...single.keys()].sort());
    for (const [k, v] of single) expect(got.get(k), k).toEqual(v);
    const [entry] = await l.list();
    expect(entry).toMatchObject({ parts: 3, complete: true, name: 'stories260K-00001-of-00003.gguf' });
    await l.remove(entry.key);
    expect(await l.store.listMeta()).toEqual([]);
  });

  it('a missing part is said by its name before any part is downloaded (URL and hf: shorthand)', async () => {
    const partial = new Map(files);
    partial.delete('stories260K-00002-of-00003.gguf');
    const other = await startModelServer(partial);
    try {
      const store = await FsStore.open(tmp());
      const l = new ModelLibrary(store, { hfEndpoint: other.url, retries: 0 });
      const first = `${other.url}/range/stories260K-00001-of-00003.gguf`;
      const e = await errorOf(l.acquire(first));
      expect(e.code).toBe('http_status');
      expect(e.message).toBe(
        `split part 2 of 3 is missing: ${other.url}/range/stories260K-00002-of-00003.gguf was not found ` +
          '(HTTP 404); a split model needs all 3 parts, named as gguf-split names them, beside the first',
      );
      // Only HEAD requests were made: part 1 was not downloaded, and nothing was kept.
      expect(other.stats.requests.map((r) => r.method)).not.toContain('GET');
      expect(await store.listMeta()).toEqual([]);

      const h = await errorOf(l.acquire('hf:test/models/stories260K-00001-of-00003.gguf'));
      expect(h.code).toBe('invalid_argument');
      expect(h.message).toMatch(
        /^split part 2 of 3 is missing: hf:test\/models\/stories260K-00002-of-00003\.gguf: there is no stories260K-00002-of-00003\.gguf in test\/models at main; its GGUF files there: .*stories260K-00003-of-00003\.gguf/,
      );
      expect(await store.listMeta()).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('a later part given instead of the first is a clear error', async () => {
    const e = await errorOf((await lib()).acquire(`${server.url}/range/stories260K-00002-of-00003.gguf`));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(/part 2 of a split model; give its first part/);
  });
});

describe('Hugging Face shorthand (against a local stand-in endpoint)', () => {
  it('hf:OWNER/REPO/FILE downloads and checks the SHA-256 from the tree API', async () => {
    const l = await lib();
    const a = await l.acquire('hf:test/models/stories260K.gguf');
    expect(a.resolved.url).toBe(`${server.url}/test/models/resolve/main/stories260K.gguf`);
    expect(a.parts[0].meta.sha256Verified).toBe(true);
    expect(server.stats.requests[0].path).toBe('/api/models/test/models/tree/main');
    const [entry] = await l.list();
    expect(entry.spec).toBe('hf:test/models/stories260K.gguf');
  });

  it('a mirror without the tree API still works (the file is simply downloaded)', async () => {
    const a = await (await lib()).acquire('hf:mirror/notree/stories260K.gguf');
    expect(a.parts[0].meta.complete).toBe(true);
    expect(server.stats.bodyBytes).toBe(model().length);
  });

  it('a file or repository that is not there is a clear error naming what is', async () => {
    const l = await lib();
    const e = await errorOf(l.acquire('hf:test/models/stories15M.gguf'));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(
      /there is no stories15M\.gguf in test\/models at main; its GGUF files there: .*stories260K\.gguf/,
    );
    const r = await errorOf(l.acquire('hf:nobody/nothing/x.gguf'));
    expect(r.code).toBe('http_status');
    expect(r.message).toMatch(
      /Hugging Face has no file x\.gguf in a repository nobody\/nothing at revision main \(HTTP 404\)/,
    );
  });
});

/**
 * A server that accepts every connection and request and never answers (with `treeBody`, the tree API
 * sends its headers and one byte of the body, then nothing): what a hung Hugging Face mirror looks like.
 */
async function silentServer(opts: { treeBody?: boolean } = {}) {
  const requests: string[] = [];
  const srv = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (opts.treeBody && req.url?.startsWith('/api/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
    }
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    requests,
    close: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

/**
 * Runs `p` with a full garbage collection every 100 ms (a timer or signal held only weakly is collected,
 * as in a long CLI run), failing with a clear message when it has not settled within `ms`.
 */
async function settlesWithin<T>(ms: number, p: () => Promise<T>): Promise<T> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const collect = setInterval(gc, 100);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearInterval(collect);
    clearTimeout(timer);
  }
}

describe('a server that accepts the connection and never answers', () => {
  it("hf: the tree API's timeout fires, then the file's: a timeout naming the URL within seconds", async () => {
    const silent = await silentServer();
    try {
      const l = new ModelLibrary(await FsStore.open(tmp()), {
        hfEndpoint: silent.url,
        freshnessTimeoutMs: 300,
        timeoutMs: 500,
      });
      const notes: string[] = [];
      const t0 = performance.now();
      const e = await settlesWithin(8000, () =>
        errorOf(l.acquire('hf:o/r/m.gguf', { onProgress: (p) => p.note && notes.push(p.note) })),
      );
      const ms = performance.now() - t0;
      expect(e.code).toBe('timeout');
      expect(e.message).toContain(`${silent.url}/o/r/resolve/main/m.gguf sent nothing for 500 ms`);
      expect(ms).toBeLessThan(5000);
      expect(silent.requests).toEqual(['GET /api/models/o/r/tree/main', 'HEAD /o/r/resolve/main/m.gguf']);
      expect(notes.join()).toContain(
        `${silent.url}/api/models/o/r/tree/main did not answer within 300 ms: going on without`,
      );
    } finally {
      await silent.close();
    }
  });

  it('hf: a tree API that sends its headers and then nothing is bounded by the same timeout', async () => {
    const silent = await silentServer({ treeBody: true });
    try {
      const l = new ModelLibrary(await FsStore.open(tmp()), {
        hfEndpoint: silent.url,
        freshnessTimeoutMs: 300,
        timeoutMs: 500,
      });
      const e = await settlesWithin(8000, () => errorOf(l.acquire('hf:o/r/m.gguf')));
      expect(e.code).toBe('timeout');
      expect(e.message).toContain(`${silent.url}/o/r/resolve/main/m.gguf sent nothing for 500 ms`);
    } finally {
      await silent.close();
    }
  });

  it('hf: a kept copy is used (offline) once the tree API and the freshness check time out', async () => {
    const silent = await silentServer();
    try {
      const dir = tmp();
      const opts = { hfEndpoint: silent.url, freshnessTimeoutMs: 300, timeoutMs: 60_000 };
      // Kept while the endpoint answered (its requests passed on to the model server)…
      const via = ((u: string | URL | Request, init?: RequestInit) =>
        fetch(String(u).replace(silent.url, server.url), init)) as typeof fetch;
      await new ModelLibrary(await FsStore.open(dir), { ...opts, fetch: via }).acquire(
        'hf:test/models/stories260K.gguf',
      );
      // …then loaded with the endpoint silent: bounded by the two 300 ms timeouts, not the 60 s one.
      const l = new ModelLibrary(await FsStore.open(dir), opts);
      const t0 = performance.now();
      const a = await settlesWithin(8000, () => l.acquire('hf:test/models/stories260K.gguf'));
      expect(performance.now() - t0).toBeLessThan(5000);
      expect(a.fromCache).toBe(true);
      expect(a.offline).toBe(true);
      expect(silent.requests).toEqual([
        'GET /api/models/test/models/tree/main',
        'HEAD /test/models/resolve/main/stories260K.gguf',
      ]);
    } finally {
      await silent.close();
    }
  });

  it("a caller's abort ends a listing or a probe that is waiting, at once", async () => {
    const silent = await silentServer();
    try {
      const long = new ModelLibrary(await FsStore.open(tmp()), {
        hfEndpoint: silent.url,
        freshnessTimeoutMs: 60_000,
        timeoutMs: 60_000,
      });
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 200);
      const e = await settlesWithin(3000, () =>
        errorOf(long.acquire('hf:o/r/m.gguf', { signal: ctl.signal })),
      );
      expect(e.code).toBe('aborted');
      expect(silent.requests).toEqual(['GET /api/models/o/r/tree/main']);
      // Past the listing (its timeout short), the HEAD request: the abort ends that too.
      const probing = new ModelLibrary(await FsStore.open(tmp()), {
        hfEndpoint: silent.url,
        freshnessTimeoutMs: 100,
        timeoutMs: 60_000,
      });
      const ctl2 = new AbortController();
      setTimeout(() => ctl2.abort(), 600);
      const e2 = await settlesWithin(3000, () =>
        errorOf(probing.acquire('hf:o/r/m.gguf', { signal: ctl2.signal })),
      );
      expect(e2.code).toBe('aborted');
      expect(silent.requests.at(-1)).toBe('HEAD /o/r/resolve/main/m.gguf');
    } finally {
      await silent.close();
    }
  });
});

describe('bad input', () => {
  it('an HTML page, a 404 and a 403 are clear errors and keep nothing', async () => {
    const l = await lib();
    // An HTML page (a dev server's answer for a missing file, a login page) is the file not found, by URL.
    const html = await errorOf(l.acquire(`${server.url}/html/model.gguf`));
    expect(html.code).toBe('http_status');
    expect(html.message).toMatch(
      / was not found: the server answered with an HTML page instead of a GGUF file/,
    );
    expect(html.message).toContain(`${server.url}/html/model.gguf was not found`);
    expect(html.message).toMatch(/; nothing was kept$/);
    const nf = await errorOf(l.acquire(`${server.url}/status/404/model.gguf`));
    expect(nf.code).toBe('http_status');
    expect(nf.message).toMatch(/HTTP 404.*no file at this URL/);
    const denied = await errorOf(l.acquire(`${server.url}/status/403/model.gguf`));
    expect(denied.message).toMatch(/HTTP 403.*access denied/);
    expect(await l.store.listMeta()).toEqual([]);
  });

  it('a download that will not fit is refused up front with the numbers', async () => {
    const fs = await FsStore.open(tmp());
    const small: CacheStore = Object.assign(Object.create(fs) as CacheStore, {
      estimate: async () => ({ usage: 9_500_000, quota: 10_000_000 }),
    });
    const e = await errorOf((await lib({ store: small })).acquire(`${server.url}/range/stories260K.gguf`));
    expect(e.code).toBe('quota_exceeded');
    expect(e.message).toMatch(
      /needs 1\.2 MB more but only 0\.5 MB of storage is free \(9\.5 MB used of 10 MB\)/,
    );
    expect(server.stats.bodyBytes).toBe(0);
  });

  it('storage running out mid-way ends cleanly and frees what was written', async () => {
    const fs = await FsStore.open(tmp());
    let writes = 0;
    const full: CacheStore = Object.assign(Object.create(fs) as CacheStore, {
      writeBlock: async (key: string, i: number, bs: number, b: Uint8Array) => {
        if (++writes === 6) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return fs.writeBlock(key, i, bs, b);
      },
    });
    const l = await lib({ store: full });
    const e = await errorOf(l.acquire(`${server.url}/range/stories260K.gguf`));
    expect(e.code).toBe('quota_exceeded');
    expect(e.message).toMatch(/storage ran out after 0\.3 MB of 1\.2 MB.*has been deleted/);
    expect(await fs.listMeta()).toEqual([]);
  });
});

describe('a cache directory that cannot be written', () => {
  it('is said at once as such (EROFS, EACCES), not as a network error after 3 retries', async () => {
    for (const [code, text] of [
      ['EROFS', 'read-only file system'],
      ['EACCES', 'permission denied'],
    ] as const) {
      const dir = tmp();
      const fs = await FsStore.open(dir);
      const readOnly: CacheStore = Object.assign(Object.create(fs) as CacheStore, {
        writeBlock: async (key: string) => {
          throw Object.assign(new Error(`${code}: ${text}, open '${dir}/${key}.gguf.part'`), { code });
        },
      });
      const l = await lib({ store: readOnly });
      const e = await errorOf(l.acquire(`${server.url}/range/stories260K.gguf`));
      expect(e.code).toBe('invalid_argument');
      expect(e.message).toMatch(
        new RegExp(
          `^the model cache cannot be written while storing stories260K\\.gguf \\(${code}: ${text}, open '${dir}/`,
        ),
      );
      expect(e.message).toMatch(/make the directory writable or choose another \(--cache-dir DIR/);
      expect(e.message).not.toMatch(/retries|connection/);
      // One request: no retry.
      expect(server.stats.requests.filter((r) => r.method === 'GET')).toHaveLength(1);
      server.reset();
    }
  });
});

describe('local files kept on request', () => {
  it('a picked file (and the parts of a split model) copied in block by block loads back as local:NAME', async () => {
    const l = await lib();
    const spec = await l.importBlob(new Blob([model() as Uint8Array<ArrayBuffer>]), 'stories260K.gguf');
    expect(spec).toBe('local:stories260K.gguf');
    const a = await l.acquire(spec);
    expect(server.stats.requests).toEqual([]); // never the network
    const single = (await collectTensorData(await openGguf({ path: STORIES_PATH }))).data;
    expect((await tensorsVia({ byteParts: a.parts })).get('blk.3.ffn_up.weight')).toEqual(
      single.get('blk.3.ffn_up.weight'),
    );
    for (const k of [1, 2, 3]) {
      const name = `stories260K-0000${k}-of-00003.gguf`;
      await l.importBlob(new Blob([files.get(name) as Uint8Array<ArrayBuffer>]), name);
    }
    const split = await l.acquire('local:stories260K-00001-of-00003.gguf');
    expect(split.parts.length).toBe(3);
    const got = await tensorsVia({ byteParts: split.parts });
    for (const [k, v] of single) expect(got.get(k), k).toEqual(v);
    const listed = await l.list();
    expect(listed.map((e) => [e.name, e.parts, e.complete])).toEqual(
      expect.arrayContaining([
        ['stories260K.gguf', 1, true],
        ['stories260K-00001-of-00003.gguf', 3, true],
      ]),
    );
  });

  it('a file that is not a GGUF, or a local: name not kept, is a clear error', async () => {
    const l = await lib();
    const e = await errorOf(l.importBlob(new Blob(['<html>hello</html>']), 'page.gguf'));
    expect(e.code).toBe('gguf_invalid');
    const m = await errorOf(l.acquire('local:other.gguf'));
    expect(m.code).toBe('invalid_argument');
    expect(m.message).toMatch(/other\.gguf is not kept in this browser/);
    expect(await l.list()).toEqual([]);
  });
});
