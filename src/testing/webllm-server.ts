/**
 * Vitest global setup for the WebLLM browser test: a server on 127.0.0.1 that plays a model host.
 * `/hang/…` never answers; `/missing/…` answers 404 (with CORS headers, so the page sees the status).
 * Its URL reaches the test through `inject('webllmServer')`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    webllmServer: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const hung = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.url?.startsWith('/hang/')) {
      hung.add(res);
      return;
    }
    res.statusCode = 404;
    res.end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  project.provide('webllmServer', `http://127.0.0.1:${port}`);
  return async () => {
    for (const res of hung) res.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
}
