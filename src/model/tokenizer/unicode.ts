/**
 * Code point classification and the GPT-2 byte↔character mapping, as llama.cpp's `unicode.cpp` does them:
 * categories and whitespace come from llama.cpp's own tables (`unicode-data.ts`), not from the JavaScript
 * engine's `\p{…}` support, whose Unicode version differs between engines and from llama.cpp's.
 */
import { CATEGORY_RANGES, WHITESPACE } from './unicode-data.ts';

/** llama.cpp's `unicode_cpt_flags` bits. */
export const Flag = {
  UNDEFINED: 0x0001,
  NUMBER: 0x0002,
  LETTER: 0x0004,
  SEPARATOR: 0x0008,
  ACCENT_MARK: 0x0010,
  PUNCTUATION: 0x0020,
  SYMBOL: 0x0040,
  CONTROL: 0x0080,
  MASK_CATEGORIES: 0x00ff,
  WHITESPACE: 0x0100,
} as const;

const MAX_CODEPOINTS = 0x110000;
let table: Uint16Array | undefined;

/** Flags of every code point (built on first use: 2.2 MB). */
function flagTable(): Uint16Array {
  if (table) return table;
  const t = new Uint16Array(MAX_CODEPOINTS);
  const entries = CATEGORY_RANGES.split(',');
  let start = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    start += Number.parseInt(e.slice(0, -1), 36);
    const flag = 1 << Number(e[e.length - 1]);
    const nextEntry = entries[i + 1];
    const end =
      nextEntry === undefined ? MAX_CODEPOINTS : start + Number.parseInt(nextEntry.slice(0, -1), 36);
    t.fill(flag, start, end);
  }
  for (const c of WHITESPACE) t[c] |= Flag.WHITESPACE;
  table = t;
  return t;
}

/** llama.cpp's `unicode_cpt_flags_from_cpt` (as a bit mask; UNDEFINED past U+10FFFF). */
export function cptFlags(cpt: number): number {
  return cpt < MAX_CODEPOINTS ? flagTable()[cpt] : Flag.UNDEFINED;
}

/** The code points of a well-formed string. */
export function codePoints(s: string): Uint32Array {
  const out = new Uint32Array(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out[n++] = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        continue;
      }
    }
    out[n++] = c;
  }
  return out.subarray(0, n);
}

/** GPT-2's byte → character table (llama.cpp's `unicode_byte_to_utf8_map`). */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const map: (string | undefined)[] = new Array(256);
  const keep = (c: number) =>
    (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = keep(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++);
  return map as string[];
})();

/** GPT-2's character → byte table (llama.cpp's `unicode_utf8_to_byte_map`), keyed by char code. */
export const CHAR_TO_BYTE: ReadonlyMap<number, number> = new Map(
  BYTE_TO_CHAR.map((ch, b) => [ch.charCodeAt(0), b] as const),
);
