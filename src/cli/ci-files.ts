/**
 * Writes the CI files of `npm run bench` (Node side of src/bench/ci-report.ts): `--junit FILE` (written,
 * replacing the file) and `--summary-md FILE` (appended, as `$GITHUB_STEP_SUMMARY` expects), for a finished
 * run and for a failed one alike. Used by the page benchmark (src/cli/bench.ts) and the remote one
 * (src/cli/remote.ts).
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
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
      mkdirSync(dirname(path), { recursive: true });
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
 * Writes the JUnit file and appends the summary (each only when asked for), with the secrets and any
 * bearer token redacted; a write error is only logged.
 */
export function writeCiFiles(f: CiFiles): void {
  const outcomes = checkThresholds(f.result, f.thresholds);
  const common = { result: f.result, outcomes, error: f.error, device: f.device, modelId: f.modelId };
  const write = (file: string, text: string, append: boolean) => {
    try {
      mkdirSync(dirname(resolve(file)), { recursive: true });
      (append ? appendFileSync : writeFileSync)(file, redactSecrets(text, f.secrets));
      f.log(`${append ? 'appended to' : 'wrote'} ${file}`);
    } catch (e) {
      f.log(`warning: cannot write ${file}: ${(e as Error).message}`);
    }
  };
  if (f.junit) write(f.junit, junitXml({ ...common, timeS: f.timeS, hostname: hostname() }), false);
  if (f.summaryMd) write(f.summaryMd, summaryMarkdown(common), true);
}
