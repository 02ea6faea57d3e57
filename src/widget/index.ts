/**
 * The embeddable chat widget: `<webgpu-chat model="…" engine="webgpu">` and {@link mount}. Importing this
 * module (or loading the built `webgpu-chat.iife.js` with a classic script tag, which exposes
 * `window.WebGpuChat`) defines the element.
 */
import { EngineError } from '../core/errors.ts';
import { isAvailable, workerCounter } from './backends.ts';
import { defineWebGpuChat, sharedEngines, WebGpuChatElement } from './element.ts';

export type { ChatMessage, ModelInfo } from '../core/types.ts';
export type { WidgetEngineKind } from './backends.ts';
export type {
  WebGpuChatDoneDetail,
  WebGpuChatErrorDetail,
  WebGpuChatEventMap,
  WebGpuChatReadyDetail,
  WebGpuChatTokenDetail,
  WebGpuChatToolCallDetail,
} from './events.ts';
export { defineWebGpuChat, WebGpuChatElement };

/** Options of {@link mount}; each is also an attribute of `<webgpu-chat>` (kebab-case). */
export interface WebGpuChatOptions {
  /** GGUF URL for engines "webgpu", "wllama", "auto" (relative URLs resolve against the page); WebLLM id; remote model name. */
  model: string;
  /**
   * Backend: "webgpu" (default, our engine in a worker); "wllama" (llama.cpp's wasm build on the CPU);
   * "auto" (WebGPU on a hardware adapter, wllama without WebGPU, without an adapter or on a software
   * adapter such as SwiftShader: the `ready` event's `reason` says which and why); "remote" (needs
   * `baseUrl`) where the build has it; "webllm" is not available yet.
   */
  engine?: 'webgpu' | 'wllama' | 'auto' | 'webllm' | 'remote';
  /** wllama: URL of `wllama.wasm` (from `@wllama/wllama/esm/wasm/`, same version; default jsDelivr's copy). */
  wllamaWasm?: string;
  /** Base URL of an OpenAI-compatible server (engine "remote", or fallback "remote"). */
  baseUrl?: string;
  /** Model name on the remote server (default: `model` with engine "remote"; as a fallback, the first the server lists). */
  remoteModel?: string;
  /** Without WebGPU: "message" (default, say why) or "remote" (use `baseUrl` where that backend exists). */
  fallback?: 'message' | 'remote';
  /** System prompt prepended to every request. */
  systemPrompt?: string;
  /** 0 (default) = greedy. */
  temperature?: number;
  /** Maximum new tokens per answer (default 256). */
  maxTokens?: number;
  /** KV-cache size in tokens (default min(model's context, 2048)). */
  contextLength?: number;
  /**
   * KV-cache element type: 'f16' (default, half f32's memory), 'f32', 'q8_0' or 'q4_0' (ggml's blocks, 34 and
   * 18 bytes per 32 values; the model's head size must be a multiple of 32).
   */
  kvType?: 'f16' | 'f32' | 'q8_0' | 'q4_0';
  /**
   * Speculative decoding (engine "webgpu"): "lookup" (prompt lookup) or a draft model's GGUF URL, `hf:` file
   * or `synthetic:` name with the model's vocabulary. Greedy answers are unchanged, only faster.
   */
  draftModel?: string;
  /** Most tokens drafted per pass with `draftModel`, 1..16 (default: the engine's). */
  draftMax?: number;
  /** Heading text (default "Chat with MODEL"). */
  heading?: string;
  /** Placeholder of the message box. */
  placeholder?: string;
}

const ATTRS: Record<keyof WebGpuChatOptions, string> = {
  model: 'model',
  engine: 'engine',
  wllamaWasm: 'wllama-wasm',
  baseUrl: 'base-url',
  remoteModel: 'remote-model',
  fallback: 'fallback',
  systemPrompt: 'system-prompt',
  temperature: 'temperature',
  maxTokens: 'max-tokens',
  contextLength: 'context-length',
  kvType: 'kv-type',
  draftModel: 'draft-model',
  draftMax: 'draft-max',
  heading: 'heading',
  placeholder: 'placeholder',
};

/** The one name of `names` within 2 edits of `s` (case ignored: `maxToken`, `sytemPrompt`), if exactly one is. */
function nearest(s: string, names: readonly string[]): string | undefined {
  const a = s.toLowerCase();
  const close = names.filter((n) => editDistance(a, n.toLowerCase()) <= 2);
  return close.length === 1 ? close[0] : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/**
 * The attributes {@link mount} sets for `options`: `[attribute, value]` for each option given.
 * @throws EngineError('invalid_argument') for options that are not an object, or a key that is not an
 *   option (naming it, with the option it may mean: `max-tokens` or `max_tokens` → `maxTokens`), so a
 *   misspelt option is not silently ignored.
 */
export function mountAttributes(options: WebGpuChatOptions): [string, string][] {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new EngineError(
      'invalid_argument',
      'mount(target, options) needs an options object, e.g. { model: URL }',
    );
  const known = Object.keys(ATTRS);
  for (const k of Object.keys(options)) {
    if (known.includes(k)) continue;
    const camel = k.replace(/[-_]([a-z])/g, (_, c: string) => c.toUpperCase());
    const near = known.includes(camel) ? camel : nearest(k, known);
    const hint = near ? ` (did you mean ${JSON.stringify(near)}?)` : '';
    throw new EngineError(
      'invalid_argument',
      `mount() has no option ${JSON.stringify(k)}${hint}; it takes ${known.join(', ')}`,
    );
  }
  const out: [string, string][] = [];
  for (const [k, attr] of Object.entries(ATTRS) as [keyof WebGpuChatOptions, string][]) {
    const v = options[k];
    if (v !== undefined && v !== null) out.push([attr, String(v)]);
  }
  return out;
}

/**
 * Puts a chat widget into `target` (appended as its last child) and returns it. The element starts loading
 * its model at once; listen for `ready`, `token`, `done` and `error` on it. Remove it (`el.remove()`) to
 * release its engine.
 * @throws EngineError('invalid_argument') for an option it does not have ({@link mountAttributes}), before
 *   anything is created.
 */
export function mount(target: Element, options: WebGpuChatOptions): WebGpuChatElement {
  const attrs = mountAttributes(options);
  defineWebGpuChat();
  const chat = document.createElement('webgpu-chat') as WebGpuChatElement;
  for (const [attr, v] of attrs) chat.setAttribute(attr, v);
  target.append(chat);
  return chat;
}

/** Engines and workers alive on this page (for host pages' diagnostics and tests). */
export function debugStats(): {
  engines: number;
  created: number;
  disposed: number;
  refs: Record<string, number>;
  workers: { created: number; live: number };
} {
  return { ...sharedEngines.stats(), workers: { ...workerCounter } };
}

/** The engines this build can run: always "webgpu", "wllama" and "auto"; "remote" when the remote client is in the build. */
export function availableEngines(): string[] {
  return ['webgpu', 'wllama', 'auto', 'webllm', 'remote'].filter(isAvailable);
}

declare global {
  interface HTMLElementTagNameMap {
    'webgpu-chat': WebGpuChatElement;
  }
}

defineWebGpuChat();
