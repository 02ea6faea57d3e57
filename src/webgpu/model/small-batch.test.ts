/**
 * Small batches through the matrix × vector kernels without a GPU: the trial's choice from injected
 * timings (model/small-batch.ts `chooseSmallBatch`), the option's values and defaults (kernel-plan.ts
 * `smallBatchFor`, `checkKernelOverrides`), which tokens per workgroup row a layout's reduction memory
 * allows (forward.ts `smallBatchTokensPerPass`), and that the small-batch kernels are planned only where
 * asked and mmv runs (forward.ts `plansSmallBatch`), and whether their attention is flash-decoding
 * (forward.ts `smallBatchFlash`, `attention.small`). The kernels' arithmetic is tested in
 * small-batch.browser.test.ts and kernels/attention.browser.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../../core/errors.ts';
import { checkKernelOverrides, PREFILL_LIGHT_BELOW, smallBatchFor } from '../kernel-plan.ts';
import type { MatmulSpec } from '../kernels/llama-ops.ts';
import { mmvReduceBytes } from '../kernels/mmv.ts';
import { plansSmallBatch, SMALL_BATCH_TT, smallBatchFlash, smallBatchTokensPerPass } from './forward.ts';
import { GPU_ATTENTION } from './options.ts';
import {
  cachedSmallBatch,
  chooseSmallBatch,
  clearSmallBatchTrials,
  median,
  rememberSmallBatch,
  SMALL_BATCH_MAX,
  smallBatchTrialKey,
} from './small-batch.ts';

describe('chooseSmallBatch (the trial, injected timings)', () => {
  it.each([
    ['mmv faster at 4 and 8', [3.1, 5.2], [4.7, 6.9], 8],
    ['mmv faster at 4 only', [3.1, 7.4], [4.7, 6.9], 4],
    ['mmv slower at 4 (faster at 8: not a prefix)', [4.9, 5.0], [4.7, 6.9], 0],
    ['mmv slower everywhere', [9.3, 17.1], [4.7, 6.9], 0],
    ['a tie is not faster', [4.7, 6.0], [4.7, 6.9], 0],
    ['a failed mmv run (NaN) counts as slower', [Number.NaN, 1], [4.7, 6.9], 0],
    ['a failed tile run (Infinity) loses', [3.1, 5.2], [4.7, Number.POSITIVE_INFINITY], 8],
  ])('%s', (_name, mmv, tile, want) => {
    const trials = [4, 8].map((tokens, i) => ({ tokens, mmvMs: mmv[i], tileMs: tile[i] }));
    expect(chooseSmallBatch(trials)).toBe(want);
    // The rows' order does not matter.
    expect(chooseSmallBatch([...trials].reverse())).toBe(want);
  });

  it('never above SMALL_BATCH_MAX, 0 without rows; median of odd and even counts', () => {
    expect(chooseSmallBatch([{ tokens: 16, mmvMs: 1, tileMs: 2 }])).toBe(SMALL_BATCH_MAX);
    expect(chooseSmallBatch([])).toBe(0);
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 10])).toBe(3.5);
  });
});

describe('the small-batch trial cache', () => {
  const adapter = { vendor: 'nvidia', architecture: 'hopper', device: 'h200', description: 'NVIDIA H200' };
  const shape = { nLayers: 32, nEmbd: 4096 };
  const types: [string, string][] = [
    ['blk.0.attn_q.weight', 'Q4_K'],
    ['output.weight', 'Q6_K'],
  ];
  const kv = { kvType: 'f16', vKvType: 'f16' };
  const plan = { mmv: { ffn: 'lanes8' }, attention: { small: 'flash' }, smallBatch: 'trial' };
  const key = smallBatchTrialKey(adapter, shape, types, kv, plan);

  it('keys on the adapter, the shape, every tensor type, the KV types and the plan', () => {
    expect(smallBatchTrialKey(adapter, { ...shape }, [...types], { ...kv }, { ...plan })).toBe(key);
    const others = [
      smallBatchTrialKey({ ...adapter, device: 'h100' }, shape, types, kv, plan),
      smallBatchTrialKey(adapter, { ...shape, nEmbd: 2048 }, types, kv, plan),
      smallBatchTrialKey(adapter, shape, [types[0], ['output.weight', 'Q8_0']], kv, plan),
      smallBatchTrialKey(adapter, shape, types, { ...kv, kvType: 'q8_0' }, plan),
      smallBatchTrialKey(adapter, shape, types, kv, { ...plan, attention: { small: 'prefill' } }),
      smallBatchTrialKey(adapter, shape, types, kv, { ...plan, mmv: { ffn: 'lanes32' } }),
    ];
    expect(new Set([key, ...others]).size).toBe(others.length + 1);
  });

  it('remembers an outcome with its rows, returns copies, forgets on clear', () => {
    clearSmallBatchTrials();
    expect(cachedSmallBatch(key)).toBeUndefined();
    const trials = [
      { tokens: 4, mmvMs: 1.5, tileMs: 2.5 },
      { tokens: 8, mmvMs: 3.25, tileMs: 3 },
    ];
    rememberSmallBatch(key, { maxTokens: 4, trials });
    const hit = cachedSmallBatch(key);
    expect(hit).toEqual({ maxTokens: 4, trials });
    hit!.trials[0].mmvMs = 99;
    expect(cachedSmallBatch(key)?.trials[0].mmvMs).toBe(1.5);
    clearSmallBatchTrials();
    expect(cachedSmallBatch(key)).toBeUndefined();
  });
});

describe('the smallBatch option', () => {
  it('defaults: a trial on GPUs; on software adapters mmv for heavy models, off for light ones; off where prefill is forced; mmv = 8 tokens, tile = off', () => {
    expect(smallBatchFor(undefined, false)).toBe('trial');
    expect(smallBatchFor(undefined, true)).toBe(SMALL_BATCH_MAX);
    expect(smallBatchFor(undefined, true, { matmulWeights: PREFILL_LIGHT_BELOW })).toBe(SMALL_BATCH_MAX);
    expect(smallBatchFor(undefined, true, { matmulWeights: PREFILL_LIGHT_BELOW - 1 })).toBe(0);
    expect(smallBatchFor(undefined, true, { prefillForced: true })).toBe(0);
    expect(smallBatchFor(undefined, false, { prefillForced: true })).toBe(0);
    expect(smallBatchFor('mmv', true, { prefillForced: true })).toBe(SMALL_BATCH_MAX);
    expect(smallBatchFor('trial', false, { prefillForced: true })).toBe('trial');
    expect(smallBatchFor('mmv', true)).toBe(SMALL_BATCH_MAX);
    expect(smallBatchFor('tile', false)).toBe(0);
    expect(smallBatchFor('trial', true)).toBe('trial');
  });

  it.each([['fast'], [8], [true], [''], [null]])('refuses %j with invalid_argument', (v) => {
    const e = (() => {
      try {
        checkKernelOverrides({ smallBatch: v as never });
      } catch (err) {
        return err;
      }
    })();
    expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
    expect(String((e as Error).message)).toMatch(/smallBatch must be 'mmv', 'tile' or 'trial' \(got /);
  });

  it('takes each valid value', () => {
    for (const v of ['mmv', 'tile', 'trial'] as const)
      expect(() => checkKernelOverrides({ smallBatch: v })).not.toThrow();
  });

  it.each([['fast'], ['Flash'], [true], [0]])('attention.small refuses %j with invalid_argument', (v) => {
    expect(() => checkKernelOverrides({ attention: { small: v as never } })).toThrow(
      /attention.small must be 'flash' or 'prefill'/,
    );
    try {
      checkKernelOverrides({ attention: { small: v as never } });
    } catch (e) {
      expect(isEngineError(e, 'invalid_argument')).toBe(true);
    }
    for (const ok of ['flash', 'prefill'] as const)
      expect(() => checkKernelOverrides({ attention: { small: ok } })).not.toThrow();
  });
});

describe('the small-batch kernels', () => {
  const spec = (dots: number, norm: boolean) =>
    ({
      K: 4096,
      segments: [{ nUnits: 7168, weights: [], dots: Array.from({ length: dots }, () => ({})) }],
      ...(norm ? { norm: { eps: 1e-5 } } : {}),
    }) as unknown as MatmulSpec;
  const lanes1 = { lanes: 1, units: 4, threads: 64, reduce: 'shared' as const, packed: true };

  it('8 tokens per row where the reduction memory holds them, else 4, else 2, else none (prefill kernel)', () => {
    expect(SMALL_BATCH_TT).toBe(8);
    // No workgroup reduction (one lane, or subgroup shuffles): always 8.
    expect(smallBatchTokensPerPass(lanes1, spec(2, true))).toBe(8);
    expect(smallBatchTokensPerPass({ ...lanes1, lanes: 32, reduce: 'subgroup' }, spec(2, true))).toBe(8);
    // 256 threads, lanes 8, 4 units, gate+up, norm: 4 · 256 · (4·2·T + T) bytes: T = 4 is 36,864, T = 2 is 18,432.
    const wide = { lanes: 8, units: 4, threads: 256, reduce: 'shared' as const, packed: true };
    expect(mmvReduceBytes(wide, 4, 2, true)).toBe(36864);
    expect(smallBatchTokensPerPass(wide, spec(2, true))).toBe(0);
    expect(smallBatchTokensPerPass({ ...wide, units: 1 }, spec(1, false))).toBe(8); // 4·256·8 = 8,192
    expect(smallBatchTokensPerPass({ ...wide, threads: 128 }, spec(2, true))).toBe(2); // 18,432 at 4, 9,216 at 2
    // 'hybrid': one slot per run of shuffleLanes.
    const hybrid = {
      lanes: 128,
      units: 2,
      threads: 128,
      reduce: 'hybrid' as const,
      shuffleLanes: 32,
      packed: true,
    };
    expect(mmvReduceBytes(hybrid, 4, 2, true)).toBe(4 * 4 * (2 * 2 * 4 + 4));
    expect(mmvReduceBytes(hybrid, 8, 2, true)).toBe(4 * 4 * (2 * 2 * 8 + 8));
    expect(smallBatchTokensPerPass(hybrid, spec(2, true))).toBe(8);
    // 64 threads, lanes 8, 4 units, gate+up, norm: 4 · 64 · (8·T + T): T = 8 is 18,432, T = 4 is 9,216.
    expect(smallBatchTokensPerPass({ ...wide, threads: 64 }, spec(2, true))).toBe(4);
  });

  it('planned only where asked for (a size above 1, or the trial) and mmv runs a decode matmul', () => {
    const mmv = { ffn: lanes1 };
    expect(plansSmallBatch({ smallBatch: 8, mmv })).toBe(true);
    expect(plansSmallBatch({ smallBatch: 'trial', mmv })).toBe(true);
    expect(plansSmallBatch({ smallBatch: 0, mmv })).toBe(false);
    expect(plansSmallBatch({ smallBatch: 1, mmv })).toBe(false);
    expect(plansSmallBatch({ mmv })).toBe(false);
    expect(plansSmallBatch({ smallBatch: 8, mmv: {} })).toBe(false);
  });

  it('attention by flash-decoding where small batches run, flash is asked for (the default) and the head shape takes it', () => {
    const mmv = { ffn: lanes1 };
    const llama8b = { nHead: 32, nHeadKv: 8, headDim: 128 };
    const at = (small?: 'flash' | 'prefill') => ({ ...GPU_ATTENTION, ...(small ? { small } : {}) });
    expect(smallBatchFlash(llama8b, { smallBatch: 8, mmv, attention: at() })).toBe(true);
    expect(smallBatchFlash(llama8b, { smallBatch: 'trial', mmv, attention: at('flash') })).toBe(true);
    expect(smallBatchFlash(llama8b, { smallBatch: 8, mmv, attention: at('prefill') })).toBe(false);
    expect(smallBatchFlash(llama8b, { smallBatch: 0, mmv, attention: at() })).toBe(false);
    expect(smallBatchFlash(llama8b, { smallBatch: 8, mmv: {}, attention: at() })).toBe(false);
    // Head sizes the flash kernel does not take (not a multiple of 4, above 256).
    expect(smallBatchFlash({ ...llama8b, headDim: 6 }, { smallBatch: 8, mmv, attention: at() })).toBe(false);
    expect(smallBatchFlash({ ...llama8b, headDim: 320 }, { smallBatch: 8, mmv, attention: at() })).toBe(
      false,
    );
  });
});
