/**
 * The chat log's markup, shared by the page's Chat tab (ui/chat-view.ts) and `<webgpu-chat>`
 * (widget/element.ts): one `<article class="msg msg--ROLE" data-role=ROLE>` per turn with its speaker
 * (`.msg__who`), its text (`.msg__body`) and, for an answer that did not end by itself, a note
 * (`.msg__note`). `part` attributes (`message`, `user-message` / `assistant-message`, `message-who`,
 * `message-text`, `message-note`) let a page style the widget's shadow DOM. Model output and user text only
 * ever go in as text (Text nodes / textContent), never as HTML.
 */

import type { FinishReason } from '../core/types.ts';
import { h } from '../dom/h.ts';
import { finishNote } from './conversation.ts';

/** One turn on screen. */
export class ChatBubble {
  /** The turn's `<article>`; `data-finish` says how an answer ended ('stop', 'length', 'aborted', 'error'). */
  readonly el: HTMLElement;
  /** Its text. */
  readonly body: HTMLElement;

  constructor(
    private readonly transcript: ChatTranscript,
    role: 'user' | 'assistant',
    who: string,
    text: string,
  ) {
    this.body = h('div', { class: 'msg__body', part: 'message-text' });
    this.body.textContent = text;
    this.el = h(
      'article',
      { class: `msg msg--${role}`, part: `message ${role}-message`, 'data-role': role },
      h('p', { class: 'msg__who', part: 'message-who' }, who),
      this.body,
    );
  }

  /** Appends streamed text and keeps the log scrolled to the end. */
  append(text: string): void {
    if (text) this.body.append(text);
    this.transcript.scrollToEnd();
  }

  /** Marks the answer as being written (`aria-busy`, the caret the styles draw). */
  set busy(on: boolean) {
    if (on) this.el.setAttribute('aria-busy', 'true');
    else this.el.removeAttribute('aria-busy');
  }

  /**
   * Ends the answer: its final text (undefined keeps what streamed), `data-finish`, and the note of an
   * answer cut at max tokens or stopped.
   */
  finish(reason: FinishReason | 'error', text?: string): void {
    if (text !== undefined) this.body.textContent = text;
    this.el.dataset.finish = reason;
    const note = reason === 'error' ? undefined : finishNote(reason);
    if (note) this.el.append(h('p', { class: 'msg__note', part: 'message-note' }, note));
    this.busy = false;
  }
}

/** The log: turns in order, scrolled to the newest. */
export class ChatTranscript {
  /**
   * @param log the element that holds the turns (a `role="log"` container the view builds and labels).
   * @param assistantName the answering side's name, read when each answer starts (the model's id on the
   *   page, "Assistant" in the widget).
   */
  constructor(
    readonly log: HTMLElement,
    private readonly assistantName: () => string,
  ) {}

  /** Adds a user turn. */
  user(text: string): ChatBubble {
    return this.add(new ChatBubble(this, 'user', 'You', text));
  }

  /** Adds an empty, busy answer to stream into. */
  assistant(): ChatBubble {
    const b = this.add(new ChatBubble(this, 'assistant', this.assistantName(), ''));
    b.busy = true;
    return b;
  }

  /** Whether no turn is on screen. */
  get empty(): boolean {
    return this.log.childElementCount === 0;
  }

  /** Removes every turn. */
  clear(): void {
    this.log.replaceChildren();
  }

  /** Scrolls to the newest text. */
  scrollToEnd(): void {
    this.log.scrollTop = this.log.scrollHeight;
  }

  private add(b: ChatBubble): ChatBubble {
    this.log.append(b.el);
    this.scrollToEnd();
    return b;
  }
}
