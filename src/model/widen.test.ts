/**
 * The widened stories260K computes what stories260K computes (float64 reference, same logits), with
 * rows of 256 whose every 32-element block holds trained weights.
 */
import { describe, expect, it } from 'vitest';
import { dequantizeRow } from '../gguf/quantize.ts';
import { openGguf } from '../gguf/reader.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { ReferenceLlama } from './reference.ts';
import { STORIES_HEAD32, WIDE_STORIES, widenLlamaGguf } from './widen.ts';

describe('widenLlamaGguf', () => {
  it('gives stories260K heads of 32 (for a Q8_0/Q4_0 KV cache) and keeps its logits to the new RoPE base (float64 reference)', async () => {
    const bytes = await widenLlamaGguf(await openGguf({ path: STORIES_PATH }), STORIES_HEAD32);
    const h32 = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    expect(h32.metadata['llama.attention.key_length']).toBe(32);
    expect(h32.metadata['llama.rope.dimension_count']).toBe(32);
    expect(h32.metadata['llama.rope.freq_base']).toBe(Math.fround(1e16)); // 10000^(32/8)
    expect(h32.tensors.get('blk.0.attn_k.weight')?.shape).toEqual([64, 4 * 32]);
    const a = await ReferenceLlama.fromGguf(await openGguf({ path: STORIES_PATH }));
    const b = await ReferenceLlama.fromGguf(h32);
    expect(b.cfg.headDim).toBe(32);
    const tokens = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298];
    const la = a.run(tokens);
    const lb = b.run(tokens);
    let worst = 0;
    for (let p = 0; p < tokens.length; p++)
      for (let i = 0; i < la[p].length; i++) worst = Math.max(worst, Math.abs(la[p][i] - lb[p][i]));
    // The base 1e16 is rounded to f32 (relative 2e-8), which turns the angles by as much.
    expect(worst).toBeLessThan(1e-5);
    expect(worst).toBeGreaterThan(0);
  });
  it('keeps the logits of stories260K exactly (float64 reference) with 256-wide rows', async () => {
    const bytes = await widenLlamaGguf(await openGguf({ path: STORIES_PATH }), WIDE_STORIES);
    const wide = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    expect(wide.metadata['llama.embedding_length']).toBe(256);
    expect(wide.metadata['llama.attention.head_count']).toBe(32);
    expect(wide.metadata['llama.feed_forward_length']).toBe(256);
    for (const t of wide.tensors.values()) {
      expect(t.typeName).toBe('F32');
      if (t.shape.length === 2) expect(t.shape[0], t.name).toBe(256);
      if (t.shape.length === 2 && !t.name.startsWith('blk.0.attn_')) {
        // Every 32-block of the rows that carry weights has some.
        const n = t.shape[0] * t.shape[1];
        const chunk: Uint8Array[] = [];
        await wide.streamTensorData((c) => {
          if (c.tensor.name === t.name) chunk.push(c.bytes.slice());
        });
        const all = new Uint8Array(t.nBytes);
        let o = 0;
        for (const c of chunk) {
          all.set(c, o);
          o += c.length;
        }
        const x = dequantizeRow('F32', all, n);
        let blocks = 0;
        let filled = 0;
        for (let r = 0; r < t.shape[1]; r++) {
          let rowHas = false;
          for (let b = 0; b < 8 && !rowHas; b++)
            rowHas = x.subarray(r * 256 + b * 32, r * 256 + b * 32 + 32).some((v) => v !== 0);
          if (!rowHas) continue;
          for (let b = 0; b < 8; b++) {
            blocks++;
            if (x.subarray(r * 256 + b * 32, r * 256 + b * 32 + 32).some((v) => v !== 0)) filled++;
          }
        }
        expect(filled, t.name).toBe(blocks);
      }
    }
    const a = await ReferenceLlama.fromGguf(await openGguf({ path: STORIES_PATH }));
    const b = await ReferenceLlama.fromGguf(wide);
    const tokens = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298];
    const la = a.run(tokens);
    const lb = b.run(tokens);
    let worst = 0;
    for (let p = 0; p < tokens.length; p++)
      for (let i = 0; i < la[p].length; i++) worst = Math.max(worst, Math.abs(la[p][i] - lb[p][i]));
    expect(worst).toBeLessThan(1e-12);
  });

  it('refuses to shrink', async () => {
    await expect(
      widenLlamaGguf(await openGguf({ path: STORIES_PATH }), { nEmbd: 32, nHead: 8, nFF: 172 }),
    ).rejects.toThrow(/sizes may only grow/);
  });
});
