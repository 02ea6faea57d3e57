/**
 * The engine worker that the library (`createEngine`) and the widget inline carries no benchmark or
 * profiler code: walks the static import graph of the source files (import/export … from, `import()`,
 * `import.meta.glob`, `new URL(…, import.meta.url)`; relative .ts specifiers, `?worker&inline` and other
 * queries dropped) and checks what is reachable. Type-only imports count too: the engine API itself names
 * nothing from src/bench.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LIB_ENTRIES } from '../vite.lib.config.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SPECIFIER =
  /(?:\bfrom\s*|\bimport\s*\(?\s*|\bimport\.meta\.glob(?:<[^>]*>)?\(\s*|\bnew\s+URL\(\s*)['"]([^'"]+)['"]/g;

/** Relative specifiers of the .ts files that `file` imports (comments skipped), as root-relative paths. */
function importsOf(file: string): { path: string; worker: boolean }[] {
  const text = readFileSync(resolve(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const out: { path: string; worker: boolean }[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1];
    if (!spec.startsWith('.')) continue;
    const [bare, query = ''] = spec.split('?');
    const abs = resolve(ROOT, dirname(file), bare);
    if (!abs.endsWith('.ts') || !existsSync(abs)) continue;
    out.push({ path: relative(ROOT, abs), worker: /\bworker\b/.test(query) || /\.worker\.ts$/.test(abs) });
  }
  return out;
}

/** Every file reachable from `entry`, each with the file that first imported it; and the worker entries met. */
function graph(entry: string): { files: Map<string, string | undefined>; workers: Set<string> } {
  const files = new Map<string, string | undefined>([[entry, undefined]]);
  const workers = new Set<string>();
  const todo = [entry];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    for (const { path, worker } of importsOf(f)) {
      if (worker) workers.add(path);
      if (files.has(path)) continue;
      files.set(path, f);
      todo.push(path);
    }
  }
  return { files, workers };
}

/** `file` ← its importer ← … ← the entry, for a failure message. */
function chain(files: Map<string, string | undefined>, file: string): string {
  const path: string[] = [];
  for (let f: string | undefined = file; f !== undefined; f = files.get(f)) path.push(f);
  return path.join(' <- ');
}

function reachableUnder(entry: string, dir: string): string[] {
  const { files } = graph(entry);
  return [...files.keys()].filter((f) => f.startsWith(dir)).map((f) => chain(files, f));
}

describe('engine worker import graph', () => {
  it('workers/engine.worker.ts reaches no file under src/bench/', () => {
    const { files } = graph('workers/engine.worker.ts');
    expect(files.has('src/core/worker-api.ts')).toBe(true);
    expect(files.has('src/webgpu/engine.ts')).toBe(true);
    expect(reachableUnder('workers/engine.worker.ts', 'src/bench/')).toEqual([]);
  });

  it('the library and widget entries inline the engine worker, never the bench worker', () => {
    const entries = [...Object.values(LIB_ENTRIES), 'src/widget/index.ts'];
    for (const entry of entries) {
      const { files, workers } = graph(entry);
      expect(
        [...workers].filter((w) => w !== 'workers/engine.worker.ts'),
        entry,
      ).toEqual([]);
      // On their own thread too: no llama-bench, profiler or bench-worker module.
      const bench = [...files.keys()].filter((f) => /^src\/bench\/(llama-bench|worker-)/.test(f));
      expect(
        bench.map((f) => chain(files, f)),
        entry,
      ).toEqual([]);
    }
    expect(graph('src/widget/index.ts').workers).toEqual(new Set(['workers/engine.worker.ts']));
    expect(graph('src/index.ts').workers).toEqual(new Set(['workers/engine.worker.ts']));
  });

  it('the walk finds bench code where it is: the bench worker reaches llama-bench and the profiler', () => {
    const { files } = graph('workers/bench.worker.ts');
    expect(files.has('src/bench/llama-bench-gpu.ts')).toBe(true);
    expect(files.has('src/bench/worker-host.ts')).toBe(true);
    expect(graph('src/ui/session.ts').workers).toContain('workers/bench.worker.ts');
    expect(graph('src/bench/page-api.ts').workers).toContain('workers/bench.worker.ts');
  });
});
