/**
 * Streams token ids to text without ever emitting a broken character: a token may carry only part of a
 * UTF-8 sequence (SentencePiece byte fallback, `<0xF0><0x9F><0xA6><0x99>` = 🦙), so bytes are held until
 * the sequence completes.
 */

import type { Tokenizer } from './types.ts';

/** Streams the text of successive token ids. */
export class IncrementalDecoder {
  private readonly tokenizer: Pick<Tokenizer, 'tokenBytes'>;
  private decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  /** @param tokenizer any tokenizer that can give a token's output bytes. */
  constructor(tokenizer: Pick<Tokenizer, 'tokenBytes'>) {
    this.tokenizer = tokenizer;
  }

  /**
   * Adds one token; returns the text it completes ('' while a multi-byte character is still incomplete).
   * The concatenation of all returned strings and {@link flush} is the UTF-8 decoding of the tokens' bytes
   * (llama.cpp's `llama_token_to_piece` per token, no leading space removed), i.e. `decode([bos, ...ids])`
   * for SentencePiece models. (For BPE models whose pre-tokenizer has llama.cpp's `clean_spaces`, such as
   * Llama 3's, `decode` also drops spaces before punctuation; streamed text keeps them, as llama.cpp's.)
   */
  push(id: number): string {
    return this.decoder.decode(this.tokenizer.tokenBytes(id), { stream: true });
  }

  /** Ends the stream: returns U+FFFD for bytes of a character that never completed, and resets. */
  flush(): string {
    const rest = this.decoder.decode();
    this.reset();
    return rest;
  }

  /** Drops any held bytes and starts a new stream. */
  reset(): void {
    this.decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  }
}

/**
 * An answer's text from its streamed token texts: a chat answer is a text of its own, so its first token's
 * leading space ("▁Hello" of a SentencePiece model, which marks a word start) is dropped, as llama.cpp's
 * `llama_detokenize` drops it from the first token of a text when the model adds a space prefix. Later
 * tokens, and every token of a model without a space prefix (Llama 3's and Qwen's BPE), are unchanged.
 * A continuation of a prompt (`generate`, the benchmark) keeps that space: it separates it from the prompt.
 */
export class AnswerText {
  private first = true;
  private stripped = false;

  /** @param tokenizer the model's tokenizer (only whether it adds a space prefix is read). */
  constructor(private readonly tokenizer: Pick<Tokenizer, 'addSpacePrefix'>) {}

  /** The text a token adds to the answer, from its streamed text ({@link IncrementalDecoder.push}). */
  push(text: string): string {
    if (!this.first) return text;
    this.first = false;
    // The first token's text is its piece's bytes decoded (nothing is held before it), so a piece that
    // starts with a space gives text that starts with one, as in llama.cpp's lstrip of that piece.
    if (this.tokenizer.addSpacePrefix && text.startsWith(' ')) {
      this.stripped = true;
      return text.slice(1);
    }
    return text;
  }

  /** The whole answer from the engine's text of the same tokens (which keeps the first token's space). */
  text(full: string): string {
    return this.stripped && full.startsWith(' ') ? full.slice(1) : full;
  }
}
