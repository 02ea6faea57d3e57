/**
 * The interface every tokenizer built from GGUF metadata implements (SentencePiece and byte-level BPE).
 * Semantics follow llama.cpp's `llama_tokenize` / `llama_detokenize` / `llama_token_to_piece`.
 */

/** Options for {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /** Prepend BOS; default the model's `tokenizer.ggml.add_bos_token` (true when absent for SPM). */
  addBos?: boolean;
  /** Append EOS; default the model's `tokenizer.ggml.add_eos_token` (false when absent for SPM). */
  addEos?: boolean;
  /**
   * Match control/unknown token texts (`<s>`, `</s>`, `<unk>`) in the input as those tokens; default false,
   * as llama.cpp does for plain text. User-defined tokens are matched either way, as in llama.cpp.
   */
  parseSpecial?: boolean;
  /**
   * With `parseSpecial`: ranges [start, end) of the text (UTF-16 code units, sorted or not) where control
   * and unknown tokens are not matched: no such token may cover any of their characters, which are
   * tokenized as ordinary text together with their neighbours. A chat prompt's message contents
   * (src/model/chat-template.ts): the template's markup is parsed, what a user typed is not.
   */
  plainSpans?: readonly (readonly [number, number])[];
}

/** Options for {@link Tokenizer.decode}. */
export interface DecodeOptions {
  /** Drop a leading BOS (when the model adds BOS) and a trailing EOS (when it adds EOS); default false. */
  removeSpecial?: boolean;
  /** Render control/unknown tokens as their text (`<s>`) instead of nothing; default false. */
  unparseSpecial?: boolean;
}

/** A tokenizer for one model's vocabulary. */
export interface Tokenizer {
  /** `tokenizer.ggml.model`, e.g. 'llama'. */
  readonly model: string;
  /** Number of tokens in the vocabulary. */
  readonly nVocab: number;
  /** BOS token id, or null when the model has none. */
  readonly bosId: number | null;
  /** EOS token id, or null when the model has none. */
  readonly eosId: number | null;
  /** Whether prompts get BOS by default (the model's `add_bos_token`). */
  readonly addBos: boolean;
  /**
   * Whether text gets a leading space before tokenizing (`tokenizer.ggml.add_space_prefix`; SentencePiece
   * models by default): then a text's first token carries a space ("▁Once") that its decoding drops.
   */
  readonly addSpacePrefix: boolean;
  /** The model's chat template (`tokenizer.chat_template`, Jinja), or null when it has none. */
  readonly chatTemplate: string | null;
  /**
   * The most UTF-16 code units of input text one token of `encode` can cover: the longest piece as the
   * tokenizer matches it (SPM: '▁' counts as the one space it stands for; BPE: the longest token's decoded
   * text; special tokens: their text), at least 1 (a byte-fallback token covers less than a character).
   * So a text of C code units encodes to at least ceil(C / maxPieceChars) tokens, without tokenizing it
   * (./prompt-bound.ts `checkPromptLength`).
   */
  readonly maxPieceChars: number;
  /** Text → token ids, as llama.cpp's `llama_tokenize`. */
  encode(text: string, options?: EncodeOptions): number[];
  /**
   * Token ids → text, as llama.cpp's `llama_detokenize`: pieces concatenated as bytes, then decoded as
   * UTF-8 (invalid bytes become U+FFFD); the first token's leading space is removed when the model adds a
   * space prefix (the first token, even when it is BOS: then nothing is removed).
   */
  decode(ids: readonly number[], options?: DecodeOptions): string;
  /**
   * The bytes token `id` adds to streamed output: llama.cpp's `llama_token_to_piece(id, lstrip = 0,
   * special = false)` (control tokens give no bytes; byte tokens give one byte, maybe part of a character).
   * @throws EngineError('invalid_argument') for an id outside [0, nVocab).
   */
  tokenBytes(id: number): Uint8Array;
  /**
   * llama.cpp's `llama_token_to_piece(id, lstrip, special)` as bytes: with `special`, control tokens give
   * their text ('<|eot_id|>'); up to `lstrip` leading spaces are dropped.
   * @throws EngineError('invalid_argument') for an id outside [0, nVocab).
   */
  pieceBytes(id: number, special: boolean, lstrip?: number): Uint8Array;
  /** True for end-of-generation tokens (EOS, EOT, EOM and llama.cpp's known end-of-turn texts). */
  isEog(id: number): boolean;
  /**
   * The texts of the control and unknown tokens (`<s>`, `</s>`, `<|im_end|>`): what `encode` matches only
   * with `parseSpecial`. Empty texts left out.
   */
  controlTexts(): readonly string[];
}
