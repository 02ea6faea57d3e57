import { describe, expect, it } from 'vitest';
import { WANTED_FEATURES } from '../webgpu/device.ts';
import {
  type AdapterSnapshot,
  explainProblem,
  isSoftwareAdapter,
  probeGpu,
  readReport,
  snapshotAdapter,
  softwareReasons,
} from './gpu-report.ts';

const hw: AdapterSnapshot = {
  vendor: 'nvidia',
  architecture: 'ada',
  device: '',
  description: 'NVIDIA GeForce RTX 4090',
  isFallbackAdapter: false,
  features: ['shader-f16', 'subgroups', 'timestamp-query'],
  limits: {
    maxBufferSize: 4294967292,
    maxStorageBufferBindingSize: 134217728,
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxComputeWorkgroupSizeX: 1024,
  },
};

describe("the report's features", () => {
  it('covers every feature the engine asks for', () => {
    expect(readReport(hw).features.map((f) => f.name)).toEqual([...WANTED_FEATURES]);
  });
});

describe('software adapters', () => {
  it('are recognised by the fallback flag', () => {
    expect(softwareReasons({ ...hw, isFallbackAdapter: true })).toEqual([
      'the adapter reports isFallbackAdapter',
    ]);
  });

  it('are recognised by SwiftShader (or another CPU rasterizer) in any name field', () => {
    expect(isSoftwareAdapter({ ...hw, vendor: 'google', architecture: 'swiftshader', description: '' })).toBe(
      true,
    );
    expect(isSoftwareAdapter({ ...hw, description: 'SwiftShader Device (Subzero)' })).toBe(true);
    expect(isSoftwareAdapter({ ...hw, description: 'llvmpipe (LLVM 15.0.6, 256 bits)' })).toBe(true);
    expect(isSoftwareAdapter({ ...hw, description: 'Microsoft Basic Render Driver' })).toBe(true);
    expect(softwareReasons({ ...hw, architecture: 'swiftshader' })).toEqual([
      'its architecture names swiftshader',
    ]);
  });

  it('are not confused with GPUs', () => {
    expect(isSoftwareAdapter(hw)).toBe(false);
    expect(
      isSoftwareAdapter({ ...hw, vendor: 'apple', architecture: 'metal-3', description: 'Apple M2' }),
    ).toBe(false);
  });
});

describe('snapshotAdapter', () => {
  /** Like GPUSupportedLimits: limits are getters on the prototype, not own properties. */
  class FakeLimits {
    get maxBufferSize() {
      return 268435456;
    }
    get maxComputeWorkgroupSizeX() {
      return 256;
    }
  }
  for (const k of ['maxBufferSize', 'maxComputeWorkgroupSizeX'])
    Object.defineProperty(FakeLimits.prototype, k, {
      ...Object.getOwnPropertyDescriptor(FakeLimits.prototype, k),
      enumerable: true,
    });

  it('reads info, fallback flag, sorted features and prototype-getter limits', () => {
    const s = snapshotAdapter({
      info: {
        vendor: 'google',
        architecture: 'swiftshader',
        device: '',
        description: '',
        isFallbackAdapter: true,
      },
      features: new Set(['timestamp-query', 'subgroups']),
      limits: new FakeLimits(),
    });
    expect(s).toEqual({
      vendor: 'google',
      architecture: 'swiftshader',
      device: '',
      description: '',
      isFallbackAdapter: true,
      features: ['subgroups', 'timestamp-query'],
      limits: { maxBufferSize: 268435456, maxComputeWorkgroupSizeX: 256 },
    });
  });

  it('takes the older adapter.isFallbackAdapter and fills missing info with empty strings', () => {
    const s = snapshotAdapter({ isFallbackAdapter: true, features: [], limits: {} });
    expect(s.isFallbackAdapter).toBe(true);
    expect([s.vendor, s.architecture, s.device, s.description]).toEqual(['', '', '', '']);
  });
});

describe('readReport', () => {
  const texts = (s: AdapterSnapshot) => readReport(s).readings.map((r) => r.text);

  it('warns that a software adapter does not measure a GPU, and why', () => {
    const r = readReport({ ...hw, architecture: 'swiftshader', isFallbackAdapter: true });
    expect(r.software).toBe(true);
    expect(r.readings[0]).toMatchObject({
      level: 'warn',
      text: 'Software adapter: numbers will not reflect a GPU.',
    });
    expect(r.readings[0].detail).toContain('isFallbackAdapter');
    expect(r.readings[0].detail).toContain('swiftshader');
  });

  it('says a hardware adapter measures the GPU', () => {
    expect(readReport(hw).software).toBe(false);
    expect(texts(hw)[0]).toBe('Hardware adapter: benchmark numbers reflect this GPU.');
  });

  it('explains each missing LLM feature', () => {
    const t = texts({ ...hw, features: [] });
    expect(t).toContain(
      "No shader-f16: WebLLM's f16 models cannot run; our engine does not need it (it unpacks f16 weights and the f16 KV cache to f32).",
    );
    expect(t.some((x) => x.startsWith('No subgroups:'))).toBe(true);
    expect(t.some((x) => x.startsWith('No timestamp-query:'))).toBe(true);
    expect(readReport({ ...hw, features: [] }).features.every((f) => !f.present)).toBe(true);
  });

  it('says nothing is missing when everything is there', () => {
    const all = {
      ...hw,
      features: [...hw.features, 'chromium-experimental-subgroup-matrix'],
      subgroupMatrixConfigs: ['f16→f32 16x16x16'],
    };
    const t = texts(all);
    expect(t.filter((x) => x.startsWith('No '))).toEqual([]);
    expect(t).toContain("shader-f16: WebLLM's f16 models can run; our engine computes in f32 either way.");
    expect(t.some((x) => x.startsWith('Subgroup matrices (matrix units): f16→f32 16x16x16.'))).toBe(true);
    expect(readReport(all).features.map((f) => [f.name, f.present])).toEqual([
      ['shader-f16', true],
      ['subgroups', true],
      ['timestamp-query', true],
      ['chromium-experimental-subgroup-matrix', true],
    ]);
  });

  it('reads the binding and buffer limits in human units', () => {
    const t = texts(hw);
    expect(t).toContain(
      'maxStorageBufferBindingSize 128 MiB: tensors larger than this are split across bindings.',
    );
    expect(t).toContain('maxBufferSize ~4 GiB: no single GPU buffer can be larger.');
  });

  it('lists the five limits in order, bytes in binary units and counts as numbers', () => {
    expect(readReport(hw).limits.map((l) => [l.name, l.shown])).toEqual([
      ['maxBufferSize', '~4 GiB'],
      ['maxStorageBufferBindingSize', '128 MiB'],
      ['maxComputeWorkgroupStorageSize', '32 KiB'],
      ['maxComputeInvocationsPerWorkgroup', '1,024'],
      ['maxComputeWorkgroupSizeX', '1,024'],
    ]);
  });

  it('copes with an adapter that omits a limit', () => {
    const r = readReport({ ...hw, limits: {} });
    expect(r.limits[0]).toMatchObject({ value: undefined, shown: 'not reported' });
    expect(r.readings.some((x) => x.text.startsWith('maxStorageBufferBindingSize'))).toBe(false);
  });
});

/** A fake adapter whose requestDevice does what `device` says. */
function fakeAdapter(
  device: 'ok' | 'reject' | 'lost',
  features: string[] = ['subgroups', 'shader-f16', 'depth-clip-control'],
) {
  const calls: GPUDeviceDescriptor[] = [];
  let destroyed = 0;
  const adapter = {
    info: { vendor: 'v', architecture: 'a', device: '', description: '' },
    features: new Set(features),
    limits: { maxBufferSize: 1024 },
    async requestDevice(desc: GPUDeviceDescriptor) {
      calls.push(desc);
      if (device === 'reject') throw new DOMException('no device for you', 'OperationError');
      const lost =
        device === 'lost'
          ? Promise.resolve({ reason: 'unknown', message: 'GPU process gone' })
          : new Promise<never>(() => {});
      return {
        lost,
        destroy() {
          destroyed++;
        },
      };
    },
  };
  return { adapter: adapter as unknown as GPUAdapter, calls, destroyed: () => destroyed };
}

describe('probeGpu', () => {
  it('says when navigator.gpu is missing, and whether the context was secure', async () => {
    expect(await probeGpu({ gpu: undefined, isSecureContext: false })).toEqual({
      status: 'no-webgpu',
      secureContext: false,
    });
    expect(await probeGpu({ gpu: undefined, isSecureContext: true })).toEqual({
      status: 'no-webgpu',
      secureContext: true,
    });
  });

  it('says when there is no adapter', async () => {
    expect(await probeGpu({ gpu: { requestAdapter: async () => null }, isSecureContext: true })).toEqual({
      status: 'no-adapter',
    });
  });

  it('treats a requestAdapter that throws as no adapter, keeping the error', async () => {
    const gpu = {
      requestAdapter: async (): Promise<GPUAdapter | null> => {
        throw new TypeError('bad options');
      },
    };
    expect(await probeGpu({ gpu, isSecureContext: true })).toEqual({
      status: 'no-adapter',
      error: 'TypeError: bad options',
    });
  });

  it('asks for a high-performance adapter and a device with the LLM features it offers, then frees it', async () => {
    const fake = fakeAdapter('ok');
    let options: GPURequestAdapterOptions | undefined;
    const p = await probeGpu({
      gpu: {
        requestAdapter: async (o) => {
          options = o;
          return fake.adapter;
        },
      },
      isSecureContext: true,
    });
    expect(options?.powerPreference).toBe('high-performance');
    expect(p.status).toBe('ok');
    expect(p.status === 'ok' && p.adapter.features).toEqual([
      'depth-clip-control',
      'shader-f16',
      'subgroups',
    ]);
    expect(fake.calls[0].requiredFeatures).toEqual(['shader-f16', 'subgroups']);
    expect(fake.destroyed()).toBe(1);
  });

  it('reports a rejected device request with the adapter and the error', async () => {
    const fake = fakeAdapter('reject');
    const p = await probeGpu({ gpu: { requestAdapter: async () => fake.adapter }, isSecureContext: true });
    expect(p).toMatchObject({
      status: 'device-failed',
      adapter: { vendor: 'v' },
      error: 'OperationError: no device for you',
    });
  });

  it('reports a device that comes back already lost as a failed request', async () => {
    const fake = fakeAdapter('lost');
    const p = await probeGpu({ gpu: { requestAdapter: async () => fake.adapter }, isSecureContext: true });
    expect(p.status).toBe('device-failed');
    expect(p.status === 'device-failed' && p.error).toContain('GPU process gone');
  });
});

describe('explainProblem', () => {
  it('tells an insecure context from a browser without WebGPU', () => {
    const insecure = explainProblem({ status: 'no-webgpu', secureContext: false });
    expect(insecure.title).toBe('WebGPU needs a secure context');
    expect(insecure.actions.join(' ')).toMatch(/https/);
    expect(insecure.actions.join(' ')).toMatch(/localhost/);
    const old = explainProblem({ status: 'no-webgpu', secureContext: true });
    expect(old.title).toBe('This browser has no WebGPU');
    expect(old.detail).toContain('navigator.gpu is missing');
  });

  it('points a missing adapter at chrome://gpu, flags and drivers', () => {
    const x = explainProblem({ status: 'no-adapter' });
    expect(x.title).toBe('WebGPU is present but gave no adapter');
    const all = x.actions.join(' ');
    expect(all).toContain('chrome://gpu');
    expect(all).toContain('--disable-webgpu');
    expect(all).toMatch(/driver/);
    expect(explainProblem({ status: 'no-adapter', error: 'TypeError: x' }).detail).toContain('TypeError: x');
  });

  it('quotes the device error and suggests a reload', () => {
    const x = explainProblem({ status: 'device-failed', adapter: hw, error: 'OperationError: boom' });
    expect(x.detail).toContain('OperationError: boom');
    expect(x.actions[0]).toMatch(/Reload/);
  });
});
