/**
 * The one number formatting module (page, reports, CLI, widget): times, rates, counts, percentages, bytes
 * and parameter counts. Missing values (NaN, undefined) read as an en dash.
 */

const DASH = '–';

function ok(n: number | undefined | null): n is number {
  return typeof n === 'number' && Number.isFinite(n);
}

/** Milliseconds: "0.82 ms", "12.3 ms", "1,234 ms", "12.3 s" above a minute's worth of ms. */
export function fmtMs(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  if (Math.abs(n) >= 60_000) return `${(n / 1000).toFixed(1)} s`;
  if (Math.abs(n) >= 1000) return `${Math.round(n).toLocaleString('en-US')} ms`;
  if (Math.abs(n) >= 10) return `${n.toFixed(1)} ms`;
  return `${n.toFixed(2)} ms`;
}

/** A rate or other quantity with about three significant figures: "1,234", "123", "12.3", "1.23". */
export function fmtNum(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  const a = Math.abs(n);
  if (a >= 1000) return Math.round(n).toLocaleString('en-US');
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** A count with thousands separators: 3104 → "3,104". */
export function fmtCount(n: number | undefined | null): string {
  return ok(n) ? Math.round(n).toLocaleString('en-US') : DASH;
}

/** Tokens per second: "123 tok/s". */
export function fmtRate(n: number | undefined | null): string {
  return ok(n) ? `${fmtNum(n)} tok/s` : DASH;
}

/** A fraction as a percentage with three significant figures: 0.634 → "63.4%", 0.0012 → "0.12%". */
export function fmtPct(f: number | undefined | null): string {
  return ok(f) ? `${fmtSig(f * 100)}%` : DASH;
}

/**
 * A number with `digits` significant figures, trailing zeros dropped and no thousands separators (reports,
 * Markdown and messages): 1234.5 → "1235", 0.012345 → "0.0123", 2.50 → "2.5".
 */
export function fmtSig(v: number | undefined | null, digits = 3): string {
  if (!ok(v)) return DASH;
  if (v === 0) return '0';
  if (Math.abs(v) >= 10 ** digits) return Math.round(v).toString();
  return Number(v.toPrecision(digits)).toString();
}

/** Bytes in decimal units (what downloads, files and bandwidths use), three significant figures: "1.19 MB", "3.4 GB", "512 B". */
export function fmtBytes(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  // Compared after rounding, so 999,900 B reads "1 MB", not "1000 kB".
  while (i < units.length - 1 && Math.abs(Number(v.toPrecision(3))) >= 1000) {
    v /= 1000;
    i++;
  }
  return `${fmtSig(v)} ${units[i]}`;
}

const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/**
 * A byte count in binary units (what device limits use): `1073741824` → `"1 GiB"`, `1536` → `"1.5 KiB"`. A
 * value that rounds to a whole number without being one gets a `~` (`4294967292` → `"~4 GiB"`), so the text
 * never overstates; a negative or non-finite value is written as it is.
 */
export function fmtBinaryBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return String(n);
  let i = 0;
  while (i < BINARY_UNITS.length - 1 && n >= 1024 ** (i + 1)) i++;
  const v = n / 1024 ** i;
  if (Number.isInteger(v)) return `${v} ${BINARY_UNITS[i]}`;
  const shown = Number(v.toFixed(2));
  return `${Number.isInteger(shown) ? '~' : ''}${shown} ${BINARY_UNITS[i]}`;
}

/** A parameter count, three significant figures: 260,000 → "260K", 1.1e9 → "1.1B", 1.235e9 → "1.24B". */
export function fmtParams(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  const steps: [number, string][] = [
    [1e9, 'B'],
    [1e6, 'M'],
    [1e3, 'K'],
  ];
  // Compared after rounding, so 999.9M reads "1B", not "1000M".
  for (const [d, s] of steps) if (Number((n / d).toPrecision(3)) >= 1) return `${fmtSig(n / d)}${s}`;
  return String(n);
}

/**
 * The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 or 10 times a power of ten that is ≥ `v` (v > 0):
 * an axis end that puts the ticks on round numbers.
 */
export function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}

/** The smallest of 1, 2, 2.5 or 5 times a power of ten that is ≥ `v` (v > 0): a round tick step. */
export function niceStep(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}
