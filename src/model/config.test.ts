import { describe, expect, it } from 'vitest';
import { type EngineError, isEngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import { type GgufMetadataEntry, type GgufTensorInput, kv, writeGguf } from '../gguf/writer.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { type LlamaConfigOptions, llamaConfigFromGguf, modelParamCount, modelWeightBytes } from './config.ts';
import { type RandomLlamaOptions, randomLlamaParts } from './random-model.ts';

const BASE: RandomLlamaOptions = {
  seed: 5,
  nLayers: 2,
  nEmbd: 32,
  nFF: 48,
  nHead: 4,
  nHeadKv: 2,
  nVocab: 270,
  contextLength: 64,
};

type Parts = { metadata: GgufMetadataEntry[]; tensors: GgufTensorInput[] };

/** Writes (possibly altered) random model parts, opens them and reads the config. */
async function configOf(edit: (p: Parts) => void = () => {}, opts?: LlamaConfigOptions, base = BASE) {
  const parts = randomLlamaParts(base);
  edit(parts);
  const f = await openGguf({ blob: new Blob([writeGguf(parts) as Uint8Array<ArrayBuffer>]) });
  return llamaConfigFromGguf(f, opts);
}

async function configError(edit: (p: Parts) => void, opts?: LlamaConfigOptions): Promise<EngineError> {
  try {
    await configOf(edit, opts);
  } catch (e) {
    if (isEngineError(e)) return e;
    throw e;
  }
  throw new Error('expected llamaConfigFromGguf to throw');
}

/** Replaces (or adds, or with `undefined` removes) a metadata entry. */
function setMeta(p: Parts, key: string, e: GgufMetadataEntry | undefined): void {
  const i = p.metadata.findIndex((m) => m.key === key);
  if (i >= 0) p.metadata.splice(i, 1);
  if (e) p.metadata.push(e);
}

function tensor(p: Parts, name: string): GgufTensorInput {
  return p.tensors.find((t) => t.name === name)!;
}

describe('llamaConfigFromGguf', () => {
  it('reads stories260K', async () => {
    const f = await openGguf({ path: STORIES_PATH });
    expect(llamaConfigFromGguf(f)).toEqual({
      architecture: 'llama',
      name: 'llama',
      qkvBias: false,
      qkNorm: false,
      ropeFreqFactors: false,
      nLayers: 5,
      nEmbd: 64,
      nFF: 172,
      nHead: 8,
      nHeadKv: 4,
      headDim: 8,
      nVocab: 512,
      contextLength: 2048,
      ropeDim: 8,
      ropeFreqBase: 10000,
      rmsEps: Math.fround(1e-5),
      ropeType: 'norm',
      tiedEmbeddings: false,
    });
    expect(modelWeightBytes(f)).toBe(1_185_376 - 14_176);
    expect(modelParamCount(f)).toBe((1_185_376 - 14_176) / 4);
  });

  it('applies defaults for optional keys', async () => {
    const c = await configOf((p) => {
      for (const k of ['head_count_kv', 'rope.dimension_count', 'rope.freq_base', 'layer_norm_rms_epsilon']) {
        setMeta(p, p.metadata.find((m) => m.key.endsWith(k))!.key, undefined);
      }
      for (const t of p.tensors)
        if (/attn_[kv]\.weight/.test(t.name))
          Object.assign(t, tensor(p, 'blk.0.attn_q.weight'), { name: t.name });
    });
    expect(c.nHeadKv).toBe(4);
    expect(c.headDim).toBe(8);
    expect(c.ropeDim).toBe(8);
    expect(c.ropeFreqBase).toBe(10000);
    expect(c.rmsEps).toBe(1e-5);
    expect(c.ropeScaling).toBeUndefined();
  });

  it('takes nVocab from token_embd when there is no tokenizer, and accepts per-layer arrays that agree', async () => {
    const c = await configOf((p) => {
      setMeta(p, 'tokenizer.ggml.tokens', undefined);
      setMeta(p, 'llama.feed_forward_length', kv.u32s('llama.feed_forward_length', [48, 48]));
    });
    expect(c.nVocab).toBe(270);
    expect(c.nFF).toBe(48);
  });

  it('reads linear RoPE scaling and rejects other kinds', async () => {
    const c = await configOf((p) => {
      p.metadata.push(kv.string('llama.rope.scaling.type', 'linear'), kv.f32('llama.rope.scaling.factor', 4));
    });
    expect(c.ropeScaling).toEqual({ type: 'linear', factor: 4 });
    const e = await configError((p) => p.metadata.push(kv.string('llama.rope.scaling.type', 'yarn')));
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toMatch(/RoPE scaling "yarn"/);
  });

  it('a tied model has no output.weight', async () => {
    expect((await configOf(undefined, undefined, { ...BASE, tied: true })).tiedEmbeddings).toBe(true);
  });

  it('rejects other architectures', async () => {
    const e = await configError((p) =>
      setMeta(p, 'general.architecture', kv.string('general.architecture', 'gpt2')),
    );
    expect(e.code).toBe('unsupported_model');
    expect(e.message).toBe(
      'architecture "gpt2" is not supported; supported: llama, qwen2, qwen3, phi3, gemma2, gemma3',
    );
    const m = await configError((p) => setMeta(p, 'general.architecture', undefined));
    expect(m.code).toBe('gguf_invalid');
    expect(m.message).toMatch(/general\.architecture is missing/);
  });

  it('names a missing tensor', async () => {
    for (const name of [
      'blk.1.ffn_gate.weight',
      'token_embd.weight',
      'output_norm.weight',
      'blk.0.attn_norm.weight',
    ]) {
      const e = await configError((p) => {
        p.tensors = p.tensors.filter((t) => t.name !== name);
      });
      expect(e.code, name).toBe('gguf_invalid');
      expect(e.message, name).toContain(`tensor ${name} is missing`);
    }
  });

  it('names a tensor whose shape contradicts the metadata, with expected and actual shapes', async () => {
    const e = await configError((p) => {
      // attn_k as if nHeadKv were 4: [32, 32] instead of [32, 16]
      Object.assign(tensor(p, 'blk.1.attn_k.weight'), {
        shape: [32, 32],
        data: tensor(p, 'blk.1.attn_q.weight').data,
      });
    });
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toBe(
      'tensor blk.1.attn_k.weight has shape [32, 32], but the metadata (nEmbd 32, nHeadKv 2 × headDim 8) implies [32, 16]',
    );
    const f = await configError((p) =>
      setMeta(p, 'llama.feed_forward_length', kv.u32('llama.feed_forward_length', 64)),
    );
    expect(f.message).toMatch(
      /tensor blk\.0\.ffn_gate\.weight has shape \[32, 48\].*nFF 64.*implies \[32, 64\]/,
    );
    const v = await configError((p) => {
      const toks = p.metadata.find((m) => m.key === 'tokenizer.ggml.tokens')!;
      (toks.value as string[]).push('extra');
    });
    expect(v.message).toMatch(/token_embd\.weight has shape \[32, 270\].*nVocab 271.*\[32, 271\]/);
  });

  it('rejects absurd dimensions', async () => {
    const cases: [GgufMetadataEntry, RegExp][] = [
      [kv.u32('llama.block_count', 0), /block_count = 0 is not a sensible value/],
      [kv.u32('llama.block_count', 2_000_000), /block_count = 2000000/],
      [kv.i32('llama.embedding_length', -32), /embedding_length = -32/],
      [kv.u32('llama.attention.head_count', 5), /embedding_length 32 is not a multiple of .*head_count 5/],
      [kv.u32('llama.attention.head_count_kv', 3), /head_count 4 is not a multiple of .*head_count_kv 3/],
      [
        kv.u32('llama.rope.dimension_count', 10),
        /dimension_count 10 must be even and at most the head size 8/,
      ],
      [kv.f32('llama.attention.layer_norm_rms_epsilon', 0), /epsilon 0 is not sensible/],
      [kv.f32('llama.rope.freq_base', Number.NaN), /freq_base/],
      [kv.string('llama.context_length', 'big'), /context_length should be a number/],
      [kv.f32('llama.feed_forward_length', 47.5), /feed_forward_length = 47.5/],
    ];
    for (const [entry, re] of cases) {
      const e = await configError((p) => setMeta(p, entry.key, entry));
      expect(e.code, entry.key).toBe('gguf_invalid');
      expect(e.message).toMatch(re);
    }
    const missing = await configError((p) => setMeta(p, 'llama.context_length', undefined));
    expect(missing.message).toMatch(/required metadata llama\.context_length is missing/);
  });

  it('rejects unsupported tensor types, per-layer differences, MoE, rope_freqs and extra tensors', async () => {
    const t = await configError(() => {}, { supportedTypes: ['F16'] });
    expect(t.code).toBe('unsupported_model');
    expect(t.message).toMatch(/tensor token_embd\.weight has type F32, .*supported: F16/);
    expect((await configOf(() => {}, { supportedTypes: [0] })).nLayers).toBe(2);
    const f16 = { ...BASE, weightType: 'F16' as const };
    expect((await configOf(undefined, undefined, f16)).nEmbd).toBe(32);
    const only32 = await configOf(undefined, { supportedTypes: ['F32'] }, f16).catch((e: EngineError) => e);
    expect(isEngineError(only32, 'unsupported_model')).toBe(true);
    expect((only32 as EngineError).message).toMatch(
      /tensor token_embd\.weight has type F16, .*supported: F32$/,
    );

    const layers = await configError((p) =>
      setMeta(p, 'llama.attention.head_count', kv.u32s('llama.attention.head_count', [4, 8])),
    );
    expect(layers.code).toBe('unsupported_model');
    expect(layers.message).toMatch(/differs between layers/);

    const moe = await configError((p) => p.metadata.push(kv.u32('llama.expert_count', 8)));
    expect(moe.code).toBe('unsupported_model');
    expect(moe.message).toMatch(/mixture-of-experts/);

    // Llama 3.1-style RoPE frequency factors are accepted with shape [ropeDim / 2] …
    const ropeFreqs = (n: number) => (p: Parts) =>
      p.tensors.push({
        name: 'rope_freqs.weight',
        type: 'F32',
        shape: [n],
        data: tensor(p, 'output_norm.weight').data.slice(0, 4 * n),
      });
    expect((await configOf(ropeFreqs(4))).ropeFreqFactors).toBe(true);
    // … and rejected with another shape.
    const rf = await configError(ropeFreqs(3));
    expect(rf.code).toBe('gguf_invalid');
    expect(rf.message).toMatch(/rope_freqs\.weight/);

    const bias = await configError((p) =>
      p.tensors.push({
        name: 'blk.0.attn_q.bias',
        type: 'F32',
        shape: [32],
        data: tensor(p, 'output_norm.weight').data,
      }),
    );
    expect(bias.code).toBe('unsupported_model');
    expect(bias.message).toContain('blk.0.attn_q.bias');
  });
});
