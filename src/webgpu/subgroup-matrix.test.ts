/**
 * Subgroup-matrix negotiation (device.ts `subgroupMatrixSupport`; `setNodeDawnOptions` in node-dawn-options.test.ts) on stubbed adapters,
 * the GPU tab's reading of the adapter's configurations, and the structure of the subgroup-matrix tile's
 * WGSL (kernels/mmm-sgmat.ts; its arithmetic runs through the emulator in sgmat-check.browser.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { readReport, snapshotAdapter } from '../bench/gpu-report.ts';
import { emulateSubgroupMatrix } from '../testing/sgmat-emulator.ts';
import {
  SGMAT_WORKGROUP_BYTES,
  SUBGROUP_MATRIX_FEATURE,
  type SubgroupMatrixConfig,
  subgroupMatrixSupport,
} from './device.ts';
import { forcedSubgroupMatrixPrefill, subgroupMatrixInfo } from './kernel-plan.ts';
import type { WeightType } from './kernels/common.ts';
import type { MatmulOptions } from './kernels/matmul.ts';
import { mmmWGSL, mmmWorkgroupsX } from './kernels/mmm.ts';
import {
  mmmSgmatIntWGSL,
  mmmSgmatWGSL,
  SGMAT_INT_STRIDE_WORDS,
  SGMAT_STRIDE,
  sgmatIntHalves,
  sgmatIntWorkgroupBytes,
  sgmatName,
  sgmatTileCovers,
  sgmatTileDims,
  sgmatTileWGSL,
  sgmatWorkgroupBytes,
} from './kernels/mmm-sgmat.ts';

/** Bytes of a kernel's `var<workgroup>` arrays, read from its WGSL (f16 2, vec4<f32> 16, else 4). */
function declaredWorkgroupBytes(code: string): number {
  let n = 0;
  for (const m of code.matchAll(/var<workgroup> \w+: array<([\w<>]+), (\d+)>/g))
    n += Number(m[2]) * (m[1] === 'f16' ? 2 : m[1] === 'vec4<f32>' ? 16 : 4);
  return n;
}

// What Dawn reported on an NVIDIA H200 (../shared/notes/h200-2026-12-04.md).
const H200: SubgroupMatrixConfig[] = [
  ...[
    [16, 16, 16],
    [16, 8, 16],
    [16, 8, 8],
  ].flatMap(([M, N, K]) =>
    ['f16', 'f32'].map((r) => ({ componentType: 'f16', resultComponentType: r, M, N, K })),
  ),
  { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 },
  { componentType: 'u8', resultComponentType: 'u32', M: 16, N: 8, K: 32 },
];

const all = new Set([SUBGROUP_MATRIX_FEATURE, 'shader-f16', 'subgroups']);
const base: Parameters<typeof subgroupMatrixSupport>[0] = {
  adapterFeatures: all,
  deviceFeatures: all,
  info: { subgroupMatrixConfigs: H200 },
  subgroupMaxSize: 32,
  maxWorkgroupStorage: 49152,
};

describe('subgroupMatrixSupport', () => {
  it('H200: available, the f16 → f32 configurations usable, largest first', () => {
    const s = subgroupMatrixSupport(base);
    expect(s.available).toBe(true);
    expect(s.reason).toBeUndefined();
    expect(s.configs).toHaveLength(8);
    expect(s.usable.map((c) => [c.M, c.N, c.K, c.resultComponentType])).toEqual([
      [16, 16, 16, 'f32'],
      [16, 8, 16, 'f32'],
      [16, 8, 8, 'f32'],
    ]);
    // The integer tile's: i8 → i32 only (not u8 → u32).
    expect(s.usableInt?.map((c) => [c.componentType, c.M, c.N, c.K])).toEqual([['i8', 16, 16, 32]]);
  });

  it('says why not: no feature on the adapter, not granted, no shader-f16, no f16 → f32 config, subgroup size, workgroup memory', () => {
    const cases: [Partial<Parameters<typeof subgroupMatrixSupport>[0]>, RegExp][] = [
      [
        { adapterFeatures: new Set(['shader-f16']), info: {} },
        /adapter does not offer chromium-experimental-subgroup-matrix.*allow_unsafe_apis/,
      ],
      // A software adapter never offers them: the flags are not the reason, so they are not named.
      [
        { adapterFeatures: new Set(['shader-f16']), info: {}, software: true },
        /^no subgroup matrices: a software adapter has no matrix units \(it does not offer [^)]*\)$/,
      ],
      [{ deviceFeatures: new Set(['shader-f16']) }, /did not grant/],
      [
        { deviceFeatures: new Set([SUBGROUP_MATRIX_FEATURE]) },
        /needs shader-f16.*vulkan_enable_f16_on_nvidia/,
      ],
      [
        { info: { subgroupMatrixConfigs: H200.filter((c) => c.resultComponentType !== 'f32') } },
        /no f16 → f32 configuration.*f16→f16 16x16x16/,
      ],
      [{ info: {} }, /none reported/],
      [{ subgroupMaxSize: 128 }, /subgroups of 32 or 64.*128/],
      [{ maxWorkgroupStorage: 16384 }, new RegExp(`needs ${SGMAT_WORKGROUP_BYTES} bytes.*16384`)],
    ];
    for (const [over, why] of cases) {
      const s = subgroupMatrixSupport({ ...base, ...over });
      expect(s.available, String(why)).toBe(false);
      expect(s.reason).toMatch(/^no subgroup matrices: /);
      expect(s.reason).toMatch(why);
    }
  });

  it("the GPU tab lists the adapter's configurations", () => {
    const snap = snapshotAdapter({
      info: { vendor: 'nvidia', description: 'NVIDIA H200', subgroupMatrixConfigs: H200 },
      features: all,
      limits: {},
    });
    expect(snap.subgroupMatrixConfigs).toContain('f16→f32 16x8x8');
    const r = readReport(snap);
    expect(r.features.find((f) => f.name === SUBGROUP_MATRIX_FEATURE)?.present).toBe(true);
    expect(r.readings.map((x) => x.text).join('\n')).toMatch(
      /Subgroup matrices \(matrix units\): f16→f16 16x16x16, f16→f32 16x16x16/,
    );
    const none = readReport(
      snapshotAdapter({ info: { vendor: 'nvidia' }, features: ['subgroups'], limits: {} }),
    );
    expect(none.readings.map((x) => x.text).join('\n')).toMatch(/No subgroup matrices offered/);
  });
});

describe('mmmSgmatWGSL structure', () => {
  const o: MatmulOptions = {
    K: 96,
    TT: 32,
    norm: { eps: 1e-5, type: 'F32' },
    segments: [
      {
        nUnits: 37,
        weights: [{ type: 'Q8_0' }],
        dots: [{ w: 0, row: 'u' }],
        epilogue: 'y[t * 37u + u] = d0;',
      },
    ],
    extra: ['var<storage, read_write> y: array<f32>'],
  };
  for (const [M, N, K, sg] of [
    [16, 16, 16, 32],
    [16, 8, 16, 32],
    [16, 8, 8, 32],
    [16, 16, 16, 64],
  ]) {
    it(`${M}x${N}x${K}, subgroups of ${sg}: enables, one accumulator per M×N block of the subgroup's rows, 32/K products per block per step, enum-template loads`, () => {
      const code = mmmSgmatWGSL(o, { M, N, K }, sg);
      expect(code.startsWith('enable f16;\nenable chromium_experimental_subgroup_matrix;')).toBe(true);
      const rows = 64 / (64 / sg);
      const acc = (rows / M) * (32 / N);
      expect(code.match(/var c\d+_\d+: subgroup_matrix_result<f32, (\d+), (\d+)>/g)).toHaveLength(acc);
      expect(code.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(acc * (32 / K));
      expect(code.match(/subgroupMatrixStore<row_major>\(&cs, /g)).toHaveLength(acc);
      // The deprecated form (a bool majorness argument) never appears.
      expect(code).not.toMatch(/subgroupMatrixLoad<[^>]+>>\([^)]*(true|false)/);
      expect(code).toContain(`subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&wh, `);
      expect(code).toContain(`subgroup_matrix_right<f16, ${N}, ${K}>, col_major>(&xh, `);
      expect(code).toContain(`, ${SGMAT_STRIDE}u)`);
    });
  }
  for (const [M, N, K, sg] of [
    [16, 16, 16, 32],
    [16, 8, 8, 32],
    [16, 16, 16, 64],
  ])
    it(`the large tile, ${M}x${N}x${K}, subgroups of ${sg}: 128 threads, 64 rows × ${sg === 32 ? 32 : 64} tokens per subgroup, two epilogue passes through cs, its workgroup memory, the dispatch`, () => {
      const code = mmmSgmatWGSL(o, { M, N, K }, sg, true);
      expect(code).toContain('@workgroup_size(128)');
      const toks = sg === 32 ? 32 : 64;
      const acc = (64 / M) * (toks / N);
      expect(code.match(/var c\d+_\d+: subgroup_matrix_result<f32, /g)).toHaveLength(acc);
      expect(code.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(acc * (32 / K));
      expect(code.match(/subgroupMatrixStore<row_major>\(&cs, /g)).toHaveLength(acc);
      expect(code).toContain('for (var p = 0u; p < 2u; p++)');
      // Double-buffered: two K-steps of staging, one barrier per step in the K loop.
      expect(code).toContain(`var<workgroup> xh: array<f16, ${2 * 64 * SGMAT_STRIDE}>;`);
      expect(code).toContain(`var<workgroup> wh: array<f16, ${2 * 128 * SGMAT_STRIDE}>;`);
      expect(declaredWorkgroupBytes(code)).toBe(sgmatWorkgroupBytes({ big: true }));
      expect(emulateSubgroupMatrix(code, { M, N, K }, sg)).not.toMatch(/subgroup_matrix|subgroupMatrix/);
      expect(sgmatTileWGSL(o, { M, N, K, subgroupSize: sg as 32 | 64, big: true })).toBe(code);
    });
  for (const [M, N, K, sg] of [
    [16, 16, 16, 32],
    [16, 8, 8, 64],
  ])
    it(`the large tile single-buffered, ${M}x${N}x${K}, subgroups of ${sg}: one K-step of staging, two barriers per step, within 32 KiB (32,256 B); the emulator keeps its own cs`, () => {
      const t = { M, N, K, subgroupSize: sg as 32 | 64, big: true, singleBuffer: true };
      const code = sgmatTileWGSL(o, t);
      expect(code).toBe(mmmSgmatWGSL(o, { M, N, K }, sg, true, true));
      expect(code).toContain(`var<workgroup> xh: array<f16, ${64 * SGMAT_STRIDE}>;`);
      expect(code).toContain(`var<workgroup> wh: array<f16, ${128 * SGMAT_STRIDE}>;`);
      expect(code).toContain('for (var s = 0u; s < STEPS; s++) {');
      expect(code).not.toContain('(s % 2u)');
      const loop = code.slice(code.indexOf('for (var s = 0u;'), code.indexOf('let th = '));
      expect(loop.match(/workgroupBarrier\(\);/g)).toHaveLength(2);
      expect(declaredWorkgroupBytes(code)).toBe(sgmatWorkgroupBytes(t));
      expect(sgmatWorkgroupBytes(t)).toBe(32_256);
      expect(sgmatName(t)).toBe(`${M}x${N}x${K} 64x128 1-buffer`);
      // The double's staging is u32 pairs of halves (15 KiB) beside its own cs: within SwiftShader's 32 KiB.
      const emu = emulateSubgroupMatrix(code, { M, N, K }, sg);
      expect(emu).toContain('var<workgroup> cs: array<f32, 4096>;');
      expect(declaredWorkgroupBytes(emu)).toBe(32_256);
      expect(() => sgmatTileWGSL(o, { ...t, int: true, big: false })).toThrow(/no single-buffered/);
    });
  it('workgroup memory: the 32 × 64 tile within 32 KiB as before, the large one over it (47,616 B), the integer one double-buffered within 32 KiB; the dispatch follows the tile', () => {
    const small = mmmSgmatWGSL(o, { M: 16, N: 16, K: 16 }, 32);
    expect(declaredWorkgroupBytes(small)).toBe(sgmatWorkgroupBytes({}));
    expect(sgmatWorkgroupBytes({})).toBe(SGMAT_WORKGROUP_BYTES);
    expect(sgmatWorkgroupBytes({ big: true })).toBe(47_616);
    expect(sgmatTileDims({ big: true })).toEqual({ tokens: 64, rows: 128, threads: 128 });
    expect(sgmatTileDims({})).toEqual({ tokens: 32, rows: 64, threads: 64 });
    // 37 one-dot units: 1 workgroup of 128 rows, 1 of 64; 200 two-dot units (400 rows): 4, 7.
    const seg = (nUnits: number, dots: number) => ({
      nUnits,
      weights: [{ type: 'F32' as const }],
      dots: Array.from({ length: dots }, () => ({ w: 0, row: 'u' })),
      epilogue: '',
    });
    expect(mmmWorkgroupsX([seg(37, 1)], 128)).toBe(1);
    expect(mmmWorkgroupsX([seg(200, 2)], 128)).toBe(4);
    expect(mmmWorkgroupsX([seg(200, 2)])).toBe(7);
    expect(mmmWorkgroupsX([seg(37, 1), seg(200, 2)], 128)).toBe(5);
    // The float tile's WGSL does not depend on the new parameter's default.
    expect(mmmWGSL(o)).toContain('@workgroup_size(64)');
    for (const halves of [false, true]) {
      const q = mmmSgmatIntWGSL(
        { ...o, segments: [{ ...o.segments[0], weights: [{ type: halves ? 'Q6_K' : 'Q4_K' }] }], K: 512 },
        { M: 16, N: 16, K: 32 },
        32,
      );
      expect(declaredWorkgroupBytes(q)).toBe(sgmatIntWorkgroupBytes(halves));
      expect(q).toContain('var<workgroup> wi: array<i32, ');
      // Two buffers of staged weights: [buffer][tile row][words].
      expect(q).toContain(`var<workgroup> wi: array<i32, ${2 * 64 * SGMAT_INT_STRIDE_WORDS}>;`);
      expect(q.match(/workgroupBarrier\(\);/g)?.length).toBe(2 + (o.norm ? 1 : 0));
    }
    expect(sgmatIntWorkgroupBytes(true)).toBeLessThanOrEqual(32768);
  });
  it('rejects shapes that do not tile and other subgroup sizes', () => {
    expect(() => mmmSgmatWGSL(o, { M: 16, N: 16, K: 16 }, 16)).toThrow(/32 or 64/);
    expect(() => mmmSgmatWGSL(o, { M: 64, N: 8, K: 8 }, 32)).toThrow(/does not tile/);
    expect(() => mmmSgmatWGSL({ ...o, lastTokenOnly: true }, { M: 16, N: 8, K: 8 }, 32)).toThrow(
      /lastTokenOnly/,
    );
  });
});

describe('mmmSgmatIntWGSL structure (the integer variant)', () => {
  const o = (type: WeightType, type2: WeightType = type): MatmulOptions => ({
    K: 512,
    TT: 32,
    norm: { eps: 1e-5, type: 'F32' },
    segments: [
      {
        nUnits: 37,
        weights: [{ type }, { type: type2 }],
        dots: [
          { w: 0, row: 'u' },
          { w: 1, row: 'u' },
        ],
        epilogue: 'y[t * 37u + u] = d0 * d1;',
      },
    ],
    extra: ['var<storage, read_write> y: array<f32>'],
  });
  for (const [M, N, K, sg] of [
    [16, 16, 32, 32],
    [16, 8, 32, 32],
    [16, 16, 32, 64],
  ])
    it(`${M}x${N}x${K}, subgroups of ${sg}: i8 operands from array<i32> with offsets in words (default) or bytes, i32 results, one product per block (Q4_K), two per block with per-16 scales (Q6_K, or mixed)`, () => {
      const acc = (64 / (64 / sg) / M) * (32 / N);
      const one = mmmSgmatIntWGSL(o('Q4_K'), { M, N, K }, sg);
      expect(one.startsWith('enable chromium_experimental_subgroup_matrix;')).toBe(true);
      expect(one).not.toContain('enable f16');
      expect(one).toContain(`subgroup_matrix_left<i8, ${K}, ${M}>, row_major>(&wi, `);
      expect(one).toContain(`subgroup_matrix_right<i8, ${N}, ${K}>, col_major>(&xi, `);
      expect(one).toContain(`(&wi, oa0_0, ${SGMAT_INT_STRIDE_WORDS}u)`);
      const bytes = mmmSgmatIntWGSL(o('Q4_K'), { M, N, K }, sg, 'bytes');
      expect(bytes).toContain(`(&wi, oa0_0, ${SGMAT_INT_STRIDE_WORDS * 4}u)`);
      expect(mmmSgmatIntWGSL(o('Q4_K'), { M, N, K }, sg, 'words')).toBe(one);
      expect(one).toContain('var<workgroup> xi: array<i32, ');
      expect(one.match(/var c\d+_\d+_\d+: subgroup_matrix_result<i32, /g)).toHaveLength(acc);
      expect(one.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(acc * (32 / K));
      // The integer-dot tile's quantizer (ggml's quantize_row_q8_0) and loaders, not a copy.
      expect(one).toContain('pack4xI8(vec4<i32>(round(e0 * ix)))');
      expect(one).toContain('fn dqi32_');
      for (const two of [
        mmmSgmatIntWGSL(o('Q6_K'), { M, N, K }, sg),
        mmmSgmatIntWGSL(o('Q4_K', 'Q6_K'), { M, N, K }, sg),
      ])
        expect(two.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(2 * acc * (32 / K));
      expect(sgmatIntHalves(o('Q4_K'))).toBe(false);
      expect(sgmatIntHalves(o('Q4_K', 'Q2_K'))).toBe(true);
      // The emulator rewrites every construct of it.
      expect(emulateSubgroupMatrix(one, { M, N, K }, sg)).not.toMatch(/subgroup_matrix|subgroupMatrix/);
    });
  it('takes INT_DOT_TYPES only; rejects shapes that do not tile; picks its generator by tile.int', () => {
    expect(() => mmmSgmatIntWGSL(o('F16'), { M: 16, N: 16, K: 32 }, 32)).toThrow(/Q4_0.*got F16/);
    expect(() => mmmSgmatIntWGSL(o('Q8_0'), { M: 64, N: 16, K: 32 }, 32)).toThrow(/does not tile/);
    expect(() => mmmSgmatIntWGSL(o('Q8_0'), { M: 16, N: 16, K: 32 }, 16)).toThrow(/32 or 64/);
    const t = { M: 16, N: 16, K: 32, subgroupSize: 32 } as const;
    expect(sgmatTileWGSL(o('Q8_0'), { ...t, int: true })).toContain('<i8, ');
    expect(sgmatTileCovers(o('F16'), { ...t, int: true })).toBe(false);
    expect(sgmatTileCovers(o('F16'), t)).toBe(true);
    expect(sgmatName({ ...t, int: true })).toBe('i8 16x16x32');
    expect(sgmatName({ M: 16, N: 16, K: 16, big: true })).toBe('16x16x16 64x128');
    expect(() => sgmatTileWGSL(o('Q8_0'), { ...t, int: true, big: true })).toThrow(/no large variant/);
    expect(sgmatIntWorkgroupBytes(true)).toBeLessThanOrEqual(32768);
    expect(sgmatTileWGSL(o('Q8_0'), { ...t, int: true, i8Units: 'bytes' })).toBe(
      mmmSgmatIntWGSL(o('Q8_0'), t, 32, 'bytes'),
    );
  });
  it('i8 offsets: every one a whole word, so the words variant is the bytes variant with each offset and stride / 4 (K = 8: K-step parts at 0, 8, 16, 24 quants)', () => {
    const c = { M: 16, N: 16, K: 8 };
    const offsets = (code: string) =>
      [...code.matchAll(/let (o[ab][\d_]+) = (\w+) \+ (?:\(sr \+ (\d+)u\) \* (\d+)u \+ )?(\d+)u;/g)].map(
        (m) => [m[1], m[3] ?? '', Number(m[4] ?? 0), Number(m[5])],
      );
    const w = mmmSgmatIntWGSL(o('Q6_K'), c, 32, 'words');
    const b = mmmSgmatIntWGSL(o('Q6_K'), c, 32, 'bytes');
    const ow = offsets(w);
    const ob = offsets(b);
    expect(ow.length).toBe(ob.length);
    expect(ow.length).toBeGreaterThan(8);
    ob.forEach(([name, row, stride, k], i) => {
      expect(Number(k) % 4).toBe(0);
      expect(ow[i]).toEqual([name, row, Number(stride) / 4, Number(k) / 4]);
    });
    expect(w).toContain(`let oa1_0 = wo + (sr + 0u) * ${SGMAT_INT_STRIDE_WORDS}u + 2u;`);
    expect(b).toContain(`let oa1_0 = wo + (sr + 0u) * ${SGMAT_INT_STRIDE_WORDS * 4}u + 8u;`);
    expect(w).toContain(`let wo = pb * ${64 * SGMAT_INT_STRIDE_WORDS}u;`);
    expect(b).toContain(`let wo = pb * ${64 * SGMAT_INT_STRIDE_WORDS * 4}u;`);
  });
});

describe('subgroupMatrixInfo (kernels.prefill.subgroupMatrix)', () => {
  const support = subgroupMatrixSupport(base);
  const tile = { M: 16, N: 8, K: 8, subgroupSize: 32 } as const;
  it('chosen by the trial; slower; failed self-test; unavailable; not asked for', () => {
    expect(
      subgroupMatrixInfo(
        support,
        { tile, selfTest: [{ config: 'f16→f32 16x8x8', ok: true }] },
        { intDot: false, chosenBy: 'measured', subgroupMatrix: tile },
      ),
    ).toEqual({
      available: true,
      configs: support.configs.map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}x${c.N}x${c.K}`),
      chosen: true,
      tile: '16x8x8',
      selfTest: [{ config: 'f16→f32 16x8x8', ok: true }],
    });
    expect(
      subgroupMatrixInfo(support, { tile, selfTest: [] }, { intDot: false, chosenBy: 'measured' })?.reason,
    ).toMatch(/slower/);
    const failed = { reason: 'the subgroup-matrix tile failed its self-test …', selfTest: [] };
    expect(subgroupMatrixInfo(support, failed, { intDot: false, chosenBy: 'measured' })).toMatchObject({
      chosen: false,
      reason: failed.reason,
    });
    const none = subgroupMatrixSupport({ ...base, adapterFeatures: new Set() });
    expect(subgroupMatrixInfo(none, { reason: none.reason, selfTest: [] }, undefined)).toMatchObject({
      available: false,
      chosen: false,
      reason: expect.stringMatching(/^no subgroup matrices: /),
    });
    expect(subgroupMatrixInfo(support, undefined, { intDot: true, chosenBy: 'option' })?.reason).toMatch(
      /not asked/,
    );
  });

  it('the large tile: chosen (tile … 64x128, big.chosen, the others not reasoned against as slower); not fitting the workgroup memory; slower', () => {
    const bt = { M: 16, N: 16, K: 16, subgroupSize: 32, big: true } as const;
    const bigOk = { tile: bt, selfTest: [{ config: 'f16→f32 16x16x16', ok: true }] };
    const info = subgroupMatrixInfo(
      support,
      { tile, selfTest: [] },
      { intDot: false, chosenBy: 'measured', subgroupMatrix: bt },
      undefined,
      bigOk,
    );
    expect(info).toMatchObject({ chosen: true, tile: '16x16x16 64x128', big: { chosen: true } });
    expect(info?.reason).toBeUndefined();
    expect(info?.big?.reason).toBeUndefined();
    const noRoom = { reason: 'no large subgroup-matrix tile: it needs 47616 bytes …', selfTest: [] };
    expect(
      subgroupMatrixInfo(
        support,
        { tile, selfTest: [] },
        { intDot: false, chosenBy: 'measured', subgroupMatrix: tile },
        undefined,
        noRoom,
      ),
    ).toMatchObject({ chosen: true, tile: '16x8x8', big: { chosen: false, reason: noRoom.reason } });
    expect(
      subgroupMatrixInfo(
        support,
        { tile, selfTest: [] },
        { intDot: false, chosenBy: 'measured' },
        undefined,
        bigOk,
      )?.big?.reason,
    ).toMatch(/slower/);
  });

  it('the integer variant: chosen (tile i8 …, the f16 one not reasoned against); failed self-test; slower', () => {
    const it8 = { M: 16, N: 16, K: 32, subgroupSize: 32, int: true, i8Units: 'bytes' } as const;
    const intOk = {
      tile: it8,
      selfTest: [
        { config: 'i8→i32 16x16x32', i8Units: 'words' as const, ok: false, reason: 'Q4_0: token 3, …' },
        { config: 'i8→i32 16x16x32', i8Units: 'bytes' as const, ok: true },
      ],
    };
    const info = subgroupMatrixInfo(
      support,
      { tile, selfTest: [] },
      { intDot: false, chosenBy: 'measured', subgroupMatrix: it8 },
      intOk,
    );
    expect(info).toMatchObject({
      chosen: true,
      tile: 'i8 16x16x32',
      int: { chosen: true, i8Units: 'bytes', selfTest: intOk.selfTest },
    });
    expect(info?.reason).toBeUndefined();
    expect(info?.int?.reason).toBeUndefined();
    const failed = { reason: 'the integer subgroup-matrix tile failed its self-test …', selfTest: [] };
    expect(
      subgroupMatrixInfo(
        support,
        { tile, selfTest: [] },
        { intDot: false, chosenBy: 'measured', subgroupMatrix: tile },
        failed,
      )?.int,
    ).toEqual({ chosen: false, reason: failed.reason });
    const slower = subgroupMatrixInfo(
      support,
      { tile, selfTest: [] },
      { intDot: true, chosenBy: 'measured' },
      intOk,
    )?.int;
    expect(slower?.reason).toMatch(/slower/);
    // The unit the self-test settled, though the trial chose another tile.
    expect(slower?.i8Units).toBe('bytes');
  });
});

describe('forcedSubgroupMatrixPrefill (a forced subgroup-matrix tile that does not run)', () => {
  const tile = { M: 16, N: 16, K: 16, subgroupSize: 32 } as const;
  const dot = { wgslFeatures: new Set(['packed_4x8_integer_dot_product']) };
  const failed = { reason: 'the subgroup-matrix tile failed its self-test …', selfTest: [] };
  it('runs the tile that passed; else the integer-dot tile for an integer one where WGSL has it, the float tile otherwise, the reason saying which', () => {
    expect(
      forcedSubgroupMatrixPrefill({ kind: 'tile', subgroupMatrix: true }, { tile, selfTest: [] }, false, dot),
    ).toEqual({
      tileChoice: { intDot: false, chosenBy: 'option', subgroupMatrix: tile },
      choice: { tile, selfTest: [] },
    });
    const f16 = forcedSubgroupMatrixPrefill({ kind: 'tile', subgroupMatrix: true }, failed, false, dot);
    expect(f16.tileChoice).toEqual({ intDot: false, chosenBy: 'option' });
    expect(f16.choice?.reason).toBe(`${failed.reason}; the float tile runs instead`);
    // The f16 tile forced with intDot: the integer-dot tile.
    const both = forcedSubgroupMatrixPrefill(
      { kind: 'tile', subgroupMatrix: 'big', intDot: true },
      failed,
      false,
      dot,
    );
    expect(both.tileChoice).toEqual({ intDot: true, chosenBy: 'option' });
    expect(both.choice?.reason).toMatch(/; the integer-dot tile runs instead$/);
    const int = forcedSubgroupMatrixPrefill({ kind: 'tile', subgroupMatrix: 'int8' }, failed, true, dot);
    expect(int.tileChoice).toEqual({ intDot: true, chosenBy: 'option' });
    expect(int.choice?.reason).toBe(`${failed.reason}; the integer-dot tile runs instead`);
    const noDot = forcedSubgroupMatrixPrefill({ kind: 'tile', subgroupMatrix: 'int8' }, failed, true, {
      wgslFeatures: new Set(),
    });
    expect(noDot.tileChoice).toEqual({ intDot: false, chosenBy: 'option' });
    expect(noDot.choice?.reason).toMatch(/; the float tile runs instead \(no packed_4x8_integer_dot_product/);
    // No subgroup matrix asked: the option's tile, nothing reasoned.
    expect(forcedSubgroupMatrixPrefill({ kind: 'tile', intDot: true }, undefined, false, dot)).toEqual({
      tileChoice: { intDot: true, chosenBy: 'option' },
      choice: undefined,
    });
  });
});
