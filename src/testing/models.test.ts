/**
 * The test model's one resolver: $STORIES260K, then models/ in the repository, then ../shared/models/;
 * a missing model is one line naming those places and `npm run setup`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  findStories260K,
  STORIES260K_FILE,
  stories260kPath,
  stories260kPlaces,
  TestModelMissingError,
} from './models.ts';
import { useTempDirs } from './temp-dir.ts';

const tempDir = useTempDirs();

/** A repository folder `repo/` inside a fresh temp dir, with `repo/models/` and `shared/models/` as asked. */
function layout(opts: { models?: boolean; shared?: boolean }): {
  root: string;
  models: string;
  shared: string;
} {
  const top = tempDir('models-resolver-');
  const root = join(top, 'repo');
  const models = join(root, 'models', STORIES260K_FILE);
  const shared = join(top, 'shared', 'models', STORIES260K_FILE);
  mkdirSync(join(root, 'models'), { recursive: true });
  mkdirSync(join(top, 'shared', 'models'), { recursive: true });
  if (opts.models) writeFileSync(models, 'm');
  if (opts.shared) writeFileSync(shared, 's');
  return { root, models, shared };
}

describe('stories260K resolver', () => {
  it('prefers models/ in the repository over ../shared/models/', () => {
    const l = layout({ models: true, shared: true });
    expect(findStories260K({}, l.root)).toBe(l.models);
  });

  it('falls back to ../shared/models/', () => {
    const l = layout({ shared: true });
    expect(stories260kPath({}, l.root)).toBe(l.shared);
  });

  it('takes $STORIES260K first, and only it when set', () => {
    const l = layout({ models: true, shared: true });
    const own = join(tempDir('models-env-'), 'x.gguf');
    writeFileSync(own, 'x');
    expect(stories260kPath({ STORIES260K: own }, l.root)).toBe(own);
    expect(stories260kPlaces({ STORIES260K: own }, l.root).map((p) => p.source)).toEqual([
      'STORIES260K',
      'models/',
      '../shared/models/',
    ]);
    expect(findStories260K({ STORIES260K: `${own}.missing` }, l.root)).toBeUndefined();
    expect(() => stories260kPath({ STORIES260K: `${own}.missing` }, l.root)).toThrow(
      `STORIES260K=${own}.missing does not exist`,
    );
  });

  it('throws one line naming the three places and npm run setup when missing', () => {
    const l = layout({});
    let e: unknown;
    try {
      stories260kPath({}, l.root);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(TestModelMissingError);
    const msg = (e as Error).message;
    expect(msg).not.toContain('\n');
    for (const part of ['$STORIES260K', l.models, l.shared, 'npm run setup']) expect(msg).toContain(part);
  });

  it("falls back to ../shared/models/ beside the checkout a local clone came from (git's origin)", () => {
    const from = layout({ shared: true });
    const clone = join(tempDir('models-clone-'), 'ci-check');
    mkdirSync(join(clone, '.git'), { recursive: true });
    writeFileSync(
      join(clone, '.git', 'config'),
      `[core]\n\tbare = false\n[remote "origin"]\n\turl = ${from.root}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`,
    );
    expect(findStories260K({}, clone)).toBe(from.shared);
    expect(stories260kPlaces({}, clone).map((p) => p.source)).toEqual([
      'models/',
      '../shared/models/',
      'origin ../shared/models/',
    ]);
    // A network origin, or none, adds no place.
    writeFileSync(join(clone, '.git', 'config'), '[remote "origin"]\n\turl = https://github.com/x/y.git\n');
    expect(findStories260K({}, clone)).toBeUndefined();
    writeFileSync(join(clone, '.git', 'config'), '[core]\n\tbare = false\n');
    expect(stories260kPlaces({}, clone)).toHaveLength(2);
  });

  it('finds the model in this repository', () => {
    expect(findStories260K()).toMatch(/stories260K\.gguf$/);
  });
});
