/**
 * src/cli/ci-files.ts: writeCiFiles redacts the API key, starts an appended summary on a line of its own and
 * (for a signal handler) lets the event loop turn between files; checkWritable and makeFolder make folders
 * without a recursive mkdir, so a path under /proc fails at once instead of hanging.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkWritable, makeFolder, runError, writeCiFiles, writeCiFilesYielding } from './ci-files.ts';

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

  /** The summary of a failed run, appended to `md`. */
  const appendSummary = (md: string) =>
    writeCiFiles({
      summaryMd: md,
      thresholds: {},
      error: { code: 'aborted', message: 'interrupted' },
      modelId: 'm.gguf',
      timeS: 1,
      log: () => undefined,
    });
  const heading = '### WebGPU LLM benchmark: m.gguf — failed\n';

  it('starts an appended summary on a line of its own, after a blank line, when the file does not end with one', () => {
    const cases: [before: string | undefined, start: string][] = [
      ['prior text', 'prior text\n\n'],
      ['line one\nprior text', 'line one\nprior text\n\n'],
      ['prior text\n', 'prior text\n'],
      ['prior text\n\n', 'prior text\n\n'],
      ['', ''],
      [undefined, ''],
    ];
    for (const [i, [before, start]] of cases.entries()) {
      const md = join(dir, `append-${i}.md`);
      if (before !== undefined) writeFileSync(md, before);
      appendSummary(md);
      const text = readFileSync(md, 'utf8');
      expect(text.startsWith(start + heading), JSON.stringify(text.slice(0, 80))).toBe(true);
      // A second section follows the first's closing blank line, with nothing added.
      const once = text.length;
      appendSummary(md);
      expect(readFileSync(md, 'utf8').slice(once).startsWith(heading)).toBe(true);
    }
  });

  it('writeCiFilesYielding writes what writeCiFiles writes, letting the event loop turn before each file', async () => {
    const f = (tag: string, log: (l: string) => void) => ({
      junit: join(dir, `${tag}.xml`),
      summaryMd: join(dir, `${tag}.md`),
      thresholds: { failUnderDecodeTps: 5 },
      error: { code: 'aborted', message: 'interrupted (SIGTERM)' },
      modelId: 'm.gguf',
      timeS: 2,
      log,
    });
    writeCiFiles(f('sync', () => undefined));
    const events: string[] = [];
    let ticking = true;
    const tick = () => {
      if (!ticking) return;
      events.push('turn');
      setImmediate(tick);
    };
    setImmediate(tick);
    await writeCiFilesYielding(f('yielding', (l) => events.push(l.replace(dir, 'DIR'))));
    ticking = false;
    expect(events.filter((e) => e !== 'turn')).toEqual([
      'wrote DIR/yielding.xml',
      'appended to DIR/yielding.md',
    ]);
    const first = events.indexOf('wrote DIR/yielding.xml');
    expect(events.slice(0, first)).toContain('turn');
    expect(events.slice(first, events.indexOf('appended to DIR/yielding.md'))).toContain('turn');
    const timestampless = (s: string) => s.replace(/timestamp="[^"]*"/, '');
    expect(timestampless(readFileSync(join(dir, 'yielding.xml'), 'utf8'))).toBe(
      timestampless(readFileSync(join(dir, 'sync.xml'), 'utf8')),
    );
    expect(readFileSync(join(dir, 'yielding.md'), 'utf8')).toBe(readFileSync(join(dir, 'sync.md'), 'utf8'));
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

  // Node 20's mkdirSync('/proc/nope', { recursive: true }) never returns: run in a child, with a timeout.
  it.skipIf(!existsSync('/proc'))('refuses a path under a missing folder in /proc at once (no hang)', () => {
    const script = `
      import { checkWritable } from './src/cli/ci-files.ts';
      for (const file of ['/proc/nope/j.xml', '/proc/nope/deeper/s.md']) {
        try {
          checkWritable({ '--junit': file });
          console.log('passed');
        } catch (e) {
          console.log(e.message);
        }
      }`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: resolve(import.meta.dirname, '../..'),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.signal, 'checkWritable hung on a path under /proc').toBe(null);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      "--junit /proc/nope/j.xml cannot be written (ENOENT: no such file or directory, mkdir '/proc/nope'): give a writable path",
      "--junit /proc/nope/deeper/s.md cannot be written (ENOENT: no such file or directory, mkdir '/proc/nope'): give a writable path",
    ]);
  });
});

describe('makeFolder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ci-folder-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('makes the missing folders one by one, keeps existing ones, and fails as the system does', () => {
    const deep = join(dir, 'a', 'b', 'c');
    makeFolder(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    writeFileSync(join(deep, 'kept.txt'), 'kept');
    makeFolder(deep);
    makeFolder(join(dir, 'a'));
    expect(readFileSync(join(deep, 'kept.txt'), 'utf8')).toBe('kept');
    writeFileSync(join(dir, 'file'), '');
    expect(() => makeFolder(join(dir, 'file', 'sub'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    expect(() => makeFolder(join(dir, 'file'))).not.toThrow(); // there already, as a file: the write says so
  });
});
