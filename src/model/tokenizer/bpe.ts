/**
 * Byte-level BPE (`tokenizer.ggml.model = gpt2`: Llama 3, Qwen 2/2.5/3, SmolLM, …), a port of llama.cpp's
 * `llm_tokenizer_bpe` and its vocabulary rules (src/llama-vocab.cpp, src/unicode.cpp). No DOM and no Node
 * APIs, so it runs in a worker, a page and Node.
 *
 * Encoding, as `llama_vocab::impl::tokenize` for BPE:
 * 1. The text is split into fragments at special-token texts (`tokenizer_st_partition`): user-defined
 *    tokens always, control and unknown tokens only with `parseSpecial`, longest texts first.
 * 2. Each text fragment is cut into words by the pre-tokenizer `tokenizer.ggml.pre` names (bpe-pre.ts).
 * 3. Each word's UTF-8 bytes are mapped to GPT-2's printable characters (Ġ for a space, …). With
 *    `ignore_merges` (Llama 3) a word that is itself a vocabulary entry becomes that token.
 * 4. Otherwise the word's characters are merged pairwise, always the adjacent pair with the lowest merge
 *    rank (`tokenizer.ggml.merges` order; leftmost on ties), until no pair has a rank.
 * 5. Each final symbol is emitted as its token (a symbol outside the vocabulary falls back to one token
 *    per ASCII byte, as llama.cpp does).
 * 6. BOS first / EOS last when asked (the model's add_bos_token / add_eos_token by default).
 *
 * Decoding maps each GPT-2 character back to its byte; control tokens give nothing unless asked for;
 * `decode` applies llama.cpp's `clean_spaces` rules where the pre-tokenizer has them (" ." → "." …).
 */

import { EngineError } from '../../core/errors.ts';
import { VocabTokenizer } from './base.ts';
import { type PreTokenizerSpec, preTokenizerFor, splitWords } from './bpe-pre.ts';
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
  wellFormed,
} from './common.ts';
import { BYTE_TO_CHAR, CHAR_TO_BYTE, codePoints } from './unicode.ts';

/** What a BPE tokenizer is built from (the GGUF `tokenizer.ggml.*` keys, already parsed). */
export interface BpeVocab {
  /** Token texts in GPT-2's byte-level alphabet ('Ġthe'); special tokens as written ('<|eot_id|>'). */
  tokens: readonly string[];
  /** GGUF token types; NORMAL when absent. */
  tokenTypes?: ArrayLike<number>;
  /** Merges, 'left right', highest priority first. */
  merges: readonly string[];
  /** `tokenizer.ggml.pre`; absent or '' = 'default'. */
  pre?: string;
  /** null = none; undefined = llama.cpp's BPE default (11, when the vocabulary has it). */
  bosId?: number | null;
  eosId?: number | null;
  eotId?: number | null;
  eomId?: number | null;
  unkId?: number | null;
  /** Default: the pre-tokenizer's (true for Llama 3's, else false). */
  addBos?: boolean;
  /** Default false. */
  addEos?: boolean;
  /** `tokenizer.chat_template`; default none. */
  chatTemplate?: string | null;
  /** Remove the first token's leading space when decoding; default false for BPE. */
  addSpacePrefix?: boolean;
}

/** Token texts that llama.cpp takes for FIM pad/repo/separator tokens, which are also end of generation. */
const FIM_EOG_TEXTS: readonly (readonly string[])[] = [
  ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'],
  ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'],
  ['<|file_sep|>'],
];
/** Other FIM texts llama.cpp forces to control type. */
const FIM_OTHER_TEXTS: readonly (readonly string[])[] = [
  [
    '<|fim_prefix|>',
    '<fim-prefix>',
    '<fim_prefix>',
    '<｜fim▁begin｜>',
    '<PRE>',
    '▁<PRE>',
    '<|code_prefix|>',
    '<|prefix|>',
  ],
  [
    '<|fim_suffix|>',
    '<fim-suffix>',
    '<fim_suffix>',
    '<｜fim▁hole｜>',
    '<SUF>',
    '▁<SUF>',
    '<|code_suffix|>',
    '<|suffix|>',
  ],
  [
    '<|fim_middle|>',
    '<fim-middle>',
    '<fim_middle>',
    '<｜fim▁end｜>',
    '<MID>',
    '▁<MID>',
    '<|code_middle|>',
    '<|middle|>',
  ],
];

// Parsed vocabularies and merge tables, shared by tokenizers built from the same arrays (the metadata of one
// file, or tests that vary only the pre-tokenizer).
const textIndexCache = new WeakMap<readonly string[], { texts: string[]; textToId: Map<string, number> }>();
const rankCache = new WeakMap<readonly string[], Map<string, number>>();

/** Token texts (empty ones renamed `[EMPTY_i]`, as llama.cpp does) and text → id (a later duplicate wins). */
function textIndex(tokens: readonly string[]): { texts: string[]; textToId: Map<string, number> } {
  let e = textIndexCache.get(tokens);
  if (!e) {
    const texts: string[] = new Array(tokens.length);
    const textToId = new Map<string, number>();
    for (let i = 0; i < tokens.length; i++) {
      const text = tokens[i] === '' ? `[EMPTY_${i}]` : tokens[i];
      texts[i] = text;
      textToId.set(text, i);
    }
    e = { texts, textToId };
    textIndexCache.set(tokens, e);
  }
  return e;
}

/** Merge string → rank, the first occurrence winning (llama.cpp's `bpe_ranks.emplace`). */
function mergeRanks(merges: readonly string[]): Map<string, number> {
  let ranks = rankCache.get(merges);
  if (!ranks) {
    ranks = new Map();
    for (let i = 0; i < merges.length; i++) {
      const word = merges[i];
      // llama.cpp splits at the first space after the first character; a merge without one becomes the
      // pair ("", ""), which no symbol pair can match.
      if (word.indexOf(' ', 1) < 0) continue;
      if (!ranks.has(word)) ranks.set(word, i);
    }
    rankCache.set(merges, ranks);
  }
  return ranks;
}

/** A pending merge (llama.cpp's `llm_bigram_bpe`). */
interface Bigram {
  left: number;
  right: number;
  rank: number;
  text: string;
}

/** llama.cpp's comparator: true when `a` comes out after `b` (higher rank, or further right on ties). */
function bigramAfter(a: Bigram, b: Bigram): boolean {
  return a.rank > b.rank || (a.rank === b.rank && a.left > b.left);
}

/** Byte-level BPE tokenizer with llama.cpp's exact behaviour. */
export class BpeTokenizer extends VocabTokenizer {
  readonly model = 'gpt2';
  /** The pre-tokenizer `tokenizer.ggml.pre` selects. */
  readonly pre: PreTokenizerSpec;
  /** The `tokenizer.ggml.pre` value ('default' when absent). */
  readonly preName: string;

  /** 'left right' → merge rank (the first occurrence wins, as llama.cpp's map emplace). */
  private readonly ranks: ReadonlyMap<string, number>;

  constructor(vocab: BpeVocab) {
    const n = vocab.tokens.length;
    if (n === 0) throw new EngineError('gguf_invalid', 'the tokenizer vocabulary is empty');
    if (vocab.tokenTypes && vocab.tokenTypes.length < n) {
      throw new EngineError(
        'gguf_invalid',
        `tokenizer has ${vocab.tokenTypes.length} token types for ${n} tokens`,
      );
    }
    const pre = preTokenizerFor(vocab.pre);
    const { texts, textToId } = textIndex(vocab.tokens);
    const attrs = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      attrs[i] = vocab.tokenTypes ? attrOfType(Number(vocab.tokenTypes[i])) : TokenAttr.NORMAL;
    }

    // Special ids: llama.cpp's BPE defaults (BOS = EOS = 11) unless the GGUF names them.
    // llama.cpp: a default out of the vocabulary is none; a GGUF id out of the vocabulary keeps the default.
    const pick = (id: number | null | undefined, dflt: number | null): number | null => {
      const d = dflt !== null && dflt < n ? dflt : null;
      if (id === undefined || id === null) return d;
      return id < n ? id : d;
    };
    const eosId = pick(vocab.eosId, 11);
    let eot = pick(vocab.eotId, null);
    let eomId = pick(vocab.eomId, null);
    const eogIds = new Set<number>();

    // Text-based detection, as llama.cpp: EOT (when not given), FIM tokens, then the EOG list.
    const forceControl = (id: number) => {
      attrs[id] |= TokenAttr.CONTROL;
    };
    // llama.cpp takes the first match in its (unordered) vocabulary map; we take the first text listed.
    const firstOf = (cands: readonly string[]): number | undefined => {
      for (const t of cands) {
        const id = textToId.get(t);
        if (id !== undefined) return id;
      }
      return undefined;
    };
    if (eot === null) {
      const id = firstOf(EOT_TEXTS);
      if (id !== undefined) {
        eot = id;
        forceControl(id);
      }
    }
    if (eomId === null) {
      const id = textToId.get('<|eom_id|>');
      if (id !== undefined) {
        eomId = id;
        forceControl(id);
      }
    }
    for (const cands of FIM_OTHER_TEXTS) {
      const id = firstOf(cands);
      if (id !== undefined) forceControl(id);
    }
    for (const cands of FIM_EOG_TEXTS) {
      const id = firstOf(cands);
      if (id === undefined) continue;
      forceControl(id);
      eogIds.add(id);
    }
    for (const text of EOG_TOKEN_TEXTS) {
      const id = textToId.get(text);
      if (id === undefined) continue;
      eogIds.add(id);
      forceControl(id);
    }
    // gpt-oss: these always render.
    for (const text of ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>']) {
      const id = textToId.get(text);
      if (id !== undefined) attrs[id] = TokenAttr.USER_DEFINED;
    }
    for (const id of [eosId, eot, eomId]) if (id !== null) eogIds.add(id);
    // o200k_harmony / solar-open: <|end|> is not end of generation there.
    const has = (t: string) => {
      const id = textToId.get(t);
      return id !== undefined && eogIds.has(id);
    };
    const endId = textToId.get('<|end|>');
    if (
      endId !== undefined &&
      eogIds.has(endId) &&
      ((has('<|return|>') && (has('<|call|>') || has('<|calls|>'))) ||
        ((has('<|call|>') || has('<|calls|>')) && has('<|flush|>')))
    ) {
      eogIds.delete(endId);
      attrs[endId] = TokenAttr.USER_DEFINED;
    }

    super({
      texts,
      attrs,
      textToId,
      bosId: pick(vocab.bosId, pre.noDefaultBos ? null : 11),
      eosId,
      unkId: pick(vocab.unkId, null),
      eotId: eot,
      eomId,
      addBos: vocab.addBos ?? pre.addBos,
      addEos: vocab.addEos ?? false,
      chatTemplate: vocab.chatTemplate ?? null,
      addSpacePrefix: vocab.addSpacePrefix ?? false,
      eogIds,
    });
    this.pre = pre;
    this.preName = vocab.pre === undefined || vocab.pre === '' ? 'default' : vocab.pre;
    this.ranks = mergeRanks(vocab.merges);
  }

  /**
   * Builds the tokenizer from GGUF metadata (`tokenizer.ggml.*`).
   * @throws EngineError('unsupported_model') when `tokenizer.ggml.model` is not 'gpt2' or the
   *   pre-tokenizer is unknown; EngineError('gguf_invalid') when the tokens or merges are missing or malformed.
   */
  static fromGgufMetadata(metadata: Record<string, unknown>): BpeTokenizer {
    const common = readCommonVocab(metadata, 'gpt2', 'BPE');
    const merges = metadata['tokenizer.ggml.merges'];
    if (!isArrayLikeOf(merges, 'string')) {
      throw new EngineError('gguf_invalid', 'tokenizer.ggml.merges is missing or not an array of strings');
    }
    const pre = metadata['tokenizer.ggml.pre'];
    if (pre !== undefined && typeof pre !== 'string') {
      throw new EngineError('gguf_invalid', 'tokenizer.ggml.pre is not a string');
    }
    return new BpeTokenizer({ ...common, merges: merges as string[], pre });
  }

  /** The words (as text) the pre-tokenizer cuts `text` into, before byte encoding and merges. */
  preTokenize(text: string): string[] {
    const s = wellFormed(text);
    const cpts = codePoints(s);
    const words: string[] = [];
    let at = 0;
    for (const len of splitWords(cpts, this.pre.regexes)) {
      let w = '';
      for (let i = at; i < at + len; i++) w += String.fromCodePoint(cpts[i]);
      words.push(w);
      at += len;
    }
    return words;
  }

  protected encodeFragments(fragments: readonly Fragment[], out: number[]): void {
    for (const f of fragments) {
      if ('token' in f) out.push(f.token);
      else this.tokenizeFragment(f.text, out);
    }
  }

  protected override finishDecode(bytes: Uint8Array): Uint8Array {
    return this.pre.cleanSpaces ? cleanSpaces(bytes) : bytes;
  }

  /**
   * A NORMAL BPE token covers the input characters its bytes spell: its decoded text's UTF-16 length
   * (a character split between tokens is one U+FFFD in each part that holds its first or last byte, and
   * a split astral character's two code units go one to each of those parts).
   */
  protected override normalPieceChars(id: number): number {
    return BYTE_TEXT_DECODER.decode(decodeByteLevel(this.texts[id])).length;
  }

  /** llama.cpp's `token_to_piece(id, special = true)` for BPE. */
  protected computePiece(id: number): Uint8Array {
    const attr = this.attrs[id];
    const text = this.texts[id];
    if (attr & (TokenAttr.UNKNOWN | TokenAttr.CONTROL | TokenAttr.USER_DEFINED)) return utf8(text);
    if (attr & TokenAttr.NORMAL) return decodeByteLevel(text);
    if (attr & TokenAttr.BYTE) return Uint8Array.of(Number.parseInt(text.slice(3, 5), 16) & 0xff);
    return new Uint8Array(0);
  }

  private rank(left: string, right: string): number {
    // llama.cpp keys ranks by the (left, right) pair; a left with a space after its first character can
    // never be a merge's left side.
    if (left.indexOf(' ', 1) >= 0) return -1;
    return this.ranks.get(`${left} ${right}`) ?? -1;
  }

  /** `llm_tokenizer_bpe_session::tokenize` on one text fragment. */
  private tokenizeFragment(text: string, out: number[]): void {
    const cpts = codePoints(text);
    let at = 0;
    for (const len of splitWords(cpts, this.pre.regexes)) {
      // GPT-2 byte encoding of the word's UTF-8.
      let word = '';
      for (let i = at; i < at + len; i++) word += byteLevelChars(cpts[i]);
      at += len;
      if (this.pre.ignoreMerges) {
        const id = this.textToId.get(word);
        if (id !== undefined) {
          out.push(id);
          continue;
        }
      }
      this.mergeWord(word, out);
    }
  }

  /** The BPE merge loop over one encoded word (every character of it is one code unit: U+0021…U+0143). */
  private mergeWord(word: string, out: number[]): void {
    const count = word.length;
    if (count === 0) return;
    // Symbols as a linked list: start offset and length in the word.
    const start = new Int32Array(count);
    const len = new Int32Array(count);
    const prev = new Int32Array(count);
    const next = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      start[i] = i;
      len[i] = 1;
      prev[i] = i - 1;
      next[i] = i + 1 < count ? i + 1 : -1;
    }
    const queue = new PriorityQueue<Bigram>(bigramAfter);
    const sym = (i: number) => word.slice(start[i], start[i] + len[i]);
    const addBigram = (left: number, right: number) => {
      if (left === -1 || right === -1) return;
      const l = sym(left);
      const r = sym(right);
      const rank = this.rank(l, r);
      if (rank < 0) return;
      queue.push({ left, right, rank, text: l + r });
    };
    for (let i = 1; i < count; i++) addBigram(i - 1, i);
    while (queue.size > 0) {
      const b = queue.pop();
      if (len[b.left] === 0 || len[b.right] === 0) continue;
      if (sym(b.left) + sym(b.right) !== b.text) continue; // outdated
      len[b.left] += len[b.right];
      len[b.right] = 0;
      next[b.left] = next[b.right];
      if (next[b.right] >= 0) prev[next[b.right]] = b.left;
      addBigram(prev[b.left], b.left);
      addBigram(b.left, next[b.left]);
    }
    for (let i = 0; i !== -1; i = next[i]) {
      if (len[i] === 0) continue;
      const s = sym(i);
      const id = this.textToId.get(s);
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      // llama.cpp looks up each UTF-8 byte of the symbol as a one-byte token text; only ASCII can match.
      for (const byte of utf8(s)) {
        if (byte >= 0x80) continue;
        const t = this.textToId.get(String.fromCharCode(byte));
        if (t !== undefined) out.push(t);
      }
    }
  }
}

/** GPT-2 characters of the UTF-8 bytes of code point `c`. */
function byteLevelChars(c: number): string {
  const B = BYTE_TO_CHAR;
  if (c < 0x80) return B[c];
  if (c < 0x800) return B[0xc0 | (c >> 6)] + B[0x80 | (c & 0x3f)];
  if (c < 0x10000) return B[0xe0 | (c >> 12)] + B[0x80 | ((c >> 6) & 0x3f)] + B[0x80 | (c & 0x3f)];
  return (
    B[0xf0 | (c >> 18)] + B[0x80 | ((c >> 12) & 0x3f)] + B[0x80 | ((c >> 6) & 0x3f)] + B[0x80 | (c & 0x3f)]
  );
}

const BYTE_TEXT_DECODER = new TextDecoder('utf-8', { ignoreBOM: true });

/** llama.cpp's `llama_decode_text`: GPT-2 characters back to bytes (unknown characters spelled out). */
function decodeByteLevel(text: string): Uint8Array {
  const bytes: number[] = [];
  for (const ch of text) {
    const b = ch.length === 1 ? CHAR_TO_BYTE.get(ch.charCodeAt(0)) : undefined;
    if (b !== undefined) {
      bytes.push(b);
      continue;
    }
    const hex = Array.from(utf8(ch), (x) => x.toString(16).padStart(2, '0')).join('');
    for (const x of utf8(`[UNK_BYTE_0x${hex}${text}]`)) bytes.push(x);
  }
  return Uint8Array.from(bytes);
}

const SP = 0x20;
const APOSTROPHE = 0x27;

/** llama.cpp's `clean_spaces` passes in `llama_detokenize`, on bytes, in place as llama.cpp does them. */
function cleanSpaces(input: Uint8Array): Uint8Array {
  const text = input.slice();
  let total = text.length;
  // first pass: " ?", " !", " .", " ,"
  const total1 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < total1; ++i) {
    const x = text[i];
    if (text[i - 1] === SP && (x === 0x3f || x === 0x21 || x === 0x2e || x === 0x2c)) total--;
    text[total++] = x;
  }
  // second pass: strip a single apostrophe between spaces
  const total2 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < total2; ++i) {
    const x = text[i];
    if (x === APOSTROPHE && i + 1 < total2 && text[i - 1] === SP && text[i + 1] === SP) {
      total--;
      text[++i] = 0;
    }
    text[total++] = x;
  }
  // third pass: apostrophe contractions " 's", " 'm", " 're", " 've"
  const total3 = total;
  total = total ? 1 : 0;
  for (let i = 1; i < total3; ++i) {
    const x = text[i];
    if (text[i - 1] === SP && x === APOSTROPHE && i + 1 < total3) {
      const x1 = text[i + 1];
      if (x1 === 0x74 || x1 === 0x64) {
        // " 't", " 'd": kept
      } else if (x1 === 0x73 || x1 === 0x6d) {
        total--;
      } else if (i + 2 < total3) {
        const x2 = text[i + 2];
        if ((x1 === 0x72 && x2 === 0x65) || (x1 === 0x76 && x2 === 0x65)) total--;
      }
    }
    text[total++] = x;
  }
  return text.slice(0, total);
}
