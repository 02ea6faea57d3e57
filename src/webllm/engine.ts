/**
 * `WebLlmEngine`: the {@link Engine} interface over `@mlc-ai/web-llm`'s Web Worker engine (the worker is
 * `workers/webllm.worker.ts`). Metrics are measured here, on the page, exactly as for the other backends:
 * one timestamp per streamed chunk, tokens counted from `usage.completion_tokens` (spread over the chunks
 * by their text when a chunk carries several). WebLLM's own `usage.extra` figures are kept apart in
 * `engineReported`.
 *
 * What WebLLM lacks and this adds: load and first-token timeouts (a server that never answers leaves
 * WebLLM's load pending forever), which terminate the worker, so the next load starts a fresh one; errors
 * mapped from WebLLM's strings to EngineError codes (src/webllm/errors.ts); a progress event before the
 * config and model-library fetches, which WebLLM does not report.
 */
import {
  type AppConfig,
  type ChatCompletionChunk,
  type Completion,
  type CompletionUsage,
  deleteModelAllInfoInCache,
  hasModelInCache,
  type InitProgressReport,
  prebuiltAppConfig,
  WebWorkerMLCEngine,
} from '@mlc-ai/web-llm';
import { EngineError } from '../core/errors.ts';
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
  ResponseFormat,
  TokenEvent,
} from '../core/types.ts';
import {
  checkLoadOptions,
  refuseDraft,
  validateChatRequest,
  validateGenerateRequest,
} from '../core/validate.ts';
import { resolveAppConfig } from './catalog.ts';
import { webLlmError } from './errors.ts';

export interface WebLlmConfig {
  /** The catalogue; default WebLLM's `prebuiltAppConfig`. Relative URLs are resolved against the page. */
  appConfig?: AppConfig;
  /** Where WebLLM caches weights: 'cache' (Cache API, default), 'indexeddb', 'opfs', 'cross-origin'. */
  cacheBackend?: AppConfig['cacheBackend'];
  /** No finished load within this many ms → EngineError('timeout'), worker terminated (default 600 000). */
  loadTimeoutMs?: number;
  /** No first chunk within this many ms → EngineError('timeout'), worker terminated (default 120 000). */
  firstTokenTimeoutMs?: number;
  /** Makes the worker (default `workers/webllm.worker.ts`). */
  createWorker?: () => Worker;
}

/** A WebLLM result: ours, plus how tokens were counted and WebLLM's own figures. */
export interface WebLlmGenerateResult extends GenerateResult {
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** WebLLM's `usage.extra` (its own prefill/decode tok/s, …): the engine's figures, not ours. */
  engineReported?: Record<string, number>;
  chunks: number;
}

const MB = 1024 * 1024;

/** `webllm:ID`, `ID` or `{url: ID}` → the model id. */
export function webLlmModelId(source: ModelSource): string {
  if (!('url' in source) || !source.url)
    throw new EngineError(
      'invalid_argument',
      'a WebLLM model is named by its id, e.g. Llama-3.2-1B-Instruct-q4f32_1-MLC',
    );
  return source.url.replace(/^webllm:/, '');
}

/** Maps one of WebLLM's progress reports to our phases ('fetch' while downloading, 'upload', 'compile'). */
export function progressFromReport(r: InitProgressReport, tMs: number): LoadProgress {
  const mb = /(\d+)MB (fetched|loaded)/.exec(r.text);
  const phase = /Loading model from cache/.test(r.text)
    ? 'upload'
    : /shader|Finish loading/i.test(r.text)
      ? 'compile'
      : 'fetch';
  if (mb && r.progress > 0) {
    const done = Number(mb[1]) * MB;
    return { phase, bytesDone: done, bytesTotal: Math.round(done / r.progress), tMs };
  }
  return { phase, bytesDone: Math.round(r.progress * 1000), bytesTotal: 1000, tMs };
}

/** Spreads `total` tokens over chunks by their text length (largest remainder); one each when equal. */
export function tokensPerChunk(texts: readonly string[], total: number): number[] {
  const n = texts.length;
  if (n === 0) return [];
  if (total === n) return texts.map(() => 1);
  const chars = texts.map((t) => Math.max(1, t.length));
  const sum = chars.reduce((a, b) => a + b, 0);
  const raw = chars.map((c) => (c / sum) * total);
  const out = raw.map(Math.floor);
  let left = total - out.reduce((a, b) => a + b, 0);
  const order = raw.map((r, i) => [r - Math.floor(r), i] as const).sort((a, b) => b[0] - a[0]);
  for (let j = 0; left > 0; j = (j + 1) % n, left--) out[order[j][1]]++;
  return out;
}

function timeoutAfter(ms: number, what: string): { promise: Promise<never>; clear: () => void } {
  let t: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<never>((_, reject) => {
    t = setTimeout(
      () => reject(new EngineError('timeout', `WebLLM: ${what} did not finish within ${ms / 1000} s`)),
      ms,
    );
  });
  promise.catch(() => undefined);
  return { promise, clear: () => clearTimeout(t) };
}

export class WebLlmEngine implements Engine {
  readonly config: WebLlmConfig;
  private worker?: Worker;
  private mlc?: WebWorkerMLCEngine;
  /** The loaded model id. */
  modelId?: string;
  private loadStats?: EngineStats['load'];

  constructor(config: WebLlmConfig = {}) {
    this.config = config;
  }

  /** The app config with absolute URLs and the chosen cache backend. */
  appConfig(): AppConfig {
    const base = this.config.appConfig ?? prebuiltAppConfig;
    const page = typeof location === 'undefined' ? 'http://localhost/' : location.href;
    const c = resolveAppConfig(base, page);
    return this.config.cacheBackend ? { ...c, cacheBackend: this.config.cacheBackend } : c;
  }

  private newWorker(): Worker {
    return this.config.createWorker
      ? this.config.createWorker()
      : new Worker(new URL('../../workers/webllm.worker.ts', import.meta.url), { type: 'module' });
  }

  /** Ends the worker (a stuck load or generation cannot be stopped otherwise); the next load makes a new one. */
  private kill(): void {
    this.worker?.terminate();
    this.worker = undefined;
    this.mlc = undefined;
    this.modelId = undefined;
  }

  async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    checkLoadOptions(options);
    refuseDraft(options, 'WebLLM');
    const id = webLlmModelId(source);
    const appConfig = this.appConfig();
    const record = appConfig.model_list.find((r) => r.model_id === id);
    if (!record) throw new EngineError('model_not_found', `WebLLM has no model "${id}" in its app config`);
    await this.unload();
    if (options.signal?.aborted) throw new EngineError('aborted', 'the load was aborted');
    const t0 = performance.now();
    const report = (p: LoadProgress) => options.onProgress?.(p);
    const phaseStart: Partial<Record<LoadProgress['phase'], number>> = { fetch: t0 };
    // WebLLM reports nothing while it fetches mlc-chat-config.json and the model library: say so here.
    report({ phase: 'fetch', bytesDone: 0, bytesTotal: 0, tMs: 0 });
    let worker: Worker;
    try {
      worker = this.newWorker();
    } catch (e) {
      throw new EngineError(
        'network',
        `the WebLLM worker could not be created: ${(e as Error)?.message ?? e}`,
        {
          cause: e,
        },
      );
    }
    this.worker = worker;
    const mlc = new WebWorkerMLCEngine(worker, {
      appConfig,
      initProgressCallback: (r) => {
        const p = progressFromReport(r, performance.now() - t0);
        phaseStart[p.phase] ??= performance.now();
        report(p);
      },
    });
    const workerFailed = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (ev) =>
        reject(
          new EngineError('network', `the WebLLM worker failed to start: ${ev.message ?? 'script error'}`),
        ),
      );
    });
    workerFailed.catch(() => undefined);
    const aborted = new Promise<never>((_, reject) => {
      options.signal?.addEventListener(
        'abort',
        () => reject(new EngineError('aborted', 'the load was aborted')),
        {
          once: true,
        },
      );
    });
    aborted.catch(() => undefined);
    const timer = timeoutAfter(this.config.loadTimeoutMs ?? 600_000, `loading ${id}`);
    const ctx = options.contextLength;
    try {
      await Promise.race([
        mlc.reload(id, ctx ? { context_window_size: ctx } : undefined).catch((e) => {
          throw webLlmError(e);
        }),
        timer.promise,
        workerFailed,
        aborted,
      ]);
    } catch (e) {
      this.kill();
      throw e;
    } finally {
      timer.clear();
    }
    this.mlc = mlc;
    this.modelId = id;
    const t1 = performance.now();
    const up = phaseStart.upload ?? phaseStart.compile ?? t1;
    const comp = phaseStart.compile ?? t1;
    this.loadStats = { fetchMs: up - t0, uploadMs: comp - up, compileMs: t1 - comp, totalMs: t1 - t0 };
    return {
      name: id,
      architecture: 'mlc',
      nParams: 0,
      nLayers: 0,
      nEmbd: 0,
      nVocab: 0,
      contextLength: ctx ?? record.overrides?.context_window_size ?? 4096,
      weightBytes: Math.round((record.vram_required_MB ?? 0) * MB),
      tensorTypes: [/-(q\d+f\d+(_\d+)?)/.exec(id)?.[1] ?? 'unknown'],
    };
  }

  private loaded(): WebWorkerMLCEngine {
    if (!this.mlc) throw new EngineError('not_loaded', 'no WebLLM model is loaded: call load() first');
    return this.mlc;
  }

  async chat(
    req: ChatRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<WebLlmGenerateResult> {
    validateChatRequest(req);
    refuseDraft(req, 'WebLLM');
    const mlc = this.loaded();
    // WebLLM calls tools only with a few Hermes models of its own, through its own prompt: not mapped.
    if (
      (req.tools?.length && req.toolChoice !== 'none') ||
      req.messages.some((m) => m.role === 'tool' || m.toolCalls)
    )
      throw new EngineError('unsupported', 'the WebLLM adapter does not support tools or tool messages');
    const messages = req.messages.map((m) => ({ role: m.role, content: m.content })) as {
      role: 'system' | 'user' | 'assistant';
      content: string;
    }[];
    return this.stream(
      () =>
        mlc.chat.completions.create({
          messages,
          stream: true,
          stream_options: { include_usage: true },
          ...this.sampling(req),
          ...webllmResponseFormat(req.responseFormat),
        }),
      (c: ChatCompletionChunk) => c.choices[0]?.delta?.content ?? '',
      onToken,
      signal,
      req.maxTokens ?? 128,
    );
  }

  async generate(
    req: GenerateRequest,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<WebLlmGenerateResult> {
    validateGenerateRequest(req);
    refuseDraft(req, 'WebLLM');
    const mlc = this.loaded();
    if (req.prompt === undefined)
      throw new EngineError('invalid_argument', 'WebLLM takes a text prompt, not token ids');
    const prompt = req.prompt;
    if (req.responseFormat && req.responseFormat.type !== 'text')
      throw new EngineError(
        'unsupported',
        'WebLLM constrains only chat completions (response_format); use chat() for structured output',
      );
    return this.stream(
      () =>
        mlc.completions.create({
          prompt,
          stream: true,
          stream_options: { include_usage: true },
          ...this.sampling(req),
        }),
      (c: Completion) => c.choices[0]?.text ?? '',
      onToken,
      signal,
      req.maxTokens ?? 128,
    );
  }

  private sampling(req: ChatRequest | GenerateRequest) {
    return {
      max_tokens: req.maxTokens ?? 128,
      temperature: req.temperature ?? 0,
      top_p: req.topP ?? 1,
      ...(req.seed !== undefined ? { seed: req.seed } : {}),
      ...(req.repetitionPenalty !== undefined ? { repetition_penalty: req.repetitionPenalty } : {}),
      ...(req.ignoreEos ? { ignore_eos: true } : {}),
    };
  }

  private async stream<C extends { usage?: CompletionUsage }>(
    create: () => Promise<AsyncIterable<C>>,
    textOf: (c: C) => string,
    onToken: ((e: TokenEvent) => void) | undefined,
    signal: AbortSignal | undefined,
    maxTokens: number,
  ): Promise<WebLlmGenerateResult> {
    const mlc = this.loaded();
    const tStartMs = performance.now();
    const times: number[] = [];
    const texts: string[] = [];
    let usage: CompletionUsage | undefined;
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      mlc.interruptGenerate();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    const first = timeoutAfter(this.config.firstTokenTimeoutMs ?? 120_000, 'the first token');
    try {
      const run = (async () => {
        for await (const chunk of await create()) {
          const text = textOf(chunk);
          if (text) {
            if (times.length === 0) first.clear();
            times.push(performance.now());
            texts.push(text);
            onToken?.({ tokenId: -1, text, tMs: times[times.length - 1] });
          }
          if (chunk.usage) usage = chunk.usage;
        }
      })();
      await Promise.race([run.catch((e) => Promise.reject(webLlmError(e))), first.promise]);
    } catch (e) {
      if ((e as EngineError).code === 'timeout') this.kill();
      throw e;
    } finally {
      first.clear();
      signal?.removeEventListener('abort', onAbort);
    }
    const n = usage?.completion_tokens ?? times.length;
    const tokenTimesMs: number[] = [];
    tokensPerChunk(texts, n).forEach((k, i) => {
      for (let j = 0; j < k; j++) tokenTimesMs.push(times[i]);
    });
    const engineReported: Record<string, number> = {};
    for (const [k, v] of Object.entries(usage?.extra ?? {})) if (typeof v === 'number') engineReported[k] = v;
    return {
      promptTokenIds: new Array<number>(usage?.prompt_tokens ?? 0).fill(-1),
      outputTokenIds: new Array<number>(tokenTimesMs.length).fill(-1),
      text: texts.join(''),
      finishReason: aborted ? 'aborted' : tokenTimesMs.length >= maxTokens ? 'length' : 'stop',
      tStartMs,
      tokenTimesMs,
      chunks: texts.length,
      ...(usage
        ? { usage: { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens } }
        : {}),
      ...(Object.keys(engineReported).length ? { engineReported } : {}),
    };
  }

  tokenize(): Promise<number[]> {
    return Promise.reject(
      new EngineError('invalid_argument', "WebLLM's worker does not expose its tokenizer"),
    );
  }
  detokenize(): Promise<string> {
    return Promise.reject(
      new EngineError('invalid_argument', "WebLLM's worker does not expose its tokenizer"),
    );
  }
  async stats(): Promise<EngineStats> {
    return this.loadStats ? { load: this.loadStats } : {};
  }
  /** Unloads (waiting at most 1 s) and ends the worker. Safe to call twice. */
  async unload(): Promise<void> {
    const mlc = this.mlc;
    if (mlc)
      await Promise.race([mlc.unload().catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    this.kill();
  }

  /** Which of these models are in WebLLM's cache (for the picker's "cached" mark). */
  async cachedModels(ids: readonly string[]): Promise<string[]> {
    const c = this.appConfig();
    const out: string[] = [];
    for (const id of ids) if (await hasModelInCache(id, c).catch(() => false)) out.push(id);
    return out;
  }
  /** Deletes a model's weights, config and library from WebLLM's cache. */
  deleteCached(id: string): Promise<void> {
    return deleteModelAllInfoInCache(id, this.appConfig());
  }
}

/** Storage use and quota (`navigator.storage.estimate()`), undefined where the browser does not say. */
export async function storageEstimate(): Promise<{ usage?: number; quota?: number } | undefined> {
  if (typeof navigator === 'undefined' || !navigator.storage?.estimate) return undefined;
  const e = await navigator.storage.estimate();
  return { usage: e.usage, quota: e.quota };
}

/**
 * The engine's {@link ResponseFormat} as WebLLM's chat `response_format` (its xgrammar): `json_object`;
 * a JSON schema as `{type: 'json_object', schema: '<text>'}` (WebLLM's form); a grammar as
 * `{type: 'grammar', grammar}`. Nothing for none or text.
 */
export function webllmResponseFormat(f: ResponseFormat | undefined): {
  response_format?: { type: 'json_object' | 'grammar'; schema?: string; grammar?: string };
} {
  if (!f || f.type === 'text') return {};
  if (f.type === 'structural_tag')
    throw new EngineError('unsupported', 'the WebLLM adapter does not pass structural tags; use a grammar');
  if (f.type === 'json_object') return { response_format: { type: 'json_object' } };
  if (f.type === 'json_schema')
    return {
      response_format: {
        type: 'json_object',
        schema: typeof f.schema === 'string' ? f.schema : JSON.stringify(f.schema),
      },
    };
  return { response_format: { type: 'grammar', grammar: f.grammar } };
}
