/**
 * Node runtime setup for the `webgpu` package (Dawn): points Vulkan at SwiftShader when no driver is
 * configured and Debian's Chromium ships one, so the CLI and Node tests run without a GPU.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Vulkan ICD shipped with Debian's chromium package (SwiftShader, a CPU Vulkan driver). */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/**
 * Sets `VK_ICD_FILENAMES` to SwiftShader unless `gpu` is true or a driver is already chosen.
 * @returns which Vulkan driver will be used ('swiftshader', 'system' or the configured path).
 */
export function setupNodeVulkan(gpu = false): string {
  // Vulkan's WSI code complains ("XDG_RUNTIME_DIR is invalid or not set") when it is unset; compute needs
  // no display, so any private directory will do.
  if (!process.env.XDG_RUNTIME_DIR) {
    const dir = join(tmpdir(), `xdg-runtime-${process.getuid?.() ?? 'user'}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = dir;
  }
  if (process.env.VK_ICD_FILENAMES) return process.env.VK_ICD_FILENAMES;
  if (!gpu && existsSync(SWIFTSHADER_ICD)) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    return 'swiftshader';
  }
  return 'system';
}
