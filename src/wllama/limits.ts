/**
 * What llama.cpp's wasm build (wllama) can hold, checked before a byte of the model is read: a wasm32
 * module addresses at most 4 GiB (`-sMAXIMUM_MEMORY=4096MB` in wllama's CMakeLists.txt), and wllama reads
 * each GGUF file through one ArrayBuffer, at most 2 GiB (wllama's README, "Max file size is 2GB"). Threads
 * need SharedArrayBuffer, which browsers give only to cross-origin isolated pages (COOP + COEP headers).
 */
import { EngineError } from '../core/errors.ts';

/** wasm32's address space, bytes: 4 GiB. */
export const WASM_MEMORY_BYTES = 4 * 1024 ** 3;
/** The largest GGUF file (or split part) wllama reads, bytes: 2 GiB (one ArrayBuffer). */
export const WLLAMA_FILE_BYTES = 2 * 1024 ** 3;
/**
 * Memory besides the weights and the KV cache (compute buffers, the vocabulary, wasm's own heap), bytes:
 * a floor, not an estimate, so that a model just under 4 GiB is refused here rather than part-way through
 * its load.
 */
export const WASM_OVERHEAD_BYTES = 128 * 1024 ** 2;

const GB = (n: number) => `${(n / 1024 ** 3).toFixed(2)} GiB`;

/**
 * Refuses files wllama cannot read: any file over {@link WLLAMA_FILE_BYTES} in a model given as one file.
 * @param partSizes bytes of each GGUF file (one entry for an unsplit model); undefined = unknown (not checked).
 * @throws EngineError('unsupported_model') naming the file and llama.cpp's gguf-split command.
 */
export function checkFileSizes(partSizes: readonly (number | undefined)[], name: string): void {
  partSizes.forEach((size, i) => {
    if (size === undefined || size <= WLLAMA_FILE_BYTES) return;
    const which = partSizes.length > 1 ? `part ${i + 1} of ${name}` : name;
    throw new EngineError(
      'unsupported_model',
      `${which} is ${GB(size)}; llama.cpp's wasm build (wllama) reads files of at most 2 GiB: split the model ` +
        'into parts of at most 2 GiB (llama.cpp: `llama-gguf-split --split-max-size 1G IN.gguf OUT`, or ' +
        '`npm run gguf-split` here) and load the first part, or use the WebGPU backend',
    );
  });
}

/**
 * Refuses a model whose weights and KV cache do not fit wasm32's 4 GiB.
 * @param fileBytes the GGUF files' total size (weights + header), bytes.
 * @param kvBytes the KV cache: 2 · nLayers · contextLength · kvDim · (2 for f16, 4 for f32) bytes.
 * @throws EngineError('out_of_memory') with the sizes and what to change.
 */
export function checkWasmMemory(fileBytes: number, kvBytes: number): void {
  const need = fileBytes + kvBytes + WASM_OVERHEAD_BYTES;
  if (need <= WASM_MEMORY_BYTES) return;
  throw new EngineError(
    'out_of_memory',
    `this model needs about ${GB(need)} (weights ${GB(fileBytes)}, KV cache ${GB(kvBytes)}), more than the ` +
      "4 GiB llama.cpp's wasm build (wllama) can address: pick a smaller quantization or model, a shorter " +
      'contextLength, or the WebGPU backend',
  );
}

/** Where threads can run: SharedArrayBuffer exists and the page is cross-origin isolated. */
export function threadsAvailable(
  g: { crossOriginIsolated?: boolean; SharedArrayBuffer?: unknown } = globalThis,
): boolean {
  return g.crossOriginIsolated === true && typeof g.SharedArrayBuffer === 'function';
}

/**
 * The number of CPU threads wllama runs with: `'auto'` = half the logical cores (wllama's own default),
 * at least 1, where threads can run, else 1; a number is used as it is.
 * @throws EngineError('feature_missing') for a number > 1 where threads cannot run (no SharedArrayBuffer:
 *   the page is not cross-origin isolated), saying which headers to send; ('invalid_argument') for a
 *   number that is not a positive integer.
 */
export function chooseThreads(
  want: number | 'auto',
  g: {
    crossOriginIsolated?: boolean;
    SharedArrayBuffer?: unknown;
    navigator?: { hardwareConcurrency?: number };
  } = globalThis,
): number {
  const ok = threadsAvailable(g);
  if (want === 'auto') return ok ? Math.max(1, Math.floor((g.navigator?.hardwareConcurrency ?? 1) / 2)) : 1;
  if (!Number.isInteger(want) || want < 1)
    throw new EngineError(
      'invalid_argument',
      `threads must be 'auto' or a positive integer, got ${String(want)}`,
    );
  if (want > 1 && !ok)
    throw new EngineError(
      'feature_missing',
      `${want} threads need SharedArrayBuffer, which this page does not have (it is not cross-origin ` +
        'isolated): serve it with `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: ' +
        "require-corp` (or `credentialless`), or use threads: 'auto' (1 thread here)",
    );
  return want;
}
