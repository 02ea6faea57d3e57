/**
 * `npm run bench:report -- results/*.json [--md FILE] [--html FILE] [--title TEXT]`
 *
 * Merges result files of `npm run bench` (schemaVersion 1; several machines of a CI matrix, models,
 * engines) into one comparison: a Markdown table and the leaderboard's devices × models matrix (stdout, or
 * `--md FILE`, e.g. `$GITHUB_STEP_SUMMARY`)
 * and, with `--html FILE`, the shareable leaderboard: a self-contained HTML page (no external request, no
 * script; readable at phone width) with devices × models (decode/prefill tok/s, TTFT, fingerprints and
 * dates; src/bench/leaderboard.ts), a ranked table per model, every result, and inline SVG charts.
 * Invalid files are named with their problems. Exit codes: 2 for a usage error (no file given, a path that does
 * not exist or cannot be read, as every command here), 1 if a file is not a valid result, else 0.
 */

import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { leaderboard, leaderboardMarkdown } from '../bench/leaderboard.ts';
import { htmlReport, markdownReport, reportRows } from '../bench/report.ts';
import { type BenchResult, resultProblems } from '../bench/types.ts';
import { parseCliArgs } from './args.ts';

const USAGE = `usage: npm run bench:report -- FILE.json... [--md FILE] [--append-md] [--html FILE] [--title TEXT]

  FILE.json        result files written by \`npm run bench -- --json FILE\`
  --md FILE        write the Markdown table and leaderboard to FILE instead of stdout
  --append-md      append to the --md file (for $GITHUB_STEP_SUMMARY)
  --html FILE      also write the leaderboard: one self-contained HTML page
  --title TEXT     the HTML page's title`;

function main(argv: string[]): number {
  const { values, positionals } = parseCliArgs({
    args: argv,
    allowPositionals: true,
    options: {
      md: { type: 'string' },
      'append-md': { type: 'boolean', default: false },
      html: { type: 'string' },
      title: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 0) {
    console.error(`error [invalid_argument]: no result files given\n\n${USAGE}`);
    return 2;
  }
  for (const flag of ['md', 'html'] as const)
    if (values[flag] === '') {
      // An unset variable ($GITHUB_STEP_SUMMARY outside GitHub) sent the report to stdout unnoticed.
      console.error(`error [invalid_argument]: --${flag} is empty: give the file to write`);
      return 2;
    }
  if (values['append-md'] && !values.md) {
    // It went to stdout as if no flag were given: a CI step's summary file then stayed empty.
    console.error('error [invalid_argument]: --append-md appends to the --md file: give --md FILE too');
    return 2;
  }
  const results: BenchResult[] = [];
  const sources: string[] = [];
  let bad = 0;
  let unreadable = 0;
  for (const f of positionals) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(f, 'utf8'));
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why =
        err.code === 'ENOENT'
          ? 'no such file'
          : err.code
            ? `cannot read it (${err.code})`
            : `not JSON (${err.message})`;
      console.error(`error [invalid_argument]: ${f}: ${why}`);
      if (err.code) unreadable++;
      else bad++;
      continue;
    }
    const errs = resultProblems(parsed);
    if (errs.length > 0) {
      console.error(
        `error [invalid_argument]: ${f} is not a benchmark result file (schemaVersion 1):\n  ${errs.slice(0, 8).join('\n  ')}`,
      );
      bad++;
      continue;
    }
    results.push(parsed as BenchResult);
    sources.push(basename(f));
  }
  if (results.length > 0) {
    const rows = reportRows(results, sources);
    const md = markdownReport(rows) + leaderboardMarkdown(leaderboard(rows));
    if (values.md) {
      mkdirSync(dirname(resolve(values.md)), { recursive: true });
      (values['append-md'] ? appendFileSync : writeFileSync)(values.md, md);
      console.error(`bench:report: wrote ${values.md}`);
    } else process.stdout.write(md);
    if (values.html) {
      mkdirSync(dirname(resolve(values.html)), { recursive: true });
      writeFileSync(
        values.html,
        htmlReport(rows, { title: values.title, generatedAt: new Date().toISOString() }),
      );
      console.error(`bench:report: wrote ${values.html}`);
    }
  }
  return unreadable > 0 ? 2 : bad > 0 || results.length === 0 ? 1 : 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (e) {
  console.error(`error [invalid_argument]: ${(e as Error).message ?? e}\n\n${USAGE}`);
  process.exitCode = 2;
}
