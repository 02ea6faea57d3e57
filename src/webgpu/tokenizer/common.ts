/**
 * Pieces shared by the tokenizers: llama.cpp's token types and attributes, its end-of-generation texts,
 * UTF-8 helpers and readers for GGUF tokenizer metadata values.
 */

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
