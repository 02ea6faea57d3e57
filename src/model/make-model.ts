/**
 * Random-weight GGUF models of every architecture the engine runs, for `npm run make-model`
 * (src/cli/make-model.ts) and tests: one registry entry per architecture names its generator and a small
 * default shape. Adding an architecture is one entry in {@link MAKE_MODEL_ARCHS}.
 */
import { EngineError } from '../core/errors.ts';
import { type GgufMetadataEntry, type GgufTensorInput, kv, writeGguf } from '../gguf/writer.ts';
import { builtinChatTemplate } from './chat-template.ts';
import { randomGemmaParts } from './random-gemma.ts';
import { makeRandomLlamaGguf, TokenType } from './random-model.ts';
import { randomPhi3Parts } from './random-phi3.ts';

/** The sizes a generated model is made with (all positive integers; see {@link checkMakeModelShape}). */
export interface MakeModelShape {
  /** Transformer blocks (`ARCH.block_count`). */
  nLayers: number;
  /** Hidden size (`ARCH.embedding_length`). */
  nEmbd: number;
  /** FFN inner size (`ARCH.feed_forward_length`). */
  nFF: number;
  /** Query heads (`ARCH.attention.head_count`); must divide nEmbd, giving an even head size. */
  nHead: number;
  /** KV heads (`ARCH.attention.head_count_kv`); must divide nHead. */
  nHeadKv: number;
  /** Vocabulary size (tokens in `tokenizer.ggml.tokens`); at least the entry's `minVocab`. */
  nVocab: number;
}

/** What a generator is given: the shape, the seed (low 32 bits used) and the 2-D weights' type. */
export interface MakeModelOptions extends MakeModelShape {
  seed: number;
  /** Type of the 2-D weight matrices; norms and biases stay F32 as llama.cpp writes them. */
  weightType: 'F32' | 'F16';
  /** `ARCH.context_length` written to the file. */
  contextLength: number;
}

/** One architecture `make-model` can write. */
export interface MakeModelArch {
  /** `general.architecture`. */
  architecture: string;
  /** One line for the usage text. */
  description: string;
  /** The shape used for every size not given. */
  defaults: MakeModelShape;
  /** The smallest vocabulary the generator's tokenizer can have. */
  minVocab: number;
  /** The GGUF bytes (deterministic: same options, same bytes). */
  make(o: MakeModelOptions): Uint8Array;
}

/** The default context length written by make-model (tokens). */
export const MAKE_MODEL_DEFAULT_CONTEXT = 512;

/** stories260K's sizes with two layers: small enough to write and load in a few milliseconds. */
const SMALL: MakeModelShape = { nLayers: 2, nEmbd: 64, nFF: 172, nHead: 8, nHeadKv: 4, nVocab: 512 };

function llamaFamily(architecture: 'llama' | 'qwen2' | 'qwen3', description: string): MakeModelArch {
  return {
    architecture,
    description,
    defaults: SMALL,
    // makeSpmVocab: 3 special tokens + 256 byte tokens.
    minVocab: 259,
    make: (o) =>
      makeRandomLlamaGguf({
        ...o,
        architecture,
        name: `random-${architecture}`,
      }),
  };
}

/** The turn tokens of each chat template (CONTROL tokens in the real vocabularies). */
const TURN_TOKENS: Readonly<Record<string, readonly string[]>> = {
  gemma2: ['<start_of_turn>', '<end_of_turn>'],
  gemma3: ['<start_of_turn>', '<end_of_turn>'],
  phi3: ['<|system|>', '<|user|>', '<|assistant|>', '<|end|>'],
};

/**
 * GGUF bytes of generated parts with the architecture's chat template (template.ts) in the metadata and
 * its turn tokens (CONTROL) in the vocabulary, in place of the word pieces just before the last token
 * (which random-phi3.ts makes `<|endoftext|>`), so chat prompts tokenize and stop as a real model's do:
 * `<end_of_turn>` and `<|end|>` are end-of-generation tokens by their text (llama-vocab.cpp).
 */
function withChatTemplate(
  architecture: string,
  parts: { metadata: GgufMetadataEntry[]; tensors: GgufTensorInput[] },
): Uint8Array {
  const template = builtinChatTemplate(architecture);
  if (!template) return writeGguf(parts);
  const turns = TURN_TOKENS[architecture] ?? [];
  const metadata = parts.metadata.map((e) => {
    if (e.key !== 'tokenizer.ggml.tokens' && e.key !== 'tokenizer.ggml.token_type') return e;
    const v = Array.from(e.value as ArrayLike<string | number>);
    const first = v.length - 1 - turns.length;
    turns.forEach((t, i) => {
      v[first + i] = e.key === 'tokenizer.ggml.tokens' ? t : TokenType.CONTROL;
    });
    return { ...e, value: v } as GgufMetadataEntry;
  });
  metadata.push(kv.string('tokenizer.chat_template', template));
  return writeGguf({ metadata, tensors: parts.tensors });
}

function gemma(architecture: 'gemma2' | 'gemma3', description: string): MakeModelArch {
  return {
    architecture,
    description,
    defaults: SMALL,
    // makeSpmVocab's 259 (3 special tokens, 256 bytes), 2 turn tokens, one word piece after them.
    minVocab: 262,
    make: (o) => withChatTemplate(architecture, randomGemmaParts({ ...o, architecture })),
  };
}

/**
 * The registry: architecture name → generator and default shape. gemma2/gemma3 come from
 * random-gemma.ts, phi3 from random-phi3.ts (both with their chat template, template.ts, in the file).
 */
export const MAKE_MODEL_ARCHS: Readonly<Record<string, MakeModelArch>> = {
  llama: llamaFamily('llama', 'Llama 2/3, TinyLlama, SmolLM, Mistral'),
  qwen2: llamaFamily('qwen2', 'Qwen2/2.5 (Q/K/V biases, NeoX RoPE)'),
  qwen3: llamaFamily('qwen3', 'Qwen3 (per-head Q/K norms, NeoX RoPE)'),
  gemma2: gemma('gemma2', 'Gemma 2 (post-norms, soft-capping, sliding window 4096, tied)'),
  gemma3: gemma('gemma3', 'Gemma 3 text (post-norms, per-head Q/K norms, tied)'),
  phi3: {
    architecture: 'phi3',
    description: 'Phi-3/3.5 (fused QKV and gate/up)',
    defaults: SMALL,
    // makeSpmVocab's 259, 4 turn tokens, the <|endoftext|> that random-phi3.ts puts last.
    minVocab: 264,
    make: (o) => withChatTemplate('phi3', randomPhi3Parts(o)),
  },
};

/** The architectures make-model can write, in registry order. */
export function makeModelArchitectures(): string[] {
  return Object.keys(MAKE_MODEL_ARCHS);
}

/**
 * The registry entry for `arch`.
 * @throws EngineError('invalid_argument') `unknown architecture "X"; supported: llama, qwen2, …`.
 */
export function makeModelArch(arch: string): MakeModelArch {
  if (!Object.hasOwn(MAKE_MODEL_ARCHS, arch)) {
    throw new EngineError(
      'invalid_argument',
      `unknown architecture "${arch}"; supported: ${makeModelArchitectures().join(', ')}`,
    );
  }
  return MAKE_MODEL_ARCHS[arch];
}

/**
 * Checks a shape for `entry`: every size a positive integer, nHead divides nEmbd with an even head size
 * (RoPE rotates pairs), nHeadKv divides nHead, nVocab ≥ entry.minVocab.
 * @throws EngineError('invalid_argument') naming the first offending size, e.g.
 *   `--heads 6 does not divide --embd 64`.
 */
export function checkMakeModelShape(entry: MakeModelArch, s: MakeModelShape): void {
  const flags: [keyof MakeModelShape, string][] = [
    ['nLayers', '--layers'],
    ['nEmbd', '--embd'],
    ['nFF', '--ff'],
    ['nHead', '--heads'],
    ['nHeadKv', '--kv-heads'],
    ['nVocab', '--vocab'],
  ];
  for (const [k, flag] of flags) {
    if (!Number.isInteger(s[k]) || s[k] < 1)
      throw new EngineError('invalid_argument', `${flag} must be a positive integer, got ${s[k]}`);
  }
  if (s.nEmbd % s.nHead !== 0)
    throw new EngineError('invalid_argument', `--heads ${s.nHead} does not divide --embd ${s.nEmbd}`);
  if ((s.nEmbd / s.nHead) % 2 !== 0) {
    throw new EngineError(
      'invalid_argument',
      `head size --embd ${s.nEmbd} / --heads ${s.nHead} = ${s.nEmbd / s.nHead} is odd; RoPE needs an even head size`,
    );
  }
  if (s.nHead % s.nHeadKv !== 0)
    throw new EngineError('invalid_argument', `--kv-heads ${s.nHeadKv} does not divide --heads ${s.nHead}`);
  if (s.nVocab < entry.minVocab) {
    throw new EngineError(
      'invalid_argument',
      `--vocab ${s.nVocab} is below the minimum ${entry.minVocab} for ${entry.architecture}`,
    );
  }
}

/**
 * A random-weight model of architecture `arch` as GGUF bytes: the entry's default shape overridden by
 * `o`'s sizes, checked by {@link checkMakeModelShape}. Same options, same bytes.
 * @throws EngineError('invalid_argument') for an unknown architecture or a bad shape.
 */
export function makeModelGguf(
  arch: string,
  o: Partial<MakeModelShape> & { seed: number; weightType?: 'F32' | 'F16'; contextLength?: number },
): { bytes: Uint8Array; shape: MakeModelShape; entry: MakeModelArch } {
  const entry = makeModelArch(arch);
  const shape: MakeModelShape = { ...entry.defaults };
  for (const k of Object.keys(shape) as (keyof MakeModelShape)[]) if (o[k] !== undefined) shape[k] = o[k];
  checkMakeModelShape(entry, shape);
  const bytes = entry.make({
    ...shape,
    seed: o.seed,
    weightType: o.weightType ?? 'F32',
    contextLength: o.contextLength ?? MAKE_MODEL_DEFAULT_CONTEXT,
  });
  return { bytes, shape, entry };
}
