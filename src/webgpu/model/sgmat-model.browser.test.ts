/**
 * The large subgroup-matrix prefill tile (kernels/mmm-sgmat.ts, 64 tokens × 128 rows) through the whole
 * model, on SwiftShader, which has no subgroup matrices: the tile's WGSL runs through the TEST DOUBLE
 * src/testing/sgmat-emulator.ts (`sgmatTileWGSL` is mocked to emulate what it generates). stories260K
 * (nEmbd 64, nFF 172: K off a multiple of 32 in ffn_down, Q/K/V of 64 + 32 + 32 rows, a partial 128-row
 * tile everywhere) with a 70-token prompt (a full and a partial 64-token tile): its greedy ids and
 * logits against the float tile's (kernels/mmm.ts); the default 32 × 64 tile likewise on stories260K as Q4_0
 * (weights dequantized from planes into the f16 staging). The integer tile (i8 → i32) forced on stories260K as
 * Q8_0, its i8 offsets in bytes on an emulated driver counting bytes: the integer-dot tile's greedy ids.
 * What this cannot show: the driver's subgroup-matrix
 * semantics, uniformity rules and speed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { quantizeGguf } from '../../gguf/quantize-model.ts';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { argmax } from '../../model/reference.ts';
import { randomIds } from '../../testing/llama-run.ts';
import { stories260kUrl } from '../../testing/stories260k-url.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { gpuPlan } from '../kernel-plan.ts';
import { WEIGHT_TYPES } from '../kernels/common.ts';
import type { SgmatTile } from '../kernels/mmm-sgmat.ts';
import { choosePrefillTile, clearMmvChoices } from '../kernels/tune.ts';
import { LlamaModel } from './llama.ts';
import type { PrefillMatmul } from './options.ts';

// The emulated driver's unit of i8 load offsets and strides (mmm-sgmat.ts I8Units), set per test.
const emulated = vi.hoisted(() => ({ kernels: 0, i8Units: 'words' as 'words' | 'bytes' }));
vi.mock('../kernels/mmm-sgmat.ts', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../kernels/mmm-sgmat.ts')>();
  const { emulateSubgroupMatrix } = await import('../../testing/sgmat-emulator.ts');
  return {
    ...orig,
    sgmatTileWGSL: (o: Parameters<typeof orig.sgmatTileWGSL>[0], t: SgmatTile) => {
      emulated.kernels++;
      return emulateSubgroupMatrix(orig.sgmatTileWGSL(o, t), t, t.subgroupSize, {
        i8Units: emulated.i8Units,
      });
    },
  };
});

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const N_OUT = 6;

/** max |b − a| over the logits, and that ÷ (1 + max |a|). */
function logitsDiff(a: Float32Array, b: Float32Array): { maxDiff: number; rel: number } {
  let maxRef = 0;
  let maxDiff = 0;
  a.forEach((v, j) => {
    maxRef = Math.max(maxRef, Math.abs(v));
    maxDiff = Math.max(maxDiff, Math.abs(b[j] - v));
  });
  return { maxDiff, rel: maxDiff / (1 + maxRef) };
}

/** Greedy ids after `prompt` and the prompt's last logits, with prefill on `prefill`. */
async function greedy(
  bytes: ArrayBuffer,
  prompt: number[],
  prefill: PrefillMatmul,
): Promise<{ ids: number[]; logits: Float32Array; tile: number }> {
  const file = await openGguf({ blob: new Blob([bytes]) });
  const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
  const model = await LlamaModel.load(gpu.device, file, cfg, {
    contextLength: 96,
    batchSize: 80,
    kvType: 'f32',
    plan: gpuPlan({ prefill }),
  });
  try {
    model.prefillTokens(prompt, 0);
    model.submitReadback({ readLogits: true });
    const ids: number[] = [];
    let first: Float32Array | undefined;
    for (let i = 0; i < N_OUT; i++) {
      const logits = await model.readLogits();
      first ??= logits;
      ids.push(argmax(logits));
      if (i + 1 < N_OUT) model.submitDecode(prompt.length + i, { tokenId: ids[i], readLogits: true });
    }
    return { ids, logits: first!, tile: model.prefillTile };
  } finally {
    model.destroy();
  }
}

describe('the large subgroup-matrix tile in the model (emulated)', () => {
  it("stories260K, 70-token prompt: greedy ids equal the float tile's, logits within f16 rounding", async () => {
    const bytes = await (await fetch(stories260kUrl())).arrayBuffer();
    const cfg = llamaConfigFromGguf(await openGguf({ blob: new Blob([bytes]) }));
    const prompt = randomIds(4141, 70, cfg.nVocab);
    const float = await greedy(bytes, prompt, { kind: 'tile' });
    expect(emulated.kernels).toBe(0);
    const big: SgmatTile = { M: 16, N: 16, K: 16, subgroupSize: 32, big: true };
    const sg = await greedy(bytes, prompt, { kind: 'tile', subgroupMatrix: big });
    // Every prefill layer matmul ran the emulated large tile, whose batches are 64-token tiles.
    expect(emulated.kernels).toBeGreaterThanOrEqual(4);
    expect(float.tile).toBe(32);
    expect(sg.tile).toBe(64);
    expect(sg.ids).toEqual(float.ids);
    const { maxDiff, rel } = logitsDiff(float.logits, sg.logits);
    // f16 operands (10-bit mantissa) against f32: ~1e-3 of the logits' scale; a wrong index gives ~1.
    expect(rel).toBeLessThan(2e-2);
    expect(maxDiff).toBeGreaterThan(0);
  }, 600_000);
});

describe('the 32 × 64 subgroup-matrix tile (the default shape) in the model on quantized weights (emulated)', () => {
  it("stories260K as Q4_0 (planes), 40-token prompt: greedy ids equal the float tile's, logits within f16 rounding", async () => {
    const f32 = await (await fetch(stories260kUrl())).arrayBuffer();
    const q = await quantizeGguf(await openGguf({ blob: new Blob([f32]) }), 'Q4_0');
    const bytes = q.bytes.buffer.slice(
      q.bytes.byteOffset,
      q.bytes.byteOffset + q.bytes.byteLength,
    ) as ArrayBuffer;
    const cfg = llamaConfigFromGguf(await openGguf({ blob: new Blob([bytes]) }), {
      supportedTypes: WEIGHT_TYPES,
    });
    const prompt = randomIds(4242, 40, cfg.nVocab);
    const float = await greedy(bytes, prompt, { kind: 'tile' });
    const before = emulated.kernels;
    const tile: SgmatTile = { M: 16, N: 16, K: 16, subgroupSize: 32 };
    const sg = await greedy(bytes, prompt, { kind: 'tile', subgroupMatrix: tile });
    expect(emulated.kernels - before).toBeGreaterThanOrEqual(4);
    expect(sg.tile).toBe(32);
    expect(sg.ids).toEqual(float.ids);
    const { maxDiff, rel } = logitsDiff(float.logits, sg.logits);
    // f16 operands (weights d·q and activations both rounded to f16) against the float tile's f32.
    expect(rel).toBeLessThan(2e-2);
    expect(maxDiff).toBeGreaterThan(0);
  }, 600_000);
});

describe('the integer subgroup-matrix tile in the model (emulated)', () => {
  it("stories260K as Q8_0, 40-token prompt, the tile forced in the i8 unit of a driver counting bytes: the integer-dot tile's greedy ids and logits", async (ctx) => {
    if (!gpu.wgslFeatures.has('packed_4x8_integer_dot_product'))
      ctx.skip('the integer-dot tile needs packed_4x8_integer_dot_product');
    const f32 = await (await fetch(stories260kUrl())).arrayBuffer();
    const q8 = (await quantizeGguf(await openGguf({ blob: new Blob([f32]) }), 'Q8_0')).bytes;
    const bytes = q8.buffer.slice(q8.byteOffset, q8.byteOffset + q8.byteLength) as ArrayBuffer;
    const cfg = llamaConfigFromGguf(await openGguf({ blob: new Blob([bytes]) }), {
      supportedTypes: WEIGHT_TYPES,
    });
    const prompt = randomIds(4242, 40, cfg.nVocab);
    const before = emulated.kernels;
    const intDot = await greedy(bytes, prompt, { kind: 'tile', intDot: true });
    expect(emulated.kernels).toBe(before);
    // The variant the self-test would settle on such a driver (sgmat-check.browser.test.ts shows it does).
    emulated.i8Units = 'bytes';
    try {
      const it8: SgmatTile = { M: 16, N: 16, K: 32, subgroupSize: 32, int: true, i8Units: 'bytes' };
      const sg = await greedy(bytes, prompt, { kind: 'tile', subgroupMatrix: it8 });
      // Q8_0 layer matmuls ran the emulated integer tile.
      expect(emulated.kernels).toBeGreaterThanOrEqual(before + 2);
      expect(sg.ids).toEqual(intDot.ids);
      const { rel } = logitsDiff(intDot.logits, sg.logits);
      // The same int8 activations and exact integer dots: only f32 rounding differs (~1e-6 of scale).
      expect(rel).toBeLessThan(1e-4);
    } finally {
      emulated.i8Units = 'words';
    }
  }, 600_000);
});

describe('the prefill tile trial with the large tile as a candidate (emulated)', () => {
  it('times float, (int8,) and sgmat-big on a Q8_0 gate+up over 128 tokens; the winner is the one it runs', async () => {
    clearMmvChoices();
    const before = emulated.kernels;
    const big: SgmatTile = { M: 16, N: 16, K: 16, subgroupSize: 32, big: true };
    const shape = { K: 96, N: 200, type: 'Q8_0' as const, dots: 2 as const, norm: true };
    const c = await choosePrefillTile(gpu, shape, undefined, undefined, big);
    expect(emulated.kernels).toBe(before + 1);
    expect(c.chosenBy).toBe('measured');
    const names = c.trials?.map((t) => t.tile) ?? [];
    expect(names[0]).toBe('float');
    expect(names.at(-1)).toBe('sgmat-big');
    for (const t of c.trials ?? []) expect(t.ms).toBeGreaterThan(0);
    const best = c.trials!.reduce((a, b) => (b.ms < a.ms ? b : a));
    expect(c.subgroupMatrix).toEqual(best.tile === 'sgmat-big' ? big : undefined);
  }, 600_000);
});
