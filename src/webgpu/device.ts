/**
 * Getting a GPUDevice: from `navigator.gpu` in a browser or worker, or from the `webgpu` package (Dawn)
 * in Node. The engine core takes a GPUDevice and never touches the DOM.
 */
import { EngineError } from '../core/errors.ts';

/**
 * Features the engine asks for when the adapter offers them: the one list, also what the GPU tab
 * (src/bench/gpu-report.ts) reports and asks for and what the device fingerprint records.
 */
export const WANTED_FEATURES = [
  'shader-f16',
  'subgroups',
  'timestamp-query',
] as const satisfies readonly GPUFeatureName[];
/** One of {@link WANTED_FEATURES}. */
export type WantedFeature = (typeof WANTED_FEATURES)[number];

/** Limits the engine asks to raise to the adapter's maximum. */
export const WANTED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupsPerDimension',
] as const;

let nodeGpu: GPU | undefined;

/**
 * Returns the GPU entry point: `navigator.gpu` where present, else (in Node) the `webgpu` package.
 * In Node, set `VK_ICD_FILENAMES` to a Vulkan driver (e.g. `/usr/lib/chromium/vk_swiftshader_icd.json`).
 * @throws EngineError('webgpu_unavailable') when neither exists.
 */
export async function getGPU(): Promise<GPU> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  if (typeof process !== 'undefined' && process.versions?.node) {
    try {
      const mod = 'webgpu';
      const { create, globals } = (await import(/* @vite-ignore */ mod)) as {
        create: (o: string[]) => GPU;
        globals: Record<string, unknown>;
      };
      Object.assign(globalThis, globals);
      // Keep the instance alive for the life of the process: if the GPU object is garbage-collected,
      // Dawn tears down its instance under live devices and the process aborts.
      nodeGpu ??= create([]);
      return nodeGpu;
    } catch (e) {
      throw new EngineError(
        'webgpu_unavailable',
        `The 'webgpu' package (Dawn for Node) could not load: ${e}`,
        {
          cause: e,
        },
      );
    }
  }
  throw new EngineError(
    'webgpu_unavailable',
    'navigator.gpu is missing: this browser has no WebGPU, or the page is not in a secure context (https or localhost).',
  );
}

/**
 * What `createGpuContext` says when `requestAdapter()` gives none: in a browser, how to turn WebGPU on; in
 * Node (Dawn, the `webgpu` package), what Dawn needs on Linux, the Vulkan loader and a driver (the command
 * line refines this with what is installed: src/cli/node-gpu.ts `explainNodeNoAdapter`).
 */
export function noAdapterMessage(runtime: 'browser' | 'node'): string {
  return runtime === 'node'
    ? 'No WebGPU adapter in Node (Dawn, the `webgpu` package): on Linux it needs the Vulkan loader ' +
        "(libvulkan.so.1: `apt-get install libvulkan1` on Debian and Ubuntu) and a Vulkan driver (the GPU's, or " +
        "SwiftShader's on a CPU: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json)"
    : 'No WebGPU adapter: WebGPU is disabled or blocked for this GPU. Enable it (chrome://flags, --enable-unsafe-webgpu) or update the driver.';
}

/** An adapter and a device with the engine's features and the adapter's highest limits. */
export interface GpuContext {
  adapter: GPUAdapter;
  device: GPUDevice;
  /** adapter.info fields (vendor, architecture, device, description) and isFallbackAdapter. */
  info: { vendor: string; architecture: string; device: string; description: string; isFallback: boolean };
  hasF16: boolean;
  hasSubgroups: boolean;
  hasTimestamps: boolean;
  /** The adapter's subgroup size range (adapter.info; 0 where unknown). */
  subgroupMinSize: number;
  subgroupMaxSize: number;
  /** `navigator.gpu.wgslLanguageFeatures` (e.g. `packed_4x8_integer_dot_product`). */
  wgslFeatures: ReadonlySet<string>;
  /** The device was requested with the WebGPU spec's default limits only (`defaultLimits`). */
  defaultLimits: boolean;
  /** The device's values of {@link WANTED_LIMITS} (what the engine plans with). */
  limits: Record<(typeof WANTED_LIMITS)[number], number>;
}

/**
 * Requests an adapter and a device with {@link WANTED_FEATURES} and raised {@link WANTED_LIMITS}, or with
 * `defaultLimits` only the WebGPU spec's default limits (128 MiB per storage binding, 256 MiB buffers, 8
 * storage buffers per shader stage: what a phone or an integrated GPU may grant), so that a model's fit
 * on such devices can be tested anywhere.
 * @throws EngineError('webgpu_unavailable') when there is no adapter or the device request fails.
 */
export async function createGpuContext(
  opts: { powerPreference?: GPUPowerPreference; defaultLimits?: boolean } = {},
): Promise<GpuContext> {
  const gpu = await getGPU();
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter)
    throw new EngineError('webgpu_unavailable', noAdapterMessage(gpu === nodeGpu ? 'node' : 'browser'));
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f));
  const requiredLimits: Record<string, number> = {};
  if (!opts.defaultLimits) for (const k of WANTED_LIMITS) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'llm-engine' });
  } catch (e) {
    throw new EngineError('webgpu_unavailable', `The WebGPU device request failed: ${e}`, { cause: e });
  }
  const ai = adapter.info ?? ({} as GPUAdapterInfo);
  return {
    adapter,
    device,
    info: {
      vendor: ai.vendor ?? '',
      architecture: ai.architecture ?? '',
      device: ai.device ?? '',
      description: ai.description ?? '',
      isFallback: Boolean(
        (ai as { isFallbackAdapter?: boolean }).isFallbackAdapter ??
          (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter,
      ),
    },
    hasF16: device.features.has('shader-f16'),
    hasSubgroups: device.features.has('subgroups'),
    hasTimestamps: device.features.has('timestamp-query'),
    subgroupMinSize: (ai as { subgroupMinSize?: number }).subgroupMinSize ?? 0,
    subgroupMaxSize: (ai as { subgroupMaxSize?: number }).subgroupMaxSize ?? 0,
    wgslFeatures: new Set((gpu as { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? []),
    defaultLimits: Boolean(opts.defaultLimits),
    limits: Object.fromEntries(WANTED_LIMITS.map((k) => [k, device.limits[k]])) as GpuContext['limits'],
  };
}

/**
 * Whether `device` is lost now or becomes lost within `ms` milliseconds (0: by the next task). Chromium
 * can reject a pending `mapAsync` ("Buffer was unmapped before mapping was resolved", an AbortError)
 * before it settles `device.lost`, so an error from GPU work is only known to be a lost device after
 * this wait.
 */
export async function deviceLostWithin(device: GPUDevice, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const lost = await Promise.race([
    device.lost.then(() => true),
    new Promise<false>((r) => {
      timer = setTimeout(() => r(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return lost;
}
