/**
 * SentencePiece (`tokenizer.ggml.model = llama`) tokenizer, a port of llama.cpp's `llm_tokenizer_spm`
 * (src/llama-vocab.cpp): same vocabulary rules, same merge order, same byte fallback, same detokenizer.
 * No DOM and no Node APIs (TextEncoder/TextDecoder only), so it runs in a worker, a page and Node.
 *
 * Encoding, as `llama_vocab::impl::tokenize` for SPM:
 * 1. The text is split into fragments at special-token texts: user-defined tokens always, control and
 *    unknown tokens (`<s>`, `</s>`, `<unk>`) only with `parseSpecial` (longest token texts first).
 * 2. Each text fragment that starts the input or follows a special token gets a ' ' prefix when the model
 *    has `add_space_prefix` (default true); every ' ' becomes '▁' (U+2581).
 * 3. The fragment is split into UTF-8 characters; adjacent pairs whose concatenation is a vocabulary
 *    token go into a priority queue ordered by that token's score (highest first, leftmost on ties); the
 *    best pair is merged, its neighbours' pairs are queued, until nothing merges.
 * 4. Each final symbol is emitted as its token; a symbol that is no token (a character outside the
 *    vocabulary) is emitted as one `<0xXX>` byte token per UTF-8 byte.
 * 5. BOS first / EOS last when asked (the model's add_bos_token / add_eos_token by default).
 */

import { EngineError } from '../../core/errors.ts';
import {
  attrOfType,
  checkTokenId,
  concatBytes,
  EOG_TOKEN_TEXTS,
  EOT_TEXTS,
  type Fragment,
  isArrayLikeOf,
  lstripPiece,
  PriorityQueue,
  partitionSpecial,
  readCommonVocab,
  specialTokenIds,
  TokenAttr,
  utf8,
  wellFormed,
} from './common.ts';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './types.ts';

export { EOG_TOKEN_TEXTS, TokenAttr, TokenType } from './common.ts';

/** What an SPM tokenizer is built from (the GGUF `tokenizer.ggml.*` keys, already parsed). */
export interface SpmVocab {
  /** Token texts, '▁' for spaces. */
  tokens: readonly string[];
  /** Merge scores (higher merges first); 0 when absent. */
  scores?: ArrayLike<number>;
  /** GGUF token types ({@link TokenType}); NORMAL when absent. */
  tokenTypes?: ArrayLike<number>;
  /** null = none; undefined = llama.cpp's SPM default (BOS 1, EOS 2, UNK 0). */
  bosId?: number | null;
  eosId?: number | null;
  unkId?: number | null;
  eotId?: number | null;
  eomId?: number | null;
  /** Default true. */
  addBos?: boolean;
  /** Default false. */
  addEos?: boolean;
  /** `tokenizer.chat_template`; default none. */
  chatTemplate?: string | null;
  /** Default true. */
  addSpacePrefix?: boolean;
}

const SPACE = ' ';
const ESCAPED_SPACE = '\u2581';

/** A pending merge of two adjacent symbols (llama.cpp's `llm_bigram_spm`). */
interface Bigram {
  left: number;
  right: number;
  score: number;
  /** Length of the merged text, to detect entries made stale by other merges. */
  size: number;
}

/** llama.cpp's `llm_bigram_spm::comparator`: true when `a` ranks below `b` (lower score, or later on ties). */
function bigramLess(a: Bigram, b: Bigram): boolean {
  return a.score < b.score || (a.score === b.score && a.left > b.left);
}

/** SentencePiece tokenizer with llama.cpp's exact behaviour. */
export class SpmTokenizer implements Tokenizer {
  readonly model = 'llama';
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

  private readonly texts: readonly string[];
  private readonly scores: Float32Array;
  private readonly attrs: Uint16Array;
  private readonly textToId = new Map<string, number>();
  /** byte → its `<0xXX>` token (or the 1-character token for ASCII), -1 when the vocabulary has neither. */
  private readonly byteToId = new Int32Array(256).fill(-1);
  /** Piece bytes per token with special tokens rendered (llama.cpp's `cache_token_to_piece`). */
  private readonly pieces: Uint8Array[];
  /** Control, user-defined and unknown tokens, longest text first (llama.cpp's `cache_special_tokens`). */
  private readonly specialIds: number[];
  private readonly eogIds = new Set<number>();

  constructor(vocab: SpmVocab) {
    const n = vocab.tokens.length;
    if (n === 0) throw new EngineError('gguf_invalid', 'the tokenizer vocabulary is empty');
    this.nVocab = n;
    if (vocab.scores && vocab.scores.length < n) {
      throw new EngineError('gguf_invalid', `tokenizer has ${vocab.scores.length} scores for ${n} tokens`);
    }
    if (vocab.tokenTypes && vocab.tokenTypes.length < n) {
      throw new EngineError(
        'gguf_invalid',
        `tokenizer has ${vocab.tokenTypes.length} token types for ${n} tokens`,
      );
    }

    const texts: string[] = new Array(n);
    this.scores = new Float32Array(n);
    this.attrs = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      // llama.cpp renames empty tokens so that every text maps to one id.
      const text = vocab.tokens[i] === '' ? `[EMPTY_${i}]` : vocab.tokens[i];
      texts[i] = text;
      this.textToId.set(text, i); // a later duplicate wins, as in llama.cpp's token_to_id map
      this.scores[i] = vocab.scores ? Number(vocab.scores[i]) : 0;
      this.attrs[i] = vocab.tokenTypes ? attrOfType(Number(vocab.tokenTypes[i])) : TokenAttr.NORMAL;
    }
    this.texts = texts;

    const inRange = (id: number | null | undefined, dflt: number | null): number | null => {
      if (id === undefined) return dflt !== null && dflt < n ? dflt : null;
      return id !== null && id >= 0 && id < n ? id : dflt !== null && dflt < n ? dflt : null;
    };
    this.bosId = inRange(vocab.bosId, 1);
    this.eosId = inRange(vocab.eosId, 2);
    this.unkId = inRange(vocab.unkId, 0);
    // EOT/EOM by text when the GGUF names none, forced to control type (llama-vocab.cpp
    // `llama_vocab::impl::load`, "find EOT token" / "find EOM token", for every vocabulary type; llama.cpp
    // takes the first match in its unordered map, we take the first text listed, as BpeTokenizer does).
    const byText = (cands: readonly string[]): number | null => {
      for (const t of cands) {
        const id = this.textToId.get(t);
        if (id !== undefined) {
          this.attrs[id] |= TokenAttr.CONTROL;
          return id;
        }
      }
      return null;
    };
    this.eotId = inRange(vocab.eotId, null) ?? byText(EOT_TEXTS);
    this.eomId = inRange(vocab.eomId, null) ?? byText(['<|eom_id|>']);
    this.addBos = vocab.addBos ?? true;
    this.addEos = vocab.addEos ?? false;
    this.chatTemplate = vocab.chatTemplate ?? null;
    this.addSpacePrefix = vocab.addSpacePrefix ?? true;

    // End-of-generation tokens: by text (forced to control type, as llama.cpp does), then EOS/EOT/EOM.
    for (const text of EOG_TOKEN_TEXTS) {
      const id = this.textToId.get(text);
      if (id === undefined) continue;
      this.eogIds.add(id);
      this.attrs[id] |= TokenAttr.CONTROL;
    }
    for (const id of [this.eosId, this.eotId, this.eomId]) if (id !== null) this.eogIds.add(id);

    const hex = '0123456789ABCDEF';
    for (let b = 0; b < 256; b++) {
      const id =
        this.textToId.get(`<0x${hex[b >> 4]}${hex[b & 15]}>`) ??
        (b < 0x80 ? this.textToId.get(String.fromCharCode(b)) : undefined);
      if (id !== undefined) this.byteToId[b] = id;
    }

    this.specialIds = specialTokenIds(texts, this.attrs);

    this.pieces = new Array(n);
    for (let id = 0; id < n; id++) this.pieces[id] = this.computePiece(id);
  }

  /**
   * Builds the tokenizer from GGUF metadata (`tokenizer.ggml.*`).
   * @throws EngineError('unsupported_model') when `tokenizer.ggml.model` is not 'llama';
   *   EngineError('gguf_invalid') when the token list is missing or malformed.
   */
  static fromGgufMetadata(metadata: Record<string, unknown>): SpmTokenizer {
    const model = metadata['tokenizer.ggml.model'];
    if (model !== 'llama') {
      throw new EngineError(
        'unsupported_model',
        `the SentencePiece tokenizer needs tokenizer.ggml.model = "llama", this model has ${JSON.stringify(model)}`,
      );
    }
    const common = readCommonVocab(metadata);
    const scores = metadata['tokenizer.ggml.scores'];
    if (scores !== undefined && !isArrayLikeOf(scores, 'number')) {
      throw new EngineError('gguf_invalid', 'tokenizer.ggml.scores is not an array of numbers');
    }
    return new SpmTokenizer({ ...common, scores: scores as ArrayLike<number> | undefined });
  }

  /** llama.cpp token attributes ({@link TokenAttr} bits) of `id`. */
  tokenAttr(id: number): number {
    this.checkId(id);
    return this.attrs[id];
  }

  /** The vocabulary text of `id` ('▁' for spaces, `<0x0A>` for byte tokens). */
  tokenText(id: number): string {
    this.checkId(id);
    return this.texts[id];
  }

  /** The token whose vocabulary text is exactly `text`, or undefined. */
  textToToken(text: string): number | undefined {
    return this.textToId.get(text);
  }

  isEog(id: number): boolean {
    return this.eogIds.has(id);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const addBos = options.addBos ?? this.addBos;
    const addEos = options.addEos ?? this.addEos;
    const out: number[] = [];
    if (addBos) {
      if (this.bosId === null) throw new EngineError('invalid_argument', 'this model has no BOS token');
      out.push(this.bosId);
    }
    const fragments = this.partition(wellFormed(text), options.parseSpecial ?? false);
    let prevSpecial = true; // the first text fragment gets the space prefix
    for (const f of fragments) {
      if ('token' in f) {
        out.push(f.token);
        prevSpecial = true;
        continue;
      }
      const raw = this.addSpacePrefix && prevSpecial ? SPACE + f.text : f.text;
      this.tokenizeFragment(raw.replaceAll(SPACE, ESCAPED_SPACE), out);
      prevSpecial = false;
    }
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
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(concatBytes(parts));
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
    this.checkId(id);
    if (!special && this.attrs[id] & (TokenAttr.UNKNOWN | TokenAttr.CONTROL)) return new Uint8Array(0);
    return lstripPiece(this.pieces[id], lstrip);
  }

  private checkId(id: number): void {
    checkTokenId(id, this.nVocab);
  }

  /** llama.cpp's `token_to_piece(id, special = true)` for SPM. */
  private computePiece(id: number): Uint8Array {
    const attr = this.attrs[id];
    const text = this.texts[id];
    if (attr & (TokenAttr.UNKNOWN | TokenAttr.CONTROL | TokenAttr.USER_DEFINED)) return utf8(text);
    if (attr & TokenAttr.NORMAL) return utf8(text.replaceAll(ESCAPED_SPACE, SPACE));
    if (attr & TokenAttr.BYTE) return Uint8Array.of(Number.parseInt(text.slice(3, 5), 16) & 0xff);
    return new Uint8Array(0); // unused / undefined tokens render as nothing
  }

  private partition(text: string, parseSpecial: boolean): Fragment[] {
    return partitionSpecial(text, parseSpecial, this.specialIds, this.texts, this.attrs);
  }

  /** llama.cpp's `llm_tokenizer_spm_session::tokenize` on an escaped fragment. */
  private tokenizeFragment(text: string, out: number[]): void {
    // Symbols: one per code point, as a doubly linked list over UTF-16 offsets.
    const starts: number[] = [];
    for (let i = 0; i < text.length; ) {
      starts.push(i);
      const c = text.charCodeAt(i);
      i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
    }
    const count = starts.length;
    if (count === 0) return;
    const start = Int32Array.from(starts);
    const len = new Int32Array(count);
    const prev = new Int32Array(count);
    const next = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      len[i] = (i + 1 < count ? start[i + 1] : text.length) - start[i];
      prev[i] = i - 1;
      next[i] = i + 1 < count ? i + 1 : -1;
    }

    const queue = new PriorityQueue<Bigram>(bigramLess);
    const revMerge = new Map<string, [number, number]>();
    const tryAddBigram = (left: number, right: number): void => {
      if (left === -1 || right === -1) return;
      const merged = text.slice(start[left], start[left] + len[left] + len[right]);
      const id = this.textToId.get(merged);
      if (id === undefined) return;
      queue.push({ left, right, score: this.scores[id], size: merged.length });
      revMerge.set(merged, [left, right]);
    };

    for (let i = 1; i < count; i++) tryAddBigram(i - 1, i);

    while (queue.size > 0) {
      const b = queue.pop();
      // Skip entries whose symbols have since been merged into something else.
      if (len[b.left] === 0 || len[b.right] === 0 || len[b.left] + len[b.right] !== b.size) continue;
      len[b.left] += len[b.right];
      len[b.right] = 0;
      next[b.left] = next[b.right];
      if (next[b.right] >= 0) prev[next[b.right]] = b.left;
      tryAddBigram(prev[b.left], b.left);
      tryAddBigram(b.left, next[b.left]);
    }

    const resegment = (sym: number): void => {
      const symText = text.slice(start[sym], start[sym] + len[sym]);
      const id = this.textToId.get(symText);
      if (id !== undefined) {
        out.push(id);
        return;
      }
      const merge = revMerge.get(symText);
      if (merge === undefined) {
        for (const byte of utf8(symText)) out.push(this.byteToken(byte));
        return;
      }
      resegment(merge[0]);
      resegment(merge[1]);
    };
    for (let i = 0; i !== -1; i = next[i]) resegment(i);
  }

  /**
   * llama.cpp's `byte_to_token`: the `<0xXX>` token, else the 1-character token. Where llama.cpp throws
   * (no such token), this returns UNK.
   */
  private byteToken(byte: number): number {
    const id = this.byteToId[byte];
    if (id >= 0) return id;
    if (this.unkId !== null) return this.unkId;
    throw new EngineError(
      'unsupported_model',
      `the vocabulary has no token for byte 0x${byte.toString(16)} and no unknown token`,
    );
  }
}
