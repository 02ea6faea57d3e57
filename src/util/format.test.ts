import { describe, expect, it } from 'vitest';
import { fmtEta } from '../ui/load-phases.ts';
import { modelIdFromName } from '../ui/model-picker.ts';
import { rooflineSentences, softwareName, softwareWarning } from '../ui/roofline-view.ts';
import {
  fmtBinaryBytes,
  fmtBytes,
  fmtCount,
  fmtMs,
  fmtNum,
  fmtParams,
  fmtPct,
  fmtRate,
  fmtSig,
  niceCeil,
  niceStep,
} from './format.ts';

describe('number formatting', () => {
  it('reads missing values as a dash', () => {
    for (const f of [fmtMs, fmtNum, fmtRate, fmtPct, fmtBytes, fmtParams, fmtSig, fmtCount]) {
      expect(f(Number.NaN)).toBe('–');
      expect(f(undefined)).toBe('–');
    }
  });

  it('keeps about three significant figures', () => {
    expect(fmtMs(0.8234)).toBe('0.82 ms');
    expect(fmtMs(12.34)).toBe('12.3 ms');
    expect(fmtMs(3095.4)).toBe('3,095 ms');
    expect(fmtMs(125_000)).toBe('125.0 s');
    expect(fmtNum(62.61)).toBe('62.6');
    expect(fmtNum(1234.5)).toBe('1,235');
    expect(fmtRate(812.4)).toBe('812 tok/s');
    expect(fmtPct(0.634)).toBe('63.4%');
    expect(fmtPct(0.0421)).toBe('4.21%');
    expect(fmtPct(0.0012)).toBe('0.12%');
    expect(fmtBytes(1185376)).toBe('1.19 MB');
    expect(fmtBytes(512)).toBe('512 B');
    expect(fmtParams(292_160)).toBe('292K');
    expect(fmtParams(1.1e9)).toBe('1.1B');
    // Rounding never gives 1000 of a unit (Gemma-3-1B's 999.9M parameters).
    expect(fmtParams(999_885_952)).toBe('1B');
    expect(fmtParams(999_400_000)).toBe('999M');
    expect(fmtBytes(999_900)).toBe('1 MB');
    expect(fmtBytes(999_400)).toBe('999 kB');
  });
});

describe('significant figures (reports, Markdown, messages)', () => {
  it('formats numbers', () => {
    expect(fmtSig(1234.5)).toBe('1235');
    expect(fmtSig(0.012345)).toBe('0.0123');
    expect(fmtSig(Number.NaN)).toBe('–');
    expect(fmtBytes(1185376)).toBe('1.19 MB');
    expect(fmtParams(292800)).toBe('293K');
    expect(fmtParams(1.235e9)).toBe('1.24B');
    expect(fmtBytes(2.5e9)).toBe('2.5 GB');
    expect(fmtSig(0)).toBe('0');
    expect(fmtParams(1.1e9)).toBe('1.1B');
    expect(fmtPct(0.634)).toBe('63.4%');
  });
});

describe('fmtBinaryBytes', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [16384, '16 KiB'],
    [32768, '32 KiB'],
    [134217728, '128 MiB'],
    [268435456, '256 MiB'],
    [1073741824, '1 GiB'],
    [2147483644, '~2 GiB'],
    [4294967292, '~4 GiB'],
    [3 * 2 ** 30 + 2 ** 29, '3.5 GiB'],
    [2 ** 40, '1 TiB'],
  ])('%d bytes → %s', (n, text) => {
    expect(fmtBinaryBytes(n)).toBe(text);
  });

  it('leaves nonsense as it is', () => {
    expect(fmtBinaryBytes(-1)).toBe('-1');
    expect(fmtBinaryBytes(Number.NaN)).toBe('NaN');
  });
});

describe('fmtCount', () => {
  it('groups thousands the same way in every locale', () => {
    expect(fmtCount(256)).toBe('256');
    expect(fmtCount(65535)).toBe('65,535');
  });
});

describe('model ids', () => {
  it('come from the file name or the URL path, without .gguf, query or escapes', () => {
    expect(modelIdFromName('stories260K.gguf')).toBe('stories260K');
    expect(modelIdFromName('https://hf.co/a/b/resolve/main/Llama%203%20Q4.GGUF?download=1')).toBe(
      'Llama 3 Q4',
    );
    expect(modelIdFromName('/models/x.gguf#frag')).toBe('x');
    expect(modelIdFromName('.gguf')).toBe('model');
    expect(modelIdFromName('https://h/Qwen3-8B-Q4_K_M-00001-of-00002.gguf')).toBe('Qwen3-8B-Q4_K_M');
  });
});

describe('roofline wording', () => {
  it('says what share of bandwidth decode reached, and prefill against matmul', () => {
    const [decode, prefill] = rooflineSentences(
      {
        bandwidthGBs: 1.61,
        bytesPerToken: 1.08e6,
        fraction: 0.042,
        matmulGflops: 0.65,
        prefillFraction: 0.024,
      },
      30.1,
    );
    expect(decode).toBe(
      "Decode reaches 4.2% of what your GPU's memory allows (1.61 GB/s measured, 1.08 MB read per token).",
    );
    expect(prefill).toBe(
      'Prefill runs at 0.02 GFLOP/s; the measured f32 matmul rate is 0.65 GFLOP/s, and prefill reaches 2.4% of it.',
    );
    expect(rooflineSentences(undefined)).toEqual([]);
    // Past the f32 matmul rate (134% was shown as a plain percentage): said as a multiple, with why (issue 46, item 8).
    const [, past] = rooflineSentences(
      {
        bandwidthGBs: 1.61,
        bytesPerToken: 1.08e6,
        fraction: 0.042,
        matmulGflops: 0.65,
        prefillFraction: 1.34,
      },
      30.1,
    );
    expect(past).toMatch(
      /prefill reaches 1\.34× it: the prefill kernels \(int8 dot products .*not a ceiling\.$/,
    );
  });

  it('names software adapters loudly', () => {
    const a = {
      vendor: 'google',
      architecture: 'swiftshader',
      device: '',
      description: 'SwiftShader Device (Subzero)',
      isFallbackAdapter: true,
      features: [],
      limits: {},
    };
    expect(softwareWarning(a)).toBe('SwiftShader: CPU emulation, not your GPU');
    expect(softwareName({ ...a, vendor: 'mesa', architecture: '', description: 'llvmpipe (LLVM 15)' })).toBe(
      'llvmpipe',
    );
  });
});

describe('fmtEta', () => {
  it('seconds, then minutes, then hours', () => {
    expect(fmtEta(1)).toBe('1 s');
    expect(fmtEta(88_400)).toBe('89 s');
    expect(fmtEta(95_000)).toBe('2 min');
    expect(fmtEta(3_900_000)).toBe('1 h 5 min');
  });
});

describe('niceCeil: chart axis ends on round numbers (issue 46, item 11)', () => {
  it('rounds up to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 or 10 × a power of ten', () => {
    expect([558.3, 0.73, 1, 7, 101, 2400, 0.0123, 999].map(niceCeil)).toEqual([
      600, 0.8, 1, 8, 120, 2500, 0.015, 1000,
    ]);
    for (let i = 0; i < 200; i++) {
      const v = Math.exp(Math.random() * 20 - 10);
      const n = niceCeil(v);
      expect(n).toBeGreaterThanOrEqual(v * (1 - 1e-12));
      expect(n).toBeLessThanOrEqual(v * (4 / 3) * (1 + 1e-12)); // the widest step: 6 → 8
    }
  });
});

describe('niceStep: round tick steps', () => {
  it('rounds up to 1, 2, 2.5 or 5 × a power of ten', () => {
    expect([46.7, 0.3, 1, 3, 7, 140, 0.012].map(niceStep)).toEqual([50, 0.5, 1, 5, 10, 200, 0.02]);
  });
});
