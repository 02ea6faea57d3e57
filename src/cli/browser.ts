/**
 * Finding and launching a Chromium with WebGPU for tests and the command-line tools (Node only).
 *
 * Resolution order: an explicit path or `CHROMIUM_PATH`, then a Playwright-managed Chromium if one is
 * installed, then the system's `/usr/bin/chromium`. Flags keep the browser off the network; `gpu: true`
 * adds what a real GPU needs on Linux (docs/gpu-ci.md, "Only a software adapter", says why each flag).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, LaunchOptions } from 'playwright';
import { UsageError } from './args.ts';

/**
 * Thrown when no Chromium can be found, or the one given does not start; the message lists the ways to get
 * one. A usage error: the commands exit 2 with `error [invalid_argument]: …`.
 */
export class BrowserNotFoundError extends UsageError {
  override name = 'BrowserNotFoundError';
}

/** Where the resolved browser came from. */
export type BrowserSource = 'option' | 'CHROMIUM_PATH' | 'playwright' | 'system';

/** System locations tried last, in order. */
export const SYSTEM_CHROMIUM_PATHS = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
];

function playwrightManagedChromium(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const { chromium } = require('playwright-core') as typeof import('playwright-core');
    const p = chromium.executablePath();
    return p && existsSync(p) ? p : undefined;
  } catch {
    return undefined;
  }
}

/** Where {@link resolveChromium} looks after the option and `CHROMIUM_PATH` (replaceable in tests). */
export interface BrowserLookup {
  /** The Playwright-managed Chromium's path, if one is installed (default: asks playwright-core). */
  playwrightPath?: () => string | undefined;
  /** System locations, tried in order (default: {@link SYSTEM_CHROMIUM_PATHS}). */
  systemPaths?: readonly string[];
}

/**
 * Resolves the Chromium executable.
 * @param explicit a path given on the command line (wins over everything).
 * @param env the environment (reads `CHROMIUM_PATH`).
 * @param lookup where to look for Playwright's and the system's Chromium (defaults are the real places).
 * @throws BrowserNotFoundError naming the ways to get a browser, or when an explicit path does not exist.
 */
export function resolveChromium(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
  lookup: BrowserLookup = {},
): { path: string; source: BrowserSource } {
  if (explicit) {
    if (!existsSync(explicit))
      throw new BrowserNotFoundError(`Chromium not found at ${explicit} (given as an option).`);
    return { path: explicit, source: 'option' };
  }
  const fromEnv = env.CHROMIUM_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new BrowserNotFoundError(`CHROMIUM_PATH=${fromEnv} does not exist.`);
    return { path: fromEnv, source: 'CHROMIUM_PATH' };
  }
  const managed = (lookup.playwrightPath ?? playwrightManagedChromium)();
  if (managed && existsSync(managed)) return { path: managed, source: 'playwright' };
  for (const p of lookup.systemPaths ?? SYSTEM_CHROMIUM_PATHS)
    if (existsSync(p)) return { path: p, source: 'system' };
  throw new BrowserNotFoundError(
    'No Chromium with WebGPU found. Either: set CHROMIUM_PATH=/path/to/chrome; or pass --chromium PATH; ' +
      "or install Debian's package (`apt-get install chromium`, giving /usr/bin/chromium); " +
      'or, where the network allows, `npx playwright install chromium`.',
  );
}

/**
 * Launches the resolved Chromium ({@link resolveChromium}) through Playwright; a browser that does not
 * start (not an executable, a crash at start) is said in one line naming the path and where it came from,
 * not Playwright's launch log (its first line is kept).
 * @throws BrowserNotFoundError as resolveChromium, or when the browser does not start.
 */
export async function launchChromium(
  launch: (o: LaunchOptions) => Promise<Browser>,
  explicit: string | undefined,
  options: Omit<LaunchOptions, 'executablePath'>,
): Promise<Browser> {
  const { path, source } = resolveChromium(explicit);
  try {
    return await launch({ ...options, executablePath: path });
  } catch (e) {
    const first = String((e as Error)?.message ?? e).split('\n')[0];
    throw new BrowserNotFoundError(
      `Chromium at ${path} (${source === 'option' ? 'given as an option' : `from ${source}`}) did not start: ${first}`,
      { cause: e },
    );
  }
}

/** Flags that keep a headless Chromium from making outside connections, with WebGPU on. */
export const BASE_CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Extra flags for a hardware GPU on Linux (Vulkan through ANGLE, GPU blocklist ignored). */
export const GPU_CHROMIUM_ARGS = [
  '--use-angle=vulkan',
  '--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan',
  '--disable-vulkan-surface',
  '--ignore-gpu-blocklist',
  '--enable-dawn-features=allow_unsafe_apis',
];

/**
 * The hardware-GPU flags for a platform: Linux's Vulkan ones ({@link GPU_CHROMIUM_ARGS}); on macOS ANGLE on
 * Metal (the Vulkan flags name a backend macOS lacks); on Windows only the blocklist and Dawn flags (D3D12
 * is the default there). Their sources: docs/gpu-ci.md, "Only a software adapter"; macOS and Windows not run
 * on a GPU here.
 */
export function gpuChromiumArgs(platform: NodeJS.Platform = process.platform): string[] {
  if (platform === 'darwin')
    return ['--use-angle=metal', '--ignore-gpu-blocklist', '--enable-dawn-features=allow_unsafe_apis'];
  if (platform === 'win32') return ['--ignore-gpu-blocklist', '--enable-dawn-features=allow_unsafe_apis'];
  return [...GPU_CHROMIUM_ARGS];
}

/**
 * Command-line flags for launching Chromium.
 * @param opts.gpu add the hardware-GPU flags ({@link gpuChromiumArgs} for `opts.platform`).
 * @param opts.disableWebGPU launch with WebGPU off (`--disable-webgpu`), used to test the "no adapter" path.
 * @param opts.platform the platform whose GPU flags to use (default: this one).
 */
export function chromiumArgs(
  opts: { gpu?: boolean; disableWebGPU?: boolean; platform?: NodeJS.Platform } = {},
): string[] {
  const args = [...BASE_CHROMIUM_ARGS];
  if (opts.gpu) args.push(...gpuChromiumArgs(opts.platform));
  if (opts.disableWebGPU) {
    args.splice(args.indexOf('--enable-unsafe-webgpu'), 1);
    args.push('--disable-webgpu');
  }
  return args;
}
