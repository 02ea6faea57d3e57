/**
 * What the browser's WebGPU adapter offers an LLM engine, read into plain data with no DOM, so that the
 * GPU page (`report.ts`), the device fingerprint and the unit tests share one reading.
 *
 * {@link probeGpu} asks `navigator.gpu` (or anything shaped like it) for an adapter and a device and says
 * which of four things happened: it worked, there is no `navigator.gpu`, there is no adapter, or the
 * device request failed. {@link readReport} turns an adapter snapshot into badges, a limits table and
 * plain-language readings; {@link explainProblem} turns a failure into what the person can do.
 */

import { fmtBinaryBytes, fmtCount } from '../util/format.ts';
import {
  configName,
  type SubgroupMatrixConfig,
  WANTED_FEATURES,
  type WantedFeature,
} from '../webgpu/device.ts';
import { engineSupportSentence } from '../webgpu/support.ts';

/**
 * What each of the engine's features ({@link WANTED_FEATURES}) buys here. Our kernels never `enable f16`:
 * f16 weights, quant scales and the f16 KV cache go through `unpack2x16float` / `pack2x16float` and the
 * arithmetic is f32, so shader-f16 matters only to WebLLM's f16 models. Subgroups serve the two decode
 * kernels (src/webgpu/kernels/mmv.ts, attention-decode.ts `flashDecodeWGSL`; chosen in kernels/tune.ts and
 * webgpu/kernel-plan.ts `attentionPolicyFor`).
 */
export const FEATURE_MEANING: Record<WantedFeature, string> = {
  'shader-f16':
    "Half-precision (f16) arithmetic in shaders. Our engine does without it (f16 weights and the f16 KV cache are unpacked to f32); WebLLM's f16 models (q4f16) need it.",
  subgroups:
    'Subgroup (SIMD/warp) operations: our decode matrix-vector and attention kernels sum across lanes with subgroup shuffles.',
  'timestamp-query': 'GPU-side timers: benchmarks can time each kernel on the GPU itself.',
  'chromium-experimental-subgroup-matrix':
    "Subgroup matrices (the GPU's matrix units, tensor cores): our prefill can multiply on them (kernels/mmm-sgmat.ts), after a self-test at load. Experimental: Chromium offers it with --enable-unsafe-webgpu.",
};

/** How a limit's value reads: a size in bytes or a plain count. */
export type LimitUnit = 'bytes' | 'count';

/** The limits shown on the page, in order, with their unit and meaning. */
export const REPORT_LIMITS = [
  {
    name: 'maxBufferSize',
    unit: 'bytes',
    meaning: 'Largest single GPU buffer the page can allocate.',
  },
  {
    name: 'maxStorageBufferBindingSize',
    unit: 'bytes',
    meaning: 'Largest range one shader binding can see; larger tensors are split across bindings.',
  },
  {
    name: 'maxComputeWorkgroupStorageSize',
    unit: 'bytes',
    meaning: 'Shared memory per workgroup; bounds the tile sizes of matmul and attention kernels.',
  },
  {
    name: 'maxComputeInvocationsPerWorkgroup',
    unit: 'count',
    meaning: 'Threads per workgroup, all dimensions together.',
  },
  {
    name: 'maxComputeWorkgroupSizeX',
    unit: 'count',
    meaning: 'Threads along x in one workgroup; row reductions use up to this many.',
  },
] as const satisfies readonly { name: string; unit: LimitUnit; meaning: string }[];
export type ReportLimit = (typeof REPORT_LIMITS)[number]['name'];

/** Everything the page and the fingerprint read from an adapter, as plain data. */
export interface AdapterSnapshot {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** `adapter.info.isFallbackAdapter` (or the older `adapter.isFallbackAdapter`); false when absent. */
  isFallbackAdapter: boolean;
  /** Every feature the adapter offers, sorted. */
  features: string[];
  /** Every numeric limit the adapter reports, by name. */
  limits: Record<string, number>;
  /** `adapter.info.subgroupMatrixConfigs` as `f16→f32 16x16x16` (M×N×K); empty when none or not reported. */
  subgroupMatrixConfigs?: string[];
}

/** The part of a `GPUAdapter` that {@link snapshotAdapter} reads (so tests can pass a plain object). */
export interface AdapterLike {
  info?: Partial<Pick<GPUAdapterInfo, 'vendor' | 'architecture' | 'device' | 'description'>> & {
    isFallbackAdapter?: boolean;
    subgroupMatrixConfigs?: Iterable<Partial<SubgroupMatrixConfig>>;
  };
  isFallbackAdapter?: boolean;
  features: Iterable<string>;
  limits: object;
}

/** Reads an adapter (or a look-alike) into an {@link AdapterSnapshot}. */
export function snapshotAdapter(adapter: AdapterLike): AdapterSnapshot {
  const info = adapter.info ?? {};
  const limits: Record<string, number> = {};
  // GPUSupportedLimits exposes its limits as enumerable getters on the prototype, so `for…in` sees them.
  for (const key in adapter.limits) {
    const v = (adapter.limits as Record<string, unknown>)[key];
    if (typeof v === 'number') limits[key] = v;
  }
  return {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    isFallbackAdapter: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
    features: [...adapter.features].sort(),
    limits,
    ...(info.subgroupMatrixConfigs
      ? {
          subgroupMatrixConfigs: [...info.subgroupMatrixConfigs].map((c) =>
            configName({
              componentType: String(c.componentType),
              resultComponentType: String(c.resultComponentType),
              M: Number(c.M),
              N: Number(c.N),
              K: Number(c.K),
            }),
          ),
        }
      : {}),
  };
}

/** Names in adapter strings that mean a CPU (software) rasterizer rather than a GPU. */
const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|softpipe|microsoft basic render|\bwarp\b/i;

/**
 * Whether an adapter is a software one, and why: the adapter says it is a fallback adapter, or its
 * vendor, architecture, device or description names a software rasterizer (SwiftShader, llvmpipe, …).
 */
export function softwareReasons(s: AdapterSnapshot): string[] {
  const reasons: string[] = [];
  if (s.isFallbackAdapter) reasons.push('the adapter reports isFallbackAdapter');
  for (const field of ['vendor', 'architecture', 'device', 'description'] as const) {
    const m = SOFTWARE_NAMES.exec(s[field]);
    if (m) reasons.push(`its ${field} names ${m[0]}`);
  }
  return reasons;
}

/** True for a fallback or software-rasterizer adapter (see {@link softwareReasons}). */
export function isSoftwareAdapter(s: AdapterSnapshot): boolean {
  return softwareReasons(s).length > 0;
}

/** A limit's value as a person reads it. */
export function formatLimit(unit: LimitUnit, n: number): string {
  return unit === 'bytes' ? fmtBinaryBytes(n) : fmtCount(n);
}

/** How a reading should look: fine, worth knowing, or changes how to read the numbers. */
export type Level = 'ok' | 'info' | 'warn';

/** One plain-language sentence about the adapter. */
export interface Reading {
  level: Level;
  text: string;
  detail?: string;
}

/** The adapter read for the page: everything shown in the GPU section. */
export interface GpuReport {
  snapshot: AdapterSnapshot;
  software: boolean;
  softwareReasons: string[];
  features: { name: WantedFeature; present: boolean; meaning: string }[];
  limits: { name: ReportLimit; value: number | undefined; shown: string; unit: LimitUnit; meaning: string }[];
  readings: Reading[];
}

/** Reads a snapshot into badges, a limits table and plain-language readings. */
export function readReport(s: AdapterSnapshot): GpuReport {
  const reasons = softwareReasons(s);
  const software = reasons.length > 0;
  const has = (f: string) => s.features.includes(f);
  const features = WANTED_FEATURES.map((name) => ({
    name,
    present: has(name),
    meaning: FEATURE_MEANING[name],
  }));
  const limits = REPORT_LIMITS.map(({ name, unit, meaning }) => {
    const value = s.limits[name];
    return {
      name,
      value,
      unit,
      meaning,
      shown: value === undefined ? 'not reported' : formatLimit(unit, value),
    };
  });

  const readings: Reading[] = [];
  if (software) {
    readings.push({
      level: 'warn',
      text: 'Software adapter: numbers will not reflect a GPU.',
      detail: `WebGPU runs on the CPU here (${reasons.join('; ')}). Benchmarks still work, but measure the processor.`,
    });
  } else {
    readings.push({ level: 'ok', text: 'Hardware adapter: benchmark numbers reflect this GPU.' });
  }
  readings.push(
    has('shader-f16')
      ? {
          level: 'ok',
          text: "shader-f16: WebLLM's f16 models can run; our engine computes in f32 either way.",
        }
      : {
          level: 'info',
          text: "No shader-f16: WebLLM's f16 models cannot run; our engine does not need it (it unpacks f16 weights and the f16 KV cache to f32).",
        },
  );
  if (!has('subgroups')) {
    readings.push({
      level: 'info',
      text: 'No subgroups: decode matrix-vector kernels sum across lanes through workgroup memory and decode attention uses one thread per position, which is slower.',
    });
  }
  if (has('chromium-experimental-subgroup-matrix')) {
    const cs = s.subgroupMatrixConfigs ?? [];
    readings.push({
      level: 'ok',
      text: `Subgroup matrices (matrix units): ${cs.length ? cs.join(', ') : 'no configuration reported'}. Our prefill tries its subgroup-matrix tile (f16 → f32) after a self-test at load.`,
    });
  } else if (!software) {
    readings.push({
      level: 'info',
      text: 'No subgroup matrices offered: prefill runs on the float or integer-dot tile. Chromium offers them (where the GPU has matrix units) with --enable-unsafe-webgpu.',
    });
  }
  if (!has('timestamp-query')) {
    readings.push({
      level: 'info',
      text: 'No timestamp-query: timings come from the CPU clock around each submission.',
    });
  }
  const binding = s.limits.maxStorageBufferBindingSize;
  if (binding !== undefined) {
    readings.push({
      level: 'info',
      text: `maxStorageBufferBindingSize ${fmtBinaryBytes(binding)}: tensors larger than this are split across bindings.`,
    });
  }
  const buffer = s.limits.maxBufferSize;
  if (buffer !== undefined) {
    readings.push({
      level: 'info',
      text: `maxBufferSize ${fmtBinaryBytes(buffer)}: no single GPU buffer can be larger.`,
    });
  }
  // What the engine itself runs (src/webgpu/support.ts: config.ts's architectures, the kernels' types).
  readings.push({ level: 'info', text: `This engine: ${engineSupportSentence()}` });
  return { snapshot: s, software, softwareReasons: reasons, features, limits, readings };
}

/** The `navigator` fields {@link probeGpu} reads. */
export interface GpuEnvironment {
  gpu?: { requestAdapter(options?: GPURequestAdapterOptions): Promise<GPUAdapter | null> } | undefined;
  isSecureContext: boolean;
}

/** What asking for WebGPU gave. */
export type GpuProbe =
  | { status: 'ok'; adapter: AdapterSnapshot }
  /** `navigator.gpu` is missing: an old browser, WebGPU off at build time, or an insecure context. */
  | { status: 'no-webgpu'; secureContext: boolean }
  /** `requestAdapter()` gave null (WebGPU disabled or the GPU blocklisted) or threw (`error`). */
  | { status: 'no-adapter'; error?: string }
  /** There is an adapter, but `requestDevice()` rejected or gave a device that was already lost. */
  | { status: 'device-failed'; adapter: AdapterSnapshot; error: string };

/** A probe's status, as the page writes it into `data-gpu-status`. */
export type GpuStatus = GpuProbe['status'];

function errorText(e: unknown): string {
  if (e instanceof Error) return e.name && e.name !== 'Error' ? `${e.name}: ${e.message}` : e.message;
  return String(e);
}

/**
 * Asks for an adapter (high-performance, as the engine does) and a device with the {@link WANTED_FEATURES}
 * the adapter offers, then destroys the device. Never throws: every outcome is a {@link GpuProbe}.
 */
export async function probeGpu(env: GpuEnvironment): Promise<GpuProbe> {
  if (!env.gpu) return { status: 'no-webgpu', secureContext: env.isSecureContext };
  let adapter: GPUAdapter | null;
  try {
    adapter = await env.gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return { status: 'no-adapter', error: errorText(e) };
  }
  if (!adapter) return { status: 'no-adapter' };
  const snapshot = snapshotAdapter(adapter);
  const requiredFeatures = WANTED_FEATURES.filter((f) => snapshot.features.includes(f)) as GPUFeatureName[];
  try {
    const device = await adapter.requestDevice({ requiredFeatures, label: 'gpu-report' });
    // A request the browser cannot fulfil resolves to a device that is already lost; give `lost` a turn.
    const lost = await Promise.race([
      device.lost,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 0)),
    ]);
    device.destroy();
    if (lost) {
      return {
        status: 'device-failed',
        adapter: snapshot,
        error: `device lost at once (${lost.reason}): ${lost.message}`,
      };
    }
  } catch (e) {
    return { status: 'device-failed', adapter: snapshot, error: errorText(e) };
  }
  return { status: 'ok', adapter: snapshot };
}

/** A failure explained: a headline, what it means, and what the person can do. */
export interface Explanation {
  title: string;
  detail: string;
  actions: string[];
}

/** Explains a failed probe. */
export function explainProblem(p: Exclude<GpuProbe, { status: 'ok' }>): Explanation {
  switch (p.status) {
    case 'no-webgpu':
      if (!p.secureContext) {
        return {
          title: 'WebGPU needs a secure context',
          detail:
            'This page was opened over plain http from a host other than localhost, so the browser hides navigator.gpu.',
          actions: [
            'Open the page over https.',
            'Or serve it locally and open it as http://localhost (localhost counts as secure).',
          ],
        };
      }
      return {
        title: 'This browser has no WebGPU',
        detail: 'navigator.gpu is missing: the browser is too old or was built without WebGPU.',
        actions: [
          'Use a current Chrome or Edge (WebGPU is on by default on Windows, macOS, ChromeOS and Android).',
          'Or Safari 26 or later, or Firefox 141 or later on Windows.',
          'On Linux, Chrome may need chrome://flags/#enable-unsafe-webgpu turned on.',
        ],
      };
    case 'no-adapter':
      return {
        title: 'WebGPU is present but gave no adapter',
        detail:
          'navigator.gpu exists, but requestAdapter() returned no adapter: WebGPU is disabled or blocked for this GPU' +
          (p.error ? ` (${p.error}).` : '.'),
        actions: [
          'Open chrome://gpu and look at the WebGPU line: "Disabled" or "Software only" says why.',
          'Turn on hardware acceleration in the browser settings, and check for a --disable-webgpu flag or an enterprise policy.',
          'Update the GPU driver; a blocklisted GPU may work with chrome://flags/#enable-unsafe-webgpu.',
        ],
      };
    case 'device-failed':
      return {
        title: 'The GPU device request failed',
        detail: `An adapter was found, but requestDevice() failed: ${p.error}`,
        actions: [
          'Reload the page; a GPU process that crashed or reset often recovers.',
          'Close other tabs or programs that use the GPU heavily.',
          'Update the GPU driver and check chrome://gpu for errors.',
        ],
      };
  }
}
