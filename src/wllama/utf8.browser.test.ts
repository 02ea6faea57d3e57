/**
 * The wllama backend on a random-weight Q4_K_M llama (src/testing/wllama-cases.ts; the shape of the
 * 60M benchmark model's failure, small enough for a test): greedy output equals llama.cpp's
 * (tests/golden/wllama-utf8.json, node-llama-cpp 3.21.1) while it is valid UTF-8, and a stray byte token
 * ≥ 0x80, which wllama 3.13's worker cannot stream ("Invalid typed array length: 1163217991"), ends the
 * request with a typed error naming the wllama bug after the tokens before it streamed; the engine then
 * answers again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/wllama-utf8.json';
import { EngineError } from '../core/errors.ts';
import { buildWllamaUtf8Model, WLLAMA_UTF8_PROMPTS } from '../testing/wllama-cases.ts';
import { WllamaEngine } from './engine.ts';
import { LOCAL_WLLAMA_WASM } from './vite-wasm.ts';

/** ln-probability gap between llama.cpp's top two tokens under which the tokens are not compared. */
const NEAR_TIE = 0.02;

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource));
  return [...d].map((b) => b.toString(16).padStart(2, '0')).join('');
}

describe('WllamaEngine on a random Q4_K_M llama with stray byte tokens', () => {
  const engine = new WllamaEngine({ wasmUrl: LOCAL_WLLAMA_WASM });
  const { valid, strayByte } = golden.cases;
  beforeAll(async () => {
    const bytes = await buildWllamaUtf8Model();
    expect(await sha256(bytes)).toBe(golden.model.sha256);
    const info = await engine.load(
      { blob: new Blob([bytes as BlobPart]), name: 'random-llama-utf8.gguf' },
      { contextLength: 256, kvType: 'f32' },
    );
    expect(info).toMatchObject({ backend: 'wllama', nVocab: 2048, kvType: 'f32' });
    expect(info.tensorTypes).toContain('Q4_K');
  });
  afterAll(() => engine.unload());

  it('greedy output equals llama.cpp while it is valid UTF-8, up to the first near-tie', async () => {
    expect(valid.prompt).toBe(WLLAMA_UTF8_PROMPTS.valid);
    // Before the first byte token ≥ 0x80 every token is a word piece or an ASCII byte. A random model's
    // top two logits can be near-ties (ln-probability gap 0.011 at step 15 here), which wasm SIMD's and
    // x86's different summation orders may break either way: compare up to the first gap under 0.02.
    const nearTie = valid.gaps.findIndex((g) => g < NEAR_TIE);
    const n = Math.min(valid.firstHighByte, nearTie < 0 ? valid.gaps.length : nearTie);
    expect(n).toBeGreaterThanOrEqual(12);
    const r = await engine.generate({ prompt: valid.prompt, maxTokens: n, ignoreEos: true });
    expect(r.promptTokenIds).toEqual(valid.promptIds);
    expect(r.outputTokenIds).toEqual(valid.outputIds.slice(0, n));
    expect(r.finishReason).toBe('length');
  });

  it('a stray byte token ends the request with a typed error naming the wllama bug', async () => {
    expect(strayByte.prompt).toBe(WLLAMA_UTF8_PROMPTS.strayByte);
    const streamed: number[] = [];
    const err = await engine
      .generate({ prompt: strayByte.prompt, maxTokens: 32, ignoreEos: true }, (e) => streamed.push(e.tokenId))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'unsupported_model' });
    const m = (err as EngineError).message;
    expect(m).toMatch(/not valid UTF-8/);
    expect(m).toMatch(/invalid UTF-8 byte/); // llama.cpp's own exception, from its error log
    expect(m).toMatch(/wllama 3\.13.*action_get_result/s);
    expect(m).toContain(`after ${streamed.length} streamed tokens`);
    // What streamed is llama.cpp's output up to the stray byte token (held back while it may start a
    // multi-byte character) or the token after it.
    expect(streamed).toEqual(strayByte.outputIds.slice(0, streamed.length));
    expect(strayByte.gaps.slice(0, strayByte.firstHighByte + 2).every((g) => g >= NEAR_TIE)).toBe(true);
    expect(streamed.length).toBeGreaterThanOrEqual(strayByte.firstHighByte);
    expect(streamed.length).toBeLessThanOrEqual(strayByte.firstHighByte + 1);
  });

  it('answers the next request after that error', async () => {
    const r = await engine.generate({ prompt: valid.prompt, maxTokens: 8, ignoreEos: true });
    expect(r.outputTokenIds).toEqual(valid.outputIds.slice(0, 8));
  });
});
