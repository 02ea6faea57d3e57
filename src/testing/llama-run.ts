/**
 * What the whole-model browser tests against the float64 reference share (model/llama.browser.test.ts,
 * model/prefill-kernels.browser.test.ts): a greedy run of a GGUF file through WebGpuEngine with every
 * output position's logits, the reference's logits for the same tokens, and the comparison with its
 * tolerance and near-tie rule (see llama.browser.test.ts's header).
 */

import { expect } from 'vitest';
import type { KvType } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import type { RandomLlamaOptions } from '../model/random-model.ts';
import { argmax, type ReferenceLlama } from '../model/reference.ts';
import { mulberry32 } from '../util/prng.ts';
import type { GpuContext } from '../webgpu/device.ts';
import { WebGpuEngine, type WebGpuEngineOptions, type WebGpuModelInfo } from '../webgpu/engine.ts';

/** Relative logits tolerance: max |Δ| ≤ TOL · (1 + max |ref|). */
export const TOL = 2e-5;
export const N_OUT = 8;

export function blobOf(bytes: Uint8Array): Blob {
  return new Blob([bytes as Uint8Array<ArrayBuffer>]);
}

/** `n` random token ids in [1, nVocab) (never 0), seeded. */
export function randomIds(seed: number, n: number, nVocab: number): number[] {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => 1 + Math.floor(rng() * (nVocab - 1)));
}

export interface Run {
  prompt: number[];
  out: number[];
  /** Logits per output position [N_OUT][nVocab]. */
  logits: Float32Array[];
}

/**
 * `runEngine(bytes, prompt, options)`: loads `bytes` into a fresh WebGpuEngine on the test file's shared GPU
 * context (`getGpu()`, created in its beforeAll; a device of the engine's own with `defaultLimits`) and
 * generates {@link N_OUT} tokens greedily with their logits.
 */
export function makeRunEngine(getGpu: () => GpuContext | undefined) {
  return (bytes: Uint8Array, prompt: number[], o: RunOptions = {}) => runEngine(getGpu(), bytes, prompt, o);
}

/** Options of {@link makeRunEngine}'s runs. */
export interface RunOptions {
  batchSize?: number;
  maxBindingBytes?: number;
  defaultLimits?: boolean;
  /** KV-cache type (default f32, so the forward pass meets the float64 reference to f32 tolerance). */
  kvType?: KvType;
  /** The V cache's type where it differs (LoadOptions.kvTypeV). */
  kvTypeV?: KvType;
  /** Decode attention layout/chunking (WebGpuEngineOptions.attention). */
  attention?: WebGpuEngineOptions['attention'];
  /** Prefill matmuls (WebGpuEngineOptions.prefill). */
  prefill?: WebGpuEngineOptions['prefill'];
  /** Decode Q/K/V as one dispatch per segment (WebGpuEngineOptions.splitDecodeSegments). */
  splitDecodeSegments?: boolean;
  /** Decode matmul layouts (WebGpuEngineOptions.mmvLayout; default: chosen by a timed trial). */
  mmvLayout?: WebGpuEngineOptions['mmvLayout'];
  /** KV cache length (default 64). */
  contextLength?: number;
  onInfo?: (i: WebGpuModelInfo) => void;
}

async function runEngine(
  gpu: GpuContext | undefined,
  bytes: Uint8Array,
  prompt: number[],
  o: RunOptions,
): Promise<Run> {
  // Default limits need a device of the engine's own (the shared one has the adapter's highest).
  const engine = new WebGpuEngine({
    openModel: openModelSource,
    gpu: o.defaultLimits ? undefined : gpu,
    maxBindingBytes: o.maxBindingBytes,
    attention: o.attention,
    prefill: o.prefill,
    splitDecodeSegments: o.splitDecodeSegments,
    mmvLayout: o.mmvLayout,
  });
  try {
    const info = await engine.load(
      { blob: blobOf(bytes) },
      {
        contextLength: o.contextLength ?? 64,
        batchSize: o.batchSize,
        defaultLimits: o.defaultLimits,
        kvType: o.kvType ?? 'f32',
        ...(o.kvTypeV ? { kvTypeV: o.kvTypeV } : {}),
      },
    );
    o.onInfo?.(info);
    const logits: Float32Array[] = [];
    const r = await engine.generate(
      { promptTokenIds: prompt, maxTokens: N_OUT, ignoreEos: true, returnLogits: true },
      (e) => logits.push(e.logits!),
    );
    expect(r.outputTokenIds.length).toBe(N_OUT);
    expect(logits.length).toBe(N_OUT);
    return { prompt, out: r.outputTokenIds, logits };
  } finally {
    await engine.dispose();
  }
}

/** The reference's logits for each output position of `run` (fed prompt, then our output tokens). */
export async function referenceLogits(ref: ReferenceLlama, run: Run): Promise<Float64Array[]> {
  const all = ref.run([...run.prompt, ...run.out.slice(0, -1)]);
  return all.slice(run.prompt.length - 1);
}

/** Checks logits and greedy tokens against the reference; returns the worst relative error seen. */
export function compare(label: string, run: Run, refLogits: Float64Array[], tol = TOL): number {
  let worst = 0;
  let nearTies = 0;
  for (let i = 0; i < N_OUT; i++) {
    const ref = refLogits[i];
    const got = run.logits[i];
    expect(got.length).toBe(ref.length);
    let maxRef = 0;
    let maxDiff = 0;
    for (let v = 0; v < ref.length; v++) {
      maxRef = Math.max(maxRef, Math.abs(ref[v]));
      maxDiff = Math.max(maxDiff, Math.abs(got[v] - ref[v]));
    }
    const bound = tol * (1 + maxRef);
    worst = Math.max(worst, maxDiff / (1 + maxRef));
    expect(maxDiff, `${label}: logits at output position ${i}`).toBeLessThanOrEqual(bound);

    const best = argmax(ref);
    const second = ref.reduce((m, v, j) => (j !== best && v > m ? v : m), Number.NEGATIVE_INFINITY);
    if (ref[best] - second < 2 * bound) {
      nearTies++;
      expect(ref[run.out[i]], `${label}: near-tie at ${i}`).toBeGreaterThanOrEqual(ref[best] - 2 * bound);
    } else {
      expect(run.out[i], `${label}: greedy token at output position ${i}`).toBe(best);
    }
  }
  expect(nearTies, `${label}: every position was a near-tie`).toBeLessThan(N_OUT);
  console.log(`${label}: worst max|Δ|/(1+max|ref|) = ${worst.toExponential(2)}, near-ties ${nearTies}`);
  return worst;
}

export interface Case {
  name: string;
  model: RandomLlamaOptions;
  promptLen: number;
  batchSize?: number;
}
