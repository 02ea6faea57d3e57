/**
 * `npm run models -- list` names only files that are on disk: a split model whose first part is complete
 * and whose second was cut half-way, and a model whose run ended between the final rename and its record
 * (the file is `KEY.gguf` while the record still says partial). Three `models pull` processes of one URL
 * at once leave one intact copy (issue 47).
 */

import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLibrary } from '../library/library.ts';
import { FsStore } from '../library/store.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { errorOf } from '../testing/gguf-util.ts';
import { type ModelServer, startModelServer, testModelFiles } from '../testing/library-server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const KiB = 1024;

let server: ModelServer;
let dir: string;
let files: Map<string, Uint8Array>;
beforeAll(async () => {
  files = await testModelFiles();
  server = await startModelServer(files);
  dir = mkdtempSync(join(tmpdir(), 'models-cli-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function list(cacheDir = dir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/models.ts', 'list', '--cache-dir', cacheDir],
      { cwd: ROOT, timeout: 60_000 },
      (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

describe('npm run models -- list', () => {
  it('names the files that are on disk, and says which parts are not', async () => {
    const store = await FsStore.open(dir);
    // Part 2 of the split model is cut half-way (no retries left): part 1 is complete, part 2 partial.
    const cutPart2: typeof fetch = (input, init) =>
      fetch(/00002-of/.test(String(input)) ? String(input).replace('/range/', '/cut/') : input, init);
    const split = new ModelLibrary(store, {
      blockBytes: 64 * KiB,
      requestBytes: 8 * 1024 * KiB,
      retries: 0,
      fetch: cutPart2,
    });
    await errorOf(split.acquire(`${server.url}/range/stories260K-00001-of-00003.gguf`));
    // A complete download whose record was left saying "partial" (a run killed after the final rename).
    const single = new ModelLibrary(store, { blockBytes: 64 * KiB });
    const got = await single.acquire(`${server.url}/range/stories260K.gguf`);
    const meta = got.parts[0].meta;
    await store.putMeta({ ...meta, complete: false });

    const entries = await split.list();
    const splitEntry = entries.find((e) => e.parts === 3);
    expect(splitEntry?.complete).toBe(false);
    expect(splitEntry?.partKeys).toHaveLength(2);
    const part1 = store.filePath(splitEntry?.partKeys[0] ?? '');
    const part2 = `${store.filePath(splitEntry?.partKeys[1] ?? '')}.part`;
    expect(existsSync(part1)).toBe(true);
    expect(existsSync(part2)).toBe(true);

    const r = await list();
    expect(r.code, r.stderr).toBe(0);
    const paths = r.stdout
      .split('\n')
      .filter((l) => /^ {4}\//.test(l)) // an entry's file lines
      .map((l) => l.trim())
      .map((l) => l.replace(/ \(and the other .*\)$/, ''));
    // Before: the split's line was `${part 1 key}.gguf.part`, a file that does not exist (part 1 is
    // complete), and the crashed one `KEY.gguf.part`, also gone after the rename.
    for (const p of paths) expect(existsSync(p), `${p} is listed but not on disk:\n${r.stdout}`).toBe(true);
    expect(paths).toContain(part1);
    expect(paths).toContain(part2);
    expect(paths).toContain(store.filePath(meta.key));
    expect(r.stdout).toContain('(1 of 3 parts not on disk yet)');
  });
});

describe('npm run models -- pull, three processes at once', () => {
  it('one downloads, the others wait for it, and the one copy is intact and listed complete', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'models-cli-concurrent-'));
    try {
      server.reset();
      const bytes = files.get('stories260K.gguf') as Uint8Array;
      const url = `${server.url}/slow/stories260K.gguf`;
      // The first download stops 512 KiB in until the other two are seen waiting (before the lock, all
      // three wrote one .part file at once and left a sparse file of zeros, listed "complete").
      server.hold(512 * KiB);
      const runs = [0, 1, 2].map(() => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', 'src/cli/models.ts', 'pull', url, '--cache-dir', cacheDir],
          { cwd: ROOT },
        );
        const out = { stdout: '', stderr: '', code: -1 };
        child.stdout.on('data', (d) => {
          out.stdout += d;
        });
        child.stderr.on('data', (d) => {
          out.stderr += d;
        });
        const done = new Promise<typeof out>((ok) =>
          child.on('close', (code) => {
            out.code = code ?? -1;
            ok(out);
          }),
        );
        return { out, done };
      });
      await expect
        .poll(
          () =>
            runs.filter((r) =>
              /^waiting for process \d+, which is fetching stories260K\.gguf/m.test(r.out.stderr),
            ).length,
          {
            timeout: 60_000,
            interval: 100,
          },
        )
        .toBe(2);
      server.hold(undefined);
      const results = await Promise.all(runs.map((r) => r.done));
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      // One download; the two that waited found the copy complete (one HEAD each, no bytes).
      expect(server.stats.bodyBytes).toBe(bytes.length);
      expect(results.filter((r) => /model from the cache/.test(r.stdout))).toHaveLength(2);
      const path = results[0].stdout.trim().split('\n').at(-1) ?? '';
      expect(results.every((r) => r.stdout.trim().endsWith(path))).toBe(true);
      const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
      expect(sha(readFileSync(path))).toBe(sha(bytes));
      const l = await list(cacheDir);
      expect(l.stdout).toMatch(/, complete(, SHA-256 checked)?, last used/);
    } finally {
      server.hold(undefined);
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('npm run models -- pull of a damaged cached copy', () => {
  it('finds the damage (block 1, the header) by its SHA-256, says integrity, and downloads it again', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'models-cli-damaged-'));
    try {
      const bytes = files.get('stories260K.gguf') as Uint8Array;
      const url = `${server.url}/range/stories260K.gguf`;
      const pull = () =>
        new Promise<{ code: number; stdout: string; stderr: string }>((ok) => {
          execFile(
            process.execPath,
            ['--import', 'tsx', 'src/cli/models.ts', 'pull', url, '--cache-dir', cacheDir],
            { cwd: ROOT, timeout: 60_000 },
            (err, stdout, stderr) => ok({ code: err ? Number(err.code) : 0, stdout, stderr }),
          );
        });
      const first = await pull();
      expect(first.code, first.stderr).toBe(0);
      const path = first.stdout.trim().split('\n').at(-1) ?? '';
      const damaged = readFileSync(path);
      damaged[10] ^= 0x01; // inside the header: before, this read as gguf_invalid and was never repaired
      writeFileSync(path, damaged);
      server.reset();
      const second = await pull();
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toMatch(
        /integrity: the cached copy of stories260K\.gguf is damaged \(block 1 of 1: its SHA-256 differs\)/,
      );
      expect(server.stats.bodyBytes).toBe(bytes.length);
      const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
      expect(sha(readFileSync(path))).toBe(sha(bytes));
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('npm run models -- list|rm|clear in a folder that does not exist', () => {
  it('say so without creating it (a mistyped --cache-dir); pull and rm without a SPEC are usage errors', async () => {
    const missing = join(dir, 'no-such-cache');
    const listed = await runCliInProcess('models', ['list', '--cache-dir', missing]);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toBe(`${missing}: 0 models (the folder does not exist)\n`);
    const removed = await runCliInProcess('models', ['rm', 'stories260K', '--cache-dir', missing]);
    expect(removed.code).toBe(1);
    expect(removed.stdout).toMatch(/^nothing cached under stories260K: .*no-such-cache does not exist/);
    const cleared = await runCliInProcess('models', ['clear', '--cache-dir', missing]);
    expect(cleared.code).toBe(0);
    expect(cleared.stdout).toMatch(/^nothing to delete: .*no-such-cache does not exist/);
    expect(existsSync(missing)).toBe(false);
    for (const cmd of ['pull', 'rm']) {
      const r = await runCliInProcess('models', [cmd, '--cache-dir', missing]);
      expect(r.code, cmd).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`^error \\[invalid_argument\\]: ${cmd} needs a (KEY or )?SPEC\\n\\nusage:`),
      );
    }
    expect(existsSync(missing)).toBe(false);
  });
});
