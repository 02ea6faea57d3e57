/**
 * choosePrefillTile (kernels/tune.ts): the float and the integer-dot prefill tile timed on a gate+up
 * shape, the faster one chosen, the answer cached per adapter and shape; no trial where the integer tile
 * cannot run (a float weight type, or no packed_4x8_integer_dot_product). chooseMmvLayout: candidates of
 * different families (a thread per rows, 128 lanes reduced by shuffles then workgroup memory) timed on a
 * whole matrix, the fastest median chosen and cached; trialRows: the whole matrix on GPUs, the first rows
 * on software adapters.
 */
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../testing/kernel-util.ts';
import type { GpuContext } from '../device.ts';
import type { MmvLayout } from './mmv.ts';
import {
  chooseMmvLayout,
  choosePrefillTile,
  clearMmvChoices,
  layoutName,
  TRIAL_MAX_BYTES,
  TRIAL_MAX_WEIGHTS,
  trialRows,
} from './tune.ts';

describe('chooseMmvLayout', () => {
  it('times candidates of two families on a Q4_K gate+up, picks the fastest median, then answers from the cache', async () => {
    const gpu = await testGpu();
    clearMmvChoices();
    const S = gpu.hasSubgroups ? Math.min(32, gpu.subgroupMinSize) : 0;
    const candidates: MmvLayout[] = [
      { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false },
      S >= 2
        ? { lanes: 128, units: 2, threads: 128, reduce: 'hybrid', shuffleLanes: S, packed: false }
        : { lanes: 128, units: 2, threads: 128, reduce: 'shared', packed: false },
    ];
    const shape = { K: 512, N: 70, type: 'Q4_K' as const, planar: true, dots: 2 as const, norm: true };
    const a = await chooseMmvLayout(gpu, shape, candidates);
    expect(a.chosenBy).toBe('measured');
    expect(a.trials?.map((t) => layoutName(t.layout))).toEqual(candidates.map(layoutName));
    for (const t of a.trials ?? []) expect(t.ms).toBeGreaterThan(0);
    const best = (a.trials ?? []).reduce((x, y) => (y.ms < x.ms ? y : x));
    expect(a.layout).toEqual(best.layout);
    expect(await chooseMmvLayout(gpu, shape, candidates)).toEqual({ ...a, chosenBy: 'cached' });
  });

  it('trialRows: the whole matrix on a GPU up to TRIAL_MAX_BYTES, the first TRIAL_MAX_WEIGHTS weights on a software adapter', () => {
    const at = (isFallback: boolean) => ({ info: { isFallback } }) as unknown as GpuContext;
    // An 8B model's Q4_K gate+up: 14,336 rows of 4,096 (144 bytes per 256 weights).
    const gate = { K: 4096, N: 14336, type: 'Q4_K' as const, dots: 2 as const };
    expect(trialRows(at(false), gate)).toBe(14336);
    expect(trialRows(at(true), gate)).toBe(Math.ceil(TRIAL_MAX_WEIGHTS / (4096 * 2)));
    // Its F32 output (128,256 × 4,096 × 4 bytes) is past the cap: the rows that fit.
    const out = { K: 4096, N: 128256, type: 'F32' as const };
    expect(trialRows(at(false), out)).toBe(Math.floor(TRIAL_MAX_BYTES / (4096 * 4)));
    expect(trialRows(at(false), { ...out, N: 3 })).toBe(3);
  });
});

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
