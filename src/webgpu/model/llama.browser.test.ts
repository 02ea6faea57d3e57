/**
 * The GPU forward pass (WebGpuEngine → LlamaModel) against the float64 CPU reference (`reference.ts`) on
 * seeded random llama models of awkward shapes: MHA and GQA, head sizes 8 and 16 (one with key_length ≠
 * nEmbd / nHead), partial RoPE, linear RoPE scaling, F16 weights, tied embeddings, sizes that are not
 * multiples of the workgroup (nEmbd 48, nFF 100, nVocab 301), a prompt that crosses prefill batches, and
 * token_embd / output split across bindings.
 *
 * Each case generates greedily with `returnLogits` (so every output position's logits come back), then
 * feeds the same tokens — prompt, then our output — through the reference, and checks
 *  - logits: max |Δ| ≤ TOL · (1 + max |ref|) per position. The f32 error measured on these models
 *    (SwiftShader) is 3–4e-7 relative (the log lines print it); TOL = 2e-5 leaves ~50× headroom for other
 *    GPUs' exp/FMA, while a wrong RoPE pairing or a wrong KV head moves them by far more (both checked
 *    below);
 *  - tokens: our greedy token is the reference's argmax, except at a near-tie (top-2 gap in the reference
 *    < 2 · the bound), where either token is a correct f32 answer; there we check our token is one of the
 *    tied ones.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../../core/errors.ts';
import type { KvType } from '../../core/types.ts';
import { quantizeGguf } from '../../gguf/quantize-model.ts';
import { openGguf } from '../../gguf/reader.ts';
import { kv, writeGguf } from '../../gguf/writer.ts';
import { openModelSource } from '../../library/opener.ts';
import { llamaConfigFromGguf } from '../../model/config.ts';
import { makeRandomLlamaGguf, type RandomLlamaOptions, randomLlamaParts } from '../../model/random-model.ts';
import { argmax, ReferenceLlama } from '../../model/reference.ts';
import {
  blobOf,
  type Case,
  compare,
  makeRunEngine,
  N_OUT,
  type Run,
  randomIds,
  referenceLogits,
  TOL,
} from '../../testing/llama-run.ts';
import { createGpuContext, type GpuContext } from '../device.ts';
import { WebGpuEngine, type WebGpuEngineOptions, type WebGpuModelInfo } from '../engine.ts';
import { LlamaModel } from './llama.ts';

let gpu: GpuContext;
beforeAll(async () => {
  gpu = await createGpuContext();
});
afterAll(() => gpu?.device.destroy());

const runEngine = makeRunEngine(() => gpu);

const CASES: Case[] = [
  {
    name: 'MHA, headDim 16, F32',
    model: { seed: 101, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nVocab: 320 },
    promptLen: 6,
  },
  {
    name: 'GQA 6/2, headDim 8, ropeDim 4, nEmbd 48, nFF 100, nVocab 301',
    model: { seed: 102, nLayers: 2, nEmbd: 48, nFF: 100, nHead: 6, nHeadKv: 2, ropeDim: 4, nVocab: 301 },
    promptLen: 5,
  },
  {
    name: 'F16 weights, tied embeddings, GQA 4/2',
    model: {
      seed: 103,
      nLayers: 2,
      nEmbd: 64,
      nFF: 96,
      nHead: 4,
      nHeadKv: 2,
      nVocab: 300,
      weightType: 'F16',
      tied: true,
    },
    promptLen: 7,
  },
  {
    name: 'key_length 16 with nEmbd 32 / 4 heads, ropeDim 8, freq base 500, linear scaling 2, F16',
    model: {
      seed: 104,
      nLayers: 2,
      nEmbd: 32,
      nFF: 80,
      nHead: 4,
      nHeadKv: 2,
      headDim: 16,
      ropeDim: 8,
      ropeFreqBase: 500,
      nVocab: 280,
      weightType: 'F16',
      extraMetadata: [kv.string('llama.rope.scaling.type', 'linear'), kv.f32('llama.rope.scaling.factor', 2)],
    },
    promptLen: 4,
  },
  {
    name: 'qwen2: Q/K/V biases, NeoX RoPE, GQA 6/2, tied embeddings',
    model: {
      seed: 106,
      architecture: 'qwen2',
      nLayers: 2,
      nEmbd: 48,
      nFF: 96,
      nHead: 6,
      nHeadKv: 2,
      nVocab: 300,
      tied: true,
    },
    promptLen: 9,
  },
  {
    name: 'qwen3: per-head Q/K RMSNorm before NeoX RoPE, headDim 16 (key_length), GQA 4/2',
    model: {
      seed: 107,
      architecture: 'qwen3',
      nLayers: 2,
      nEmbd: 48,
      nFF: 96,
      nHead: 4,
      nHeadKv: 2,
      headDim: 16,
      nVocab: 300,
    },
    promptLen: 12,
    batchSize: 8,
  },
  {
    name: 'llama with rope_freqs.weight (Llama 3.1-style frequency factors), freq base 500000',
    model: {
      seed: 108,
      nLayers: 2,
      nEmbd: 64,
      nFF: 96,
      nHead: 4,
      nHeadKv: 2,
      ropeFreqBase: 500000,
      ropeFreqFactors: true,
      nVocab: 300,
    },
    promptLen: 10,
  },
  {
    name: 'prefill crosses batches: batchSize 8, 21-token prompt (8 + 8 + 5)',
    model: { seed: 105, nLayers: 2, nEmbd: 64, nFF: 128, nHead: 4, nHeadKv: 1, nVocab: 300 },
    promptLen: 21,
    batchSize: 8,
  },
];

describe('LlamaModel (WebGpuEngine) vs the float64 reference on random models', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (name, c) => {
    const bytes = makeRandomLlamaGguf(c.model);
    const prompt = randomIds(c.model.seed * 7 + 1, c.promptLen, c.model.nVocab);
    const run = await runEngine(bytes, prompt, { batchSize: c.batchSize });
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
    if (c.model.extraMetadata) expect(ref.cfg.ropeScaling).toEqual({ type: 'linear', factor: 2 });
    compare(name, run, await referenceLogits(ref, run));
  });

  // The f16 KV cache against a reference that stores f16-rounded keys and values: GQA, NeoX + biases
  // (Q/K in slot order, biases by dimension), qwen3's per-head norm (which rewrites the f16 K cache).
  const F16_CASES = CASES.filter((c, i) => i === 1 || /qwen|batches/.test(c.name));
  it.each(F16_CASES.map((c) => [c.name, c] as const))('f16 KV cache: %s', async (name, c) => {
    const bytes = makeRandomLlamaGguf(c.model);
    const prompt = randomIds(c.model.seed * 7 + 1, c.promptLen, c.model.nVocab);
    let info: WebGpuModelInfo | undefined;
    const run = await runEngine(bytes, prompt, {
      batchSize: c.batchSize,
      kvType: 'f16',
      onInfo: (i) => (info = i),
    });
    expect(info?.kvType).toBe('f16');
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
    ref.kvType = 'f16';
    compare(`f16 KV: ${name}`, run, await referenceLogits(ref, run));
  });

  // Decode attention split into chunks (flash-decoding + combine) in each layout, with both cache types:
  // a 21-token prompt and 8 outputs span 3–4 chunks of 8 positions. Head dim 8 (CASES[1]) unless `model`
  // says otherwise: head dim 64 takes the tiled P·V by 16-byte V words (attention-decode.ts).
  const chunked: {
    name: string;
    attention: WebGpuEngineOptions['attention'];
    kvType: 'f16' | 'f32';
    model?: (typeof CASES)[number]['model'];
  }[] = [
    {
      name: 'strided, chunks of 8, f16',
      attention: { layout: { kind: 'strided' }, fixedChunk: 8 },
      kvType: 'f16',
    },
    {
      name: 'tiled, chunks of 8, f32',
      attention: { layout: { kind: 'tiled', lanes: 1 }, fixedChunk: 8 },
      kvType: 'f32',
    },
    {
      name: 'tiled 2 lanes (subgroups), chunks of 8, f16',
      attention: { layout: { kind: 'tiled', lanes: 2 }, fixedChunk: 8 },
      kvType: 'f16',
    },
    {
      name: 'tiled, V as words (head dim 64, GQA 4/2), chunks of 8, f16',
      attention: { layout: { kind: 'tiled', lanes: 1 }, fixedChunk: 8 },
      kvType: 'f16',
      model: { seed: 107, nLayers: 2, nEmbd: 256, nFF: 200, nHead: 4, nHeadKv: 2, nVocab: 301 },
    },
  ];
  const chunkedCases = chunked.map((k) => [k.name, k] as const);
  it.for(chunkedCases)('decode attention in chunks: %s', async ([name, k], ctx) => {
    ctx.skip(
      (k.attention?.layout?.lanes ?? 1) > 1 && !(gpu.hasSubgroups && gpu.subgroupMinSize >= 2),
      `2 lanes need subgroups of 2+ invocations (adapter: subgroups ${gpu.hasSubgroups}, min ${gpu.subgroupMinSize})`,
    );
    const model = k.model ?? CASES[1].model; // GQA 6/2, head dim 8
    const bytes = makeRandomLlamaGguf(model);
    const prompt = randomIds(model.seed * 7 + 3, 21, model.nVocab);
    let info: WebGpuModelInfo | undefined;
    const run = await runEngine(bytes, prompt, {
      kvType: k.kvType,
      attention: k.attention,
      onInfo: (i) => (info = i),
    });
    expect(info?.kernels?.attention).toMatchObject({ decode: 'flash', layout: k.attention?.layout?.kind });
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
    ref.kvType = k.kvType;
    compare(`chunked attention ${name}`, run, await referenceLogits(ref, run));
  });

  it('the tolerance catches a wrong RoPE pairing (norm engine vs a neox reference)', async () => {
    const c = CASES[1];
    const bytes = makeRandomLlamaGguf(c.model);
    const prompt = randomIds(c.model.seed * 7 + 1, c.promptLen, c.model.nVocab);
    const run = await runEngine(bytes, prompt);
    const file = await openGguf({ blob: blobOf(bytes) });
    const wrong = await ReferenceLlama.fromGguf(file, { ...llamaConfigFromGguf(file), ropeType: 'neox' });
    const refLogits = await referenceLogits(wrong, run);
    let worst = 0;
    for (let i = 1; i < N_OUT; i++) {
      let maxRef = 0;
      let maxDiff = 0;
      refLogits[i].forEach((v, j) => {
        maxRef = Math.max(maxRef, Math.abs(v));
        maxDiff = Math.max(maxDiff, Math.abs(run.logits[i][j] - v));
      });
      worst = Math.max(worst, maxDiff / (1 + maxRef));
    }
    console.log(`wrong RoPE pairing: max|Δ|/(1+max|ref|) = ${worst.toExponential(2)}`);
    expect(worst).toBeGreaterThan(100 * TOL);
  });

  it('the tolerance catches a wrong KV head (reference with KV heads 0 and 1 swapped)', async () => {
    const c = CASES[1]; // GQA 6/2: query heads 0–2 use KV head 0, 3–5 KV head 1
    const parts = randomLlamaParts(c.model);
    const hd = c.model.nEmbd / c.model.nHead;
    const rowBytes = c.model.nEmbd * 4; // F32 rows of attn_k / attn_v [nEmbd, nHeadKv·hd]
    for (const t of parts.tensors) {
      if (!/attn_[kv]\.weight$/.test(t.name)) continue;
      const d = new Uint8Array(t.data);
      const head0 = d.slice(0, hd * rowBytes);
      d.copyWithin(0, hd * rowBytes, 2 * hd * rowBytes);
      d.set(head0, hd * rowBytes);
      t.data = d;
    }
    const good = await ReferenceLlama.fromGguf(
      await openGguf({ blob: blobOf(makeRandomLlamaGguf(c.model)) }),
    );
    const bad = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(writeGguf(parts)) }));
    const ids = randomIds(77, 8, c.model.nVocab);
    const a = good.run(ids);
    const b = bad.run(ids);
    let worst = 0;
    for (let i = 0; i < ids.length; i++) {
      let maxRef = 0;
      let maxDiff = 0;
      a[i].forEach((v, j) => {
        maxRef = Math.max(maxRef, Math.abs(v));
        maxDiff = Math.max(maxDiff, Math.abs(b[i][j] - v));
      });
      worst = Math.max(worst, maxDiff / (1 + maxRef));
    }
    console.log(`wrong KV head: max|Δ|/(1+max|ref|) = ${worst.toExponential(2)}`);
    expect(worst).toBeGreaterThan(100 * TOL);
  });

  it('neox RoPE (LlamaModel with ropeType neox, prefill + decode) matches the neox reference', async () => {
    const c = CASES[1];
    const bytes = makeRandomLlamaGguf(c.model);
    const file = await openGguf({ blob: blobOf(bytes) });
    const cfg = { ...llamaConfigFromGguf(file), ropeType: 'neox' as const };
    const model = await LlamaModel.load(gpu.device, file, cfg, {
      contextLength: 32,
      batchSize: 8,
      kvType: 'f32',
    });
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }), cfg);
    try {
      const prompt = randomIds(4242, 11, cfg.nVocab);
      model.prefillTokens(prompt, 0);
      model.submitReadback({ readLogits: true });
      const run: Run = { prompt, out: [], logits: [] };
      for (let i = 0; i < N_OUT; i++) {
        const logits = await model.readLogits();
        run.logits.push(logits);
        run.out.push(argmax(logits));
        if (i + 1 < N_OUT) model.submitDecode(prompt.length + i, { tokenId: run.out[i], readLogits: true });
      }
      compare('neox', run, await referenceLogits(ref, run));
    } finally {
      model.destroy();
    }
  });
});

/**
 * One decode layout for runs whose logits must be identical: the engine otherwise picks it by a timed
 * trial at each load, and on a busy machine two loads can pick different layouts, whose sums round
 * differently (a CI run's "3 parts each" differed so). Runs on every adapter (no subgroups, no packing).
 */
const PINNED_MMV = { lanes: 1, units: 4, threads: 16, reduce: 'shared', packed: false } as const;
/** The same for the prefill tile on GPUs (a trial there picks the float or the integer-dot tile). */
const pinnedPrefill = (): WebGpuEngineOptions['prefill'] =>
  gpu.info.isFallback ? undefined : { kind: 'tile' };

/**
 * The Q8_0 / Q4_0 KV cache (kernels/kv-quant.ts) against a reference that stores each K and V row quantized
 * by ggml's rules and dequantized (ReferenceLlama.kvType): head size 32, GQA, a prompt across prefill
 * batches, decode attention in chunks, NeoX + biases and qwen3's head norms (Q and K in natural order), K and
 * V of different types. The tolerance is looser than f32's: our K/V in f32 and the reference's (float64
 * rounded to f32) can land on either side of a quantization step, which moves one value by a step (≤ d).
 */
describe('quantized KV cache (Q8_0, Q4_0) vs the float64 reference storing the same blocks', () => {
  const QTOL = 1e-3;
  const quantCases: (Case & { kv: KvType; kvV?: KvType; attention?: WebGpuEngineOptions['attention'] })[] = [
    {
      name: 'llama GQA 4/2, head size 32, q8_0, 21-token prompt in batches of 8, decode in chunks of 8',
      model: { seed: 121, nLayers: 2, nEmbd: 128, nFF: 96, nHead: 4, nHeadKv: 2, nVocab: 300 },
      promptLen: 21,
      batchSize: 8,
      kv: 'q8_0',
      attention: { layout: { kind: 'strided' }, fixedChunk: 8 },
    },
    {
      name: 'qwen2 (NeoX, biases), head size 32, q4_0, tiled decode attention',
      model: {
        seed: 122,
        architecture: 'qwen2',
        nLayers: 2,
        nEmbd: 96,
        nFF: 96,
        nHead: 3,
        nHeadKv: 1,
        nVocab: 300,
        tied: true,
      },
      promptLen: 9,
      kv: 'q4_0',
      attention: { layout: { kind: 'tiled', lanes: 1 }, fixedChunk: 8 },
    },
    {
      name: 'qwen3 (head norms, NeoX), head size 32, K q4_0 / V q8_0',
      model: {
        seed: 123,
        architecture: 'qwen3',
        nLayers: 2,
        nEmbd: 64,
        nFF: 96,
        nHead: 4,
        nHeadKv: 2,
        headDim: 32,
        nVocab: 300,
      },
      promptLen: 7,
      kv: 'q4_0',
      kvV: 'q8_0',
    },
    {
      name: 'llama, K f16 / V q8_0',
      model: { seed: 124, nLayers: 2, nEmbd: 64, nFF: 96, nHead: 2, nHeadKv: 1, nVocab: 300 },
      promptLen: 6,
      kv: 'f16',
      kvV: 'q8_0',
    },
  ];
  it.each(quantCases.map((c) => [c.name, c] as const))('%s', async (name, c) => {
    const bytes = makeRandomLlamaGguf(c.model);
    const prompt = randomIds(c.model.seed * 7 + 1, c.promptLen, c.model.nVocab);
    let info: WebGpuModelInfo | undefined;
    const run = await runEngine(bytes, prompt, {
      batchSize: c.batchSize,
      kvType: c.kv,
      kvTypeV: c.kvV,
      attention: c.attention,
      onInfo: (i) => (info = i),
    });
    expect([info?.kvType, info?.kvTypeV]).toEqual([c.kv, c.kvV ?? c.kv]);
    const ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
    ref.kvType = c.kv;
    ref.vKvType = c.kvV;
    compare(`${c.kv}/${c.kvV ?? c.kv} KV: ${name}`, run, await referenceLogits(ref, run), QTOL);
    // The same run against an f16-cache reference differs by far more than QTOL: the test sees the blocks.
    const f16Ref = await ReferenceLlama.fromGguf(await openGguf({ blob: blobOf(bytes) }));
    f16Ref.kvType = 'f16';
    const other = await referenceLogits(f16Ref, run);
    const moved = other.some((r, i) =>
      r.some((v, j) => Math.abs(v - run.logits[i][j]) > QTOL * (1 + Math.max(...r.map(Math.abs)))),
    );
    expect(moved, 'an f16 reference should not pass the quantized tolerance').toBe(true);
  });

  it('refuses a quantized cache for a head size not a multiple of 32, and an unknown type, before allocating', async () => {
    const c = CASES[0]; // head size 16
    const bytes = makeRandomLlamaGguf(c.model);
    for (const [opts, msg] of [
      [{ kvType: 'q8_0' }, /q8_0 K cache needs a head size that is a multiple of 32.*head size is 16/],
      [{ kvTypeV: 'q4_0' }, /q4_0 V cache needs a head size that is a multiple of 32/],
      [{ kvType: 'q5_0' }, /kvType must be one of f16, f32, q8_0, q4_0, got "q5_0"/],
      [{ kvTypeK: 'Q8_0' }, /kvTypeK must be one of/],
    ] as const) {
      const engine = new WebGpuEngine({ openModel: openModelSource, gpu });
      try {
        const err = await engine
          .load({ blob: blobOf(bytes) }, { contextLength: 64, ...(opts as object) })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(isEngineError(err) && err.code).toBe('invalid_argument');
        expect((err as Error).message).toMatch(msg);
      } finally {
        await engine.dispose();
      }
    }
  });
});

describe('token_embd / output split across bindings (maxBindingBytes)', () => {
  const SPLITS = [
    {
      name: 'F32, untied: 3 parts each',
      model: {
        seed: 201,
        nLayers: 1,
        nEmbd: 64,
        nFF: 128,
        nHead: 4,
        nHeadKv: 2,
        nVocab: 400,
      } as RandomLlamaOptions,
      maxBindingBytes: 40_000,
      parts: 3,
    },
    {
      name: 'F16, tied: 4 parts',
      model: {
        seed: 202,
        nLayers: 1,
        nEmbd: 64,
        nFF: 128,
        nHead: 4,
        nVocab: 400,
        weightType: 'F16',
        tied: true,
      } as RandomLlamaOptions,
      maxBindingBytes: 16_500,
      parts: 4,
    },
  ];
  it.each(SPLITS.map((s) => [s.name, s] as const))('%s: identical logits to one binding', async (name, s) => {
    const bytes = makeRandomLlamaGguf(s.model);
    const file = await openGguf({ blob: blobOf(bytes) });
    // Only token_embd / output exceed the binding (LlamaModel.load splits only those; others must fit).
    for (const t of file.tensors.values()) {
      if (t.name === 'token_embd.weight' || t.name === 'output.weight') {
        const rowBytes = t.nBytes / t.shape[1];
        expect(Math.ceil(t.shape[1] / Math.floor(s.maxBindingBytes / rowBytes)), t.name).toBe(s.parts);
      } else {
        expect(t.nBytes, t.name).toBeLessThanOrEqual(s.maxBindingBytes);
      }
    }
    const prompt = randomIds(s.model.seed, 9, s.model.nVocab);
    // Batches of 4 tokens in both runs: the prefill sizes its next batch from the last one's measured
    // rate, so on a busy machine two loads could split the 9-token prompt differently (4 + 5 against
    // 4 + 4 + 1, the last token then on the decode kernels) and round differently (a CI run failed so).
    const pinned = { mmvLayout: PINNED_MMV, prefill: pinnedPrefill(), batchSize: 4 };
    const whole = await runEngine(bytes, prompt, pinned);
    const split = await runEngine(bytes, prompt, { ...pinned, maxBindingBytes: s.maxBindingBytes });
    expect(split.out).toEqual(whole.out);
    for (let i = 0; i < N_OUT; i++) expect(split.logits[i]).toEqual(whole.logits[i]);
    const ref = await ReferenceLlama.fromGguf(file);
    compare(name, split, await referenceLogits(ref, split));
  });
});

describe('every matrix split across bindings, on the WebGPU spec default limits', () => {
  const model = (o: Partial<RandomLlamaOptions>): RandomLlamaOptions => ({
    seed: 211,
    nLayers: 2,
    nEmbd: 64,
    nFF: 300,
    nHead: 4,
    nHeadKv: 2,
    nVocab: 300,
    ...o,
  });
  // F32, nFF 300, heads of 16, 14,000-byte bindings: ffn_gate/up/down, token_embd and output in 6 parts,
  // attn_q and attn_output in 2 (whole heads: 48 + 16 rows). Q8_0 (repacked planes), nFF 288, 4,000-byte
  // bindings: ffn_gate/up in 5 parts, ffn_down, token_embd and output in 6, attn_q/attn_output in 2.
  const CASES = [
    { name: 'F32', bytes: () => makeRandomLlamaGguf(model({})), binding: 14_000, defaultLimits: false },
    {
      name: 'Q8_0 (repacked planes)',
      bytes: async () =>
        (
          await quantizeGguf(
            await openGguf({ blob: blobOf(makeRandomLlamaGguf(model({ seed: 212, nFF: 288 }))) }),
            'Q8_0',
          )
        ).bytes,
      binding: 4_000,
      defaultLimits: true,
    },
  ];
  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s: split matrices give the logits of one binding and of the float64 reference (and on default limits, Q8_0)',
    async (name, c) => {
      const bytes = await c.bytes();
      const file = await openGguf({ blob: blobOf(bytes) });
      const over = [...file.tensors.values()].filter((t) => t.nBytes > c.binding - 16);
      const roles = new Set(over.map((t) => t.name.replace(/^blk\.\d+\./, '')));
      for (const t of ['attn_q', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down', 'token_embd', 'output']) {
        expect(roles, t).toContain(`${t}.weight`);
      }
      const prompt = randomIds(212, 9, 300);
      // Fused segments in decode and the tile prefill kernel (what GPUs run), so the dispatch counts
      // below show the storage-buffer fitting alone and the logits can be compared exactly: the tile
      // kernel's inner loop is one for every segment, while mmv's unrolled body per segment lets the
      // shader compiler contract multiply-adds differently when the segments change (1-ulp differences).
      // The decode layout pinned too, so no trial picks different ones for the runs compared.
      const fused = { splitDecodeSegments: false, prefill: { kind: 'tile' }, mmvLayout: PINNED_MMV } as const;
      const whole = await runEngine(bytes, prompt, fused);
      let splitInfo: WebGpuModelInfo | undefined;
      const split = await runEngine(bytes, prompt, {
        ...fused,
        maxBindingBytes: c.binding,
        onInfo: (i) => (splitInfo = i),
      });
      expect(splitInfo?.kernels?.splitTensors).toBe(over.length);
      expect(split.out).toEqual(whole.out);
      for (let i = 0; i < N_OUT; i++) expect(split.logits[i]).toEqual(whole.logits[i]);
      const ref = await ReferenceLlama.fromGguf(file);
      compare(`${name} split`, split, await referenceLogits(ref, split));
      // The spec's defaults: 8 storage buffers per stage, so the fused QKV kernel (9) runs as 2 dispatches
      // and the split SwiGLU as several (x, gnorm, hb + 2 parts of gate and up each). On one of the two
      // files: a load on a device of its own compiles every kernel again (~35 s on SwiftShader).
      if (c.defaultLimits) {
        let defInfo: WebGpuModelInfo | undefined;
        const def = await runEngine(bytes, prompt, {
          ...fused,
          maxBindingBytes: c.binding,
          defaultLimits: true,
          onInfo: (i) => (defInfo = i),
        });
        expect(defInfo?.limits).toMatchObject({
          defaultLimits: true,
          values: { maxStorageBuffersPerShaderStage: 8 },
        });
        expect(defInfo!.kernels!.dispatchesPerToken!).toBeGreaterThan(
          splitInfo!.kernels!.dispatchesPerToken!,
        );
        expect(def.out).toEqual(whole.out);
        compare(`${name} split, default limits`, def, await referenceLogits(ref, def));
      }
    },
    // Three loads (one binding, split, the spec's default limits on a device of their own) and two
    // float64 references: 92–106 s on this 2-core machine with nothing else running, near the 120 s default.
    300_000,
  );

  it('a token_embd in more parts than the embedding kernel can bind is refused before allocating, then a good model loads', async () => {
    const bytes = makeRandomLlamaGguf(model({ seed: 213, nVocab: 400 }));
    const engine = new WebGpuEngine({ openModel: openModelSource, maxBindingBytes: 14_000 });
    try {
      const err = await engine.load({ blob: blobOf(bytes) }, { contextLength: 64, defaultLimits: true }).then(
        () => undefined,
        (e) => e,
      );
      expect(isEngineError(err, 'unsupported_model'), String(err)).toBe(true);
      expect(err.message).toMatch(/token_embd\.weight .* 8 buffer bindings; this device allows 6 beside/);
      const ok = await engine.load(
        { blob: blobOf(makeRandomLlamaGguf(model({}))) },
        { contextLength: 64, defaultLimits: true },
      );
      expect(ok.limits?.defaultLimits).toBe(true);
    } finally {
      await engine.dispose();
    }
  });
});
