/**
 * Byte sources: one byte-range interface ({@link ByteSource}) over a URL (range requests with status,
 * timeout and abort handling: {@link RequestControl}, {@link httpStatusError}), a Blob/File, or a Node path,
 * and a front-to-back reader over any of them. The GGUF reader and the model library's downloader read
 * through these; nothing here knows GGUF.
 *
 * The module imports cleanly in a browser or worker: `node:fs/promises` is imported dynamically, and only
 * for `{ path }` sources.
 */
import { EngineError, isEngineError } from '../core/errors.ts';
import type { ModelSource } from '../core/types.ts';
import { fmtCount } from '../util/format.ts';

/** Default for {@link ByteSourceOptions.timeoutMs}. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Bytes as megabytes for people: 624288 → "0.6 MB". */
function fmtMB(n: number): string {
  return `${(n / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;
}

/** Reads a source front to back. */
export interface SequentialReader {
  /** Reads `n` bytes into a new array; fewer only when the source ends. */
  read(n: number): Promise<Uint8Array>;
  /** Skips `n` bytes; returns how many were skipped (fewer only when the source ends). */
  skip(n: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Random and sequential access to the bytes of a file. Other modules (the model library's verified cache
 * reader, src/library/cached-source.ts) implement it and pass it to gguf/reader.ts `openGguf` as `{ bytes }`.
 */
export interface ByteSource {
  /** For messages. */
  readonly name: string;
  /** Total size in bytes, where known. */
  readonly size: number | undefined;
  /** Reads bytes [start, end) (fewer at the end of the source). */
  read(start: number, end: number, signal?: AbortSignal): Promise<Uint8Array>;
  /** Opens a front-to-back reader positioned at `start`. */
  openSequential(start: number, signal?: AbortSignal): Promise<SequentialReader>;
  /** Tries to learn the size where it is unknown (URL: a HEAD request). */
  probeSize?(signal?: AbortSignal): Promise<void>;
}

/**
 * A front-to-back reader over a source with random access and a known size, positioned at `start`;
 * `onClose` runs when it is closed.
 */
export function sequentialReader(
  src: { readonly size: number; read(start: number, end: number): Promise<Uint8Array> },
  start: number,
  onClose?: () => void,
): SequentialReader {
  let pos = start;
  return {
    read: async (n) => {
      const bytes = await src.read(pos, pos + n);
      pos += bytes.length;
      return bytes;
    },
    skip: async (n) => {
      const k = Math.max(0, Math.min(n, src.size - pos));
      pos += k;
      return k;
    },
    close: async () => onClose?.(),
  };
}

/** EngineError 'aborted' for `what` ("loading URL", ...). */
export function abortedError(what: string): EngineError {
  return new EngineError('aborted', `${what} was aborted`);
}

/** @throws EngineError 'aborted' when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw abortedError(what);
}

class BlobSource implements ByteSource {
  readonly size: number;
  constructor(
    private readonly blob: Blob,
    readonly name: string,
  ) {
    this.size = blob.size;
  }

  async read(start: number, end: number): Promise<Uint8Array> {
    return new Uint8Array(await this.blob.slice(start, Math.min(end, this.size)).arrayBuffer());
  }

  async openSequential(start: number): Promise<SequentialReader> {
    return sequentialReader(this, start);
  }
}

type FsPromises = typeof import('node:fs/promises');
type FileHandle = import('node:fs/promises').FileHandle;

async function importFs(): Promise<FsPromises> {
  const mod = 'node:fs/promises';
  try {
    return (await import(/* @vite-ignore */ mod)) as FsPromises;
  } catch (e) {
    throw new EngineError(
      'invalid_argument',
      'a { path } model source needs Node.js file access; in a browser pass a { url } or a { blob }',
      { cause: e },
    );
  }
}

async function readFully(fh: FileHandle, out: Uint8Array, position: number): Promise<number> {
  let filled = 0;
  while (filled < out.length) {
    const { bytesRead } = await fh.read(out, filled, out.length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

class PathSource implements ByteSource {
  private constructor(
    private readonly fs: FsPromises,
    readonly name: string,
    readonly size: number,
  ) {}

  static async create(path: string): Promise<PathSource> {
    const fs = await importFs();
    let size: number;
    try {
      const st = await fs.stat(path);
      if (!st.isFile()) throw new Error('not a regular file');
      size = st.size;
    } catch (e) {
      throw new EngineError(
        'invalid_argument',
        `cannot open model file ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
        { cause: e },
      );
    }
    return new PathSource(fs, path, size);
  }

  private async open(): Promise<FileHandle> {
    try {
      return await this.fs.open(this.name, 'r');
    } catch (e) {
      throw new EngineError(
        'invalid_argument',
        `cannot open model file ${this.name}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }

  async read(start: number, end: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(end, this.size) - start);
    const fh = await this.open();
    try {
      const out = new Uint8Array(n);
      return out.subarray(0, await readFully(fh, out, start));
    } finally {
      await fh.close();
    }
  }

  async openSequential(start: number): Promise<SequentialReader> {
    const fh = await this.open();
    let pos = start;
    return {
      read: async (n) => {
        const out = new Uint8Array(n);
        const got = await readFully(fh, out, pos);
        pos += got;
        return got === n ? out : out.subarray(0, got);
      },
      skip: async (n) => {
        const k = Math.max(0, Math.min(n, this.size - pos));
        pos += k;
        return k;
      },
      close: () => fh.close(),
    };
  }
}

/**
 * One HTTP request's cancellation: the caller's signal, plus an idle timer re-armed around each wait
 * (for the response headers, then for each piece of the body). Callers report the body bytes they get
 * ({@link RequestControl.arrived}), so an idle timeout after some bytes says how much came before the
 * transfer stalled, not that the server sent nothing.
 */
export class RequestControl {
  readonly ctl = new AbortController();
  private timedOut = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort = () => this.ctl.abort();
  /** Body bytes received by this request. */
  private received = 0;

  /**
   * @param timeoutMs the idle timeout, ms (0 = none).
   * @param priorBytes bytes of the same transfer that arrived before this request (earlier attempts), for
   *   the timeout's message.
   */
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly priorBytes = 0,
  ) {
    throwIfAborted(signal, `loading ${url}`);
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Records `n` body bytes received. */
  arrived(n: number): void {
    this.received += n;
  }

  /** Runs one wait under the idle timer, mapping failures to EngineErrors. */
  async wait<T>(p: () => Promise<T>): Promise<T> {
    if (this.timeoutMs > 0) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.ctl.abort();
      }, this.timeoutMs);
    }
    // The wait ends when the request is aborted (by the caller or the idle timer) even if `p` does not
    // settle: Node's fetch can leave a body read pending after an abort once the body has fully arrived.
    let off = () => {};
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(this.ctl.signal.reason ?? new DOMException('aborted', 'AbortError'));
      if (this.ctl.signal.aborted) return fail();
      this.ctl.signal.addEventListener('abort', fail, { once: true });
      off = () => this.ctl.signal.removeEventListener('abort', fail);
    });
    try {
      const pending = p();
      pending.catch(() => {}); // settles after an abort, unheard
      return await Promise.race([pending, aborted]);
    } catch (e) {
      throw this.mapError(e);
    } finally {
      off();
      clearTimeout(this.timer);
    }
  }

  mapError(e: unknown): EngineError {
    if (isEngineError(e)) return e;
    if (this.signal?.aborted) return abortedError(`loading ${this.url}`);
    if (this.timedOut) {
      const got = this.priorBytes + this.received;
      if (got > 0)
        return new EngineError(
          'timeout',
          `${this.url} stalled: ${fmtMB(got)} (${fmtCount(got)} bytes) arrived, then nothing for ` +
            `${fmtCount(this.timeoutMs)} ms; the transfer stopped moving (check your connection and try again, ` +
            'or raise the timeout: timeoutMs, or --timeout-s on npm run bench)',
          { cause: e },
        );
      return new EngineError(
        'timeout',
        `${this.url} sent nothing for ${fmtCount(this.timeoutMs)} ms; the server is not answering ` +
          '(check the URL and your connection, or raise the timeout: timeoutMs, or --timeout-s on npm run bench)',
        { cause: e },
      );
    }
    // Node's fetch says only "fetch failed" or "terminated"; the reason (ECONNREFUSED, ENOTFOUND, a
    // closed socket) is in its cause. Cross-origin rules only exist in browsers.
    const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
    const detail = cause?.code ?? cause?.message;
    const inBrowser = typeof document !== 'undefined' || 'WorkerGlobalScope' in globalThis;
    return new EngineError(
      'network',
      `could not fetch ${this.url}: ${(e as Error)?.message ?? String(e)}${detail ? ` (${detail})` : ''} ` +
        (inBrowser
          ? '(check the URL, your connection, and that the server allows cross-origin requests)'
          : '(check the URL and your connection)'),
      { cause: e },
    );
  }

  /** Stops the timer, detaches from the caller's signal and cancels anything still in flight. */
  dispose(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.ctl.abort();
  }
}

/** Total size from `Content-Range: bytes a-b/N` or `bytes * /N`. */
export function totalFromContentRange(h: string | null): number | undefined {
  const m = h?.match(/\/\s*(\d+)\s*$/);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Length of an un-encoded body from `Content-Length`, where trustworthy. */
export function plainContentLength(res: Response): number | undefined {
  const enc = res.headers.get('content-encoding');
  if (enc && enc !== 'identity') return undefined;
  const h = res.headers.get('content-length');
  if (h === null) return undefined;
  const n = Number(h);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** A response body read in pieces under a {@link RequestControl}. */
class BodyReader implements SequentialReader {
  private pending: Uint8Array | undefined;
  private done = false;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  constructor(
    res: Response,
    private readonly rc: RequestControl,
  ) {
    this.reader = res.body?.getReader();
    if (!this.reader) this.done = true;
  }

  /** The next piece of the body, or undefined at its end. */
  private async next(): Promise<Uint8Array | undefined> {
    if (this.pending && this.pending.length > 0) {
      const p = this.pending;
      this.pending = undefined;
      return p;
    }
    if (this.done || !this.reader) return undefined;
    const reader = this.reader;
    const r = await this.rc.wait(() => reader.read());
    if (r.done) {
      this.done = true;
      return undefined;
    }
    this.rc.arrived(r.value.length);
    return r.value;
  }

  async read(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const piece = await this.next();
      if (!piece) return out.subarray(0, filled);
      const k = Math.min(piece.length, n - filled);
      out.set(piece.subarray(0, k), filled);
      filled += k;
      if (k < piece.length) this.pending = piece.subarray(k);
    }
    return out;
  }

  async skip(n: number): Promise<number> {
    let skipped = 0;
    while (skipped < n) {
      const piece = await this.next();
      if (!piece) break;
      const k = Math.min(piece.length, n - skipped);
      skipped += k;
      if (k < piece.length) this.pending = piece.subarray(k);
    }
    return skipped;
  }

  async close(): Promise<void> {
    this.pending = undefined;
    try {
      await this.reader?.cancel();
    } catch {
      // already finished or aborted
    }
    this.rc.dispose();
  }
}

/**
 * EngineError('http_status') for a failed response, with a hint for the common statuses.
 * `what` is the action ("downloading"), `name` the URL.
 */
export function httpStatusError(res: Response, what: string, name: string): EngineError {
  const hint =
    res.status === 404 || res.status === 410
      ? ': no file at this URL (check it)'
      : res.status === 401 || res.status === 403
        ? ': access denied (the model may be gated or need a token)'
        : res.status >= 500
          ? ': the server failed (try again later)'
          : '';
  return new EngineError(
    'http_status',
    `${what} ${name} failed with HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${hint}`,
  );
}

/**
 * The error for an HTML page where a model file was asked for by URL: what a web app's dev server (Vite's,
 * `npm run dev`) answers, with status 200, for a file it does not have, or an error or login page. Said as
 * "not found", by the URL, with code 'http_status' as for a 404.
 */
export function htmlInsteadOfFileError(url: string): EngineError {
  return new EngineError(
    'http_status',
    `${url} was not found: the server answered with an HTML page instead of a GGUF file; check the URL ` +
      "(a web app's server, such as npm run dev's, answers a file it does not have with its own page; else " +
      'it is an error or login page)',
  );
}

/** Whether `src` reads a URL over HTTP (so an HTML answer means a wrong link, not a bad file). */
export function isUrlSource(src: ByteSource): boolean {
  return src instanceof UrlSource;
}

class UrlSource implements ByteSource {
  size: number | undefined;
  /** Set once the server has answered a range request with the whole file (status 200). */
  ignoresRange = false;

  constructor(
    readonly name: string,
    private readonly fetchFn: typeof fetch,
    private readonly timeoutMs: number,
  ) {}

  private httpError(res: Response, what: string): EngineError {
    return httpStatusError(res, what, this.name);
  }

  /** Sends a GET for bytes [start, …) (`end` exclusive, or to the end of the file). */
  private async get(
    start: number,
    end: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ res: Response; rc: RequestControl; bodyStart: number }> {
    const rc = new RequestControl(this.name, this.timeoutMs, signal);
    try {
      const headers: Record<string, string> = {};
      if (start > 0 || end !== undefined)
        headers['Range'] = `bytes=${start}-${end === undefined ? '' : end - 1}`;
      const res = await rc.wait(() => this.fetchFn(this.name, { headers, signal: rc.ctl.signal }));
      if (res.status === 416) {
        // Range Not Satisfiable: `start` is at or past the end of the file.
        this.size ??= totalFromContentRange(res.headers.get('content-range'));
        return { res, rc, bodyStart: -1 };
      }
      if (!res.ok) throw this.httpError(res, 'downloading');
      if (res.status === 206) {
        const cr = res.headers.get('content-range');
        this.size ??= totalFromContentRange(cr);
        const m = cr?.match(/bytes\s+(\d+)-/);
        const bodyStart = m ? Number(m[1]) : start;
        if (bodyStart !== start) {
          throw new EngineError(
            'network',
            `${this.name}: asked the server for bytes from ${fmtCount(start)} but it sent bytes from ${fmtCount(bodyStart)}`,
          );
        }
        return { res, rc, bodyStart };
      }
      // 200: the whole file, the Range header ignored.
      if (headers['Range']) this.ignoresRange = true;
      this.size ??= plainContentLength(res);
      return { res, rc, bodyStart: 0 };
    } catch (e) {
      rc.dispose();
      throw rc.mapError(e);
    }
  }

  async read(start: number, end: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.size !== undefined && start >= this.size) return new Uint8Array(0);
    const reader = await this.openSequential(start, signal, end);
    try {
      return await reader.read(end - start);
    } finally {
      await reader.close();
    }
  }

  async openSequential(start: number, signal?: AbortSignal, end?: number): Promise<SequentialReader> {
    const { res, rc, bodyStart } = await this.get(start, end, signal);
    if (bodyStart < 0) {
      rc.dispose();
      return { read: async () => new Uint8Array(0), skip: async () => 0, close: async () => {} };
    }
    const body = new BodyReader(res, rc);
    try {
      if (bodyStart < start && (await body.skip(start - bodyStart)) < start - bodyStart) {
        await body.close();
        return { read: async () => new Uint8Array(0), skip: async () => 0, close: async () => {} };
      }
    } catch (e) {
      await body.close();
      throw e;
    }
    return body;
  }

  async probeSize(signal?: AbortSignal): Promise<void> {
    if (this.size !== undefined) return;
    const rc = new RequestControl(this.name, this.timeoutMs, signal);
    try {
      const res = await rc.wait(() => this.fetchFn(this.name, { method: 'HEAD', signal: rc.ctl.signal }));
      if (res.ok) this.size = plainContentLength(res);
    } catch (e) {
      if (isEngineError(e, 'aborted')) throw e;
      // The size is a nicety (early truncation checks); go on without it.
    } finally {
      rc.dispose();
    }
  }
}

/** What {@link openByteSource} opens: a model source, or any {@link ByteSource} (the library's cache). */
export type ByteSourceInput = ModelSource | { bytes: ByteSource };

/** Options for {@link openByteSource}. */
export interface ByteSourceOptions {
  /** fetch to use for URL sources (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /**
   * URL sources: the longest wait, in ms, for a server to answer a request or to send the next piece of
   * the body (an idle timeout, so a slow but moving download never times out). 0 = none. Default 30,000.
   */
  timeoutMs?: number;
}

/**
 * The byte source of `source`: a URL (range requests through `fetch`), a Blob/File, a Node path, or the
 * given {@link ByteSource}.
 * @throws EngineError 'network' (no fetch here), 'invalid_argument' (none of those), or what opening a
 *   path throws ('not_found', 'network').
 */
export async function openByteSource(
  source: ByteSourceInput,
  opts: ByteSourceOptions = {},
): Promise<ByteSource> {
  if ('bytes' in source) return source.bytes;
  if ('url' in source) {
    const fetchFn = opts.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetchFn)
      throw new EngineError('network', 'this environment has no fetch; cannot load a model by URL');
    return new UrlSource(source.url, fetchFn, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }
  if ('blob' in source) {
    const name = source.name ?? (source.blob as File).name ?? 'the model file';
    return new BlobSource(source.blob, name);
  }
  if ('path' in source) return PathSource.create(source.path);
  throw new EngineError('invalid_argument', 'model source must be { url }, { blob } or { path }');
}
