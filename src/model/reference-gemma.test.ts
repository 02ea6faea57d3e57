/**
 * Gemma 2 / Gemma 3 (text) in the float64 reference against llama.cpp itself: each random-weight file of
 * src/testing/arch-cases.ts (kind 'gemma') is rebuilt from its seed (SHA-256 equal to the file llama.cpp
 * ran), and the reference's greedy continuation and per-position log-softmax are compared with
 * tests/golden/arch.json (`npm run golden:arch`, node-llama-cpp CPU). Also the configuration reader's
 * Gemma hyperparameters and the files it refuses.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openGguf } from '../gguf/reader.ts';
import { type GgufMetadataEntry, kv, writeGguf } from '../gguf/writer.ts';
import { ARCH_CASES, type ArchCase, archCasePrompt, buildArchCase } from '../testing/arch-cases.ts';
import { llamaConfigFromGguf } from './config.ts';
import { makeRandomGemmaGguf, type RandomGemmaOptions, randomGemmaParts } from './random-gemma.ts';
import { argmax, geluF16, geluTanh, logSoftmax, ReferenceLlama } from './reference.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
interface GoldenCase {
  sha256: string;
  promptIds: number[];
  outputIds: number[];
  logSoftmax: number[][];
}
const golden = JSON.parse(readFileSync(resolve(REPO_ROOT, 'tests/golden/arch.json'), 'utf8')) as {
  cases: Record<string, GoldenCase>;
};

const open = (bytes: Uint8Array) => openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
const gemmaCases = ARCH_CASES.filter((c): c is ArchCase & { kind: 'gemma' } => c.kind === 'gemma');

describe('ReferenceLlama on random Gemma files vs llama.cpp (tests/golden/arch.json)', () => {
  it('has gemma2 and gemma3 cases in the golden file', () => {
    const archs = new Set(gemmaCases.map((c) => c.options.architecture));
    expect([...archs].sort()).toEqual(['gemma2', 'gemma3']);
    for (const c of gemmaCases) expect(golden.cases[c.name], c.name).toBeDefined();
  });

  for (const c of gemmaCases) {
    it(`${c.name}: same file, greedy ids equal over 64 steps, log-softmax within 5e-4`, async () => {
      const g = golden.cases[c.name];
      const bytes = buildArchCase(c);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(g.sha256);
      expect(archCasePrompt(c)).toEqual(g.promptIds);
      const ref = await ReferenceLlama.fromGguf(await open(bytes));
      ref.geluF16Table = true; // as llama.cpp's CPU backend computes GELU
      // Greedy, free-running: our own argmax feeds the next step.
      let logits!: Float64Array;
      g.promptIds.forEach((id, pos) => {
        logits = ref.forward(id, pos);
      });
      const out: number[] = [];
      const lsm: Float64Array[] = [];
      let pos = g.promptIds.length;
      for (let i = 0; i < g.outputIds.length; i++) {
        if (i < g.logSoftmax.length) lsm.push(logSoftmax(logits));
        const next = argmax(logits);
        out.push(next);
        logits = ref.forward(next, pos++);
      }
      expect(out).toEqual(g.outputIds);
      let worst = 0;
      g.logSoftmax.forEach((want, i) => {
        expect(lsm[i].length).toBe(want.length);
        for (let v = 0; v < want.length; v++) worst = Math.max(worst, Math.abs(lsm[i][v] - want[v]));
      });
      // f32 (llama.cpp) vs float64; ln(p) stored to 7 significant digits.
      expect(worst).toBeLessThan(5e-4); // measured 6e-5 … 3.8e-4 (exact GELU instead of the table: 1.2e-3 … 2e-3)
      expect(worst).toBeGreaterThan(0);
    });
  }

  it('would not match llama.cpp without the sliding window, the soft-caps or the SWA RoPE base', async () => {
    // Each Gemma feature changes the output measurably, so the comparison above tests every one.
    const c = gemmaCases.find((x) => x.name === 'gemma2-ropescale-pattern3');
    if (!c) throw new Error('case missing');
    const g = golden.cases[c.name];
    const file = await open(buildArchCase(c));
    const base = await ReferenceLlama.fromGguf(file);
    const seq = [...g.promptIds, ...g.outputIds.slice(0, 8)];
    const want = base.run(seq).map(logSoftmax);
    const gm = base.cfg.gemma;
    if (!gm?.swa) throw new Error('no SWA');
    const variants = {
      noWindow: { ...gm, swa: { ...gm.swa, window: 1e9 } },
      noAttnCap: { ...gm, attnSoftcap: 0 },
      noFinalCap: { ...gm, finalSoftcap: 0 },
      globalBaseEverywhere: { ...gm, swa: { ...gm.swa, ropeFreqBase: base.cfg.ropeFreqBase } },
    };
    for (const [name, gemma] of Object.entries(variants)) {
      const ref = await ReferenceLlama.fromGguf(file, { ...base.cfg, gemma });
      const got = ref.run(seq).map(logSoftmax);
      let d = 0;
      for (let p = g.promptIds.length - 1; p < seq.length; p++)
        for (let v = 0; v < got[p].length; v++) d = Math.max(d, Math.abs(got[p][v] - want[p][v]));
      expect(d, name).toBeGreaterThan(1e-2);
    }
  });
});

describe('Gemma configuration (llama.cpp load_arch_hparams)', () => {
  const opts = {};
  const small = { seed: 1, nLayers: 7, nEmbd: 32, nFF: 48, nHead: 2, nVocab: 270 };

  it('gemma2 defaults: window 4096, period 2, caps 50/30, SWA base = global base, scale 1/√headDim', async () => {
    const o: RandomGemmaOptions = { ...small, architecture: 'gemma2', headDim: 24 };
    const cfg = llamaConfigFromGguf(await open(makeRandomGemmaGguf(o)), opts);
    expect(cfg.ropeType).toBe('neox');
    expect(cfg.tiedEmbeddings).toBe(true);
    expect(cfg.gemma).toEqual({
      embdScale: Math.sqrt(32),
      attnScale: 1 / Math.sqrt(24),
      attnSoftcap: 50,
      finalSoftcap: 30,
      swa: {
        window: 4096,
        layers: [true, false, true, false, true, false, true],
        ropeFreqBase: 10000,
        ropeFreqScale: 1,
      },
    });
  });

  it('gemma3: no SWA without sliding_window; with it period 6 and local base 10000, scale 1', async () => {
    const o: RandomGemmaOptions = { ...small, architecture: 'gemma3' };
    const none = llamaConfigFromGguf(await open(makeRandomGemmaGguf(o)), opts);
    expect(none.qkNorm).toBe(true);
    expect(none.ropeFreqBase).toBe(1e6);
    expect(none.gemma).toEqual({
      embdScale: Math.sqrt(32),
      attnScale: 0.25,
      attnSoftcap: 0,
      finalSoftcap: 0,
    });
    const swa = llamaConfigFromGguf(
      await open(makeRandomGemmaGguf({ ...o, slidingWindow: 9, ropeScalingFactor: 8 })),
      opts,
    );
    expect(swa.ropeScaling).toEqual({ type: 'linear', factor: 8 });
    expect(swa.gemma?.swa).toEqual({
      window: 9,
      layers: [true, true, true, true, true, false, true],
      ropeFreqBase: 10000,
      ropeFreqScale: 1,
    });
  });

  it('refuses what llama.cpp refuses or we do not read: gemma2 with output.weight, a per-layer pattern, window 0', async () => {
    const parts = randomGemmaParts({ ...small, architecture: 'gemma2' });
    const emb = parts.tensors.find((t) => t.name === 'token_embd.weight');
    if (!emb) throw new Error('no token_embd');
    const untied = writeGguf({ ...parts, tensors: [...parts.tensors, { ...emb, name: 'output.weight' }] });
    await expect(open(untied).then((f) => llamaConfigFromGguf(f))).rejects.toMatchObject({
      code: 'unsupported_model',
    });
    const withMd = (extra: GgufMetadataEntry) =>
      open(writeGguf({ ...parts, metadata: [...parts.metadata.filter((m) => m.key !== extra.key), extra] }));
    const pattern = kv.u32s('gemma2.attention.sliding_window_pattern', [2, 2, 2, 2, 2, 2, 2]);
    await expect(withMd(pattern).then((f) => llamaConfigFromGguf(f))).rejects.toMatchObject({
      code: 'unsupported_model',
    });
    const window0 = kv.u32('gemma2.attention.sliding_window', 0);
    await expect(withMd(window0).then((f) => llamaConfigFromGguf(f))).rejects.toMatchObject({
      code: 'gguf_invalid',
    });
  });

  it('GELU: exact tanh form, and the f16 table within f16 rounding of it', () => {
    expect(geluTanh(0)).toBe(0);
    expect(geluTanh(1)).toBeCloseTo(0.8411919906082768, 12); // 0.5·(1 + tanh(√(2/π)·1.044715))
    for (const x of [-12, -3.3, -0.7, 0.01, 0.9, 2.5, 11]) {
      expect(Math.abs(geluF16(x) - geluTanh(x))).toBeLessThanOrEqual(Math.abs(geluTanh(x)) * 2e-3 + 1e-4);
    }
    expect(geluF16(-12)).toBe(0);
    expect(geluF16(11)).toBe(11);
  });
});
