/**
 * The `device` block of a result: the adapter's facts (src/bench/gpu-report.ts) and its fingerprint
 * (src/bench/fingerprint.ts), read with no DOM (page or worker).
 */
import { EngineError } from '../core/errors.ts';
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
