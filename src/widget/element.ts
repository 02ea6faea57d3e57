/**
 * `<webgpu-chat>`: a chat box that runs a model in the browser. Shadow DOM; every piece of user text and
 * model output goes in through `textContent`, never as HTML. Several elements with the same engine + model
 * share one loaded engine ({@link sharedEngines}); an element removed from the page releases its share.
 */

import { answerLine, Conversation, speculativeWords, summarizeAnswer } from '../chat/conversation.ts';
import { ToolCallStreamGate } from '../chat/tool-stream.ts';
import { type ChatBubble, ChatTranscript } from '../chat/transcript.ts';
import { chooseBackend, type GpuLike } from '../core/backend-choice.ts';
import { contextAdvice, contextOverflowText, EngineError } from '../core/errors.ts';
import type {
  ChatMessage,
  ChatRequest,
  KvType,
  LoadProgress,
  ModelInfo,
  ResponseFormat,
  TokenEvent,
  ToolChoice,
  ToolDefinition,
} from '../core/types.ts';
import {
  DRAFT_LIMITS,
  describeRule,
  isKvType,
  KV_TYPES,
  type NumberRule,
  readRuleText,
  SAMPLING_RULES,
} from '../core/validate.ts';
import { h } from '../dom/h.ts';
import { fmtBytes } from '../util/format.ts';
import {
  type BackendSpec,
  backendFactory,
  type ChatBackend,
  describeError,
  isAvailable,
  NOT_AVAILABLE,
  WIDGET_ENGINES,
  type WidgetEngineKind,
  webGpuMissingReason,
} from './backends.ts';
import type { WebGpuChatDoneDetail, WebGpuChatEventMap } from './events.ts';
import { type EngineLease, EngineRegistry } from './registry.ts';
import { WIDGET_CSS } from './styles.ts';
import { retryWords, widgetWords } from './words.ts';

/** The request settings a turn adds (chat/conversation.ts TurnSettings.request). */
type TurnRequest = Pick<ChatRequest, 'draft' | 'responseFormat' | 'tools' | 'toolChoice'>;

/** The engines shared by every widget on the page. */
export const sharedEngines = new EngineRegistry<ChatBackend>();

/** Attributes whose change loads the model again. */
const RELOAD_ATTRS = [
  'model',
  'engine',
  'wllama-wasm',
  'base-url',
  'remote-model',
  'fallback',
  'context-length',
  'kv-type',
  'cache',
  'draft-model',
] as const;
const OBSERVED = [
  ...RELOAD_ATTRS,
  'system-prompt',
  'temperature',
  'max-tokens',
  'draft-max',
  'heading',
  'placeholder',
] as const;
const RELOAD_ON = new Set<string>(RELOAD_ATTRS);
/** Attributes each answer reads: checked at load (a bad one is "Bad settings") and again at each send. */
const GENERATION_ATTRS = new Set<string>(['temperature', 'max-tokens', 'draft-max']);

/** The rules of the numeric generation attributes (the engine API's, src/core/validate.ts). */
const TEMPERATURE_RULE: NumberRule = { ...SAMPLING_RULES.temperature, max: 2 };
const MAX_TOKENS_RULE: NumberRule = { integer: true, min: 1 };
const DRAFT_MAX_RULE: NumberRule = { integer: true, min: 1, max: DRAFT_LIMITS.draftMax };

/** What every answer is asked with, read from the attributes and properties ({@link WebGpuChatElement}). */
interface GenerationSettings {
  temperature: number;
  maxTokens: number;
  request: TurnRequest;
}

let instances = 0;

/**
 * `HTMLElement` where it exists; elsewhere (Node, a framework's server-side render) a stand-in class, so
 * that importing the widget does not throw there (the element is defined only where a DOM exists).
 */
const ElementBase: typeof HTMLElement =
  typeof HTMLElement !== 'undefined' ? HTMLElement : (class {} as unknown as typeof HTMLElement);

/** The custom element. Define it with {@link defineWebGpuChat} (the package entry does so on import). */
export class WebGpuChatElement extends ElementBase {
  static readonly observedAttributes = OBSERVED;

  private readonly root: ShadowRoot;
  private readonly titleEl: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly progressBox: HTMLElement;
  private readonly progressBar: HTMLProgressElement;
  private readonly progressText: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly log: HTMLElement;
  private readonly stats: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly clearButton: HTMLButtonElement;

  private lease: EngineLease<ChatBackend> | undefined;
  private loadedInfo: ModelInfo | undefined;
  /** The engine the current load runs (`auto` resolved), for the progress texts. */
  private runningEngine: WidgetEngineKind | undefined;
  private generation = 0;
  private controller: AbortController | undefined;
  private answering = false;
  /** The answer being written, so that a reload or an engine that stopped answering can end it. */
  private current: ChatBubble | undefined;
  /** Why the widget is loading again by itself (a lost GPU, an engine that stopped answering): shown while it does. */
  private reloadReason: string | undefined;
  private readonly turns = new Conversation();
  private readonly transcript: ChatTranscript;
  private startQueued = false;
  /** Keeps the newest text in view when the log changes size (a resize, the line under it wrapping). */
  private readonly logResize: ResizeObserver | undefined;

  /**
   * Typed listeners for the widget's events (`el.addEventListener('done', (e) => e.detail.text)`); any other
   * event type as on every element.
   */
  override addEventListener<K extends keyof WebGpuChatEventMap>(
    type: K,
    listener: (this: WebGpuChatElement, ev: WebGpuChatEventMap[K]) => unknown,
    options?: boolean | AddEventListenerOptions,
  ): void;
  override addEventListener<K extends keyof HTMLElementEventMap>(
    type: K,
    listener: (this: WebGpuChatElement, ev: HTMLElementEventMap[K]) => unknown,
    options?: boolean | AddEventListenerOptions,
  ): void;
  override addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ): void;
  override addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ): void {
    super.addEventListener(type, listener, options);
  }
  override removeEventListener<K extends keyof WebGpuChatEventMap>(
    type: K,
    listener: (this: WebGpuChatElement, ev: WebGpuChatEventMap[K]) => unknown,
    options?: boolean | EventListenerOptions,
  ): void;
  override removeEventListener<K extends keyof HTMLElementEventMap>(
    type: K,
    listener: (this: WebGpuChatElement, ev: HTMLElementEventMap[K]) => unknown,
    options?: boolean | EventListenerOptions,
  ): void;
  override removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | EventListenerOptions,
  ): void;
  override removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | EventListenerOptions,
  ): void {
    super.removeEventListener(type, listener, options);
  }

  constructor() {
    super();
    const id = ++instances;
    this.root = this.attachShadow({ mode: 'open', delegatesFocus: false });
    const style = h('style');
    style.textContent = WIDGET_CSS;

    const titleId = `wgc-title-${id}`;
    this.titleEl = h('h2', { class: 'title', part: 'title', id: titleId });
    this.statusEl = h('p', { class: 'status', part: 'status', role: 'status' });
    const header = h('div', { class: 'header', part: 'header' });
    header.append(this.titleEl, this.statusEl);

    this.progressBar = h('progress', { part: 'progress-bar', max: '1', 'aria-label': 'Loading the model' });
    this.progressText = h('span', { class: 'progress-text' });
    this.progressBox = h('div', { class: 'progress', part: 'progress' });
    this.progressBox.append(this.progressBar, this.progressText);
    this.progressBox.hidden = true;

    this.notice = h('p', { class: 'notice', part: 'notice', role: 'alert' });
    this.notice.hidden = true;

    this.log = h('div', {
      class: 'log',
      part: 'log',
      role: 'log',
      'aria-live': 'polite',
      'aria-relevant': 'additions text',
      'aria-label': 'Conversation',
      tabindex: '0',
      'data-empty': 'Ask something to start.',
    });
    this.transcript = new ChatTranscript(this.log, () => 'Assistant');
    this.logResize =
      typeof ResizeObserver !== 'undefined' ? new ResizeObserver(() => this.transcript.keepEnd()) : undefined;
    this.stats = h('p', { class: 'stats', part: 'stats', 'aria-live': 'polite' });

    const inputId = `wgc-input-${id}`;
    const label = h('label', { for: inputId, class: 'visually-hidden' }, 'Message');
    this.input = h('textarea', { id: inputId, part: 'input', rows: '2', enterkeyhint: 'send' });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      } else if (e.key === 'Escape' && this.answering) {
        e.preventDefault();
        this.stop();
      }
    });
    this.sendButton = h('button', { type: 'submit', class: 'primary', part: 'button send-button' }, 'Send');
    this.stopButton = h('button', { type: 'button', part: 'button stop-button' }, 'Stop');
    this.stopButton.addEventListener('click', () => this.stop());
    this.clearButton = h('button', { type: 'button', part: 'button clear-button' }, 'Clear');
    this.clearButton.addEventListener('click', () => this.clear());
    const buttons = h('div', { class: 'buttons' });
    buttons.append(this.sendButton, this.stopButton, this.clearButton);
    const form = h('form', { class: 'form', part: 'form' });
    form.append(label, this.input, buttons);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });

    const container = h('section', { class: 'root', part: 'container', 'aria-labelledby': titleId });
    container.append(header, this.progressBox, this.notice, this.log, this.stats, form);
    this.root.append(style, container);
    this.renderStatic();
    this.refresh();
  }

  // ---- options (attributes, mirrored as properties) ----

  /** A property set to undefined (or null) removes its attribute: it wrote the text "undefined". */
  private setOrRemove(name: string, v: string | number | null | undefined): void {
    if (v === undefined || v === null) this.removeAttribute(name);
    else this.setAttribute(name, String(v));
  }

  /** GGUF URL (engine webgpu), WebLLM model id (webllm) or model name (remote). */
  get model(): string {
    return this.getAttribute('model') ?? '';
  }
  set model(v: string | undefined) {
    this.setOrRemove('model', v);
  }
  get engine(): WidgetEngineKind {
    return (this.getAttribute('engine') ?? 'webgpu') as WidgetEngineKind;
  }
  set engine(v: WidgetEngineKind | undefined) {
    this.setOrRemove('engine', v);
  }
  get systemPrompt(): string {
    return this.getAttribute('system-prompt') ?? '';
  }
  set systemPrompt(v: string | undefined) {
    this.setOrRemove('system-prompt', v);
  }
  /** 0 (default) = greedy. */
  get temperature(): number {
    const t = Number(this.getAttribute('temperature') ?? 0);
    return Number.isFinite(t) && t > 0 ? Math.min(t, 2) : 0;
  }
  set temperature(v: number | undefined) {
    this.setOrRemove('temperature', v);
  }
  /** Default 256. */
  get maxTokens(): number {
    const n = Math.round(Number(this.getAttribute('max-tokens') ?? 256));
    return Number.isFinite(n) && n >= 1 ? n : 256;
  }
  set maxTokens(v: number | undefined) {
    this.setOrRemove('max-tokens', v);
  }
  /**
   * Speculative decoding (engine="webgpu"): `lookup` (prompt lookup, no second model) or a draft model's
   * GGUF URL, `hf:` file or `synthetic:` name (a smaller model with the same vocabulary, loaded beside the
   * model). Greedy answers are the same as without it, only faster. Empty: none.
   */
  get draftModel(): string {
    return this.getAttribute('draft-model') ?? '';
  }
  set draftModel(v: string) {
    if (v) this.setAttribute('draft-model', v);
    else this.removeAttribute('draft-model');
  }
  /** Most tokens drafted per pass with draft-model, 1..16 (default: the engine's, 8 for lookup, 4 for a model). */
  get draftMax(): number | undefined {
    const v = this.getAttribute('draft-max');
    return v === null ? undefined : Number(v);
  }
  set draftMax(v: number | undefined) {
    this.setOrRemove('draft-max', v);
  }
  /**
   * Structured output for every answer (a property only): `{type: 'json_schema', schema}`,
   * `{type: 'json_object'}` or `{type: 'grammar', grammar}`, as the engine API's `responseFormat`. The
   * widget build has no grammar compiler: engine="webgpu" answers with an `unsupported` error shown in the
   * widget; engine="remote" sends it to the server as `response_format` (docs/widget.md).
   */
  responseFormat: ResponseFormat | undefined = undefined;
  /**
   * Functions the model may call (a property only; OpenAI's `tools`). The calls come as a `toolcall` event
   * (OpenAI-shaped `tool_calls`) before `done`, and stay in the conversation.
   */
  tools: ToolDefinition[] | undefined = undefined;
  /** With {@link tools}: OpenAI's `tool_choice` (default 'auto'). */
  toolChoice: ToolChoice | undefined = undefined;
  /** The model's facts once loaded. */
  get modelInfo(): ModelInfo | undefined {
    return this.loadedInfo;
  }
  /** The conversation so far (a copy). */
  get conversation(): ChatMessage[] {
    return this.turns.messages.map((m) => ({ ...m }));
  }
  /** 'loading' | 'ready' | 'answering' | 'error' | 'idle'. */
  get state(): string {
    return this.dataset.state ?? 'idle';
  }

  // ---- lifecycle ----

  connectedCallback(): void {
    this.logResize?.observe(this.log);
    this.queueStart();
  }

  disconnectedCallback(): void {
    this.logResize?.disconnect();
    // A move within the page (disconnect + connect in one task) keeps the engine.
    queueMicrotask(() => {
      if (!this.isConnected) this.shutdown();
    });
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null): void {
    if (old === value) return;
    this.renderStatic();
    // A generation setting fixed after a load refused for it: load again.
    const retry = GENERATION_ATTRS.has(name) && this.state === 'error' && !this.lease;
    if ((RELOAD_ON.has(name) || retry) && this.isConnected && (this.lease || this.state !== 'idle')) {
      this.shutdown();
      this.queueStart();
    }
  }

  private queueStart(): void {
    if (this.startQueued) return;
    this.startQueued = true;
    // Let `mount()` and parsers set every attribute first.
    queueMicrotask(() => {
      this.startQueued = false;
      if (this.isConnected && !this.lease && this.state !== 'loading') void this.start();
    });
  }

  private shutdown(): void {
    this.generation++;
    this.controller?.abort();
    // An answer cut by the reload ends here: its own end is ignored now (a later generation), and a
    // terminated worker may never send it. It stayed "Answering…", Send and Clear disabled for good.
    if (this.answering) {
      this.current?.finish('aborted');
      this.current = undefined;
      this.answering = false;
      delete this.dataset.answering;
      this.stats.textContent = '';
    }
    this.lease?.release();
    this.lease = undefined;
    this.loadedInfo = undefined;
    this.setState('idle');
  }

  private setState(s: string): void {
    this.dataset.state = s;
    this.refresh();
  }

  private emit<K extends keyof WebGpuChatEventMap>(type: K, detail: WebGpuChatEventMap[K]['detail']): void {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
  }

  /**
   * A numeric attribute read strictly (the engine API's rules: `temperature="abc"` is an error, not
   * greedy), or `fallback` when the attribute is absent.
   * @throws EngineError('invalid_argument') `the NAME attribute must be …, got "…"`.
   */
  private numberAttr(name: string, fallback: number | undefined, rule: NumberRule): number | undefined {
    const v = this.getAttribute(name);
    if (v === null) return fallback;
    const n = readRuleText(v.trim(), rule);
    if (n === undefined) {
      throw new EngineError(
        'invalid_argument',
        `the ${name} attribute must be ${describeRule(rule)}, got ${JSON.stringify(v)}`,
      );
    }
    return n;
  }

  /**
   * The generation attributes and properties read and checked, one rule for the load and for each send
   * (attributes can change after the load).
   * @throws EngineError('invalid_argument') naming the attribute.
   */
  private generationSettings(): GenerationSettings {
    const temperature = this.numberAttr('temperature', 0, TEMPERATURE_RULE)!;
    const maxTokens = this.numberAttr('max-tokens', 256, MAX_TOKENS_RULE)!;
    const draftMax = this.numberAttr('draft-max', undefined, DRAFT_MAX_RULE);
    const draft = this.draftModel.trim();
    if (draftMax !== undefined && !draft)
      throw new EngineError('invalid_argument', 'the draft-max attribute needs a draft-model attribute');
    const request: TurnRequest = {};
    if (draft)
      request.draft = {
        type: draft === 'lookup' ? 'lookup' : 'model',
        ...(draftMax !== undefined ? { draftMax } : {}),
      };
    if (this.responseFormat) request.responseFormat = this.responseFormat;
    if (this.tools?.length) {
      request.tools = this.tools;
      if (this.toolChoice) request.toolChoice = this.toolChoice;
    }
    return { temperature, maxTokens, request };
  }

  /** The load refused for its settings: "Bad settings", the message box disabled, an `error` event. */
  private badSettings(code: string, message: string): void {
    this.setState('error');
    this.statusEl.textContent = 'Bad settings';
    this.fail('load', code, message);
  }

  private fail(phase: 'load' | 'chat', code: string, said: string): void {
    const message = widgetWords(said);
    this.notice.textContent = message;
    this.notice.hidden = false;
    this.notice.dataset.code = code;
    this.emit('error', { code, message, phase });
  }

  private async start(): Promise<void> {
    const gen = ++this.generation;
    this.notice.hidden = true;
    const again = this.reloadReason;
    this.reloadReason = undefined;
    if (again) {
      this.notice.textContent = `${again} Loading the model again…`;
      this.notice.hidden = false;
    }
    this.progressBox.hidden = true;
    let engine = this.engine;
    const model = this.model;
    // Two-valued attributes: a value that is neither was taken as the default without a word.
    for (const [name, values] of [
      ['cache', ['on', 'off']],
      ['fallback', ['message', 'remote']],
    ] as const) {
      const v = this.getAttribute(name);
      if (v !== null && !(values as readonly string[]).includes(v.trim())) {
        this.badSettings(
          'invalid_argument',
          `the ${name} attribute must be ${values.map((x) => `"${x}"`).join(' or ')}, got ${JSON.stringify(v)}`,
        );
        return;
      }
    }
    if (!(WIDGET_ENGINES as readonly string[]).includes(engine)) {
      this.badSettings(
        'invalid_argument',
        `the engine attribute must be one of ${WIDGET_ENGINES.join(', ')}, got ${JSON.stringify(engine)}`,
      );
      return;
    }
    if (!model && engine !== 'remote') {
      this.setState('error');
      this.statusEl.textContent = 'No model';
      this.fail('load', 'invalid_argument', 'No model: set the model attribute (a GGUF URL).');
      return;
    }
    this.setState('loading');
    this.statusEl.textContent = 'Checking WebGPU…';
    let reason: string | undefined;
    if (engine === 'auto') {
      const choice = await chooseBackend((navigator as { gpu?: GpuLike }).gpu);
      if (gen !== this.generation) return;
      engine = choice.backend;
      reason = choice.reason;
      if (engine === 'wllama') {
        this.notice.textContent = `${reason[0].toUpperCase()}${reason.slice(1)}.`;
        this.notice.hidden = false;
      }
    }
    this.runningEngine = engine;
    if ((engine === 'webgpu' || engine === 'webllm') && isAvailable(engine)) {
      const why = await webGpuMissingReason();
      if (gen !== this.generation) return;
      if (why) {
        const fallback = this.getAttribute('fallback') ?? 'message';
        if (fallback === 'remote' && this.getAttribute('base-url') && isAvailable('remote')) {
          engine = 'remote';
          this.notice.textContent = `Using the remote server: ${why}.`;
          this.notice.hidden = false;
        } else {
          this.setState('error');
          this.statusEl.textContent = 'Unavailable';
          const extra =
            fallback === 'remote'
              ? isAvailable('remote')
                ? ' The remote fallback needs a base-url attribute.'
                : ' The remote fallback is not available in this build.'
              : '';
          this.fail(
            'load',
            'webgpu_unavailable',
            `This chat runs the model on your GPU, but ${why}.${extra} Try a recent Chrome or Edge.`,
          );
          return;
        }
      }
    }
    let contextLength: number | undefined;
    let kvType: KvType | undefined;
    try {
      contextLength = this.numberAttr('context-length', undefined, { integer: true, min: 1 });
      const kv = this.getAttribute('kv-type');
      if (kv !== null && !isKvType(kv.trim()))
        throw new EngineError(
          'invalid_argument',
          `the kv-type attribute must be one of ${KV_TYPES.join(', ')}, got ${JSON.stringify(kv)}`,
        );
      kvType = kv === null ? undefined : (kv.trim() as KvType);
      this.generationSettings();
    } catch (e) {
      const d = describeError(e);
      this.badSettings(d.code, d.message);
      return;
    }
    const draftModel = this.draftModel.trim();
    if (draftModel && engine !== 'webgpu') {
      this.badSettings(
        'unsupported',
        `draft-model (speculative decoding) needs engine="webgpu"; the ${engine} engine has none: remove the attribute.`,
      );
      return;
    }
    const spec: BackendSpec = {
      ...(draftModel && draftModel !== 'lookup' ? { draft: draftModel } : {}),
      engine,
      // Falling back to a server: its model is remote-model (or the first it lists), not the GGUF URL.
      model:
        engine === 'remote'
          ? (this.getAttribute('remote-model') ?? (this.engine === 'remote' ? model : ''))
          : model,
      baseUrl: this.getAttribute('base-url') ?? undefined,
      contextLength,
      kvType,
      // Keep the GGUF in the site's model library (OPFS) unless cache="off" (webgpu and wllama engines).
      cache: this.getAttribute('cache') !== 'off',
      wasmUrl: this.getAttribute('wllama-wasm') ?? undefined,
    };
    const key = EngineRegistry.key(
      spec.engine,
      [
        spec.baseUrl ?? '',
        spec.model,
        spec.contextLength ?? '',
        spec.kvType ?? '',
        spec.cache ? '' : 'no-cache',
        spec.engine === 'wllama' ? (spec.wasmUrl ?? '') : '',
        spec.draft ? `draft=${spec.draft}` : '',
      ]
        .join(' ')
        .trim(),
    );
    this.statusEl.textContent = 'Loading…';
    this.showProgress(undefined);
    const lease = sharedEngines.acquire(
      key,
      backendFactory(spec),
      (p) => {
        if (gen === this.generation) this.showProgress(p);
      },
      () => {
        // Another widget on this engine found it dead (a lost GPU, a worker gone) and loads a fresh one:
        // join it now, not at this widget's next message (which would fail once). An answer running here
        // fails by itself and reloads.
        if (gen !== this.generation || this.answering) return;
        this.reload('Another chat on this page lost the engine it shared with this one.');
      },
    );
    this.lease = lease;
    try {
      const loaded = await lease.ready;
      if (gen !== this.generation) return;
      const info: ModelInfo = reason
        ? { ...loaded, backend: spec.engine as 'webgpu' | 'wllama', backendReason: reason }
        : loaded;
      this.loadedInfo = info;
      this.progressBox.hidden = true;
      this.statusEl.textContent = 'Ready';
      if (again) this.notice.textContent = `${again} The model is loaded again.`;
      this.renderStatic();
      this.setState('ready');
      this.emit('ready', {
        engine: spec.engine,
        ...(reason ? { reason } : {}),
        model: spec.model,
        name: this.modelName(),
        info,
      });
    } catch (e) {
      if (gen !== this.generation) return;
      lease.release();
      this.lease = undefined;
      this.progressBox.hidden = true;
      this.setState('error');
      const { code, message } = describeError(e);
      this.statusEl.textContent = code === NOT_AVAILABLE ? 'Unavailable' : 'Failed to load';
      this.fail('load', code, `Loading the model failed: ${message}`);
    }
  }

  private showProgress(p: LoadProgress | undefined): void {
    this.progressBox.hidden = false;
    if (!p || p.bytesTotal <= 0) {
      this.progressBar.removeAttribute('value');
      this.progressText.textContent = p?.phase === 'compile' ? 'Preparing the GPU…' : 'Starting…';
      return;
    }
    const f = Math.min(1, p.bytesDone / p.bytesTotal);
    this.progressBar.value = f;
    this.progressText.textContent =
      p.phase === 'download'
        ? /cached copy/.test(p.note ?? '')
          ? 'Using the copy kept in this browser'
          : `Downloading ${fmtBytes(p.bytesDone)} of ${fmtBytes(p.bytesTotal)}${retryWords(p.note)}`
        : p.phase === 'verify'
          ? `Checking ${Math.round(f * 100)}%`
          : p.phase === 'fetch'
            ? `Reading ${fmtBytes(p.bytesDone)} of ${fmtBytes(p.bytesTotal)}`
            : p.phase === 'upload'
              ? this.runningEngine === 'wllama'
                ? `Starting llama.cpp on the CPU ${Math.round(f * 100)}%`
                : `Copying to the GPU ${Math.round(f * 100)}%`
              : `Preparing the GPU ${p.bytesDone} of ${p.bytesTotal}`;
  }

  private renderStatic(): void {
    this.titleEl.textContent =
      this.getAttribute('heading') ?? (this.loadedInfo ? `Chat with ${this.modelName()}` : 'Chat');
    this.refresh();
  }

  /** A short name for the model: the GGUF file's name for URLs (general.name is often just "llama"). */
  private modelName(): string {
    if (this.engine === 'webgpu' || this.engine === 'wllama' || this.engine === 'auto') {
      const file = this.model.split(/[?#]/)[0].split('/').pop() ?? '';
      let base = file;
      try {
        base = decodeURIComponent(file);
      } catch {}
      base = base.replace(/\.gguf$/i, '');
      if (base) return base;
    }
    return this.loadedInfo?.name ?? this.model;
  }

  private refresh(): void {
    const state = this.dataset.state;
    const ready = state === 'ready';
    // Text typed before the model is ready could not be sent: the box is disabled until then, and says why.
    this.input.disabled = state === 'loading' || state === 'error';
    this.input.placeholder =
      state === 'loading'
        ? 'Loading the model…'
        : state === 'error'
          ? 'Not available: see the message above.'
          : (this.getAttribute('placeholder') ?? 'Write a message. Enter sends, Shift+Enter adds a line.');
    this.sendButton.disabled = !ready || this.answering;
    this.stopButton.disabled = !this.answering;
    this.clearButton.disabled = this.answering || this.transcript.empty;
  }

  /** Sends `text` (default: what is in the input box). Resolves with the answer, or undefined when not sent. */
  async send(text?: string): Promise<WebGpuChatDoneDetail | undefined> {
    const content = (text ?? this.input.value).trim();
    const lease = this.lease;
    if (!content || !lease || this.answering || this.dataset.state !== 'ready') return undefined;
    // Checked at load too; again here, as attributes can change after it. Bad settings are an error shown
    // in the widget, before anything is sent (the message stays typed).
    let settings: GenerationSettings;
    try {
      settings = this.generationSettings();
    } catch (e) {
      const d = describeError(e);
      this.fail('chat', d.code, d.message);
      return undefined;
    }
    if (text === undefined) this.input.value = '';
    const { temperature, maxTokens, request } = settings;
    const gen = this.generation;
    this.answering = true;
    this.notice.hidden = true;
    const question = this.transcript.user(content);
    const answer = this.transcript.assistant();
    this.current = answer;
    const controller = new AbortController();
    this.controller = controller;
    this.stats.textContent = 'Answering…';
    this.setState('ready');
    this.dataset.answering = 'true';
    let streamed = '';
    // With tools, a call's markup is never streamed: the text before it is (chat/tool-stream.ts).
    const gate = request.tools && request.toolChoice !== 'none' ? new ToolCallStreamGate() : undefined;
    const onToken = (t: TokenEvent) => {
      if (gen !== this.generation) return;
      const text = gate ? gate.push(t.text) : t.text;
      streamed += text;
      if (text) answer.append(text);
      this.emit('token', { tokenId: t.tokenId, text, answer: streamed, tMs: t.tMs });
    };
    try {
      const r = await this.turns.answer(
        content,
        {
          maxTokens,
          temperature,
          system: this.systemPrompt,
          request,
          contextLength: this.loadedInfo?.contextLength,
        },
        (req, onT, signal) => lease.run((engine) => engine.chat(req, onT, signal)),
        onToken,
        controller.signal,
      );
      if (gen !== this.generation) return undefined;
      const s = summarizeAnswer(r, maxTokens);
      // Tool calls: in the log as text (never as HTML) after what was written, and to the page as
      // OpenAI's tool_calls (a copy: listeners cannot change the conversation's).
      const calls = r?.toolCalls ?? [];
      const callText = calls.map((c) => `${c.function.name}(${c.function.arguments})`).join('\n');
      answer.finish(
        s.finishReason,
        calls.length ? [s.text, callText].filter(Boolean).join('\n') : s.text,
        s.contextFull,
      );
      if (calls.length)
        this.emit('toolcall', {
          toolCalls: calls.map((c) => ({ ...c, function: { ...c.function } })),
          text: s.text,
        });
      const spec = speculativeWords(s);
      this.stats.textContent = `${answerLine(s)}${spec ? ` · ${spec}` : ''}`;
      // The line may wrap and shrink the log: its end stays in view (the ResizeObserver acts a frame later).
      this.transcript.keepEnd();
      const detail: WebGpuChatDoneDetail = s;
      this.emit('done', detail);
      return detail;
    } catch (e) {
      if (gen !== this.generation) return undefined;
      // The question stays on screen but left the conversation, so the next turn is not built on it; an
      // answer that wrote nothing leaves no empty bubble (the notice says why).
      if (answer.body.textContent) answer.finish('error');
      else answer.remove();
      question.unanswered();
      this.current = undefined;
      const { code, message } = describeError(e);
      this.stats.textContent = '';
      this.fail(
        'chat',
        code,
        `No answer (${code}): ${code === 'context_overflow' ? widgetContextMessage(e, message, this.loadedInfo) : message}`,
      );
      // A lost GPU takes the engine with it: load again on a new one (a fresh engine, not the shared dead
      // one), so the next message is answered. The widget said "Ready" and failed every message after.
      if (code === 'device_lost') this.reload(this.notice.textContent ?? '');
      return undefined;
    } finally {
      answer.busy = false;
      if (this.current === answer) this.current = undefined;
      if (this.controller === controller) this.controller = undefined;
      if (gen === this.generation) {
        this.answering = false;
        delete this.dataset.answering;
        this.refresh();
        // Stop is disabled now: keep the keyboard user in the widget.
        if (this.root.activeElement === this.stopButton) this.input.focus();
      }
    }
  }

  /**
   * Stops the answer being written (what was written stays). An engine that does not end it within
   * {@link STOP_GRACE_MS} (a worker that died) is given up: the answer ends here and the model loads again.
   */
  stop(): void {
    const c = this.controller;
    if (!c) return;
    c.abort();
    const gen = this.generation;
    setTimeout(() => {
      if (this.controller !== c || gen !== this.generation || !this.answering) return;
      this.reload(
        `The engine did not stop within ${STOP_GRACE_MS / 1000} s of Stop (its worker may have ended).`,
      );
    }, STOP_GRACE_MS);
  }

  /** Gives up the engine (the next load makes a fresh one, not the shared one) and loads again, saying why. */
  private reload(reason: string): void {
    this.lease?.discard();
    this.reloadReason = reason;
    this.shutdown();
    this.queueStart();
  }

  /** Starts a new conversation. */
  clear(): void {
    if (this.answering) return;
    this.turns.clear();
    this.transcript.clear();
    this.stats.textContent = '';
    this.notice.hidden = true;
    this.refresh();
    this.input.focus();
  }
}

/**
 * How long Stop waits for the engine to end the answer before giving the engine up (and loading the model
 * again): long enough for one prefill batch of a large model on a slow GPU, which Stop waits out.
 */
export const STOP_GRACE_MS = 10_000;

/**
 * A context overflow in the widget's words: its context is the `context-length` attribute, which is no
 * help once the context is the model's most.
 * @param info the loaded model's context and training context (ModelInfo), where known.
 */
export function widgetContextMessage(
  e: unknown,
  message: string,
  info?: { contextLength: number; trainedContextLength?: number },
): string {
  return contextOverflowText(
    e,
    message,
    contextAdvice(info, 'shorten the message', 'set a larger context-length attribute on the widget'),
  );
}

/**
 * Registers `<webgpu-chat>` (or another tag name) once. Does nothing where custom elements do not exist
 * (Node, server-side rendering).
 */
export function defineWebGpuChat(tag = 'webgpu-chat'): void {
  if (typeof customElements === 'undefined' || typeof HTMLElement === 'undefined') return;
  if (customElements.get(tag)) return;
  const taken = customElements.getName?.(WebGpuChatElement);
  customElements.define(tag, taken ? class extends WebGpuChatElement {} : WebGpuChatElement);
}
