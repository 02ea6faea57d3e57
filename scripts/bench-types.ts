/**
 * Speed per weight type, ours beside peers on the same files: quantizes stories260K widened to 256-wide
 * rows (src/model/widen.ts; the same function as stories260K, but every K-quant block holds real
 * weights) into each type with the project's quantizer (byte-identical to llama.cpp's), then runs
 * `scripts/bench-engine.ts` on each file (ours in Chromium, wllama 1 thread, node-llama-cpp 1 thread) and
 * writes one table of medians and ratios into BENCHMARKS.md.
 *
 *   npm run bench:types -- [--types F32,F16,Q8_0,Q4_0,Q4_1,Q5_0,Q5_1,IQ4_NL,IQ4_XS,Q2_K,Q3_K_M,Q4_K_M,Q5_K_M,Q6_K] [--runs 3] [--tokens 64] [--dir DIR] [--no-write]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type QuantizeFtype, quantizeGguf } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { WIDE_STORIES, widenLlamaGguf } from '../src/model/widen.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { benchEngineArgs } from './bench-common.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    types: {
      type: 'string',
      default: 'F32,F16,Q8_0,Q4_0,Q4_1,Q5_0,Q5_1,IQ4_NL,IQ4_XS,Q2_K,Q3_K_M,Q4_K_M,Q5_K_M,Q6_K',
    },
    runs: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '64' },
    model: { type: 'string' },
    dir: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
// --dir DIR keeps the files and each type's JSON there; a type whose JSON is already there is not rerun
// (to finish an interrupted run).
const dir = values.dir ? resolve(values.dir) : mkdtempSync(join(tmpdir(), 'bench-types-'));
mkdirSync(dir, { recursive: true });
const wide = await widenLlamaGguf(await openGguf({ path: values.model ?? stories260kPath() }), WIDE_STORIES);
type Row = { type: string; mib: number; cells: Record<string, { prefill: number; decode: number }> };
const rows: Row[] = [];
for (const type of values.types.split(',')) {
  const src = await openGguf({ blob: new Blob([wide as Uint8Array<ArrayBuffer>]) });
  const bytes = type === 'F32' ? wide : (await quantizeGguf(src, type as QuantizeFtype)).bytes;
  const file = join(dir, `stories260K-wide-${type}.gguf`);
  writeFileSync(file, bytes);
  const out = join(dir, `${type}.json`);
  console.error(`== ${type}: ${(bytes.length / 2 ** 20).toFixed(2)} MiB`);
  if (existsSync(out)) console.error(`   ${out} exists: kept from an earlier run`);
  else
    execFileSync(process.execPath, benchEngineArgs(file, values.runs, values.tokens, out), {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  const j = JSON.parse(readFileSync(out, 'utf8')) as {
    results: { id: string; prompt: string; prefill: { median: number }; decode: { median: number } }[];
  };
  const cells: Row['cells'] = {};
  for (const r of j.results.filter((x) => x.prompt === 'long'))
    cells[r.id] = { prefill: r.prefill.median, decode: r.decode.median };
  rows.push({ type, mib: bytes.length / 2 ** 20, cells });
}
const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x) ? '—' : x >= 100 ? x.toFixed(0) : x.toFixed(1);
const ratio = (a?: number, b?: number) => (a && b ? `${(a / b).toFixed(2)}×` : '—');
const date = new Date().toISOString().slice(0, 10);
const commit = (() => {
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).trim();
  return dirty ? `${head} plus uncommitted changes under src/` : head;
})();
const lines = [
  `<!-- bench:types ${date} -->`,
  `## ${date}: speed per weight type, stories260K widened to 256-wide rows (same files for every engine)`,
  '',
  `Recorded by \`npm run bench:types -- --runs ${values.runs} --tokens ${values.tokens}\` (scripts/bench-types.ts over scripts/bench-engine.ts): the long (105-token) prompt, ${values.tokens} greedy tokens with EOS ignored, medians of ${values.runs} runs after 1 warm-up; ours in headless Chromium on SwiftShader (a software adapter: CPU figures), wllama 1 thread (wasm, CPU) in the same browser, node-llama-cpp 1 thread (native CPU). Files made by our quantizer (byte-identical to llama.cpp's llama-quantize). tok/s; ratios are ours ÷ peer. Commit ${commit}.`,
  '',
  '| type | MiB | ours prefill | ours decode | wllama prefill | wllama decode | llama.cpp prefill | llama.cpp decode | prefill ours÷wllama | decode ours÷wllama | prefill ours÷llama.cpp | decode ours÷llama.cpp |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => {
    const o = r.cells['ours-browser'];
    const w = r.cells.wllama;
    const l = r.cells['llama-cpp-1t'];
    return `| ${r.type} | ${r.mib.toFixed(2)} | ${f(o?.prefill)} | ${f(o?.decode)} | ${f(w?.prefill)} | ${f(w?.decode)} | ${f(l?.prefill)} | ${f(l?.decode)} | ${ratio(o?.prefill, w?.prefill)} | ${ratio(o?.decode, w?.decode)} | ${ratio(o?.prefill, l?.prefill)} | ${ratio(o?.decode, l?.decode)} |`;
  }),
  '',
];
const section = lines.join('\n');
console.log(section);
if (!values['no-write']) {
  const path = resolve(ROOT, 'BENCHMARKS.md');
  const md = readFileSync(path, 'utf8');
  const marker = `<!-- bench:types ${date} -->`;
  const i = md.indexOf(marker);
  const next = i < 0 ? -1 : md.indexOf('<!-- bench:', i + marker.length);
  const updated =
    i < 0
      ? `${md.trimEnd()}\n\n${section}`
      : `${md.slice(0, i)}${section}\n${next < 0 ? '' : md.slice(next)}`;
  writeFileSync(path, updated);
}
