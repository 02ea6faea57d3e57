/**
 * Where the test model stories260K.gguf lives: the one place that says so (Node only; no Vitest import,
 * so tests, e2e specs, scripts, the CLI and `npm run setup` all use it).
 *
 * Looked for, in order:
 * 1. `$STORIES260K` (a path to the file), when set;
 * 2. `models/stories260K.gguf` in the repository (ignored by git; `npm run setup` downloads it there);
 * 3. `../shared/models/stories260K.gguf` beside the repository (this repository's own CI setting);
 * 4. `../shared/models/stories260K.gguf` beside the checkout this one was cloned from, when `origin` is a
 *    local folder (`git clone . /tmp/ci-check` puts a clean clone where no `../shared` is).
 *
 * Browser tests read it over HTTP: vitest.config.ts resolves it here and hands the path to the page as
 * `__STORIES260K__` (see `stories260k-url.ts`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The file's name. */
export const STORIES260K_FILE = 'stories260K.gguf';
/** Its size and SHA-256 (`../shared/models/README.md`). */
export const STORIES260K_BYTES = 1_185_376;
export const STORIES260K_SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';
/**
 * Its public source: the ggml project's copy of Karpathy's llama2.c tinyllamas model (MIT), used by
 * llama.cpp's own CI; the repository was renamed from `ggml-org/models` to `ggml-org/models-moved`, so
 * both are tried.
 */
export const STORIES260K_URLS = [
  'https://huggingface.co/ggml-org/models-moved/resolve/main/tinyllamas/stories260K.gguf',
  'https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf',
];

/** One place the model may be. */
export interface ModelPlace {
  path: string;
  /** `STORIES260K`, `models/`, `../shared/models/` or the origin checkout's `../shared/models/`. */
  source: 'STORIES260K' | 'models/' | '../shared/models/' | 'origin ../shared/models/';
}

/**
 * The folder `root` was cloned from, when its git `origin` is a local path (`git clone . /tmp/x`), read
 * from `.git/config`; undefined otherwise (a URL, no remote, not a git checkout).
 */
export function localOrigin(root = REPO_ROOT): string | undefined {
  let config: string;
  try {
    config = readFileSync(resolve(root, '.git', 'config'), 'utf8');
  } catch {
    return undefined;
  }
  const section = /\[remote "origin"\]([^[]*)/.exec(config)?.[1] ?? '';
  const url = /^\s*url\s*=\s*(.+?)\s*$/m.exec(section)?.[1];
  if (!url) return undefined;
  if (url.startsWith('file://')) return fileURLToPath(url);
  return url.startsWith('/') ? url.replace(/\/\.git$/, '') : undefined;
}

/** The places {@link findStories260K} looks, in order (the env variable's only when it is set). */
export function stories260kPlaces(env: NodeJS.ProcessEnv = process.env, root = REPO_ROOT): ModelPlace[] {
  const places: ModelPlace[] = [];
  if (env.STORIES260K) places.push({ path: resolve(env.STORIES260K), source: 'STORIES260K' });
  places.push({ path: resolve(root, 'models', STORIES260K_FILE), source: 'models/' });
  places.push({ path: resolve(root, '../shared/models', STORIES260K_FILE), source: '../shared/models/' });
  const origin = localOrigin(root);
  if (origin && resolve(origin) !== resolve(root))
    places.push({
      path: resolve(origin, '../shared/models', STORIES260K_FILE),
      source: 'origin ../shared/models/',
    });
  return places;
}

/**
 * The model's path, or undefined when it is in none of the places. `$STORIES260K`, when set, is the only
 * place looked at (a set variable that names no file is a mistake to report, not to step over).
 */
export function findStories260K(env: NodeJS.ProcessEnv = process.env, root = REPO_ROOT): string | undefined {
  const places = stories260kPlaces(env, root);
  if (env.STORIES260K) return existsSync(places[0].path) ? places[0].path : undefined;
  return places.find((p) => existsSync(p.path))?.path;
}

/** Thrown by {@link stories260kPath} when the model is missing; its message is one line. */
export class TestModelMissingError extends Error {
  override name = 'TestModelMissingError';
}

/** The one-line message for a missing model: the places looked at and `npm run setup`. */
export function stories260kMissingMessage(env: NodeJS.ProcessEnv = process.env, root = REPO_ROOT): string {
  const places = stories260kPlaces({}, root).map((p) => p.path);
  const head = env.STORIES260K
    ? `test model not found: STORIES260K=${env.STORIES260K} does not exist`
    : `test model ${STORIES260K_FILE} not found`;
  return (
    `${head}; it is looked for at $STORIES260K, then ${places.join(', then ')}; ` +
    '`npm run setup` downloads it into models/ (or set STORIES260K=/path/to/stories260K.gguf).'
  );
}

/** The model's path; throws {@link TestModelMissingError} (one clear line) when it is missing. */
export function stories260kPath(env: NodeJS.ProcessEnv = process.env, root = REPO_ROOT): string {
  const p = findStories260K(env, root);
  if (!p) throw new TestModelMissingError(stories260kMissingMessage(env, root));
  return p;
}
