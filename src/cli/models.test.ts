/**
 * `npm run models -- list` names only files that are on disk: a split model whose first part is complete
 * and whose second was cut half-way, and a model whose run ended between the final rename and its record
 * (the file is `KEY.gguf` while the record still says partial).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLibrary } from '../library/library.ts';
import { FsStore } from '../library/store.ts';
import { errorOf } from '../testing/gguf-util.ts';
import { type ModelServer, startModelServer, testModelFiles } from '../testing/library-server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const KiB = 1024;

let server: ModelServer;
let dir: string;
beforeAll(async () => {
  server = await startModelServer(await testModelFiles());
  dir = mkdtempSync(join(tmpdir(), 'models-cli-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function list(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/models.ts', 'list', '--cache-dir', dir],
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
