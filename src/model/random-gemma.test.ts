/**
 * The random Gemma generator: deterministic bytes, llama.cpp's metadata keys and tensor names
 * (src/llama-arch.cpp: `post_attention_norm`, `post_ffw_norm`, `attn_q_norm`, `attn_k_norm`; no
 * `output.weight`), and typed errors for impossible shapes. That llama.cpp itself loads and runs these files
 * is checked by `npm run golden:arch` and src/model/reference-gemma.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { openGguf } from '../gguf/reader.ts';
import { sha256 } from '../testing/gguf-util.ts';
import { llamaConfigFromGguf } from './config.ts';
import { makeRandomGemmaGguf, type RandomGemmaOptions } from './random-gemma.ts';

const BASE: RandomGemmaOptions = {
  architecture: 'gemma3',
  seed: 7,
  nLayers: 2,
  nEmbd: 32,
  nFF: 64,
  nHead: 4,
  nHeadKv: 2,
  headDim: 12,
  nVocab: 280,
};
const open = (b: Uint8Array) => openGguf({ blob: new Blob([b as Uint8Array<ArrayBuffer>]) });

describe('makeRandomGemmaGguf', () => {
  it('is deterministic per seed', () => {
    const a = makeRandomGemmaGguf(BASE);
    expect(sha256(makeRandomGemmaGguf(BASE))).toBe(sha256(a));
    expect(sha256(makeRandomGemmaGguf({ ...BASE, seed: 8 }))).not.toBe(sha256(a));
  });

  it('writes gemma3 tensors and keys as llama.cpp names them', async () => {
    const f = await open(
      makeRandomGemmaGguf({ ...BASE, slidingWindow: 5, ropeFreqBaseSwa: 1234, ropeScalingFactor: 2 }),
    );
    const names = [...f.tensors.keys()];
    expect(names).toContain('blk.1.post_attention_norm.weight');
    expect(names).toContain('blk.1.post_ffw_norm.weight');
    expect(names).toContain('blk.0.attn_q_norm.weight');
    expect(f.tensors.get('blk.0.attn_k_norm.weight')?.shape).toEqual([12]);
    expect(f.tensors.get('blk.0.attn_q.weight')?.shape).toEqual([32, 48]);
    expect(names).not.toContain('output.weight');
    expect(names.length).toBe(2 + 2 * 13); // token_embd, output_norm; 13 per layer
    expect(f.metadata['gemma3.attention.sliding_window']).toBe(5);
    expect(f.metadata['gemma3.rope.freq_base_swa']).toBe(1234);
    expect(f.metadata['gemma3.rope.scaling.type']).toBe('linear');
    expect(f.metadata['gemma3.attention.key_length']).toBe(12);
    expect(f.metadata['gemma3.attn_logit_softcapping']).toBeUndefined();
    const cfg = llamaConfigFromGguf(f);
    expect(cfg.headDim).toBe(12);
    expect(cfg.gemma?.swa?.ropeFreqBase).toBe(1234);
  });

  it('writes gemma2 soft-caps and window (defaults 50, 30, 4096), no Q/K norms', async () => {
    const f = await open(makeRandomGemmaGguf({ ...BASE, architecture: 'gemma2' }));
    expect(f.metadata['gemma2.attn_logit_softcapping']).toBeCloseTo(50);
    expect(f.metadata['gemma2.final_logit_softcapping']).toBeCloseTo(30);
    expect(f.metadata['gemma2.attention.sliding_window']).toBe(4096);
    expect([...f.tensors.keys()].some((n) => n.includes('attn_q_norm'))).toBe(false);
    const g = llamaConfigFromGguf(f).gemma;
    expect([g?.attnSoftcap, g?.finalSoftcap]).toEqual([50, 30]);
  });

  it('F16 weights keep the norms F32', async () => {
    const f = await open(makeRandomGemmaGguf({ ...BASE, weightType: 'F16' }));
    expect(f.tensors.get('blk.0.attn_q.weight')?.typeName).toBe('F16');
    expect(f.tensors.get('blk.0.post_ffw_norm.weight')?.typeName).toBe('F32');
  });

  it('throws invalid_argument for impossible options', () => {
    const bad: Partial<RandomGemmaOptions>[] = [
      { headDim: 7 },
      { nHeadKv: 3 },
      { slidingWindow: 0 },
      { finalLogitSoftcap: -1 },
      { nVocab: 100 },
    ];
    for (const b of bad) {
      expect(() => makeRandomGemmaGguf({ ...BASE, ...b }), JSON.stringify(b)).toThrow(
        expect.objectContaining({ code: 'invalid_argument' }),
      );
    }
  });
});
