/**
 * The software adapters' prefill choice (kernel-plan.ts prefillMatmulFor, layerMatmulWeights): the weight
 * count against the matmul tensors a GGUF file holds (stories260K, a random GQA llama), and which tiles a
 * model of that many weights gets on a software adapter and on a GPU; and the decode layouts each kind of
 * adapter tries (kernels/tune.ts mmvCandidates).
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import type { GgufFile } from '../gguf/types.ts';
import { writeGguf } from '../gguf/writer.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { randomLlamaParts } from '../model/random-model.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import type { GpuContext } from './device.ts';
import {
  checkMmvLayoutAdapter,
  checkPrefillOption,
  layerMatmulWeights,
  PREFILL_LIGHT_BELOW,
  prefillMatmulFor,
} from './kernel-plan.ts';
import { mmvLayoutProblem } from './kernels/mmv.ts';
import { layoutName, mmvCandidates } from './kernels/tune.ts';

/** Σ elements of the blocks' matmul weights, read off the file's tensor list. */
function matmulTensorWeights(f: GgufFile): number {
  let n = 0;
  for (const [name, t] of f.tensors)
    if (/^blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight$/.test(name))
      n += t.shape.reduce((a, b) => a * b, 1);
  return n;
}

function fakeGpu(isFallback: boolean, subgroups: [number, number] | undefined, packed: boolean): GpuContext {
  return {
    info: { vendor: '', architecture: '', device: '', description: '', isFallback },
    hasSubgroups: subgroups !== undefined,
    subgroupMinSize: subgroups?.[0] ?? 0,
    subgroupMaxSize: subgroups?.[1] ?? 0,
    wgslFeatures: new Set(packed ? ['packed_4x8_integer_dot_product'] : []),
  } as unknown as GpuContext;
}

describe('layerMatmulWeights', () => {
  it("equals the elements of stories260K's block matmul tensors", async () => {
    const f = await openGguf({ path: STORIES_PATH });
    const n = layerMatmulWeights(llamaConfigFromGguf(f));
    expect(n).toBe(matmulTensorWeights(f));
    expect(n).toBeGreaterThan(100_000);
  });

  it('equals them for a random GQA llama with sizes off every multiple', async () => {
    const parts = randomLlamaParts({
      seed: 11,
      nLayers: 3,
      nEmbd: 96,
      nFF: 232,
      nHead: 6,
      headDim: 20,
      nHeadKv: 2,
      nVocab: 301,
      contextLength: 64,
    });
    const bytes = writeGguf(parts);
    const f = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    expect(layerMatmulWeights(llamaConfigFromGguf(f))).toBe(matmulTensorWeights(f));
  });
});

describe('prefillMatmulFor', () => {
  it('gives a GPU the tiled kernel whatever the size', () => {
    for (const w of [undefined, 1000, 1e9])
      expect(prefillMatmulFor(fakeGpu(false, [32, 32], true), w)).toEqual({ kind: 'tile' });
  });

  it('gives a software adapter small tiles below the bound and 8 rows × 16 tokens with shareX and the norm pass from it', () => {
    const sw = fakeGpu(true, [4, 4], true);
    const light = {
      kind: 'mmv',
      layout: { lanes: 1, units: 2, threads: 32, reduce: 'shared', packed: true },
      tokens: 4,
      splitSegments: true,
    };
    expect(prefillMatmulFor(sw, PREFILL_LIGHT_BELOW - 1)).toEqual(light);
    expect(prefillMatmulFor(sw, 250_000)).toEqual(light);
    const heavy = {
      kind: 'mmv',
      layout: { lanes: 1, units: 8, threads: 8, reduce: 'shared', packed: true, shareX: 4 },
      tokens: 16,
      splitSegments: true,
      normPass: true,
    };
    expect(prefillMatmulFor(sw, PREFILL_LIGHT_BELOW)).toEqual(heavy);
    expect(prefillMatmulFor(sw)).toEqual(heavy);
    // Subgroups of varying size (or none): no shareX, 4 rows × 8 tokens; small models still light.
    for (const sg of [[4, 8], undefined] as const) {
      expect(prefillMatmulFor(fakeGpu(true, sg ? [...sg] : undefined, false), 42e6)).toEqual({
        kind: 'mmv',
        layout: { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed: false },
        tokens: 8,
        splitSegments: true,
        normPass: true,
      });
      expect(prefillMatmulFor(fakeGpu(true, sg ? [...sg] : undefined, false), 1e6)).toEqual({
        ...light,
        layout: { ...light.layout, packed: false },
      });
    }
  });
});

describe('checkPrefillOption', () => {
  it('takes the adapter default with normPass either way or absent, and refuses a normPass that is not a boolean', () => {
    const sw = fakeGpu(true, [4, 4], true);
    const heavy = prefillMatmulFor(sw);
    if (heavy.kind !== 'mmv') throw new Error('expected the mmv choice');
    for (const normPass of [true, false, undefined])
      expect(() => checkPrefillOption({ ...heavy, normPass }, sw)).not.toThrow();
    for (const normPass of ['yes', 1, null, {}]) {
      let err: unknown;
      try {
        checkPrefillOption({ ...heavy, normPass: normPass as never }, sw);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(normPass)).toBeInstanceOf(EngineError);
      expect((err as EngineError).code).toBe('invalid_argument');
      expect((err as Error).message).toMatch(/normPass must be true, false or absent/);
    }
  });
});

describe('mmvCandidates (the decode layouts a load times)', () => {
  it('adds the prefill layout at one token on a software adapter whose subgroups all have one size of 2, 4 or 8', () => {
    for (const S of [2, 4, 8]) {
      const c = mmvCandidates(fakeGpu(true, [S, S], true));
      expect(c.map((l) => l.units)).toEqual([1, 2, 4, 8]);
      expect(c[3]).toEqual({ lanes: 1, units: 8, threads: 8, reduce: 'shared', packed: true, shareX: S });
      expect(layoutName(c[3])).toBe(`lanes1-u8-t8-packed-xs${S}`);
      // Every candidate is a layout mmvWGSL takes.
      for (const l of c) expect(mmvLayoutProblem(l)).toBeUndefined();
    }
    // Subgroups of varying size, of an untested size, or none: only the 64-thread layouts, none shared.
    for (const sg of [[4, 8], [16, 16], undefined] as const) {
      const c = mmvCandidates(fakeGpu(true, sg && [sg[0], sg[1]], false));
      expect(c).toEqual(
        [1, 2, 4].map((units) => ({ lanes: 1, units, threads: 64, reduce: 'shared', packed: false })),
      );
    }
  });

  it('lists each GPU layout once, with or without subgroups', () => {
    for (const sg of [[32, 32], [4, 64], undefined] as const) {
      const names = mmvCandidates(fakeGpu(false, sg && [sg[0], sg[1]], true)).map(layoutName);
      expect(new Set(names).size, names.join(' ')).toBe(names.length);
    }
    // Without subgroups: 32 lanes reduced in workgroup memory, 1 or 2 rows per lane group, and 8 lanes;
    // the whole 128-thread workgroup on 2 or 4 rows; one 32-thread workgroup on 2 rows.
    expect(mmvCandidates(fakeGpu(false, undefined, false)).map(layoutName)).toEqual([
      'lanes32-shared-u1-t256',
      'lanes32-shared-u2-t128',
      'lanes8-shared-u2-t64',
      'lanes128-shared-u2-t128',
      'lanes128-shared-u4-t128',
      'lanes32-shared-u2-t32',
    ]);
    // Subgroups of 32 and packed dot products (an NVIDIA GPU through Dawn): the 128 lanes shuffle within
    // each subgroup ('hybrid'), float and int8.
    expect(mmvCandidates(fakeGpu(false, [32, 32], true)).map(layoutName)).toEqual([
      'lanes32-sg-u1-t256-packed',
      'lanes32-sg-u2-t128-packed',
      'lanes8-sg-u2-t64-packed',
      'lanes32-sg-u2-t128-packed-int8',
      'lanes128-hy32-u2-t128-packed',
      'lanes128-hy32-u4-t128-packed',
      'lanes128-hy32-u2-t128-packed-int8',
      'lanes32-sg-u2-t32-packed',
    ]);
  });

  it('gives a GPU lanes along K and no shared activations', () => {
    const c = mmvCandidates(fakeGpu(false, [32, 32], true));
    expect(c.length).toBeGreaterThan(2);
    for (const l of c) {
      expect(l.shareX).toBeUndefined();
      expect(l.lanes).toBeGreaterThan(1);
      expect(mmvLayoutProblem(l)).toBeUndefined();
    }
  });
});

describe('wide lane groups (64–256 lanes) and the hybrid reduction', () => {
  const base = { units: 2, threads: 128, packed: false } as const;
  it('mmvLayoutProblem takes 64–256 lanes with shared or hybrid, and says what is wrong otherwise', () => {
    expect(mmvLayoutProblem({ ...base, lanes: 128, reduce: 'shared' })).toBeUndefined();
    expect(mmvLayoutProblem({ ...base, lanes: 128, reduce: 'hybrid', shuffleLanes: 32 })).toBeUndefined();
    expect(
      mmvLayoutProblem({ ...base, lanes: 256, threads: 256, reduce: 'hybrid', shuffleLanes: 4 }),
    ).toBeUndefined();
    expect(mmvLayoutProblem({ ...base, lanes: 64, reduce: 'subgroup' })).toMatch(/at most 32 lanes/);
    expect(mmvLayoutProblem({ ...base, lanes: 128, reduce: 'hybrid' })).toMatch(/needs shuffleLanes/);
    expect(mmvLayoutProblem({ ...base, lanes: 32, reduce: 'hybrid', shuffleLanes: 32 })).toMatch(
      /below lanes 32/,
    );
    expect(mmvLayoutProblem({ ...base, lanes: 128, reduce: 'hybrid', shuffleLanes: 64 })).toMatch(
      /needs shuffleLanes/,
    );
    expect(mmvLayoutProblem({ ...base, lanes: 32, reduce: 'shared', shuffleLanes: 4 })).toMatch(
      /needs reduce 'hybrid'/,
    );
    expect(mmvLayoutProblem({ ...base, lanes: 512, threads: 512, reduce: 'shared' })).toMatch(
      /lanes must be/,
    );
  });

  it('checkMmvLayoutAdapter: shuffles no wider than the adapter’s smallest subgroup', () => {
    const hybrid32 = { ...base, lanes: 128, reduce: 'hybrid', shuffleLanes: 32 } as const;
    expect(() => checkMmvLayoutAdapter(hybrid32, fakeGpu(false, [32, 32], false))).not.toThrow();
    expect(() => checkMmvLayoutAdapter(hybrid32, fakeGpu(false, [16, 32], false))).toThrow(
      /shuffles 32 lanes, which needs subgroups of at least 32 invocations \(this adapter: 16–32\)/,
    );
    expect(() => checkMmvLayoutAdapter({ ffn: hybrid32 }, fakeGpu(false, undefined, false))).toThrow(
      /mmvLayout for ffn .*no subgroups/,
    );
    // The 32-lane subgroup reduction on an adapter with subgroups of 8 would read other groups' sums.
    const sg32 = { ...base, lanes: 32, reduce: 'subgroup' } as const;
    expect(() => checkMmvLayoutAdapter(sg32, fakeGpu(false, [8, 64], false))).toThrow(EngineError);
    expect(() => checkMmvLayoutAdapter(sg32, fakeGpu(false, [32, 64], false))).not.toThrow();
  });
});
