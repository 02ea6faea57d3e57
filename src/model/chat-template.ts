/**
 * Chat templates: renders a model's `tokenizer.chat_template` (Jinja, as Hugging Face and llama.cpp render
 * it) with `@huggingface/jinja`, and turns the result into prompt tokens by llama.cpp's rules.
 */
import { Template } from '@huggingface/jinja';
import { EngineError } from '../core/errors.ts';
import type { ChatMessage } from '../core/types.ts';
import type { Tokenizer } from './tokenizer/types.ts';

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
 * Renders a chat template for `messages` (Hugging Face's `apply_chat_template(tokenize=False)`).
 * @throws EngineError('unsupported_model') when the template does not parse;
 *   EngineError('invalid_argument') when rendering fails (e.g. the template's `raise_exception` for an
 *   unsupported role order).
 */
export function renderChat(
  template: string,
  messages: readonly ChatMessage[],
  options: RenderChatOptions = {},
): string {
  const t = compile(template);
  try {
    return t.render({
      ...options.variables,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: options.bosToken ?? '',
      eos_token: options.eosToken ?? '',
    });
  } catch (e) {
    throw new EngineError('invalid_argument', `the chat template failed: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/** The text of special token `id` (what a template's `bos_token` / `eos_token` stands for); '' for none. */
export function specialTokenText(tokenizer: Tokenizer, id: number | null): string {
  if (id === null) return '';
  return new TextDecoder().decode(tokenizer.pieceBytes(id, true));
}

/**
 * The prompt tokens of a conversation, as llama.cpp builds them for a chat: the template rendered with the
 * model's BOS/EOS texts, tokenized with special-token parsing, BOS added when the model adds BOS unless
 * the rendered text already starts with it (no double BOS).
 */
export function chatPromptTokens(
  tokenizer: Tokenizer,
  template: string,
  messages: readonly ChatMessage[],
  options: Omit<RenderChatOptions, 'bosToken' | 'eosToken'> = {},
): { text: string; ids: number[] } {
  const bosToken = specialTokenText(tokenizer, tokenizer.bosId);
  const eosToken = specialTokenText(tokenizer, tokenizer.eosId);
  const text = renderChat(template, messages, { ...options, bosToken, eosToken });
  const addBos = tokenizer.addBos && !(bosToken !== '' && text.startsWith(bosToken));
  return { text, ids: tokenizer.encode(text, { addBos, parseSpecial: true }) };
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
