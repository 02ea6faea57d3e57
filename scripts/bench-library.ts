/**
 * `npm run bench:library`: what the model library's integrity check costs on this machine — reading a
 * kept copy through `CachedByteSource` (each 16 MiB block checked against its SHA-256) against reading the
 * same file plainly — and how fast a download into the cache goes from a local server (range requests,
 * block digests and the whole-file SHA-256). Prints a Markdown table with the device and date.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelLibrary } from '../src/library/library.ts';
import { FsStore } from '../src/library/store.ts';

const MiB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 512);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-library-'));
  try {
    // A file that starts like a GGUF (the download checks the magic) and is otherwise random.
    const bytes = randomBytes(sizeMiB * MiB);
    bytes.write('GGUF', 0, 'latin1');
    const sha = createHash('sha256').update(bytes).digest('hex');
    const server = createServer((req, res) => {
      const etag = `"${sha}"`;
      const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
      const base = { ETag: etag, 'Accept-Ranges': 'bytes' };
      if (req.method === 'HEAD')
        return void res.writeHead(200, { ...base, 'Content-Length': String(bytes.length) }).end();
      if (!m) return void res.writeHead(200, { ...base, 'Content-Length': String(bytes.length) }).end(bytes);
      const start = Number(m[1]);
      const end = m[2] ? Number(m[2]) : bytes.length - 1;
      res.writeHead(206, {
        ...base,
        'Content-Range': `bytes ${start}-${end}/${bytes.length}`,
        'Content-Length': String(end - start + 1),
      });
      res.end(bytes.subarray(start, end + 1));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/model.gguf`;
    const store = await FsStore.open(join(dir, 'cache'));
    const lib = new ModelLibrary(store);

    const t = performance.now();
    const got = await lib.acquire(url);
    const downloadMs = performance.now() - t;
    server.close();

    const readAll = async (read: (s: number, e: number) => Promise<Uint8Array>) => {
      const t0 = performance.now();
      for (let p = 0; p < bytes.length; p += 4 * MiB) await read(p, Math.min(bytes.length, p + 4 * MiB));
      return performance.now() - t0;
    };
    const plainPath = join(dir, 'plain.bin');
    writeFileSync(plainPath, bytes);
    // Time each twice (the second from the page cache) and keep the faster.
    const fs = await import('node:fs/promises');
    const fh = await fs.open(plainPath, 'r');
    const plainRead = (s: number, e: number) => {
      const out = new Uint8Array(e - s);
      return fh.read(out, 0, out.length, s).then(() => out);
    };
    const src = got.parts[0];
    const times = { plain: Infinity, checked: Infinity };
    for (let i = 0; i < 2; i++) {
      times.plain = Math.min(times.plain, await readAll(plainRead));
      const seq = await src.openSequential(0);
      times.checked = Math.min(times.checked, await readAll(() => seq.read(4 * MiB)));
      await seq.close();
    }
    await fh.close();
    const gbs = (ms: number) => ((bytes.length / ms) * 1000) / 1e9;
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    console.log(
      `Model library, ${sizeMiB} MiB file, ${cpu} (${cpus().length} cores), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`,
    );
    console.log('| what | time | rate |');
    console.log('| --- | ---: | ---: |');
    console.log(
      `| download into the cache from 127.0.0.1 (64 MiB range requests, block + whole-file SHA-256) | ${downloadMs.toFixed(0)} ms | ${gbs(downloadMs).toFixed(2)} GB/s |`,
    );
    console.log(
      `| read the kept copy front to back, every 16 MiB block checked (CachedByteSource; nothing else to overlap with here) | ${times.checked.toFixed(0)} ms | ${gbs(times.checked).toFixed(2)} GB/s |`,
    );
    console.log(
      `| read the same bytes from a plain file | ${times.plain.toFixed(0)} ms | ${gbs(times.plain).toFixed(2)} GB/s |`,
    );
    console.log(
      `\nchecked / plain read time: ${(times.checked / times.plain).toFixed(2)}×; SHA-256 verified: ${got.parts[0].meta.sha256Verified}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
