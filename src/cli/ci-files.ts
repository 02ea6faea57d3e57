/**
 * Writes the CI files of `npm run bench` (Node side of src/bench/ci-report.ts): `--junit FILE` (written,
 * replacing the file) and `--summary-md FILE` (appended, as `$GITHUB_STEP_SUMMARY` expects), for a finished
 * run and for a failed one alike. Used by the page benchmark (src/cli/bench.ts) and the remote one
 * (src/cli/remote.ts).
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import {
  type BenchThresholds,
  checkThresholds,
  junitXml,
  type RunError,
  summaryMarkdown,
} from '../bench/ci-report.ts';
import type { BenchDevice, BenchResult } from '../bench/types.ts';
import { redactSecrets } from '../util/redact.ts';
import { UsageError } from './args.ts';
import { eventLoopTurn } from './run.ts';

/** What {@link writeCiFiles} writes, and where. */
export interface CiFiles {
  /** --junit FILE. */
  junit?: string;
  /** --summary-md FILE. */
  summaryMd?: string;
  thresholds: BenchThresholds;
  /** The result (absent, or partial, when the run failed). */
  result?: BenchResult;
  /** The failure, for a run that ends with exit 1. */
  error?: RunError;
  /** The device when known without a result. */
  device?: BenchDevice;
  /** The model's id when known without a result. */
  modelId?: string;
  /** Wall-clock seconds of the command. */
  timeS: number;
  /** Progress line (stderr). */
  log: (line: string) => void;
  /**
   * Secrets (the API key) that must not be written: removed from both files' text, as is any
   * `Bearer <token>` (src/util/redact.ts), since a server may echo the key in its error message.
   */
  secrets?: readonly (string | undefined)[];
}

/**
 * Makes the folder `dir` and its missing parents, one at a time and never with `mkdirSync`'s `recursive`
 * (Node 20's recursive mkdir never returns for a path under /proc such as `/proc/nope`; a plain mkdir
 * fails there with ENOENT). A folder made meanwhile by someone else is fine.
 * @throws the system's error for a folder that cannot be made (ENOENT, EACCES, ENOTDIR, …).
 */
export function makeFolder(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); ) {
    missing.push(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * Checks, before a run, that each output file can be written (its folder made, the file opened for
 * appending; a file that was not there is removed again), so a bad `--json` path is said in a second,
 * not after the whole run with its figures lost.
 * @param files flag → path (unset paths are skipped), e.g. `{ '--json': 'out/r.json' }`.
 * @throws UsageError naming the flag, the path and the system's reason.
 */
export function checkWritable(files: Record<string, string | undefined>): void {
  for (const [flag, file] of Object.entries(files)) {
    if (!file) continue;
    const path = resolve(file);
    const existed = existsSync(path);
    try {
      makeFolder(dirname(path));
      closeSync(openSync(path, 'a'));
      if (!existed) rmSync(path);
    } catch (e) {
      throw new UsageError(
        `${flag} ${file} cannot be written (${(e as Error).message}): give a writable path`,
      );
    }
  }
}

/** A thrown value as a {@link RunError}: its code (an EngineError's; not Node's `ERR_…`) and message. */
export function runError(e: unknown, message = (e as Error)?.message ?? String(e)): RunError {
  const code = (e as { code?: unknown })?.code;
  return { code: typeof code === 'string' && !code.startsWith('ERR_') ? code : undefined, message };
}

/**
 * What goes before a section appended to `file`: a line break and a blank line when the file has text
 * that does not end with a line break (its last line would run into the heading), else nothing.
 */
function appendSeparator(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return ''; // not there yet
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size === 0) return '';
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, st.size - 1);
    return last[0] === 0x0a ? '' : '\n\n';
  } finally {
    closeSync(fd);
  }
}

/** The writes of {@link writeCiFiles}, one step per file (the JUnit file, then the summary). */
function ciFileWrites(f: CiFiles): (() => void)[] {
  const outcomes = checkThresholds(f.result, f.thresholds);
  const common = { result: f.result, outcomes, error: f.error, device: f.device, modelId: f.modelId };
  const write = (file: string, text: () => string, append: boolean) => () => {
    try {
      makeFolder(dirname(resolve(file)));
      const body = redactSecrets(text(), f.secrets);
      if (append) appendFileSync(file, appendSeparator(file) + body);
      else writeFileSync(file, body);
      f.log(`${append ? 'appended to' : 'wrote'} ${file}`);
    } catch (e) {
      f.log(`warning: cannot write ${file}: ${(e as Error).message}`);
    }
  };
  const steps: (() => void)[] = [];
  if (f.junit)
    steps.push(write(f.junit, () => junitXml({ ...common, timeS: f.timeS, hostname: hostname() }), false));
  if (f.summaryMd) steps.push(write(f.summaryMd, () => summaryMarkdown(common), true));
  return steps;
}

/**
 * Writes the JUnit file and appends the summary (each only when asked for), with the secrets and any
 * bearer token redacted; a write error is only logged. A summary appended to a file whose text does not
 * end with a line break starts on a line of its own, after a blank line.
 */
export function writeCiFiles(f: CiFiles): void {
  for (const step of ciFileWrites(f)) step();
}

/**
 * {@link writeCiFiles} for a signal handler: lets Node's event loop turn before each file, so that a signal
 * arriving meanwhile is taken and acknowledged (tsx kills a child that leaves a signal it relayed
 * unanswered for 30 ms; src/cli/run.ts onInterruptSignals).
 */
export async function writeCiFilesYielding(f: CiFiles): Promise<void> {
  for (const step of ciFileWrites(f)) {
    await eventLoopTurn();
    step();
  }
}
