/**
 * A model whose weights hold NaN or infinity (issue 47, item 3): generation says the logits are not finite
 * and names the tensor, where before the GPU argmax's 0xFFFFFFFF surfaced as "token id 4294967295 is
 * outside the vocabulary". Tiny random llamas in real Chromium, one weight overwritten.
 */
import { describe, expect, it } from 'vitest';
import { writeGguf } from '../gguf/writer.ts';
import { openModelSource } from '../library/opener.ts';
import { randomLlamaParts } from '../model/random-model.ts';
import { WebGpuEngine } from './engine.ts';

const body = { seed: 5, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nHeadKv: 2, nVocab: 300 } as const;

/** The random model with element `at` of `tensor` (F32) set to `value`. */
function modelWith(tensor: string, at: number, value: number): Uint8Array {
  const parts = randomLlamaParts(body);
  const t = parts.tensors.find((x) => x.name === tensor);
  if (!t) throw new Error(`no ${tensor}`);
  const data = t.data.slice();
  new DataView(data.buffer).setFloat32(at * 4, value, true);
  t.data = data;
  return writeGguf(parts);
}

const blob = (bytes: Uint8Array) => ({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('non-finite weights', () => {
  it('greedy (GPU argmax) and CPU-sampled generation name the tensor holding NaN or infinity', async () => {
    const cases = [
      ['gpu', 'blk.1.attn_q.weight', 1234, Number.NaN, 'NaN at element 1234'],
      ['gpu', 'blk.0.ffn_down.weight', 77, Number.POSITIVE_INFINITY, '+infinity at element 77'],
      ['cpu', 'blk.0.attn_k.weight', 5, Number.NaN, 'NaN at element 5'],
    ] as const;
    for (const sampling of ['gpu', 'cpu'] as const) {
      const engine = new WebGpuEngine({ openModel: openModelSource, sampling });
      try {
        for (const [, tensor, at, value, said] of cases.filter((c) => c[0] === sampling)) {
          await engine.load(blob(modelWith(tensor, at, value)), { contextLength: 32 });
          const req = sampling === 'gpu' ? {} : { temperature: 0.8, seed: 1 };
          const e = await failure(
            engine.generate({ prompt: 'a b c', maxTokens: 4, ignoreEos: true, ...req }),
          );
          expect(e, `${sampling} ${tensor}`).toMatchObject({ name: 'EngineError', code: 'gguf_invalid' });
          const m = (e as Error).message;
          expect(m).toMatch(/^the model produced non-finite logits \(NaN or infinity\) for output token 1/);
          expect(m).toContain(`its tensor ${tensor} (F32) holds ${said}`);
          expect(m).not.toMatch(/4294967295 is outside/);
        }
      } finally {
        await engine.dispose();
      }
    }
  });
});
