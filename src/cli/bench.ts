/**
 * `npm run bench -- [--model PATH|URL|synthetic:NAME] [--engine webgpu] [--prompt TEXT | --prompts FILE|SET]
 *   [--max-tokens N] [--runs N] [--warmup N] [--ignore-eos] [--temperature T] [--top-k K] [--top-p P]
 *   [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--kv-type f16|f32] [--json FILE] [--chromium PATH]
 *   [--gpu] [--allow-software] [--headed] [--no-roofline] [--no-cpu-match] [--fail-under-decode-tps X]
 *   [--fail-over-ttft-ms X] [--junit FILE] [--summary-md FILE] [--timeout-s N] [--verbose]`
 *
 * The benchmark page, headless: builds the page if its sources changed (into `dist/bench/`, beside any other
 * build; src/cli/page-build.ts), serves it (and a local model file,
 * with range requests) on 127.0.0.1, opens it in headless Chromium through Playwright and runs the same
 * page code a person uses (`window.benchApi`, src/bench/page-api.ts). Progress on stderr, a results
 * table on stdout, the result file (schemaVersion 1) with `--json`.
 *
 * For CI (src/bench/ci-report.ts, docs/gpu-ci.md): `--junit FILE` writes a JUnit XML report (a test case
 * for the run and one per threshold; a failed run writes one too, with an `<error>`), `--summary-md FILE`
 * appends a Markdown table (as `$GITHUB_STEP_SUMMARY` expects). With `--gpu` a software adapter
 * (SwiftShader, llvmpipe, `isFallbackAdapter`) ends the run with exit 1 as soon as the page has read the
 * adapter, before a model is downloaded or loaded and before llama.cpp's CPU match, unless
 * `--allow-software`: a GPU job must not pass on CPU figures, nor spend CPU time before failing.
 *
 * Exit codes: 0 done; 1 failed (the message says why); 2 bad arguments; 3 a threshold was missed.
 */

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Browser, chromium, type Page } from 'playwright-core';
import { checkThresholds, type RunError, softwareDeviceReasons } from '../bench/ci-report.ts';
import { llamaCppGreedy } from '../bench/cpu-match.ts';
import { DEFAULT_PLAN, defaultPlanText } from '../bench/default-plan.ts';
import type { BenchEvent, BenchModelSpec, BenchOptions } from '../bench/page-api.ts';
import { isPromptSetName, parsePromptsFile, promptsFor } from '../bench/prompts.ts';
import { formatResultText } from '../bench/report.ts';
import type { BenchDevice, BenchPlan, BenchPrompt, BenchResult } from '../bench/types.ts';
import { EngineError, type EngineErrorCode } from '../core/errors.ts';
import type { KvType, LoadProgress, SamplingParams } from '../core/types.ts';
import { openGguf } from '../gguf/reader.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { findStories260K } from '../testing/models.ts';
import { fmtBytes, fmtPct, fmtSig } from '../util/format.ts';
import { parseSyntheticName, SYNTHETIC_FTYPES, SYNTHETIC_SHAPES } from '../webgpu/model/synthetic.ts';
import {
  CHROMIUM_OPTIONS,
  CHROMIUM_USAGE,
  chromiumArg,
  intArg,
  isUsageError,
  KV_TYPE_USAGE,
  kvTypeArg,
  numArg,
  optIntArg,
  SAMPLING_FLAGS,
  samplingArgs,
  secondsArg,
  UsageError,
} from './args.ts';
import { chromiumArgs, resolveChromium } from './browser.ts';
import { runError, writeCiFiles } from './ci-files.ts';
import {
  formatLlamaBench,
  LLAMA_BENCH_OPTIONS,
  LLAMA_BENCH_USAGE,
  llamaBenchEventLine,
  llamaBenchOptions,
} from './llama-bench-args.ts';
import { CACHE_OPTIONS, CACHE_USAGE, cachedModel, isRemoteModel, modelUrl } from './model-cache.ts';
import { ensureBuiltPage } from './page-build.ts';
import { isRemoteArgv, runRemoteCli } from './remote.ts';
import { formatCliError, runCli } from './run.ts';
import { type StaticServer, startStaticServer } from './static-server.ts';

const USAGE = `usage: npm run bench -- [options]

  --model PATH|URL|hf:OWNER/REPO/FILE.gguf[@REV]|synthetic:SHAPE-TYPE
                                    GGUF file (a split model: its first part), GGUF URL or Hugging Face file
                                    (downloaded once into the cache, see --cache-dir), or a synthetic model:
                                    real shapes, random weights made
                                    on the GPU (SHAPE: ${SYNTHETIC_SHAPES.map((s) => s.id).join(', ')};
                                    TYPE: ${SYNTHETIC_FTYPES.join(', ')}).
                                    Default: stories260K.gguf ($STORIES260K, else models/, else
                                    ../shared/models/; \`npm run setup\` fetches it) if present, else
                                    synthetic:stories260k-f32 (the same shapes).
  --engine webgpu|webllm|remote     the engine (webllm: --model is a WebLLM prebuilt id, needs network;
                                    remote: an OpenAI-compatible server; --engine remote --help)
  --prompt TEXT                     one custom prompt
  --prompts FILE|SET                a prompts file (JSON array, or one prompt per line) or a built-in set:
                                    short, medium, long, all (default: ${DEFAULT_PLAN.promptSet})
  --max-tokens N                    new tokens per run (default ${DEFAULT_PLAN.maxTokens})
  --runs N                          measured runs per prompt (default ${DEFAULT_PLAN.runs})
  --warmup N                        warm-up runs, not counted (default ${DEFAULT_PLAN.warmup})
  --ignore-eos                      decode exactly --max-tokens tokens
  --temperature T                   sampling temperature (default 0 = greedy); with the flags below, applied
                                    in llama.cpp's chain order and recorded in the result's plan.sampling
  --top-k K                         keep the K most likely tokens (0 = off)
  --top-p P                         nucleus: the smallest set with probability ≥ P (0 < P ≤ 1; 1 = off)
  --min-p P                         drop tokens below P × the top probability (0 ≤ P ≤ 1; 0 = off)
  --repeat-penalty R                penalty on recently seen tokens (> 0; 1 = off)
  --seed S                          seed of the sampler's draws (an integer)
  --ctx N                           context length (KV cache) in tokens
  ${KV_TYPE_USAGE}; recorded in the result's model.kvType
  --default-limits                  request only WebGPU's default limits (128 MiB bindings, 8 storage
                                    buffers per stage), as a phone or integrated GPU may grant them; the
                                    result's model.limits records the limits used
  --json FILE                       write the result (schemaVersion 1) to FILE
${CHROMIUM_USAGE}
  --gpu                             Chromium flags for a hardware GPU (Linux: Vulkan; macOS: ANGLE on Metal);
                                    a software adapter (SwiftShader, llvmpipe, isFallbackAdapter) then fails
                                    the run (exit 1)
  --allow-software                  with --gpu, run on a software adapter anyway (its figures measure the CPU)
  --headed                          open a Chromium window instead of headless (on a Linux GPU runner, under
                                    xvfb-run: adapter selection can differ from headless; docs/gpu-ci.md)
  --no-roofline                     skip the bandwidth and matmul measurements
  --no-cpu-match                    skip llama.cpp's greedy reference run (the result's quality block)
  --fail-under-decode-tps X         exit 3 when the median decode tokens/s is below X
  --fail-over-ttft-ms X             exit 3 when the median TTFT is above X ms
  --junit FILE                      write a JUnit XML report to FILE: a test case for the run and one per
                                    threshold (a missed one is a <failure> with the measured figure); a failed
                                    run (exit 1) still writes one, with an <error>
  --summary-md FILE                 append a Markdown table (model, device, adapter kind, medians, thresholds
                                    ✓/✗) to FILE, e.g. "$GITHUB_STEP_SUMMARY"; appended, never overwritten
  --timeout-s N                     bound on the model load and on each request (default 600)
  --verbose                         print Vite's own lines (its warnings) on stderr when the page is rebuilt;
                                    without it a rebuild says only how many warnings it had
${CACHE_USAGE}
${LLAMA_BENCH_USAGE}

The default plan (${defaultPlanText()}) is the benchmark page's default too
(src/bench/default-plan.ts), so their figures compare.

Exit status: 0 done, 1 failed, 2 bad arguments, 3 a threshold was missed.`;

/** Default model: the test model where src/testing/models.ts finds it (undefined when missing). */
const DEFAULT_MODEL = findStories260K();
/** Default model when that file is missing: its shapes, random weights made on the GPU. */
const DEFAULT_SYNTHETIC = 'synthetic:stories260k-f32';

function log(s: string): void {
  process.stderr.write(`bench: ${s}\n`);
}

/** The parsed command line. */
interface BenchArgs {
  model: { spec: BenchModelSpec; localPath?: string; note?: string; remote?: string };
  /** The model cache: a directory, or off (--no-cache). */
  cache: { dir?: string; enabled: boolean };
  engine: string;
  plan: BenchPlan;
  contextLength?: number;
  /** Request only the WebGPU spec's default limits (--default-limits). */
  defaultLimits: boolean;
  /** KV-cache element type (--kv-type); undefined = the engine's default (f16). */
  kvType?: KvType;
  json?: string;
  /** --chromium PATH (or its alias --browser). */
  browser?: string;
  gpu: boolean;
  /** Print Vite's output when the page is rebuilt (--verbose). */
  verbose: boolean;
  roofline: boolean;
  /** Score our top-1 against llama.cpp's greedy tokens (local GGUF files; --no-cpu-match turns it off). */
  cpuMatch: boolean;
  failUnderDecodeTps?: number;
  failOverTtftMs?: number;
  /** Run on a software adapter even with --gpu (--allow-software). */
  allowSoftware: boolean;
  /** Launch Chromium with a window (--headed; under xvfb-run on a display-less Linux runner). */
  headed: boolean;
  /** --junit FILE: the JUnit XML report (written, also for a failed run). */
  junit?: string;
  /** --summary-md FILE: the Markdown summary (appended). */
  summaryMd?: string;
  timeoutMs: number;
  /** --llama-bench, the memory probe, the cost flags (src/cli/llama-bench-args.ts). */
  part2: ReturnType<typeof llamaBenchOptions>;
}

function parse(argv: string[]): BenchArgs | 'help' {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    options: {
      model: { type: 'string' },
      engine: { type: 'string', default: 'webgpu' },
      prompt: { type: 'string' },
      prompts: { type: 'string' },
      'max-tokens': { type: 'string' },
      runs: { type: 'string' },
      warmup: { type: 'string' },
      'ignore-eos': { type: 'boolean', default: false },
      ctx: { type: 'string' },
      'default-limits': { type: 'boolean', default: false },
      'kv-type': { type: 'string' },
      temperature: { type: 'string' },
      'top-k': { type: 'string' },
      'top-p': { type: 'string' },
      'min-p': { type: 'string' },
      'repeat-penalty': { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'string' },
      ...CHROMIUM_OPTIONS,
      verbose: { type: 'boolean', default: false },
      gpu: { type: 'boolean', default: false },
      'allow-software': { type: 'boolean', default: false },
      headed: { type: 'boolean', default: false },
      junit: { type: 'string' },
      'summary-md': { type: 'string' },
      'no-roofline': { type: 'boolean', default: false },
      'no-cpu-match': { type: 'boolean', default: false },
      'fail-under-decode-tps': { type: 'string' },
      'fail-over-ttft-ms': { type: 'string' },
      'timeout-s': { type: 'string' },
      ...CACHE_OPTIONS,
      help: { type: 'boolean', short: 'h', default: false },
      ...LLAMA_BENCH_OPTIONS,
    },
  });
  if (values.help) return 'help';

  // Every number first: a bad one is a usage error (exit 2) whatever else is wrong.
  const numbers = {
    maxTokens: intArg(values['max-tokens'], 'max-tokens', 1, DEFAULT_PLAN.maxTokens),
    runs: intArg(values.runs, 'runs', 1, DEFAULT_PLAN.runs),
    warmup: intArg(values.warmup, 'warmup', 0, DEFAULT_PLAN.warmup),
    contextLength: optIntArg(values.ctx, 'ctx', 1),
    failUnderDecodeTps: numArg(values['fail-under-decode-tps'], 'fail-under-decode-tps', { min: 0 }),
    failOverTtftMs: numArg(values['fail-over-ttft-ms'], 'fail-over-ttft-ms', { min: 0 }),
    timeoutS: secondsArg(values['timeout-s'], 'timeout-s') ?? 600,
    // The engine API's own rules (src/core/validate.ts SAMPLING_RULES), as generate and the page read them.
    sampling: samplingArgs(values),
    part2: llamaBenchOptions(values),
  };
  const kvType = kvTypeArg(values['kv-type']);
  const sampling: SamplingParams | undefined =
    Object.keys(numbers.sampling).length > 0 ? numbers.sampling : undefined;
  if (sampling && numbers.part2.llamaBench)
    throw new UsageError(
      `${Object.keys(SAMPLING_FLAGS)
        .filter((f) => values[f as keyof typeof SAMPLING_FLAGS] !== undefined)
        .map((f) => `--${f}`)
        .join(', ')} apply to the prompt plan; --llama-bench's tg tests decode greedily, as llama-bench does`,
    );

  // Model.
  let model: BenchArgs['model'];
  const m = values.model;
  if (values.engine === 'webllm') {
    // A WebLLM prebuilt model id (src/webllm/): the page's WebLLM worker fetches it.
    if (!m || m.startsWith('synthetic:'))
      throw new UsageError('--engine webllm needs --model ID, e.g. Llama-3.2-1B-Instruct-q4f32_1-MLC');
    model = { spec: { url: `webllm:${m}`, id: m } };
  } else if (m === undefined) {
    model = DEFAULT_MODEL
      ? {
          spec: { url: '', id: basename(DEFAULT_MODEL) },
          localPath: DEFAULT_MODEL,
          note: `default model (no --model given): ${DEFAULT_MODEL}`,
        }
      : {
          spec: { synthetic: DEFAULT_SYNTHETIC },
          note: `default model (no --model given, stories260K.gguf not found: $STORIES260K, models/, ../shared/models/; \`npm run setup\` fetches it): ${DEFAULT_SYNTHETIC}, the same shapes with random weights`,
        };
  } else if (m.startsWith('synthetic:')) {
    try {
      parseSyntheticName(m);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    model = { spec: { synthetic: m } };
  } else if (isRemoteModel(m)) {
    // Downloaded into the cache in main() (unless --no-cache); hf: resolved now for a clear usage error.
    let url: string;
    try {
      url = modelUrl(m);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    model = { spec: { url, id: m }, remote: m };
  } else {
    const p = resolve(m);
    let st: ReturnType<typeof statSync> | undefined;
    try {
      st = statSync(p);
    } catch {
      throw new EngineError('invalid_argument', `cannot open model file ${m}: no such file`);
    }
    if (!st.isFile()) throw new EngineError('invalid_argument', `model path ${m} is not a file`);
    model = { spec: { url: '', id: basename(p) }, localPath: p };
  }

  // `--engine remote` never gets here: main() hands it to src/cli/remote.ts first (isRemoteArgv).
  const engine = values.engine ?? 'webgpu';
  if (engine !== 'webgpu' && engine !== 'webllm')
    throw new UsageError(`unknown --engine ${engine} (webgpu, webllm, remote)`);

  // Prompts.
  if (values.prompt !== undefined && values.prompts !== undefined)
    throw new UsageError('give --prompt or --prompts, not both');
  let prompts: BenchPrompt[];
  if (values.prompt !== undefined) {
    if (values.prompt === '') throw new UsageError('--prompt is empty');
    prompts = promptsFor('custom', values.prompt);
  } else if (values.prompts !== undefined) {
    const v = values.prompts;
    if (existsSync(v)) {
      try {
        prompts = parsePromptsFile(readFileSync(v, 'utf8'));
      } catch (e) {
        throw new UsageError(`cannot read prompts from ${v}: ${(e as Error).message}`);
      }
    } else if (v === 'all' || isPromptSetName(v)) prompts = promptsFor(v);
    else
      throw new UsageError(`--prompts ${v}: no such file, and not a built-in set (short, medium, long, all)`);
  } else prompts = promptsFor(DEFAULT_PLAN.promptSet);

  if (values['no-cache'] && values['cache-dir'])
    throw new UsageError('give --cache-dir or --no-cache, not both');
  if (values.headed && process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)
    throw new UsageError(
      '--headed needs a display and none is set ($DISPLAY): run it under Xvfb, e.g. xvfb-run -a npm run bench -- --headed …',
    );
  if (values.junit === '') throw new UsageError('--junit is empty: give the file to write');
  if (values['summary-md'] === '')
    throw new UsageError('--summary-md is empty: give the file to append to (is $GITHUB_STEP_SUMMARY set?)');
  return {
    model,
    cache: { dir: values['cache-dir'], enabled: !values['no-cache'] },
    engine,
    plan: {
      prompts,
      maxTokens: numbers.maxTokens,
      runs: numbers.runs,
      warmup: numbers.warmup,
      ignoreEos: values['ignore-eos'] || DEFAULT_PLAN.ignoreEos,
      ...(sampling ? { sampling } : {}),
    },
    contextLength: numbers.contextLength,
    defaultLimits: values['default-limits'] ?? false,
    kvType,
    json: values.json,
    browser: chromiumArg(values),
    gpu: values.gpu ?? false,
    verbose: values.verbose ?? false,
    roofline: !values['no-roofline'],
    cpuMatch: !values['no-cpu-match'],
    failUnderDecodeTps: numbers.failUnderDecodeTps,
    failOverTtftMs: numbers.failOverTtftMs,
    allowSoftware: values['allow-software'] ?? false,
    headed: values.headed ?? false,
    junit: values.junit,
    summaryMd: values['summary-md'],
    timeoutMs: numbers.timeoutS * 1000,
    part2: numbers.part2,
  };
}

/** Prints progress events on stderr (load progress: one line per 500 ms with every phase's state). */
function progressPrinter(): (e: BenchEvent) => void {
  const phases = new Map<string, LoadProgress>();
  let lastAt = 0;
  const loadLine = () =>
    [...phases.values()]
      .map((p) =>
        p.phase === 'compile'
          ? `compile ${p.bytesDone}/${p.bytesTotal} pipelines`
          : `${p.phase} ${p.bytesTotal > 0 ? `${fmtBytes(p.bytesDone)} / ${fmtBytes(p.bytesTotal)}` : fmtBytes(p.bytesDone)}`,
      )
      .join(', ');
  return (e) => {
    switch (e.type) {
      case 'device': {
        const d = e.device;
        const sw =
          d.isFallbackAdapter ||
          /swiftshader|llvmpipe|lavapipe/i.test(`${d.vendor} ${d.architecture} ${d.description}`);
        log(`device: ${d.label ?? d.description} [${d.fingerprint}]${sw ? ' — software adapter (CPU)' : ''}`);
        break;
      }
      case 'load-start':
        log(`loading ${e.modelId}`);
        break;
      case 'load-progress': {
        const p = e.progress;
        const prev = phases.get(p.phase);
        phases.set(p.phase, p);
        const now = performance.now();
        const phaseDone =
          p.bytesTotal > 0 && p.bytesDone >= p.bytesTotal && !(prev && prev.bytesDone >= prev.bytesTotal);
        if (now - lastAt >= 500 || phaseDone) {
          log(`  ${loadLine()}  (${fmtSig(p.tMs)} ms)`);
          lastAt = now;
        }
        break;
      }
      case 'loaded':
        log(
          `loaded ${e.model.id}: ${e.info.nLayers} layers, ${e.model.quantization}, ${fmtBytes(e.model.bytes)} in ${fmtSig(e.load.totalMs)} ms (download ${fmtSig(e.load.downloadMs)}, upload ${fmtSig(e.load.uploadMs)}, compile ${fmtSig(e.load.compileMs)})`,
        );
        break;
      case 'run-start':
        break;
      case 'run-done': {
        const r = e.run;
        log(
          `${e.warmup ? 'warm-up' : 'run'} ${e.index + 1}/${e.total} [${r.promptName}] ${r.promptTokens} → ${r.outputTokens} tokens: TTFT ${fmtSig(r.ttftMs)} ms, decode ${fmtSig(r.decodeTokensPerSecond)} tok/s, E2E ${fmtSig(r.e2eMs)} ms`,
        );
        break;
      }
      case 'roofline-start':
        log('roofline: measuring memory bandwidth and matmul throughput…');
        break;
      case 'roofline-done':
        log(
          `roofline: bandwidth ${fmtSig(e.bandwidth.GBs)} GB/s (${fmtBytes(e.bandwidth.bytes)} × ${e.bandwidth.launches}, ${e.bandwidth.timing}, checksum ok), matmul ${fmtSig(e.matmul.GFLOPs)} GFLOP/s (n=${e.matmul.n}, ${e.matmul.timing}); decode at ${fmtPct(e.roofline.fraction)} of bandwidth`,
        );
        break;
      case 'warning':
        log(`warning: ${e.message}`);
        break;
      default: {
        const line = llamaBenchEventLine(e);
        if (line) log(line);
      }
    }
  };
}

/** Rejects with EngineError('timeout') when no phase event came for `ms` (a page or GPU that hangs). */
class Watchdog {
  private timer?: ReturnType<typeof setTimeout>;
  private rejectFn?: (e: Error) => void;
  readonly fired: Promise<never>;
  constructor() {
    this.fired = new Promise<never>((_, reject) => {
      this.rejectFn = reject;
    });
    this.fired.catch(() => undefined);
  }
  arm(ms: number, what: string): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () =>
        this.rejectFn?.(
          new EngineError('timeout', `${what}: nothing happened for ${Math.round(ms / 1000)} s`),
        ),
      ms,
    );
  }
  stop(): void {
    clearTimeout(this.timer);
  }
}

/** Calls `window.benchApi.runFromCli(opts)`; an error there comes back as an EngineError with its code. */
async function runInPage(page: Page, opts: Omit<BenchOptions, 'signal'>): Promise<BenchResult> {
  const r = (await page.evaluate(async (o) => {
    try {
      const api = window.benchApi;
      if (!api) throw new Error('window.benchApi is missing');
      return { ok: true, value: await api.runFromCli(o) };
    } catch (e) {
      const err = e as { name?: string; code?: string; message?: string };
      return { ok: false, error: { name: err.name, code: err.code, message: err.message ?? String(e) } };
    }
  }, opts)) as
    | { ok: true; value: BenchResult }
    | { ok: false; error: { name?: string; code?: string; message: string } };
  if (r.ok) return r.value;
  if (r.error.code) throw new EngineError(r.error.code as EngineErrorCode, r.error.message);
  throw new Error(r.error.message);
}

/** Calls `window.benchApi.readDevice()`: the adapter's facts, nothing loaded (the `--gpu` guard's early look). */
async function readDeviceInPage(page: Page): Promise<BenchDevice> {
  const r = (await page.evaluate(async () => {
    try {
      const api = window.benchApi;
      if (!api) throw new Error('window.benchApi is missing');
      return { ok: true, value: await api.readDevice() };
    } catch (e) {
      const err = e as { name?: string; code?: string; message?: string };
      return { ok: false, error: { name: err.name, code: err.code, message: err.message ?? String(e) } };
    }
  })) as
    | { ok: true; value: BenchDevice }
    | { ok: false; error: { name?: string; code?: string; message: string } };
  if (r.ok) return r.value;
  if (r.error.code) throw new EngineError(r.error.code as EngineErrorCode, r.error.message);
  throw new Error(r.error.message);
}

/** Waits for `window.benchApi`; loads the bench-API entry chunk when the page's entry does not install it. */
async function ensureBenchApi(page: Page, benchEntry: string): Promise<void> {
  const has = () => page.evaluate(() => Boolean(window.benchApi));
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    if (await has()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  log("warning: the page's entry did not install window.benchApi; loading src/bench/page-api.ts on its own");
  await page.addScriptTag({ url: benchEntry, type: 'module' });
  await page.waitForFunction(() => Boolean(window.benchApi), undefined, { timeout: 30_000 });
}

async function closeBrowser(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  await Promise.race([browser.close().catch(() => undefined), new Promise((r) => setTimeout(r, 5000))]);
}

/**
 * The `--gpu` guard: an error (code `software_adapter`, exit 1) when `--gpu` was given, the device is a
 * software adapter and `--allow-software` was not; undefined otherwise.
 */
function softwareGuard(a: BenchArgs, d: BenchDevice): Error | undefined {
  if (!a.gpu || a.allowSoftware) return undefined;
  const reasons = softwareDeviceReasons(d);
  if (reasons.length === 0) return undefined;
  return Object.assign(
    new Error(
      `--gpu was given but the WebGPU adapter, ${d.label || d.description || d.vendor}, is a software one (${reasons.join(', ')}): its figures would measure the CPU, not a GPU. Chromium found no hardware adapter here (docs/gpu-ci.md#only-a-software-adapter lists the causes and what to try); pass --allow-software to run on it anyway`,
    ),
    { code: 'software_adapter' },
  );
}

/** What the run learned before it could fail: the device the page reported. */
interface Seen {
  device?: BenchDevice;
}

/** Writes `--junit` and appends `--summary-md` (either may be unset; src/cli/ci-files.ts). */
function writeCiReports(
  a: BenchArgs,
  r: { result?: BenchResult; error?: RunError; seen: Seen; timeS: number },
): void {
  const spec = a.model.spec;
  writeCiFiles({
    junit: a.junit,
    summaryMd: a.summaryMd,
    thresholds: { failUnderDecodeTps: a.failUnderDecodeTps, failOverTtftMs: a.failOverTtftMs },
    result: r.result,
    error: r.error,
    device: r.seen.device,
    modelId: 'synthetic' in spec ? spec.synthetic : (spec.id ?? ('url' in spec ? spec.url : undefined)),
    timeS: r.timeS,
    log,
  });
}

async function main(argv: string[]): Promise<number> {
  if (isRemoteArgv(argv)) return runRemoteCli(argv);
  let args: BenchArgs | 'help';
  try {
    args = parse(argv);
  } catch (e) {
    if (isUsageError(e)) {
      // The message last, where it stays on screen; the usage is one --help away.
      console.error(
        `error [invalid_argument]: ${(e as Error).message}\n(npm run bench -- --help lists the options)`,
      );
      return 2;
    }
    throw e;
  }
  if (args === 'help') {
    console.log(USAGE);
    return 0;
  }
  const a = args;
  const t0 = performance.now();
  const seen: Seen = {};
  try {
    const { code, result } = await benchmark(a, seen);
    writeCiReports(a, { result, seen, timeS: (performance.now() - t0) / 1000 });
    return code;
  } catch (e) {
    if (!isUsageError(e)) {
      writeCiReports(a, {
        error: runError(e, errorMessage(e)),
        seen,
        timeS: (performance.now() - t0) / 1000,
      });
    }
    throw e;
  }
}

/** The benchmark itself: the exit code (0, or 3 for a missed threshold) and the result. */
async function benchmark(a: BenchArgs, seen: Seen): Promise<{ code: number; result: BenchResult }> {
  const browserPath = resolveChromium(a.browser).path;
  const page0 = await ensureBuiltPage({ log, verbose: a.verbose });
  let server: StaticServer | undefined;
  let browser: Browser | undefined;
  const watchdog = new Watchdog();
  const graceMs = 15_000;
  // Rejects when the --gpu guard refuses the device the page reports (before the model loads).
  let refuse: (e: Error) => void = () => undefined;
  const refused = new Promise<never>((_, reject) => {
    refuse = reject;
  });
  refused.catch(() => undefined);
  // With --gpu (and no --allow-software) the adapter is checked before anything is downloaded, loaded or
  // run on the CPU: a runner with only a software adapter fails in seconds.
  const guardFirst = a.gpu && !a.allowSoftware;
  const download = async () => {
    if (a.model.remote && a.cache.enabled && a.engine === 'webgpu') {
      const got = await cachedModel(a.model.remote, { cacheDir: a.cache.dir, log, timeoutMs: a.timeoutMs });
      a.model = {
        ...a.model,
        localPath: got.path,
        note: got.note,
        spec: { url: got.url, id: a.model.remote },
      };
    }
  };
  let shownDevice: string | undefined;
  try {
    if (!guardFirst) await download();
    server = await startStaticServer(page0.dir);
    watchdog.arm(60_000, 'starting Chromium and the page');
    browser = await Promise.race([
      chromium.launch({
        executablePath: browserPath,
        args: chromiumArgs({ gpu: a.gpu }),
        headless: !a.headed,
        timeout: 60_000,
      }),
      watchdog.fired,
    ]);
    const page = await browser.newPage();
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    page.on('crash', () => log('the page crashed'));
    const show = progressPrinter();
    await page.exposeFunction('__benchEvent', (e: BenchEvent) => {
      // The device line once: the guard's early look may have printed it already.
      if (e.type !== 'device' || e.device.fingerprint !== shownDevice) show(e);
      if (e.type === 'device') {
        seen.device = e.device;
        const refusal = softwareGuard(a, e.device);
        if (refusal) refuse(refusal);
        else if (a.gpu && softwareDeviceReasons(e.device).length > 0)
          log('warning: --gpu found only a software adapter; running on it because of --allow-software');
      }
      if (e.type === 'load-start' || e.type === 'run-start')
        watchdog.arm(
          a.timeoutMs + graceMs,
          e.type === 'load-start' ? 'loading the model' : `run ${e.index + 1}`,
        );
      else if (e.type === 'llama-bench-progress')
        watchdog.arm(a.timeoutMs + graceMs, `llama-bench ${e.progress.test}`);
      else if (e.type === 'roofline-start')
        watchdog.arm(Math.max(a.timeoutMs, 120_000) + graceMs, 'measuring the roofline');
    });
    await Promise.race([
      page.goto(`${server.base}/`, { waitUntil: 'load', timeout: 60_000 }),
      watchdog.fired,
    ]);
    await Promise.race([ensureBenchApi(page, page0.benchEntry), watchdog.fired]);
    if (guardFirst) {
      const device = await Promise.race([readDeviceInPage(page), watchdog.fired]);
      show({ type: 'device', device });
      shownDevice = device.fingerprint;
      seen.device = device;
      const refusal = softwareGuard(a, device);
      if (refusal) throw refusal;
    }
    // The download (bounded by --timeout-s) and llama.cpp's CPU match run in Node, not in the page: the
    // watchdog of Chromium's start stops here and is armed again for the page's run (a CPU match longer
    // than its 60 s used to trip it).
    watchdog.stop();
    if (guardFirst) await download();
    const spec: BenchModelSpec = a.model.localPath
      ? { url: server.addModel(a.model.localPath), id: (a.model.spec as { id: string }).id }
      : a.model.spec;
    const cpuMatch =
      a.cpuMatch && a.model.localPath && a.engine === 'webgpu' && !a.part2.llamaBench
        ? await llamaCppReference(a.model.localPath, a.plan)
        : undefined;
    watchdog.arm(60_000, 'starting the benchmark in the page');
    const result = await Promise.race([
      runInPage(page, {
        model: spec,
        engine: a.engine,
        plan: a.plan,
        contextLength: a.contextLength,
        defaultLimits: a.defaultLimits,
        ...(a.kvType ? { kvType: a.kvType } : {}),
        timeoutMs: a.timeoutMs,
        roofline: a.roofline,
        ...(cpuMatch ? { cpuMatch } : {}),
        ...a.part2,
      }),
      watchdog.fired,
      refused,
    ]);
    watchdog.stop();
    seen.device = result.device;
    const refusal = softwareGuard(a, result.device);
    if (refusal) throw refusal;

    const notes = a.model.note ? [a.model.note] : [];
    process.stdout.write(
      result.tests ? `${formatLlamaBench(result)}\n` : `${formatResultText(result, notes)}\n`,
    );
    if (result.quality) {
      process.stdout.write(
        `CPU match: our top-1 agrees with ${result.quality.reference} at ${fmtPct(result.quality.top1Agreement)} of ${result.quality.positions} greedy positions (teacher-forced)\n`,
      );
    }
    if (!result.tests && (result.memory || result.cost))
      process.stdout.write(`${formatLlamaBench(result)}\n`);
    if (a.json) {
      mkdirSync(dirname(resolve(a.json)), { recursive: true });
      writeFileSync(a.json, `${JSON.stringify(result, null, 1)}\n`);
      log(`wrote ${a.json}`);
    }
    const missed = checkThresholds(result, {
      failUnderDecodeTps: a.failUnderDecodeTps,
      failOverTtftMs: a.failOverTtftMs,
    }).filter((o) => !o.passed);
    for (const o of missed) console.error(`threshold missed: ${o.message}`);
    return { code: missed.length > 0 ? 3 : 0, result };
  } catch (e) {
    // Name a local model (and a split model's other parts) by its path, not by the URL it was served at.
    if (server && e instanceof Error) e.message = server.localPaths(e.message);
    throw e;
  } finally {
    watchdog.stop();
    await closeBrowser(browser);
    await server?.close();
  }
}

/** An error's message as the command prints it (a failed fetch gets the CORS hint). */
function errorMessage(e: unknown): string {
  const code = (e as { code?: string }).code;
  let msg = (e as Error)?.message ?? String(e);
  if (code === 'network' && /fetch/i.test(msg) && !/check the URL/.test(msg))
    msg +=
      ' (for a URL on another server, the server must allow cross-origin requests (CORS); or download the file and pass its path)';
  return msg;
}

function describeError(e: unknown): string {
  return formatCliError({ code: (e as { code?: string }).code, message: errorMessage(e) });
}

runCli(() => main(process.argv.slice(2)), describeError);

/**
 * llama.cpp's greedy continuation of the plan's first prompt (tokenized by our tokenizer, as the page
 * does), for the result's CPU match; undefined with a note when llama.cpp cannot run it.
 */
async function llamaCppReference(
  path: string,
  plan: BenchPlan,
): Promise<{ engine: string; promptIds: number[]; outputIds: number[] } | undefined> {
  try {
    const file = await openGguf({ path });
    const tok = createTokenizer(file.metadata);
    const promptIds = tok.encode(plan.prompts[0].text, { addBos: tok.addBos });
    const n = Math.min(plan.maxTokens, 64);
    log(`CPU match: llama.cpp generating ${n} greedy tokens for the first prompt…`);
    return await llamaCppGreedy(path, promptIds, n);
  } catch (e) {
    log(`CPU match skipped: ${(e as Error).message}`);
    return undefined;
  }
}
