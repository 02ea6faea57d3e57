/**
 * Temporary directories for Vitest tests that are always removed: {@link useTempDirs} registers an
 * `afterAll` that deletes (rm -rf, force) every directory the returned function made, pass or fail, so a
 * test run leaves nothing in the system temp directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * Call at a test file's top level (or in a `describe`): returns `make(prefix)`, which creates
 * `$TMPDIR/<prefix>XXXXXX` and returns its path; all of them are removed after the file's (or the
 * describe's) tests.
 */
export function useTempDirs(): (prefix: string) => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return (prefix) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}
