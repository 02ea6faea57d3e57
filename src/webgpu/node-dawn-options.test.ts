/**
 * `setNodeDawnOptions` (device.ts): the Dawn instance toggles Node's WebGPU is created with (the CLI's
 * `--gpu` turns the unsafe APIs on unless `--no-unsafe-apis`; the device scripts likewise): set before the
 * first `getGPU`, refused after it with other toggles, and the instance then made with them answers.
 * Its own file: the Node instance is made once per module graph.
 */
import { describe, expect, it } from 'vitest';
import { setupNodeVulkan } from '../cli/node-gpu.ts';
import { isEngineError } from '../core/errors.ts';
import { getGPU, nodeDawnToggles, setNodeDawnOptions } from './device.ts';

const UNSAFE = 'enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia';

describe('setNodeDawnOptions', () => {
  it('sets the toggles before the instance exists, then refuses others and keeps the instance’s', async () => {
    expect(nodeDawnToggles()).toEqual([]);
    setNodeDawnOptions({ unsafeApis: true });
    expect(nodeDawnToggles()).toEqual([UNSAFE]);
    setNodeDawnOptions({ unsafeApis: false });
    expect(nodeDawnToggles()).toEqual([]);
    setNodeDawnOptions({ unsafeApis: true });

    setupNodeVulkan();
    const gpu = await getGPU();
    // The instance made with the unsafe APIs answers on this machine's adapter.
    expect(await gpu.requestAdapter()).toBeTruthy();
    expect(await getGPU()).toBe(gpu);
    // The same toggles again: nothing to do; others: refused naming the instance's.
    expect(() => setNodeDawnOptions({ unsafeApis: true })).not.toThrow();
    let err: unknown;
    try {
      setNodeDawnOptions({});
    } catch (e) {
      err = e;
    }
    expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
    expect(String(err)).toContain(
      `the Node WebGPU instance already exists with toggles [${UNSAFE}]: set Dawn options before the first use`,
    );
    expect(nodeDawnToggles()).toEqual([UNSAFE]);
  });
});
