/**
 * Tokenizers built from GGUF metadata. `createTokenizer` picks the implementation from
 * `tokenizer.ggml.model`: 'llama' (SentencePiece) now; 'gpt2' (BPE) to come.
 */

import { EngineError } from '../../engine/errors.ts';
import { SpmTokenizer } from './spm.ts';
import type { Tokenizer } from './types.ts';

export { IncrementalDecoder } from './incremental.ts';
export { SpmTokenizer } from './spm.ts';
export type { DecodeOptions, EncodeOptions, Tokenizer } from './types.ts';

/**
 * Builds the tokenizer a model's GGUF metadata describes.
 * @throws EngineError('unsupported_model') for a `tokenizer.ggml.model` other than 'llama';
 *   EngineError('gguf_invalid') for malformed tokenizer metadata.
 */
export function createTokenizer(metadata: Record<string, unknown>): Tokenizer {
  const model = metadata['tokenizer.ggml.model'];
  switch (model) {
    case 'llama':
      return SpmTokenizer.fromGgufMetadata(metadata);
    default:
      throw new EngineError(
        'unsupported_model',
        model === undefined
          ? 'this model has no tokenizer (tokenizer.ggml.model is missing)'
          : `tokenizer type ${JSON.stringify(model)} is not supported yet (supported: "llama" SentencePiece)`,
      );
  }
}
