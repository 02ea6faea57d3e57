/**
 * Shared engines for the chat widget: several `<webgpu-chat>` elements on one page that ask for the same
 * backend and model share one loaded engine (one worker, one copy of the weights on the GPU). Entries are
 * keyed by `engine + model`, reference-counted, and disposed (worker terminated) when the last user
 * releases them. Requests on a shared engine run one at a time (an engine generates one answer at a
 * time), in the order they were queued.
 *
 * No DOM and no worker here, so the ref-counting is unit-tested in Node (registry.test.ts).
 */
import type { LoadProgress, ModelInfo } from '../core/types.ts';

/** What the registry needs from an engine it owns. */
export interface Disposable {
  /** Frees everything (for a worker engine: unload and terminate the worker). */
  dispose(): void | Promise<void>;
}

/** A factory makes and loads one engine; `onProgress` fans out to every widget waiting on it. */
export type EngineFactory<E extends Disposable> = (onProgress: (p: LoadProgress) => void) => {
  engine: E;
  ready: Promise<ModelInfo>;
};

interface Entry<E extends Disposable> {
  key: string;
  engine: E;
  ready: Promise<ModelInfo>;
  refs: number;
  listeners: Set<(p: LoadProgress) => void>;
  /** Each lease's `onDiscarded`: told when another lease discards the engine. */
  discardListeners: Set<() => void>;
  lastProgress: LoadProgress | undefined;
  /** Tail of the request queue. */
  queue: Promise<unknown>;
  disposed: boolean;
}

/** One widget's hold on a shared engine. */
export interface EngineLease<E extends Disposable> {
  readonly key: string;
  readonly engine: E;
  /** Resolves when the model is loaded (shared by every lease on this entry). */
  readonly ready: Promise<ModelInfo>;
  /** Runs `task` when the requests queued before it on this engine have ended. */
  run<T>(task: (engine: E) => Promise<T>): Promise<T>;
  /** Gives the lease back; the engine is disposed when no lease is left. Safe to call twice. */
  release(): void;
  /**
   * Gives the lease back and takes the engine out of the registry (a lost GPU, a dead worker): the next
   * {@link EngineRegistry.acquire} of its key makes a fresh one; leases still on it keep it until released,
   * and each of them is told (its `onDiscarded`, in a microtask) so that it can acquire again.
   */
  discard(): void;
}

/** A ref-counted map of shared engines. The widget uses the module-level element.ts `sharedEngines`. */
export class EngineRegistry<E extends Disposable> {
  private readonly entries = new Map<string, Entry<E>>();
  private created = 0;
  private disposedCount = 0;

  /** The registry key of a backend + model pair. */
  static key(engine: string, model: string): string {
    return `${engine}\u0000${model}`;
  }

  /**
   * Takes a lease on the engine for `key`, making it with `factory` when there is none yet.
   * `onProgress` gets the load's progress (the latest report at once when the load is already running);
   * `onDiscarded` is called once if another lease on the same engine discards it (the engine is dead).
   */
  acquire(
    key: string,
    factory: EngineFactory<E>,
    onProgress?: (p: LoadProgress) => void,
    onDiscarded?: () => void,
  ): EngineLease<E> {
    let entry = this.entries.get(key);
    if (!entry) {
      const listeners = new Set<(p: LoadProgress) => void>();
      const fresh: Partial<Entry<E>> = {
        key,
        refs: 0,
        listeners,
        discardListeners: new Set(),
        queue: Promise.resolve(),
        disposed: false,
      };
      const made = factory((p) => {
        fresh.lastProgress = p;
        for (const l of listeners) l(p);
      });
      fresh.engine = made.engine;
      fresh.ready = made.ready;
      entry = fresh as Entry<E>;
      this.entries.set(key, entry);
      this.created++;
      // A failed load is not kept: the next widget that asks gets a fresh try.
      const failed = entry;
      made.ready.catch(() => {
        if (this.entries.get(key) === failed) this.entries.delete(key);
      });
    } else if (onProgress && entry.lastProgress) onProgress(entry.lastProgress);
    const e = entry;
    e.refs++;
    if (onProgress) e.listeners.add(onProgress);
    if (onDiscarded) e.discardListeners.add(onDiscarded);
    let released = false;
    const lease: EngineLease<E> = {
      key,
      engine: e.engine,
      ready: e.ready,
      run: <T>(task: (engine: E) => Promise<T>): Promise<T> => {
        const result = e.queue.then(() => task(e.engine));
        e.queue = result.catch(() => undefined);
        return result;
      },
      discard: () => {
        const first = this.entries.get(key) === e;
        if (first) this.entries.delete(key);
        lease.release();
        if (!first) return;
        // The others on this engine, told in a microtask; whichever acquires the key first makes the fresh
        // engine and the rest join it.
        const others = [...e.discardListeners];
        e.discardListeners.clear();
        queueMicrotask(() => {
          for (const l of others) l();
        });
      },
      release: () => {
        if (released) return;
        released = true;
        if (onProgress) e.listeners.delete(onProgress);
        if (onDiscarded) e.discardListeners.delete(onDiscarded);
        e.refs--;
        if (e.refs > 0) return;
        if (this.entries.get(key) === e) this.entries.delete(key);
        if (!e.disposed) {
          e.disposed = true;
          this.disposedCount++;
          void Promise.resolve()
            .then(() => e.engine.dispose())
            .catch(() => undefined);
        }
      },
    };
    return lease;
  }

  /** Live entries and their reference counts, plus how many engines were made and disposed. */
  stats(): { engines: number; created: number; disposed: number; refs: Record<string, number> } {
    const refs: Record<string, number> = {};
    for (const [k, e] of this.entries) refs[k.replace('\u0000', ' ')] = e.refs;
    return { engines: this.entries.size, created: this.created, disposed: this.disposedCount, refs };
  }
}
