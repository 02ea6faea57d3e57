/**
 * Tokenizers built from GGUF metadata. `createTokenizer` picks the implementation from
 * `tokenizer.ggml.model`: 'llama' (SentencePiece) or 'gpt2' (byte-level BPE).
 */

import { EngineError } from '../../core/errors.ts';
import { BpeTokenizer } from './bpe.ts';
import { SpmTokenizer } from './spm.ts';
import type { Tokenizer } from './types.ts';

export { BpeTokenizer } from './bpe.ts';
export { SUPPORTED_PRE_TOKENIZERS } from './bpe-pre.ts';
export { AnswerText, IncrementalDecoder } from './incremental.ts';
export { SpmTokenizer } from './spm.ts';
export type { DecodeOptions, EncodeOptions, Tokenizer } from './types.ts';

/**
 * Builds the tokenizer a model's GGUF metadata describes.
 * @throws EngineError('unsupported_model') for a `tokenizer.ggml.model` other than 'llama' and 'gpt2', or
 *   a BPE pre-tokenizer (`tokenizer.ggml.pre`) we do not implement; EngineError('gguf_invalid') for
 *   malformed tokenizer metadata.
 */
export function createTokenizer(metadata: Record<string, unknown>): Tokenizer {
  const model = metadata['tokenizer.ggml.model'];
  switch (model) {
    case 'llama':
      return SpmTokenizer.fromGgufMetadata(metadata);
    case 'gpt2':
      return BpeTokenizer.fromGgufMetadata(metadata);
    default:
      throw new EngineError(
        'unsupported_model',
        model === undefined
          ? 'this model has no tokenizer (tokenizer.ggml.model is missing)'
          : `tokenizer type ${JSON.stringify(model)} is not supported (supported: "llama" SentencePiece, "gpt2" byte-level BPE)`,
      );
  }
}
