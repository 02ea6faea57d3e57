/**
 * The prefill attention on subgroup matrices without a GPU: its WGSL's structure for every configuration
 * and subgroup size it takes (and the emulator rewriting all of it), the engine option's checks, how the
 * plan leaves other policies alone, and what `ModelInfo.kernels.attention.prefill.subgroupMatrix` says
 * (its arithmetic runs through the emulator in kernels/attention-sgmat.browser.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { LlamaConfig } from '../model/config.ts';
import { emulateSubgroupMatrix } from '../testing/sgmat-emulator.ts';
import type { SubgroupMatrixSupport } from './device.ts';
import {
  attentionShapeOf,
  checkKernelOverrides,
  resolvePrefillAttention,
  sgmatAttentionInfo,
} from './kernel-plan.ts';
import {
  prefillAttentionSgmatWGSL,
  type SgmatAttentionOptions,
  sgmatAttentionPlan,
} from './kernels/attention-sgmat.ts';
import { GPU_ATTENTION } from './model/options.ts';
import { profileContext } from './wgsl-snapshot.ts';

const base = { nHead: 8, nHeadKv: 2, scale: 0.125, kvType: 'f16' as const };

describe('prefillAttentionSgmatWGSL', () => {
  for (const [M, N, K] of [
    [16, 16, 16],
    [16, 8, 16],
    [16, 8, 8],
    [8, 8, 8],
  ])
    for (const sg of [32, 64] as const)
      for (const headDim of [64, 80, 128]) {
        const o: SgmatAttentionOptions = {
          ...base,
          headDim,
          tile: { M, N, K, subgroupSize: sg },
          maxWorkgroupBytes: 49152,
        };
        it(`${M}x${N}x${K}, subgroups of ${sg}, head size ${headDim}: one subgroup per workgroup, S and P·V on f16 operands into f32 results, within the workgroup memory; the emulator rewrites all of it`, () => {
          const code = prefillAttentionSgmatWGSL(o);
          const p = sgmatAttentionPlan(o);
          expect(code.startsWith('enable f16;\nenable chromium_experimental_subgroup_matrix;')).toBe(true);
          expect(code).toContain(`@compute @workgroup_size(${sg})`);
          expect(code).toContain(`subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&qh, `);
          expect(code).toContain(`subgroup_matrix_right<f16, ${N}, ${K}>, col_major>(&kvs, `);
          expect(code).toContain(`subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&ph, `);
          expect(code).toContain(`subgroup_matrix_right<f16, ${N}, ${K}>, row_major>(&kvs, `);
          expect(code).toContain(`subgroup_matrix_result<f32, ${N}, ${M}>, row_major>(&ob, `);
          expect(code.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(2);
          // The softmax on every lane: ${sg / M} per row, the row's max through workgroup memory.
          expect(code).toContain(`let lr = lid / ${sg / M}u;`);
          expect(code).toContain(`var<workgroup> red: array<f32, ${sg}>;`);
          expect(code).not.toMatch(/if \(lid < \d+u\) \{/);
          expect(p.headsPerGroup * p.tokensPerTile).toBeLessThanOrEqual(M);
          expect(p.kvTile % N).toBe(0);
          expect(p.kvTile % K).toBe(0);
          expect(p.workgroupBytes).toBeLessThanOrEqual(49152);
          expect(emulateSubgroupMatrix(code, { M, N, K }, sg)).not.toMatch(/subgroup_matrix|subgroupMatrix/);
        });
      }

  it('soft-cap and window as the float kernel writes them; every KV cache type through its loader', () => {
    const o: SgmatAttentionOptions = {
      ...base,
      headDim: 64,
      tile: { M: 16, N: 16, K: 16, subgroupSize: 32 },
      softcap: 50,
      window: 512,
    };
    const code = prefillAttentionSgmatWGSL(o);
    expect(code).toContain('tanh(clamp(');
    expect(code).toContain('tile + c + 512u <= myPos');
    for (const kvType of ['f32', 'f16', 'q8_0', 'q4_0'] as const)
      expect(prefillAttentionSgmatWGSL({ ...o, kvType, vKvType: 'q4_0' })).toContain('fn ld_vc4(');
  });
});

describe('the plan', () => {
  const gpu = profileContext({
    id: 'gpu',
    isFallback: false,
    subgroups: [32, 32],
    packed: true,
    maxStorage: 10,
  });

  it("attention.prefill { kind: 'sgmat' }: a kvTile that is not an integer from 8 to 256 is invalid_argument", () => {
    expect(() => checkKernelOverrides({ attention: { prefill: { kind: 'sgmat' } } }, gpu)).not.toThrow();
    expect(() =>
      checkKernelOverrides({ attention: { prefill: { kind: 'sgmat', kvTile: 32 } } }, gpu),
    ).not.toThrow();
    for (const kvTile of [7, 1.5, 512, '32' as unknown as number]) {
      let err: unknown;
      try {
        checkKernelOverrides({ attention: { prefill: { kind: 'sgmat', kvTile } } }, gpu);
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err) && err.code).toBe('invalid_argument');
    }
  });

  it('leaves other policies, and a configuration given by hand, as they are (no self-test)', async () => {
    const cfg = { nHead: 8, nHeadKv: 2, headDim: 64 } as LlamaConfig;
    const tiled = { ...GPU_ATTENTION, prefill: { kind: 'tiled' as const } };
    expect(await resolvePrefillAttention(gpu, cfg, tiled, { kvType: 'f16' })).toEqual({ attention: tiled });
    const given = {
      ...GPU_ATTENTION,
      prefill: {
        kind: 'sgmat' as const,
        tile: { M: 16, N: 16, K: 16, subgroupSize: 32 as const },
        kvTile: 32,
      },
    };
    expect(await resolvePrefillAttention(gpu, cfg, given, { kvType: 'f16' })).toEqual({ attention: given });
  });

  it('not forced, on an adapter without subgroup matrices: no self-test, no trial, the float layout', async () => {
    const cfg = { nHead: 8, nHeadKv: 2, headDim: 64 } as LlamaConfig;
    const tiled = { ...GPU_ATTENTION, prefill: { kind: 'tiled' as const } };
    let ran = 0;
    const r = await resolvePrefillAttention(gpu, cfg, tiled, { kvType: 'f16' }, false, {
      make: {
        wgsl: () => `${ran++}`,
        workgroups: () => [1, 1],
      },
      time: async () => {
        ran++;
        return [];
      },
    });
    expect(gpu.subgroupMatrix?.available).not.toBe(true);
    expect(r).toEqual({ attention: tiled });
    expect(ran).toBe(0);
  });

  it("the self-test's problem: the model's heads, scale, cache types, Gemma's soft-cap and window", () => {
    const llama = { nHead: 32, nHeadKv: 8, headDim: 128 } as LlamaConfig;
    expect(attentionShapeOf(llama, { kvType: 'q8_0', vKvType: 'q4_0' })).toEqual({
      nHead: 32,
      nHeadKv: 8,
      headDim: 128,
      scale: 1 / Math.sqrt(128),
      kvType: 'q8_0',
      vKvType: 'q4_0',
    });
    const gemma = {
      nHead: 8,
      nHeadKv: 4,
      headDim: 256,
      gemma: { attnScale: 0.0625, attnSoftcap: 50, swa: { window: 4096, layers: [true] } },
    } as unknown as LlamaConfig;
    expect(attentionShapeOf(gemma, { kvType: 'f16', vKvType: 'f16' })).toEqual({
      nHead: 8,
      nHeadKv: 4,
      headDim: 256,
      scale: 0.0625,
      kvType: 'f16',
      softcap: 50,
      window: 4096,
    });
  });

  it('ModelInfo.kernels.attention.prefill.subgroupMatrix: chosen with its tile, or why not', () => {
    const available: SubgroupMatrixSupport = { available: true, configs: [], usable: [] };
    const none: SubgroupMatrixSupport = { ...available, available: false, reason: 'no subgroup matrices: x' };
    const tile = { M: 16, N: 16, K: 16, subgroupSize: 32 } as const;
    const selfTest = [{ config: 'f16→f32 16x16x16', ok: true }];
    expect(sgmatAttentionInfo({ kernel: 'sgmat', tile }, available, { tile, kvTile: 32, selfTest })).toEqual({
      chosen: true,
      tile: '16x16x16',
      selfTest,
    });
    expect(sgmatAttentionInfo({ kernel: 'tiled' }, available, undefined)).toEqual({
      chosen: false,
      reason: expect.stringMatching(/^forced to tiled \(attention.prefill\)/),
    });
    expect(sgmatAttentionInfo({ kernel: 'rows' }, none, undefined)).toEqual({
      chosen: false,
      reason: 'no subgroup matrices: x',
    });
    const failed = [{ config: 'f16→f32 16x16x16', ok: false, reason: '37 tokens at 0: …' }];
    expect(
      sgmatAttentionInfo({ kernel: 'tiled' }, available, {
        reason: 'failed its self-test',
        selfTest: failed,
      }),
    ).toEqual({ chosen: false, reason: 'failed its self-test', selfTest: failed });
  });
});
