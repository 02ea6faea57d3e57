import { describe, expect, it } from 'vitest';
import { fnv1a64 } from '../core/hash.ts';
import { sampleResult } from '../testing/sample-result.ts';
import { cpuBenchDevice } from './device.ts';
import { resultProblems } from './types.ts';

const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0';

describe('cpuBenchDevice', () => {
  it('names the CPU and hashes its cores and platform (not the browser version)', () => {
    const d = cpuBenchDevice(UA, 7);
    expect(d.vendor).toBe('cpu');
    expect(d.description).toBe('CPU, 7 logical cores (no WebGPU adapter)');
    expect(d.fingerprint).toBe(fnv1a64(JSON.stringify(['cpu-fp/1', 7, 'X11; Linux x86_64'])));
    expect(d.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    // A browser update keeps the id; another core count or platform changes it.
    expect(cpuBenchDevice(UA.replace('140.0.0.0', '141.0.0.0'), 7).fingerprint).toBe(d.fingerprint);
    expect(cpuBenchDevice(UA, 3).fingerprint).not.toBe(d.fingerprint);
    expect(
      cpuBenchDevice(UA.replace('X11; Linux x86_64', 'Windows NT 10.0; Win64; x64'), 7).fingerprint,
    ).not.toBe(d.fingerprint);
    expect(cpuBenchDevice(UA, 0).description).toBe('CPU (no WebGPU adapter)');
    expect(resultProblems({ ...sampleResult(), device: d, engine: 'wllama' })).toEqual([]);
  });
});
