/**
 * Synthetic demo models on the page: the presets of src/bench/synthetic.ts (the same bytes as
 * `npm run bench -- --model synthetic:NAME`), made in a worker (`synthetic.worker.ts`) so the page stays
 * responsive while the weights are drawn. Random weights: speed is real, text is noise.
 */
import { SYNTHETIC_MODELS, type SyntheticModelName } from '../bench/synthetic.ts';
import type { RandomLlamaOptions } from '../webgpu/gguf/random-model.ts';

type Shape = Omit<RandomLlamaOptions, 'seed'>;

/** The presets, smallest first. */
export const SYNTHETIC_PRESETS = (Object.keys(SYNTHETIC_MODELS) as SyntheticModelName[]).map((name) => ({
  name,
  shape: SYNTHETIC_MODELS[name] as Shape,
}));

/** Parameters of a synthetic model (every weight, norms included). */
export function syntheticParams(o: Shape): number {
  const headDim = o.headDim ?? o.nEmbd / o.nHead;
  const q = o.nHead * headDim;
  const kv = (o.nHeadKv ?? o.nHead) * headDim;
  const layer = 2 * o.nEmbd + o.nEmbd * (q + 2 * kv) + q * o.nEmbd + 3 * o.nEmbd * o.nFF;
  return o.nVocab * o.nEmbd * (o.tied ? 1 : 2) + o.nLayers * layer + o.nEmbd;
}

/** Approximate file size (the header and vocabulary add a few kB; norms stay F32). */
export function syntheticBytes(o: Shape): number {
  return syntheticParams(o) * (o.weightType === 'F16' ? 2 : 4);
}

/** Makes a preset's GGUF bytes in a worker. Rejects with an AbortError when `signal` fires. */
export function makeSyntheticGguf(name: SyntheticModelName, signal?: AbortSignal): Promise<Blob> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./synthetic.worker.ts', import.meta.url), { type: 'module' });
    const done = () => {
      worker.terminate();
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(new DOMException('cancelled', 'AbortError'));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.onmessage = (e: MessageEvent<Uint8Array | { error: string }>) => {
      done();
      if (e.data instanceof Uint8Array) resolve(new Blob([e.data as Uint8Array<ArrayBuffer>]));
      else reject(new Error(e.data.error));
    };
    worker.onerror = (e) => {
      done();
      reject(new Error(e.message || 'the synthetic model worker failed'));
    };
    worker.postMessage(name);
  });
}
