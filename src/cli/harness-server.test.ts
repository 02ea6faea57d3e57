/**
 * The browser runtime's errors about local files say what the Node runtime says (issue 47, misleading
 * messages): a split part that is a directory was "HTTP 404", an HTML file "the server answered with an
 * HTML page", a missing one http_status, and a path with a space was shown as %20.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { htmlInsteadOfFileError } from '../net/byte-source.ts';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { asNodeSaysIt, errorFromPage, localFileError } from './harness-server.ts';
import { formatCliError } from './run.ts';

const tempDir = useTempDirs();
const BASE = 'http://127.0.0.1:41234';
const served = (path: string) => `${BASE}/@fs${path.split('/').map(encodeURIComponent).join('/')}`;

describe('localFileError', () => {
  const dir = join(tempDir('harness-err-'), 'my models #1');
  mkdirSync(dir);
  const asDir = join(dir, 'st-00002-of-00003.gguf');
  mkdirSync(asDir);
  const html = join(dir, 'page.gguf');
  writeFileSync(html, '<!doctype html><html><body>login</body></html>\n');
  const good = join(dir, 'good.gguf');
  copyFileSync(stories260kPath(), good);
  const missing = join(dir, 'st-00003-of-00003.gguf');

  it('a directory given as a split part: invalid_argument "not a regular file", the path as typed', () => {
    const e = localFileError(
      new EngineError(
        'http_status',
        `split part 2 of 3 is missing: ${served(asDir)} was not found (HTTP 404); a split model needs all 3 parts`,
      ),
      BASE,
    ) as EngineError;
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toBe(
      `split part 2 of 3 (${asDir}): cannot open model file ${asDir}: not a regular file`,
    );
  });

  it('an HTML file: gguf_invalid "not a GGUF file", as Node says it', () => {
    const e = localFileError(htmlInsteadOfFileError(served(html)), BASE) as EngineError;
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toBe(
      `${html} is not a GGUF file: it starts with "<!do" instead of "GGUF" (it looks like an HTML page: a saved web page or an error page, not a model)`,
    );
  });

  it("a missing part: Node's code and words", () => {
    const e = localFileError(
      new EngineError(
        'http_status',
        `split part 3 of 3 is missing: ${served(missing)} was not found (HTTP 404); x`,
      ),
      BASE,
    ) as EngineError;
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toBe(`split part 3 of 3 is missing: ${missing} was not found (no such file); x`);
  });

  it('other errors keep their code; served paths are decoded (a space, #), never shown as %20', () => {
    const e = localFileError(
      new EngineError('gguf_invalid', `${served(good)}: tensor blk.0.attn_q.weight runs past the file's end`),
      BASE,
    ) as EngineError;
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toBe(`${good}: tensor blk.0.attn_q.weight runs past the file's end`);
    expect(e.message).not.toContain('%20');
    // A GGUF file the page could not fetch for another reason: the HTTP error stays, the path decoded.
    const h = localFileError(new EngineError('http_status', `${served(good)} failed with HTTP 500`), BASE);
    expect((h as EngineError).code).toBe('http_status');
    expect((h as Error).message).toBe(`${good} failed with HTTP 500`);
    const plain = new Error('x');
    expect(localFileError(plain, BASE)).toBe(plain);
    expect(localFileError('str', BASE)).toBe('str');
  });

  it('asNodeSaysIt (npm run bench, whose static server already names files by path): only the paths given', () => {
    const e = new EngineError(
      'http_status',
      `split part 2 of 3 is missing: ${asDir} was not found (HTTP 404); x`,
    );
    expect((asNodeSaysIt(e, [good]) as EngineError).code).toBe('http_status');
    const n = asNodeSaysIt(e, [good, asDir]) as EngineError;
    expect(n.code).toBe('invalid_argument');
    expect(n.message).toBe(
      `split part 2 of 3 (${asDir}): cannot open model file ${asDir}: not a regular file`,
    );
  });
});

describe('an error handed back by the page, and how the command line prints it', () => {
  it('keeps an EngineError code and details across page.evaluate (a plain object), a plain error plain', () => {
    const e = new EngineError('context_overflow', 'm', { details: { contextLength: 64, promptTokens: 90 } });
    // What page.evaluate hands back: the fields, no class (structured clone of a plain object).
    const back = errorFromPage(
      structuredClone({ name: e.name, code: e.code, message: e.message, details: e.details }),
    );
    expect(back).toBeInstanceOf(EngineError);
    expect((back as EngineError).details).toEqual({ contextLength: 64, promptTokens: 90 });
    const plain = errorFromPage({ name: 'TypeError', message: 'x is not a function' });
    expect(plain).not.toBeInstanceOf(EngineError);
    expect(plain.message).toBe('x is not a function');
    expect(
      errorFromPage({ name: 'EngineError', code: 'network', message: 'offline', details: 'junk' }),
    ).toMatchObject({
      code: 'network',
      details: undefined,
    });
    // A DOMException's numeric code is no EngineError code.
    const abort = errorFromPage({ name: 'AbortError', code: 20, message: 'The operation was aborted.' });
    expect(abort).not.toBeInstanceOf(EngineError);
    expect(abort.message).toBe('The operation was aborted.');
  });

  it('formatCliError words a context overflow for the command line (--ctx), from its details', () => {
    const e = new EngineError('context_overflow', 'engine words (contextLength; --ctx on the command line)', {
      details: { contextLength: 64, promptTokens: 90 },
    });
    expect(formatCliError(e)).toBe(
      'error [context_overflow]: the prompt needs 90 tokens but the context holds 64 (and one must be left for the answer); shorten the prompt or pass a larger --ctx',
    );
    // Without details (a window of perplexity's that does not fit): the engine's message as it is.
    const w = new EngineError(
      'context_overflow',
      '300 tokens do not fit the context (256); split the text into windows',
    );
    expect(formatCliError(w)).toBe(`error [context_overflow]: ${w.message}`);
  });
});
