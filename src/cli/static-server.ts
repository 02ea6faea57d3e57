/**
 * A small static HTTP server for the command-line tools: serves a built page (`dist/bench/`,
 * src/cli/page-build.ts) and, under `/__model/NAME`, local model files with HTTP range requests (206,
 * `Content-Range`, HEAD), so the page loads a local GGUF the way it loads one from the web. Listens on
 * 127.0.0.1 only.
 */
import { createReadStream, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { basename, extname, join, normalize, resolve, sep } from 'node:path';
import { parseSplitName, splitPartName } from '../gguf/split.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
  '.gguf': 'application/octet-stream',
};

/** A running server. */
export interface StaticServer {
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** Serves a local file at `/__model/<name>` and returns its absolute URL. */
  addModel(path: string): string;
  /**
   * `text` with every served model's URL (a split model's other parts too) replaced by its local path:
   * for messages, which must name the files a person gave, not this server's internal addresses.
   */
  localPaths(text: string): string;
  /** The local files served (a split model's other parts too), as absolute paths. */
  servedPaths(): string[];
  close(): Promise<void>;
}

/** Parses `Range: bytes=a-b` (one range) against a size; undefined = whole file, null = unsatisfiable. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | null | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    // Suffix range: the last N bytes.
    const n = Number(m[2]);
    if (n === 0) return null;
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return null;
  return { start, end };
}

function sendFile(req: IncomingMessage, res: ServerResponse, path: string): void {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a file');
    size = st.size;
  } catch {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
    return;
  }
  const type = TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
  const headers: Record<string, string | number> = {
    'Content-Type': type,
    'Accept-Ranges': 'bytes',
    'Cache-Control': 'no-store',
  };
  const range = parseRange(req.headers.range, size);
  if (range === null) {
    res.writeHead(416, { ...headers, 'Content-Range': `bytes */${size}` }).end();
    return;
  }
  const { start, end } = range ?? { start: 0, end: size - 1 };
  const length = size === 0 ? 0 : end - start + 1;
  res.writeHead(range ? 206 : 200, {
    ...headers,
    'Content-Length': length,
    ...(range ? { 'Content-Range': `bytes ${start}-${end}/${size}` } : {}),
  });
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  const stream = createReadStream(path, { start, end });
  stream.on('error', () => res.destroy());
  res.on('close', () => stream.destroy());
  stream.pipe(res);
}

/**
 * Starts the server on a free port of 127.0.0.1.
 * @param root the directory served at `/` (`index.html` for `/`).
 */
export async function startStaticServer(root: string): Promise<StaticServer> {
  const rootAbs = resolve(root);
  const models = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (pathname.startsWith('/__model/')) {
      const p = models.get(pathname.slice('/__model/'.length));
      if (!p) res.writeHead(404, { 'Content-Type': 'text/plain' }).end('no such model');
      else sendFile(req, res, p);
      return;
    }
    if (pathname.endsWith('/')) pathname += 'index.html';
    const file = normalize(join(rootAbs, pathname));
    if (file !== rootAbs && !file.startsWith(rootAbs + sep)) {
      res.writeHead(403).end();
      return;
    }
    sendFile(req, res, file);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    addModel(path: string): string {
      let name = basename(path);
      for (let i = 2; models.has(name) && models.get(name) !== path; i++) name = `${i}-${basename(path)}`;
      models.set(name, resolve(path));
      // A split model's first part: serve the other parts beside it under their own names (same prefix).
      const split = parseSplitName(name);
      if (split?.no === 1) {
        for (let no = 2; no <= split.count; no++) {
          const sibling = splitPartName(path, no, split.count);
          models.set(splitPartName(name, no, split.count), resolve(sibling));
        }
      }
      return `${base}/__model/${encodeURIComponent(name)}`;
    },
    localPaths(text: string): string {
      // Longest names first, so `2-x.gguf` is not half-replaced by `x.gguf`'s URL.
      const byLength = [...models].sort((a, b) => b[0].length - a[0].length);
      for (const [name, path] of byLength)
        text = text.split(`${base}/__model/${encodeURIComponent(name)}`).join(path);
      return text;
    },
    servedPaths: () => [...new Set(models.values())],
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
