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
 * Pipelines and bind groups are made at load; a step writes one 16-byte uniform and encodes one command
 * buffer. Prefill runs in batches of up to `batchSize` tokens through the TT = 8 (matrix × matrix)
 * pipelines; decode runs the TT = 1 (matrix × vector) pipelines.
 */
import { EngineError } from '../../engine/errors.ts';
import type { GgufFile, GgufTensorInfo } from '../gguf/types.ts';
import { argmaxWGSL } from '../kernels/argmax.ts';
import { attentionWGSL } from '../kernels/attention.ts';
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
  gemvWGSL,
  gemvWorkgroupsX,
  type MatmulOptions,
  type MatmulSegment,
  matmulWGSL,
  matmulWorkgroupsX,
  rowsWGSL,
  rowsWorkgroupsX,
  type SegmentWeight,
} from '../kernels/matmul.ts';
import { type MmvLayout, mmvSupports, mmvWGSL, mmvWorkgroupsX } from '../kernels/mmv.ts';
import { isPlanarType, planarBytes, repackParams, repackWGSL, repackWorkgroups } from '../kernels/repack.ts';
import type { LlamaConfig } from './config.ts';

/** Kernel families of the forward pass (qwen3's Q/K norm counts as qkv). */
export type KernelFamilyName = 'embed' | 'qkv' | 'attention' | 'wo' | 'ffn' | 'down' | 'output' | 'argmax';

/** See {@link LlamaModel.profiler}. */
export interface ForwardProfiler {
  /** Timestamp writes for the next pass (of `family`, in a forward pass of T tokens), or undefined. */
  passWrites(family: KernelFamilyName, T: number): GPUComputePassTimestampWrites | undefined;
}

/** Tokens per thread in the prefill (GEMM) pipelines. */
const PREFILL_TT = 8;

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
const MATMUL_WEIGHT =
  /^(blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)|output)\.weight$/;

/** The binding description of part `i` of `w` for a matmul segment (planar block count where repacked). */
function segWeight(w: GpuWeight, i = 0): SegmentWeight {
  const p = w.parts[i];
  return w.planar
    ? { type: w.type, planar: (p.rowCount * w.K) / WEIGHT_BLOCK[w.type].size }
    : { type: w.type };
}

/** Load-time options for {@link LlamaModel.load}. */
export interface LlamaLoadOptions {
  /** KV cache length in tokens. */
  contextLength: number;
  /** Prefill batch size in tokens. */
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
   * Repack Q4_0/Q8_0/Q5_0/Q6_K matmul weights into aligned planes at load (kernels/repack.ts; default
   * true). False keeps the file's blocks (the kernels read both).
   */
  repack?: boolean;
  /**
   * Layout of the decode matrix × vector kernels (kernels/mmv.ts), used for every decode matmul whose K
   * is a multiple of 32; the others (and all of them when unset) use `decodeKernel`.
   */
  mmv?: MmvLayout;
  signal?: AbortSignal;
  /** Bytes read from the source so far. */
  onFetch?: (done: number, total: number) => void;
  /** Bytes written to the GPU so far. */
  onUpload?: (done: number, total: number) => void;
  /** Pipelines compiled so far. */
  onCompile?: (done: number, total: number) => void;
}

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

interface Kernel {
  pipeline: GPUComputePipeline;
  /** Bind groups, e.g. one per layer. */
  groups: GPUBindGroup[];
}

/**
 * RoPE table [nCtx, ropeDim/2] of (cos θ, sin θ), θ = pos · freqScale · base^(−2i/ropeDim) (llama.cpp's
 * `ggml_rope_ext` with linear scaling, freqScale = 1 / rope.scaling.factor, and θ_i divided by
 * `rope_freqs.weight`[i] where the model has it), computed in float64 then rounded.
 */
export function ropeTable(
  nCtx: number,
  ropeDim: number,
  freqBase: number,
  freqScale = 1,
  freqFactors?: Float32Array,
): Float32Array {
  const half = ropeDim / 2;
  const out = new Float32Array(nCtx * half * 2);
  for (let p = 0; p < nCtx; p++) {
    for (let i = 0; i < half; i++) {
      const theta = (p * freqScale * freqBase ** ((-2 * i) / ropeDim)) / (freqFactors ? freqFactors[i] : 1);
      out[(p * half + i) * 2] = Math.cos(theta);
      out[(p * half + i) * 2 + 1] = Math.sin(theta);
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
  /** The mmv layout of the decode matmuls, where used. */
  readonly mmv?: MmvLayout;
  /** Weight tensors repacked into planes at load. */
  planarTensors = 0;
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
  /** Per-layer kernels: the matmuls in decode (TT = 1) and prefill variants, attention, qwen3's Q/K norm. */
  private layerKernels!: {
    decode: Record<'qkv' | 'wo' | 'ffn' | 'down', Kernel[]>;
    prefill: Record<'qkv' | 'wo' | 'ffn' | 'down', Kernel[]>;
    attn: Kernel[];
    qkNorm?: Kernel[];
  };
  private globalKernels!: Record<'embed' | 'out' | 'argmax', Kernel>;
  /** The logits-for-every-position kernel (teacher-forced scoring), made on first use. */
  private allLogitsSpec!: { src: string; weights: GPUBuffer[]; wgX: number };
  private allLogits?: { kernel: Kernel; logits: GPUBuffer; readback: GPUBuffer };
  /** Workgroups along x per matmul, for decode (T = 1) and prefill. */
  private wgX!: Record<'decode' | 'prefill', Record<'qkv' | 'wo' | 'ffn' | 'down' | 'out', number>>;
  private destroyed = false;

  private constructor(
    device: GPUDevice,
    cfg: LlamaConfig,
    opts: LlamaLoadOptions,
    weightBytes: number,
    times: LlamaLoadTimes,
  ) {
    this.device = device;
    this.cfg = cfg;
    this.nCtx = opts.contextLength;
    this.batchSize = opts.batchSize;
    this.weightBytes = weightBytes;
    this.times = times;
    this.decodeKernel = opts.decodeKernel ?? 'ksplit';
    this.mmv = opts.mmv;
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
      // 1. Weight buffers, split by rows where a tensor is larger than one binding.
      for (const t of file.tensors.values()) {
        const type = weightType(t);
        const K = t.shape[0];
        const N = t.shape.slice(1).reduce((a, b) => a * b, 1);
        const rowBytes = tensorRowBytes(t, type, K);
        const planar = opts.repack !== false && isPlanarType(type) && MATMUL_WEIGHT.test(t.name);
        // Planar parts are rounded up to 16 bytes: leave room for it.
        let rowsPerPart = Math.max(1, Math.floor((maxBuffer - (planar ? 16 : 0)) / rowBytes));
        while ((rowsPerPart * rowBytes) % 4 !== 0) rowsPerPart--;
        if (rowsPerPart < 1 || rowBytes > maxBuffer) {
          throw new EngineError(
            'out_of_memory',
            `tensor ${t.name} has rows of ${rowBytes} bytes but this adapter allows at most ${maxBinding} bytes per buffer binding`,
          );
        }
        const parts: GpuWeight['parts'] = [];
        for (let r = 0; r < N; r += rowsPerPart) {
          const rowCount = Math.min(rowsPerPart, N - r);
          const size = planar
            ? planarBytes(type, (rowCount * K) / WEIGHT_BLOCK[type].size)
            : Math.ceil((rowCount * rowBytes) / 4) * 4;
          const buffer = device.createBuffer({
            label: parts.length ? `${t.name}#${parts.length}` : t.name,
            size: Math.max(size, 16),
            // Biases are also copied into one per-layer buffer (qkvBias), so they need COPY_SRC.
            usage:
              GPUBufferUsage.STORAGE |
              GPUBufferUsage.COPY_DST |
              (t.name.endsWith('.bias') ? GPUBufferUsage.COPY_SRC : 0),
          });
          allBuffers.push(buffer);
          parts.push({ buffer, rowStart: r, rowCount });
        }
        if (parts.length > 4) {
          throw new EngineError(
            'out_of_memory',
            `tensor ${t.name} is ${t.nBytes} bytes and would need ${parts.length} bindings of at most ${maxBinding} bytes; at most 4 are supported`,
          );
        }
        weights.set(t.name, { name: t.name, type, K, N, parts, bytes: t.nBytes, planar });
        weightBytes += t.nBytes;
      }
      model = new LlamaModel(device, cfg, opts, weightBytes, times);
      model.planarTensors = [...weights.values()].filter((w) => w.planar).length;
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
      let uploaded = 0;
      const total = weightBytes;
      if (file.synthetic) {
        ropeFreqs = await fillSynthetic(device, file, weights, planar, file.synthetic.seed, (n) => {
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
            if (c.tensor.name === 'rope_freqs.weight') {
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
      model.writeRopeTable(
        ropeFreqs && weights.get('rope_freqs.weight')!.type === 'F32'
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
      await model.build(weights, opts.onCompile);
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
      4 *
        (2 * c.nLayers * this.nCtx * kvDim +
          this.batchSize * (c.nEmbd + 2 * qDim + c.nFF + 1) +
          c.nVocab * 2) +
      this.nCtx * c.ropeDim * 4
    );
  }

  private kCache: GPUBuffer[] = [];
  private vCache: GPUBuffer[] = [];
  private x!: GPUBuffer;
  private xb!: GPUBuffer;
  private q!: GPUBuffer;
  private hb!: GPUBuffer;
  private rope!: GPUBuffer;

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
    for (let l = 0; l < c.nLayers; l++) {
      this.kCache.push(this.buf(`blk.${l}.k_cache`, this.nCtx * kvDim * 4, S)); // [nCtx, kvDim]
      this.vCache.push(this.buf(`blk.${l}.v_cache`, this.nCtx * kvDim * 4, S)); // [nCtx, kvDim]
    }
    this.x = this.buf('x', B * c.nEmbd * 4, S); // residual stream [B, nEmbd]
    this.xb = this.buf('xb', B * qDim * 4, S); // attention output [B, nHead·headDim]
    this.q = this.buf('q', B * qDim * 4, S); // queries after RoPE [B, nHead·headDim]
    this.hb = this.buf('hb', B * c.nFF * 4, S); // SwiGLU hidden [B, nFF]
    this.logits = this.buf('logits', c.nVocab * 4, S | GPUBufferUsage.COPY_SRC); // [nVocab]
    this.ids = this.buf('ids', B * 4, S | GPUBufferUsage.COPY_DST); // [B] u32
    this.tokenOut = this.buf('token_out', 16, S | GPUBufferUsage.COPY_SRC); // [1] u32
    this.stepBuf = this.buf('step', STEP_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    this.rope = this.buf('rope', this.nCtx * c.ropeDim * 4, S | GPUBufferUsage.COPY_DST); // [nCtx, ropeDim/2] vec2
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
      ropeTable(this.nCtx, c.ropeDim, c.ropeFreqBase, scale, freqFactors),
    );
  }

  /**
   * Segments of the fused QKV (+ bias) + RoPE + KV-store kernel. With `opts.bias` each segment also
   * binds its bias vector (F32 [rows]) and adds it before RoPE (qwen2). With `opts.deferRope` Q and K are
   * stored unrotated for {@link qkNormRopeWGSL} (qwen3's per-head norms come before RoPE).
   */
  private qkvSegments(
    wq: GpuWeight,
    wk: GpuWeight,
    wv: GpuWeight,
    opts: { bias?: boolean; deferRope?: boolean } = {},
  ): MatmulSegment[] {
    const c = this.cfg;
    const HD = c.headDim;
    const half = HD / 2;
    const RD = c.ropeDim;
    const qDim = c.nHead * HD;
    const kvDim = c.nHeadKv * HD;
    const neox = c.ropeType === 'neox';
    // Pair (ia, ib) of head-local dims rotated together; pairs past ropeDim are not rotated.
    const ia = neox
      ? `select(2u * (u % ${half}u), u % ${half}u, 2u * (u % ${half}u) < ${RD}u)`
      : `2u * (u % ${half}u)`;
    const ib = neox
      ? `select(2u * (u % ${half}u) + 1u, u % ${half}u + ${RD / 2}u, 2u * (u % ${half}u) < ${RD}u)`
      : `2u * (u % ${half}u) + 1u`;
    // Biases live in one buffer `qkvb` [qDim + 2·kvDim]: Q's, then K's, then V's (binding count matters:
    // adapters allow as few as 8–10 storage buffers per stage).
    const biasBase = [0, qDim, qDim + kvDim];
    const biasAdd = (si: number, r0: string, r1: string) =>
      opts.bias
        ? `let b0 = qkvb[${biasBase[si]}u + ${r0}]; let b1 = qkvb[${biasBase[si]}u + ${r1}];`
        : 'let b0 = 0.0; let b1 = 0.0;';
    const rot = (
      si: number,
    ) => `let i = u % ${half}u; let hb0 = (u / ${half}u) * ${HD}u; let ia = ${ia}; let ib = ${ib};
      ${biasAdd(si, 'hb0 + ia', 'hb0 + ib')}
      var o0 = d0 + b0; var o1 = d1 + b1;${
        opts.deferRope
          ? ''
          : `
      if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }`
      }`;
    const ws = (w: GpuWeight, _i: number) => {
      if (w.parts.length !== 1) {
        throw new EngineError(
          'unsupported_model',
          `tensor ${w.name} is larger than one buffer binding; only token_embd/output may be split`,
        );
      }
      return [segWeight(w)];
    };
    return [
      {
        nUnits: qDim / 2,
        weights: ws(wq, 0),
        dots: [
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ia}` },
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ib}` },
        ],
        epilogue: `${rot(0)}
      qout[t * ${qDim}u + hb0 + ia] = o0; qout[t * ${qDim}u + hb0 + ib] = o1;`,
      },
      {
        nUnits: kvDim / 2,
        weights: ws(wk, 1),
        dots: [
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ia}` },
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ib}` },
        ],
        epilogue: `${rot(1)}
      kc[pos * ${kvDim}u + hb0 + ia] = o0; kc[pos * ${kvDim}u + hb0 + ib] = o1;`,
      },
      {
        nUnits: kvDim / 2,
        weights: ws(wv, 2),
        dots: [
          { w: 0, row: '2u * u' },
          { w: 0, row: '2u * u + 1u' },
        ],
        epilogue: `${biasAdd(2, '2u * u', '2u * u + 1u')}
      vc[pos * ${kvDim}u + 2u * u] = d0 + b0; vc[pos * ${kvDim}u + 2u * u + 1u] = d1 + b1;`,
      },
    ];
  }

  /**
   * Generates every kernel's source (per layer: layers may mix weight types, as Q4_K_M files do),
   * compiles the distinct ones in parallel, and makes every bind group.
   */
  private async build(
    weights: Map<string, GpuWeight>,
    onCompile?: (done: number, total: number) => void,
  ): Promise<void> {
    const c = this.cfg;
    const dev = this.device;
    const W = (name: string): GpuWeight => {
      const w = weights.get(name);
      if (!w) throw new EngineError('gguf_invalid', `tensor ${name} is missing`);
      return w;
    };
    const qDim = c.nHead * c.headDim;
    const eps = c.rmsEps;
    const one = (w: GpuWeight) => w.parts[0].buffer;
    const layers = Array.from({ length: c.nLayers }, (_, l) => l);
    const resSeg = (w: GpuWeight, N: number): MatmulSegment => ({
      nUnits: N,
      weights: [segWeight(w)],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `y[t * ${N}u + u] += d0;`,
    });
    const qkvExtra = [
      ...(c.qkNorm ? [] : ['var<storage, read> rope: array<vec2<f32>>']),
      ...(c.qkvBias ? ['var<storage, read> qkvb: array<f32>'] : []),
      'var<storage, read_write> qout: array<f32>',
      'var<storage, read_write> kc: array<f32>',
      'var<storage, read_write> vc: array<f32>',
    ];

    // Per-layer sources and buffers, for TT = 1 (decode) and TT = PREFILL_TT (prefill).
    // Decode (TT = 1) uses the K-split GEMV on hardware GPUs, the barrier-free thread-per-row kernel on
    // software ones; prefill uses the tiled kernel (each weight read once per 8 tokens) on both.
    // Decode matmuls whose K is a whole number of 32-weight chunks use mmv (when a layout is given).
    const ksplit = this.decodeKernel === 'ksplit';
    const mmv = this.mmv;
    const useMmv = (K: number) => mmv !== undefined && mmvSupports(K, ['F32']);
    const mm = (o: MatmulOptions) =>
      o.TT !== 1
        ? matmulWGSL(o)
        : useMmv(o.K)
          ? mmvWGSL({ ...o, layout: mmv! })
          : ksplit
            ? gemvWGSL(o)
            : rowsWGSL(o);
    const wgx = (segs: { nUnits: number }[], TT: number, K: number) =>
      TT !== 1
        ? matmulWorkgroupsX(segs)
        : useMmv(K)
          ? mmvWorkgroupsX(segs, mmv!)
          : ksplit
            ? gemvWorkgroupsX(segs)
            : rowsWorkgroupsX(segs);
    for (const K of [c.nEmbd, qDim, c.nEmbd, c.nFF]) {
      if (useMmv(K)) this.decodeMatmuls.mmv += c.nLayers;
      else this.decodeMatmuls.fallback += c.nLayers;
    }
    if (useMmv(c.nEmbd)) this.decodeMatmuls.mmv++;
    else this.decodeMatmuls.fallback++;
    type LayerKernel = { src: (TT: number) => string; buffers: GPUBuffer[]; wgX: (TT: number) => number };
    const layerKernels = layers.map((l) => {
      const b = `blk.${l}`;
      const bias = c.qkvBias
        ? this.qkvBias(l, [W(`${b}.attn_q.bias`), W(`${b}.attn_k.bias`), W(`${b}.attn_v.bias`)])
        : undefined;
      const wq = W(`${b}.attn_q.weight`);
      const wk = W(`${b}.attn_k.weight`);
      const wv = W(`${b}.attn_v.weight`);
      const qkvSegs = this.qkvSegments(wq, wk, wv, { bias: Boolean(bias), deferRope: c.qkNorm });
      const attnNorm = W(`${b}.attn_norm.weight`);
      const ffnNorm = W(`${b}.ffn_norm.weight`);
      const wo = W(`${b}.attn_output.weight`);
      const gate = W(`${b}.ffn_gate.weight`);
      const up = W(`${b}.ffn_up.weight`);
      const down = W(`${b}.ffn_down.weight`);
      const ffnSeg: MatmulSegment = {
        nUnits: c.nFF,
        weights: [segWeight(gate), segWeight(up)],
        dots: [
          { w: 0, row: 'u' },
          { w: 1, row: 'u' },
        ],
        epilogue: `hb[t * ${c.nFF}u + u] = d0 / (1.0 + exp(-d0)) * d1;`,
      };
      const qkvAux = [...(c.qkNorm ? [] : [this.rope]), ...(bias ? [bias] : [])];
      const k: Record<'qkv' | 'wo' | 'ffn' | 'down', LayerKernel> = {
        qkv: {
          src: (TT) =>
            mm({
              K: c.nEmbd,
              TT,
              norm: { eps, type: attnNorm.type },
              segments: qkvSegs,
              extra: qkvExtra,
            }),
          buffers: [
            this.stepBuf,
            this.x,
            one(attnNorm),
            one(wq),
            one(wk),
            one(wv),
            ...qkvAux,
            this.q,
            this.kCache[l],
            this.vCache[l],
          ],
          wgX: (TT) => wgx(qkvSegs, TT, c.nEmbd),
        },
        wo: {
          src: (TT) =>
            mm({
              K: qDim,
              TT,
              segments: [resSeg(wo, c.nEmbd)],
              extra: ['var<storage, read_write> y: array<f32>'],
            }),
          buffers: [this.stepBuf, this.xb, one(wo), this.x],
          wgX: (TT) => wgx([{ nUnits: c.nEmbd }], TT, qDim),
        },
        ffn: {
          src: (TT) =>
            mm({
              K: c.nEmbd,
              TT,
              norm: { eps, type: ffnNorm.type },
              segments: [ffnSeg],
              extra: ['var<storage, read_write> hb: array<f32>'],
            }),
          buffers: [this.stepBuf, this.x, one(ffnNorm), one(gate), one(up), this.hb],
          wgX: (TT) => wgx([{ nUnits: c.nFF }], TT, c.nEmbd),
        },
        down: {
          src: (TT) =>
            mm({
              K: c.nFF,
              TT,
              segments: [resSeg(down, c.nEmbd)],
              extra: ['var<storage, read_write> y: array<f32>'],
            }),
          buffers: [this.stepBuf, this.hb, one(down), this.x],
          wgX: (TT) => wgx([{ nUnits: c.nEmbd }], TT, c.nFF),
        },
      };
      return k;
    });
    const outW = weights.get('output.weight') ?? W('token_embd.weight');
    const outSegs: MatmulSegment[] = outW.parts.map((p, i) => ({
      nUnits: p.rowCount,
      weights: [segWeight(outW, i)],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `logits[${p.rowStart}u + u] = d0;`,
    }));
    const emb = W('token_embd.weight');
    const outNorm = W('output_norm.weight');
    const single: Record<string, { src: string; buffers: GPUBuffer[] }> = {
      embed: {
        src: embedWGSL({
          nEmbd: c.nEmbd,
          parts: emb.parts.map((p) => ({ type: emb.type, rowStart: p.rowStart, rowCount: p.rowCount })),
        }),
        buffers: [this.stepBuf, this.ids, this.x, ...emb.parts.map((p) => p.buffer)],
      },
      out: {
        src: mm({
          K: c.nEmbd,
          TT: 1,
          norm: { eps, type: outNorm.type },
          lastTokenOnly: true,
          segments: outSegs,
          extra: ['var<storage, read_write> logits: array<f32>'],
        }),
        buffers: [this.stepBuf, this.x, one(outNorm), ...outW.parts.map((p) => p.buffer), this.logits],
      },
      argmax: { src: argmaxWGSL({ nVocab: c.nVocab }), buffers: [this.logits, this.tokenOut] },
    };
    const attnSrc = attentionWGSL({
      nHead: c.nHead,
      nHeadKv: c.nHeadKv,
      headDim: c.headDim,
      scale: 1 / Math.sqrt(c.headDim),
      threads: ksplit ? undefined : 16,
    });
    const qkNormSrc = c.qkNorm
      ? qkNormRopeWGSL({
          nHead: c.nHead,
          nHeadKv: c.nHeadKv,
          headDim: c.headDim,
          ropeDim: c.ropeDim,
          neox: c.ropeType === 'neox',
          eps,
          normType: W('blk.0.attn_q_norm.weight').type,
        })
      : undefined;

    // Compile each distinct source once.
    const sources = new Map<string, string>(); // source → label
    const addSrc = (label: string, code: string) => {
      if (!sources.has(code)) sources.set(code, label);
    };
    for (const [k, v] of Object.entries(single)) addSrc(k, v.src);
    addSrc('attn', attnSrc);
    if (qkNormSrc) addSrc('qk_norm_rope', qkNormSrc);
    layers.forEach((l) => {
      for (const [k, v] of Object.entries(layerKernels[l])) {
        addSrc(`blk.${l}.${k}.decode`, v.src(1));
        addSrc(`blk.${l}.${k}.prefill`, v.src(PREFILL_TT));
      }
    });
    let done = 0;
    const pipes = new Map<string, GPUComputePipeline>();
    await Promise.all(
      [...sources].map(async ([code, label]) => {
        const module = dev.createShaderModule({ label, code });
        try {
          pipes.set(
            code,
            await dev.createComputePipelineAsync({
              label,
              layout: 'auto',
              compute: { module, entryPoint: 'main' },
            }),
          );
        } catch (e) {
          const info = await module.getCompilationInfo?.().catch(() => undefined);
          const msgs = info?.messages.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('\n') ?? '';
          throw new EngineError('unsupported_model', `pipeline ${label} failed to compile: ${e}\n${msgs}`, {
            cause: e,
          });
        }
        onCompile?.(++done, sources.size);
      }),
    );

    const kernel = (label: string, code: string, buffers: GPUBuffer[]): Kernel => {
      const pipeline = pipes.get(code)!;
      const group = dev.createBindGroup({
        label,
        layout: pipeline.getBindGroupLayout(0),
        entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
      });
      return { pipeline, groups: [group] };
    };
    const perLayer = (name: 'qkv' | 'wo' | 'ffn' | 'down', TT: number) =>
      layers.map((l) =>
        kernel(`blk.${l}.${name}`, layerKernels[l][name].src(TT), layerKernels[l][name].buffers),
      );
    this.layerKernels = {
      decode: {
        qkv: perLayer('qkv', 1),
        wo: perLayer('wo', 1),
        ffn: perLayer('ffn', 1),
        down: perLayer('down', 1),
      },
      prefill: {
        qkv: perLayer('qkv', PREFILL_TT),
        wo: perLayer('wo', PREFILL_TT),
        ffn: perLayer('ffn', PREFILL_TT),
        down: perLayer('down', PREFILL_TT),
      },
      attn: layers.map((l) =>
        kernel(`blk.${l}.attn`, attnSrc, [this.stepBuf, this.q, this.kCache[l], this.vCache[l], this.xb]),
      ),
      qkNorm: qkNormSrc
        ? layers.map((l) =>
            kernel(`blk.${l}.qk_norm_rope`, qkNormSrc, [
              this.stepBuf,
              this.q,
              this.kCache[l],
              one(W(`blk.${l}.attn_q_norm.weight`)),
              one(W(`blk.${l}.attn_k_norm.weight`)),
              this.rope,
            ]),
          )
        : undefined,
    };
    this.allLogitsSpec = {
      src: matmulWGSL({
        K: c.nEmbd,
        TT: PREFILL_TT,
        norm: { eps, type: outNorm.type },
        segments: outW.parts.map((p, i) => ({
          nUnits: p.rowCount,
          weights: [segWeight(outW, i)],
          dots: [{ w: 0, row: 'u' }],
          epilogue: `logits[t * ${c.nVocab}u + ${p.rowStart}u + u] = d0;`,
        })),
        extra: ['var<storage, read_write> logits: array<f32>'],
      }),
      weights: [one(outNorm), ...outW.parts.map((p) => p.buffer)],
      wgX: matmulWorkgroupsX(outSegs),
    };
    this.globalKernels = {
      embed: kernel('embed', single.embed.src, single.embed.buffers),
      out: kernel('output', single.out.src, single.out.buffers),
      argmax: kernel('argmax', single.argmax.src, single.argmax.buffers),
    };
    const wgXFor = (TT: number) => ({
      qkv: layerKernels[0].qkv.wgX(TT),
      wo: layerKernels[0].wo.wgX(TT),
      ffn: layerKernels[0].ffn.wgX(TT),
      down: layerKernels[0].down.wgX(TT),
      out: wgx(outSegs, 1, c.nEmbd),
    });
    this.wgX = { decode: wgXFor(1), prefill: wgXFor(PREFILL_TT) };
    this.built = true;
  }

  /** Dispatches per decode step (for profiling and the benchmark). */
  get dispatchesPerToken(): number {
    return 3 + (this.cfg.qkNorm ? 6 : 5) * this.cfg.nLayers;
  }

  /**
   * Encodes the forward pass for T tokens (already in `ids`) at positions pos0..pos0+T−1, then the
   * logits of the last token and their argmax into `tokenOut`.
   */
  private encodeForward(enc: GPUCommandEncoder, T: number, allLogits = false): void {
    const c = this.cfg;
    const L = this.layerKernels;
    const set = T === 1 ? L.decode : L.prefill;
    const TT = T === 1 ? 1 : PREFILL_TT;
    const ty = Math.ceil(T / TT);
    const wgX = T === 1 ? this.wgX.decode : this.wgX.prefill;
    // Profiling: one compute pass per dispatch, with the hook's timestamp writes; else one pass in all.
    const prof = this.profiler;
    const pass = prof ? undefined : enc.beginComputePass({ label: T === 1 ? 'decode' : 'prefill' });
    const run = (family: KernelFamilyName, k: Kernel, x: number, y = 1) => {
      const p = pass ?? enc.beginComputePass({ label: family, timestampWrites: prof?.passWrites(family, T) });
      p.setPipeline(k.pipeline);
      p.setBindGroup(0, k.groups[0]);
      p.dispatchWorkgroups(x, y);
      if (!pass) p.end();
    };
    run('embed', this.globalKernels.embed, Math.ceil(c.nEmbd / WG), T);
    for (let l = 0; l < c.nLayers; l++) {
      run('qkv', set.qkv[l], wgX.qkv, ty);
      if (L.qkNorm) run('qkv', L.qkNorm[l], c.nHead + c.nHeadKv, T);
      run('attention', L.attn[l], c.nHead, T);
      run('wo', set.wo[l], wgX.wo, ty);
      run('ffn', set.ffn[l], wgX.ffn, ty);
      run('down', set.down[l], wgX.down, ty);
    }
    if (allLogits && this.allLogits) {
      run('output', this.allLogits.kernel, this.allLogitsSpec.wgX, Math.ceil(T / PREFILL_TT));
    } else {
      run('output', this.globalKernels.out, wgX.out, 1);
      run('argmax', this.globalKernels.argmax, 1);
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
    this.checkAlive();
    if (ids.length === 0) throw new EngineError('invalid_argument', 'prefill needs at least one token');
    if (pos0 + ids.length > this.nCtx) {
      throw new EngineError(
        'context_overflow',
        `the prompt has ${ids.length} tokens but the context holds ${this.nCtx - pos0}; shorten the prompt or load with a larger context (contextLength; --ctx on the command line)`,
      );
    }
    for (let i = 0; i < ids.length; i += this.batchSize) {
      const batch = ids.slice(i, i + this.batchSize);
      this.device.queue.writeBuffer(this.ids, 0, Uint32Array.from(batch));
      this.device.queue.writeBuffer(this.stepBuf, 0, packStep(batch.length, pos0 + i, this.stepData));
      const enc = this.device.createCommandEncoder({ label: 'prefill' });
      this.encodeForward(enc, batch.length);
      this.device.queue.submit([enc.finish()]);
    }
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
      const dev = this.device;
      const bytes = this.batchSize * V * 4;
      const logits = this.buf('logits_all', bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      const readback = this.buf(
        'logits_all_readback',
        bytes,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      );
      const module = dev.createShaderModule({ label: 'output_all', code: this.allLogitsSpec.src });
      const pipeline = await dev.createComputePipelineAsync({
        label: 'output_all',
        layout: 'auto',
        compute: { module, entryPoint: 'main' },
      });
      const group = dev.createBindGroup({
        label: 'output_all',
        layout: pipeline.getBindGroupLayout(0),
        entries: [this.stepBuf, this.x, ...this.allLogitsSpec.weights, logits].map((buffer, binding) => ({
          binding,
          resource: { buffer },
        })),
      });
      this.allLogits = { kernel: { pipeline, groups: [group] }, logits, readback };
    }
    const { logits, readback } = this.allLogits;
    for (let i = 0; i < ids.length; i += this.batchSize) {
      if (signal?.aborted) throw new EngineError('aborted', 'cancelled');
      const batch = ids.slice(i, i + this.batchSize);
      const T = batch.length;
      this.device.queue.writeBuffer(this.ids, 0, Uint32Array.from(batch));
      this.device.queue.writeBuffer(this.stepBuf, 0, packStep(T, pos0 + i, this.stepData));
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
   * the logits readback when `readLogits`.
   */
  submitDecode(
    pos: number,
    opts: { tokenId?: number; slot?: number; feedBack?: boolean; readLogits?: boolean },
  ): void {
    this.checkAlive();
    if (pos >= this.nCtx)
      throw new EngineError('context_overflow', `position ${pos} is past the context (${this.nCtx} tokens)`);
    if (opts.tokenId !== undefined) this.device.queue.writeBuffer(this.ids, 0, Uint32Array.of(opts.tokenId));
    this.device.queue.writeBuffer(this.stepBuf, 0, packStep(1, pos, this.stepData));
    const enc = this.device.createCommandEncoder({ label: 'decode' });
    this.encodeForward(enc, 1);
    this.encodeReadback(enc, opts);
    this.device.queue.submit([enc.finish()]);
  }

  /** After a prefill: queue the copies that {@link submitDecode} would (token readback, feedback, logits). */
  submitReadback(opts: { slot?: number; feedBack?: boolean; readLogits?: boolean }): void {
    const enc = this.device.createCommandEncoder({ label: 'readback' });
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

  /** Releases every GPU buffer. Safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
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
    const [x, y] = repackWorkgroups(nBlocks);
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
