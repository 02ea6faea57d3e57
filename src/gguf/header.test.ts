/**
 * gguf/header.ts: the header our engine keeps of a loaded model (`headerOf`), after a structured clone (the
 * worker boundary) and back as a GgufFile (`headerAsFile`), sizes the model exactly as the full file does:
 * the page's context select marks (bench/kv-memory.ts `contextFits`, ui/kv-context.ts `contextLabel`) for
 * a URL model equal a picked file's, on stories260K and on a random model whose head size allows q8_0/q4_0.
 */
import { describe, expect, it } from 'vitest';
import { contextChoices, contextFits, kvShapeOf } from '../bench/kv-memory.ts';
import type { MemoryProbe } from '../bench/llama-bench.ts';
import { modelFits } from '../bench/llama-bench-gpu.ts';
import { isEngineError } from '../core/errors.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { stories260kPath } from '../testing/models.ts';
import { contextLabel } from '../ui/kv-context.ts';
import { headerAsFile, headerOf } from './header.ts';
import { openGguf } from './reader.ts';
import type { GgufFile } from './types.ts';

const mem = (allocatable: number, binding = 2 * 1024 ** 3): MemoryProbe => ({
  maxBufferBytes: binding,
  maxBindingBytes: binding,
  allocatableBytes: allocatable,
  capped: false,
  capBytes: 64 * 1024 ** 3,
  chunkBytes: 256 * 1024 ** 2,
  ms: 1,
});

/** The marks of every context choice, as the page's context select words them. */
function marks(file: GgufFile, m: MemoryProbe): string[] {
  return contextFits(file, m, contextChoices(kvShapeOf(file).contextLength)).map((f) =>
    contextLabel(f.contextLength, f),
  );
}

async function check(file: GgufFile, memories: MemoryProbe[]): Promise<string[][]> {
  const h = headerOf(file);
  // What crosses the worker boundary: no functions, no tokenizer arrays.
  const crossed = structuredClone(h);
  expect(Object.keys(crossed.metadata).filter((k) => k.startsWith('tokenizer.ggml.tokens'))).toEqual([]);
  expect(crossed.tensors.size).toBe(file.tensors.size);
  const back = headerAsFile(crossed);
  expect(llamaConfigFromGguf(back)).toEqual(llamaConfigFromGguf(file));
  expect(kvShapeOf(back)).toEqual(kvShapeOf(file));
  const all: string[][] = [];
  for (const m of memories) {
    const got = marks(back, m);
    expect(got).toEqual(marks(file, m));
    for (const t of ['f16', 'q8_0', 'q4_0'] as const)
      expect(modelFits(back, m, 1000, t)).toEqual(modelFits(file, m, 1000, t));
    all.push(got);
  }
  const err = await back.streamTensorData(() => undefined).catch((e) => e);
  expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
  return all;
}

describe('headerOf: a loaded model header for the fit marks', () => {
  it('stories260K: the same config and marks as the file, f16 only (head size 8)', async () => {
    const file = await openGguf({ path: stories260kPath() });
    const n = kvShapeOf(file).contextLength;
    const need = modelFits(file, mem(1e12), n).needBytes;
    const [roomy, tight] = await check(file, [mem(need), mem(need - 1)]);
    const words = `${n.toLocaleString('en-US')} tokens`;
    expect(roomy.at(-1)).toBe(`${words} · fits at f16`);
    // A q8_0/q4_0 cache cannot hold head size 8: one byte short is "does not fit", not "needs q4_0".
    expect(tight.at(-1)).toBe(`${words} · does not fit`);
  });

  it('a random model (head size 64, 1,000-token vocabulary, 8,192-token context): marks for each cache type', async () => {
    const bytes = makeRandomLlamaGguf({
      seed: 44,
      nLayers: 3,
      nEmbd: 256,
      nFF: 520,
      nHead: 4,
      nHeadKv: 2,
      nVocab: 1000,
      contextLength: 8192,
    });
    const file = await openGguf({ blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
    expect((file.metadata['tokenizer.ggml.tokens'] as unknown[]).length).toBe(1000);
    // Memory for 8,192 tokens of q4_0 cache: shorter contexts fit at f16 or q8_0, none fits past it.
    const m = mem(modelFits(file, mem(1e12), 8192, 'q4_0').needBytes);
    const [got] = await check(file, [m, mem(1e12)]);
    expect(got.at(-1)).toBe('8,192 tokens · needs q4_0');
    expect(got).toContain('4,096 tokens · needs q8_0');
    expect(got.some((l) => l.endsWith('fits at f16'))).toBe(true);
  });
});
