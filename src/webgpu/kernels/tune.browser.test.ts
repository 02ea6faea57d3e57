/**
 * choosePrefillTile (kernels/tune.ts): the float and the integer-dot prefill tile timed on a gate+up
 * shape, the faster one chosen, the answer cached per adapter and shape; no trial where the integer tile
 * cannot run (a float weight type, or no packed_4x8_integer_dot_product).
 */
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../testing/kernel-util.ts';
import { choosePrefillTile, clearMmvChoices } from './tune.ts';

describe('choosePrefillTile', () => {
  it('times both tiles on a Q8_0 gate+up shape, picks the faster, then answers from the cache', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.wgslFeatures.has('packed_4x8_integer_dot_product')) ctx.skip();
    clearMmvChoices();
    const shape = { K: 256, N: 96, type: 'Q8_0' as const, planar: true, dots: 2 as const, norm: true };
    const a = await choosePrefillTile(gpu, shape);
    expect(a.chosenBy).toBe('measured');
    expect(a.trials?.map((t) => t.tile)).toEqual(['float', 'int8']);
    for (const t of a.trials ?? []) expect(t.ms).toBeGreaterThan(0);
    const [float, int8] = a.trials ?? [];
    expect(a.intDot).toBe(int8.ms < float.ms);
    const b = await choosePrefillTile(gpu, shape);
    expect(b).toEqual({ ...a, chosenBy: 'cached' });
    // Another shape is measured on its own.
    expect((await choosePrefillTile(gpu, { ...shape, planar: false })).chosenBy).toBe('measured');
  });

  it('no trial for a type the integer tile does not take', async () => {
    const gpu = await testGpu();
    expect(await choosePrefillTile(gpu, { K: 256, N: 96, type: 'F16', dots: 2 })).toEqual({
      intDot: false,
      chosenBy: 'unavailable',
    });
  });
});
