/**
 * Node-only helpers for the GGUF tests: the real model, a GGUF header parser written independently of
 * `@huggingface/gguf` (plain DataView code, for cross-checking), a tiny HTTP server, hashing.
 * Imported by `*.test.ts` only.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type EngineError, isEngineError } from '../core/errors.ts';
import type { GgufFile, TensorChunk } from '../gguf/types.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { stories260kPath } from './models.ts';

/** The EngineError a promise rejects with; throws when it resolves or rejects with anything else. */
export async function errorOf(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    if (isEngineError(e)) return e;
    throw e;
  }
  throw new Error('expected an EngineError');
}

let storiesCache: Uint8Array | undefined;
/** The bytes of stories260K.gguf (read-only; copy before changing); throws one clear line when it is missing. */
export function storiesBytes(): Uint8Array {
  storiesCache ??= new Uint8Array(readFileSync(stories260kPath()));
  return storiesCache;
}

export function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

/** A GGUF header as read by {@link parseHeaderIndependently}. */
export interface IndependentHeader {
  version: number;
  kv: Map<string, { type: number; value: unknown }>;
  tensors: { name: string; shape: number[]; type: number; offset: number }[];
  /** Start of the data section (header end rounded up to the alignment). */
  dataOffset: number;
}

/** Parses a little-endian GGUF v2/v3 header with plain DataView code. */
export function parseHeaderIndependently(bytes: Uint8Array): IndependentHeader {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dec = new TextDecoder();
  let o = 0;
  const u32 = () => {
    o += 4;
    return dv.getUint32(o - 4, true);
  };
  const u64 = () => {
    o += 8;
    return Number(dv.getBigUint64(o - 8, true));
  };
  const str = () => {
    const n = u64();
    o += n;
    return dec.decode(bytes.subarray(o - n, o));
  };
  const value = (type: number): unknown => {
    switch (type) {
      case 0:
        return dv.getUint8(o++);
      case 1:
        return dv.getInt8(o++);
      case 2:
        o += 2;
        return dv.getUint16(o - 2, true);
      case 3:
        o += 2;
        return dv.getInt16(o - 2, true);
      case 4:
        return u32();
      case 5:
        o += 4;
        return dv.getInt32(o - 4, true);
      case 6:
        o += 4;
        return dv.getFloat32(o - 4, true);
      case 7:
        return dv.getUint8(o++) !== 0;
      case 8:
        return str();
      case 9: {
        const itemType = u32();
        const n = u64();
        return Array.from({ length: n }, () => value(itemType));
      }
      case 10:
        o += 8;
        return dv.getBigUint64(o - 8, true);
      case 11:
        o += 8;
        return dv.getBigInt64(o - 8, true);
      case 12:
        o += 8;
        return dv.getFloat64(o - 8, true);
      default:
        throw new Error(`bad value type ${type}`);
    }
  };
  if (dec.decode(bytes.subarray(0, 4)) !== 'GGUF') throw new Error('bad magic');
  o = 4;
  const version = u32();
  const nTensors = u64();
  const nKv = u64();
  const kv = new Map<string, { type: number; value: unknown }>();
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const type = u32();
    kv.set(key, { type, value: value(type) });
  }
  const tensors: IndependentHeader['tensors'] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const nDims = u32();
    const shape = Array.from({ length: nDims }, () => u64());
    const type = u32();
    const offset = u64();
    tensors.push({ name, shape, type, offset });
  }
  const align = Number(kv.get('general.alignment')?.value ?? 32);
  return { version, kv, tensors, dataOffset: Math.ceil(o / align) * align };
}

/** Streams a file's tensor data and returns each tensor's bytes, plus every chunk's (tensor, offset, length). */
export async function collectTensorData(
  file: GgufFile,
  opts: { chunkBytes?: number; signal?: AbortSignal } = {},
): Promise<{ data: Map<string, Uint8Array>; chunks: { name: string; offset: number; length: number }[] }> {
  const data = new Map<string, Uint8Array>();
  const chunks: { name: string; offset: number; length: number }[] = [];
  await file.streamTensorData((c: TensorChunk) => {
    let buf = data.get(c.tensor.name);
    if (!buf) {
      buf = new Uint8Array(c.tensor.nBytes);
      data.set(c.tensor.name, buf);
    }
    buf.set(c.bytes, c.offset);
    chunks.push({ name: c.tensor.name, offset: c.offset, length: c.bytes.length });
  }, opts);
  return { data, chunks };
}

/** How a test route answers. */
export type RouteMode =
  /** Honours Range (206 + Content-Range; 416 past the end), sends Content-Length. */
  | 'range'
  /** Ignores Range: always 200 with the whole body and Content-Length. */
  | 'norange'
  /** Ignores Range and sends no Content-Length (chunked), so the size is unknown. */
  | 'norange-nolength'
  /** Never answers. */
  | 'hang';

export interface Route {
  mode?: RouteMode;
  body?: Uint8Array;
  /** Answer with this status and a short text body instead. */
  status?: number;
  contentType?: string;
}

export interface TestServer {
  url(path: string): string;
  /** Every request: method, path, Range header. */
  requests: { method: string; path: string; range?: string }[];
  close(): Promise<void>;
}

const PIECE = 64 * 1024;

async function sendBody(res: ServerResponse, body: Uint8Array): Promise<void> {
  for (let i = 0; i < body.length; i += PIECE) {
    if (res.destroyed) return;
    if (!res.write(body.subarray(i, i + PIECE))) await new Promise((r) => res.once('drain', r));
  }
  res.end();
}

/** Starts an HTTP server on 127.0.0.1 serving `routes` (path → route). */
export async function startServer(routes: Record<string, Route>): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    requests.push({ method: req.method ?? 'GET', path, range: req.headers.range });
    const route = routes[path];
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (route.mode === 'hang') return;
    if (route.status !== undefined) {
      res.writeHead(route.status, { 'content-type': route.contentType ?? 'text/plain' }).end('error page');
      return;
    }
    const body = route.body ?? new Uint8Array(0);
    const head = req.method === 'HEAD';
    const mode = route.mode ?? 'range';
    const type = route.contentType ?? 'application/octet-stream';
    const m = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    if (mode === 'range' && m) {
      const start = Number(m[1]);
      const end = Math.min(m[2] ? Number(m[2]) : body.length - 1, body.length - 1);
      if (start >= body.length) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-type': type,
        'content-length': String(end - start + 1),
        'content-range': `bytes ${start}-${end}/${body.length}`,
        'accept-ranges': 'bytes',
      });
      if (head) res.end();
      else void sendBody(res, body.subarray(start, end + 1));
      return;
    }
    const headers: Record<string, string> = { 'content-type': type };
    if (mode !== 'norange-nolength') headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    if (head) res.end();
    else void sendBody(res, body);
  };
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * A tiny random llama (2 layers, 32 wide, 259 tokens; the project's generator) written to `dir` as
 * tiny.gguf, for the command-line tools' tests: its path.
 */
export function writeTinyModel(dir: string, seed: number): string {
  const path = join(dir, 'tiny.gguf');
  writeFileSync(path, makeRandomLlamaGguf({ seed, nLayers: 2, nEmbd: 32, nFF: 64, nHead: 4, nVocab: 259 }));
  return path;
}
