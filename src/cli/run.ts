/**
 * The end of every command-line entry point: run `main`, exit with its status, and print a failure as
 * `error [code]: message` (the EngineError code, or a Node error code; none for plain errors) with status 1,
 * or, for bad arguments (args.ts `UsageError`, Node's parseArgs errors),
 * `error [invalid_argument]: message` with status 2.
 */
import { isUsageError } from './args.ts';

/** `error [code]: message` for a thrown value. */
export function formatCliError(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  const tag = typeof code === 'string' && !code.startsWith('ERR_') ? ` [${code}]` : '';
  return `error${tag}: ${(e as Error)?.message ?? String(e)}`;
}

/**
 * Runs a command's `main` and exits the process with its status: 2 with the message (and `usageHint`, a
 * line such as "npm run generate -- --help lists the options") for bad arguments, 1 with `format`'s line
 * for any other failure.
 */
export function runCli(
  main: () => Promise<number>,
  format: (e: unknown) => string = formatCliError,
  usageHint?: string,
): void {
  main().then(
    (code) => process.exit(code),
    (e) => {
      if (isUsageError(e)) {
        console.error(
          `error [invalid_argument]: ${(e as Error).message}${usageHint ? `\n(${usageHint})` : ''}`,
        );
        process.exit(2);
      }
      console.error(format(e));
      process.exit(1);
    },
  );
}
