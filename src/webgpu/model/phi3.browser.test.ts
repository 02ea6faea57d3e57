/**
 * phi3 on the GPU (LlamaModel: the fused attn_qkv bound as the Q/K/V kernel's three segments, the fused
 * ffn_up as the SwiGLU unit's gate and up rows, LongRoPE factors and attn_factor in the RoPE table, partial
 * rotary) against llama.cpp itself and the float64 reference, on the random phi3 files of
 * src/testing/arch-cases.ts (tests/golden/arch.json, node-llama-cpp 3.21.1 CPU, n_ctx ARCH_CONTEXT_SIZE,
 * F32 KV cache):
 *  - greedy: the prompt (prefilled in batches of 8) and 64 tokens, each fed back, equal to llama.cpp's;
 *  - log-softmax of the first ARCH_N_LOGPROB generated positions within 2e-5 of llama.cpp's (F32 files;
 *    F16 files 3e-3: llama.cpp's CPU F16 matmuls differ from f32/float64 by ~1.7e-3, see
 *    reference-phi3.test.ts);
 *  - logits of the same positions within 2e-5 · (1 + max |ref|) of the float64 reference.
 * Also: a Q8_0 file (fused tensors repacked into planes) with every fused segment split across 4 KiB
 * bindings and decode run per segment, against the float64 reference; and WebGpuEngine (default kernels,
 * decode trials, F16 KV cache) loading a phi3 file and continuing the prompt as llama.cpp does.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/arch.json';
import { quantizeGguf } from '../../gguf/quantize-model.ts';
import { openGguf } from '../../gguf/reader.ts';
import { openModelSource } from '../../library/opener.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { argmax, logSoftmax, ReferenceLlama } from '../../model/reference.ts';
import {
  ARCH_CASES,
  ARCH_CONTEXT_SIZE,
  ARCH_N_LOGPROB,
  type ArchCase,
  archCasePrompt,
  buildArchCase,
} from '../../testing/arch-cases.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { WebGpuEngine } from '../engine.ts';
import { gpuPlan } from '../kernel-plan.ts';
import type { MmvLayout } from '../kernels/mmv.ts';
import { LlamaModel } from './llama.ts';
import { MATMUL_FAMILIES } from './options.ts';

/** One mmv layout for every matmul, for the small-batch run. */
const SMALL_MMV: MmvLayout = { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false };

interface GoldenCase {
  promptIds: number[];
  outputIds: number[];
  logSoftmax: number[][];
}
const cases = (golden as unknown as { cases: Record<string, GoldenCase> }).cases;
const phi3Cases = ARCH_CASES.filter((c): c is ArchCase & { kind: 'phi3' } => c.kind === 'phi3');

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const blobOf = (b: Uint8Array) => new Blob([b as Uint8Array<ArrayBuffer>]);

describe('phi3 on the GPU vs llama.cpp (tests/golden/arch.json) and the float64 reference', () => {
  // Each case with the default plan, and the first with small batches forced on (KernelPlan.smallBatch: the
  // prompt's 8-token batches through the decode mmv kernels, the fused Q/K/V and gate|up segments included).
  const runs = [
    ...phi3Cases.map((c) => ({ c, small: false })),
    ...phi3Cases.slice(0, 1).map((c) => ({ c, small: true })),
  ];
  for (const { c, small } of runs) {
    it(`${c.name}${small ? ' (prompt batches through the small-batch mmv kernels)' : ''}: 64 greedy ids equal to llama.cpp's, log-softmax and logits within tolerance`, async () => {
      const g = cases[c.name];
      expect(g, c.name).toBeDefined();
      expect(archCasePrompt(c)).toEqual(g.promptIds);
      const bytes = buildArchCase(c);
      const file = await openGguf({ blob: blobOf(bytes) });
      const cfg = llamaConfigFromGguf(file); // phi3 is in SUPPORTED_ARCHITECTURES
      const model = await LlamaModel.load(gpu.device, file, cfg, {
        contextLength: ARCH_CONTEXT_SIZE,
        batchSize: 8,
        kvType: 'f32',
        ...(small
          ? {
              plan: gpuPlan({
                mmv: Object.fromEntries(MATMUL_FAMILIES.map((f) => [f, SMALL_MMV])),
                smallBatch: 8,
              }),
            }
          : {}),
      });
      expect(model.usesSmallBatch(8)).toBe(small);
      const logits: Float32Array[] = [];
      const out: number[] = [];
      try {
        const prompt = g.promptIds;
        model.prefillTokens(prompt, 0);
        model.submitReadback({ readLogits: true });
        for (let i = 0; i < g.outputIds.length; i++) {
          const l = await model.readLogits();
          if (i < ARCH_N_LOGPROB) logits.push(l);
          out.push(argmax(l));
          if (i + 1 < g.outputIds.length)
            model.submitDecode(prompt.length + i, { tokenId: out[i], readLogits: true });
        }
      } finally {
        model.destroy();
      }
      expect(out).toEqual(g.outputIds);

      // llama.cpp's log-softmax.
      let worstLc = 0;
      for (let i = 0; i < ARCH_N_LOGPROB; i++) {
        const ours = logSoftmax(logits[i]);
        for (let v = 0; v < ours.length; v++)
          worstLc = Math.max(worstLc, Math.abs(ours[v] - g.logSoftmax[i][v]));
      }
      expect(worstLc).toBeLessThan(c.options.weightType === 'F16' ? 3e-3 : 2e-5);
      expect(worstLc).toBeGreaterThan(0);

      // The float64 reference's logits, fed the same tokens.
      const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }), cfg, {
        contextLength: ARCH_CONTEXT_SIZE,
      });
      const all = ref.run([...g.promptIds, ...out.slice(0, ARCH_N_LOGPROB - 1)]);
      const refLogits = all.slice(g.promptIds.length - 1);
      let worstRef = 0;
      for (let i = 0; i < ARCH_N_LOGPROB; i++) {
        let maxRef = 0;
        let maxDiff = 0;
        for (let v = 0; v < refLogits[i].length; v++) {
          maxRef = Math.max(maxRef, Math.abs(refLogits[i][v]));
          maxDiff = Math.max(maxDiff, Math.abs(logits[i][v] - refLogits[i][v]));
        }
        worstRef = Math.max(worstRef, maxDiff / (1 + maxRef));
      }
      expect(worstRef).toBeLessThan(2e-5);
      console.log(
        `${c.name}: |Δ ln p| vs llama.cpp ${worstLc.toExponential(2)}, vs float64 ${worstRef.toExponential(2)}`,
      );
    });
  }
  it('Q8_0 (fused tensors repacked into planes), split across bindings inside each segment, decode per segment: matches the float64 reference', async () => {
    const c = phi3Cases.find((x) => x.name === 'phi3-gqa-swa-ignored');
    if (!c) throw new Error('case missing');
    const bytes = (await quantizeGguf(await openGguf({ blob: blobOf(buildArchCase(c)) }), 'Q8_0')).bytes;
    const file = await openGguf({ blob: blobOf(bytes) });
    const cfg = llamaConfigFromGguf(file, { supportedTypes: ['F32', 'Q8_0'] });
    expect(file.tensors.get('blk.0.attn_qkv.weight')?.typeName).toBe('Q8_0');
    expect(file.tensors.get('blk.0.ffn_up.weight')?.typeName).toBe('Q8_0');
    // 4096-byte bindings: Q (64 rows of 68 bytes) in parts of 48 + 16 rows, each ffn_up half (96 rows) in
    // 60 + 36: parts end on the segment boundaries, never across them.
    const model = await LlamaModel.load(gpu.device, file, cfg, {
      contextLength: ARCH_CONTEXT_SIZE,
      batchSize: 8,
      kvType: 'f32',
      maxBindingBytes: 4096,
      plan: gpuPlan({ splitDecodeSegments: true }),
    });
    const prompt = archCasePrompt(c);
    const n = 8;
    const logits: Float32Array[] = [];
    const out: number[] = [];
    try {
      expect(model.planarTensors).toBeGreaterThan(0);
      expect(model.splitTensors).toBeGreaterThan(0);
      model.prefillTokens(prompt, 0);
      model.submitReadback({ readLogits: true });
      for (let i = 0; i < n; i++) {
        const l = await model.readLogits();
        logits.push(l);
        out.push(argmax(l));
        if (i + 1 < n) model.submitDecode(prompt.length + i, { tokenId: out[i], readLogits: true });
      }
    } finally {
      model.destroy();
    }
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }), undefined, {
      contextLength: ARCH_CONTEXT_SIZE,
    });
    const refLogits = ref.run([...prompt, ...out.slice(0, n - 1)]).slice(prompt.length - 1);
    let worst = 0;
    for (let i = 0; i < n; i++) {
      let maxRef = 0;
      let maxDiff = 0;
      for (let v = 0; v < refLogits[i].length; v++) {
        maxRef = Math.max(maxRef, Math.abs(refLogits[i][v]));
        maxDiff = Math.max(maxDiff, Math.abs(logits[i][v] - refLogits[i][v]));
      }
      worst = Math.max(worst, maxDiff / (1 + maxRef));
      expect(out[i]).toBe(argmax(refLogits[i]));
    }
    expect(worst).toBeLessThan(2e-5);
  });
  it('WebGpuEngine (default kernels and decode trials, f16 KV cache) loads a phi3 file and continues as llama.cpp', async () => {
    const c = phi3Cases.find((x) => x.name === 'phi3-gqa-swa-ignored');
    if (!c) throw new Error('case missing');
    const g = cases[c.name];
    const engine = new WebGpuEngine({ openModel: openModelSource, gpu });
    try {
      const info = await engine.load(
        { blob: blobOf(buildArchCase(c)) },
        { contextLength: ARCH_CONTEXT_SIZE },
      );
      expect(info.architecture).toBe('phi3');
      const r = await engine.generate({ promptTokenIds: g.promptIds, maxTokens: 16, ignoreEos: true });
      // F16 K/V (the engine's default) against llama.cpp's F32 cache: on this case the float64
      // reference's top-2 gap is ≥ 1.27e-2 at every one of the 64 steps, far above the F16 cache's effect.
      expect(r.outputTokenIds).toEqual(g.outputIds.slice(0, 16));
    } finally {
      await engine.dispose();
    }
  });
});
