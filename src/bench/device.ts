/**
 * The `device` block of a result: the adapter's facts (src/bench/gpu-report.ts) and its fingerprint
 * (src/bench/fingerprint.ts), read with no DOM (page or worker).
 */
import { EngineError } from '../core/errors.ts';
import { fnv1a64 } from '../core/hash.ts';
import { deviceFingerprint } from './fingerprint.ts';
import { type AdapterLike, type AdapterSnapshot, isSoftwareAdapter, snapshotAdapter } from './gpu-report.ts';
import type { BenchDevice } from './types.ts';

/** A result's device from an adapter snapshot and the user agent. */
export function benchDeviceFromSnapshot(s: AdapterSnapshot, userAgent: string): BenchDevice {
  const fp = deviceFingerprint(s);
  return {
    vendor: s.vendor,
    architecture: s.architecture,
    device: s.device,
    description: s.description,
    isFallbackAdapter: s.isFallbackAdapter,
    features: s.features,
    limits: s.limits,
    userAgent,
    fingerprint: fp.id,
    label: fp.label,
  };
}

/** A result's device from a GPUAdapter (or a look-alike). */
export function benchDeviceFromAdapter(adapter: AdapterLike, userAgent: string): BenchDevice {
  return benchDeviceFromSnapshot(snapshotAdapter(adapter), userAgent);
}

/**
 * Asks `navigator.gpu` for the adapter the engine gets (high-performance) and reads its facts.
 * @throws EngineError('webgpu_unavailable') without WebGPU or an adapter.
 */
export async function readBenchDevice(): Promise<BenchDevice> {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  if (!nav?.gpu)
    throw new EngineError('webgpu_unavailable', 'navigator.gpu is missing: this browser has no WebGPU');
  const adapter = await nav.gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter)
    throw new EngineError('webgpu_unavailable', 'WebGPU gave no adapter (disabled or blocked for this GPU)');
  return benchDeviceFromAdapter(adapter, nav.userAgent);
}

/** True for a software (CPU) adapter: fallback flag or a software rasterizer's name. */
export function isSoftwareBenchDevice(d: BenchDevice): boolean {
  return isSoftwareAdapter({
    vendor: d.vendor,
    architecture: d.architecture,
    device: d.device ?? '',
    description: d.description,
    isFallbackAdapter: d.isFallbackAdapter,
    features: d.features,
    limits: d.limits,
  });
}

/**
 * A result's device where the page has no WebGPU adapter and ran the model on the CPU (wllama): vendor
 * `cpu`, architecture `wasm`, the logical core count in the description. Its fingerprint is 64-bit FNV-1a
 * of `["cpu-fp/1", logicalCores, the user agent's platform part]`, so the same machine and browser group
 * together in History and the leaderboard, and never with a GPU's id (a different input set).
 * @param userAgent `navigator.userAgent`; @param logicalCores `navigator.hardwareConcurrency` (0 = unknown).
 */
export function cpuBenchDevice(userAgent: string, logicalCores: number): BenchDevice {
  const platform = /\(([^)]*)\)/.exec(userAgent)?.[1] ?? '';
  const cores = Number.isInteger(logicalCores) && logicalCores > 0 ? logicalCores : 0;
  const description = `CPU${cores ? `, ${cores} logical cores` : ''} (no WebGPU adapter)`;
  return {
    vendor: 'cpu',
    architecture: 'wasm',
    device: '',
    description,
    isFallbackAdapter: false,
    features: [],
    limits: {},
    userAgent,
    fingerprint: fnv1a64(JSON.stringify(['cpu-fp/1', cores, platform])),
    label: description,
  };
}
