/**
 * The Node runtime without a usable Vulkan (src/cli/node-gpu.ts): the loader is found where the dynamic
 * linker would find it, and "no adapter" says what is missing on this machine, with the command that
 * installs it, never the browser's "enable chrome://flags".
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { noAdapterMessage } from '../webgpu/device.ts';
import {
  explainNodeNoAdapter,
  findVulkanLoader,
  nodeNoAdapterMessage,
  SWIFTSHADER_ICD,
  VULKAN_LOADER,
} from './node-gpu.ts';

const tempDir = useTempDirs();
const ROOT = resolve(import.meta.dirname, '../..');

/** A folder holding a (fake) libvulkan.so.1. */
function withLoader(): string {
  const d = tempDir('vk-loader-');
  writeFileSync(join(d, VULKAN_LOADER), '');
  return d;
}

describe('findVulkanLoader', () => {
  it('LD_LIBRARY_PATH first, then ldconfig -p, then the standard folders; undefined when absent', () => {
    const a = withLoader();
    const b = withLoader();
    const empty = tempDir('vk-none-');
    const none = { env: {}, ldconfig: () => '', dirs: [empty] };
    expect(findVulkanLoader(none)).toBeUndefined();
    expect(findVulkanLoader({ ...none, env: { LD_LIBRARY_PATH: `${empty}:${a}` } })).toBe(
      join(a, VULKAN_LOADER),
    );
    const cache = `12 libs found in cache \`/etc/ld.so.cache'\n\tlibvulkan.so.1 (libc6,x86-64) => ${join(b, VULKAN_LOADER)}\n`;
    expect(findVulkanLoader({ ...none, ldconfig: () => cache })).toBe(join(b, VULKAN_LOADER));
    // A cache entry whose file is gone does not count.
    expect(findVulkanLoader({ ...none, ldconfig: () => cache.replace(b, empty) })).toBeUndefined();
    expect(findVulkanLoader({ ...none, dirs: [empty, b] })).toBe(join(b, VULKAN_LOADER));
  });
});

describe('no adapter in Node', () => {
  it('no loader on Linux: names the package to install, not chrome://flags', () => {
    const m = nodeNoAdapterMessage({ platform: 'linux', driver: 'swiftshader' });
    expect(m).toContain('the Vulkan loader (libvulkan.so.1) is not installed');
    expect(m).toContain('`apt-get install libvulkan1`');
    expect(m).toContain('`dnf install vulkan-loader`');
    expect(m).not.toMatch(/chrome:\/\/flags/);
  });

  it('a loader but no driver: names the driver that gave none, or how to get one', () => {
    expect(
      nodeNoAdapterMessage({ platform: 'linux', loader: '/x/libvulkan.so.1', driver: 'swiftshader' }),
    ).toBe(
      `No WebGPU adapter in Node (Dawn, the \`webgpu\` package): the Vulkan loader is /x/libvulkan.so.1, but the Vulkan driver VK_ICD_FILENAMES=${SWIFTSHADER_ICD} gave none; or use --runtime browser`,
    );
    expect(
      nodeNoAdapterMessage({ platform: 'linux', loader: '/x/libvulkan.so.1', driver: 'system' }),
    ).toMatch(/no Vulkan driver answered .*mesa-vulkan-drivers/);
    expect(nodeNoAdapterMessage({ platform: 'darwin' })).toMatch(/Metal gave no adapter/);
    expect(nodeNoAdapterMessage({ platform: 'win32' })).toMatch(/D3D12/);
  });

  it("explainNodeNoAdapter rewrites the engine's no-adapter error, typed, and passes anything else", () => {
    // What src/webgpu/device.ts throws in Node, which by itself no longer says chrome://flags either.
    const raw = new EngineError('webgpu_unavailable', noAdapterMessage('node'));
    expect(raw.message).toContain('`apt-get install libvulkan1`');
    expect(raw.message).not.toMatch(/chrome:\/\//);
    expect(noAdapterMessage('browser')).toMatch(/chrome:\/\/flags/);
    const e = explainNodeNoAdapter(raw, 'swiftshader', { platform: 'linux', findLoader: () => undefined });
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('webgpu_unavailable');
    expect((e as EngineError).message).toMatch(
      /libvulkan\.so\.1\) is not installed\. Install it: `apt-get install libvulkan1`/,
    );
    expect((e as EngineError).cause).toBe(raw);
    const other = new EngineError('gguf_invalid', 'x');
    expect(explainNodeNoAdapter(other, 'system', { platform: 'linux', findLoader: () => undefined })).toBe(
      other,
    );
  });

  it('generate --runtime node with a Vulkan driver that is not there: the typed error names it', async () => {
    const icd = join(tempDir('vk-icd-'), 'none_icd.json');
    const r = await new Promise<{ code: number; stderr: string }>((ok) =>
      execFile(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/cli/generate.ts',
          '--runtime',
          'node',
          '--model',
          'synthetic:stories260k-f32',
          '--prompt',
          'Once',
        ],
        { cwd: ROOT, timeout: 60_000, env: { ...process.env, VK_ICD_FILENAMES: icd } },
        (err, _out, stderr) => ok({ code: err ? Number(err.code) : 0, stderr }),
      ),
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `error [webgpu_unavailable]: No WebGPU adapter in Node (Dawn, the \`webgpu\` package): the Vulkan loader is `,
    );
    expect(r.stderr).toContain(`but the Vulkan driver VK_ICD_FILENAMES=${icd} gave none`);
    expect(r.stderr).not.toMatch(/chrome:\/\//);
  });
});
