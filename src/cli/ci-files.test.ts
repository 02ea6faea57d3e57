/**
 * writeCiFiles (src/cli/ci-files.ts): a failed run whose error carries the API key (a server that echoed
 * the Authorization header) writes neither the key nor any bearer token into --junit or --summary-md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkWritable, runError, writeCiFiles } from './ci-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'ci-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeCiFiles', () => {
  it('redacts the key and any bearer token from the JUnit XML and the Markdown summary', () => {
    const KEY = 'sk-test-KEYKEYKEY-0123456789';
    const other = 'tok_abcdefghijklmnop';
    const e = Object.assign(
      new Error(
        `localhost refused the request with HTTP 401: a valid API key is needed (the server said: bad header Authorization: Bearer ${KEY}; also saw ${KEY} and "Bearer ${other}")`,
      ),
      { code: 'unauthorized' },
    );
    const junit = join(dir, 'j.xml');
    const md = join(dir, 's.md');
    const lines: string[] = [];
    writeCiFiles({
      junit,
      summaryMd: md,
      thresholds: { failUnderDecodeTps: 1 },
      error: runError(e),
      modelId: 'm',
      timeS: 1,
      log: (l) => lines.push(l),
      secrets: [KEY],
    });
    for (const text of [readFileSync(junit, 'utf8'), readFileSync(md, 'utf8')]) {
      expect(text).toContain('unauthorized');
      expect(text).toContain('[redacted]');
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('KEYKEYKEY');
      expect(text).not.toContain(other);
    }
    expect(lines.join('\n')).not.toContain(KEY);
  });
});

describe('checkWritable', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ci-writable-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes a new path (its folder made, no file left) and keeps an existing file as it was', () => {
    const fresh = join(dir, 'sub', 'r.json');
    const kept = join(dir, 'kept.md');
    writeFileSync(kept, 'earlier summary\n');
    checkWritable({ '--json': fresh, '--summary-md': kept, '--junit': undefined });
    expect(existsSync(join(dir, 'sub'))).toBe(true);
    expect(existsSync(fresh)).toBe(false);
    expect(readFileSync(kept, 'utf8')).toBe('earlier summary\n');
  });

  it('refuses a path that cannot be written, naming the flag and the reason', () => {
    expect(() => checkWritable({ '--json': '/proc/r.json' })).toThrow(
      /^--json \/proc\/r\.json cannot be written \(ENOENT.*\): give a writable path$/,
    );
    writeFileSync(join(dir, 'a-file'), '');
    expect(() => checkWritable({ '--junit': join(dir, 'a-file', 'j.xml') })).toThrow(
      /^--junit .* cannot be written \(/,
    );
  });
});
