/**
 * `WllamaEngine`: the {@link Engine} interface over `@wllama/wllama`, llama.cpp compiled to WebAssembly
 * (SIMD; threads where the page is cross-origin isolated), on the CPU. It gives every visitor an answer
 * where WebGPU is missing or only a software adapter exists (SwiftShader), and it is llama.cpp itself: the
 * same greedy tokens as llama.cpp for the same GGUF file.
 *
 * Sources are read as for our WebGPU engine (src/library/): a URL or `hf:` shorthand (streamed, or through
 * the model library's cache with `cache`), a File/Blob (with its split parts), a `local:NAME` library
 * entry. The GGUF header is read first by our reader (src/gguf/), so a file wllama cannot hold is refused
 * before its bytes are read (./limits.ts), and the model's facts come from the header.
 *
 * What wllama's API gives and lacks, and how this adapter fills it: wllama runs llama-server's completion
 * code, so requests are llama-server JSON (its sampling fields, set explicitly here, since llama-server's
 * defaults are not greedy); token ids come from `n_probs: 1` (each streamed token's `logprobs.content[].id`
 * and `bytes`); it has no tokenizer API, so `tokenize`/`detokenize` and a result's `promptTokenIds` use our
 * tokenizer (src/model/tokenizer/, checked against llama.cpp's); it takes text prompts only (a token-id
 * prompt fails inside wllama), so `promptTokenIds` requests are refused.
 */
import { LogLevel, Wllama, WllamaAbortError } from '@wllama/wllama';
import { EngineError, isEngineError } from '../core/errors.ts';
import type {
  ChatRequest,
  Engine,
  EngineStats,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  KvType,
  LoadOptions,
  LoadProgress,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from '../core/types.ts';
import {
  chatGenerateFields,
  checkLoadOptions,
  checkTokenIds,
  checkTokenizeArgs,
  loadContextLength,
  refuseConstraints,
  refuseDraft,
  validateChatRequest,
  validateGenerateRequest,
} from '../core/validate.ts';
import type { OpenedGgufFile } from '../gguf/reader.ts';
import { splitPartName } from '../gguf/split.ts';
import { isLocalSpec, ModelLibrary } from '../library/library.ts';
import { openModelFile } from '../library/open.ts';
import type { ModelCacheInfo } from '../library/opener.ts';
import { resolveModelSpec } from '../library/spec.ts';
import { fileNameOf } from '../library/store.ts';
import { chatPromptTokens } from '../model/chat-template.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { checkPromptLength, checkPromptTokens, maxPromptTokens } from '../model/tokenizer/prompt-bound.ts';
import type { Tokenizer } from '../model/tokenizer/types.ts';
import {
  type ByteSource,
  DEFAULT_TIMEOUT_MS,
  httpStatusError,
  openByteSource,
  RequestControl,
  throwIfAborted,
} from '../net/byte-source.ts';
import { checkFileSizes, checkWasmMemory, chooseThreads, threadsAvailable } from './limits.ts';

/** wllama's wasm for the installed version on jsDelivr (the package's own `wasm-from-cdn` URL). */
export const WLLAMA_WASM_CDN = 'https://cdn.jsdelivr.net/npm/@wllama/wllama@3.13.0/esm/wasm/wllama.wasm';

/** What a refusal to fetch wllama's wasm adds: how to serve the file from the site itself. */
const WASM_HINT =
  "to run offline or behind a Content-Security-Policy, serve @wllama/wllama@3.13.0's esm/wasm/wllama.wasm " +
  'from your site and pass its URL as wllamaWasmUrl (the <webgpu-chat> widget: its wllama-wasm attribute)';

/**
 * Checks that wllama's wasm can be fetched (once per load): its status and its first bytes (the body is
 * then cancelled, so the file is downloaded once, by wllama). wllama reports a wasm it cannot fetch or
 * compile only as an uncaught error in its worker, and its load never settles: this check turns those
 * failures into typed errors first. wllama then fetches the same URL itself (a `blob:` copy would need
 * `connect-src blob:` on sites with a Content-Security-Policy).
 * @returns the wasm's absolute URL.
 * @throws EngineError 'network' (unreachable, blocked, or not a wasm file), 'http_status' (an error status,
 *   or an HTML page: a web app's "not found"), 'timeout', 'aborted', each naming the URL and how to serve
 *   the file locally.
 */
export async function checkWllamaWasm(url: string, signal?: AbortSignal): Promise<string> {
  const abs = typeof location !== 'undefined' ? new URL(url, location.href).href : url;
  const rc = new RequestControl(abs, DEFAULT_TIMEOUT_MS, signal);
  const hinted = (e: EngineError) =>
    e.code === 'aborted'
      ? e
      : new EngineError(
          e.code,
          `llama.cpp's wasm (wllama.wasm) could not be loaded: ${e.message}; ${WASM_HINT}`,
          { cause: e },
        );
  let head = new Uint8Array(0);
  let type = '';
  try {
    const res = await rc.wait(() => fetch(abs, { signal: rc.ctl.signal }));
    if (!res.ok) throw httpStatusError(res, 'downloading', abs);
    type = res.headers.get('content-type') ?? '';
    const reader = res.body?.getReader();
    if (reader) {
      while (head.length < 4) {
        const { done, value } = await rc.wait(() => reader.read());
        if (done || !value) break;
        const joined = new Uint8Array(head.length + value.length);
        joined.set(head);
        joined.set(value, head.length);
        head = joined;
      }
      reader.cancel().catch(() => {});
    }
  } catch (e) {
    throw hinted(isEngineError(e) ? e : rc.mapError(e));
  } finally {
    rc.dispose();
  }
  if (head.length < 4 || head[0] !== 0 || head[1] !== 0x61 || head[2] !== 0x73 || head[3] !== 0x6d) {
    // A web app's server (Vite's dev server) answers a file it lacks with its own page, status 200.
    if (head[0] === 0x3c || /html/i.test(type))
      throw hinted(
        new EngineError(
          'http_status',
          `${abs} was not found: the server answered with an HTML page instead of wllama.wasm`,
        ),
      );
    throw hinted(
      new EngineError(
        'network',
        `${abs} is not a WebAssembly file (${head.length === 0 ? 'the answer was empty' : 'wrong first bytes'})`,
      ),
    );
  }
  return abs;
}

/** Options of {@link WllamaEngine}. */
export interface WllamaEngineConfig {
  /**
   * URL of `wllama.wasm` (from `@wllama/wllama/esm/wasm/`, the same version as the package). Default
   * {@link WLLAMA_WASM_CDN}; a site serving its own copy sets it (a Vite app: `import u from
   * '@wllama/wllama/esm/wasm/wllama.wasm?url'`).
   */
  wasmUrl?: string;
  /**
   * CPU threads: 'auto' (default) = half the logical cores where the page is cross-origin isolated, else 1
   * (the single-threaded build). A number > 1 where SharedArrayBuffer is missing is refused
   * (EngineError 'feature_missing'), not quietly run on one thread.
   */
  threads?: number | 'auto';
  /**
   * Keep the previous request's KV cache and prefill only what a new prompt adds to their longest common
   * prefix (llama-server's `cache_prompt`; default true: a chat's next turn prefills only the new turn).
   * Benchmarks set false, so that every request prefills its whole prompt, as our WebGPU engine does.
   */
  reusePromptPrefix?: boolean;
}

/** What one streamed chunk of wllama's completion or chat completion carries (the fields read here). */
interface StreamChunk {
  choices?: {
    text?: string;
    delta?: { content?: string | null };
    finish_reason?: string | null;
    logprobs?: { content?: { id: number; bytes?: number[]; token?: string }[] | null } | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  timings?: { prompt_n: number; prompt_ms: number; predicted_n: number; predicted_ms: number };
}

/** How refusals name this backend. */
const WLLAMA_NAME = "llama.cpp's wasm build (the wllama backend)";

/** Bytes read per request while a model's file is copied into a Blob for wllama. */
const READ_BYTES = 8 * 1024 * 1024;
/** Pieces gathered into one Blob at a time (the browser may keep large Blobs on disk). */
const GROUP_BYTES = 128 * 1024 * 1024;

/**
 * Reads a whole byte source into a Blob (wllama reads its files from Blobs), reporting each piece.
 * @throws EngineError 'aborted', 'gguf_invalid' (the source ended before its known size), and what the
 *   source's reads throw ('network', 'http_status', 'timeout', 'integrity').
 */
async function readToBlob(
  src: ByteSource,
  signal: AbortSignal | undefined,
  onBytes: (n: number) => void,
): Promise<Blob> {
  const reader = await src.openSequential(0, signal);
  const groups: Blob[] = [];
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let total = 0;
  try {
    for (;;) {
      throwIfAborted(signal, 'loading the model');
      const bytes = await reader.read(READ_BYTES);
      if (bytes.length === 0) break;
      pending.push(bytes);
      pendingBytes += bytes.length;
      total += bytes.length;
      onBytes(bytes.length);
      if (pendingBytes >= GROUP_BYTES) {
        groups.push(new Blob(pending as BlobPart[]));
        pending = [];
        pendingBytes = 0;
      }
      if (src.size !== undefined && total >= src.size) break;
    }
  } finally {
    await reader.close();
  }
  groups.push(new Blob(pending as BlobPart[]));
  if (src.size !== undefined && total !== src.size)
    throw new EngineError(
      'gguf_invalid',
      `${src.name} ended after ${total} of ${src.size} bytes: the file is truncated`,
    );
  return new Blob(groups);
}

/** A metadata number (GGUF ints may be bigints). */
function metaNum(meta: Record<string, unknown>, key: string): number | undefined {
  const v = meta[key];
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : undefined;
}

/** The parts' sizes of an opened (maybe split) GGUF, bytes. */
function partSizes(file: OpenedGgufFile): (number | undefined)[] {
  const parts = (file as { parts?: readonly OpenedGgufFile[] }).parts;
  return parts ? parts.map((p) => p.fileSize) : [file.fileSize];
}

/** The model as wllama gets it: the GGUF header (ours) and the files as Blobs, in part order. */
interface OpenedModel {
  file: OpenedGgufFile;
  /** Reads the files (Blob sources: as given, nothing read). */
  blobs: () => Promise<Blob[]>;
  cache?: ModelCacheInfo;
  name: string;
}

/** Request fields common to completions and chat completions (llama-server's names). */
function samplingFields(req: GenerateRequest | ChatRequest, maxTokens: number): Record<string, unknown> {
  const temperature = req.temperature ?? 0;
  return {
    max_tokens: maxTokens,
    // llama-server's defaults are top_k 40, top_p 0.95, min_p 0.05: every field is set, so that the
    // defaults are ours (greedy) and a request means the same as on our engine. Greedy (temperature 0)
    // sends top_k 1: the same argmax, and the sampler's candidates shrink to that one token, which is
    // what makes n_probs below cheap.
    temperature,
    top_k: temperature <= 0 ? 1 : (req.topK ?? 0),
    top_p: req.topP ?? 1,
    min_p: req.minP ?? 0,
    repeat_penalty: req.repetitionPenalty ?? 1,
    repeat_last_n: req.repetitionLastN ?? 64,
    ...(req.seed !== undefined ? { seed: req.seed } : {}),
    ignore_eos: req.ignoreEos ?? false,
    // Each streamed token's id and bytes (logprobs.content[]), which wllama's chunks lack otherwise.
    // post_sampling_probs: read from the sampler's candidates; without it llama-server sorts the whole
    // vocabulary's softmax for every token (get_token_probabilities), a cost that grows with the vocabulary.
    n_probs: 1,
    post_sampling_probs: true,
  };
}

/** llama.cpp's wasm build (wllama) behind the {@link Engine} interface, on the CPU. */
export class WllamaEngine implements Engine {
  readonly config: WllamaEngineConfig;
  private wllama?: Wllama;
  private tokenizer?: Tokenizer;
  private info?: ModelInfo;
  private lastStats: EngineStats = {};
  /** The running request's end, so that unload waits for it (wllama serves one request at a time here). */
  private busy?: Promise<unknown>;
  /**
   * llama.cpp's error-level log lines since the running request began (wllama's own reports only "Invalid
   * typed array length" when a C++ exception ends an action; the cause is in this log). Bounded.
   */
  private nativeErrors: string[] = [];

  constructor(config: WllamaEngineConfig = {}) {
    this.config = config;
  }

  /** The loaded model's description. */
  get modelInfo(): ModelInfo | undefined {
    return this.info;
  }

  private async open(
    source: ModelSource,
    options: LoadOptions,
    emit: (p: Omit<LoadProgress, 'tMs'>) => void,
  ): Promise<OpenedModel> {
    if ('synthetic' in source)
      throw new EngineError(
        'invalid_argument',
        'wllama runs GGUF files; synthetic models (random weights made on the GPU) are for the WebGPU backend',
      );
    if ('path' in source)
      throw new EngineError(
        'invalid_argument',
        'wllama runs in a browser: give a { url } or a { blob }, not a path',
      );
    const signal = options.signal;
    if ('blob' in source) {
      const name = source.name ?? (source.blob as File).name ?? 'the model file';
      const file = await openModelFile(source, { signal });
      const count = partSizes(file).length;
      const blobs = [source.blob];
      for (let no = 2; no <= count; no++) {
        const want = fileNameOf(splitPartName(name, no, count));
        // openModelFile found every part by this rule, so each is there.
        blobs.push(source.parts?.find((b) => fileNameOf((b as File).name ?? '') === want) as Blob);
      }
      return { file, blobs: async () => blobs, name };
    }
    const base = typeof location !== 'undefined' ? location.href : undefined;
    const c = typeof options.cache === 'object' ? options.cache : {};
    let parts: ByteSource[];
    let cache: ModelCacheInfo | undefined;
    if (options.cache || isLocalSpec(source.url)) {
      const library = await ModelLibrary.open({ dir: c.dir, hfEndpoint: c.hfEndpoint });
      const got = await library.acquire(source.url, {
        signal,
        sha256: c.sha256,
        offline: c.offline,
        onProgress: (p) => emit(p),
        base,
      });
      parts = got.parts;
      cache = {
        fromCache: got.fromCache,
        offline: got.offline,
        downloadedBytes: got.downloadedBytes,
        location: got.location,
      };
    } else {
      const url = resolveModelSpec(source.url, { hfEndpoint: c.hfEndpoint, base }).url;
      const first = await openModelFile({ url }, { signal });
      const n = partSizes(first).length;
      parts = [];
      for (let no = 1; no <= n; no++)
        parts.push(await openByteSource({ url: n === 1 ? url : splitPartName(url, no, n) }));
      return { file: first, blobs: () => this.readParts(parts, first, signal, emit), name: source.url };
    }
    const file = await openModelFile({ byteParts: parts }, { signal });
    return { file, blobs: () => this.readParts(parts, file, signal, emit), cache, name: source.url };
  }

  private async readParts(
    parts: ByteSource[],
    file: OpenedGgufFile,
    signal: AbortSignal | undefined,
    emit: (p: Omit<LoadProgress, 'tMs'>) => void,
  ): Promise<Blob[]> {
    const total = partSizes(file).reduce<number>((a, b) => a + (b ?? 0), 0);
    let done = 0;
    const out: Blob[] = [];
    for (const p of parts) {
      out.push(
        await readToBlob(p, signal, (n) => {
          done += n;
          emit({ phase: 'fetch', bytesDone: done, bytesTotal: total });
        }),
      );
    }
    return out;
  }

  /**
   * Loads a GGUF model (replacing any loaded one) into a new wllama instance on the CPU. The loaded one
   * stays loaded and usable until the new file has been fetched and checked and the wasm found: a load
   * that fails before that leaves it as it was; from then on a failure leaves none. Loads run one at a
   * time: one called while another runs starts when that one has settled.
   * `contextLength` default min(the model's context, 2048); `batchSize` is llama.cpp's n_batch/n_ubatch
   * (default 512); `kvType` its cache_type_k/v (default f16, llama.cpp's). `defaultLimits` has no meaning
   * here and is ignored.
   * @throws EngineError 'invalid_argument' (a synthetic or path source, bad options, a `draft`: speculative
   *   decoding runs on our WebGPU engine only), 'unsupported_model'
   *   (a file over 2 GiB, not split), 'out_of_memory' (more than wasm's 4 GiB), 'feature_missing' (threads
   *   forced without SharedArrayBuffer), 'gguf_invalid', 'network', 'http_status', 'timeout', 'aborted',
   *   'integrity'; wllama's own load failure as 'unsupported_model' with its message. The wasm
   *   (`wasmUrl`) is checked first ({@link checkWllamaWasm}): one it cannot get fails the load with
   *   'network', 'http_status' or 'timeout' naming its URL, and leaves the loaded model as it was.
   */
  async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    checkLoadOptions(options);
    refuseDraft(options, WLLAMA_NAME);
    const threads = chooseThreads(this.config.threads ?? 'auto');
    const run = this.loading.then(() => this.loadNow(source, options, threads));
    this.loading = run.catch(() => undefined);
    return run;
  }

  /** The last {@link load} started, settled or not: the next one waits for it. */
  private loading: Promise<unknown> = Promise.resolve();

  private async loadNow(source: ModelSource, options: LoadOptions, threads: number): Promise<ModelInfo> {
    const tStart = performance.now();
    const emit = (p: Omit<LoadProgress, 'tMs'>) =>
      options.onProgress?.({ ...p, tMs: performance.now() - tStart });
    emit({ phase: 'fetch', bytesDone: 0, bytesTotal: 0 });
    // The wasm is checked beside the model's download, so that an unreachable wasm fails the load at once: its failure
    // aborts the model's download (and a failed model read aborts the wasm's), through one signal.
    const outer = options.signal;
    const ctl = new AbortController();
    this.loadCtl = ctl;
    const onAbort = () => ctl.abort(outer?.reason);
    if (outer?.aborted) ctl.abort(outer.reason);
    else outer?.addEventListener('abort', onAbort, { once: true });
    const wasm = checkWllamaWasm(this.config.wasmUrl ?? WLLAMA_WASM_CDN, ctl.signal);
    wasm.catch(() => ctl.abort());
    try {
      return await this.loadWith(
        source,
        { ...options, signal: ctl.signal },
        threads,
        emit,
        tStart,
        () => wasm,
      );
    } catch (e) {
      ctl.abort();
      const wasmError = await wasm.then(
        () => undefined,
        (w: unknown) => w,
      );
      // unload() while it ran: say so, not what the abort looked like.
      if (this.unloadedDuring === ctl)
        throw new EngineError('not_loaded', 'the engine was unloaded during the load', { cause: e });
      // The model's read ended as 'aborted' because the wasm failed: the wasm's error is the cause.
      if (!outer?.aborted && isEngineError(wasmError) && wasmError.code !== 'aborted') throw wasmError;
      throw e;
    } finally {
      outer?.removeEventListener('abort', onAbort);
      if (this.loadCtl === ctl) this.loadCtl = undefined;
    }
  }

  /** The running load's abort, which {@link unload} pulls (and marks in `unloadedDuring`). */
  private loadCtl: AbortController | undefined;
  private unloadedDuring: AbortController | undefined;

  private async loadWith(
    source: ModelSource,
    options: LoadOptions,
    threads: number,
    emit: (p: Omit<LoadProgress, 'tMs'>) => void,
    tStart: number,
    wasmUrl: () => Promise<string>,
  ): Promise<ModelInfo> {
    const opened = await this.open(source, options, emit);
    const { file } = opened;
    const meta = file.metadata;
    const arch = String(meta['general.architecture'] ?? 'unknown');
    const nLayers = metaNum(meta, `${arch}.block_count`) ?? 0;
    const nEmbd = metaNum(meta, `${arch}.embedding_length`) ?? 0;
    const nHead = metaNum(meta, `${arch}.attention.head_count`) ?? 0;
    const nHeadKv = metaNum(meta, `${arch}.attention.head_count_kv`) ?? nHead;
    const headDim = metaNum(meta, `${arch}.attention.key_length`) ?? (nHead ? nEmbd / nHead : 0);
    const kvDim = nHeadKv * headDim;
    const trainCtx = metaNum(meta, `${arch}.context_length`) ?? 2048;
    const contextLength = loadContextLength(trainCtx, options.contextLength);
    if (!(contextLength >= 1))
      throw new EngineError('invalid_argument', `contextLength must be ≥ 1, got ${options.contextLength}`);
    const batchSize = Math.max(1, Math.min(options.batchSize ?? 512, contextLength));
    const kvType: KvType = options.kvType ?? 'f16';
    const sizes = partSizes(file);
    checkFileSizes(sizes, opened.name);
    const fileBytes = sizes.reduce<number>((a, b) => a + (b ?? 0), 0);
    checkWasmMemory(fileBytes, 2 * nLayers * contextLength * kvDim * (kvType === 'f16' ? 2 : 4));
    let tokenizer: Tokenizer | undefined;
    try {
      tokenizer = createTokenizer(meta);
    } catch {
      tokenizer = undefined; // llama.cpp tokenizes for generation; only tokenize()/detokenize() need ours
    }
    const tFetch = performance.now();
    const blobs = await opened.blobs();
    throwIfAborted(options.signal, 'loading the model');
    // The file is read (a local file's bar said "nothing to do" beside a 130 ms fetch in the summary).
    emit({ phase: 'fetch', bytesDone: fileBytes, bytesTotal: fileBytes });
    const n = blobs.length;
    const named = blobs.map(
      (b, i) =>
        new File(
          [b],
          n === 1
            ? 'model.gguf'
            : `model-${String(i + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.gguf`,
        ),
    );
    const tUpload = performance.now();
    emit({ phase: 'upload', bytesDone: 0, bytesTotal: fileBytes });
    const wasm = await wasmUrl();
    throwIfAborted(options.signal, 'loading the model');
    // The file and the wasm are there: the loaded model goes now, before the new one takes memory.
    await this.freeModel();
    // llama.cpp logs errors only (log_level ERROR), into nativeErrors: what a failed request's typed error names.
    const wllama = new Wllama(
      { default: wasm },
      {
        logger: {
          debug: () => {},
          log: () => {},
          warn: () => {},
          error: (...args: unknown[]) => {
            const line = args.map((a) => (a instanceof Error ? a.message : String(a))).join(' ');
            if (this.nativeErrors.length < 16) this.nativeErrors.push(line);
          },
        },
      },
    );
    this.nativeErrors = [];
    try {
      await wllama.loadModel(named, {
        log_level: LogLevel.ERROR,
        n_ctx: contextLength,
        n_batch: batchSize,
        n_ubatch: batchSize,
        n_threads: threads,
        n_gpu_layers: 0,
        n_parallel: 1,
        cache_type_k: kvType,
        cache_type_v: kvType,
      });
    } catch (e) {
      await wllama.exit().catch(() => undefined);
      throw wllamaLoadError(e, opened.name);
    }
    if (options.signal?.aborted) {
      await wllama.exit().catch(() => undefined);
      throw new EngineError('aborted', 'loading the model was aborted');
    }
    const tEnd = performance.now();
    emit({ phase: 'upload', bytesDone: fileBytes, bytesTotal: fileBytes });
    this.wllama = wllama;
    this.tokenizer = tokenizer;
    this.lastStats = {
      load: {
        fetchMs: tUpload - tFetch + (tFetch - tStart),
        uploadMs: tEnd - tUpload,
        compileMs: 0,
        totalMs: tEnd - tStart,
      },
    };
    const types = new Set<string>();
    let nParams = 0;
    let weightBytes = 0;
    for (const t of file.tensors.values()) {
      types.add(t.typeName);
      nParams += t.shape.reduce((a, b) => a * b, 1);
      weightBytes += t.nBytes;
    }
    const ctxInfo = wllama.getLoadedContextInfo();
    this.info = {
      name: String(meta['general.name'] ?? opened.name),
      architecture: arch,
      nParams,
      nLayers,
      nEmbd,
      nVocab: ctxInfo.n_vocab,
      contextLength: ctxInfo.n_ctx,
      trainedContextLength: trainCtx,
      batchSize,
      // The tensors' bytes, as our engine counts its weights (the file adds its header and padding).
      weightBytes,
      tensorTypes: [...types],
      kvDim,
      kvType,
      fileBytes,
      fileParts: n,
      backend: 'wllama',
      threads: {
        count: wllama.getNumThreads(),
        multithread: wllama.isMultithread(),
        crossOriginIsolated: threadsAvailable(),
      },
      ...(opened.cache ? { cache: opened.cache } : {}),
    };
    return this.info;
  }

  private loaded(): Wllama {
    if (!this.wllama || !this.info)
      throw new EngineError('not_loaded', 'no model is loaded: call load() first');
    return this.wllama;
  }

  /**
   * Streams a completion of a text prompt (llama.cpp tokenizes it: BOS as the model says, special-token
   * texts parsed, as llama-server does).
   * @throws EngineError 'invalid_argument' (a bad request; `promptTokenIds`, `returnLogits` or `draft`, which
   *   wllama cannot take), 'unsupported' (`responseFormat` or `tools`: wllama cannot constrain), 'not_loaded', 'context_overflow' (the prompt fills the context), 'unsupported_model'
   *   (llama.cpp generated text that is not valid UTF-8, which wllama 3.13 cannot stream: the tokens
   *   before it have streamed; or another failure inside wllama's worker).
   */
  async generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    validateGenerateRequest(req);
    refuseDraft(req, WLLAMA_NAME);
    refuseConstraints(req, WLLAMA_NAME);
    const w = this.loaded();
    if (req.promptTokenIds !== undefined)
      throw new EngineError(
        'invalid_argument',
        'the wllama backend takes a text prompt, not token ids (wllama cannot take a token-id prompt)',
      );
    if (req.returnLogits)
      throw new EngineError('invalid_argument', 'the wllama backend does not return logits (returnLogits)');
    const prompt = req.prompt ?? '';
    const tok = this.tokenizer;
    let ids: number[] | (() => number[]) | undefined;
    if (tok) {
      // llama.cpp would truncate a prompt past the context without a word: refuse it, as our engine does.
      const nCtx = this.info?.contextLength ?? 0;
      checkPromptLength(prompt.length, tok, nCtx, tok.addBos ? 1 : 0);
      const encode = () => tok.encode(prompt, { addBos: tok.addBos, parseSpecial: true });
      if (maxPromptTokens(prompt, tok.addBos ? 1 : 0) < nCtx) {
        // Cannot overflow: tokenized after the request (for promptTokenIds), not before its first token
        // (1-4 ms of a 17 ms TTFT on stories260K on a loaded 2-core machine).
        ids = encode;
      } else {
        ids = encode();
        this.checkPromptTokens(ids.length);
      }
    }
    return this.stream(req, signal, onToken, ids, (fields) =>
      w.createCompletion({ prompt, ...fields } as never),
    );
  }

  /**
   * Chat: with a chat template in the model, llama.cpp renders the messages (its Jinja engine, the
   * model's template) and tokenizes them by its rules (special-token texts in contents are parsed, as in
   * llama-server: `parseSpecialInContent` does not apply); without one, the contents joined by newlines are
   * a plain completion prompt, as on our WebGPU engine.
   * @throws EngineError as {@link generate}; 'unsupported_model' when llama.cpp cannot render the template.
   */
  async chat(
    req: ChatRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    validateChatRequest(req);
    refuseDraft(req, WLLAMA_NAME);
    refuseConstraints(req, WLLAMA_NAME);
    const w = this.loaded();
    if (req.returnLogits)
      throw new EngineError('invalid_argument', 'the wllama backend does not return logits (returnLogits)');
    if (!w.getChatTemplate()) {
      const prompt = req.messages.map((m) => m.content).join('\n');
      return this.generate({ ...chatGenerateFields(req), prompt }, onToken, signal);
    }
    const messages = req.messages.map((m) => ({ role: m.role, content: m.content }));
    // The prompt's length by our renderer of the same template (llama.cpp's rules: contents parsed for
    // special tokens), so a conversation past the context is refused rather than truncated by llama.cpp.
    let ids: number[] | undefined;
    const tok = this.tokenizer;
    if (tok?.chatTemplate) {
      try {
        ids = chatPromptTokens(tok, tok.chatTemplate, req.messages, {
          parseSpecialInContent: true,
          contextLength: this.info?.contextLength,
        }).ids;
      } catch (e) {
        if (isEngineError(e, 'context_overflow')) throw e;
        ids = undefined; // a template our renderer does not take: llama.cpp renders it alone
      }
      if (ids) this.checkPromptTokens(ids.length);
    }
    return this.stream(req, signal, onToken, ids, (fields) =>
      w.createChatCompletion({ messages, ...fields } as never),
    );
  }

  /** @throws EngineError('context_overflow') when `n` prompt tokens leave none to generate. */
  private checkPromptTokens(n: number): void {
    checkPromptTokens(n, this.info?.contextLength ?? 0, 'contextLength');
  }

  private async stream(
    req: GenerateRequest | ChatRequest,
    signal: AbortSignal | undefined,
    onToken: ((e: TokenEvent) => void) | undefined,
    ourIdsOrLater: number[] | (() => number[]) | undefined,
    start: (fields: Record<string, unknown>) => Promise<unknown>,
  ): Promise<GenerateResult> {
    const info = this.info as ModelInfo;
    if (this.busy) await this.busy.catch(() => undefined);
    const tStartMs = performance.now();
    const ids: number[] = [];
    const times: number[] = [];
    const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    let text = '';
    let finish = 'length' as FinishReason;
    let promptTokens = 0;
    let last: StreamChunk | undefined;
    const maxTokens = req.maxTokens ?? 128;
    this.nativeErrors = [];
    const run = (async () => {
      if (signal?.aborted || maxTokens === 0) return;
      await start({
        ...samplingFields(req, maxTokens),
        cache_prompt: this.config.reusePromptPrefix ?? true,
        stream: true,
        abortSignal: signal,
        onData: (c: StreamChunk) => {
          last = c;
          const choice = c.choices?.[0];
          for (const t of choice?.logprobs?.content ?? []) {
            const tMs = performance.now();
            const piece = decoder.decode(new Uint8Array(t.bytes ?? []), { stream: true });
            ids.push(t.id);
            times.push(tMs);
            text += piece;
            onToken?.({ tokenId: t.id, text: piece, tMs });
          }
          if (choice?.finish_reason) finish = choice.finish_reason === 'length' ? 'length' : 'stop';
          if (c.usage) promptTokens = c.usage.prompt_tokens;
        },
      });
    })();
    this.busy = run;
    try {
      await run;
    } catch (e) {
      if (e instanceof WllamaAbortError || (e as Error)?.name === 'AbortError' || signal?.aborted)
        finish = 'aborted';
      else throw wllamaRequestError(e, info.contextLength, this.nativeErrors, ids.length);
    } finally {
      this.busy = undefined;
    }
    if (signal?.aborted && finish !== 'stop' && ids.length < maxTokens) finish = 'aborted';
    if (maxTokens === 0 && !signal?.aborted) finish = 'length';
    text += decoder.decode();
    if (last?.timings) {
      this.lastStats.lastPrefill = { tokens: last.timings.prompt_n, ms: last.timings.prompt_ms };
      this.lastStats.lastDecode = { tokens: last.timings.predicted_n, ms: last.timings.predicted_ms };
    }
    const ourIds = typeof ourIdsOrLater === 'function' ? ourIdsOrLater() : ourIdsOrLater;
    return {
      promptTokenIds:
        ourIds && ourIds.length === promptTokens ? ourIds : new Array<number>(promptTokens).fill(-1),
      outputTokenIds: ids,
      text,
      finishReason: finish,
      tStartMs,
      tokenTimesMs: times,
    };
  }

  // A result's promptTokenIds: our tokenizer's ids (as llama.cpp's completion tokenizes: BOS as the model
  // says, special texts parsed; a chat rendered by our renderer of the same template) when their count is
  // the one llama.cpp reported; -1 for each token otherwise (a tokenizer or template we lack).

  private tok(): Tokenizer {
    this.loaded();
    if (!this.tokenizer)
      throw new EngineError(
        'unsupported_model',
        "this model's tokenizer is not one our tokenizer reads (wllama exposes none)",
      );
    return this.tokenizer;
  }

  /** Text → ids by our tokenizer (llama.cpp's `llama_tokenize`, parse_special false). @throws EngineError 'not_loaded', 'unsupported_model'. */
  async tokenize(text: string, addBos?: boolean): Promise<number[]> {
    checkTokenizeArgs(text, addBos);
    const tok = this.tok();
    return tok.encode(text, { addBos: addBos ?? tok.addBos });
  }

  /** Ids → text by our tokenizer (llama.cpp's `llama_detokenize`). @throws EngineError 'not_loaded', 'unsupported_model', 'invalid_argument'. */
  async detokenize(ids: number[]): Promise<string> {
    checkTokenIds(ids);
    return this.tok().decode(ids);
  }

  async stats(): Promise<EngineStats> {
    return structuredClone(this.lastStats);
  }

  /**
   * Ends the wllama worker and frees its memory, and stops a load that is running (it rejects with
   * 'not_loaded'). Safe to call twice.
   */
  async unload(): Promise<void> {
    if (this.loadCtl) {
      this.unloadedDuring = this.loadCtl;
      this.loadCtl.abort();
    }
    await this.freeModel();
  }

  private async freeModel(): Promise<void> {
    const w = this.wllama;
    this.wllama = undefined;
    this.info = undefined;
    this.tokenizer = undefined;
    if (w) await w.exit().catch(() => undefined);
  }

  /** Same as {@link unload} (the name `createEngine`'s engines share). */
  terminate(): Promise<void> {
    return this.unload();
  }
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** wllama's load failure as an EngineError. */
function wllamaLoadError(e: unknown, name: string): EngineError {
  if (isEngineError(e)) return e;
  const m = messageOf(e);
  if (/memory|allocat|OOM/i.test(m))
    return new EngineError(
      'out_of_memory',
      `llama.cpp's wasm build ran out of memory loading ${name}: ${m}`,
      { cause: e },
    );
  if (/fetch|NetworkError|Failed to load|wasm/i.test(m) && !/model/i.test(m))
    return new EngineError('network', `wllama's wasm could not be loaded: ${m}`, { cause: e });
  return new EngineError('unsupported_model', `llama.cpp's wasm build could not load ${name}: ${m}`, {
    cause: e,
  });
}

/**
 * wllama's request failure as an EngineError.
 * @param native llama.cpp's error-level log lines logged during the request (the cause of a failed action).
 * @param streamed tokens streamed before the failure.
 */
function wllamaRequestError(
  e: unknown,
  contextLength: number,
  native: readonly string[] = [],
  streamed = 0,
): EngineError {
  if (isEngineError(e)) return e;
  const m = messageOf(e);
  if (/context|exceed|kv cache/i.test(m))
    return new EngineError(
      'context_overflow',
      `the prompt does not fit the context of ${contextLength} tokens (llama.cpp: ${m}); shorten it or load with a larger contextLength`,
      { cause: e, details: { contextLength, said: `llama.cpp: ${m}` } },
    );
  if (/Invalid typed array length/.test(m)) {
    // What wllama 3.13 says when a C++ exception ends an action: wllama_action (cpp/wllama.cpp) catches
    // it, logs it and returns no reply without writing the reply's length, and the worker
    // (src/workers-code/llama-cpp.js, runAction) reads the request's Glue magic "GLUE" (1163217991) as that
    // length. The exception's own message is the first native error line (the worker's RangeError follows).
    const cause = native.find((l) => !/Invalid typed array length|Stack trace|RangeError/.test(l));
    if (cause && /invalid UTF-8/i.test(cause))
      return new EngineError(
        'unsupported_model',
        `llama.cpp generated a token whose bytes are not valid UTF-8 after ${streamed} streamed tokens ` +
          `(${cause.trim()}), and wllama 3.13 cannot pass such text to the page: its get_result action ` +
          'serializes each streamed chunk with nlohmann::json dump(), which throws on invalid UTF-8 ' +
          "(wllama's cpp/wllama-context.h, action_get_result; llama-server replaces such bytes instead), and " +
          `its worker then fails reading the reply ("${m}"). The tokens before it were streamed; the engine ` +
          'stays loaded. Random-weight and some small models emit stray byte tokens; our WebGPU backend ' +
          '(backend: "webgpu") streams them.',
        { cause: e },
      );
    return new EngineError(
      'unsupported_model',
      `llama.cpp's wasm build failed inside wllama's worker during this request${cause ? ` (llama.cpp: ${cause.trim()})` : ''}; wllama 3.13 reports only "${m}". The engine stays loaded.`,
      { cause: e },
    );
  }
  return new EngineError('invalid_argument', `llama.cpp's wasm build refused the request: ${m}`, {
    cause: e,
  });
}
