/**
 * `--model` for the command line: a URL or `hf:` shorthand is downloaded once into the model library's
 * cache directory and run from there (the browser gets it from the CLI's local server, Node reads the
 * path), so a second run of the same URL downloads nothing beyond a freshness check. `--cache-dir DIR`
 * moves the cache, `--no-cache` streams from the network as before.
 */
import { EngineError, isEngineError } from '../core/errors.ts';
import { ModelLibrary } from '../library/library.ts';
import { isHfShorthand, resolveModelSpec } from '../library/spec.ts';
import { FsStore } from '../library/store.ts';
import { CliInterrupt } from './run.ts';

/** The options every model-taking CLI accepts (node:util parseArgs format). */
export const CACHE_OPTIONS = {
  'cache-dir': { type: 'string' },
  'no-cache': { type: 'boolean', default: false },
} as const;

/** Usage lines for {@link CACHE_OPTIONS}. */
export const CACHE_USAGE = `  --cache-dir DIR                   where downloaded models are kept (default: $XDG_CACHE_HOME or ~/.cache,
                                    then webgpu-llm-bench/models)
  --no-cache                        stream a URL from the network each run instead of keeping a copy`;

/** True for `http(s)://…` and `hf:…` model specs. */
export function isRemoteModel(spec: string): boolean {
  return /^https?:\/\//i.test(spec) || isHfShorthand(spec);
}

const MB = (n: number) => `${(n / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;

/** What {@link cachedModel} did. */
export interface CachedModel {
  /** The cached file (a split model's first part; its parts lie beside it). */
  path: string;
  /** The download URL. */
  url: string;
  fromCache: boolean;
  offline: boolean;
  downloadedBytes: number;
  /** A line for the run's notes. */
  note: string;
}

/**
 * Downloads (or finds) a remote model in the cache directory. Progress goes to `log` (stderr), at most
 * about once a second.
 * @throws EngineError from {@link ModelLibrary.acquire} ('http_status', 'network', 'integrity', …);
 *   CliInterrupt ('aborted': runCli exits 130) when Ctrl-C stops the download.
 */
export async function cachedModel(
  spec: string,
  opts: {
    cacheDir?: string;
    log?: (line: string) => void;
    signal?: AbortSignal;
    hfEndpoint?: string;
    /** Idle timeout per request, ms (default 30,000). */
    timeoutMs?: number;
  } = {},
): Promise<CachedModel> {
  const store = await FsStore.open(opts.cacheDir);
  const lib = new ModelLibrary(store, {
    hfEndpoint: opts.hfEndpoint ?? process.env.HF_ENDPOINT,
    timeoutMs: opts.timeoutMs,
    freshnessTimeoutMs: opts.timeoutMs === undefined ? undefined : Math.min(opts.timeoutMs, 10_000),
  });
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  let last = 0;
  let lastNote: string | undefined;
  // Ctrl-C during a download: stop cleanly, keep what is on disk, say how to go on.
  const ctl = new AbortController();
  const onAbort = () => ctl.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const onSigint = () => ctl.abort();
  process.once('SIGINT', onSigint);
  let got: Awaited<ReturnType<ModelLibrary['acquire']>>;
  try {
    got = await lib.acquire(spec, {
      signal: ctl.signal,
      // The file is handed on by path (to our Node or browser runtime, to llama.cpp), past the checking
      // reader: check every block of a cached copy here, and download a damaged one again.
      verifyCached: true,
      onProgress: (p) => {
        const now = Date.now();
        const done = p.bytesTotal > 0 && p.bytesDone >= p.bytesTotal;
        if (p.note === lastNote && !done && now - last < 1000) return;
        last = now;
        lastNote = p.note;
        if (p.phase === 'download' && p.note && /cached copy|^waiting for /.test(p.note))
          return log(p.bytesTotal > 0 ? `${p.note} (${MB(p.bytesTotal)})` : p.note);
        const pct = p.bytesTotal > 0 ? ` ${((100 * p.bytesDone) / p.bytesTotal).toFixed(0)}%` : '';
        const rate = p.bytesPerSec ? `, ${MB(p.bytesPerSec)}/s` : '';
        const eta = p.etaMs !== undefined && !done ? `, ${Math.ceil(p.etaMs / 1000)} s left` : '';
        log(
          `${p.phase} ${MB(p.bytesDone)}${p.bytesTotal ? ` of ${MB(p.bytesTotal)}` : ''}${pct}${rate}${eta}${p.note ? ` (${p.note})` : ''}`,
        );
      },
    });
  } catch (e) {
    if (isEngineError(e, 'aborted') && !opts.signal?.aborted) {
      throw new CliInterrupt(
        `the download was interrupted; its whole blocks (16 MiB each) that reached the disk are kept in ${store.location}: run the same command again to resume`,
      );
    }
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  const key = got.parts[0].meta.key;
  const path = store.filePath(key);
  const where = store.location;
  const total = got.parts.reduce((a, p) => a + p.size, 0);
  const note = got.fromCache
    ? `model from the cache (${where})${got.offline ? ': the server could not be reached, so the cached copy was used unchecked' : ', unchanged on the server'}`
    : got.downloadedBytes < total
      ? `model downloaded into the cache (${MB(got.downloadedBytes)} this run, resuming an earlier download; ${MB(total)} in all; ${where})`
      : `model downloaded into the cache (${MB(got.downloadedBytes)}, ${where})`;
  return {
    path,
    url: got.resolved.url,
    fromCache: got.fromCache,
    offline: got.offline,
    downloadedBytes: got.downloadedBytes,
    note,
  };
}

/** `hf:` → its URL (for `--no-cache`); other specs unchanged. @throws EngineError('invalid_argument'). */
export function modelUrl(spec: string): string {
  return isHfShorthand(spec) ? resolveModelSpec(spec, { hfEndpoint: process.env.HF_ENDPOINT }).url : spec;
}

/** Rejects a cache directory given with --no-cache. */
export function checkCacheArgs(values: { 'cache-dir'?: string; 'no-cache'?: boolean }): void {
  if (values['no-cache'] && values['cache-dir'])
    throw new EngineError('invalid_argument', 'give --cache-dir or --no-cache, not both');
}

/**
 * `--model` of the generate/perplexity CLIs: a URL or `hf:` file becomes the cached file's path (or, with
 * `--no-cache`, its URL); anything else is returned as given.
 */
export async function resolveCliModel(values: {
  model: string;
  'cache-dir'?: string;
  'no-cache'?: boolean;
}): Promise<string> {
  checkCacheArgs(values);
  if (!isRemoteModel(values.model)) return values.model;
  if (values['no-cache']) return modelUrl(values.model);
  return (await cachedModel(values.model, { cacheDir: values['cache-dir'] })).path;
}
