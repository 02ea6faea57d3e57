/**
 * The chat log's markup, shared by the page's Chat tab (ui/chat-view.ts) and `<webgpu-chat>`
 * (widget/element.ts): one `<article class="msg msg--ROLE" data-role=ROLE>` per turn with its speaker
 * (`.msg__who`), its text (`.msg__body`) and, for an answer that did not end by itself or a question
 * that got no answer, a note (`.msg__note`). `part` attributes (`message`, `user-message` /
 * `assistant-message`, `message-who`, `message-text`, `message-note`) let a page style the widget's shadow
 * DOM. Model output and user text only ever go in as text (Text nodes / textContent), never as HTML.
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
   * answer cut at max tokens, cut by the context's end (`contextFull`) or stopped.
   */
  finish(reason: FinishReason | 'error', text?: string, contextFull = false): void {
    if (text !== undefined) this.body.textContent = text;
    this.el.dataset.finish = reason;
    const note = reason === 'error' ? undefined : finishNote(reason, contextFull);
    const atEnd = this.transcript.atEnd;
    if (note) this.el.append(h('p', { class: 'msg__note', part: 'message-note' }, note));
    this.busy = false;
    // The note (and a final text longer than the streamed one) must not end below the view.
    if (atEnd) this.transcript.scrollToEnd();
  }

  /**
   * Marks a question whose answer failed (`data-unanswered`, a note): it stays on screen, to read or send
   * again, but left the conversation, so the model does not see it in later turns.
   */
  unanswered(): void {
    this.el.dataset.unanswered = 'true';
    this.el.append(
      h('p', { class: 'msg__note', part: 'message-note' }, 'Not answered: left out of the conversation.'),
    );
  }

  /** Takes the turn off the screen (an answer that failed before writing anything). */
  remove(): void {
    this.el.remove();
  }
}

/** How far from the end (px) still counts as at the end (rounding of fractional scroll positions). */
const END_SLACK_PX = 4;

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
  ) {
    log.addEventListener('scroll', () => {
      // The event of our own scroll comes a frame later, maybe after the log shrank (a notice above it):
      // where we put the view counts as the end.
      this.pinned =
        Math.abs(this.log.scrollTop - this.scrolledTo) <= 1 ||
        this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight <= END_SLACK_PX;
    });
  }

  /** Whether the view was at the end when last scrolled (by the reader or by {@link scrollToEnd}). */
  private pinned = true;
  /** Where {@link scrollToEnd} last put the view. */
  private scrolledTo = 0;

  /**
   * True while the reader is at the newest text: the view follows what is added, and a resize of the log
   * keeps its end in view ({@link keepEnd}). Scrolling up turns it off, back to the end on.
   */
  get atEnd(): boolean {
    return this.pinned;
  }

  /** After the log's box changed size (a resize, a line below it that wrapped): the end stays in view. */
  keepEnd(): void {
    if (this.pinned) this.scrollToEnd();
  }

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
    this.scrolledTo = this.log.scrollTop;
    this.pinned = true;
  }

  private add(b: ChatBubble): ChatBubble {
    this.log.append(b.el);
    this.scrollToEnd();
    return b;
  }
}
