/**
 * The model opener our WebGPU engine is given (`WebGpuEngineOptions.openModel`): a model source in, its
 * GGUF out, read directly or through the model library. The engine itself reads no network, file or cache.
 */
import { isEngineError } from '../core/errors.ts';
import type { CacheOption, LoadProgress, ModelInfo, ModelSource } from '../core/types.ts';
import type { GgufFile } from '../gguf/types.ts';
import { isLocalSpec, ModelLibrary } from './library.ts';
import { openModelFile } from './open.ts';

/** A model source the opener reads (a synthetic model is made by the engine, not opened). */
export type OpenableSource = Exclude<ModelSource, { synthetic: string }>;

/** How the library served a model: `ModelInfo.cache`. */
export type ModelCacheInfo = NonNullable<ModelInfo['cache']>;

/** Options of {@link openModelSource}. */
export interface OpenModelSourceOptions {
  /** Aborts the download and the reads; rejects with EngineError('aborted'). */
  signal?: AbortSignal;
  /** `LoadOptions.cache`: keep a URL source in the model library (download once, verify, resume). */
  cache?: CacheOption;
  /** Download and verify progress (bytes), as `LoadOptions.onProgress` without its time stamp. */
  onProgress?: (p: Omit<LoadProgress, 'tMs'>) => void;
}

/**
 * Opens `source` and hands its GGUF (all parts of a split model, merged) to `use`, returning what `use`
 * returns. A URL source without `cache` is streamed from the network; `cache` (or a `local:NAME` spec, which
 * exists only in the library) goes through the model library: download once, then read the verified cached
 * copy. A damaged cached block, found while `use` reads the file (EngineError 'integrity'), drops the copy
 * and fetches it again, once.
 * @throws EngineError as {@link openModelFile} and {@link ModelLibrary.acquire} ('network', 'http_status',
 *   'timeout', 'aborted', 'gguf_invalid', 'integrity', 'invalid_argument', 'quota'), and what `use` throws.
 */
export async function openModelSource<T>(
  source: OpenableSource,
  options: OpenModelSourceOptions,
  use: (file: GgufFile, cache?: ModelCacheInfo) => Promise<T>,
): Promise<T> {
  if (!('url' in source) || (!options.cache && !isLocalSpec(source.url))) {
    return use(await openModelFile(source, { signal: options.signal }));
  }
  const c = typeof options.cache === 'object' ? options.cache : {};
  const library = await ModelLibrary.open({ dir: c.dir, hfEndpoint: c.hfEndpoint });
  for (let attempt = 0; ; attempt++) {
    const got = await library.acquire(source.url, {
      signal: options.signal,
      sha256: c.sha256,
      offline: c.offline,
      onProgress: (p) => options.onProgress?.(p),
      base: typeof location !== 'undefined' ? location.href : undefined,
    });
    const cache: ModelCacheInfo = {
      fromCache: got.fromCache,
      offline: got.offline,
      downloadedBytes: got.downloadedBytes,
      location: got.location,
    };
    try {
      return await use(await openModelFile({ byteParts: got.parts }, { signal: options.signal }), cache);
    } catch (e) {
      if (!isEngineError(e, 'integrity') || attempt > 0) throw e;
      await library.invalidate(got.parts[0].meta.key);
      options.onProgress?.({ phase: 'download', bytesDone: 0, bytesTotal: 0, note: e.message });
    }
  }
}
