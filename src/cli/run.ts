/**
 * The end of every command-line entry point: run `main`, exit with its status, and print a failure as
 * `error [code]: message` (the EngineError code, or a Node error code; none for plain errors) with status 1,
 * or, for bad arguments (args.ts `UsageError`, Node's parseArgs errors),
 * `error [invalid_argument]: message` with status 2.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contextOverflowText, EngineError, isEngineError } from '../core/errors.ts';
import { isUsageError } from './args.ts';

/**
 * `error [code]: message` for a thrown value. A context overflow with its details is worded for the command
 * line (`--ctx`; the engine's message also names the API's `contextLength`).
 */
export function formatCliError(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  const tag = typeof code === 'string' && !code.startsWith('ERR_') ? ` [${code}]` : '';
  const message = (e as Error)?.message ?? String(e);
  return `error${tag}: ${
    isEngineError(e, 'context_overflow') && e.details?.contextLength !== undefined
      ? contextOverflowText(e, message, 'shorten the prompt or pass a larger --ctx', 'the prompt')
      : message
  }`;
}

/**
 * A command's entry point as its module exports it (`cli`), so that tests can run it in this process
 * (src/testing/cli-in-process.ts) instead of paying a `tsx` start-up per case; `main` reads its arguments
 * from `process.argv`, as it does when run.
 */
export interface CliCommand {
  main: () => Promise<number>;
  format?: (e: unknown) => string;
  usageHint?: string;
}

/** Whether the module at `moduleUrl` (its `import.meta.url`) is the script Node was started with. */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  return real(resolve(script)) === real(fileURLToPath(moduleUrl));
}

/**
 * A command ended by Ctrl-C where no interrupt handler runs (a download: src/cli/model-cache.ts): an
 * EngineError('aborted') whose message says what was kept; {@link runCli} says it and exits 130, as the
 * shell reports a command that SIGINT ended (128 + 2).
 */
export class CliInterrupt extends EngineError {
  constructor(message: string) {
    super('aborted', message);
  }
}

/**
 * Prints a failure of a command's `main` as `runCli` does and returns its exit status: 2 with the message
 * (and `usageHint`) for bad arguments, 130 with `format`'s line for a {@link CliInterrupt}, 1 with it for
 * any other failure.
 */
export function reportCliFailure(
  e: unknown,
  format: (e: unknown) => string = formatCliError,
  usageHint?: string,
): number {
  if (isUsageError(e)) {
    console.error(`error [invalid_argument]: ${(e as Error).message}${usageHint ? `\n(${usageHint})` : ''}`);
    return 2;
  }
  console.error(format(e));
  return e instanceof CliInterrupt ? 130 : 1;
}

/** Set once an interrupt handler has started: the command's own ending then leaves the exit to it. */
let interrupting = false;

/** Whether a SIGINT or SIGTERM handler ({@link onInterruptSignals}) has started (and will exit). */
export function interruptInProgress(): boolean {
  return interrupting;
}

/** Resolves after one turn of Node's event loop (`setImmediate`): pending signals and I/O are taken. */
export function eventLoopTurn(): Promise<void> {
  return new Promise((done) => setImmediate(done));
}

/**
 * Calls `handler(signal)` on the first SIGINT or SIGTERM and, once it returns (or its promise settles),
 * exits 130 or 143 (the shell's 128 + the signal's number), as `npm run bench` and `npm run remote` do
 * when interrupted. The listeners stay while the handler runs and ignore a repeated signal, for tsx (which
 * `npm run` starts): its parent relays a signal and, when it misses the acknowledgement its listener in
 * the command sends (on a process-group kill the command can answer before the parent waits), sends the
 * signal again 30 ms later, then SIGKILL after 30 ms more. With `once` listeners that repeat met Node's
 * default action (tsx hides its own listener from `process.listenerCount`) and killed the command
 * mid-write; a handler that writes several files should let the event loop turn between them
 * ({@link eventLoopTurn}) so that tsx's listener answers the repeat.
 * @returns the function that removes the handlers (once the run has ended; kept once a signal came).
 */
export function onInterruptSignals(handler: (signal: NodeJS.Signals) => void | Promise<void>): () => void {
  let caught = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (caught) return; // a repeat (tsx's relay): the first one's handler is writing and will exit
    caught = true;
    interrupting = true;
    const code = signal === 'SIGTERM' ? 143 : 130;
    // The status still says "interrupted" (a throw here would exit 1 as an uncaught exception).
    const failed = (e: unknown) =>
      console.error(`could not write what was measured: ${(e as Error)?.message ?? String(e)}`);
    let pending: unknown;
    try {
      pending = handler(signal);
    } catch (e) {
      failed(e);
    }
    if (pending instanceof Promise) pending.catch(failed).finally(() => process.exit(code));
    else process.exit(code);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    if (caught) return;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/**
 * Runs a command's `main` and exits the process with its status: 2 with the message (and `usageHint`, a
 * line such as "npm run generate -- --help lists the options") for bad arguments, 1 with `format`'s line
 * for any other failure. Once a signal's handler has started ({@link onInterruptSignals}), `main`'s end
 * (a run the signal cut short) is left unsaid: the handler exits when its files are written.
 */
export function runCli(
  main: () => Promise<number>,
  format: (e: unknown) => string = formatCliError,
  usageHint?: string,
): void {
  main().then(
    (code) => {
      if (!interrupting) process.exit(code);
    },
    (e) => {
      if (!interrupting) process.exit(reportCliFailure(e, format, usageHint));
    },
  );
}
