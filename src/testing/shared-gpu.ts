/**
 * One GPU context for the engines of a test file (browser tests). Pipelines are cached per device
 * (webgpu/model/dispatch.ts), so the kernels that loads share (attention, norms, RoPE, argmax, one weight
 * type's matmuls) compile once instead of once per engine; compiling dominates a load on SwiftShader. An
 * engine given a device (`new WebGpuEngine({ gpu })`) does not destroy it; this does, after the file.
 */
import { afterAll } from 'vitest';
import { createGpuContext, type GpuContext } from '../webgpu/device.ts';

/**
 * Registers the device's release after the file (call it at a file's or a describe's top level) and
 * returns the getter that creates the context on first use.
 * @throws EngineError('webgpu_unavailable') from the getter when there is no adapter.
 */
export function sharedGpu(): () => Promise<GpuContext> {
  let gpu: Promise<GpuContext> | undefined;
  afterAll(async () => (await gpu)?.device.destroy());
  return () => {
    gpu ??= createGpuContext();
    return gpu;
  };
}
