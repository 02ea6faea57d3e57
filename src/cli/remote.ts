/**
 * `npm run bench -- --engine remote --base-url URL [--model NAME] [--api-key-env VAR] [--api chat|completions]
 *   [--concurrency 1,4,16] [--prompt TEXT | --prompts FILE|SET] [--max-tokens N] [--runs N] [--warmup N]
 *   [--ignore-eos] [--json FILE] [--timeout-s N] [--first-token-timeout-s N] [--idle-timeout-s N]
 *   [--request-timeout-s N]
 *   [--fail-under-decode-tps X] [--fail-over-ttft-ms X] [--junit FILE] [--summary-md FILE]`
 *
 * The remote benchmark runs in Node (no browser: CORS does not apply), with the same plan, metrics and
 * result file as the page (src/bench/remote.ts). The key is read from the environment variable named by
 * `--api-key-env`; it is never printed nor written: everything this command prints or writes (stderr, stdout,
 * `--json`, `--junit`, `--summary-md`) goes through src/util/redact.ts with the key, so a server that
 * echoes the key (or any `Bearer <token>`) in an error message leaks it nowhere. src/cli/bench.ts hands
 * `--engine remote` here.
 * `--junit` and `--summary-md` write the same CI files as the page benchmark (src/cli/ci-files.ts).
 */

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { checkThresholds } from '../bench/ci-report.ts';
import { isPromptSetName, parsePromptsFile, promptsFor } from '../bench/prompts.ts';
import {
  parseConcurrency,
  RemoteBenchError,
  type RemoteBenchEvent,
  remoteResult,
  runRemoteBench,
} from '../bench/remote.ts';
import { formatResultText } from '../bench/report.ts';
import type {
  BenchPlan,
  BenchPrompt,
  BenchResult,
  BenchRun,
  BenchSweepPoint,
  InterruptPhase,
} from '../bench/types.ts';
import { EngineError, isEngineError } from '../core/errors.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, RemoteEngine } from '../remote/engine.ts';
import { fmtSig } from '../util/format.ts';
import { redactSecrets } from '../util/redact.ts';
import { intArg, isUsageError, numArg, parseCliArgs, secondsArg, UsageError } from './args.ts';
import { checkWritable, runError, writeCiFiles } from './ci-files.ts';
import { onInterruptSignals } from './run.ts';

/** `npm run bench -- --engine remote --help`: the remote benchmark's options. */
export const REMOTE_USAGE = `usage: npm run bench -- --engine remote --base-url URL [--model NAME] [options]

  --base-url URL                    the server, e.g. http://localhost:8000 (vLLM, llama-server, Ollama, …)
  --model NAME                      a model /v1/models lists (default: the first listed)
  --api-key-env VAR                 read the API key from the environment variable VAR (never printed)
  --api chat|completions            /v1/chat/completions (default) or /v1/completions
  --concurrency 1,4,16              concurrency sweep: N requests at once for each N (as vllm bench serve)
  --prompt TEXT | --prompts FILE|SET, --max-tokens N, --runs N, --warmup N, --ignore-eos, --json FILE
                                    as for the local engine
  --timeout-s N                     first-token timeout (default 60); --idle-timeout-s N mid-stream (default 30)
  --request-timeout-s N             a deadline on each whole request, sent to data: [DONE] (default ${DEFAULT_REQUEST_TIMEOUT_MS / 1000})
  --fail-under-decode-tps X, --fail-over-ttft-ms X   thresholds (exit 3)
  --junit FILE, --summary-md FILE   JUnit XML (written, also for a failed run) and a Markdown summary (appended,
                                    e.g. "$GITHUB_STEP_SUMMARY"), as for the local engine

Exit status: 0 done, 1 failed (partial results still written with --json), 2 bad arguments, 3 threshold missed,
130 (143 for SIGTERM) interrupted (--json gets what was measured, marked partial; --junit an aborted error).`;

/** A bad argument's line, worded as every command's (run.ts `reportCliFailure`). */
const badArgs = (e: unknown) =>
  `error [invalid_argument]: ${(e as Error).message}\n(npm run bench -- --engine remote --help lists the options)`;

/**
 * True when the command line asks for the remote engine: its last `--engine VALUE` or `--engine=VALUE`
 * says `remote` (the last one wins, as in `parseArgs`, so src/cli/bench.ts's own parser never sees it).
 */
export function isRemoteArgv(argv: readonly string[]): boolean {
  let engine: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--engine') engine = argv[++i];
    else if (a.startsWith('--engine=')) engine = a.slice('--engine='.length);
  }
  return engine === 'remote';
}

/** Prints a progress line on stderr with the secrets redacted. */
function logger(secrets: readonly (string | undefined)[]): (s: string) => void {
  return (s) => process.stderr.write(redactSecrets(`bench: ${s}\n`, secrets));
}

function sweepTable(r: BenchResult): string {
  if (!r.sweep?.length) return '';
  const rows = [
    [
      'concurrency',
      'ok/sent',
      'req/s',
      'out tok/s',
      'TTFT p50',
      'TTFT p99',
      'TPOT p50',
      'E2E p50',
      'E2E p99',
    ],
  ];
  for (const p of r.sweep)
    rows.push([
      String(p.concurrency),
      `${p.completed}/${p.requests}`,
      fmtSig(p.requestThroughput),
      fmtSig(p.outputTokenThroughput),
      fmtSig(p.summary.ttftMs?.median),
      fmtSig(p.summary.ttftMs?.p99),
      fmtSig(p.summary.tpotMs?.median),
      fmtSig(p.summary.e2eMs?.median),
      fmtSig(p.summary.e2eMs?.p99),
    ]);
  const w = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  return `\nconcurrency sweep (ms; throughput per second)\n${rows.map((row) => row.map((x, c) => x.padStart(w[c])).join('  ')).join('\n')}\n`;
}

/** What the remote benchmark's command line asks for, read and checked before the first request. */
interface RemoteCliArgs {
  engine: RemoteEngine;
  /** The key, kept only to redact it from everything printed and written. */
  apiKey?: string;
  plan: BenchPlan;
  /** The `--concurrency` sweep's levels (empty: no sweep). */
  concurrency: number[];
  /** `--fail-under-decode-tps`. */
  minTps?: number;
  /** `--fail-over-ttft-ms`. */
  maxTtft?: number;
}

/**
 * Reads the remote benchmark's options (after `parseArgs`): the server, key, prompts, sweep, timeouts, plan
 * and thresholds, and makes the engine.
 * @throws UsageError for a bad or missing argument; EngineError('invalid_argument') from RemoteEngine (a
 * bad base URL).
 */
function readRemoteArgs(values: Record<string, string | boolean | undefined>): RemoteCliArgs {
  const opt = (k: string) => values[k] as string | undefined;
  const base = opt('base-url');
  if (!base) throw new UsageError('--engine remote needs --base-url URL');
  const api = opt('api') ?? 'chat';
  if (api !== 'chat' && api !== 'completions')
    throw new UsageError(`--api must be chat or completions, got "${api}"`);
  let apiKey: string | undefined;
  const keyVar = opt('api-key-env');
  if (keyVar !== undefined) {
    apiKey = process.env[keyVar];
    if (!apiKey) throw new UsageError(`--api-key-env ${keyVar}: that environment variable is not set`);
  }
  if (opt('prompt') !== undefined && opt('prompts') !== undefined)
    throw new UsageError('give --prompt or --prompts, not both');
  const pf = opt('prompts');
  let prompts: BenchPrompt[];
  if (opt('prompt') !== undefined) prompts = promptsFor('custom', opt('prompt'));
  else if (pf !== undefined) {
    if (existsSync(pf)) prompts = parsePromptsFile(readFileSync(pf, 'utf8'));
    else if (pf === 'all' || isPromptSetName(pf)) prompts = promptsFor(pf);
    else throw new UsageError(`--prompts ${pf}: no such file, and not a built-in set`);
  } else prompts = promptsFor('short');
  let concurrency: number[] = [];
  if (opt('concurrency') !== undefined) {
    concurrency = parseConcurrency(opt('concurrency') ?? '');
    if (concurrency.length === 0) throw new UsageError('--concurrency is empty: give levels such as 1,4,16');
  }
  const first =
    secondsArg(opt('first-token-timeout-s'), 'first-token-timeout-s') ??
    secondsArg(opt('timeout-s'), 'timeout-s') ??
    60;
  const idle = secondsArg(opt('idle-timeout-s'), 'idle-timeout-s') ?? 30;
  const request =
    secondsArg(opt('request-timeout-s'), 'request-timeout-s') ?? DEFAULT_REQUEST_TIMEOUT_MS / 1000;
  // Every number before the first request: a bad threshold must not wait for a whole run to be refused.
  const plan: BenchPlan = {
    prompts,
    maxTokens: intArg(opt('max-tokens'), 'max-tokens', 1, 128),
    runs: intArg(opt('runs'), 'runs', 1, 2),
    warmup: intArg(opt('warmup'), 'warmup', 0, 1),
    ignoreEos: Boolean(values['ignore-eos']),
  };
  const minTps = numArg(opt('fail-under-decode-tps'), 'fail-under-decode-tps', { min: 0 });
  const maxTtft = numArg(opt('fail-over-ttft-ms'), 'fail-over-ttft-ms', { min: 0 });
  if (opt('junit') === '') throw new UsageError('--junit is empty: give the file to write');
  if (opt('summary-md') === '')
    throw new UsageError('--summary-md is empty: give the file to append to (is $GITHUB_STEP_SUMMARY set?)');
  checkWritable({ '--json': opt('json'), '--junit': opt('junit'), '--summary-md': opt('summary-md') });
  const engine = new RemoteEngine({
    baseUrl: base,
    model: opt('model'),
    api,
    apiKey,
    firstTokenTimeoutMs: first * 1000,
    idleTimeoutMs: idle * 1000,
    requestTimeoutMs: request * 1000,
    timeoutOptionNames: {
      firstTokenTimeoutMs:
        opt('first-token-timeout-s') !== undefined ? '--first-token-timeout-s' : '--timeout-s',
      idleTimeoutMs: '--idle-timeout-s',
      requestTimeoutMs: '--request-timeout-s',
    },
  });
  return { engine, apiKey, plan, concurrency, minTps, maxTtft };
}

/** Prints the remote benchmark's progress on stderr: the model, each run, each sweep point, warnings. */
function logRemoteEvent(e: RemoteBenchEvent, log: (s: string) => void): void {
  if (e.type === 'loaded') log(`model ${e.model} (the server lists: ${e.models.join(', ')})`);
  else if (e.type === 'run-done') {
    const r = e.run;
    const head = `${e.warmup ? 'warm-up' : 'run'} ${e.index + 1}/${e.total} [${r.promptName}]`;
    const tokens = `${r.outputTokens}${r.approximate ? ' (approx.)' : ''} tokens`;
    // A failed request (its error follows): what came before it, not a line like a finished run's.
    if (r.partial)
      log(
        `${head} failed (${r.error?.code ?? 'error'}) after ${tokens}${e.warmup ? '; a warm-up, so not kept' : ', kept as partial'}`,
      );
    else
      log(
        `${head} ${r.promptTokens || '?'} → ${tokens}: TTFT ${fmtSig(r.ttftMs)} ms, decode ${fmtSig(r.decodeTokensPerSecond)} tok/s, E2E ${fmtSig(r.e2eMs)} ms`,
      );
  } else if (e.type === 'sweep-done') {
    const p = e.point;
    log(
      `concurrency ${p.concurrency}: ${p.completed}/${p.requests} ok, ${fmtSig(p.requestThroughput)} req/s, ${fmtSig(p.outputTokenThroughput)} output tok/s, E2E p50 ${fmtSig(p.summary.e2eMs?.median)} ms`,
    );
  } else if (e.type === 'warning') log(`warning: ${e.message}`);
}

/** What the remote run had learned when a signal came: where it was, the model, its runs and sweep. */
interface RemoteSeen {
  phase: InterruptPhase;
  model: string;
  loadMs?: number;
  runs: BenchRun[];
  sweep: BenchSweepPoint[];
}

/** Follows {@link runRemoteBench}'s events into `seen` (measured runs only, not warm-ups). */
function noteRemoteEvent(seen: RemoteSeen, e: RemoteBenchEvent): void {
  if (e.type === 'loaded') {
    seen.phase = 'runs';
    seen.model = e.model;
    seen.loadMs = e.loadMs;
  } else if (e.type === 'run-done' && !e.warmup) seen.runs.push(e.run);
  else if (e.type === 'sweep-start') seen.phase = 'sweep';
  else if (e.type === 'sweep-done') seen.sweep.push(e.point);
}

/**
 * On Ctrl-C (SIGINT) or SIGTERM, as the local engine does (src/cli/bench.ts): writes `--json` (what was
 * measured, `partial` with `interrupted: {signal, phase}`; before the server's model list came back, no
 * runs), `--junit`/`--summary-md` with an `aborted` error, and exits 130 (143 for SIGTERM). Returns the
 * function that removes the handlers.
 */
function onRemoteInterrupt(
  seen: RemoteSeen,
  o: {
    host: string;
    api: 'chat' | 'completions';
    plan: BenchPlan;
    log: (s: string) => void;
    writeJson: (r: BenchResult) => void;
    ci: (r: { result?: BenchResult; error?: unknown }) => void;
  },
): () => void {
  return onInterruptSignals((signal) => {
    const loaded = seen.loadMs !== undefined;
    const total = o.plan.prompts.length * o.plan.runs;
    const result: BenchResult = {
      ...remoteResult({
        host: o.host,
        api: o.api,
        model: seen.model,
        loadMs: seen.loadMs ?? Number.NaN,
        plan: o.plan,
        runs: seen.runs,
        sweep: seen.sweep,
        partial: true,
      }),
      interrupted: { signal, phase: seen.phase },
    };
    const what = loaded
      ? `after ${seen.runs.length} of ${total} measured runs`
      : "before the server's model list came back";
    o.log(`interrupted (${signal}) ${what}`);
    // A failed write (a full disk) must not cost the JUnit and summary files below.
    try {
      o.writeJson(result);
    } catch (e) {
      o.log(`could not write the --json file: ${(e as Error).message}`);
    }
    o.ci({
      result: loaded ? result : undefined,
      error: new EngineError('aborted', `interrupted (${signal}) ${what}`),
    });
  });
}

/** Runs the remote benchmark from the command line; returns the exit code. */
export async function runRemoteCli(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseCliArgs({
      args: argv,
      allowPositionals: false,
      options: {
        engine: { type: 'string' },
        'base-url': { type: 'string' },
        model: { type: 'string' },
        'api-key-env': { type: 'string' },
        api: { type: 'string' },
        concurrency: { type: 'string' },
        prompt: { type: 'string' },
        prompts: { type: 'string' },
        'max-tokens': { type: 'string' },
        runs: { type: 'string' },
        warmup: { type: 'string' },
        'ignore-eos': { type: 'boolean', default: false },
        json: { type: 'string' },
        'timeout-s': { type: 'string' },
        'first-token-timeout-s': { type: 'string' },
        'idle-timeout-s': { type: 'string' },
        'request-timeout-s': { type: 'string' },
        'fail-under-decode-tps': { type: 'string' },
        'fail-over-ttft-ms': { type: 'string' },
        junit: { type: 'string' },
        'summary-md': { type: 'string' },
        'no-roofline': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (e) {
    console.error(badArgs(e));
    return 2;
  }
  if (values.help) {
    console.log(REMOTE_USAGE);
    return 0;
  }
  let args: RemoteCliArgs;
  const opt = (k: string) => values[k] as string | undefined;
  try {
    args = readRemoteArgs(values);
  } catch (e) {
    if (isUsageError(e) || isEngineError(e, 'invalid_argument')) {
      console.error(badArgs(e));
      return 2;
    }
    throw e;
  }
  const { engine, plan, concurrency, minTps, maxTtft } = args;
  const secrets = [args.apiKey];
  const log = logger(secrets);
  const redact = (s: string) => redactSecrets(s, secrets);
  const writeJson = (r: BenchResult) => {
    const file = opt('json');
    if (!file) return;
    mkdirSync(dirname(resolve(file)), { recursive: true });
    writeFileSync(file, redact(`${JSON.stringify(r, null, 1)}\n`));
    log(
      `wrote ${file}${r.interrupted ? ` (partial: interrupted in ${r.interrupted.phase})` : r.error ? ` (partial: failed with ${r.error.code} after ${r.runs.length} measured run${r.runs.length === 1 ? '' : 's'})` : r.partial ? ' (partial)' : ''}`,
    );
  };
  const t0 = performance.now();
  const ci = (r: { result?: BenchResult; error?: unknown }) =>
    writeCiFiles({
      junit: opt('junit'),
      summaryMd: opt('summary-md'),
      thresholds: { failUnderDecodeTps: minTps, failOverTtftMs: maxTtft },
      result: r.result,
      error: r.error === undefined ? undefined : runError(r.error),
      modelId: opt('model') ?? engine.host,
      timeS: (performance.now() - t0) / 1000,
      log,
      secrets,
    });
  log(`remote ${engine.host} (${engine.api} API)`);
  const seen: RemoteSeen = { phase: 'load', model: opt('model') ?? 'unknown', runs: [], sweep: [] };
  const offInterrupt = onRemoteInterrupt(seen, {
    host: engine.host,
    api: engine.api,
    plan,
    log,
    writeJson,
    ci,
  });
  let result: BenchResult;
  try {
    result = await runRemoteBench({
      engine,
      plan,
      concurrency,
      onEvent: (e) => {
        noteRemoteEvent(seen, e);
        logRemoteEvent(e, log);
      },
    });
  } catch (e) {
    if (e instanceof RemoteBenchError) writeJson(e.result);
    // JUnit's properties and the summary's row read a result's figures: none before the listing came back
    // (as for an interrupt then), so they name the server instead of an `unknown` model.
    const listed = e instanceof RemoteBenchError && !Number.isNaN(e.result.load.totalMs);
    ci({ result: listed ? e.result : undefined, error: e });
    const code = (e as { code?: string }).code;
    // The engine's words are the page's too; the command line's way to give a key follows them.
    const advice =
      code === 'unauthorized'
        ? args.apiKey
          ? '; check the key in the environment variable --api-key-env names'
          : '; pass one with --api-key-env VAR (the name of an environment variable that holds it)'
        : '';
    console.error(redact(`error${code ? ` [${code}]` : ''}: ${(e as Error).message}${advice}`));
    return 1;
  } finally {
    // Gone once the benchmark ended either way: the files below are the run's own (and a test that runs
    // this command in its process must not keep them).
    offInterrupt();
  }
  process.stdout.write(redact(`${formatResultText(result)}\n${sweepTable(result)}`));
  writeJson(result);
  ci({ result });
  const missed = checkThresholds(result, { failUnderDecodeTps: minTps, failOverTtftMs: maxTtft }).filter(
    (o) => !o.passed,
  );
  for (const o of missed) console.error(redact(`threshold missed: ${o.message}`));
  return missed.length ? 3 : 0;
}
