/**
 * `npm run bench:engine [-- --runs 5 --warmup 1 --tokens 128 --model PATH --skip LIST --json FILE
 *   --no-write --chromium PATH]`
 *
 * Speed of our WebGPU engine on stories260K beside peers, in one run on one machine:
 * - ours in headless Chromium, through the real engine worker (`withHarnessPage`, `window.harness`);
 * - wllama (`@wllama/wllama`: llama.cpp in WebAssembly, CPU) in the same headless Chromium, same file;
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
 * `--skip` takes a comma list of `ours-browser,wllama,ours-node,llama-cpp`. Time boxes keep the run
 * short where a configuration collapses (node-llama-cpp with more threads than free cores can fall to
 * ~1 tok/s on a 2-core machine): a warm-up still running after {@link WARMUP_BUDGET_MS} shrinks that
 * configuration to {@link SLOW_RUNS} runs of fewer tokens, and a measured run past its cap stops early
 * and is kept as a partial run; both are flagged ⚠ in the report.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Token } from 'node-llama-cpp';
import type { Browser, Page } from 'playwright-core';
import type { WllamaRun } from '../src/bench/wllama-page.ts';
import { withHarnessPage } from '../src/cli/harness-server.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import {
  type RequestMetrics,
  requestMetrics,
  type Summary,
  summarize,
  tokenTimesFromChunks,
} from '../src/core/metrics.ts';
import type { GenerateResult } from '../src/core/types.ts';
import { openModelSource } from '../src/library/opener.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { BENCH_FILE, writeBenchSection } from './bench-common.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Context length every engine is loaded with (the model's own). */
const N_CTX = 2048;
/** A warm-up still running after this long marks the configuration as too slow for the full protocol. */
const WARMUP_BUDGET_MS = 6000;
/** Target wall time of one measured run of a slow configuration. */
const SLOW_RUN_MS = 3000;
/** Wall-time cap of one measured run (engines that can stop early); a slow configuration's cap. */
const RUN_CAP_MS = 10_000;
const SLOW_RUN_CAP_MS = 4000;
/** Measured runs of a slow configuration. */
const SLOW_RUNS = 3;

const PROMPTS = {
  short: 'Once upon a time',
  long:
    'Once upon a time, in a small town near the big forest, there lived a little girl named Lily. ' +
    'She had a red ball and a small dog called Max. Every day, Lily and Max went to the park to play. ' +
    'One sunny morning, Lily saw a big tree with a shiny apple on top.',
} as const;
export type PromptKey = keyof typeof PROMPTS;

/** One measured generation, whichever engine made it. */
export interface Run {
  tStartMs: number;
  tokenTimesMs: number[];
  promptTokens: number;
  outputTokenIds?: number[];
  text?: string;
  /** The engine's own prefill/decode rates where it reports them (wllama's llama.cpp timings). */
  internal?: { prefillTokPerS: number; decodeTokPerS: number };
  /** True when the run stopped at its deadline before making all its tokens. */
  cut?: boolean;
}

/** A generation function; `deadlineMs` (performance.now()) lets it stop early where it can. */
type RunOnce = (prompt: string, nTokens: number, deadlineMs?: number) => Promise<Run>;

export interface Measured {
  id: string;
  engine: string;
  runtime: string;
  threads: string;
  prompt: PromptKey;
  promptTokens: number;
  outputTokens: number;
  metrics: RequestMetrics[];
  prefill: Summary;
  decode: Summary;
  ttft: Summary;
  tpot: Summary;
  e2e: Summary;
  internal?: { prefill: Summary; decode: Summary };
  /** Set when the protocol was reduced. */
  reduced?: string;
  lastRun: Run;
}

/** What `--json FILE` holds: the environment, the options, the prompts and each measured configuration. */
export interface BenchEngineJson {
  env: Env;
  opts: unknown;
  prompts: Record<PromptKey, string>;
  results: (Omit<Measured, 'lastRun'> & { lastText: string })[];
}

interface Opts {
  runs: number;
  warmup: number;
  tokens: number;
}

function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

type Meta = { id: string; engine: string; runtime: string; threads: string };

/** An engine configuration ready to generate. */
interface Config {
  meta: Meta;
  runOnce: RunOnce;
}

/** What to measure of one configuration on one prompt, and the runs so far. */
interface Plan {
  config: Config;
  prompt: PromptKey;
  nTokens: number;
  nRuns: number;
  /** Wall-time cap of each measured run. */
  capMs: number;
  reduced?: string;
  runs: Run[];
}

/**
 * Warm-up runs of one configuration on one prompt. A warm-up that cannot finish within
 * {@link WARMUP_BUDGET_MS} shrinks the plan (fewer tokens and runs) and says so.
 */
async function warmUp(config: Config, prompt: PromptKey, o: Opts): Promise<Plan> {
  const plan: Plan = { config, prompt, nTokens: o.tokens, nRuns: o.runs, capMs: RUN_CAP_MS, runs: [] };
  for (let w = 0; w < o.warmup; w++) {
    const t0 = performance.now();
    const r = await config.runOnce(PROMPTS[prompt], o.tokens, t0 + WARMUP_BUDGET_MS);
    const got = r.tokenTimesMs.length;
    if (got < o.tokens) {
      // Too slow for the full protocol here: size runs to ~SLOW_RUN_MS from the warm-up's decode rate.
      const rate = got > 1 ? (got - 1) / ((r.tokenTimesMs[got - 1] - r.tokenTimesMs[0]) / 1000) : 0;
      plan.nTokens = Math.max(8, Math.min(o.tokens, Math.floor((rate * SLOW_RUN_MS) / 1000)));
      plan.nRuns = Math.min(o.runs, SLOW_RUNS);
      plan.capMs = SLOW_RUN_CAP_MS;
      plan.reduced = `warm-up made ${got} of ${o.tokens} tokens in ${(WARMUP_BUDGET_MS / 1000).toFixed(0)} s: measured ${plan.nRuns} runs of ${plan.nTokens} tokens`;
      log(`  ${config.meta.id} ${prompt}: ${plan.reduced}`);
      break;
    }
  }
  return plan;
}

/**
 * Measured runs, interleaved: round r runs every plan once (the order rotated by r), so background load
 * on a shared machine falls on all engines alike rather than on whichever ran in a bad minute.
 */
async function runRounds(plans: Plan[], o: Opts): Promise<void> {
  for (let round = 0; round < o.runs; round++) {
    const due = plans.filter((p) => round < p.nRuns);
    const order = due.map((_, i) => due[(i + round) % due.length]);
    const t0 = performance.now();
    for (const p of order) {
      if (round >= p.nRuns) continue; // shrunk during this round
      const r = await p.config.runOnce(PROMPTS[p.prompt], p.nTokens, performance.now() + p.capMs);
      const got = r.tokenTimesMs.length;
      if (r.cut && got >= 1) {
        // The machine got slower under this configuration: keep the partial run (its rates are still
        // rates; with one token it has a TTFT only) and shrink what is left of the plan.
        const note = `run ${p.runs.length + 1} stopped at the ${(p.capMs / 1000).toFixed(0)} s cap after ${got} of ${p.nTokens} tokens`;
        p.reduced = p.reduced ? `${p.reduced}; ${note}` : note;
        p.nRuns = Math.min(p.nRuns, SLOW_RUNS);
        p.capMs = SLOW_RUN_CAP_MS;
        log(`  ${p.config.meta.id} ${p.prompt}: ${note}`);
      } else if (got !== p.nTokens) {
        throw new Error(
          `${p.config.meta.id} (${p.prompt}): run ${round} made ${got} tokens, expected exactly ${p.nTokens}`,
        );
      }
      p.runs.push(r);
    }
    log(
      `round ${round + 1}/${o.runs}: ${due.length} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
}

/** {@link summarize} over the values that are not NaN (a one-token run has no decode rate); all NaN when none is. */
function summarizeDefined(values: number[]): Summary {
  const v = values.filter((x) => !Number.isNaN(x));
  if (v.length > 0) return summarize(v);
  const n = Number.NaN;
  return { n: 0, mean: n, median: n, p90: n, p99: n, std: n, min: n, max: n };
}

/** Metrics and summaries of a finished plan. */
function summarizePlan(plan: Plan): Measured {
  const { runs, config, prompt } = plan;
  const metrics = runs.map((r) => requestMetrics(r));
  const promptTokens = runs[0].promptTokens;
  if (runs.some((r) => r.promptTokens !== promptTokens))
    throw new Error(`${config.meta.id}: prompt length varies between runs`);
  const m: Measured = {
    ...config.meta,
    prompt,
    promptTokens,
    outputTokens: plan.nTokens,
    metrics,
    prefill: summarize(metrics.map((x) => x.prefillTokPerS)),
    decode: summarizeDefined(metrics.map((x) => x.decodeTokPerS)),
    ttft: summarize(metrics.map((x) => x.ttftMs)),
    tpot: summarizeDefined(metrics.map((x) => x.tpotMs)),
    e2e: summarize(metrics.map((x) => x.e2eMs)),
    reduced: plan.reduced,
    lastRun: runs[runs.length - 1],
  };
  if (runs.every((r) => r.internal)) {
    m.internal = {
      prefill: summarize(runs.map((r) => r.internal!.prefillTokPerS)),
      decode: summarize(runs.map((r) => r.internal!.decodeTokPerS)),
    };
  }
  log(
    `  ${config.meta.id.padEnd(18)} ${prompt.padEnd(5)} prompt ${promptTokens} tok: prefill ${fmt(m.prefill.median)} tok/s, decode ${fmt(m.decode.median)} tok/s (median of ${runs.length})`,
  );
  return m;
}

/** `median [min–max]`, or a dash when there are no values. */
function medRange(s: Summary): string {
  return s.n === 0 ? '—' : `${fmt(s.median)} [${fmt(s.min)}–${fmt(s.max)}]`;
}

function fmt(x: number): string {
  if (Number.isNaN(x)) return '—';
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1 || a === 0) return x.toFixed(2);
  return x.toPrecision(2);
}

function pkgVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(resolve(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}

function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    // Uncommitted changes to what the measured engines run (the tree may be shared with others' work).
    const dirty = execFileSync(
      'git',
      ['status', '--porcelain', '--', 'src/webgpu', 'src/core', 'src/gguf', 'src/model', 'workers'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    )
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => l.slice(3));
    if (!dirty.length) return head;
    const shown = dirty.slice(0, 6).join(', ');
    return `${head} plus uncommitted changes to ${shown}${dirty.length > 6 ? ` and ${dirty.length - 6} more` : ''}`;
  } catch {
    return 'unknown';
  }
}

export type AdapterInfo = {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallback: boolean;
};

function adapterText(a: AdapterInfo | undefined): string {
  if (!a) return 'unknown';
  const parts = [a.vendor, a.architecture, a.device, a.description].filter((s) => s && s.length > 0);
  const soft = a.isFallback || /swiftshader/i.test(parts.join(' '));
  return `${parts.join(' / ') || '(empty adapter info)'}${a.isFallback ? ', isFallbackAdapter' : ''}${soft ? ' — **software adapter (SwiftShader, runs on the CPU): not GPU figures**' : ''}`;
}

/** Length of the common prefix of two id lists. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

export interface Env {
  date: string;
  cpu: string;
  nCpu: number;
  loadBefore: number[];
  loadAfter?: number[];
  chromium?: string;
  browserAdapter?: AdapterInfo;
  nodeAdapter?: AdapterInfo;
  wllama?: { libllama: string; multithread: boolean; threads: number; crossOriginIsolated: boolean };
  llamaCpp?: { release: string; cpuMathCores: number; maxThreads: number };
  commit: string;
}

// ---------------------------------------------------------------------------------------------------
// Engines: each setup loads a model and returns ready configurations (and how to free them).

async function oursBrowser(page: Page, modelUrl: string, env: Env): Promise<Config> {
  log('ours (Chromium, engine worker): loading');
  await page.evaluate(([u, c]) => window.harness.load(u as string, c as number), [modelUrl, N_CTX] as const);
  env.browserAdapter = (await page.evaluate(() => window.harness.adapter())) as AdapterInfo | undefined;
  const runOnce: RunOnce = async (prompt, n) => {
    const r: GenerateResult = await page.evaluate((req) => window.harness.generate(req), {
      prompt,
      maxTokens: n,
      ignoreEos: true,
      temperature: 0,
    });
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: r.tokenTimesMs,
      promptTokens: r.promptTokenIds.length,
      outputTokenIds: r.outputTokenIds,
      text: r.text,
    };
  };
  const runtime = `Chromium ${env.chromium ?? ''}`.trim();
  return {
    meta: { id: 'ours-browser', engine: 'ours (WebGPU, engine worker)', runtime, threads: '—' },
    runOnce,
  };
}

async function wllamaBrowser(
  browser: Browser,
  modelUrl: string,
  env: Env,
): Promise<Config & { close(): Promise<void> }> {
  log('wllama (Chromium, wasm, CPU): loading');
  const ctx = await browser.newContext();
  const wp = await ctx.newPage();
  await wp.goto(`${new URL(modelUrl).origin}/src/bench/wllama.html`);
  await wp.waitForFunction(() => document.body.dataset.ready === '1', undefined, { timeout: 60_000 });
  const info = await wp.evaluate(
    ([u, c]) => window.wllamaBench.load(u as string, { nCtx: c as number, nThreads: 1 }),
    [modelUrl, N_CTX] as const,
  );
  env.wllama = info;
  const runOnce: RunOnce = async (prompt, n) => {
    const r: WllamaRun = await wp.evaluate(([p, k]) => window.wllamaBench.run(p as string, k as number), [
      prompt,
      n,
    ] as const);
    if (r.cachedTokens !== 0) throw new Error(`wllama reused ${r.cachedTokens} cached prompt tokens`);
    // One token per token chunk; tokens whose text was held back are counted at the final chunk.
    const tokenChunks = r.isTokenChunk.filter(Boolean).length;
    if (tokenChunks > r.completionTokens)
      throw new Error(`wllama sent ${tokenChunks} token chunks for ${r.completionTokens} tokens`);
    const counts = r.isTokenChunk.map((t) => (t ? 1 : 0));
    counts[counts.length - 1] += r.completionTokens - tokenChunks;
    const t = r.timings;
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: tokenTimesFromChunks(r.chunkTimesMs, counts),
      promptTokens: r.promptTokens,
      text: r.text,
      internal: t
        ? {
            prefillTokPerS: (t.prompt_n * 1000) / t.prompt_ms,
            decodeTokPerS: ((t.predicted_n - 1) * 1000) / t.predicted_ms,
          }
        : undefined,
    };
  };
  return {
    meta: {
      id: 'wllama',
      engine: `wllama ${pkgVersion('@wllama/wllama')} (llama.cpp ${info.libllama}, wasm, CPU)`,
      runtime: `Chromium ${env.chromium ?? ''}`.trim(),
      threads: `${info.threads}${info.multithread ? ' (multi-thread build)' : ' (single-thread)'}`,
    },
    runOnce,
    close: () => ctx.close(),
  };
}

async function oursNode(modelPath: string, env: Env): Promise<Config & { close(): Promise<void> }> {
  setupNodeVulkan();
  const { WebGpuEngine } = await import('../src/webgpu/engine.ts');
  const engine = new WebGpuEngine({ openModel: openModelSource });
  log('ours (Node, Dawn): loading');
  await engine.load({ path: modelPath }, { contextLength: N_CTX });
  env.nodeAdapter = engine.gpuContext?.info;
  const runOnce: RunOnce = async (prompt, n) => {
    const r = await engine.generate({ prompt, maxTokens: n, ignoreEos: true, temperature: 0 });
    return {
      tStartMs: r.tStartMs,
      tokenTimesMs: r.tokenTimesMs,
      promptTokens: r.promptTokenIds.length,
      outputTokenIds: r.outputTokenIds,
      text: r.text,
    };
  };
  return {
    meta: {
      id: 'ours-node',
      engine: 'ours (WebGPU)',
      runtime: `Node ${process.versions.node}, webgpu ${pkgVersion('webgpu')} (Dawn)`,
      threads: '—',
    },
    runOnce,
    close: () => engine.dispose(),
  };
}

/** node-llama-cpp with 1 thread, its default thread count, and one thread per core when that is neither. */
async function llamaCpp(modelPath: string, env: Env): Promise<{ configs: Config[]; close(): Promise<void> }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const rel = llama.llamaCppRelease;
  env.llamaCpp = { release: rel.release, cpuMathCores: llama.cpuMathCores, maxThreads: llama.maxThreads };
  const model = await llama.loadModel({ modelPath });
  const contexts: { dispose(): Promise<void> }[] = [];
  const configs: Config[] = [];
  const settings: (number | undefined)[] = [1, undefined];
  for (const threads of settings) {
    const context = await model.createContext({ contextSize: N_CTX, sequences: 1, threads });
    contexts.push(context);
    const actual = context.currentThreads;
    if (threads === undefined && actual !== cpus().length && !settings.includes(cpus().length))
      settings.push(cpus().length);
    const seq = context.getSequence();
    log(`node-llama-cpp, ${threads === undefined ? 'default' : threads} thread(s) → ${actual}`);
    const runOnce: RunOnce = async (prompt, n, deadlineMs) => {
      const ids = [model.tokens.bos!, ...model.tokenize(prompt)];
      await seq.clearHistory();
      const times: number[] = [];
      const outIds: Token[] = [];
      const tStartMs = performance.now();
      for await (const tok of seq.evaluate(ids, { temperature: 0 })) {
        times.push(performance.now());
        outIds.push(tok);
        if (outIds.length >= n) break;
        if (deadlineMs !== undefined && performance.now() > deadlineMs) break;
      }
      return {
        tStartMs,
        tokenTimesMs: times,
        promptTokens: ids.length,
        outputTokenIds: outIds,
        text: model.detokenize(outIds),
        cut: outIds.length < n,
      };
    };
    configs.push({
      meta: {
        id: threads === undefined ? 'llama-cpp-default' : `llama-cpp-${threads}t`,
        engine: `node-llama-cpp ${pkgVersion('node-llama-cpp')} (llama.cpp tag ${rel.release}, native CPU)`,
        runtime: `Node ${process.versions.node}`,
        threads: threads === undefined ? `default (${actual})` : String(actual),
      },
      runOnce,
    });
  }
  return {
    configs,
    close: async () => {
      for (const c of contexts) await c.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Report

function report(all: Measured[], env: Env, o: Opts, cmd: string, wallS: number): string {
  const L: string[] = [];
  const title = `## ${env.date}: stories260K, our engine vs wllama and node-llama-cpp`;
  L.push(`<!-- bench:engine ${env.date} -->`, title, '');
  L.push(
    `Recorded by \`${cmd}\` (scripts/bench-engine.ts) in ${wallS.toFixed(0)} s, commit ${env.commit}.`,
    '',
  );
  L.push('| | |', '| --- | --- |');
  L.push(
    `| CPU | ${env.cpu}, ${env.nCpu} logical CPUs (load average 1/5/15 min before the run: ${env.loadBefore.map((x) => x.toFixed(2)).join(', ')}; after: ${env.loadAfter?.map((x) => x.toFixed(2)).join(', ') ?? '?'}; the 'after' figure counts this run's own threads too; other developers' processes shared the machine) |`,
  );
  if (env.chromium)
    L.push(`| Chromium | ${env.chromium}, headless, launched by src/cli/harness-server.ts (no GPU flags) |`);
  if (env.browserAdapter)
    L.push(`| WebGPU adapter in Chromium (ours) | ${adapterText(env.browserAdapter)} |`);
  if (env.nodeAdapter) L.push(`| WebGPU adapter in Node (ours) | ${adapterText(env.nodeAdapter)} |`);
  if (env.wllama)
    L.push(
      `| wllama | @wllama/wllama ${pkgVersion('@wllama/wllama')}, llama.cpp ${env.wllama.libllama}, wasm from node_modules served by Vite, \`n_gpu_layers: 0\` (CPU), ${env.wllama.multithread ? 'multi-thread' : 'single-thread'} (${env.wllama.threads} thread; page cross-origin isolated: ${env.wllama.crossOriginIsolated}) |`,
    );
  if (env.llamaCpp)
    L.push(
      `| node-llama-cpp | ${pkgVersion('node-llama-cpp')}, llama.cpp release tag ${env.llamaCpp.release} (as node-llama-cpp records it), prebuilt CPU binary (\`getLlama({gpu: false, build: 'never'})\`); cpuMathCores ${env.llamaCpp.cpuMathCores}, maxThreads ${env.llamaCpp.maxThreads} |`,
    );
  L.push(
    `| Protocol | same text prompts with BOS (short: ${JSON.stringify(PROMPTS.short)}; long: the ${all.find((m) => m.prompt === 'long')?.promptTokens ?? '?'}-token story opening in scripts/bench-engine.ts), greedy, exactly ${o.tokens} output tokens with EOS ignored, context ${N_CTX}, ${o.warmup} warm-up + ${o.runs} measured runs per engine and prompt, warm-ups first, then the measured runs interleaved (each round runs every engine and prompt once, the order rotated each round, so background load falls on all alike) |`,
  );
  L.push(
    '| Metrics | vLLM `bench serve`: TTFT = request start → first token; prefill tok/s = prompt tokens / TTFT; decode tok/s = (output tokens − 1) / (E2E − TTFT); TPOT = (E2E − TTFT) / (output tokens − 1). Timestamps where the token id becomes known to the caller: ours in the worker (Chromium) or process (Node); wllama on its page as each streamed chunk arrives; node-llama-cpp as its `evaluate` generator yields |',
  );
  L.push('');
  L.push('Median over the measured runs, [min–max] beside it.', '');
  L.push(
    '| engine | runtime | threads | prompt tokens | prefill tok/s | decode tok/s | TTFT ms | TPOT ms | E2E ms | runs × tokens |',
  );
  L.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    for (const m of all.filter((x) => x.prompt === p)) {
      L.push(
        `| ${m.engine} | ${m.runtime} | ${m.threads} | ${m.promptTokens} | ${medRange(m.prefill)} | ${medRange(m.decode)} | ${fmt(m.ttft.median)} | ${fmt(m.tpot.median)} | ${fmt(m.e2e.median)} | ${m.metrics.length} × ${m.metrics.every((x) => x.outputTokens === m.outputTokens) ? m.outputTokens : `≤${m.outputTokens}`}${m.reduced ? ' ⚠' : ''} |`,
      );
    }
  }
  L.push('');

  // Ratios: ours ÷ peer, medians.
  const ours = (id: string, p: PromptKey) => all.find((m) => m.id === id && m.prompt === p);
  const peers = all.filter((m) => !m.id.startsWith('ours-'));
  if (peers.length && (ours('ours-browser', 'short') || ours('ours-node', 'short'))) {
    L.push('Ratios of medians, ours ÷ peer (above 1: ours is faster).', '');
    L.push(
      '| prompt | peer | threads | prefill: ours Chromium ÷ peer | prefill: ours Node ÷ peer | decode: ours Chromium ÷ peer | decode: ours Node ÷ peer |',
    );
    L.push('| --- | --- | --- | ---: | ---: | ---: | ---: |');
    const r = (a: number | undefined, b: number) => {
      const x = a === undefined ? Number.NaN : a / b;
      return Number.isFinite(x) ? `${fmt(x)}×` : '—';
    };
    for (const p of Object.keys(PROMPTS) as PromptKey[]) {
      const ob = ours('ours-browser', p);
      const on = ours('ours-node', p);
      for (const m of peers.filter((x) => x.prompt === p)) {
        const name = `${m.id === 'wllama' ? 'wllama (Chromium)' : 'node-llama-cpp'}${m.reduced ? ' ⚠' : ''}`;
        L.push(
          `| ${p} (${m.promptTokens}) | ${name} | ${m.threads} | ${r(ob?.prefill.median, m.prefill.median)} | ${r(on?.prefill.median, m.prefill.median)} | ${r(ob?.decode.median, m.decode.median)} | ${r(on?.decode.median, m.decode.median)} |`,
        );
      }
    }
    L.push('');
  }

  L.push('<details><summary>All statistics (tok/s: mean, median, p90, p99, population std)</summary>', '');
  L.push(
    "Percentiles interpolate linearly between closest ranks (NumPy's default), std has ddof = 0 (src/core/metrics.ts).",
    '',
  );
  L.push(
    '| engine | threads | prompt | prefill mean | median | p90 | p99 | std | decode mean | median | p90 | p99 | std |',
  );
  L.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const s5 = (s: Summary) => [s.mean, s.median, s.p90, s.p99, s.std].map(fmt).join(' | ');
  for (const m of all)
    L.push(`| ${m.id} | ${m.threads} | ${m.prompt} | ${s5(m.prefill)} | ${s5(m.decode)} |`);
  L.push('', '</details>', '');

  L.push('Notes:', '');
  const w = all.filter((m) => m.internal);
  for (const m of w) {
    L.push(
      `- ${m.id} ${m.prompt}: llama.cpp's own timings inside wllama (without its page ↔ worker round trips) give prefill ${fmt(m.internal!.prefill.median)} and decode ${fmt(m.internal!.decode.median)} tok/s (medians); the table's figures are what a page sees.`,
    );
  }
  for (const m of all.filter((x) => x.reduced)) L.push(`- ⚠ ${m.id} ${m.prompt}: ${m.reduced}.`);
  // Agreement of greedy outputs with llama.cpp (node-llama-cpp, 1 thread).
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    const ref = all.find((m) => m.id === 'llama-cpp-1t' && m.prompt === p)?.lastRun.outputTokenIds;
    if (!ref) continue;
    for (const id of ['ours-browser', 'ours-node']) {
      const m = ours(id, p);
      if (m?.lastRun.outputTokenIds)
        L.push(
          `- ${id} ${p}: the first ${commonPrefix(m.lastRun.outputTokenIds, ref)} of ${ref.length} greedy output ids equal llama.cpp's (node-llama-cpp, 1 thread).`,
        );
    }
  }
  for (const p of Object.keys(PROMPTS) as PromptKey[]) {
    const wt = all.find((m) => m.id === 'wllama' && m.prompt === p)?.lastRun.text;
    const ot = ours('ours-browser', p)?.lastRun.text;
    if (wt === undefined || ot === undefined) continue;
    let k = 0;
    while (k < wt.length && k < ot.length && wt[k] === ot[k]) k++;
    L.push(
      `- wllama ${p}: its text and ours (Chromium) agree on the first ${k} of ${Math.max(wt.length, ot.length)} characters.`,
    );
  }
  L.push(
    '- llama.cpp with `ignore_eos` (wllama) masks EOS out of the sampler, while ours and node-llama-cpp feed an argmax EOS back and continue, so their texts may differ after an EOS; the work per token is the same.',
  );
  L.push(`<!-- /bench:engine ${env.date} -->`);
  return L.join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      runs: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '1' },
      tokens: { type: 'string', default: '128' },
      skip: { type: 'string', default: '' },
      json: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      chromium: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    log(
      'usage: npm run bench:engine -- [--runs 5] [--warmup 1] [--tokens 128] [--model PATH] [--skip ours-browser,wllama,ours-node,llama-cpp] [--json FILE] [--no-write] [--chromium PATH]',
    );
    return 0;
  }
  const o: Opts = { runs: Number(values.runs), warmup: Number(values.warmup), tokens: Number(values.tokens) };
  if (!(o.runs >= 1 && o.warmup >= 0 && o.tokens >= 2))
    throw new Error('need --runs ≥ 1, --warmup ≥ 0, --tokens ≥ 2');
  const modelPath = resolve(values.model ?? process.env.BENCH_MODEL ?? stories260kPath());
  if (!existsSync(modelPath)) throw new Error(`model not found: ${modelPath}`);
  const skip = new Set(values.skip.split(',').filter(Boolean));
  const env: Env = {
    date: new Date().toISOString().slice(0, 10),
    cpu: cpuModel(),
    nCpu: cpus().length,
    loadBefore: loadavg(),
    commit: gitCommit(),
  };
  const t0 = performance.now();
  const all: Measured[] = [];
  await withHarnessPage({ modelPath, chromium: values.chromium }, async (page, modelUrl) => {
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
  if (values.json) {
    writeFileSync(
      values.json,
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
  if (!values['no-write']) {
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
