/**
 * The run state's memory estimate (`runStateBytes`, which the load's out-of-memory message quotes) is the
 * sum of the sizes `allocRunState` asks for, buffer by buffer, over shapes that switch on every optional
 * buffer (qwen3's head norms, quantized K/V, Gemma's post-norm and sliding-window RoPE, the norm pass)
 * and vocabularies with one stripe and with the GPU sampler's candidates and top-p stats buffers.
 */
import { describe, expect, it } from 'vitest';
import type { LlamaConfig } from '../../model/config.ts';
import { MAX_SPLITS } from '../kernels/attention.ts';
import { sampleSplit, sampleStatsLayout } from '../kernels/sample.ts';
import { allocRunState, type RunStateSize, runStateBytes, samplerStateBytes } from './state.ts';

// allocRunState reads GPUBufferUsage's flags; Node has no WebGPU globals.
const g = globalThis as { GPUBufferUsage?: unknown };
g.GPUBufferUsage ??= { MAP_READ: 1, COPY_SRC: 4, COPY_DST: 8, UNIFORM: 64, STORAGE: 128 };

/** The fields the run state reads; the rest of a config does not enter the sizes. */
function config(o: Partial<LlamaConfig>): LlamaConfig {
  return {
    nLayers: 3,
    nEmbd: 96,
    nFF: 250,
    nHead: 6,
    nHeadKv: 2,
    headDim: 32,
    ropeDim: 32,
    nVocab: 32_003,
    qkNorm: false,
    ...o,
  } as LlamaConfig;
}

/** Each buffer allocRunState makes: label → size asked for. */
function allocated(c: LlamaConfig, z: RunStateSize): Map<string, number> {
  const sizes = new Map<string, number>();
  allocRunState(c, z, (label, size) => {
    expect(sizes.has(label), label).toBe(false);
    sizes.set(label, size);
    return { label, size } as unknown as GPUBuffer;
  });
  return sizes;
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

describe('runStateBytes', () => {
  const cases: [string, LlamaConfig, RunStateSize][] = [
    ['llama, 32k vocabulary', config({}), { nCtx: 333, batchSize: 17, kvType: 'f16' }],
    ['one stripe (stories260K-sized)', config({ nVocab: 512 }), { nCtx: 64, batchSize: 8, kvType: 'f32' }],
    [
      'qwen3 head norms, q8_0 K, q4_0 V, norm pass, 128k vocabulary',
      config({ qkNorm: true, nVocab: 128_256 }),
      { nCtx: 1000, batchSize: 64, kvType: 'q8_0', vKvType: 'q4_0', normPass: true },
    ],
    [
      'flash partials for small batches of 8',
      config({}),
      { nCtx: 4104, batchSize: 64, kvType: 'f16', flashTokens: 8 },
    ],
    [
      'gemma with sliding-window layers, 151k vocabulary',
      config({
        nVocab: 151_936,
        gemma: { swa: { window: 512, ropeFreqBase: 1e4, ropeFreqScale: 1 } } as LlamaConfig['gemma'],
      }),
      { nCtx: 129, batchSize: 5, kvType: 'q4_0' },
    ],
  ];
  for (const [name, c, z] of cases) {
    it(`equals the bytes allocRunState asks for: ${name}`, () => {
      const sizes = allocated(c, z);
      expect(runStateBytes(c, z)).toBe(sum(sizes));
      const sampler = [...sizes].filter(([l]) => l.startsWith('sample_'));
      expect(sampler.map(([l]) => l).sort()).toEqual([
        'sample_candidates',
        'sample_history',
        'sample_params',
        'sample_stats',
        'sample_work',
      ]);
      expect(samplerStateBytes(c.nVocab, z.nCtx)).toBe(sampler.reduce((a, [, b]) => a + b, 0));
    });
  }

  it('sizes the flash partials for flashTokens query tokens [MAX_SPLITS, T, qDim] and [MAX_SPLITS, T, nHead]', () => {
    const c = config({});
    const qDim = c.nHead * c.headDim;
    for (const T of [undefined, 8]) {
      const sizes = allocated(c, { nCtx: 64, batchSize: 8, kvType: 'f16', flashTokens: T });
      expect(sizes.get('attn_part_o')).toBe(MAX_SPLITS * (T ?? 1) * qDim * 4);
      expect(sizes.get('attn_part_ml')).toBe(MAX_SPLITS * (T ?? 1) * c.nHead * 8);
    }
  });

  it('counts the candidates and stats buffers (~130 kB each at a 128k vocabulary)', () => {
    const sizes = allocated(cases[2][1], cases[2][2]);
    const { nParts } = sampleSplit(128_256);
    expect(sizes.get('sample_candidates')).toBe(nParts * 256 * 4);
    expect(sizes.get('sample_stats')).toBe(sampleStatsLayout(128_256).statsBytes);
    expect(sizes.get('sample_candidates')).toBeGreaterThan(120_000);
    expect(sizes.get('sample_stats')).toBeGreaterThan(120_000);
  });
});
