/**
 * `npm run bench -- [--model PATH|URL|synthetic:NAME] [--engine webgpu] [--prompt TEXT | --prompts FILE|SET]
 *   [--max-tokens N] [--runs N] [--warmup N] [--ignore-eos] [--temperature T] [--top-k K] [--top-p P]
 *   [--min-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--kv-type f16|f32|q8_0|q4_0] [--kv-type-k T] [--kv-type-v T] [--json FILE] [--chromium PATH]
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
 * Exit codes: 0 done; 1 failed (the message says why); 2 bad arguments; 3 a threshold was missed; 130
 * (143 for SIGTERM) interrupted, `--json` written all the same (partial, with the phase it stopped in). The
 * command line (usage, parsing, checks) is read in src/cli/bench-args.ts.
 */

import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { checkThresholds, type RunError, softwareDeviceReasons } from '../bench/ci-report.ts';
import { llamaCppGreedyIsolated } from '../bench/cpu-match.ts';
import type { BenchEvent, BenchModelSpec, BenchOptions } from '../bench/page-api.ts';
import { cutConstrainedRuns, formatResultText, kvTypeText } from '../bench/report.ts';
import { interruptedResult } from '../bench/runner.ts';
import type { BenchDevice, BenchPlan, BenchResult, BenchRun, InterruptPhase } from '../bench/types.ts';
import { EngineError } from '../core/errors.ts';
import { openGguf } from '../gguf/reader.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { fmtPct } from '../util/format.ts';
import { isUsageError } from './args.ts';
import { BENCH_USAGE, type BenchArgs, parseBenchArgs } from './bench-args.ts';
import { progressPrinter } from './bench-progress.ts';
import { chromiumArgs, launchChromium, resolveChromium } from './browser.ts';
import {
  type CiFiles,
  checkWritable,
  makeFolder,
  runError,
  writeCiFiles,
  writeCiFilesYielding,
} from './ci-files.ts';
import { asNodeSaysIt, errorFromPage, type PageError } from './harness-server.ts';
import { formatLlamaBench } from './llama-bench-args.ts';
import { cachedModel } from './model-cache.ts';
import { ensureBuiltPage } from './page-build.ts';
import { isRemoteArgv, runRemoteCli } from './remote.ts';
import {
  type CliCommand,
  eventLoopTurn,
  formatCliError,
  interruptInProgress,
  isEntryPoint,
  onInterruptSignals,
  runCli,
} from './run.ts';
import { type StaticServer, startStaticServer } from './static-server.ts';

function log(s: string): void {
  process.stderr.write(`bench: ${s}\n`);
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
      const err = e as { name?: string; code?: unknown; message?: string; details?: unknown };
      return {
        ok: false,
        error: { name: err.name, code: err.code, message: err.message ?? String(e), details: err.details },
      };
    }
  }, opts)) as { ok: true; value: BenchResult } | { ok: false; error: PageError };
  if (r.ok) return r.value;
  throw errorFromPage(r.error);
}

/** Calls `window.benchApi.readDevice()`: the adapter's facts, nothing loaded (the `--gpu` guard's early look). */
async function readDeviceInPage(page: Page): Promise<BenchDevice> {
  const r = (await page.evaluate(async () => {
    try {
      const api = window.benchApi;
      if (!api) throw new Error('window.benchApi is missing');
      return { ok: true, value: await api.readDevice() };
    } catch (e) {
      const err = e as { name?: string; code?: unknown; message?: string; details?: unknown };
      return {
        ok: false,
        error: { name: err.name, code: err.code, message: err.message ?? String(e), details: err.details },
      };
    }
  })) as { ok: true; value: BenchDevice } | { ok: false; error: PageError };
  if (r.ok) return r.value;
  throw errorFromPage(r.error);
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

/**
 * What the run learned before it could fail or be interrupted: the device the page reported, the model
 * and its load once loaded, and each measured run (warm-ups not counted) as it finished.
 */
interface Seen {
  /** Where the run is (`interrupted.phase` of a result a signal cuts short). */
  phase: InterruptPhase;
  device?: BenchDevice;
  model?: BenchResult['model'];
  load?: BenchResult['load'];
  runs: BenchRun[];
}

/**
 * What a Ctrl-C or SIGTERM leaves (src/bench/runner.ts `interruptedResult`): the runs measured so far,
 * written like a finished result so no measurement is lost, marked `partial` with the signal and the phase;
 * before the model loaded, the same shape with no runs, so `--json` always gets a file.
 */
function partialResult(a: BenchArgs, seen: Seen, signal: NodeJS.Signals): BenchResult {
  return interruptedResult({
    signal,
    phase: seen.phase,
    engine: a.engine,
    plan: a.plan,
    modelId: modelIdOf(a) ?? 'unknown',
    kvType: a.kvTypeK ?? a.kvType,
    kvTypeV: a.kvTypeV ?? a.kvType,
    device: seen.device,
    model: seen.model,
    load: seen.load,
    runs: seen.runs,
  });
}

/** The model as the command line names it (a synthetic shape, the cache's id, or the URL). */
function modelIdOf(a: BenchArgs): string | undefined {
  const spec = a.model.spec;
  return 'synthetic' in spec ? spec.synthetic : (spec.id ?? ('url' in spec ? spec.url : undefined));
}

/**
 * On Ctrl-C (SIGINT) or SIGTERM: writes what was measured (`--json` as a partial result, `--junit` and
 * `--summary-md` with an `aborted` error), says so, and exits 130 (143 for SIGTERM), as a shell expects.
 * Returns the function that removes the handlers.
 */
function onInterrupt(a: BenchArgs, seen: Seen, t0: number): () => void {
  return onInterruptSignals(async (signal) => {
    const loaded = seen.model !== undefined && seen.load !== undefined;
    const result = partialResult(a, seen, signal);
    const total = a.plan.prompts.length * a.plan.runs;
    const what = loaded
      ? `after ${seen.runs.length} of ${total} measured runs`
      : `before the model loaded (${seen.phase})`;
    log(`interrupted (${signal}) ${what}`);
    if (a.json) {
      // Between files the event loop turns: a signal tsx repeats is answered (src/cli/run.ts).
      await eventLoopTurn();
      // A failed write (a full disk) must not cost the JUnit and summary files below.
      try {
        makeFolder(dirname(resolve(a.json)));
        writeFileSync(a.json, `${JSON.stringify(result, null, 1)}\n`);
        log(
          `wrote ${a.json} (partial: ${loaded ? `${seen.runs.length} of ${total} runs` : `no runs, stopped in ${seen.phase}`})`,
        );
      } catch (e) {
        log(`could not write ${a.json}: ${(e as Error).message}`);
      }
    }
    await writeCiFilesYielding(
      ciFiles(a, {
        // The JUnit properties and the summary's table read a result's figures: none before the load.
        result: loaded ? result : undefined,
        error: runError(new EngineError('aborted', `interrupted (${signal}) ${what}`)),
        seen,
        timeS: (performance.now() - t0) / 1000,
      }),
    );
  });
}

/**
 * Writes `--junit` and appends `--summary-md` (either may be unset; src/cli/ci-files.ts); not once a
 * signal's handler has started, which writes them itself (a run the signal cut short ends meanwhile).
 */
function writeCiReports(
  a: BenchArgs,
  r: { result?: BenchResult; error?: RunError; seen: Seen; timeS: number },
): void {
  if (!interruptInProgress()) writeCiFiles(ciFiles(a, r));
}

/** The CI files' contents and places for {@link writeCiFiles}. */
function ciFiles(
  a: BenchArgs,
  r: { result?: BenchResult; error?: RunError; seen: Seen; timeS: number },
): CiFiles {
  return {
    junit: a.junit,
    summaryMd: a.summaryMd,
    thresholds: { failUnderDecodeTps: a.failUnderDecodeTps, failOverTtftMs: a.failOverTtftMs },
    result: r.result,
    error: r.error,
    device: r.seen.device,
    modelId: modelIdOf(a),
    timeS: r.timeS,
    log,
  };
}

async function main(argv: string[]): Promise<number> {
  if (isRemoteArgv(argv)) return runRemoteCli(argv);
  let args: BenchArgs | 'help';
  try {
    args = parseBenchArgs(argv);
    if (args !== 'help')
      checkWritable({ '--json': args.json, '--junit': args.junit, '--summary-md': args.summaryMd });
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
    console.log(BENCH_USAGE);
    return 0;
  }
  const a = args;
  const t0 = performance.now();
  const seen: Seen = { phase: 'start', runs: [] };
  // A local file that is not GGUF (found while reading the arguments): a failed run (exit 1), not a usage
  // error, so the CI files say so; nothing has started yet.
  const unusable = a.model.unusable ?? a.draftModel?.unusable;
  if (unusable) {
    writeCiReports(a, { error: runError(unusable, errorMessage(unusable)), seen, timeS: 0 });
    throw unusable;
  }
  const offInterrupt = onInterrupt(a, seen, t0);
  try {
    const { code, result } = await benchmark(a, seen);
    offInterrupt();
    writeCiReports(a, { result, seen, timeS: (performance.now() - t0) / 1000 });
    return code;
  } catch (e) {
    if (a.model.remote) addUrlHint(e);
    // The handler stays a while: a Ctrl-C that also stopped Chromium may reach us after the failure it
    // caused. Then it goes (a caller that runs `main` in-process lives on; the timer keeps nothing alive).
    setTimeout(offInterrupt, 5_000).unref();
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

/**
 * What the CPU match compares unlike (llama.cpp's reference runs an f16 KV cache and, on random weights,
 * near-ties decide many positions): said beside the figure so a lower share is not read as a fault.
 */
function cpuMatchCaveat(r: BenchResult): string {
  const kv = kvTypeText(r.model);
  const parts = [
    ...(kv !== 'f16' ? [`our KV cache ${kv}, llama.cpp's f16`] : []),
    ...(r.model.synthetic ? ['random weights: near-ties'] : []),
  ];
  return parts.length ? `; ${parts.join('; ')}` : '';
}

/** The benchmark itself: the exit code (0, or 3 for a missed threshold) and the result. */
async function benchmark(a: BenchArgs, seen: Seen): Promise<{ code: number; result: BenchResult }> {
  resolveChromium(a.browser); // a missing browser is said before the page is built
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
    const phase = seen.phase;
    seen.phase = 'download';
    if (a.model.remote && a.cache.enabled && a.engine === 'webgpu') {
      const got = await cachedModel(a.model.remote, { cacheDir: a.cache.dir, log, timeoutMs: a.timeoutMs });
      a.model = {
        ...a.model,
        localPath: got.path,
        note: got.note,
        spec: { url: got.url, id: a.model.remote },
      };
    }
    const d = a.draftModel;
    if (d?.remote && a.cache.enabled) {
      const got = await cachedModel(d.remote, { cacheDir: a.cache.dir, log, timeoutMs: a.timeoutMs });
      a.draftModel = { ...d, localPath: got.path, spec: { url: got.url, id: d.remote } };
    }
    seen.phase = phase;
  };
  let shownDevice: string | undefined;
  try {
    if (!guardFirst) await download();
    server = await startStaticServer(page0.dir);
    watchdog.arm(60_000, 'starting Chromium and the page');
    browser = await Promise.race([
      launchChromium((o) => chromium.launch(o), a.browser, {
        args: chromiumArgs({ gpu: a.gpu }),
        headless: !a.headed,
        timeout: 60_000,
      }),
      watchdog.fired,
    ]);
    const page = await browser.newPage();
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    page.on('crash', () => log('the page crashed'));
    const show = progressPrinter(log, a.contextLength);
    await page.exposeFunction('__benchEvent', (e: BenchEvent) => {
      // The device line once: the guard's early look may have printed it already.
      if (e.type !== 'device' || e.device.fingerprint !== shownDevice) show(e);
      if (e.type === 'load-start') seen.phase = 'load';
      else if (e.type === 'roofline-start') seen.phase = 'roofline';
      else if (e.type === 'llama-bench-progress') seen.phase = 'llama-bench';
      if (e.type === 'loaded') {
        seen.phase = 'runs';
        seen.model = e.model;
        seen.load = e.load;
      } else if (e.type === 'run-done' && !e.warmup && !e.baseline) seen.runs.push(e.run);
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
    const draftModel: BenchModelSpec | undefined = a.draftModel?.localPath
      ? { url: server.addModel(a.draftModel.localPath), id: (a.draftModel.spec as { id: string }).id }
      : a.draftModel?.spec;
    seen.phase = 'cpu-match';
    const reference =
      a.cpuMatch && a.model.localPath && a.engine === 'webgpu' && !a.part2.llamaBench
        ? await llamaCppReference(a.model.localPath, a.plan)
        : undefined;
    const cpuMatch = reference?.ref;
    seen.phase = 'load';
    watchdog.arm(60_000, 'starting the benchmark in the page');
    const result = await Promise.race([
      runInPage(page, {
        model: spec,
        engine: a.engine,
        plan: a.plan,
        contextLength: a.contextLength,
        defaultLimits: a.defaultLimits,
        ...(a.kvType ? { kvType: a.kvType } : {}),
        ...(a.kvTypeK ? { kvTypeK: a.kvTypeK } : {}),
        ...(a.kvTypeV ? { kvTypeV: a.kvTypeV } : {}),
        timeoutMs: a.timeoutMs,
        roofline: a.roofline,
        ...(cpuMatch ? { cpuMatch } : {}),
        ...(draftModel ? { draftModel } : {}),
        ...a.part2,
      }),
      watchdog.fired,
      refused,
    ]);
    watchdog.stop();
    if (reference?.skipped !== undefined) result.cpuMatchSkipped = reference.skipped;
    seen.device = result.device;
    const refusal = softwareGuard(a, result.device);
    if (refusal) throw refusal;

    const notes = a.model.note ? [a.model.note] : [];
    process.stdout.write(
      result.tests ? `${formatLlamaBench(result)}\n` : `${formatResultText(result, notes)}\n`,
    );
    if (result.quality) {
      process.stdout.write(
        `CPU match: our top-1 agrees with ${result.quality.reference} at ${fmtPct(result.quality.top1Agreement)} of ${result.quality.positions} greedy positions (teacher-forced)${cpuMatchCaveat(result)}\n`,
      );
    }
    if (!result.tests && (result.memory || result.cost))
      process.stdout.write(`${formatLlamaBench(result)}\n`);
    // A constrained run cut mid-value measured an answer that does not parse: say so where a person looks.
    const cut = result.runs ? cutConstrainedRuns(result) : 0;
    if (cut > 0)
      log(
        `warning: ${cut} of ${result.runs.length} measured runs were cut at --max-tokens ${result.plan.maxTokens} before the ${result.constrained?.kind === 'grammar' ? 'grammar' : 'JSON value'} was complete: their answers do not parse (each run's formatComplete is false in --json); raise --max-tokens, or bound what the format leaves open`,
      );
    if (a.json && !interruptInProgress()) {
      makeFolder(dirname(resolve(a.json)));
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
    // A split part that is a directory or an HTML file, or missing, said as the Node runtime says it.
    if (server && e instanceof Error) {
      e.message = server.localPaths(e.message);
      throw asNodeSaysIt(e, server.servedPaths());
    }
    throw e;
  } finally {
    watchdog.stop();
    await closeBrowser(browser);
    await server?.close();
  }
}

/**
 * A failed fetch of a GGUF URL (`--model URL`) gets the CORS hint (the page fetches it from another origin).
 * Not for WebLLM's model ids: there is no file to download and pass.
 */
function addUrlHint(e: unknown): void {
  const code = (e as { code?: string }).code;
  const msg = (e as Error)?.message;
  if (code === 'network' && typeof msg === 'string' && /fetch/i.test(msg) && !/check the URL/.test(msg))
    (e as Error).message +=
      ' (for a URL on another server, the server must allow cross-origin requests (CORS); or download the file and pass its path)';
}

/** An error's message as the command prints it. */
function errorMessage(e: unknown): string {
  return (e as Error)?.message ?? String(e);
}

function describeError(e: unknown): string {
  return formatCliError({ code: (e as { code?: string }).code, message: errorMessage(e) });
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main: () => main(process.argv.slice(2)), format: describeError };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);

/**
 * llama.cpp's greedy continuation of the plan's first prompt (tokenized by our tokenizer, as the page
 * does), for the result's CPU match; undefined with a note when llama.cpp cannot run it.
 */
async function llamaCppReference(
  path: string,
  plan: BenchPlan,
): Promise<{ ref?: { engine: string; promptIds: number[]; outputIds: number[] }; skipped?: string }> {
  let promptIds: number[];
  try {
    const file = await openGguf({ path });
    const tok = createTokenizer(file.metadata);
    promptIds = tok.encode(plan.prompts[0].text, { addBos: tok.addBos });
  } catch (e) {
    const skipped = (e as Error).message;
    log(`CPU match skipped: ${skipped}`);
    return { skipped };
  }
  const n = Math.min(plan.maxTokens, 64);
  log(`CPU match: llama.cpp generating ${n} greedy tokens for the first prompt…`);
  // In a child process: llama.cpp aborts the whole process on some files (a vocabulary of empty or equal
  // tokens: std::out_of_range, exit 134), which must cost the check, not the benchmark and its JSON.
  const r = await llamaCppGreedyIsolated(path, promptIds, n);
  if (r.ok) return { ref: r.ref };
  log(`CPU match skipped: ${r.reason}`);
  return { skipped: r.reason };
}
