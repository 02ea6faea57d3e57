import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The device run's shell scripts and preflight, checked here where no GPU is: the GPU machine gives one
// run per session, so what can be checked without it is checked before it.
const dir = mkdtempSync(join(tmpdir(), 'device-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bash(script: string, env: Record<string, string> = {}) {
  return spawnSync('bash', [script], {
    encoding: 'utf8',
    env: { ...process.env, OUT: join(dir, 'out'), ...env },
    timeout: 60_000,
  });
}

describe('scripts/device shell scripts', () => {
  it('parse (bash -n)', () => {
    for (const s of ['scripts/device/run.sh', 'scripts/device/pack.sh']) {
      const r = spawnSync('bash', ['-n', s], { encoding: 'utf8' });
      expect(r.stderr, s).toBe('');
      expect(r.status, s).toBe(0);
    }
  });

  it('an unknown PLAN stops before anything is unpacked', () => {
    const r = bash('scripts/device/run.sh', { PLAN: 'everything' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown PLAN=everything (issues, or unset)');
  });

  it('the .deb reader that stands in for dpkg -x finds data.tar in an ar archive', () => {
    // A .deb is an ar archive: debian-binary, control.tar.*, data.tar.*; members padded to even sizes.
    const tar = spawnSync('python3', [
      '-c',
      'import io,sys,tarfile\nb=io.BytesIO()\nt=tarfile.open(fileobj=b,mode="w:xz")\n' +
        'd=b"hello from a deb\\n"\ni=tarfile.TarInfo("./usr/lib/x.txt")\ni.size=len(d)\n' +
        't.addfile(i,io.BytesIO(d))\nt.close()\nsys.stdout.buffer.write(b.getvalue())',
    ]);
    expect(tar.status).toBe(0);
    const member = (name: string, data: Buffer) => {
      const h = Buffer.alloc(60, 0x20);
      h.write(name, 0);
      h.write(String(data.length), 48);
      h.write('`\n', 58);
      return Buffer.concat([h, data, data.length % 2 ? Buffer.from('\n') : Buffer.alloc(0)]);
    };
    const deb = Buffer.concat([
      Buffer.from('!<arch>\n'),
      member('debian-binary', Buffer.from('2.0\n')),
      member('control.tar.xz', Buffer.from('x')), // odd size: the padding byte must be skipped
      member('data.tar.xz', tar.stdout),
    ]);
    writeFileSync(join(dir, 't.deb'), deb);
    // The same Python run.sh runs where dpkg is missing, taken from the script itself.
    const script = readFileSync('scripts/device/run.sh', 'utf8');
    const py = script.slice(script.indexOf("<<'PY'\n") + 7, script.indexOf('\nPY\n'));
    const r = spawnSync('python3', ['-', join(dir, 't.deb'), join(dir, 'root')], {
      input: py,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(readFileSync(join(dir, 'root/usr/lib/x.txt'), 'utf8')).toBe('hello from a deb\n');
  });
});

describe('scripts/device/preflight.ts', () => {
  it('prints the adapter and exits as its verdict says', () => {
    for (const args of [[], ['--gpu']]) {
      const json = join(dir, `pre${args.length}.json`);
      const r = spawnSync('npx', ['tsx', 'scripts/device/preflight.ts', ...args, '--json', json], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      const line = r.stdout.split('\n').find((l) => l.startsWith('preflight: '));
      expect(line, r.stderr).toBeDefined();
      const v = JSON.parse(line!.slice('preflight: '.length));
      expect(JSON.parse(readFileSync(json, 'utf8'))).toEqual(v);
      // 4: no adapter; 3: a software one where a GPU was asked for; 0: otherwise.
      const expected = v.error ? 4 : args.length && v.software.length ? 3 : 0;
      expect(r.status).toBe(expected);
      expect(v.exit).toBe(expected);
      if (!v.error) expect(typeof v.description).toBe('string');
    }
    // Without --gpu the tests' SwiftShader driver is used, so this machine has an adapter.
    const plain = JSON.parse(readFileSync(join(dir, 'pre0.json'), 'utf8'));
    expect(plain.driver).toMatch(/swiftshader/i);
    expect(plain.error).toBeUndefined();
  });
});
