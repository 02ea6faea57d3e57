/**
 * Which loads the flash-decoding kernel generates (kernels/attention-decode.ts): f16 and f32 caches as
 * 8-element words where the head size (and, tiled, the lanes) allow, quantized caches through their block
 * loaders. The kernels' values are tested against float64 in attention.browser.test.ts, on shapes of
 * both kinds.
 */
import { describe, expect, it } from 'vitest';
import type { KvType } from '../../core/types.ts';
import type { FlashLayout } from './attention.ts';
import { flashDecodeWGSL } from './attention-decode.ts';

function loads(headDim: number, kvType: KvType, layout: FlashLayout, vKvType?: KvType, maxTokens = 1) {
  const code = flashDecodeWGSL({
    nHead: 8,
    nHeadKv: 2,
    headDim,
    scale: 0.125,
    kvType,
    ...(vKvType ? { vKvType } : {}),
    maxTokens,
    nCtx: 64,
    layout,
  });
  return {
    kWide: /ld_kc8\(base/.test(code),
    kNarrow: /ld_kc4\(base/.test(code),
    vWide: /ld_vc8\(/.test(code.split('fn main')[1]),
    vNarrow: /ld_vc2\(/.test(code.split('fn main')[1]),
  };
}

describe('flashDecodeWGSL cache loads', () => {
  const strided: FlashLayout = { kind: 'strided' };
  it('strided: f16 and f32 K and V as 8-element words at head sizes that are multiples of 8', () => {
    for (const kv of ['f16', 'f32'] as const)
      for (const hd of [8, 64, 80, 128])
        expect(loads(hd, kv, strided), `${kv} hd ${hd}`).toEqual({
          kWide: true,
          kNarrow: false,
          vWide: true,
          vNarrow: false,
        });
  });
  it('strided: 4 and 2 elements a load at head sizes 4 and 12, and for quantized caches', () => {
    for (const hd of [4, 12, 20])
      expect(loads(hd, 'f16', strided)).toEqual({ kWide: false, kNarrow: true, vWide: false, vNarrow: true });
    expect(loads(64, 'q8_0', strided)).toEqual({ kWide: false, kNarrow: true, vWide: false, vNarrow: true });
    expect(loads(64, 'f16', strided, 'q4_0')).toEqual({
      kWide: true,
      kNarrow: false,
      vWide: false,
      vNarrow: true,
    });
    expect(loads(64, 'q8_0', strided, 'f16')).toEqual({
      kWide: false,
      kNarrow: true,
      vWide: true,
      vNarrow: false,
    });
  });
  it('narrow: 4 and 2 elements a load when the layout asks (benchmarks)', () => {
    expect(loads(64, 'f16', { kind: 'strided', narrow: true })).toEqual({
      kWide: false,
      kNarrow: true,
      vWide: false,
      vNarrow: true,
    });
    expect(loads(128, 'f16', { kind: 'tiled', lanes: 4, narrow: true })).toEqual({
      kWide: false,
      kNarrow: true,
      vWide: false,
      vNarrow: true,
    });
  });
  it('tiled: K as words where the lanes divide headDim/8; V as words from 8 words a row and up to 8 rows', () => {
    const tiled = (lanes: number): FlashLayout => ({ kind: 'tiled', lanes });
    const all = { kWide: true, kNarrow: false, vWide: true, vNarrow: false };
    expect(loads(128, 'f16', tiled(4))).toEqual(all);
    expect(loads(64, 'f32', tiled(1))).toEqual(all);
    expect(loads(256, 'f16', tiled(8))).toEqual(all);
    // headDim/8 = 10 is not a multiple of 4 lanes; headDim/4 = 20 is.
    expect(loads(80, 'f16', tiled(4))).toEqual({ kWide: false, kNarrow: true, vWide: true, vNarrow: false });
    expect(loads(80, 'f16', tiled(2))).toEqual(all);
    // Fewer than 8 words a row: V by pairs.
    expect(loads(32, 'f16', tiled(1))).toEqual({ kWide: true, kNarrow: false, vWide: false, vNarrow: true });
    expect(loads(64, 'q4_0', tiled(4))).toEqual({ kWide: false, kNarrow: true, vWide: false, vNarrow: true });
    expect(loads(64, 'f16', tiled(4), 'q8_0')).toEqual({
      kWide: true,
      kNarrow: false,
      vWide: false,
      vNarrow: true,
    });
    // 4 heads of a group × 4 tokens = 16 rows: V by pairs (64 accumulators a thread at most).
    expect(loads(128, 'f16', tiled(4), undefined, 4)).toEqual({
      kWide: true,
      kNarrow: false,
      vWide: false,
      vNarrow: true,
    });
    expect(loads(128, 'f16', tiled(4), undefined, 2)).toEqual(all);
  });
  it('narrowV: V by pairs, K still as words', () => {
    for (const layout of [
      { kind: 'tiled', lanes: 4, narrowV: true },
      { kind: 'strided', narrowV: true },
    ] as FlashLayout[])
      expect(loads(128, 'f16', layout)).toEqual({ kWide: true, kNarrow: false, vWide: false, vNarrow: true });
  });
});
