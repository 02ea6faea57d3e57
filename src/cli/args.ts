/** Number arguments of the command lines, checked, and the error that means "bad arguments" (exit 2). */

/** A bad command-line argument: the commands print its message and exit 2. */
export class UsageError extends Error {}

/**
 * `--name` as an integer ≥ `min`, or `def` when absent.
 * @throws UsageError for anything else.
 */
export function intArg(v: string | undefined, name: string, min: number, def: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer ≥ ${min}, got "${v}"`);
  return n;
}

/**
 * `--name` as a finite number (a positive one with `positive`), or undefined when absent.
 * @throws UsageError for anything else.
 */
export function numArg(
  v: string | undefined,
  name: string,
  opts: { positive?: boolean } = {},
): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (opts.positive ? !(Number.isFinite(n) && n > 0) : !Number.isFinite(n))
    throw new UsageError(`--${name} must be a ${opts.positive ? 'positive ' : ''}number, got "${v}"`);
  return n;
}
