import { describe, expect, it } from 'vitest';
import { RequestControl } from '../net/byte-source.ts';
import { retryWords, widgetWords } from './words.ts';

/** The library's timeout message for a request that got `received` bytes and then nothing. */
async function timeoutMessage(received: number): Promise<string> {
  const rc = new RequestControl('https://example.com/m.gguf', 5, undefined, received);
  const e = await rc
    .wait(() => new Promise(() => {}))
    .then(
      () => undefined,
      (x: unknown) => rc.mapError(x),
    );
  rc.dispose();
  return (e as Error).message;
}

describe('widgetWords', () => {
  it("drops the timeout advice from the library's stall and no-answer messages, and nothing else", async () => {
    const stalled = await timeoutMessage(600_000);
    expect(stalled).toContain('--timeout-s');
    expect(widgetWords(stalled)).toMatch(
      /^https:\/\/example\.com\/m\.gguf stalled: 0\.6 MB \(600,000 bytes\) arrived, then nothing for 5 ms; the transfer stopped moving \(check your connection and try again\)$/,
    );
    const silent = await timeoutMessage(0);
    expect(widgetWords(silent)).toBe(
      'https://example.com/m.gguf sent nothing for 5 ms; the server is not answering (check the URL and your connection)',
    );
    const other = 'checking https://example.com/m.gguf failed with HTTP 404 (Not Found)';
    expect(widgetWords(other)).toBe(other);
  });
});

describe('retryWords', () => {
  it("says the library's retry note, and nothing for other notes", () => {
    expect(retryWords('connection lost at 0.6 MB; retrying (2 of 3)')).toBe(' · trying again (2 of 3)');
    expect(retryWords('resumed at 16 MB')).toBe('');
    expect(retryWords(undefined)).toBe('');
  });
});
