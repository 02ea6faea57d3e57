import { describe, expect, it, vi } from 'vitest';
import type { LoadProgress, ModelInfo } from '../core/types.ts';
import { type EngineFactory, EngineRegistry } from './registry.ts';

const INFO = { name: 'm' } as ModelInfo;

function fakeFactory(ready: Promise<ModelInfo> = Promise.resolve(INFO)) {
  const made: { id: number; dispose: ReturnType<typeof vi.fn> }[] = [];
  let emit: ((p: LoadProgress) => void) | undefined;
  const factory: EngineFactory<{ id: number; dispose: () => void }> = (onProgress) => {
    emit = onProgress;
    const engine = { id: made.length, dispose: vi.fn() };
    made.push(engine);
    return { engine, ready };
  };
  return { factory, made, progress: (p: LoadProgress) => emit?.(p) };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('EngineRegistry', () => {
  it('shares one engine per key and disposes it when the last lease is released', async () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory();
    const key = EngineRegistry.key('webgpu', 'a.gguf');
    const a = reg.acquire(key, f.factory);
    const b = reg.acquire(key, f.factory);
    expect(f.made).toHaveLength(1);
    expect(a.engine).toBe(b.engine);
    expect(await b.ready).toBe(INFO);
    expect(reg.stats()).toMatchObject({ engines: 1, created: 1, disposed: 0, refs: { 'webgpu a.gguf': 2 } });
    a.release();
    a.release(); // twice is harmless
    await flush();
    expect(f.made[0].dispose).not.toHaveBeenCalled();
    expect(reg.stats().refs['webgpu a.gguf']).toBe(1);
    b.release();
    await flush();
    expect(f.made[0].dispose).toHaveBeenCalledTimes(1);
    expect(reg.stats()).toMatchObject({ engines: 0, created: 1, disposed: 1 });
    // A new lease after that makes a fresh engine.
    const c = reg.acquire(key, f.factory);
    expect(f.made).toHaveLength(2);
    c.release();
    await flush();
    expect(f.made[1].dispose).toHaveBeenCalledTimes(1);
  });

  it('keeps different keys apart', () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory();
    const a = reg.acquire(EngineRegistry.key('webgpu', 'a'), f.factory);
    const b = reg.acquire(EngineRegistry.key('webgpu', 'b'), f.factory);
    const c = reg.acquire(EngineRegistry.key('remote', 'a'), f.factory);
    expect(new Set([a.engine, b.engine, c.engine]).size).toBe(3);
    expect(reg.stats().engines).toBe(3);
  });

  it('fans load progress out to every lease, late ones get the latest at once', () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory(new Promise(() => undefined));
    const seenA: LoadProgress[] = [];
    const seenB: LoadProgress[] = [];
    const a = reg.acquire('k', f.factory, (p) => seenA.push(p));
    const p1 = { phase: 'fetch', bytesDone: 1, bytesTotal: 10, tMs: 1 } as const;
    f.progress(p1);
    reg.acquire('k', f.factory, (p) => seenB.push(p));
    expect(seenB).toEqual([p1]);
    a.release();
    const p2 = { phase: 'upload', bytesDone: 5, bytesTotal: 10, tMs: 2 } as const;
    f.progress(p2);
    expect(seenA).toEqual([p1]);
    expect(seenB).toEqual([p1, p2]);
  });

  it('forgets a failed load, so the next widget tries again; releasing still disposes', async () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory(Promise.reject(new Error('404')));
    const a = reg.acquire('k', f.factory);
    await expect(a.ready).rejects.toThrow('404');
    expect(reg.stats().engines).toBe(0);
    const b = reg.acquire('k', f.factory);
    expect(f.made).toHaveLength(2);
    a.release();
    await flush();
    expect(f.made[0].dispose).toHaveBeenCalledTimes(1);
    expect(f.made[1].dispose).not.toHaveBeenCalled();
    b.release();
  });

  it('discard takes a broken engine out: the next acquire makes a fresh one; the other lease keeps the old until released', async () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory();
    const a = reg.acquire('k', f.factory);
    const b = reg.acquire('k', f.factory);
    a.discard();
    a.discard(); // twice: still one release
    expect(reg.stats().refs).toEqual({});
    const c = reg.acquire('k', f.factory);
    expect(f.made).toHaveLength(2);
    expect(c.engine).toBe(f.made[1]);
    await flush();
    expect(f.made[0].dispose).not.toHaveBeenCalled(); // b still holds it
    b.release();
    await flush();
    expect(f.made[0].dispose).toHaveBeenCalledTimes(1);
    expect(reg.stats().refs).toEqual({ k: 1 });
    c.release();
  });

  it("discard tells the engine's other leases (once, not the discarder, not a released one, not a later engine's)", async () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory();
    const told: string[] = [];
    const a = reg.acquire('k', f.factory, undefined, () => told.push('a'));
    const b = reg.acquire('k', f.factory, undefined, () => told.push('b'));
    const c = reg.acquire('k', f.factory, undefined, () => told.push('c'));
    const other = reg.acquire('other', f.factory, undefined, () => told.push('other'));
    c.release();
    a.discard();
    expect(told).toEqual([]); // in a microtask: after the discarder's own reload has begun
    // The discarder acquires again at once: the fresh engine's lease is not told of the old one's end.
    const a2 = reg.acquire('k', f.factory, undefined, () => told.push('a2'));
    await flush();
    expect(told).toEqual(['b']);
    // b, told, gives its lease up as a widget does (discard on an engine already out: a release only).
    b.discard();
    await flush();
    expect(told).toEqual(['b']);
    expect(f.made[0].dispose).toHaveBeenCalledTimes(1);
    expect(a2.engine).toBe(f.made[2]);
    a2.release();
    other.release();
  });

  it('runs the requests of one engine one at a time, in order, past failures', async () => {
    const reg = new EngineRegistry<{ id: number; dispose: () => void }>();
    const f = fakeFactory();
    const a = reg.acquire('k', f.factory);
    const b = reg.acquire('k', f.factory);
    const log: string[] = [];
    let running = 0;
    const task =
      (name: string, fail = false) =>
      async () => {
        running++;
        expect(running).toBe(1);
        log.push(`start ${name}`);
        await flush();
        log.push(`end ${name}`);
        running--;
        if (fail) throw new Error(name);
        return name;
      };
    const r = await Promise.allSettled([a.run(task('1')), b.run(task('2', true)), a.run(task('3'))]);
    expect(r.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });
});
