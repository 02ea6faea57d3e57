/**
 * Page for `scripts/bench-engine.ts` (served by the harness's Vite server at `/src/bench/wllama.html`):
 * runs wllama, llama.cpp compiled to WebAssembly from the `@wllama/wllama` npm package, on the CPU
 * (`n_gpu_layers: 0`, so its WebGPU backend stays off), with its wasm served by Vite from
 * node_modules. Exposes `window.wllamaBench`.
 *
 * Timing: a completion is streamed; each chunk is timestamped on this page (performance.now()) when
 * wllama's `onData` delivers it. Chunks whose `finish_reason` is null carry one token each; the final
 * chunk carries `usage` (token counts) and llama.cpp's own `timings`.
 */
import { Wllama } from '@wllama/wllama';
import type { EngineStats, GenerateResult, ModelInfo } from '../core/types.ts';
import { WllamaEngine } from '../wllama/engine.ts';

const WASM_URL = new URL('/node_modules/@wllama/wllama/esm/wasm/wllama.wasm', location.origin).href;

let wllama: Wllama | undefined;
let engine: WllamaEngine | undefined;

/** What one streamed completion gave. */
export interface WllamaRun {
  tStartMs: number;
  /** Arrival time of every chunk, ms. */
  chunkTimesMs: number[];
  /** Per chunk: true when it is a token chunk (finish_reason null). */
  isTokenChunk: boolean[];
  text: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** llama.cpp's own timings from the final chunk. */
  timings?: { prompt_n: number; prompt_ms: number; predicted_n: number; predicted_ms: number };
}

interface Chunk {
  choices: { text: string; finish_reason: string | null }[];
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  } | null;
  timings?: WllamaRun['timings'];
}

const wllamaBench = {
  /**
   * Loads the model on the CPU. Single-threaded unless the page is cross-origin isolated. `nBatch` /
   * `nUbatch`: llama.cpp's n_batch / n_ubatch (default: llama.cpp's, 2048 / 512).
   */
  async load(modelUrl: string, opts: { nCtx: number; nThreads: number; nBatch?: number; nUbatch?: number }) {
    await wllama?.exit();
    wllama = new Wllama({ default: WASM_URL }, { suppressNativeLog: true });
    await wllama.loadModelFromUrl(modelUrl, {
      useCache: false,
      n_ctx: opts.nCtx,
      n_threads: opts.nThreads,
      n_gpu_layers: 0,
      n_parallel: 1,
      ...(opts.nBatch ? { n_batch: opts.nBatch } : {}),
      ...(opts.nUbatch ? { n_ubatch: opts.nUbatch } : {}),
    });
    return {
      libllama: Wllama.getLibllamaVersion(),
      multithread: wllama.isMultithread(),
      threads: wllama.getNumThreads(),
      crossOriginIsolated: globalThis.crossOriginIsolated === true,
    };
  },
  /**
   * Greedy completion of exactly `maxTokens` tokens (EOS ignored, prompt cache off so every run
   * prefills the whole prompt). The prompt is text: wllama tokenizes it with BOS.
   */
  async run(prompt: string, maxTokens: number): Promise<WllamaRun> {
    if (!wllama) throw new Error('load first');
    const chunkTimesMs: number[] = [];
    const isTokenChunk: boolean[] = [];
    let text = '';
    let last: Chunk | undefined;
    // llama-server request fields that the typed API does not list pass through as JSON.
    const extra = { cache_prompt: false };
    const tStartMs = performance.now();
    await wllama.createCompletion({
      prompt,
      max_tokens: maxTokens,
      temperature: 0,
      ignore_eos: true,
      ...extra,
      stream: true,
      onData: (c) => {
        chunkTimesMs.push(performance.now());
        const chunk = c as unknown as Chunk;
        const choice = chunk.choices[0];
        isTokenChunk.push(choice !== undefined && choice.finish_reason === null);
        text += choice?.text ?? '';
        last = chunk;
      },
    });
    const usage = last?.usage;
    if (!usage) throw new Error('wllama sent no usage in its final chunk');
    return {
      tStartMs,
      chunkTimesMs,
      isTokenChunk,
      text,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      timings: last?.timings,
    };
  },
  /**
   * Loads the model into our wllama backend (src/wllama/engine.ts: the `Engine` interface over the same
   * wllama), 1 thread, every request prefilling its whole prompt (`reusePromptPrefix: false`).
   */
  async engineLoad(modelUrl: string, nCtx: number): Promise<ModelInfo> {
    await engine?.unload();
    engine = new WllamaEngine({ wasmUrl: WASM_URL, threads: 1, reusePromptPrefix: false });
    return engine.load({ url: modelUrl }, { contextLength: nCtx });
  },
  /**
   * Greedy completion of exactly `maxTokens` tokens through the backend (EOS ignored), with the engine's
   * stats after it (llama.cpp's own prefill and decode timings of the request).
   */
  async engineRun(prompt: string, maxTokens: number): Promise<GenerateResult & { stats: EngineStats }> {
    if (!engine) throw new Error('engineLoad first');
    const r = await engine.generate({ prompt, maxTokens, ignoreEos: true, temperature: 0 });
    return { ...r, stats: await engine.stats() };
  },
};

declare global {
  interface Window {
    wllamaBench: typeof wllamaBench;
  }
}
window.wllamaBench = wllamaBench;
document.body.dataset.ready = '1';
