import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { FAULTS, parseServeArgs, startOpenAiServer } from './openai-server.ts';

describe('the test server run by hand (--serve)', () => {
  it('reads a fault, its chunk count, the delays and the port', () => {
    expect(parseServeArgs(['--serve'])).toEqual({
      script: { fault: 'none', faultAfterChunks: 2, delayMs: 20, firstDelayMs: 20 },
      port: 0,
    });
    expect(
      parseServeArgs([
        '--serve',
        '--fault',
        'cut',
        '--fault-after',
        '5',
        '--delay',
        '7',
        '--first-delay',
        '300',
        '--port',
        '8123',
      ]),
    ).toEqual({ script: { fault: 'cut', faultAfterChunks: 5, delayMs: 7, firstDelayMs: 300 }, port: 8123 });
    for (const f of FAULTS) expect(parseServeArgs(['--serve', '--fault', f]).script.fault).toBe(f);
  });

  it('refuses an unknown fault, a bad number and an unknown option, naming them', () => {
    expect(() => parseServeArgs(['--serve', '--fault', 'slow'])).toThrow(
      /--fault must be one of none, 401, .*"slow"/,
    );
    expect(() => parseServeArgs(['--serve', '--delay', '1.5'])).toThrow(
      /--delay must be an integer 0\.\.60000, got "1.5"/,
    );
    expect(() => parseServeArgs(['--serve', '--port', '70000'])).toThrow(
      /--port must be an integer 0\.\.65535/,
    );
    expect(() => parseServeArgs(['--serve', '--faults', '500'])).toThrow(/--faults/);
  });

  it('serves the chosen fault', async () => {
    const { script } = parseServeArgs(['--serve', '--fault', '500']);
    const server = await startOpenAiServer(script);
    try {
      const r = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'test-model',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(r.status).toBe(500);
    } finally {
      await server.close();
    }
  });

  it('exits 2 with the usage on a bad option', () => {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/testing/openai-server.ts', '--serve', '--fault', 'nope'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--fault must be one of/);
    expect(r.stderr).toMatch(/usage: npx tsx src\/testing\/openai-server\.ts --serve \[--fault NAME\]/);
  });
});
