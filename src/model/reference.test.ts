/**
 * The float64 reference forward pass against llama.cpp itself: stories260K's golden greedy continuation
 * and per-position log-softmax (tests/golden/stories260K.json, made by `npm run golden`), plus checks of
 * the pieces the GPU tests lean on (F16 decoding, RoPE variants, cache truncation), and quantized files
 * read through dequantizeRow (against llama.cpp on whole texts: src/bench/perplexity.test.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { shapeElements } from '../gguf/ggml-types.ts';
import { dequantizeRow } from '../gguf/quantize.ts';
import { quantizeGguf } from '../gguf/quantize-model.ts';
import { openGguf } from '../gguf/reader.ts';
import { metadataEntriesFrom, writeGguf } from '../gguf/writer.ts';
import { stories260kPath } from '../testing/models.ts';
import { mulberry32 } from '../util/prng.ts';
import { f32ToF16Bits, makeRandomLlamaGguf, type RandomLlamaOptions } from './random-model.ts';
import { argmax, decodeTensor, halfToNumber, logSoftmax, ReferenceLlama, roundQ8 } from './reference.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const STORIES = stories260kPath();

interface Golden {
  generation: { cases: { promptIds: number[]; outputIds: number[] }[] };
  logProbs: { cases: { promptIds: number[]; outputIds: number[]; logSoftmax: number[][] }[] };
}
const golden: Golden = JSON.parse(readFileSync(resolve(REPO_ROOT, 'tests/golden/stories260K.json'), 'utf8'));

describe('ReferenceLlama on stories260K vs llama.cpp', () => {
  let ref: ReferenceLlama;
  beforeAll(async () => {
    ref = await ReferenceLlama.fromGguf(await openGguf({ path: STORIES }));
  });

  it('reads the config', () => {
    expect(ref.cfg.nVocab).toBe(512);
    expect(ref.cfg.nHead % ref.cfg.nHeadKv).toBe(0);
  });

  it('continues generation.cases[0] greedily, token for token', () => {
    const { promptIds, outputIds } = golden.generation.cases[0];
    expect(outputIds.length).toBe(64);
    ref.reset();
    let logits!: Float64Array;
    promptIds.forEach((id, pos) => {
      logits = ref.forward(id, pos);
    });
    const out: number[] = [];
    let pos = promptIds.length;
    for (let i = 0; i < outputIds.length; i++) {
      const next = argmax(logits);
      out.push(next);
      logits = ref.forward(next, pos++);
    }
    expect(out).toEqual(outputIds);
  });

  it('matches logProbs.cases[*].logSoftmax within 1e-4 (measured: 1.5e-5)', () => {
    for (const c of golden.logProbs.cases) {
      const seq = [...c.promptIds, ...c.outputIds];
      const all = ref.run(seq);
      let worst = 0;
      c.logSoftmax.forEach((want, i) => {
        // Position i is the distribution after the last prompt token (i = 0) or after outputIds[i-1].
        const got = logSoftmax(all[c.promptIds.length - 1 + i]);
        expect(got.length).toBe(want.length);
        for (let v = 0; v < want.length; v++) worst = Math.max(worst, Math.abs(got[v] - want[v]));
      });
      expect(worst).toBeLessThan(1e-4);
    }
  });

  it('gives the same logits after reset() and when a position is rerun', () => {
    const ids = golden.generation.cases[0].promptIds;
    const a = ref.run(ids);
    ref.forward(7, ids.length); // extends the cache ...
    const again = ref.forward(ids[ids.length - 1], ids.length - 1); // ... and rerunning drops it
    expect(again).toEqual(a[a.length - 1]);
    expect(ref.length).toBe(ids.length);
    expect(() => ref.forward(1, ids.length + 1)).toThrow(/gap/);
  });
});

describe('reference building blocks', () => {
  it('decodes F16 exactly (normals, subnormals, signs, infinities)', () => {
    expect(halfToNumber(0x3c00)).toBe(1);
    expect(halfToNumber(0xc000)).toBe(-2);
    expect(halfToNumber(0x7bff)).toBe(65504);
    expect(halfToNumber(0x0001)).toBe(2 ** -24);
    expect(halfToNumber(0x8000)).toBe(-0);
    expect(halfToNumber(0x7c00)).toBe(Number.POSITIVE_INFINITY);
    expect(halfToNumber(0x7e00)).toBeNaN();
    for (const v of [0.1, -3.25, 1e-5, 1234.5, -0.000123]) {
      expect(Math.abs(halfToNumber(f32ToF16Bits(v)) - v)).toBeLessThanOrEqual(
        Math.abs(v) * 2 ** -11 + 2 ** -25,
      );
    }
  });

  it('F16 and F32 copies of a model agree to f16 precision; neox RoPE differs from norm', async () => {
    const base = { seed: 5, nLayers: 1, nEmbd: 32, nFF: 48, nHead: 2, nVocab: 270, ropeDim: 8 };
    const load = async (o: Partial<RandomLlamaOptions> = {}) =>
      openGguf({ blob: new Blob([makeRandomLlamaGguf({ ...base, ...o }) as Uint8Array<ArrayBuffer>]) });
    const ids = [5, 99, 200, 17, 260, 3];
    const f32 = await ReferenceLlama.fromGguf(await load());
    const f16 = await ReferenceLlama.fromGguf(await load({ weightType: 'F16' }));
    const a = f32.run(ids);
    const b = f16.run(ids);
    for (let i = 0; i < ids.length; i++) {
      const d = Math.max(...a[i].map((v, j) => Math.abs(v - b[i][j])));
      expect(d).toBeGreaterThan(0);
      expect(d).toBeLessThan(0.05);
    }
    // neox pairs differ from norm pairs (at pos > 0); pos 0 is the identity rotation for both.
    const file = await load();
    const neox = await ReferenceLlama.fromGguf(file, { ...f32.cfg, ropeType: 'neox' });
    const n = neox.run(ids);
    expect(n[0]).toEqual(a[0]);
    expect(Math.max(...n[3].map((v, j) => Math.abs(v - a[3][j])))).toBeGreaterThan(1e-3);
  });
});

describe('quantized files (through dequantizeRow)', () => {
  it('a Q4_K/Q6_K/Q8_0/F16 file gives exactly the logits of an F32 file holding its dequantized weights', async () => {
    const bytes = makeRandomLlamaGguf({ seed: 9, nLayers: 2, nEmbd: 256, nFF: 256, nHead: 4, nVocab: 300 });
    const src = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const ids = [1, 40, 299, 7, 123];
    for (const type of ['Q4_K_M', 'Q8_0', 'Q4_0', 'F16', 'BF16'] as const) {
      const q = await quantizeGguf(src, type);
      const qFile = await openGguf({ blob: new Blob([q.bytes as Uint8Array<ArrayBuffer>]) });
      expect(new Set([...qFile.tensors.values()].map((t) => t.typeName)).size).toBeGreaterThan(1);
      // The same model with every tensor dequantized by hand and stored as F32.
      const raw = new Map<string, Uint8Array>();
      await qFile.streamTensorData((c) => {
        const t = raw.get(c.tensor.name) ?? new Uint8Array(c.tensor.nBytes);
        t.set(c.bytes, c.offset);
        raw.set(c.tensor.name, t);
      });
      const f32 = writeGguf({
        metadata: metadataEntriesFrom(qFile),
        tensors: [...qFile.tensors.values()].map((t) => ({
          name: t.name,
          type: 'F32',
          shape: t.shape,
          data: new Uint8Array(dequantizeRow(t.typeName, raw.get(t.name)!, shapeElements(t.shape)).buffer),
        })),
      });
      const a = (await ReferenceLlama.fromGguf(qFile)).run(ids);
      const b = (
        await ReferenceLlama.fromGguf(await openGguf({ blob: new Blob([f32 as Uint8Array<ArrayBuffer>]) }))
      ).run(ids);
      expect(a, type).toEqual(b);
    }
  });

  it('names the type it cannot read', () => {
    expect(() => decodeTensor('IQ2_XXS', new Uint8Array(66), 256)).toThrow(
      /reads F32, F16, BF16, .*not IQ2_XXS/,
    );
  });
});

describe('roundQ8 (the integer-dot kernels activations)', () => {
  it('rounds each 32-value chunk to int8 steps of its own amax / 127, a short tail as one chunk', () => {
    const rng = mulberry32(77);
    const x = Float64Array.from({ length: 70 }, (_, i) => (rng() - 0.5) * (i < 32 ? 1 : 100));
    x.fill(0, 64); // an all-zero tail stays zero
    const q = roundQ8(x);
    for (const [c, n] of [
      [0, 32],
      [32, 32],
    ]) {
      let am = 0;
      for (let k = c; k < c + n; k++) am = Math.max(am, Math.abs(x[k]));
      const d = am / 127;
      for (let k = c; k < c + n; k++) {
        const steps = q[k] / d;
        expect(Math.abs(steps - Math.round(steps))).toBeLessThan(1e-9);
        expect(Math.abs(steps)).toBeLessThanOrEqual(127 + 1e-9);
        expect(Math.abs(q[k] - x[k])).toBeLessThanOrEqual(d / 2 + 1e-12);
      }
    }
    expect([...q.subarray(64)]).toEqual([0, 0, 0, 0, 0, 0]);
  });
});

describe('int8 rounding by position (int8Before, int8From, int8OutputFrom)', () => {
  it('rounds the layer matmuls from int8From on, the output from int8OutputFrom on, and nothing before', async () => {
    const bytes = makeRandomLlamaGguf({ seed: 91, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nVocab: 300 });
    const ref = await ReferenceLlama.fromGguf(
      await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) }),
    );
    const tokens = [5, 17, 200, 42, 7, 99];
    const run = (o: { before?: number; from?: number; outputFrom?: number }) => {
      ref.int8Before = o.before ?? 0;
      ref.int8From = o.from ?? Number.POSITIVE_INFINITY;
      ref.int8OutputFrom = o.outputFrom ?? Number.POSITIVE_INFINITY;
      return ref.run(tokens).map((l) => [...l]);
    };
    const plain = run({});
    const all = run({ before: tokens.length });
    // int8From 0 rounds every position, as int8Before past the end does; the two bounds at one position too.
    expect(run({ from: 0 })).toEqual(all);
    expect(run({ before: 3, from: 3 })).toEqual(all);
    // Decode after a float prefill: positions before 3 untouched, the later ones rounded.
    const decode = run({ from: 3 });
    expect(decode.slice(0, 3)).toEqual(plain.slice(0, 3));
    for (let p = 3; p < tokens.length; p++) {
      expect(decode[p]).not.toEqual(plain[p]);
      expect(decode[p]).not.toEqual(all[p]); // earlier positions' cache entries stay float
    }
    // The output's input alone: the same before 2, a change of rounding size (not of kind) after.
    const out = run({ outputFrom: 2 });
    expect(out.slice(0, 2)).toEqual(plain.slice(0, 2));
    for (let p = 2; p < tokens.length; p++) {
      expect(out[p]).not.toEqual(plain[p]);
      const maxRef = Math.max(...plain[p].map(Math.abs));
      const maxDiff = Math.max(...out[p].map((v, i) => Math.abs(v - plain[p][i])));
      expect(maxDiff).toBeLessThan(2e-2 * (1 + maxRef));
    }
  });
});
