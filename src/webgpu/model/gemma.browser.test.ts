/**
 * Gemma 2 / Gemma 3 (text) on the GPU path (LlamaModel) against llama.cpp itself and the float64
 * reference, on the random-weight files of src/testing/arch-cases.ts (tests/golden/arch.json, made by
 * `npm run golden:arch` with node-llama-cpp's CPU build): the prompt is prefilled in batches smaller than
 * it (so prefill crosses batches and the sliding window spans them), then 64 greedy decode steps.
 *  - tokens: all 64 greedy ids equal llama.cpp's (the reference's smallest top-2 gap on these runs is
 *    3.5e-3, far above f32 error);
 *  - log-softmax of the first 8 steps vs llama.cpp: within 4e-3 (llama.cpp's CPU GELU goes through an f16
 *    table, ggml-cpu/vec.h; the exact-GELU reference differs from it by 1.2e-3 … 2e-3);
 *  - logits vs the float64 reference (exact GELU): max |Δ| ≤ 2e-5 · (1 + max |ref|), as
 *    llama.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../../tests/golden/arch.json';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { argmax, logSoftmax, ReferenceLlama } from '../../model/reference.ts';
import { ARCH_CASES, type ArchCase, buildArchCase } from '../../testing/arch-cases.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { gpuPlan } from '../kernel-plan.ts';
import type { MmvLayout } from '../kernels/mmv.ts';
import { LlamaModel } from './llama.ts';
import type { AttentionPolicy, PrefillMatmul } from './options.ts';
import { GPU_ATTENTION, MATMUL_FAMILIES } from './options.ts';

const TOL = 2e-5;
interface GoldenCase {
  promptIds: number[];
  outputIds: number[];
  logSoftmax: number[][];
}
const cases = (golden as unknown as { cases: Record<string, GoldenCase> }).cases;

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const gemmaCases = ARCH_CASES.filter((c): c is ArchCase & { kind: 'gemma' } => c.kind === 'gemma');

/**
 * Attention variants beside the default (tiled prefill, tiled flash-decoding in one chunk): decode in
 * chunks of 8 positions, so the combine runs and whole chunks fall outside the sliding window, in both
 * layouts, and the software adapters' `rows` prefill.
 */
const VARIANTS: { name: string; attention: AttentionPolicy }[] = [
  {
    name: 'gemma2-gqa-swa',
    attention: {
      layout: { kind: 'strided' },
      targetWorkgroups: 256,
      minChunk: 8,
      fixedChunk: 8,
      prefill: { kind: 'rows' },
    },
  },
  {
    name: 'gemma3-gqa-swa',
    attention: { layout: { kind: 'tiled', lanes: 1 }, targetWorkgroups: 256, minChunk: 8, fixedChunk: 8 },
  },
  {
    // the per-token attention kernel (kernels/attention.ts attentionWGSL) in prefill
    name: 'gemma2-ropescale-pattern3',
    attention: {
      layout: { kind: 'tiled', lanes: 1 },
      targetWorkgroups: 256,
      minChunk: 128,
      prefill: 'per-token',
    },
  },
];

/**
 * The software adapters' mmv prefill with its norm pass (options.ts `PrefillMatmul.normPass`): the input
 * RMSNorm written once per layer into `xn`, here with Gemma 3's post-norms and per-head Q/K norms around it.
 */
const NORM_PASS: PrefillMatmul = {
  kind: 'mmv',
  layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed: false },
  tokens: 4,
  splitSegments: true,
  normPass: true,
};

/**
 * Small batches (KernelPlan.smallBatch, model/small-batch.ts) forced on with one mmv layout for every
 * matmul: the prompt's 8-token batches run the layers' matmuls through the decode kernels with Gemma's
 * post-norms, per-head Q/K norms, soft-caps and sliding window around them.
 */
const SMALL_MMV: MmvLayout = { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: false };

describe('Gemma on the GPU vs llama.cpp and the float64 reference', () => {
  const runs: {
    c: (typeof gemmaCases)[number];
    attention?: AttentionPolicy;
    prefill?: PrefillMatmul;
    small?: boolean;
    label: string;
  }[] = [
    ...gemmaCases.map((c) => ({ c, attention: undefined as AttentionPolicy | undefined, label: 'default' })),
    ...VARIANTS.map((v) => {
      const c = gemmaCases.find((x) => x.name === v.name);
      if (!c) throw new Error(`no case ${v.name}`);
      const pre = v.attention.prefill;
      const chunks = v.attention.fixedChunk ? ` in chunks of ${v.attention.fixedChunk}` : '';
      const label = `${v.attention.layout.kind} decode${chunks}, ${typeof pre === 'object' ? pre.kind : (pre ?? 'tiled')} prefill`;
      return { c, attention: v.attention, label };
    }),
    ...gemmaCases
      .filter((c) => c.name === 'gemma3-gqa-swa')
      .map((c) => ({ c, prefill: NORM_PASS, label: 'mmv prefill with the norm pass' })),
    // Gemma 2's small batches attend by flash-decoding in chunks of 8 (whole chunks outside the window),
    // Gemma 3's by the prefill kernel (options.ts `AttentionPolicy.small`).
    ...gemmaCases
      .filter((c) => c.name === 'gemma2-gqa-swa')
      .map((c) => ({
        c,
        small: true,
        attention: { ...GPU_ATTENTION, minChunk: 8, fixedChunk: 8, small: 'flash' } as AttentionPolicy,
        label: 'prompt batches of 8 through the small-batch mmv kernels, flash attention in chunks of 8',
      })),
    ...gemmaCases
      .filter((c) => c.name === 'gemma3-gqa-swa')
      .map((c) => ({
        c,
        small: true,
        attention: { ...GPU_ATTENTION, small: 'prefill' } as AttentionPolicy,
        label: 'prompt batches of 8 through the small-batch mmv kernels, prefill attention',
      })),
  ];
  const referenceOf = new Map<string, ReturnType<ReferenceLlama['run']>>();
  for (const { c, attention, prefill, small, label } of runs) {
    it(`${c.name} (${label}): 64 greedy ids as llama.cpp, log-softmax within 4e-3, logits as the reference`, async () => {
      const g = cases[c.name];
      const bytes = buildArchCase(c);
      const open = () => openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
      const file = await open();
      const cfg = llamaConfigFromGguf(file);
      const model = await LlamaModel.load(gpu.device, file, cfg, {
        contextLength: 128,
        batchSize: 8,
        kvType: 'f32',
        plan: gpuPlan({
          ...(attention ? { attention } : {}),
          ...(prefill ? { prefill } : {}),
          ...(small
            ? { mmv: Object.fromEntries(MATMUL_FAMILIES.map((f) => [f, SMALL_MMV])), smallBatch: 8 }
            : {}),
        }),
      });
      expect(model.normPass).toBe(prefill?.kind === 'mmv' && prefill.normPass === true);
      expect(model.usesSmallBatch(8)).toBe(small === true);
      if (small)
        expect(model.smallBatchAttention).toBe(attention?.small === 'prefill' ? 'prefill-kernel' : 'flash');
      const logits: Float32Array[] = [];
      const out: number[] = [];
      try {
        model.prefillTokens(g.promptIds, 0);
        model.submitReadback({ readLogits: true });
        for (let i = 0; i < g.outputIds.length; i++) {
          const l = await model.readLogits();
          logits.push(l);
          out.push(argmax(l));
          if (i + 1 < g.outputIds.length)
            model.submitDecode(g.promptIds.length + i, { tokenId: out[i], readLogits: true });
        }
      } finally {
        model.destroy();
      }
      expect(out).toEqual(g.outputIds);

      let worstCpp = 0;
      g.logSoftmax.forEach((want, i) => {
        const got = logSoftmax(logits[i]);
        for (let v = 0; v < want.length; v++) worstCpp = Math.max(worstCpp, Math.abs(got[v] - want[v]));
      });
      expect(worstCpp).toBeLessThan(4e-3);

      // `out` equals the golden ids (asserted above), so every run of a case scores the same sequence:
      // its float64 reference is computed once per case.
      let refLogits = referenceOf.get(c.name);
      if (!refLogits) {
        const ref = await ReferenceLlama.fromGguf(await open());
        const seq = [...g.promptIds, ...out];
        refLogits = ref.run(seq.slice(0, seq.length - 1)).slice(g.promptIds.length - 1);
        referenceOf.set(c.name, refLogits);
      }
      let worstRel = 0;
      refLogits.forEach((r, i) => {
        let maxRef = 0;
        let d = 0;
        for (let v = 0; v < r.length; v++) {
          maxRef = Math.max(maxRef, Math.abs(r[v]));
          d = Math.max(d, Math.abs(r[v] - logits[i][v]));
        }
        worstRel = Math.max(worstRel, d / (1 + maxRef));
      });
      console.log(
        `${c.name}: vs llama.cpp log-softmax ${worstCpp.toExponential(2)}, vs reference ${worstRel.toExponential(2)}`,
      );
      expect(worstRel).toBeLessThan(TOL);
    });
  }
});
