/**
 * `--default-limits` (issue 18, item 1): `generate` (both runtimes) and `bench` run stories260K on a device
 * with only WebGPU's default limits, give llama.cpp's greedy tokens, and say (stderr) or record (the
 * result's model.limits) the limits used.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import type { BenchResult } from '../bench/types.ts';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import type { KernelsInfo } from '../webgpu/kernel-plan.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = stories260kPath();
const tmp = useTempDirs()('default-limits-');

function cli(
  script: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: ROOT, timeout: 240_000, maxBuffer: 16 << 20, env: { ...process.env, XDG_CACHE_HOME: tmp } },
      (err, stdout, stderr) =>
        ok({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

describe('--default-limits', () => {
  const c = golden.generation.cases[0];
  const common = ['--default-limits', '--model', MODEL, '--prompt', c.prompt, '--max-tokens', '16'];
  it.each(['node', 'browser'])('generate, runtime %s: llama.cpp tokens, the limits said', async (runtime) => {
    const out = join(tmp, `gen-${runtime}.json`);
    const r = await cli('src/cli/generate.ts', ['--runtime', runtime, ...common, '--json', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /limits: WebGPU defaults \(maxStorageBufferBindingSize 134217728, .*maxStorageBuffersPerShaderStage 8\)/,
    );
    expect(JSON.parse(readFileSync(out, 'utf8')).outputTokenIds).toEqual(c.outputIds.slice(0, 16));
  });

  it('bench: llama.cpp tokens, and model.limits in the result', async () => {
    const out = join(tmp, 'bench.json');
    const r = await cli('src/cli/bench.ts', [
      ...common,
      '--runs',
      '1',
      '--warmup',
      '0',
      '--no-roofline',
      '--no-cpu-match',
      '--json',
      out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    expect(j.model.limits).toMatchObject({
      defaultLimits: true,
      values: { maxStorageBufferBindingSize: 134217728, maxStorageBuffersPerShaderStage: 8 },
    });
    // The fused QKV kernel binds 9 storage buffers: on 8 it runs as two dispatches, or as three (one per
    // segment, which fit anyway) where decode splits its segments (software adapters: splitSegments).
    // Per layer: QKV ×2 or ×3, attention + its chunk combine, wo, ffn, down; then embed, output and the
    // argmax's two passes.
    const qkv = j.model.kernels?.splitSegments ? 3 : 2;
    expect(j.model.kernels?.dispatchesPerToken).toBe(4 + (qkv + 5) * 5);
    // The token pick as loaded (ModelInfo.kernels.argmax / .sampler): 512 logits are one stripe of 1,024.
    const k = j.model.kernels as KernelsInfo | undefined;
    expect(k?.argmax).toMatchObject({ stripes: Math.ceil(512 / 1024), stripe: 1024 });
    expect(k?.sampler?.requests.greedy).toEqual(['argmax_partials', 'argmax_final']);
    expect(k?.sampler?.passes.map((p) => p.role)).toEqual(['draw']);
    expect(j.runs[0].outputTokenIds).toEqual(c.outputIds.slice(0, 16));
  });
});
