/**
 * The models to start with (issue 19, "The page"): each is an `hf:` shorthand the model library takes, of
 * a model our engine runs (its synthetic stand-in has the same shapes), with a licence and a memory need
 * computed by the fit arithmetic.
 */
import { describe, expect, it } from 'vitest';
import { parseHfShorthand } from '../library/spec.ts';
import { SYNTHETIC_SHAPES } from '../webgpu/model/synthetic.ts';
import { modelNeeds, RECOMMENDED_MODELS } from './recommended-view.ts';

describe('RECOMMENDED_MODELS', () => {
  it('are hf: files the library resolves, each with a licence and a synthetic stand-in', () => {
    expect(RECOMMENDED_MODELS.length).toBeGreaterThanOrEqual(3);
    for (const m of RECOMMENDED_MODELS) {
      const ref = parseHfShorthand(m.spec);
      expect(ref.path, m.spec).toMatch(/\.gguf$/);
      expect(m.license).not.toBe('');
      expect(
        SYNTHETIC_SHAPES.some((s) => s.id === m.synthetic.shape),
        m.synthetic.shape,
      ).toBe(true);
    }
    // The first is the tiny test model: one click gives a working page on any device.
    expect(RECOMMENDED_MODELS[0].spec).toBe('hf:ggml-org/models-moved/tinyllamas/stories260K.gguf');
    // Truthfully: a small download, but no quick load on a software adapter (shader compile, ≈ 20 s on
    // SwiftShader); the card said "loads in a second".
    expect(RECOMMENDED_MODELS[0].note).not.toMatch(/in a second/);
    expect(RECOMMENDED_MODELS[0].note).toMatch(/small download.*compiles the shaders.*software GPU/);
  });

  it('need more GPU memory than their weights (KV cache and run state), less than three times', () => {
    for (const m of RECOMMENDED_MODELS) {
      const n = modelNeeds(m.synthetic.shape, m.synthetic.ftype);
      expect(n.needBytes, m.name).toBeGreaterThan(n.bytes);
      expect(n.needBytes, m.name).toBeLessThan(3 * n.bytes + 64 * 1024 ** 2);
      expect(n.contextLength).toBeLessThanOrEqual(2048);
    }
    // stories260K's weights: 1.17 MB of F32 (the file is 1.2 MB).
    const s = modelNeeds('stories260k', 'f32');
    expect(s.bytes).toBeGreaterThan(1_000_000);
    expect(s.bytes).toBeLessThan(1_300_000);
  });
});

describe('syntheticGguf without a tokenizer', () => {
  it('has the same tensors and the same fit arithmetic as with one, without the vocabulary', async () => {
    const { syntheticGguf } = await import('../webgpu/model/synthetic.ts');
    const { fitModelOf } = await import('../bench/llama-bench-gpu.ts');
    const full = syntheticGguf('synthetic:smollm2-360m-q8_0');
    const header = syntheticGguf('synthetic:smollm2-360m-q8_0', 1, { tokenizer: false });
    expect(header.metadata['tokenizer.ggml.tokens']).toBeUndefined();
    expect([...header.tensors.values()]).toEqual([...full.tensors.values()]);
    expect(fitModelOf(header)).toEqual(fitModelOf(full));
  });
});
