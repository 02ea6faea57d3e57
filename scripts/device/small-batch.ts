/**
 * Small batches through the matrix × vector kernels on the GPU machine (issues 40 and 45,
 * `KernelPlan.smallBatch`): for each model and each small-batch attention of `--attention` (options.ts
 * `AttentionPolicy.small`: `flash`, flash-decoding over chunks of the cache, the GPUs' default; `prefill`,
 * the prefill kernel; `both`, one load each), one load with `smallBatch: 'trial'` (both kernel sets
 * compiled; the load's own trial, whole forward passes of 4 and 8 tokens both ways, is recorded), then on
 * that load, with small batches through mmv (`setSmallBatch(8)`) and through the prefill tile
 * (`setSmallBatch(0)`):
 * - TTFT of a T-token prompt (prefill from position 0, the greedy token read back: 4 bytes), for each T of
 *   `--tokens`;
 * - for each depth D of `--contexts`: one verify pass of T tokens (speculative decoding's: the last
 *   accepted token and T − 1 drafts, every position's argmax read back) at position D after a D-token
 *   prefill, against one plain decode step at the same position: a verify ÷ decode near 1 is what makes
 *   drafting pay, and at D in the thousands it is the small batch's attention that decides it.
 *
 *   node small-batch.mjs [--gpu [--no-unsafe-apis]] [--models synthetic:llama-3.2-1b-q4_k_m,synthetic:llama-3.1-8b-q4_k_m]
 *       [--tokens 2,4,8] [--contexts 64,4096] [--attention both|flash|prefill] [--warmup 2] [--reps 5]
 *       [--deadline-s 200] [--json FILE] [--md FILE]
 *
 * Wall ms from submit to the readback, medians of `--reps` after `--warmup` runs; the token ids are fixed
 * pseudo-random ones (attention's cost does not depend on the cached values, so the TTFT prompts may
 * overwrite the first rows of a depth's prefill). No load starts after `--deadline-s`; results are
 * rewritten after every load.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { markdownTable } from '../../src/bench/markdown.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { openModelSource } from '../../src/library/opener.ts';
import { mulberry32 } from '../../src/util/prng.ts';
import { createGpuContext, setNodeDawnOptions } from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import type { LlamaModel } from '../../src/webgpu/model/llama.ts';
import type { AttentionPolicy } from '../../src/webgpu/model/options.ts';
import {
  clearSmallBatchTrials,
  median,
  SMALL_BATCH_MAX,
  type SmallBatchChoice,
} from '../../src/webgpu/model/small-batch.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'synthetic:stories260k-f32' },
    gpu: { type: 'boolean', default: false },
    'no-unsafe-apis': { type: 'boolean', default: false },
    tokens: { type: 'string', default: '2,4,8' },
    contexts: { type: 'string', default: '64' },
    attention: { type: 'string', default: 'both' },
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
const contexts = values.contexts!.split(',').map(Number);
const attentions: NonNullable<AttentionPolicy['small']>[] =
  values.attention === 'both' ? ['flash', 'prefill'] : [values.attention as 'flash' | 'prefill'];
const warmup = Number(values.warmup);
const reps = Number(values.reps);
const deadlineS = Number(values['deadline-s']);
if (sizes.some((t) => !(Number.isInteger(t) && t >= 2 && t <= SMALL_BATCH_MAX)))
  throw new Error(`--tokens: sizes 2..${SMALL_BATCH_MAX} (got ${values.tokens})`);
if (!(contexts.every((d) => Number.isInteger(d) && d >= 1) && reps >= 1 && warmup >= 0))
  throw new Error('--contexts: depths ≥ 1; --reps ≥ 1, --warmup ≥ 0');
if (!attentions.every((a) => a === 'flash' || a === 'prefill'))
  throw new Error(`--attention: both, flash or prefill (got ${values.attention})`);

interface Row {
  model: string;
  /** The small batches' attention asked for, and what the load runs (`flash` or `prefill-kernel`). */
  attention: string;
  ran?: string;
  skipped?: string;
  error?: string;
  types?: string;
  /** The load's own trial and choice (ModelInfo.kernels.smallBatch). */
  trial?: SmallBatchChoice;
  /** Per T: TTFT of a T-token prompt, ms, through mmv and through the tile. */
  ttft?: { tokens: number; mmvMs: number; tileMs: number }[];
  /** Per depth: one plain decode step at that position, and per T a verify pass of T tokens there, ms. */
  depths?: {
    context: number;
    decodeMs: number;
    sizes: { tokens: number; verifyMmvMs: number; verifyTileMs: number }[];
  }[];
  /** Every timed run's wall ms by measurement (`ttft mmv T=4`, `verify tile T=8 @4096`, `decode @64`). */
  samples?: Record<string, number[]>;
}

const driver = setupNodeVulkan(values.gpu);
// As compare.ts: with --gpu, Dawn's unsafe APIs and NVIDIA's f16 (subgroup matrices, shader-f16), so every
// phase of a device run measures the same kernel set.
setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver);
const rows: Row[] = [];

/**
 * Median wall ms of `run` over `reps` runs after `warmup` untimed ones; every timed run's ms goes into
 * `row.samples[label]` (the JSON's spread: the table shows medians).
 */
async function timed(row: Row, label: string, run: () => Promise<void>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < warmup + reps; i++) {
    const t0 = performance.now();
    await run();
    if (i >= warmup) ms.push(performance.now() - t0);
  }
  row.samples ??= {};
  row.samples[label] = ms.map((x) => Math.round(x * 1000) / 1000);
  return median(ms);
}

function write(): void {
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify({ adapter: gpu.info, driver, contexts, warmup, reps, rows }, null, 2),
    );
  const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const header = [
    'model',
    'small-batch attention',
    'depth',
    'T',
    'TTFT mmv ms',
    'TTFT tile ms',
    'tile ÷ mmv',
    'verify mmv ms',
    'verify tile ms',
    'verify tile ÷ mmv',
    'verify mmv ÷ decode',
    'verify tile ÷ decode',
    'trial (mmv / tile ms) → chosen',
  ];
  const blank = header.map(() => '');
  const table = markdownTable(
    header,
    rows.flatMap((r) => {
      const note = r.skipped ? `skipped: ${r.skipped}` : `error: ${r.error ?? 'no figures'}`;
      if (!r.ttft?.length) {
        const line = [...blank];
        line[0] = r.model;
        line[1] = r.attention;
        line[2] = note;
        return [line];
      }
      const chose = r.trial?.maxTokens ? `mmv for 2–${r.trial.maxTokens} tokens` : 'off (prefill tile)';
      const trial = `${(r.trial?.trials ?? []).map((t) => `${t.tokens}: ${f(t.mmvMs)} / ${f(t.tileMs)}`).join(', ')} → ${chose} (${r.trial?.chosenBy ?? '–'})`;
      const out: string[][] = [];
      const depths = r.depths ?? [];
      // TTFT measured but no depth reached (the deadline or an error after it): the TTFT rows alone.
      if (depths.length === 0)
        r.ttft.forEach((t, i) => {
          const line = [...blank];
          if (i === 0) {
            line[0] = `${r.model} (${r.types})`;
            line[1] = r.attention;
            line[2] = r.error ? note : 'no depth measured (the deadline)';
            line[12] = trial;
          }
          line[3] = String(t.tokens);
          line[4] = f(t.mmvMs);
          line[5] = f(t.tileMs);
          line[6] = `${f(t.tileMs / t.mmvMs)}×`;
          out.push(line);
        });
      for (const d of depths)
        d.sizes.forEach((sz, i) => {
          const t = d.context === depths[0].context ? r.ttft!.find((x) => x.tokens === sz.tokens) : undefined;
          out.push([
            out.length === 0 ? `${r.model} (${r.types})` : '',
            out.length === 0
              ? `${r.attention}${r.ran && r.ran !== r.attention ? ` (runs ${r.ran})` : ''}`
              : '',
            i === 0 ? `${d.context} (decode step ${f(d.decodeMs)} ms)` : '',
            String(sz.tokens),
            f(t?.mmvMs),
            f(t?.tileMs),
            t ? `${f(t.tileMs / t.mmvMs)}×` : '',
            f(sz.verifyMmvMs),
            f(sz.verifyTileMs),
            `${f(sz.verifyTileMs / sz.verifyMmvMs)}×`,
            f(sz.verifyMmvMs / d.decodeMs),
            f(sz.verifyTileMs / d.decodeMs),
            out.length === 0 ? trial : '',
          ]);
        });
      if (depths.length > 0 && r.error) out.push([...blank.slice(0, 2), note, ...blank.slice(3)]);
      return out;
    }),
    2,
  ).join('\n');
  const md =
    `${table}\n\nWall ms, medians of ${reps} after ${warmup} warm-up runs (each run's ms in the JSON's \`samples\`); TTFT from position 0 (first depth's rows); ` +
    `verify at each depth after a prefill of that many tokens. "tile ÷ mmv" above 1: the small batch through mmv was faster; ` +
    `"verify ÷ decode": a verify pass of T tokens against one decode step at that depth (near 1: drafting pays). ` +
    `The load's trial keeps mmv up to the largest trialled size at which it was faster at every trialled size (so ` +
    `faster at 8 but slower at 4 is off). ${gpu.info.isFallback ? 'A software adapter: CPU figures on a shared machine, a check of the mechanics, not GPU timings. ' : ''}` +
    `adapter ${gpu.info.vendor} ${gpu.info.architecture} ${gpu.info.description ?? ''}.\n`;
  if (values.md) writeFileSync(values.md, md);
}

const maxContext = Math.max(...contexts);
for (const m of values.models!.split(',').filter(Boolean)) {
  for (const attention of attentions) {
    const row: Row = { model: m, attention };
    rows.push(row);
    if (elapsedS() > deadlineS) {
      row.skipped = 'past the deadline';
      write();
      continue;
    }
    const engine = new WebGpuEngine({
      openModel: openModelSource,
      gpu,
      smallBatch: 'trial',
      attention: { small: attention },
    });
    try {
      // A fresh trial and both kernel sets at every load (a remembered outcome would compile only one).
      clearSmallBatchTrials();
      const info = await engine.load(m.startsWith('synthetic:') ? { synthetic: m.slice(10) } : { path: m }, {
        contextLength: maxContext + 2 * SMALL_BATCH_MAX + 8,
        batchSize: 512,
      });
      const model: LlamaModel = engine.llama!;
      row.types = info.tensorTypes.join('/');
      row.trial = structuredClone(model.smallBatch);
      model.setSmallBatch(SMALL_BATCH_MAX);
      row.ran = model.smallBatchAttention === 'prefill-kernel' ? 'prefill' : model.smallBatchAttention;
      log(
        `${m} (${attention}): loaded; trial ${JSON.stringify(row.trial)}; small-batch attention ${row.ran}`,
      );
      const rng = mulberry32(40);
      const V = info.nVocab;
      const ids = (n: number) => Array.from({ length: n }, () => 3 + Math.floor(rng() * (V - 3)));
      row.ttft = [];
      for (const T of sizes) {
        const p = ids(T);
        const ttft = async () => {
          model.prefillTokens(p, 0);
          model.submitReadback({ slot: 0 });
          await model.readToken(0);
        };
        model.setSmallBatch(SMALL_BATCH_MAX);
        const mmvMs = await timed(row, `ttft mmv T=${T}`, ttft);
        model.setSmallBatch(0);
        const tileMs = await timed(row, `ttft tile T=${T}`, ttft);
        row.ttft.push({ tokens: T, mmvMs, tileMs });
      }
      log(`${m} (${attention}): TTFT ${JSON.stringify(row.ttft)}`);
      row.depths = [];
      for (const context of contexts) {
        if (elapsedS() > deadlineS) break;
        const ctx = ids(context);
        model.setSmallBatch(0);
        await model.prefill(ctx, 0);
        const decodeMs = await timed(row, `decode @${context}`, async () => {
          model.submitDecode(context, { tokenId: ctx[0], slot: 0 });
          await model.readToken(0);
        });
        const depth = {
          context,
          decodeMs,
          sizes: [] as { tokens: number; verifyMmvMs: number; verifyTileMs: number }[],
        };
        row.depths.push(depth);
        for (const T of sizes) {
          const v = ids(T);
          const verify = async () => {
            await model.verify(v, context);
          };
          model.setSmallBatch(SMALL_BATCH_MAX);
          const verifyMmvMs = await timed(row, `verify mmv T=${T} @${context}`, verify);
          model.setSmallBatch(0);
          const verifyTileMs = await timed(row, `verify tile T=${T} @${context}`, verify);
          depth.sizes.push({ tokens: T, verifyMmvMs, verifyTileMs });
        }
        log(`${m} (${attention}): depth ${context}: ${JSON.stringify(depth)}`);
        write();
      }
    } catch (e) {
      row.error = e instanceof Error ? e.message : String(e);
      log(`${m} (${attention}): ${(e as Error).stack ?? e}`);
    } finally {
      await engine.unload().catch(() => {});
    }
    write();
  }
}
write();
log(`done in ${elapsedS().toFixed(0)} s`);
process.exit(0);
