/**
 * Reads a cached file for the GGUF reader ({@link ByteSource}), checking every block it hands out against
 * the SHA-256 recorded when the block was downloaded. Reads go block by block (one block in memory at a
 * time), so a load streams from the cache to the GPU without holding the file in memory, and a damaged
 * byte anywhere the loader reads ends the load with EngineError('integrity') before the block reaches the
 * GPU.
 */
import { EngineError } from '../core/errors.ts';
import { type ByteSource, type SequentialReader, sequentialReader } from '../net/byte-source.ts';
import { digestHex } from './download.ts';
import type { CacheStore, EntryMeta } from './store.ts';

/** Thrown (EngineError 'integrity') when a cached block does not match its recorded SHA-256. */
export function corruptedError(meta: EntryMeta, block: number, why: string): EngineError {
  const e = new EngineError(
    'integrity',
    `the cached copy of ${meta.name} is damaged (block ${block + 1} of ${meta.blockDigests.length}: ${why}); ` +
      'it is deleted and will be downloaded again',
  );
  (e as EngineError & { cacheKey?: string }).cacheKey = meta.key;
  return e;
}

/**
 * Checks every block of a complete entry against its recorded SHA-256, one block in memory at a time.
 * Returns the error ({@link corruptedError}) for the first damaged or missing block, undefined when all match.
 * @throws EngineError('aborted') when `signal` aborts.
 */
export async function verifyEntry(
  store: CacheStore,
  meta: EntryMeta,
  onProgress?: (p: { phase: 'verify'; bytesDone: number; bytesTotal: number; note?: string }) => void,
  signal?: AbortSignal,
): Promise<EngineError | undefined> {
  const bs = meta.blockBytes;
  const n = Math.ceil(meta.size / bs);
  if (meta.blockDigests.length !== n)
    return corruptedError(
      meta,
      Math.min(n, meta.blockDigests.length),
      'its record lists another number of blocks',
    );
  for (let i = 0; i < n; i++) {
    if (signal?.aborted)
      throw new EngineError('aborted', `checking the cached copy of ${meta.name} was aborted`);
    const want = Math.min(bs, meta.size - i * bs);
    const bytes = await store.read(meta.key, i * bs, i * bs + want, bs);
    if (bytes.length !== want)
      return corruptedError(
        meta,
        i,
        `${bytes.length.toLocaleString('en-US')} of ${want.toLocaleString('en-US')} bytes are there`,
      );
    if ((await digestHex(bytes)) !== meta.blockDigests[i])
      return corruptedError(meta, i, 'its SHA-256 differs');
    onProgress?.({
      phase: 'verify',
      bytesDone: i * bs + want,
      bytesTotal: meta.size,
      note: 'checking the cached copy',
    });
  }
  return undefined;
}

/** A verified, read-only view of one complete cache entry. */
export class CachedByteSource implements ByteSource {
  readonly name: string;
  readonly size: number;
  private last: { index: number; bytes: Uint8Array } | undefined;
  private ahead: { index: number; bytes: Promise<Uint8Array> } | undefined;
  private readingAhead = false;

  /** @param meta a complete entry's record. */
  constructor(
    private readonly store: CacheStore,
    readonly meta: EntryMeta,
  ) {
    this.name = meta.url;
    this.size = meta.size;
  }

  /**
   * Block `i`, read and checked (the last one read is kept). While a sequential reader is open, the next
   * block is read and checked in the background as soon as this one is handed out, so checking overlaps
   * with the consumer's work (at most two blocks in memory).
   */
  private async block(i: number): Promise<Uint8Array> {
    if (this.last?.index === i) return this.last.bytes;
    const pending = this.ahead?.index === i ? this.ahead.bytes : this.loadBlock(i);
    this.ahead = undefined;
    const bytes = await pending;
    this.last = { index: i, bytes };
    if (this.readingAhead && i + 1 < this.meta.blockDigests.length) {
      const next = this.loadBlock(i + 1);
      next.catch(() => {}); // surfaces when awaited
      this.ahead = { index: i + 1, bytes: next };
    }
    return bytes;
  }

  private async loadBlock(i: number): Promise<Uint8Array> {
    const bs = this.meta.blockBytes;
    const want = Math.min(bs, this.size - i * bs);
    const bytes = await this.store.read(this.meta.key, i * bs, i * bs + want, bs);
    if (bytes.length !== want)
      throw corruptedError(
        this.meta,
        i,
        `${bytes.length.toLocaleString('en-US')} of ${want.toLocaleString('en-US')} bytes are there`,
      );
    if ((await digestHex(bytes)) !== this.meta.blockDigests[i])
      throw corruptedError(this.meta, i, 'its SHA-256 differs');
    return bytes;
  }

  async read(start: number, end: number): Promise<Uint8Array> {
    end = Math.min(end, this.size);
    if (end <= start) return new Uint8Array(0);
    const bs = this.meta.blockBytes;
    const first = Math.floor(start / bs);
    const lastBlock = Math.floor((end - 1) / bs);
    if (first === lastBlock) return (await this.block(first)).slice(start - first * bs, end - first * bs);
    const out = new Uint8Array(end - start);
    for (let i = first; i <= lastBlock; i++) {
      const b = await this.block(i);
      const from = Math.max(start, i * bs) - i * bs;
      const to = Math.min(end, (i + 1) * bs) - i * bs;
      out.set(b.subarray(from, to), i * bs + from - start);
    }
    return out;
  }

  async openSequential(start: number): Promise<SequentialReader> {
    this.readingAhead = true;
    return sequentialReader(this, start, () => {
      this.readingAhead = false;
      this.last = undefined;
      this.ahead = undefined;
    });
  }
}
