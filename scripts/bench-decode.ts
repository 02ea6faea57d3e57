/**
 * Decode speed on a ≥50M-parameter model, ours beside peers on the same files, in one run: writes a
 * seeded random llama of the synthetic shape `bench-60m` (src/webgpu/model/synthetic.ts: 512 wide, 8
 * layers, FFN 1536, 8 heads, 32k vocabulary, about 60M parameters) as F32 with the project's writer
 * (src/model/random-model.ts), quantizes it into each type with the project's quantizer
 * (src/gguf/quantize-model.ts, byte-identical to llama.cpp's llama-quantize), then runs
 * `scripts/bench-engine.ts` on each file (ours in Chromium, wllama 1 thread, node-llama-cpp 1 thread; ours
 * in Node is skipped) and once more on the real stories260K for scale. Writes one table of prefill and
 * decode medians and ratios into BENCHMARKS.md between `<!-- bench:decode DATE -->` and
 * `<!-- /bench:decode DATE -->`, replacing that date's section.
 *
 * The random model's vocabulary is SentencePiece-style (`makeSpmVocab`: byte tokens, lower-case word
 * pieces); bench-engine's text prompts go through it unchanged: ours and llama.cpp tokenize them to the
 * same ids (capitals and other characters outside the pieces fall back to byte tokens in both), and
 * bench-engine checks that every engine saw the same prompt lengths. Its text output is noise.
 *
 * The model files live in a temporary directory that is removed at the end, on failure and on
 * SIGINT/SIGTERM too.
 *
 *   npm run bench:decode -- [--types Q4_0,Q4_K_M,Q8_0,F16] [--runs 3] [--tokens 64] [--no-write]
 *
 * `--types` takes a comma list of F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q4_K_M, Q6_K; `--runs` and `--tokens`
 * go to bench-engine (measured runs after 1 warm-up; greedy tokens with EOS ignored); `--no-write` prints
 * the section without touching BENCHMARKS.md.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FTYPES } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { stories260kPath } from '../src/testing/models.ts';
import {
  adapterRow,
  BENCH_FILE,
  benchEngineArgs,
  benchModelFile,
  benchScratch,
  benchShape,
  cpuRow,
  BENCH_SEED as SEED,
  BENCH_SHAPE_ID as SHAPE_ID,
  writeBenchModel,
  writeBenchSection,
} from './bench-common.ts';
import type { BenchEngineJson } from './bench-engine.ts';

const ROOT = resolve(import.meta.dirname, '..');
const STORIES = stories260kPath();

const { values } = parseArgs({
  options: {
    types: { type: 'string', default: 'Q4_0,Q4_K_M,Q8_0,F16' },
    runs: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '64' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.error(
    'usage: npm run bench:decode -- [--types Q4_0,Q4_K_M,Q8_0,F16] [--runs 3] [--tokens 64] [--no-write]',
  );
  process.exit(0);
}
const types = values.types.split(',').filter(Boolean);
for (const t of types)
  if (!(t in FTYPES)) throw new Error(`unknown type ${t} (known: ${Object.keys(FTYPES).join(', ')})`);
if (!(Number(values.runs) >= 1 && Number(values.tokens) >= 2))
  throw new Error('need --runs ≥ 1, --tokens ≥ 2');
const shape = benchShape();

/** What bench-engine's `--json` holds. */
type EngineJson = BenchEngineJson;
type Cell = { prefill: number; decode: number; reduced?: string; outputTokens: number };
type Row = {
  label: string;
  mib: number;
  cells: Record<string, Cell>;
  agreement?: string;
  promptTokens?: number;
};

const scratch = benchScratch('bench-decode-');
const { dir } = scratch;

/** Runs bench-engine on one file; its stdout (the markdown section) and parsed JSON. */
async function benchEngine(file: string, out: string): Promise<{ stdout: string; json: EngineJson }> {
  const args = benchEngineArgs(file, values.runs, values.tokens, out);

  const stdout = await new Promise<string>((res, rej) => {
    const c = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    scratch.child = c;
    const parts: Buffer[] = [];
    c.stdout?.on('data', (b: Buffer) => parts.push(b));
    c.on('error', rej);
    c.on('close', (code, signal) => {
      scratch.child = undefined;
      if (code === 0) res(Buffer.concat(parts).toString('utf8'));
      else rej(new Error(`bench-engine on ${file} failed (${signal ?? `exit ${code}`})`));
    });
  });
  return { stdout, json: JSON.parse(readFileSync(out, 'utf8')) as EngineJson };
}

/** The long prompt's medians per engine, and bench-engine's note on greedy-id agreement with llama.cpp. */
function rowFrom(label: string, mib: number, r: { stdout: string; json: EngineJson }): Row {
  const cells: Row['cells'] = {};
  const long = r.json.results.filter((x) => x.prompt === 'long');
  for (const x of long)
    cells[x.id] = {
      prefill: x.prefill.median,
      decode: x.decode.median,
      reduced: x.reduced,
      outputTokens: x.outputTokens,
    };
  const m = /^- ours-browser long: the first (\d+) of (\d+) greedy output ids/m.exec(r.stdout);
  return {
    label,
    mib,
    cells,
    agreement: m ? `${m[1]}/${m[2]}` : undefined,
    promptTokens: long[0]?.promptTokens,
  };
}

const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x)
    ? '—'
    : x >= 100
      ? x.toFixed(0)
      : x >= 10
        ? x.toFixed(1)
        : x.toFixed(2);
const ratio = (a?: number, b?: number) =>
  a !== undefined && b !== undefined && Number.isFinite(a / b) && b > 0 ? `${(a / b).toFixed(2)}×` : '—';
const warn = (c: Cell | undefined) => (c?.reduced ? ' ⚠' : '');

function section(rows: Row[], envs: EngineJson['env'][], nParams: number, wallS: number): string {
  const date = new Date().toISOString().slice(0, 10);
  const e0 = envs[0];
  const eN = envs[envs.length - 1];
  const args = process.argv.slice(2);
  const cmd = `npm run bench:decode${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const L = [
    `<!-- bench:decode ${date} -->`,
    `## ${date}: decode speed on a ${(nParams / 1e6).toFixed(0)}M-parameter llama (synthetic shape \`${SHAPE_ID}\`), ours vs wllama and llama.cpp`,
    '',
    `Recorded by \`${cmd}\` (scripts/bench-decode.ts over scripts/bench-engine.ts) in ${wallS.toFixed(0)} s, commit ${e0.commit}. The model: seeded random weights (seed ${SEED}) in the shape \`${SHAPE_ID}\` (${shape.nEmbd} wide, ${shape.nLayers} layers, FFN ${shape.nFF}, ${shape.nHead} heads / ${shape.nHeadKv} KV heads, vocabulary ${shape.nVocab}; ${nParams.toLocaleString('en-US')} parameters), written F32 by src/model/random-model.ts and quantized by our quantizer (byte-identical to llama-quantize); the same files for every engine. stories260K (the real model) for scale.`,
    '',
    '| | |',
    '| --- | --- |',
    cpuRow(e0.cpu, e0.nCpu, {
      before: 'the first run',
      loadBefore: e0.loadBefore,
      after: 'the last',
      loadAfter: eN.loadAfter,
    }),
    adapterRow(`Chromium ${e0.chromium ?? '?'}`, e0.browserAdapter),
    `| Peers | wllama (llama.cpp ${e0.wllama?.libllama ?? '?'}, wasm) ${e0.wllama?.threads ?? '?'} thread in the same Chromium; node-llama-cpp (llama.cpp ${e0.llamaCpp?.release ?? '?'}, native CPU) 1 thread |`,
    `| Protocol | bench-engine's long prompt (${rows[0]?.promptTokens ?? '?'} tokens with the random model's vocabulary, ${rows[rows.length - 1]?.promptTokens ?? '?'} with stories260K's), ${values.tokens} greedy tokens with EOS ignored, median of ${values.runs} runs after 1 warm-up, engines interleaved; tok/s, ratios are ours ÷ peer (decode) |`,
    '',
    'Goal: ours ≥ 0.5× wllama decode on the 60M model.',
    '',
    '| type | MiB | ours prefill | ours decode | wllama decode | llama.cpp decode | ratio ours÷wllama | ratio ours÷llama.cpp |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => {
      const o = r.cells['ours-browser'];
      const w = r.cells.wllama;
      const l = r.cells['llama-cpp-1t'];
      return `| ${r.label} | ${r.mib.toFixed(2)} | ${f(o?.prefill)} | ${f(o?.decode)}${warn(o)} | ${f(w?.decode)}${warn(w)} | ${f(l?.decode)}${warn(l)} | ${ratio(o?.decode, w?.decode)} | ${ratio(o?.decode, l?.decode)} |`;
    }),
    '',
  ];
  const agree = rows.filter((r) => r.agreement).map((r) => `${r.label} ${r.agreement}`);
  if (agree.length)
    L.push(
      `Greedy output ids of ours (Chromium) equal to llama.cpp's (1 thread), leading ids on the long prompt: ${agree.join(', ')} (random weights make near-ties common, so quantized types may part early; the work per token is the same).`,
      '',
    );
  for (const r of rows)
    for (const [id, c] of Object.entries(r.cells))
      if (c.reduced && ['ours-browser', 'wllama', 'llama-cpp-1t'].includes(id))
        L.push(`- ⚠ ${r.label} ${id}: ${c.reduced}.`);
  if (L[L.length - 1] !== '') L.push('');
  L.push(`<!-- /bench:decode ${date} -->`);
  return L.join('\n');
}

async function main(): Promise<void> {
  const t0 = performance.now();
  console.error(`== ${SHAPE_ID}: writing the random F32 model (seed ${SEED})`);
  const model = await writeBenchModel(dir, shape.contextLength);
  const { f32Path, nParams } = model;
  const rows: Row[] = [];
  const envs: EngineJson['env'][] = [];
  for (const type of types) {
    const file = await benchModelFile(model, type);
    const mib = statSync(file).size / 2 ** 20;
    console.error(`== ${SHAPE_ID} ${type}: ${mib.toFixed(2)} MiB`);
    const r = await benchEngine(file, join(dir, `${type}.json`));
    envs.push(r.json.env);
    rows.push(rowFrom(type, mib, r));
    if (file !== f32Path) rmSync(file);
  }
  console.error('== stories260K (real model)');
  const stories = await openGguf({ path: STORIES });
  const byType = new Map<string, number>();
  for (const t of stories.tensors.values())
    if (t.shape.length >= 2) byType.set(t.typeName, (byType.get(t.typeName) ?? 0) + t.nBytes);
  const storiesType = [...byType].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '?';
  const r = await benchEngine(STORIES, join(dir, 'stories260K.json'));
  envs.push(r.json.env);
  rows.push(rowFrom(`stories260K (real, ${storiesType})`, statSync(STORIES).size / 2 ** 20, r));

  const text = section(rows, envs, nParams, (performance.now() - t0) / 1000);
  console.log(text);
  if (!values['no-write']) {
    writeBenchSection('decode', new Date().toISOString().slice(0, 10), text);
    console.error(`wrote ${BENCH_FILE}`);
  }
}

try {
  await main();
} finally {
  scratch.cleanUp();
}
