/**
 * Downloads one file into a {@link CacheStore}: HTTP range requests of `requestBytes` each, written in whole
 * blocks of `blockBytes` with each block's SHA-256 recorded, resumable (within a run after a cut
 * connection, and across runs or closed tabs from the last whole block), checked against the size and,
 * where known, the file's SHA-256.
 *
 * HTTP facts used (RFC 9110): `Range: bytes=a-b` answered by 206 with `Content-Range: bytes a-b/size`, or
 * by 200 with the whole file when the server ignores ranges; `If-Range: ETAG` makes a server send the
 * whole (new) file with 200 when the file changed since the ETag, so a resume never splices two versions.
 */
import { createSHA256, type IHasher, sha256 as wasmSha256 } from 'hash-wasm';
import { EngineError, isEngineError } from '../core/errors.ts';
import {
  DEFAULT_TIMEOUT_MS,
  htmlInsteadOfFileError,
  httpStatusError,
  RequestControl,
  totalFromContentRange,
} from '../net/byte-source.ts';
import { fetchOf, NO_STORE, type RemoteFileInfo, sha256FromEtag, strongEtag } from './remote-file.ts';
import { type CacheStore, type EntryMeta, storageError } from './store.ts';

/** Default block size: 16 MiB. */
export const DEFAULT_BLOCK_BYTES = 16 * 1024 * 1024;
/** Default size of one range request: 64 MiB. */
export const DEFAULT_REQUEST_BYTES = 64 * 1024 * 1024;
/** Default number of retries after a failed request or a cut connection. */
export const DEFAULT_RETRIES = 3;

/** Download progress. */
export interface DownloadProgress {
  phase: 'download' | 'verify';
  bytesDone: number;
  bytesTotal: number;
  /** Bytes/s over the last few seconds (download). */
  bytesPerSec?: number;
  /** ms left at that rate (download). */
  etaMs?: number;
  note?: string;
}

/** Options for {@link downloadToStore}. */
export interface DownloadOptions {
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Idle timeout per request, ms (no response or no bytes for this long). Default 30,000. */
  timeoutMs?: number;
  blockBytes?: number;
  requestBytes?: number;
  retries?: number;
  /** Delay before retry k (0-based), ms; default 500·2^k. */
  retryDelayMs?: (k: number) => number;
  /** Expected SHA-256 (hex). */
  sha256?: string;
  onProgress?: (p: DownloadProgress) => void;
  /**
   * Checks the whole stored file before it is called complete (the library: its GGUF header against its
   * size). A throw removes the entry and ends the download with that error.
   */
  checkComplete?: (meta: EntryMeta) => Promise<void>;
}

const fmt = (n: number) => n.toLocaleString('en-US');
const MB = (n: number) => `${(n / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/**
 * SHA-256 of bytes as hex: WebCrypto (native, ~0.7 GB/s here) where present (secure contexts, Node), else
 * hash-wasm.
 */
export async function digestHex(bytes: Uint8Array): Promise<string> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle) return hex(new Uint8Array(await subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));
  return wasmSha256(bytes);
}

/** An incremental SHA-256 (hash-wasm's WebAssembly one: WebCrypto has no streaming digest). */
async function newHasher(): Promise<IHasher> {
  const h = await createSHA256();
  h.init();
  return h;
}

/**
 * Transfer rate over a sliding window of a few seconds, fed the bytes received so far in this run (a count
 * that only grows: not the file position, which starts at a resumed offset and goes back to 0 on a
 * restart, and would give rates inflated by earlier runs' bytes or below zero).
 */
class RateMeter {
  private samples: { t: number; bytes: number }[] = [];
  /** @param bytes bytes received in this run so far (never decreasing). */
  add(bytes: number): void {
    const t = performance.now();
    this.samples.push({ t, bytes });
    while (this.samples.length > 2 && t - this.samples[0].t > 3000) this.samples.shift();
  }
  /** bytes/s (≥ 0), once there are two samples ≥ 100 ms apart. */
  rate(): number | undefined {
    const a = this.samples[0];
    const b = this.samples.at(-1);
    if (!a || !b || b.t - a.t < 100) return undefined;
    return Math.max(0, ((b.bytes - a.bytes) * 1000) / (b.t - a.t));
  }
}

const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46];

/**
 * The error for a download whose first bytes are not a GGUF's: an HTML page (a dev server's answer for a
 * missing file, an error or login page) is the file not found at `url` ('http_status'); anything else is
 * 'gguf_invalid', quoting the bytes.
 */
function notGgufError(url: string, head: Uint8Array, contentType: string | undefined): EngineError {
  const text = new TextDecoder().decode(head.subarray(0, 64));
  if (/^\s*</.test(text) || /html/i.test(contentType ?? ''))
    return new EngineError('http_status', `${htmlInsteadOfFileError(url).message}; nothing was kept`);
  return new EngineError(
    'gguf_invalid',
    `${url} is not a GGUF file: it starts with "${text.slice(0, 16).replace(/[^\x20-\x7e]/g, '.')}"; nothing was kept`,
  );
}

/**
 * One run of {@link downloadToStore}: where the bytes are (`pos`: stored + in `block`), the block being
 * filled, the whole file's hash so far, this run's byte count and rate, and the progress reports.
 */
class DownloadRun {
  /** Bytes received: stored, plus `fill` in `block`. */
  pos: number;
  block: Uint8Array;
  fill = 0;
  /** Bytes this run received (what the rate and a stall's message count). */
  downloaded = 0;
  readonly resumedFrom: number;
  private readonly meter = new RateMeter();

  constructor(
    private readonly store: CacheStore,
    private readonly meta: EntryMeta,
    private readonly size: number | undefined,
    private readonly expectedSha: string | undefined,
    public h: IHasher | undefined,
    private readonly onProgress: DownloadOptions['onProgress'],
    private readonly checkComplete?: DownloadOptions['checkComplete'],
  ) {
    this.pos = meta.bytesDone;
    this.resumedFrom = this.pos;
    this.block = new Uint8Array(
      size === undefined ? meta.blockBytes : Math.min(meta.blockBytes, Math.max(0, size - this.pos)),
    );
    this.meter.add(0);
  }

  report(): void {
    const { size, pos, resumedFrom } = this;
    const rate = this.meter.rate();
    this.onProgress?.({
      phase: 'download',
      bytesDone: pos,
      bytesTotal: size ?? 0,
      bytesPerSec: rate,
      etaMs: rate && size !== undefined ? (Math.max(0, size - pos) / rate) * 1000 : undefined,
      note: resumedFrom > 0 ? `resumed at ${MB(resumedFrom)}` : undefined,
    });
  }

  /** Forgets everything stored: the next bytes are the file's first. */
  async restartFromZero(): Promise<void> {
    const { store, meta, size } = this;
    await store.remove(meta.key);
    meta.blockDigests = [];
    meta.bytesDone = 0;
    meta.complete = false;
    this.h = this.expectedSha ? await newHasher() : undefined;
    this.pos = 0;
    this.fill = 0;
    this.block = new Uint8Array(size === undefined ? meta.blockBytes : Math.min(meta.blockBytes, size));
  }

  /** Stores the filled part of the block as the entry's next block. */
  async commitBlock(): Promise<void> {
    const { store, meta, size } = this;
    const bytes = this.block.subarray(0, this.fill);
    await storeBlock(store, meta, bytes, size ?? this.pos);
    this.h?.update(bytes);
    this.fill = 0;
    this.block = new Uint8Array(
      size === undefined ? meta.blockBytes : Math.min(meta.blockBytes, Math.max(0, size - meta.bytesDone)),
    );
  }

  /**
   * Takes one piece of a response body: into the block (grown when the size is unknown), whole blocks
   * stored. The first 4 bytes of the file must be GGUF's magic, checked before anything is stored.
   * @throws EngineError 'http_status' or 'gguf_invalid' (notGgufError) when they are not; the entry is removed.
   */
  async take(chunk: Uint8Array, url: string, contentType: string | undefined): Promise<void> {
    const { store, meta, size } = this;
    const bs = meta.blockBytes;
    let piece = chunk;
    while (piece.length > 0) {
      if (size !== undefined && this.pos >= size) break;
      if (size === undefined && this.fill === this.block.length) {
        const grown = new Uint8Array(Math.min(bs, this.block.length * 2 || 65536));
        grown.set(this.block);
        this.block = grown;
      }
      const { block, fill } = this;
      const k = Math.min(piece.length, block.length - fill);
      block.set(piece.subarray(0, k), fill);
      // The first bytes decide whether this is a GGUF at all, before anything is stored.
      if (meta.blockDigests.length === 0 && fill < 4 && fill + k >= 4) {
        if (!GGUF_MAGIC.every((b, i) => block[i] === b)) {
          await store.remove(meta.key);
          throw notGgufError(url, block.subarray(0, fill + k), contentType);
        }
      }
      this.fill += k;
      this.pos += k;
      this.downloaded += k;
      piece = piece.subarray(k);
      if (this.fill === block.length && (size !== undefined || this.fill === bs)) await this.commitBlock();
    }
    this.meter.add(this.downloaded);
    this.report();
  }

  /**
   * After the last byte: the last block stored, the size, SHA-256 and `checkComplete` checked, the entry
   * completed.
   * @throws EngineError 'integrity' on a size or hash mismatch, or what `checkComplete` throws (the entry is
   *   removed).
   */
  async finish(url: string): Promise<EntryMeta> {
    const { store, meta, size, expectedSha, h } = this;
    if (this.fill > 0) await this.commitBlock();
    if (size === undefined) meta.size = meta.bytesDone;
    if (meta.bytesDone !== meta.size) {
      await store.remove(meta.key);
      throw new EngineError(
        'integrity',
        `${url}: got ${fmt(meta.bytesDone)} bytes, expected ${fmt(meta.size)}; nothing was kept`,
      );
    }
    if (expectedSha && h) {
      const got = h.digest('hex');
      if (got !== expectedSha) {
        await store.remove(meta.key);
        throw new EngineError(
          'integrity',
          `${meta.name} has SHA-256 ${got}, expected ${expectedSha}: the download is corrupted or the file changed; nothing was kept`,
        );
      }
      meta.sha256Verified = true;
    }
    if (this.checkComplete) {
      try {
        await this.checkComplete(meta);
      } catch (e) {
        await store.remove(meta.key);
        throw e;
      }
    }
    await store.finish?.(meta.key);
    meta.complete = true;
    meta.lastUsedAt = new Date().toISOString();
    await store.putMeta(meta);
    return meta;
  }
}

/**
 * Checks a response to a request from byte `pos` (a range request when `useRange`), and what it says about
 * the server: range support (`meta.acceptRanges`), a file that changed. Returns 'restart' when the server
 * ignored the range of a resume (the caller starts again from zero), 'refused' when it answered a range
 * request from zero with the whole file, 'ok' otherwise.
 * @throws EngineError 'integrity' (HTTP 416, another ETag, a Content-Range not where asked), 'http_status'.
 */
function checkResponse(
  res: Response,
  pos: number,
  meta: EntryMeta,
  size: number | undefined,
  useRange: boolean,
): 'restart' | 'refused' | 'ok' {
  const url = meta.url;
  if (res.status === 416) {
    // RFC 9110 §15.5.17: a 416 carries the file's current length as `Content-Range: bytes */LENGTH`.
    const now = /^bytes \*\/(\d+)$/.exec(res.headers.get('content-range')?.trim() ?? '')?.[1];
    const said = `announced ${fmt(size ?? 0)} bytes`;
    throw new EngineError(
      'integrity',
      (now !== undefined && Number(now) === pos
        ? `${url}: the server ${said} but has ${fmt(pos)}, all received (HTTP 416 for the rest): its ` +
          'announced size is wrong, or the file changed on the server'
        : `${url} has no bytes from ${fmt(pos)} (HTTP 416${now !== undefined ? `; it is now ${fmt(Number(now))} bytes` : ''}) ` +
          `though the server ${said}: the file changed on the server, or its announced size is wrong`) +
        '; nothing was kept',
    );
  }
  if (!res.ok) throw httpStatusError(res, 'downloading', url);
  if (res.status === 200 && pos > 0) {
    // The server ignored the range (no support), or the file changed (If-Range): start again.
    const changed = strongEtag(meta.etag) && res.headers.get('etag') && res.headers.get('etag') !== meta.etag;
    if (changed) throw new EngineError('integrity', `${url} changed on the server during the download`);
    meta.acceptRanges = false;
    return 'restart';
  }
  if (res.status === 200 && useRange) {
    meta.acceptRanges = false;
    return 'refused';
  }
  if (res.status === 206) {
    meta.acceptRanges = true;
    const cr = res.headers.get('content-range');
    const start = Number(cr?.match(/bytes\s+(\d+)-/)?.[1] ?? Number.NaN);
    const total = totalFromContentRange(cr);
    if (start !== pos || (total !== undefined && size !== undefined && total !== size)) {
      throw new EngineError(
        'integrity',
        `${url}: asked for bytes from ${fmt(pos)} of ${fmt(size ?? 0)}, got "${cr}"; the file changed on the server`,
      );
    }
  }
  return 'ok';
}

/**
 * The error a download ends with once retries are spent (or the error is not transient): what was kept,
 * and for a server without range support, that the next try starts again (the run is restarted from zero).
 */
async function finalError(
  err: EngineError,
  cause: unknown,
  failures: number,
  rangeRefused: boolean,
  run: DownloadRun,
  meta: EntryMeta,
): Promise<EngineError> {
  if (rangeRefused) {
    await run.restartFromZero();
    return new EngineError(
      err.code,
      `${err.message} (after ${failures} retries). The server does not support range requests, so the ` +
        'download cannot be resumed: the next try starts again from the beginning',
      { cause },
    );
  }
  return new EngineError(
    err.code,
    meta.bytesDone > 0
      ? `${err.message} (after ${failures} retries; the ${MB(meta.bytesDone)} downloaded so far are kept: ` +
          'try again to resume)'
      : // Only whole blocks are kept: nothing to resume from before the first one.
        `${err.message} (after ${failures} retries; no whole block of ${MB(meta.blockBytes)} had arrived, so nothing was kept: try again)`,
    { cause },
  );
}

/**
 * Downloads `meta.url` into `store`, resuming from `meta.bytesDone` where the server allows it. `meta` is
 * updated in place and saved after each block. Returns the completed record.
 *
 * An aborted or failed download keeps its whole blocks for a later resume, except: not a GGUF, a size or
 * SHA-256 mismatch (EngineError 'integrity'), and storage running out ('quota_exceeded'), which delete the
 * entry.
 * @throws EngineError 'quota_exceeded' (also up front, when `estimate` says the file will not fit),
 *   'integrity', 'gguf_invalid', 'http_status', 'network' (after `retries`), 'timeout', 'aborted'.
 */
export async function downloadToStore(
  store: CacheStore,
  meta: EntryMeta,
  info: RemoteFileInfo,
  opts: DownloadOptions = {},
): Promise<{ meta: EntryMeta; downloadedBytes: number }> {
  const f = fetchOf(opts);
  const { signal } = opts;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const requestBytes = Math.max(1, opts.requestBytes ?? DEFAULT_REQUEST_BYTES);
  const retries = opts.retries ?? DEFAULT_RETRIES;
  const delay = opts.retryDelayMs ?? ((k: number) => 500 * 2 ** k);
  const url = meta.url;
  const size = meta.size >= 0 ? meta.size : undefined;
  const expectedSha = (opts.sha256 ?? meta.sha256 ?? sha256FromEtag(info.etag))?.toLowerCase();
  meta.sha256 = expectedSha;

  // Up-front quota check (the store's estimate: navigator.storage.estimate() or the disk).
  if (size !== undefined) await checkQuota(store, meta.name, size - meta.bytesDone);

  // Hash of the whole file, when there is one to check against: re-hash what is already stored.
  let h = expectedSha ? await newHasher() : undefined;
  if (meta.bytesDone > 0) {
    const ok = await verifyStoredBlocks(store, meta, h, opts.onProgress, signal);
    if (!ok) {
      await store.remove(meta.key);
      meta.blockDigests = [];
      meta.bytesDone = 0;
      h = expectedSha ? await newHasher() : undefined;
    }
  }
  const run = new DownloadRun(store, meta, size, expectedSha, h, opts.onProgress, opts.checkComplete);

  let failures = 0;
  /** The server answered a range request with the whole file: it cannot resume. */
  let rangeRefused = false;
  while (size === undefined || run.pos < size) {
    if (signal?.aborted) throw new EngineError('aborted', `downloading ${url} was aborted`);
    const pos = run.pos;
    const useRange = pos > 0 || (size !== undefined && size > requestBytes);
    const end = size === undefined ? undefined : Math.min(size, pos + requestBytes);
    const headers: Record<string, string> = {};
    if (useRange) {
      headers.Range = `bytes=${pos}-${end === undefined ? '' : end - 1}`;
      const tag = strongEtag(meta.etag);
      if (tag) headers['If-Range'] = tag;
    }
    // `downloaded`: what earlier attempts of this run got, so a stall after a retry still says it.
    const rc = new RequestControl(url, timeoutMs, signal, run.downloaded);
    try {
      const res = await rc.wait(() => f(url, { headers, cache: NO_STORE, signal: rc.ctl.signal }));
      const answer = checkResponse(res, pos, meta, size, useRange);
      if (answer !== 'ok') rangeRefused = true;
      if (answer === 'restart') {
        opts.onProgress?.({
          phase: 'download',
          bytesDone: 0,
          bytesTotal: size ?? 0,
          note: 'the server does not support range requests: starting again from the beginning',
        });
        await run.restartFromZero();
      }
      const bodyEnd = res.status === 200 ? size : end;
      const reader = res.body?.getReader();
      if (!reader) throw new EngineError('network', `${url}: the response has no body`);
      const contentType = res.headers.get('content-type') ?? undefined;
      try {
        for (;;) {
          const r = await rc.wait(() => reader.read());
          if (r.done) break;
          rc.arrived(r.value.length);
          await run.take(r.value, url, contentType);
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
      if (size === undefined) break;
      if (bodyEnd !== undefined && run.pos < bodyEnd) {
        throw new EngineError(
          'network',
          `${url}: the connection closed after ${fmt(run.pos)} of ${fmt(size)} bytes`,
        );
      }
      failures = 0;
    } catch (e) {
      const err = rc.mapError(e);
      const transient =
        err.code === 'network' ||
        err.code === 'timeout' ||
        (err.code === 'http_status' && /HTTP 5\d\d/.test(err.message));
      if (!transient || failures >= retries || signal?.aborted) {
        if (err.code === 'integrity') await store.remove(meta.key);
        if (!transient || signal?.aborted) throw err;
        throw await finalError(err, e, failures, rangeRefused, run, meta);
      }
      failures++;
      opts.onProgress?.({
        phase: 'download',
        bytesDone: run.pos,
        bytesTotal: size ?? 0,
        note: `connection lost at ${MB(run.pos)}; retrying (${failures} of ${retries})`,
      });
      await new Promise((r) => setTimeout(r, delay(failures - 1)));
    } finally {
      rc.dispose();
    }
  }
  return { meta: await run.finish(url), downloadedBytes: run.downloaded };
}

/**
 * Appends the next whole block to an entry: writes it, records its SHA-256 and the new `bytesDone`, saves
 * the record. Storage running out deletes the entry and throws EngineError('quota_exceeded').
 * @param total the file's size, for the message.
 */
export async function storeBlock(
  store: CacheStore,
  meta: EntryMeta,
  bytes: Uint8Array,
  total: number,
): Promise<void> {
  try {
    await store.writeBlock(meta.key, meta.blockDigests.length, meta.blockBytes, bytes);
  } catch (e) {
    const err = storageError(e, `storing ${meta.name}`);
    if (isEngineError(err, 'quota_exceeded')) {
      await store.remove(meta.key);
      throw new EngineError(
        'quota_exceeded',
        `storage ran out after ${MB(meta.bytesDone)} of ${MB(total)} of ${meta.name}; ` +
          'what was written has been deleted (delete cached models or free space, then try again)',
        { cause: e },
      );
    }
    throw err;
  }
  meta.blockDigests.push(await digestHex(bytes));
  meta.bytesDone += bytes.length;
  await store.putMeta(meta);
}

/** Refuses up front (EngineError 'quota_exceeded', with the numbers) what the store says will not fit. */
export async function checkQuota(store: CacheStore, name: string, need: number): Promise<void> {
  const est = await store.estimate();
  if (est?.quota !== undefined && est.usage !== undefined && need > est.quota - est.usage) {
    throw new EngineError(
      'quota_exceeded',
      `${name} needs ${MB(need)} more but only ${MB(Math.max(0, est.quota - est.usage))} of storage is free ` +
        `(${MB(est.usage)} used of ${MB(est.quota)}); delete cached models or free disk space`,
    );
  }
}

/**
 * Reads back the stored blocks of a partial entry, checking each against its recorded SHA-256 and feeding
 * `hasher`. False when a block is missing or damaged (the caller starts over).
 */
async function verifyStoredBlocks(
  store: CacheStore,
  meta: EntryMeta,
  hasher: IHasher | undefined,
  onProgress: DownloadOptions['onProgress'],
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const bs = meta.blockBytes;
  for (let i = 0; i < meta.blockDigests.length; i++) {
    if (signal?.aborted) throw new EngineError('aborted', `checking ${meta.name} was aborted`);
    const want = Math.min(bs, meta.bytesDone - i * bs);
    const bytes = await store.read(meta.key, i * bs, i * bs + want, bs);
    if (bytes.length !== want || (await digestHex(bytes)) !== meta.blockDigests[i]) return false;
    hasher?.update(bytes);
    onProgress?.({
      phase: 'verify',
      bytesDone: i * bs + want,
      bytesTotal: meta.bytesDone,
      note: 'checking the part already downloaded',
    });
  }
  return true;
}
