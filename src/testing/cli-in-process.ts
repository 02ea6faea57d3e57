/**
 * Runs a command-line entry point (src/cli/*.ts, its exported `cli`) in this process, as `runCli` would
 * with `args` on its command line: its exit status and what it wrote to stdout and stderr. A spawned
 * `node --import tsx` costs seconds of start-up on a loaded 2-core CI machine, so tests of argument
 * handling (errors raised before any work) run here; each command keeps at least one spawned test of the
 * real entry point (src/cli/usage.test.ts). Runs one command at a time: it swaps `process.argv` and the
 * console while `main` runs.
 */
import { resolve } from 'node:path';
import type { CliCommand } from '../cli/run.ts';
import { reportCliFailure } from '../cli/run.ts';

export interface InProcessRun {
  code: number;
  stdout: string;
  stderr: string;
}

const COMMANDS: Record<string, () => Promise<{ cli: CliCommand }>> = {
  bench: () => import('../cli/bench.ts'),
  generate: () => import('../cli/generate.ts'),
  'gguf-split': () => import('../cli/gguf-split.ts'),
  models: () => import('../cli/models.ts'),
  perplexity: () => import('../cli/perplexity.ts'),
  quantize: () => import('../cli/quantize.ts'),
};

let busy = false;

/**
 * `npm run <script> -- ...args` in this process (`script` one of src/cli's commands, by file name), with
 * `env`'s variables set (undefined: unset) while it runs.
 */
export async function runCliInProcess(
  script: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<InProcessRun> {
  const load = COMMANDS[script];
  if (!load) throw new Error(`runCliInProcess: no command ${script}`);
  if (busy) throw new Error('runCliInProcess: one command at a time');
  const { cli } = await load();
  busy = true;
  let stdout = '';
  let stderr = '';
  const text = (xs: unknown[]) => `${xs.map((x) => (typeof x === 'string' ? x : String(x))).join(' ')}\n`;
  const saved = {
    argv: process.argv,
    log: console.log,
    info: console.info,
    warn: console.warn,
    error: console.error,
    out: process.stdout.write,
    err: process.stderr.write,
  };
  const savedEnv = Object.keys(env).map((k) => [k, process.env[k]] as const);
  const setEnv = (k: string, v: string | undefined) => {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  };
  for (const [k, v] of Object.entries(env)) setEnv(k, v);
  process.argv = [process.execPath, resolve(import.meta.dirname, `../cli/${script}.ts`), ...args];
  console.log = (...xs: unknown[]) => {
    stdout += text(xs);
  };
  console.info = console.log;
  console.warn = (...xs: unknown[]) => {
    stderr += text(xs);
  };
  console.error = console.warn;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stderr.write;
  let code: number;
  try {
    code = await cli.main();
  } catch (e) {
    code = reportCliFailure(e, cli.format, cli.usageHint);
  } finally {
    process.argv = saved.argv;
    for (const [k, v] of savedEnv) setEnv(k, v);
    console.log = saved.log;
    console.info = saved.info;
    console.warn = saved.warn;
    console.error = saved.error;
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    busy = false;
  }
  return { code, stdout, stderr };
}
