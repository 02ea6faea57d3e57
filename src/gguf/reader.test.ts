import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import type { ModelSource } from '../core/types.ts';
import { RequestControl } from '../net/byte-source.ts';
import {
  collectTensorData,
  parseHeaderIndependently,
  sha256,
  startServer,
  storiesBytes,
  type TestServer,
} from '../testing/gguf-util.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { ggmlTypeName, tensorBytes } from './ggml-types.ts';
import { type OpenedGgufFile, openGguf } from './reader.ts';
import { kv, writeGguf } from './writer.ts';

/** Awaits `p` and returns the EngineError it rejects with (fails the test otherwise). */
async function engineError(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    if (isEngineError(e)) return e;
    throw new Error(`expected an EngineError, got ${String(e)}`, { cause: e });
  }
  throw new Error('expected a rejection');
}

function blobOf(b: Uint8Array, name = 'model.gguf'): ModelSource {
  return { blob: new Blob([b as Uint8Array<ArrayBuffer>]), name };
}

/** A copy of stories260K with bytes patched. */
function patched(patch: (b: Uint8Array, dv: DataView) => void): Uint8Array {
  const b = storiesBytes().slice();
  patch(b, new DataView(b.buffer));
  return b;
}

const stories = storiesBytes();
const ref = parseHeaderIndependently(stories);

let server: TestServer;
let tmp: string;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'gguf-reader-'));
  const html = new TextEncoder().encode('<!DOCTYPE html><html><body>Sign in</body></html>');
  server = await startServer({
    '/range.gguf': { body: stories },
    '/norange.gguf': { body: stories, mode: 'norange' },
    '/nolength.gguf': { body: stories, mode: 'norange-nolength' },
    '/cut-nolength.gguf': { body: stories.slice(0, 812_344), mode: 'norange-nolength' },
    '/cut.gguf': { body: stories.slice(0, 812_344) },
    '/page.html': { body: html, contentType: 'text/html' },
    // What Vite's dev server (`npm run dev`) answers for a path it does not have: its index.html, status 200.
    '/models/gone.gguf': {
      body: new TextEncoder().encode('<!doctype html>\n<html lang="en">'),
      contentType: 'text/html',
    },
    '/gone.gguf': { status: 404 },
    '/broken.gguf': { status: 500 },
    '/hang.gguf': { mode: 'hang' },
  });
});
afterAll(async () => {
  await server?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Checks an opened stories260K against the independently parsed header and the file's bytes. */
async function expectStories(f: OpenedGgufFile, chunkBytes?: number): Promise<void> {
  expect(f.version).toBe(3);
  expect(f.version).toBe(ref.version);
  expect(f.dataOffset).toBe(ref.dataOffset);
  expect(f.dataOffset).toBe(14176);
  expect(f.alignment).toBe(32);
  // Metadata: every key the DataView parser found, with the same value, and nothing else.
  expect(Object.keys(f.metadata).sort()).toEqual([...ref.kv.keys()].sort());
  for (const [k, { type, value }] of ref.kv) {
    expect(f.metadata[k], k).toEqual(value);
    expect(f.metadataTypes[k].type, k).toBe(type);
  }
  expect(f.metadata['llama.block_count']).toBe(5);
  expect(f.metadata['llama.embedding_length']).toBe(64);
  expect(f.metadata['llama.feed_forward_length']).toBe(172);
  expect(f.metadata['llama.attention.head_count']).toBe(8);
  expect(f.metadata['llama.attention.head_count_kv']).toBe(4);
  expect(f.metadata['general.architecture']).toBe('llama');
  expect((f.metadata['tokenizer.ggml.tokens'] as string[]).length).toBe(512);
  expect(f.metadataTypes['tokenizer.ggml.tokens']).toEqual({ type: 9, itemType: 8 });

  // Tensors: same names in the same order, shapes, types, absolute offsets and sizes.
  expect(f.tensors.size).toBe(48);
  expect([...f.tensors.keys()]).toEqual(ref.tensors.map((t) => t.name));
  for (const t of ref.tensors) {
    const info = f.tensors.get(t.name)!;
    expect(info.shape).toEqual(t.shape);
    expect(info.type).toBe(t.type);
    expect(info.typeName).toBe(ggmlTypeName(t.type));
    expect(info.fileOffset).toBe(ref.dataOffset + t.offset);
    expect(info.nBytes).toBe(t.shape.reduce((a, b) => a * b, 1) * 4); // all F32
  }
  expect(f.tensors.get('token_embd.weight')!.shape).toEqual([64, 512]);
  expect(f.tensors.get('blk.0.attn_k.weight')!.shape).toEqual([64, 32]);
  expect(f.tensors.get('blk.4.ffn_down.weight')!.shape).toEqual([172, 64]);

  // Tensor data: each tensor's streamed bytes hash like the file's bytes at its offset.
  const { data, chunks } = await collectTensorData(f, { chunkBytes });
  expect(data.size).toBe(48);
  for (const t of f.tensors.values()) {
    expect(sha256(data.get(t.name)!), t.name).toBe(
      sha256(stories.subarray(t.fileOffset, t.fileOffset + t.nBytes)),
    );
  }
  // Chunk invariants: in file order, contiguous, within one tensor, 4-byte multiples but a tensor's last.
  const limit = chunkBytes ?? 4 * 1024 * 1024;
  let prev = { name: '', end: 0 };
  for (const c of chunks) {
    const t = f.tensors.get(c.name)!;
    expect(c.offset % 4).toBe(0);
    expect(c.length).toBeLessThanOrEqual(limit);
    expect(c.offset + c.length).toBeLessThanOrEqual(t.nBytes);
    if (c.offset + c.length < t.nBytes) expect(c.length % 4).toBe(0);
    if (c.name === prev.name) expect(c.offset).toBe(prev.end);
    else expect(c.offset).toBe(0);
    prev = { name: c.name, end: c.offset + c.length };
  }
  const order = [...new Set(chunks.map((c) => c.name))];
  expect(order).toEqual(
    [...f.tensors.values()].sort((a, b) => a.fileOffset - b.fileOffset).map((t) => t.name),
  );
}

describe('openGguf on stories260K', () => {
  it('reads it by path', async () => {
    const f = await openGguf({ path: STORIES_PATH });
    expect(f.fileSize).toBe(1_185_376);
    expect(f.sourceName).toBe(STORIES_PATH);
    await expectStories(f);
  });

  it('reads it by Blob, in small odd-sized chunks', async () => {
    const f = await openGguf(blobOf(stories));
    expect(f.fileSize).toBe(1_185_376);
    await expectStories(f, 1000);
    await expectStories(await openGguf(blobOf(stories)), 36);
  });

  it('reads it by URL with range requests: the data in one GET from dataOffset', async () => {
    const before = server.requests.length;
    const f = await openGguf({ url: server.url('/range.gguf') });
    expect(f.fileSize).toBe(1_185_376);
    await expectStories(f, 64 * 1024 + 4);
    const reqs = server.requests.slice(before);
    expect(reqs.map((r) => r.range)).toEqual(['bytes=0-1999999', 'bytes=14176-']);
  });

  it('reads it by URL from a server that ignores Range', async () => {
    const before = server.requests.length;
    const f = await openGguf({ url: server.url('/norange.gguf') });
    expect(f.fileSize).toBe(1_185_376);
    await expectStories(f, 100_000);
    expect(server.requests.length - before).toBe(2);
  });

  it('reads it by URL when the server gives no size at all', async () => {
    const f = await openGguf({ url: server.url('/nolength.gguf') });
    expect(f.fileSize).toBeUndefined();
    await expectStories(f);
  });

  it('chunks a tensor at chunkBytes, rounding chunkBytes down to a multiple of 4', async () => {
    const f = await openGguf(blobOf(stories));
    const { chunks } = await collectTensorData(f, { chunkBytes: 1002 });
    const embd = chunks.filter((c) => c.name === 'token_embd.weight');
    expect(embd.length).toBe(Math.ceil(131072 / 1000));
    expect(embd.slice(0, -1).every((c) => c.length === 1000)).toBe(true);
    expect(embd.at(-1)!.length).toBe(131072 % 1000);
  });

  it('awaits onChunk before reading on, and reports progress to the total', async () => {
    const f = await openGguf({ url: server.url('/range.gguf') });
    let busy = false;
    let calls = 0;
    const progress: [number, number][] = [];
    await f.streamTensorData(
      async () => {
        expect(busy).toBe(false);
        busy = true;
        calls++;
        await new Promise((r) => setTimeout(r, 1));
        busy = false;
      },
      { chunkBytes: 16 * 1024, onBytes: (d, t) => progress.push([d, t]) },
    );
    expect(calls).toBeGreaterThan(48 + 5 * 8);
    expect(progress.at(-1)).toEqual([1_185_376 - 14176, 1_185_376 - 14176]);
    for (let i = 1; i < progress.length; i++)
      expect(progress[i][0]).toBeGreaterThanOrEqual(progress[i - 1][0]);
  });

  it('can stream the same file twice', async () => {
    const f = await openGguf({ path: STORIES_PATH });
    const a = await collectTensorData(f);
    const b = await collectTensorData(f);
    expect(sha256(a.data.get('output.weight')!)).toBe(sha256(b.data.get('output.weight')!));
  });
});

describe('openGguf errors', () => {
  it('a file cut inside the header is gguf_invalid and says it is truncated', async () => {
    const e = await engineError(openGguf(blobOf(stories.slice(0, 5000), 'cut.gguf')));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(/cut\.gguf is truncated/);
    expect(e.message).toMatch(/header/);
    expect(e.message).toMatch(/5,000 bytes/);
    expect(e.details?.truncated).toMatchObject({ fileBytes: 5000 });
    const e2 = await engineError(openGguf(blobOf(stories.slice(0, 14000))));
    expect(e2.code).toBe('gguf_invalid');
    expect(e2.message).toMatch(/truncated/);
  });

  it('a complete file whose header declares a 2^40-byte string is malformed, not "incomplete"', async () => {
    // A complete, valid file (one tensor), then its first metadata value's u64 string length set to 2^40.
    const huge = writeGguf({
      metadata: [kv.string('general.name', 'huge'), kv.u32('x.count', 1)],
      tensors: [{ name: 't', type: 'F32', shape: [4], data: new Uint8Array(16) }],
    });
    const dv = new DataView(huge.buffer, huge.byteOffset, huge.byteLength);
    const typeAt = 24 + 8 + 'general.name'.length;
    expect(dv.getUint32(typeAt, true)).toBe(8); // GGUF string
    expect(dv.getBigUint64(typeAt + 4, true)).toBe(4n);
    expect((await openGguf(blobOf(huge.slice()))).tensors.size).toBe(1); // valid before the patch
    dv.setBigUint64(typeAt + 4, 2n ** 40n, true);
    for (const src of [blobOf(huge, 'huge.gguf'), { path: join(tmp, 'huge.gguf') }]) {
      if ('path' in src) writeFileSync(src.path, huge);
      const e = await engineError(openGguf(src));
      expect(e.code).toBe('gguf_invalid');
      expect(e.message).toMatch(
        /huge\.gguf has a malformed GGUF header: String length 1099511627776 exceeds/,
      );
      expect(e.message).not.toMatch(/incomplete|truncated/);
      expect(e.details?.truncated).toBeUndefined();
    }
  });

  it('general.alignment = 2^31 names the file and the key (it was "tensor data offset is out of range (-2147483648)")', async () => {
    const bytes = writeGguf({
      metadata: [kv.u32('general.alignment', 64), kv.string('general.name', 'aligned')],
      tensors: [{ name: 't', type: 'F32', shape: [4], data: new Uint8Array(16) }],
    });
    expect((await openGguf(blobOf(bytes.slice()))).tensors.size).toBe(1);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const valueAt = 24 + 8 + 'general.alignment'.length + 4;
    expect(dv.getUint32(valueAt, true)).toBe(64);
    dv.setUint32(valueAt, 2 ** 31, true);
    const e = await engineError(openGguf(blobOf(bytes, 'aligned.gguf')));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(
      /^aligned\.gguf: general\.alignment = 2,147,483,648 puts the tensor data at byte 2,147,483,648, past the file's end \(\d+ bytes\)/,
    );
  });

  it('a complete local file whose string runs past its end says truncated or malformed, not only "incomplete download"', async () => {
    const bytes = writeGguf({
      metadata: [kv.string('general.name', 'short'), kv.u32('x.count', 1)],
      tensors: [{ name: 't', type: 'F32', shape: [4], data: new Uint8Array(16) }],
    });
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const lengthAt = 24 + 8 + 'general.name'.length + 4;
    expect(dv.getBigUint64(lengthAt, true)).toBe(5n);
    dv.setBigUint64(lengthAt, 100_000n, true); // past the end, below the parser's own string limit
    const path = join(tmp, 'short.gguf');
    writeFileSync(path, bytes);
    const e = await engineError(openGguf({ path }));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(
      /short\.gguf is truncated or malformed: it ends at [\d,]+ bytes, inside its header/,
    );
    expect(e.message).toMatch(
      /\(an incomplete download or copy\), or a string or array length in the header runs past its end$/,
    );
  });

  it('a file too short for the fixed header is gguf_invalid', async () => {
    const e = await engineError(openGguf(blobOf(stories.slice(0, 6))));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(/too short/);
    expect((await engineError(openGguf(blobOf(new Uint8Array(0))))).code).toBe('gguf_invalid');
  });

  it('a file cut in the tensor data is gguf_invalid at open, naming the first incomplete tensor', async () => {
    const cut = 812_344;
    const victim = ref.tensors
      .map((t) => ({ name: t.name, end: ref.dataOffset + t.offset + t.shape.reduce((a, b) => a * b, 1) * 4 }))
      .sort((a, b) => a.end - b.end)
      .find((t) => t.end > cut)!;
    const expectMsg = (m: string) => {
      expect(m).toContain('ends at 812,344 bytes');
      expect(m).toContain(`tensor ${victim.name} needs bytes up to ${victim.end.toLocaleString('en-US')}`);
      expect(m).toContain('the file is incomplete (a download or copy that stopped early)');
    };
    const e = await engineError(openGguf(blobOf(stories.slice(0, cut))));
    expect(e.code).toBe('gguf_invalid');
    expectMsg(e.message);
    expect(e.details?.truncated).toEqual({ fileBytes: cut, neededBytes: victim.end, tensor: victim.name });

    const path = join(tmp, 'cut.gguf');
    writeFileSync(path, stories.subarray(0, cut));
    expectMsg((await engineError(openGguf({ path }))).message);
    expectMsg((await engineError(openGguf({ url: server.url('/cut.gguf') }))).message);
  });

  it('when the size is unknown, a cut in the data is found while streaming', async () => {
    const f = await openGguf({ url: server.url('/cut-nolength.gguf') });
    expect(f.fileSize).toBeUndefined();
    const e = await engineError(collectTensorData(f));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(/ends at 812,344 bytes but tensor blk\.\d\.\w+\.weight needs bytes up to/);
    expect(e.details?.truncated).toMatchObject({
      fileBytes: 812_344,
      tensor: expect.stringMatching(/^blk\./),
    });
  });

  it('bad magic is gguf_invalid; an HTML page for a URL is the file not found, by its URL', async () => {
    const e = await engineError(openGguf(blobOf(patched((b) => b.set([0x47, 0x47, 0x4d, 0x4c], 0)))));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toContain('not a GGUF file');
    expect(e.message).toContain('"GGML"');
    for (const path of ['/models/gone.gguf', '/page.html']) {
      const h = await engineError(openGguf({ url: server.url(path) }));
      expect(h.code, path).toBe('http_status');
      expect(h.message).toBe(
        `${server.url(path)} was not found: the server answered with an HTML page instead of a GGUF file; ` +
          "check the URL (a web app's server, such as npm run dev's, answers a file it does not have with its " +
          'own page; else it is an error or login page)',
      );
    }
    // A picked file that holds HTML is no URL to check: it stays "not a GGUF file".
    const picked = await engineError(openGguf(blobOf(new TextEncoder().encode('<!doctype html><html>'))));
    expect(picked.code).toBe('gguf_invalid');
    expect(picked.message).toMatch(/not a GGUF file.*looks like an HTML page/);
  });

  it('a file under 8 bytes is cut short only when its bytes so far are the magic, worded by source', async () => {
    const text = join(tmp, 'note.gguf');
    writeFileSync(text, 'hello\n');
    const other = await engineError(openGguf({ path: text }));
    expect(other.code).toBe('gguf_invalid');
    expect(other.message).toBe(`${text} is not a GGUF file: it starts with "hell" instead of "GGUF"`);
    const cutPath = join(tmp, 'cut6.gguf');
    writeFileSync(cutPath, stories.subarray(0, 6));
    const cut = await engineError(openGguf({ path: cutPath }));
    expect(cut.message).toBe(
      `${cutPath} is only 6 bytes, too short to be a GGUF file: an incomplete download or copy`,
    );
    const empty = await engineError(openGguf(blobOf(new Uint8Array(0))));
    expect(empty.message).toMatch(/is only 0 bytes, too short to be a GGUF file/);
  });

  it('GGUF version 1 and 4 are gguf_invalid', async () => {
    const v1 = await engineError(openGguf(blobOf(patched((_, dv) => dv.setUint32(4, 1, true)))));
    expect(v1.code).toBe('gguf_invalid');
    expect(v1.message).toMatch(/version 1 .*not supported/);
    const v4 = await engineError(openGguf(blobOf(patched((_, dv) => dv.setUint32(4, 4, true)))));
    expect(v4.code).toBe('gguf_invalid');
    expect(v4.message).toMatch(/version 4; only versions 2 and 3/);
  });

  it('a big-endian file is unsupported_model', async () => {
    const e = await engineError(openGguf(blobOf(patched((_, dv) => dv.setUint32(4, 3, false)))));
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toMatch(/big-endian/);
  });

  it('an unknown tensor type is unsupported_model naming the tensor', async () => {
    // The type field of the first tensor info (token_embd.weight) sits right after its two dims.
    const name = new TextEncoder().encode('token_embd.weight');
    const b = patched((bytes, dv) => {
      const at = bytes.findIndex((_, i) => name.every((c, j) => bytes[i + j] === c));
      dv.setUint32(at + name.length + 4 + 16, 99, true);
    });
    const e = await engineError(openGguf(blobOf(b)));
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toMatch(/type id 99 \(tensor token_embd\.weight\)/);
  });

  it('HTTP 404 and 500 are http_status with the status', async () => {
    const e = await engineError(openGguf({ url: server.url('/gone.gguf') }));
    expect(e.code).toBe('http_status');
    expect(e.message).toMatch(/HTTP 404/);
    expect(e.message).toContain(server.url('/gone.gguf'));
    const e5 = await engineError(openGguf({ url: server.url('/broken.gguf') }));
    expect(e5.code).toBe('http_status');
    expect(e5.message).toMatch(/HTTP 500/);
  });

  it('a server that never answers is a timeout', async () => {
    const t0 = performance.now();
    const e = await engineError(openGguf({ url: server.url('/hang.gguf') }, { timeoutMs: 200 }));
    expect(e.code).toBe('timeout');
    expect(e.message).toMatch(/200 ms/);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('a refused connection is a network error', async () => {
    const s = await startServer({});
    const url = s.url('/x.gguf');
    await s.close();
    const e = await engineError(openGguf({ url }));
    expect(e.code).toBe('network');
    expect(e.message).toContain(url);
  });

  it('a missing path is invalid_argument', async () => {
    const e = await engineError(openGguf({ path: join(tmp, 'nope.gguf') }));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(/no such file/);
  });

  it('aborting before open, during a hung request and during streaming is aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await engineError(openGguf({ path: STORIES_PATH }, { signal: ac.signal }))).code).toBe('aborted');

    const ac2 = new AbortController();
    setTimeout(() => ac2.abort(), 100);
    const e2 = await engineError(
      openGguf({ url: server.url('/hang.gguf') }, { signal: ac2.signal, timeoutMs: 0 }),
    );
    expect(e2.code).toBe('aborted');

    for (const src of [{ url: server.url('/range.gguf') }, blobOf(stories), { path: STORIES_PATH }]) {
      const f = await openGguf(src);
      const ac3 = new AbortController();
      let n = 0;
      const e3 = await engineError(
        f.streamTensorData(
          () => {
            if (++n === 3) ac3.abort();
          },
          { signal: ac3.signal, chunkBytes: 4096 },
        ),
      );
      expect(e3.code).toBe('aborted');
      expect(n).toBe(3);
    }
  });

  it('overlapping tensors are gguf_invalid', async () => {
    // Point blk.0.attn_k.weight's offset at blk.0.attn_q.weight's.
    const b = patched((bytes, dv) => {
      const name = new TextEncoder().encode('blk.0.attn_k.weight');
      const at = bytes.findIndex((_, i) => name.every((c, j) => bytes[i + j] === c));
      const offAt = at + name.length + 4 + 16 + 4;
      const q = ref.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!;
      dv.setBigUint64(offAt, BigInt(q.offset), true);
    });
    const e = await engineError(openGguf(blobOf(b)));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(/overlap/);
  });

  it('tensorBytes agrees with the reader for every stories tensor', () => {
    for (const t of ref.tensors)
      expect(tensorBytes(t.type, t.shape, t.name)).toBe(t.shape.reduce((a, b) => a * b) * 4);
  });
});

describe('RequestControl', () => {
  it('a wait ends on abort even when what it waits for never settles', async () => {
    // Node's fetch can leave a body read pending after an abort once the whole body has arrived; a
    // download stopped at that moment used to hang until the test's time ran out.
    const outer = new AbortController();
    const rc = new RequestControl('http://example.test/m.gguf', 60_000, outer.signal);
    const waiting = rc.wait(() => new Promise<never>(() => {}));
    setTimeout(() => outer.abort(), 10);
    const e = await waiting.catch((x: unknown) => x);
    expect(isEngineError(e, 'aborted')).toBe(true);
    rc.dispose();
  });

  it('the idle timer ends a wait that never settles with a timeout naming the URL', async () => {
    const rc = new RequestControl('http://example.test/m.gguf', 30, undefined);
    const e = await rc.wait(() => new Promise<never>(() => {})).catch((x: unknown) => x);
    expect(isEngineError(e, 'timeout')).toBe(true);
    expect((e as Error).message).toMatch(/example\.test\/m\.gguf sent nothing for 30 ms/);
    rc.dispose();
  });
});
