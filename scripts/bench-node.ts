/**
 * The engine's speed in Node through Dawn (the `webgpu` package), for GPU servers (Vulkan) and, without a
 * GPU, SwiftShader: device facts, measured memory bandwidth and matmul rate, then for each model prefill
 * (pp) and decode (tg) tokens/s with the vLLM `bench serve` definitions (src/core/metrics.ts) and the
 * decode roofline fraction. The options: {@link USAGE} (`npm run bench:node -- --help`).
 */

import { writeFileSync } from 'node:fs';
import { markdownTable } from '../src/bench/markdown.ts';
import { buildRoofline, measureBandwidth, measureMatmul } from '../src/bench/roofline.ts';
import { intArg, numArg, parseCliArgs } from '../src/cli/args.ts';
import { checkWritable } from '../src/cli/ci-files.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { formatCliError, isEntryPoint, runCli } from '../src/cli/run.ts';
import { requestMetrics, summarize } from '../src/core/metrics.ts';
import { openModelSource } from '../src/library/opener.ts';
import { createGpuContext } from '../src/webgpu/device.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';

/** `npm run bench:node -- --help`. */
export const USAGE = `usage: npm run bench:node -- [--models a,b,...] [--n-prompt 128] [--n-gen 64] [--reps 3] [--gpu]
                          [--budget-s 300] [--json FILE] [--md FILE]

The engine's speed in Node through Dawn: device facts, measured bandwidth and matmul rate, then for each
model prefill (pp) and decode (tg) tokens/s (median of --reps after one warm-up) and the decode roofline
fraction; a Markdown table on stdout, progress on stderr.

  --models LIST     GGUF paths or synthetic:SHAPE-TYPE names, comma-separated
                    (default synthetic:stories260k-f32,synthetic:stories15m-q4_0)
  --n-prompt N      prompt tokens (default 128)
  --n-gen N         generated tokens (default 64)
  --reps N          measured repetitions per model (default 3)
  --gpu             keep the system's Vulkan driver (otherwise SwiftShader when none is configured)
  --budget-s S      models not started once S seconds have passed are skipped (default 300)
  --json FILE       the result as JSON (its folder is made)
  --md FILE         the Markdown table (its folder is made)
  -h, --help        this text

Exit status: 0 done, 1 failed, 2 bad arguments.`;

/** bench:node's options, checked. */
export interface BenchNodeArgs {
  models: string[];
  nPrompt: number;
  nGen: number;
  reps: number;
  gpu: boolean;
  budgetS: number;
  json?: string;
  md?: string;
}

/**
 * Reads bench:node's command line; `'help'` for --help.
 * @throws UsageError or Node's parseArgs errors (an unknown flag, a missing value) for bad arguments, which
 *   runCli prints as `error [invalid_argument]: …` with exit status 2.
 */
export function parseBenchNodeArgs(argv: string[]): BenchNodeArgs | 'help' {
  const { values } = parseCliArgs({
    args: argv,
    options: {
      models: { type: 'string', default: 'synthetic:stories260k-f32,synthetic:stories15m-q4_0' },
      'n-prompt': { type: 'string' },
      'n-gen': { type: 'string' },
      reps: { type: 'string' },
      gpu: { type: 'boolean', default: false },
      'budget-s': { type: 'string' },
      json: { type: 'string' },
      md: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  return {
    models: values.models.split(',').filter(Boolean),
    nPrompt: intArg(values['n-prompt'], 'n-prompt', 1, 128),
    nGen: intArg(values['n-gen'], 'n-gen', 1, 64),
    reps: intArg(values.reps, 'reps', 1, 3),
    gpu: values.gpu,
    budgetS: numArg(values['budget-s'], 'budget-s', { positive: true }) ?? 300,
    json: values.json,
    md: values.md,
  };
}

async function main(): Promise<number> {
  const args = parseBenchNodeArgs(process.argv.slice(2));
  if (args === 'help') {
    console.log(USAGE);
    return 0;
  }
  // A bad output path is said now (exit 2), not after the whole run; the folders are made here.
  checkWritable({ '--json': args.json, '--md': args.md });
  await benchNode(args);
  return 0;
}

/** The measurements, the table on stdout and the --json / --md files. */
async function benchNode(values: BenchNodeArgs): Promise<void> {
  const tStart = performance.now();
  const log = (...a: unknown[]) =>
    console.error(`[${((performance.now() - tStart) / 1000).toFixed(1)}s]`, ...a);
  const driver = setupNodeVulkan(values.gpu);
  const gpu = await createGpuContext();
  const { device } = gpu;
  const info = gpu.info;
  log('adapter', JSON.stringify(info), 'driver', driver);
  const features = [...device.features].sort();
  const limits = {
    maxBufferSize: device.limits.maxBufferSize,
    maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    maxComputeWorkgroupStorageSize: device.limits.maxComputeWorkgroupStorageSize,
  };
  const bw = await measureBandwidth(device);
  log(`bandwidth ${bw.GBs.toFixed(1)} GB/s (${bw.timing})`);
  const mm = await measureMatmul(device);
  log(`matmul ${mm.GFLOPs.toFixed(1)} GFLOP/s (n=${mm.n}, ${mm.timing})`);

  const { nPrompt, nGen, reps } = values;
  const budgetMs = values.budgetS * 1000;
  const rows: Record<string, unknown>[] = [];
  const engine = new WebGpuEngine({ openModel: openModelSource, gpu });
  for (const m of values.models) {
    if (performance.now() - tStart > budgetMs) {
      log(`budget spent: skipping ${m}`);
      rows.push({ model: m, skipped: 'time budget' });
      continue;
    }
    try {
      const tl = performance.now();
      const mi = await engine.load(m.startsWith('synthetic:') ? { synthetic: m } : { path: m }, {
        contextLength: nPrompt + nGen + 8,
        batchSize: 64,
      });
      const loadMs = performance.now() - tl;
      const st = await engine.stats();
      log(
        `${m}: loaded in ${loadMs.toFixed(0)} ms (${(mi.weightBytes / 2 ** 20).toFixed(1)} MiB, ${mi.tensorTypes.join('/')})`,
      );
      // Random prompt ids (not BOS/EOS), the same for every repetition.
      const prompt = Array.from({ length: nPrompt }, (_, i) => 3 + ((i * 7919 + 13) % (mi.nVocab - 3)));
      const pre: number[] = [];
      const dec: number[] = [];
      for (let r = 0; r <= reps; r++) {
        const g = await engine.generate({ promptTokenIds: prompt, maxTokens: nGen, ignoreEos: true });
        const met = requestMetrics({
          tStartMs: g.tStartMs,
          tokenTimesMs: g.tokenTimesMs,
          promptTokens: nPrompt,
        });
        if (r === 0) continue; // warm-up
        pre.push(met.prefillTokPerS);
        dec.push(met.decodeTokPerS);
      }
      const p = summarize(pre);
      const d = summarize(dec);
      const kvDim = (engine.llama!.cfg.nHeadKv * engine.llama!.cfg.headDim) as number;
      const roof = buildRoofline({
        model: { ...mi, kvDim, tiedEmbeddings: engine.llama!.cfg.tiedEmbeddings },
        bandwidthGBs: bw.GBs,
        matmulGflops: mm.GFLOPs,
        decodeTokensPerSecond: d.median,
        prefillTokensPerSecond: p.median,
        contextUsed: nPrompt + nGen / 2,
      });
      const row = {
        model: m,
        types: mi.tensorTypes.join('/'),
        weightMiB: +(mi.weightBytes / 2 ** 20).toFixed(1),
        loadMs: Math.round(loadMs),
        compileMs: Math.round(st.load?.compileMs ?? 0),
        prefillTokS: +p.median.toFixed(1),
        prefillStd: +p.std.toFixed(1),
        decodeTokS: +d.median.toFixed(1),
        decodeStd: +d.std.toFixed(1),
        dispatchesPerToken: engine.llama!.dispatchesPerToken,
        bytesPerTokenMiB: +(roof.bytesPerToken / 2 ** 20).toFixed(1),
        bandwidthFraction: +roof.fraction.toFixed(4),
        prefillMatmulFraction: roof.prefillFraction === undefined ? null : +roof.prefillFraction.toFixed(4),
      };
      rows.push(row);
      log(JSON.stringify(row));
    } catch (e) {
      log(`${m}: failed: ${(e as Error).message}`);
      rows.push({ model: m, error: String((e as Error).message).slice(0, 300) });
    }
    await engine.unload();
  }

  const result = {
    date: new Date().toISOString(),
    runtime: `node ${process.version} + Dawn (webgpu npm package)`,
    adapter: info,
    vulkanDriver: driver,
    features,
    limits,
    bandwidthGBs: +bw.GBs.toFixed(1),
    matmulGflops: +mm.GFLOPs.toFixed(1),
    nPrompt,
    nGen,
    reps,
    rows,
  };
  const cols = [
    'model',
    'types',
    'weightMiB',
    'prefillTokS',
    'decodeTokS',
    'bandwidthFraction',
    'prefillMatmulFraction',
    'loadMs',
  ];
  const md = [
    `Device: ${info.vendor} ${info.architecture} ${info.device} ${info.description}${info.isFallback ? ' (software adapter)' : ''}; ` +
      `bandwidth ${result.bandwidthGBs} GB/s, f32 matmul ${result.matmulGflops} GFLOP/s (measured by our kernels); ` +
      `pp${nPrompt} / tg${nGen}, median of ${reps} after 1 warm-up; ${result.date.slice(0, 10)}`,
    '',
    ...markdownTable(
      cols,
      rows.map((r) => cols.map((c) => String(r[c] ?? (c === 'types' ? (r.error ?? r.skipped ?? '') : '')))),
      cols.length,
    ),
  ].join('\n');
  console.log(md);
  // Their folders were made by checkWritable, before the run.
  for (const [file, text] of [
    [values.json, JSON.stringify(result, null, 1)],
    [values.md, `${md}\n`],
  ] as const) {
    if (file) writeFileSync(file, text);
  }
  await engine.dispose();
  device.destroy();
}

if (isEntryPoint(import.meta.url))
  runCli(main, formatCliError, 'npm run bench:node -- --help lists the options');
