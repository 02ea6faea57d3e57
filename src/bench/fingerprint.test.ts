import { describe, expect, it } from 'vitest';
import { fnv1a64 } from '../core/hash.ts';
import { deviceFingerprint, deviceLabel, FINGERPRINT_VERSION, fingerprintInputs } from './fingerprint.ts';
import type { AdapterSnapshot } from './gpu-report.ts';

const swiftshader: AdapterSnapshot = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: '',
  isFallbackAdapter: true,
  features: ['depth-clip-control', 'subgroups', 'timestamp-query'],
  limits: {
    maxBufferSize: 1073741824,
    maxStorageBufferBindingSize: 1073741824,
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupSizeX: 256,
    maxTextureDimension2D: 8192,
  },
};

const rtx: AdapterSnapshot = {
  vendor: 'nvidia',
  architecture: 'ada',
  device: '0x2684',
  description: 'NVIDIA GeForce RTX 4090',
  isFallbackAdapter: false,
  features: ['shader-f16', 'subgroups', 'timestamp-query'],
  limits: {
    maxBufferSize: 4294967292,
    maxStorageBufferBindingSize: 2147483644,
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxComputeWorkgroupSizeX: 1024,
  },
};

describe('fnv1a64', () => {
  it('matches the published FNV-1a 64-bit test vectors', () => {
    expect(fnv1a64('')).toBe('cbf29ce484222325');
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('foobar')).toBe('85944171f73967e8');
  });

  it('hashes UTF-8 bytes, not UTF-16 code units', () => {
    expect(fnv1a64('é')).not.toBe(fnv1a64('\u00e9'.normalize('NFD')));
    expect(fnv1a64('é')).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('deviceFingerprint', () => {
  it('is 16 hex digits and the same for the same adapter, every time', () => {
    const a = deviceFingerprint(swiftshader);
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect(deviceFingerprint(structuredClone(swiftshader))).toEqual(a);
  });

  it('is pinned, so a change to the inputs or hash is deliberate (bump FINGERPRINT_VERSION)', () => {
    expect(FINGERPRINT_VERSION).toBe('webgpu-fp/1');
    expect(deviceFingerprint(swiftshader).id).toBe(fnv1a64(fingerprintInputs(swiftshader)));
    expect(fingerprintInputs(swiftshader)).toBe(
      '["webgpu-fp/1","google","swiftshader","","",true,["subgroups","timestamp-query"],' +
        '[["maxBufferSize",1073741824],["maxStorageBufferBindingSize",1073741824],' +
        '["maxComputeWorkgroupStorageSize",32768],["maxComputeInvocationsPerWorkgroup",256],' +
        '["maxComputeWorkgroupSizeX",256]]]',
    );
  });

  it('does not depend on the order of features or limits, case, or surrounding spaces', () => {
    const shuffled: AdapterSnapshot = {
      ...swiftshader,
      vendor: ' Google ',
      features: [...swiftshader.features].reverse(),
      limits: Object.fromEntries(Object.entries(swiftshader.limits).reverse()),
    };
    expect(deviceFingerprint(shuffled).id).toBe(deviceFingerprint(swiftshader).id);
  });

  it('ignores features and limits the engine does not use', () => {
    const more: AdapterSnapshot = {
      ...swiftshader,
      features: [...swiftshader.features, 'chromium-experimental-something'],
      limits: { ...swiftshader.limits, maxTextureDimension2D: 16384, maxNewThing: 7 },
    };
    expect(deviceFingerprint(more).id).toBe(deviceFingerprint(swiftshader).id);
  });

  const changes: [string, Partial<AdapterSnapshot>][] = [
    ['vendor', { vendor: 'intel' }],
    ['architecture', { architecture: 'gen-12lp' }],
    ['device', { device: '0x1234' }],
    ['description', { description: 'SwiftShader Device (Subzero)' }],
    ['fallback flag', { isFallbackAdapter: false }],
    ['an LLM feature', { features: [...swiftshader.features, 'shader-f16'] }],
    ['a lost LLM feature', { features: ['depth-clip-control', 'subgroups'] }],
    ['maxBufferSize', { limits: { ...swiftshader.limits, maxBufferSize: 268435456 } }],
    [
      'maxStorageBufferBindingSize',
      { limits: { ...swiftshader.limits, maxStorageBufferBindingSize: 134217728 } },
    ],
    [
      'maxComputeWorkgroupStorageSize',
      { limits: { ...swiftshader.limits, maxComputeWorkgroupStorageSize: 16384 } },
    ],
    [
      'maxComputeInvocationsPerWorkgroup',
      { limits: { ...swiftshader.limits, maxComputeInvocationsPerWorkgroup: 1024 } },
    ],
    ['maxComputeWorkgroupSizeX', { limits: { ...swiftshader.limits, maxComputeWorkgroupSizeX: 1024 } }],
  ];
  it.each(changes)('changes when the %s changes', (_name, change) => {
    expect(deviceFingerprint({ ...swiftshader, ...change }).id).not.toBe(deviceFingerprint(swiftshader).id);
  });

  it('tells a missing limit from a zero one', () => {
    const { maxBufferSize: _, ...rest } = swiftshader.limits;
    const without = deviceFingerprint({ ...swiftshader, limits: rest }).id;
    const zero = deviceFingerprint({ ...swiftshader, limits: { ...rest, maxBufferSize: 0 } }).id;
    expect(without).not.toBe(zero);
  });

  it('gives different adapters different ids', () => {
    expect(deviceFingerprint(rtx).id).not.toBe(deviceFingerprint(swiftshader).id);
  });
});

describe('deviceLabel', () => {
  it('uses the description when there is one', () => {
    expect(deviceLabel(rtx)).toBe('NVIDIA GeForce RTX 4090');
  });

  it('falls back to vendor and architecture, and marks software adapters', () => {
    expect(deviceLabel(swiftshader)).toBe('google swiftshader (software)');
  });

  it('says so when the adapter reports nothing', () => {
    expect(deviceLabel({ ...rtx, vendor: '', architecture: '', device: '', description: '' })).toBe(
      'Unknown adapter',
    );
  });
});
