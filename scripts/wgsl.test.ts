/**
 * tests/wgsl/ holds what the kernel code makes: the golden kernels' WGSL and the fingerprint of every
 * planned kernel of the snapshot models (scripts/wgsl.ts). A kernel change must come with its regenerated
 * snapshot (`npm run wgsl -- --write`), so review sees it as a WGSL diff; a refactor keeps them unchanged.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  findVariant,
  GOLDEN_KERNELS,
  kernelWGSL,
  parseKvSpec,
  plannedKernels,
  snapshotModel,
} from '../src/webgpu/wgsl-snapshot.ts';
import { goldenFiles, planFingerprints, WGSL_DIR } from './wgsl.ts';

describe('tests/wgsl', () => {
  test('each golden kernel is the WGSL the code plans now', async () => {
    for (const [name, code] of Object.entries(await goldenFiles())) {
      const have = readFileSync(join(WGSL_DIR, name), 'utf8');
      expect(code, `${name} changed: review the diff of npm run wgsl -- --write`).toBe(have);
    }
  });

  test('every planned kernel of the snapshot models hashes as fingerprints.json', async () => {
    const have = JSON.parse(readFileSync(join(WGSL_DIR, 'fingerprints.json'), 'utf8'));
    const now = await planFingerprints();
    const changed = Object.keys(now.plans).filter((k) => now.plans[k] !== have.plans[k]);
    expect(changed, 'plans whose kernels changed (npm run wgsl -- --write)').toEqual([]);
    expect(Object.keys(now.plans).sort()).toEqual(Object.keys(have.plans).sort());
    expect(now.distinct).toBe(have.distinct);
    expect(now.loaders).toEqual(have.loaders);
  }, 120_000);
});

describe('npm run wgsl', () => {
  test('prints the kernel a golden name stands for, with its bindings and entry point', async () => {
    const [m, v, l] = GOLDEN_KERNELS.argmax;
    const code = await kernelWGSL(m, v, l);
    expect(code).toContain('@compute');
    expect(code).toMatch(/@group\(0\) @binding\(0\) var<storage, read> logits/);
  });

  test('the Q4_K decode kernel of the GPU profile reads Q4_K planes, the software one its own layout', async () => {
    const gpu = await kernelWGSL(...GOLDEN_KERNELS['mmv-q4_k-planar']);
    const int8 = await kernelWGSL(...GOLDEN_KERNELS['mmv-int8-q4_k-planar']);
    expect(gpu).not.toContain('dot4I8Packed');
    expect(int8).toContain('dot4I8Packed');
  });

  test('an unknown label or variant is refused with the ones there are', async () => {
    await expect(kernelWGSL('synthetic:stories260k-f32', 'gpu', 'blk.99.ffn.decode')).rejects.toThrow(
      /plans no kernel "blk\.99\.ffn\.decode"; it plans \(blk\.0's, the other layers alike\):\n {2}embed\n {2}blk\.0\.qkv\.decode\n/,
    );
    await expect(kernelWGSL('synthetic:stories260k-f32', 'gpu', 'nope')).rejects.not.toThrow(/blk\.1\./);
    const { cfg } = snapshotModel('synthetic:stories260k-f32');
    expect(() => findVariant('gpu/nope/tile', cfg)).toThrow(
      /no kernel variant "gpu\/nope\/tile"; there are:\n {2}swiftshader\/lanes1-u1-t64-packed\/light\n/,
    );
  });

  test('the software profile splits fused matmuls per segment and plans the prefill norm pass', async () => {
    const { file, cfg } = snapshotModel('synthetic:bench-60m-q4_k_m');
    const labels = (await plannedKernels(file, cfg, findVariant('swiftshader', cfg))).map((k) => k.label);
    expect(labels).toContain('blk.0.qkv.decode#2');
    expect(labels).toContain('blk.7.attn_norm.prefill');
    const gpuLabels = (await plannedKernels(file, cfg, findVariant('gpu', cfg))).map((k) => k.label);
    expect(gpuLabels).toContain('blk.0.qkv.decode');
    expect(gpuLabels.some((l) => l.includes('norm.prefill'))).toBe(false);
  });

  test('a Q8_0/Q4_0 KV cache: the quantize-on-write kernel, blocks read by attention, no cache write in QKV', async () => {
    const [m, v] = GOLDEN_KERNELS['kv-quant-q8_0'];
    const { file, cfg } = snapshotModel(m);
    const labels = async (k: 'f16' | 'q8_0') =>
      (await plannedKernels(file, cfg, findVariant(v, cfg), k)).map((x) => x.label);
    expect(await labels('f16')).not.toContain('blk.0.kv_quant');
    expect((await labels('q8_0')).filter((l) => l === 'blk.3.kv_quant')).toHaveLength(2); // decode and prefill
    // K in Q8_0 (34-byte blocks of 32), V in Q4_0 (18-byte blocks): each read with its own block size.
    const flash = await kernelWGSL(...GOLDEN_KERNELS['flash-decode-tiled-q8_0-q4_0']);
    expect(flash).toMatch(/fn ld_kc4[\s\S]*\* 34u/);
    expect(flash).toMatch(/fn ld_vc4[\s\S]*\* 18u/);
    expect(await kernelWGSL(...GOLDEN_KERNELS['flash-decode-tiled'])).not.toMatch(/\* (34|18)u/);
    const qkv = await kernelWGSL(...GOLDEN_KERNELS['qkv-rope-decode-q4_k-kv-q8_0']);
    expect(qkv).toContain('var<storage, read_write> k_new');
    expect(qkv).not.toContain('k_cache');
    expect(await kernelWGSL(...GOLDEN_KERNELS['qkv-rope-decode-q4_k'])).toContain('k_cache');
  });

  test('--kv-type: TYPE or K/V, anything else refused with the types there are', async () => {
    expect(parseKvSpec('q4_0')).toEqual({ k: 'q4_0', v: 'q4_0' });
    expect(parseKvSpec('q8_0/q4_0')).toEqual({ k: 'q8_0', v: 'q4_0' });
    for (const bad of ['q5_0', 'Q8_0', 'q8_0/q4_0/f16', '', 'q8_0/'])
      expect(() => parseKvSpec(bad), bad).toThrow(/TYPE or K\/V, each of f16, f32, q8_0, q4_0/);
    await expect(kernelWGSL('synthetic:bench-60m-q4_k_m', 'gpu', 'blk.0.kv_quant', 'f16')).rejects.toThrow(
      /plans no kernel "blk\.0\.kv_quant"/,
    );
  });
});
