/**
 * `npm run models -- list|pull SPEC|rm KEY_OR_SPEC|clear [--cache-dir DIR]`: the command line's model
 * library (src/library/), the directory that `npm run bench`, `generate` and `perplexity` download into.
 */

import { ModelLibrary } from '../library/library.ts';
import { defaultCacheDir, FsStore } from '../library/store.ts';
import { parseCliArgs } from './args.ts';
import { cachedModel } from './model-cache.ts';
import { type CliCommand, isEntryPoint, runCli } from './run.ts';

const USAGE = `usage: npm run models -- COMMAND [--cache-dir DIR]

  list                 cached models: size, source, last use, where
  pull SPEC            download a URL or hf:OWNER/REPO/FILE.gguf[@REV] into the cache (resumes a partial one)
  rm KEY|SPEC          delete one model (all its parts)
  clear                delete every cached model
  --cache-dir DIR      the cache (default: $XDG_CACHE_HOME or ~/.cache, then webgpu-llm-bench/models)`;

const MB = (n: number) => `${(n / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;

async function main(): Promise<number> {
  const { values, positionals } = parseCliArgs({
    allowPositionals: true,
    options: { 'cache-dir': { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  const [cmd, arg] = positionals;
  if (values.help || !cmd) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  if (!['list', 'pull', 'rm', 'clear'].includes(cmd)) {
    console.error(`error [invalid_argument]: unknown command ${cmd}: list, pull, rm or clear\n\n${USAGE}`);
    return 2;
  }
  if ((cmd === 'pull' || cmd === 'rm') && !arg) {
    console.error(
      `error [invalid_argument]: ${cmd} needs ${cmd === 'pull' ? 'a SPEC' : 'a KEY or SPEC'}\n\n${USAGE}`,
    );
    return 2;
  }
  // Only `pull` makes the folder: a listing or deletion in a mistyped --cache-dir must not create one.
  if (cmd !== 'pull') {
    const path = await import('node:path');
    const { stat } = await import('node:fs/promises');
    const location = path.resolve(values['cache-dir'] ?? (await defaultCacheDir()));
    if (!(await stat(location).catch(() => undefined))) {
      if (cmd === 'list') console.log(`${location}: 0 models (the folder does not exist)`);
      else if (cmd === 'clear') console.log(`nothing to delete: ${location} does not exist`);
      else console.log(`nothing cached under ${arg}: ${location} does not exist`);
      return cmd === 'rm' ? 1 : 0;
    }
  }
  const store = await FsStore.open(values['cache-dir']);
  const lib = new ModelLibrary(store, { hfEndpoint: process.env.HF_ENDPOINT });
  // rm and clear wait for a download of the same file in another process (they take its lock).
  const onWait = (holder: string) =>
    console.error(`waiting for ${holder}, which is downloading into this cache, to finish first`);
  switch (cmd) {
    case 'list': {
      const list = await lib.list();
      const est = await lib.estimate();
      console.log(`${store.location}: ${list.length} model${list.length === 1 ? '' : 's'}`);
      for (const e of list) {
        const state = e.complete
          ? e.sha256Verified
            ? 'complete, SHA-256 checked'
            : 'complete'
          : `partial ${MB(e.storedBytes)}`;
        // The files that are on disk now, asked of the disk (a split's first part may be complete while a
        // later one is partial; a partial with no whole block yet has no file at all).
        const files = (await Promise.all(e.partKeys.map((k) => store.locate(k)))).filter(
          (f): f is string => f !== undefined,
        );
        const where =
          files.length === 0
            ? ['(nothing on disk yet)']
            : e.complete && e.parts > 1 && files.length === e.parts
              ? [`${files[0]} (and the other ${e.parts - 1} parts beside it)`]
              : [
                  ...files,
                  ...(files.length < e.parts
                    ? [`(${e.parts - files.length} of ${e.parts} parts not on disk yet)`]
                    : []),
                ];
        console.log(
          `  ${e.key}\n    ${e.spec}\n    ${MB(e.size)}${e.parts > 1 ? ` in ${e.parts} parts` : ''}, ${state}, last used ${e.lastUsedAt}\n    ${where.join('\n    ')}`,
        );
      }
      if (est?.quota !== undefined && est.usage !== undefined)
        console.log(`disk: ${MB(est.quota - est.usage)} free of ${MB(est.quota)}`);
      return 0;
    }
    case 'pull': {
      const got = await cachedModel(arg as string, { cacheDir: values['cache-dir'] });
      console.log(`${got.note}\n${got.path}`);
      return 0;
    }
    case 'rm': {
      const before = (await lib.list()).length;
      await lib.remove(arg as string, { onWait });
      const after = (await lib.list()).length;
      console.log(before > after ? `deleted ${arg}` : `nothing cached under ${arg}`);
      return before > after ? 0 : 1;
    }
    case 'clear':
      await lib.clear({ onWait });
      console.log(`deleted every cached model in ${store.location}`);
      return 0;
  }
  console.error(USAGE);
  return 2;
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main, usageHint: 'npm run models -- --help lists the commands' };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);
