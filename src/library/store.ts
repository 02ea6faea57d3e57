/**
 * Where the model library keeps files: the Origin Private File System in a browser ({@link OpfsStore}) or a
 * directory in Node ({@link FsStore}). Both store an entry's bytes in fixed-size blocks written whole, plus
 * a JSON record ({@link EntryMeta}) with the SHA-256 of each block, so a resume restarts at the last whole
 * block and a load can check every byte it reads.
 *
 * Layouts:
 * - OPFS: `models/KEY.json` and `models/KEY/000000`, `000001`, … (one file per block: each block is written
 *   and committed on its own, so a closed tab loses at most the block in flight, and no write ever copies
 *   the blocks before it — OPFS's `createWritable` copies an existing file into a swap file).
 * - Node: `DIR/KEY.json` and `DIR/KEY.gguf`, one ordinary file (blocks written at their offsets), so the
 *   cached copy can be served or passed to llama.cpp by path; until it is complete it is `KEY.gguf.part`,
 *   so a half-downloaded file never looks like a model.
 */

import { EngineError, isEngineError } from '../core/errors.ts';
import { fnv1a64 } from '../core/hash.ts';
import { parseSplitName, splitFileName, splitPartName } from '../gguf/split.ts';

/** Version of the {@link EntryMeta} record; records of another version are ignored (fetched again). */
export const META_VERSION = 1;

/** The record kept beside each cached file. */
export interface EntryMeta {
  version: typeof META_VERSION;
  /** Store key ({@link entryKey}). */
  key: string;
  /** Download URL. */
  url: string;
  /** What the person wrote (URL or `hf:` shorthand). */
  spec: string;
  /** File name (last URL segment). */
  name: string;
  /** File size in bytes, from the server. */
  size: number;
  /** The server's ETag (a validator for freshness checks and resumes). */
  etag?: string;
  /** The server's Last-Modified. */
  lastModified?: string;
  /** Expected SHA-256 (hex) where known (Hugging Face's `lfs.oid`, a sha256-shaped ETag, or given). */
  sha256?: string;
  /** True once the whole file was hashed and matched {@link sha256}. */
  sha256Verified?: boolean;
  /** Whether the server answers range requests (resume needs it). */
  acceptRanges: boolean;
  /** Block size in bytes. */
  blockBytes: number;
  /** SHA-256 (hex) of each stored block, in order; the last block may be short. */
  blockDigests: string[];
  /** Bytes stored from the start of the file (whole blocks, or `size` when complete). */
  bytesDone: number;
  /** The whole file is stored (and verified where a SHA-256 was known). */
  complete: boolean;
  /** ISO dates. */
  createdAt: string;
  lastUsedAt: string;
  /** Split GGUF: this file is part `part` of `parts` of the model whose first part has key `first`. */
  split?: { first: string; part: number; parts: number };
}

/** Storage use and quota in bytes (`navigator.storage.estimate()`; in Node, the disk's free space). */
export interface StorageEstimate {
  usage?: number;
  quota?: number;
}

/** A place for cached files. All methods may throw EngineError('quota_exceeded') when storage runs out. */
export interface CacheStore {
  readonly kind: 'opfs' | 'fs';
  /** For messages: "OPFS models/" or the directory. */
  readonly location: string;
  getMeta(key: string): Promise<EntryMeta | undefined>;
  putMeta(meta: EntryMeta): Promise<void>;
  listMeta(): Promise<EntryMeta[]>;
  /** Writes block `index` (all of it: `bytes` is the block, the last one may be short). */
  writeBlock(key: string, index: number, blockBytes: number, bytes: Uint8Array): Promise<void>;
  /** Reads stored bytes [start, end) of an entry stored in blocks of `blockBytes` (fewer when less is stored). */
  read(key: string, start: number, end: number, blockBytes: number): Promise<Uint8Array>;
  /** Deletes an entry's bytes and record. Safe when absent. */
  remove(key: string): Promise<void>;
  estimate(): Promise<StorageEstimate | undefined>;
  /** Asks the browser to keep the cache when storage runs low (`navigator.storage.persist()`). */
  persist?(): Promise<boolean>;
  /** Node: the entry's file path. */
  filePath?(key: string): string;
  /** Called once an entry is complete, before its record says so (Node: the `.part` file is renamed). */
  finish?(key: string): Promise<void>;
  /**
   * Runs `fn` holding the entry's lock, shared by every process (Node: a lock file) or tab and worker
   * (OPFS: the Web Locks API) using this store, so one downloads or repairs an entry while the others wait
   * and then find it complete. `onWait` is called once when another holder makes this one wait.
   * @throws EngineError('aborted') when `signal` aborts the wait.
   */
  withLock?<T>(key: string, fn: () => Promise<T>, opts?: LockOptions): Promise<T>;
}

/** Options of {@link CacheStore.withLock}. */
export interface LockOptions {
  signal?: AbortSignal;
  /** Called once when the lock is held elsewhere; `holder` says by whom where known ("process 1234"). */
  onWait?: (holder: string) => void;
}

/**
 * The store key of a URL: a readable name plus the URL's 64-bit FNV-1a (16 hex digits). The parts of a split
 * model share the hash (of the first part's URL) and keep llama.cpp's `-0000k-of-0000N` ending, so in a
 * directory store the cached parts are siblings by llama.cpp's naming and load from the first one.
 */
export function entryKey(url: string): string {
  const split = parseSplitName(url);
  const first = split ? splitPartName(url, 1, split.count) : url;
  const name = fileNameOf(split ? `${split.prefix}.gguf` : url)
    .replace(/\.gguf$/i, '')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .slice(0, 80);
  const key = `${name || 'model'}-${fnv1a64(first)}`;
  return split ? splitFileName(key, split.no, split.count).replace(/\.gguf$/, '') : key;
}

/** The last path segment of a URL or path, percent-decoded. */
export function fileNameOf(url: string): string {
  const last = url.split(/[?#]/)[0].split('/').filter(Boolean).pop() ?? url;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function isQuotaError(e: unknown): boolean {
  const name = (e as { name?: string })?.name;
  const code = (e as { code?: string })?.code;
  return name === 'QuotaExceededError' || code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Maps a storage failure: quota errors to EngineError('quota_exceeded'); a directory that may not be
 * written (EACCES, EPERM, EROFS: a read-only or foreign cache directory) to EngineError('invalid_argument'),
 * which no retry can mend (it used to surface as a 'network' error after 3 retries); others kept.
 */
export function storageError(e: unknown, what: string): unknown {
  if (isEngineError(e)) return e;
  if (isQuotaError(e)) {
    return new EngineError('quota_exceeded', `storage is full while ${what}: ${(e as Error).message ?? e}`, {
      cause: e,
    });
  }
  const code = (e as { code?: string })?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new EngineError(
      'invalid_argument',
      `the model cache cannot be written while ${what} (${(e as Error).message}): make the directory writable ` +
        'or choose another (--cache-dir DIR on the command line, cache: { dir } in the API)',
      { cause: e },
    );
  }
  return e;
}

function validMeta(v: unknown): EntryMeta | undefined {
  const m = v as EntryMeta;
  if (!m || m.version !== META_VERSION || typeof m.key !== 'string' || typeof m.size !== 'number')
    return undefined;
  if (!Array.isArray(m.blockDigests) || !(m.blockBytes > 0)) return undefined;
  return m;
}

// ---------------------------------------------------------------------------------------------------
// OPFS

const OPFS_DIR = 'models';
const blockName = (i: number) => String(i).padStart(6, '0');

/** The Origin Private File System store (browsers, windows and workers alike). */
export class OpfsStore implements CacheStore {
  readonly kind = 'opfs' as const;
  readonly location = `OPFS ${OPFS_DIR}/`;
  private constructor(private readonly dir: FileSystemDirectoryHandle) {}

  /** True where OPFS exists (`navigator.storage.getDirectory`). */
  static available(): boolean {
    return typeof navigator !== 'undefined' && typeof navigator.storage?.getDirectory === 'function';
  }

  /** @throws EngineError('invalid_argument') where OPFS is missing (old browser, some private windows). */
  static async open(): Promise<OpfsStore> {
    if (!OpfsStore.available())
      throw new EngineError(
        'invalid_argument',
        'this browser has no Origin Private File System; the model cache needs it',
      );
    try {
      const root = await navigator.storage.getDirectory();
      return new OpfsStore(await root.getDirectoryHandle(OPFS_DIR, { create: true }));
    } catch (e) {
      throw new EngineError(
        'invalid_argument',
        `the browser refused access to its Origin Private File System (${(e as Error).message}); ` +
          'private windows may not allow it',
        { cause: e },
      );
    }
  }

  async getMeta(key: string): Promise<EntryMeta | undefined> {
    try {
      const f = await (await this.dir.getFileHandle(`${key}.json`)).getFile();
      return validMeta(JSON.parse(await f.text()));
    } catch {
      return undefined;
    }
  }

  async putMeta(meta: EntryMeta): Promise<void> {
    await this.writeFile(
      this.dir,
      `${meta.key}.json`,
      new TextEncoder().encode(JSON.stringify(meta)),
      'saving the model record',
    );
  }

  async listMeta(): Promise<EntryMeta[]> {
    const out: EntryMeta[] = [];
    for await (const [name, handle] of this.dir as unknown as AsyncIterable<[string, FileSystemHandle]>) {
      if (handle.kind !== 'file' || !name.endsWith('.json')) continue;
      const m = await this.getMeta(name.slice(0, -5));
      if (m) out.push(m);
    }
    return out;
  }

  private async writeFile(
    dir: FileSystemDirectoryHandle,
    name: string,
    bytes: Uint8Array,
    what: string,
  ): Promise<void> {
    let w: FileSystemWritableFileStream | undefined;
    try {
      w = await (await dir.getFileHandle(name, { create: true })).createWritable();
      await w.write(bytes as Uint8Array<ArrayBuffer>);
      await w.close();
    } catch (e) {
      await w?.abort().catch(() => {});
      throw storageError(e, what);
    }
  }

  async writeBlock(key: string, index: number, _blockBytes: number, bytes: Uint8Array): Promise<void> {
    let d: FileSystemDirectoryHandle;
    try {
      d = await this.dir.getDirectoryHandle(key, { create: true });
    } catch (e) {
      throw storageError(e, 'creating the model folder');
    }
    await this.writeFile(d, blockName(index), bytes, 'writing the model');
  }

  async read(key: string, start: number, end: number, bs: number): Promise<Uint8Array> {
    if (end <= start) return new Uint8Array(0);
    const out = new Uint8Array(end - start);
    let filled = 0;
    let d: FileSystemDirectoryHandle;
    try {
      d = await this.dir.getDirectoryHandle(key);
    } catch {
      return out.subarray(0, 0);
    }
    for (let pos = start; pos < end; ) {
      const i = Math.floor(pos / bs);
      let file: File;
      try {
        file = await (await d.getFileHandle(blockName(i))).getFile();
      } catch {
        break;
      }
      const from = pos - i * bs;
      const to = Math.min(file.size, end - i * bs);
      if (to <= from) break;
      out.set(new Uint8Array(await file.slice(from, to).arrayBuffer()), filled);
      filled += to - from;
      pos += to - from;
      if (to < bs && to < end - i * bs) break; // a short block: the end of what is stored
    }
    return out.subarray(0, filled);
  }

  async remove(key: string): Promise<void> {
    await this.dir.removeEntry(key, { recursive: true }).catch(() => {});
    await this.dir.removeEntry(`${key}.json`).catch(() => {});
  }

  async estimate(): Promise<StorageEstimate | undefined> {
    try {
      const e = await navigator.storage.estimate();
      return { usage: e.usage, quota: e.quota };
    } catch {
      return undefined;
    }
  }

  async persist(): Promise<boolean> {
    return (await navigator.storage.persist?.()) ?? false;
  }

  /** The Web Locks API (every tab and worker of the origin); without it (very old browsers), no lock. */
  async withLock<T>(key: string, fn: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
    const locks = (navigator as Navigator & { locks?: LockManager }).locks;
    if (!locks) return fn();
    const name = `webgpu-llm-bench:model:${key}`;
    let result: { value: T } | undefined;
    await locks.request(name, { ifAvailable: true }, async (lock) => {
      if (lock) result = { value: await fn() };
    });
    if (result) return result.value;
    opts.onWait?.('another tab or worker');
    try {
      return await locks.request(name, { signal: opts.signal }, fn);
    } catch (e) {
      if (opts.signal?.aborted) throw new EngineError('aborted', `waiting for ${key} was aborted`);
      throw e;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Node

type FsPromises = typeof import('node:fs/promises');

/** How often a lock's owner touches its lock file, ms. */
export const LOCK_HEARTBEAT_MS = 2_000;
/** A lock file untouched this long is stale (its owner crashed or froze), ms. */
export const LOCK_STALE_MS = 20_000;
/** What a lock file holds. */
interface LockOwner {
  host: string;
  pid: number;
  nonce: string;
}
let tmpCounter = 0;

/** The default cache directory: `$XDG_CACHE_HOME` or `~/.cache`, then `webgpu-llm-bench/models`. */
export async function defaultCacheDir(): Promise<string> {
  const os = await import(/* @vite-ignore */ 'node:os');
  const path = await import(/* @vite-ignore */ 'node:path');
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'webgpu-llm-bench', 'models');
}

/** A directory of cached files (Node). */
export class FsStore implements CacheStore {
  readonly kind = 'fs' as const;
  /** The nonce of each lock this store holds ({@link withLock}), by entry key. */
  private readonly owned = new Map<string, string>();
  private constructor(
    private readonly fs: FsPromises,
    private readonly join: (...p: string[]) => string,
    readonly location: string,
  ) {}

  /** Opens (creating) the directory. @throws EngineError('invalid_argument') when it cannot be created. */
  static async open(dir?: string): Promise<FsStore> {
    const fs = (await import(/* @vite-ignore */ 'node:fs/promises')) as FsPromises;
    const path = await import(/* @vite-ignore */ 'node:path');
    const location = path.resolve(dir ?? (await defaultCacheDir()));
    try {
      await fs.mkdir(location, { recursive: true });
    } catch (e) {
      throw new EngineError(
        'invalid_argument',
        `cannot create the cache directory ${location}: ${(e as Error).message}`,
        { cause: e },
      );
    }
    return new FsStore(fs, path.join, location);
  }

  filePath(key: string): string {
    return this.join(this.location, `${key}.gguf`);
  }

  private partPath(key: string): string {
    return `${this.filePath(key)}.part`;
  }

  /**
   * Where an entry's bytes are on disk now: `KEY.gguf` (complete, or a run that ended between the final
   * rename and its record), else `KEY.gguf.part` (partial), else undefined (nothing written yet).
   */
  async locate(key: string): Promise<string | undefined> {
    for (const p of [this.filePath(key), this.partPath(key)]) {
      const st = await this.fs.stat(p).catch(() => undefined);
      if (st?.isFile()) return p;
    }
    return undefined;
  }

  async finish(key: string): Promise<void> {
    await this.checkOwner(key);
    try {
      await this.fs.rename(this.partPath(key), this.filePath(key));
    } catch (e) {
      // A run that ended between this rename and the record that follows: the file is already in place.
      if (
        (e as NodeJS.ErrnoException).code === 'ENOENT' &&
        (await this.fs.stat(this.filePath(key)).catch(() => undefined))
      )
        return;
      throw storageError(e, 'finishing the model file');
    }
  }

  async getMeta(key: string): Promise<EntryMeta | undefined> {
    try {
      return validMeta(JSON.parse(await this.fs.readFile(this.join(this.location, `${key}.json`), 'utf8')));
    } catch {
      return undefined;
    }
  }

  async putMeta(meta: EntryMeta): Promise<void> {
    await this.checkOwner(meta.key);
    const p = this.join(this.location, `${meta.key}.json`);
    // Write then rename: a crash never leaves half a record. The temporary file is this process's own
    // (another process saving the same record at once renames its own file, never this one's).
    const tmp = `${p}.${process.pid}.${(tmpCounter++).toString(36)}.tmp`;
    try {
      await this.fs.writeFile(tmp, JSON.stringify(meta));
      await this.fs.rename(tmp, p);
    } catch (e) {
      await this.fs.rm(tmp, { force: true }).catch(() => {});
      throw storageError(e, 'saving the model record');
    }
  }

  /**
   * A lock file `KEY.lock` beside the entry, created exclusively (O_EXCL) and holding its owner's host,
   * process id and a nonce; the owner touches it every {@link LOCK_HEARTBEAT_MS}. A lock whose process is
   * gone (same host) or that has not been touched for {@link LOCK_STALE_MS} (a crashed or frozen process,
   * another host) is broken: renamed away first, so two waiters never both break it, and deleted only if
   * it is the one found stale.
   */
  async withLock<T>(key: string, fn: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
    const release = await this.lock(key, opts);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  private async lock(key: string, opts: LockOptions): Promise<() => Promise<void>> {
    const os = await import(/* @vite-ignore */ 'node:os');
    const path = this.join(this.location, `${key}.lock`);
    const me: LockOwner = {
      host: os.hostname(),
      pid: process.pid,
      nonce: `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`,
    };
    let waited = false;
    for (;;) {
      if (opts.signal?.aborted) throw new EngineError('aborted', `waiting for ${key} was aborted`);
      try {
        const fh = await this.fs.open(path, 'wx');
        try {
          await fh.writeFile(JSON.stringify(me));
        } finally {
          await fh.close();
        }
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw storageError(e, `locking ${key}`);
      }
      const held = await this.lockOwner(path);
      if (held && (await this.staleLock(held.owner, held.mtimeMs, me.host))) {
        await this.breakLock(path, held.owner);
        continue;
      }
      if (!waited && held) {
        waited = true;
        opts.onWait?.(held.owner.host === me.host ? `process ${held.owner.pid}` : `${held.owner.host}`);
      }
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
    }
    const beat = setInterval(() => {
      const now = new Date();
      this.fs.utimes(path, now, now).catch(() => {});
    }, LOCK_HEARTBEAT_MS);
    (beat as { unref?: () => void }).unref?.();
    this.owned.set(key, me.nonce);
    return async () => {
      clearInterval(beat);
      if (this.owned.get(key) === me.nonce) this.owned.delete(key);
      const held = await this.lockOwner(path);
      if (held?.owner.nonce === me.nonce) await this.fs.rm(path, { force: true }).catch(() => {});
    };
  }

  /** The lock file's owner and modification time; undefined when it is gone or half-written. */
  private async lockOwner(path: string): Promise<{ owner: LockOwner; mtimeMs: number } | undefined> {
    try {
      const [text, st] = await Promise.all([this.fs.readFile(path, 'utf8'), this.fs.stat(path)]);
      const owner = JSON.parse(text) as LockOwner;
      if (typeof owner?.nonce !== 'string') return undefined;
      return { owner, mtimeMs: st.mtimeMs };
    } catch {
      // Gone, or being written this very moment: look again shortly. A lock file that stays unreadable
      // (its writer died between creating and writing it) is broken by its age.
      const st = await this.fs.stat(path).catch(() => undefined);
      if (st && Date.now() - st.mtimeMs > LOCK_STALE_MS)
        return { owner: { host: '', pid: 0, nonce: `unreadable-${st.mtimeMs}` }, mtimeMs: st.mtimeMs };
      return undefined;
    }
  }

  private async staleLock(owner: LockOwner, mtimeMs: number, host: string): Promise<boolean> {
    if (Date.now() - mtimeMs > LOCK_STALE_MS) return true;
    if (owner.host !== host || !(owner.pid > 0)) return false;
    try {
      process.kill(owner.pid, 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  /** Removes a stale lock, unless another waiter broke it and took a new one meanwhile. */
  private async breakLock(path: string, stale: LockOwner): Promise<void> {
    const aside = `${path}.${process.pid}.${(tmpCounter++).toString(36)}.stale`;
    try {
      await this.fs.rename(path, aside);
    } catch {
      return; // someone else broke it first
    }
    let text = '';
    try {
      text = await this.fs.readFile(aside, 'utf8');
    } catch {}
    const isStale = text === '' ? stale.nonce.startsWith('unreadable-') : text.includes(`"${stale.nonce}"`);
    // A live lock taken since we looked goes back where it was (unless yet another one is there now).
    if (!isStale) await this.fs.link(aside, path).catch(() => {});
    await this.fs.rm(aside, { force: true }).catch(() => {});
  }

  async listMeta(): Promise<EntryMeta[]> {
    const out: EntryMeta[] = [];
    for (const name of await this.fs.readdir(this.location).catch(() => [] as string[])) {
      if (!name.endsWith('.json')) continue;
      const m = await this.getMeta(name.slice(0, -5));
      if (m) out.push(m);
    }
    return out;
  }

  /**
   * Under this store's lock for `key`: throws when the lock is no longer ours, because another process
   * broke it as stale (this one was paused, e.g. Ctrl-Z, past {@link LOCK_STALE_MS}) or the entry was
   * deleted meanwhile. Its writes would otherwise mix with the new owner's and a corrupt file would be
   * called complete. Without a lock held here (a store used directly), nothing to check.
   * @throws EngineError('integrity').
   */
  private async checkOwner(key: string): Promise<void> {
    const nonce = this.owned.get(key);
    if (nonce === undefined) return;
    const text = await this.fs.readFile(this.join(this.location, `${key}.lock`), 'utf8').catch(() => '');
    if (!text.includes(`"${nonce}"`))
      throw new EngineError(
        'integrity',
        `another process took over the download of ${key} (this one's lock went untouched for ${LOCK_STALE_MS / 1000} s, e.g. while it was paused) or it was deleted: this process stops without writing to it; run again to use or resume the cached copy`,
      );
  }

  async writeBlock(key: string, index: number, blockBytes: number, bytes: Uint8Array): Promise<void> {
    await this.checkOwner(key);
    let fh: import('node:fs/promises').FileHandle | undefined;
    try {
      const path = this.partPath(key);
      fh = await this.fs.open(path, index === 0 ? 'w' : 'r+').catch(async (e) => {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return this.fs.open(path, 'w');
        throw e;
      });
      let done = 0;
      while (done < bytes.length) {
        const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, index * blockBytes + done);
        done += bytesWritten;
      }
      // Drop anything past this block (a file left longer by an earlier, different download).
      const st = await fh.stat();
      const end = index * blockBytes + bytes.length;
      if (st.size > end) await fh.truncate(end);
    } catch (e) {
      throw storageError(e, 'writing the model');
    } finally {
      await fh?.close();
    }
  }

  async read(key: string, start: number, end: number, _blockBytes: number): Promise<Uint8Array> {
    let fh: import('node:fs/promises').FileHandle;
    try {
      fh = await this.fs.open(this.filePath(key), 'r').catch(() => this.fs.open(this.partPath(key), 'r'));
    } catch {
      return new Uint8Array(0);
    }
    try {
      const out = new Uint8Array(Math.max(0, end - start));
      let filled = 0;
      while (filled < out.length) {
        const { bytesRead } = await fh.read(out, filled, out.length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return out.subarray(0, filled);
    } finally {
      await fh.close();
    }
  }

  async remove(key: string): Promise<void> {
    await this.checkOwner(key);
    await this.fs.rm(this.filePath(key), { force: true });
    await this.fs.rm(this.partPath(key), { force: true });
    await this.fs.rm(this.join(this.location, `${key}.json`), { force: true });
  }

  async estimate(): Promise<StorageEstimate | undefined> {
    try {
      const st = await this.fs.statfs(this.location);
      const quota = Number(st.blocks) * Number(st.bsize);
      return { quota, usage: quota - Number(st.bavail) * Number(st.bsize) };
    } catch {
      return undefined;
    }
  }
}
