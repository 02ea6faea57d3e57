/**
 * Synthetic models: the exact tensor shapes and types of real models, with seeded random weights made
 * on the GPU (no download, no host memory for weights). Their speed is the real model's speed; their
 * text is noise. Named `synthetic:SHAPE-TYPE`, e.g. `synthetic:llama-3.2-1b-q4_k_m`.
 *
 * Shapes come from the models' published configs (config.json / GGUF metadata): hidden size, layers,
 * heads, KV heads, FFN size, vocabulary, tied embeddings, RoPE base.
 */
import { EngineError } from '../../core/errors.ts';
import { ggmlTypeByName, tensorBytes } from '../../gguf/ggml-types.ts';
import { planQuantization, type QuantizeFtype } from '../../gguf/quantize-model.ts';
import type { GgufFile, GgufTensorInfo } from '../../gguf/types.ts';
import { type GgufMetadataEntry, kv } from '../../gguf/writer.ts';
import { llamaTensorShapes, SUPPORTED_ARCHITECTURES } from '../../model/config.ts';
import { type RandomGemmaOptions, randomGemmaMetadata, randomGemmaShapes } from '../../model/random-gemma.ts';
import { makeSpmVocab, TokenType } from '../../model/random-model.ts';
import { WEIGHT_TYPES, type WeightType } from '../kernels/common.ts';

/** The shape of a real model. */
export interface SyntheticShape {
  id: string;
  /** The real model it mimics. */
  label: string;
  /**
   * `general.architecture`. gemma2/gemma3/phi3 shapes exist whether or not the engine runs them yet
   * ({@link syntheticShapeRunnable}); loading one it does not run fails with 'unsupported_model', as the
   * real file would.
   */
  architecture: 'llama' | 'qwen2' | 'qwen3' | 'gemma2' | 'gemma3' | 'phi3';
  nLayers: number;
  nEmbd: number;
  nFF: number;
  nHead: number;
  nHeadKv: number;
  nVocab: number;
  contextLength: number;
  tied: boolean;
  ropeFreqBase: number;
  rmsEps: number;
  /** Llama 3.1-style rope_freqs.weight. */
  ropeFreqFactors?: boolean;
  /** `attention.key_length` when it is not nEmbd / nHead (Gemma: 256). */
  headDim?: number;
  /** `rope.dimension_count` when RoPE rotates fewer than headDim dims (Phi-4-mini: 96 of 128). */
  ropeDim?: number;
  /** `attention.sliding_window` (Gemma 2/3; Phi-3.5/4's value, which llama.cpp reads and ignores). */
  slidingWindow?: number;
  /** `attention.sliding_window_pattern` (Gemma 3: every 6th layer global). */
  slidingWindowPattern?: number;
  /** `rope.freq_base_swa`: the sliding-window layers' RoPE base (Gemma 3's rope_local_base_freq). */
  ropeFreqBaseSwa?: number;
  /** Gemma 2's `attn_logit_softcapping`. */
  attnLogitSoftcap?: number;
  /** Gemma 2's `final_logit_softcapping`. */
  finalLogitSoftcap?: number;
  /**
   * Phi-3.5/4's LongRoPE: `rope_factors_short/long.weight` [ropeDim/2], `rope.scaling.original_context_length`,
   * `rope.scaling.attn_factor` (convert_hf_to_gguf: √(1 + ln(ctx / original) / ln(original))).
   */
  longRope?: { originalContextLength: number; attnFactor: number };
}

/** Shapes offered, smallest first (add more freely: only the numbers matter). */
export const SYNTHETIC_SHAPES: readonly SyntheticShape[] = [
  {
    id: 'stories260k',
    label: 'stories260K (llama2.c tinyllamas)',
    architecture: 'llama',
    nLayers: 5,
    nEmbd: 64,
    nFF: 172,
    nHead: 8,
    nHeadKv: 4,
    nVocab: 512,
    contextLength: 2048,
    tied: false,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
  },
  {
    id: 'stories15m',
    label: 'stories15M (llama2.c tinyllamas)',
    architecture: 'llama',
    nLayers: 6,
    nEmbd: 288,
    nFF: 768,
    nHead: 6,
    nHeadKv: 6,
    nVocab: 32000,
    contextLength: 256,
    tied: false,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
  },
  {
    // The ≥50M-parameter test model of the decode benchmarks on software adapters (issue 14): 512 wide,
    // 8 layers, a 32k vocabulary; about 60M parameters.
    id: 'bench-60m',
    label: '60M-parameter llama (512 wide, 8 layers, 32k vocabulary)',
    architecture: 'llama',
    nLayers: 8,
    nEmbd: 512,
    nFF: 1536,
    nHead: 8,
    nHeadKv: 8,
    nVocab: 32000,
    contextLength: 2048,
    tied: false,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
  },
  {
    id: 'smollm2-360m',
    label: 'SmolLM2-360M',
    architecture: 'llama',
    nLayers: 32,
    nEmbd: 960,
    nFF: 2560,
    nHead: 15,
    nHeadKv: 5,
    nVocab: 49152,
    contextLength: 8192,
    tied: true,
    ropeFreqBase: 100000,
    rmsEps: 1e-5,
  },
  {
    id: 'qwen2.5-0.5b',
    label: 'Qwen2.5-0.5B',
    architecture: 'qwen2',
    nLayers: 24,
    nEmbd: 896,
    nFF: 4864,
    nHead: 14,
    nHeadKv: 2,
    nVocab: 151936,
    contextLength: 32768,
    tied: true,
    ropeFreqBase: 1000000,
    rmsEps: 1e-6,
  },
  {
    id: 'llama-3.2-1b',
    label: 'Llama-3.2-1B',
    architecture: 'llama',
    nLayers: 16,
    nEmbd: 2048,
    nFF: 8192,
    nHead: 32,
    nHeadKv: 8,
    nVocab: 128256,
    contextLength: 131072,
    tied: true,
    ropeFreqBase: 500000,
    rmsEps: 1e-5,
    ropeFreqFactors: true,
  },
  {
    // google/gemma-3-1b-it config.json (gemma3_text) as convert_hf_to_gguf writes it: head_dim 256,
    // sliding_window 512 with every 6th layer global, rope_theta 1e6 (global) / 10000 (local), no soft-caps.
    id: 'gemma-3-1b',
    label: 'Gemma-3-1B',
    architecture: 'gemma3',
    nLayers: 26,
    nEmbd: 1152,
    nFF: 6912,
    nHead: 4,
    nHeadKv: 1,
    headDim: 256,
    nVocab: 262144,
    contextLength: 32768,
    tied: true,
    ropeFreqBase: 1000000,
    ropeFreqBaseSwa: 10000,
    rmsEps: 1e-6,
    slidingWindow: 512,
    slidingWindowPattern: 6,
  },
  {
    // google/gemma-2-2b-it config.json: head_dim 256, sliding_window 4096 on every other layer,
    // attn_logit_softcapping 50, final_logit_softcapping 30.
    id: 'gemma-2-2b',
    label: 'Gemma-2-2B',
    architecture: 'gemma2',
    nLayers: 26,
    nEmbd: 2304,
    nFF: 9216,
    nHead: 8,
    nHeadKv: 4,
    headDim: 256,
    nVocab: 256000,
    contextLength: 8192,
    tied: true,
    ropeFreqBase: 10000,
    rmsEps: 1e-6,
    slidingWindow: 4096,
    attnLogitSoftcap: 50,
    finalLogitSoftcap: 30,
  },
  {
    // microsoft/Phi-3.5-mini-instruct config.json: 32 heads of 96 (no GQA), LongRoPE from 4096 to 131072
    // (attn_factor √(1 + ln 32 / ln 4096) ≈ 1.1902), sliding_window 262144, untied.
    id: 'phi-3.5-mini',
    label: 'Phi-3.5-mini',
    architecture: 'phi3',
    nLayers: 32,
    nEmbd: 3072,
    nFF: 8192,
    nHead: 32,
    nHeadKv: 32,
    nVocab: 32064,
    contextLength: 131072,
    tied: false,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
    slidingWindow: 262144,
    longRope: { originalContextLength: 4096, attnFactor: Math.sqrt(1 + Math.log(32) / Math.log(4096)) },
  },
  {
    // microsoft/Phi-4-mini-instruct config.json: 24 heads of 128, 8 KV heads, partial_rotary_factor 0.75
    // (RoPE over 96 dims), LongRoPE from 4096 to 131072, tied embeddings, a 200k vocabulary.
    id: 'phi-4-mini',
    label: 'Phi-4-mini',
    architecture: 'phi3',
    nLayers: 32,
    nEmbd: 3072,
    nFF: 8192,
    nHead: 24,
    nHeadKv: 8,
    ropeDim: 96,
    nVocab: 200064,
    contextLength: 131072,
    tied: true,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
    slidingWindow: 262144,
    longRope: { originalContextLength: 4096, attnFactor: Math.sqrt(1 + Math.log(32) / Math.log(4096)) },
  },
  {
    id: 'llama-3.1-8b',
    label: 'Llama-3.1-8B',
    architecture: 'llama',
    nLayers: 32,
    nEmbd: 4096,
    nFF: 14336,
    nHead: 32,
    nHeadKv: 8,
    nVocab: 128256,
    contextLength: 131072,
    tied: false,
    ropeFreqBase: 500000,
    rmsEps: 1e-5,
    ropeFreqFactors: true,
  },
];

/**
 * True when the engine runs `s`'s architecture (config.ts's {@link SUPPORTED_ARCHITECTURES}); lists that
 * compute a fit verdict or offer shapes to run use this to leave the others out.
 */
export function syntheticShapeRunnable(s: SyntheticShape): boolean {
  return SUPPORTED_ARCHITECTURES.includes(s.architecture);
}

/**
 * File types offered, as llama.cpp names them; every one but f32 is typed per tensor by quantize-model.ts's
 * `planQuantization`, llama-quantize's per-tensor choice ({@link syntheticTensorTypes}).
 */
export const SYNTHETIC_FTYPES = [
  'f32',
  'f16',
  'q8_0',
  'q4_0',
  'q4_k_m',
  'q4_1',
  'q5_1',
  'iq4_nl',
  'iq4_xs',
  'q2_k',
  'q3_k_m',
  'q5_k_m',
  'q6_k',
] as const;
export type SyntheticFtype = (typeof SYNTHETIC_FTYPES)[number];

/** llama-quantize's name for each file type (f32 is not quantized: every tensor stays F32). */
const PLANNED_FTYPES: Record<Exclude<SyntheticFtype, 'f32'>, QuantizeFtype> = {
  f16: 'F16',
  q8_0: 'Q8_0',
  q4_0: 'Q4_0',
  q4_k_m: 'Q4_K_M',
  q4_1: 'Q4_1',
  q5_1: 'Q5_1',
  iq4_nl: 'IQ4_NL',
  iq4_xs: 'IQ4_XS',
  q2_k: 'Q2_K',
  q3_k_m: 'Q3_K_M',
  q5_k_m: 'Q5_K_M',
  q6_k: 'Q6_K',
};

/**
 * The type of every tensor of shape `s` in a file of type `ftype` (tensor name → type), as llama-quantize
 * would write it from an F32 conversion of the real model: `planQuantization` with `n_gqa` = nHead / nHeadKv
 * and llama.cpp's own fallbacks for rows a K-quant's 256-block does not divide (Q4_K → Q5_0, Q5_K → Q5_1,
 * Q6_K → Q8_0: gemma-3-1b's 1152-wide rows), so a synthetic file weighs what the download does (e.g. Q4_0
 * and Q4_K_M files keep `output.weight`, or a tied `token_embd.weight`, in Q6_K). f32: every tensor F32.
 * @throws EngineError('invalid_argument') when a planned type is one the engine does not run.
 */
export function syntheticTensorTypes(
  s: SyntheticShape,
  ftype: SyntheticFtype,
  shapes: Map<string, number[]> = syntheticArchParts(s).shapes,
): Map<string, WeightType> {
  if (ftype === 'f32') return new Map([...shapes.keys()].map((n) => [n, 'F32' as WeightType]));
  const plan = planQuantization(
    [...shapes].map(([name, shape]) => ({ name, typeName: 'F32', shape })),
    PLANNED_FTYPES[ftype],
    { nGqa: Math.trunc(s.nHead / s.nHeadKv), fallback: 'llama.cpp' },
  );
  const out = new Map<string, WeightType>();
  for (const p of plan) {
    if (!(WEIGHT_TYPES as readonly string[]).includes(p.to)) {
      throw new EngineError(
        'invalid_argument',
        `synthetic ${ftype}: ${p.name} would be ${p.to}, which the engine does not run`,
      );
    }
    out.set(p.name, p.to as WeightType);
  }
  // In the shapes' (file) order, not llama.cpp's.
  return new Map([...shapes.keys()].map((n) => [n, out.get(n) as WeightType]));
}

/**
 * Parses `synthetic:SHAPE-FTYPE`.
 * @throws EngineError('invalid_argument') listing the valid names.
 */
export function parseSyntheticName(name: string): { shape: SyntheticShape; ftype: SyntheticFtype } {
  const body = name.replace(/^synthetic:/, '').toLowerCase();
  for (const f of SYNTHETIC_FTYPES) {
    if (!body.endsWith(`-${f}`)) continue;
    const shape = SYNTHETIC_SHAPES.find((s) => s.id === body.slice(0, -f.length - 1));
    if (shape) return { shape, ftype: f };
  }
  throw new EngineError(
    'invalid_argument',
    `unknown synthetic model "${name}"; use synthetic:SHAPE-TYPE with SHAPE one of ${SYNTHETIC_SHAPES.map((s) => s.id).join(', ')} and TYPE one of ${SYNTHETIC_FTYPES.join(', ')}`,
  );
}

/**
 * The architecture's metadata (`ARCH.*` keys, no tokenizer) and tensor shapes (ggml order, file order) of
 * synthetic shape `s`: llama/qwen2/qwen3 from config.ts's llamaTensorShapes; gemma2/gemma3 from
 * random-gemma.ts's generator (its metadata and shapes, so both stay what llama.cpp loads); phi3 with
 * random-phi3.ts's keys and config.ts's phi3 tensor list (fused QKV and gate/up, LongRoPE factors).
 */
export function syntheticArchParts(s: SyntheticShape): {
  metadata: GgufMetadataEntry[];
  shapes: Map<string, number[]>;
} {
  const a = s.architecture;
  const headDim = s.headDim ?? s.nEmbd / s.nHead;
  const ropeDim = s.ropeDim ?? headDim;
  if (a === 'gemma2' || a === 'gemma3') {
    const o: RandomGemmaOptions = {
      architecture: a,
      seed: 0,
      nLayers: s.nLayers,
      nEmbd: s.nEmbd,
      nFF: s.nFF,
      nHead: s.nHead,
      nHeadKv: s.nHeadKv,
      headDim,
      nVocab: s.nVocab,
      contextLength: s.contextLength,
      slidingWindow: s.slidingWindow,
      slidingWindowPattern: s.slidingWindowPattern,
      attnLogitSoftcap: s.attnLogitSoftcap,
      finalLogitSoftcap: s.finalLogitSoftcap,
      ropeFreqBase: s.ropeFreqBase,
      ropeFreqBaseSwa: s.ropeFreqBaseSwa,
      rmsEps: s.rmsEps,
    };
    // The generator's metadata with its smallest vocabulary (the tokenizer is replaced by the caller's).
    const md = randomGemmaMetadata({ ...o, nVocab: 259 }).filter(
      (e) => !e.key.startsWith('tokenizer.') && !e.key.startsWith('general.'),
    );
    return { metadata: md, shapes: randomGemmaShapes(o) };
  }
  // The keys and value types random-model.ts / random-phi3.ts write (as convert_hf_to_gguf does).
  const metadata: GgufMetadataEntry[] = [
    kv.u32(`${a}.context_length`, s.contextLength),
    kv.u32(`${a}.embedding_length`, s.nEmbd),
    kv.u32(`${a}.feed_forward_length`, s.nFF),
    kv.u32(`${a}.attention.head_count`, s.nHead),
    kv.u32(`${a}.attention.head_count_kv`, s.nHeadKv),
    kv.u32(`${a}.block_count`, s.nLayers),
    kv.u32(`${a}.rope.dimension_count`, ropeDim),
    kv.f32(`${a}.rope.freq_base`, s.ropeFreqBase),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, s.rmsEps),
  ];
  if (s.headDim !== undefined) metadata.push(kv.u32(`${a}.attention.key_length`, s.headDim));
  if (s.slidingWindow !== undefined) metadata.push(kv.u32(`${a}.attention.sliding_window`, s.slidingWindow));
  if (s.longRope) {
    metadata.push(
      kv.u32(`${a}.rope.scaling.original_context_length`, s.longRope.originalContextLength),
      kv.f32(`${a}.rope.scaling.attn_factor`, s.longRope.attnFactor),
    );
  }
  const shapes = llamaTensorShapes({
    nLayers: s.nLayers,
    nEmbd: s.nEmbd,
    nFF: s.nFF,
    nHead: s.nHead,
    nHeadKv: s.nHeadKv,
    headDim,
    nVocab: s.nVocab,
    tiedEmbeddings: s.tied,
    qkvBias: a === 'qwen2',
    qkNorm: a === 'qwen3',
    ropeFreqFactors: s.ropeFreqFactors ?? false,
    ropeDim,
    ...(a === 'phi3'
      ? {
          phi3: {
            fusedQkv: true,
            ropeFactorsShort: s.longRope !== undefined,
            ropeFactorsLong: s.longRope !== undefined,
          },
        }
      : {}),
  });
  return { metadata, shapes };
}

/**
 * A GGUF description (metadata and tensor infos, no data) of a synthetic model. The loader sees
 * `synthetic.seed` and fills the weights on the GPU. The tokenizer is a made-up SentencePiece vocabulary
 * of the model's size (so prompts tokenize; the text is noise). With `tokenizer: false` there is none (a
 * header for sizes and the fit arithmetic only: making a 128k-token vocabulary takes a few hundred ms).
 */
export function syntheticGguf(name: string, seed = 1, opts: { tokenizer?: boolean } = {}): GgufFile {
  const { shape: s, ftype } = parseSyntheticName(name);
  const vocab = opts.tokenizer === false ? undefined : makeSpmVocab(s.nVocab);
  if (vocab && s.architecture === 'phi3') {
    // As random-phi3.ts: llama.cpp looks `<|endoftext|>` up in a vocabulary named phi-3.
    vocab.tokens[s.nVocab - 1] = '<|endoftext|>';
    vocab.tokenTypes[s.nVocab - 1] = TokenType.CONTROL;
  }
  const { metadata: archMetadata, shapes } = syntheticArchParts(s);
  const metadata: Record<string, unknown> = {
    'general.architecture': s.architecture,
    'general.name': `synthetic ${s.label} ${ftype.toUpperCase()} (random weights)`,
    'general.synthetic': true,
    ...Object.fromEntries(archMetadata.map((e) => [e.key, e.value])),
    ...(vocab
      ? {
          'tokenizer.ggml.model': 'llama',
          'tokenizer.ggml.tokens': vocab.tokens,
          'tokenizer.ggml.scores': vocab.scores,
          'tokenizer.ggml.token_type': vocab.tokenTypes,
          'tokenizer.ggml.unknown_token_id': 0,
          'tokenizer.ggml.bos_token_id': 1,
          'tokenizer.ggml.eos_token_id': 2,
          'tokenizer.ggml.add_bos_token': true,
        }
      : {}),
  };
  const types = syntheticTensorTypes(s, ftype, shapes);
  const tensors = new Map<string, GgufTensorInfo>();
  let offset = 0;
  for (const [tname, shape] of shapes) {
    const typeName = types.get(tname) as WeightType;
    const type = ggmlTypeByName(typeName).id;
    const nBytes = tensorBytes(type, shape, tname);
    tensors.set(tname, { name: tname, type, typeName, shape, fileOffset: offset, nBytes });
    offset += Math.ceil(nBytes / 32) * 32;
  }
  return {
    version: 3,
    metadata,
    tensors,
    dataOffset: 0,
    synthetic: { seed },
    streamTensorData: async () => {
      throw new EngineError(
        'invalid_argument',
        'a synthetic model has no tensor data to stream; its weights are made on the GPU',
      );
    },
  };
}
