/**
 * The remote view's own wording of a timeout: the engine's message ends "raise firstTokenTimeoutMs to wait
 * longer", an option of the JS API the page has no field for (a new user saw it under "Listing failed").
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { RemoteEngine } from '../remote/engine.ts';
import { listingHint, timeoutText } from './remote-view.ts';

describe('listingHint', () => {
  it('words a listing timeout for the page, without the API option', async () => {
    // A server that takes the connection and never answers.
    const server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const e = await new RemoteEngine({ baseUrl: url, firstTokenTimeoutMs: 50 }).listModels().then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toMatchObject({ code: 'timeout' });
      // The API's message is unchanged for the CLI and API users…
      expect((e as Error).message).toContain('raise firstTokenTimeoutMs to wait longer');
      // …the page's names what its user can do.
      const hint = listingHint(e);
      expect(hint).toMatch(
        new RegExp(
          `^${url}/v1/models took the connection but sent no answer within 0\\.05 s\\. Check that the URL`,
        ),
      );
      expect(hint).toContain('then list again.');
      expect(hint).not.toMatch(/TimeoutMs|raise/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('an HTML page for the model list: the engine’s message, shown as is, says the URL is probably no API', async () => {
    // A web app (a dev server, a login page) answers /v1/models with its HTML page.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><head><title>My App</title></head><body></body></html>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const e = await new RemoteEngine({ baseUrl: url }).listModels().then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toMatchObject({ code: 'protocol' });
      expect((e as Error).message).toBe(
        `${url}/v1/models answered HTTP 200 with an HTML page (Content-Type text/html; charset=utf-8) instead of JSON: the base URL is probably not an OpenAI-compatible API (it answers GET /v1/models with a JSON list); the page began "<!doctype html><html><head><title>My App</title></head><body></body></html>"`,
      );
      // The page shows the engine's message (no wording of its own for it).
      expect(listingHint(e)).toBeUndefined();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('leaves other failures to the engine’s message', () => {
    expect(listingHint(new EngineError('network', 'could not reach x'))).toBeUndefined();
    expect(listingHint(new Error('x'))).toBeUndefined();
  });

  it('drops the API option from a run’s timeout', () => {
    expect(
      timeoutText(
        'h sent no token within 60 s (first-token timeout): raise firstTokenTimeoutMs to wait longer',
      ),
    ).toBe('h sent no token within 60 s (first-token timeout)');
  });
});
