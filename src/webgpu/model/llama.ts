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
import { packStep, STEP_BYTES, type WeightType, WG } from '../kernels/common.ts';
import { embedWGSL } from '../kernels/embed.ts';
import { type MatmulSegment, matmulWGSL, matmulWorkgroupsX } from '../kernels/matmul.ts';
import type { LlamaConfig } from './config.ts';

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
}

/** Load-time options for {@link LlamaModel.load}. */
export interface LlamaLoadOptions {
  /** KV cache length in tokens. */
  contextLength: number;
  /** Prefill batch size in tokens. */
  batchSize: number;
  /** Largest buffer binding to use, bytes (default: the device's maxStorageBufferBindingSize). */
  maxBindingBytes?: number;
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

const WEIGHT_TYPES: Record<string, WeightType> = { F32: 'F32', F16: 'F16' };

function weightType(t: GgufTensorInfo): WeightType {
  const w = WEIGHT_TYPES[t.typeName];
  if (!w) {
    throw new EngineError(
      'unsupported_model',
      `tensor ${t.name} has type ${t.typeName}, which this engine does not run yet (supported: F32, F16)`,
    );
  }
  return w;
}

function bytesPerElement(t: WeightType): number {
  return t === 'F32' ? 4 : 2;
}

interface Kernel {
  pipeline: GPUComputePipeline;
  /** Bind groups, e.g. one per layer. */
  groups: GPUBindGroup[];
}

/**
 * RoPE table [nCtx, ropeDim/2] of (cos θ, sin θ), θ = pos · freqScale · base^(−2i/ropeDim) (llama.cpp's
 * `ggml_rope` with linear scaling, freqScale = 1 / rope.scaling.factor), computed in float64 then rounded.
 */
export function ropeTable(nCtx: number, ropeDim: number, freqBase: number, freqScale = 1): Float32Array {
  const half = ropeDim / 2;
  const out = new Float32Array(nCtx * half * 2);
  for (let p = 0; p < nCtx; p++) {
    for (let i = 0; i < half; i++) {
      const theta = p * freqScale * freqBase ** ((-2 * i) / ropeDim);
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
  private decode!: Record<'embed' | 'qkv' | 'attn' | 'wo' | 'ffn' | 'down' | 'out' | 'argmax', Kernel>;
  private prefill!: Record<'qkv' | 'wo' | 'ffn' | 'down', Kernel>;
  private wgX!: Record<'qkv' | 'wo' | 'ffn' | 'down' | 'out', number>;
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
    try {
      // 1. Weight buffers, split by rows where a tensor is larger than one binding.
      for (const t of file.tensors.values()) {
        const type = weightType(t);
        const K = t.shape[0];
        const N = t.shape.slice(1).reduce((a, b) => a * b, 1);
        const rowBytes = K * bytesPerElement(type);
        let rowsPerPart = Math.max(1, Math.floor(maxBuffer / rowBytes));
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
          const size = Math.ceil((rowCount * rowBytes) / 4) * 4;
          const buffer = device.createBuffer({
            label: parts.length ? `${t.name}#${parts.length}` : t.name,
            size: Math.max(size, 16),
            usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
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
        weights.set(t.name, { name: t.name, type, K, N, parts, bytes: t.nBytes });
        weightBytes += t.nBytes;
      }
      model = new LlamaModel(device, cfg, opts, weightBytes, times);
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

      // 2. Stream tensor data into the buffers.
      let uploaded = 0;
      const total = weightBytes;
      let tWait = performance.now();
      await file.streamTensorData(
        (c) => {
          times.fetchMs += performance.now() - tWait;
          const tw = performance.now();
          const w = weights.get(c.tensor.name)!;
          const rowBytes = w.K * bytesPerElement(w.type);
          let off = c.offset;
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
            device.queue.writeBuffer(part.buffer, off - partStart, piece);
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
      const tq = performance.now();
      await device.queue.onSubmittedWorkDone();
      times.uploadMs += performance.now() - tq;

      // 3. Pipelines and bind groups.
      const tc = performance.now();
      await model.build(weights, opts.onCompile);
      times.compileMs = performance.now() - tc;
      void t0;
      return model;
    } catch (e) {
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
    this.device.queue.writeBuffer(
      this.rope,
      0,
      ropeTable(this.nCtx, c.ropeDim, c.ropeFreqBase, c.ropeScaling ? 1 / c.ropeScaling.factor : 1),
    );
  }

  /** Segments of the fused QKV + RoPE + KV-store kernel. */
  private qkvSegments(wq: GpuWeight, wk: GpuWeight, wv: GpuWeight): MatmulSegment[] {
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
    const rot = `let i = u % ${half}u; let hb0 = (u / ${half}u) * ${HD}u; let ia = ${ia}; let ib = ${ib};
      var o0 = d0; var o1 = d1;
      if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = d0 * cs.x - d1 * cs.y; o1 = d0 * cs.y + d1 * cs.x; }`;
    const single = (w: GpuWeight) => {
      if (w.parts.length !== 1) {
        throw new EngineError(
          'unsupported_model',
          `tensor ${w.name} is larger than one buffer binding; only token_embd/output may be split`,
        );
      }
      return [{ type: w.type }];
    };
    return [
      {
        nUnits: qDim / 2,
        weights: single(wq),
        dots: [
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ia}` },
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ib}` },
        ],
        epilogue: `${rot}
      qout[t * ${qDim}u + hb0 + ia] = o0; qout[t * ${qDim}u + hb0 + ib] = o1;`,
      },
      {
        nUnits: kvDim / 2,
        weights: single(wk),
        dots: [
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ia}` },
          { w: 0, row: `(u / ${half}u) * ${HD}u + ${ib}` },
        ],
        epilogue: `${rot}
      kc[pos * ${kvDim}u + hb0 + ia] = o0; kc[pos * ${kvDim}u + hb0 + ib] = o1;`,
      },
      {
        nUnits: kvDim / 2,
        weights: single(wv),
        dots: [
          { w: 0, row: '2u * u' },
          { w: 0, row: '2u * u + 1u' },
        ],
        epilogue: `vc[pos * ${kvDim}u + 2u * u] = d0; vc[pos * ${kvDim}u + 2u * u + 1u] = d1;`,
      },
    ];
  }

  /** Compiles pipelines (async, in parallel) and makes every bind group. */
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
    const wq0 = W('blk.0.attn_q.weight');
    const wk0 = W('blk.0.attn_k.weight');
    const wv0 = W('blk.0.attn_v.weight');
    const normType = W('blk.0.attn_norm.weight').type;
    const qkvSegs = this.qkvSegments(wq0, wk0, wv0);
    const qkvExtra = [
      'var<storage, read> rope: array<vec2<f32>>',
      'var<storage, read_write> qout: array<f32>',
      'var<storage, read_write> kc: array<f32>',
      'var<storage, read_write> vc: array<f32>',
    ];
    const resSeg = (w: GpuWeight, N: number): MatmulSegment => ({
      nUnits: N,
      weights: [{ type: w.type }],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `y[t * ${N}u + u] += d0;`,
    });
    const wg0 = W('blk.0.ffn_gate.weight');
    const ffnSeg: MatmulSegment = {
      nUnits: c.nFF,
      weights: [{ type: wg0.type }, { type: W('blk.0.ffn_up.weight').type }],
      dots: [
        { w: 0, row: 'u' },
        { w: 1, row: 'u' },
      ],
      epilogue: `hb[t * ${c.nFF}u + u] = d0 / (1.0 + exp(-d0)) * d1;`,
    };
    const outW = weights.get('output.weight') ?? W('token_embd.weight');
    const outSegs: MatmulSegment[] = outW.parts.map((p) => ({
      nUnits: p.rowCount,
      weights: [{ type: outW.type }],
      dots: [{ w: 0, row: 'u' }],
      epilogue: `logits[${p.rowStart}u + u] = d0;`,
    }));
    const emb = W('token_embd.weight');
    const woType = W('blk.0.attn_output.weight').type;
    const downType = W('blk.0.ffn_down.weight').type;

    const sources = {
      embed: embedWGSL({
        nEmbd: c.nEmbd,
        parts: emb.parts.map((p) => ({ type: emb.type, rowStart: p.rowStart, rowCount: p.rowCount })),
      }),
      attn: attentionWGSL({
        nHead: c.nHead,
        nHeadKv: c.nHeadKv,
        headDim: c.headDim,
        scale: 1 / Math.sqrt(c.headDim),
      }),
      argmax: argmaxWGSL({ nVocab: c.nVocab }),
      out: matmulWGSL({
        K: c.nEmbd,
        TT: 1,
        norm: { eps, type: W('output_norm.weight').type },
        lastTokenOnly: true,
        segments: outSegs,
        extra: ['var<storage, read_write> logits: array<f32>'],
      }),
    };
    const perTT = (TT: number) => ({
      qkv: matmulWGSL({ K: c.nEmbd, TT, norm: { eps, type: normType }, segments: qkvSegs, extra: qkvExtra }),
      wo: matmulWGSL({
        K: qDim,
        TT,
        segments: [resSeg({ ...wq0, type: woType }, c.nEmbd)],
        extra: ['var<storage, read_write> y: array<f32>'],
      }),
      ffn: matmulWGSL({
        K: c.nEmbd,
        TT,
        norm: { eps, type: normType },
        segments: [ffnSeg],
        extra: ['var<storage, read_write> hb: array<f32>'],
      }),
      down: matmulWGSL({
        K: c.nFF,
        TT,
        segments: [resSeg({ ...wq0, type: downType }, c.nEmbd)],
        extra: ['var<storage, read_write> y: array<f32>'],
      }),
    });
    const dec = perTT(1);
    const pre = perTT(PREFILL_TT);
    const all: [string, string][] = [
      ...Object.entries(sources),
      ...Object.entries(dec).map(([k, v]) => [`decode.${k}`, v] as [string, string]),
      ...Object.entries(pre).map(([k, v]) => [`prefill.${k}`, v] as [string, string]),
    ];
    let done = 0;
    const cache = new Map<string, Promise<GPUComputePipeline>>();
    const compile = (label: string, code: string): Promise<GPUComputePipeline> => {
      let p = cache.get(code);
      if (!p) {
        const module = dev.createShaderModule({ label, code });
        p = dev
          .createComputePipelineAsync({ label, layout: 'auto', compute: { module, entryPoint: 'main' } })
          .catch(async (e) => {
            const info = await module.getCompilationInfo?.();
            const msgs = info?.messages.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('\n') ?? '';
            throw new EngineError('unsupported_model', `pipeline ${label} failed to compile: ${e}\n${msgs}`, {
              cause: e,
            });
          })
          .then((pl) => {
            onCompile?.(++done, all.length);
            return pl;
          });
        cache.set(code, p);
      } else {
        p.then(() => onCompile?.(++done, all.length));
      }
      return p;
    };
    const pipes = Object.fromEntries(
      await Promise.all(all.map(async ([k, v]) => [k, await compile(k, v)] as const)),
    );

    const bg = (pipe: GPUComputePipeline, label: string, buffers: GPUBuffer[]): GPUBindGroup =>
      dev.createBindGroup({
        label,
        layout: pipe.getBindGroupLayout(0),
        entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
      });
    const one = (w: GpuWeight) => w.parts[0].buffer;
    const layers = Array.from({ length: c.nLayers }, (_, l) => l);
    const kernelSet = (P: (k: string) => GPUComputePipeline) => ({
      qkv: {
        pipeline: P('qkv'),
        groups: layers.map((l) =>
          bg(P('qkv'), `blk.${l}.qkv`, [
            this.stepBuf,
            this.x,
            one(W(`blk.${l}.attn_norm.weight`)),
            one(W(`blk.${l}.attn_q.weight`)),
            one(W(`blk.${l}.attn_k.weight`)),
            one(W(`blk.${l}.attn_v.weight`)),
            this.rope,
            this.q,
            this.kCache[l],
            this.vCache[l],
          ]),
        ),
      },
      wo: {
        pipeline: P('wo'),
        groups: layers.map((l) =>
          bg(P('wo'), `blk.${l}.attn_output`, [
            this.stepBuf,
            this.xb,
            one(W(`blk.${l}.attn_output.weight`)),
            this.x,
          ]),
        ),
      },
      ffn: {
        pipeline: P('ffn'),
        groups: layers.map((l) =>
          bg(P('ffn'), `blk.${l}.ffn_gate_up`, [
            this.stepBuf,
            this.x,
            one(W(`blk.${l}.ffn_norm.weight`)),
            one(W(`blk.${l}.ffn_gate.weight`)),
            one(W(`blk.${l}.ffn_up.weight`)),
            this.hb,
          ]),
        ),
      },
      down: {
        pipeline: P('down'),
        groups: layers.map((l) =>
          bg(P('down'), `blk.${l}.ffn_down`, [
            this.stepBuf,
            this.hb,
            one(W(`blk.${l}.ffn_down.weight`)),
            this.x,
          ]),
        ),
      },
    });
    const dSet = kernelSet((k) => pipes[`decode.${k}`]);
    this.prefill = kernelSet((k) => pipes[`prefill.${k}`]);
    this.decode = {
      ...dSet,
      embed: {
        pipeline: pipes.embed,
        groups: [
          bg(pipes.embed, 'embed', [this.stepBuf, this.ids, this.x, ...emb.parts.map((p) => p.buffer)]),
        ],
      },
      attn: {
        pipeline: pipes.attn,
        groups: layers.map((l) =>
          bg(pipes.attn, `blk.${l}.attn`, [this.stepBuf, this.q, this.kCache[l], this.vCache[l], this.xb]),
        ),
      },
      out: {
        pipeline: pipes.out,
        groups: [
          bg(pipes.out, 'output', [
            this.stepBuf,
            this.x,
            one(W('output_norm.weight')),
            ...outW.parts.map((p) => p.buffer),
            this.logits,
          ]),
        ],
      },
      argmax: { pipeline: pipes.argmax, groups: [bg(pipes.argmax, 'argmax', [this.logits, this.tokenOut])] },
    };
    this.wgX = {
      qkv: matmulWorkgroupsX(qkvSegs),
      wo: Math.ceil(c.nEmbd / WG),
      ffn: Math.ceil(c.nFF / WG),
      down: Math.ceil(c.nEmbd / WG),
      out: matmulWorkgroupsX(outSegs),
    };
    this.built = true;
  }

  /** Dispatches per decode step (for profiling and the benchmark). */
  get dispatchesPerToken(): number {
    return 3 + 5 * this.cfg.nLayers;
  }

  /**
   * Encodes the forward pass for T tokens (already in `ids`) at positions pos0..pos0+T−1, then the
   * logits of the last token and their argmax into `tokenOut`.
   */
  private encodeForward(enc: GPUCommandEncoder, T: number): void {
    const c = this.cfg;
    const K = T === 1 ? this.decode : { ...this.decode, ...this.prefill };
    const TT = T === 1 ? 1 : PREFILL_TT;
    const ty = Math.ceil(T / TT);
    const pass = enc.beginComputePass({ label: T === 1 ? 'decode' : 'prefill' });
    const run = (k: Kernel, g: number, x: number, y = 1) => {
      pass.setPipeline(k.pipeline);
      pass.setBindGroup(0, k.groups[g]);
      pass.dispatchWorkgroups(x, y);
    };
    run(K.embed, 0, Math.ceil(c.nEmbd / WG), T);
    for (let l = 0; l < c.nLayers; l++) {
      run(K.qkv, l, this.wgX.qkv, ty);
      run(K.attn, l, c.nHead, T);
      run(K.wo, l, this.wgX.wo, ty);
      run(K.ffn, l, this.wgX.ffn, ty);
      run(K.down, l, this.wgX.down, ty);
    }
    run(K.out, 0, this.wgX.out, 1);
    run(K.argmax, 0, 1);
    pass.end();
  }

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
        `the prompt has ${ids.length} tokens but the context holds ${this.nCtx - pos0}; shorten the prompt or load with a larger contextLength`,
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
