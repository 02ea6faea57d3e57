/**
 * The roofline kernels on the browser's WebGPU adapter (SwiftShader here): figures are positive and
 * finite, the bandwidth kernel's sum equals the CPU's (so the reads happened), the matmul equals float64.
 */
import { describe, expect, it } from 'vitest';
import { createGpuContext } from '../webgpu/device.ts';
import { hashSumU32, isSoftwareDevice, measureBandwidth, measureMatmul } from './roofline.ts';

describe('roofline kernels', () => {
  it('measures read bandwidth, and the GPU checksum equals the CPU sum of the buffer', async () => {
    const { device } = await createGpuContext();
    try {
      const t0 = performance.now();
      const r = await measureBandwidth(device, { bytes: 16 * 1024 * 1024, trials: 3 });
      const ms = performance.now() - t0;
      expect(r.bytes).toBeGreaterThan(8 * 1024 * 1024);
      expect(r.bytes).toBeLessThanOrEqual(16 * 1024 * 1024);
      expect(r.checksum).toBe(hashSumU32(r.bytes / 4));
      expect(Number.isFinite(r.GBs) && r.GBs > 0).toBe(true);
      // A sanity ceiling: no device reads 100 TB/s; a result like that means the kernel did no work.
      expect(r.GBs).toBeLessThan(100_000);
      expect(r.bestMs).toBeGreaterThan(0);
      expect(['timestamp-query', 'wall-clock']).toContain(r.timing);
      console.log(
        `bandwidth ${r.GBs.toFixed(2)} GB/s (${r.bytes} bytes, ${r.timing}, ${ms.toFixed(0)} ms in all)`,
      );
    } finally {
      device.destroy();
    }
  });

  it('the default size on a software adapter finishes in a few seconds', async (ctx) => {
    const { device, info } = await createGpuContext();
    try {
      const software =
        info.isFallback || /swiftshader|llvmpipe|lavapipe/i.test(`${info.vendor} ${info.architecture}`);
      expect(isSoftwareDevice(device)).toBe(software);
      ctx.skip(!software, 'a hardware adapter: the time limit is for software ones');
      const t0 = performance.now();
      const r = await measureBandwidth(device);
      expect(r.bytes).toBe(64 * 1024 * 1024);
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      device.destroy();
    }
  });

  it('measures f32 matmul throughput with a correct product (both tile sizes)', async () => {
    const { device } = await createGpuContext();
    try {
      for (const tile of [8, 16] as const) {
        const r = await measureMatmul(device, { n: 128, tile, trials: 2 });
        expect(r.n).toBe(128);
        expect(r.maxRelError).toBe(0); // small integers / 64: exact in f32
        expect(Number.isFinite(r.GFLOPs) && r.GFLOPs > 0).toBe(true);
        expect(r.GFLOPs).toBeLessThan(1_000_000);
        console.log(`matmul tile ${tile}: ${r.GFLOPs.toFixed(3)} GFLOP/s (${r.timing})`);
      }
    } finally {
      device.destroy();
    }
  });
});
