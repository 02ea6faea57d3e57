/**
 * `npm run bench:engine [-- --runs 5 --warmup 1 --tokens 128 --model PATH --skip LIST --json FILE
 *   --no-write --chromium PATH]`
 *
 * Speed of our WebGPU engine on stories260K beside peers, in one run on one machine:
 * - ours in headless Chromium, through the real engine worker (`withHarnessPage`, `window.harness`);
 * - wllama (`@wllama/wllama`: llama.cpp in WebAssembly, CPU) in the same headless Chromium, same file;
 * - our wllama backend (`WllamaEngine`, src/wllama/: the Engine interface over that wllama, what
 *   `backend: 'auto'` runs without a GPU), 1 thread, in the same Chromium;
 * - ours in Node through Dawn (the `webgpu` package; SwiftShader unless a Vulkan driver is configured);
 * - node-llama-cpp (llama.cpp's native CPU build) with 1 thread, its default thread count, and one
 *   thread per core when that differs.
 *
 * Each engine gets the same prompts (text, tokenized with BOS: the prompt token counts are checked to
 * agree), greedy decoding and exactly `--tokens` output tokens with EOS ignored. Every engine and prompt
 * gets `--warmup` uncounted runs first; then `--runs` rounds, each running every engine and prompt once
 * (order rotated per round), so that load from other processes on a shared machine falls on all engines
 * alike. Metrics follow vLLM's `bench serve` (src/core/metrics.ts): prefill tok/s = prompt tokens /
 * TTFT, decode tok/s = (output tokens − 1) / (E2E − TTFT). Prints a markdown section and writes it into
 * BENCHMARKS.md, replacing the section of the same date.
 *
 * `--skip` takes a comma list of `ours-browser,wllama,wllama-engine,ours-node,llama-cpp`. Time boxes keep the run
 * short where a configuration collapses (node-llama-cpp with more threads than free cores can fall to
 * ~1 tok/s on a 2-core machine): a warm-up still running after bench-engine-measure.ts's `WARMUP_BUDGET_MS`
 * shrinks that configuration to `SLOW_RUNS` runs of fewer tokens, and a measured run past its cap stops
 * early and is kept as a partial run; both are flagged ⚠ in the report.
 *
 * This file runs it; the options are in bench-engine-args.ts, the prompts and protocol (warm-ups, rounds,
 * summaries) in bench-engine-measure.ts, the engines in bench-engine-engines.ts and the section in
 * bench-engine-report.ts.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { withHarnessPage } from '../src/cli/harness-server.ts';
import { BENCH_FILE, cpuModel, gitCommit, writeBenchSection } from './bench-common.ts';
import { parseBenchEngineArgs } from './bench-engine-args.ts';
import {
  llamaCpp,
  oursBrowser,
  oursNode,
  wllamaBrowser,
  wllamaEngineBrowser,
} from './bench-engine-engines.ts';
import {
  type Config,
  type Env,
  log,
  type Measured,
  type Plan,
  PROMPTS,
  type PromptKey,
  runRounds,
  summarizePlan,
  warmUp,
} from './bench-engine-measure.ts';
import { report } from './bench-engine-report.ts';

export type { AdapterInfo, BenchEngineJson, Env, Measured, PromptKey, Run } from './bench-engine-measure.ts';

/** Runs the benchmark as the command line says; the exit code. */
async function main(): Promise<number> {
  const cli = parseBenchEngineArgs();
  if (!cli) return 0;
  const { o, modelPath, skip } = cli;
  const env: Env = {
    date: new Date().toISOString().slice(0, 10),
    cpu: cpuModel(),
    nCpu: cpus().length,
    loadBefore: loadavg(),
    commit: gitCommit(['src/webgpu', 'src/core', 'src/gguf', 'src/model', 'workers']),
  };
  const t0 = performance.now();
  const all: Measured[] = [];
  await withHarnessPage({ modelPath, chromium: cli.chromium }, async (page, modelUrl) => {
    const browser = page.context().browser();
    env.chromium = browser?.version();
    const configs: Config[] = [];
    const closers: (() => Promise<void>)[] = [];
    try {
      // Chromium's engines first: oursNode sets VK_ICD_FILENAMES (SwiftShader) in this process.
      if (!skip.has('ours-browser')) configs.push(await oursBrowser(page, modelUrl, env));
      if (!skip.has('wllama') && browser) {
        const w = await wllamaBrowser(browser, modelUrl, env);
        configs.push(w);
        closers.push(w.close);
      }
      if (!skip.has('wllama-engine') && browser) {
        const w = await wllamaEngineBrowser(browser, modelUrl, env);
        configs.push(w);
        closers.push(w.close);
      }
      if (!skip.has('ours-node')) {
        const n = await oursNode(modelPath, env);
        configs.push(n);
        closers.push(n.close);
      }
      if (!skip.has('llama-cpp')) {
        const l = await llamaCpp(modelPath, env);
        configs.push(...l.configs);
        closers.push(l.close);
      }
      log(`warm-up (${o.warmup} run per engine and prompt)`);
      const plans: Plan[] = [];
      for (const c of configs)
        for (const p of Object.keys(PROMPTS) as PromptKey[]) plans.push(await warmUp(c, p, o));
      await runRounds(plans, o);
      for (const p of Object.keys(PROMPTS) as PromptKey[])
        for (const plan of plans.filter((x) => x.prompt === p)) all.push(summarizePlan(plan));
    } finally {
      for (const close of closers.reverse()) await close().catch((e) => log(`cleanup: ${e}`));
    }
  });
  env.loadAfter = loadavg();

  // Every engine must have seen the same prompt lengths.
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    const lens = new Set(all.filter((m) => m.prompt === p).map((m) => m.promptTokens));
    if (lens.size > 1)
      throw new Error(`prompt "${p}" tokenized to different lengths across engines: ${[...lens].join(', ')}`);
  }
  const args = process.argv.slice(2);
  const cmd = `npm run bench:engine${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const section = report(all, env, o, cmd, (performance.now() - t0) / 1000);
  process.stdout.write(`${section}\n`);
  if (cli.json) {
    writeFileSync(
      cli.json,
      JSON.stringify(
        {
          env,
          opts: o,
          prompts: PROMPTS,
          results: all.map(({ lastRun, ...m }) => ({ ...m, lastText: lastRun.text })),
        },
        null,
        1,
      ),
    );
  }
  if (!cli.noWrite) {
    writeBenchSection(
      'engine',
      env.date,
      section,
      "# Benchmarks\n\nSpeed figures, newest sections last. Engine sections are written by `npm run bench:engine` (scripts/bench-engine.ts); rerunning it on the same date replaces that date's section.\n",
    );
    log(`wrote ${BENCH_FILE}`);
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(`error: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
