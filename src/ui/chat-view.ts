/**
 * The chat tab: talk to the loaded model through `Engine.chat` on the session's active backend (our engine
 * or WebLLM, which applies the model's own chat template), streamed, with a Stop button (the engine stays
 * loaded) and the last answer's decode speed with the KV depth it was measured at (the context the
 * conversation has filled), beside the first answer's, so a long conversation shows its speed at depth.
 * Built on chat/ as `<webgpu-chat>` is: the same conversation (oldest turns forgotten when it outgrows the
 * context, a failed answer's question taken out) and the same log markup; model output only ever goes in as
 * text (Text nodes / textContent), never as HTML.
 */

import {
  type AnswerSummary,
  answerLine,
  Conversation,
  speculativeWords,
  summarizeAnswer,
} from '../chat/conversation.ts';
import { ChatTranscript } from '../chat/transcript.ts';
import { contextAdvice, contextOverflowText, isEngineError } from '../core/errors.ts';
import type { DraftOptions } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { fmtCount } from '../util/format.ts';
import { field } from './dom.ts';
import { DraftChoice } from './draft-choice.ts';
import { clearFieldErrors, FieldReader, fieldErrorsOf, showFieldErrors } from './form-errors.ts';
import { PAGE_CONTEXT_ADVICE } from './kv-context.ts';
import { FieldError, readNumberField } from './number-field.ts';
import type { Session } from './session.ts';

export class ChatView {
  readonly element: HTMLElement;
  private readonly log: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly clearButton: HTMLButtonElement;
  private readonly maxTokens: HTMLInputElement;
  private readonly temperature: HTMLInputElement;
  /** Speculative decoding: none, prompt lookup or a draft model (our engine; src/ui/draft-choice.ts). */
  private readonly drafting: DraftChoice;
  private readonly draft: HTMLSelectElement;
  /** A JSON schema every answer must follow (structured output); empty: none. */
  private readonly schema: HTMLTextAreaElement;
  private readonly schemaStatus: HTMLElement;
  /** The structured-output section (opened when its schema is a field to fix, to show and focus it). */
  private readonly structured: HTMLDetailsElement;
  /** The settings that are wrong, all at once, under the Send bar (src/ui/form-errors.ts). */
  private readonly settingsError: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly speed: HTMLElement;
  private readonly conversation = new Conversation();
  private readonly transcript: ChatTranscript;
  /** The conversation's first answer with a decode speed, to compare later answers with. */
  private first: AnswerSummary | undefined;
  /** The drafting the first answer ran with ('lookup', 'draft NAME'), undefined for none. */
  private firstDrafting: string | undefined;
  private controller: AbortController | undefined;

  /** Asked to show the Benchmark tab (where models are loaded). */
  onNeedModel: (() => void) | undefined;

  constructor(private readonly session: Session) {
    this.log = h('div', {
      class: 'chat__log',
      role: 'log',
      'aria-live': 'polite',
      'aria-label': 'Conversation',
      tabindex: '0',
      'data-testid': 'chat-log',
    });
    this.transcript = new ChatTranscript(this.log, () => this.session.model?.id ?? 'Model');
    this.input = h('textarea', {
      id: 'chat-input',
      class: 'input textarea',
      rows: '3',
      placeholder: 'Write a message. Enter sends, Shift+Enter starts a new line.',
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      }
    });
    this.sendButton = h('button', { type: 'submit', class: 'button button--primary' }, 'Send');
    this.stopButton = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.controller?.abort() },
      'Stop',
    );
    this.clearButton = h('button', { type: 'button', class: 'button button--quiet' }, 'New conversation');
    this.clearButton.addEventListener('click', () => {
      this.conversation.clear();
      this.first = undefined;
      this.firstDrafting = undefined;
      this.transcript.clear();
      this.clearSpeed();
      clearFieldErrors(this.settingsError);
      this.refresh();
    });
    this.maxTokens = h('input', {
      type: 'number',
      id: 'chat-max-tokens',
      class: 'input input--num',
      value: '256',
      min: '1',
      max: '4096',
      inputmode: 'numeric',
    });
    this.temperature = h('input', {
      type: 'number',
      id: 'chat-temperature',
      class: 'input input--num',
      value: '0',
      min: '0',
      max: '2',
      step: '0.05',
      inputmode: 'decimal',
    });
    this.drafting = new DraftChoice(session, 'chat');
    this.draft = this.drafting.select;
    this.schema = h('textarea', {
      id: 'chat-json-schema',
      class: 'input textarea chat__schema',
      rows: '3',
      spellcheck: 'false',
      placeholder: '{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}',
    });
    this.schemaStatus = h('p', { class: 'status', id: 'chat-json-schema-status', 'aria-live': 'polite' });
    this.schema.addEventListener('change', () => this.checkSchema());
    this.speed = h('p', { class: 'status', role: 'status', 'data-testid': 'chat-speed' });
    const goLoad = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.onNeedModel?.() },
      'Choose a model',
    );
    this.notice = h(
      'div',
      { class: 'notice notice--info', 'data-testid': 'chat-no-model' },
      h('p', {}, 'No model is loaded. Load one in the Benchmark tab, then come back to talk to it.'),
      goLoad,
    );

    this.settingsError = h('div', {
      class: 'notice notice--warn chat__errors',
      role: 'alert',
      'data-testid': 'chat-error',
    });
    this.settingsError.hidden = true;
    this.structured = h(
      'details',
      { class: 'chat__structured' },
      h('summary', {}, 'Structured output (JSON schema)'),
      field(
        'JSON schema',
        this.schema,
        'Every answer is JSON valid against it (our engine: xgrammar); empty: free text.',
      ),
      this.schemaStatus,
    );

    // novalidate: the browser's own check stopped Send at the first setting out of its min/max (one
    // bubble, one field at a time); send() reads every setting and names all that are wrong at once.
    const form = h(
      'form',
      { class: 'chat__form', novalidate: '' },
      field('Message', this.input),
      h(
        'div',
        { class: 'chat__bar' },
        h('div', { class: 'actions' }, this.sendButton, this.stopButton, this.clearButton),
        h(
          'div',
          { class: 'chat__settings' },
          field('Max tokens', this.maxTokens),
          field('Temperature', this.temperature),
          field('Drafting', this.draft),
        ),
      ),
      this.settingsError,
      this.drafting.extra,
      this.structured,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });

    this.element = h(
      'section',
      { class: 'card chat', 'aria-labelledby': 'chat-card-heading' },
      h('h2', { id: 'chat-card-heading', class: 'visually-hidden' }, 'Conversation'),
      this.notice,
      this.log,
      this.speed,
      form,
    );
    session.addEventListener('change', () => this.refresh());
    this.refresh();
  }

  private refresh(): void {
    const model = this.session.model;
    const answering = this.session.task === 'chat';
    this.notice.hidden = Boolean(model);
    this.sendButton.disabled = !model || this.session.task !== undefined;
    this.stopButton.disabled = !answering;
    this.clearButton.disabled = answering || this.transcript.empty;
    this.element.dataset.state = answering ? 'answering' : 'idle';
  }

  /**
   * The schema box read: undefined when empty, else the schema object.
   * @throws FieldError (typed `invalid_argument`, naming the problem) for text that is not JSON or not an object.
   */
  private readSchema(): Record<string, unknown> | undefined {
    const text = this.schema.value.trim();
    if (!text) return undefined;
    let o: unknown;
    try {
      o = JSON.parse(text);
    } catch (e) {
      throw new FieldError(this.schema, `JSON schema: not JSON (${(e as Error).message})`);
    }
    if (typeof o !== 'object' || o === null || Array.isArray(o))
      throw new FieldError(this.schema, 'JSON schema: must be a JSON object, e.g. {"type": "object"}');
    return o as Record<string, unknown>;
  }

  /** Empties the speed line and the last answer's figures on it (its tooltip and KV depth). */
  private clearSpeed(): void {
    this.speed.textContent = '';
    this.speed.removeAttribute('title');
    delete this.speed.dataset.context;
  }

  /** Validates the schema box on change and says the result under it. */
  private checkSchema(): boolean {
    try {
      const schema = this.readSchema();
      this.schemaStatus.textContent = !schema
        ? ''
        : this.session.backend === 'wllama'
          ? 'The CPU engine (llama.cpp wasm) cannot follow a schema: choose WebGPU above to use it.'
          : 'Schema OK: answers will follow it.';
      this.schema.removeAttribute('aria-invalid');
      delete this.schemaStatus.dataset.state;
      return true;
    } catch (e) {
      this.schemaStatus.textContent = (e as Error).message;
      this.schemaStatus.dataset.state = 'error';
      this.schema.setAttribute('aria-invalid', 'true');
      return false;
    }
  }

  async send(): Promise<void> {
    const text = this.input.value.trim();
    if (!text || !this.session.model) return;
    // The settings first, every one read before any is said wrong, so that all the fields to fix are named
    // at once (under the Send bar, each marked, the first focused) before anything is sent.
    let temperature: number;
    let maxTokens: number;
    let schema: Record<string, unknown> | undefined;
    let drafting: DraftOptions | undefined;
    try {
      const fields = new FieldReader(this.input);
      maxTokens = fields.read(
        () => readNumberField(this.maxTokens, 'Max tokens', { integer: true, min: 1, max: 4096 }),
        0,
      );
      temperature = fields.read(
        () => readNumberField(this.temperature, 'Temperature', { min: 0, max: 2 }),
        0,
      );
      drafting = fields.read(() => this.drafting.request(), undefined);
      this.checkSchema(); // says a bad schema under the box too
      schema = fields.read(() => this.readSchema(), undefined);
      const webgpu = this.session.backend === 'webgpu';
      if (drafting && !webgpu)
        fields.add(this.draft, 'Drafting runs on our WebGPU engine only; choose None for this backend.');
      if (schema && this.session.backend === 'wllama')
        fields.add(
          this.schema,
          'JSON schema: structured output runs on our WebGPU engine (xgrammar), not on the CPU engine (llama.cpp wasm): choose WebGPU above or empty the schema',
        );
      fields.check();
    } catch (e) {
      const errors = fieldErrorsOf(e, this.input);
      // The schema's box is in a closed section: open it, so that its mark shows and it can take the focus.
      if (errors.some((f) => f.field === this.schema)) this.structured.open = true;
      // Said once, in the notice under Send (the speed line above the box repeated it).
      showFieldErrors(this.settingsError, errors);
      this.clearSpeed();
      return;
    }
    clearFieldErrors(this.settingsError);
    if (!this.session.begin('chat')) return;
    this.input.value = '';
    const question = this.transcript.user(text);
    const answer = this.transcript.assistant();
    const controller = new AbortController();
    this.controller = controller;
    this.speed.textContent = 'Answering…';
    try {
      const r = await this.conversation.answer(
        text,
        {
          maxTokens,
          temperature,
          contextLength: this.session.model?.info.contextLength,
          request: {
            ...(drafting ? { draft: drafting } : {}),
            ...(schema ? { responseFormat: { type: 'json_schema' as const, schema } } : {}),
          },
        },
        (req, onToken, signal) => this.session.engine.chat(req, onToken, signal),
        (e) => answer.append(e.text),
        controller.signal,
      );
      const s = summarizeAnswer(r, maxTokens);
      // A schema's answer pretty-printed and marked valid (JSON the constrained decoder produced), or
      // marked cut when it did not finish (max tokens, Stop).
      let jsonNote = '';
      if (schema && s.text) {
        try {
          answer.finish(s.finishReason, JSON.stringify(JSON.parse(s.text), null, 2), s.contextFull);
          answer.el.dataset.json = 'valid';
          jsonNote = 'Valid JSON (constrained to the schema) · ';
        } catch {
          answer.finish(s.finishReason, s.text, s.contextFull);
          answer.el.dataset.json = 'incomplete';
          jsonNote = 'Not complete JSON (the answer was cut) · ';
        }
      } else answer.finish(s.finishReason, s.text, s.contextFull);
      const spec = speculativeWords(s);
      const draftName = drafting?.type === 'model' ? `draft ${this.drafting.label()}` : 'lookup';
      const specNote = spec ? ` · ${draftName}: ${spec}` : '';
      // The conversation's first answer, to compare the speed of later (deeper) answers with, and the
      // drafting each ran with (the line says it where either drafted).
      const first = this.first;
      const firstDrafting = this.firstDrafting;
      if (s.tokensPerSecond !== null && !this.first) {
        this.first = s;
        this.firstDrafting = drafting ? draftName : undefined;
      }
      this.speed.textContent = `${jsonNote}${answerLine(s, {
        first,
        ttft: true,
        ...(drafting ? { drafting: draftName } : {}),
        ...(firstDrafting ? { firstDrafting } : {}),
      })}${specNote}`;
      if (s.outputTokens > 0) {
        this.speed.title = `Decode steps ran at KV depths ${fmtCount(s.promptTokens)}–${fmtCount(s.contextTokens - 1)}.`;
        this.speed.dataset.context = String(s.contextTokens);
      }
    } catch (e) {
      // An answer that wrote nothing leaves no empty bubble (the line below says why), as in the widget.
      if (answer.body.textContent) answer.finish('error');
      else answer.remove();
      question.unanswered();
      const message = e instanceof Error ? e.message : String(e);
      this.speed.textContent = `The model did not answer${isEngineError(e) ? ` (${e.code})` : ''}: ${
        // The Context select's advice where the error has the facts (our engine, wllama): a WebLLM model
        // has no such select, and its message has its own advice.
        isEngineError(e, 'context_overflow') && e.details?.contextLength !== undefined
          ? contextOverflowText(
              e,
              message,
              contextAdvice(this.session.model?.info, 'shorten the message', PAGE_CONTEXT_ADVICE),
            )
          : message
      }`;
      if (isEngineError(e, 'device_lost')) await this.session.resetEngine();
    } finally {
      this.controller = undefined;
      this.session.end('chat');
      this.input.focus();
    }
  }
}
