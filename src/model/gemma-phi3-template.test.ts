/**
 * Gemma and Phi-3 chat templates (template.ts's GEMMA_CHAT_TEMPLATE and PHI3_CHAT_TEMPLATE), rendered with
 * @huggingface/jinja, against llama.cpp: its own test's expected strings (tests/test-chat-template.cpp),
 * a line-for-line transcription of `llm_chat_apply_template` (src/llama-chat.cpp) on random
 * conversations, the official Gemma 2/3 and Phi-3 templates; and, with llama.cpp (node-llama-cpp 3.21.1,
 * CPU) loading a model whose vocabulary has the turn tokens, the end-of-generation tokens and the prompt
 * tokens of a rendered chat.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../core/types.ts';
import { writeGguf } from '../gguf/writer.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { mulberry32 } from '../util/prng.ts';
import {
  builtinChatTemplate,
  chatPromptTokens,
  GEMMA_CHAT_TEMPLATE,
  PHI3_CHAT_TEMPLATE,
  renderChat,
} from './chat-template.ts';
import { randomLlamaParts, TokenType } from './random-model.ts';
import { createTokenizer } from './tokenizer/index.ts';

const tempDir = useTempDirs();

/** llama.cpp's test conversation, tests/test-chat-template.cpp lines 355-362 (at node-llama-cpp 3.21.1's llama.cpp). */
const LLAMA_CPP_CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant' },
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi there' },
  { role: 'user', content: 'Who are you' },
  { role: 'assistant', content: '   I am an assistant   ' },
  { role: 'user', content: 'Another question' },
];

/** llama.cpp's trim (src/llama-chat.cpp line 16): isspace from both ends (ASCII whitespace). */
const trim = (s: string) => s.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '');

/** src/llama-chat.cpp lines 379-400, LLM_CHAT_TEMPLATE_GEMMA, transcribed. */
function llamaCppGemma(chat: readonly ChatMessage[], addAss: boolean): string {
  let ss = '';
  let systemPrompt = '';
  for (const message of chat) {
    let role: string = message.role;
    if (role === 'system') {
      systemPrompt += trim(message.content);
      continue;
    }
    role = role === 'assistant' ? 'model' : message.role;
    ss += `<start_of_turn>${role}\n`;
    if (systemPrompt !== '' && role !== 'model') {
      ss += `${systemPrompt}\n\n`;
      systemPrompt = '';
    }
    ss += `${trim(message.content)}<end_of_turn>\n`;
  }
  if (addAss) ss += '<start_of_turn>model\n';
  return ss;
}

/** src/llama-chat.cpp lines 336-344, LLM_CHAT_TEMPLATE_PHI_3, transcribed. */
function llamaCppPhi3(chat: readonly ChatMessage[], addAss: boolean): string {
  let ss = '';
  for (const message of chat) ss += `<|${message.role}|>\n${message.content}<|end|>\n`;
  if (addAss) ss += '<|assistant|>\n';
  return ss;
}

/** A random conversation: optional system messages (anywhere), alternating turns, padded contents. */
function randomConversation(rng: () => number): ChatMessage[] {
  const pad = () => [' ', '\n', '  ', '\t', ''][Math.floor(rng() * 5)];
  const words = ['hello', 'how', 'are', 'you', 'fine', 'thanks', 'x', 'why?', 'a\nb', 'ünï', '{{ 1 }}'];
  const text = () =>
    pad() +
    Array.from({ length: 1 + Math.floor(rng() * 5) }, () => words[Math.floor(rng() * words.length)]).join(
      ' ',
    ) +
    pad();
  const out: ChatMessage[] = [];
  if (rng() < 0.6) out.push({ role: 'system', content: text() });
  const turns = 1 + Math.floor(rng() * 5);
  for (let i = 0; i < turns; i++) {
    if (rng() < 0.1) out.push({ role: 'system', content: text() });
    out.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: text() });
  }
  return out;
}

describe('Gemma chat template', () => {
  it("gives llama.cpp's own expected string for its test conversation", () => {
    // tests/test-chat-template.cpp line 419, "google/gemma-7b-it" .expected_output (llama_chat_apply_template).
    const expected =
      '<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n';
    expect(renderChat(GEMMA_CHAT_TEMPLATE, LLAMA_CPP_CONVERSATION)).toBe(expected);
    expect(renderChat(GEMMA_CHAT_TEMPLATE, LLAMA_CPP_CONVERSATION, { bosToken: '<bos>' })).toBe(
      `<bos>${expected}`,
    );
    expect(llamaCppGemma(LLAMA_CPP_CONVERSATION, true)).toBe(expected); // the transcription is right
  });

  it('equals llama.cpp on random conversations, with and without system messages and generation prompt', () => {
    const rng = mulberry32(17);
    for (let i = 0; i < 200; i++) {
      const chat = randomConversation(rng);
      for (const add of [true, false]) {
        expect(
          renderChat(GEMMA_CHAT_TEMPLATE, chat, { addGenerationPrompt: add }),
          JSON.stringify(chat),
        ).toBe(llamaCppGemma(chat, add));
      }
    }
  });

  it("Google's own templates render the same through @huggingface/jinja", () => {
    // google/gemma-2-2b-it's template (gemma-7b-it's of tests/test-chat-template.cpp line 418 with
    // {{ bos_token }} first): no system role.
    const gemma2 =
      "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";
    // google/gemma-3-1b-it's template (text part): the system message becomes the first user turn's prefix.
    const gemma3 =
      "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- if messages[0]['content'] is string -%}\n        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n    {%- else -%}\n        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n    {%- endif -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n    {%- else -%}\n        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n    {{ '<end_of_turn>\\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\\n'}}\n{%- endif -%}\n";
    const noSystem = LLAMA_CPP_CONVERSATION.slice(1);
    for (const add of [true, false]) {
      const ours = renderChat(GEMMA_CHAT_TEMPLATE, noSystem, { bosToken: '<bos>', addGenerationPrompt: add });
      expect(renderChat(gemma2, noSystem, { bosToken: '<bos>', addGenerationPrompt: add })).toBe(ours);
      expect(renderChat(gemma3, noSystem, { bosToken: '<bos>', addGenerationPrompt: add })).toBe(ours);
      // With a (trimmed) system message, Gemma 3's own template folds it in as llama.cpp does.
      expect(
        renderChat(gemma3, LLAMA_CPP_CONVERSATION, { bosToken: '<bos>', addGenerationPrompt: add }),
      ).toBe(
        renderChat(GEMMA_CHAT_TEMPLATE, LLAMA_CPP_CONVERSATION, {
          bosToken: '<bos>',
          addGenerationPrompt: add,
        }),
      );
    }
  });
});

describe('Phi-3 chat template', () => {
  it("gives llama.cpp's own expected string for its test conversation", () => {
    // tests/test-chat-template.cpp line 483, "Phi-3-small" .expected_output (llama_chat_apply_template).
    const expected =
      '<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n';
    expect(renderChat(PHI3_CHAT_TEMPLATE, LLAMA_CPP_CONVERSATION)).toBe(expected);
    expect(llamaCppPhi3(LLAMA_CPP_CONVERSATION, true)).toBe(expected);
    // Phi-3-small's own template (line 482) gives the same after its BOS.
    const phi3small =
      "{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}";
    expect(renderChat(phi3small, LLAMA_CPP_CONVERSATION)).toBe(expected);
  });

  it('equals llama.cpp on random conversations, with and without system messages and generation prompt', () => {
    const rng = mulberry32(33);
    for (let i = 0; i < 200; i++) {
      const chat = randomConversation(rng);
      for (const add of [true, false]) {
        expect(renderChat(PHI3_CHAT_TEMPLATE, chat, { addGenerationPrompt: add })).toBe(
          llamaCppPhi3(chat, add),
        );
      }
    }
  });

  it('builtinChatTemplate picks them by architecture', () => {
    expect(builtinChatTemplate('gemma2')).toBe(GEMMA_CHAT_TEMPLATE);
    expect(builtinChatTemplate('gemma3')).toBe(GEMMA_CHAT_TEMPLATE);
    expect(builtinChatTemplate('phi3')).toBe(PHI3_CHAT_TEMPLATE);
    expect(builtinChatTemplate('llama')).toBeUndefined();
  });
});

describe('turn tokens with llama.cpp', () => {
  it('end-of-turn tokens stop generation and chat prompts tokenize as llama.cpp tokenizes them', {
    timeout: 60_000,
  }, async () => {
    // A random llama model whose last vocabulary entries are Gemma's and Phi-3's turn tokens (CONTROL, as
    // their GGUF files mark them).
    const specials = [
      '<start_of_turn>',
      '<end_of_turn>',
      '<|system|>',
      '<|user|>',
      '<|assistant|>',
      '<|end|>',
    ];
    const nVocab = 400;
    const { metadata, tensors } = randomLlamaParts({
      seed: 5,
      nLayers: 1,
      nEmbd: 32,
      nFF: 64,
      nHead: 4,
      nVocab,
    });
    const first = nVocab - specials.length;
    for (const e of metadata) {
      if (e.key === 'tokenizer.ggml.tokens') {
        const v = e.value as string[];
        specials.forEach((s, i) => {
          v[first + i] = s;
        });
      }
      if (e.key === 'tokenizer.ggml.token_type') {
        const v = e.value as number[];
        specials.forEach((_, i) => {
          v[first + i] = TokenType.CONTROL;
        });
      }
    }
    const path = join(tempDir('chat-eog-'), 'turns.gguf');
    writeFileSync(path, writeGguf({ metadata, tensors }));
    const md = Object.fromEntries(metadata.map((e) => [e.key, e.value]));
    const tok = createTokenizer(md);

    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    try {
      const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
      const eogOurs: number[] = [];
      const eogTheirs: number[] = [];
      for (let id = 0; id < nVocab; id++) {
        if (tok.isEog(id)) eogOurs.push(id);
        if (model.isEogToken(id as never)) eogTheirs.push(id);
      }
      expect(eogOurs).toEqual(eogTheirs);
      expect(eogOurs).toContain(first + 1); // <end_of_turn>
      expect(eogOurs).toContain(first + 5); // <|end|>
      for (const template of [GEMMA_CHAT_TEMPLATE, PHI3_CHAT_TEMPLATE]) {
        const { text, ids } = chatPromptTokens(tok, template, LLAMA_CPP_CONVERSATION);
        // llama.cpp: BOS (the model adds it) + the text tokenized with special tokens parsed.
        const theirs = [1, ...model.tokenize(text.replace(/^<s>/, ''), true)];
        expect(ids).toEqual(theirs.map(Number));
        expect(ids.filter((id) => id >= first).length).toBeGreaterThan(5);
      }
      await model.dispose();
    } finally {
      await llama.dispose();
    }
  });
});
