/**
 * BPE pre-tokenizers: the word splitting that llama.cpp's `unicode_regex_split` applies before merges,
 * chosen by `tokenizer.ggml.pre` exactly as `llama_vocab::impl::load` and `llm_tokenizer_bpe` choose it.
 *
 * llama.cpp runs hand-written splitters for its most common expressions (GPT-2, Llama 3, Qwen 2, Qwen 3.5;
 * ported line by line in bpe-split-custom.ts) and `std::regex` for the rest. For those it first
 * "collapses" the text: every code point ≥ 128 becomes one byte naming its category (0xD1 number, 0xD2
 * letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 other, 0x0B whitespace) and each `\p{…}` in the
 * expression becomes a class of that byte plus its ASCII members; an expression without categories runs on
 * the code points, non-ASCII whitespace replaced by 0x0B. `std::regex` uses the ECMAScript grammar, so
 * JavaScript's RegExp runs the same expressions on the same collapsed text. Character categories come from
 * llama.cpp's own tables (unicode.ts), never from the JavaScript engine.
 */
import { EngineError } from '../../core/errors.ts';
import {
  CUSTOM,
  RE_GPT2,
  RE_LLAMA3,
  RE_NEWLINES,
  RE_QWEN2,
  RE_QWEN35,
  type Splitter,
} from './bpe-split-custom.ts';
import { cptFlags, Flag } from './unicode.ts';

/** How llama.cpp tokenizes for one `tokenizer.ggml.pre` value. */
export interface PreTokenizerSpec {
  /** llama.cpp's `LLAMA_VOCAB_PRE_TYPE_*` name (lower case). */
  type: string;
  /** The expressions applied in turn, each splitting the words the previous one made. */
  regexes: readonly string[];
  /** Detokenizer clean-up of spaces before punctuation and contractions (llama.cpp `clean_spaces`). */
  cleanSpaces: boolean;
  /** A whole pre-token that is a vocabulary entry is emitted as is, without merges. */
  ignoreMerges: boolean;
  /** `add_bos` default when the GGUF has no `tokenizer.ggml.add_bos_token` (false when absent). */
  addBos: boolean;
  /** The pre type resets the default BOS id to none (glm4). */
  noDefaultBos: boolean;
}

/** Regex lists per llama.cpp pre type. */
const PRE_TYPE_REGEXES: Record<string, readonly string[]> = {
  llama3: [RE_LLAMA3],
  dbrx: [RE_LLAMA3],
  smaug: [RE_LLAMA3],
  chatglm4: [RE_LLAMA3],
  jais2: [
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
  ],
  deepseek_llm: [
    '[\r\n]',
    // \u escapes: the literal characters would be NFC-normalized by editors (K → K, ΐ → ΐ)
    '\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+',
    '\\s?[!-/:-~！-／：-～‘-‟　-。]+',
    '\\s+$',
    '[一-龥ࠀ-一가-퟿]+',
    '\\p{N}+',
  ],
  deepseek3_llm: [
    '\\p{N}{1,3}',
    '[一-龥぀-ゟ゠-ヿ]+',
    '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+',
  ],
  deepseek_coder: ['[\r\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', '[一-龥ࠀ-一가-퟿]+', '\\p{N}'],
  falcon: [
    '[\\p{P}\\$\\+<=>\\^~\\|`]+',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    '[0-9][0-9][0-9]',
  ],
  starcoder: ['\\p{N}', RE_GPT2],
  gpt2: [RE_GPT2],
  qwen2: [RE_QWEN2],
  qwen35: [RE_QWEN35],
  poro: [' ?[^(\\s|.,!?…。，、।۔،)]+'],
  viking: [' ?[^(\\s|.,!?…。，、।۔،)]+', '\\p{N}'],
  tekken: [
    '[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
  ],
  gpt4o: [
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  bailingmoe: [
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  ],
  seed_coder: [
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  laguna: [RE_NEWLINES, RE_QWEN2],
  exaone_moe: [
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  ],
  minicpm5: [
    '\\p{N}{1,3}',
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  default: [
    '[\\p{P}\\$\\+<=>\\^~\\|]+',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    '\\p{N}+',
    '[0-9][0-9][0-9]',
  ],
};

interface NameEntry {
  type: string;
  cleanSpaces?: boolean;
  ignoreMerges?: boolean;
  addBos?: boolean;
  noDefaultBos?: boolean;
}

/**
 * `tokenizer.ggml.pre` names → llama.cpp pre type and flags (llama_vocab::impl::load). BPE defaults:
 * clean_spaces true, ignore_merges false, add_bos false. Names llama.cpp knows but we do not (custom
 * splitters such as kimi-k2 or superbpe, SPM-style BPE such as gemma4, BERT-style add_sep) are absent.
 */
const PRE_NAMES: Record<string, NameEntry> = {
  default: { type: 'default' },
  llama3: { type: 'llama3', ignoreMerges: true, addBos: true },
  'llama-v3': { type: 'llama3', ignoreMerges: true, addBos: true },
  'llama-bpe': { type: 'llama3', ignoreMerges: true, addBos: true },
  falcon3: { type: 'llama3', ignoreMerges: true, addBos: true },
  'falcon-h1': { type: 'llama3', ignoreMerges: true, addBos: true },
  pixtral: { type: 'llama3', ignoreMerges: true, addBos: true },
  'midm-2.0': { type: 'llama3', ignoreMerges: true, addBos: true },
  lfm2: { type: 'llama3', ignoreMerges: true, addBos: true },
  'jina-v5-nano': { type: 'llama3', ignoreMerges: true, addBos: true },
  minicpm5: { type: 'minicpm5', ignoreMerges: true },
  'deepseek-llm': { type: 'deepseek_llm', cleanSpaces: false },
  'deepseek-coder': { type: 'deepseek_coder', cleanSpaces: false },
  'deepseek-v3': { type: 'deepseek3_llm', cleanSpaces: false },
  falcon: { type: 'falcon' },
  mpt: { type: 'gpt2' },
  starcoder: { type: 'starcoder' },
  'gpt-2': { type: 'gpt2' },
  'phi-2': { type: 'gpt2' },
  'jina-es': { type: 'gpt2' },
  'jina-de': { type: 'gpt2' },
  gigachat: { type: 'gpt2' },
  'jina-v2-es': { type: 'gpt2' },
  'jina-v2-de': { type: 'gpt2' },
  'a.x-4.0': { type: 'gpt2' },
  mellum: { type: 'gpt2' },
  'modern-bert': { type: 'gpt2' },
  'jais-2': { type: 'jais2' },
  refact: { type: 'starcoder' },
  'command-r': { type: 'starcoder', cleanSpaces: false },
  qwen2: { type: 'qwen2', cleanSpaces: false },
  'deepseek-r1-qwen': { type: 'qwen2', cleanSpaces: false },
  kormo: { type: 'qwen2', cleanSpaces: false },
  f2llmv2: { type: 'qwen2', cleanSpaces: false },
  qwen35: { type: 'qwen35', cleanSpaces: false },
  stablelm2: { type: 'qwen2' },
  olmo: { type: 'gpt2' },
  dbrx: { type: 'dbrx' },
  'smaug-bpe': { type: 'smaug' },
  'poro-chat': { type: 'poro', cleanSpaces: false },
  glm4: { type: 'chatglm4', noDefaultBos: true },
  'chatglm-bpe': { type: 'chatglm4', noDefaultBos: true },
  viking: { type: 'viking', cleanSpaces: false },
  jais: { type: 'gpt2' },
  tekken: { type: 'tekken', cleanSpaces: false, ignoreMerges: true, addBos: true },
  smollm: { type: 'starcoder', cleanSpaces: false },
  codeshell: { type: 'starcoder' },
  bloom: { type: 'poro' },
  'gpt3-finnish': { type: 'poro' },
  exaone: { type: 'starcoder' },
  exaone4: { type: 'gpt2' },
  'exaone-moe': { type: 'exaone_moe' },
  'minerva-7b': { type: 'starcoder' },
  megrez: { type: 'qwen2' },
  'gpt-4o': { type: 'gpt4o', cleanSpaces: false },
  llama4: { type: 'gpt4o', cleanSpaces: false },
  kanana2: { type: 'gpt4o', cleanSpaces: false },
  talkie: { type: 'gpt4o', cleanSpaces: false },
  trillion: { type: 'gpt2', cleanSpaces: false },
  'granite-docling': { type: 'gpt2', cleanSpaces: false },
  bailingmoe: { type: 'bailingmoe', cleanSpaces: false },
  bailingmoe2: { type: 'bailingmoe', cleanSpaces: false },
  'llada-moe': { type: 'bailingmoe', cleanSpaces: false },
  'seed-coder': { type: 'seed_coder', cleanSpaces: false },
  hunyuan: { type: 'qwen2', cleanSpaces: false },
  'hunyuan-dense': { type: 'deepseek3_llm', cleanSpaces: false },
  'joyai-llm': { type: 'deepseek3_llm', cleanSpaces: false },
  'grok-2': { type: 'qwen2', cleanSpaces: false },
  laguna: { type: 'laguna', cleanSpaces: false },
  'minimax-m2': { type: 'gpt4o', cleanSpaces: false },
  'solar-open': { type: 'qwen2', cleanSpaces: false },
  mellum2: { type: 'starcoder' },
};

/** The `tokenizer.ggml.pre` values this tokenizer supports. */
export const SUPPORTED_PRE_TOKENIZERS: readonly string[] = Object.keys(PRE_NAMES);

/**
 * The pre-tokenizer llama.cpp uses for `tokenizer.ggml.pre` (absent or empty: 'default', as llama.cpp
 * does, with its warning that quality will suffer).
 * @throws EngineError('unsupported_model') for a name we do not implement.
 */
export function preTokenizerFor(pre: string | undefined): PreTokenizerSpec {
  const name = pre === undefined || pre === '' ? 'default' : pre;
  const entry = Object.hasOwn(PRE_NAMES, name) ? PRE_NAMES[name] : undefined;
  if (!entry) {
    throw new EngineError(
      'unsupported_model',
      `BPE pre-tokenizer ${JSON.stringify(name)} (tokenizer.ggml.pre) is not supported; supported: ${SUPPORTED_PRE_TOKENIZERS.join(', ')}`,
    );
  }
  return {
    type: entry.type,
    regexes: PRE_TYPE_REGEXES[entry.type],
    cleanSpaces: entry.cleanSpaces ?? true,
    ignoreMerges: entry.ignoreMerges ?? false,
    addBos: entry.addBos ?? false,
    noDefaultBos: entry.noDefaultBos ?? false,
  };
}

/** `\p{…}` names llama.cpp collapses, with the category they stand for. */
const UCAT_ENUM: ReadonlyMap<string, number> = new Map([
  ['\\p{N}', Flag.NUMBER],
  ['\\p{L}', Flag.LETTER],
  ['\\p{P}', Flag.PUNCTUATION],
  ['\\p{M}', Flag.ACCENT_MARK],
  ['\\p{S}', Flag.SYMBOL],
  ['\\p{Lu}', Flag.LETTER],
  ['\\p{Ll}', Flag.LETTER],
  ['\\p{Lt}', Flag.LETTER],
  ['\\p{Lm}', Flag.LETTER],
  ['\\p{Lo}', Flag.LETTER],
]);
/** The byte each collapsed category becomes. */
const UCAT_CPT: ReadonlyMap<number, number> = new Map([
  [Flag.NUMBER, 0xd1],
  [Flag.LETTER, 0xd2],
  [Flag.PUNCTUATION, 0xd3],
  [Flag.ACCENT_MARK, 0xd4],
  [Flag.SYMBOL, 0xd5],
]);
/** The ASCII members of each category, as class items. */
const UCAT_MAP: ReadonlyMap<number, string> = new Map([
  [Flag.NUMBER, '0-9'],
  [Flag.LETTER, 'A-Za-z'],
  [Flag.PUNCTUATION, '!-#%-*,-/:-;?-@\\[-\\]_\\{\\}'],
  [Flag.ACCENT_MARK, ''],
  [Flag.SYMBOL, '\\$\\+<->^`\\|\\~'],
]);

function usesCategories(re: string): boolean {
  for (const k of UCAT_ENUM.keys()) if (re.includes(k)) return true;
  return false;
}

/** llama.cpp's rewrite of an expression with `\p{…}` for the collapsed text. */
function collapseRegex(re: string): string {
  for (let i = 0; i < re.length; i++) {
    if (re.charCodeAt(i) >= 128) {
      throw new EngineError(
        'unsupported_model',
        'the pre-tokenizer expression mixes Unicode categories and non-ASCII characters (llama.cpp rejects it too)',
      );
    }
  }
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    if (re[i] === '[' && (i === 0 || re[i - 1] !== '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && re[i] === ']' && re[i - 1] !== '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (re[i] === '\\' && i + 3 < re.length && re[i + 1] === 'p' && re[i + 2] === '{') {
      const closing = re.indexOf('}', i + 3);
      if (closing >= 0 && closing <= i + 10) {
        const cat = UCAT_ENUM.get(re.slice(i, closing + 1));
        if (cat !== undefined) {
          if (!inside) out += '[';
          out += String.fromCharCode(UCAT_CPT.get(cat)!) + UCAT_MAP.get(cat)!;
          if (!inside) out += ']';
          i = closing;
          continue;
        }
      }
    }
    out += re[i];
  }
  return out;
}

/**
 * An expression without categories, for JavaScript's `u` mode on code points: `\s` and `\S` become the
 * ASCII whitespace set that `std::wregex` matches (non-ASCII whitespace is already 0x0B in the text).
 */
function wideRegex(re: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    const ch = re[i];
    if (ch === '\\' && i + 1 < re.length) {
      const next = re[i + 1];
      if (next === 's') out += inside ? '\\t\\n\\v\\f\\r ' : '[\\t\\n\\v\\f\\r ]';
      else if (next === 'S') {
        if (inside) throw new EngineError('unsupported_model', `unsupported \\S in a class: ${re}`);
        out += '[^\\t\\n\\v\\f\\r ]';
      } else out += ch + next;
      i++;
      continue;
    }
    if (ch === '[') inside = true;
    else if (ch === ']') inside = false;
    out += ch;
  }
  return out;
}

/** Compiled expression and how to run it. */
interface CompiledRegex {
  custom?: Splitter;
  regex?: RegExp;
  collapsed: boolean;
}

const compiled = new Map<string, CompiledRegex>();

function compile(re: string): CompiledRegex {
  let c = compiled.get(re);
  if (c) return c;
  const custom = CUSTOM.get(re);
  if (custom) c = { custom, collapsed: false };
  else if (usesCategories(re)) c = { regex: new RegExp(collapseRegex(re), 'g'), collapsed: true };
  else c = { regex: new RegExp(wideRegex(re), 'gu'), collapsed: false };
  compiled.set(re, c);
  return c;
}

/** llama.cpp's collapsed text: one char per code point (see the module comment). */
function collapseText(cpts: Uint32Array): string {
  let s = '';
  for (const c of cpts) {
    if (c < 128) {
      s += String.fromCharCode(c);
      continue;
    }
    const f = cptFlags(c);
    if (f & Flag.WHITESPACE) s += '\x0B';
    else s += String.fromCharCode(UCAT_CPT.get(f & Flag.MASK_CATEGORIES) ?? 0xd0);
  }
  return s;
}

/** Code points as a string, non-ASCII whitespace replaced by 0x0B, with each code point's UTF-16 start. */
function wideText(cpts: Uint32Array): { text: string; unitToCpt: Map<number, number> } {
  let text = '';
  const unitToCpt = new Map<number, number>();
  for (let i = 0; i < cpts.length; i++) {
    unitToCpt.set(text.length, i);
    const c = cpts[i];
    text += c > 0x7f && cptFlags(c) & Flag.WHITESPACE ? '\x0B' : String.fromCodePoint(c);
  }
  unitToCpt.set(text.length, cpts.length);
  return { text, unitToCpt };
}

/** llama.cpp's `unicode_regex_split_stl`: matches and the text between them become pieces. */
function splitStl(
  text: string,
  unitOf: (cpt: number) => number,
  cptOf: (unit: number) => number,
  regex: RegExp,
  offsets: readonly number[],
): number[] {
  const out: number[] = [];
  let start = 0;
  for (const offset of offsets) {
    const segment = text.slice(unitOf(start), unitOf(start + offset));
    const base = cptOf(unitOf(start));
    regex.lastIndex = 0;
    let prev = 0; // code points from the segment start
    for (;;) {
      const m = regex.exec(segment);
      if (!m) break;
      if (m[0].length === 0) {
        throw new EngineError(
          'unsupported_model',
          `pre-tokenizer expression ${regex.source} matched nothing`,
        );
      }
      const at = cptOf(unitOf(start) + m.index) - base;
      const len = cptOf(unitOf(start) + m.index + m[0].length) - base - at;
      if (at > prev) out.push(at - prev);
      out.push(len);
      prev = at + len;
    }
    if (prev < offset) out.push(offset - prev);
    start += offset;
  }
  return out;
}

/**
 * llama.cpp's `unicode_regex_split` without the byte encoding: the word lengths (in code points) that
 * `regexes` cut `cpts` into.
 */
export function splitWords(cpts: Uint32Array, regexes: readonly string[]): number[] {
  let offsets: number[] = cpts.length > 0 ? [cpts.length] : [];
  let collapsed: string | undefined;
  let wide: ReturnType<typeof wideText> | undefined;
  const identity = (i: number) => i;
  for (const re of regexes) {
    const c = compile(re);
    if (c.custom) offsets = c.custom(cpts, offsets);
    else if (c.collapsed) {
      collapsed ??= collapseText(cpts);
      offsets = splitStl(collapsed, identity, identity, c.regex!, offsets);
    } else {
      wide ??= wideText(cpts);
      const w = wide;
      // code point index → UTF-16 offset, built once
      const unitStarts: number[] = new Array(cpts.length + 1);
      for (const [unit, cpt] of w.unitToCpt) unitStarts[cpt] = unit;
      offsets = splitStl(
        w.text,
        (cpt) => unitStarts[cpt],
        (unit) => w.unitToCpt.get(unit)!,
        c.regex!,
        offsets,
      );
    }
  }
  return offsets.filter((n) => n > 0);
}
