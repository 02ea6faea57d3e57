/**
 * Opens the GGUF of any model source as one file: resolves `hf:` shorthands and Hugging Face page URLs to
 * download URLs, and finds the other parts of a split model (`NAME-00001-of-0000N.gguf`) beside the first
 * — sibling URLs, sibling paths, or among the Blobs given — then merges them (src/gguf/split.ts).
 */
import { EngineError } from '../core/errors.ts';
import type { ModelSource } from '../core/types.ts';
import { type OpenedGgufFile, type OpenGgufOptions, openGguf } from '../gguf/reader.ts';
import { openSplitGguf, splitPartName } from '../gguf/split.ts';
import type { ByteSource } from '../net/byte-source.ts';
import { resolveModelSpec } from './spec.ts';
import { fileNameOf } from './store.ts';

/** A model source, or the library's verified parts (in order). */
export type ModelFileInput = Exclude<ModelSource, { synthetic: string }> | { byteParts: ByteSource[] };

/**
 * Opens a model's GGUF (all parts of a split model) for loading.
 * @throws EngineError as {@link openGguf} and {@link openSplitGguf}; 'invalid_argument' for a bad spec or
 *   a split part missing from the picked files.
 */
export async function openModelFile(
  input: ModelFileInput,
  opts: OpenGgufOptions & { hfEndpoint?: string } = {},
): Promise<OpenedGgufFile> {
  if ('byteParts' in input) {
    const parts = input.byteParts;
    const first = await openGguf({ bytes: parts[0] }, opts);
    const file = await openSplitGguf(
      first,
      async (no) => {
        const p = parts[no - 1];
        if (!p) throw new EngineError('invalid_argument', `part ${no} is missing`);
        return openGguf({ bytes: p }, opts);
      },
      { signal: opts.signal },
    );
    return file;
  }
  if ('url' in input) {
    const url = resolveModelSpec(input.url, {
      hfEndpoint: opts.hfEndpoint,
      base: typeof location !== 'undefined' ? location.href : undefined,
    }).url;
    const first = await openGguf({ url }, opts);
    return openSplitGguf(first, (no) => openGguf({ url: splitPartName(url, no, splitCount(first)) }, opts), {
      signal: opts.signal,
    });
  }
  if ('path' in input) {
    const first = await openGguf({ path: input.path }, opts);
    return openSplitGguf(
      first,
      (no) => openGguf({ path: splitPartName(input.path, no, splitCount(first)) }, opts),
      {
        signal: opts.signal,
      },
    );
  }
  const name = input.name ?? (input.blob as File).name ?? 'the model file';
  const first = await openGguf({ blob: input.blob, name }, opts);
  return openSplitGguf(
    first,
    async (no) => {
      const want = fileNameOf(splitPartName(name, no, splitCount(first)));
      const blob = input.parts?.find((b) => fileNameOf((b as File).name ?? '') === want);
      if (!blob) {
        throw new EngineError(
          'invalid_argument',
          `${want} was not among the files given: pick all ${splitCount(first)} parts of the model together`,
        );
      }
      return openGguf({ blob, name: want }, opts);
    },
    { signal: opts.signal },
  );
}

function splitCount(f: OpenedGgufFile): number {
  return Number(f.metadata['split.count'] ?? 1);
}
