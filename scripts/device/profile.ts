/**
 * Where a decode token's time goes, per kernel family, on synthetic shapes (random weights made on the
 * GPU; no file): for each model, `profileGpu` (src/bench/llama-bench-gpu.ts: GPU ms per token per
 * kernel family from timestamp queries, one pass per dispatch; wall ms per token unprofiled; busy
 * fraction = GPU ÷ wall), the argmax's µs per token, the GPU sampler's µs per sampled step (temperature
 * 0.8, top-p 0.95, top-k off: the top-p candidates' passes and the one-workgroup pass), and wall ms per token with 1 step in flight against
 * the default (decoder.ts `DEFAULT_IN_FLIGHT`), so the token loop's gaps show (issue 40); beside them the
 * argmax's stripes and the sampler's passes for that request as loaded (`ModelInfo.kernels.argmax`,
 * `.sampler`).
 *
 *   node profile.mjs --models synthetic:llama-3.2-1b-q4_k_m,synthetic:llama-3.1-8b-q4_k_m [--gpu [--no-unsafe-apis]]
 *       [--decode-tokens 32] [--prefill-tokens 64] [--budget-s 120] [--json FILE] [--md FILE]
 *
 * A model is skipped once `--budget-s` has passed. Results are rewritten after every model.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pickPassesText } from '../../src/bench/kernel-readings.ts';
import { KERNEL_FAMILIES } from '../../src/bench/llama-bench.ts';
import { profileGpu, profileSampler, timeDecode } from '../../src/bench/llama-bench-gpu.ts';
import { markdownTable } from '../../src/bench/markdown.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { openModelSource } from '../../src/library/opener.ts';
import { DEFAULT_IN_FLIGHT } from '../../src/webgpu/decoder.ts';
import { createGpuContext, setNodeDawnOptions } from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import type { ArgmaxInfo, SamplerInfo } from '../../src/webgpu/kernel-plan.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'synthetic:stories260k-f32' },
    gpu: { type: 'boolean', default: false },
    'no-unsafe-apis': { type: 'boolean', default: false },
    'decode-tokens': { type: 'string', default: '32' },
    'prefill-tokens': { type: 'string', default: '64' },
    'budget-s': { type: 'string', default: '120' },
    json: { type: 'string' },
    md: { type: 'string' },
  },
});
const tStart = performance.now();
const log = (...a: unknown[]) =>
  console.error(`[profile ${((performance.now() - tStart) / 1000).toFixed(1)}s]`, ...a);
const nDec = Number(values['decode-tokens']);
const nPre = Number(values['prefill-tokens']);
const budgetMs = Number(values['budget-s']) * 1000;

const driver = setupNodeVulkan(values.gpu);
// As compare.ts: with --gpu, Dawn's unsafe APIs and NVIDIA's f16 (subgroup matrices, shader-f16), so every
// phase of a device run measures the same kernel set.
setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver);
const engine = new WebGpuEngine({ openModel: openModelSource, gpu });

interface Row {
  model: string;
  skipped?: string;
  error?: string;
  types?: string;
  /** Unprofiled wall ms per decode token with DEFAULT_IN_FLIGHT steps in flight (profileGpu's median of 3). */
  wallMsPerToken?: number;
  /** The same with one step in flight (the loop before issue 40), median of 3. */
  wallMsPerTokenOneInFlight?: number;
  gpuMsPerToken?: number | null;
  busyFraction?: number | null;
  argmaxUs?: number | null;
  /** The GPU sampler's µs per sampled step (temperature 0.8, top-p 0.95: the top-p candidates' passes). */
  samplerUs?: number | null;
  /** GPU ms per decode token per kernel family. */
  kernels?: Record<string, number>;
  /** The argmax as loaded (ModelInfo.kernels.argmax: stripes, logits per stripe, threads). */
  argmax?: ArgmaxInfo;
  /** The GPU sampler as loaded (ModelInfo.kernels.sampler: passes, and those each kind of request runs). */
  sampler?: SamplerInfo;
  prefillGpuMsPerToken?: number | null;
  timestamps?: string;
  note?: string;
}
const rows: Row[] = [];

const f = (x: number | null | undefined, d = 3) => (x === null || x === undefined ? '—' : x.toFixed(d));
function write(): void {
  const fams = KERNEL_FAMILIES.filter((k) => rows.some((r) => r.kernels?.[k] !== undefined));
  const md = markdownTable(
    [
      'model',
      `wall ms/tok (${DEFAULT_IN_FLIGHT} in flight)`,
      'wall ms/tok (1 in flight)',
      'GPU ms/tok',
      'busy',
      'argmax µs',
      'argmax stripes',
      'sampler µs (T 0.8, top-p 0.95)',
      'sampler passes (T 0.8, top-p 0.95)',
      ...fams.map((k) => `${k} ms`),
    ],
    rows.map((r) =>
      r.skipped || r.error
        ? [r.model, r.skipped ?? `error: ${r.error}`, ...Array(7 + fams.length).fill('')]
        : [
            r.model,
            f(r.wallMsPerToken),
            f(r.wallMsPerTokenOneInFlight),
            f(r.gpuMsPerToken),
            f(r.busyFraction, 2),
            f(r.argmaxUs, 1),
            r.argmax ? `${r.argmax.stripes} × ${r.argmax.stripe}` : '—',
            f(r.samplerUs, 1),
            r.sampler ? pickPassesText(r.sampler.requests.topP) : '—',
            ...fams.map((k) => f(r.kernels?.[k])),
          ],
    ),
  ).join('\n');
  if (values.json)
    writeFileSync(
      values.json,
      `${JSON.stringify({ adapter: gpu.info, driver, nDec, nPre, rows }, null, 2)}\n`,
    );
  if (values.md) writeFileSync(values.md, `${md}\n`);
  console.log(md);
}

for (const m of values.models!.split(',').filter(Boolean)) {
  if (performance.now() - tStart > budgetMs) {
    log(`budget spent: skipping ${m}`);
    rows.push({ model: m, skipped: 'time budget' });
    continue;
  }
  try {
    const mi = await engine.load(m.startsWith('synthetic:') ? { synthetic: m } : { path: m }, {
      contextLength: Math.max(nDec, nPre) + 8,
      batchSize: 64,
    });
    const model = engine.llama!;
    log(`${m}: loaded (${(mi.weightBytes / 2 ** 20).toFixed(0)} MiB, ${mi.tensorTypes.join('/')})`);
    const p = await profileGpu(model, { decodeTokens: nDec, prefillTokens: nPre });
    const one: number[] = [];
    for (let i = 0; i < 3; i++) one.push(((await timeDecode(model, nDec, 0, 3 + i, 1)) * 1000) / nDec);
    const samplerUs = await profileSampler(model, nDec);
    const kernels = Object.fromEntries(p.kernels.map((k) => [k.name, k.msPerToken]));
    const argmax = p.kernels.find((k) => k.name === 'argmax');
    rows.push({
      model: m,
      types: mi.tensorTypes.join('/'),
      wallMsPerToken: p.wallMsPerToken,
      wallMsPerTokenOneInFlight: one.sort((a, b) => a - b)[1],
      gpuMsPerToken: p.gpuMsPerToken,
      busyFraction: p.busyFraction,
      argmaxUs: p.timestamps === 'unavailable' ? null : (argmax?.msPerToken ?? 0) * 1000,
      samplerUs,
      kernels,
      argmax: mi.kernels?.argmax,
      sampler: mi.kernels?.sampler,
      prefillGpuMsPerToken: p.prefillGpuMsPerToken,
      timestamps: p.timestamps,
      note: p.note,
    });
    log(`${m}: ${JSON.stringify(rows.at(-1))}`);
  } catch (e) {
    log(`${m}: ${(e as Error).stack ?? e}`);
    rows.push({ model: m, error: (e as Error).message });
  }
  write();
}
write();
await engine.dispose();
gpu.device.destroy();
