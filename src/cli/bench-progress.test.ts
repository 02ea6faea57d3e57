/**
 * npm run bench's progress lines: the load line, and --ctx above the model's training context said
 * (issue 47: generate said it, bench cut it without a word).
 */
import { describe, expect, it } from 'vitest';
import type { BenchEvent } from '../bench/page-api.ts';
import type { ModelInfo } from '../core/types.ts';
import { progressPrinter } from './bench-progress.ts';

function loaded(contextLength: number): BenchEvent {
  return {
    type: 'loaded',
    model: { id: 'stories260K', quantization: 'F32', bytes: 1_185_376 },
    load: { totalMs: 120, downloadMs: 10, uploadMs: 20, compileMs: 90 },
    info: { nLayers: 5, contextLength } as ModelInfo,
  } as BenchEvent;
}

function lines(askedCtx: number | undefined, got: number): string[] {
  const out: string[] = [];
  progressPrinter((l) => out.push(l), askedCtx)(loaded(got));
  return out;
}

describe('bench progress (issue 47: --ctx above the model context)', () => {
  it('says when --ctx was cut to the training context', () => {
    const out = lines(100_000, 512);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/^loaded stories260K: 5 layers, F32, /);
    expect(out[1]).toBe(
      "note: --ctx 100000 is above the model's training context, so the context is 512 tokens (the model's own; past it a model's output is unreliable)",
    );
  });

  it('is silent when --ctx fits or is absent', () => {
    expect(lines(512, 512)).toHaveLength(1);
    expect(lines(64, 64)).toHaveLength(1);
    expect(lines(undefined, 512)).toHaveLength(1);
  });
});

describe('bench progress: the load line per backend (issue 46)', () => {
  it("names wllama's phases (fetch, load into wasm), not a GPU upload or shader compile", () => {
    const out: string[] = [];
    const e = loaded(512) as Extract<BenchEvent, { type: 'loaded' }>;
    progressPrinter((l) => out.push(l))({ ...e, info: { ...e.info, backend: 'wllama' } });
    expect(out[0]).toMatch(/ in 120 ms \(fetch 10, load into wasm 20\)$/);
    const gpu: string[] = [];
    progressPrinter((l) => gpu.push(l))(loaded(512));
    expect(gpu[0]).toMatch(/ in 120 ms \(download 10, upload 20, compile 90\)$/);
  });
});
