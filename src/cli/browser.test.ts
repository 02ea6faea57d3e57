import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BASE_CHROMIUM_ARGS,
  BrowserNotFoundError,
  chromiumArgs,
  GPU_CHROMIUM_ARGS,
  gpuChromiumArgs,
  resolveChromium,
} from './browser.ts';

const dir = mkdtempSync(join(tmpdir(), 'browser-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Creates an empty file standing in for a browser executable. */
function fakeBrowser(name: string): string {
  const p = join(dir, name);
  writeFileSync(p, '');
  return p;
}
const missing = join(dir, 'does-not-exist');

const explicit = fakeBrowser('explicit');
const fromEnv = fakeBrowser('from-env');
const managed = fakeBrowser('playwright');
const system1 = fakeBrowser('system-1');
const system2 = fakeBrowser('system-2');
const everywhere = { playwrightPath: () => managed, systemPaths: [system1, system2] };

describe('resolveChromium', () => {
  it('takes an explicit path over everything else', () => {
    expect(resolveChromium(explicit, { CHROMIUM_PATH: fromEnv }, everywhere)).toEqual({
      path: explicit,
      source: 'option',
    });
  });

  it('takes CHROMIUM_PATH over a Playwright-managed or system browser', () => {
    expect(resolveChromium(undefined, { CHROMIUM_PATH: fromEnv }, everywhere)).toEqual({
      path: fromEnv,
      source: 'CHROMIUM_PATH',
    });
  });

  it("takes Playwright's browser over the system's", () => {
    expect(resolveChromium(undefined, {}, everywhere)).toEqual({ path: managed, source: 'playwright' });
  });

  it('falls back to the first system path that exists', () => {
    expect(
      resolveChromium(undefined, {}, { playwrightPath: () => undefined, systemPaths: [missing, system2] }),
    ).toEqual({ path: system2, source: 'system' });
  });

  it('skips a Playwright path that is not on disk', () => {
    expect(
      resolveChromium(undefined, {}, { playwrightPath: () => missing, systemPaths: [system1] }).source,
    ).toBe('system');
  });

  it('ignores an empty CHROMIUM_PATH', () => {
    expect(resolveChromium(undefined, { CHROMIUM_PATH: '' }, everywhere).source).toBe('playwright');
  });

  it('fails on an explicit path that does not exist, naming it, without falling back', () => {
    expect(() => resolveChromium(missing, { CHROMIUM_PATH: fromEnv }, everywhere)).toThrow(
      BrowserNotFoundError,
    );
    expect(() => resolveChromium(missing, {}, everywhere)).toThrow(missing);
  });

  it('fails on a CHROMIUM_PATH that does not exist, naming it, without falling back', () => {
    expect(() => resolveChromium(undefined, { CHROMIUM_PATH: missing }, everywhere)).toThrow(
      `CHROMIUM_PATH=${missing} does not exist`,
    );
  });

  it('names every way to get a browser when none exists', () => {
    let err: unknown;
    try {
      resolveChromium(undefined, {}, { playwrightPath: () => undefined, systemPaths: [missing] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BrowserNotFoundError);
    const msg = (err as Error).message;
    expect((err as Error).name).toBe('BrowserNotFoundError');
    expect(msg).toContain('CHROMIUM_PATH');
    expect(msg).toContain('--chromium');
    expect(msg).toContain('apt-get install chromium');
    expect(msg).toContain('npx playwright install chromium');
  });

  it('finds some browser with the real defaults on this machine, or says how to get one', () => {
    try {
      const r = resolveChromium(undefined, {});
      expect(['playwright', 'system']).toContain(r.source);
    } catch (e) {
      expect(e).toBeInstanceOf(BrowserNotFoundError);
    }
  });
});

describe('chromiumArgs', () => {
  it('turns WebGPU on and keeps the browser off the network by default', () => {
    const args = chromiumArgs();
    expect(args).toEqual(BASE_CHROMIUM_ARGS);
    expect(args).toContain('--enable-unsafe-webgpu');
    expect(args).toContain('--disable-background-networking');
    expect(args).not.toContain('--disable-webgpu');
  });

  it('adds the hardware-GPU flags with gpu: true', () => {
    const args = chromiumArgs({ gpu: true, platform: 'linux' });
    for (const a of GPU_CHROMIUM_ARGS) expect(args).toContain(a);
    expect(args).toContain('--enable-unsafe-webgpu');
  });

  it("gpu: true per platform: Vulkan on Linux, ANGLE on Metal on macOS (no Vulkan flag), Windows' defaults", () => {
    const linux = chromiumArgs({ gpu: true, platform: 'linux' });
    expect(linux).toEqual([...chromiumArgs(), ...GPU_CHROMIUM_ARGS]);
    const mac = chromiumArgs({ gpu: true, platform: 'darwin' });
    expect(mac).toEqual([
      ...chromiumArgs(),
      '--use-angle=metal',
      '--ignore-gpu-blocklist',
      '--enable-dawn-features=allow_unsafe_apis',
    ]);
    expect(mac.join(' ')).not.toMatch(/vulkan/i);
    const win = chromiumArgs({ gpu: true, platform: 'win32' });
    expect(win).toEqual([
      ...chromiumArgs(),
      '--ignore-gpu-blocklist',
      '--enable-dawn-features=allow_unsafe_apis',
    ]);
    expect(gpuChromiumArgs('linux')).not.toBe(GPU_CHROMIUM_ARGS);
  });

  it('swaps --enable-unsafe-webgpu for --disable-webgpu with disableWebGPU: true', () => {
    const args = chromiumArgs({ disableWebGPU: true });
    expect(args).toContain('--disable-webgpu');
    expect(args).not.toContain('--enable-unsafe-webgpu');
    expect(args).toContain('--no-sandbox');
  });

  it('returns a fresh array and never changes the shared defaults', () => {
    const before = [...BASE_CHROMIUM_ARGS];
    chromiumArgs({ gpu: true, disableWebGPU: true }).push('--x');
    expect(BASE_CHROMIUM_ARGS).toEqual(before);
    expect(chromiumArgs()).not.toBe(chromiumArgs());
  });
});
