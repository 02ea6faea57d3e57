/**
 * The end of every command-line entry point: run `main`, exit with its status, and print a failure as
 * `error [code]: message` (the EngineError code, or a Node error code; none for plain errors) with status 1.
 */

/** `error [code]: message` for a thrown value. */
export function formatCliError(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  const tag = typeof code === 'string' && !code.startsWith('ERR_') ? ` [${code}]` : '';
  return `error${tag}: ${(e as Error)?.message ?? String(e)}`;
}

/** Runs a command's `main` and exits the process with its status (1 and a message when it throws). */
export function runCli(main: () => Promise<number>, format: (e: unknown) => string = formatCliError): void {
  main().then(
    (code) => process.exit(code),
    (e) => {
      console.error(format(e));
      process.exit(1);
    },
  );
}
