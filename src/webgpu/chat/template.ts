/**
 * Chat templates: renders a model's `tokenizer.chat_template` (Jinja, as Hugging Face and llama.cpp render
 * it) with `@huggingface/jinja`, and turns the result into prompt tokens by llama.cpp's rules.
 */
import { Template } from '@huggingface/jinja';
import { EngineError } from '../../engine/errors.ts';
import type { ChatMessage } from '../../engine/types.ts';
import type { Tokenizer } from '../tokenizer/types.ts';

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
