/**
 * Speculative decoding on the GPU machine (issue 45): for each TARGET>DRAFT pair, the target loaded with
 * the draft beside it (LoadOptions.draft) or drafting by prompt lookup, greedy decode with and without
 * drafting, alternating, on the same load.
 *
 *   node draft.mjs --pairs "synthetic:llama-3.1-8b-q4_k_m>synthetic:llama-3.2-1b-q4_k_m,llama-3.1-8b-q8_0>llama-3.1-8b-q4_0,\n *         synthetic:llama-3.1-8b-q4_k_m>lookup"
 *       [--gpu [--no-unsafe-apis]] [--tokens 64] [--reps 2] [--draft-max N] [--dir /tmp/gguf] [--deadline-s 300]
 *       [--small-batch both|mmv|tile|trial] [--json FILE] [--md FILE]
 *
 * A model is `synthetic:SHAPE-TYPE` (random weights made on the GPU, no file; two synthetic shapes with
 * the same vocabulary size have the same made-up vocabulary, so the 1B drafts for the 8B), or
 * `SHAPE-TYPE`, a file written here by random-gguf.ts in tiled `copies` mode (seed 1): a Q4_0 file is
 * then the target file's own Q4_0 copy — the acceptance upper bound that random weights allow. A file
 * pair's files are written before the pair and deleted after it. DRAFT `lookup`: prompt lookup, no
 * second model (the prompt is a summarising one: the answer repeats the text, for a trained model).
 *
 * Per pair: one warm-up of each (the verify pass's kernels compile on first use), then `--reps` pairs of
 * runs, plain then speculative; each pair's tokens must be identical (else the row says so). Decode
 * tok/s = (tokens − 1) ÷ (last token − first token) (src/core/metrics.ts `decodeTokPerS`), medians;
 * acceptance = accepted ÷ drafted; tokens per target pass = (output tokens − 1) ÷ target passes (the
 * first token comes from the prefill). `--small-batch` (default `both`): the verify passes' small batches
 * (2–8 tokens) through the decode mmv kernels and through the prefill tile on the same load, a drafted run
 * of each per rep (the engine loaded with `smallBatch: 'trial'`, whose choice the row records; columns
 * "drafted" = mmv, "drafted, tile" = the prefill tile), or the engine option `mmv`/`tile`/`trial` alone.
 * No pair starts after `--deadline-s`, and one still running then is stopped
 * (its row says so); results are rewritten after every pair.
 */
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { markdownTable } from '../../src/bench/markdown.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { decodeTokPerS } from '../../src/core/metrics.ts';
import type { DraftOptions, GenerateRequest, GenerateResult, ModelSource } from '../../src/core/types.ts';
import { openModelSource } from '../../src/library/opener.ts';
import { createGpuContext, setNodeDawnOptions } from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import { clearSmallBatchTrials, SMALL_BATCH_MAX } from '../../src/webgpu/model/small-batch.ts';
import { plannedDataBytes, shapeOptions, toFtype, writeRandomGguf } from './random-gguf.ts';

const { values } = parseArgs({
  options: {
    pairs: { type: 'string', default: 'synthetic:stories260k-f32>lookup' },
    gpu: { type: 'boolean', default: false },
    'no-unsafe-apis': { type: 'boolean', default: false },
    tokens: { type: 'string', default: '64' },
    reps: { type: 'string', default: '2' },
    'draft-max': { type: 'string' },
    dir: { type: 'string', default: '/tmp/gguf-draft' },
    'deadline-s': { type: 'string', default: '300' },
    json: { type: 'string' },
    md: { type: 'string' },
    'small-batch': { type: 'string', default: 'both' },
  },
});
const smallBatch = values['small-batch']!;
if (!['both', 'mmv', 'tile', 'trial'].includes(smallBatch))
  throw new Error(`--small-batch must be both, mmv, tile or trial (got ${smallBatch})`);
const both = smallBatch === 'both';
const tStart = performance.now();
const elapsedS = () => (performance.now() - tStart) / 1000;
const log = (...a: unknown[]) => console.error(`[draft ${elapsedS().toFixed(1)}s]`, ...a);
const tokens = Number(values.tokens);
const reps = Number(values.reps);
const deadlineS = Number(values['deadline-s']);
const draftMax = values['draft-max'] === undefined ? undefined : Number(values['draft-max']);
const pairs = values
  .pairs!.split(',')
  .map((p) => p.trim())
  .filter(Boolean)
  .map((p) => {
    const [target, draft] = p.split('>').map((x) => x.trim());
    if (!target || !draft) throw new Error(`--pairs: "${p}" is not TARGET>DRAFT`);
    return { target, draft };
  });
if (!Number.isInteger(tokens) || tokens < 2 || !Number.isInteger(reps) || reps < 1)
  throw new Error('--tokens must be an integer ≥ 2 and --reps ≥ 1');

/** The summarising prompt (bench-speculative.ts's): a trained model's answer repeats the text. */
const PROMPT =
  'Lily had a red ball. She liked to play with the red ball in the park. One day, the red ball went ' +
  'into the pond. Lily was sad. Her friend Tom came and got the red ball out of the pond. Lily was ' +
  'happy and said thank you to Tom. Lily and Tom played with the red ball in the park.\n' +
  'Tell the story again: Lily had a red ball.';

interface Row {
  target: string;
  draft: string;
  skipped?: string;
  error?: string;
  promptTokens?: number;
  plainTokPerS?: number;
  draftedTokPerS?: number;
  speedup?: number;
  drafted?: number;
  accepted?: number;
  acceptance?: number;
  tokensPerTargetPass?: number;
  sameOutput?: boolean;
  loadMs?: number;
  /** With --small-batch both: drafted decode tok/s with the verify passes through the prefill tile. */
  draftedTileTokPerS?: number;
  speedupTile?: number;
  /** The load's small-batch choice (ModelInfo.kernels.smallBatch) before the runs set it. */
  smallBatch?: unknown;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const driver = setupNodeVulkan(values.gpu);
// As compare.ts: with --gpu, Dawn's unsafe APIs and NVIDIA's f16 (subgroup matrices, shader-f16), so every
// phase of a device run measures the same kernel set.
setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver);
const engine = new WebGpuEngine({
  openModel: openModelSource,
  gpu,
  smallBatch: both ? 'trial' : (smallBatch as 'mmv' | 'tile' | 'trial'),
});
mkdirSync(values.dir!, { recursive: true });
const rows: Row[] = [];

/** `synthetic:…` as is; `SHAPE-TYPE` written as a tiled copies-mode file (returned for deletion). */
async function sourceOf(m: string, files: string[]): Promise<ModelSource> {
  if (m.startsWith('synthetic:')) return { synthetic: m.slice('synthetic:'.length) };
  const cut = m.lastIndexOf('-');
  const o = shapeOptions(m.slice(0, cut));
  const ftype = toFtype(m.slice(cut + 1));
  const need = plannedDataBytes(o, ftype) + o.nVocab * 24;
  const st = statfsSync(values.dir!);
  if (need > st.bavail * st.bsize) throw new Error(`${m}: ${need} bytes do not fit in ${values.dir}`);
  const path = join(values.dir!, `${m}.gguf`);
  files.push(path);
  const w = await writeRandomGguf(path, o, ftype, { copies: true });
  log(`${m}: wrote ${(w.bytes / 1e9).toFixed(2)} GB in ${(w.ms / 1000).toFixed(1)} s`);
  return { path };
}

function write(): void {
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify({ adapter: gpu.info, tokens, reps, draftMax, smallBatch, rows }, null, 2),
    );
  if (!values.md) return;
  const f = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const table = markdownTable(
    [
      'target',
      'draft',
      'decode tok/s plain',
      'decode tok/s drafted',
      'drafted ÷ plain',
      'drafted tok/s, tile verify',
      'tile ÷ plain',
      'accepted / drafted',
      'tokens per target pass',
      'same output',
    ],
    rows.map((r) =>
      r.skipped || r.error
        ? [
            r.target,
            r.draft,
            r.skipped ? `skipped: ${r.skipped}` : `error: ${r.error}`,
            '',
            '',
            '',
            '',
            '',
            '',
            '',
          ]
        : [
            r.target,
            r.draft,
            f(r.plainTokPerS),
            f(r.draftedTokPerS),
            `${f(r.speedup, 2)}×`,
            f(r.draftedTileTokPerS),
            r.speedupTile === undefined ? '–' : `${f(r.speedupTile, 2)}×`,
            `${r.accepted} / ${r.drafted} (${r.drafted ? ((100 * r.accepted!) / r.drafted).toFixed(0) : '–'}%)`,
            f(r.tokensPerTargetPass, 2),
            r.sameOutput ? 'yes' : 'NO',
          ],
    ),
    2,
  ).join('\n');
  writeFileSync(
    values.md,
    `${table}\n\nGreedy, ${tokens} tokens with EOS ignored, ${reps} pairs of runs after one warm-up each, ` +
      `draftMax ${draftMax ?? 'the default (8 lookup, 4 draft model)'}; small batches ${both ? 'through mmv ("drafted") and through the prefill tile ("tile verify") on the same load' : smallBatch}; adapter ${gpu.info.vendor} ` +
      `${gpu.info.architecture} ${gpu.info.description ?? ''}. Decode tok/s medians.\n`,
  );
}

for (const { target, draft } of pairs) {
  const row: Row = { target, draft };
  rows.push(row);
  if (elapsedS() > deadlineS) {
    row.skipped = 'past the deadline';
    write();
    continue;
  }
  const files: string[] = [];
  // A pair still running at the deadline is aborted (the load or the run in progress), and says so.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), Math.max(1, deadlineS - elapsedS()) * 1000);
  const signal = ac.signal;
  try {
    const tl = performance.now();
    const tSource = await sourceOf(target, files);
    const dSource = draft === 'lookup' ? undefined : await sourceOf(draft, files);
    // Every load trials small batches afresh and compiles both kernel sets (`both` switches between them);
    // a remembered outcome (model/small-batch.ts) would compile only one.
    clearSmallBatchTrials();
    const info = await engine.load(tSource, {
      contextLength: 512,
      signal,
      ...(dSource ? { draft: dSource } : {}),
    });
    row.loadMs = performance.now() - tl;
    log(
      `${target} > ${draft}: loaded in ${row.loadMs.toFixed(0)} ms${info.draft ? ` (draft ${info.draft.name})` : ''}`,
    );
    const drafting: DraftOptions = {
      type: dSource ? 'model' : 'lookup',
      ...(draftMax !== undefined ? { draftMax } : {}),
    };
    const base: GenerateRequest = { prompt: PROMPT, maxTokens: tokens, ignoreEos: true };
    const spec: GenerateRequest = { ...base, draft: drafting };
    const model = engine.llama!;
    row.smallBatch = structuredClone(model.smallBatch);
    if (both) model.setSmallBatch(SMALL_BATCH_MAX);
    await engine.generate(base, undefined, signal);
    await engine.generate(spec, undefined, signal);
    if (both) {
      model.setSmallBatch(0);
      await engine.generate(spec, undefined, signal);
    }
    const spedTile: number[] = [];
    const plain: number[] = [];
    const sped: number[] = [];
    let drafted = 0;
    let accepted = 0;
    let passes = 0;
    let out = 0;
    let same = true;
    for (let r = 0; r < reps; r++) {
      const a: GenerateResult = await engine.generate(base, undefined, signal);
      if (both) model.setSmallBatch(SMALL_BATCH_MAX);
      const b: GenerateResult = await engine.generate(spec, undefined, signal);
      same &&= JSON.stringify(a.outputTokenIds) === JSON.stringify(b.outputTokenIds);
      if (both) {
        model.setSmallBatch(0);
        const c = await engine.generate(spec, undefined, signal);
        same &&= JSON.stringify(a.outputTokenIds) === JSON.stringify(c.outputTokenIds);
        spedTile.push(decodeTokPerS({ ...c, promptTokens: c.promptTokenIds.length }));
      }
      row.promptTokens = a.promptTokenIds.length;
      plain.push(decodeTokPerS({ ...a, promptTokens: row.promptTokens }));
      sped.push(decodeTokPerS({ ...b, promptTokens: row.promptTokens }));
      const s = b.speculative!;
      drafted += s.drafted;
      accepted += s.accepted;
      passes += s.targetPasses;
      out += b.outputTokenIds.length - 1;
      log(
        `${target} > ${draft}: rep ${r + 1}: plain ${plain.at(-1)!.toFixed(1)}, drafted ${sped.at(-1)!.toFixed(1)}${both ? `, drafted with tile verify ${spedTile.at(-1)!.toFixed(1)}` : ''} tok/s`,
      );
    }
    Object.assign(row, {
      plainTokPerS: median(plain),
      draftedTokPerS: median(sped),
      speedup: median(sped) / median(plain),
      drafted,
      accepted,
      acceptance: drafted ? accepted / drafted : Number.NaN,
      tokensPerTargetPass: passes ? out / passes : Number.NaN,
      sameOutput: same,
      ...(both
        ? { draftedTileTokPerS: median(spedTile), speedupTile: median(spedTile) / median(plain) }
        : {}),
    });
  } catch (e) {
    row.error = signal.aborted ? 'stopped at the deadline' : e instanceof Error ? e.message : String(e);
    log(`${target} > ${draft}: ${row.error}`);
  } finally {
    clearTimeout(timer);
    await engine.unload().catch(() => {});
    for (const f of files) rmSync(f, { force: true });
  }
  write();
}
write();
log(`done in ${elapsedS().toFixed(0)} s`);
process.exit(0);
