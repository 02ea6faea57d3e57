/**
 * choosePrefillTile (kernels/tune.ts): the float and the integer-dot prefill tile timed on a gate+up
 * shape, the faster one chosen, the answer cached per adapter and shape; no trial where the integer tile
 * cannot run (a float weight type, or no packed_4x8_integer_dot_product). chooseMmvLayout: candidates of
 * different families (a thread per rows, 128 lanes reduced by shuffles then workgroup memory) timed on a
 * whole matrix, the fastest median chosen and cached, on GPUs rotated over copies of the matrix
 * (trialCopies); trialRows: the whole matrix on GPUs, the first rows on software adapters; tileTrialDims:
 * a 512-token batch filling a GPU, 128 tokens on software adapters.
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
  TILE_TRIAL_MACS,
  TILE_TRIAL_TOKENS,
  TILE_TRIAL_TOKENS_GPU,
  TRIAL_MAX_BYTES,
  TRIAL_MAX_COPIES,
  TRIAL_MAX_WEIGHTS,
  TRIAL_ROTATE_BYTES,
  tileTrialDims,
  trialCopies,
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

  it('rotates its dispatches over copies of the matrix when asked (GPUs), measured apart from a trial on one copy', async () => {
    const gpu = await testGpu();
    clearMmvChoices();
    const candidates: MmvLayout[] = [
      { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false },
      { lanes: 8, units: 1, threads: 64, reduce: 'shared', packed: false },
    ];
    // 70 rows × 288 bytes (Q4_K, K 512) × 2 dots = 40,320 bytes a dispatch: 5 copies fill 201,600.
    const shape = { K: 512, N: 70, type: 'Q4_K' as const, planar: true, dots: 2 as const, norm: true };
    // Every copy is a valid binding the dispatches read: no validation error in the whole trial.
    gpu.device.pushErrorScope('validation');
    const a = await chooseMmvLayout(gpu, shape, candidates, 201_600);
    expect(await gpu.device.popErrorScope()).toBeNull();
    expect(a.chosenBy).toBe('measured');
    expect(a.copies).toBe(5);
    for (const t of a.trials ?? []) expect(t.ms).toBeGreaterThan(0);
    expect(await chooseMmvLayout(gpu, shape, candidates, 201_600)).toEqual({ ...a, chosenBy: 'cached' });
    // One copy is another trial, not the cached answer of the rotated one.
    const one = await chooseMmvLayout(gpu, shape, candidates);
    expect(one.chosenBy).toBe('measured');
    expect(one.copies).toBeUndefined();
  });

  it('trialCopies: as many copies as fit in the rotation, at most TRIAL_MAX_COPIES, one where two do not fit', () => {
    // An 8B Q4_K gate+up (2 × 14,336 rows × 2,304 bytes = 63 MiB): 3 copies in 192 MiB.
    expect(trialCopies(2 * 14336 * 2304, TRIAL_ROTATE_BYTES)).toBe(3);
    // A 1B Q/K/V (3,072 rows × 1,152 bytes = 3.4 MiB): 56 copies; a 1 MiB matrix: capped.
    expect(trialCopies(3072 * 1152, TRIAL_ROTATE_BYTES)).toBe(56);
    expect(trialCopies(1 << 20, TRIAL_ROTATE_BYTES)).toBe(TRIAL_MAX_COPIES);
    expect(trialCopies(10 << 20, 25 << 20)).toBe(2);
    // Never more bytes than the rotation (or one matrix).
    for (const bytes of [1e6, 3.3e6, 7e6, 33e6, 66e6, 99e6, 150e6, 300e6]) {
      const c = trialCopies(bytes, TRIAL_ROTATE_BYTES);
      expect(c * bytes).toBeLessThanOrEqual(Math.max(TRIAL_ROTATE_BYTES, bytes));
    }
    // A model no larger than the matrix, no rotation asked, an 8B Q8_0 gate+up (119 MiB) or F16: one.
    expect(trialCopies(10 << 20, 10 << 20)).toBe(1);
    expect(trialCopies(10 << 20, 0)).toBe(1);
    expect(trialCopies(2 * 14336 * 4352, TRIAL_ROTATE_BYTES)).toBe(1);
    expect(trialCopies(2 * 14336 * 8192, TRIAL_ROTATE_BYTES)).toBe(1);
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

  it('tileTrialDims: a 512-token batch and rows to fill a GPU; 128 tokens and the first weights on a software adapter', () => {
    const at = (isFallback: boolean) => ({ info: { isFallback } }) as unknown as GpuContext;
    // An 8B Q4_K gate+up: 2^34 multiply-adds over 512 tokens × 4,096 × 2 dots = 4,096 units.
    const gate8b = { K: 4096, N: 14336, type: 'Q4_K' as const, dots: 2 as const };
    expect(tileTrialDims(at(false), gate8b)).toEqual({ T: TILE_TRIAL_TOKENS_GPU, N: 4096 });
    expect(TILE_TRIAL_TOKENS_GPU * 4096 * 4096 * 2).toBe(TILE_TRIAL_MACS);
    // A 1B gate+up (8,192 rows of 2,048) whole; a narrow model whole.
    expect(tileTrialDims(at(false), { ...gate8b, K: 2048, N: 8192 })).toEqual({ T: 512, N: 8192 });
    expect(tileTrialDims(at(false), { ...gate8b, K: 256, N: 96 })).toEqual({ T: 512, N: 96 });
    // F32 weights 16,384 wide: 2^34 ÷ (512 × 16,384) = 2,048 rows (128 MiB, TRIAL_MAX_BYTES).
    expect(tileTrialDims(at(false), { K: 16384, N: 65536, type: 'F32', dots: 1 })).toEqual({
      T: 512,
      N: 2048,
    });
    expect(tileTrialDims(at(true), gate8b)).toEqual({
      T: TILE_TRIAL_TOKENS,
      N: Math.ceil(TRIAL_MAX_WEIGHTS / (4096 * 2)),
    });
  });

  it('no trial for a type the integer tile does not take', async () => {
    const gpu = await testGpu();
    expect(await choosePrefillTile(gpu, { K: 256, N: 96, type: 'F16', dots: 2 })).toEqual({
      intDot: false,
      chosenBy: 'unavailable',
    });
  });
});
