/**
 * A GGUF header that can cross a worker boundary (structured clone) without the tokenizer's arrays: what
 * an engine in a worker keeps of the file it loaded, so the page can size the model (context lengths and
 * KV cache types that fit, bench/kv-memory.ts and `modelFits`) without reading the file a second time.
 */
import { EngineError } from '../core/errors.ts';
import type { GgufFile } from './types.ts';

/** A GGUF header without its data stream: version, metadata, tensor infos, data offset, file size. */
export type GgufHeader = Omit<GgufFile, 'streamTensorData' | 'synthetic'>;

/**
 * The header of `file`, cloneable, without the tokenizer's arrays (`tokenizer.ggml.tokens`, `merges`,
 * `scores`, `token_type`: megabytes for a 128k vocabulary). The vocabulary size stays known: the model
 * config then reads it from `token_embd.weight`'s shape[1], which a loaded model's tokens match. Tensor
 * infos are copied (shape, type, offset, bytes, part).
 */
export function headerOf(file: GgufFile): GgufHeader {
  const metadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(file.metadata)) {
    if (k.startsWith('tokenizer.ggml.') && Array.isArray(v)) continue;
    metadata[k] = v;
  }
  return {
    version: file.version,
    metadata,
    tensors: new Map([...file.tensors].map(([name, t]) => [name, { ...t, shape: [...t.shape] }])),
    dataOffset: file.dataOffset,
    ...(file.fileSize !== undefined ? { fileSize: file.fileSize } : {}),
  };
}

/**
 * `header` as a {@link GgufFile} for the functions that size a model from its header (kv-memory.ts,
 * `modelFits`, the model config); its `streamTensorData` rejects with EngineError('invalid_argument'):
 * there is no data behind it.
 */
export function headerAsFile(header: GgufHeader): GgufFile {
  return {
    ...header,
    streamTensorData: () =>
      Promise.reject(
        new EngineError('invalid_argument', 'this GGUF header (headerOf) has no tensor data to stream'),
      ),
  };
}
