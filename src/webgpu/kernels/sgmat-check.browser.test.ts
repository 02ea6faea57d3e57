/**
 * The subgroup-matrix tile's load-time self-test (sgmat-check.ts) and the tile's WGSL (mmm-sgmat.ts) on
 * SwiftShader, which has no subgroup matrices: what runs here runs through TEST DOUBLES.
 * - The self-test's comparison itself: a correct stand-in (the float tile's own WGSL) passes; the float
 *   tile with a planted off-by-one (a token index, a K index) fails with the output named; a compile error
 *   fails with the compiler's message.
 * - The real generator's WGSL through src/testing/sgmat-emulator.ts (the documented load/store/multiply
 *   semantics emulated in plain WGSL) passes the self-test at 16x16x16 with subgroups of 32; with the left
 *   operand loaded column-major instead of row-major it fails.
 * - The choice over configurations (`chooseSubgroupMatrixTile`) on a stubbed adapter that claims subgroup
 *   matrices: a failing first configuration falls through to the next with both verdicts recorded; all
 *   failing gives the reason; the real adapter's "no subgroup matrices" reason passes through untested.
 * - The integer variant (mmm-sgmat.ts `mmmSgmatIntWGSL`, i8 → i32) through the emulator at 16x16x32 with
 *   subgroups of 32 matches the integer-dot tile for every type it takes (three types per compile; raw
 *   weights, Q4_0/Q5_0/Q8_0 in planes too) on small odd problems; with the weight operand read one quant
 *   off it fails. `chooseSubgroupMatrixIntTile` on a stubbed adapter falls through a failing
 *   configuration and says why where it cannot run; the i8 unit of load offsets and strides (words or
 *   bytes, mmm-sgmat.ts `I8Units`): on an emulated driver counting in one unit the kernel in the other
 *   fails the first try and passes the second, the tile carrying the unit; both wrong (a planted bug)
 *   gives no tile and both reasons; a compile failure does not try the other unit.
 * F32 and Q8_0 weights only for the f16 tile here (SwiftShader compiles slowly); the engine's self-test
 * covers every type.
 */
import { describe, expect, it } from 'vitest';
import type { GgufFile } from '../../gguf/types.ts';
import type { LlamaConfig } from '../../model/config.ts';
import { testGpu } from '../../testing/kernel-util.ts';
import { emulateSubgroupMatrix } from '../../testing/sgmat-emulator.ts';
import type { GpuContext, SubgroupMatrixConfig } from '../device.ts';
import { chooseKernels, forcedSubgroupMatrixPrefill, subgroupMatrixInfo } from '../kernel-plan.ts';
import { WEIGHT_BLOCK, type WeightType } from './common.ts';
import type { MatmulOptions } from './matmul.ts';
import { mmmWGSL } from './mmm.ts';
import {
  type I8Units,
  mmmSgmatIntWGSL,
  mmmSgmatWGSL,
  type SgmatTile,
  sgmatTileDims,
  sgmatTileWGSL,
} from './mmm-sgmat.ts';
import {
  BIG_CHECK_PROBLEM,
  type CheckProblem,
  checkIntTypes,
  checkTileAgainstFloat,
  chooseSubgroupMatrixBigTile,
  chooseSubgroupMatrixIntTile,
  chooseSubgroupMatrixTile,
  INT_DOT_REFERENCE,
  type MixedCase,
} from './sgmat-check.ts';

const emulated = (o: MatmulOptions, t: SgmatTile, bug?: (code: string) => string) => {
  const code = mmmSgmatWGSL(o, t, t.subgroupSize);
  return emulateSubgroupMatrix(bug ? bug(code) : code, t, t.subgroupSize);
};
const leftColMajor = (code: string) => code.replace(/, row_major>\(&wh/g, ', col_major>(&wh');

describe('checkTileAgainstFloat (the self-test)', () => {
  it('passes a correct stand-in; fails off-by-one token and K indices and a compile error, saying where', {
    timeout: 300_000,
  }, async () => {
    const gpu = await testGpu();
    expect(await checkTileAgainstFloat(gpu, (o) => mmmWGSL(o), ['Q8_0'])).toEqual({ ok: true, cases: 2 });
    const token = await checkTileAgainstFloat(
      gpu,
      (o) => mmmWGSL(o).replace('let t = t0 + ty + 8u;', 'let t = t0 + ty + 9u;'),
      ['Q8_0'],
    );
    expect(token.ok).toBe(false);
    expect(!token.ok && token.reason).toMatch(
      /^Q8_0: token \d+, (two|one)-dot unit \d+: .* against the float tile's/,
    );
    const k = await checkTileAgainstFloat(
      gpu,
      (o) => mmmWGSL(o).replace('ldx(xrow, k + 1u)', 'ldx(xrow, k + 2u)'),
      ['Q8_0'],
    );
    expect(k.ok).toBe(false);
    const broken = await checkTileAgainstFloat(gpu, (o) => `${mmmWGSL(o)}\nfn broken( {`, ['Q8_0']);
    expect(broken).toMatchObject({ ok: false, cases: 0 });
    expect(!broken.ok && broken.reason).toMatch(/^Q8_0: compile failed: /);
  });
});

describe('mmmSgmatWGSL through the emulator (test double)', () => {
  // One shape: the emulated kernel takes ~1 min per run on SwiftShader (subgroup-matrix.test.ts checks the
  // others' structure).
  for (const t of [{ M: 16, N: 16, K: 16, subgroupSize: 32 }] as const)
    it(`${t.M}x${t.N}x${t.K}, subgroups of ${t.subgroupSize}: passes the self-test (F32 rows, K = 100); the left operand read column-major fails it`, async () => {
      const gpu = await testGpu();
      expect(await checkTileAgainstFloat(gpu, (o) => emulated(o, t), ['F32'])).toMatchObject({ ok: true });
      const bad = await checkTileAgainstFloat(gpu, (o) => emulated(o, t, leftColMajor), ['F32']);
      expect(bad.ok).toBe(false);
    }, 600_000);
});

describe('mmmSgmatIntWGSL through the emulator (test double)', () => {
  // i8 × i8 → i32 at NVIDIA's 16x16x32 with subgroups of 32, against the integer-dot tile (same int8
  // activations, same exact integer dots: INT_CHECK_TOLERANCE). Every type the tile takes.
  const t = { M: 16, N: 16, K: 32, subgroupSize: 32 } as const;
  // Smaller problems than the load-time self-test (the emulated kernel is slow on SwiftShader), still odd:
  // a full and a partial token tile, partial row tiles in both segments, K of 2 blocks (Q8_0 …) or one
  // super-block (K-quants: 8 sub-block scales); raw weights, and the first group's planes too (the
  // staging after the loaders is the same code for both layouts; the integer-dot tile's tests cover every
  // type's planes).
  // The kernel and the emulated driver in one i8 unit (default 'words'), or each in its own.
  const emulatedInt = (
    o: MatmulOptions,
    bug?: (code: string) => string,
    kernel: I8Units = 'words',
    driver: I8Units = kernel,
  ) => {
    const code = mmmSgmatIntWGSL(o, t, t.subgroupSize, kernel);
    return emulateSubgroupMatrix(bug ? bug(code) : code, t, t.subgroupSize, { i8Units: driver });
  };
  const small = (type: WeightType): CheckProblem => ({
    tokens: 33,
    unitsA: 5,
    unitsB: 9,
    blocks: WEIGHT_BLOCK[type].size === 256 ? 1 : 2,
  });
  // Three types per compile (gate, up, other): one scale per 32 quants (one product per block), the
  // K-quants with per-32 scales, and those with per-16 scales (two products per block).
  const groups: [MixedCase, boolean][] = [
    [['Q4_0', 'Q5_0', 'Q8_0'], true],
    [['Q4_K', 'Q5_K', 'Q4_K'], false],
    [['Q6_K', 'Q3_K', 'Q2_K'], false],
  ];
  it('the groups cover every type the tile takes', () => {
    expect(new Set(groups.flatMap(([g]) => g))).toEqual(new Set(checkIntTypes()));
  });
  for (const [group, planes] of groups)
    it(`${group.join(' + ')}${planes ? ' (raw and planes)' : ''}: matches the integer-dot tile on odd sizes`, async () => {
      const gpu = await testGpu();
      const r = await checkTileAgainstFloat(gpu, (o) => emulatedInt(o), [group], {
        against: INT_DOT_REFERENCE,
        problem: small(group[0]),
        planes,
      });
      expect(r).toMatchObject({ ok: true, cases: planes ? 2 : 1 });
    }, 600_000);

  it('the weight operand read one quant off (a planted K off-by-one) fails the self-test, saying where', async () => {
    const gpu = await testGpu();
    const kOff = (code: string) => {
      const bad = code.replace(/ \* 48u \+ 0u;/g, ' * 48u + 1u;');
      if (bad === code) throw new Error('the planted off-by-one did not apply');
      return bad;
    };
    const r = await checkTileAgainstFloat(gpu, (o) => emulatedInt(o, kOff, 'bytes'), ['Q8_0'], {
      against: INT_DOT_REFERENCE,
      problem: small('Q8_0'),
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(
      /^Q8_0: token \d+, (two|one)-dot unit \d+: .* against the integer-dot tile's/,
    );
  }, 600_000);
});

describe('chooseSubgroupMatrixTile', () => {
  const cfg = (M: number, N: number, K: number): SubgroupMatrixConfig => ({
    componentType: 'f16',
    resultComponentType: 'f32',
    M,
    N,
    K,
  });
  const claiming = (gpu: GpuContext, usable: SubgroupMatrixConfig[]): GpuContext => ({
    ...gpu,
    subgroupMaxSize: 32,
    subgroupMatrix: { available: true, configs: usable, usable },
  });

  it('the real adapter (no subgroup matrices): the reason, nothing compiled', async () => {
    const gpu = await testGpu();
    const c = await chooseSubgroupMatrixTile(gpu);
    expect(c.tile).toBeUndefined();
    expect(c.selfTest).toEqual([]);
    expect(c.reason).toMatch(/^no subgroup matrices: /);
  });

  it('a stubbed adapter (test double): a failing configuration falls through to the next; all failing keeps the float tile with the reasons', async () => {
    const gpu = claiming(await testGpu(), [cfg(16, 16, 16), cfg(16, 8, 8)]);
    // Stand-ins for the configurations' kernels (the float tile, with a planted off-by-one for 16x16x16).
    const firstBad = await chooseSubgroupMatrixTile(
      gpu,
      (o, t) =>
        t.N === 16 ? mmmWGSL(o).replace('let t = t0 + ty + 8u;', 'let t = t0 + ty + 9u;') : mmmWGSL(o),
      ['F32'],
    );
    expect(firstBad.tile).toEqual({ M: 16, N: 8, K: 8, subgroupSize: 32 });
    expect(firstBad.selfTest.map((s) => [s.config, s.ok])).toEqual([
      ['f16→f32 16x16x16', false],
      ['f16→f32 16x8x8', true],
    ]);
    expect(firstBad.selfTest[0].reason).toMatch(/^F32: token \d+/);
    const allBad = await chooseSubgroupMatrixTile(
      claiming(gpu, [cfg(16, 8, 8)]),
      (o) => `${mmmWGSL(o)}\nfn broken( {`,
      ['F32'],
    );
    expect(allBad.tile).toBeUndefined();
    expect(allBad.reason).toMatch(/failed its self-test .* 16x8x8: F32: compile failed/);
  }, 300_000);
});

describe('chooseSubgroupMatrixBigTile', () => {
  it('a stubbed adapter (test double) whose workgroup memory is too small: the reason, nothing compiled; one that fits: each configuration self-tested, a failing one recorded', async () => {
    const real = await testGpu();
    const f16 = { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 };
    const claiming = (maxWorkgroupStorage: number): GpuContext => ({
      ...real,
      subgroupMaxSize: 32,
      subgroupMatrix: { available: true, configs: [f16], usable: [f16], maxWorkgroupStorage },
    });
    let compiled = 0;
    const broken = (o: MatmulOptions) => {
      compiled++;
      return `${mmmWGSL(o)}\nfn broken( {`;
    };
    const small = await chooseSubgroupMatrixBigTile(claiming(32000), broken, ['F32']);
    expect(small).toEqual({
      reason:
        'no large subgroup-matrix tile: it needs 47616 bytes of workgroup memory, 32256 single-buffered (the device grants 32000)',
      selfTest: [],
    });
    expect(compiled).toBe(0);
    expect((await chooseSubgroupMatrixBigTile(real)).reason).toMatch(/^no subgroup matrices: /);
    const fits = await chooseSubgroupMatrixBigTile(claiming(49152), broken, ['F32']);
    expect(fits.tile).toBeUndefined();
    expect(fits.selfTest).toMatchObject([{ config: 'f16→f32 16x16x16', ok: false }]);
    expect(fits.reason).toMatch(/^the large subgroup-matrix tile failed its self-test .* compile failed/);
    // 32 KiB: the single-buffered tile is the candidate (what it computes: the emulator tests below).
    const tiles: SgmatTile[] = [];
    const k32 = await chooseSubgroupMatrixBigTile(
      claiming(32768),
      (o, t) => {
        tiles.push(t);
        return broken(o);
      },
      ['F32'],
    );
    expect(tiles[0]).toEqual({ M: 16, N: 16, K: 16, subgroupSize: 32, big: true, singleBuffer: true });
    expect(k32.selfTest).toMatchObject([{ config: 'f16→f32 16x16x16', ok: false }]);
  }, 300_000);
});

describe('chooseSubgroupMatrixIntTile', () => {
  const i8 = (M: number, N: number, K: number): SubgroupMatrixConfig => ({
    componentType: 'i8',
    resultComponentType: 'i32',
    M,
    N,
    K,
  });
  const claiming = (gpu: GpuContext, usableInt: SubgroupMatrixConfig[]): GpuContext => ({
    ...gpu,
    subgroupMaxSize: 32,
    subgroupMatrix: { available: true, configs: usableInt, usable: [], usableInt },
  });
  // Stand-ins for the configurations' kernels: the integer-dot tile itself, with a planted off-by-one
  // (token index) for 16x16x32.
  const standIn = (o: MatmulOptions, t: SgmatTile) => {
    const code = mmmWGSL(o, { intDot: true });
    return t.N === 16 ? code.replace('let t = t0 + ty + 8u;', 'let t = t0 + ty + 9u;') : code;
  };

  it('the real adapter: the reason; a stubbed one (test double): a failing configuration falls through to the next against the integer-dot tile; none offered or no integer dot product: the reason', async () => {
    const real = await testGpu();
    expect((await chooseSubgroupMatrixIntTile(real)).reason).toMatch(/^no subgroup matrices: /);
    const gpu = claiming(real, [i8(16, 16, 32), i8(16, 8, 32)]);
    const c = await chooseSubgroupMatrixIntTile(gpu, standIn, ['Q8_0']);
    expect(c.tile).toEqual({ M: 16, N: 8, K: 32, subgroupSize: 32, int: true, i8Units: 'words' });
    // A mismatch tries the other i8 unit before the next configuration.
    expect(c.selfTest.map((s) => [s.config, s.i8Units, s.ok])).toEqual([
      ['i8→i32 16x16x32', 'words', false],
      ['i8→i32 16x16x32', 'bytes', false],
      ['i8→i32 16x8x32', 'words', true],
    ]);
    expect(c.selfTest[0].reason).toMatch(/^Q8_0: token \d+, .* against the integer-dot tile's/);
    expect((await chooseSubgroupMatrixIntTile(claiming(real, []), standIn, ['Q8_0'])).reason).toMatch(
      /^no integer subgroup matrices: no i8 → i32 configuration/,
    );
    const noDot: GpuContext = { ...gpu, wgslFeatures: new Set<string>() };
    expect((await chooseSubgroupMatrixIntTile(noDot, standIn, ['Q8_0'])).reason).toMatch(
      /packed_4x8_integer_dot_product/,
    );
    // A compile failure is not the unit's fault: the other unit is not tried.
    const broken = (o: MatmulOptions) => `${mmmWGSL(o, { intDot: true })}\nfn broken( {`;
    const nc = await chooseSubgroupMatrixIntTile(claiming(real, [i8(16, 16, 32)]), broken, ['Q8_0']);
    expect(nc.tile).toBeUndefined();
    expect(nc.selfTest).toMatchObject([{ config: 'i8→i32 16x16x32', i8Units: 'words', ok: false }]);
    expect(nc.reason).toMatch(/\(i8 offsets in words\): Q8_0: compile failed: /);
  }, 300_000);

  it("a forced 'int8' whose tile fails its self-test runs the integer-dot tile where WGSL has it, else the float tile; the reason says which", async () => {
    const real = await testGpu();
    const gpu = claiming(real, [i8(16, 16, 32)]);
    const prefill = { kind: 'tile', subgroupMatrix: 'int8' } as const;
    // A deliberately broken integer tile (the planted token off-by-one of the stand-in): its self-test fails.
    const failed = await chooseSubgroupMatrixIntTile(gpu, standIn, ['Q8_0']);
    expect(failed.tile).toBeUndefined();
    const r = forcedSubgroupMatrixPrefill(prefill, failed, true, gpu);
    expect(r.tileChoice).toEqual({ intDot: true, chosenBy: 'option' });
    expect(r.choice?.reason).toMatch(
      /^the integer subgroup-matrix tile failed its self-test .*Q8_0: token \d+.*; the integer-dot tile runs instead$/s,
    );
    expect(subgroupMatrixInfo(gpu.subgroupMatrix, undefined, r.tileChoice, r.choice)?.int).toMatchObject({
      chosen: false,
      reason: r.choice?.reason,
    });
    // Without packed_4x8_integer_dot_product: the float tile (and its self-test's own reason).
    const noDot: GpuContext = { ...gpu, wgslFeatures: new Set<string>() };
    const f = forcedSubgroupMatrixPrefill(
      prefill,
      await chooseSubgroupMatrixIntTile(noDot, standIn, ['Q8_0']),
      true,
      noDot,
    );
    expect(f.tileChoice).toEqual({ intDot: false, chosenBy: 'option' });
    expect(f.choice?.reason).toMatch(
      /packed_4x8_integer_dot_product; the float tile runs instead \(no packed_4x8_integer_dot_product for the integer-dot tile\)$/,
    );
    // The load's plan, with the real generator: on this driver (no subgroup-matrix extension, claimed by
    // the stub) the integer tile does not compile, so the forced 'int8' load runs the integer-dot tile.
    const k = await chooseKernels(
      gpu,
      {} as GgufFile,
      {} as LlamaConfig,
      { mmvLayout: 'off', prefill },
      {
        repack: false,
        splitDecodeSegments: false,
      },
    );
    expect(k.prefill).toEqual({ kind: 'tile', intDot: true });
    expect(k.tileChoice).toEqual({ intDot: true, chosenBy: 'option' });
    expect(k.sgmatInt?.reason).toMatch(/compile failed: .*; the integer-dot tile runs instead$/s);
    // A shape with `int` forced on the float path's adapter: the same fallback.
    const shaped = await chooseKernels(
      gpu,
      {} as GgufFile,
      {} as LlamaConfig,
      {
        mmvLayout: 'off',
        prefill: { kind: 'tile', subgroupMatrix: { M: 16, N: 16, K: 32, subgroupSize: 32, int: true } },
      },
      { repack: false, splitDecodeSegments: false },
    );
    expect(shaped.prefill).toEqual({ kind: 'tile', intDot: true });
  }, 300_000);

  // The driver's unit of i8 load offsets and strides (mmm-sgmat.ts I8Units) settled by the self-test: the
  // real generator's WGSL through the emulator (TEST DOUBLE) whose "driver" counts them in one unit.
  // Q8_0 weights, a small odd problem (the emulated kernel is slow on SwiftShader).
  const t = { M: 16, N: 16, K: 32, subgroupSize: 32 } as const;
  const quick = {
    problem: { tokens: 33, unitsA: 5, unitsB: 9, blocks: 2 },
    planes: false,
  };
  const onDriver =
    (driver: I8Units, bug: (code: string) => string = (c) => c) =>
    (o: MatmulOptions, tile: SgmatTile) =>
      emulateSubgroupMatrix(bug(sgmatTileWGSL(o, tile)), tile, tile.subgroupSize, { i8Units: driver });
  for (const [driver, units] of [
    ['bytes', undefined],
    ['words', ['bytes', 'words']],
  ] as const)
    it(`a driver counting i8 offsets in ${driver} (emulated): the kernel in ${driver === 'bytes' ? 'words (tried first)' : 'bytes (tried first here)'} fails, in ${driver} passes; the tile carries ${driver}`, async () => {
      const gpu = claiming(await testGpu(), [i8(16, 16, 32)]);
      const c = await chooseSubgroupMatrixIntTile(gpu, onDriver(driver), ['Q8_0'], { ...quick, units });
      const other = driver === 'bytes' ? 'words' : 'bytes';
      expect(c.selfTest.map((s) => [s.config, s.i8Units, s.ok])).toEqual([
        ['i8→i32 16x16x32', other, false],
        ['i8→i32 16x16x32', driver, true],
      ]);
      expect(c.selfTest[0].reason).toMatch(/^Q8_0: token \d+, .* against the integer-dot tile's/);
      expect(c.tile).toEqual({ ...t, int: true, i8Units: driver });
      expect(c.reason).toBeUndefined();
    }, 600_000);

  it('both units wrong (a K off-by-one planted in the weight operand, emulated): no tile, both reasons recorded', async () => {
    const gpu = claiming(await testGpu(), [i8(16, 16, 32)]);
    const kOff = (code: string) => {
      const bad = code.replace(/(let oa\d+_\d+ = wo \+ [^;]*) \+ 0u;/g, '$1 + 1u;');
      if (bad === code) throw new Error('the planted off-by-one did not apply');
      return bad;
    };
    const c = await chooseSubgroupMatrixIntTile(gpu, onDriver('words', kOff), ['Q8_0'], quick);
    expect(c.tile).toBeUndefined();
    expect(c.selfTest.map((s) => [s.i8Units, s.ok])).toEqual([
      ['words', false],
      ['bytes', false],
    ]);
    expect(c.reason).toMatch(
      /^the integer subgroup-matrix tile failed its self-test against the integer-dot tile on every configuration \(i8→i32 16x16x32 \(i8 offsets in words\): Q8_0: token .*; i8→i32 16x16x32 \(i8 offsets in bytes\): Q8_0: token /,
    );
  }, 600_000);
});

describe('the large tile (64 tokens × 128 rows) through the emulator (test double)', () => {
  // mmm-sgmat.ts `mmmSgmatWGSL(…, big)` at 16x16x16 with subgroups of 32 (4 subgroups of 64 rows × 32
  // tokens), against the float tile at token counts off every multiple of 32 and 64 (one compile serves
  // all: the count is in the step uniform), K off a multiple of 32 (F32 rows: 100) and unit counts off the
  // tile's (37 two-dot units: 74 of 128 rows; 135 one-dot units: 128 + 7).
  const t = { M: 16, N: 16, K: 16, subgroupSize: 32, big: true } as const;
  const big = (o: MatmulOptions, bug?: (code: string) => string) => {
    const code = mmmSgmatWGSL(o, t, t.subgroupSize, true);
    return emulateSubgroupMatrix(bug ? bug(code) : code, t, t.subgroupSize);
  };
  const problem: CheckProblem = { ...BIG_CHECK_PROBLEM, tokens: [1, 7, 33, 65, 200], blocks: 1 };
  const opts = { problem, tile: sgmatTileDims(t), planes: false };

  it("F16 gate and up, F32 rows (K = 100): match the float tile at 1, 7, 33, 65 and 200 tokens; the second row half's units off by one fails", async () => {
    const gpu = await testGpu();
    expect(await checkTileAgainstFloat(gpu, (o) => big(o), [['F16', 'F16', 'F32']], opts)).toEqual({
      ok: true,
      cases: 5,
    });
    const halfOff = (code: string) => {
      const bad = code.replace('let ub = ub + p * uph;', 'let ub = ub + p * uph + 1u;');
      if (bad === code) throw new Error('the planted off-by-one did not apply');
      return bad;
    };
    const r = await checkTileAgainstFloat(gpu, (o) => big(o, halfOff), ['F32'], {
      ...opts,
      problem: { ...problem, tokens: [65] },
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/^F32: token \d+, (two|one)-dot unit \d+: .* against the float tile's/);
  }, 600_000);

  // Under an injected 32 KiB limit (maxComputeWorkgroupStorageSize 32,768, as many adapters grant) the
  // plan offers the single-buffered large tile (32,256 B); its self-test and results through the emulator.
  it('32 KiB: the plan picks the single-buffered tile, which passes its self-test and matches the float tile at 1, 7, 33, 65 and 200 tokens; a token off-by-one in its multiply fails', async () => {
    const real = await testGpu();
    const f16 = { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 };
    const gpu: GpuContext = {
      ...real,
      subgroupMaxSize: 32,
      subgroupMatrix: { available: true, configs: [f16], usable: [f16], maxWorkgroupStorage: 32768 },
    };
    const emulatedTile = (o: MatmulOptions, tile: SgmatTile) =>
      emulateSubgroupMatrix(sgmatTileWGSL(o, tile), tile, tile.subgroupSize);
    const c = await chooseSubgroupMatrixBigTile(gpu, emulatedTile, ['F32']);
    const single = { ...t, singleBuffer: true };
    expect(c).toEqual({ tile: single, selfTest: [{ config: 'f16→f32 16x16x16', ok: true }] });
    expect(
      await checkTileAgainstFloat(gpu, (o) => emulatedTile(o, single), [['F16', 'F16', 'F32']], opts),
    ).toEqual({ ok: true, cases: 5 });
    const tokenOff = (code: string) => {
      const bad = code.replace('let xb = st * 40u;', 'let xb = st * 40u + 40u;');
      if (bad === code) throw new Error('the planted off-by-one did not apply');
      return bad;
    };
    const r = await checkTileAgainstFloat(
      gpu,
      (o) => emulateSubgroupMatrix(tokenOff(sgmatTileWGSL(o, single)), single, 32),
      ['F32'],
      { ...opts, problem: { ...problem, tokens: [33] } },
    );
    expect(r.ok).toBe(false);
  }, 600_000);

  // Quantized weights, three types per compile (the staging after the float tile's loaders is one code
  // for all; the engine's load-time self-test covers every type): K of one block of the largest type.
  it('Q8_0 + Q4_K + Q6_K and Q4_0 + IQ4_NL + Q5_K: match the float tile at 7 and 65 tokens', async () => {
    const gpu = await testGpu();
    const r = await checkTileAgainstFloat(
      gpu,
      (o) => big(o),
      [
        ['Q8_0', 'Q4_K', 'Q6_K'],
        ['Q4_0', 'IQ4_NL', 'Q5_K'],
      ],
      { ...opts, problem: { ...problem, tokens: [7, 65] } },
    );
    expect(r).toEqual({ ok: true, cases: 4 });
  }, 600_000);
});
