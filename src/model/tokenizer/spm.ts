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
import { VocabTokenizer } from './base.ts';
import {
  attrOfType,
  EOG_TOKEN_TEXTS,
  EOT_TEXTS,
  type Fragment,
  isArrayLikeOf,
  PriorityQueue,
  readCommonVocab,
  TokenAttr,
  utf8,
} from './common.ts';

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
export class SpmTokenizer extends VocabTokenizer {
  readonly model = 'llama';

  private readonly scores: Float32Array;
  /** byte → its `<0xXX>` token (or the 1-character token for ASCII), -1 when the vocabulary has neither. */
  private readonly byteToId = new Int32Array(256).fill(-1);

  constructor(vocab: SpmVocab) {
    const n = vocab.tokens.length;
    if (n === 0) throw new EngineError('gguf_invalid', 'the tokenizer vocabulary is empty');
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
    const textToId = new Map<string, number>();
    const scores = new Float32Array(n);
    const attrs = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      // llama.cpp renames empty tokens so that every text maps to one id.
      const text = vocab.tokens[i] === '' ? `[EMPTY_${i}]` : vocab.tokens[i];
      texts[i] = text;
      textToId.set(text, i); // a later duplicate wins, as in llama.cpp's token_to_id map
      scores[i] = vocab.scores ? Number(vocab.scores[i]) : 0;
      attrs[i] = vocab.tokenTypes ? attrOfType(Number(vocab.tokenTypes[i])) : TokenAttr.NORMAL;
    }

    const inRange = (id: number | null | undefined, dflt: number | null): number | null => {
      if (id === undefined) return dflt !== null && dflt < n ? dflt : null;
      return id !== null && id >= 0 && id < n ? id : dflt !== null && dflt < n ? dflt : null;
    };
    const eosId = inRange(vocab.eosId, 2);
    // EOT/EOM by text when the GGUF names none, forced to control type (llama-vocab.cpp
    // `llama_vocab::impl::load`, "find EOT token" / "find EOM token", for every vocabulary type; llama.cpp
    // takes the first match in its unordered map, we take the first text listed, as BpeTokenizer does).
    const byText = (cands: readonly string[]): number | null => {
      for (const t of cands) {
        const id = textToId.get(t);
        if (id !== undefined) {
          attrs[id] |= TokenAttr.CONTROL;
          return id;
        }
      }
      return null;
    };
    const eotId = inRange(vocab.eotId, null) ?? byText(EOT_TEXTS);
    const eomId = inRange(vocab.eomId, null) ?? byText(['<|eom_id|>']);

    // End-of-generation tokens: by text (forced to control type, as llama.cpp does), then EOS/EOT/EOM.
    const eogIds = new Set<number>();
    for (const text of EOG_TOKEN_TEXTS) {
      const id = textToId.get(text);
      if (id === undefined) continue;
      eogIds.add(id);
      attrs[id] |= TokenAttr.CONTROL;
    }
    for (const id of [eosId, eotId, eomId]) if (id !== null) eogIds.add(id);

    super({
      texts,
      attrs,
      textToId,
      bosId: inRange(vocab.bosId, 1),
      eosId,
      unkId: inRange(vocab.unkId, 0),
      eotId,
      eomId,
      addBos: vocab.addBos ?? true,
      addEos: vocab.addEos ?? false,
      chatTemplate: vocab.chatTemplate ?? null,
      addSpacePrefix: vocab.addSpacePrefix ?? true,
      eogIds,
    });
    this.scores = scores;

    const hex = '0123456789ABCDEF';
    for (let b = 0; b < 256; b++) {
      const id =
        textToId.get(`<0x${hex[b >> 4]}${hex[b & 15]}>`) ??
        (b < 0x80 ? textToId.get(String.fromCharCode(b)) : undefined);
      if (id !== undefined) this.byteToId[b] = id;
    }
  }

  /**
   * Builds the tokenizer from GGUF metadata (`tokenizer.ggml.*`).
   * @throws EngineError('unsupported_model') when `tokenizer.ggml.model` is not 'llama';
   *   EngineError('gguf_invalid') when the token list is missing or malformed.
   */
  static fromGgufMetadata(metadata: Record<string, unknown>): SpmTokenizer {
    const common = readCommonVocab(metadata, 'llama', 'SentencePiece');
    const scores = metadata['tokenizer.ggml.scores'];
    if (scores !== undefined && !isArrayLikeOf(scores, 'number')) {
      throw new EngineError('gguf_invalid', 'tokenizer.ggml.scores is not an array of numbers');
    }
    return new SpmTokenizer({ ...common, scores: scores as ArrayLike<number> | undefined });
  }

  protected encodeFragments(fragments: readonly Fragment[], out: number[]): void {
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
  }

  /** llama.cpp's `token_to_piece(id, special = true)` for SPM. */
  protected computePiece(id: number): Uint8Array {
    const attr = this.attrs[id];
    const text = this.texts[id];
    if (attr & (TokenAttr.UNKNOWN | TokenAttr.CONTROL | TokenAttr.USER_DEFINED)) return utf8(text);
    if (attr & TokenAttr.NORMAL) return utf8(text.replaceAll(ESCAPED_SPACE, SPACE));
    if (attr & TokenAttr.BYTE) return Uint8Array.of(Number.parseInt(text.slice(3, 5), 16) & 0xff);
    return new Uint8Array(0); // unused / undefined tokens render as nothing
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
