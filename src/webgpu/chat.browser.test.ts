/**
 * `WebGpuEngine.chat()` in real Chromium on tiny random models whose GGUF carries a chat template: the
 * prompt is the rendered template tokenized as llama.cpp does (special tokens parsed, BOS once), generation
 * runs to `maxTokens`, and stops early at an end-of-turn token. One model uses a byte-level BPE vocabulary
 * with ChatML control tokens, one the SentencePiece test vocabulary with a Llama-2-style template.
 */

import { describe, expect, it } from 'vitest';
import { type GgufMetadataEntry, kv, writeGguf } from '../gguf/writer.ts';
import { openModelSource } from '../library/opener.ts';
import { chatPromptTokens } from '../model/chat-template.ts';
import { randomLlamaParts } from '../model/random-model.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { BYTE_TO_CHAR } from '../model/tokenizer/unicode.ts';
import { WebGpuEngine } from './engine.ts';

const CHATML =
  "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const LLAMA2ISH =
  "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}" +
  "{% else %}{{ m['content'] + eos_token }}{% endif %}{% endfor %}";

const body = { seed: 21, nLayers: 2, nEmbd: 32, nFF: 64, nHead: 4, nHeadKv: 2 } as const;
const messages = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'Say hi' },
];

/** A byte-level BPE GGUF: the 256 byte tokens, a few merges, <|im_start|> and `endText` as control tokens. */
function bpeChatModel(renamed?: { id: number; text: string }): Uint8Array {
  const tokens = [...BYTE_TO_CHAR];
  const merges = ['Ġ a', 'Ġ t', 'h e', 'Ġt he', 'i n', 'e r', 'Ġ s', 'Ġ i'];
  for (const m of merges) tokens.push(m.replace(' ', ''));
  const types = tokens.map(() => 1);
  tokens.push('<|im_start|>', '<|im_end|>');
  types.push(3, 3);
  if (renamed) {
    tokens[renamed.id] = renamed.text;
    types[renamed.id] = 3;
  }
  const parts = randomLlamaParts({ ...body, nVocab: tokens.length });
  const metadata: GgufMetadataEntry[] = [
    ...parts.metadata.filter((e) => !e.key.startsWith('tokenizer.')),
    kv.string('tokenizer.ggml.model', 'gpt2'),
    kv.string('tokenizer.ggml.pre', 'qwen2'),
    kv.strings('tokenizer.ggml.tokens', tokens),
    kv.i32s('tokenizer.ggml.token_type', types),
    kv.strings('tokenizer.ggml.merges', merges),
    kv.u32('tokenizer.ggml.eos_token_id', tokens.length - 1),
    kv.bool('tokenizer.ggml.add_bos_token', false),
    kv.string('tokenizer.chat_template', CHATML),
  ];
  return writeGguf({ metadata, tensors: parts.tensors });
}

const blob = (bytes: Uint8Array) => ({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });

describe('WebGpuEngine.chat with a chat template', () => {
  it('renders ChatML on a BPE model, runs to maxTokens, and stops at an end-of-turn token', async () => {
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      const bytes = bpeChatModel();
      await engine.load(blob(bytes), { contextLength: 128 });
      const tok = engine.tok;
      expect(tok.chatTemplate).toBe(CHATML);
      const expected = chatPromptTokens(tok, CHATML, messages);
      expect(expected.text).toBe(
        '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n',
      );
      const imStart = tok.encode('<|im_start|>', { parseSpecial: true })[0];
      expect(expected.ids.filter((id) => id === imStart).length).toBe(3);

      const free = await engine.chat({ messages, maxTokens: 10, ignoreEos: true });
      expect(free.promptTokenIds).toEqual(expected.ids);
      expect(free.outputTokenIds.length).toBe(10);
      expect(free.finishReason).toBe('length');

      // Make the token the model writes at step k (new, and not in the prompt) an end-of-turn token by its
      // text, as llama.cpp detects them: same weights, so the same tokens until there, then a stop.
      const k = free.outputTokenIds.findIndex(
        (id, i) => i >= 2 && !free.outputTokenIds.slice(0, i).includes(id) && !expected.ids.includes(id),
      );
      expect(k).toBeGreaterThanOrEqual(2);
      const stopId = free.outputTokenIds[k];
      await engine.load(blob(bpeChatModel({ id: stopId, text: '<|eot_id|>' })), { contextLength: 128 });
      expect(engine.tok.isEog(stopId)).toBe(true);
      const stopped = await engine.chat({ messages, maxTokens: 10 });
      expect(stopped.promptTokenIds).toEqual(expected.ids);
      expect(stopped.outputTokenIds).toEqual(free.outputTokenIds.slice(0, k + 1));
      expect(stopped.finishReason).toBe('stop');
      expect(stopped.text).not.toContain('<|eot_id|>');
    } finally {
      await engine.dispose();
    }
  });

  it('adds BOS once on an SPM model whose template writes it, and joins contents without a template', async () => {
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      const opts = { ...body, nVocab: 400 };
      const withTemplate = randomLlamaParts({
        ...opts,
        extraMetadata: [kv.string('tokenizer.chat_template', LLAMA2ISH)],
      });
      await engine.load(blob(writeGguf(withTemplate)), { contextLength: 128 });
      const tok = engine.tok;
      const r = await engine.chat({ messages: [{ role: 'user', content: 'the big dog' }], maxTokens: 5 });
      expect(r.promptTokenIds).toEqual(
        tok.encode('<s>[INST] the big dog [/INST]', { addBos: false, parseSpecial: true }),
      );
      expect(r.promptTokenIds[0]).toBe(tok.bosId);
      expect(r.promptTokenIds[1]).not.toBe(tok.bosId);
      expect(r.outputTokenIds.length).toBeLessThanOrEqual(5);

      await engine.load(blob(writeGguf(randomLlamaParts(opts))), { contextLength: 128 });
      expect(engine.tok.chatTemplate).toBe(null);
      const plain = await engine.chat({ messages, maxTokens: 4, ignoreEos: true });
      expect(plain.promptTokenIds).toEqual(createTokenizer(tokMeta(opts)).encode('Be brief.\nSay hi'));
      expect(plain.outputTokenIds.length).toBe(4);
    } finally {
      await engine.dispose();
    }
  });

  it('a hostile template from the model (nested huge loops, a string doubled) ends as a typed error, and the engine goes on', async () => {
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      const opts = { ...body, nVocab: 400 };
      for (const [template, why] of [
        [
          '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}',
          /did not finish within/,
        ],
        [
          "{% set ns = namespace(s='ab') %}{% for i in range(27) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
          /made more than/,
        ],
        ['{{ range(1000000000) | length }}', /did not finish within/],
      ] as const) {
        const parts = randomLlamaParts({
          ...opts,
          extraMetadata: [kv.string('tokenizer.chat_template', template)],
        });
        await engine.load(blob(writeGguf(parts)), { contextLength: 64 });
        // Before: the first hung the tab, the second ended as code 'unknown' after ~3 GB.
        const e = await engine.chat({ messages, maxTokens: 4 }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e).toMatchObject({ name: 'EngineError', code: 'unsupported_model' });
        expect((e as Error).message).toMatch(why);
        const r = await engine.generate({ prompt: 'the big dog', maxTokens: 3, ignoreEos: true });
        expect(r.outputTokenIds.length).toBe(3);
      }
    } finally {
      await engine.dispose();
    }
  });
});

function tokMeta(opts: Parameters<typeof randomLlamaParts>[0]): Record<string, unknown> {
  return Object.fromEntries(randomLlamaParts(opts).metadata.map((e) => [e.key, e.value]));
}
