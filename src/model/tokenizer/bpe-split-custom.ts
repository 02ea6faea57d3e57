/**
 * The BPE pre-tokenizer expressions that llama.cpp does not hand to `std::regex` but splits with its own
 * code (`unicode_regex_split_custom`: GPT-2, Llama 3, Qwen 2, Qwen 3.5, newlines), and that code, ported
 * line by line. The expressions are exported because bpe-pre.ts lists them among each pre type's regexes;
 * {@link CUSTOM} maps each to its splitter, which bpe-pre.ts runs in place of the expression. They are apart
 * from bpe-pre.ts because they share nothing with the `std::regex` emulation there (the collapsed text,
 * the category classes) but llama.cpp's code-point categories (unicode.ts).
 */
import { cptFlags, Flag } from './unicode.ts';

// The expressions, as llama.cpp writes them (src/llama-vocab.cpp, llm_tokenizer_bpe).
/** Llama 3 (llama3, dbrx, smaug, chatglm4): `unicode_regex_split_custom_llama3`. */
export const RE_LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** Qwen 2 (one digit per word): `unicode_regex_split_custom_qwen2`. */
export const RE_QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** Qwen 3.5 (letter runs take combining marks): `unicode_regex_split_custom_qwen35`. */
export const RE_QWEN35 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** GPT-2: `unicode_regex_split_custom_gpt2`. */
export const RE_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
/** Runs of newlines and of anything else: `unicode_regex_split_custom_newlines`. */
export const RE_NEWLINES = '[^\\n]+|[\\n]+';

const OUT_OF_RANGE = 0xffffffff;
const APOS = 0x27;
const SPACE = 0x20;
const CR = 0x0d;
const LF = 0x0a;
const S = 0x73;
const T = 0x74;
const M = 0x6d;
const D = 0x64;
const R = 0x72;
const E = 0x65;
const V = 0x76;
const L = 0x6c;

/** `unicode_tolower` where it matters (the contraction letters): ASCII upper case only. */
function lowerAscii(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 32 : c;
}

/** Cuts each segment (`offsets`: lengths in code points) of `cpts` into words; returns their lengths. */
export type Splitter = (cpts: Uint32Array, offsets: readonly number[]) => number[];

/**
 * Runs `body` once per segment with llama.cpp's helpers: `cpt(p)`/`flags(p)` give OUT_OF_RANGE / 0
 * outside the segment, `add(end)` emits the piece since the last end (when not empty) and returns its
 * length.
 */
function perSegment(
  cpts: Uint32Array,
  offsets: readonly number[],
  body: (
    ini: number,
    end: number,
    cpt: (p: number) => number,
    flags: (p: number) => number,
    add: (e: number) => number,
  ) => void,
): number[] {
  const out: number[] = [];
  let start = 0;
  for (const offset of offsets) {
    const ini = start;
    const end = start + offset;
    start = end;
    const cpt = (p: number) => (p >= ini && p < end ? cpts[p] : OUT_OF_RANGE);
    const flags = (p: number) => (p >= ini && p < end ? cptFlags(cpts[p]) : 0);
    let prevEnd = ini;
    const add = (e: number): number => {
      const len = e - prevEnd;
      if (len > 0) out.push(len);
      prevEnd = e;
      return len;
    };
    body(ini, end, cpt, flags, add);
  }
  return out;
}

/** `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `pos`: the length matched, or 0. */
function contraction(pos: number, end: number, cpt: (p: number) => number, caseless: boolean): number {
  if (cpt(pos) !== APOS || pos + 1 >= end) return 0;
  const lo = caseless ? lowerAscii : (c: number) => c;
  const n1 = lo(cpt(pos + 1));
  if (n1 === S || n1 === T || n1 === M || n1 === D) return 2;
  if (pos + 2 < end) {
    const n2 = lo(cpt(pos + 2));
    if ((n1 === R && n2 === E) || (n1 === V && n2 === E) || (n1 === L && n2 === L)) return 3;
  }
  return 0;
}

const WS = Flag.WHITESPACE;
const LETTER = Flag.LETTER;
const NUMBER = Flag.NUMBER;
const MARK = Flag.ACCENT_MARK;

/** llama.cpp's `unicode_regex_split_custom_gpt2`. */
const splitGpt2: Splitter = (cpts, offsets) =>
  perSegment(cpts, offsets, (ini, end, cpt, flags, add) => {
    for (let pos = ini; pos < end; ) {
      const c = cpt(pos);
      const f = flags(pos);
      const k = contraction(pos, end, cpt, false);
      if (k > 0) {
        pos += add(pos + k);
        continue;
      }
      let f2 = c === SPACE ? flags(pos + 1) : f;
      if (f2 & LETTER) {
        pos += c === SPACE ? 1 : 0;
        while (f2 & LETTER) f2 = flags(++pos);
        add(pos);
        continue;
      }
      if (f2 & NUMBER) {
        pos += c === SPACE ? 1 : 0;
        while (f2 & NUMBER) f2 = flags(++pos);
        add(pos);
        continue;
      }
      if (!(f2 & (WS | LETTER | NUMBER)) && f2) {
        pos += c === SPACE ? 1 : 0;
        while (!(f2 & (WS | LETTER | NUMBER)) && f2) f2 = flags(++pos);
        add(pos);
        continue;
      }
      let nws = 0;
      while (flags(pos + nws) & WS) nws++;
      if (nws > 1 && cpt(pos + nws) !== OUT_OF_RANGE) {
        pos += nws - 1;
        add(pos);
        continue;
      }
      if (nws > 0) {
        pos += nws;
        add(pos);
        continue;
      }
      add(++pos);
    }
  });

/**
 * llama.cpp's `unicode_regex_split_custom_llama3` (`digits` = 3), `_qwen2` (`digits` = 1) and `_qwen35`
 * (`marks`: letter runs also take combining marks).
 */
function makeLlama3Like(digits: 1 | 3, marks: boolean): Splitter {
  const letterish = marks ? LETTER | MARK : LETTER;
  return (cpts, offsets) =>
    perSegment(cpts, offsets, (ini, end, cpt, flags, add) => {
      for (let pos = ini; pos < end; ) {
        const c = cpt(pos);
        const f = flags(pos);
        const k = contraction(pos, end, cpt, true);
        if (k > 0) {
          pos += add(pos + k);
          continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if (!(c === CR || c === LF || f & NUMBER)) {
          if (f & letterish || flags(pos + 1) & letterish) {
            pos++;
            while (flags(pos) & letterish) pos++;
            add(pos);
            continue;
          }
        }
        // \p{N}{1,3} or \p{N}
        if (f & NUMBER) {
          if (digits === 3) {
            let first = pos;
            while (flags(pos) & NUMBER) {
              if (++pos - first >= 3) {
                add(pos);
                first = pos;
              }
            }
            add(pos);
          } else {
            pos++;
            add(pos);
          }
          continue;
        }
        // <space>?[^\s\p{L}\p{N}]+[\r\n]*
        const other = WS | letterish | NUMBER;
        let f2 = c === SPACE ? flags(pos + 1) : f;
        if (!(f2 & other) && f) {
          pos += c === SPACE ? 1 : 0;
          while (!(f2 & other) && f2) f2 = flags(++pos);
          let c2 = cpt(pos);
          while (c2 === CR || c2 === LF) c2 = cpt(++pos);
          add(pos);
          continue;
        }
        let nws = 0;
        let lastEndRN = 0;
        while (flags(pos + nws) & WS) {
          const c2 = cpt(pos + nws);
          if (c2 === CR || c2 === LF) lastEndRN = pos + nws + 1;
          nws++;
        }
        // \s*[\r\n]+
        if (lastEndRN > 0) {
          pos = lastEndRN;
          add(pos);
          continue;
        }
        // \s+(?!\S)
        if (nws > 1 && cpt(pos + nws) !== OUT_OF_RANGE) {
          pos += nws - 1;
          add(pos);
          continue;
        }
        // \s+
        if (nws > 0) {
          pos += nws;
          add(pos);
          continue;
        }
        add(++pos);
      }
    });
}

/** llama.cpp's `unicode_regex_split_custom_newlines`: runs of '\n' and runs of anything else. */
const splitNewlines: Splitter = (cpts, offsets) => {
  const out: number[] = [];
  let start = 0;
  for (const offset of offsets) {
    const end = start + offset;
    let pos = start;
    while (pos < end) {
      const nl = cpts[pos] === LF;
      const runStart = pos;
      while (pos < end && (cpts[pos] === LF) === nl) pos++;
      out.push(pos - runStart);
    }
    start = end;
  }
  return out;
};

/** The expressions llama.cpp handles with its own code (`unicode_regex_split_custom`). */
export const CUSTOM: ReadonlyMap<string, Splitter> = new Map([
  [RE_GPT2, splitGpt2],
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    makeLlama3Like(3, false),
  ],
  [RE_LLAMA3, makeLlama3Like(3, false)],
  [RE_QWEN2, makeLlama3Like(1, false)],
  [RE_QWEN35, makeLlama3Like(1, true)],
  [RE_NEWLINES, splitNewlines],
]);
