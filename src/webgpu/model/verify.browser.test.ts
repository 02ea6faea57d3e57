/**
 * LlamaModel.verify, speculative decoding's verify step, against plain greedy decoding on the same model:
 * after a prompt's prefill, the plain decode steps give the greedy sequence g; a verify of
 * [g_s, d_1 … d_n] at the position of g_s, whose drafts follow g up to a planted rejection at r
 * (r = n: every draft right), must return g's next token at each of the first r + 1 positions, and the
 * KV cache, rolled back past the rejection by starting the next step there, must give g's continuation
 * in plain decode steps afterwards. Every draft length 1 … 8 and every rejection position on a seeded
 * random GQA llama with an f32 cache; lengths 2 and 5 (every rejection position) with an f16 cache, 4 on
 * a Gemma 2 with sliding-window layers (window 7, less than the prompt). The position is reset
 * between cases, so each case also runs over the stale rows of the one before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import { openGguf } from '../../gguf/reader.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf } from '../../model/random-model.ts';
import { ARCH_CASES, buildArchCase } from '../../testing/arch-cases.ts';
import { mulberry32 } from '../../util/prng.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { applyTokenMask, MASKED_LOGIT } from '../kernels/mask.ts';
import { LlamaModel } from './llama.ts';

const N_PROMPT = 21;
const N_GREEDY = 16;
const AFTER = 2; // plain decode steps checked after each verify

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const swa = ARCH_CASES.find((c) => c.name === 'gemma2-gqa-swa')!;
const CASES: { name: string; bytes: () => Uint8Array; kvType: KvType; lengths: number[] }[] = [
  {
    name: 'llama GQA 4:2, f32 cache',
    bytes: () =>
      makeRandomLlamaGguf({ seed: 451, nLayers: 2, nEmbd: 64, nFF: 96, nHead: 4, nHeadKv: 2, nVocab: 301 }),
    kvType: 'f32',
    lengths: [1, 2, 3, 4, 5, 6, 7, 8],
  },
  {
    name: 'llama GQA 4:1, f16 cache',
    bytes: () =>
      makeRandomLlamaGguf({ seed: 452, nLayers: 3, nEmbd: 48, nFF: 80, nHead: 4, nHeadKv: 1, nVocab: 263 }),
    kvType: 'f16',
    lengths: [2, 5],
  },
  {
    name: 'gemma2 with sliding-window layers (window 7), f16 cache',
    bytes: () => buildArchCase(swa),
    kvType: 'f16',
    lengths: [4],
  },
];

describe.each(CASES)('LlamaModel.verify: $name', ({ bytes, kvType, lengths }) => {
  let model: LlamaModel;
  let V: number;
  const g: number[] = [];
  let prompt: number[];

  beforeAll(async () => {
    const file = await openGguf({ blob: new Blob([bytes() as Uint8Array<ArrayBuffer>]) });
    const cfg = llamaConfigFromGguf(file);
    V = cfg.nVocab;
    model = await LlamaModel.load(gpu.device, file, cfg, { contextLength: 64, batchSize: 16, kvType });
    const rng = mulberry32(4500 + V);
    prompt = Array.from({ length: N_PROMPT }, () => 3 + Math.floor(rng() * (V - 3)));
    model.prefillTokens(prompt, 0);
    model.submitReadback({ slot: 0 });
    g.push(await model.readToken(0));
    for (let i = 1; i < N_GREEDY; i++) {
      model.submitDecode(N_PROMPT + i - 1, { tokenId: g[i - 1], slot: 0 });
      g.push(await model.readToken(0));
    }
  }, 180_000);
  afterAll(() => model?.destroy());

  it('draft lengths (every one of 1..8 on the first model) and every rejection position: the greedy choices, then the rolled-back cache', async () => {
    for (const n of lengths) {
      for (let r = 0; r <= n; r++) {
        const s = (n + r) % 3; // verify from g_s at position N_PROMPT + s
        const drafts = g.slice(s + 1, s + 1 + n);
        if (r < n) drafts[r] = (drafts[r] + 1 + ((n * 7 + r) % (V - 1))) % V; // a wrong draft at r
        const pos = N_PROMPT + s;
        const { argmax } = await model.verify([g[s], ...drafts], pos);
        const what = `n ${n}, rejection at ${r}, from g_${s}`;
        expect(argmax.length, what).toBe(n + 1);
        // Positions 0..r saw only right tokens: the target's choices there are g's.
        expect([...argmax.slice(0, r + 1)], what).toEqual(g.slice(s + 1, s + r + 2));
        // Accepted r drafts and the target's own token g_{s+r+1}: the next step starts after it.
        let p = pos + r + 1;
        let last = g[s + r + 1];
        for (let k = 0; k < AFTER; k++) {
          model.submitDecode(p, { tokenId: last, slot: 0 });
          last = await model.readToken(0);
          expect(last, `${what}: decode step ${k} after the rollback`).toBe(g[s + r + 2 + k]);
          p++;
        }
      }
    }
  }, 180_000);

  it('verify with logits: each row is the distribution after that position; one token is a decode step', async () => {
    const { argmax, logits } = await model.verify(g.slice(0, 4), N_PROMPT, { readLogits: true });
    expect(logits?.length).toBe(4 * V);
    for (let j = 0; j < 4; j++) {
      const row = logits!.subarray(j * V, (j + 1) * V);
      let best = 0;
      for (let t = 1; t < V; t++) if (row[t] > row[best]) best = t;
      expect(best).toBe(argmax[j]);
      expect(argmax[j]).toBe(g[j + 1]);
    }
    const one = await model.verify([g[4]], N_PROMPT + 4, { readLogits: true });
    expect([...one.argmax]).toEqual([g[5]]);
    expect(one.logits?.length).toBe(V);
  });

  it('with grammar masks: each row’s argmax is the largest logit its mask allows, T = 1 and T = 6; masks of the wrong count refused', async () => {
    const words = Math.ceil(V / 32);
    const rng = mulberry32(4600 + V);
    /** A random mask: each token allowed with probability p; row `only` allows that token alone. */
    const randomMask = (p: number, only?: number): Int32Array => {
      const m = new Int32Array(words);
      for (let t = 0; t < V; t++) if (only === undefined ? rng() < p : t === only) m[t >> 5] |= 1 << (t & 31);
      return m;
    };
    for (const T of [1, 6]) {
      const ids = g.slice(0, T);
      // The unmasked rows first (the same positions: the verify is deterministic), then the masked pass.
      const plain = await model.verify(ids, N_PROMPT, { readLogits: true });
      // Sparse and dense masks, one that forbids the unmasked argmax, one that allows a single token.
      const masks = Array.from({ length: T }, (_, j) => {
        if (j === 1) return randomMask(0, (plain.argmax[j] + 5) % V);
        const m = randomMask(j % 2 === 0 ? 0.1 : 0.8);
        m[plain.argmax[j] >> 5] &= ~(1 << (plain.argmax[j] & 31));
        return m;
      });
      const got = await model.verify(ids, N_PROMPT, { readLogits: true, masks });
      for (let j = 0; j < T; j++) {
        const want = applyTokenMask(plain.logits!.subarray(j * V, (j + 1) * V), masks[j], V);
        let best = 0;
        for (let t = 1; t < V; t++) if (want[t] > want[best]) best = t;
        expect(got.argmax[j], `T ${T}, row ${j}`).toBe(best);
        expect(got.argmax[j], `T ${T}, row ${j}`).not.toBe(plain.argmax[j]);
        // The logits read back are masked; the allowed ones unchanged.
        const row = got.logits!.subarray(j * V, (j + 1) * V);
        for (let t = 0; t < V; t++) {
          const allowed = (masks[j][t >> 5] >>> (t & 31)) & 1;
          if (allowed) expect(row[t]).toBe(plain.logits![j * V + t]);
          else expect(row[t]).toBeLessThanOrEqual(MASKED_LOGIT);
        }
      }
      // Unmasked again: the masks did not stay behind.
      expect([...(await model.verify(ids, N_PROMPT)).argmax]).toEqual([...plain.argmax]);
    }
    const e = await model.verify(g.slice(0, 3), N_PROMPT, { masks: [randomMask(0.5)] }).catch((x) => x);
    expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
    expect(String(e)).toMatch(new RegExp(`takes 3 masks of ${words} words, got 1`));
  });

  it('refuses more tokens than the batch and positions past the context', async () => {
    const e1 = await model.verify(new Array(17).fill(1), N_PROMPT).catch((e) => e);
    expect(isEngineError(e1, 'invalid_argument'), String(e1)).toBe(true);
    const e2 = await model.verify([], N_PROMPT).catch((e) => e);
    expect(isEngineError(e2, 'invalid_argument'), String(e2)).toBe(true);
    const e3 = await model.verify([1, 2, 3], 62).catch((e) => e);
    expect(isEngineError(e3, 'context_overflow'), String(e3)).toBe(true);
  });
});
