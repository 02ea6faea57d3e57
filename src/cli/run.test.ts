import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stories260kPath } from '../testing/models.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'run-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `script` (an ES module importing from src/cli/run.ts) under the tsx command, as `npm run` does. */
function underTsx(name: string, script: string) {
  const file = join(dir, `${name}.ts`);
  writeFileSync(file, script.replaceAll('RUN_TS', JSON.stringify(resolve(ROOT, 'src/cli/run.ts'))));
  return spawnSync(process.execPath, [resolve(ROOT, 'node_modules/tsx/dist/cli.mjs'), file], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('onInterruptSignals', () => {
  it('exits 143 on SIGTERM even when the handler throws (no uncaught exit 1), saying what failed', () => {
    const script = `
      import { onInterruptSignals } from './src/cli/run.ts';
      onInterruptSignals(() => { throw new Error('disk full'); });
      setTimeout(() => {}, 10000);
      process.kill(process.pid, 'SIGTERM');`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(143);
    expect(r.stderr).toContain('could not write what was measured: disk full');
  });

  // tsx's parent process sends a SIGTERM again when it missed the command's acknowledgement (a process-group
  // kill); with `once` listeners that repeat met Node's default action and killed the command mid-write.
  it('a SIGTERM repeated while the handler writes is ignored: the handler runs once, to its end; exit 143', () => {
    const r = underTsx(
      'repeat',
      `
      import { appendFileSync, writeFileSync } from 'node:fs';
      import { eventLoopTurn, onInterruptSignals } from RUN_TS;
      onInterruptSignals(async (signal) => {
        appendFileSync('calls.txt', signal + '\\n');
        writeFileSync('first.txt', '1');
        process.kill(process.pid, 'SIGTERM');
        for (let i = 0; i < 5; i++) await eventLoopTurn();
        await new Promise((done) => setTimeout(done, 50));
        writeFileSync('last.txt', '2');
      });
      setTimeout(() => {}, 10000);
      process.kill(process.pid, 'SIGTERM');`,
    );
    expect(r.status, r.stderr).toBe(143);
    expect(readFileSync(join(dir, 'calls.txt'), 'utf8')).toBe('SIGTERM\n');
    expect(existsSync(join(dir, 'first.txt'))).toBe(true);
    expect(existsSync(join(dir, 'last.txt')), 'the repeated SIGTERM cut the handler short').toBe(true);
  });

  it("runCli leaves the exit to a started handler: main's end (a failure the signal caused) is not said", () => {
    const r = underTsx(
      'runcli',
      `
      import { writeFileSync } from 'node:fs';
      import { onInterruptSignals, runCli } from RUN_TS;
      onInterruptSignals(async () => {
        await new Promise((done) => setTimeout(done, 200));
        writeFileSync('handler.txt', 'written');
      });
      runCli(async () => {
        process.kill(process.pid, 'SIGINT');
        await new Promise((done) => setTimeout(done, 20));
        throw new Error('the browser closed');
      });`,
    );
    expect(r.status, r.stderr).toBe(130);
    expect(readFileSync(join(dir, 'handler.txt'), 'utf8')).toBe('written');
    expect(r.stderr).not.toContain('the browser closed');
  });
});

describe('Ctrl-C during a download (src/cli/model-cache.ts)', () => {
  const STORIES = stories260kPath();
  it('says what was kept and exits 130, as the shell reports SIGINT (it exited 1, as a failure)', () => {
    // A server that sends the first bytes of a model (a GGUF header) announcing 64 MiB, then nothing: the
    // download is under way when the command gets its SIGINT.
    const r = underTsx(
      'download',
      `
      import { readFileSync } from 'node:fs';
      import { createServer } from 'node:http';
      import { runCli } from RUN_TS;
      import { cachedModel } from ${JSON.stringify(resolve(ROOT, 'src/cli/model-cache.ts'))};
      const server = createServer((req, res) => {
        res.writeHead(200, { 'content-length': String(64 << 20), 'accept-ranges': 'none' });
        if (req.method === 'HEAD') return res.end();
        res.write(readFileSync(${JSON.stringify(STORIES)}).subarray(0, 256 << 10));
        setTimeout(() => process.kill(process.pid, 'SIGINT'), 300);
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address();
        runCli(async () => {
          await cachedModel('http://127.0.0.1:' + port + '/big.gguf', { cacheDir: 'cache', log: () => {} });
          return 0;
        });
      });`,
    );
    expect(r.status, r.stderr).toBe(130);
    expect(r.stderr).toMatch(
      /\[aborted\]: the download was interrupted; its whole blocks \(16 MiB each\) that reached the disk are kept in .*cache.*: run the same command again to resume/,
    );
  });
});
