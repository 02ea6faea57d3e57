import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets } from './redact.ts';

describe('redactSecrets', () => {
  const KEY = 'sk-live-ABCdef0123456789';

  it('removes a known key as is, JSON-escaped and URL-encoded', () => {
    const odd = 'k3y"with/odd+chars';
    expect(redactSecrets(`a ${KEY} b ${KEY}`, [KEY])).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(redactSecrets(JSON.stringify({ m: `key ${odd}` }), [odd])).toBe(`{"m":"key ${REDACTED}"}`);
    expect(redactSecrets(`?key=${encodeURIComponent(odd)}`, [odd])).toBe(`?key=${REDACTED}`);
  });

  it('removes any bearer token, Basic credentials and sk- keys even when not told the key', () => {
    const echoed = `the server said: bad header Authorization: Bearer ${KEY}`;
    expect(redactSecrets(echoed)).toBe(`the server said: bad header Authorization: Bearer ${REDACTED}`);
    expect(redactSecrets('{"authorization":"bearer abc.def-ghi"}')).toBe(
      `{"authorization":"bearer ${REDACTED}"}`,
    );
    expect(redactSecrets('Authorization: Basic dXNlcjpwYXNz')).toBe(`Authorization: Basic ${REDACTED}`);
    expect(redactSecrets(`got key ${KEY}.`)).toBe(`got key ${REDACTED}.`);
    expect(redactSecrets(`Bearer ${KEY}`, [KEY])).toBe(`Bearer ${REDACTED}`);
  });

  it('leaves ordinary text alone; short or empty secrets are not searched for', () => {
    const text = 'HTTP 401: a valid API key is needed (the bearer of bad news)';
    expect(redactSecrets(text, ['', undefined, 'a'])).toBe(text);
    expect(redactSecrets('median decode 12 tok/s', ['abc'])).toBe('median decode 12 tok/s');
  });
});
