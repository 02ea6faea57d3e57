import { describe, expect, it } from 'vitest';
import { llamaBenchOptions } from '../cli/llama-bench-args.ts';
import { samplerStateBytes } from '../webgpu/model/state.ts';
import { syntheticGguf } from '../webgpu/model/synthetic.ts';
import {
  busyFraction,
  fitsVerdict,
  kernelTable,
  type MemoryProbe,
  meanStd,
  modelNeedBytes,
  planContext,
  planProblem,
  planTests,
  sweepDepths,
  testName,
  tokenCost,
} from './llama-bench.ts';
import { fitModelOf, modelFits, timestampResolutionNs } from './llama-bench-gpu.ts';

const GiB = 1024 ** 3;
const mem = (allocatable: number, capped = false, binding = 2 * GiB): MemoryProbe => ({
  maxBufferBytes: binding,
  maxBindingBytes: binding,
  allocatableBytes: allocatable,
  capped,
  capBytes: capped ? allocatable : 64 * GiB,
  chunkBytes: 256 * 1024 ** 2,
  ms: 1,
});

describe('llama-bench plan and statistics', () => {
  it('names tests like llama-bench and expands a plan', () => {
    expect(testName('pp', 512, 0)).toBe('pp512');
    expect(testName('tg', 128, 2048)).toBe('tg128 @ d2048');
    const plan = { nPrompt: [512], nGen: [128], depths: [0, 2048], reps: 5 };
    expect(planTests(plan).map((t) => testName(t.kind, t.n, t.depth))).toEqual([
      'pp512',
      'tg128',
      'pp512 @ d2048',
      'tg128 @ d2048',
    ]);
    expect(planContext(plan)).toBe(2560);
    expect(planProblem(plan)).toBeUndefined();
    expect(planProblem({ ...plan, reps: 0 })).toMatch(/reps/);
    expect(planProblem({ ...plan, nPrompt: [0], nGen: [0] })).toMatch(/no test/);
  });
  it('mean and population std', () => {
    expect(meanStd([2, 4, 4, 4, 5, 5, 7, 9])).toEqual({ mean: 5, std: 2 });
    expect(meanStd([3])).toEqual({ mean: 3, std: 0 });
  });
});

describe('where the time goes', () => {
  it('busy fraction = GPU time / wall time, clamped, null without timestamps', () => {
    expect(busyFraction(3, 4)).toBe(0.75);
    expect(busyFraction(5, 4)).toBe(1);
    expect(busyFraction(null, 4)).toBeNull();
    expect(busyFraction(1, 0)).toBeNull();
  });
  it('kernel table: ms per token and shares that sum to the total', () => {
    const t = kernelTable({ qkv: 3e6, ffn: 6e6, argmax: 1e6, embed: 0 }, 2);
    expect(t.map((k) => k.name)).toEqual(['ffn', 'qkv', 'argmax']);
    expect(t[0]).toEqual({ name: 'ffn', msPerToken: 3, share: 0.6 });
    expect(t.reduce((a, k) => a + k.msPerToken, 0)).toBeCloseTo(5, 12);
    expect(t.reduce((a, k) => a + k.share, 0)).toBeCloseTo(1, 12);
  });
  it('timestamp resolution: full, power-of-two masked, 100 µs', () => {
    expect(timestampResolutionNs([1n, 1234567n, 2000003n, 3000001n, 4000002n])).toBe(1);
    const m = 1n << 16n;
    expect(timestampResolutionNs([3n * m, 5n * m, 9n * m, 12n * m, 13n * m])).toBe(65536);
    expect(timestampResolutionNs([100000n, 300000n, 700000n, 900000n, 1100000n])).toBe(100000);
  });
});

describe('what a token costs', () => {
  it('remote: price per hour / (tok/s × 3600) × 1e6', () => {
    const c = tokenCost({ basis: 'remote', pricePerHour: 3.6, tokensPerSecond: 100 });
    expect(c.per1MOutputTokens).toBeCloseTo(10, 12); // 360,000 tokens per hour for 3.6
    expect(c.currency).toBe('USD');
  });
  it('local: power × electricity price', () => {
    const c = tokenCost({
      basis: 'local',
      powerW: 250,
      pricePerKWh: 0.4,
      currency: 'EUR',
      tokensPerSecond: 50,
    });
    expect(c.pricePerHour).toBeCloseTo(0.1, 12);
    expect(c.per1MOutputTokens).toBeCloseTo((0.1 / (50 * 3600)) * 1e6, 12);
    expect(() => tokenCost({ basis: 'remote', pricePerHour: 1, tokensPerSecond: 0 })).toThrow();
  });
});

describe('sweepDepths (the page card\'s "Sweep to context")', () => {
  it('0, 1024, 2048, 4096, … then the deepest depth the test still fits at', () => {
    expect(sweepDepths(2048, 128)).toEqual([0, 1024, 1920]);
    expect(sweepDepths(8192, 128)).toEqual([0, 1024, 2048, 4096, 8064]);
    expect(sweepDepths(8192, 512)).toEqual([0, 1024, 2048, 4096, 7680]);
    expect(sweepDepths(4096 + 128, 128)).toEqual([0, 1024, 2048, 4096]);
    // A short context: quarters.
    expect(sweepDepths(512, 128)).toEqual([0, 96, 192, 384]);
    expect(sweepDepths(128, 128)).toEqual([0]);
    expect(sweepDepths(64, 128)).toEqual([]);
  });
});

describe('what fits', () => {
  const stories = fitModelOf(syntheticGguf('synthetic:stories260k-f32'));
  const big = fitModelOf(syntheticGguf('synthetic:llama-3.1-8b-f16'));
  it('need = weights + KV cache of the chosen type + run state (+ the repacking staging peak)', () => {
    const n = modelNeedBytes(big, 2048, 'f32');
    expect(n.weightBytes).toBe(16061055232);
    expect(n.kvBytes).toBe(4 * 2 * 32 * 2048 * 1024);
    expect(n.stagingBytes).toBe(0); // F16 is not repacked
    expect(n.needBytes).toBe(n.weightBytes + n.kvBytes + n.stateBytes);
    // Run state: 64-token batch activations, logits + their readback, RoPE table, the GPU sampler's
    // buffers (its logits copy, history, candidates' ids and top-p stats: webgpu/model/state.ts).
    expect(n.stateBytes).toBe(
      4 * (64 * (4096 + 2 * 4096 + 14336 + 1) + 128256 * 2) +
        2048 * 128 * 4 +
        samplerStateBytes(128256, 2048),
    );
    expect(samplerStateBytes(128256, 2048)).toBeGreaterThan(4 * 128256 + 2 * 120_000);
    // Q8_0 8B: the largest repacked matrix is output.weight (128256 rows × 4096 / 32 blocks × 34 bytes).
    const q8 = modelNeedBytes(fitModelOf(syntheticGguf('synthetic:llama-3.1-8b-q8_0')), 2048);
    expect(q8.stagingBytes).toBe(128256 * 128 * 34 + 16);
    expect(q8.needBytes).toBe(q8.weightBytes + q8.kvBytes + q8.stateBytes + q8.stagingBytes);
  });
  it('a Q8_0 / Q4_0 cache counts ggml_row_size: 34 and 18 bytes per 32 values, K and V apart', () => {
    const rows = 32 * 2048; // layers × ctx, each row kvDim = 1024 values = 32 blocks
    const q8 = modelNeedBytes(big, 2048, 'q8_0');
    const q4 = modelNeedBytes(big, 2048, 'q4_0');
    expect(q8.kvBytes).toBe(2 * rows * 32 * 34);
    expect(q4.kvBytes).toBe(2 * rows * 32 * 18);
    // K q8_0, V q4_0 (llama.cpp's -ctk q8_0 -ctv q4_0).
    expect(modelNeedBytes(big, 2048, 'q8_0', 64, 'q4_0').kvBytes).toBe(rows * 32 * (34 + 18));
    // The batch's K and V rows wait in f32 before they are quantized (64-token batch × kvDim × 4 × 2).
    expect(q8.stateBytes - modelNeedBytes(big, 2048, 'f16').stateBytes).toBe(2 * 64 * 1024 * 4);
    // 8B F16 at 128k tokens: 15.0 GiB of weights + 16 GiB (f16) or 8.5 GiB (q8_0) of KV cache; 27 GiB.
    expect(fitsVerdict(big, 131072, mem(27 * GiB), 'f16').ok).toBe(false);
    expect(fitsVerdict(big, 131072, mem(27 * GiB), 'q8_0')).toMatchObject({ ok: true, kvType: 'q8_0' });
    // stories260K's head size is 8: no whole blocks per head, so the engine refuses the cache.
    const v = modelFits(syntheticGguf('synthetic:stories260k-f32'), mem(27 * GiB), 256, 'q4_0');
    expect(v.ok).toBe(false);
    expect(v.reason).toMatch(/q4_0 K cache needs a head size that is a multiple of 32.*head size is 8/);
  });
  it('the KV cache is 2 bytes per element for f16 (the default), 4 for f32', () => {
    const f16 = modelNeedBytes(big, 2048, 'f16');
    const f32 = modelNeedBytes(big, 2048, 'f32');
    expect(f16.kvBytes).toBe(2 * 2 * 32 * 2048 * 1024); // 2 (K, V) × layers × ctx × kvDim × 2 bytes
    expect(f32.kvBytes).toBe(2 * f16.kvBytes);
    expect(modelNeedBytes(big, 2048)).toEqual(f16);
    expect(f32.needBytes - f16.needBytes).toBe(f16.kvBytes);
    // Only the KV cache changes with the type.
    expect(f32.weightBytes).toBe(f16.weightBytes);
    expect(f32.stateBytes).toBe(f16.stateBytes);
    // The verdict says which type it counted, and the type decides it: 8B F16 at 32k tokens needs
    // 15.0 GiB of weights + 4 GiB (f16) or 8 GiB (f32) of KV cache; 21 GiB allocatable.
    const at = (t: 'f16' | 'f32') => fitsVerdict(big, 32768, mem(21 * GiB), t);
    expect(at('f16')).toMatchObject({ ok: true, kvType: 'f16', kvBytes: 2 * 2 * 32 * 32768 * 1024 });
    expect(at('f16').reason).toMatch(/f16 KV cache 4\.00 GiB at 32768 tokens/);
    expect(at('f32')).toMatchObject({ ok: false, kvType: 'f32', kvBytes: 4 * 2 * 32 * 32768 * 1024 });
    expect(at('f32').reason).toMatch(/f32 KV cache 8\.00 GiB at 32768 tokens.*short by/);
    expect(fitsVerdict(big, 32768, mem(21 * GiB)).ok).toBe(true);
    // modelFits (the GGUF header path the page and the command line use) passes the type through.
    const file = syntheticGguf('synthetic:llama-3.1-8b-f16');
    expect(modelFits(file, mem(21 * GiB), 32768, 'f32')).toMatchObject({ ok: false, kvType: 'f32' });
    expect(modelFits(file, mem(21 * GiB), 32768)).toMatchObject({ ok: true, kvType: 'f16' });
  });
  it('modelFits counts the run state of the batch the engine would choose there: 512 tokens on a GPU, 64 on a software adapter', () => {
    const file = syntheticGguf('synthetic:llama-3.1-8b-q4_k_m');
    const m = fitModelOf(file);
    const gpu = modelFits(file, mem(64 * GiB), 2048);
    const sw = modelFits(file, { ...mem(64 * GiB), isFallback: true }, 2048);
    // [B, nEmbd + 2·qDim + nFF + 1] f32 activations: (512 − 64) × (4096 + 8192 + 14336 + 1) × 4 bytes more.
    expect(gpu.stateBytes! - sw.stateBytes!).toBe((512 - 64) * (4096 + 2 * 4096 + 14336 + 1) * 4);
    expect(gpu.stateBytes).toBe(modelNeedBytes(m, 2048, 'f16', 512).stateBytes);
    expect(gpu.reason).toMatch(/for 512-token batches/);
    expect(sw.reason).toMatch(/for 64-token batches/);
    // The widest activation row (nVocab × 4 bytes = 513 KB) must fit a binding B times: 2 GiB bindings
    // allow the most, 512; 64 MiB ones 130, rounded down to the 32-token tile: 128.
    expect(modelFits(file, mem(64 * GiB, false, 64 * 1024 ** 2), 2048).reason).toMatch(
      /for 128-token batches/,
    );
    // A context shorter than the batch caps it.
    expect(modelFits(file, mem(64 * GiB), 100).reason).toMatch(/for 96-token batches/);
  });
  it('fits, short by, capped, and binding limits', () => {
    expect(fitsVerdict(stories, 512, mem(GiB)).ok).toBe(true);
    const v = fitsVerdict(big, 2048, mem(8 * GiB), 'f32');
    expect(v).toMatchObject({ ok: false, certain: true });
    expect(v.reason).toMatch(/short by 7\.47 GiB/);
    const c = fitsVerdict(big, 2048, mem(GiB, true));
    expect(c).toMatchObject({ ok: false, certain: false });
    expect(c.reason).toMatch(/cap/);
    // 128 MiB bindings (8 storage buffers): the FFN matrices split, but token_embd (1 GiB) would need
    // 8 parts and the embedding kernel can bind 6.
    const b = fitsVerdict(big, 2048, mem(64 * GiB, false, 128 * 1024 ** 2));
    expect(b.ok).toBe(false);
    expect(b.reason).toMatch(/token_embd\.weight .* 8 buffer bindings .* can bind 6/);
    // 10 storage buffers per stage: it fits.
    expect(
      fitsVerdict(big, 2048, { ...mem(64 * GiB, false, 128 * 1024 ** 2), maxStorageBuffers: 10 }).ok,
    ).toBe(true);
    // A 32 MiB binding splits every matrix of the 8B model; the output's 1 GiB is 32 parts and fine.
    expect(
      fitsVerdict(big, 2048, { ...mem(64 * GiB, false, 32 * 1024 ** 2), maxStorageBuffers: 64 }).ok,
    ).toBe(true);
    expect(fitsVerdict(big, 2048, mem(64 * GiB)).ok).toBe(true);
  });
});

describe('--llama-bench flags', () => {
  it('defaults like llama-bench, lists, cost', () => {
    expect(llamaBenchOptions({ 'llama-bench': true })).toMatchObject({
      llamaBench: { nPrompt: [512], nGen: [128], depths: [0], reps: 5 },
      profile: true,
    });
    expect(
      llamaBenchOptions({
        'llama-bench': true,
        depth: '0,2048',
        reps: '3',
        'power-w': '300',
        'kwh-price': '0.3',
      }),
    ).toMatchObject({ llamaBench: { depths: [0, 2048], reps: 3 }, cost: { powerW: 300, pricePerKWh: 0.3 } });
    expect(() => llamaBenchOptions({ depth: '0' })).toThrow(/need --llama-bench/);
    expect(() => llamaBenchOptions({ 'power-w': '3' })).toThrow(/go together/);
    expect(() => llamaBenchOptions({ 'llama-bench': true, 'n-prompt': 'x' })).toThrow();
    expect(llamaBenchOptions({ 'probe-cap-gb': '2' })).toEqual({ probeMemory: { capBytes: 2 * GiB } });
  });
});
