import { describe, expect, it } from 'vitest';
import {
  SUBGROUP_MATRIX_FEATURE,
  type SubgroupMatrixConfig,
  subgroupMatrixSupport,
} from '../webgpu/device.ts';
import { type KernelsInfo, pickInfo, subgroupMatrixInfo } from '../webgpu/kernel-plan.ts';
import { argmaxKernels } from '../webgpu/kernels/argmax.ts';
import { samplePassPlan } from '../webgpu/kernels/sample.ts';
import { isOurKernels, kernelReadings, pickPassesText } from './kernel-readings.ts';

// `ModelInfo.kernels` of stories260K loaded by WebGpuEngine on Dawn's SwiftShader adapter (Node, 2026-12-05),
// copied verbatim from `describePlan`'s output.
const SWIFTSHADER: KernelsInfo = {
  decode: 'mmv',
  mmvLayout: 'lanes1-u2-t64-packed',
  chosenBy: 'measured',
  trials: [
    { layout: 'lanes1-u1-t64-packed', ms: 1.622 },
    { layout: 'lanes1-u2-t64-packed', ms: 0.7406 },
    { layout: 'lanes1-u4-t64-packed', ms: 1.1272 },
    { layout: 'lanes1-u8-t8-packed-xs4', ms: 0.9896 },
  ],
  mmvLayouts: {
    qkv: { layout: 'lanes1-u2-t64-packed', chosenBy: 'ffn-trial' },
    wo: { layout: 'lanes1-u2-t64-packed', chosenBy: 'ffn-trial' },
    ffn: { layout: 'lanes1-u2-t64-packed', chosenBy: 'measured' },
    output: { layout: 'lanes1-u2-t64-packed', chosenBy: 'ffn-trial' },
  },
  fallback: 'rows',
  matmuls: { mmv: 16, fallback: 5 },
  planarTensors: 0,
  splitTensors: 0,
  dispatchesPerToken: 44,
  splitSegments: true,
  attention: {
    decode: 'flash',
    layout: 'strided',
    lanes: 1,
    minChunk: 1024,
    targetWorkgroups: 4,
    prefill: {
      kernel: 'rows',
      tokensPerWorkgroup: 16,
      headsPerWorkgroup: 2,
      kvTile: 2,
      threads: 4,
      shareKv: 4,
      subgroupMatrix: {
        chosen: false,
        reason:
          'no subgroup matrices: the adapter does not offer chromium-experimental-subgroup-matrix (Dawn offers it with the instance toggle enable-dawn-features=allow_unsafe_apis; Chromium with --enable-unsafe-webgpu)',
      },
    },
  },
  prefill: {
    matmul: 'mmv',
    mmvLayout: 'lanes1-u2-t32-packed',
    tokensPerTile: 4,
    splitSegments: true,
    normPass: false,
  },
};

// What Dawn reported on an NVIDIA H200 (../shared/notes/h200-2026-12-04.md), as in subgroup-matrix.test.ts.
const H200: SubgroupMatrixConfig[] = [
  { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
  { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 16 },
  { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 },
];
const all = new Set([SUBGROUP_MATRIX_FEATURE, 'shader-f16', 'subgroups']);
const support = subgroupMatrixSupport({
  adapterFeatures: all,
  deviceFeatures: all,
  info: { subgroupMatrixConfigs: H200 },
  subgroupMaxSize: 32,
  maxWorkgroupStorage: 49152,
});
const tile = { M: 16, N: 16, K: 16, subgroupSize: 32 } as const;
const passed = [{ config: 'f16→f32 16x16x16', ok: true }];

/** A GPU load's kernels: SwiftShader's decode side with a tile prefill (trial times random, not round). */
function gpuKernels(
  prefill: NonNullable<KernelsInfo['prefill']>,
  attention: KernelsInfo['attention'],
): KernelsInfo {
  return { ...SWIFTSHADER, prefill, attention };
}
const rnd = () => +(0.05 + Math.random() * 3).toFixed(4);

describe('kernelReadings', () => {
  it('SwiftShader (a real describePlan output): register-tile prefill, no subgroup matrices and why, decode mmv', () => {
    const r = kernelReadings(SWIFTSHADER);
    const texts = r.map((x) => x.text);
    expect(texts[0]).toBe(
      "Prefill matmuls: register tiles of 4 tokens (layout lanes1-u2-t32-packed), the software adapter's kernel.",
    );
    const attn = r.find((x) => x.text.startsWith('Prefill attention:'));
    expect(attn?.text).toBe(
      `Prefill attention: rows kernel (16 tokens, 2 heads per workgroup, KV tiles of 2); subgroup matrices not chosen: ${SWIFTSHADER.attention?.prefill?.subgroupMatrix?.reason}.`,
    );
    expect(texts).toContain(
      'Decode attention: flash-decoding, strided layout, 1 lane per position, chunks of at least 1024 positions.',
    );
    const dec = r.find((x) => x.text.startsWith('Decode matmuls:'));
    expect(dec?.text).toBe(
      'Decode matmuls: mmv, layout lanes1-u2-t64-packed (chosen by a timed trial at this load); 16 matmuls per token on mmv, 5 on the rows kernel.',
    );
    expect(dec?.detail).toBe(
      'Gate+up trial, ms per dispatch: lanes1-u1-t64-packed 1.62 ms, lanes1-u2-t64-packed 0.741 ms, lanes1-u4-t64-packed 1.13 ms, lanes1-u8-t8-packed-xs4 0.99 ms. 44 dispatches per token.',
    );
    expect(r.every((x) => x.level !== 'warn')).toBe(true);
    // A GPU's trial rotated over copies of the matrix: the detail says over how many.
    const gpu = kernelReadings({
      ...SWIFTSHADER,
      mmvLayouts: { ...SWIFTSHADER.mmvLayouts, ffn: { ...SWIFTSHADER.mmvLayouts!.ffn!, trialCopies: 4 } },
    }).find((x) => x.text.startsWith('Decode matmuls:'));
    expect(gpu?.detail).toMatch(
      /^Gate\+up trial \(over 4 copies of the matrix\), ms per dispatch: lanes1-u1/,
    );
  });

  it('subgroup-matrix tile chosen by the trial: says the tile, the trial times, the configurations and the self-test', () => {
    const trials = [
      { tile: 'float' as const, ms: rnd() },
      { tile: 'int8' as const, ms: rnd() },
      { tile: 'sgmat' as const, ms: rnd() },
    ];
    const sg = subgroupMatrixInfo(
      support,
      { tile, selfTest: passed },
      { intDot: false, chosenBy: 'measured', subgroupMatrix: tile, trials },
      {
        reason: 'the integer tile failed its self-test: i8→i32 16x16x32 max error 3 at row 17',
        selfTest: [
          { config: 'i8→i32 16x16x32', ok: false, reason: 'max error 3 at row 17', i8Units: 'words' },
          { config: 'i8→i32 16x16x32', ok: false, reason: 'max error 5 at row 2', i8Units: 'bytes' },
        ],
      },
    );
    const r = kernelReadings(
      gpuKernels(
        {
          matmul: 'tile',
          tokensPerTile: 32,
          intDot: [],
          tileChosenBy: 'measured',
          tileTrials: trials,
          subgroupMatrix: sg,
        },
        {
          decode: 'flash',
          layout: 'tiled',
          lanes: 4,
          minChunk: 256,
          prefill: {
            kernel: 'sgmat',
            subgroupMatrix: { chosen: true, tile: '16x16x16', selfTest: passed },
            trial: [
              { kernel: 'sgmat', ms: 0.321 },
              { kernel: 'float', ms: 1.07 },
            ],
          },
        },
      ),
    );
    expect(r[0]).toEqual({
      level: 'ok',
      text: 'Prefill matmuls: subgroup-matrix tile 16x16x16, 32 tokens per tile; chosen by a timed trial at this load.',
      detail: `Trial, ms per dispatch: float ${+trials[0]!.ms.toPrecision(3)} ms, int8 ${+trials[1]!.ms.toPrecision(3)} ms, sgmat ${+trials[2]!.ms.toPrecision(3)} ms.`,
    });
    expect(r[1]?.level).toBe('ok');
    expect(r[1]?.text).toBe('Subgroup matrices (prefill matmuls): chosen, tile 16x16x16.');
    expect(r[1]?.detail).toContain('Configurations: f16→f32 16x16x16, f16→f32 16x8x16, i8→i32 16x16x32.');
    expect(r[1]?.detail).toContain(
      'Integer tile (i8 → i32): not chosen: the integer tile failed its self-test',
    );
    expect(r[1]?.detail).toContain('self-test: f16→f32 16x16x16 passed');
    expect(r[1]?.detail).toContain(
      'integer tile self-test: i8→i32 16x16x32 (i8 offsets in words) failed (max error 3 at row 17); i8→i32 16x16x32 (i8 offsets in bytes) failed (max error 5 at row 2)',
    );
    expect(r[2]?.text).toBe('Prefill attention: sgmat kernel; subgroup matrices chosen, tile 16x16x16.');
    expect(r[2]?.detail).toBe(
      'Trial (512 tokens), ms per dispatch: sgmat 0.321 ms, float 1.07 ms. self-test: f16→f32 16x16x16 passed',
    );
  });

  it('the trial picked the float tile: available, not chosen, slower in the trial; attention kept float by its trial', () => {
    const trials = [
      { tile: 'float' as const, ms: 0.8 + rnd() / 10 },
      { tile: 'sgmat' as const, ms: 1.3 + rnd() },
    ];
    const sg = subgroupMatrixInfo(
      support,
      { tile, selfTest: passed },
      { intDot: false, chosenBy: 'measured', trials },
    );
    const r = kernelReadings(
      gpuKernels(
        {
          matmul: 'tile',
          tokensPerTile: 32,
          intDot: ['ffn', 'down'],
          tileChosenBy: 'measured',
          tileTrials: trials,
          subgroupMatrix: sg,
        },
        {
          decode: 'flash',
          layout: 'tiled',
          lanes: 4,
          minChunk: 256,
          prefill: {
            kernel: 'tiled',
            tokensPerWorkgroup: 16,
            kvTile: 32,
            subgroupMatrix: {
              chosen: false,
              reason: 'slower than the float kernel in the timed trial',
              selfTest: passed,
            },
            trial: [
              { kernel: 'sgmat', ms: 2.5 },
              { kernel: 'float', ms: 1.25 },
            ],
          },
        },
      ),
    );
    expect(r[0]?.text).toBe(
      'Prefill matmuls: integer-dot tile (ffn, down; float for the rest), 32 tokens per tile; chosen by a timed trial at this load.',
    );
    expect(r[1]).toMatchObject({
      level: 'info',
      text: 'Subgroup matrices (prefill matmuls): available, not chosen: slower than the chosen tile in the timed trial.',
    });
    expect(r[2]?.text).toBe(
      'Prefill attention: tiled kernel (16 tokens, KV tiles of 32); subgroup matrices not chosen: slower than the float kernel in the timed trial.',
    );
    expect(r[2]?.detail).toMatch(/^Trial \(512 tokens\), ms per dispatch: sgmat 2\.5 ms, float 1\.25 ms\./);
  });

  it('the integer tile chosen: its i8 tile and the offset unit its self-test settled', () => {
    const it8 = { M: 16, N: 16, K: 32, subgroupSize: 32, int: true, i8Units: 'bytes' } as const;
    const selfTest = [{ config: 'i8→i32 16x16x32', ok: true, i8Units: 'bytes' as const }];
    const sg = subgroupMatrixInfo(
      support,
      { tile, selfTest: passed },
      { intDot: true, chosenBy: 'measured', subgroupMatrix: it8 },
      { tile: it8, selfTest },
    );
    const r = kernelReadings(
      gpuKernels({ matmul: 'tile', tokensPerTile: 32, intDot: ['ffn'], subgroupMatrix: sg }, undefined),
    );
    expect(r[0]?.text).toBe('Prefill matmuls: subgroup-matrix tile i8 16x16x32, 32 tokens per tile.');
    expect(r[1]?.text).toBe('Subgroup matrices (prefill matmuls): chosen, tile i8 16x16x32.');
    expect(r[1]?.detail).toContain('Integer tile (i8 → i32): chosen; i8 offsets in bytes.');
    expect(r[1]?.detail).toContain('integer tile self-test: i8→i32 16x16x32 (i8 offsets in bytes) passed');
  });

  it('a failed self-test is a warning with its reason', () => {
    const fail = [{ config: 'f16→f32 16x16x16', ok: false, reason: 'max error 0.5' }];
    const sg = subgroupMatrixInfo(
      support,
      { reason: 'the subgroup-matrix tile failed its self-test on every configuration', selfTest: fail },
      { intDot: false, chosenBy: 'measured' },
    );
    const r = kernelReadings(
      gpuKernels({ matmul: 'tile', tokensPerTile: 32, subgroupMatrix: sg }, undefined),
    );
    expect(r[1]).toMatchObject({
      level: 'warn',
      text: 'Subgroup matrices (prefill matmuls): available, not chosen: the subgroup-matrix tile failed its self-test on every configuration.',
    });
    expect(r[1]?.detail).toContain('self-test: f16→f32 16x16x16 failed (max error 0.5)');
  });
});

/** `ModelInfo.kernels` with the pick of a load of `nVocab` logits (the dispatches forward.ts plans). */
function withPick(nVocab: number, sampleTopP: boolean, sampling?: 'gpu' | 'cpu'): KernelsInfo {
  const pick = pickInfo(
    nVocab,
    {
      argmax: [{ wgX: argmaxKernels({ nVocab }).nParts }, { wgX: 1 }],
      sampler: samplePassPlan(nVocab, sampleTopP).map((p) => ({ role: p.role, wgX: p.workgroups })),
    },
    { sampleTopP, sampling },
  );
  return { ...SWIFTSHADER, ...pick };
}

describe('kernelReadings: the token pick', () => {
  it("stories260K's 512 logits: one stripe, the sampler's draw only, and why", () => {
    const r = kernelReadings(withPick(512, false));
    expect(r.at(-2)).toEqual({
      level: 'info',
      text: 'Greedy pick: the argmax over 512 logits in two passes, one stripe of 1,024 logits (64 threads per workgroup), then one workgroup over its partial maximum.',
    });
    expect(r.at(-1)).toEqual({
      level: 'info',
      text: 'GPU sampler: one 128-thread workgroup draws.',
      detail:
        'Dispatches per token: greedy: argmax ×2; greedy with a repetition penalty: draw; top-k 40: draw; top-p 0.95: draw; temperature alone: draw. Top-k and top-p candidates not planned: one stripe (512 logits ≤ 1024): the draw reads the vocabulary at once.',
    });
  });

  it("Llama 3's 128,256 logits on a GPU: 126 stripes, top-k and top-p candidates over them", () => {
    const r = kernelReadings(withPick(128_256, true));
    expect(r.at(-2)?.text).toBe(
      'Greedy pick: the argmax over 128,256 logits in two passes, 126 stripes of 1,024 logits (64 threads per workgroup), then one workgroup over the 126 partial maxima.',
    );
    expect(r.at(-1)).toEqual({
      level: 'info',
      text: 'GPU sampler: top-k candidates (k ≤ 256) and top-p candidates (3 passes) over 126 stripes of 1,024 logits, then one 128-thread workgroup draws from their list.',
      detail:
        'Dispatches per token: greedy: argmax ×2; greedy with a repetition penalty: draw; top-k 40: candidates + draw; top-p 0.95: top-p ×3 + draw; temperature alone: draw.',
    });
  });

  it('a software adapter plans no top-p passes and says why; CPU sampling is named', () => {
    const sw = kernelReadings(withPick(151_936, false)).at(-1);
    expect(sw?.text).toBe(
      'GPU sampler: top-k candidates (k ≤ 256) over 149 stripes of 1,024 logits, then one 128-thread workgroup draws from their list.',
    );
    expect(sw?.detail).toMatch(
      /top-p 0\.95: draw; .* Top-p candidates not planned: a software adapter's plan/,
    );
    const cpu = kernelReadings(withPick(32_000, true, 'cpu')).at(-1);
    expect(cpu?.text).toMatch(/\(not used: this engine samples on the CPU\)\.$/);
    expect(cpu?.detail).toMatch(
      /^Dispatches per token: greedy: argmax ×2; greedy with a repetition penalty: CPU; top-k 40: CPU;/,
    );
  });

  it('small batches: off by the software default, chosen by a trial with its times, forced, unavailable', () => {
    const sb = (smallBatch: KernelsInfo['smallBatch']) =>
      kernelReadings({ ...SWIFTSHADER, smallBatch }).find((x) => x.text.startsWith('Small batches:'));
    expect(sb({ maxTokens: 0, chosenBy: 'adapter' })?.text).toBe(
      'Small batches: every batch of 2 or more tokens runs the prefill kernels (the default for this adapter and model).',
    );
    const mmv4 = 0.1 + Math.random();
    const tile4 = mmv4 + 0.5;
    const r = sb({
      maxTokens: 4,
      chosenBy: 'trial',
      trials: [
        { tokens: 4, mmvMs: mmv4, tileMs: tile4 },
        { tokens: 8, mmvMs: 9.87, tileMs: 5.43 },
      ],
    });
    expect(r?.text).toBe(
      "Small batches: 2–4 tokens (short prompts, draft verification) run the layers' matmuls through the decode kernels (chosen by a timed trial at this load).",
    );
    expect(r?.detail).toBe(
      `Trial, ms per whole forward pass (mmv / prefill kernels): 4 tokens ${Number(mmv4.toPrecision(3))} / ${Number(tile4.toPrecision(3))}, 8 tokens 9.87 / 5.43.`,
    );
    expect(sb({ maxTokens: 8, chosenBy: 'option' })?.text).toContain('2–8 tokens');
    expect(sb({ maxTokens: 8, chosenBy: 'option', attention: 'flash' })?.text).toMatch(
      /\(set by the smallBatch option\), attention by flash-decoding over chunks of the cache\.$/,
    );
    expect(sb({ maxTokens: 8, chosenBy: 'trial', attention: 'prefill-kernel' })?.text).toMatch(
      /, attention by the prefill kernel\.$/,
    );
    // Off: no attention clause (no small batch runs).
    expect(sb({ maxTokens: 0, chosenBy: 'trial', attention: 'flash' })?.text).not.toContain('attention');
    expect(sb({ maxTokens: 8, chosenBy: 'option' })?.text).toContain('set by the smallBatch option');
    expect(sb({ maxTokens: 4, chosenBy: 'cached' })?.text).toContain(
      '(chosen by an earlier trial of this model on this adapter)',
    );
    expect(sb({ maxTokens: 0, chosenBy: 'unavailable' })?.text).toContain(
      'unavailable: mmv runs no decode matmul',
    );
    expect(sb(undefined)).toBeUndefined();
  });

  it('pickPassesText groups repeated kinds', () => {
    expect(pickPassesText(['argmax_partials', 'argmax_final'])).toBe('argmax ×2');
    expect(pickPassesText(['top_p_max', 'top_p_mass', 'top_p_compact', 'draw'])).toBe('top-p ×3 + draw');
    expect(pickPassesText(['candidates', 'draw'])).toBe('candidates + draw');
    expect(pickPassesText([])).toBe('CPU');
  });
});

describe('isOurKernels', () => {
  it("takes describePlan's output and nothing else", () => {
    expect(isOurKernels(SWIFTSHADER)).toBe(true);
    expect(isOurKernels(undefined)).toBe(false);
    expect(isOurKernels({ decode: 'mmv' })).toBe(false);
    expect(isOurKernels({ backend: 'webllm' })).toBe(false);
  });
});
