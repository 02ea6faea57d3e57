/**
 * A prompt too long for the context is refused before it is tokenized (issue 47 item 9: 134M characters
 * crashed the tokenizer, 50M took over 120 s to be refused). No GPU: runGeneration gets a stand-in model
 * (only nCtx and nVocab are read before the check) and the stories260K tokenizer with `encode` counted;
 * WebGpuEngine.chat gets the engine stub of chat-content.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { GenerateRequest } from '../core/types.ts';
import { openGguf } from '../gguf/reader.ts';
import { createTokenizer, type Tokenizer } from '../model/tokenizer/index.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { WebGpuEngine } from './engine.ts';
import { runGeneration } from './generation.ts';
import type { LlamaModel } from './model/llama.ts';

const CHATML =
  '{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{{ eos_token }}\n{% endfor %}';
const N_CTX = 256;
const GIANT = 'Once upon a time '.repeat(3_000_000).slice(0, 50_000_000);

let tok: Tokenizer;
let encodes = 0;
beforeAll(async () => {
  const metadata = (await openGguf({ path: STORIES_PATH })).metadata;
  const real = createTokenizer({ ...metadata, 'tokenizer.chat_template': CHATML });
  // The real tokenizer, with encode calls counted.
  tok = Object.create(real) as Tokenizer;
  tok.encode = (...args) => {
    encodes++;
    return real.encode(...args);
  };
});

const model = () => ({ nCtx: N_CTX, cfg: { nVocab: tok.nVocab } }) as unknown as LlamaModel;

async function refusal(run: () => Promise<unknown>): Promise<{ code: string; message: string; ms: number }> {
  const t0 = performance.now();
  try {
    await run();
  } catch (e) {
    if (!isEngineError(e)) throw e;
    return { code: e.code, message: e.message, ms: performance.now() - t0 };
  }
  throw new Error('not refused');
}

describe('a prompt too long for the context is refused before tokenizing', () => {
  it('generate: 50M characters, context_overflow in well under a second, encode never called', async () => {
    encodes = 0;
    const host = { tok, stats: () => ({}) as never, sampling: 'gpu' as const };
    const r = await refusal(() => runGeneration(host, model(), { prompt: GIANT }));
    expect(r.code).toBe('context_overflow');
    expect(r.ms).toBeLessThan(500);
    expect(encodes).toBe(0);
    expect(r.message).toContain(`the prompt has ${GIANT.length} characters`);
    expect(r.message).toContain(`at least ${Math.ceil(GIANT.length / tok.maxPieceChars) + 1} tokens`);
    expect(r.message).toContain(`the context holds ${N_CTX}`);
  });

  it('generate: a prompt under the bound is still tokenized and checked on its tokens', async () => {
    encodes = 0;
    const host = { tok, stats: () => ({}) as never, sampling: 'gpu' as const };
    // 1000 'a's are far more than 255 tokens though their bound (ceil(1000 / 7) + 1) fits.
    const r = await refusal(() => runGeneration(host, model(), { prompt: 'a '.repeat(500) }));
    expect(r.code).toBe('context_overflow');
    expect(encodes).toBe(1);
    expect(r.message).toMatch(/^the prompt has \d+ tokens/);
  });

  it('chat: a 50M-character message, context_overflow in well under a second, encode never called', async () => {
    const engine = Object.create(WebGpuEngine.prototype) as WebGpuEngine;
    let generated = 0;
    Object.assign(engine, { tokenizer: tok, model: model() });
    engine.generate = async (_req: GenerateRequest) => {
      generated++;
      throw new Error('unreachable');
    };
    for (const content of [GIANT, `${GIANT}</s>`]) {
      encodes = 0;
      const r = await refusal(() => engine.chat({ messages: [{ role: 'user', content }] }));
      expect(r.code).toBe('context_overflow');
      expect(r.ms).toBeLessThan(1000);
      expect(encodes).toBe(0);
      expect(r.message).toContain(`the context holds ${N_CTX}`);
    }
    expect(generated).toBe(0);
  });
});
