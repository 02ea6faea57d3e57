/**
 * Synthetic models: the exact tensor shapes and types of real models, with seeded random weights made
 * on the GPU (no download, no host memory for weights). Their speed is the real model's speed; their
 * text is noise. Named `synthetic:SHAPE-TYPE`, e.g. `synthetic:llama-3.2-1b-q4_k_m`.
 *
 * Shapes come from the models' published configs (config.json / GGUF metadata): hidden size, layers,
 * heads, KV heads, FFN size, vocabulary, tied embeddings, RoPE base.
 */
import { EngineError } from '../../engine/errors.ts';
import { ggmlTypeByName, tensorBytes } from '../gguf/ggml-types.ts';
import { makeSpmVocab } from '../gguf/random-model.ts';
import type { GgufFile, GgufTensorInfo } from '../gguf/types.ts';
import { WEIGHT_BLOCK, type WeightType } from '../kernels/common.ts';
import { llamaTensorShapes } from './config.ts';

/** The shape of a real model. */
export interface SyntheticShape {
  id: string;
  /** The real model it mimics. */
  label: string;
  architecture: 'llama' | 'qwen2' | 'qwen3';
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
}

/** Shapes offered (add more freely: only the numbers matter). */
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

/** File types offered, as llama.cpp names them. */
export const SYNTHETIC_FTYPES = ['f32', 'f16', 'q8_0', 'q4_0', 'q4_k_m'] as const;
export type SyntheticFtype = (typeof SYNTHETIC_FTYPES)[number];

/** Every `synthetic:` name. */
export function syntheticNames(): string[] {
  return SYNTHETIC_SHAPES.flatMap((s) => SYNTHETIC_FTYPES.map((f) => `synthetic:${s.id}-${f}`));
}

/**
 * The type a tensor gets in a file of type `ftype`, following llama.cpp's `llama_tensor_get_type`
 * (simplified): 1-D tensors stay F32; Q4_K_M uses Q6_K for `output.weight` and for `attn_v`/`ffn_down`
 * in the first and last eighth of the layers and every third layer between (`use_more_bits`), Q4_K
 * elsewhere; a row length that is not a multiple of the block size falls back to Q8_0 (rows of 32) or
 * F16.
 */
export function tensorTypeFor(
  ftype: SyntheticFtype,
  name: string,
  shape: readonly number[],
  nLayers: number,
): WeightType {
  if (shape.length === 1 || name === 'rope_freqs.weight') return 'F32';
  const fits = (t: WeightType) => shape[0] % WEIGHT_BLOCK[t].size === 0;
  const fallback = (t: WeightType): WeightType => (fits(t) ? t : fits('Q8_0') ? 'Q8_0' : 'F16');
  switch (ftype) {
    case 'f32':
      return 'F32';
    case 'f16':
      return 'F16';
    case 'q8_0':
      return fallback('Q8_0');
    case 'q4_0':
      return fallback('Q4_0');
    case 'q4_k_m': {
      if (name === 'output.weight') return fallback('Q6_K');
      const m = /^blk\.(\d+)\.(attn_v|ffn_down)\.weight$/.exec(name);
      if (m) {
        const i = Number(m[1]);
        const moreBits = i < nLayers / 8 || i >= (7 * nLayers) / 8 || (i - Math.floor(nLayers / 8)) % 3 === 2;
        if (moreBits) return fallback('Q6_K');
      }
      return fallback('Q4_K');
    }
  }
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
 * A GGUF description (metadata and tensor infos, no data) of a synthetic model. The loader sees
 * `synthetic.seed` and fills the weights on the GPU. The tokenizer is a made-up SentencePiece vocabulary
 * of the model's size (so prompts tokenize; the text is noise). With `tokenizer: false` there is none (a
 * header for sizes and the fit arithmetic only: making a 128k-token vocabulary takes a few hundred ms).
 */
export function syntheticGguf(name: string, seed = 1, opts: { tokenizer?: boolean } = {}): GgufFile {
  const { shape: s, ftype } = parseSyntheticName(name);
  const a = s.architecture;
  const headDim = s.nEmbd / s.nHead;
  const vocab = opts.tokenizer === false ? undefined : makeSpmVocab(s.nVocab);
  const metadata: Record<string, unknown> = {
    'general.architecture': a,
    'general.name': `synthetic ${s.label} ${ftype.toUpperCase()} (random weights)`,
    'general.synthetic': true,
    [`${a}.context_length`]: s.contextLength,
    [`${a}.embedding_length`]: s.nEmbd,
    [`${a}.feed_forward_length`]: s.nFF,
    [`${a}.attention.head_count`]: s.nHead,
    [`${a}.attention.head_count_kv`]: s.nHeadKv,
    [`${a}.block_count`]: s.nLayers,
    [`${a}.rope.dimension_count`]: headDim,
    [`${a}.rope.freq_base`]: s.ropeFreqBase,
    [`${a}.attention.layer_norm_rms_epsilon`]: s.rmsEps,
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
    ropeDim: headDim,
  });
  const tensors = new Map<string, GgufTensorInfo>();
  let offset = 0;
  for (const [tname, shape] of shapes) {
    const typeName = tensorTypeFor(ftype, tname, shape, s.nLayers);
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
