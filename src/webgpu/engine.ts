/**
 * The WebGPU engine: our own kernels running a GGUF llama model. Implements {@link Engine}; has no DOM
 * dependency, so it runs in a worker, in Vitest's browser mode and in Node through Dawn.
 */
import { EngineError, isEngineError } from '../core/errors.ts';
import type {
  ChatRequest,
  Engine,
  EngineStats,
  GenerateRequest,
  GenerateResult,
  LoadOptions,
  LoadProgress,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from '../core/types.ts';
import {
  chatGenerateFields,
  checkLoadOptions,
  checkModelSource,
  checkTokenIds,
  checkTokenizeArgs,
  loadContextLength,
  validateChatRequest,
  validateGenerateRequest,
} from '../core/validate.ts';
import { type GgufHeader, headerOf } from '../gguf/header.ts';
import type { GgufFile } from '../gguf/types.ts';
import { chatPromptTokens } from '../model/chat-template.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { GrammarCompiler } from '../model/grammar.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import type { Tokenizer } from '../model/tokenizer/types.ts';
import { parseToolCalls, toolCallFormat, toolConstraint } from '../model/tool-calls.ts';
import { createGpuContext, deviceLostWithin, type GpuContext } from './device.ts';
import { runGeneration } from './generation.ts';
import {
  checkKernelOverrides,
  describePlan,
  type KernelOverrides,
  type KernelPlan,
  type KernelsInfo,
  resolveKernelPlan,
} from './kernel-plan.ts';
import { WEIGHT_TYPES } from './kernels/common.ts';
import { LlamaModel } from './model/llama.ts';
import { defaultBatchSize } from './model/prefill.ts';
import { checkKvCacheFits, READBACK_SLOTS } from './model/state.ts';
import { syntheticGguf } from './model/synthetic.ts';
import { draftVocabularyProblem } from './speculative.ts';

/**
 * Opens a model source and hands its GGUF to `use`, returning what `use` returns; where the bytes come from
 * (a URL, a Blob, a Node path, the model library's cache) is the opener's business, and it may call `use`
 * again with a fresh copy when the first turns out damaged. The model library's `openModelSource`
 * (src/library/opener.ts) is the one the workers, the CLI and the tests pass.
 */
export type ModelOpener = <T>(
  source: Exclude<ModelSource, { synthetic: string }>,
  options: {
    signal?: AbortSignal;
    cache?: LoadOptions['cache'];
    onProgress?: (p: Omit<LoadProgress, 'tMs'>) => void;
  },
  use: (file: GgufFile, cache?: ModelInfo['cache']) => Promise<T>,
) => Promise<T>;

/** Options for constructing a {@link WebGpuEngine}. */
/**
 * Options of {@link WebGpuEngine}. The kernel overrides (kernel-plan.ts {@link KernelOverrides}: decode
 * and prefill kernels, layouts, attention, repacking) are checked at load and otherwise left to the
 * adapter's defaults and trials (kernel-plan.ts `resolveKernelPlan`).
 */
export interface WebGpuEngineOptions extends KernelOverrides {
  /**
   * How the engine opens every model source but `{ synthetic }` (made here); without one, loading any other
   * source throws EngineError('invalid_argument'). Pass `openModelSource` from src/library/opener.ts.
   */
  openModel?: ModelOpener;
  /** Use this GPU context instead of requesting one (tests, shared devices). */
  gpu?: GpuContext;
  /** Cap on bytes per buffer binding (default: the device limit); lets tests force split tensors. */
  maxBindingBytes?: number;
  /**
   * Where sampled requests (temperature > 0, a repetition penalty, or returnLogits) pick their token:
   * `'gpu'` (default; kernels/sample.ts, chained on the GPU with one 4-byte readback per token) or
   * `'cpu'` (the reference sampler.ts `Sampler` over the logits read back every step; for tests).
   */
  sampling?: 'gpu' | 'cpu';
  /**
   * Decode steps queued on the GPU ahead of the token being read back, 1–3 (default 3, decoder.ts
   * `DEFAULT_IN_FLIGHT`; 1 is the one-step loop of before). The tokens are the same either way; more
   * keeps the GPU busy while the host reads a token. Other values throw EngineError('invalid_argument')
   * from the constructor.
   */
  decodeInFlight?: number;
}

/** Our engine's {@link ModelInfo}: `kernels` as kernel-plan.ts {@link KernelsInfo}. */
export type WebGpuModelInfo = ModelInfo & { kernels?: KernelsInfo };

/** Our WebGPU inference engine. */
export class WebGpuEngine implements Engine {
  private gpu?: GpuContext;
  private model?: LlamaModel;
  /** The draft model for speculative decoding (setDraft, LoadOptions.draft), on the same device. */
  private draftModel?: LlamaModel;
  /** The target's token texts (tokenizer.ggml.tokens), to check a draft model's vocabulary against. */
  private vocabTokens?: readonly unknown[];
  private tokenizer?: Tokenizer;
  /** The loaded model's GGUF header, cloneable (gguf/header.ts `headerOf`), for {@link modelHeader}. */
  private header?: GgufHeader;
  /** The loaded model's structured-output grammar compiler (model/grammar.ts), made on first use. */
  private grammars?: GrammarCompiler;
  private info?: WebGpuModelInfo;
  private lastStats: EngineStats = {};
  private lost?: EngineError;
  /** What holds the engine: a generation (generate, score) or a draft model loading (setDraft). */
  private busy: 'generation' | 'draft' | undefined;
  private readonly opts: WebGpuEngineOptions;

  /** @throws EngineError('invalid_argument') for a `decodeInFlight` out of range. */
  constructor(opts: WebGpuEngineOptions = {}) {
    const d = opts.decodeInFlight;
    if (d !== undefined && !(Number.isInteger(d) && d >= 1 && d < READBACK_SLOTS))
      throw new EngineError('invalid_argument', `decodeInFlight must be 1..${READBACK_SLOTS - 1}, got ${d}`);
    this.opts = opts;
    this.gpu = opts.gpu;
  }

  /** The GPU context in use (after load). */
  get gpuContext(): GpuContext | undefined {
    return this.gpu;
  }

  /** The loaded model's tokenizer. @throws EngineError('not_loaded'). */
  get tok(): Tokenizer {
    if (!this.tokenizer) throw new EngineError('not_loaded', 'no model is loaded');
    return this.tokenizer;
  }

  /** Whether {@link ensureDevice} keeps the current device for `defaultLimits`. */
  private deviceReusable(defaultLimits: boolean): boolean {
    return Boolean(this.gpu && !this.lost && (this.opts.gpu || this.gpu.defaultLimits === defaultLimits));
  }

  /** The GPU context for a load: the given one, else ours, remade when lost or when the limits asked change. */
  private async ensureDevice(defaultLimits: boolean): Promise<GpuContext> {
    if (this.gpu && this.deviceReusable(defaultLimits)) {
      this.watchLost(this.gpu);
      return this.gpu;
    }
    if (this.gpu && !this.lost && !this.opts.gpu) {
      const old = this.gpu;
      this.gpu = undefined;
      old.device.destroy();
    }
    this.lost = undefined;
    const gpu = await createGpuContext({ defaultLimits });
    this.gpu = gpu;
    this.watchLost(gpu);
    return gpu;
  }

  private watched = new WeakSet<GPUDevice>();

  /** Marks the engine lost (EngineError 'device_lost') when `gpu`'s device is lost, while it is ours. */
  private watchLost(gpu: GpuContext): void {
    if (this.watched.has(gpu.device)) return;
    this.watched.add(gpu.device);
    gpu.device.lost.then((info) => {
      if (this.gpu !== gpu) return;
      this.lost = new EngineError(
        'device_lost',
        `the GPU device was lost (${info.reason}: ${info.message}); load the model again`,
      );
      this.model?.destroy();
      this.model = undefined;
      this.draftModel?.destroy();
      this.draftModel = undefined;
      this.header = undefined;
      this.tokenizer = undefined;
      this.grammars = undefined;
    });
  }

  /**
   * The error to report for `e`, thrown by GPU work: 'device_lost' where the device is lost, waiting up to
   * 1 s for `device.lost` after an error that is not ours (a rejected mapAsync comes before it), else `e`.
   */
  private async gpuError(e: unknown): Promise<unknown> {
    const gpu = this.gpu;
    if (!this.lost && gpu) await deviceLostWithin(gpu.device, isEngineError(e) ? 0 : 1000);
    return this.lost ?? e;
  }

  /**
   * Loads a GGUF model, replacing (and freeing) any loaded model. The loaded one stays loaded and usable
   * while the new file is fetched and its header checked (format, architecture, tokenizer, context, KV
   * types): a load that fails there leaves it as it was. It is freed before the new one's first GPU
   * allocation (two models need not fit at once), so a failure from then on (out of memory, a damaged
   * block, an abort) leaves none; a generation still running then ends with 'not_loaded'. Loads run one at
   * a time: one called while another runs starts when that one has settled.
   * @throws EngineError: 'webgpu_unavailable', 'gguf_invalid', 'unsupported_model', 'out_of_memory',
   *   'network', 'http_status', 'timeout', 'aborted', 'device_lost', 'integrity'; 'invalid_argument' for a
   *   bad option (an unknown KV type before anything else, a Q8_0/Q4_0 cache for a head size not a multiple
   *   of 32 before anything is allocated). With `options.draft`, the draft's errors as {@link setDraft}:
   *   thrown after the target has loaded, which then stays loaded without a draft (`modelInfo` says so).
   */
  async load(source: ModelSource, options: LoadOptions = {}): Promise<WebGpuModelInfo> {
    checkModelSource(source);
    checkLoadOptions(options);
    checkKernelOverrides(this.opts);
    const run = this.loading.then(() => this.loadNow(source, options));
    this.loading = run.catch(() => undefined);
    return run;
  }

  /** The last {@link load} started, settled or not: the next one waits for it. */
  private loading: Promise<unknown> = Promise.resolve();

  /** The running load's own abort, which {@link unload} and {@link dispose} pull. */
  private loadAbort: AbortController | undefined;

  private async loadNow(source: ModelSource, given: LoadOptions): Promise<WebGpuModelInfo> {
    const stop = new AbortController();
    this.loadAbort = stop;
    const signal = given.signal ? AbortSignal.any([given.signal, stop.signal]) : stop.signal;
    const options = { ...given, signal };
    try {
      const defaultLimits = Boolean(options.defaultLimits);
      // A new device (other limits, or after a loss) takes the loaded model with the old one.
      if (!this.deviceReusable(defaultLimits)) this.freeModel();
      const gpu = await this.ensureDevice(defaultLimits);
      checkKernelOverrides(this.opts, gpu);
      const tStart = performance.now();
      const emit = (p: Omit<LoadProgress, 'tMs'>) =>
        options.onProgress?.({ ...p, tMs: performance.now() - tStart });
      emit({ phase: 'fetch', bytesDone: 0, bytesTotal: 0 });
      const info = await this.openSource(source, options, emit, (file, cache) =>
        this.loadFile(gpu, file, source, options, tStart, emit, cache),
      );
      if (stop.signal.aborted) {
        this.freeModel(); // unloaded during the load's last steps
        throw new EngineError('aborted', 'loading the model was aborted');
      }
      if (options.draft) await this.setDraft(options.draft, options);
      return info;
    } catch (e) {
      // unload() or dispose() while it ran: say so, not what the abort or the destroyed device looked like.
      if (stop.signal.aborted && !given.signal?.aborted)
        throw new EngineError('not_loaded', 'the engine was unloaded during the load', { cause: e });
      throw e;
    } finally {
      if (this.loadAbort === stop) this.loadAbort = undefined;
    }
  }

  /**
   * Loads `source` as the draft model for speculative decoding (requests' `draft: { type: 'model' }`)
   * beside the loaded target, on the same device with the target's context length and KV types; or, with
   * `undefined`, drops the draft. Any draft loaded before is freed first. The draft's vocabulary must be the
   * target's (same size, same token texts; checked before anything of it is allocated). A failure leaves
   * the target loaded and usable, without a draft (whatever the draft had allocated is released), so a
   * caller can report the error and go on with the target alone, or try another draft, without loading
   * the target again. `LoadOptions.draft` is `load` then this.
   * @returns the draft's facts (also `modelInfo.draft`), undefined when dropped.
   * @throws EngineError 'not_loaded' (no target), 'invalid_argument' (another vocabulary, a generation
   *   running), 'out_of_memory' (it does not fit beside the target), 'unsupported_model', 'gguf_invalid',
   *   'network', 'http_status', 'timeout', 'aborted', 'device_lost' — all with the target still loaded
   *   (but for 'device_lost').
   */
  async setDraft(
    source: ModelSource | undefined,
    options: Pick<LoadOptions, 'signal' | 'cache' | 'onProgress' | 'batchSize'> = {},
  ): Promise<ModelInfo['draft']> {
    this.requireModel();
    this.requireIdle('set the draft');
    this.draftModel?.destroy();
    this.draftModel = undefined;
    if (this.info) this.info.draft = undefined;
    if (!source) return undefined;
    const gpu = this.gpu!;
    const tStart = performance.now();
    const emit = (p: Omit<LoadProgress, 'tMs'>) =>
      options.onProgress?.({ ...p, tMs: performance.now() - tStart });
    this.busy = 'draft';
    try {
      const draft = await this.openSource(source, options, emit, (file) =>
        this.loadDraft(gpu, file, source, options),
      );
      if (this.info) this.info.draft = draft;
      return draft;
    } catch (e) {
      // loadDraft frees what the draft had allocated; the target is untouched.
      throw await this.gpuError(e);
    } finally {
      this.busy = undefined;
    }
  }

  /**
   * @throws EngineError('invalid_argument') naming what holds the engine (a generation, or a draft model
   *   loading through setDraft) when `action` cannot start now.
   */
  private requireIdle(action: string): void {
    if (this.busy === 'generation')
      throw new EngineError(
        'invalid_argument',
        `a generation is already running on this engine: ${action} after it`,
      );
    if (this.busy === 'draft')
      throw new EngineError(
        'invalid_argument',
        `a draft model is loading on this engine (setDraft): ${action} after it`,
      );
  }

  /** Opens `source` ({ synthetic } here, the rest through the engine's opener) and hands its GGUF to `use`. */
  private openSource<T>(
    source: ModelSource,
    options: LoadOptions,
    emit: (p: Omit<LoadProgress, 'tMs'>) => void,
    use: (file: GgufFile, cache?: ModelInfo['cache']) => Promise<T>,
  ): Promise<T> {
    if ('synthetic' in source) return use(syntheticGguf(source.synthetic, source.seed));
    const open = this.opts.openModel;
    if (!open) {
      throw new EngineError(
        'invalid_argument',
        'this WebGpuEngine was made without a model opener (WebGpuEngineOptions.openModel), so it loads ' +
          'only { synthetic } models; pass openModelSource from src/library/opener.ts',
      );
    }
    return open(source, { signal: options.signal, cache: options.cache, onProgress: emit }, use);
  }

  /**
   * Loads the draft model ({@link setDraft}) beside the loaded target, with its context length and KV
   * type, after checking its vocabulary: the same size and the same token texts, else
   * EngineError('invalid_argument') naming the first difference, before anything of it is allocated.
   * @throws EngineError 'invalid_argument', 'out_of_memory' (it does not fit beside the target), as load.
   */
  private async loadDraft(
    gpu: GpuContext,
    file: GgufFile,
    source: ModelSource,
    options: Pick<LoadOptions, 'signal' | 'batchSize'>,
  ): Promise<NonNullable<ModelInfo['draft']>> {
    const t = this.model!;
    const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
    const problem = draftVocabularyProblem(
      t.cfg.nVocab,
      cfg.nVocab,
      this.vocabTokens,
      file.metadata['tokenizer.ggml.tokens'] as readonly unknown[] | undefined,
    );
    if (problem) throw new EngineError('invalid_argument', problem);
    // The draft keeps the target's cache types: a quantized one needs its heads to be whole blocks too.
    checkKvCacheFits(cfg, t.kvType, t.vKvType);
    const plan = await resolveKernelPlan(gpu, file, cfg, this.opts, {
      kvType: t.kvType,
      vKvType: t.vKvType,
    });
    try {
      this.draftModel = await LlamaModel.load(gpu.device, file, cfg, {
        contextLength: t.nCtx,
        batchSize: this.batchSizeFor(gpu, cfg, t.nCtx, options),
        maxBindingBytes: this.opts.maxBindingBytes,
        plan,
        kvType: t.kvType,
        vKvType: t.vKvType,
        signal: options.signal,
      });
      await gpu.device.queue.onSubmittedWorkDone();
    } catch (e) {
      this.draftModel?.destroy();
      this.draftModel = undefined;
      if (isEngineError(e, 'out_of_memory')) {
        throw new EngineError(
          'out_of_memory',
          `the draft model does not fit beside the target (${t.weightBytes} bytes of weights and ${t.kvBytes} of KV cache already on the device): ${e.message}`,
          { cause: e },
        );
      }
      throw e;
    }
    let nParams = 0;
    for (const x of file.tensors.values()) nParams += x.shape.reduce((a, b) => a * b, 1);
    const name = (file.metadata['general.name'] as string | undefined) ?? describeSource(source);
    return {
      name: String(name),
      nParams,
      nLayers: cfg.nLayers,
      nEmbd: cfg.nEmbd,
      weightBytes: this.draftModel.weightBytes,
    };
  }

  private async loadFile(
    gpu: GpuContext,
    file: GgufFile,
    source: ModelSource,
    options: LoadOptions,
    tStart: number,
    emit: (p: Omit<LoadProgress, 'tMs'>) => void,
    cache?: ModelInfo['cache'],
  ): Promise<WebGpuModelInfo> {
    const report = (phase: 'fetch' | 'upload' | 'compile', done: number, total: number) =>
      emit({ phase, bytesDone: done, bytesTotal: total });
    const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
    const tokenizer = createTokenizer(file.metadata);
    const contextLength = loadContextLength(cfg.contextLength, options.contextLength);
    if (!(contextLength >= 1))
      throw new EngineError('invalid_argument', `contextLength must be ≥ 1, got ${contextLength}`);
    // K's and V's cache types (LoadOptions.kvTypeK/kvTypeV over kvType), refused for this model's head
    // size before the kernel trials or the load allocate anything.
    const kvType = options.kvTypeK ?? options.kvType ?? 'f16';
    const vKvType = options.kvTypeV ?? options.kvType ?? 'f16';
    checkKvCacheFits(cfg, kvType, vKvType);
    const batchSize = this.batchSizeFor(gpu, cfg, contextLength, options);
    if (options.signal?.aborted) throw new EngineError('aborted', 'loading the model was aborted');
    // The file is read and checked: the loaded model goes now, before anything of this one is allocated.
    this.freeModel();
    let plan: KernelPlan;
    try {
      plan = await resolveKernelPlan(gpu, file, cfg, this.opts, { kvType, vKvType });
      this.model = await LlamaModel.load(gpu.device, file, cfg, {
        contextLength,
        batchSize,
        maxBindingBytes: this.opts.maxBindingBytes,
        plan,
        kvType,
        vKvType,
        signal: options.signal,
        onFetch: (d, t) => report('fetch', d, t),
        onUpload: (d, t) => report('upload', d, t),
        onCompile: (d, t) => report('compile', d, t),
      });
      // A device lost during upload or compile can leave every call above resolved (writes to a lost
      // device are dropped): the load is only good if the device is still there once its work is done.
      await gpu.device.queue.onSubmittedWorkDone();
      if (this.lost || (await deviceLostWithin(gpu.device, 0))) {
        throw this.lost ?? new EngineError('device_lost', 'the GPU device was lost during the load');
      }
    } catch (e) {
      this.model?.destroy();
      this.model = undefined;
      throw await this.gpuError(e);
    }
    this.tokenizer = tokenizer;
    this.vocabTokens = file.metadata['tokenizer.ggml.tokens'] as readonly unknown[] | undefined;
    this.header = file.synthetic ? undefined : headerOf(file);
    this.grammars = undefined;
    const m = this.model;
    const totalMs = performance.now() - tStart;
    this.lastStats = { load: { ...m.times, totalMs } };
    const types = new Set<string>();
    let nParams = 0;
    for (const t of file.tensors.values()) {
      types.add(t.typeName);
      nParams += t.shape.reduce((a, b) => a * b, 1);
    }
    const name = (file.metadata['general.name'] as string | undefined) ?? describeSource(source);
    this.info = {
      name: String(name),
      architecture: cfg.architecture,
      nParams,
      nLayers: cfg.nLayers,
      nEmbd: cfg.nEmbd,
      nVocab: cfg.nVocab,
      contextLength,
      trainedContextLength: cfg.contextLength,
      batchSize: m.batchSize,
      weightBytes: m.weightBytes,
      tensorTypes: [...types],
      synthetic: Boolean(file.synthetic),
      kvDim: cfg.nHeadKv * cfg.headDim,
      kvType: m.kvType,
      kvTypeV: m.vKvType,
      tiedEmbeddings: cfg.tiedEmbeddings,
      fileBytes: file.fileSize,
      fileParts: (file as { parts?: unknown[] }).parts?.length ?? 1,
      kernels: describePlan(m, { sampling: this.opts.sampling }),
      limits: { defaultLimits: gpu.defaultLimits, values: { ...gpu.limits } },
      cache,
    };
    return this.info;
  }

  /** LoadOptions.batchSize, else prefill.ts `defaultBatchSize`; at most the context. */
  private batchSizeFor(
    gpu: GpuContext,
    cfg: ReturnType<typeof llamaConfigFromGguf>,
    contextLength: number,
    options: Pick<LoadOptions, 'batchSize'>,
  ): number {
    return Math.max(
      1,
      Math.min(
        options.batchSize ??
          defaultBatchSize({
            isFallback: gpu.info.isFallback,
            contextLength,
            maxStorageBufferBindingSize: gpu.device.limits.maxStorageBufferBindingSize,
            maxBufferSize: gpu.device.limits.maxBufferSize,
            maxBindingBytes: this.opts.maxBindingBytes,
            nEmbd: cfg.nEmbd,
            nFF: cfg.nFF,
            nVocab: cfg.nVocab,
            qDim: cfg.nHead * cfg.headDim,
          }),
        contextLength,
      ),
    );
  }

  private requireModel(): LlamaModel {
    if (this.lost) throw this.lost;
    if (!this.model) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
    return this.model;
  }

  async tokenize(text: string, addBos?: boolean): Promise<number[]> {
    checkTokenizeArgs(text, addBos);
    this.requireModel();
    return this.tok.encode(text, { addBos: addBos ?? this.tok.addBos });
  }

  async detokenize(ids: number[]): Promise<string> {
    checkTokenIds(ids);
    this.requireModel();
    return this.tok.decode(ids);
  }

  /**
   * Streams a completion. Greedy requests keep the loop on the GPU (the argmax feeds the next step
   * directly; one 4-byte readback per token, overlapped with the next step). Sampled requests run the
   * same loop with the GPU sampler (kernels/sample.ts) in place of the argmax; the logits are read back
   * only with `returnLogits` (then steps are not overlapped). With the engine option `sampling: 'cpu'`
   * they read back the logits each step and sample on the CPU (sampler.ts `Sampler`). The prompt's
   * prefill runs in batches that `signal` can stop between (LlamaModel.prefill; progress in
   * `stats().prefill`): an abort there resolves with finishReason 'aborted' and no tokens, within about
   * one batch (~100 ms). With `draft`, speculative decoding (speculative.ts: lookup or the draft model
   * loaded by LoadOptions.draft; `result.speculative`). The loop itself is generation.ts `runGeneration`.
   * @throws EngineError 'context_overflow' (prompt longer than the context), 'invalid_argument',
   *   'not_loaded', 'device_lost'.
   */
  async generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    validateGenerateRequest(req);
    const model = this.requireModel();
    this.requireIdle('generate');
    this.busy = 'generation';
    try {
      return await runGeneration(
        {
          tok: this.tok,
          stats: () => this.lastStats,
          sampling: this.opts.sampling,
          decodeInFlight: this.opts.decodeInFlight,
          draftModel: this.draftModel,
          grammar: () => {
            this.grammars ??= new GrammarCompiler(this.tok, model.cfg.nVocab);
            return this.grammars;
          },
        },
        model,
        req,
        onToken,
        signal,
      );
    } catch (thrown) {
      const e = await this.gpuError(thrown);
      if (isEngineError(e)) throw e;
      if (this.model !== model)
        throw new EngineError('not_loaded', 'the model was unloaded during generation', { cause: e });
      throw e;
    } finally {
      this.busy = undefined;
    }
  }

  /**
   * Teacher-forced scoring (the basis of perplexity, as llama.cpp's `llama-perplexity`): runs `ids`
   * through batched prefill with logits at every position and, for every position i ≥ 1, returns the negative log-likelihood of ids[i]
   * given ids[0..i−1] (natural log, from the f32 logits in float64), and the model's top-1 token there.
   * @param ids token ids [n], n ≥ 2 and ≤ the context length (BOS included if wanted).
   * @returns nll [n − 1], top1 [n − 1].
   * @throws EngineError 'context_overflow' when n > the context, 'invalid_argument', 'aborted'.
   */
  async scoreTokens(ids: number[], signal?: AbortSignal): Promise<{ nll: Float64Array; top1: Int32Array }> {
    const model = this.requireModel();
    if (ids.length < 2) throw new EngineError('invalid_argument', 'scoring needs at least two tokens');
    if (ids.length > model.nCtx) {
      throw new EngineError(
        'context_overflow',
        `${ids.length} tokens do not fit the context (${model.nCtx}); split the text into windows`,
      );
    }
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= model.cfg.nVocab) {
        throw new EngineError(
          'invalid_argument',
          `token id ${id} is outside the vocabulary (0..${model.cfg.nVocab - 1})`,
        );
      }
    }
    this.requireIdle('score');
    this.busy = 'generation';
    try {
      const n = ids.length;
      const nll = new Float64Array(n - 1);
      const top1 = new Int32Array(n - 1);
      const V = model.cfg.nVocab;
      // Every position's logits from batched prefill (one readback per batch), not one decode step each.
      await model.logitsForAll(
        ids.slice(0, n - 1),
        (start, logits, T) => {
          for (let j = 0; j < T; j++) {
            const i = start + j;
            let max = Number.NEGATIVE_INFINITY;
            let arg = 0;
            const o = j * V;
            for (let t = 0; t < V; t++) {
              if (logits[o + t] > max) {
                max = logits[o + t];
                arg = t;
              }
            }
            let sum = 0;
            for (let t = 0; t < V; t++) sum += Math.exp(logits[o + t] - max);
            nll[i] = max + Math.log(sum) - logits[o + ids[i + 1]];
            top1[i] = arg;
          }
        },
        signal,
      );
      return { nll, top1 };
    } catch (e) {
      throw await this.gpuError(e);
    } finally {
      this.busy = undefined;
    }
  }

  /**
   * Chat. With a chat template in the model (`tokenizer.chat_template`), the messages are rendered by it
   * (with a generation prompt, the model's BOS/EOS texts) and tokenized with the template's special tokens
   * parsed, the contents' as text unless `parseSpecialInContent` (model/chat-template.ts); BOS is
   * added when the model adds BOS unless the rendered text already starts with it (llama.cpp's rule).
   * Without a template, the messages' contents are joined by newlines as a plain completion prompt.
   * Generation stops at any end-of-generation token (EOS, and end-of-turn tokens such as `<|eot_id|>` or
   * `<|im_end|>`), unless `ignoreEos`.
   * @throws EngineError as {@link generate}; 'unsupported_model' / 'invalid_argument' when the template
   *   does not parse / render.
   */
  async chat(
    req: ChatRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    validateChatRequest(req);
    const model = this.requireModel();
    const template = this.tok.chatTemplate;
    const tools = req.tools?.length && req.toolChoice !== 'none' ? req.tools : undefined;
    const usesTools = tools !== undefined || req.messages.some((m) => m.role === 'tool' || m.toolCalls);
    // A template without tool support, or with a format not known here: invalid_argument before anything.
    const format = usesTools ? toolCallFormat(template) : undefined;
    if (template === null) {
      const prompt = req.messages.map((m) => m.content).join('\n');
      return this.generate({ ...chatGenerateFields(req), prompt }, onToken, signal);
    }
    const constraint =
      tools && format
        ? toolConstraint(format, tools, req.toolChoice ?? 'auto', req.parallelToolCalls)
        : undefined;
    if (constraint && req.responseFormat && req.responseFormat.type !== 'text')
      throw new EngineError(
        'invalid_argument',
        'responseFormat cannot be combined with a tool choice that constrains the output (required, a named function, strict tools)',
      );
    const { ids } = chatPromptTokens(this.tok, template, req.messages, {
      parseSpecialInContent: req.parseSpecialInContent,
      // Refused before tokenizing when too long for the context whatever it tokenizes to (issue 47 item 9).
      contextLength: model.nCtx,
      ...(tools ? { variables: { tools } } : {}),
    });
    const result = await this.generate(
      {
        ...chatGenerateFields(req),
        promptTokenIds: ids,
        ...(constraint ? { responseFormat: constraint } : {}),
      },
      onToken,
      signal,
    );
    if (tools && format) {
      const { content, calls } = parseToolCalls(result.text, format, tools);
      if (calls.length > 0) {
        result.text = content;
        result.toolCalls = calls;
      }
    }
    return result;
  }

  async stats(): Promise<EngineStats> {
    return structuredClone(this.lastStats);
  }

  /** The loaded model's description. */
  get modelInfo(): WebGpuModelInfo | undefined {
    return this.info;
  }

  /**
   * The loaded model's GGUF header as read at load, without the tokenizer's arrays (gguf/header.ts
   * `headerOf`): what the page sizes a URL model's context choices by, with nothing fetched again.
   * Undefined before a load and for synthetic models (their header is made from the name).
   */
  get modelHeader(): GgufHeader | undefined {
    return this.header;
  }

  /** The loaded model (for tests and profiling). */
  get llama(): LlamaModel | undefined {
    return this.model;
  }

  /**
   * Frees the loaded model and its draft, and stops a load that is running (it rejects with 'not_loaded').
   */
  async unload(): Promise<void> {
    this.loadAbort?.abort();
    this.freeModel();
  }

  private freeModel(): void {
    this.model?.destroy();
    this.model = undefined;
    this.draftModel?.destroy();
    this.draftModel = undefined;
    this.vocabTokens = undefined;
    this.header = undefined;
    this.tokenizer = undefined;
    this.grammars = undefined;
    this.info = undefined;
  }

  /** Unloads (stopping a running load) and destroys the device (when the engine created it). */
  async dispose(): Promise<void> {
    await this.unload();
    if (this.gpu && !this.opts.gpu) this.gpu.device.destroy();
    this.gpu = undefined;
  }
}

/** A model source's path, URL, synthetic name or blob name, for ModelInfo.name when the file has none. */
function describeSource(source: ModelSource): string {
  return 'path' in source
    ? source.path
    : 'url' in source
      ? source.url
      : 'synthetic' in source
        ? source.synthetic
        : (source.name ?? 'model');
}
