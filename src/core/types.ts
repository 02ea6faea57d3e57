/**
 * The `Engine` interface every backend implements (our WebGPU engine, WebLLM, remote servers), so the
 * benchmark, the chat tab, the widget and the CLI never ask which backend they hold.
 */

/** Phases of a model load, reported in order (a phase may be skipped). */
/**
 * Load phases, in order: `download` (a URL into the model library's cache, only with
 * {@link LoadOptions.cache}), `verify` (hashing a download, or the part already on disk before a resume),
 * `fetch` (reading the GGUF: network, file or cache), `upload` (to GPU buffers), `compile` (pipelines).
 */
export type LoadPhase = 'download' | 'verify' | 'fetch' | 'upload' | 'compile';

/** Progress of a model load. `bytesDone`/`bytesTotal` are bytes (for `compile`: pipelines done/total). */
export interface LoadProgress {
  phase: LoadPhase;
  bytesDone: number;
  bytesTotal: number;
  /** ms since the load started (performance.now() based). */
  tMs: number;
  /** `download`: transfer rate over the last few seconds, bytes/s. */
  bytesPerSec?: number;
  /** `download`: estimated time left at that rate, ms. */
  etaMs?: number;
  /** A line for people, e.g. "resuming at 312 MB" or "using the cached copy (offline)". */
  note?: string;
}

/**
 * Where a GGUF comes from: a URL (fetched, range requests where allowed) or a Hugging Face shorthand
 * `hf:OWNER/REPO/FILE.gguf[@REVISION]` (see src/library/spec.ts), a File/Blob (used in place), a Node
 * path, or a synthetic model (`synthetic:SHAPE-TYPE`: real shapes, random weights made on the GPU; see
 * src/webgpu/model/synthetic.ts).
 *
 * Split GGUF files (`NAME-00001-of-00003.gguf`, llama.cpp's gguf-split) load as one model from their
 * first part: URL and path sources find the other parts beside it; a Blob source passes them in `parts`
 * (any order; matched by name).
 */
export type ModelSource =
  | { url: string }
  | { blob: Blob; name?: string; parts?: Blob[] }
  | { path: string }
  | { synthetic: string; seed?: number };

/**
 * The model library's cache ({@link LoadOptions.cache}): `true` = the default place (the Origin Private
 * File System in a browser, `~/.cache/webgpu-llm-bench/models` in Node), or options.
 */
export type CacheOption =
  | boolean
  | {
      /** Node: the cache directory (default: $XDG_CACHE_HOME or ~/.cache, then webgpu-llm-bench/models). */
      dir?: string;
      /** Expected SHA-256 of the file (hex), checked after download. */
      sha256?: string;
      /** Hugging Face endpoint for `hf:` shorthands (default https://huggingface.co, or $HF_ENDPOINT). */
      hfEndpoint?: string;
      /** Skip the freshness check of a complete cached copy (no request at all). Default false. */
      offline?: boolean;
    };

/**
 * Options for loading a model. A field it does not have (a misspelt `kvtype`) is refused with
 * EngineError('invalid_argument') naming the field meant, before anything loads (validate.ts
 * `checkLoadOptions`), as a request's unknown fields are.
 */
export interface LoadOptions {
  /**
   * Context length in tokens (KV cache size); default min(model's context, 2048). Above the model's
   * training context it is cut to it: ModelInfo.contextLength says what was loaded.
   */
  contextLength?: number;
  /**
   * The most prompt tokens per prefill batch (llama.cpp's ubatch; the run state's buffers hold this many).
   * Our WebGPU engine's default: on a GPU up to 512, the largest multiple of 32 whose widest per-batch
   * buffer (batch × max(nFF, nVocab) × 4 bytes: the SwiGLU hidden, and the every-position logits of
   * scoring) fits the device's maxStorageBufferBindingSize and maxBufferSize; 64 on a software adapter
   * (SwiftShader); never more than the context length. The batch used is `ModelInfo.batchSize`. A
   * generation's prefill starts with one tile of the prefill kernel's tokens and grows or shrinks its
   * batches toward about 100 ms each at the measured speed (up to this size), so a Stop lands within one
   * batch.
   */
  batchSize?: number;
  /** Called with progress for each phase. */
  onProgress?: (p: LoadProgress) => void;
  /** Aborts the load; rejects with EngineError('aborted'). */
  signal?: AbortSignal;
  /**
   * URL sources: keep the file in the model library's cache (download once, resume, verify; later loads
   * read the cached copy). Default false: stream from the network each time.
   */
  cache?: CacheOption;
  /**
   * Run on a device with only the WebGPU spec's default limits (128 MiB per storage binding, 8 storage
   * buffers per shader stage), as a phone or integrated GPU may grant (our WebGPU engine; `--default-limits`
   * on the command line). Matrices larger than a binding are split; a model that still cannot be bound is
   * refused before anything is allocated. Default false: the adapter's highest limits.
   */
  defaultLimits?: boolean;
  /**
   * Element type of the KV cache (our WebGPU engine; `--kv-type` on the command line): `f16` (default, as
   * llama.cpp's default `--cache-type-k/v f16`; stored with WGSL's pack2x16float, so no shader-f16 needed)
   * takes half the memory and bandwidth of `f32`; `q8_0` (34 bytes per 32 values) and `q4_0` (18) are
   * ggml's block types, quantized as each token is written (llama.cpp's `-ctk/-ctv q8_0`; they need a head
   * size that is a multiple of 32, else the load is refused with `invalid_argument`). Bytes: nLayers ×
   * contextLength × kvDim × (bytes per value of K + of V). Sets K and V alike; {@link kvTypeK} and
   * {@link kvTypeV} set one apart.
   */
  kvType?: KvType;
  /** The K cache's type where it differs from {@link kvType} (llama.cpp's `--cache-type-k`). */
  kvTypeK?: KvType;
  /** The V cache's type where it differs from {@link kvType} (llama.cpp's `--cache-type-v`). */
  kvTypeV?: KvType;
  /**
   * A draft model for speculative decoding (our WebGPU engine; `--draft` on the command line): a smaller
   * GGUF with the same vocabulary (same size, same token texts; else EngineError('invalid_argument')
   * before anything of it is allocated), loaded on the same device with the same context length and KV
   * type. Requests use it with `draft: { type: 'model' }`. A draft that fails (another vocabulary,
   * 'out_of_memory' beside the target, a fetch or parse error) makes `load` throw its typed error after
   * the target has loaded; the target stays loaded and usable without a draft (the draft's GPU memory
   * released). `WebGpuEngine.setDraft` / `WorkerEngine.setDraft` load, replace or drop a draft beside an
   * already loaded target without loading it again.
   */
  draft?: ModelSource;
}

/**
 * Element type of the KV cache ({@link LoadOptions.kvType}): f16, f32, or ggml's block types Q8_0 (34 bytes
 * per 32 values) and Q4_0 (18 bytes per 32 values), as llama.cpp's `--cache-type-k/v`.
 */
export type KvType = 'f16' | 'f32' | 'q8_0' | 'q4_0';

/** Sampling parameters. Defaults give greedy decoding. Order of application follows llama.cpp's sampler chain. */
export interface SamplingParams {
  /** 0 (default) = greedy (argmax). */
  temperature?: number;
  /** Keep the k most likely tokens; 0 = off. */
  topK?: number;
  /** Nucleus sampling mass in (0, 1]; 1 = off. */
  topP?: number;
  /** Drop tokens with p < minP · p_max; 0 = off. */
  minP?: number;
  /** CTRL-style repetition penalty (> 1 penalises); 1 = off. */
  repetitionPenalty?: number;
  /** How many recent tokens the penalty looks at; default 64. */
  repetitionLastN?: number;
  /**
   * Seed for the sampler's PRNG (an integer); the same seed gives the same output. None, or -1 (llama.cpp's
   * default), picks a random one.
   */
  seed?: number;
}

/** A completion request: a plain-text prompt, or pre-tokenized ids (BOS included if wanted). */
export interface GenerateRequest extends SamplingParams {
  prompt?: string;
  promptTokenIds?: number[];
  /** Maximum number of new tokens; default 128. */
  maxTokens?: number;
  /** Keep going past EOS (fixed-length decode for benchmarks). */
  ignoreEos?: boolean;
  /** Also return logits per output position (slow: reads back [nVocab] floats per token). */
  returnLogits?: boolean;
  /**
   * Structured output: the text generated is constrained, token by token, to a JSON value, a JSON schema
   * or a grammar ({@link ResponseFormat}); default unconstrained. Our WebGPU engine masks each step's
   * logits on the GPU with the grammar's allowed tokens (xgrammar) and stops when the grammar is complete;
   * a backend that cannot constrain refuses it with EngineError('unsupported'), never unconstrained.
   */
  responseFormat?: ResponseFormat;
  /**
   * Speculative decoding (our WebGPU engine): draft tokens cheaply and have the model score them all in
   * one batched forward, keeping the longest prefix it agrees with plus its own next token, so several
   * tokens can cost one pass. Greedy output is plain greedy decoding's (up to the prefill and decode
   * kernels' float rounding); sampled output follows the speculative-sampling rule (Leviathan et al.
   * 2023), so its distribution is the target's, but its tokens for a seed are not plain sampling's. Not
   * with returnLogits. See {@link DraftOptions}.
   */
  draft?: DraftOptions;
}

/**
 * How speculative decoding drafts (GenerateRequest.draft). `lookup`: prompt-lookup decoding (llama.cpp's
 * lookup decoding, Saxena 2023's prompt lookup): the tokens that followed the latest earlier occurrence
 * of the text's last n-gram (n = ngramMax down to 1) in the prompt and the output so far; no second model.
 * Good for summaries, code edits and documents that repeat their input. `model`: the greedy continuation
 * of the draft model loaded beside the target (LoadOptions.draft; llama.cpp's `--model-draft`).
 */
export interface DraftOptions {
  type: 'lookup' | 'model';
  /**
   * Most tokens drafted per target pass, 1..16 (default 8 for lookup, 4 for a draft model; at most the
   * load's batchSize − 1). The length in use adapts to the recent acceptance rate
   * (webgpu/speculative.ts `DraftLength`).
   */
  draftMax?: number;
  /** Longest n-gram matched, 1..8 (default 3). */
  ngramMax?: number;
}

/** What speculative decoding did in one generation (GenerateResult.speculative). */
export interface SpeculativeStats {
  /** Draft tokens proposed to the target. */
  drafted: number;
  /** Draft tokens the target agreed with (acceptance rate = accepted / drafted). */
  accepted: number;
  /**
   * Target forward passes after the prefill: verify passes and plain decode steps (where there was no
   * draft); output tokens ÷ targetPasses is the tokens per target pass (the first output token comes
   * from the prefill and counts as none).
   */
  targetPasses: number;
}

/**
 * What the output must be ({@link GenerateRequest.responseFormat}), as OpenAI's / WebLLM's
 * `response_format`: `text` (no constraint), `json_object` (any JSON object), `json_schema` (JSON
 * valid against `schema`, a JSON Schema object or its JSON text), `grammar` (an EBNF grammar in
 * xgrammar's dialect, which reads llama.cpp's GBNF: `root ::= ...`, the root rule named `root`).
 */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; schema: Record<string, unknown> | string; name?: string; strict?: boolean }
  | { type: 'grammar'; grammar: string }
  /**
   * xgrammar's / vLLM's structural tag (`{type: 'tag' | 'sequence' | 'triggered_tags' | …}`): literal
   * text and JSON schemas in sequence, e.g. a tool call's markup around its arguments.
   */
  | { type: 'structural_tag'; format: Record<string, unknown> };

/** One chat message. */
export interface ChatMessage {
  /** `tool`: a tool's answer to the assistant's call `toolCallId` (its `content` the result's text). */
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant message's tool calls (OpenAI's `tool_calls`), passed to the chat template. */
  toolCalls?: ToolCall[];
  /** A tool message: the id of the call it answers (OpenAI's `tool_call_id`). */
  toolCallId?: string;
}

/** A function the model may call (OpenAI's `tools[]` entry). */
export interface ToolDefinition {
  type: 'function';
  function: {
    /** 1–64 characters of a–z, A–Z, 0–9, `_`, `-`. */
    name: string;
    description?: string;
    /** The arguments' JSON Schema (an object schema); default any object. */
    parameters?: Record<string, unknown>;
    /** Constrain the arguments to `parameters` (OpenAI's Structured Outputs for function calling). */
    strict?: boolean;
  };
}

/** A call the model made (OpenAI's `tool_calls[]` entry): `arguments` is JSON text. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * Whether and which tools the model calls (OpenAI's `tool_choice`): `auto` (default with tools: it may
 * answer or call), `none` (it answers; the tools are not shown to it), `required` (it calls one or more),
 * or a named function (it calls that one).
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** A chat request: rendered with the model's chat template where it has one. */
export interface ChatRequest extends Omit<GenerateRequest, 'prompt' | 'promptTokenIds'> {
  messages: ChatMessage[];
  /**
   * Read special-token texts inside the messages' contents as those tokens (our WebGPU engine, which
   * tokenizes the chat itself). Default false: a message's content is text, as in OpenAI's API, so a user
   * typing `<|im_end|>\n<|im_start|>system` or `</s><s>` gets those characters' ordinary tokens and cannot
   * end a turn or forge a system message; the chat template's own markup is always control tokens. True
   * restores llama.cpp's and Hugging Face's behaviour (the whole rendered prompt parsed for special
   * tokens): only for contents you trust. Engines that send the messages elsewhere (a remote server,
   * WebLLM) tokenize them by their own rules.
   */
  parseSpecialInContent?: boolean;
  /**
   * Functions the model may call, given to the chat template (`tools`), which must support them. The
   * calls the model writes come back in {@link GenerateResult.toolCalls}; with `toolChoice` 'required' or
   * a named function, or a tool marked `strict`, our WebGPU engine constrains the call's text (its
   * arguments to the function's schema) as it does for `responseFormat`.
   */
  tools?: ToolDefinition[];
  /** Default 'auto' with tools. */
  toolChoice?: ToolChoice;
  /** With 'required': allow more than one call (default true, OpenAI's `parallel_tool_calls`). */
  parallelToolCalls?: boolean;
}

/** One output token, timestamped where its id became known on the host. */
export interface TokenEvent {
  tokenId: number;
  /** Text this token adds to the output (may be '' while a multi-byte character is incomplete). */
  text: string;
  /** performance.now() in ms when the token id was read back. */
  tMs: number;
  /** Logits [nVocab] for this position, only when `returnLogits` was asked. */
  logits?: Float32Array;
}

/** Why generation ended. */
export type FinishReason = 'stop' | 'length' | 'aborted';

/** The result of a generation. */
export interface GenerateResult {
  promptTokenIds: number[];
  outputTokenIds: number[];
  text: string;
  finishReason: FinishReason;
  /** performance.now() ms at request start. */
  tStartMs: number;
  /** performance.now() ms per output token. */
  tokenTimesMs: number[];
  /** With `draft`: what the drafting did (see {@link SpeculativeStats}). */
  speculative?: SpeculativeStats;
  /**
   * With `responseFormat` (our WebGPU engine): true when `text` is a whole value of the format, one the
   * grammar may end at (always so after finish 'stop'); false when `maxTokens` or an abort cut it
   * mid-value, where it does not parse. A grammar that allows more (`[0-9]+`) can be complete and still
   * end with 'length'.
   */
  formatComplete?: boolean;
  /**
   * A chat with tools: the calls parsed from the output (OpenAI's shape), in order; `text` then holds
   * the output with the calls' markup removed (OpenAI's `content`). Absent when no call was made.
   */
  toolCalls?: ToolCall[];
}

/** The backends behind {@link Engine}. */
export type BackendKind = 'webgpu' | 'wllama' | 'webllm' | 'remote';

/** Facts about the loaded model. */
export interface ModelInfo {
  name: string;
  architecture: string;
  nParams: number;
  nLayers: number;
  nEmbd: number;
  nVocab: number;
  /** The context loaded, in tokens (the KV cache's size): LoadOptions.contextLength, at most the trained one. */
  contextLength: number;
  /**
   * The model's training context in tokens (GGUF `<arch>.context_length`, llama.cpp's n_ctx_train): the
   * most a load gives (our WebGPU engine and wllama; absent where the backend does not say).
   */
  trainedContextLength?: number;
  /** The most tokens per prefill batch (our WebGPU engine; {@link LoadOptions.batchSize}). */
  batchSize?: number;
  /** Bytes of weights: the GGUF tensors' data as loaded (on the GPU; in wasm memory for wllama). */
  weightBytes: number;
  /** The draft model loaded beside it (LoadOptions.draft; our WebGPU engine). */
  draft?: { name: string; nParams: number; nLayers: number; nEmbd: number; weightBytes: number };
  /** Tensor types present, e.g. ['F32']. */
  tensorTypes: string[];
  /** True for synthetic models: speed is real, text is noise. */
  synthetic?: boolean;
  /** K/V width per layer (nHeadKv · headDim), for KV-cache traffic estimates. */
  kvDim?: number;
  /**
   * Element type of the K cache (our WebGPU engine; and of V unless {@link kvTypeV} says otherwise); bytes
   * per element 4 (f32), 2 (f16), 34/32 (q8_0), 18/32 (q4_0).
   */
  kvType?: KvType;
  /** Element type of the V cache (our WebGPU engine), recorded whether or not it differs from K's. */
  kvTypeV?: KvType;
  /** The output projection reuses `token_embd.weight`. */
  tiedEmbeddings?: boolean;
  /** Size of the GGUF file(s) in bytes, where known. */
  fileBytes?: number;
  /** Number of files (split GGUF parts); 1 for a single file. */
  fileParts?: number;
  /**
   * The kernels the model runs and how they were chosen, as the backend reports them (our WebGPU engine:
   * src/webgpu/kernel-plan.ts `KernelsInfo`); JSON.
   */
  kernels?: { readonly [key: string]: unknown };
  /** The device limits the model was planned with, and whether only the spec's defaults were requested. */
  limits?: { defaultLimits: boolean; values: Record<string, number> };
  /**
   * The backend running the model: 'webgpu' (our engine), 'wllama' (llama.cpp's wasm build on the CPU),
   * 'webllm', 'remote'. Set by the wllama engine and by `backend: 'auto'` (createEngine, the widget).
   */
  backend?: BackendKind;
  /** Why `backend: 'auto'` picked {@link ModelInfo.backend}, for people ("no WebGPU adapter", …). */
  backendReason?: string;
  /**
   * wllama: the CPU threads it runs with (`count` 1 = the single-threaded build), and whether the page is
   * cross-origin isolated (threads need SharedArrayBuffer, which needs COOP/COEP headers).
   */
  threads?: { count: number; multithread: boolean; crossOriginIsolated: boolean };
  /** Set when the model came through the model library's cache. */
  cache?: {
    /** The weights were read from the cached copy (true) or downloaded during this load (false). */
    fromCache: boolean;
    /** The server could not be reached, so the cached copy was used without a freshness check. */
    offline: boolean;
    /** Bytes downloaded during this load (0 when cached). */
    downloadedBytes: number;
    /** Where the copy lives (an OPFS path or a directory). */
    location: string;
  };
}

/** Engine statistics, all times in ms. */
export interface EngineStats {
  load?: { fetchMs: number; uploadMs: number; compileMs: number; totalMs: number };
  lastPrefill?: { tokens: number; ms: number };
  /**
   * The running or last generation's prefill (our WebGPU engine), updated after each batch: `done` of
   * `tokens` prompt tokens in `batches` batches, `ms` since it started; `state` 'aborted' when a Stop
   * ended it between batches.
   */
  prefill?: {
    tokens: number;
    done: number;
    batches: number;
    ms: number;
    state: 'running' | 'done' | 'aborted' | 'failed';
  };
  lastDecode?: { tokens: number; ms: number };
}

/**
 * A loaded-model inference backend.
 * All methods may throw {@link import('./errors').EngineError}.
 */
export interface Engine {
  /**
   * Loads a model, replacing any loaded one. Our engines (WebGPU, wllama) keep the loaded one until the new
   * file is fetched and checked, so a load that fails there leaves it loaded; loads run one at a time.
   * @throws EngineError (each engine lists its codes); 'invalid_argument' for bad options, before anything.
   */
  load(source: ModelSource, options?: LoadOptions): Promise<ModelInfo>;
  /**
   * Streams a completion. `onToken` gets each token as it is known; the promise resolves with the whole
   * result, and every `onToken` call has happened by then (none comes after it; for a worker engine, see
   * `ordered` in src/webgpu/worker-host.ts). Aborting `signal` ends generation with finishReason 'aborted' and leaves the engine usable;
   * an abort during the prompt's prefill ends it between two prefill batches, with no output tokens.
   */
  generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult>;
  /** Like generate, with the model's chat template applied. */
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal): Promise<GenerateResult>;
  /** Tokenizes text (with BOS when `addBos`, default the model's add_bos_token). */
  tokenize(text: string, addBos?: boolean): Promise<number[]>;
  /** Detokenizes ids to text. */
  detokenize(ids: number[]): Promise<string>;
  stats(): Promise<EngineStats>;
  /** Releases the model and all GPU memory. Safe to call twice. */
  unload(): Promise<void>;
}
