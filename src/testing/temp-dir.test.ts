/**
 * Tests leave nothing in the system temp directory: {@link useTempDirs} removes what it made after the
 * tests that made it, and every test file that makes temporary folders either uses it or removes them
 * itself (rm -rf, force) — checked over the sources, so a new test that forgets fails here.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from './temp-dir.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const made: string[] = [];

describe('useTempDirs', () => {
  const tempDir = useTempDirs();
  it('makes folders under the system temp directory', () => {
    for (const p of ['a-', 'b-']) {
      const d = tempDir(p);
      writeFileSync(join(d, 'f.txt'), 'x');
      made.push(d);
    }
    expect(made.every((d) => existsSync(join(d, 'f.txt')))).toBe(true);
  });
});

describe('after the describe that made them', () => {
  it('they are gone', () => {
    expect(made).toHaveLength(2);
    for (const d of made) expect(existsSync(d), d).toBe(false);
  });
});

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...testFiles(p));
    else if (/\.(test|spec)\.ts$/.test(e.name)) out.push(p);
  }
  return out;
}

describe('every test file', () => {
  it('that makes temporary folders removes them', () => {
    const files = ['src', 'scripts', 'e2e'].flatMap((d) => testFiles(join(ROOT, d)));
    expect(files.length).toBeGreaterThan(20);
    const leaking = files.filter((f) => {
      const s = readFileSync(f, 'utf8');
      const makes = /mkdtemp(Sync)?\(/.test(s);
      const removes =
        /useTempDirs\(\)/.test(s) || /rmSync\([^)]*\{[^}]*recursive: true[^}]*force: true/.test(s);
      return makes && !removes;
    });
    // Before: bench, generate, gguf-split, perplexity, static-server, quantize-model, random-gguf and
    // e2e/library made folders (gen-cache-*, bench-cache-dir-*, quant-*, …) and never removed them.
    expect(leaking.map((f) => relative(ROOT, f))).toEqual([]);
  });
});
