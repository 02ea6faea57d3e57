/**
 * Whole-model quantization: llama.cpp's type choices, and files byte-identical to what llama.cpp's own
 * `llama_model_quantize` writes (tests/golden/quant.json, `npm run golden:quant`) for stories260K and
 * for stories260K widened to 256-wide rows (so that Q4_K and Q6_K blocks hold trained weights); the
 * `npm run quantize` command.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import goldenQuant from '../../tests/golden/quant.json';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { GOLDEN_QUANT_PHI3, makeRandomPhi3Gguf } from '../model/random-phi3.ts';
import { WIDE_STORIES, widenLlamaGguf } from '../model/widen.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { sha256 } from '../testing/gguf-util.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { planQuantization, type QuantizeFtype, quantizeGguf } from './quantize-model.ts';
import { openGguf } from './reader.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

const ROOT = resolve(import.meta.dirname, '../..');

/** A dense llama's tensor list (names and shapes only). */
function llamaTensors(nLayers: number, nEmbd: number, nFF: number, tied = false) {
  const t: { name: string; typeName: string; shape: number[] }[] = [
    { name: 'token_embd.weight', typeName: 'F16', shape: [nEmbd, 1000] },
    { name: 'output_norm.weight', typeName: 'F32', shape: [nEmbd] },
  ];
  if (!tied) t.push({ name: 'output.weight', typeName: 'F16', shape: [nEmbd, 1000] });
  for (let i = 0; i < nLayers; i++) {
    for (const [n, s] of [
      ['attn_norm.weight', [nEmbd]],
      ['attn_q.weight', [nEmbd, nEmbd]],
      ['attn_k.weight', [nEmbd, nEmbd / 4]],
      ['attn_v.weight', [nEmbd, nEmbd / 4]],
      ['attn_output.weight', [nEmbd, nEmbd]],
      ['ffn_norm.weight', [nEmbd]],
      ['ffn_gate.weight', [nEmbd, nFF]],
      ['ffn_up.weight', [nEmbd, nFF]],
      ['ffn_down.weight', [nFF, nEmbd]],
    ] as const) {
      t.push({ name: `blk.${i}.${n}`, typeName: s.length === 1 ? 'F32' : 'F16', shape: [...s] });
    }
  }
  return t;
}

function typesOf(plan: { name: string; to: string }[]): Record<string, string> {
  return Object.fromEntries(plan.map((p) => [p.name, p.to]));
}

describe('planQuantization (llama.cpp llama_tensor_get_type)', () => {
  it('Q4_K_M: Q6_K for output and for attn_v/ffn_down where use_more_bits (half of 32 layers)', () => {
    const t = typesOf(planQuantization(llamaTensors(32, 4096, 11008), 'Q4_K_M'));
    expect(t['output.weight']).toBe('Q6_K');
    expect(t['token_embd.weight']).toBe('Q4_K');
    expect(t['output_norm.weight']).toBe('F32');
    const more = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31];
    for (let i = 0; i < 32; i++) {
      const want = more.includes(i) ? 'Q6_K' : 'Q4_K';
      expect(t[`blk.${i}.attn_v.weight`], `layer ${i}`).toBe(want);
      expect(t[`blk.${i}.ffn_down.weight`], `layer ${i}`).toBe(want);
      expect(t[`blk.${i}.attn_q.weight`]).toBe('Q4_K');
      expect(t[`blk.${i}.ffn_up.weight`]).toBe('Q4_K');
      expect(t[`blk.${i}.attn_norm.weight`]).toBe('F32');
    }
    // 8 layers: 0 (< n/8), 7 (≥ 7n/8), 3 and 6 ((i − 1) mod 3 = 2).
    const t8 = typesOf(planQuantization(llamaTensors(8, 256, 512), 'Q4_K_M'));
    const got = [...Array(8).keys()].filter((i) => t8[`blk.${i}.ffn_down.weight`] === 'Q6_K');
    expect(got).toEqual([0, 3, 6, 7]);
  });

  it('counts layers in llama.cpp order (by layer number, not by name), whatever the file order', () => {
    const t = llamaTensors(12, 256, 512).reverse();
    const plan = planQuantization(t, 'Q4_K_M');
    expect(plan[0].name).toBe('output.weight');
    expect(plan.at(-1)!.name).toBe('blk.11.ffn_up.weight');
    const types = typesOf(plan);
    const more = [...Array(12).keys()].filter((i) => types[`blk.${i}.attn_v.weight`] === 'Q6_K');
    expect(more).toEqual([0, 3, 6, 9, 10, 11]); // n/8 = 1, 7n/8 = 10
  });

  it('Q4_0, Q8_0, Q6_K: output Q6_K (Q8_0 stays Q8_0); tied embeddings take the output rule', () => {
    expect(typesOf(planQuantization(llamaTensors(2, 256, 512), 'Q4_0'))['output.weight']).toBe('Q6_K');
    expect(typesOf(planQuantization(llamaTensors(2, 256, 512), 'Q8_0'))['output.weight']).toBe('Q8_0');
    const tied = typesOf(planQuantization(llamaTensors(2, 256, 512, true), 'Q4_0'));
    expect(tied['token_embd.weight']).toBe('Q6_K');
    expect(tied['blk.0.attn_v.weight']).toBe('Q4_0');
    const untied = typesOf(planQuantization(llamaTensors(2, 256, 512), 'Q4_0'));
    expect(untied['token_embd.weight']).toBe('Q4_0');
  });

  it('pure and Q4_K: one type everywhere; F16/BF16/F32: every matrix in that type', () => {
    const pure = planQuantization(llamaTensors(4, 256, 512), 'Q4_0', { pure: true });
    expect(new Set(pure.filter((p) => p.shape.length === 2).map((p) => p.to))).toEqual(new Set(['Q4_0']));
    const q4k = planQuantization(llamaTensors(4, 256, 512), 'Q4_K');
    expect(new Set(q4k.filter((p) => p.shape.length === 2).map((p) => p.to))).toEqual(new Set(['Q4_K']));
    for (const f of ['F16', 'BF16', 'F32'] as const) {
      const p = planQuantization(llamaTensors(2, 64, 172), f);
      expect(new Set(p.filter((x) => x.shape.length === 2).map((x) => x.to))).toEqual(new Set([f]));
      expect(new Set(p.filter((x) => x.shape.length === 1).map((x) => x.to))).toEqual(new Set(['F32']));
    }
  });

  it('falls back for rows the block does not divide: Q8_0 (engine) or Q5_0 (llama.cpp), F16 below 32', () => {
    const t = llamaTensors(1, 96, 172); // 96 % 256 ≠ 0, 96 % 32 = 0, 172 % 32 ≠ 0
    const eng = typesOf(planQuantization(t, 'Q4_K_M'));
    expect(eng['blk.0.attn_q.weight']).toBe('Q8_0');
    expect(eng['blk.0.ffn_down.weight']).toBe('F16');
    expect(eng['output.weight']).toBe('Q8_0'); // llama.cpp: nx % 256 → Q8_0 directly
    const ll = typesOf(planQuantization(t, 'Q4_K_M', { fallback: 'llama.cpp' }));
    expect(ll['blk.0.attn_q.weight']).toBe('Q5_0');
    expect(ll['blk.0.attn_v.weight']).toBe('Q8_0'); // Q6_K (1 layer: use_more_bits) → Q8_0
    expect(ll['blk.0.ffn_down.weight']).toBe('F16');
    const plan = planQuantization(t, 'Q6_K');
    expect(plan.find((p) => p.name === 'blk.0.attn_q.weight')!.note).toMatch(
      /96 columns are not a multiple of 256/,
    );
  });

  it('Q2_K, Q3_K_S/M/L, Q5_K_S/M: attn_v, attn_output and ffn_down as llama_tensor_get_type_impl', () => {
    const all = (ft: QuantizeFtype, o = {}) =>
      typesOf(planQuantization(llamaTensors(32, 4096, 11008), ft, o));
    const more = new Set([0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]); // use_more_bits(i, 32)
    const want: Record<
      string,
      (i: number) => [attnV: string, attnOut: string, ffnDown: string, other: string]
    > = {
      Q2_K: () => ['Q3_K', 'Q3_K', 'Q3_K', 'Q2_K'],
      Q3_K_S: () => ['Q3_K', 'Q3_K', 'Q3_K', 'Q3_K'],
      Q3_K_M: (i) => [i < 2 ? 'Q5_K' : 'Q4_K', 'Q4_K', i < 2 ? 'Q5_K' : 'Q4_K', 'Q3_K'], // n/16 = 2
      Q3_K_L: () => ['Q5_K', 'Q5_K', 'Q5_K', 'Q3_K'],
      Q5_K_S: () => ['Q5_K', 'Q5_K', 'Q5_K', 'Q5_K'],
      Q5_K_M: (i) => [more.has(i) ? 'Q6_K' : 'Q5_K', 'Q5_K', more.has(i) ? 'Q6_K' : 'Q5_K', 'Q5_K'],
    };
    for (const [ft, f] of Object.entries(want)) {
      const t = all(ft as QuantizeFtype);
      expect(t['output.weight'], ft).toBe('Q6_K');
      expect(t['token_embd.weight'], ft).toBe(f(0)[3]);
      for (let i = 0; i < 32; i++) {
        const [v, o, d, other] = f(i);
        expect(t[`blk.${i}.attn_v.weight`], `${ft} layer ${i}`).toBe(v);
        expect(t[`blk.${i}.attn_output.weight`], `${ft} layer ${i}`).toBe(o);
        expect(t[`blk.${i}.ffn_down.weight`], `${ft} layer ${i}`).toBe(d);
        for (const n of ['attn_q', 'attn_k', 'ffn_gate', 'ffn_up'])
          expect(t[`blk.${i}.${n}.weight`], `${ft} ${n} ${i}`).toBe(other);
      }
    }
    // Q2_K's attn_v is Q4_K with n_gqa ≥ 4; 70B models raise a Q3_K/Q4_K attn_v to Q5_K.
    expect(all('Q2_K', { nGqa: 4 })['blk.5.attn_v.weight']).toBe('Q4_K');
    expect(all('Q2_K', { nGqa: 3 })['blk.5.attn_v.weight']).toBe('Q3_K');
    expect(all('Q2_K', { model70B: true })['blk.5.attn_v.weight']).toBe('Q5_K');
    expect(all('Q3_K_M', { model70B: true })['blk.5.attn_v.weight']).toBe('Q5_K');
    expect(all('Q4_K_M', { model70B: true })['blk.4.attn_v.weight']).toBe('Q5_K');
    expect(all('Q4_K_M', { model70B: true })['blk.3.attn_v.weight']).toBe('Q6_K');
    // Fallbacks for 96-wide rows: Q2_K/Q3_K → Q4_0; Q5_K → Q5_1 (llama.cpp) or Q8_0 (engine).
    const t = llamaTensors(1, 96, 160);
    expect(typesOf(planQuantization(t, 'Q2_K'))['blk.0.attn_q.weight']).toBe('Q4_0');
    expect(typesOf(planQuantization(t, 'Q3_K_S', { fallback: 'llama.cpp' }))['blk.0.attn_q.weight']).toBe(
      'Q4_0',
    );
    expect(typesOf(planQuantization(t, 'Q5_K_S'))['blk.0.attn_q.weight']).toBe('Q8_0');
    expect(typesOf(planQuantization(t, 'Q5_K_S', { fallback: 'llama.cpp' }))['blk.0.attn_q.weight']).toBe(
      'Q5_1',
    );
  });

  it('Q4_1, Q5_1, IQ4_NL, IQ4_XS: output Q6_K; IQ4 attn_v Q5_K when n_gqa ≥ 4, ffn_down Q5_K below n/8', () => {
    const all = (ft: QuantizeFtype, o = {}) =>
      typesOf(planQuantization(llamaTensors(32, 4096, 11008), ft, o));
    for (const ft of ['Q4_1', 'Q5_1', 'IQ4_NL', 'IQ4_XS'] as const) {
      const iq4 = ft.startsWith('IQ4');
      for (const nGqa of [1, 4]) {
        const t = all(ft, { nGqa });
        expect(t['output.weight'], ft).toBe('Q6_K');
        expect(t['token_embd.weight'], ft).toBe(ft);
        expect(t['output_norm.weight'], ft).toBe('F32');
        for (let i = 0; i < 32; i++) {
          expect(t[`blk.${i}.attn_v.weight`], `${ft} ${nGqa} ${i}`).toBe(iq4 && nGqa >= 4 ? 'Q5_K' : ft);
          expect(t[`blk.${i}.ffn_down.weight`], `${ft} ${i}`).toBe(iq4 && i < 4 ? 'Q5_K' : ft);
          for (const n of ['attn_q', 'attn_k', 'attn_output', 'ffn_gate', 'ffn_up'])
            expect(t[`blk.${i}.${n}.weight`], `${ft} ${n} ${i}`).toBe(ft);
        }
      }
    }
    // Rows of 96 (not a multiple of 256) and 172 (not of 32): IQ4_XS → IQ4_NL either way, output Q8_0
    // (nx % 256), 32-block types stay, and F16 below 32.
    const t = llamaTensors(1, 96, 172);
    for (const fallback of ['engine', 'llama.cpp'] as const) {
      const xs = typesOf(planQuantization(t, 'IQ4_XS', { fallback }));
      expect(xs['blk.0.attn_q.weight']).toBe('IQ4_NL');
      expect(xs['token_embd.weight']).toBe('IQ4_NL');
      expect(xs['output.weight']).toBe('Q8_0');
      expect(xs['blk.0.ffn_down.weight']).toBe('F16');
    }
    const q41 = typesOf(planQuantization(t, 'Q4_1'));
    expect(q41['blk.0.attn_q.weight']).toBe('Q4_1');
    expect(q41['output.weight']).toBe('Q8_0'); // Q6_K, whose 256-block then falls back to Q8_0
    expect(q41['blk.0.ffn_down.weight']).toBe('F16');
  });

  it('rejects unknown types', () => {
    expect(() => planQuantization([], 'Q3_K' as QuantizeFtype)).toThrow(/unknown target type Q3_K/);
  });
});

describe('quantizeGguf: the same bytes as llama.cpp (llama_model_quantize)', () => {
  const wideHolder: { bytes?: Uint8Array } = {};
  beforeAll(async () => {
    wideHolder.bytes = await widenLlamaGguf(await openGguf({ path: STORIES_PATH }), WIDE_STORIES);
  });
  // The random Phi-3 (fused attn_qkv, typed like attn_v by llama.cpp's `category_is_attn_v`).
  const phi3Bytes = makeRandomPhi3Gguf(GOLDEN_QUANT_PHI3);
  const bytesOf = (model: string) => (model === 'random-phi3' ? phi3Bytes : wideHolder.bytes!);
  const fileOf = async (model: string) =>
    model === 'stories260K'
      ? openGguf({ path: STORIES_PATH })
      : openGguf({ blob: new Blob([bytesOf(model) as Uint8Array<ArrayBuffer>]) });

  const runs = goldenQuant.models.flatMap((m) => m.runs.map((r) => [m.model, r.ftype, m, r] as const));
  it.each(runs)('%s %s', async (model, _ftype, m, r) => {
    const file = await fileOf(model);
    if (model !== 'stories260K') expect(sha256(bytesOf(model))).toBe(m.sourceSha256);
    const { bytes, plan } = await quantizeGguf(file, r.ftype as QuantizeFtype, {
      pure: r.pure,
      fallback: 'llama.cpp',
    });
    expect(typesOf(plan)).toEqual(r.tensorTypes);
    expect(sha256(bytes)).toBe(r.fileSha256);
  });

  it('the wide model really exercises Q4_K and Q6_K blocks', () => {
    const q4km = goldenQuant.models
      .find((m) => m.model === 'stories260K-wide')!
      .runs.find((r) => r.ftype === 'Q4_K_M')!;
    const counts = new Map<string, number>();
    for (const t of Object.values(q4km.tensorTypes)) counts.set(t, (counts.get(t) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ F32: 11, Q4_K: 32, Q6_K: 5 });
  });

  it('the wide model really exercises Q2_K, Q3_K and Q5_K blocks (and Q3_K_M/Q2_K mixes)', () => {
    const wide = goldenQuant.models.find((m) => m.model === 'stories260K-wide')!;
    const countsOf = (ftype: string) => {
      const counts = new Map<string, number>();
      for (const t of Object.values(wide.runs.find((r) => r.ftype === ftype)!.tensorTypes))
        counts.set(t, (counts.get(t) ?? 0) + 1);
      return Object.fromEntries(counts);
    };
    // Q2_K: attn_v Q4_K (n_gqa = 8), attn_output and ffn_down Q3_K; Q3_K_M: 2 attn_v Q5_K, the rest Q4_K.
    expect(countsOf('Q2_K')).toEqual({ F32: 11, Q2_K: 21, Q3_K: 10, Q4_K: 5, Q6_K: 1 });
    expect(countsOf('Q3_K_M')).toEqual({ F32: 11, Q3_K: 21, Q4_K: 13, Q5_K: 2, Q6_K: 1 });
    expect(countsOf('Q5_K_M')).toEqual({ F32: 11, Q5_K: 32, Q6_K: 5 });
  });

  it("the random Phi-3's fused attn_qkv is typed like attn_v (llama.cpp's category_is_attn_v)", () => {
    const phi3 = goldenQuant.models.find((m) => m.model === 'random-phi3')!;
    const qkv = (ftype: string) => {
      const t = phi3.runs.find((r) => r.ftype === ftype)!.tensorTypes as Record<string, string>;
      return [0, 1, 2, 3].map((i) => t[`blk.${i}.attn_qkv.weight`]);
    };
    // use_more_bits(i, 4) holds for layers 2 and 3: Q6_K there, not the Q5_K of llama.cpp's (unreachable)
    // ATTENTION_QKV branch; Q3_K_M: Q5_K for the first two; n_gqa 4: Q2_K → Q4_K, IQ4_* → Q5_K.
    expect(qkv('Q4_K_M')).toEqual(['Q4_K', 'Q4_K', 'Q6_K', 'Q6_K']);
    expect(qkv('Q5_K_M')).toEqual(['Q5_K', 'Q5_K', 'Q6_K', 'Q6_K']);
    expect(qkv('Q3_K_M')).toEqual(['Q5_K', 'Q5_K', 'Q4_K', 'Q4_K']);
    expect(qkv('Q2_K')).toEqual(['Q4_K', 'Q4_K', 'Q4_K', 'Q4_K']);
    expect(qkv('IQ4_XS')).toEqual(['Q5_K', 'Q5_K', 'Q5_K', 'Q5_K']);
    expect(qkv('Q8_0')).toEqual(['Q8_0', 'Q8_0', 'Q8_0', 'Q8_0']);
    const plan = planQuantization(
      [
        { name: 'blk.0.attn_qkv.weight', typeName: 'F32', shape: [256, 384] },
        { name: 'blk.1.attn_qkv.weight', typeName: 'F32', shape: [256, 384] },
        { name: 'output.weight', typeName: 'F32', shape: [256, 320] },
      ],
      'Q4_K_M',
    );
    // n_attention_wv counts attn_qkv: use_more_bits(i, 2) holds for layer 1 only.
    expect(typesOf(plan)).toEqual({
      'output.weight': 'Q6_K',
      'blk.0.attn_qkv.weight': 'Q4_K',
      'blk.1.attn_qkv.weight': 'Q6_K',
    });
  });

  it('with the engine fallback, stories260K Q4_K_M has Q8_0 where llama.cpp has Q5_0', async () => {
    const { plan } = await quantizeGguf(await openGguf({ path: STORIES_PATH }), 'Q4_K_M');
    const t = typesOf(plan);
    expect(new Set(Object.values(t))).toEqual(new Set(['F32', 'Q8_0', 'F16']));
    expect(t['blk.0.ffn_down.weight']).toBe('F16');
    expect(t['blk.0.attn_q.weight']).toBe('Q8_0');
  });

  it('writes general.file_type and general.quantization_version, and reads back', async () => {
    const { bytes } = await quantizeGguf(await openGguf({ path: STORIES_PATH }), 'Q4_0');
    const f = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    expect(f.metadata['general.file_type']).toBe(2);
    expect(f.metadata['general.quantization_version']).toBe(2);
    expect(f.tensors.get('blk.0.attn_q.weight')!.typeName).toBe('Q4_0');
  });

  it('refuses to requantize and names non-finite weights', async () => {
    const q = await quantizeGguf(await openGguf({ path: STORIES_PATH }), 'Q8_0');
    const f = await openGguf({ blob: new Blob([q.bytes as Uint8Array<ArrayBuffer>]) });
    await expect(quantizeGguf(f, 'Q4_0')).rejects.toThrow(/only F32, F16 and BF16 tensors can be quantized/);

    const bytes = makeRandomLlamaGguf({ seed: 1, nLayers: 1, nEmbd: 64, nFF: 64, nHead: 2, nVocab: 300 });
    const g = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    const t = g.tensors.get('blk.0.attn_q.weight')!;
    new DataView(bytes.buffer).setFloat32(t.fileOffset + 4 * 5, Number.NaN, true);
    const g2 = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    await expect(quantizeGguf(g2, 'Q8_0')).rejects.toThrow(/blk.0.attn_q.weight has a non-finite value/);
  });
});

describe('npm run quantize', () => {
  const run = promisify(execFile);
  async function quantize(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const r = await run(process.execPath, ['--import', 'tsx', 'src/cli/quantize.ts', ...args], {
        cwd: ROOT,
        timeout: 60_000,
      });
      return { code: 0, ...r };
    } catch (e) {
      const x = e as { code: number; stdout: string; stderr: string };
      return { code: x.code, stdout: x.stdout, stderr: x.stderr };
    }
  }

  it('writes the file llama.cpp writes (Q8_0) and logs each tensor', async () => {
    const out = join(tempDir('quant-'), 'q8.gguf');
    const r = await quantize([STORIES_PATH, out, 'q8_0']);
    expect(r.code, r.stderr).toBe(0);
    const want = goldenQuant.models[0].runs.find((x) => x.ftype === 'Q8_0')!.fileSha256;
    expect(sha256(new Uint8Array(readFileSync(out)))).toBe(want);
    expect(r.stdout).toMatch(/blk\.0\.ffn_down\.weight .* F32 -> F16 \(fallback: 172 columns/);
    expect(r.stdout).toMatch(/wrote .*q8\.gguf: Q8_0 \(general\.file_type 7\)/);
  });

  // Errors before any work, in this process (src/testing/cli-in-process.ts): three `tsx` start-ups spared
  // (CI's 90-minute limit); the test above, src/cli/usage.test.ts and args.test.ts spawn quantize.
  it('fails clearly for a bad type and for a missing file', async () => {
    const quantize = (args: string[]) => runCliInProcess('quantize', args);
    const dir = tempDir('quant-');
    const bad = await quantize([STORIES_PATH, join(dir, 'x.gguf'), 'Q3_K']);
    expect(bad.code).toBe(2); // a bad argument (src/cli/run.ts)
    expect(bad.stderr).toMatch(/\[invalid_argument\]: unknown type Q3_K; choose one of/);
    const missing = await quantize(['/nonexistent.gguf', join(dir, 'y.gguf'), 'Q8_0']);
    expect(missing.code).toBe(2); // a missing model file is a bad argument too (issue 46, item 9)
    expect(missing.stderr).toMatch(
      /\[invalid_argument\]: cannot open model file \/nonexistent\.gguf: no such file/,
    );
    const usage = await quantize([]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/usage: npm run quantize/);
  });
});
