/**
 * Decode through the integer-dot matrix × vector kernels (kernels/mmv.ts `MmvLayout.intDot`, mmv-int.ts:
 * each 32 activations rounded to int8 with one scale, as ggml's quantize_row_q8_0, times the weights'
 * quants by dot4I8Packed), forced for every decode matmul of a quantized model, against the float64
 * reference rounding the same matmul inputs at the same positions (ReferenceLlama.int8From,
 * int8OutputFrom): the layouts the load-time trial picks on GPUs (an H200 chose lanes32-sg-u2-t128-packed-int8
 * for Q4_K) through the whole model, where mmv-cases.ts checks them one matmul at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quantizeGguf } from '../../gguf/quantize-model.ts';
import { openGguf } from '../../gguf/reader.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { ReferenceLlama } from '../../model/reference.ts';
import { blobOf, compare, makeRunEngine, randomIds, referenceLogits, TOL } from '../../testing/llama-run.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import type { WebGpuModelInfo } from '../engine.ts';
import type { WeightType } from '../kernels/common.ts';
import type { MmvLayout } from '../kernels/mmv.ts';
import { usesIntDot } from '../kernels/mmv-int.ts';
import { isPlanarType } from '../kernels/repack.ts';
import { layoutName } from '../kernels/tune.ts';
import { MATMUL_WEIGHT } from './weights.ts';

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const runEngine = makeRunEngine(() => gpu);

describe('decode on the integer-dot mmv path vs the float64 reference with int8 activations', () => {
  // Q4_K_M of a random 2-layer model (K-quant rows: nEmbd and nFF multiples of 256): Q4_K for Q, K,
  // attention output, gate and up, Q6_K for V and down (use_more_bits holds for both layers of 2) and the
  // output, all repacked into planes, so both K-quant integer-dot decoders run in every token.
  const model = { seed: 131, nLayers: 2, nEmbd: 256, nFF: 512, nHead: 4, nHeadKv: 2, nVocab: 300 };
  const promptLen = 21;
  const layouts = (): { name: string; layout: MmvLayout }[] => {
    const S = Math.min(32, (gpu.adapter.info as { subgroupMinSize?: number }).subgroupMinSize ?? 0);
    return [
      // A thread per 2 rows (the software adapters' shape).
      {
        name: 'a thread per 2 rows',
        layout: { lanes: 1, units: 2, threads: 64, reduce: 'shared', packed: true, intDot: true },
      },
      // Lanes along K reduced by subgroup shuffles (the GPU trial's int8 winners' shape).
      ...(gpu.hasSubgroups && S >= 2
        ? [
            {
              name: `${S} lanes per row, subgroup reduction`,
              layout: { lanes: S, units: 2, threads: 64, reduce: 'subgroup', packed: true, intDot: true },
            } as const,
          ]
        : []),
    ];
  };
  // Built lazily: the layouts need the adapter (beforeAll), the test names do not.
  for (const which of ['a thread per 2 rows', 'lanes per row, subgroup reduction']) {
    it(`${which}: every decode step's logits and greedy token`, async (ctx) => {
      ctx.skip(
        !gpu.wgslFeatures.has('packed_4x8_integer_dot_product'),
        'no packed_4x8_integer_dot_product WGSL feature here',
      );
      const chosen = layouts().find((l) => l.name.endsWith(which));
      ctx.skip(!chosen, 'no subgroups of 2 or more invocations on this adapter');
      const { name, layout } = chosen!;
      const bytes = (
        await quantizeGguf(await openGguf({ blob: blobOf(makeRandomLlamaGguf(model)) }), 'Q4_K_M')
      ).bytes;
      const file = await openGguf({ blob: blobOf(bytes) });
      // Every decode matmul's weight is of a type the integer-dot path covers (repacked where its type has
      // planes, as the engine loads by default), so no matmul silently keeps the float path.
      const matmulTensors = [...file.tensors.values()].filter((t) => MATMUL_WEIGHT.test(t.name));
      expect(matmulTensors.length).toBe(model.nLayers * 7 + 1);
      expect(new Set(matmulTensors.map((t) => t.typeName))).toEqual(new Set(['Q4_K', 'Q6_K']));
      for (const t of matmulTensors) {
        const type = t.typeName as WeightType;
        expect(usesIntDot({ type, planar: isPlanarType(type) ? 1 : undefined }), t.name).toBe(true);
      }
      let info: WebGpuModelInfo | undefined;
      const prompt = randomIds(model.seed * 7 + 1, promptLen, model.nVocab);
      const run = await runEngine(bytes, prompt, {
        mmvLayout: layout,
        // A float prefill (so only the decode kernels round): mmv without intDot, every batch (a forced
        // prefill turns the small-batch path, which would run the prompt on the decode layouts, off).
        prefill: {
          kind: 'mmv',
          layout: { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed: true },
          tokens: 8,
          splitSegments: true,
        },
        batchSize: 32,
        contextLength: 64,
        onInfo: (i) => (info = i),
      });
      const k = info?.kernels;
      expect(k?.decode).toBe('mmv');
      expect(k?.mmvLayout).toBe(layoutName(layout));
      expect(k?.mmvLayout).toMatch(/-int8/);
      for (const f of ['qkv', 'wo', 'ffn', 'down', 'output'] as const) {
        expect(k?.mmvLayouts?.[f]?.layout, f).toBe(layoutName(layout));
        expect(k?.mmvLayouts?.[f]?.chosenBy, f).toBe('option');
      }
      expect(k?.matmuls.fallback).toBe(0);
      expect(k?.planarTensors).toBe(matmulTensors.length);
      expect(k?.smallBatch?.maxTokens).toBe(0);
      expect(k?.prefill?.matmul).toBe('mmv');
      // The reference rounds the layer matmuls' inputs at the decode positions, and the output's from the
      // prompt's last one on (its logits come from the decode output kernel, after a float prefill).
      const ref = await ReferenceLlama.fromGguf(file);
      ref.int8From = promptLen;
      ref.int8OutputFrom = promptLen - 1;
      // The whole-model f32 bound (llama-run.ts TOL: max |Δ| ≤ 2e-5 · (1 + max |ref|)); measured here
      // (SwiftShader) ≤ 2.2e-7. The rounding is what it checks: against the float reference the logits move
      // by 4e-3–1.2e-2 of (1 + max|ref|) (without int8OutputFrom: 4e-3 at the prompt's position alone),
      // truncating the activations instead of rounding them by 8e-3, 200× and more the bound. One
      // activation within f32 rounding of a half step could round the other way in the kernel and move
      // the logits by ~1e-3: none does at this seed on this adapter.
      compare(`int8 decode, ${name} (${layoutName(layout)})`, run, await referenceLogits(ref, run), TOL);
    });
  }
});
