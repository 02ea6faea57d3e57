/**
 * What a server says about a file, and the records the library keeps of it: the HEAD probe (or a 1-byte
 * range GET where HEAD is refused), ETags (a SHA-256 one checks the download; a strong one makes resumes
 * safe with `If-Range`), whether a stored copy is still the server's file, and a new entry's record.
 * download.ts fetches the bytes.
 */
import { EngineError } from '../core/errors.ts';
import {
  DEFAULT_TIMEOUT_MS,
  httpStatusError,
  plainContentLength,
  RequestControl,
  totalFromContentRange,
} from '../net/byte-source.ts';
import { type EntryMeta, entryKey, fileNameOf, META_VERSION } from './store.ts';

/**
 * Every library request bypasses the browser's HTTP cache: a freshness check answered from that cache
 * (heuristic freshness from Last-Modified) would never see a changed file, and a download kept there too
 * would store the model twice.
 */
export const NO_STORE: RequestCache = 'no-store';

/** What the server says about a file (a HEAD request, or a 1-byte range GET where HEAD is refused). */
export interface RemoteFileInfo {
  size?: number;
  etag?: string;
  lastModified?: string;
  acceptRanges: boolean;
  contentType?: string;
}

/** A strong ETag that is a SHA-256 (Hugging Face's LFS files), as lowercase hex; else undefined. */
export function sha256FromEtag(etag: string | undefined): string | undefined {
  const m = etag?.match(/^"?([0-9a-fA-F]{64})"?$/);
  return m ? m[1].toLowerCase() : undefined;
}

/** The ETag usable in `If-Range` (strong ones only: RFC 9110 §13.1.5). */
export function strongEtag(etag: string | undefined): string | undefined {
  return etag && !etag.startsWith('W/') ? etag : undefined;
}

/** The `fetch` to use: the caller's, else the global one. @throws EngineError 'network' where there is none. */
export function fetchOf(opts: { fetch?: typeof fetch }): typeof fetch {
  const f = opts.fetch ?? globalThis.fetch?.bind(globalThis);
  if (!f) throw new EngineError('network', 'this environment has no fetch; cannot download');
  return f;
}

/**
 * Asks the server about a file: HEAD, or `GET Range: bytes=0-0` where HEAD is refused (405/501).
 * @throws EngineError 'http_status' (404, 403, …), 'network', 'timeout', 'aborted'.
 */
export async function probeRemote(
  url: string,
  opts: { signal?: AbortSignal; fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<RemoteFileInfo> {
  const f = fetchOf(opts);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let rc = new RequestControl(url, timeoutMs, opts.signal);
  try {
    let res = await rc.wait(() => f(url, { method: 'HEAD', cache: NO_STORE, signal: rc.ctl.signal }));
    if (res.status === 405 || res.status === 501) {
      rc.dispose();
      rc = new RequestControl(url, timeoutMs, opts.signal);
      res = await rc.wait(() =>
        f(url, { headers: { Range: 'bytes=0-0' }, cache: NO_STORE, signal: rc.ctl.signal }),
      );
      await res.body?.cancel().catch(() => {});
      if (!res.ok) throw httpStatusError(res, 'checking', url);
      const ranged = res.status === 206;
      return {
        size: ranged ? totalFromContentRange(res.headers.get('content-range')) : plainContentLength(res),
        etag: res.headers.get('etag') ?? undefined,
        lastModified: res.headers.get('last-modified') ?? undefined,
        acceptRanges: ranged,
        contentType: res.headers.get('content-type') ?? undefined,
      };
    }
    if (!res.ok) throw httpStatusError(res, 'checking', url);
    return {
      size: plainContentLength(res),
      etag: res.headers.get('etag') ?? undefined,
      lastModified: res.headers.get('last-modified') ?? undefined,
      acceptRanges: /\bbytes\b/i.test(res.headers.get('accept-ranges') ?? ''),
      contentType: res.headers.get('content-type') ?? undefined,
    };
  } catch (e) {
    throw rc.mapError(e);
  } finally {
    rc.dispose();
  }
}

/** True when a stored copy still matches what the server describes. */
export function sameRemoteFile(meta: EntryMeta, info: RemoteFileInfo): boolean {
  if (info.size !== undefined && info.size !== meta.size) return false;
  if (meta.etag && info.etag) return meta.etag === info.etag;
  if (meta.lastModified && info.lastModified) return meta.lastModified === info.lastModified;
  return info.size !== undefined;
}

/** A new, empty record for a file. */
export function newMeta(url: string, spec: string, info: RemoteFileInfo, blockBytes: number): EntryMeta {
  const now = new Date().toISOString();
  return {
    version: META_VERSION,
    key: entryKey(url),
    url,
    spec,
    name: fileNameOf(url),
    size: info.size ?? -1,
    etag: info.etag,
    lastModified: info.lastModified,
    acceptRanges: info.acceptRanges,
    blockBytes,
    blockDigests: [],
    bytesDone: 0,
    complete: false,
    createdAt: now,
    lastUsedAt: now,
  };
}
