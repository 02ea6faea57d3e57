/**
 * The page's benchmark history in IndexedDB (through `idb`): every finished result, grouped by the device
 * fingerprint (src/bench/fingerprint.ts). No DOM; the tests run it on `fake-indexeddb`.
 *
 * Database `webgpu-llm-bench`, version 1, store `results`: `{key, fingerprint, createdAt, result}` with
 * `key` = {@link resultKey} (so importing the same file twice stores it once) and indexes on
 * `fingerprint` and `createdAt`.
 */
import { type DBSchema, type IDBPDatabase, openDB } from 'idb';
import { engineLabel } from './report.ts';
import { resultKey } from './result-io.ts';
import type { BenchResult } from './types.ts';

export const DB_NAME = 'webgpu-llm-bench';
const DB_VERSION = 1;

/** One stored result. */
export interface HistoryEntry {
  key: string;
  fingerprint: string;
  createdAt: string;
  result: BenchResult;
}

interface HistoryDb extends DBSchema {
  results: {
    key: string;
    value: HistoryEntry;
    indexes: { fingerprint: string; createdAt: string };
  };
}

/** The history store. Open one with {@link openHistory}. */
export class History {
  private constructor(private readonly db: IDBPDatabase<HistoryDb>) {}

  /** Opens (and creates or upgrades) the database. */
  static async open(name = DB_NAME): Promise<History> {
    const db = await openDB<HistoryDb>(name, DB_VERSION, {
      upgrade(db) {
        const store = db.createObjectStore('results', { keyPath: 'key' });
        store.createIndex('fingerprint', 'fingerprint');
        store.createIndex('createdAt', 'createdAt');
      },
    });
    return new History(db);
  }

  /** Stores a result (replacing one with the same key); returns its key. */
  async add(result: BenchResult): Promise<string> {
    const entry = toEntry(result);
    await this.db.put('results', entry);
    return entry.key;
  }

  /** Stores many results in one transaction; returns how many were new (not already stored). */
  async addMany(results: readonly BenchResult[]): Promise<{ added: number; replaced: number }> {
    const tx = this.db.transaction('results', 'readwrite');
    let added = 0;
    let replaced = 0;
    for (const r of results) {
      const entry = toEntry(r);
      if (await tx.store.getKey(entry.key)) replaced++;
      else added++;
      await tx.store.put(entry);
    }
    await tx.done;
    return { added, replaced };
  }

  /** Results, newest first; only this device's when a fingerprint is given. */
  async list(fingerprint?: string): Promise<HistoryEntry[]> {
    const all = fingerprint
      ? await this.db.getAllFromIndex('results', 'fingerprint', fingerprint)
      : await this.db.getAll('results');
    return sortNewestFirst(all);
  }

  async get(key: string): Promise<HistoryEntry | undefined> {
    return this.db.get('results', key);
  }

  async delete(key: string): Promise<void> {
    await this.db.delete('results', key);
  }

  /** Deletes every result, or only one device's. */
  async clear(fingerprint?: string): Promise<void> {
    if (!fingerprint) {
      await this.db.clear('results');
      return;
    }
    const tx = this.db.transaction('results', 'readwrite');
    for (const key of await tx.store.index('fingerprint').getAllKeys(fingerprint)) await tx.store.delete(key);
    await tx.done;
  }

  /** The devices in the history: fingerprint, label and how many results each has. */
  async devices(): Promise<{ fingerprint: string; label: string; count: number }[]> {
    const map = new Map<string, { fingerprint: string; label: string; count: number }>();
    for (const e of await this.db.getAll('results')) {
      const d = map.get(e.fingerprint) ?? {
        fingerprint: e.fingerprint,
        label: e.result.device.label || e.result.device.description || e.fingerprint,
        count: 0,
      };
      d.count++;
      map.set(e.fingerprint, d);
    }
    return [...map.values()];
  }

  close(): void {
    this.db.close();
  }
}

/** Opens the history database. */
export function openHistory(name?: string): Promise<History> {
  return History.open(name);
}

export function toEntry(result: BenchResult): HistoryEntry {
  return {
    key: resultKey(result),
    fingerprint: result.device.fingerprint,
    createdAt: result.createdAt,
    result,
  };
}

export function sortNewestFirst(entries: HistoryEntry[]): HistoryEntry[] {
  return entries.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
}

/** One bar of the comparison chart: a model on a device, with its best median decode rate. */
export interface ComparisonBar {
  label: string;
  model: string;
  device: string;
  fingerprint: string;
  /** report.ts `engineLabel`: the engine with its drafting, constrained output and non-default setup. */
  engine: string;
  decodeTokPerS: number;
  prefillTokPerS: number;
  results: number;
}

/**
 * Groups results by model × device × engine for the comparison chart: the median over results of each
 * result's median decode (and prefill) tok/s. The engine is report.ts `engineLabel` (as the leaderboard's):
 * runs with drafting, constrained output or another KV cache type never share a bar with plain ones. Groups without a decode rate are dropped; sorted fastest first.
 */
export function compareByModelAndDevice(results: readonly BenchResult[]): ComparisonBar[] {
  const groups = new Map<string, { r: BenchResult; engine: string; decode: number[]; prefill: number[] }>();
  for (const r of results) {
    const engine = engineLabel(r);
    const k = [r.model.id, r.device.fingerprint, engine].join('\u0000');
    const g = groups.get(k) ?? { r, engine, decode: [], prefill: [] };
    const d = r.summary.decodeTokensPerSecond?.median;
    const p = r.summary.prefillTokensPerSecond?.median;
    if (d !== undefined && Number.isFinite(d)) g.decode.push(d);
    if (p !== undefined && Number.isFinite(p)) g.prefill.push(p);
    groups.set(k, g);
  }
  const median = (a: number[]) => {
    if (!a.length) return Number.NaN;
    const s = [...a].sort((x, y) => x - y);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };
  const bars: ComparisonBar[] = [];
  for (const { r, engine, decode, prefill } of groups.values()) {
    if (!decode.length) continue;
    const device = r.device.label || r.device.description || r.device.fingerprint;
    bars.push({
      label: `${r.model.id} · ${device}${engine === 'webgpu' ? '' : ` · ${engine}`}`,
      model: r.model.id,
      device,
      fingerprint: r.device.fingerprint,
      engine,
      decodeTokPerS: median(decode),
      prefillTokPerS: median(prefill),
      results: decode.length,
    });
  }
  return bars.sort((a, b) => b.decodeTokPerS - a.decodeTokPerS);
}
