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
      // The fetch's first report (no bytes, no total) says nothing: no `fetch 0 B` line, nor beside upload.
      '  upload 131 kB / 1.17 MB  (600 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 131 kB / 1.17 MB  (610 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 1.17 MB / 1.17 MB  (620 ms)',
      '  fetch 1.17 MB / 1.17 MB, upload 1.17 MB / 1.17 MB, compile 4/20 pipelines  (1900 ms)',
    ]);
  });

  it('names the fetch once it has bytes or a total; a local file (no fetch) never shows one', () => {
    let now = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    const lines: string[] = [];
    const log = loadProgressLogger((l) => lines.push(l));
    log({ phase: 'fetch', bytesDone: 0, bytesTotal: 0, tMs: 0 });
    now = 600;
    log({ phase: 'fetch', bytesDone: 0, bytesTotal: 2_000_000, tMs: 600 }); // the size is known
    now = 1200;
    log({ phase: 'fetch', bytesDone: 500_000, bytesTotal: 0, tMs: 1200 }); // bytes, no total
    expect(lines).toEqual(['  fetch 0 B / 2 MB  (600 ms)', '  fetch 500 kB  (1200 ms)']);

    const local: string[] = [];
    const logLocal = loadProgressLogger((l) => local.push(l));
    now = 10_000;
    logLocal({ phase: 'fetch', bytesDone: 0, bytesTotal: 0, tMs: 0 });
    now = 10_600;
    logLocal({ phase: 'upload', bytesDone: 100_000, bytesTotal: 1_000_000, tMs: 600 });
    now = 11_200;
    logLocal({ phase: 'upload', bytesDone: 1_000_000, bytesTotal: 1_000_000, tMs: 1200 });
    logLocal({ phase: 'compile', bytesDone: 20, bytesTotal: 20, tMs: 1300 });
    expect(local).toEqual([
      '  upload 100 kB / 1 MB  (600 ms)',
      '  upload 1 MB / 1 MB  (1200 ms)',
      '  upload 1 MB / 1 MB, compile 20/20 pipelines  (1300 ms)',
    ]);
    expect(local.join('\n')).not.toContain('fetch');
  });

  it('a note with no figures yet is printed on its own', () => {
    vi.spyOn(performance, 'now').mockImplementation(() => 1000);
    const lines: string[] = [];
    loadProgressLogger((l) => lines.push(l))({
      phase: 'fetch',
      bytesDone: 0,
      bytesTotal: 0,
      tMs: 5,
      note: 'opening the file',
    });
    expect(lines).toEqual(['  opening the file  (5 ms)']);
  });
});
