import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadProgressLogger } from './load-progress.ts';

describe('loadProgressLogger', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints each phase completion once and never repeats a line that says nothing new', () => {
    let now = 10_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    const lines: string[] = [];
    const log = loadProgressLogger((l) => lines.push(l));
    const MB = 1_170_000;
    log({ phase: 'fetch', bytesDone: 0, bytesTotal: 0, tMs: 0 });
    now = 10_600;
    log({ phase: 'upload', bytesDone: 131_000, bytesTotal: MB, tMs: 600 });
    log({ phase: 'fetch', bytesDone: MB, bytesTotal: MB, tMs: 610 }); // completes: printed
    log({ phase: 'upload', bytesDone: MB, bytesTotal: MB, tMs: 620 }); // completes: printed
    now = 11_300; // past the 500 ms tick, but the same state as the last line
    log({ phase: 'upload', bytesDone: MB, bytesTotal: MB, tMs: 1300 });
    now = 11_900;
    log({ phase: 'compile', bytesDone: 4, bytesTotal: 20, tMs: 1900 });
    expect(lines).toEqual([
      '  fetch 0 B  (0 ms)',
      '  fetch 0 B, upload 131 kB / 1.17 MB  (600 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 131 kB / 1.17 MB  (610 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 1.17 MB / 1.17 MB  (620 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 1.17 MB / 1.17 MB, compile 4/20 pipelines  (1900 ms)',
    ]);
  });
});
