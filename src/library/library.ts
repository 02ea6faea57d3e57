/**
 * The model library: download a GGUF once, keep it, load it again from the cache (also with the network
 * gone), and manage what is kept. One API for the page (OPFS), the engine worker and Node (a directory).
 *
 * A load of a URL through the library:
 * 1. resolve the spec (URL or `hf:` shorthand, src/library/spec.ts); for Hugging Face, ask the tree API
 *    for the file's size and SHA-256 (and name the repository's GGUF files when the file is not there);
 * 2. a complete cached copy: one freshness check (HEAD; ETag, size, Last-Modified). Same file → use it;
 *    changed → download again; no answer → use it and say so (`offline`);
 * 3. otherwise download, resuming a partial copy (src/library/download.ts);
 * 4. hand the engine a {@link CachedByteSource} per file, which checks each block as it is read.
 * Split GGUF files (`-00001-of-0000N.gguf`) are N entries fetched in order; they list as one model.
 */
import { EngineError, isEngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import { missingSplitPartError, parseSplitName, splitPartName } from '../gguf/split.ts';
import { RequestControl } from '../net/byte-source.ts';
import { CachedByteSource, verifyEntry } from './cached-source.ts';
import {
  checkQuota,
  DEFAULT_BLOCK_BYTES,
  type DownloadProgress,
  downloadToStore,
  storeBlock,
} from './download.ts';
import { NO_STORE, newMeta, probeRemote, type RemoteFileInfo, sameRemoteFile } from './remote-file.ts';
import { type HfFileRef, hfTreeUrl, type ResolvedSpec, resolveModelSpec } from './spec.ts';
import {
  type CacheStore,
  type EntryMeta,
  entryKey,
  FsStore,
  fileNameOf,
  OpfsStore,
  type StorageEstimate,
} from './store.ts';

/** Options for a {@link ModelLibrary}. */
export interface LibraryOptions {
  fetch?: typeof fetch;
  /** Hugging Face endpoint for `hf:` (default https://huggingface.co). */
  hfEndpoint?: string;
  /** Idle timeout per request, ms (default 30,000). */
  timeoutMs?: number;
  /** Timeout of the freshness check of a cached copy, ms (default 10,000). */
  freshnessTimeoutMs?: number;
  /** Block size for new entries, bytes (default 16 MiB). */
  blockBytes?: number;
  /** Bytes per range request (default 64 MiB). */
  requestBytes?: number;
  /** Retries after a cut connection (default 3). */
  retries?: number;
  retryDelayMs?: (k: number) => number;
}

/** Options for {@link ModelLibrary.acquire}. */
/** Options of {@link ModelLibrary.remove} and {@link ModelLibrary.clear}. */
export interface RemoveOptions {
  /** Stops waiting for another process's download of the entry (EngineError 'aborted'). */
  signal?: AbortSignal;
  /** Called once when another process or tab holds the entry (downloading it): who ("process 1234"). */
  onWait?: (holder: string) => void;
}

export interface AcquireOptions {
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
  /** Expected SHA-256 of a single-file model (hex). */
  sha256?: string;
  /** Use a complete cached copy without any request. */
  offline?: boolean;
  /** Page base URL for relative URLs. */
  base?: string;
  /**
   * Check every block of a complete cached copy against its recorded SHA-256 before handing it out (a
   * damaged copy is deleted and downloaded again). For callers that read the file by path (the command
   * line, llama.cpp), which the checking {@link CachedByteSource} does not see.
   */
  verifyCached?: boolean;
  /** Called once when another process, tab or worker holds the file's lock (it is downloading it). */
  onWait?: (holder: string) => void;
}

/** A model ready to load: one verified source per file (split parts in order). */
export interface AcquiredModel {
  resolved: ResolvedSpec;
  parts: CachedByteSource[];
  /** True when nothing was downloaded. */
  fromCache: boolean;
  /** A cached copy was used because the server could not be reached. */
  offline: boolean;
  downloadedBytes: number;
  location: string;
}

/** One model in the library listing (split parts folded into one). */
export interface LibraryEntry {
  /** Key of the (first) file; pass to {@link ModelLibrary.remove}. */
  key: string;
  name: string;
  spec: string;
  url: string;
  /** Total bytes of all parts (expected). */
  size: number;
  /** Bytes stored so far. */
  storedBytes: number;
  complete: boolean;
  parts: number;
  /** Store keys of the parts that have a record, in part order (fewer than `parts` while some never started). */
  partKeys: string[];
  sha256Verified: boolean;
  lastUsedAt: string;
  createdAt: string;
}

/** Spec prefix of local files kept in the library ({@link ModelLibrary.importBlob}). */
export const LOCAL = 'local:';
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46];

/** True for `local:NAME` specs. */
export function isLocalSpec(spec: string): boolean {
  return spec.startsWith(LOCAL);
}

/** What Hugging Face's tree API says about one file. */
interface HfTreeFile {
  path: string;
  size: number;
  sha256?: string;
}

/** The model library over one {@link CacheStore}. */
export class ModelLibrary {
  constructor(
    readonly store: CacheStore,
    private readonly opts: LibraryOptions = {},
  ) {}

  /**
   * The library in its default place: OPFS in a browser or worker; in Node, `dir` or the default cache
   * directory ({@link import('./store.ts').defaultCacheDir}).
   * @throws EngineError('invalid_argument') when no storage is available.
   */
  static async open(opts: LibraryOptions & { dir?: string } = {}): Promise<ModelLibrary> {
    const isNode =
      typeof process !== 'undefined' &&
      !!process.versions?.node &&
      typeof (globalThis as { document?: unknown }).document === 'undefined' &&
      !('WorkerGlobalScope' in globalThis);
    const store = !isNode && OpfsStore.available() ? await OpfsStore.open() : await FsStore.open(opts.dir);
    return new ModelLibrary(store, opts);
  }

  /**
   * Makes a model available from the cache, downloading (or resuming) what is missing. For a split model
   * every part is looked for (the `hf:` listing, else a HEAD of each part not cached whole) before any is
   * downloaded.
   * @throws EngineError 'invalid_argument' (bad spec, a `hf:` file that is not in the repository),
   *   'http_status' (a split part not there: "split part K of N is missing: …"), 'network', 'timeout' (no
   *   cached copy to fall back on), 'quota_exceeded', 'integrity', 'gguf_invalid' (not a GGUF), 'aborted'.
   */
  async acquire(spec: string, opts: AcquireOptions = {}): Promise<AcquiredModel> {
    if (isLocalSpec(spec)) return this.acquireLocal(spec);
    const resolved = resolveModelSpec(spec, { hfEndpoint: this.opts.hfEndpoint, base: opts.base });
    const hfFiles =
      resolved.hf && !opts.offline
        ? await this.hfListing(resolved.hf, opts.signal, opts.onProgress)
        : undefined;
    const split = parseSplitName(resolved.url);
    const urls = split
      ? Array.from({ length: split.count }, (_, i) => splitPartName(resolved.url, i + 1, split.count))
      : [resolved.url];
    if (split && split.no !== 1) {
      throw new EngineError(
        'invalid_argument',
        `${spec} is part ${split.no} of a split model; give its first part (…-00001-of-${String(split.count).padStart(5, '0')}.gguf)`,
      );
    }
    const hfPaths = urls.map((u) =>
      resolved.hf
        ? resolved.hf.path.replace(/[^/]*$/, decodeURIComponent(u.split(/[?#]/)[0].split('/').pop() ?? ''))
        : undefined,
    );
    // Every part is looked for before any is downloaded: a missing part 3 is said before part 1's gigabytes.
    if (resolved.hf && hfFiles) {
      for (let i = 0; i < urls.length; i++) {
        if (hfFiles.has(hfPaths[i] ?? '')) continue;
        const e = this.noSuchHfFile(resolved.hf, hfPaths[i] ?? '', hfFiles);
        throw i === 0
          ? e
          : new EngineError(e.code, `split part ${i + 1} of ${urls.length} is missing: ${e.message}`, {
              cause: e,
            });
      }
    } else if (urls.length > 1 && !opts.offline) {
      await this.checkSplitParts(urls, opts.signal);
    }
    const parts: CachedByteSource[] = [];
    let downloadedBytes = 0;
    let offline = false;
    const firstKey = entryKey(urls[0]);
    for (let i = 0; i < urls.length; i++) {
      const hfFile = hfPaths[i] ? hfFiles?.get(hfPaths[i] ?? '') : undefined;
      let r: Awaited<ReturnType<ModelLibrary['acquireFile']>>;
      try {
        r = await this.acquireFileNamed(resolved, urls[i], {
          ...opts,
          sha256: hfFile?.sha256 ?? (urls.length === 1 ? opts.sha256 : undefined),
          expectedSize: hfFile?.size,
          split: urls.length > 1 ? { first: firstKey, part: i + 1, parts: urls.length } : undefined,
          onProgress:
            opts.onProgress && urls.length > 1
              ? (p) =>
                  opts.onProgress?.({
                    ...p,
                    note: [`part ${i + 1} of ${urls.length}`, p.note].filter(Boolean).join(': '),
                  })
              : opts.onProgress,
        });
      } catch (e) {
        throw (i > 0 && missingSplitPartError(e, i + 1, urls.length, urls[i])) || e;
      }
      parts.push(new CachedByteSource(this.store, r.meta));
      downloadedBytes += r.downloadedBytes;
      offline ||= r.offline;
    }
    return {
      resolved,
      parts,
      fromCache: downloadedBytes === 0,
      offline,
      downloadedBytes,
      location: this.store.location,
    };
  }

  /**
   * Asks the server for parts 2…N of a split model that are not cached whole, before any is downloaded.
   * Only a part that is not there (HTTP 404/410) is an error here; other failures are left to the download,
   * which says them (or falls back on a cached copy).
   * @throws EngineError 'http_status' "split part K of N is missing: URL was not found (HTTP 404) …",
   *   'aborted'.
   */
  private async checkSplitParts(urls: readonly string[], signal?: AbortSignal): Promise<void> {
    for (let i = 1; i < urls.length; i++) {
      if ((await this.store.getMeta(entryKey(urls[i])))?.complete) continue;
      try {
        await probeRemote(urls[i], {
          signal,
          fetch: this.opts.fetch,
          timeoutMs: this.opts.freshnessTimeoutMs ?? 10_000,
        });
      } catch (e) {
        if (isEngineError(e, 'aborted')) throw e;
        const missing = missingSplitPartError(e, i + 1, urls.length, urls[i]);
        if (missing) throw missing;
      }
    }
  }

  /** {@link acquireFile}, with a Hugging Face 404/401 said in Hugging Face's terms. */
  private async acquireFileNamed(
    resolved: ResolvedSpec,
    url: string,
    opts: Parameters<ModelLibrary['acquireFile']>[2],
  ): Promise<Awaited<ReturnType<ModelLibrary['acquireFile']>>> {
    try {
      return await this.acquireFile(url, resolved.spec, opts);
    } catch (e) {
      const hf = resolved.hf;
      const m = isEngineError(e, 'http_status') ? /HTTP (401|403|404)/.exec(e.message) : null;
      if (!hf || !m) throw e;
      throw new EngineError(
        'http_status',
        `hf:${hf.repo}/${hf.path}: Hugging Face has no ${m[1] === '404' ? '' : 'public '}file ${hf.path} in a ` +
          `repository ${hf.repo} at revision ${hf.revision} (HTTP ${m[1]}${m[1] === '404' ? '' : ': the repository may be private or gated'}); check the name`,
        { cause: e },
      );
    }
  }

  /**
   * One file, found or downloaded, under the entry's lock ({@link CacheStore.withLock}): another process,
   * tab or worker fetching the same file waits, then finds it complete, so two never write one file.
   */
  private async acquireFile(
    url: string,
    spec: string,
    opts: AcquireOptions & { expectedSize?: number; split?: EntryMeta['split'] },
  ): Promise<{ meta: EntryMeta; downloadedBytes: number; offline: boolean }> {
    const key = entryKey(url);
    const run = () => this.acquireFileLocked(url, spec, key, opts);
    if (!this.store.withLock) return run();
    return this.store.withLock(key, run, {
      signal: opts.signal,
      onWait: (holder) => {
        opts.onWait?.(holder);
        opts.onProgress?.({
          phase: 'download',
          bytesDone: 0,
          bytesTotal: 0,
          note: `waiting for ${holder}, which is fetching ${fileNameOf(url)} into the same cache`,
        });
      },
    });
  }

  private async acquireFileLocked(
    url: string,
    spec: string,
    key: string,
    opts: AcquireOptions & { expectedSize?: number; split?: EntryMeta['split'] },
  ): Promise<{ meta: EntryMeta; downloadedBytes: number; offline: boolean }> {
    let meta = await this.store.getMeta(key);
    let info: RemoteFileInfo | undefined;
    if (meta?.complete && opts.verifyCached) {
      const damage = await verifyEntry(this.store, meta, opts.onProgress, opts.signal);
      if (damage) {
        await this.store.remove(key);
        if (opts.offline) throw damage;
        opts.onProgress?.({
          phase: 'download',
          bytesDone: 0,
          bytesTotal: meta.size,
          note: `integrity: ${damage.message}`,
        });
        meta = undefined;
      }
    }
    if (meta?.complete) {
      if (opts.offline) return { meta: await this.touch(meta), downloadedBytes: 0, offline: false };
      try {
        info = await probeRemote(url, {
          signal: opts.signal,
          fetch: this.opts.fetch,
          timeoutMs: this.opts.freshnessTimeoutMs ?? 10_000,
        });
      } catch (e) {
        if (isEngineError(e, 'aborted')) throw e;
        if (isEngineError(e, 'network') || isEngineError(e, 'timeout')) {
          opts.onProgress?.({
            phase: 'download',
            bytesDone: meta.size,
            bytesTotal: meta.size,
            note: 'the server cannot be reached: using the cached copy',
          });
          return { meta: await this.touch(meta), downloadedBytes: 0, offline: true };
        }
        // The server answers but refuses (404, 403, …): keep using the copy we have, and say why.
        opts.onProgress?.({
          phase: 'download',
          bytesDone: meta.size,
          bytesTotal: meta.size,
          note: `using the cached copy (${(e as Error).message})`,
        });
        return { meta: await this.touch(meta), downloadedBytes: 0, offline: true };
      }
      if (
        sameRemoteFile(meta, info) &&
        (opts.expectedSize === undefined || opts.expectedSize === meta.size)
      ) {
        opts.onProgress?.({
          phase: 'download',
          bytesDone: meta.size,
          bytesTotal: meta.size,
          note: 'using the cached copy',
        });
        return { meta: await this.touch(meta), downloadedBytes: 0, offline: false };
      }
      // Changed on the server: fetch it again.
      await this.store.remove(key);
      meta = undefined;
    }
    info ??= await probeRemote(url, {
      signal: opts.signal,
      fetch: this.opts.fetch,
      timeoutMs: this.opts.timeoutMs,
    });
    if (info.size === undefined && opts.expectedSize !== undefined) info.size = opts.expectedSize;
    if (meta && !(meta.bytesDone > 0 && sameRemoteFile(meta, info) && meta.blockBytes > 0)) {
      await this.store.remove(key);
      meta = undefined;
    }
    meta ??= newMeta(url, spec, info, this.opts.blockBytes ?? DEFAULT_BLOCK_BYTES);
    meta.split = opts.split;
    meta.acceptRanges = info.acceptRanges || meta.acceptRanges;
    const r = await downloadToStore(this.store, meta, info, {
      signal: opts.signal,
      fetch: this.opts.fetch,
      timeoutMs: this.opts.timeoutMs,
      requestBytes: this.opts.requestBytes,
      retries: this.opts.retries,
      retryDelayMs: this.opts.retryDelayMs,
      sha256: opts.sha256,
      onProgress: opts.onProgress,
      checkComplete: (m) => checkGgufExtent(this.store, m, opts.signal),
    });
    return { ...r, offline: false };
  }

  /** A copy of a local file ({@link importBlob}): only from the store, never the network. */
  private async acquireLocal(spec: string): Promise<AcquiredModel> {
    const split = parseSplitName(spec);
    const names = split
      ? Array.from({ length: split.count }, (_, i) => splitPartName(spec, i + 1, split.count))
      : [spec];
    const parts: CachedByteSource[] = [];
    for (const name of names) {
      const meta = await this.store.getMeta(entryKey(name));
      if (!meta?.complete) {
        throw new EngineError(
          'invalid_argument',
          `${name.slice(LOCAL.length)} is not kept in this browser${meta ? ' completely' : ''}: choose the file again`,
        );
      }
      parts.push(new CachedByteSource(this.store, await this.touch(meta)));
    }
    return {
      resolved: { url: spec, spec },
      parts,
      fromCache: true,
      offline: false,
      downloadedBytes: 0,
      location: this.store.location,
    };
  }

  /**
   * Keeps a copy of a local file (picked or dropped) in the library, block by block (the file is never
   * read whole into memory), replacing an earlier copy of the same name. Returns the spec that loads it
   * (`local:NAME`). A split model: import every part with `split` set ({ part, parts }, 1-based).
   * @throws EngineError 'gguf_invalid' (not a GGUF), 'quota_exceeded' (up front or mid-way; nothing is
   *   kept), 'aborted'.
   */
  async importBlob(
    blob: Blob,
    name: string,
    opts: { signal?: AbortSignal; onProgress?: (p: DownloadProgress) => void } = {},
  ): Promise<string> {
    const spec = `${LOCAL}${name}`;
    const key = entryKey(spec);
    await this.store.remove(key);
    const head = new Uint8Array(await blob.slice(0, 4).arrayBuffer());
    if (!GGUF_MAGIC.every((b, i) => head[i] === b))
      throw new EngineError('gguf_invalid', `${name} is not a GGUF file (it does not start with "GGUF")`);
    await checkQuota(this.store, name, blob.size);
    const meta = newMeta(
      spec,
      spec,
      { size: blob.size, acceptRanges: true },
      this.opts.blockBytes ?? DEFAULT_BLOCK_BYTES,
    );
    meta.name = name;
    const split = parseSplitName(name);
    if (split && split.count > 1)
      meta.split = {
        first: entryKey(splitPartName(spec, 1, split.count)),
        part: split.no,
        parts: split.count,
      };
    const bs = meta.blockBytes;
    for (let pos = 0; pos < blob.size; pos += bs) {
      if (opts.signal?.aborted) {
        await this.store.remove(key);
        throw new EngineError('aborted', `keeping a copy of ${name} was aborted`);
      }
      const bytes = new Uint8Array(await blob.slice(pos, Math.min(blob.size, pos + bs)).arrayBuffer());
      await storeBlock(this.store, meta, bytes, blob.size);
      opts.onProgress?.({
        phase: 'download',
        bytesDone: meta.bytesDone,
        bytesTotal: blob.size,
        note: 'copying into this browser',
      });
    }
    await this.store.finish?.(key);
    meta.complete = true;
    await this.store.putMeta(meta);
    return spec;
  }

  private async touch(meta: EntryMeta): Promise<EntryMeta> {
    meta.lastUsedAt = new Date().toISOString();
    await this.store.putMeta(meta).catch(() => {});
    return meta;
  }

  /**
   * Hugging Face's listing of the file's folder, by path; undefined when it cannot be had (no tree API, a
   * mirror, offline, or no answer within `freshnessTimeoutMs`: the file's own requests decide then).
   *
   * The request and its body are bounded by a {@link RequestControl} (a plain timer and AbortController),
   * not `AbortSignal.any([AbortSignal.timeout(…), signal])`: in Node 20 the composite signal holds its
   * sources only weakly and the timeout signal's timer holds it weakly too, so a garbage collection while
   * the request waits drops the timeout signal and the timeout never fires (a silent server then held the
   * request for undici's 300 s headers timeout).
   * @throws EngineError('aborted') when `signal` aborts.
   */
  private async hfListing(
    hf: HfFileRef,
    signal?: AbortSignal,
    onProgress?: AcquireOptions['onProgress'],
  ): Promise<Map<string, HfTreeFile> | undefined> {
    const f = this.opts.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!f) return undefined;
    const url = hfTreeUrl(hf, this.opts.hfEndpoint);
    const timeoutMs = this.opts.freshnessTimeoutMs ?? 10_000;
    const aborted = () => new EngineError('aborted', `loading ${hf.repo} was aborted`);
    if (signal?.aborted) throw aborted();
    const rc = new RequestControl(url, timeoutMs, signal);
    try {
      const res = await rc.wait(() => f(url, { signal: rc.ctl.signal, cache: NO_STORE }));
      // A repository that is not there (or private) also answers here with 404/401, but so does a mirror
      // without the tree API: decide when the file itself is asked for.
      if (!res.ok) {
        res.body?.cancel().catch(() => {}); // not awaited: dispose() below ends it in any case
        return undefined;
      }
      const list = (await rc.wait(() => res.json())) as {
        type: string;
        path: string;
        size: number;
        lfs?: { oid: string; size: number };
      }[];
      const out = new Map<string, HfTreeFile>();
      for (const e of list) {
        if (e.type !== 'file') continue;
        out.set(e.path, { path: e.path, size: e.lfs?.size ?? e.size, sha256: e.lfs?.oid });
      }
      return out;
    } catch (e) {
      if (signal?.aborted) throw aborted();
      if (isEngineError(rc.mapError(e), 'timeout')) {
        onProgress?.({
          phase: 'download',
          bytesDone: 0,
          bytesTotal: 0,
          note: `${url} did not answer within ${timeoutMs.toLocaleString('en-US')} ms: going on without Hugging Face's file listing`,
        });
      }
      return undefined; // offline, no tree API, not JSON: the cache may still have it
    } finally {
      rc.dispose();
    }
  }

  private noSuchHfFile(hf: HfFileRef, path: string, files: Map<string, HfTreeFile>): EngineError {
    const gguf = [...files.keys()].filter((p) => /\.gguf$/i.test(p));
    return new EngineError(
      'invalid_argument',
      `hf:${hf.repo}/${path}: there is no ${path} in ${hf.repo} at ${hf.revision}` +
        (gguf.length
          ? `; its GGUF files there: ${gguf.slice(0, 12).join(', ')}${gguf.length > 12 ? ', …' : ''}`
          : '; that folder has no GGUF files'),
    );
  }

  /** Drops an entry (and, for a split model, its other parts), e.g. after a damaged block was found. */
  async invalidate(key: string): Promise<void> {
    await this.remove(key);
  }

  /** Cached models, split parts folded into one, most recently used first. */
  async list(): Promise<LibraryEntry[]> {
    const metas = await this.store.listMeta();
    const groups = new Map<string, EntryMeta[]>();
    for (const m of metas) {
      const k = m.split?.first ?? m.key;
      groups.set(k, [...(groups.get(k) ?? []), m]);
    }
    const out: LibraryEntry[] = [];
    for (const [key, ms] of groups) {
      ms.sort((a, b) => (a.split?.part ?? 1) - (b.split?.part ?? 1));
      const first = ms[0];
      const parts = first.split?.parts ?? 1;
      const complete = ms.length === parts && ms.every((m) => m.complete);
      out.push({
        key,
        name: first.name,
        spec: first.spec,
        url: first.url,
        size: ms.reduce((a, m) => a + Math.max(0, m.size), 0),
        storedBytes: ms.reduce((a, m) => a + m.bytesDone, 0),
        complete,
        parts,
        partKeys: ms.map((m) => m.key),
        sha256Verified: ms.every((m) => m.sha256Verified),
        lastUsedAt:
          ms
            .map((m) => m.lastUsedAt)
            .sort()
            .at(-1) ?? first.lastUsedAt,
        createdAt: first.createdAt,
      });
    }
    return out.sort((a, b) => b.lastUsedAt.localeCompare(a.lastUsedAt));
  }

  /** Deletes a model by key (all its split parts), or by spec/URL. */
  async remove(keyOrSpec: string, opts: RemoveOptions = {}): Promise<void> {
    let key = keyOrSpec;
    if (/^(hf:|https?:)/i.test(keyOrSpec))
      key = entryKey(resolveModelSpec(keyOrSpec, { hfEndpoint: this.opts.hfEndpoint }).url);
    const metas = await this.store.listMeta();
    const first = metas.find((m) => m.key === key)?.split?.first ?? key;
    for (const m of metas)
      if (m.key === first || m.split?.first === first) await this.removeLocked(m.key, opts);
    await this.removeLocked(key, opts);
  }

  /** Deletes every cached model (each one after any download of it in another process or tab). */
  async clear(opts: RemoveOptions = {}): Promise<void> {
    for (const m of await this.store.listMeta()) await this.removeLocked(m.key, opts);
  }

  /**
   * Deletes one entry under its lock, as a download takes it: a download in another process or tab ends
   * first (deleting under it left a corrupt file that it then called complete).
   */
  private async removeLocked(key: string, opts: RemoveOptions): Promise<void> {
    const run = () => this.store.remove(key);
    if (!this.store.withLock) return run();
    return this.store.withLock(key, run, { signal: opts.signal, onWait: opts.onWait });
  }

  /** Storage use and quota. */
  estimate(): Promise<StorageEstimate | undefined> {
    return this.store.estimate();
  }

  /** Asks the browser to keep the cache under storage pressure; false where refused or not a browser. */
  async persist(): Promise<boolean> {
    return (await this.store.persist?.()) ?? false;
  }
}

/**
 * A downloaded file is complete only if its GGUF header's tensors end within it: a server whose
 * Content-Length under-states the file (or a file replaced during the download) gives the stated number of
 * bytes, all checked, and a truncated model. Other header faults are left to the load, which names them (the
 * file may be meant for llama.cpp, which reads types this engine does not).
 * @throws EngineError 'integrity' when a tensor ends past the downloaded bytes; 'aborted'.
 */
async function checkGgufExtent(store: CacheStore, meta: EntryMeta, signal?: AbortSignal): Promise<void> {
  try {
    await openGguf({ bytes: new CachedByteSource(store, meta) }, { signal });
  } catch (e) {
    const t = isEngineError(e) && e.code === 'gguf_invalid' ? e.details?.truncated : undefined;
    if (t) {
      const needs =
        t.tensor !== undefined && t.neededBytes !== undefined
          ? `tensor ${t.tensor} needs bytes up to ${t.neededBytes.toLocaleString('en-US')}`
          : 'its header runs past them';
      throw new EngineError(
        'integrity',
        `${meta.url}: all ${meta.size.toLocaleString('en-US')} bytes the server announced arrived, but the file is ` +
          `longer (${needs}): the server ` +
          'states a wrong size or the file changed during the download; nothing was kept',
        { cause: e },
      );
    }
    if (isEngineError(e) && (e.code === 'aborted' || e.code === 'integrity')) throw e;
  }
}
