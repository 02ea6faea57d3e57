/**
 * Every prefill matmul choice (model/options.ts `PrefillMatmul`: the GPU tile, its integer-dot variant, and
 * mmv's register tiles as software adapters run them) through the whole model against the float64 CPU
 * reference, with the tolerance and near-tie rule of llama.browser.test.ts (src/testing/llama-run.ts).
 * Apart from llama.browser.test.ts so that `npm run test:browser` can run the two in parallel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quantizeGguf } from '../../gguf/quantize-model.ts';
import { openGguf } from '../../gguf/reader.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { ReferenceLlama } from '../../model/reference.ts';
import {
  blobOf,
  type Case,
  compare,
  makeRunEngine,
  randomIds,
  referenceLogits,
} from '../../testing/llama-run.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import type { WebGpuEngineOptions, WebGpuModelInfo } from '../engine.ts';

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const runEngine = makeRunEngine(() => gpu);

// Every prefill matmul choice (model/options.ts PrefillMatmul) through the whole model, on shapes whose K
// are multiples of 32 (so mmv takes them) and one that is not (nFF 100: ffn_down falls back), with
// prompts that end inside a token tile and cross batches: 70 tokens = 32 + 32 + 6 (tile), 8 × 8 + 6 or 4 × 16 + 6 (mmv).
describe('prefill matmul kernels vs the float64 reference', () => {
  const packed = () =>
    (navigator.gpu.wgslLanguageFeatures as Set<string>).has('packed_4x8_integer_dot_product');
  const choices: {
    name: string;
    /** S: the adapter's subgroup size where every subgroup has the same (else 0). */
    prefill: (S: number) => NonNullable<WebGpuEngineOptions['prefill']>;
    /** Needs subgroups of one size, 2, 4 or 8 (MmvLayout.shareX). */
    shareX?: boolean;
    /** The reference rounds the prompt's layer-matmul inputs to int8 (a model the integer tile runs). */
    int8Reference?: boolean;
    /** The matmul families expected on the integer-dot tile, for a Q8_0 model and for an F16 one. */
    intDot?: { Q8_0: string[]; F16: string[] };
  }[] = [
    { name: 'tile (mmm.ts)', prefill: () => ({ kind: 'tile' }) },
    {
      // Against the reference with the prompt's layer-matmul inputs rounded to int8 per 32 as the kernel
      // does (ReferenceLlama.int8Before; llama.cpp's CPU path rounds to Q8 the same way). Without that
      // rounding the logits move by ~8e-3 of (1 + max|ref|) here, 400× the bound below.
      name: 'tile, integer dot (mmm.ts intDot)',
      prefill: () => ({ kind: 'tile', intDot: true }),
      int8Reference: true,
      intDot: { Q8_0: ['qkv', 'wo', 'ffn', 'down'], F16: [] },
    },
    {
      name: 'mmv 4 rows × 8 tokens, segments split',
      prefill: () => ({
        kind: 'mmv',
        layout: { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed: packed() },
        tokens: 8,
        splitSegments: true,
      }),
    },
    {
      // The software adapters' default where every subgroup has one size S of 2, 4 or 8 (kernel-plan.ts
      // prefillMatmulFor); skipped elsewhere.
      name: 'mmv 8 rows × 16 tokens, segments split, activations shared through subgroups',
      prefill: (S) => ({
        kind: 'mmv',
        layout: { lanes: 1, units: 8, threads: 8, reduce: 'shared', packed: packed(), shareX: S },
        tokens: 16,
        splitSegments: true,
      }),
      shareX: true,
    },
    {
      // The same with the norm pass (the default there): each batch's input RMSNorm written once per
      // layer and matmul input (kernels/postnorm.ts rmsNormRowsWGSL), the matmuls reading it unnormed.
      name: 'mmv 8 rows × 16 tokens, activations shared through subgroups, norm pass',
      prefill: (S) => ({
        kind: 'mmv',
        layout: { lanes: 1, units: 8, threads: 8, reduce: 'shared', packed: packed(), shareX: S },
        tokens: 16,
        splitSegments: true,
        normPass: true,
      }),
      shareX: true,
    },
    {
      name: 'mmv 2 rows × 5 tokens, fused segments, shifts instead of unpack4x8, norm pass',
      prefill: () => ({
        kind: 'mmv',
        layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed: false },
        tokens: 5,
        splitSegments: false,
        normPass: true,
      }),
    },
    {
      name: 'mmv 2 rows × 5 tokens, fused segments, shifts instead of unpack4x8',
      prefill: () => ({
        kind: 'mmv',
        layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed: false },
        tokens: 5,
        splitSegments: false,
      }),
    },
  ];
  const shapes: (Case & { quantize?: 'Q8_0' })[] = [
    {
      name: 'GQA 4/2, Q8_0 (repacked planes), nEmbd 64, nFF 128',
      model: { seed: 111, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nHeadKv: 2, nVocab: 300 },
      quantize: 'Q8_0',
      promptLen: 70,
    },
    {
      name: 'qwen2 biases + NeoX, F16, nFF 100 (ffn_down K = 100)',
      model: {
        seed: 112,
        architecture: 'qwen2',
        nLayers: 2,
        nEmbd: 64,
        nFF: 100,
        nHead: 4,
        nHeadKv: 2,
        nVocab: 300,
        weightType: 'F16',
        tied: true,
      },
      promptLen: 45,
    },
  ];
  for (const ch of choices) {
    it.for(shapes.map((c) => [c.name, c] as const))(`${ch.name}: %s`, async ([name, c], ctx) => {
      ctx.skip(ch.intDot !== undefined && !packed(), 'no packed_4x8_integer_dot_product WGSL feature here');
      const ai = (await navigator.gpu.requestAdapter())?.info as
        | { subgroupMinSize?: number; subgroupMaxSize?: number }
        | undefined;
      const S = ai?.subgroupMinSize === ai?.subgroupMaxSize ? (ai?.subgroupMinSize ?? 0) : 0;
      ctx.skip(
        ch.shareX === true && ![2, 4, 8].includes(S),
        `shareX needs every subgroup of one size, 2, 4 or 8 (adapter: ${ai?.subgroupMinSize}-${ai?.subgroupMaxSize})`,
      );
      const f32 = makeRandomLlamaGguf(c.model);
      const bytes = c.quantize
        ? (await quantizeGguf(await openGguf({ blob: blobOf(f32) }), c.quantize)).bytes
        : f32;
      const prompt = randomIds(c.model.seed * 7 + 1, c.promptLen, c.model.nVocab);
      let info: WebGpuModelInfo | undefined;
      const run = await runEngine(bytes, prompt, {
        prefill: ch.prefill(S),
        batchSize: 64,
        contextLength: 96,
        onInfo: (i) => (info = i),
      });
      const chosen = ch.prefill(S);
      expect(info?.kernels?.prefill?.matmul).toBe(chosen.kind);
      if (chosen.kind === 'mmv') expect(info?.kernels?.prefill?.normPass).toBe(chosen.normPass === true);
      if (ch.shareX) expect(info?.kernels?.prefill?.mmvLayout).toMatch(new RegExp(`-xs${S}$`));
      if (ch.intDot) {
        expect(info?.kernels?.prefill?.intDot).toEqual(ch.intDot[c.quantize ?? 'F16']);
        expect(info?.kernels?.prefill?.tileChosenBy).toBe('option');
      }
      const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
      if (ch.int8Reference && c.quantize) ref.int8Before = run.prompt.length;
      compare(`prefill ${ch.name}: ${name}`, run, await referenceLogits(ref, run));
    });
  }
});
