/**
 * Node runtime setup for the `webgpu` package (Dawn): points Vulkan at SwiftShader when no driver is
 * configured and Debian's Chromium ships one, so the CLI and Node tests run without a GPU.
 */
import { existsSync } from 'node:fs';

/** Vulkan ICD shipped with Debian's chromium package (SwiftShader, a CPU Vulkan driver). */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/**
 * Sets `VK_ICD_FILENAMES` to SwiftShader unless `gpu` is true or a driver is already chosen.
 * @returns which Vulkan driver will be used ('swiftshader', 'system' or the configured path).
 */
export function setupNodeVulkan(gpu = false): string {
  if (process.env.VK_ICD_FILENAMES) return process.env.VK_ICD_FILENAMES;
  if (!gpu && existsSync(SWIFTSHADER_ICD)) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    return 'swiftshader';
  }
  return 'system';
}
