/**
 * Chat templates: renders a model's `tokenizer.chat_template` (Jinja, as Hugging Face and llama.cpp render
 * it) with `@huggingface/jinja`, and turns the result into prompt tokens by llama.cpp's rules.
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import { EngineError } from '../core/errors.ts';
import type { ChatMessage } from '../core/types.ts';
import { checkPromptLength } from './tokenizer/prompt-bound.ts';
import type { Tokenizer } from './tokenizer/types.ts';
import { templateMessages } from './tool-calls.ts';

/** Options for {@link renderChat}. */
export interface RenderChatOptions {
  /** Append the assistant turn's header, so that the model writes the reply; default true. */
  addGenerationPrompt?: boolean;
  /** `bos_token` in the template (the BOS token's text, e.g. '<|begin_of_text|>'); default ''. */
  bosToken?: string;
  /** `eos_token` in the template; default ''. */
  eosToken?: string;
  /** More template variables (e.g. `enable_thinking`, `tools`, `date_string`). */
  variables?: Record<string, unknown>;
}

const cache = new Map<string, Template>();

function compile(source: string): Template {
  let t = cache.get(source);
  if (!t) {
    try {
      t = new Template(source);
    } catch (e) {
      throw new EngineError(
        'unsupported_model',
        `the model's chat template could not be parsed: ${(e as Error).message}`,
        { cause: e },
      );
    }
    if (cache.size > 16) cache.clear();
    cache.set(source, t);
  }
  return t;
}

/**
 * Steps a chat template may take: one per node the interpreter evaluates, plus one per item of each list
 * it makes (`range(n)` is charged before it is made). A real template takes tens of steps per message
 * (Llama 3.1's: 21, Qwen3's: 48 for 100 short messages), so the budget is {@link TEMPLATE_BASE_STEPS}
 * plus {@link TEMPLATE_STEPS_PER_MESSAGE} per message; the interpreter takes about 0.25–1 M steps/s, so a
 * hostile template ends within a second or so.
 */
export const TEMPLATE_BASE_STEPS = 200_000;
/** See {@link TEMPLATE_BASE_STEPS}. */
export const TEMPLATE_STEPS_PER_MESSAGE = 1_000;
/**
 * Characters a chat template may make, counted over every string value it produces (so text nested in
 * blocks counts once per level): {@link TEMPLATE_BASE_CHARS} plus {@link TEMPLATE_CHARS_PER_INPUT_CHAR}
 * per character of the messages and variables. A string doubled 27 times (134 M characters, ~3 GB as the
 * template library concatenates it) ends at the budget instead.
 */
export const TEMPLATE_BASE_CHARS = 8 * 1024 * 1024;
/** See {@link TEMPLATE_BASE_CHARS}. */
export const TEMPLATE_CHARS_PER_INPUT_CHAR = 16;

/** What the render running now may still spend; undefined outside {@link renderChat}. */
interface TemplateBudget {
  steps: number;
  chars: number;
  readonly maxSteps: number;
  readonly maxChars: number;
  /** Values already charged (a variable read twice is the same value). */
  readonly seen: WeakSet<object>;
}
let budget: TemplateBudget | undefined;

function overBudget(b: TemplateBudget, what: 'steps' | 'chars'): EngineError {
  const n = (x: number) => x.toLocaleString('en-US');
  return new EngineError(
    'unsupported_model',
    what === 'steps'
      ? `the model's chat template did not finish within ${n(b.maxSteps)} steps (a loop far longer than ` +
          "a chat needs: a broken or hostile template); it was stopped. Use the engine's generate with a prompt, or a model with another template"
      : `the model's chat template made more than ${n(b.maxChars)} characters (far more than the messages ` +
          "need: a broken or hostile template); it was stopped. Use the engine's generate with a prompt, or a model with another template",
  );
}

/** Charges `steps` to the running render. @throws EngineError('unsupported_model') past its budget. */
function charge(steps: number, chars = 0): void {
  const b = budget;
  if (!b) return;
  b.steps += steps;
  b.chars += chars;
  if (b.steps > b.maxSteps) throw overBudget(b, 'steps');
  if (b.chars > b.maxChars) throw overBudget(b, 'chars');
}

// @huggingface/jinja has no step limit: its Interpreter's evaluate (called for every node, statement and
// expression) is wrapped once to charge the render in progress; outside renderChat it only forwards.
type Evaluate = (
  this: Interpreter,
  ...args: Parameters<Interpreter['evaluate']>
) => ReturnType<Interpreter['evaluate']>;
const proto = Interpreter.prototype as unknown as { evaluate: Evaluate; __budgeted?: true };
if (!proto.__budgeted) {
  const evaluate = proto.evaluate;
  proto.evaluate = function (statement, environment) {
    if (!budget) return evaluate.call(this, statement, environment);
    charge(1);
    const v = evaluate.call(this, statement, environment);
    const b = budget;
    if (b && typeof v === 'object' && v !== null && !b.seen.has(v)) {
      b.seen.add(v);
      if (typeof v.value === 'string') charge(0, v.value.length);
      else if (Array.isArray(v.value)) charge(v.value.length);
    }
    return v;
  };
  proto.__budgeted = true;
}

// Its global `range` makes the whole list before anything can count it, and a render's globals cannot be
// given (they are set up inside Template.render, and a variable of the same name is refused): while a
// render is budgeted, Environment.set puts boundedRange in its place.
const envProto = Environment.prototype as unknown as {
  set: (name: string, value: unknown) => unknown;
  __budgeted?: true;
};
if (!envProto.__budgeted) {
  const set = envProto.set;
  envProto.set = function (name, value) {
    return set.call(this, name, budget && name === 'range' ? boundedRange : value);
  };
  envProto.__budgeted = true;
}

/** Python's `range`, charging its length before the list is made (the library's makes it first). */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (![start, stop, step].every(Number.isInteger)) throw new Error('range() takes integers');
  if (step === 0) throw new Error('range() step must not be zero');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  charge(n);
  return Array.from({ length: n }, (_, i) => start + i * step);
}

/**
 * Renders a chat template for `messages` (Hugging Face's `apply_chat_template(tokenize=False)`), within a
 * budget of steps ({@link TEMPLATE_BASE_STEPS}) and characters ({@link TEMPLATE_BASE_CHARS}): the template
 * comes from the model file, and a loop of 10^10 steps or a string doubled past memory would otherwise
 * hang or crash the page, the worker or Node.
 * @throws EngineError('unsupported_model') when the template does not parse or runs past its budget;
 *   EngineError('invalid_argument') when rendering fails (e.g. the template's `raise_exception` for an
 *   unsupported role order).
 */
export function renderChat(
  template: string,
  messages: readonly ChatMessage[],
  options: RenderChatOptions = {},
): string {
  const t = compile(template);
  const inputChars =
    messages.reduce((a, m) => a + m.content.length + m.role.length, 0) +
    (options.variables ? JSON.stringify(options.variables).length : 0);
  const outer = budget;
  budget = {
    steps: 0,
    chars: 0,
    maxSteps: TEMPLATE_BASE_STEPS + TEMPLATE_STEPS_PER_MESSAGE * messages.length,
    maxChars: TEMPLATE_BASE_CHARS + TEMPLATE_CHARS_PER_INPUT_CHAR * inputChars,
    seen: new WeakSet(),
  };
  try {
    return t.render({
      ...options.variables,
      messages: templateMessages(messages),
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: options.bosToken ?? '',
      eos_token: options.eosToken ?? '',
    });
  } catch (e) {
    if (e instanceof EngineError) throw e;
    // V8's own limits, reached inside one step (a string or list past its maximum size).
    if (e instanceof RangeError)
      throw new EngineError(
        'unsupported_model',
        `the model's chat template made a value too large for memory (${e.message}): a broken or hostile template`,
        { cause: e },
      );
    throw new EngineError('invalid_argument', `the chat template failed: ${(e as Error).message}`, {
      cause: e,
    });
  } finally {
    budget = outer;
  }
}

/** The text of special token `id` (what a template's `bos_token` / `eos_token` stands for); '' for none. */
export function specialTokenText(tokenizer: Tokenizer, id: number | null): string {
  if (id === null) return '';
  return new TextDecoder().decode(tokenizer.pieceBytes(id, true));
}

/** Options for {@link chatPromptTokens}. */
export interface ChatPromptOptions extends Omit<RenderChatOptions, 'bosToken' | 'eosToken'> {
  /**
   * Parse special-token texts inside the messages' contents too (llama.cpp's and Hugging Face's
   * behaviour): a user's `<|im_end|>` or `</s>` then becomes that control token and can close a turn or
   * forge a system one. Default false: contents are text, as in OpenAI's API; the template's own markup
   * (and its `bos_token` / `eos_token`) is parsed either way. See ChatRequest.parseSpecialInContent.
   */
  parseSpecialInContent?: boolean;
  /**
   * The context's size in tokens: a rendered prompt too long for it whatever it tokenizes to (one token
   * left to generate) is refused before tokenizing (./tokenizer/prompt-bound.ts). Default: no check.
   */
  contextLength?: number;
}

/**
 * Marker candidates: the Private Use Area (BMP, then plane 15). One absent from the template, the
 * contents and the variables marks, in the contents handed to the template, each character of a
 * control-token text; it is removed after rendering.
 */
function* markCandidates(): Generator<string> {
  for (let c = 0xe000; c <= 0xf8ff; c++) yield String.fromCharCode(c);
  for (let c = 0xf0000; c <= 0xffffd; c++) yield String.fromCodePoint(c);
}

/** The candidates of {@link markCandidates}, as a regex (a scan of a huge content stays fast). */
const MARK_CHARS = /[\u{e000}-\u{f8ff}\u{f0000}-\u{ffffd}]/gu;

function pickMark(sources: readonly string[]): string {
  const present = new Set<string>();
  for (const s of sources) for (const [ch] of s.matchAll(MARK_CHARS)) present.add(ch);
  for (const m of markCandidates()) if (!present.has(m)) return m;
  throw new EngineError('invalid_argument', 'the messages use every private-use character; shorten them');
}

/** `content` with `mark` before each UTF-16 unit of every occurrence of a control-token text. */
function markControlTexts(content: string, controls: readonly string[], mark: string): string {
  const ranges: [number, number][] = [];
  for (const t of controls) {
    let at = content.indexOf(t);
    while (at >= 0) {
      ranges.push([at, at + t.length]);
      at = content.indexOf(t, at + 1);
    }
  }
  if (ranges.length === 0) return content;
  ranges.sort((a, b) => a[0] - b[0]);
  // The covered units, merged runs; the text between them is copied as slices (a huge content stays fast).
  let out = '';
  let done = 0;
  for (const [start, end] of ranges) {
    if (end <= done) continue;
    const from = Math.max(start, done);
    out += content.slice(done, from);
    for (let i = from; i < end; i++) out += mark + content[i];
    done = end;
  }
  return out + content.slice(done);
}

/** The rendered text with the marks removed, and the spans of the characters they marked. */
function unmark(rendered: string, mark: string): { text: string; spans: [number, number][] } {
  if (!rendered.includes(mark)) return { text: rendered, spans: [] };
  const parts = rendered.split(mark);
  let text = parts[0];
  const spans: [number, number][] = [];
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i];
    // The unit after a mark is content's; a template that cut it off leaves an empty part.
    if (p.length > 0) {
      const last = spans[spans.length - 1];
      if (last && last[1] === text.length) last[1]++;
      else spans.push([text.length, text.length + 1]);
    }
    text += p;
  }
  return { text, spans };
}

/**
 * The prompt tokens of a conversation, as llama.cpp builds them for a chat: the template rendered with the
 * model's BOS/EOS texts, tokenized with special-token parsing, BOS added when the model adds BOS unless
 * the rendered text already starts with it (no double BOS). Unlike llama.cpp, the messages' contents are
 * text (OpenAI's rule): a control token's text a message holds (`<|im_end|>`, `</s>`) is tokenized as
 * ordinary text, while the template's markup stays control tokens; `parseSpecialInContent` restores
 * llama.cpp's behaviour. (Each control-token text in a content reaches the template with a private-use
 * mark before each of its characters; after rendering the marks are removed and the characters they
 * marked become the encoder's `plainSpans`, wherever the template put them.)
 */
export function chatPromptTokens(
  tokenizer: Tokenizer,
  template: string,
  messages: readonly ChatMessage[],
  options: ChatPromptOptions = {},
): { text: string; ids: number[] } {
  const { parseSpecialInContent, contextLength, ...renderOptions } = options;
  const checkLength = (text: string, addBos: boolean) => {
    if (contextLength !== undefined) checkPromptLength(text.length, tokenizer, contextLength, addBos ? 1 : 0);
  };
  const bosToken = specialTokenText(tokenizer, tokenizer.bosId);
  const eosToken = specialTokenText(tokenizer, tokenizer.eosId);
  const controls = parseSpecialInContent ? [] : tokenizer.controlTexts();
  const hits = controls.length > 0 && messages.some((m) => controls.some((t) => m.content.includes(t)));
  if (!hits) {
    const text = renderChat(template, messages, { ...renderOptions, bosToken, eosToken });
    const addBos = tokenizer.addBos && !(bosToken !== '' && text.startsWith(bosToken));
    checkLength(text, addBos);
    return { text, ids: tokenizer.encode(text, { addBos, parseSpecial: true }) };
  }
  const mark = pickMark([
    template,
    bosToken,
    eosToken,
    JSON.stringify(renderOptions.variables ?? {}),
    ...messages.map((m) => m.content),
  ]);
  const marked = messages.map((m) => ({ ...m, content: markControlTexts(m.content, controls, mark) }));
  const rendered = renderChat(template, marked, { ...renderOptions, bosToken, eosToken });
  const { text, spans } = unmark(rendered, mark);
  // A leading BOS text counts only when the template wrote it, not a message.
  const startsWithBos =
    bosToken !== '' &&
    text.startsWith(bosToken) &&
    !((spans[0]?.[0] ?? Number.POSITIVE_INFINITY) < bosToken.length);
  const addBos = tokenizer.addBos && !startsWithBos;
  checkLength(text, addBos);
  return { text, ids: tokenizer.encode(text, { addBos, parseSpecial: true, plainSpans: spans }) };
}

/**
 * Gemma's chat template (gemma, gemma2, gemma3), in Jinja for {@link renderChat}: llama.cpp's own
 * `LLM_CHAT_TEMPLATE_GEMMA` (src/llama-chat.cpp, `llm_chat_apply_template`) written as a template.
 * Gemma has no system role: system messages are trimmed, joined and put before the next user turn's text
 * with a blank line, as llama.cpp does and as the official Gemma 3 template does with a leading one; the
 * assistant role is `model`; every content is trimmed; each turn ends `<end_of_turn>\n`; the generation
 * prompt is `<start_of_turn>model\n`. `bos_token` comes first, as in Google's templates (llama.cpp's
 * string has no BOS; {@link chatPromptTokens} adds none twice). Output equals llama.cpp's for the same
 * messages (template.test.ts, against llama.cpp's tests/test-chat-template.cpp).
 */
export const GEMMA_CHAT_TEMPLATE = `{{- bos_token -}}
{%- set ns = namespace(system='') -%}
{%- for message in messages -%}
  {%- if message['role'] == 'system' -%}
    {%- set ns.system = ns.system + (message['content'] | trim) -%}
  {%- else -%}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
    {{- '<start_of_turn>' + role + '\\n' -}}
    {%- if ns.system != '' and role != 'model' -%}
      {{- ns.system + '\\n\\n' -}}
      {%- set ns.system = '' -%}
    {%- endif -%}
    {{- (message['content'] | trim) + '<end_of_turn>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<start_of_turn>model\\n' -}}
{%- endif -%}`;

/**
 * Phi-3's chat template (phi3: Phi-3, Phi-3.5), in Jinja for {@link renderChat}: llama.cpp's
 * `LLM_CHAT_TEMPLATE_PHI_3` (src/llama-chat.cpp): each message `<|ROLE|>\nCONTENT<|end|>\n` with its role
 * as given (`system`, `user`, `assistant`), content untrimmed; the generation prompt `<|assistant|>\n`.
 * (Microsoft's Phi-3.5 template is the same except that it drops empty system messages and appends
 * `eos_token` when there is no generation prompt; llama.cpp does neither.)
 */
export const PHI3_CHAT_TEMPLATE = `{%- for message in messages -%}
  {{- '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|assistant|>\\n' -}}
{%- endif -%}`;

/**
 * The chat template this engine writes into the random-weight models `npm run make-model` makes
 * (model/make-model.ts): {@link GEMMA_CHAT_TEMPLATE} for gemma/gemma2/gemma3, {@link PHI3_CHAT_TEMPLATE}
 * for phi3, undefined for others. A real model's own `tokenizer.chat_template` always wins: llama.cpp has no
 * per-architecture fallback either (`llama_model_chat_template` returns null without the key).
 */
export function builtinChatTemplate(architecture: string): string | undefined {
  if (architecture === 'gemma' || architecture === 'gemma2' || architecture === 'gemma3')
    return GEMMA_CHAT_TEMPLATE;
  if (architecture === 'phi3') return PHI3_CHAT_TEMPLATE;
  return undefined;
}
