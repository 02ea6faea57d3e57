/**
 * A llama-family model resident on one GPUDevice (Llama 2/3, TinyLlama, SmolLM, Mistral, Qwen 2/3, Gemma
 * 2/3, Phi-3): load, buffers, the steps it runs, destroy. The forward pass itself, one kernel per step in
 * llama2.c's order, is forward.ts `planLayer`; which kernel each step runs is the load's kernel plan
 * (webgpu/kernel-plan.ts); the decode loop over these steps is webgpu/decoder.ts.
 *
 * Load: weights.ts plans each weight's parts and each kernel's bindings before allocating, upload.ts fills
 * the weights, state.ts holds the run state (KV cache, activations, readback slots), forward.ts plans
 * every dispatch, dispatch.ts compiles them, binds buffers to the kernels' binding names
 * (kernels/bindings.ts) and encodes a step's dispatches and copies. Pipelines and bind groups are made at
 * load; a step writes one 16-byte uniform and encodes one command buffer. Prefill runs in batches of up to
 * `batchSize` tokens through the matrix × matrix pipelines ({@link PrefillMatmul}: mmm.ts tiles on GPUs,
 * mmv register tiles on software adapters) and the tiled causal attention; decode runs the matrix ×
 * vector pipelines, and only the argmax's u32 (or the GPU sampler's) is read back.
 *
 * phi3 runs the same kernels: its fused attn_qkv is bound as the Q/K/V kernel's three segments and its
 * [gate | up] ffn_up as the SwiGLU unit's two weights ({@link fusedWeightViews}); its LongRoPE factors and
 * attn_factor go into the RoPE table (state.ts `ropeTable`).
 */

import { EngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import { NonFiniteScanner, type NonFiniteValue } from '../../gguf/non-finite.ts';
import type { GgufFile } from '../../gguf/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import { gpuPlan, type KernelPlan } from '../kernel-plan.ts';
import { argmaxKernels } from '../kernels/argmax.ts';
import { attentionSplit } from '../kernels/attention.ts';
import type { PrefillAttentionPlan, PrefillLayout } from '../kernels/attention-prefill.ts';
import type { SgmatAttentionTile } from '../kernels/attention-sgmat.ts';
import { bindGroupByName, kernelSource } from '../kernels/bindings.ts';
import { packStep } from '../kernels/common.ts';
import { maskWGSL, maskWorkgroups, rowMaskWGSL } from '../kernels/mask.ts';
import { TILE_TOKENS } from '../kernels/mmm.ts';
import { sgmatTileDims } from '../kernels/mmm-sgmat.ts';
import {
  packHistory,
  packSampleParams,
  SAMPLE_DRAW_OFFSET,
  type SamplePassRole,
  type SampleSettings,
  selectSamplePasses,
} from '../kernels/sample.ts';
import {
  cachedPipeline,
  compileForward,
  compileOutputAll,
  encodeDispatches,
  encodePick,
  encodeReadback,
  encodeSample,
  type ForwardDispatches,
  type SampleDispatch,
} from './dispatch.ts';
import {
  type Dispatch,
  type ForwardConfig,
  planForward,
  plansSmallBatch,
  smallBatchFlash,
  usesMmv,
  usesNormPass,
} from './forward.ts';
import type {
  ForwardProfiler,
  LlamaLoadOptions,
  LlamaLoadTimes,
  MatmulFamilyName,
  SgmatPrefillLayout,
} from './options.ts';
import { firstPrefillBatch, nextPrefillBatch, PREFILL_TARGET_MS } from './prefill.ts';
import {
  chooseSmallBatch,
  median,
  rememberSmallBatch,
  SMALL_BATCH_MAX,
  SMALL_BATCH_TRIAL_RUNS,
  SMALL_BATCH_TRIAL_TOKENS,
  type SmallBatchChoice,
  type SmallBatchTrial,
} from './small-batch.ts';
import {
  allocRunState,
  checkKvCacheFits,
  kvCacheBytes,
  qkvBiasBuffer,
  type RunState,
  runStateBytes,
  writeRopeTables,
} from './state.ts';
import { uploadWeights } from './upload.ts';
import {
  allocWeights,
  fusedSegmentEnds,
  fusedWeightViews,
  type GpuWeight,
  layerSpecs,
  type ModelSpecs,
  planWeights,
  requireWeight,
} from './weights.ts';

/** The most positions one verify pass scores: 16 drafts (core/validate.ts `DRAFT_LIMITS`) and the last token. */
export const VERIFY_MAX_TOKENS = 17;

/** A llama model resident on one GPUDevice, with its KV cache and run state. */
export class LlamaModel {
  readonly cfg: LlamaConfig;
  readonly device: GPUDevice;
  readonly nCtx: number;
  readonly batchSize: number;
  readonly weightBytes: number;
  readonly times: LlamaLoadTimes;
  /** The kernels this load runs (kernel-plan.ts; forward.ts plans every dispatch from it). */
  readonly plan: KernelPlan;
  /** Weight tensors repacked into planes at load. */
  planarTensors = 0;
  /** Weight tensors split by rows across several buffers (each larger than one binding). */
  splitTensors = 0;
  /** Decode matmuls per forward pass that use mmv, and those that use `plan.decodeKernel` (K not a multiple of 32). */
  readonly decodeMatmuls = { mmv: 0, fallback: 0 };
  /** The K cache's element type. */
  readonly kvType: KvType;
  /** The V cache's element type (llama.cpp's `-ctv`; the K type unless the load said otherwise). */
  readonly vKvType: KvType;
  /**
   * Batches of 2 … `smallBatch.maxTokens` tokens run the layers' matmuls through the decode mmv kernels
   * (the prefill and verify steps; kernel-plan.ts `KernelPlan.smallBatch`, model/small-batch.ts), and how
   * that was chosen; set at load.
   */
  smallBatch: SmallBatchChoice = { maxTokens: 0, chosenBy: 'adapter' };
  /** Matmul families whose prefill runs the integer-dot tile (`plan.prefill.intDot`, covered types). */
  readonly intDotFamilies = new Set<MatmulFamilyName>();
  /**
   * The first NaN or infinity in the weights as they were loaded (F32/F16/BF16 values, quantized blocks'
   * f16 scales), for the message when the logits are not finite; undefined when none (or synthetic).
   */
  nonFinite: NonFiniteValue | undefined;
  /**
   * Profiling hook (benchmark only; off by default): while set, every dispatch of the forward pass runs in
   * a compute pass of its own with the timestamp writes `passWrites` returns for its kernel family.
   */
  profiler?: ForwardProfiler;

  /** Every buffer this model made (weights and run state), released by {@link destroy}. */
  private buffers: GPUBuffer[] = [];
  /** Constrained decoding's token bitmask and mask kernel ({@link enableTokenMask}), made on first use. */
  private mask?: { buffer: GPUBuffer; pipeline: GPUComputePipeline; group: GPUBindGroup; wgX: number };
  private s!: RunState;
  private stepData = new Uint32Array(4);
  /** Every kernel of the forward pass, compiled and bound at load (dispatch.ts). */
  private kernels!: ForwardDispatches;
  /**
   * The GPU sampler's passes the current request encodes ({@link startSampling}: those its parameters
   * need); every planned pass before the first request.
   */
  private samplePasses?: SampleDispatch[];
  /** The logits-for-every-position kernel (teacher-forced scoring), made on first use. */
  private allLogits?: { kernels: Dispatch[]; logits: GPUBuffer; readback: GPUBuffer };
  /**
   * The verify step's every-position output kernels over its own logits [rows, nVocab] (rows: the most
   * positions one verify scores, rounded up to the prefill tile), its per-row argmax (kernels/argmax.ts, two passes) and
   * their buffers, made on first use: a few MB where the scoring buffers hold a whole batch.
   */
  private verifyState?: {
    rows: number;
    kernels: Dispatch[];
    /** The every-position output kernels of a small batch (mmv), where the load runs small batches. */
    smallKernels?: Dispatch[];
    logits: GPUBuffer;
    logitsReadback: GPUBuffer;
    /** The argmax's two passes over the rows (kernels/argmax.ts), dispatched (wgX, T). */
    argmax: { pipeline: GPUComputePipeline; group: GPUBindGroup; wgX: number }[];
    out: GPUBuffer;
    readback: GPUBuffer;
    /** The grammar's row masks [rows, ceil(nVocab / 32)] and their kernel (kernels/mask.ts), made on first use. */
    mask?: { buffer: GPUBuffer; pipeline: GPUComputePipeline; group: GPUBindGroup; wgX: number };
  };
  /** The output kernel's buffers by binding name (for the every-token variant made on first use). */
  private outAllBuffers!: Record<string, GPUBuffer>;
  /** Workgroups per attention chunk of the flash kernel (nHeadKv × head groups); 0 without flash. */
  private flashWorkgroups = 0;
  /** The same for small batches' flash kernel (forward.ts `smallBatchFlash`); 0 where they run the prefill attention. */
  private flashSmallWorkgroups = 0;
  private prefillAttn?: { layout: PrefillLayout | SgmatPrefillLayout; plan: PrefillAttentionPlan };
  /** Positions per chunk and chunks of the step being encoded (Step.p2 holds the chunk). */
  private split = { chunk: 1, nSplit: 1 };
  private built = false;
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
    this.plan = opts.plan ?? gpuPlan();
    this.kvType = opts.kvType ?? 'f16';
    this.vKvType = opts.vKvType ?? this.kvType;
  }

  /** Tokens per workgroup row of the prefill matmuls (a prefill batch is best a multiple of it). */
  get prefillTile(): number {
    const p = this.plan.prefill;
    if (p.kind !== 'tile') return p.tokens;
    // The large subgroup-matrix tile takes 64 tokens (a multiple of the float tile's 32, which the
    // matmuls it does not cover keep).
    return typeof p.subgroupMatrix === 'object' ? sgmatTileDims(p.subgroupMatrix).tokens : TILE_TOKENS;
  }
  /** Prefill writes each batch's input RMSNorm once for its matmuls (forward.ts `usesNormPass`). */
  get normPass(): boolean {
    return usesNormPass(this.plan.prefill, this.cfg);
  }
  /** Decode attention: flash-decoding, or the prefill kernel where the head shape rules flash out. */
  get decodeAttention(): 'flash' | 'prefill-kernel' {
    return this.flashWorkgroups > 0 ? 'flash' : 'prefill-kernel';
  }
  /**
   * Prefill attention: the tiled kernel's layout and tiles, the one on subgroup matrices (`sgmat`, with its
   * configuration), or the per-(head, token) kernel.
   */
  get prefillAttention(): {
    kernel: 'tiled' | 'rows' | 'sgmat' | 'per-token';
    plan?: PrefillAttentionPlan;
    shareKv?: number;
    tile?: SgmatAttentionTile;
  } {
    const p = this.prefillAttn;
    if (!p) return { kernel: 'per-token' };
    const l = p.layout;
    if (l.kind === 'sgmat') return { kernel: 'sgmat', plan: p.plan, ...(l.tile ? { tile: l.tile } : {}) };
    return { kernel: l.kind, plan: p.plan, ...(l.shareKv ? { shareKv: l.shareKv } : {}) };
  }

  /**
   * A small batch's attention where small batches run ({@link smallBatch} `maxTokens` ≥ 2): flash-decoding
   * over chunks of the cache (forward.ts `smallBatchFlash`) or the prefill kernel; undefined where none runs.
   */
  get smallBatchAttention(): 'flash' | 'prefill-kernel' | undefined {
    if (this.kernels.smallLayers.length === 0 || this.smallBatch.maxTokens < 2) return undefined;
    return this.flashSmallWorkgroups > 0 ? 'flash' : 'prefill-kernel';
  }

  /** Query tokens per flash-decoding dispatch the partials hold (state.ts `RunStateSize.flashTokens`). */
  get flashTokens(): number {
    return smallBatchFlash(this.cfg, this.plan) ? SMALL_BATCH_MAX : 1;
  }

  /** Bytes of the KV cache (state.ts `kvCacheBytes`: K's and V's rows in their types). */
  get kvBytes(): number {
    return kvCacheBytes(this.cfg, this.nCtx, this.kvType, this.vKvType);
  }

  /** The kernel choices of this load, for forward.ts. */
  private get choice(): ForwardConfig {
    return { ...this.plan, kvType: this.kvType, vKvType: this.vKvType, nCtx: this.nCtx };
  }

  /**
   * The attention chunking for a step of `nTokens` at `pos0`, also written into the Step uniform: chunks
   * of flash-decoding for one token, and for a small batch (`small`: it runs the small-batch layers) whose
   * attention is flash-decoding too; one chunk otherwise (the prefill attention ignores it).
   */
  private stepSplit(nTokens: number, pos0: number, small: boolean): { chunk: number; nSplit: number } {
    const perChunk =
      nTokens === 1
        ? this.flashWorkgroups
        : small && this.kernels.smallLayers.length > 0
          ? this.flashSmallWorkgroups
          : 0;
    this.split =
      perChunk > 0
        ? attentionSplit(pos0 + nTokens, { ...this.plan.attention, workgroupsPerChunk: perChunk })
        : { chunk: 1, nSplit: 1 };
    return this.split;
  }

  /**
   * Writes the Step uniform for `nTokens` at `pos0`; `small` says whether the batch runs the small-batch
   * layers (default: {@link usesSmallBatch}, as `encodeForward` decides), which sets its attention chunking.
   */
  private writeStep(nTokens: number, pos0: number, small = this.usesSmallBatch(nTokens)): void {
    const { chunk } = this.stepSplit(nTokens, pos0, small);
    const d = packStep(nTokens, pos0, this.stepData);
    d[2] = chunk;
    this.device.queue.writeBuffer(this.s.step, 0, d);
  }

  /**
   * Streams the GGUF's tensors to GPU buffers, allocates the KV cache and run state, and compiles the
   * pipelines.
   * @throws EngineError 'invalid_argument' (a Q8_0/Q4_0 cache for a head size not a multiple of 32, before
   *   anything is allocated), 'unsupported_model' (tensor type), 'out_of_memory' (an allocation failed; all
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
    checkKvCacheFits(cfg, opts.kvType ?? 'f16', opts.vKvType ?? opts.kvType ?? 'f16');
    const allBuffers: GPUBuffer[] = [];
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let model: LlamaModel | undefined;
    try {
      // 1. Plan every weight's parts (any matrix larger than one binding is split by rows) and every
      // kernel's bindings, then allocate: a model this device cannot bind is refused before allocating.
      const plans = planWeights(file, cfg, maxBuffer, maxBinding, (opts.plan ?? gpuPlan()).repack);
      const specs = layerSpecs(
        cfg,
        fusedWeightViews(plans, cfg),
        device.limits.maxStorageBuffersPerShaderStage,
        opts.kvType ?? 'f16',
        opts.vKvType ?? opts.kvType ?? 'f16',
      );
      const { weights, weightBytes } = allocWeights(device, plans, allBuffers);
      model = new LlamaModel(device, cfg, opts, weightBytes, times, specs);
      model.planarTensors = [...weights.values()].filter((w) => w.planar).length;
      // (phi3's fused tensors count when a segment of theirs needs more than one part)
      model.splitTensors = [...weights.values()].filter(
        (w) => w.parts.length > (fusedSegmentEnds(w.name, cfg)?.length ?? 1),
      ).length;
      model.buffers = allBuffers;
      model.s = allocRunState(cfg, model, (label, size, usage) => model!.buf(label, size, usage));
      const oom = await device.popErrorScope();
      const val = await device.popErrorScope();
      if (oom || val) {
        throw new EngineError(
          'out_of_memory',
          `GPU allocation failed (${(oom ?? val)!.message}); the model needs ${weightBytes} bytes of weights plus ${runStateBytes(cfg, model)} bytes of KV cache and activations`,
        );
      }

      // 2. Stream tensor data into the buffers (planar weights through a staging buffer per part,
      // repacked on the GPU as soon as the part is complete).
      const scanner = new NonFiniteScanner();
      const ropeFactors = await uploadWeights(device, file, cfg, weights, weightBytes, opts, times, scanner);
      model.nonFinite = scanner.found;
      writeRopeTables(device, cfg, model.nCtx, model.s, ropeFactors);

      // A cancel during the upload stops here, before the compiles (seconds on a software adapter).
      if (opts.signal?.aborted) throw new EngineError('aborted', 'the load was cancelled');

      // 3. Pipelines and bind groups.
      const tc = performance.now();
      device.pushErrorScope('validation');
      // The compiles already started finish in the background (cached for the next load); the load ends
      // at the next one done, and reports none after the cancel.
      const cancelled = () => {
        if (opts.signal?.aborted) throw new EngineError('aborted', 'the load was cancelled');
      };
      await model.build(fusedWeightViews(weights, cfg), (done, total) => {
        cancelled();
        opts.onCompile?.(done, total);
        cancelled();
      });
      const bad = await device.popErrorScope();
      if (bad) {
        throw new EngineError(
          'unsupported_model',
          `this adapter rejected the model's kernels: ${bad.message}`,
        );
      }
      times.compileMs = performance.now() - tc;
      // Small batches through mmv or the prefill tile: a timed trial of whole forward passes, remembered
      // for later loads of the same model and kernels on this adapter (kernel-plan.ts resolveKernelPlan).
      if (model.plan.smallBatch === 'trial' && plansSmallBatch(model.choice)) {
        await model.trialSmallBatch();
        const key = model.plan.chosen?.smallBatchKey;
        if (key) rememberSmallBatch(key, model.smallBatch);
      }
      return model;
    } catch (e) {
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

  private buf(label: string, size: number, usage: number): GPUBuffer {
    const b = this.device.createBuffer({ label, size: Math.max(16, Math.ceil(size / 4) * 4), usage });
    this.buffers.push(b);
    return b;
  }

  /**
   * Plans every kernel (forward.ts), compiles the distinct sources in parallel (and the GPU sampler,
   * so the first sampled request does not wait for a compile: 1–2 s on SwiftShader), and binds each
   * kernel's buffers by name (dispatch.ts `compileForward`).
   */
  private async build(
    weights: Map<string, GpuWeight>,
    onCompile?: (done: number, total: number) => void,
  ): Promise<void> {
    const c = this.cfg;
    const dev = this.device;
    const specs = this.specs;
    const choice = this.choice;
    for (const l of specs.layers) {
      for (const f of ['qkv', 'wo', 'ffn', 'down'] as const)
        this.decodeMatmuls[usesMmv(choice, l[f][0], f) ? 'mmv' : 'fallback']++;
    }
    this.decodeMatmuls[usesMmv(choice, specs.out[0], 'output') ? 'mmv' : 'fallback']++;
    const W = (name: string) => requireWeight(weights, name);
    const qkvBias = c.qkvBias
      ? Array.from({ length: c.nLayers }, (_, l) =>
          qkvBiasBuffer(
            dev,
            l,
            [W(`blk.${l}.attn_q.bias`), W(`blk.${l}.attn_k.bias`), W(`blk.${l}.attn_v.bias`)],
            (label, size, usage) => this.buf(label, size, usage),
          ),
        )
      : [];
    const plan = planForward(c, weights, specs, this.s, choice, qkvBias, this.intDotFamilies);
    this.prefillAttn = plan.prefillAttn;
    this.flashWorkgroups = plan.flashWorkgroups;
    this.flashSmallWorkgroups = plan.flashSmallWorkgroups;
    this.kernels = await compileForward(dev, plan, onCompile);
    this.outAllBuffers = plan.outBuffers;
    // Off, on, or (the trial) decided once the kernels are compiled (load); 'option' in a plan made by hand.
    const sb = choice.smallBatch;
    const by = this.plan.chosen?.smallBatchBy ?? 'option';
    // An earlier load's trial (`cached`) keeps its rows.
    const rows = by === 'cached' ? this.plan.chosen?.smallBatchTrials : undefined;
    const trials = rows ? { trials: rows.map((t) => ({ ...t })) } : {};
    if (!plansSmallBatch(choice))
      this.smallBatch = {
        maxTokens: 0,
        chosenBy: sb === undefined ? 'adapter' : sb === 0 ? by : 'unavailable',
        ...trials,
      };
    else if (sb !== 'trial')
      this.smallBatch = { maxTokens: Math.min(sb ?? 0, SMALL_BATCH_MAX), chosenBy: by, ...trials };
    this.built = true;
  }

  /**
   * Benchmarks (scripts/device/small-batch.ts, draft.ts): sets how many tokens a small batch may have on
   * this load, to time both ways on one load (`chosenBy` becomes 'option', the trial's rows are kept).
   * @param maxTokens 0 (every batch through the prefill kernels) or 2 … {@link SMALL_BATCH_MAX}.
   * @throws EngineError('invalid_argument') out of range, or above 0 where the small-batch kernels were not
   *   compiled (the plan's smallBatch off, or mmv off).
   */
  setSmallBatch(maxTokens: number): void {
    if (
      !(Number.isInteger(maxTokens) && (maxTokens === 0 || (maxTokens >= 2 && maxTokens <= SMALL_BATCH_MAX)))
    )
      throw new EngineError(
        'invalid_argument',
        `small batch sizes are 0 or 2..${SMALL_BATCH_MAX} (got ${maxTokens})`,
      );
    if (maxTokens > 0 && this.kernels.smallLayers.length === 0)
      throw new EngineError(
        'invalid_argument',
        "this load compiled no small-batch kernels (load with smallBatch 'mmv' or 'trial', and mmv on)",
      );
    this.smallBatch = { ...this.smallBatch, maxTokens, chosenBy: 'option' };
  }

  /** Does a batch of T tokens run through the small-batch kernels ({@link smallBatch})? */
  usesSmallBatch(T: number): boolean {
    return T >= 2 && T <= this.smallBatch.maxTokens && this.kernels.smallLayers.length > 0;
  }

  /**
   * The small-batch trial (kernel-plan.ts `KernelPlan.smallBatch` 'trial'): a whole forward pass (embed,
   * layers, the last token's logits and argmax) of each of {@link SMALL_BATCH_TRIAL_TOKENS} tokens at
   * position 0, through the small-batch kernels and through the prefill kernels, warm-up runs then the
   * median of timed ones (wall time from submit to `onSubmittedWorkDone`); sets {@link smallBatch} by
   * small-batch.ts `chooseSmallBatch`. Runs before any prompt: the KV rows it writes are overwritten by
   * the first prefill. `time` replaces the timing (tests inject timings).
   * @returns the trial's rows.
   */
  async trialSmallBatch(
    time: (T: number, small: boolean) => Promise<number> = (T, small) => this.timeForward(T, small),
  ): Promise<SmallBatchTrial[]> {
    const trials: SmallBatchTrial[] = [];
    for (const tokens of SMALL_BATCH_TRIAL_TOKENS.filter((t) => t <= this.batchSize)) {
      const mmvMs = await time(tokens, true);
      const tileMs = await time(tokens, false);
      trials.push({ tokens, mmvMs, tileMs });
    }
    this.smallBatch = { maxTokens: chooseSmallBatch(trials), chosenBy: 'trial', trials };
    return trials;
  }

  /** Median ms of a whole forward pass of T tokens at position 0 (small-batch or prefill kernels). */
  private async timeForward(T: number, small: boolean): Promise<number> {
    const { warmup, reps } = SMALL_BATCH_TRIAL_RUNS;
    this.device.queue.writeBuffer(this.s.ids, 0, new Uint32Array(T));
    this.writeStep(T, 0, small);
    const ms: number[] = [];
    for (let i = 0; i < warmup + reps; i++) {
      const enc = this.device.createCommandEncoder({ label: 'small_batch_trial' });
      encodeDispatches(enc, this.kernels, T, this.split.nSplit, undefined, { logits: true, small });
      const t0 = performance.now();
      this.device.queue.submit([enc.finish()]);
      await this.device.queue.onSubmittedWorkDone();
      if (i >= warmup) ms.push(performance.now() - t0);
    }
    return median(ms);
  }

  /**
   * The token pick's dispatches as loaded (kernel-plan.ts `describePlan` reports them): the argmax's two
   * passes (partials, final) and the GPU sampler's planned passes with their roles, each with its
   * workgroups along x.
   */
  get pickDispatches(): {
    argmax: { wgX: number }[];
    sampler: { role: SamplePassRole; wgX: number }[];
  } {
    return {
      argmax: this.kernels.argmax.map((d) => ({ wgX: d.wgX })),
      sampler: this.kernels.sampler.map((d) => ({ role: d.role, wgX: d.wgX })),
    };
  }

  /**
   * Dispatches per decode step (for profiling and the benchmark), counting the attention combine, which
   * runs only once the context spans more than one chunk, and the greedy pick (the argmax's two passes).
   */
  get dispatchesPerToken(): number {
    return (
      1 +
      this.kernels.argmax.length +
      this.kernels.output.length +
      this.kernels.decodeLayers.reduce((n, l) => n + l.length, 0)
    );
  }

  /**
   * Encodes the forward pass for T tokens (already in `ids`) at positions pos0..pos0+T−1, then the
   * logits of the last token and their argmax into `tokenOut` (or, with `allLogits`, every token's logits):
   * dispatch.ts `encodeDispatches`. The Step uniform (and with it the attention chunking) must have been
   * written by `writeStep`.
   */
  private encodeForward(
    enc: GPUCommandEncoder,
    T: number,
    allLogits = false,
    sample: readonly Dispatch[] | undefined = undefined,
    logits = true,
    pick = true,
  ): void {
    const all = allLogits ? this.allLogits?.kernels : undefined;
    encodeDispatches(enc, this.kernels, T, this.split.nSplit, this.profiler, {
      allLogits: all,
      sample,
      logits,
      pick,
      small: this.usesSmallBatch(T),
    });
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
        { details: { contextLength: this.nCtx, promptTokens: pos0 + ids.length } },
      );
    }
  }

  /**
   * Submits the forward pass of `batch` (≤ batchSize tokens) at positions pos…, as one command buffer;
   * the logits and their argmax only when it is the prompt's `last` batch.
   */
  private submitPrefill(batch: number[], pos: number, last: boolean): void {
    this.device.queue.writeBuffer(this.s.ids, 0, Uint32Array.from(batch));
    this.writeStep(batch.length, pos);
    const enc = this.device.createCommandEncoder({ label: 'prefill' });
    this.encodeForward(enc, batch.length, false, undefined, last);
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

  /** The every-position logits kernels and buffers [batchSize, nVocab], compiled on first use. */
  private async allLogitsKernels(): Promise<NonNullable<LlamaModel['allLogits']>> {
    if (this.allLogits) return this.allLogits;
    const bytes = this.batchSize * this.cfg.nVocab * 4;
    const logits = this.buf('logits_all', bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const readback = this.buf(
      'logits_all_readback',
      bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    const kernels = await compileOutputAll(
      this.device,
      this.choice,
      this.specs.outAll,
      { ...this.outAllBuffers, logits },
      this.intDotFamilies,
    );
    this.allLogits = { kernels, logits, readback };
    return this.allLogits;
  }

  /** The most tokens one verify pass takes: min(batchSize, {@link VERIFY_MAX_TOKENS}). */
  get verifyMaxTokens(): number {
    return Math.min(this.batchSize, VERIFY_MAX_TOKENS);
  }

  /** See {@link verifyState}. */
  private async verifyKernels(): Promise<NonNullable<LlamaModel['verifyState']>> {
    if (this.verifyState) return this.verifyState;
    const V = this.cfg.nVocab;
    const tile = this.prefillTile;
    const rows = Math.ceil(this.verifyMaxTokens / tile) * tile;
    const logits = this.buf('verify_logits', rows * V * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const logitsReadback = this.buf(
      'verify_logits_readback',
      rows * V * 4,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    const kernels = await compileOutputAll(
      this.device,
      this.choice,
      this.specs.outAll,
      { ...this.outAllBuffers, logits },
      this.intDotFamilies,
    );
    // A small verify batch's every-position logits through mmv too (the output is the largest matmul).
    const smallKernels =
      this.kernels.smallLayers.length > 0
        ? await compileOutputAll(
            this.device,
            this.choice,
            this.specs.outAll,
            { ...this.outAllBuffers, logits },
            this.intDotFamilies,
            'small',
          )
        : undefined;
    const am = argmaxKernels({ nVocab: V });
    const partials = this.buf('verify_argmax_partials', rows * am.partialBytesPerRow, GPUBufferUsage.STORAGE);
    const out = this.buf('verify_out', rows * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const readback = this.buf('verify_readback', rows * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const argmax = await Promise.all(
      [
        { src: kernelSource('argmax_rows', am.partials), buffers: { logits, partials }, wgX: am.nParts },
        { src: kernelSource('argmax_rows_final', am.final), buffers: { partials, out }, wgX: 1 },
      ].map(async ({ src, buffers, wgX }) => {
        const pipeline = await cachedPipeline(this.device, src.label, src.code);
        return { pipeline, group: bindGroupByName(this.device, pipeline, src, buffers), wgX };
      }),
    );
    this.verifyState = { rows, kernels, smallKernels, logits, logitsReadback, argmax, out, readback };
    return this.verifyState;
  }

  /** The verify rows' grammar masks (see verifyState's `mask`), made on the first masked verify. */
  private async verifyMask(
    v: NonNullable<LlamaModel['verifyState']>,
  ): Promise<NonNullable<NonNullable<LlamaModel['verifyState']>['mask']>> {
    if (v.mask) return v.mask;
    const V = this.cfg.nVocab;
    const pipeline = await cachedPipeline(this.device, 'verify_token_masks', rowMaskWGSL({ nVocab: V }));
    this.checkAlive();
    if (v.mask) return v.mask;
    const buffer = this.buf(
      'verify_token_masks',
      v.rows * Math.ceil(V / 32) * 4,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
    const group = this.device.createBindGroup({
      label: 'verify_token_masks',
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer } },
        { binding: 1, resource: { buffer: v.logits } },
      ],
    });
    v.mask = { buffer, pipeline, group, wgX: maskWorkgroups(V) };
    return v.mask;
  }

  /**
   * Speculative decoding's verify step: feeds `ids` at positions pos0 … pos0 + T − 1 in one batched forward
   * (the small-batch mmv kernels where {@link usesSmallBatch}, else the prefill kernels; T = 1 runs a plain
   * decode step) and returns the target's greedy choice after
   * each of them: argmax[j] is the next token given ids[0..j] (per-row argmax on the GPU, T × 4 bytes read
   * back), and with `readLogits` the logits [T, nVocab] too (for sampled speculative decoding). The KV
   * cache then holds rows pos0 … pos0 + T − 1; rolling back past a rejected draft is only a matter of where
   * the next step starts: it overwrites those rows before any step reads them (attention reads positions
   * below its own, and the cache is indexed by position, sliding-window layers included).
   * With `masks` (structured output) row j's logits are masked on the GPU by masks[j] before its argmax
   * (kernels/mask.ts: T = 1 by the decode step's token mask, else one bitmask per row), so argmax[j] is
   * the largest logit the grammar allows there (lowest index on ties; for T ≥ 2, 0xFFFFFFFF where every
   * allowed logit is NaN; T = 1 has the decode mask's −1e30, which the argmax may pick there), and only
   * T × 4 bytes come back instead of the rows.
   * @param ids [T] token ids: the last accepted token (not yet in the cache), then the drafts;
   *   1 ≤ T ≤ {@link verifyMaxTokens} (min(batchSize, 17)).
   * @param opts.masks [T] of [ceil(nVocab / 32)] words (xgrammar's bitmask layout).
   * @returns argmax [T]; logits [T, nVocab] with `readLogits` (masked where `masks` are given).
   * @throws EngineError 'invalid_argument' (T out of range, masks not T), 'context_overflow'
   *   (pos0 + T > nCtx), 'not_loaded' after destroy.
   */
  async verify(
    ids: number[],
    pos0: number,
    opts: { readLogits?: boolean; masks?: readonly (Int32Array | Uint32Array)[] } = {},
  ): Promise<{ argmax: Int32Array; logits?: Float32Array }> {
    this.checkAlive();
    const T = ids.length;
    if (!(T >= 1 && T <= this.verifyMaxTokens))
      throw new EngineError(
        'invalid_argument',
        `verify takes 1..${this.verifyMaxTokens} tokens (min(batch, ${VERIFY_MAX_TOKENS})), got ${T}`,
      );
    if (pos0 + T > this.nCtx)
      throw new EngineError(
        'context_overflow',
        `positions ${pos0}..${pos0 + T - 1} are past the context (${this.nCtx} tokens)`,
      );
    const V = this.cfg.nVocab;
    const words = Math.ceil(V / 32);
    const { masks } = opts;
    if (masks && !(masks.length === T && masks.every((m) => m.length === words)))
      throw new EngineError(
        'invalid_argument',
        `verify of ${T} tokens takes ${T} masks of ${words} words, got ${masks.length}`,
      );
    if (T === 1) {
      if (masks) {
        // The constrained decode step's own pick: the token fed, its logits masked, then the argmax.
        await this.enableTokenMask();
        this.device.queue.writeBuffer(this.s.ids, 0, Uint32Array.of(ids[0]));
        this.submitForward(pos0);
        this.writeTokenMask(masks[0]);
        this.submitPick({ slot: 0, mask: true, readLogits: opts.readLogits });
      } else this.submitDecode(pos0, { tokenId: ids[0], slot: 0, readLogits: opts.readLogits });
      const id = await this.readToken(0);
      return { argmax: Int32Array.of(id), logits: opts.readLogits ? await this.readLogits() : undefined };
    }
    const v = await this.verifyKernels();
    const mask = masks ? await this.verifyMask(v) : undefined;
    if (mask && masks) {
      const all = new Uint32Array(T * words);
      for (const [j, m] of masks.entries()) all.set(m, j * words);
      this.device.queue.writeBuffer(mask.buffer, 0, all);
    }
    this.device.queue.writeBuffer(this.s.ids, 0, Uint32Array.from(ids));
    const small = this.usesSmallBatch(T) && v.smallKernels !== undefined;
    this.writeStep(T, pos0, small);
    const enc = this.device.createCommandEncoder({ label: 'verify' });
    encodeDispatches(enc, this.kernels, T, this.split.nSplit, this.profiler, {
      allLogits: small ? v.smallKernels : v.kernels,
      logits: true,
      small,
    });
    const pass = enc.beginComputePass({ label: 'argmax_rows' });
    if (mask) {
      pass.setPipeline(mask.pipeline);
      pass.setBindGroup(0, mask.group);
      pass.dispatchWorkgroups(mask.wgX, T);
    }
    for (const d of v.argmax) {
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.group);
      pass.dispatchWorkgroups(d.wgX, T);
    }
    pass.end();
    enc.copyBufferToBuffer(v.out, 0, v.readback, 0, T * 4);
    if (opts.readLogits) enc.copyBufferToBuffer(v.logits, 0, v.logitsReadback, 0, T * V * 4);
    this.device.queue.submit([enc.finish()]);
    await v.readback.mapAsync(GPUMapMode.READ, 0, T * 4);
    const argmax = new Int32Array(v.readback.getMappedRange(0, T * 4).slice(0));
    v.readback.unmap();
    let logits: Float32Array | undefined;
    if (opts.readLogits) {
      await v.logitsReadback.mapAsync(GPUMapMode.READ, 0, T * V * 4);
      logits = new Float32Array(v.logitsReadback.getMappedRange(0, T * V * 4).slice(0));
      v.logitsReadback.unmap();
    }
    return { argmax, logits };
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
    const { logits, readback } = await this.allLogitsKernels();
    for (let i = 0; i < ids.length; i += this.batchSize) {
      if (signal?.aborted) throw new EngineError('aborted', 'cancelled');
      const batch = ids.slice(i, i + this.batchSize);
      const T = batch.length;
      this.device.queue.writeBuffer(this.s.ids, 0, Uint32Array.from(batch));
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
    if (opts.tokenId !== undefined)
      this.device.queue.writeBuffer(this.s.ids, 0, Uint32Array.of(opts.tokenId));
    this.writeStep(1, pos);
    if (opts.sample !== undefined) this.writeDraw(opts.sample);
    const enc = this.device.createCommandEncoder({ label: 'decode' });
    this.encodeForward(enc, 1, false, opts.sample !== undefined ? this.samplerPasses() : undefined);
    encodeReadback(enc, this.s, this.cfg.nVocab, opts);
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
      encodeSample(enc, this.samplerPasses());
    }
    encodeReadback(enc, this.s, this.cfg.nVocab, opts);
    this.device.queue.submit([enc.finish()]);
  }

  /**
   * Submits one decode step's forward pass for the token already in `ids[0]` (fed back by the last
   * {@link submitPick}) at position `pos`, up to its logits, without picking a token: constrained decoding
   * (webgpu/generation.ts) queues it before the host has read the last token and made the next mask, then
   * picks with {@link submitPick}.
   * @throws EngineError('context_overflow') when pos ≥ nCtx.
   */
  submitForward(pos: number): void {
    this.checkAlive();
    if (pos >= this.nCtx)
      throw new EngineError('context_overflow', `position ${pos} is past the context (${this.nCtx} tokens)`);
    this.writeStep(1, pos);
    const enc = this.device.createCommandEncoder({ label: 'forward' });
    this.encodeForward(enc, 1, false, undefined, true, false);
    this.device.queue.submit([enc.finish()]);
  }

  /**
   * Prepares constrained decoding: makes the token bitmask buffer [ceil(nVocab / 32)] u32 and the mask
   * kernel (kernels/mask.ts, compiled once per device) the first time; later calls return at once.
   * @throws EngineError('unsupported_model') when the kernel fails to compile; 'not_loaded' after destroy.
   */
  async enableTokenMask(): Promise<void> {
    this.checkAlive();
    if (this.mask) return;
    const words = Math.ceil(this.cfg.nVocab / 32);
    const code = maskWGSL({ nVocab: this.cfg.nVocab });
    const pipeline = await cachedPipeline(this.device, 'token_mask', code);
    this.checkAlive();
    if (this.mask) return;
    const buffer = this.buf('token_mask', words * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    const group = this.device.createBindGroup({
      label: 'token_mask',
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer } },
        { binding: 1, resource: { buffer: this.s.logits } },
      ],
    });
    this.mask = { buffer, pipeline, group, wgX: maskWorkgroups(this.cfg.nVocab) };
  }

  /**
   * Writes the token bitmask of the next {@link submitPick} with `mask` (bit i of word i >> 5: token i
   * allowed; xgrammar's layout).
   * @param words [ceil(nVocab / 32)] 32-bit words. @throws Error before {@link enableTokenMask}.
   */
  writeTokenMask(words: Int32Array | Uint32Array): void {
    if (!this.mask) throw new Error('writeTokenMask before enableTokenMask');
    this.device.queue.writeBuffer(this.mask.buffer, 0, words);
  }

  /**
   * Picks the token from the logits already there (a prefill's or a {@link submitForward}): with `mask`,
   * the token bitmask ({@link writeTokenMask}) applied to the logits first; then the argmax, or with
   * `sample` (a draw index, after {@link startSampling}) the GPU sampler; then the copies of
   * {@link submitDecode} (feedback into `ids[0]`, readback slot, logits).
   */
  submitPick(opts: {
    slot?: number;
    feedBack?: boolean;
    readLogits?: boolean;
    sample?: number;
    mask?: boolean;
  }): void {
    this.checkAlive();
    if (opts.mask && !this.mask) throw new Error('submitPick with a mask before enableTokenMask');
    if (opts.sample !== undefined) this.writeDraw(opts.sample);
    const enc = this.device.createCommandEncoder({ label: 'pick' });
    encodePick(
      enc,
      opts.sample !== undefined ? this.samplerPasses() : this.kernels.argmax,
      opts.mask ? this.mask : undefined,
    );
    encodeReadback(enc, this.s, this.cfg.nVocab, opts);
    this.device.queue.submit([enc.finish()]);
  }

  /** Waits for readback slot `slot` and returns the token id there. */
  async readToken(slot: number): Promise<number> {
    const b = this.s.readbacks[slot];
    await b.mapAsync(GPUMapMode.READ, 0, 4);
    const id = new Uint32Array(b.getMappedRange(0, 4))[0];
    b.unmap();
    return id;
  }

  /** Waits for the logits readback and returns a copy [nVocab]. */
  async readLogits(): Promise<Float32Array> {
    const b = this.s.logitsReadback;
    await b.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(b.getMappedRange().slice(0));
    b.unmap();
    return out;
  }

  /**
   * Prepares sampled decode on the GPU for one request (the sampler is compiled at load): writes its
   * parameters and seeds its history ring with `history` (the prompt; its last nCtx ids). Then
   * `submitReadback({ sample: 0, … })` samples the first token from the prefill's logits and
   * `submitDecode(pos, { sample: n, feedBack: true, … })` runs step n with the sampler as its last
   * dispatch; each draw appends its id to the ring, so the penalty sees the output without the host.
   * Each sampled step encodes only the passes `p` needs (kernels/sample.ts `selectSamplePasses`).
   * @param p resolved, validated parameters (`Sampler.params`); @param seed PRNG seed (low 32 bits).
   * @param passes 'all': encode every planned pass, those `p` does not use returning at once (the path
   *   before issue 40; tests compare the two).
   * @throws EngineError('not_loaded') after destroy.
   */
  async startSampling(
    p: SampleSettings,
    seed: number,
    history: readonly number[],
    passes: 'needed' | 'all' = 'needed',
  ): Promise<void> {
    this.checkAlive();
    const planned = this.kernels.sampler;
    this.samplePasses = passes === 'all' ? planned : selectSamplePasses(planned, p, this.cfg.nVocab);
    const q = this.device.queue;
    q.writeBuffer(this.s.sample.params, 0, packSampleParams(p, seed, 0, this.cfg.nVocab));
    q.writeBuffer(this.s.sample.hist, 0, packHistory(history, this.nCtx));
  }

  /** Roles of the GPU sampler's passes each sampled step encodes now, in dispatch order ({@link startSampling}). */
  get samplerRoles(): SamplePassRole[] {
    return this.samplerPasses().map((d) => d.role);
  }

  private samplerPasses(): SampleDispatch[] {
    return this.samplePasses ?? this.kernels.sampler;
  }

  /** Sets the draw index (the keyed PRNG's counter) of the next sampled step. */
  private writeDraw(n: number): void {
    this.device.queue.writeBuffer(this.s.sample.params, SAMPLE_DRAW_OFFSET, Uint32Array.of(n >>> 0));
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
