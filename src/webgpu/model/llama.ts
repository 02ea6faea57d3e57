/**
 * The llama forward pass on WebGPU (Llama 2/3, TinyLlama, SmolLM, Mistral), read top to bottom like
 * llama2.c's `forward()`: one kernel per line, shapes in ggml order (inner dimension first).
 *
 *   x  = token_embd[ids]                                  [T, nEmbd]
 *   per layer l:
 *     q, k→kCache, v→vCache = RoPE(W_qkv · RMSNorm(x))    fused: norm + 3 matmuls + RoPE + KV store
 *     xb = softmax(q·Kᵀ/√hd) · V                          causal GQA over positions 0..pos
 *     x += W_o · xb
 *     hb = SiLU(W_gate · RMSNorm(x)) ⊙ (W_up · RMSNorm(x)) fused: norm + 2 matmuls + SwiGLU
 *     x += W_down · hb
 *   logits = W_out · RMSNorm(x[T-1])                      [nVocab]
 *   next   = argmax(logits)                               on the GPU; only this u32 is read back
 *
 * phi3 runs the same kernels: its fused attn_qkv is bound as the Q/K/V kernel's three segments and its
 * [gate | up] ffn_up as the SwiGLU unit's two weights ({@link fusedWeightViews}); its LongRoPE factors and
 * attn_factor go into the RoPE table ({@link ropeTable}).
 *
 * The WGSL lives in kernels/ (the fused matmuls of this block and their epilogues in kernels/llama-ops.ts);
 * this file plans each weight's parts and each kernel's bindings before allocating, then binds buffers to
 * the kernels' binding names (kernels/bindings.ts). Pipelines and bind groups are made at load; a step
 * writes one 16-byte uniform and encodes one command buffer. Prefill runs in batches of up to `batchSize`
 * tokens through the matrix × matrix pipelines ({@link PrefillMatmul}: mmm.ts tiles on GPUs, mmv register
 * tiles on software adapters) and the tiled causal attention; decode runs the matrix × vector pipelines.
 */
import { EngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import type { GgufFile, GgufTensorInfo } from '../../gguf/types.ts';
import { type LlamaConfig, phi3RopeFactorsTensor } from '../../model/config.ts';
import { argmaxWGSL } from '../kernels/argmax.ts';
import {
  attentionSplit,
  attentionWGSL,
  attentionWorkgroupSize,
  type FlashLayout,
  flashCombineWGSL,
  flashDecodeWGSL,
  flashHeadGroups,
  flashSupports,
  kvBytesPerElement,
  MAX_SPLITS,
  type PrefillAttentionPlan,
  type PrefillLayout,
  prefillAttentionPlan,
  prefillAttentionSupports,
  prefillAttentionWGSL,
} from '../kernels/attention.ts';
import { bindGroupByName, type KernelSource, kernelSource } from '../kernels/bindings.ts';
import {
  packStep,
  rowBytes,
  STEP_BYTES,
  WEIGHT_BLOCK,
  WEIGHT_TYPES,
  type WeightType,
  WG,
} from '../kernels/common.ts';
import { embedWGSL } from '../kernels/embed.ts';
import { FILL_PARAMS_BYTES, fillWGSL, packFillParams } from '../kernels/fill.ts';
import { qkNormRopeWGSL } from '../kernels/headnorm.ts';
import {
  logitsMatmul,
  type MatmulSpec,
  partBinding,
  qkvRopeMatmul,
  residualMatmul,
  storeMatmul,
  swigluMatmul,
  type WeightParts,
} from '../kernels/llama-ops.ts';
import {
  fitStorageBindings,
  gemvWGSL,
  gemvWorkgroupsX,
  type MatmulOptions,
  matmulWGSL,
  matmulWorkgroupsX,
  rowsWGSL,
  rowsWorkgroupsX,
} from '../kernels/matmul.ts';
import {
  INT_DOT_TYPES,
  type MmmOptions,
  mmmIntDotCovers,
  mmmWGSL,
  mmmWorkgroupsX,
  TILE_TOKENS,
} from '../kernels/mmm.ts';
import { type MmvLayout, mmvSupports, mmvWGSL, mmvWorkgroupsX } from '../kernels/mmv.ts';
import { rmsNormAddWGSL } from '../kernels/postnorm.ts';
import {
  isPlanarType,
  planarBlockBytes,
  planarBytes,
  repackParams,
  repackWGSL,
  repackWorkgroups,
} from '../kernels/repack.ts';
import {
  HISTORY_HEADER,
  packHistory,
  packSampleParams,
  SAMPLE_DRAW_OFFSET,
  SAMPLE_PARAMS_BYTES,
  type SampleSettings,
  sampleWGSL,
} from '../kernels/sample.ts';
import { firstPrefillBatch, nextPrefillBatch, PREFILL_TARGET_MS } from './prefill.ts';

/** Kernel families of the forward pass (qwen3's Q/K norm counts as qkv). */
export type KernelFamilyName = 'embed' | 'qkv' | 'attention' | 'wo' | 'ffn' | 'down' | 'output' | 'argmax';

/** The decode matmuls, each of which may get its own {@link MmvLayout} ({@link LlamaLoadOptions.mmvFor}). */
export type MatmulFamilyName = 'qkv' | 'wo' | 'ffn' | 'down' | 'output';

/** Every {@link MatmulFamilyName}, in forward order. */
export const MATMUL_FAMILIES: readonly MatmulFamilyName[] = ['qkv', 'wo', 'ffn', 'down', 'output'];

/** See {@link LlamaModel.profiler}. */
export interface ForwardProfiler {
  /** Timestamp writes for the next pass (of `family`, in a forward pass of T tokens), or undefined. */
  passWrites(family: KernelFamilyName, T: number): GPUComputePassTimestampWrites | undefined;
}

/** Tokens per thread of the old prefill kernel (matmul.ts), kept where the others do not apply. */
const PREFILL_TT = 8;

/**
 * The prefill matrix × matrix kernels ({@link LlamaLoadOptions.prefill}):
 * - `tile` (GPUs): kernels/mmm.ts, 32 tokens × 64 rows per workgroup through workgroup-memory tiles;
 * - `mmv`: kernels/mmv.ts's register-tiled kernels at `tokens` (≤ 8) tokens per workgroup row, which
 *   software adapters run fastest (SwiftShader: ~25 tok/s against ~4 for the old kernel on a 60M Q4_0
 *   model). `splitSegments` gives every segment (Q, K and V) its own dispatch: SwiftShader runs every
 *   branch of a kernel's segment switch under a lane mask, so one fused Q/K/V kernel costs the three
 *   bodies for every workgroup (2.7× the time of three single-segment kernels there).
 * K not a multiple of 32 (float rows) falls back to matmul.ts's kernel in the `mmv` choice.
 * `intDot` on `tile` runs the integer-dot tile (mmm.ts {@link MmmOptions.intDot}; needs WGSL's
 * packed_4x8_integer_dot_product) for every matmul whose weights are all of {@link INT_DOT_TYPES}; the
 * others keep the float tile.
 */
export type PrefillMatmul =
  | { kind: 'tile'; intDot?: boolean }
  | { kind: 'mmv'; layout: MmvLayout; tokens: number; splitSegments: boolean };

/** Default prefill kernels for a GPU. */
export const GPU_PREFILL: PrefillMatmul = { kind: 'tile' };

/** A weight on the GPU, possibly split by rows across several buffers (each ≤ the binding limit). */
export interface GpuWeight {
  name: string;
  type: WeightType;
  /** Elements per row (ggml ne[0]). */
  K: number;
  /** Rows (ggml ne[1], 1 for vectors). */
  N: number;
  parts: { buffer: GPUBuffer; rowStart: number; rowCount: number }[];
  bytes: number;
  /** Repacked into planes at load (kernels/repack.ts); each part holds rowCount·K / block size blocks. */
  planar?: boolean;
}

/** Tensors read only by matmuls: the ones repacked into planes when their type has a planar layout. */
export const MATMUL_WEIGHT =
  /^(blk\.\d+\.(attn_q|attn_k|attn_v|attn_qkv|attn_output|ffn_gate|ffn_up|ffn_down)|output)\.weight$/;

/** Load-time options for {@link LlamaModel.load}. */
export interface LlamaLoadOptions {
  /** KV cache length in tokens. */
  contextLength: number;
  /** The most tokens per prefill batch (the run state's buffers hold this many; engine default: prefill.ts). */
  batchSize: number;
  /** Largest buffer binding to use, bytes (default: the device's maxStorageBufferBindingSize). */
  maxBindingBytes?: number;
  /**
   * Decode kernel layout: 'ksplit' (32 threads per output row, coalesced; for hardware GPUs) or 'rows'
   * (one thread per row, no workgroup memory or barriers, and 16-thread attention workgroups; fastest on
   * software adapters such as SwiftShader, where each barrier costs ~20 µs per workgroup). Default 'ksplit'.
   */
  decodeKernel?: 'ksplit' | 'rows';
  /**
   * Repack Q4_0/Q8_0/Q5_0/Q6_K/Q4_K matmul weights into aligned planes at load (kernels/repack.ts; default
   * true). False keeps the file's blocks (the kernels read both).
   */
  repack?: boolean;
  /**
   * Decode: one dispatch per segment of a fused matmul (Q, K and V) instead of one for all (default
   * false). Software adapters run every branch of a kernel's segment switch under a lane mask, so there
   * the fused Q/K/V kernel costs all three bodies in every workgroup (see {@link PrefillMatmul}).
   */
  splitDecodeSegments?: boolean;
  /**
   * Layout of the decode matrix × vector kernels (kernels/mmv.ts), used for every decode matmul whose K
   * is a multiple of 32 and that `mmvFor` does not name; the others (and all of them when both are unset)
   * use `decodeKernel`.
   */
  mmv?: MmvLayout;
  /** A layout per decode matmul (kernels/tune.ts chooses one per shape), before `mmv`. */
  mmvFor?: Partial<Record<MatmulFamilyName, MmvLayout>>;
  signal?: AbortSignal;
  /** Prefill matrix × matrix kernels (default {@link GPU_PREFILL}). */
  prefill?: PrefillMatmul;
  /** KV-cache element type (default f16, as llama.cpp). */
  kvType?: KvType;
  /**
   * Decode attention (kernels/attention.ts): the flash-decoding layout and how positions are split into
   * chunks (default: the tiled layout, chunks of ≥ 128 positions aiming at 256 workgroups). Shapes the
   * flash kernel does not take (head size not a multiple of 4) use the prefill kernel.
   */
  attention?: AttentionPolicy;
  /** Bytes read from the source so far. */
  onFetch?: (done: number, total: number) => void;
  /** Bytes written to the GPU so far. */
  onUpload?: (done: number, total: number) => void;
  /** Pipelines compiled so far. */
  onCompile?: (done: number, total: number) => void;
}

/**
 * The decode attention's layout and chunking ({@link LlamaLoadOptions.attention}; see
 * kernels/attention.ts `attentionSplit`): `fixedChunk` (tests) fixes the positions per chunk. `prefill`:
 * the prefill attention (kernels/attention.ts `prefillAttentionWGSL`; default `tiled`), or `per-token`
 * for the older one-workgroup-per-(head, token) kernel, which shapes the tiled kernel does not take
 * (head size not a multiple of 4 or above 256) use anyway.
 */
export interface AttentionPolicy {
  layout: FlashLayout;
  targetWorkgroups: number;
  minChunk: number;
  fixedChunk?: number;
  prefill?: PrefillLayout | 'per-token';
}

/** Default decode attention for a GPU: tiled, chunks of ≥ 128 positions aiming at 256 workgroups. */
export const GPU_ATTENTION: AttentionPolicy = {
  layout: { kind: 'tiled', lanes: 1 },
  targetWorkgroups: 256,
  minChunk: 128,
};

/** Load timings in ms. */
export interface LlamaLoadTimes {
  fetchMs: number;
  uploadMs: number;
  compileMs: number;
}

function weightType(t: GgufTensorInfo): WeightType {
  const w = WEIGHT_TYPES.find((x) => x === t.typeName);
  if (!w) {
    throw new EngineError(
      'unsupported_model',
      `tensor ${t.name} has type ${t.typeName}, which this engine does not run (supported: ${WEIGHT_TYPES.join(', ')})`,
    );
  }
  return w;
}

function tensorRowBytes(t: GgufTensorInfo | GpuWeight, type: WeightType, K: number): number {
  try {
    return rowBytes(type, K);
  } catch (e) {
    throw new EngineError('gguf_invalid', `tensor ${t.name}: ${(e as Error).message}`);
  }
}

/** A weight's planned parts, before any buffer exists. */
type WeightPlan = Omit<GpuWeight, 'parts'> & {
  parts: { rowStart: number; rowCount: number; size: number }[];
};

/** The kernels' view of a weight or its plan: type and parts (with planar block counts where repacked). */
function weightParts(w: WeightPlan | GpuWeight): WeightParts {
  return {
    type: w.type,
    parts: w.parts.map((p) => ({
      rowStart: p.rowStart,
      rowCount: p.rowCount,
      planar: w.planar ? (p.rowCount * w.K) / WEIGHT_BLOCK[w.type].size : undefined,
    })),
  };
}

/**
 * Plans each tensor's buffers: one where it fits `maxBuffer` bytes, else parts of whole rows, as many as
 * it takes. Q/K/V parts hold whole heads (RoPE pairs stay together); a layer's ffn_gate and ffn_up are
 * split at the same rows (one SwiGLU unit reads both). Planar (repacked) parts are rounded up to 16 bytes.
 * @throws EngineError('unsupported_model') for a tensor type the engine does not run, 'gguf_invalid' for a
 *   row size that is not whole blocks, 'out_of_memory' when one row (one head for Q/K/V) is larger than
 *   a binding.
 */
function planWeights(
  file: GgufFile,
  cfg: LlamaConfig,
  maxBuffer: number,
  maxBinding: number,
  repack: boolean,
): Map<string, WeightPlan> {
  const plans = new Map<string, WeightPlan>();
  // Bytes a row takes on the GPU: its file bytes, or its planes' (Q4_K's are 148/144 of them).
  const gpuRowBytes = (t: GgufTensorInfo) => {
    const type = weightType(t);
    const rb = tensorRowBytes(t, type, t.shape[0]);
    return repack && isPlanarType(type) && MATMUL_WEIGHT.test(t.name)
      ? (rb / WEIGHT_BLOCK[type].bytes) * planarBlockBytes(type)
      : rb;
  };
  const rowBytesOf = (name: string) => {
    const t = file.tensors.get(name);
    return t ? gpuRowBytes(t) : 0;
  };
  for (const t of file.tensors.values()) {
    const type = weightType(t);
    const K = t.shape[0];
    const N = t.shape.slice(1).reduce((a, b) => a * b, 1);
    const rb = tensorRowBytes(t, type, K);
    const planar = repack && isPlanarType(type) && MATMUL_WEIGHT.test(t.name);
    const ffn = /^blk\.(\d+)\.ffn_(gate|up)\.weight$/.exec(t.name);
    // Gate and up split alike: by the larger of their row sizes.
    const splitRowBytes = ffn
      ? Math.max(rowBytesOf(`blk.${ffn[1]}.ffn_gate.weight`), rowBytesOf(`blk.${ffn[1]}.ffn_up.weight`))
      : gpuRowBytes(t);
    const align = /\.attn_([qkv]|qkv)\.weight$/.test(t.name) ? cfg.headDim : 1;
    // Planar parts are rounded up to 16 bytes: leave room for it.
    let rowsPerPart = Math.floor((maxBuffer - (planar ? 16 : 0)) / splitRowBytes);
    if (rowsPerPart < N) {
      rowsPerPart -= rowsPerPart % align;
      while (rowsPerPart > 0 && (rowsPerPart * rb) % 4 !== 0) rowsPerPart -= align;
    }
    if (rowsPerPart < 1) {
      throw new EngineError(
        'out_of_memory',
        `tensor ${t.name} has rows of ${rb} bytes${align > 1 ? ` (and heads of ${align} rows)` : ''} but this adapter allows at most ${maxBinding} bytes per buffer binding`,
      );
    }
    const parts: WeightPlan['parts'] = [];
    // phi3's fused tensors: parts never straddle a segment (Q | K | V, gate | up), so each segment is a
    // whole number of parts and binds as a weight of its own ({@link fusedWeightViews}).
    const ends = fusedSegmentEnds(t.name, cfg) ?? [N];
    let segStart = 0;
    for (const segEnd of ends) {
      for (let r = segStart; r < segEnd; r += rowsPerPart) {
        const rowCount = Math.min(rowsPerPart, segEnd - r);
        const size = planar
          ? planarBytes(type, (rowCount * K) / WEIGHT_BLOCK[type].size)
          : Math.ceil((rowCount * rb) / 4) * 4;
        parts.push({ rowStart: r, rowCount, size });
      }
      segStart = segEnd;
    }
    plans.set(t.name, { name: t.name, type, K, N, parts, bytes: t.nBytes, planar });
  }
  return plans;
}

/**
 * The row where each segment of a phi3 fused tensor ends: `blk.N.attn_qkv.weight` [qDim, +kvDim, +kvDim]
 * (Q, K, V rows; llama.cpp build_qkv's views), phi3's `blk.N.ffn_up.weight` [nFF, 2·nFF] (gate, up;
 * ggml_swiglu's halves); undefined for any other tensor.
 */
function fusedSegmentEnds(name: string, cfg: LlamaConfig): number[] | undefined {
  if (!cfg.phi3) return undefined;
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  if (/^blk\.\d+\.attn_qkv\.weight$/.test(name)) return [qDim, qDim + kvDim, qDim + 2 * kvDim];
  if (/^blk\.\d+\.ffn_up\.weight$/.test(name)) return [cfg.nFF, 2 * cfg.nFF];
  return undefined;
}

/**
 * The weights as the kernels bind them: phi3's fused tensors seen as the separate weights of the llama
 * layout, each a run of the fused tensor's parts (planned segment by segment in {@link planWeights}) with
 * rows counted from the segment's start: attn_qkv → attn_q, attn_k, attn_v; ffn_up [gate | up] →
 * ffn_gate (rows 0..nFF) and ffn_up (rows nFF..2·nFF). So the fused Q/K/V kernel and the SwiGLU unit
 * read the one uploaded tensor. Other models: `m` itself.
 * @throws EngineError('gguf_invalid') if a fused tensor is missing.
 */
function fusedWeightViews<T extends WeightPlan | GpuWeight>(
  m: Map<string, T>,
  cfg: LlamaConfig,
): Map<string, T> {
  if (!cfg.phi3) return m;
  const out = new Map(m);
  const slice = (w: T, name: string, start: number, count: number): T => {
    const parts = w.parts
      .filter((p) => p.rowStart >= start && p.rowStart < start + count)
      .map((p) => ({ ...p, rowStart: p.rowStart - start }));
    return { ...w, name, N: count, bytes: (w.bytes / w.N) * count, parts } as T;
  };
  const get = (name: string): T => {
    const w = m.get(name);
    if (!w) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
    return w;
  };
  const qDim = cfg.nHead * cfg.headDim;
  const kvDim = cfg.nHeadKv * cfg.headDim;
  for (let l = 0; l < cfg.nLayers; l++) {
    const b = `blk.${l}`;
    if (cfg.phi3.fusedQkv) {
      const qkv = get(`${b}.attn_qkv.weight`);
      out.set(`${b}.attn_q.weight`, slice(qkv, `${b}.attn_q.weight`, 0, qDim));
      out.set(`${b}.attn_k.weight`, slice(qkv, `${b}.attn_k.weight`, qDim, kvDim));
      out.set(`${b}.attn_v.weight`, slice(qkv, `${b}.attn_v.weight`, qDim + kvDim, kvDim));
    }
    const up = get(`${b}.ffn_up.weight`);
    out.set(`${b}.ffn_gate.weight`, slice(up, `${b}.ffn_gate.weight`, 0, cfg.nFF));
    out.set(`${b}.ffn_up.weight`, slice(up, `${b}.ffn_up.weight`, cfg.nFF, cfg.nFF));
  }
  return out;
}

/** The fused matmuls of every layer and of the output, each as the dispatches that fit the device's bindings. */
interface ModelSpecs {
  layers: Record<'qkv' | 'wo' | 'ffn' | 'down', MatmulSpec[]>[];
  /** Logits of the last token. */
  out: MatmulSpec[];
  /** Logits of every token (teacher-forced scoring). */
  outAll: MatmulSpec[];
}

/**
 * The matmul specs of the whole model (kernels/llama-ops.ts) from the weight plans, each split into as
 * few dispatches as fit `maxStorage` storage buffers per shader stage.
 * @throws EngineError('gguf_invalid') for a missing tensor, 'unsupported_model' when a kernel cannot fit
 *   the device's binding count (token_embd in more parts than it allows).
 */
function layerSpecs(
  cfg: LlamaConfig,
  plans: Map<string, WeightPlan>,
  maxStorage: number,
  kvType: KvType,
): ModelSpecs {
  const P = (name: string): WeightPlan => {
    const w = plans.get(name);
    if (!w) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
    return w;
  };
  const split = (spec: MatmulSpec) => fitStorageBindings(spec, maxStorage);
  const norm = (name: string) => ({ eps: cfg.rmsEps, type: P(name).type });
  const qDim = cfg.nHead * cfg.headDim;
  const layers = Array.from({ length: cfg.nLayers }, (_, l) => {
    const b = `blk.${l}`;
    const wp = (name: string) => weightParts(P(`${b}.${name}.weight`));
    const qkv = qkvRopeMatmul(
      {
        nEmbd: cfg.nEmbd,
        nHead: cfg.nHead,
        nHeadKv: cfg.nHeadKv,
        headDim: cfg.headDim,
        ropeDim: cfg.ropeDim,
        neox: cfg.ropeType === 'neox',
        norm: norm(`${b}.attn_norm.weight`),
        bias: cfg.qkvBias,
        deferRope: cfg.qkNorm,
        kvType,
      },
      wp('attn_q'),
      wp('attn_k'),
      wp('attn_v'),
    );
    // Gemma: attn_output and ffn_down store to `post` (RMS-normed into the residual by kernels/postnorm.ts);
    // GeGLU instead of SwiGLU.
    const g = cfg.gemma;
    return {
      qkv: split(qkv),
      wo: split(
        g
          ? storeMatmul(qDim, 'attn_output', wp('attn_output'), cfg.nEmbd, 'post')
          : residualMatmul(qDim, 'attn_output', wp('attn_output'), cfg.nEmbd),
      ),
      ffn: split(
        swigluMatmul(
          cfg.nEmbd,
          cfg.nFF,
          norm(`${b}.ffn_norm.weight`),
          wp('ffn_gate'),
          wp('ffn_up'),
          g ? 'gelu' : 'silu',
        ),
      ),
      down: split(
        g
          ? storeMatmul(cfg.nFF, 'ffn_down', wp('ffn_down'), cfg.nEmbd, 'post')
          : residualMatmul(cfg.nFF, 'ffn_down', wp('ffn_down'), cfg.nEmbd),
      ),
    };
  });
  const outW = weightParts(plans.get('output.weight') ?? P('token_embd.weight'));
  const emb = P('token_embd.weight');
  // The embedding kernel binds ids, x and every part of token_embd.
  if (emb.parts.length + 2 > maxStorage) {
    throw new EngineError(
      'unsupported_model',
      `token_embd.weight is ${emb.bytes} bytes and would need ${emb.parts.length} buffer bindings; this device allows ${maxStorage - 2} beside the kernel's own (maxStorageBuffersPerShaderStage ${maxStorage})`,
    );
  }
  const cap = cfg.gemma?.finalSoftcap ?? 0; // Gemma's final logit soft-capping
  return {
    layers,
    out: split(logitsMatmul(cfg.nEmbd, cfg.nVocab, norm('output_norm.weight'), outW, false, cap)),
    outAll: split(logitsMatmul(cfg.nEmbd, cfg.nVocab, norm('output_norm.weight'), outW, true, cap)),
  };
}

/** One dispatch of the forward pass: a pipeline, its bind group and its grid. */
interface Dispatch {
  family: KernelFamilyName;
  pipeline: GPUComputePipeline;
  group: GPUBindGroup;
  /** Workgroups along x. */
  wgX: number;
  /**
   * Workgroups along y: one per token, one per token tile (the matmul's TT), one, or one per attention
   * chunk (`chunks`); `combine`: one per token, dispatched only when the step has more than one chunk.
   */
  y: 'tokens' | 'tiles' | 'one' | 'chunks' | 'combine';
  /** Tokens per workgroup row when `y` is 'tiles'. */
  tile?: number;
}

/** Compiles one compute pipeline. @throws EngineError('unsupported_model') with the compiler's messages. */
async function compilePipeline(device: GPUDevice, label: string, code: string): Promise<GPUComputePipeline> {
  const module = device.createShaderModule({ label, code });
  try {
    return await device.createComputePipelineAsync({
      label,
      layout: 'auto',
      compute: { module, entryPoint: 'main' },
    });
  } catch (e) {
    const info = await module.getCompilationInfo?.().catch(() => undefined);
    const msgs = info?.messages.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('\n') ?? '';
    throw new EngineError('unsupported_model', `pipeline ${label} failed to compile: ${e}\n${msgs}`, {
      cause: e,
    });
  }
}

/**
 * RoPE table [nCtx, ropeDim/2] of (cos θ, sin θ), θ = pos · freqScale · base^(−2i/ropeDim) (llama.cpp's
 * `ggml_rope_ext` with linear scaling, freqScale = 1 / rope.scaling.factor, and θ_i divided by
 * `rope_freqs.weight`[i] where the model has it, or by phi3's chosen LongRoPE factor i), computed in
 * float64 then rounded. `attnFactor` (phi3's rope.scaling.attn_factor; default 1) multiplies cos and sin,
 * as ggml's rope_yarn multiplies them by mscale; dims past ropeDim are not rotated and not scaled.
 */
export function ropeTable(
  nCtx: number,
  ropeDim: number,
  freqBase: number,
  freqScale = 1,
  freqFactors?: Float32Array,
  attnFactor = 1,
): Float32Array {
  const half = ropeDim / 2;
  const out = new Float32Array(nCtx * half * 2);
  for (let p = 0; p < nCtx; p++) {
    for (let i = 0; i < half; i++) {
      const theta = (p * freqScale * freqBase ** ((-2 * i) / ropeDim)) / (freqFactors ? freqFactors[i] : 1);
      out[(p * half + i) * 2] = Math.cos(theta) * attnFactor;
      out[(p * half + i) * 2 + 1] = Math.sin(theta) * attnFactor;
    }
  }
  return out;
}

/** A llama model resident on one GPUDevice, with its KV cache and run state. */
export class LlamaModel {
  readonly cfg: LlamaConfig;
  readonly device: GPUDevice;
  readonly nCtx: number;
  readonly batchSize: number;
  readonly weightBytes: number;
  readonly times: LlamaLoadTimes;
  /** The decode matmul layout of matmuls that mmv does not take. */
  readonly decodeKernel: 'ksplit' | 'rows';
  /** The mmv layout of each decode matmul, where used ({@link LlamaLoadOptions.mmv}, `mmvFor`). */
  readonly mmv: Partial<Record<MatmulFamilyName, MmvLayout>>;
  /** Weight tensors repacked into planes at load. */
  planarTensors = 0;
  /** Weight tensors split by rows across several buffers (each larger than one binding). */
  splitTensors = 0;
  /** Decode matmuls per forward pass that use mmv, and those that use `decodeKernel` (K not a multiple of 32). */
  readonly decodeMatmuls = { mmv: 0, fallback: 0 };
  private buffers: GPUBuffer[] = [];
  private stepBuf!: GPUBuffer;
  private stepData = new Uint32Array(4);
  /** Token ids in [batchSize] (u32). */
  private ids!: GPUBuffer;
  /** Logits [nVocab]. */
  private logits!: GPUBuffer;
  /** The argmax result [1] u32 (padded to 16 bytes). */
  private tokenOut!: GPUBuffer;
  private readbacks: GPUBuffer[] = [];
  private logitsReadback!: GPUBuffer;
  /** Each layer's dispatches in forward order (qkv, [qk norm], attention, wo, ffn, down), for T = 1. */
  private decodeLayers!: Dispatch[][];
  /** The same with the prefill (matrix × matrix, {@link PrefillMatmul}) kernels. */
  private prefillLayers!: Dispatch[][];
  private embed!: Dispatch;
  /** The final norm + output matmul of the last token (more than one dispatch only past the binding limit). */
  private output!: Dispatch[];
  private argmax!: Dispatch;
  /** The logits-for-every-position kernel (teacher-forced scoring), made on first use. */
  private allLogits?: { kernels: Dispatch[]; logits: GPUBuffer; readback: GPUBuffer };
  /** The output kernel's buffers by binding name (for the every-token variant made on first use). */
  private outAllBuffers!: Record<string, GPUBuffer>;
  /** Per-layer Q/K/V bias buffers (qwen2), else undefined. */
  private qkvBiasBuffers: (GPUBuffer | undefined)[] = [];
  private destroyed = false;

  private constructor(
    device: GPUDevice,
    cfg: LlamaConfig,
    opts: LlamaLoadOptions,
    weightBytes: number,
    times: LlamaLoadTimes,
    private readonly specs: ModelSpecs,
  ) {
    this.device = device;
    this.cfg = cfg;
    this.nCtx = opts.contextLength;
    this.batchSize = opts.batchSize;
    this.weightBytes = weightBytes;
    this.times = times;
    this.decodeKernel = opts.decodeKernel ?? 'ksplit';
    this.mmv = Object.fromEntries(
      MATMUL_FAMILIES.flatMap((f) => {
        const l = opts.mmvFor?.[f] ?? opts.mmv;
        return l ? [[f, l]] : [];
      }),
    );
    this.prefillMatmul = opts.prefill ?? GPU_PREFILL;
    this.splitDecodeSegments = opts.splitDecodeSegments ?? false;
    this.kvType = opts.kvType ?? 'f16';
    this.attentionPolicy = opts.attention ?? GPU_ATTENTION;
  }

  /** KV-cache element type. */
  readonly kvType: KvType;
  /** The prefill matrix × matrix kernels. */
  readonly prefillMatmul: PrefillMatmul;
  /** Matmul families whose prefill runs the integer-dot tile (`prefillMatmul.intDot`, covered types). */
  readonly intDotFamilies = new Set<MatmulFamilyName>();
  /** Decode runs each segment of a fused matmul as a dispatch of its own. */
  readonly splitDecodeSegments: boolean;
  /** Tokens per workgroup row of the prefill matmuls (a prefill batch is best a multiple of it). */
  get prefillTile(): number {
    return this.prefillMatmul.kind === 'tile' ? TILE_TOKENS : this.prefillMatmul.tokens;
  }
  /** How decode attention runs (layout, chunking). */
  readonly attentionPolicy: AttentionPolicy;
  /** Decode attention: flash-decoding, or the prefill kernel where the head shape rules flash out. */
  get decodeAttention(): 'flash' | 'prefill-kernel' {
    return this.flashWorkgroups > 0 ? 'flash' : 'prefill-kernel';
  }
  /** Workgroups per attention chunk of the flash kernel (nHeadKv × head groups); 0 without flash. */
  private flashWorkgroups = 0;
  /** Prefill attention: the tiled kernel's layout and tiles, or the per-(head, token) kernel. */
  get prefillAttention(): {
    kernel: 'tiled' | 'rows' | 'per-token';
    plan?: PrefillAttentionPlan;
    shareKv?: number;
  } {
    const p = this.prefillAttn;
    return p
      ? { kernel: p.layout.kind, plan: p.plan, ...(p.layout.shareKv ? { shareKv: p.layout.shareKv } : {}) }
      : { kernel: 'per-token' };
  }
  private prefillAttn?: { layout: PrefillLayout; plan: PrefillAttentionPlan };
  /** Positions per chunk and chunks of the step being encoded (Step.p2 holds the chunk). */
  private split = { chunk: 1, nSplit: 1 };
  private partO!: GPUBuffer;
  private partMl!: GPUBuffer;

  /** Bytes of the KV cache: 2 × nLayers × nCtx × kvDim × (2 for f16, 4 for f32). */
  get kvBytes(): number {
    const c = this.cfg;
    return 2 * c.nLayers * this.nCtx * c.nHeadKv * c.headDim * kvBytesPerElement(this.kvType);
  }

  /** The attention chunking for a step of `nTokens` at `pos0`, also written into the Step uniform. */
  private stepSplit(nTokens: number, pos0: number): { chunk: number; nSplit: number } {
    this.split =
      nTokens === 1 && this.flashWorkgroups > 0
        ? attentionSplit(pos0 + nTokens, {
            ...this.attentionPolicy,
            workgroupsPerChunk: this.flashWorkgroups,
          })
        : { chunk: 1, nSplit: 1 };
    return this.split;
  }

  private writeStep(nTokens: number, pos0: number): void {
    const { chunk } = this.stepSplit(nTokens, pos0);
    const d = packStep(nTokens, pos0, this.stepData);
    d[2] = chunk;
    this.device.queue.writeBuffer(this.stepBuf, 0, d);
  }

  /**
   * Streams the GGUF's tensors to GPU buffers, allocates the KV cache and run state, and compiles the
   * pipelines.
   * @throws EngineError 'unsupported_model' (tensor type), 'out_of_memory' (an allocation failed; all
   *   buffers made so far are released), 'gguf_invalid' / 'network' / 'aborted' from the source.
   */
  static async load(
    device: GPUDevice,
    file: GgufFile,
    cfg: LlamaConfig,
    opts: LlamaLoadOptions,
  ): Promise<LlamaModel> {
    const maxBinding = Math.min(
      opts.maxBindingBytes ?? Number.POSITIVE_INFINITY,
      device.limits.maxStorageBufferBindingSize,
    );
    const maxBuffer = Math.min(device.limits.maxBufferSize, maxBinding);
    const times: LlamaLoadTimes = { fetchMs: 0, uploadMs: 0, compileMs: 0 };
    const weights = new Map<string, GpuWeight>();
    const allBuffers: GPUBuffer[] = [];
    const t0 = performance.now();
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let weightBytes = 0;
    let model: LlamaModel | undefined;
    let planar: PlanarUploader | undefined;
    try {
      // 1. Plan every weight's parts (any matrix larger than one binding is split by rows) and every
      // kernel's bindings, then allocate: a model this device cannot bind is refused before allocating.
      const plans = planWeights(file, cfg, maxBuffer, maxBinding, opts.repack !== false);
      const specs = layerSpecs(
        cfg,
        fusedWeightViews(plans, cfg),
        device.limits.maxStorageBuffersPerShaderStage,
        opts.kvType ?? 'f16',
      );
      for (const plan of plans.values()) {
        const parts = plan.parts.map((p, i) => {
          const buffer = device.createBuffer({
            label: i ? `${plan.name}#${i}` : plan.name,
            size: Math.max(p.size, 16),
            // Biases are also copied into one per-layer buffer (qkvBias), so they need COPY_SRC.
            usage:
              GPUBufferUsage.STORAGE |
              GPUBufferUsage.COPY_DST |
              (plan.name.endsWith('.bias') ? GPUBufferUsage.COPY_SRC : 0),
          });
          allBuffers.push(buffer);
          return { buffer, rowStart: p.rowStart, rowCount: p.rowCount };
        });
        weights.set(plan.name, { ...plan, parts });
        weightBytes += plan.bytes;
      }
      model = new LlamaModel(device, cfg, opts, weightBytes, times, specs);
      model.planarTensors = [...weights.values()].filter((w) => w.planar).length;
      // (phi3's fused tensors count when a segment of theirs needs more than one part)
      model.splitTensors = [...weights.values()].filter(
        (w) => w.parts.length > (fusedSegmentEnds(w.name, cfg)?.length ?? 1),
      ).length;
      model.buffers = allBuffers;
      model.allocState();
      const oom = await device.popErrorScope();
      const val = await device.popErrorScope();
      if (oom || val) {
        throw new EngineError(
          'out_of_memory',
          `GPU allocation failed (${(oom ?? val)!.message}); the model needs ${weightBytes} bytes of weights plus ${model.stateBytes()} bytes of KV cache and activations`,
        );
      }

      // 2. Stream tensor data into the buffers (planar weights through a staging buffer per part,
      // repacked on the GPU as soon as the part is complete).
      planar = new PlanarUploader(device);
      await planar.prepare([...weights.values()]);
      let ropeFreqs: Uint8Array | undefined;
      // Per-dimension RoPE factors: Llama 3.1's rope_freqs, or the LongRoPE factors llama.cpp picks for
      // phi3 at this context length (llama_model::get_rope_factors).
      const factorName = cfg.ropeFreqFactors
        ? 'rope_freqs.weight'
        : cfg.phi3
          ? phi3RopeFactorsTensor(cfg.phi3, opts.contextLength)
          : undefined;
      let uploaded = 0;
      const total = weightBytes;
      if (file.synthetic) {
        ropeFreqs = await fillSynthetic(device, file, weights, planar, file.synthetic.seed, (n) => {
          if (opts.signal?.aborted) throw new EngineError('aborted', 'the load was cancelled');
          uploaded += n;
          opts.onUpload?.(uploaded, total);
        });
      } else {
        let tWait = performance.now();
        await file.streamTensorData(
          (c) => {
            times.fetchMs += performance.now() - tWait;
            const tw = performance.now();
            const w = weights.get(c.tensor.name)!;
            const rowBytes = tensorRowBytes(w, w.type, w.K);
            let off = c.offset;
            if (c.tensor.name === factorName) {
              ropeFreqs ??= new Uint8Array(c.tensor.nBytes);
              ropeFreqs.set(c.bytes, c.offset);
            }
            let src = c.bytes;
            while (src.byteLength > 0) {
              const row = Math.floor(off / rowBytes);
              const part = w.parts.find((p) => row >= p.rowStart && row < p.rowStart + p.rowCount)!;
              const partStart = part.rowStart * rowBytes;
              const partEnd = (part.rowStart + part.rowCount) * rowBytes;
              const n = Math.min(src.byteLength, partEnd - off);
              let piece = src.subarray(0, n);
              if (n % 4 !== 0) {
                const padded = new Uint8Array(Math.ceil(n / 4) * 4);
                padded.set(piece);
                piece = padded;
              }
              if (w.planar) {
                device.queue.writeBuffer(planar!.staging(w, part), off - partStart, piece);
                planar!.advance(w, part, n);
              } else {
                device.queue.writeBuffer(part.buffer, off - partStart, piece);
              }
              off += n;
              src = src.subarray(n);
            }
            uploaded += c.bytes.byteLength;
            opts.onUpload?.(uploaded, total);
            times.uploadMs += performance.now() - tw;
            tWait = performance.now();
          },
          { signal: opts.signal, onBytes: opts.onFetch },
        );
      }
      if (cfg.phi3 && factorName && weights.get(factorName)!.type !== 'F32') {
        throw new EngineError('unsupported_model', `${factorName} must be F32`);
      }
      model.writeRopeTable(
        ropeFreqs && factorName && weights.get(factorName)!.type === 'F32'
          ? new Float32Array(ropeFreqs.buffer)
          : undefined,
      );
      planar.checkDone();
      const tq = performance.now();
      await device.queue.onSubmittedWorkDone();
      times.uploadMs += performance.now() - tq;

      // 3. Pipelines and bind groups.
      const tc = performance.now();
      device.pushErrorScope('validation');
      await model.build(fusedWeightViews(weights, cfg), opts.onCompile);
      const bad = await device.popErrorScope();
      if (bad) {
        throw new EngineError(
          'unsupported_model',
          `this adapter rejected the model's kernels: ${bad.message}`,
        );
      }
      times.compileMs = performance.now() - tc;
      void t0;
      return model;
    } catch (e) {
      planar?.destroy();
      for (const b of allBuffers) b.destroy();
      model?.destroy();
      // Dawn frees destroyed buffers' memory at the next submit: flush now, not at some later one.
      device.queue.submit([]);
      // Leave the error scopes balanced if we failed before popping them.
      if (!model?.built) {
        await device.popErrorScope().catch(() => undefined);
        await device.popErrorScope().catch(() => undefined);
      }
      throw e;
    }
  }

  private built = false;

  private stateBytes(): number {
    const c = this.cfg;
    const qDim = c.nHead * c.headDim;
    const kvDim = c.nHeadKv * c.headDim;
    return (
      this.kvBytes +
      4 * (this.batchSize * (c.nEmbd + 2 * qDim + c.nFF + 1 + (c.qkNorm ? kvDim : 0)) + c.nVocab * 2) +
      this.nCtx * c.ropeDim * 4 * (c.gemma?.swa ? 2 : 1) +
      (c.gemma ? 4 * this.batchSize * c.nEmbd : 0) +
      // flash-decoding partials: (output, max, sum) per chunk, head and dim
      4 * MAX_SPLITS * (qDim + 2 * c.nHead) +
      // GPU sampler: penalised copy of the logits [nVocab], history ring [nCtx], uniform
      4 * (c.nVocab + HISTORY_HEADER + this.nCtx) +
      SAMPLE_PARAMS_BYTES
    );
  }

  private kCache: GPUBuffer[] = [];
  private vCache: GPUBuffer[] = [];
  private x!: GPUBuffer;
  private xb!: GPUBuffer;
  private q!: GPUBuffer;
  /** qwen3: this step's keys before their per-head norm and RoPE [B, kvDim] f32 (kernels/headnorm.ts). */
  private kNew?: GPUBuffer;
  private hb!: GPUBuffer;
  private rope!: GPUBuffer;
  /** Gemma: the RoPE table of the sliding-window layers (their own base and scale). */
  private ropeSwa?: GPUBuffer;
  /** Gemma: attn_output / ffn_down results before their post-norm [B, nEmbd]. */
  private post?: GPUBuffer;

  private buf(label: string, size: number, usage: number): GPUBuffer {
    const b = this.device.createBuffer({ label, size: Math.max(16, Math.ceil(size / 4) * 4), usage });
    this.buffers.push(b);
    return b;
  }

  /** KV cache and run state (llama2.c's RunState). */
  private allocState(): void {
    const c = this.cfg;
    const B = this.batchSize;
    const S = GPUBufferUsage.STORAGE;
    const qDim = c.nHead * c.headDim;
    const kvDim = c.nHeadKv * c.headDim;
    const eb = kvBytesPerElement(this.kvType);
    for (let l = 0; l < c.nLayers; l++) {
      this.kCache.push(this.buf(`blk.${l}.k_cache`, this.nCtx * kvDim * eb, S)); // [nCtx, kvDim]
      this.vCache.push(this.buf(`blk.${l}.v_cache`, this.nCtx * kvDim * eb, S)); // [nCtx, kvDim]
    }
    this.partO = this.buf('attn_part_o', MAX_SPLITS * qDim * 4, S); // [MAX_SPLITS, 1, qDim]
    this.partMl = this.buf('attn_part_ml', MAX_SPLITS * c.nHead * 8, S); // [MAX_SPLITS, 1, nHead] (max, sum)
    this.x = this.buf('x', B * c.nEmbd * 4, S); // residual stream [B, nEmbd]
    this.xb = this.buf('xb', B * qDim * 4, S); // attention output [B, nHead·headDim]
    this.q = this.buf('q', B * qDim * 4, S); // queries after RoPE [B, nHead·headDim]
    if (c.qkNorm) this.kNew = this.buf('k_new', B * kvDim * 4, S); // unrotated keys before the head norm [B, kvDim]
    this.hb = this.buf('hb', B * c.nFF * 4, S); // SwiGLU hidden [B, nFF]
    this.logits = this.buf('logits', c.nVocab * 4, S | GPUBufferUsage.COPY_SRC); // [nVocab]
    this.ids = this.buf('ids', B * 4, S | GPUBufferUsage.COPY_DST); // [B] u32
    this.tokenOut = this.buf('token_out', 16, S | GPUBufferUsage.COPY_SRC); // [1] u32
    this.allocSampler();
    this.stepBuf = this.buf('step', STEP_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    this.rope = this.buf('rope', this.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST); // [nCtx, ropeDim/2] vec2
    if (c.gemma?.swa)
      this.ropeSwa = this.buf('rope_swa', this.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST);
    if (c.gemma) this.post = this.buf('post', B * c.nEmbd * 4, S); // [B, nEmbd]
    for (let i = 0; i < 2; i++) {
      this.readbacks.push(
        this.buf(`token_readback${i}`, 16, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST),
      );
    }
    this.logitsReadback = this.buf(
      'logits_readback',
      c.nVocab * 4,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
  }

  /**
   * One F32 buffer [qDim + 2·kvDim] holding layer l's Q, K and V biases back to back (qwen2), copied on the
   * GPU from the three bias tensors.
   * @throws EngineError('unsupported_model') for biases that are not F32.
   */
  private qkvBias(l: number, b: [GpuWeight, GpuWeight, GpuWeight]): GPUBuffer {
    for (const w of b) {
      if (w.type !== 'F32')
        throw new EngineError(
          'unsupported_model',
          `bias ${w.name} is ${w.type}; only F32 biases are supported`,
        );
    }
    const sizes = b.map((w) => w.K * w.N * 4);
    const buf = this.buf(
      `blk.${l}.attn_qkv.bias`,
      sizes[0] + sizes[1] + sizes[2],
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    const enc = this.device.createCommandEncoder({ label: 'qkv bias' });
    let off = 0;
    b.forEach((w, i) => {
      enc.copyBufferToBuffer(w.parts[0].buffer, 0, buf, off, sizes[i]);
      off += sizes[i];
    });
    this.device.queue.submit([enc.finish()]);
    return buf;
  }

  /** Writes the RoPE table (after the weights arrived: it needs `rope_freqs.weight` when present). */
  private writeRopeTable(freqFactors?: Float32Array): void {
    const c = this.cfg;
    if (c.ropeFreqFactors && !freqFactors) {
      throw new EngineError('unsupported_model', 'rope_freqs.weight must be F32');
    }
    const scale = c.ropeScaling ? 1 / c.ropeScaling.factor : 1;
    this.device.queue.writeBuffer(
      this.rope,
      0,
      ropeTable(this.nCtx, c.ropeDim, c.ropeFreqBase, scale, freqFactors, c.phi3?.ropeAttnFactor),
    );
    const swa = c.gemma?.swa;
    if (swa && this.ropeSwa) {
      this.device.queue.writeBuffer(
        this.ropeSwa,
        0,
        ropeTable(this.nCtx, c.ropeDim, swa.ropeFreqBase, swa.ropeFreqScale, freqFactors),
      );
    }
  }

  /** Does decode run `spec` through mmv (a layout is set and K is whole 32-weight chunks)? */
  private usesMmv(spec: MatmulSpec, family: MatmulFamilyName): boolean {
    return this.mmv[family] !== undefined && mmvSupports(spec.K, ['F32']);
  }

  /**
   * The matmul kernel variant for `spec`, for decode (T ≤ 1 token per workgroup row) or prefill (the
   * {@link prefillMatmul} choice), and the tokens per workgroup row of its dispatch.
   */
  private matmulSource(
    label: string,
    spec: MatmulSpec,
    mode: 'decode' | 'prefill',
    family: MatmulFamilyName,
  ): { src: KernelSource; wgX: number; tile: number } {
    // The prompt's one-token output matmul is decode-shaped: the decode kernel (a prefill tile of TT
    // tokens computes TT copies of the last token's row: the 60M Q4_K_M model's Q6_K output, 32000 × 512,
    // took ~134 ms per prompt as a 16-token tile against ~63 ms as the decode kernel, SwiftShader in Node).
    if (mode === 'prefill' && !spec.lastTokenOnly) {
      const p = this.prefillMatmul;
      if (p.kind === 'tile') {
        const o: MatmulOptions = { ...spec, TT: TILE_TOKENS };
        const intDot = p.intDot === true && mmmIntDotCovers(o);
        if (intDot) this.intDotFamilies.add(family);
        return {
          src: kernelSource(label, mmmWGSL(o, { intDot })),
          wgX: mmmWorkgroupsX(o.segments),
          tile: TILE_TOKENS,
        };
      }
      if (p.kind === 'mmv' && mmvSupports(spec.K, ['F32'])) {
        const o = { ...spec, TT: p.tokens, layout: p.layout };
        return {
          src: kernelSource(label, mmvWGSL(o)),
          wgX: mmvWorkgroupsX(o.segments, p.layout),
          tile: p.tokens,
        };
      }
      const o: MatmulOptions = { ...spec, TT: PREFILL_TT };
      return {
        src: kernelSource(label, matmulWGSL(o)),
        wgX: matmulWorkgroupsX(o.segments),
        tile: PREFILL_TT,
      };
    }
    const o: MatmulOptions = { ...spec, TT: 1 };
    return { ...this.decodeSource(label, o, family), tile: 1 };
  }

  private decodeSource(
    label: string,
    o: MatmulOptions,
    family: MatmulFamilyName,
  ): { src: KernelSource; wgX: number } {
    const layout = this.mmv[family];
    if (layout && this.usesMmv(o, family)) {
      return {
        src: kernelSource(label, mmvWGSL({ ...o, layout })),
        wgX: mmvWorkgroupsX(o.segments, layout),
      };
    }
    return this.decodeKernel === 'ksplit'
      ? { src: kernelSource(label, gemvWGSL(o)), wgX: gemvWorkgroupsX(o.segments) }
      : { src: kernelSource(label, rowsWGSL(o)), wgX: rowsWorkgroupsX(o.segments) };
  }

  /**
   * Generates every kernel's source (per layer: layers may mix weight types, as Q4_K_M files do),
   * compiles the distinct ones in parallel, and binds each kernel's buffers by name.
   */
  private async build(
    weights: Map<string, GpuWeight>,
    onCompile?: (done: number, total: number) => void,
  ): Promise<void> {
    const c = this.cfg;
    const dev = this.device;
    const specs = this.specs;
    const W = (name: string): GpuWeight => {
      const w = weights.get(name);
      if (!w) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
      return w;
    };
    const vec = (name: string) => W(name).parts[0].buffer;
    /** `w_<role>`, `w_<role>_1`, … bound to the parts of `w`. */
    const parts = (role: string, w: GpuWeight) =>
      Object.fromEntries(w.parts.map((p, i) => [partBinding(role, i), p.buffer]));
    const outW = weights.get('output.weight') ?? W('token_embd.weight');
    const emb = W('token_embd.weight');
    const step = this.stepBuf;
    for (const l of specs.layers) {
      for (const f of ['qkv', 'wo', 'ffn', 'down'] as const)
        this.decodeMatmuls[this.usesMmv(l[f][0], f) ? 'mmv' : 'fallback']++;
    }
    this.decodeMatmuls[this.usesMmv(specs.out[0], 'output') ? 'mmv' : 'fallback']++;
    if (c.qkvBias) {
      this.qkvBiasBuffers = Array.from({ length: c.nLayers }, (_, l) =>
        this.qkvBias(l, [W(`blk.${l}.attn_q.bias`), W(`blk.${l}.attn_k.bias`), W(`blk.${l}.attn_v.bias`)]),
      );
    }

    // Every kernel with the buffers bound to its binding names. Sources are compiled once each.
    type Planned = Omit<Dispatch, 'pipeline' | 'group'> & {
      src: KernelSource;
      buffers: Record<string, GPUBuffer | undefined>;
    };
    const pm = this.prefillMatmul;
    const matmuls = (
      family: MatmulFamilyName,
      label: string,
      specs: MatmulSpec[],
      TT: number,
      buffers: Planned['buffers'],
    ) => {
      const mode = TT === 1 ? 'decode' : 'prefill';
      // One kernel per segment where the prefill choice or splitDecodeSegments says so (software adapters).
      const split = mode === 'prefill' ? pm.kind === 'mmv' && pm.splitSegments : this.splitDecodeSegments;
      const list = split ? specs.flatMap((s) => s.segments.map((g) => ({ ...s, segments: [g] }))) : specs;
      return list.map((spec, i): Planned => {
        const { src, wgX, tile } = this.matmulSource(
          list.length > 1 ? `${label}#${i}` : label,
          spec,
          mode,
          family,
        );
        return { family, src, wgX, tile, y: spec.lastTokenOnly ? 'one' : 'tiles', buffers };
      });
    };
    /** A kernel of a fixed grid: `wgX` workgroups by one row per token (or `y` = 'one'). */
    const fixed = (
      family: KernelFamilyName,
      label: string,
      code: string,
      wgX: number,
      buffers: Planned['buffers'],
      y: Dispatch['y'] = 'tokens',
    ): Planned => ({ family, src: kernelSource(label, code), wgX, y, buffers });
    const gm = c.gemma;
    /** Layer l's per-token attention: Gemma's Q scale, soft-cap and (SWA layers) sliding window. */
    const attnCodeOf = (l: number) =>
      attentionWGSL({
        nHead: c.nHead,
        nHeadKv: c.nHeadKv,
        headDim: c.headDim,
        scale: gm ? gm.attnScale : 1 / Math.sqrt(c.headDim),
        kvType: this.kvType,
        // 16 threads, fewer where their partials would not fit (head size > 190: Gemma's 256)
        threads: this.decodeKernel === 'ksplit' ? undefined : Math.min(16, attentionWorkgroupSize(c.headDim)),
        ...(gm?.attnSoftcap ? { softcap: gm.attnSoftcap } : {}),
        ...(gm?.swa?.layers[l] ? { window: gm.swa.window } : {}),
      });
    /** Layer l's RoPE table (Gemma's SWA layers have their own). */
    const ropeOf = (l: number) => (gm?.swa?.layers[l] && this.ropeSwa ? this.ropeSwa : this.rope);
    // Prefill attention: tiles of query tokens × the heads of a KV group (kernels/attention.ts), with
    // Gemma's Q scale, soft-cap and (SWA layers) sliding window.
    const prefillLayout = this.attentionPolicy.prefill ?? { kind: 'tiled' };
    const prefillOpts =
      prefillLayout !== 'per-token' && prefillAttentionSupports(c)
        ? {
            nHead: c.nHead,
            nHeadKv: c.nHeadKv,
            headDim: c.headDim,
            scale: gm ? gm.attnScale : 1 / Math.sqrt(c.headDim),
            kvType: this.kvType,
            layout: prefillLayout,
            ...(gm?.attnSoftcap ? { softcap: gm.attnSoftcap } : {}),
          }
        : undefined;
    this.prefillAttn = prefillOpts && { layout: prefillOpts.layout, plan: prefillAttentionPlan(prefillOpts) };
    /** Layer l's prefill attention kernel. */
    const prefillAttnCodeOf = (l: number) =>
      prefillOpts &&
      prefillAttentionWGSL(gm?.swa?.layers[l] ? { ...prefillOpts, window: gm.swa.window } : prefillOpts);
    const flashOpts = {
      nHead: c.nHead,
      nHeadKv: c.nHeadKv,
      headDim: c.headDim,
      scale: gm ? gm.attnScale : 1 / Math.sqrt(c.headDim),
      kvType: this.kvType,
      maxTokens: 1,
      nCtx: this.nCtx,
      layout: this.attentionPolicy.layout,
      ...(gm?.attnSoftcap ? { softcap: gm.attnSoftcap } : {}),
    };
    const flash = flashSupports(c);
    this.flashWorkgroups = flash ? c.nHeadKv * flashHeadGroups(flashOpts).groupsPerKvHead : 0;
    /** Layer l's flash-decoding kernel (Gemma's SWA layers with their window). */
    const flashCodeOf = (l: number) =>
      flash
        ? flashDecodeWGSL(gm?.swa?.layers[l] ? { ...flashOpts, window: gm.swa.window } : flashOpts)
        : undefined;
    const combineCode = flash
      ? flashCombineWGSL({ nHead: c.nHead, headDim: c.headDim, maxTokens: 1 })
      : undefined;
    const qkNormCode = c.qkNorm
      ? qkNormRopeWGSL({
          nHead: c.nHead,
          nHeadKv: c.nHeadKv,
          headDim: c.headDim,
          ropeDim: c.ropeDim,
          neox: c.ropeType === 'neox',
          eps: c.rmsEps,
          normType: W('blk.0.attn_q_norm.weight').type,
          kvType: this.kvType,
        })
      : undefined;
    const postNormCode = gm
      ? rmsNormAddWGSL({ n: c.nEmbd, eps: c.rmsEps, normType: W('blk.0.post_attention_norm.weight').type })
      : undefined;
    /** Gemma's post-norm + residual add of `post` with norm weight `name` (none for other models). */
    const postNorm = (label: string, name: string): Planned[] =>
      postNormCode && this.post
        ? [fixed('attention', label, postNormCode, 1, { step, y: this.post, w: vec(name), x: this.x })]
        : [];
    const layerPlan = (
      l: number,
      TT: number,
    ): Record<'qkv' | 'qkNorm' | 'attn' | 'wo' | 'postAttn' | 'ffn' | 'down' | 'postFfn', Planned[]> => {
      const b = `blk.${l}`;
      const flashCode = flashCodeOf(l);
      const prefillAttnCode = TT === 1 ? undefined : prefillAttnCodeOf(l);
      const mode = TT === 1 ? 'decode' : 'prefill';
      const sp = specs.layers[l];
      return {
        qkv: matmuls('qkv', `${b}.qkv.${mode}`, sp.qkv, TT, {
          step,
          x: this.x,
          gnorm: vec(`${b}.attn_norm.weight`),
          ...parts('attn_q', W(`${b}.attn_q.weight`)),
          ...parts('attn_k', W(`${b}.attn_k.weight`)),
          ...parts('attn_v', W(`${b}.attn_v.weight`)),
          rope: ropeOf(l),
          qkv_bias: this.qkvBiasBuffers[l],
          q_out: this.q,
          k_cache: c.qkNorm ? undefined : this.kCache[l],
          k_new: this.kNew,
          v_cache: this.vCache[l],
        }),
        qkNorm: qkNormCode
          ? [
              fixed('qkv', `${b}.qk_norm_rope`, qkNormCode, c.nHead + c.nHeadKv, {
                step,
                q: this.q,
                kc: this.kCache[l],
                k_new: this.kNew,
                qn: vec(`${b}.attn_q_norm.weight`),
                kn: vec(`${b}.attn_k_norm.weight`),
                rope: ropeOf(l),
              }),
            ]
          : [],
        attn:
          TT === 1 && flashCode && combineCode
            ? [
                fixed(
                  'attention',
                  `${b}.attn.flash`,
                  flashCode,
                  this.flashWorkgroups,
                  {
                    step,
                    q: this.q,
                    kc: this.kCache[l],
                    vc: this.vCache[l],
                    out: this.xb,
                    part_o: this.partO,
                    part_ml: this.partMl,
                  },
                  'chunks',
                ),
                fixed(
                  'attention',
                  `${b}.attn.combine`,
                  combineCode,
                  c.nHead,
                  { step, part_o: this.partO, part_ml: this.partMl, out: this.xb },
                  'combine',
                ),
              ]
            : TT !== 1 && prefillAttnCode && this.prefillAttn
              ? [
                  {
                    ...fixed(
                      'attention',
                      `${b}.attn.prefill`,
                      prefillAttnCode,
                      c.nHeadKv * this.prefillAttn.plan.groupsPerKvHead,
                      { step, q: this.q, kc: this.kCache[l], vc: this.vCache[l], out: this.xb },
                      'tiles',
                    ),
                    tile: this.prefillAttn.plan.tokensPerTile,
                  },
                ]
              : [
                  fixed('attention', `${b}.attn`, attnCodeOf(l), c.nHead, {
                    step,
                    q: this.q,
                    kc: this.kCache[l],
                    vc: this.vCache[l],
                    out: this.xb,
                  }),
                ],
        wo: matmuls('wo', `${b}.wo.${mode}`, sp.wo, TT, {
          step,
          x: this.xb,
          ...parts('attn_output', W(`${b}.attn_output.weight`)),
          residual: gm ? undefined : this.x,
          post: this.post,
        }),
        postAttn: postNorm(`${b}.post_attn_norm`, `${b}.post_attention_norm.weight`),
        ffn: matmuls('ffn', `${b}.ffn.${mode}`, sp.ffn, TT, {
          step,
          x: this.x,
          gnorm: vec(`${b}.ffn_norm.weight`),
          ...parts('ffn_gate', W(`${b}.ffn_gate.weight`)),
          ...parts('ffn_up', W(`${b}.ffn_up.weight`)),
          hb: this.hb,
        }),
        down: matmuls('down', `${b}.down.${mode}`, sp.down, TT, {
          step,
          x: this.hb,
          ...parts('ffn_down', W(`${b}.ffn_down.weight`)),
          residual: gm ? undefined : this.x,
          post: this.post,
        }),
        postFfn: postNorm(`${b}.post_ffw_norm`, `${b}.post_ffw_norm.weight`),
      };
    };
    const layers = Array.from({ length: c.nLayers }, (_, l) => l);
    const decodeLayers = layers.map((l) => layerPlan(l, 1));
    const prefillLayers = layers.map((l) => layerPlan(l, PREFILL_TT));
    const outBuffers = {
      step,
      x: this.x,
      gnorm: vec('output_norm.weight'),
      ...parts('output', outW),
      logits: this.logits,
    };
    const embed = fixed(
      'embed',
      'embed',
      embedWGSL({
        nEmbd: c.nEmbd,
        parts: emb.parts.map((p) => ({ type: emb.type, rowStart: p.rowStart, rowCount: p.rowCount })),
        ...(gm ? { scale: gm.embdScale } : {}),
      }),
      Math.ceil(c.nEmbd / WG),
      { step, ids: this.ids, x: this.x, ...Object.fromEntries(emb.parts.map((p, i) => [`e${i}`, p.buffer])) },
    );
    const output = matmuls('output', 'output', specs.out, 1, outBuffers);
    const argmax = fixed(
      'argmax',
      'argmax',
      argmaxWGSL({ nVocab: c.nVocab }),
      1,
      { logits: this.logits, out: this.tokenOut },
      'one',
    );

    const all: Planned[] = [
      embed,
      ...output,
      argmax,
      ...[...decodeLayers, ...prefillLayers].flatMap((k) => Object.values(k).flat()),
    ];
    const sources = new Map<string, string>(); // code → label of its first kernel
    for (const k of all) if (!sources.has(k.src.code)) sources.set(k.src.code, k.src.label);
    // The GPU sampler too, so the first sampled request does not wait for a compile (1–2 s on SwiftShader).
    const sampleSrc = kernelSource('sample', sampleWGSL({ nVocab: c.nVocab, ring: this.nCtx }));
    sources.set(sampleSrc.code, sampleSrc.label);
    let done = 0;
    const pipes = new Map<string, GPUComputePipeline>();
    await Promise.all(
      [...sources].map(async ([code, label]) => {
        pipes.set(code, await compilePipeline(dev, label, code));
        onCompile?.(++done, sources.size);
      }),
    );
    const dispatch = (k: Planned): Dispatch => {
      const pipeline = pipes.get(k.src.code)!;
      const group = bindGroupByName(dev, pipeline, k.src, k.buffers);
      return { family: k.family, pipeline, group, wgX: k.wgX, y: k.y, tile: k.tile };
    };
    // Per layer, in forward order: qkv (+ qwen3's / gemma3's Q/K norm), attention, wo (+ Gemma's
    // post-norm), ffn, down (+ post-norm).
    const order = (k: ReturnType<typeof layerPlan>) =>
      [...k.qkv, ...k.qkNorm, ...k.attn, ...k.wo, ...k.postAttn, ...k.ffn, ...k.down, ...k.postFfn].map(
        dispatch,
      );
    this.decodeLayers = decodeLayers.map(order);
    this.prefillLayers = prefillLayers.map(order);
    this.embed = dispatch(embed);
    this.output = output.map(dispatch);
    this.argmax = dispatch(argmax);
    this.sampler = {
      family: 'argmax', // the profiler counts it with the argmax: the dispatch that turns logits into the token
      pipeline: pipes.get(sampleSrc.code)!,
      group: bindGroupByName(dev, pipes.get(sampleSrc.code)!, sampleSrc, {
        ...this.sampleBufs,
        logits: this.logits,
        out: this.tokenOut,
      }),
      wgX: 1,
      y: 'one',
    };
    this.outAllBuffers = outBuffers;
    this.built = true;
  }

  /**
   * Dispatches per decode step (for profiling and the benchmark), counting the attention combine, which
   * runs only once the context spans more than one chunk.
   */
  get dispatchesPerToken(): number {
    return 2 + this.output.length + this.decodeLayers.reduce((n, l) => n + l.length, 0);
  }

  /**
   * Encodes the forward pass for T tokens (already in `ids`) at positions pos0..pos0+T−1, then the
   * logits of the last token and their argmax into `tokenOut` (or, with `allLogits`, every token's logits).
   * The Step uniform (and with it the attention chunking) must have been written by `writeStep`.
   */
  private encodeForward(
    enc: GPUCommandEncoder,
    T: number,
    allLogits = false,
    sample = false,
    logits = true,
  ): void {
    const decode = T === 1;
    // Profiling: one compute pass per dispatch, with the hook's timestamp writes; else one pass in all.
    const prof = this.profiler;
    const pass = prof ? undefined : enc.beginComputePass({ label: decode ? 'decode' : 'prefill' });
    const { nSplit } = this.split;
    const run = (d: Dispatch) => {
      if (d.y === 'combine' && nSplit === 1) return;
      const p =
        pass ?? enc.beginComputePass({ label: d.family, timestampWrites: prof?.passWrites(d.family, T) });
      p.setPipeline(d.pipeline);
      p.setBindGroup(0, d.group);
      const y =
        d.y === 'tiles'
          ? Math.ceil(T / (d.tile ?? 1))
          : { tokens: T, one: 1, chunks: nSplit, combine: T }[d.y];
      p.dispatchWorkgroups(d.wgX, y);
      if (!pass) p.end();
    };
    run(this.embed);
    for (const layer of decode ? this.decodeLayers : this.prefillLayers) for (const d of layer) run(d);
    if (allLogits && this.allLogits) {
      for (const d of this.allLogits.kernels) run(d);
    } else if (logits) {
      // Only the last batch of a prefill needs the logits (the output matmul is the biggest one).
      for (const d of this.output) run(d);
      run(sample ? this.samplerDispatch() : this.argmax);
    }
    pass?.end();
  }

  /**
   * Profiling hook (benchmark only; off by default): while set, every dispatch of the forward pass runs in
   * a compute pass of its own with the timestamp writes `passWrites` returns for its kernel family.
   */
  profiler?: ForwardProfiler;

  private checkAlive(): void {
    if (this.destroyed) throw new EngineError('not_loaded', 'the model was unloaded');
  }

  /**
   * Runs the prompt through the model in batches (prefill). Afterwards `tokenOut` holds the greedy next
   * token and `logits` the last position's logits. Submits one command buffer per batch.
   * @param ids prompt token ids [nTokens], nTokens ≥ 1.
   * @param pos0 position of ids[0] in the sequence (0 for a new sequence).
   * @throws EngineError('context_overflow') when pos0 + nTokens > nCtx.
   */
  prefillTokens(ids: number[], pos0 = 0): void {
    this.checkPrefill(ids, pos0);
    for (let i = 0; i < ids.length; i += this.batchSize)
      this.submitPrefill(ids.slice(i, i + this.batchSize), pos0 + i, i + this.batchSize >= ids.length);
  }

  private checkPrefill(ids: number[], pos0: number): void {
    this.checkAlive();
    if (ids.length === 0) throw new EngineError('invalid_argument', 'prefill needs at least one token');
    if (pos0 + ids.length > this.nCtx) {
      throw new EngineError(
        'context_overflow',
        `the prompt has ${ids.length} tokens but the context holds ${this.nCtx - pos0}; shorten the prompt or load with a larger context (contextLength; --ctx on the command line)`,
      );
    }
  }

  /**
   * Submits the forward pass of `batch` (≤ batchSize tokens) at positions pos…, as one command buffer;
   * the logits and their argmax only when it is the prompt's `last` batch.
   */
  private submitPrefill(batch: number[], pos: number, last: boolean): void {
    this.device.queue.writeBuffer(this.ids, 0, Uint32Array.from(batch));
    this.writeStep(batch.length, pos);
    const enc = this.device.createCommandEncoder({ label: 'prefill' });
    this.encodeForward(enc, batch.length, false, false, last);
    this.device.queue.submit([enc.finish()]);
  }

  /**
   * The prompt through the model in batches that can be cancelled (the engine's prefill): each batch is
   * submitted, awaited (`queue.onSubmittedWorkDone`) and timed, and `signal` is checked before every
   * batch, so an abort takes effect within one batch. Batches start at one token tile and adapt to the
   * measured rate so that one takes about `targetBatchMs` (prefill.ts {@link nextPrefillBatch}: multiples
   * of the tile, never above `batchSize`): a GPU soon runs full batches, a software adapter keeps them
   * small. The KV rows of an aborted prefill are left as written; nothing reads them before a later
   * prefill from position 0 overwrites them. Afterwards, as {@link prefillTokens}: `tokenOut` holds the
   * greedy next token, `logits` the last position's logits.
   * @param ids prompt token ids [nTokens], nTokens ≥ 1; @param pos0 position of ids[0].
   * @param opts.onBatch called after each batch with the tokens done so far, the batch's tokens and its ms.
   * @returns the tokens of each batch, in order, and the total ms.
   * @throws EngineError('aborted') when `signal` was aborted before a batch; 'context_overflow' as
   *   {@link prefillTokens}.
   */
  async prefill(
    ids: number[],
    pos0 = 0,
    opts: {
      signal?: AbortSignal;
      targetBatchMs?: number;
      onBatch?: (done: number, tokens: number, ms: number) => void;
    } = {},
  ): Promise<{ batches: number[]; ms: number }> {
    this.checkPrefill(ids, pos0);
    const targetMs = opts.targetBatchMs ?? PREFILL_TARGET_MS;
    // The prefill kernel's tokens per tile.
    const plan = { tile: this.prefillTile, max: this.batchSize, targetMs };
    const batches: number[] = [];
    const t0 = performance.now();
    let T = firstPrefillBatch(plan);
    for (let i = 0; i < ids.length; ) {
      if (opts.signal?.aborted) throw new EngineError('aborted', 'the prefill was stopped');
      this.checkAlive();
      const batch = ids.slice(i, i + T);
      const tb = performance.now();
      this.submitPrefill(batch, pos0 + i, i + batch.length >= ids.length);
      await this.device.queue.onSubmittedWorkDone();
      const ms = performance.now() - tb;
      i += batch.length;
      batches.push(batch.length);
      opts.onBatch?.(i, batch.length, ms);
      T = nextPrefillBatch({ tokens: batch.length, ms }, plan);
    }
    return { batches, ms: performance.now() - t0 };
  }

  /**
   * Teacher-forced logits for every position: runs `ids` through the model in batches (positions pos0…)
   * and calls `onBatch` with the logits [T, nVocab] of each batch's T positions (row j = the distribution
   * after ids[i + j]). One readback per batch.
   * @throws EngineError('context_overflow') when pos0 + ids.length > nCtx.
   */
  async logitsForAll(
    ids: number[],
    onBatch: (start: number, logits: Float32Array, T: number) => void,
    signal?: AbortSignal,
    pos0 = 0,
  ): Promise<void> {
    this.checkAlive();
    if (pos0 + ids.length > this.nCtx) {
      throw new EngineError(
        'context_overflow',
        `${ids.length} tokens do not fit the context (${this.nCtx - pos0} left)`,
      );
    }
    const V = this.cfg.nVocab;
    if (!this.allLogits) {
      const bytes = this.batchSize * V * 4;
      const logits = this.buf('logits_all', bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      const readback = this.buf(
        'logits_all_readback',
        bytes,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      );
      const buffers = { ...this.outAllBuffers, logits };
      const kernels = await Promise.all(
        this.specs.outAll.map(async (spec, i): Promise<Dispatch> => {
          const { src, wgX, tile } = this.matmulSource(`output_all#${i}`, spec, 'prefill', 'output');
          const pipeline = await compilePipeline(this.device, src.label, src.code);
          const group = bindGroupByName(this.device, pipeline, src, buffers);
          return { family: 'output', pipeline, group, wgX, y: 'tiles', tile };
        }),
      );
      this.allLogits = { kernels, logits, readback };
    }
    const { logits, readback } = this.allLogits;
    for (let i = 0; i < ids.length; i += this.batchSize) {
      if (signal?.aborted) throw new EngineError('aborted', 'cancelled');
      const batch = ids.slice(i, i + this.batchSize);
      const T = batch.length;
      this.device.queue.writeBuffer(this.ids, 0, Uint32Array.from(batch));
      this.writeStep(T, pos0 + i);
      const enc = this.device.createCommandEncoder({ label: 'score' });
      this.encodeForward(enc, T, true);
      enc.copyBufferToBuffer(logits, 0, readback, 0, T * V * 4);
      this.device.queue.submit([enc.finish()]);
      await readback.mapAsync(GPUMapMode.READ, 0, T * V * 4);
      const out = new Float32Array(readback.getMappedRange(0, T * V * 4).slice(0));
      readback.unmap();
      onBatch(i, out, T);
    }
  }

  /**
   * Submits one decode step for the token already in `ids[0]` (or given) at position `pos`, leaving the
   * greedy next token in `tokenOut` and, when `feedBack`, also in `ids[0]` for the next step (so steps
   * chain on the GPU without the host). Copies the token into readback slot `slot`, or the logits into
   * the logits readback when `readLogits`. With `sample` (a draw index, after {@link startSampling}) the
   * step's last dispatch is the GPU sampler instead of the argmax.
   */
  submitDecode(
    pos: number,
    opts: { tokenId?: number; slot?: number; feedBack?: boolean; readLogits?: boolean; sample?: number },
  ): void {
    this.checkAlive();
    if (pos >= this.nCtx)
      throw new EngineError('context_overflow', `position ${pos} is past the context (${this.nCtx} tokens)`);
    if (opts.tokenId !== undefined) this.device.queue.writeBuffer(this.ids, 0, Uint32Array.of(opts.tokenId));
    this.writeStep(1, pos);
    if (opts.sample !== undefined) this.writeDraw(opts.sample);
    const enc = this.device.createCommandEncoder({ label: 'decode' });
    this.encodeForward(enc, 1, false, opts.sample !== undefined);
    this.encodeReadback(enc, opts);
    this.device.queue.submit([enc.finish()]);
  }

  /**
   * After a prefill: queue the copies that {@link submitDecode} would (token readback, feedback, logits);
   * with `sample` (a draw index), first the GPU sampler over the prefill's logits.
   */
  submitReadback(opts: { slot?: number; feedBack?: boolean; readLogits?: boolean; sample?: number }): void {
    const enc = this.device.createCommandEncoder({ label: 'readback' });
    if (opts.sample !== undefined) {
      this.writeDraw(opts.sample);
      const d = this.samplerDispatch();
      const pass = enc.beginComputePass({ label: 'sample' });
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.group);
      pass.dispatchWorkgroups(1);
      pass.end();
    }
    this.encodeReadback(enc, opts);
    this.device.queue.submit([enc.finish()]);
  }

  private encodeReadback(
    enc: GPUCommandEncoder,
    opts: { slot?: number; feedBack?: boolean; readLogits?: boolean },
  ): void {
    if (opts.feedBack) enc.copyBufferToBuffer(this.tokenOut, 0, this.ids, 0, 4);
    if (opts.slot !== undefined) enc.copyBufferToBuffer(this.tokenOut, 0, this.readbacks[opts.slot], 0, 4);
    if (opts.readLogits) enc.copyBufferToBuffer(this.logits, 0, this.logitsReadback, 0, this.cfg.nVocab * 4);
  }

  /** Waits for readback slot `slot` and returns the token id there. */
  async readToken(slot: number): Promise<number> {
    const b = this.readbacks[slot];
    await b.mapAsync(GPUMapMode.READ, 0, 4);
    const id = new Uint32Array(b.getMappedRange(0, 4))[0];
    b.unmap();
    return id;
  }

  /** Waits for the logits readback and returns a copy [nVocab]. */
  async readLogits(): Promise<Float32Array> {
    const b = this.logitsReadback;
    await b.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(b.getMappedRange().slice(0));
    b.unmap();
    return out;
  }

  /** GPU sampler state (kernels/sample.ts): made with the run state, the pipeline at load (build). */
  private sampleBufs!: { params: GPUBuffer; work: GPUBuffer; hist: GPUBuffer };
  private sampler?: Dispatch;

  private allocSampler(): void {
    const S = GPUBufferUsage.STORAGE;
    const U = GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
    const ring = (HISTORY_HEADER + this.nCtx) * 4;
    this.sampleBufs = {
      params: this.buf('sample_params', SAMPLE_PARAMS_BYTES, U),
      work: this.buf('sample_work', this.cfg.nVocab * 4, S), // penalised logits [nVocab] f32
      hist: this.buf('sample_history', ring, S | GPUBufferUsage.COPY_DST), // [count, 0, 0, 0, ring[nCtx]] u32
    };
  }

  /**
   * Prepares sampled decode on the GPU for one request (the sampler is compiled at load): writes its
   * parameters and seeds its history ring with `history` (the prompt; its last nCtx ids). Then
   * `submitReadback({ sample: 0, … })` samples the first token from the prefill's logits and
   * `submitDecode(pos, { sample: n, feedBack: true, … })` runs step n with the sampler as its last
   * dispatch; each draw appends its id to the ring, so the penalty sees the output without the host.
   * @param p resolved, validated parameters (`Sampler.params`); @param seed PRNG seed (low 32 bits).
   * @throws EngineError('not_loaded') after destroy.
   */
  async startSampling(p: SampleSettings, seed: number, history: readonly number[]): Promise<void> {
    this.checkAlive();
    const q = this.device.queue;
    q.writeBuffer(this.sampleBufs.params, 0, packSampleParams(p, seed, 0, this.cfg.nVocab));
    q.writeBuffer(this.sampleBufs.hist, 0, packHistory(history, this.nCtx));
  }

  private samplerDispatch(): Dispatch {
    if (!this.sampler) throw new Error('the sampler is made by build()');
    return this.sampler;
  }

  /** Sets the draw index (the keyed PRNG's counter) of the next sampled step. */
  private writeDraw(n: number): void {
    this.device.queue.writeBuffer(this.sampleBufs.params, SAMPLE_DRAW_OFFSET, Uint32Array.of(n >>> 0));
  }

  /** Releases every GPU buffer. Safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
    // Dawn frees destroyed buffers' memory at the next submit.
    this.device.queue.submit([]);
  }
}

/**
 * Fills every weight of a synthetic model on the GPU (kernels/fill.ts) and returns `rope_freqs.weight`
 * (made on the CPU: Llama 3-style factors from 1 at high frequencies to 8 at low ones) when present.
 */
async function fillSynthetic(
  device: GPUDevice,
  file: GgufFile,
  weights: Map<string, GpuWeight>,
  planar: PlanarUploader,
  seed: number,
  onBytes: (n: number) => void,
): Promise<Uint8Array | undefined> {
  const pipes = new Map<WeightType, GPUComputePipeline>();
  let ropeFreqs: Uint8Array | undefined;
  let tensorId = 0;
  for (const t of file.tensors.values()) {
    tensorId++;
    const w = weights.get(t.name)!;
    if (t.name === 'rope_freqs.weight') {
      const n = t.shape[0];
      const f = Float32Array.from({ length: n }, (_, i) => 1 + (7 * i) / Math.max(1, n - 1));
      ropeFreqs = new Uint8Array(f.buffer);
      device.queue.writeBuffer(w.parts[0].buffer, 0, f);
      onBytes(t.nBytes);
      continue;
    }
    let pipe = pipes.get(w.type);
    if (!pipe) {
      const module = device.createShaderModule({ label: `fill.${w.type}`, code: fillWGSL(w.type) });
      pipe = await device.createComputePipelineAsync({
        label: `fill.${w.type}`,
        layout: 'auto',
        compute: { module, entryPoint: 'main' },
      });
      pipes.set(w.type, pipe);
    }
    const mode = t.shape.length === 1 ? (t.name.endsWith('.bias') ? 2 : 1) : 0;
    const std = mode === 2 ? 0.1 : 1 / Math.sqrt(w.K);
    const enc = device.createCommandEncoder({ label: `fill ${t.name}` });
    const params: GPUBuffer[] = [];
    for (const part of w.parts) {
      const target = w.planar ? planar.staging(w, part) : part.buffer;
      const nWords = Math.ceil(target.size / 4);
      const pb = device.createBuffer({
        size: FILL_PARAMS_BYTES,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      params.push(pb);
      device.queue.writeBuffer(
        pb,
        0,
        packFillParams({ seed, tensorId: tensorId * 16 + params.length, nWords, mode, std }),
      );
      const pass = enc.beginComputePass();
      pass.setPipeline(pipe);
      pass.setBindGroup(
        0,
        device.createBindGroup({
          layout: pipe.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: pb } },
            { binding: 1, resource: { buffer: target } },
          ],
        }),
      );
      const nWg = Math.ceil(nWords / 64);
      pass.dispatchWorkgroups(Math.min(nWg, 65535), Math.ceil(nWg / 65535));
      pass.end();
    }
    device.queue.submit([enc.finish()]);
    if (w.planar) for (const part of w.parts) planar.advance(w, part, part.rowCount * rowBytes(w.type, w.K));
    await device.queue.onSubmittedWorkDone();
    for (const pb of params) pb.destroy();
    onBytes(t.nBytes);
  }
  return ropeFreqs;
}

/**
 * Uploads the weights that are repacked into planes (kernels/repack.ts): each part's raw bytes go into a
 * staging buffer, and once the part's last byte is there a repack dispatch writes the planes into the
 * part's own buffer and the staging buffer is released (so at most the parts in flight, usually one,
 * take memory twice).
 */
class PlanarUploader {
  private pipes = new Map<WeightType, GPUComputePipeline>();
  private open = new Map<GPUBuffer, { staging: GPUBuffer; filled: number; rawBytes: number }>();
  constructor(private readonly device: GPUDevice) {}

  /** Compiles the repack kernel of every planar type among `weights`. */
  async prepare(weights: GpuWeight[]): Promise<void> {
    for (const w of weights) {
      if (!w.planar || this.pipes.has(w.type)) continue;
      const module = this.device.createShaderModule({ label: `repack.${w.type}`, code: repackWGSL(w.type) });
      this.pipes.set(
        w.type,
        await this.device.createComputePipelineAsync({
          label: `repack.${w.type}`,
          layout: 'auto',
          compute: { module, entryPoint: 'main' },
        }),
      );
    }
  }

  /** The staging buffer of `part` (made on first use) holding its raw bytes. */
  staging(w: GpuWeight, part: GpuWeight['parts'][number]): GPUBuffer {
    let s = this.open.get(part.buffer);
    if (!s) {
      const rawBytes = part.rowCount * rowBytes(w.type, w.K);
      s = {
        staging: this.device.createBuffer({
          label: `${w.name} (raw, for repacking)`,
          size: Math.max(16, Math.ceil(rawBytes / 4) * 4),
          usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
        }),
        filled: 0,
        rawBytes,
      };
      this.open.set(part.buffer, s);
    }
    return s.staging;
  }

  /** Counts `n` more raw bytes of `part` written; repacks it when it is complete. */
  advance(w: GpuWeight, part: GpuWeight['parts'][number], n: number): void {
    const s = this.open.get(part.buffer);
    if (!s) throw new Error(`no staging buffer for ${w.name}`);
    s.filled += n;
    if (s.filled < s.rawBytes) return;
    const nBlocks = (part.rowCount * w.K) / WEIGHT_BLOCK[w.type].size;
    const pipe = this.pipes.get(w.type)!;
    const params = this.device.createBuffer({
      label: 'repack params',
      size: 16,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.device.queue.writeBuffer(params, 0, repackParams(nBlocks));
    const enc = this.device.createCommandEncoder({ label: `repack ${w.name}` });
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(
      0,
      this.device.createBindGroup({
        layout: pipe.getBindGroupLayout(0),
        entries: [params, s.staging, part.buffer].map((buffer, binding) => ({
          binding,
          resource: { buffer },
        })),
      }),
    );
    const [x, y] = repackWorkgroups(nBlocks, w.type);
    pass.dispatchWorkgroups(x, y);
    pass.end();
    this.device.queue.submit([enc.finish()]);
    // Destroying after the submit is safe: the buffers are freed once the queued work is done.
    s.staging.destroy();
    params.destroy();
    this.open.delete(part.buffer);
  }

  /** @throws EngineError('gguf_invalid') when a planar part did not receive all its bytes. */
  checkDone(): void {
    if (this.open.size > 0) {
      this.destroy();
      throw new EngineError('gguf_invalid', 'the file ended before every weight was complete');
    }
  }

  /** Releases every staging buffer still open (a failed or aborted load). */
  destroy(): void {
    for (const s of this.open.values()) s.staging.destroy();
    this.open.clear();
  }
}
