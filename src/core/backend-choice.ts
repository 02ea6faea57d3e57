/**
 * `backend: 'auto'`: which engine runs a model in this browser. Our WebGPU engine on a hardware adapter;
 * llama.cpp's wasm build (wllama) on the CPU when there is no WebGPU, no adapter, or only a software
 * adapter (a fallback adapter such as SwiftShader: a CPU emulating a GPU, where our engine decoded a 60M
 * Q4_K_M model at 0.15× wllama's speed, BENCHMARKS.md). Typed structurally, so it runs on any object
 * shaped like `navigator.gpu` (tests stub it) and needs no DOM types.
 */

/** What {@link chooseBackend} reads of a GPUAdapter: `info` (GPUAdapterInfo) and the older flag. */
export interface AdapterLike {
  info?: {
    vendor?: string;
    architecture?: string;
    device?: string;
    description?: string;
    isFallbackAdapter?: boolean;
  };
  /** Chrome before 128 had the flag on the adapter, not on its info. */
  isFallbackAdapter?: boolean;
}

/** What {@link chooseBackend} calls of `navigator.gpu`. */
export interface GpuLike {
  requestAdapter(options?: {
    powerPreference?: 'high-performance' | 'low-power';
  }): Promise<AdapterLike | null>;
}

/** The engine `auto` picks, and why (a sentence for people: the widget's ready event, ModelInfo). */
export interface BackendChoice {
  backend: 'webgpu' | 'wllama';
  reason: string;
}

/** How long {@link chooseBackend} waits for an adapter before choosing wllama, ms. */
export const ADAPTER_TIMEOUT_MS = 10_000;

/**
 * The name of a software adapter, or undefined for a hardware one: the adapter says it is a fallback
 * adapter (`info.isFallbackAdapter`, or the older `adapter.isFallbackAdapter`), or its info names
 * SwiftShader (Chrome's CPU Vulkan driver, which does not always set the flag), llvmpipe or lavapipe
 * (Mesa's CPU drivers), or Microsoft's Basic Render Driver (WARP).
 */
export function softwareAdapterName(adapter: AdapterLike): string | undefined {
  const i = adapter.info ?? {};
  const text = [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ');
  const known = /swiftshader|llvmpipe|lavapipe|basic render driver/i.exec(text);
  if (known) return known[0].toLowerCase() === 'swiftshader' ? 'SwiftShader' : known[0];
  if (i.isFallbackAdapter === true || adapter.isFallbackAdapter === true) return text || 'a fallback adapter';
  return undefined;
}

/**
 * Picks the engine for `backend: 'auto'`.
 * @param gpu `navigator.gpu` (undefined where the browser has no WebGPU).
 * @param timeoutMs the longest wait for `requestAdapter` (a driver that never answers), ms.
 * @returns wllama with the reason when there is no WebGPU, `requestAdapter` fails, times out or finds no
 *   adapter, or the adapter is a software one; otherwise webgpu, naming the adapter. Never throws.
 */
export async function chooseBackend(
  gpu: GpuLike | undefined,
  timeoutMs = ADAPTER_TIMEOUT_MS,
): Promise<BackendChoice> {
  const cpu = (why: string): BackendChoice => ({
    backend: 'wllama',
    reason: `${why}, so the model runs on the CPU (llama.cpp's wasm build)`,
  });
  if (!gpu) return cpu('this browser has no WebGPU (navigator.gpu is missing)');
  let adapter: AdapterLike | null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    adapter = await Promise.race([
      gpu.requestAdapter({ powerPreference: 'high-performance' }),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), timeoutMs);
      }),
    ]).then((a) => {
      if (a === 'timeout') throw new Error(`no answer within ${timeoutMs / 1000} s`);
      return a;
    });
  } catch (e) {
    return cpu(`WebGPU could not start (${e instanceof Error ? e.message : String(e)})`);
  } finally {
    clearTimeout(timer);
  }
  if (!adapter) return cpu('WebGPU has no adapter here (no usable GPU, or the GPU is blocklisted)');
  const soft = softwareAdapterName(adapter);
  if (soft)
    return cpu(`the only WebGPU adapter is a software one (${soft}), slower than llama.cpp on the CPU`);
  const i = adapter.info ?? {};
  const name = [i.vendor, i.architecture].filter(Boolean).join(' ') || i.description || 'a GPU';
  return { backend: 'webgpu', reason: `WebGPU runs on a hardware adapter (${name})` };
}
