/**
 * A model host for the library's tests, on 127.0.0.1: serves GGUF files with range requests and counts
 * the body bytes it sends, so a test can tell a download from a cache hit. Used in-process by the Node
 * tests ({@link startModelServer}) and as a Vitest global setup for the browser tests (default export;
 * the URL reaches them through `inject('libraryServer')`, and they steer it through `/_control/…`).
 *
 * Routes (NAME is a served file):
 * - `/range/NAME`: HEAD and GET with `Range`, `ETag`, `Accept-Ranges: bytes` (If-Range honoured).
 * - `/norange/NAME`: ignores `Range` (always 200, the whole file) and sends no `Accept-Ranges`.
 * - `/slow/NAME`: like `/range/`, sent 1 MiB every 40 ms, pausing at {@link ModelServer.hold}'s offset.
 * - `/cut/NAME`: like `/range/`, but the first GET after a reset closes the connection half-way.
 * - `/cutnorange/NAME`: like `/norange/`, cutting every GET half-way.
 * - `/html/NAME`: a 200 HTML page (what a login or error page looks like).
 * - `/status/CODE/NAME`: answers CODE.
 * - Hugging Face: `/api/models/OWNER/REPO/tree/REV[/DIR]` and `/OWNER/REPO/resolve/REV/PATH`, for the
 *   repository `test/models` at `main` holding every served file; `mirror/notree` serves the same files
 *   at `/resolve/` with no tree API (as some mirrors do).
 * - `/_control/stats` (JSON {@link ServerStats}), `/_control/reset`, `/_control/offline?on=1|0` (while
 *   on, every other request has its connection closed unanswered: what a browser sees with the network
 *   gone).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { openGguf } from '../gguf/reader.ts';
import { splitFileName, writeSplitGguf } from '../gguf/split.ts';
import { metadataEntriesFrom } from '../gguf/writer.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { collectTensorData } from './gguf-util.ts';
import { stories260kPath } from './models.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    libraryServer: string;
  }
}

/** What the server counted since the last reset. */
export interface ServerStats {
  /** Body bytes sent, all requests. */
  bodyBytes: number;
  /** Every request: method, path, Range header. */
  requests: {
    method: string;
    path: string;
    range?: string;
    /** The If-Range header, where sent. */
    ifRange?: string;
    /** Body bytes sent in answer. */
    bytes?: number;
  }[];
}

/** A running server. */
export interface ModelServer {
  url: string;
  stats: ServerStats;
  /** Reset: counts cleared, cuts re-armed, offline and hold lifted. */
  reset(): void;
  /**
   * `/slow/` responses send nothing past file offset `at` (the connection stays open) until the hold is
   * lifted (`undefined`, or a reset): a download that stops at a known byte, whatever the machine's load.
   */
  hold(at: number | undefined): void;
  /** Replaces a served file (a changed upstream file gets a new ETag). */
  setFile(name: string, bytes: Uint8Array): void;
  close(): Promise<void>;
}

const etagOf = (b: Uint8Array) => `"${createHash('sha256').update(b).digest('hex')}"`;

/** A server's state: its files, what it counted, and the switches the tests steer (cuts, offline, hold). */
interface HostState {
  files: Map<string, Uint8Array>;
  etags: Map<string, string>;
  stats: ServerStats;
  /** Each response's entry in `stats.requests`, which its sent bytes are added to. */
  records: WeakMap<ServerResponse, ServerStats['requests'][number]>;
  /** Files whose first `/cut/` GET has been cut since the last reset. */
  cutDone: Set<string>;
  /** While on, every request but `/_control/…` has its connection closed unanswered. */
  offline: boolean;
  /** `/slow/` sends nothing past this file offset while set. */
  holdAt: number | undefined;
}

/** Counts `n` body bytes sent in answer to `res`. */
function count(st: HostState, res: ServerResponse, n: number): void {
  st.stats.bodyBytes += n;
  const rec = st.records.get(res);
  if (rec) rec.bytes = (rec.bytes ?? 0) + n;
}

/**
 * Answers `status` with `headers` and `body`: whole, cut (the connection closed after `cutAt` bytes), or
 * slowly (`slow`: 1 MiB every 40 ms, honouring the hold; `start` is the body's offset in the file).
 */
function send(
  st: HostState,
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body?: Uint8Array,
  cutAt?: number,
  slow = false,
  start = 0,
): void {
  res.writeHead(status, headers);
  if (!body) return void res.end();
  if (slow) {
    // 1 MiB every 40 ms; counts what it really sent (a client that goes away stops it). While a hold is
    // set, nothing past file offset `holdAt` is sent until it is lifted (the connection stays open).
    let o = 0;
    const next = (): void => {
      if (o >= body.length || res.destroyed) return void res.end();
      const room = st.holdAt === undefined ? 1 << 20 : Math.min(1 << 20, st.holdAt - (start + o));
      if (room <= 0) return void setTimeout(next, 20);
      const piece = body.subarray(o, o + room);
      o += piece.length;
      count(st, res, piece.length);
      res.write(piece, () => setTimeout(next, 40));
    };
    return void next();
  }
  if (cutAt !== undefined && cutAt < body.length) {
    const part = body.subarray(0, cutAt);
    count(st, res, part.length);
    res.write(part, () => setTimeout(() => res.socket?.destroy(), 20));
    return;
  }
  count(st, res, body.length);
  res.end(body);
}

/** Serves the file `name` in `mode` (`range`, `norange`, `cut`, `cutnorange`, `slow`, `hf`; see the routes). */
function serveFile(
  st: HostState,
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  mode: string,
): void {
  const file = st.files.get(name);
  if (!file)
    return void send(
      st,
      res,
      404,
      { 'Content-Type': 'text/plain' },
      new TextEncoder().encode('no such file'),
    );
  const etag = st.etags.get(name) ?? '';
  const ranges = mode === 'range' || mode === 'cut' || mode === 'hf' || mode === 'slow';
  // A Last-Modified well in the past and no Cache-Control, as many static hosts send: browsers may then
  // answer requests from their HTTP cache (heuristic freshness) unless the request says not to.
  const base: Record<string, string> = {
    'Content-Type': 'application/octet-stream',
    ETag: etag,
    'Last-Modified': 'Mon, 02 Jan 2023 10:00:00 GMT',
  };
  if (ranges) base['Accept-Ranges'] = 'bytes';
  const head = req.method === 'HEAD';
  const range = req.headers.range;
  const ifRange = req.headers['if-range'];
  const m = ranges && range && (!ifRange || ifRange === etag) ? /bytes=(\d+)-(\d*)/.exec(range) : null;
  // Cut modes close the connection at the file's half-way point, in whichever response covers it.
  const half = Math.floor(file.length / 2);
  const cuts = !head && (mode === 'cutnorange' || (mode === 'cut' && !st.cutDone.has(name)));
  if (m) {
    const start = Number(m[1]);
    const end = Math.min(file.length - 1, m[2] ? Number(m[2]) : file.length - 1);
    if (start >= file.length)
      return void send(st, res, 416, { ...base, 'Content-Range': `bytes */${file.length}` });
    const body = file.subarray(start, end + 1);
    const headers = {
      ...base,
      'Content-Range': `bytes ${start}-${end}/${file.length}`,
      'Content-Length': String(body.length),
    };
    const cutAt = cuts && start <= half && half <= end ? half - start : undefined;
    if (cutAt !== undefined) st.cutDone.add(name);
    return void send(st, res, 206, headers, head ? undefined : body, cutAt, mode === 'slow', start);
  }
  if (cuts) st.cutDone.add(name);
  send(
    st,
    res,
    200,
    { ...base, 'Content-Length': String(file.length) },
    head ? undefined : file,
    cuts ? half : undefined,
    mode === 'slow',
  );
}

/** Reset: counts cleared, cuts re-armed, offline and hold lifted. */
function resetState(st: HostState): void {
  st.stats.bodyBytes = 0;
  st.stats.requests = [];
  st.cutDone = new Set();
  st.offline = false;
  st.holdAt = undefined;
}

/** The Hugging Face tree API's listing of the repository's folder `dir` (only the top folder has files). */
function hfTree(st: HostState, dir: string) {
  return [...st.files.entries()]
    .filter(([n]) => dir === '' && !n.includes('/'))
    .map(([n, b]) => ({
      type: 'file',
      path: n,
      size: b.length,
      oid: 'x',
      lfs: { oid: st.etags.get(n)?.slice(1, -1), size: b.length, pointerSize: 130 },
    }));
}

/** Answers one request (the routes in this file's header). */
function handle(st: HostState, req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Headers', 'Range, If-Range');
  res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
  res.setHeader(
    'Access-Control-Expose-Headers',
    'Content-Range, Content-Length, ETag, Accept-Ranges, Last-Modified',
  );
  const url = new URL(req.url ?? '/', 'http://x');
  const path = decodeURIComponent(url.pathname);
  if (path === '/_control/offline') {
    st.offline = url.searchParams.get('on') === '1';
    return void res.writeHead(204).end();
  }
  if (st.offline && !path.startsWith('/_control/')) return void req.socket.destroy();
  if (req.method === 'OPTIONS') return void res.writeHead(204).end();
  if (!path.startsWith('/_control/')) {
    const rec: ServerStats['requests'][number] = {
      method: req.method ?? 'GET',
      path,
      range: req.headers.range,
    };
    if (req.headers['if-range']) rec.ifRange = String(req.headers['if-range']);
    st.stats.requests.push(rec);
    st.records.set(res, rec);
  }
  if (path === '/_control/stats') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return void res.end(JSON.stringify(st.stats));
  }
  if (path === '/_control/reset') {
    resetState(st);
    return void res.writeHead(204).end();
  }
  const tree = /^\/api\/models\/test\/models\/tree\/main(?:\/(.*))?$/.exec(path);
  if (tree) {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return void res.end(JSON.stringify(hfTree(st, tree[1] ?? '')));
  }
  if (/^\/api\/models\//.test(path)) {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    return void res.end('{"error":"Repository not found"}');
  }
  // `mirror/notree` serves the same files with no tree API (some Hugging Face mirrors).
  const hf = /^\/(?:test\/models|mirror\/notree)\/resolve\/main\/(.+)$/.exec(path);
  if (hf) return void serveFile(st, req, res, hf[1], 'hf');
  const status = /^\/status\/(\d{3})\//.exec(path);
  if (status)
    return void send(
      st,
      res,
      Number(status[1]),
      { 'Content-Type': 'text/plain' },
      new TextEncoder().encode(`status ${status[1]}`),
    );
  if (path.startsWith('/html/')) {
    return void send(
      st,
      res,
      200,
      { 'Content-Type': 'text/html' },
      new TextEncoder().encode('<!doctype html><html><body>Sign in to continue</body></html>'),
    );
  }
  const mm = /^\/(range|norange|cut|cutnorange|slow)\/(.+)$/.exec(path);
  if (mm) return void serveFile(st, req, res, mm[2], mm[1]);
  send(st, res, 404, { 'Content-Type': 'text/plain' }, new TextEncoder().encode('not found'));
}

/** Starts a server for `files` (name → bytes). */
export async function startModelServer(files: Map<string, Uint8Array>): Promise<ModelServer> {
  const etags = new Map<string, string>();
  for (const [n, b] of files) etags.set(n, etagOf(b));
  const st: HostState = {
    files,
    etags,
    stats: { bodyBytes: 0, requests: [] },
    records: new WeakMap(),
    cutDone: new Set<string>(),
    offline: false,
    holdAt: undefined,
  };
  const server = createServer((req, res) => handle(st, req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats: st.stats,
    reset: () => resetState(st),
    hold(at) {
      st.holdAt = at;
    },
    setFile(name, bytes) {
      files.set(name, bytes);
      etags.set(name, etagOf(bytes));
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * The files the tests serve: `stories260K.gguf`, the same model in three parts
 * (`stories260K-0000k-of-00003.gguf`, written with our gguf-split writer), and `big.gguf` (a random
 * llama of about 44 MB).
 */
export async function testModelFiles(): Promise<Map<string, Uint8Array>> {
  const bytes = new Uint8Array(readFileSync(stories260kPath()));
  const files = new Map<string, Uint8Array>([['stories260K.gguf', bytes]]);
  const parts = await splitParts(bytes, 3);
  for (const [i, p] of parts.entries()) files.set(splitFileName('stories260K', i + 1, 3), p);
  // A random llama of about 44 MB (F32), big enough to span three 16 MiB cache blocks.
  files.set(
    'big.gguf',
    makeRandomLlamaGguf({
      seed: 7,
      nLayers: 2,
      nEmbd: 512,
      nFF: 1536,
      nHead: 8,
      nVocab: 4096,
      name: 'big-random',
    }),
  );
  return files;
}

/** Splits a GGUF (bytes) into `n` parts with {@link writeSplitGguf}. */
export async function splitParts(bytes: Uint8Array, n: number): Promise<Uint8Array[]> {
  const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]), name: 'model.gguf' });
  const { data } = await collectTensorData(file);
  const tensors = [...file.tensors.values()].map((t) => ({
    name: t.name,
    type: t.type,
    shape: t.shape,
    data: data.get(t.name) as Uint8Array,
  }));
  return writeSplitGguf({ metadata: metadataEntriesFrom(file), tensors, nParts: n });
}

/** Vitest global setup (browser project). */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startModelServer(await testModelFiles());
  project.provide('libraryServer', server.url);
  return () => server.close();
}
