/**
 * The device run's first check (scripts/device/run.sh): which WebGPU adapter Dawn finds through the Vulkan
 * set-up as it stands, in a few seconds, so a run on a machine whose NVIDIA driver Vulkan cannot load stops
 * at once instead of spending its minutes on no GPU (or, with a software driver on the path, on SwiftShader).
 *
 *   node preflight.mjs [--gpu] [--json FILE]
 *
 * Prints one line `preflight: {…}` (the adapter's vendor, architecture, device, description, fallback flag,
 * subgroup-matrix configurations, the Vulkan loader and driver files in use) and exits
 *   0  an adapter was found (with --gpu: a hardware one),
 *   3  with --gpu, the adapter is a software one (gpu-report.ts `softwareReasons` says why),
 *   4  no adapter, or Dawn could not load.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { snapshotAdapter, softwareReasons } from '../../src/bench/gpu-report.ts';
import { findVulkanLoader, setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { getGPU, setNodeDawnOptions } from '../../src/webgpu/device.ts';

const { values } = parseArgs({
  options: {
    gpu: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});

const driver = setupNodeVulkan(values.gpu);
setNodeDawnOptions({ unsafeApis: values.gpu });
const env = process.env;
const result: Record<string, unknown> = {
  driver,
  loader: findVulkanLoader() ?? null,
  vkDriverFiles: env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES ?? null,
};
let code = 0;
try {
  const gpu = await getGPU();
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    result.error = 'no WebGPU adapter';
    code = 4;
  } else {
    const s = snapshotAdapter(adapter);
    const software = softwareReasons(s);
    Object.assign(result, {
      vendor: s.vendor,
      architecture: s.architecture,
      device: s.device,
      description: s.description,
      isFallbackAdapter: s.isFallbackAdapter,
      subgroupMatrixConfigs: s.subgroupMatrixConfigs ?? [],
      shaderF16: s.features.includes('shader-f16'),
      software,
    });
    if (values.gpu && software.length > 0) code = 3;
  }
} catch (e) {
  result.error = String((e as Error)?.message ?? e);
  code = 4;
}
result.exit = code;
console.log(`preflight: ${JSON.stringify(result)}`);
if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
// Dawn's instance can keep the process alive: leave with the verdict.
process.exit(code);
