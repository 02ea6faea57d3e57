import { describe, expect, it } from 'vitest';
import { openGguf } from '../gguf/reader.ts';
import { collectTensorData, sha256 } from '../testing/gguf-util.ts';
import { llamaConfigFromGguf } from './config.ts';
import { f32ToF16Bits, makeRandomLlamaGguf, makeSpmVocab, TokenType } from './random-model.ts';

const SMALL = {
  seed: 1,
  nLayers: 2,
  nEmbd: 32,
  nFF: 88,
  nHead: 4,
  nHeadKv: 2,
  nVocab: 300,
  contextLength: 128,
};

function blob(b: Uint8Array) {
  return { blob: new Blob([b as Uint8Array<ArrayBuffer>]) };
}

describe('makeRandomLlamaGguf', () => {
  it('is deterministic per seed', () => {
    const a = makeRandomLlamaGguf(SMALL);
    expect(sha256(makeRandomLlamaGguf(SMALL))).toBe(sha256(a));
    expect(sha256(makeRandomLlamaGguf({ ...SMALL, seed: 2 }))).not.toBe(sha256(a));
  });

  it('gives a valid llama config with the requested sizes', async () => {
    const f = await openGguf(blob(makeRandomLlamaGguf(SMALL)));
    const c = llamaConfigFromGguf(f);
    expect(c).toMatchObject({
      architecture: 'llama',
      name: 'random-llama',
      nLayers: 2,
      nEmbd: 32,
      nFF: 88,
      nHead: 4,
      nHeadKv: 2,
      headDim: 8,
      nVocab: 300,
      contextLength: 128,
      ropeDim: 8,
      ropeFreqBase: 10000,
      tiedEmbeddings: false,
    });
    expect(c.rmsEps).toBeCloseTo(1e-5, 10);
    expect(f.tensors.size).toBe(2 + 1 + 2 * 9);
    const tied = await openGguf(blob(makeRandomLlamaGguf({ ...SMALL, tied: true, headDim: 16, ropeDim: 4 })));
    const ct = llamaConfigFromGguf(tied);
    expect(ct.tiedEmbeddings).toBe(true);
    expect(tied.tensors.has('output.weight')).toBe(false);
    expect(ct.headDim).toBe(16);
    expect(ct.ropeDim).toBe(4);
    expect(tied.tensors.get('blk.0.attn_q.weight')!.shape).toEqual([32, 64]);
  });

  it('fills weights with random, finite, sensibly scaled values (never zeros)', async () => {
    const f = await openGguf(blob(makeRandomLlamaGguf(SMALL)));
    const { data } = await collectTensorData(f);
    for (const [name, bytes] of data) {
      const v = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
      expect(v.every(Number.isFinite), name).toBe(true);
      expect(new Set(v).size, name).toBeGreaterThan(v.length * 0.99);
      const mean = v.reduce((s, x) => s + x, 0) / v.length;
      const sd = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
      if (name.endsWith('norm.weight')) {
        expect(Math.abs(mean - 1), name).toBeLessThan(0.15);
      } else {
        const shape = f.tensors.get(name)!.shape;
        const want = name === 'token_embd.weight' ? 1 : 1 / Math.sqrt(shape[0]);
        expect(Math.abs(sd / want - 1), name).toBeLessThan(0.15);
      }
    }
  });

  it('writes F16 matrices (norms F32) when asked', async () => {
    const f = await openGguf(blob(makeRandomLlamaGguf({ ...SMALL, weightType: 'F16' })));
    expect(f.tensors.get('blk.0.ffn_up.weight')!.typeName).toBe('F16');
    expect(f.tensors.get('blk.0.ffn_up.weight')!.nBytes).toBe(32 * 88 * 2);
    expect(f.tensors.get('blk.0.ffn_norm.weight')!.typeName).toBe('F32');
    expect(llamaConfigFromGguf(f).nFF).toBe(88);
  });

  it('f32ToF16Bits rounds to nearest even and handles the edges', () => {
    const cases: [number, number][] = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [65504, 0x7bff],
      [65520, 0x7c00], // rounds up to infinity
      [1e6, 0x7c00],
      [Number.POSITIVE_INFINITY, 0x7c00],
      [Number.NEGATIVE_INFINITY, 0xfc00],
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // halfway to zero: ties to even
      [3 * 2 ** -25, 0x0002], // 1.5 ulp: ties to even
      [2 ** -14, 0x0400], // smallest normal
      [1 + 2 ** -11, 0x3c00], // halfway between 1 and next: even
      [1 + 3 * 2 ** -11, 0x3c02],
      [0.1, 0x2e66],
    ];
    for (const [v, h] of cases) expect(f32ToF16Bits(v), String(v)).toBe(h);
    expect(f32ToF16Bits(Number.NaN) & 0x7c00).toBe(0x7c00);
    expect(f32ToF16Bits(Number.NaN) & 0x3ff).not.toBe(0);
  });
});

describe('makeSpmVocab', () => {
  it('has the specials, 256 byte tokens and mergeable word pieces', () => {
    const v = makeSpmVocab(1000);
    expect(v.tokens.length).toBe(1000);
    expect(v.scores.length).toBe(1000);
    expect(v.tokenTypes.length).toBe(1000);
    expect(v.tokens.slice(0, 3)).toEqual(['<unk>', '<s>', '</s>']);
    expect(v.tokenTypes.slice(0, 3)).toEqual([TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]);
    for (let b = 0; b < 256; b++) {
      expect(v.tokens[3 + b]).toBe(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      expect(v.tokenTypes[3 + b]).toBe(TokenType.BYTE);
    }
    expect(v.tokens[3 + 0x0a]).toBe('<0x0A>');
    expect(new Set(v.tokens).size).toBe(1000);
    const set = new Set(v.tokens);
    for (let i = 259; i < 1000; i++) {
      const p = v.tokens[i];
      expect(v.tokenTypes[i]).toBe(TokenType.NORMAL);
      if (i > 259) expect(v.scores[i]).toBeLessThan(v.scores[i - 1]);
      const chars = [...p];
      if (chars.length > 1) {
        const ok = chars.some(
          (_, k) => k > 0 && set.has(chars.slice(0, k).join('')) && set.has(chars.slice(k).join('')),
        );
        expect(ok, p).toBe(true);
      }
    }
    expect(v.tokens).toContain('\u2581the');
    expect(() => makeSpmVocab(258)).toThrow(/at least 259/);
    expect(makeSpmVocab(259).tokens.length).toBe(259);
  });
});
