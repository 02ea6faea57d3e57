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
  'chromium-experimental-subgroup-matrix',
] as const satisfies readonly string[];
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

/** Dawn's (experimental) feature for the GPU's matrix units: `subgroup_matrix_*` types in WGSL. */
export const SUBGROUP_MATRIX_FEATURE = 'chromium-experimental-subgroup-matrix';

/**
 * One subgroup-matrix configuration the adapter offers (`GPUAdapterInfo.subgroupMatrixConfigs` in Dawn and
 * Chromium): left M×K and right K×N operands of `componentType`, an M×N result of `resultComponentType`.
 */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/**
 * Whether the prefill tile on subgroup matrices (kernels/mmm-sgmat.ts) can run on this device, and why not.
 * `configs`: every configuration the adapter reports; `usable`: the f16 → f32 ones the tile takes
 * (M divides 32, N divides 32, K divides 32), best first (largest M·N·K).
 */
export interface SubgroupMatrixSupport {
  available: boolean;
  configs: SubgroupMatrixConfig[];
  usable: SubgroupMatrixConfig[];
  /**
   * The i8 → i32 configurations the integer tile takes (kernels/mmm-sgmat.ts `mmmSgmatIntWGSL`; M, N, K in
   * {8, 16, 32}), best first; tried only where `available` (the f16 tile's prerequisites) holds.
   */
  usableInt?: SubgroupMatrixConfig[];
  /** Why not, where `available` is false (e.g. 'no subgroup matrices: the adapter lacks …'). */
  reason?: string;
  /** The device's maxComputeWorkgroupStorageSize, bytes (the large tile needs more than the 32 × 64 one). */
  maxWorkgroupStorage?: number;
}

/**
 * Reads the adapter's and device's subgroup-matrix support (pure: tests pass stubs).
 * @param f the device's features (after the request), the adapter's info, and the device's subgroup size
 *   bound and workgroup storage limit (the tile needs {@link SGMAT_WORKGROUP_BYTES}).
 */
export function subgroupMatrixSupport(f: {
  adapterFeatures: ReadonlySet<string> | { has(n: string): boolean };
  deviceFeatures: { has(n: string): boolean };
  info: unknown;
  subgroupMaxSize: number;
  maxWorkgroupStorage: number;
  /** A software (fallback) adapter: no matrix units, whatever the flags. */
  software?: boolean;
}): SubgroupMatrixSupport {
  const raw = (f.info as { subgroupMatrixConfigs?: Iterable<Partial<SubgroupMatrixConfig>> } | undefined)
    ?.subgroupMatrixConfigs;
  const configs: SubgroupMatrixConfig[] = [...(raw ?? [])].map((c) => ({
    componentType: String(c.componentType),
    resultComponentType: String(c.resultComponentType),
    M: Number(c.M),
    N: Number(c.N),
    K: Number(c.K),
  }));
  const usable = configs
    .filter(
      (c) =>
        c.componentType === 'f16' &&
        c.resultComponentType === 'f32' &&
        [8, 16, 32].includes(c.M) &&
        [8, 16, 32].includes(c.N) &&
        [8, 16, 32].includes(c.K),
    )
    .sort((a, b) => b.M * b.N * b.K - a.M * a.N * a.K);
  const usableInt = configs
    .filter(
      (c) =>
        c.componentType === 'i8' &&
        c.resultComponentType === 'i32' &&
        [8, 16, 32].includes(c.M) &&
        [8, 16, 32].includes(c.N) &&
        [8, 16, 32].includes(c.K),
    )
    .sort((a, b) => b.M * b.N * b.K - a.M * a.N * a.K);
  const no = (reason: string): SubgroupMatrixSupport => ({
    available: false,
    configs,
    usable,
    usableInt,
    reason,
    maxWorkgroupStorage: f.maxWorkgroupStorage,
  });
  if (!f.adapterFeatures.has(SUBGROUP_MATRIX_FEATURE) && f.software)
    return no(
      `no subgroup matrices: a software adapter has no matrix units (it does not offer ${SUBGROUP_MATRIX_FEATURE}, whatever the flags)`,
    );
  if (!f.adapterFeatures.has(SUBGROUP_MATRIX_FEATURE))
    return no(
      `no subgroup matrices: the adapter does not offer ${SUBGROUP_MATRIX_FEATURE} (Dawn offers it with the instance toggle enable-dawn-features=allow_unsafe_apis; Chromium with --enable-unsafe-webgpu)`,
    );
  if (!f.deviceFeatures.has(SUBGROUP_MATRIX_FEATURE))
    return no(`no subgroup matrices: the device request did not grant ${SUBGROUP_MATRIX_FEATURE}`);
  if (!f.deviceFeatures.has('shader-f16'))
    return no(
      'no subgroup matrices: the f16 tile needs shader-f16, which the device lacks (Dawn on NVIDIA Vulkan: the toggle vulkan_enable_f16_on_nvidia)',
    );
  if (usable.length === 0)
    return no(
      `no subgroup matrices: no f16 → f32 configuration with M, N, K in {8, 16, 32} among ${configs.length ? configs.map(configName).join(', ') : 'none reported'}`,
    );
  if (f.subgroupMaxSize !== 32 && f.subgroupMaxSize !== 64)
    return no(
      `no subgroup matrices: the tile is built for subgroups of 32 or 64 invocations (the adapter's maximum is ${f.subgroupMaxSize || 'unknown'})`,
    );
  if (f.maxWorkgroupStorage < SGMAT_WORKGROUP_BYTES)
    return no(
      `no subgroup matrices: the tile needs ${SGMAT_WORKGROUP_BYTES} bytes of workgroup memory (the device grants ${f.maxWorkgroupStorage})`,
    );
  return { available: true, configs, usable, usableInt, maxWorkgroupStorage: f.maxWorkgroupStorage };
}

/** A configuration as `f16→f32 16x16x16` (M×N×K). */
export function configName(c: SubgroupMatrixConfig): string {
  return `${c.componentType}→${c.resultComponentType} ${c.M}x${c.N}x${c.K}`;
}

/**
 * Workgroup memory of the subgroup-matrix prefill tile (kernels/mmm-sgmat.ts): two K-steps of f16 tiles
 * (32 tokens + 64 weight rows, 40 halves per row) and the f32 result tile (64 × 32), plus the norm's 64 f32.
 */
export const SGMAT_WORKGROUP_BYTES = 2 * (32 + 64) * 40 * 2 + 64 * 32 * 4 + 64 * 4;

let nodeGpu: GPU | undefined;
let nodeToggles: string[] = [];

/**
 * Dawn instance toggles for Node (the `webgpu` package's `create([...])`), before the first {@link getGPU}:
 * `unsafeApis` adds `enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia`, which makes Dawn
 * offer experimental features such as {@link SUBGROUP_MATRIX_FEATURE} and shader-f16 on NVIDIA's Vulkan
 * driver (Chromium's equivalent: `--enable-unsafe-webgpu --enable-dawn-features=allow_unsafe_apis`). No effect
 * in a browser.
 * @throws EngineError('invalid_argument') when the Node instance already exists with other toggles.
 */
export function setNodeDawnOptions(o: { unsafeApis?: boolean }): void {
  const want = o.unsafeApis ? ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia'] : [];
  if (nodeGpu && want.join() !== nodeToggles.join())
    throw new EngineError(
      'invalid_argument',
      `the Node WebGPU instance already exists with toggles [${nodeToggles.join(', ')}]: set Dawn options before the first use`,
    );
  nodeToggles = want;
}

/** The Dawn instance toggles {@link getGPU} creates the Node instance with ({@link setNodeDawnOptions}). */
export function nodeDawnToggles(): readonly string[] {
  return nodeToggles;
}

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
      nodeGpu ??= create([...nodeToggles]);
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
  /** Subgroup matrices (the GPU's matrix units) for the prefill tile: available or why not. */
  subgroupMatrix: SubgroupMatrixSupport;
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
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f)) as GPUFeatureName[];
  const requiredLimits: Record<string, number> = {};
  if (!opts.defaultLimits) for (const k of WANTED_LIMITS) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'llm-engine' });
  } catch (e) {
    throw new EngineError('webgpu_unavailable', `The WebGPU device request failed: ${e}`, { cause: e });
  }
  const ai = adapter.info ?? ({} as GPUAdapterInfo);
  const isFallback = Boolean(
    (ai as { isFallbackAdapter?: boolean }).isFallbackAdapter ??
      (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter,
  );
  return {
    adapter,
    device,
    info: {
      vendor: ai.vendor ?? '',
      architecture: ai.architecture ?? '',
      device: ai.device ?? '',
      description: ai.description ?? '',
      isFallback,
    },
    hasF16: device.features.has('shader-f16'),
    hasSubgroups: device.features.has('subgroups'),
    hasTimestamps: device.features.has('timestamp-query'),
    subgroupMinSize: (ai as { subgroupMinSize?: number }).subgroupMinSize ?? 0,
    subgroupMaxSize: (ai as { subgroupMaxSize?: number }).subgroupMaxSize ?? 0,
    subgroupMatrix: subgroupMatrixSupport({
      adapterFeatures: adapter.features,
      deviceFeatures: device.features,
      info: ai,
      subgroupMaxSize: (ai as { subgroupMaxSize?: number }).subgroupMaxSize ?? 0,
      maxWorkgroupStorage: device.limits.maxComputeWorkgroupStorageSize,
      software: isFallback,
    }),
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
