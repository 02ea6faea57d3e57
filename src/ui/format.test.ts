import { describe, expect, it } from 'vitest';
import { fmtBytes, fmtMs, fmtNum, fmtParams, fmtPct, fmtRate } from './format.ts';
import { fmtEta, modelIdFromName } from './model-picker.ts';
import { rooflineSentences, softwareName, softwareWarning } from './roofline-view.ts';

describe('number formatting', () => {
  it('reads missing values as a dash', () => {
    for (const f of [fmtMs, fmtNum, fmtRate, fmtPct, fmtBytes, fmtParams]) {
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
    expect(fmtPct(0.634)).toBe('63%');
    expect(fmtPct(0.0421)).toBe('4.2%');
    expect(fmtPct(0.0012)).toBe('0.12%');
    expect(fmtBytes(1185376)).toBe('1.19 MB');
    expect(fmtBytes(512)).toBe('512 B');
    expect(fmtParams(292_160)).toBe('292K');
    expect(fmtParams(1.1e9)).toBe('1.1B');
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
    expect(prefill).toBe('Prefill runs at 0.02 GFLOP/s, 2.4% of the measured matmul rate (0.65 GFLOP/s).');
    expect(rooflineSentences(undefined)).toEqual([]);
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
