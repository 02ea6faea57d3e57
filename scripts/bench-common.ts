/**
 * Pieces shared by the benchmark scripts that write BENCHMARKS.md and run scripts/bench-engine.ts on a
 * file (bench-engine, bench-types, bench-decode).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** BENCHMARKS.md at the repository root. */
export const BENCH_FILE = resolve(dirname(fileURLToPath(import.meta.url)), '../BENCHMARKS.md');

/**
 * Writes `text` (which starts with `<!-- bench:TAG DATE -->` and ends with `<!-- /bench:TAG DATE -->`)
 * into BENCHMARKS.md, replacing the section between the same markers, else appending it; `header` starts
 * a new file.
 */
export function writeBenchSection(tag: string, date: string, text: string, header = '# Benchmarks\n'): void {
  const start = `<!-- bench:${tag} ${date} -->`;
  const end = `<!-- /bench:${tag} ${date} -->`;
  let doc = existsSync(BENCH_FILE) ? readFileSync(BENCH_FILE, 'utf8') : header;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) doc = doc.slice(0, i) + text + doc.slice(j + end.length);
  else doc = `${doc.replace(/\n*$/, '')}\n\n${text}\n`;
  writeFileSync(BENCH_FILE, doc.endsWith('\n') ? doc : `${doc}\n`);
}

/**
 * The `node` arguments that run scripts/bench-engine.ts on one GGUF file: ours in Chromium, wllama and
 * node-llama-cpp (ours in Node skipped), `runs` measured runs of `tokens` greedy tokens, JSON to `out`,
 * BENCHMARKS.md untouched.
 */
export function benchEngineArgs(file: string, runs: string, tokens: string, out: string): string[] {
  return [
    '--import',
    'tsx',
    'scripts/bench-engine.ts',
    '--model',
    file,
    '--runs',
    runs,
    '--tokens',
    tokens,
    '--skip',
    'ours-node',
    '--no-write',
    '--json',
    out,
  ];
}
