/**
 * Small batches through the matrix × vector kernels on the GPU machine (issues 40 and 45,
 * `KernelPlan.smallBatch`): for each model, one load with `smallBatch: 'trial'` (both kernel sets
 * compiled; the load's own trial, whole forward passes of 4 and 8 tokens both ways, is recorded), then on
 * that load, with small batches through mmv (`setSmallBatch(8)`) and through the prefill tile
 * (`setSmallBatch(0)`):
 * - TTFT of a T-token prompt (prefill from position 0, the greedy token read back: 4 bytes), for each T of
 *   `--tokens`;
 * - one verify pass of T tokens (speculative decoding's: the last accepted token and T − 1 drafts, every
 *   position's argmax read back) after a `--context`-token prefill, against one plain decode step at the
 *   same position: a verify ÷ decode near 1 is what makes drafting pay.
 *
 *   node small-batch.mjs [--gpu] [--models synthetic:llama-3.2-1b-q4_k_m,synthetic:llama-3.1-8b-q4_k_m]
 *       [--tokens 2,4,8] [--context 64] [--warmup 2] [--reps 5] [--deadline-s 200] [--json FILE] [--md FILE]
 *
 * Wall ms from submit to the readback, medians of `--reps` after `--warmup` runs; the token ids are fixed
 * pseudo-random ones. No model starts after `--deadline-s`; results are rewritten after every model.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { markdownTable } from '../../src/bench/markdown.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { openModelSource } from '../../src/library/opener.ts';
import { mulberry32 } from '../../src/util/prng.ts';
import { createGpuContext } from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import type { LlamaModel } from '../../src/webgpu/model/llama.ts';
import { median, SMALL_BATCH_MAX, type SmallBatchChoice } from '../../src/webgpu/model/small-batch.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'synthetic:stories260k-f32' },
    gpu: { type: 'boolean', default: false },
    tokens: { type: 'string', default: '2,4,8' },
    context: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '2' },
    reps: { type: 'string', default: '5' },
    'deadline-s': { type: 'string', default: '200' },
    json: { type: 'string' },
    md: { type: 'string' },
  },
});
const tStart = performance.now();
const elapsedS = () => (performance.now() - tStart) / 1000;
const log = (...a: unknown[]) => console.error(`[small-batch ${elapsedS().toFixed(1)}s]`, ...a);
const sizes = values.tokens!.split(',').map(Number);
const context = Number(values.context);
const warmup = Number(values.warmup);
const reps = Number(values.reps);
const deadlineS = Number(values['deadline-s']);
if (sizes.some((t) => !(Number.isInteger(t) && t >= 2 && t <= SMALL_BATCH_MAX)))
  throw new Error(`--tokens: sizes 2..${SMALL_BATCH_MAX} (got ${values.tokens})`);
if (!(Number.isInteger(context) && context >= 1 && reps >= 1 && warmup >= 0))
  throw new Error('--context ≥ 1, --reps ≥ 1, --warmup ≥ 0');

interface Row {
  model: string;
  skipped?: string;
  error?: string;
  types?: string;
  /** The load's own trial and choice (ModelInfo.kernels.smallBatch). */
  trial?: SmallBatchChoice;
  /** One plain decode step at position `context`, ms. */
  decodeMs?: number;
  /** Per T: TTFT of a T-token prompt and a verify pass of T tokens, ms, through mmv and through the tile. */
  sizes?: {
    tokens: number;
    ttftMmvMs: number;
    ttftTileMs: number;
    verifyMmvMs: number;
    verifyTileMs: number;
  }[];
}

const driver = setupNodeVulkan(values.gpu);
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver);
const engine = new WebGpuEngine({ openModel: openModelSource, gpu, smallBatch: 'trial' });
const rows: Row[] = [];

/** Median wall ms of `run` over `reps` runs after `warmup` untimed ones. */
async function timed(run: () => Promise<void>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < warmup + reps; i++) {
    const t0 = performance.now();
    await run();
    if (i >= warmup) ms.push(performance.now() - t0);
  }
  return median(ms);
}

function write(): void {
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify({ adapter: gpu.info, driver, context, warmup, reps, rows }, null, 2),
    );
  const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const table = markdownTable(
    [
      'model',
      'T',
      'TTFT mmv ms',
      'TTFT tile ms',
      'tile ÷ mmv',
      'verify mmv ms',
      'verify tile ms',
      'verify mmv ÷ decode',
      'verify tile ÷ decode',
      'trial (mmv / tile ms) → chosen',
    ],
    rows.flatMap((r) =>
      r.skipped || r.error || !r.sizes
        ? [
            [
              r.model,
              '',
              r.skipped ? `skipped: ${r.skipped}` : `error: ${r.error}`,
              '',
              '',
              '',
              '',
              '',
              '',
              '',
            ],
          ]
        : r.sizes.map((s, i) => [
            i === 0 ? `${r.model} (${r.types}; decode step ${f(r.decodeMs)} ms)` : '',
            String(s.tokens),
            f(s.ttftMmvMs),
            f(s.ttftTileMs),
            `${f(s.ttftTileMs / s.ttftMmvMs)}×`,
            f(s.verifyMmvMs),
            f(s.verifyTileMs),
            f(s.verifyMmvMs / r.decodeMs!),
            f(s.verifyTileMs / r.decodeMs!),
            i === 0
              ? `${(r.trial?.trials ?? []).map((t) => `${t.tokens}: ${f(t.mmvMs)} / ${f(t.tileMs)}`).join(', ')} → ${r.trial?.maxTokens ?? '–'} (${r.trial?.chosenBy ?? '–'})`
              : '',
          ]),
    ),
    2,
  ).join('\n');
  const md =
    `${table}\n\nWall ms, medians of ${reps} after ${warmup} warm-up runs; verify after a ${context}-token prefill; ` +
    `adapter ${gpu.info.vendor} ${gpu.info.architecture} ${gpu.info.description ?? ''}.\n`;
  if (values.md) writeFileSync(values.md, md);
}

for (const m of values.models!.split(',').filter(Boolean)) {
  const row: Row = { model: m };
  rows.push(row);
  if (elapsedS() > deadlineS) {
    row.skipped = 'past the deadline';
    write();
    continue;
  }
  try {
    const info = await engine.load(m.startsWith('synthetic:') ? { synthetic: m.slice(10) } : { path: m }, {
      contextLength: context + 2 * SMALL_BATCH_MAX + 8,
      batchSize: 64,
    });
    const model: LlamaModel = engine.llama!;
    row.types = info.tensorTypes.join('/');
    row.trial = structuredClone(model.smallBatch);
    log(`${m}: loaded; trial ${JSON.stringify(row.trial)}`);
    const rng = mulberry32(40);
    const V = info.nVocab;
    const ids = (n: number) => Array.from({ length: n }, () => 3 + Math.floor(rng() * (V - 3)));
    const ctx = ids(context);
    const ttft = (p: number[]) => async () => {
      model.prefillTokens(p, 0);
      model.submitReadback({ slot: 0 });
      await model.readToken(0);
    };
    const verify = (v: number[]) => async () => {
      await model.verify(v, context);
    };
    model.prefillTokens(ctx, 0);
    row.decodeMs = await timed(async () => {
      model.submitDecode(context, { tokenId: ctx[0], slot: 0 });
      await model.readToken(0);
    });
    row.sizes = [];
    for (const T of sizes) {
      const p = ids(T);
      const v = ids(T);
      model.setSmallBatch(SMALL_BATCH_MAX);
      const ttftMmvMs = await timed(ttft(p));
      model.prefillTokens(ctx, 0);
      const verifyMmvMs = await timed(verify(v));
      model.setSmallBatch(0);
      const ttftTileMs = await timed(ttft(p));
      model.prefillTokens(ctx, 0);
      const verifyTileMs = await timed(verify(v));
      row.sizes.push({ tokens: T, ttftMmvMs, ttftTileMs, verifyMmvMs, verifyTileMs });
      log(`${m}: T ${T}: ${JSON.stringify(row.sizes.at(-1))}`);
    }
  } catch (e) {
    row.error = e instanceof Error ? e.message : String(e);
    log(`${m}: ${(e as Error).stack ?? e}`);
  } finally {
    await engine.unload().catch(() => {});
  }
  write();
}
write();
log(`done in ${elapsedS().toFixed(0)} s`);
process.exit(0);
