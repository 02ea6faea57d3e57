/** Number formatting for the page (no DOM). Missing values (NaN, undefined) read as an en dash. */

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

/** A fraction as a percentage: 0.634 → "63%", 0.0123 → "1.2%". */
export function fmtPct(f: number | undefined | null): string {
  if (!ok(f)) return DASH;
  const p = f * 100;
  return `${p >= 10 ? p.toFixed(0) : p >= 1 ? p.toFixed(1) : p.toFixed(2)}%`;
}

/** Bytes in decimal units (what downloads and bandwidths use): "1.19 MB", "3.4 GB". */
export function fmtBytes(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (i < units.length - 1 && Math.abs(v) >= 1000) {
    v /= 1000;
    i++;
  }
  return i === 0
    ? `${v} B`
    : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[i]}`;
}

/** A parameter count: 260,000 → "260K", 1.1e9 → "1.1B". */
export function fmtParams(n: number | undefined | null): string {
  if (!ok(n)) return DASH;
  const steps: [number, string][] = [
    [1e9, 'B'],
    [1e6, 'M'],
    [1e3, 'K'],
  ];
  for (const [d, s] of steps) if (n >= d) return `${+(n / d).toPrecision(n / d >= 100 ? 3 : 2)}${s}`;
  return String(n);
}
