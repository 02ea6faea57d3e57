/**
 * The model's weights on the GPU: how each GGUF tensor is split into buffers that fit the device's
 * bindings ({@link planWeights}), how phi3's fused tensors are seen as the llama layout's separate weights
 * ({@link fusedWeightViews}), the fused matmuls each layer runs ({@link layerSpecs}), and the buffers
 * themselves ({@link allocWeights}). Nothing here compiles a kernel or uploads a byte (upload.ts does).
 */
import { EngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import type { GgufFile, GgufTensorInfo } from '../../gguf/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import { rowBytes, WEIGHT_BLOCK, WEIGHT_TYPES, type WeightType } from '../kernels/common.ts';
import {
  logitsMatmul,
  type MatmulSpec,
  qkvRopeMatmul,
  residualMatmul,
  storeMatmul,
  swigluMatmul,
  type WeightParts,
} from '../kernels/llama-ops.ts';
import { fitStorageBindings } from '../kernels/matmul.ts';
import { isPlanarType, planarBlockBytes, planarBytes } from '../kernels/repack.ts';

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

/**
 * The tensor's ggml type as one the kernels read.
 * @throws EngineError('unsupported_model') for any other type.
 */
export function weightType(t: GgufTensorInfo): WeightType {
  const w = WEIGHT_TYPES.find((x) => x === t.typeName);
  if (!w) {
    throw new EngineError(
      'unsupported_model',
      `tensor ${t.name} has type ${t.typeName}, which this engine does not run (supported: ${WEIGHT_TYPES.join(', ')})`,
    );
  }
  return w;
}

/**
 * Bytes of one row of `K` elements of `type` (ggml's row size).
 * @throws EngineError('gguf_invalid') naming the tensor when K is not a whole number of blocks.
 */
export function tensorRowBytes(t: GgufTensorInfo | GpuWeight, type: WeightType, K: number): number {
  try {
    return rowBytes(type, K);
  } catch (e) {
    throw new EngineError('gguf_invalid', `tensor ${t.name}: ${(e as Error).message}`);
  }
}

/** A weight's planned parts, before any buffer exists. */
export type WeightPlan = Omit<GpuWeight, 'parts'> & {
  parts: { rowStart: number; rowCount: number; size: number }[];
};

/** The kernels' view of a weight or its plan: type and parts (with planar block counts where repacked). */
export function weightParts(w: WeightPlan | GpuWeight): WeightParts {
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
export function planWeights(
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
export function fusedSegmentEnds(name: string, cfg: LlamaConfig): number[] | undefined {
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
export function fusedWeightViews<T extends WeightPlan | GpuWeight>(
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
  const get = (name: string): T => requireWeight(m, name);
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
export interface ModelSpecs {
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
export function layerSpecs(
  cfg: LlamaConfig,
  plans: Map<string, WeightPlan>,
  maxStorage: number,
  kvType: KvType,
  vKvType: KvType = kvType,
): ModelSpecs {
  const P = (name: string): WeightPlan => requireWeight(plans, name);
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
        ...(vKvType !== kvType ? { vKvType } : {}),
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

/**
 * The weight `name` of `weights`.
 * @throws EngineError('gguf_invalid') when the model has no such tensor.
 */
export function requireWeight<T>(weights: Map<string, T>, name: string): T {
  const w = weights.get(name);
  if (!w) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
  return w;
}

/**
 * Creates the buffers of every planned weight (one per part, at least 16 bytes; biases also COPY_SRC, as
 * the per-layer Q/K/V bias buffer is copied from them), pushing each onto `allBuffers` as it is made so a
 * failed load can release them.
 * @returns the weights by tensor name, and their file bytes in all.
 */
export function allocWeights(
  device: GPUDevice,
  plans: Map<string, WeightPlan>,
  allBuffers: GPUBuffer[],
): { weights: Map<string, GpuWeight>; weightBytes: number } {
  const weights = new Map<string, GpuWeight>();
  let weightBytes = 0;
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
  return { weights, weightBytes };
}
