/**
 * Streaming an answer that may contain tool calls (a chat with `tools`): the text before a call can be
 * shown as it comes, the call's markup never. The formats are model/tool-calls.ts's: Hermes / Qwen
 * (`<tool_call>{…}</tool_call>`, text may come before it) and Llama 3.x JSON (a call is the whole answer:
 * `{"name": …}`, optionally after `<|python_tag|>`). So: an answer that starts (after white space) with
 * `{` or `<|python_tag|>` is held whole; otherwise text streams up to a `<tool_call>` tag, and from there
 * on nothing more (the end of the answer says what it was: content and/or calls). A piece that could be the
 * start of a tag (`<tool_`) waits for the next token to tell. DOM-free; `<webgpu-chat>` uses it.
 */

const HERMES_TAG = '<tool_call>';
const PYTHON_TAG = '<|python_tag|>';

/** The length of the longest suffix of `s` that is a proper prefix of `tag` (0: none). */
function partialTagAtEnd(s: string, tag: string): number {
  for (let k = Math.min(s.length, tag.length - 1); k > 0; k--) if (tag.startsWith(s.slice(-k))) return k;
  return 0;
}

/** Feeds streamed text in, gets back the part that is safe to show (never a call's markup). */
export class ToolCallStreamGate {
  private pending = '';
  private started = false;
  private holding = false;

  /** Whether the text since some point is held as a possible call (nothing more will be released). */
  get held(): boolean {
    return this.holding;
  }

  /** Adds a token's text; returns what can be shown now ('' while it cannot tell). */
  push(text: string): string {
    if (this.holding) {
      this.pending += text;
      return '';
    }
    const s = this.pending + text;
    if (!this.started) {
      const t = s.trimStart();
      if (t === '' || (t.length < PYTHON_TAG.length && PYTHON_TAG.startsWith(t))) {
        this.pending = s;
        return '';
      }
      if (t.startsWith('{') || t.startsWith(PYTHON_TAG)) {
        this.holding = true;
        this.pending = s;
        return '';
      }
      this.started = true;
    }
    const at = s.indexOf(HERMES_TAG);
    if (at >= 0) {
      this.holding = true;
      this.pending = s.slice(at);
      return s.slice(0, at);
    }
    const k = partialTagAtEnd(s, HERMES_TAG);
    this.pending = s.slice(s.length - k);
    return s.slice(0, s.length - k);
  }

  /** At the end: what was waiting to be told apart and is plain text after all ('' when held as a call). */
  flush(): string {
    const out = this.holding ? '' : this.pending;
    this.pending = '';
    return out;
  }
}
