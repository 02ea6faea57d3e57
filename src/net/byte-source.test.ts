/**
 * byte-source.ts on its own: a URL (a server on 127.0.0.1 with and without range requests, wrong ranges,
 * error statuses, stalls, aborts, a refused connection), a Blob/File and a Node path read at random
 * ranges of a file whose size is off every power of two and small prime, the sequential readers, and the
 * helpers (Content-Range / Content-Length parsing, the error constructors).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { mulberry32 } from '../util/prng.ts';
import {
  abortedError,
  type ByteSource,
  DEFAULT_TIMEOUT_MS,
  htmlInsteadOfFileError,
  httpStatusError,
  isUrlSource,
  openByteSource,
  plainContentLength,
  RequestControl,
  sequentialReader,
  throwIfAborted,
  totalFromContentRange,
} from './byte-source.ts';

const rand = mulberry32(4242);

/** A size in [lo, lo + span) that is a multiple of none of 2, 3, 5, 7 (so of no power of two either). */
function offSize(lo: number, span: number): number {
  let n = lo + Math.floor(rand() * span);
  while ([2, 3, 5, 7].some((p) => n % p === 0)) n++;
  return n;
}

/** About 200 KB: several of Node fetch's body pieces, the last one partial. */
const SIZE = offSize(200_000, 50_000);
const FILE = new Uint8Array(SIZE).map(() => Math.floor(rand() * 256));

/** Random [start, end) inside the file, `end` sometimes past its end. */
function randomRange(): [number, number] {
  const start = Math.floor(rand() * SIZE);
  return [start, start + 1 + Math.floor(rand() * (SIZE / 3))];
}

/** `got` is `want` (compared without vitest's diff, slow on 200 KB arrays); `what` for the message. */
function expectBytes(got: Uint8Array, want: Uint8Array, what = ''): void {
  expect(got.length, `${what} length`).toBe(want.length);
  expect(
    got.findIndex((b, i) => b !== want[i]),
    `${what} first byte that differs`,
  ).toBe(-1);
}

/** What `p` rejects with; fails the test when it resolves. */
async function rejection(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    return e as EngineError;
  }
  throw new Error('expected a rejection');
}

// ---- the server ----

/** Every request's method, path and Range header, in order. */
const requests: { method: string; path: string; range?: string }[] = [];
/** Responses left hanging (stalls), ended after each test. */
const hanging: ServerResponse[] = [];

/**
 * Routes: `/range` (Range honoured, 416 past the end, HEAD with Content-Length), `/norange` (always 200,
 * the whole file), `/nolength` (200, chunked, no Content-Length; HEAD refused with 405), `/wrongstart`
 * (206 from one byte later than asked), `/status/CODE`, `/hang` (never answers), `/stall/N` (headers and
 * N bytes of the file, then nothing).
 */
function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url ?? '/';
  requests.push({ method: req.method ?? 'GET', path, range: req.headers.range });
  const head = req.method === 'HEAD';
  const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
  if (path === '/range' || path === '/wrongstart') {
    if (!m) {
      res.writeHead(200, { 'Content-Length': String(SIZE), 'Accept-Ranges': 'bytes' });
      return void res.end(head ? undefined : FILE);
    }
    const start = Number(m[1]) + (path === '/wrongstart' ? 1 : 0);
    const end = Math.min(SIZE - 1, m[2] ? Number(m[2]) : SIZE - 1);
    if (start >= SIZE) return void res.writeHead(416, { 'Content-Range': `bytes */${SIZE}` }).end();
    const body = FILE.subarray(start, end + 1);
    res.writeHead(206, {
      'Content-Range': `bytes ${start}-${end}/${SIZE}`,
      'Content-Length': String(body.length),
    });
    return void res.end(body);
  }
  if (path === '/norange') {
    res.writeHead(200, { 'Content-Length': String(SIZE) });
    return void res.end(head ? undefined : FILE);
  }
  if (path === '/nolength') {
    if (head) return void res.writeHead(405).end();
    res.writeHead(200, { 'Transfer-Encoding': 'chunked' });
    res.write(FILE.subarray(0, 1000));
    return void res.end(FILE.subarray(1000));
  }
  const status = /^\/status\/(\d{3})$/.exec(path);
  if (status) return void res.writeHead(Number(status[1])).end(`status ${status[1]}`);
  if (path === '/hang') return void hanging.push(res);
  const stall = /^\/stall\/(\d+)$/.exec(path);
  if (stall) {
    res.writeHead(200, { 'Content-Length': String(SIZE) });
    res.write(FILE.subarray(0, Number(stall[1])));
    return void hanging.push(res);
  }
  res.writeHead(404).end();
}

const server = createServer(handle);
let base = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => {
  for (const res of hanging.splice(0)) res.destroy();
  requests.length = 0;
  vi.unstubAllGlobals();
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

// ---- tests ----

describe('helpers', () => {
  it('DEFAULT_TIMEOUT_MS is 30 s', () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(30_000);
  });

  it('totalFromContentRange reads the total of both forms, and nothing else', () => {
    expect(totalFromContentRange(`bytes 17-4095/${SIZE}`)).toBe(SIZE);
    expect(totalFromContentRange(`bytes */${SIZE}`)).toBe(SIZE);
    expect(totalFromContentRange('bytes 0-9/ 31 ')).toBe(31);
    expect(totalFromContentRange('bytes 0-9/*')).toBeUndefined();
    expect(totalFromContentRange('bytes 0-9/99999999999999999999')).toBeUndefined();
    expect(totalFromContentRange('')).toBeUndefined();
    expect(totalFromContentRange(null)).toBeUndefined();
  });

  it('plainContentLength trusts Content-Length only on an un-encoded body', () => {
    const res = (headers: Record<string, string>) => new Response(null, { headers });
    expect(plainContentLength(res({ 'content-length': String(SIZE) }))).toBe(SIZE);
    expect(plainContentLength(res({ 'content-length': '0' }))).toBe(0);
    expect(plainContentLength(res({ 'content-length': '1001', 'content-encoding': 'identity' }))).toBe(1001);
    expect(plainContentLength(res({ 'content-length': '1001', 'content-encoding': 'gzip' }))).toBeUndefined();
    expect(plainContentLength(res({}))).toBeUndefined();
    expect(plainContentLength(res({ 'content-length': '-3' }))).toBeUndefined();
    expect(plainContentLength(res({ 'content-length': '12.5' }))).toBeUndefined();
    expect(plainContentLength(res({ 'content-length': 'many' }))).toBeUndefined();
  });

  it('httpStatusError names the action, the URL and the status, with a hint for the common ones', () => {
    const err = (status: number, statusText = '') =>
      httpStatusError(new Response(null, { status, statusText }), 'downloading', 'http://h/m.gguf');
    const cases: [number, string, string][] = [
      [404, 'Not Found', ' Not Found: no file at this URL (check it)'],
      [410, '', ': no file at this URL (check it)'],
      [401, '', ': access denied (the model may be gated or need a token)'],
      [403, 'Forbidden', ' Forbidden: access denied (the model may be gated or need a token)'],
      [500, '', ': the server failed (try again later)'],
      [503, '', ': the server failed (try again later)'],
      [418, "I'm a teapot", " I'm a teapot"],
      [400, '', ''],
    ];
    for (const [status, text, tail] of cases) {
      const e = err(status, text);
      expect(isEngineError(e, 'http_status'), String(status)).toBe(true);
      expect(e.message).toBe(`downloading http://h/m.gguf failed with HTTP ${status}${tail}`);
    }
  });

  it('htmlInsteadOfFileError says "not found" by the URL, as an http_status error', () => {
    const e = htmlInsteadOfFileError('http://h/m.gguf');
    expect(isEngineError(e, 'http_status')).toBe(true);
    expect(e.message).toMatch(/^http:\/\/h\/m\.gguf was not found: the server answered with an HTML page/);
  });

  it('abortedError and throwIfAborted', () => {
    const e = abortedError('loading x');
    expect(isEngineError(e, 'aborted')).toBe(true);
    expect(e.message).toBe('loading x was aborted');
    expect(() => throwIfAborted(undefined, 'y')).not.toThrow();
    const ac = new AbortController();
    expect(() => throwIfAborted(ac.signal, 'y')).not.toThrow();
    ac.abort();
    expect(() => throwIfAborted(ac.signal, 'y')).toThrow('y was aborted');
  });

  it('RequestControl passes EngineErrors through and refuses an aborted signal at once', () => {
    const rc = new RequestControl('http://h/x', 0, undefined);
    const e = abortedError('z');
    expect(rc.mapError(e)).toBe(e);
    rc.dispose();
    expect(rc.ctl.signal.aborted).toBe(true);
    const ac = new AbortController();
    ac.abort();
    const thrown = (() => {
      try {
        new RequestControl('http://h/x', 0, ac.signal);
      } catch (err) {
        return err;
      }
    })();
    expect(isEngineError(thrown, 'aborted')).toBe(true);
    expect((thrown as Error).message).toBe('loading http://h/x was aborted');
  });

  it('sequentialReader reads front to back from start, skips within the size, and calls onClose', async () => {
    const src = { size: SIZE, read: async (s: number, e: number) => FILE.slice(s, Math.min(e, SIZE)) };
    const start = offSize(1000, 5000);
    let closed = 0;
    const r = sequentialReader(src, start, () => closed++);
    expectBytes(await r.read(777), FILE.subarray(start, start + 777));
    expect(await r.skip(1234)).toBe(1234);
    expectBytes(await r.read(11), FILE.subarray(start + 2011, start + 2022));
    const left = SIZE - (start + 2022);
    expect(await r.skip(SIZE)).toBe(left); // only up to the end
    expect(await r.skip(5)).toBe(0);
    expectBytes(await r.read(3), new Uint8Array(0));
    await r.close();
    expect(closed).toBe(1);
    // The read returns fewer bytes only at the end.
    const r2 = sequentialReader(src, SIZE - 9);
    expectBytes(await r2.read(100), FILE.subarray(SIZE - 9));
  });
});

/** Random ranges of `src` against the file, and the edges: the last byte, past the end, empty. */
async function expectRandomReads(src: ByteSource): Promise<void> {
  for (let i = 0; i < 12; i++) {
    const [s, e] = randomRange();
    expectBytes(await src.read(s, e), FILE.subarray(s, Math.min(e, SIZE)), `[${s}, ${e})`);
  }
  expectBytes(await src.read(SIZE - 1, SIZE + 10), FILE.subarray(SIZE - 1));
  expectBytes(await src.read(SIZE, SIZE + 10), new Uint8Array(0));
  expectBytes(await src.read(SIZE + 5, SIZE + 10), new Uint8Array(0));
}

/** A sequential reader of `src` from `start`: pieces of odd sizes, a skip, and the end. */
async function expectSequential(src: ByteSource, start: number): Promise<void> {
  const r = await src.openSequential(start);
  let pos = start;
  for (const n of [1, 4097, 65_537, 3]) {
    expectBytes(await r.read(n), FILE.subarray(pos, pos + n), `${n} at ${pos}`);
    pos += n;
  }
  expect(await r.skip(10_001)).toBe(10_001);
  pos += 10_001;
  expectBytes(await r.read(SIZE), FILE.subarray(pos), 'the rest'); // fewer than asked
  expectBytes(await r.read(10), new Uint8Array(0));
  expect(await r.skip(10)).toBe(0);
  await r.close();
}

describe('Blob / File sources', () => {
  it('reads random ranges and sequentially; the name is given, the File’s, or a default', async () => {
    const blob = new Blob([FILE]);
    const src = await openByteSource({ blob, name: 'given.gguf' });
    expect(src.name).toBe('given.gguf');
    expect(src.size).toBe(SIZE);
    expect(isUrlSource(src)).toBe(false);
    await expectRandomReads(src);
    await expectSequential(src, offSize(100, 900));
    expect((await openByteSource({ blob: new File([FILE], 'file.gguf') })).name).toBe('file.gguf');
    expect((await openByteSource({ blob })).name).toBe('the model file');
  });
});

describe('path sources', () => {
  const tempDir = useTempDirs();

  it('reads random ranges and sequentially, size from the file', async () => {
    const path = join(tempDir('byte-source-'), 'm.gguf');
    writeFileSync(path, FILE);
    const src = await openByteSource({ path });
    expect(src.name).toBe(path);
    expect(src.size).toBe(SIZE);
    expect(isUrlSource(src)).toBe(false);
    await expectRandomReads(src);
    await expectSequential(src, offSize(100, 900));
  });

  it('a missing file or a folder is invalid_argument, with the path', async () => {
    const dir = tempDir('byte-source-');
    const missing = await rejection(openByteSource({ path: join(dir, 'nope.gguf') }));
    expect(isEngineError(missing, 'invalid_argument')).toBe(true);
    expect(missing.message).toBe(`cannot open model file ${join(dir, 'nope.gguf')}: no such file`);
    const folder = await rejection(openByteSource({ path: dir }));
    expect(isEngineError(folder, 'invalid_argument')).toBe(true);
    expect(folder.message).toBe(`cannot open model file ${dir}: not a regular file`);
  });
});

describe('other inputs', () => {
  it('{ bytes } is returned as it is; a source of no known kind is invalid_argument', async () => {
    const own = await openByteSource({ blob: new Blob([FILE]) });
    expect(await openByteSource({ bytes: own })).toBe(own);
    const e = await rejection(openByteSource({ synthetic: 'synthetic:tiny-f32' }));
    expect(isEngineError(e, 'invalid_argument')).toBe(true);
    expect(e.message).toBe('model source must be { url }, { blob } or { path }');
  });

  it('a URL where there is no fetch is a network error', async () => {
    vi.stubGlobal('fetch', undefined);
    const e = await rejection(openByteSource({ url: 'http://h/m.gguf' }));
    expect(isEngineError(e, 'network')).toBe(true);
    expect(e.message).toBe('this environment has no fetch; cannot load a model by URL');
  });
});

describe('URL sources', () => {
  it('reads random ranges with one range request each, the size from Content-Range', async () => {
    const src = await openByteSource({ url: `${base}/range` });
    expect(isUrlSource(src)).toBe(true);
    expect(src.name).toBe(`${base}/range`);
    expect(src.size).toBeUndefined();
    const [s, e] = [offSize(100, 1000), offSize(50_000, 1000)];
    expectBytes(await src.read(s, e), FILE.subarray(s, e));
    expect(requests).toEqual([{ method: 'GET', path: '/range', range: `bytes=${s}-${e - 1}` }]);
    expect(src.size).toBe(SIZE);
    await expectRandomReads(src);
    // Past the end with the size known: no request at all.
    const before = requests.length;
    await src.read(SIZE, SIZE + 1);
    expect(requests.length).toBe(before);
  });

  it('past the end before the size is known: the 416 gives an empty read and the size', async () => {
    const src = await openByteSource({ url: `${base}/range` });
    expectBytes(await src.read(SIZE + 3, SIZE + 100), new Uint8Array(0));
    expect(requests.map((r) => r.range)).toEqual([`bytes=${SIZE + 3}-${SIZE + 99}`]);
    expect(src.size).toBe(SIZE);
    const r = await src.openSequential(SIZE);
    expectBytes(await r.read(5), new Uint8Array(0));
    expect(await r.skip(5)).toBe(0);
    await r.close();
  });

  it('reads sequentially: an open-ended range, or no Range header from byte 0', async () => {
    const src = await openByteSource({ url: `${base}/range` });
    const start = offSize(100, 900);
    await expectSequential(src, start);
    await expectSequential(src, 0);
    expect(requests.map((r) => r.range)).toEqual([`bytes=${start}-`, undefined]);
  });

  it('a server that ignores Range: the whole file is read up to the start, the size from Content-Length', async () => {
    const src = await openByteSource({ url: `${base}/norange` });
    const [s, e] = [offSize(70_000, 1000), offSize(90_000, 1000)];
    expectBytes(await src.read(s, e), FILE.subarray(s, e));
    expect(requests).toEqual([{ method: 'GET', path: '/norange', range: `bytes=${s}-${e - 1}` }]);
    expect(src.size).toBe(SIZE);
    await expectRandomReads(src);
    await expectSequential(src, offSize(100, 900));
  });

  it('no Content-Length and no HEAD: the size stays unknown, the reads are right', async () => {
    const src = await openByteSource({ url: `${base}/nolength` });
    await src.probeSize?.();
    expect(requests).toEqual([{ method: 'HEAD', path: '/nolength', range: undefined }]);
    expect(src.size).toBeUndefined();
    const [s, e] = randomRange();
    expectBytes(await src.read(s, e), FILE.subarray(s, Math.min(e, SIZE)));
    expectBytes(await src.read(SIZE + 1, SIZE + 2), new Uint8Array(0));
    expect(src.size).toBeUndefined();
  });

  it('probeSize learns the size with one HEAD, then sends nothing more', async () => {
    const src = await openByteSource({ url: `${base}/range` });
    await src.probeSize?.();
    await src.probeSize?.();
    expect(src.size).toBe(SIZE);
    expect(requests).toEqual([{ method: 'HEAD', path: '/range', range: undefined }]);
  });

  it('the fetch given is the one used', async () => {
    const calls: [string, RequestInit | undefined][] = [];
    const fetchFn: typeof fetch = async (input, init) => {
      calls.push([String(input), init]);
      return new Response(FILE.slice(10, 20), {
        status: 206,
        headers: { 'Content-Range': `bytes 10-19/${SIZE}` },
      });
    };
    const src = await openByteSource({ url: 'http://nowhere.invalid/m.gguf' }, { fetch: fetchFn });
    expectBytes(await src.read(10, 20), FILE.subarray(10, 20));
    expect(calls.map(([u, init]) => [u, init?.headers])).toEqual([
      ['http://nowhere.invalid/m.gguf', { Range: 'bytes=10-19' }],
    ]);
    expect(src.size).toBe(SIZE);
  });

  it('a 206 from another byte than asked is a network error', async () => {
    const src = await openByteSource({ url: `${base}/wrongstart` });
    const e = await rejection(src.read(1000, 2000));
    expect(isEngineError(e, 'network')).toBe(true);
    expect(e.message).toBe(
      `${base}/wrongstart: asked the server for bytes from 1,000 but it sent bytes from 1,001`,
    );
  });

  it('error statuses are http_status errors naming the URL', async () => {
    for (const [code, tail] of [
      [404, ' Not Found: no file at this URL (check it)'],
      [403, ' Forbidden: access denied (the model may be gated or need a token)'],
      [502, ' Bad Gateway: the server failed (try again later)'],
    ] as const) {
      const url = `${base}/status/${code}`;
      const src = await openByteSource({ url });
      const e = await rejection(src.read(0, 100));
      expect(isEngineError(e, 'http_status'), String(code)).toBe(true);
      expect(e.message).toBe(`downloading ${url} failed with HTTP ${code}${tail}`);
    }
  });

  it('a server that sends nothing times out after timeoutMs', async () => {
    const src = await openByteSource({ url: `${base}/hang` }, { timeoutMs: 150 });
    const e = await rejection(src.read(0, 100));
    expect(isEngineError(e, 'timeout')).toBe(true);
    expect(e.message).toBe(
      `${base}/hang sent nothing for 150 ms; the server is not answering (check the URL and your connection, or raise the timeout: timeoutMs, or --timeout-s on npm run bench)`,
    );
  });

  it('a transfer that stalls times out saying how much arrived', async () => {
    const n = offSize(300, 600);
    const src = await openByteSource({ url: `${base}/stall/${n}` }, { timeoutMs: 200 });
    const r = await src.openSequential(0);
    expectBytes(await r.read(n), FILE.subarray(0, n));
    const e = await rejection(r.read(100));
    expect(isEngineError(e, 'timeout')).toBe(true);
    expect(e.message).toMatch(
      new RegExp(`^${base}/stall/${n} stalled: 0 MB \\(${n} bytes\\) arrived, then nothing for 200 ms`),
    );
    await r.close();
  });

  it("the caller's abort ends a waiting request as aborted; an aborted signal sends none", async () => {
    const src = await openByteSource({ url: `${base}/hang` }, { timeoutMs: 0 });
    const ac = new AbortController();
    const p = src.read(0, 100, ac.signal);
    setTimeout(() => ac.abort(), 50);
    const e = await rejection(p);
    expect(isEngineError(e, 'aborted')).toBe(true);
    expect(e.message).toBe(`loading ${base}/hang was aborted`);
    requests.length = 0;
    const e2 = await rejection(src.read(0, 100, ac.signal));
    expect(isEngineError(e2, 'aborted')).toBe(true);
    expect(requests).toEqual([]);
  });

  it('a refused connection is a network error with the reason', async () => {
    // A port that was just free: listen, note it, close.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const url = `http://127.0.0.1:${port}/m.gguf`;
    const src = await openByteSource({ url });
    const e = await rejection(src.read(0, 10));
    expect(isEngineError(e, 'network')).toBe(true);
    expect(e.message).toBe(
      `could not fetch ${url}: fetch failed (ECONNREFUSED) (check the URL and your connection)`,
    );
  });
});
