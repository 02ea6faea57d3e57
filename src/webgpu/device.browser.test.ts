import { describe, expect, it } from 'vitest';
import { createGpuContext } from './device.ts';

describe('WebGPU in real Chromium', () => {
  it('runs a compute shader that matches a CPU result', async () => {
    const { device } = await createGpuContext();
    const n = 1000;
    const a = Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
    const b = Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
    const mod = device.createShaderModule({
      code: `@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < arrayLength(&a)) { b[g.x] = a[g.x] * b[g.x] + exp(a[g.x]); }
}`,
    });
    const pipe = device.createComputePipeline({
      layout: 'auto',
      compute: { module: mod, entryPoint: 'main' },
    });
    const ba = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const bb = device.createBuffer({
      size: n * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
    const rb = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(ba, 0, a);
    device.queue.writeBuffer(bb, 0, b);
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: pipe.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: ba } },
          { binding: 1, resource: { buffer: bb } },
        ],
      }),
    );
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    enc.copyBufferToBuffer(bb, 0, rb, 0, n * 4);
    device.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(rb.getMappedRange().slice(0));
    for (let i = 0; i < n; i++) {
      const ref = a[i] * b[i] + Math.exp(a[i]);
      expect(Math.abs(out[i] - ref)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(ref)));
    }
    device.destroy();
  });
});
