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
 * `--name -5` → `--name=-5`: Node's parseArgs takes a value starting with "-" for an option and refuses it
 * ("argument is ambiguous"), so a negative number never reached the option's own check, which says what
 * the option takes. Only long options followed by a number (`-5`, `-0.5`, `-1e3`) are joined.
 */
export function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = argv[i + 1];
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (/^--[^=]+$/.test(a) && next !== undefined && /^-(\d|\.\d)[\d.eE+-]*$/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * Runs a command's `main` and exits the process with its status: 2 with the message (and `usageHint`, a
 * line such as "npm run generate -- --help lists the options") for bad arguments, 1 with `format`'s line
 * for any other failure. Negative numbers given as `--name -5` are joined first ({@link joinNegativeValues}).
 */
export function runCli(
  main: () => Promise<number>,
  format: (e: unknown) => string = formatCliError,
  usageHint?: string,
): void {
  process.argv = [...process.argv.slice(0, 2), ...joinNegativeValues(process.argv.slice(2))];
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
