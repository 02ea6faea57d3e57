/**
 * Pieces shared by the SPM and BPE tokenizers: llama.cpp's token types and attributes, its
 * end-of-generation texts, UTF-8 helpers, readers for GGUF tokenizer metadata, the merge priority queue,
 * the special-token partition and piece helpers.
 */

import { EngineError } from '../../core/errors.ts';

/** Token attributes, as llama.cpp's `llama_token_attr` bit flags. */
export const TokenAttr = {
  UNDEFINED: 0,
  UNKNOWN: 1 << 0,
  UNUSED: 1 << 1,
  NORMAL: 1 << 2,
  CONTROL: 1 << 3,
  USER_DEFINED: 1 << 4,
  BYTE: 1 << 5,
} as const;

/** GGUF `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`). */
export const TokenType = {
  UNDEFINED: 0,
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/**
 * llama.cpp's EOT auto-detection texts, used when the GGUF names no EOT token, for every vocabulary type
 * (llama-vocab.cpp `llama_vocab::impl::load`, "find EOT token"; the token is forced to control type).
 */
export const EOT_TEXTS: readonly string[] = [
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '<|end_of_text|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '<｜end▁of▁sentence｜>',
  '<end_of_utterance>',
];

/** Token texts llama.cpp treats as end of generation (and forces to control type), whatever the model. */
export const EOG_TOKEN_TEXTS: readonly string[] = [
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|return|>',
  '<|call|>',
  '<|flush|>',
  '<|calls|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '[EOS]',
  '<|end_of_text|>',
  '<end_of_utterance>',
  '<eos>',
  '<turn|>',
  '<|tool_response>',
  '<｜end▁of▁sentence｜>',
  '[e~[',
];

/** llama.cpp's token attribute for a GGUF token type. */
export function attrOfType(type: number): number {
  switch (type) {
    case TokenType.UNKNOWN:
      return TokenAttr.UNKNOWN;
    case TokenType.UNUSED:
      return TokenAttr.UNUSED;
    case TokenType.NORMAL:
      return TokenAttr.NORMAL;
    case TokenType.CONTROL:
      return TokenAttr.CONTROL;
    case TokenType.USER_DEFINED:
      return TokenAttr.USER_DEFINED;
    case TokenType.BYTE:
      return TokenAttr.BYTE;
    default:
      return TokenAttr.UNDEFINED;
  }
}

const encoder = new TextEncoder();

/** UTF-8 bytes of `s` (lone surrogates become U+FFFD, as V8 and TextEncoder both do). */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Replaces lone UTF-16 surrogates with U+FFFD, so string offsets map one-to-one onto UTF-8. */
export function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** Reads a non-negative integer from a GGUF value (number or bigint); undefined when absent or not one. */
export function readUint(v: unknown): number | undefined {
  if (typeof v === 'bigint') return v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  return undefined;
}

/** Reads a boolean from a GGUF value (bool or integer); undefined when absent or not one. */
export function readBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return Number(v) !== 0;
  return undefined;
}

/** True for an array (or typed array, for numbers) whose items are all of `type`. */
export function isArrayLikeOf(v: unknown, type: 'number' | 'string'): boolean {
  if (ArrayBuffer.isView(v)) return type === 'number' && !(v instanceof DataView);
  return (
    Array.isArray(v) && v.every((x) => typeof x === type || (type === 'number' && typeof x === 'bigint'))
  );
}

/** Concatenates byte arrays. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * A binary heap (std::priority_queue): `after(a, b)` is true when `a` comes out after `b`, as the
 * comparators of llama.cpp's `llm_bigram_spm` and `llm_bigram_bpe`.
 */
export class PriorityQueue<T> {
  private readonly heap: T[] = [];
  constructor(private readonly after: (a: T, b: T) => boolean) {}
  get size(): number {
    return this.heap.length;
  }
  push(x: T): void {
    const h = this.heap;
    h.push(x);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.after(h[parent], h[i])) break;
      [h[parent], h[i]] = [h[i], h[parent]];
      i = parent;
    }
  }
  pop(): T {
    const h = this.heap;
    const top = h[0];
    const last = h.pop() as T;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.after(h[m], h[l])) m = l;
        if (r < h.length && this.after(h[m], h[r])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
}

/** A piece of text to tokenize, or a special token found in it. */
export type Fragment = { text: string } | { token: number };

/** Control, user-defined and unknown tokens, longest text first (llama.cpp's `cache_special_tokens`). */
export function specialTokenIds(texts: readonly string[], attrs: Uint16Array): number[] {
  const mask = TokenAttr.CONTROL | TokenAttr.USER_DEFINED | TokenAttr.UNKNOWN;
  const special: { id: number; len: number }[] = [];
  for (let id = 0; id < texts.length; id++) {
    if (attrs[id] & mask) special.push({ id, len: utf8(texts[id]).length });
  }
  special.sort((a, b) => b.len - a.len || a.id - b.id);
  return special.map((s) => s.id);
}

/**
 * How many characters of `text` (UTF-16 code units) lie in `spans` before each position: entry i counts
 * [0, i), so a range [a, b) holds one of the spans' characters iff `before[b] - before[a] > 0`.
 */
function spanCounts(length: number, spans: readonly (readonly [number, number])[]): Int32Array {
  const mark = new Uint8Array(length);
  for (const [a, b] of spans) mark.fill(1, Math.max(0, a), Math.min(length, b));
  const before = new Int32Array(length + 1);
  for (let i = 0; i < length; i++) before[i + 1] = before[i] + mark[i];
  return before;
}

/**
 * llama.cpp's `tokenizer_st_partition`: splits the text at special-token texts (`specialIds` from
 * {@link specialTokenIds}); control and unknown tokens only when `parseSpecial`, and then nowhere that
 * touches one of `plainSpans` ([start, end) in UTF-16 code units: text a chat message's content brought,
 * which stays text; see EncodeOptions.plainSpans). User-defined tokens match everywhere, as in llama.cpp.
 */
export function partitionSpecial(
  text: string,
  parseSpecial: boolean,
  specialIds: readonly number[],
  texts: readonly string[],
  attrs: Uint16Array,
  plainSpans: readonly (readonly [number, number])[] = [],
): Fragment[] {
  if (text === '') return [];
  const plain = parseSpecial && plainSpans.length > 0 ? spanCounts(text.length, plainSpans) : undefined;
  // Text fragments carry their offset in `text`, for the plain spans.
  let fragments: ({ text: string; at: number } | { token: number })[] = [{ text, at: 0 }];
  for (const id of specialIds) {
    const gated = (attrs[id] & (TokenAttr.CONTROL | TokenAttr.UNKNOWN)) !== 0;
    if (!parseSpecial && gated) continue;
    const needle = texts[id];
    const next: typeof fragments = [];
    for (const f of fragments) {
      if (!('text' in f) || !f.text.includes(needle)) {
        next.push(f);
        continue;
      }
      let from = 0;
      let search = 0;
      for (;;) {
        const at = f.text.indexOf(needle, search);
        if (at < 0) break;
        if (plain && gated && plain[f.at + at + needle.length] - plain[f.at + at] > 0) {
          search = at + 1; // content text: not this token here
          continue;
        }
        if (at > from) next.push({ text: f.text.slice(from, at), at: f.at + from });
        next.push({ token: id });
        from = at + needle.length;
        search = from;
      }
      if (from < f.text.length) next.push({ text: f.text.slice(from), at: f.at + from });
    }
    fragments = next;
  }
  return fragments.map((f) => ('text' in f ? { text: f.text } : f));
}

/** @throws EngineError('invalid_argument') unless `id` is a token id of a vocabulary of `nVocab`. */
export function checkTokenId(id: number, nVocab: number): void {
  if (!Number.isInteger(id) || id < 0 || id >= nVocab) {
    throw new EngineError('invalid_argument', `token id ${id} is outside the vocabulary [0, ${nVocab})`);
  }
}

/** A rendered piece with up to `lstrip` leading spaces dropped (a copy). */
export function lstripPiece(piece: Uint8Array, lstrip: number): Uint8Array {
  let s = 0;
  while (s < lstrip && s < piece.length && piece[s] === 0x20) s++;
  return piece.slice(s);
}

/**
 * The `tokenizer.ggml.*` fields both tokenizers read, checked, for the tokenizer `name` of
 * `tokenizer.ggml.model` = `model` ("llama": SentencePiece, "gpt2": BPE; llama.cpp's llama_vocab::load).
 * @throws EngineError('unsupported_model') when the file names another tokenizer model,
 *   'gguf_invalid' when the token list or the token types are malformed.
 */
export function readCommonVocab(metadata: Record<string, unknown>, model: 'llama' | 'gpt2', name: string) {
  const has = metadata['tokenizer.ggml.model'];
  if (has !== model) {
    throw new EngineError(
      'unsupported_model',
      `the ${name} tokenizer needs tokenizer.ggml.model = "${model}", this model has ${JSON.stringify(has)}`,
    );
  }
  const tokens = metadata['tokenizer.ggml.tokens'];
  if (!isArrayLikeOf(tokens, 'string')) {
    throw new EngineError('gguf_invalid', 'tokenizer.ggml.tokens is missing or not an array of strings');
  }
  const types = metadata['tokenizer.ggml.token_type'];
  if (types !== undefined && !isArrayLikeOf(types, 'number')) {
    throw new EngineError('gguf_invalid', 'tokenizer.ggml.token_type is not an array of integers');
  }
  const template = metadata['tokenizer.chat_template'];
  const id = (key: string): number | null | undefined => {
    const v = metadata[`tokenizer.ggml.${key}`];
    if (v === undefined) return undefined;
    return readUint(v) ?? null;
  };
  return {
    tokens: tokens as string[],
    tokenTypes: types as ArrayLike<number> | undefined,
    bosId: id('bos_token_id'),
    eosId: id('eos_token_id'),
    eotId: id('eot_token_id'),
    eomId: id('eom_token_id'),
    unkId: id('unknown_token_id'),
    addBos: readBool(metadata['tokenizer.ggml.add_bos_token']),
    addEos: readBool(metadata['tokenizer.ggml.add_eos_token']),
    chatTemplate: typeof template === 'string' ? template : null,
    addSpacePrefix: readBool(metadata['tokenizer.ggml.add_space_prefix']),
  };
}
