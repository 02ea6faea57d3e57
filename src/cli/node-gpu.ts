/**
 * Node runtime setup for the `webgpu` package (Dawn): points Vulkan at SwiftShader when no driver is
 * configured and Debian's Chromium ships one, so the CLI and Node tests run without a GPU; and, when Dawn
 * finds no adapter, says what this machine lacks (the Vulkan loader, with the command that installs it, or
 * a driver) instead of the browser's advice.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineError, isEngineError } from '../core/errors.ts';

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

/** Folders where a Linux dynamic loader finds libraries without configuration (glibc's and multiarch). */
export const VULKAN_LOADER_DIRS = [
  '/lib/x86_64-linux-gnu',
  '/usr/lib/x86_64-linux-gnu',
  '/lib/aarch64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/lib64',
  '/usr/lib64',
  '/lib',
  '/usr/lib',
  '/usr/local/lib',
];

/** The Vulkan loader's file name on Linux (what Dawn opens). */
export const VULKAN_LOADER = 'libvulkan.so.1';

/**
 * Where the Vulkan loader (`libvulkan.so.1`) is on Linux, or undefined when it is not installed: the
 * folders of `LD_LIBRARY_PATH`, then `ldconfig -p`'s cache, then {@link VULKAN_LOADER_DIRS}.
 * @param opts.env the environment (reads `LD_LIBRARY_PATH`); `opts.ldconfig` the text of `ldconfig -p`
 *   (default: runs it; none where it cannot run); `opts.dirs` the folders tried last. For tests.
 */
export function findVulkanLoader(
  opts: { env?: NodeJS.ProcessEnv; ldconfig?: () => string; dirs?: readonly string[] } = {},
): string | undefined {
  const env = opts.env ?? process.env;
  for (const d of (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean)) {
    const p = join(d, VULKAN_LOADER);
    if (existsSync(p)) return p;
  }
  const ldconfig =
    opts.ldconfig ??
    (() => {
      for (const bin of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
        try {
          return execFileSync(bin, ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
        } catch {
          // Not there, or not allowed: try the next one, then the folders.
        }
      }
      return '';
    });
  const m = ldconfig().match(/^\s*libvulkan\.so\.1\s.*=>\s*(\S+)\s*$/m);
  if (m && existsSync(m[1])) return m[1];
  for (const d of opts.dirs ?? VULKAN_LOADER_DIRS) {
    const p = join(d, VULKAN_LOADER);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/** What the Node runtime says when Dawn finds no adapter, per platform and what is installed. */
export function nodeNoAdapterMessage(opts: {
  platform: NodeJS.Platform;
  /** The Vulkan loader's path (Linux), undefined when it is not installed. */
  loader?: string;
  /** The Vulkan driver in use: `VK_ICD_FILENAMES`, or 'system' (setupNodeVulkan's answer). */
  driver?: string;
}): string {
  const head = 'No WebGPU adapter in Node (Dawn, the `webgpu` package)';
  if (opts.platform === 'linux') {
    if (!opts.loader)
      return (
        `${head}: the Vulkan loader (${VULKAN_LOADER}) is not installed. Install it: ` +
        '`apt-get install libvulkan1` (Debian, Ubuntu), `dnf install vulkan-loader` (Fedora), ' +
        '`pacman -S vulkan-icd-loader` (Arch); or use --runtime browser'
      );
    const driver =
      opts.driver && opts.driver !== 'system'
        ? `the Vulkan driver VK_ICD_FILENAMES=${opts.driver === 'swiftshader' ? SWIFTSHADER_ICD : opts.driver} gave none`
        : `no Vulkan driver answered (with no GPU, Debian's chromium package ships SwiftShader's: ${SWIFTSHADER_ICD}; ` +
          'or `apt-get install mesa-vulkan-drivers`)';
    return `${head}: the Vulkan loader is ${opts.loader}, but ${driver}; or use --runtime browser`;
  }
  if (opts.platform === 'darwin')
    return `${head}: Metal gave no adapter (macOS 10.15 or newer with a Metal GPU is needed); or use --runtime browser`;
  if (opts.platform === 'win32')
    return `${head}: neither D3D12 nor Vulkan gave an adapter (update the GPU driver); or use --runtime browser`;
  return `${head} on ${opts.platform}; use --runtime browser`;
}

/**
 * For the Node runtime: turns the engine's "no WebGPU adapter" error into one that says what is missing on
 * this machine (on Linux: the Vulkan loader, with the command that installs it, or a driver); any other
 * error is returned as it is.
 * @param driver what {@link setupNodeVulkan} returned.
 */
export function explainNodeNoAdapter(
  e: unknown,
  driver: string,
  opts: { platform?: NodeJS.Platform; findLoader?: () => string | undefined } = {},
): unknown {
  if (!isEngineError(e, 'webgpu_unavailable') || !/No WebGPU adapter/.test(e.message)) return e;
  const platform = opts.platform ?? process.platform;
  const loader = platform === 'linux' ? (opts.findLoader ?? findVulkanLoader)() : undefined;
  return new EngineError('webgpu_unavailable', nodeNoAdapterMessage({ platform, loader, driver }), {
    cause: e,
  });
}
