/**
 * What SentencePiece and byte-level BPE share (llama.cpp's `llama_vocab` around its per-type sessions):
 * the vocabulary tables, special-token partitioning, BOS/EOS handling in `encode`, `llama_detokenize` and
 * `llama_token_to_piece`. A subclass says how one text fragment becomes tokens and how one token renders.
 */

import { EngineError } from '../../core/errors.ts';
import {
  checkTokenId,
  concatBytes,
  type Fragment,
  lstripPiece,
  partitionSpecial,
  specialTokenIds,
  TokenAttr,
  wellFormed,
} from './common.ts';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './types.ts';

/** The vocabulary a subclass has read and settled (special ids chosen, attributes forced) before `super`. */
export interface VocabTables {
  /** Token texts [nVocab], each mapping back to its id through `textToId`. */
  texts: readonly string[];
  /** llama.cpp token attributes ({@link TokenAttr} bits) [nVocab]. */
  attrs: Uint16Array;
  textToId: ReadonlyMap<string, number>;
  bosId: number | null;
  eosId: number | null;
  unkId: number | null;
  eotId: number | null;
  eomId: number | null;
  addBos: boolean;
  addEos: boolean;
  chatTemplate: string | null;
  addSpacePrefix: boolean;
  /** End-of-generation ids (EOS, EOT, EOM and llama.cpp's end-of-turn texts). */
  eogIds: ReadonlySet<number>;
}

/** A tokenizer over a GGUF vocabulary with llama.cpp's behaviour; SPM and BPE extend it. */
export abstract class VocabTokenizer implements Tokenizer {
  abstract readonly model: string;
  readonly nVocab: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly unkId: number | null;
  readonly eotId: number | null;
  readonly eomId: number | null;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly chatTemplate: string | null;
  readonly addSpacePrefix: boolean;

  protected readonly texts: readonly string[];
  protected readonly attrs: Uint16Array;
  protected readonly textToId: ReadonlyMap<string, number>;
  /** Control, user-defined and unknown tokens, longest text first (llama.cpp's `cache_special_tokens`). */
  private readonly specialIds: number[];
  /** {@link controlTexts}, filled on first use. */
  private control: string[] | undefined;
  private readonly eogIds: ReadonlySet<number>;
  /** Piece bytes per token with special tokens rendered (llama.cpp's `cache_token_to_piece`), filled on use. */
  private readonly pieces: (Uint8Array | undefined)[];
  /** {@link maxPieceChars}, computed on first use. */
  private maxChars: number | undefined;

  protected constructor(v: VocabTables) {
    this.nVocab = v.texts.length;
    this.texts = v.texts;
    this.attrs = v.attrs;
    this.textToId = v.textToId;
    this.bosId = v.bosId;
    this.eosId = v.eosId;
    this.unkId = v.unkId;
    this.eotId = v.eotId;
    this.eomId = v.eomId;
    this.addBos = v.addBos;
    this.addEos = v.addEos;
    this.chatTemplate = v.chatTemplate;
    this.addSpacePrefix = v.addSpacePrefix;
    this.eogIds = v.eogIds;
    this.specialIds = specialTokenIds(v.texts, v.attrs);
    this.pieces = new Array(this.nVocab);
  }

  /** Appends the tokens of the text fragments between special tokens (special tokens pass through). */
  protected abstract encodeFragments(fragments: readonly Fragment[], out: number[]): void;

  /** llama.cpp's `token_to_piece(id, special = true)` for this vocabulary type. */
  protected abstract computePiece(id: number): Uint8Array;

  /** The detokenized bytes as llama.cpp finishes them (BPE: `clean_spaces`); unchanged by default. */
  protected finishDecode(bytes: Uint8Array): Uint8Array {
    return bytes;
  }

  /**
   * The UTF-16 code units of input text a NORMAL token `id` covers when `encode` emits it (its text as
   * matched; SPM by default, where '▁' is the one space it replaced).
   */
  protected normalPieceChars(id: number): number {
    return this.texts[id].length;
  }

  /**
   * The most UTF-16 code units of input one emitted token covers (see Tokenizer.maxPieceChars), computed
   * once: special tokens (control, unknown, user-defined: matched by their text) their text's length;
   * byte tokens 1 (a character's bytes are several tokens); NORMAL tokens {@link normalPieceChars};
   * any other type its vocabulary text's length (SPM: the text itself; BPE: its byte count, never less
   * than the characters those bytes make). At least 1.
   */
  get maxPieceChars(): number {
    if (this.maxChars === undefined) {
      let max = 1;
      for (let id = 0; id < this.nVocab; id++) {
        const attr = this.attrs[id];
        let n: number;
        if (attr & (TokenAttr.UNKNOWN | TokenAttr.CONTROL | TokenAttr.USER_DEFINED))
          n = this.texts[id].length;
        else if (attr & TokenAttr.BYTE) n = 1;
        else if (attr & TokenAttr.NORMAL) n = this.normalPieceChars(id);
        else n = this.texts[id].length;
        if (n > max) max = n;
      }
      this.maxChars = max;
    }
    return this.maxChars;
  }

  /** llama.cpp token attributes ({@link TokenAttr} bits) of `id`. @throws EngineError('invalid_argument'). */
  tokenAttr(id: number): number {
    checkTokenId(id, this.nVocab);
    return this.attrs[id];
  }

  /** The texts of the control and unknown tokens, longest first (the ones `parseSpecial` gates). */
  controlTexts(): string[] {
    this.control ??= this.specialIds
      .filter((id) => this.attrs[id] & (TokenAttr.CONTROL | TokenAttr.UNKNOWN))
      .map((id) => this.texts[id])
      .filter((t) => t !== '');
    return [...this.control];
  }

  /** The vocabulary text of `id` ('▁the' for SPM, 'Ġthe' for BPE). @throws EngineError('invalid_argument'). */
  tokenText(id: number): string {
    checkTokenId(id, this.nVocab);
    return this.texts[id];
  }

  /** The token whose vocabulary text is exactly `text`, or undefined. */
  textToToken(text: string): number | undefined {
    return this.textToId.get(text);
  }

  isEog(id: number): boolean {
    return this.eogIds.has(id);
  }

  /** All end-of-generation ids, ascending. */
  get eogTokenIds(): number[] {
    return [...this.eogIds].sort((a, b) => a - b);
  }

  /** @throws EngineError('invalid_argument') when BOS/EOS is asked for and the model has none. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const addBos = options.addBos ?? this.addBos;
    const addEos = options.addEos ?? this.addEos;
    const out: number[] = [];
    if (addBos) {
      if (this.bosId === null) throw new EngineError('invalid_argument', 'this model has no BOS token');
      out.push(this.bosId);
    }
    const fragments = partitionSpecial(
      wellFormed(text),
      options.parseSpecial ?? false,
      this.specialIds,
      this.texts,
      this.attrs,
      options.plainSpans,
    );
    this.encodeFragments(fragments, out);
    if (addEos) {
      if (this.eosId === null) throw new EngineError('invalid_argument', 'this model has no EOS token');
      out.push(this.eosId);
    }
    return out;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    let start = 0;
    let end = ids.length;
    let removeSpace = this.addSpacePrefix;
    if (options.removeSpecial && this.addBos && end > 0 && ids[0] === this.bosId) {
      removeSpace = false;
      start = 1;
    }
    if (options.removeSpecial && this.addEos && end > start && ids[end - 1] === this.eosId) end--;
    const parts: Uint8Array[] = [];
    for (let i = start; i < end; i++) {
      parts.push(this.pieceBytes(ids[i], options.unparseSpecial ?? false, removeSpace ? 1 : 0));
      removeSpace = false;
    }
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.finishDecode(concatBytes(parts)));
  }

  tokenBytes(id: number): Uint8Array {
    return this.pieceBytes(id, false, 0);
  }

  /**
   * llama.cpp's `llama_token_to_piece(id, lstrip, special)` as text. A byte token ≥ 0x80 alone is not
   * valid UTF-8 and gives U+FFFD; use {@link tokenBytes} or {@link pieceBytes} for the bytes.
   */
  tokenToPiece(id: number, options: { special?: boolean; lstrip?: number } = {}): string {
    const bytes = this.pieceBytes(id, options.special ?? false, options.lstrip ?? 0);
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
  }

  /** Piece bytes of `id`: control/unknown tokens empty unless `special`; up to `lstrip` leading spaces dropped. */
  pieceBytes(id: number, special: boolean, lstrip = 0): Uint8Array {
    checkTokenId(id, this.nVocab);
    if (!special && this.attrs[id] & (TokenAttr.UNKNOWN | TokenAttr.CONTROL)) return new Uint8Array(0);
    let piece = this.pieces[id];
    if (!piece) {
      piece = this.computePiece(id);
      this.pieces[id] = piece;
    }
    return lstripPiece(piece, lstrip);
  }
}
