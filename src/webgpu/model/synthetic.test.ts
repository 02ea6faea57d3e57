/**
 * Synthetic shapes of the Gemma and Phi-3 families: their parameter counts equal the published models'
 * (Hugging Face's safetensors counts), their headers are what llama.cpp loads (a scaled-down copy of each
 * shape, written with random data, loaded by node-llama-cpp 3.21.1's CPU build), and loading a shape of
 * an architecture the engine does not run gives the same 'unsupported_model' error as a real file of it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { syntheticSize } from '../../bench/synthetic.ts';
import { isEngineError } from '../../core/errors.ts';
import { GgmlTypeId, shapeElements } from '../../gguf/ggml-types.ts';
import { openGguf } from '../../gguf/reader.ts';
import { type GgufMetadataEntry, kv, writeGguf } from '../../gguf/writer.ts';
import { llamaConfigFromGguf, SUPPORTED_ARCHITECTURES } from '../../model/config.ts';
import { makeModelGguf } from '../../model/make-model.ts';
import { makeSpmVocab, TokenType } from '../../model/random-model.ts';
import { useTempDirs } from '../../testing/temp-dir.ts';
import { mulberry32, randn } from '../../util/prng.ts';
import { WEIGHT_TYPES } from '../kernels/common.ts';
import {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  type SyntheticFtype,
  type SyntheticShape,
  syntheticArchParts,
  syntheticGguf,
  syntheticShapeRunnable,
  syntheticTensorTypes,
} from './synthetic.ts';

const tempDir = useTempDirs();
const shape = (id: string): SyntheticShape => {
  const s = SYNTHETIC_SHAPES.find((x) => x.id === id);
  if (!s) throw new Error(`no shape ${id}`);
  return s;
};

const NEW_SHAPES = ['gemma-3-1b', 'gemma-2-2b', 'phi-3.5-mini', 'phi-4-mini'];

describe('synthetic Gemma and Phi-3 shapes', () => {
  it('have the published models’ parameter counts', () => {
    // Hugging Face's counts of the safetensors weights (google/gemma-3-1b-it, google/gemma-2-2b-it,
    // microsoft/Phi-3.5-mini-instruct, microsoft/Phi-4-mini-instruct); the GGUF's LongRoPE factor tensors
    // (2 × ropeDim/2) are not weights there.
    const published: Record<string, number> = {
      'gemma-3-1b': 999_885_952,
      'gemma-2-2b': 2_614_341_888,
      'phi-3.5-mini': 3_821_079_552,
      'phi-4-mini': 3_836_021_760,
    };
    for (const id of NEW_SHAPES) {
      const { shapes } = syntheticArchParts(shape(id));
      let n = 0;
      for (const [name, sh] of shapes) if (!name.startsWith('rope_factors_')) n += shapeElements(sh);
      expect(n, id).toBe(published[id]);
    }
    expect(syntheticArchParts(shape('phi-4-mini')).shapes.get('rope_factors_long.weight')).toEqual([48]);
    expect(syntheticArchParts(shape('phi-3.5-mini')).shapes.get('blk.0.attn_qkv.weight')).toEqual([
      3072, 9216,
    ]);
  });

  it('are marked by architecture and parse in every file type', () => {
    expect(NEW_SHAPES.map((id) => shape(id).architecture)).toEqual(['gemma3', 'gemma2', 'phi3', 'phi3']);
    const g = syntheticGguf('synthetic:gemma-3-1b-q8_0', 1, { tokenizer: false });
    expect(g.metadata['general.architecture']).toBe('gemma3');
    expect(g.metadata['gemma3.attention.key_length']).toBe(256);
    expect(g.metadata['gemma3.attention.sliding_window']).toBe(512);
    expect(g.metadata['tokenizer.ggml.tokens']).toBeUndefined();
    expect(g.tensors.get('blk.0.attn_q.weight')?.typeName).toBe('Q8_0');
    expect(g.tensors.has('output.weight')).toBe(false);
  });

  it("types tensors as llama-quantize does, with llama.cpp's fallbacks (src/llama-quant.cpp)", () => {
    const types = (id: string, f: Parameters<typeof syntheticTensorTypes>[1]) =>
      syntheticTensorTypes(shape(id), f);
    // Llama 3.2 1B, 16 layers, tied: token_embd is the output matrix (Q6_K); use_more_bits takes
    // layers 0, 1 (n/8 = 2), 4, 7, 10, 13 ((i − 2) % 3 == 2) and 14, 15 for attn_v and ffn_down.
    const l = types('llama-3.2-1b', 'q4_k_m');
    expect(l.get('token_embd.weight')).toBe('Q6_K');
    expect(l.get('blk.0.attn_q.weight')).toBe('Q4_K');
    const moreBits = [0, 1, 4, 7, 10, 13, 14, 15];
    for (let i = 0; i < 16; i++) {
      const want = moreBits.includes(i) ? 'Q6_K' : 'Q4_K';
      expect(l.get(`blk.${i}.attn_v.weight`), `attn_v ${i}`).toBe(want);
      expect(l.get(`blk.${i}.ffn_down.weight`), `ffn_down ${i}`).toBe(want);
    }
    expect(l.get('blk.0.attn_norm.weight')).toBe('F32');
    // Q4_0 files keep the output matrix in Q6_K; Q8_0 files in Q8_0.
    expect(types('llama-3.2-1b', 'q4_0').get('token_embd.weight')).toBe('Q6_K');
    expect(types('llama-3.2-1b', 'q8_0').get('token_embd.weight')).toBe('Q8_0');
    // Gemma 3 1B's 1152-wide rows are no multiple of 256: Q4_K → Q5_0 and Q6_K → Q8_0 as in llama.cpp
    // (the engine's own fallback would be Q8_0 for both); 6912-wide ffn_down rows keep the K-quants.
    const g = types('gemma-3-1b', 'q4_k_m');
    expect(g.get('blk.0.attn_q.weight')).toBe('Q5_0');
    expect(g.get('blk.2.ffn_up.weight')).toBe('Q5_0');
    expect(g.get('token_embd.weight')).toBe('Q8_0');
    expect(g.get('blk.0.ffn_down.weight')).toBe('Q6_K');
    expect(g.get('blk.3.ffn_down.weight')).toBe('Q4_K'); // 26 layers: n/8 = 3
    expect(types('gemma-3-1b', 'q5_k_m').get('blk.0.attn_q.weight')).toBe('Q5_1');
    // Phi-3's fused attn_qkv is attn_v-like (category_is_attn_v); f32 keeps everything F32.
    expect(types('phi-3.5-mini', 'q4_k_m').get('blk.0.attn_qkv.weight')).toBe('Q6_K');
    expect([...types('gemma-3-1b', 'f32').values()].every((t) => t === 'F32')).toBe(true);
    expect(types('gemma-3-1b', 'f16').get('blk.0.attn_q.weight')).toBe('F16');
  });

  it("weighs what llama.cpp's downloads of the real models do", () => {
    // File sizes published beside llama.cpp-quantized files on Hugging Face (GB = 1e9 bytes, 2–3
    // significant digits): bartowski/Llama-3.2-1B-Instruct-GGUF (llama.cpp b3821) and
    // tensorblock/gemma-3-1b-it-GGUF (b4882). Same tensors and types, so the same bytes up to the
    // tokenizer metadata (Gemma 3: 262,144 tokens, a few MB) and the published rounding.
    const real: [string, SyntheticFtype, number][] = [
      ['llama-3.2-1b', 'q4_k_m', 0.81e9],
      ['llama-3.2-1b', 'q8_0', 1.32e9],
      ['llama-3.2-1b', 'f16', 2.48e9],
      ['gemma-3-1b', 'q4_0', 0.72e9],
      ['gemma-3-1b', 'q3_k_m', 0.722e9],
      ['gemma-3-1b', 'q2_k', 0.69e9],
    ];
    for (const [id, f, bytes] of real) {
      const ours = syntheticSize(shape(id), f).bytes;
      expect(Math.abs(ours - bytes) / bytes, `${id}-${f}: ours ${ours} vs ${bytes}`).toBeLessThan(0.025);
    }
  });

  it('every file type of every shape uses only types the engine runs; sizes agree with the page’s', () => {
    for (const f of SYNTHETIC_FTYPES) {
      const base = f.replace(/_[ms]$/, '').toUpperCase();
      expect(WEIGHT_TYPES as readonly string[], f).toContain(base);
    }
    for (const s of SYNTHETIC_SHAPES) {
      for (const f of SYNTHETIC_FTYPES) {
        const g = syntheticGguf(`synthetic:${s.id}-${f}`, 1, { tokenizer: false });
        let bytes = 0;
        for (const t of g.tensors.values()) {
          expect(WEIGHT_TYPES as readonly string[], `${s.id}-${f} ${t.name}`).toContain(t.typeName);
          bytes += t.nBytes;
        }
        expect(syntheticSize(s, f).bytes, `${s.id}-${f}`).toBe(bytes);
      }
    }
    // The planned types follow llama-quantize's mixes, e.g. Q5_K_M: output and some attn_v/ffn_down Q6_K.
    const q5km = syntheticGguf('synthetic:llama-3.2-1b-q5_k_m', 1, { tokenizer: false });
    expect(q5km.tensors.get('blk.0.attn_q.weight')?.typeName).toBe('Q5_K');
    expect(q5km.tensors.get('blk.0.ffn_down.weight')?.typeName).toBe('Q6_K');
    expect(q5km.tensors.get('token_embd.weight')?.typeName).toBe('Q6_K'); // tied: the output matrix
  });

  for (const id of NEW_SHAPES) {
    it(`${id}: loading it fails as a real ${shape(id).architecture} file does, or configures the shape`, async () => {
      const s = shape(id);
      const header = syntheticGguf(`synthetic:${id}-f16`, 1, { tokenizer: false });
      // A real (small) file of the same architecture, made by its generator.
      const bytes = makeModelGguf(s.architecture, { seed: 1 }).bytes;
      const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
      const attempt = (f: Parameters<typeof llamaConfigFromGguf>[0]) => {
        try {
          return llamaConfigFromGguf(f, { supportedTypes: WEIGHT_TYPES });
        } catch (e) {
          return e;
        }
      };
      const fromSynthetic = attempt(header);
      const fromFile = attempt(file);
      if (SUPPORTED_ARCHITECTURES.includes(s.architecture)) {
        expect(syntheticShapeRunnable(s)).toBe(true);
        expect(isEngineError(fromSynthetic)).toBe(false);
        const cfg = fromSynthetic as ReturnType<typeof llamaConfigFromGguf>;
        expect([cfg.nLayers, cfg.nEmbd, cfg.nFF, cfg.nHead, cfg.nHeadKv, cfg.nVocab]).toEqual([
          s.nLayers,
          s.nEmbd,
          s.nFF,
          s.nHead,
          s.nHeadKv,
          s.nVocab,
        ]);
        expect(cfg.headDim).toBe(s.headDim ?? s.nEmbd / s.nHead);
      } else {
        expect(syntheticShapeRunnable(s)).toBe(false);
        expect(isEngineError(fromSynthetic) && fromSynthetic.code).toBe('unsupported_model');
        expect((fromSynthetic as Error).message).toBe((fromFile as Error).message);
      }
    });
  }

  it('their headers, scaled down and written with random data, are what llama.cpp loads', {
    timeout: 60_000,
  }, async () => {
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const dir = tempDir('synthetic-llama-cpp-');
    try {
      for (const id of NEW_SHAPES) {
        const real = shape(id);
        // The same heads, KV heads, tying, windows and RoPE split, at 16 dims per head (RoPE 3/4 of them
        // where the real model rotates 3/4), 2 layers, 300 tokens.
        const headDim = 16;
        const s: SyntheticShape = {
          ...real,
          nLayers: 2,
          nEmbd: real.headDim ? 64 : real.nHead * headDim,
          headDim: real.headDim ? headDim : undefined,
          ropeDim: real.ropeDim ? (headDim * real.ropeDim) / (real.nEmbd / real.nHead) : undefined,
          nFF: 48,
          nVocab: 300,
          contextLength: 8192,
          slidingWindow: real.slidingWindow ? Math.min(real.slidingWindow, 64) : undefined,
          longRope: real.longRope
            ? { originalContextLength: 1024, attnFactor: real.longRope.attnFactor }
            : undefined,
        };
        const { metadata, shapes } = syntheticArchParts(s);
        const vocab = makeSpmVocab(s.nVocab);
        if (s.architecture === 'phi3') {
          vocab.tokens[s.nVocab - 1] = '<|endoftext|>';
          vocab.tokenTypes[s.nVocab - 1] = TokenType.CONTROL;
        }
        const entries: GgufMetadataEntry[] = [
          kv.string('general.architecture', s.architecture),
          kv.string('general.name', `scaled ${id}`),
          ...metadata,
          kv.string('tokenizer.ggml.model', 'llama'),
          kv.strings('tokenizer.ggml.tokens', vocab.tokens),
          kv.f32s('tokenizer.ggml.scores', vocab.scores),
          kv.i32s('tokenizer.ggml.token_type', vocab.tokenTypes),
          kv.u32('tokenizer.ggml.bos_token_id', 1),
          kv.u32('tokenizer.ggml.eos_token_id', 2),
        ];
        const rng = mulberry32(3);
        let params = 0;
        const tensors = [...shapes].map(([name, shp]) => {
          params += shapeElements(shp);
          const f = Float32Array.from({ length: shapeElements(shp) }, () =>
            name.startsWith('rope_factors') ? 1 + rng() : randn(rng, 0, 0.1),
          );
          return { name, type: GgmlTypeId.F32, shape: shp, data: new Uint8Array(f.buffer) };
        });
        const path = join(dir, `${id}.gguf`);
        writeFileSync(path, writeGguf({ metadata: entries, tensors }));
        const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
        expect(model.architecture, id).toBe(s.architecture);
        expect(model.embeddingVectorSize, id).toBe(s.nEmbd);
        expect(model.trainContextSize, id).toBe(8192);
        const native = (model as unknown as { _model: { getTotalParameters(): number } })._model;
        expect(native.getTotalParameters(), id).toBe(params);
        await model.dispose();
      }
    } finally {
      await llama.dispose();
    }
  });
});
