/**
 * Decode speed at KV depth (issue 15), ours beside llama.cpp on the same files, in one run:
 *
 * - llama-bench's `tgN` at depths 0, 1024, 4096 and the model's context (less N; depths that do not fit a
 *   model's context are left out) for stories260K (the real model, where src/testing/models.ts finds it) and a
 *   ≥50M-parameter random llama written by the project's writer and quantizer (the synthetic shape
 *   `bench-60m`, as scripts/bench-decode.ts builds it, with its context raised to `--ctx-60m`);
 * - ours in headless Chromium through `npm run bench -- --llama-bench` (src/cli/bench.ts, the page's own
 *   code) with `--kv-type f16` and `--kv-type f32`;
 * - node-llama-cpp (llama.cpp's prebuilt CPU build, `getLlama({gpu: false, build: 'never'})`, 1 thread)
 *   with its KV cache in F16 (llama.cpp's default) and F32, in a child process per cache type
 *   (scripts/bench-depth-llama.ts: a llama.cpp that dies is reported with its exit code or signal and
 *   its stderr's tail, in the log, in the section and as exit code 1, and the other types still run),
 *   measured as llama-bench does: for each depth
 *   the cache is filled once with `depth` seeded random tokens, then a warm-up and `--reps` repetitions of
 *   N greedy decode steps at positions depth…, the rows past `depth` erased between repetitions;
 * - sampled (temperature 0.8, top-p 0.95, seed 1) against greedy decode for ours (the prompt plan of
 *   `npm run bench`, `--ignore-eos`, median decode tok/s).
 *
 * Writes a section (device, date, commit; tok/s, tg@d ÷ tg@0 and ours ÷ llama.cpp) into BENCHMARKS.md
 * between `<!-- bench:depth DATE -->` and `<!-- /bench:depth DATE -->`, replacing that date's section
 * (`bench:depth-f16-q8_0-q4_0` for `--kv-types f16,q8_0,q4_0`: any list but the default f16,f32 has its own).
 * `--kv-types`: the cache types measured, each in both engines (llama.cpp with flash attention on for
 * q8_0/q4_0, which a quantized V needs there).
 *
 *   npm run bench:depth -- [--tokens 128] [--reps 3] [--depths 0,1024,4096,ctx] [--models stories260k,60m]
 *       [--type Q4_0] [--ctx-60m 8192] [--no-llama-cpp] [--no-sampled] [--no-write] [--gpu]
 *
 * `--depths`: a comma list; `ctx` is the model's context less `--tokens`. `--type`: the 60M model's
 * weights (F32, F16, Q8_0, Q4_0, Q4_K_M, …). `--no-write` prints the section without touching
 * BENCHMARKS.md. The 60M model lives in a temporary directory that is removed at the end (on failure and
 * SIGINT/SIGTERM too).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchResult } from '../src/bench/types.ts';
import { FTYPES } from '../src/gguf/quantize-model.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { stories260kPath } from '../src/testing/models.ts';
import {
  adapterRow,
  BENCH_FILE,
  benchModelFile,
  benchScratch,
  benchShape,
  cpuModel,
  cpuRow,
  BENCH_SEED as SEED,
  BENCH_SHAPE_ID as SHAPE_ID,
  writeBenchModel,
  writeBenchSection,
} from './bench-common.ts';
import type { DepthJob, DepthResult } from './bench-depth-llama.ts';

const ROOT = resolve(import.meta.dirname, '..');
const STORIES = stories260kPath();
/** The cache types `--kv-types` may name (ours' `--kv-type`; llama.cpp's `-ctk/-ctv` in upper case). */
const ALL_KV = ['f16', 'f32', 'q8_0', 'q4_0'] as const;
type Kv = (typeof ALL_KV)[number];

const USAGE =
  'usage: npm run bench:depth -- [--tokens 128] [--reps 3] [--depths 0,1024,4096,ctx] [--models stories260k,60m]\n' +
  '    [--type Q4_0] [--ctx-60m 8192] [--kv-types f16,f32] [--no-llama-cpp] [--no-sampled] [--no-write] [--gpu]';

const ARGS = {
  options: {
    tokens: { type: 'string', default: '128' },
    reps: { type: 'string', default: '3' },
    depths: { type: 'string', default: '0,1024,4096,ctx' },
    models: { type: 'string', default: 'stories260k,60m' },
    type: { type: 'string', default: 'Q4_0' },
    'ctx-60m': { type: 'string', default: '8192' },
    'kv-types': { type: 'string', default: 'f16,f32' },
    'no-llama-cpp': { type: 'boolean', default: false },
    'no-sampled': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    gpu: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
} as const;
const values = (() => {
  try {
    return parseArgs(ARGS).values;
  } catch (e) {
    // An unknown or malformed option is a usage error (exit 2), as in the other commands.
    console.error(`error [invalid_argument]: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
})();
if (values.help) {
  console.error(USAGE);
  process.exit(0);
}
function usage(msg: string): never {
  console.error(`error [invalid_argument]: ${msg}\n${USAGE}`);
  process.exit(2);
}
const int = (s: string, name: string, min: number) => {
  if (!/^\d+$/.test(s) || Number(s) < min) usage(`--${name} must be an integer ≥ ${min}, got "${s}"`);
  return Number(s);
};
const N = int(values.tokens, 'tokens', 2);
const REPS = int(values.reps, 'reps', 1);
const CTX_60M = int(values['ctx-60m'], 'ctx-60m', N + 1);
const DEPTHS = values.depths.split(',').map((s) => (s.trim() === 'ctx' ? 'ctx' : int(s.trim(), 'depths', 0)));
const MODELS = values.models.split(',').filter(Boolean);
for (const m of MODELS)
  if (m !== 'stories260k' && m !== '60m') usage(`--models takes stories260k and 60m, got "${m}"`);
if (!(values.type in FTYPES)) usage(`unknown --type ${values.type} (${Object.keys(FTYPES).join(', ')})`);
const KV_TYPES: Kv[] = values['kv-types'].split(',').map((t) => {
  const k = t.trim();
  if (!(ALL_KV as readonly string[]).includes(k)) usage(`--kv-types takes ${ALL_KV.join(', ')}, got "${k}"`);
  return k as Kv;
});
/** A quantized V cache needs flash attention in llama.cpp (as tests/golden/kvquant.json's run). */
const quantizedKv = (kv: Kv) => kv === 'q8_0' || kv === 'q4_0';
/** The section's tag: a run with other cache types than f16,f32 keeps its own beside the day's f16/f32 one. */
const TAG = KV_TYPES.join() === 'f16,f32' ? 'depth' : `depth-${KV_TYPES.join('-')}`;
const shape = benchShape();

const t0 = performance.now();
const log = (s: string) =>
  console.error(`[bench:depth ${((performance.now() - t0) / 1000).toFixed(0)}s] ${s}`);

const scratch = benchScratch('bench-depth-');
const { dir } = scratch;

/** Runs `npm run bench` (src/cli/bench.ts) with `args` and returns its result file. */
async function bench(args: string[], out: string): Promise<BenchResult> {
  const argv = [
    '--import',
    'tsx',
    'src/cli/bench.ts',
    ...args,
    ...(values.gpu ? ['--gpu'] : []),
    '--json',
    out,
  ];
  log(`npm run bench -- ${args.join(' ')}`);
  await new Promise<void>((ok, fail) => {
    const c = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    scratch.child = c;
    c.stdout?.pipe(process.stderr);
    c.on('error', fail);
    c.on('close', (code, signal) => {
      scratch.child = undefined;
      if (code === 0) ok();
      else fail(new Error(`npm run bench -- ${args.join(' ')} failed (${signal ?? `exit ${code}`})`));
    });
  });
  return JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
}

/** The depths of the plan that fit a context: `ctx` = context − N; sorted, each once. */
function depthsFor(contextLength: number): number[] {
  const ds = DEPTHS.map((d) => (d === 'ctx' ? contextLength - N : d)).filter(
    (d) => d >= 0 && d + N <= contextLength,
  );
  return [...new Set(ds)].sort((a, b) => a - b);
}

type Stat = { mean: number; std: number };

/** The last `max` characters a child wrote to a stream (also passed on to ours, as it comes). */
function tail(max = 4000): { push(chunk: Buffer): void; text(): string } {
  let t = '';
  return {
    push(chunk) {
      t = (t + chunk.toString()).slice(-max);
    },
    text: () => t.trim(),
  };
}

/** A peer's child process that failed: how it ended and the tail of its stderr. */
class PeerDied extends Error {
  constructor(
    what: string,
    /** `exit code N`, `signal SIGNAL` or `exit code 0 without a result`. */
    readonly why: string,
    readonly stderr: string,
  ) {
    super(`${what} failed: ${why}; its stderr ended:\n${stderr || '(nothing)'}`);
  }
}

/**
 * node-llama-cpp, 1 thread: tgN at each depth with the KV cache in `kv`, in a child process
 * (scripts/bench-depth-llama.ts), so that llama.cpp dying (a native abort, an out-of-memory kill) is
 * reported with its exit code or signal and its stderr's tail instead of taking the run with it.
 * @throws PeerDied (its exit code or signal and stderr's tail) when the child fails or writes no result.
 */
async function llamaCppDepths(
  path: string,
  contextLength: number,
  nVocab: number,
  depths: number[],
  kv: Kv,
): Promise<{ byDepth: Map<number, Stat>; release: string; version: string }> {
  const job: DepthJob = { path, contextLength, nVocab, depths, kv, tokens: N, reps: REPS };
  const jobPath = join(dir, `llama-${kv}-job.json`);
  const out = join(dir, `llama-${kv}.json`);
  rmSync(out, { force: true });
  writeFileSync(jobPath, JSON.stringify(job));
  log(`llama.cpp ${kv}: context ${contextLength}, depths ${depths.join(', ')}`);
  const stderr = tail();
  const how = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok, fail) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench-depth-llama.ts', jobPath, out], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    scratch.child = c;
    c.stderr?.on('data', (b: Buffer) => {
      process.stderr.write(b);
      stderr.push(b);
    });
    c.on('error', fail);
    c.on('close', (code, signal) => {
      scratch.child = undefined;
      ok({ code, signal });
    });
  });
  if (how.code !== 0 || !existsSync(out)) {
    const why = how.signal
      ? `signal ${how.signal}`
      : how.code !== 0
        ? `exit code ${how.code}`
        : 'exit code 0 without a result';
    throw new PeerDied(`llama.cpp ${kv} (scripts/bench-depth-llama.ts)`, why, stderr.text());
  }
  const r = JSON.parse(readFileSync(out, 'utf8')) as DepthResult;
  return { byDepth: new Map(r.byDepth), release: r.release, version: r.version };
}

interface ModelRow {
  label: string;
  mib: number;
  contextLength: number;
  depths: number[];
  ours: Partial<Record<Kv, Map<number, Stat>>>;
  /** model.kvType each of our runs reported (undefined: the engine did not say). */
  reported: Partial<Record<Kv, string | undefined>>;
  llama: Partial<Record<Kv, Map<number, Stat>>>;
  /** Why llama.cpp gave no figures for a cache type: how its process ended, its stderr's last line. */
  llamaFailed: Partial<Record<Kv, { why: string; lastLine: string }>>;
  sampled?: { greedy: number; sampled: number; promptTokens: number };
}

async function measureModel(label: string, path: string): Promise<ModelRow> {
  const file = await openGguf({ path });
  const arch = String(file.metadata['general.architecture']);
  const contextLength = Number(file.metadata[`${arch}.context_length`]);
  const nVocab = (file.metadata['tokenizer.ggml.tokens'] as unknown[]).length;
  const depths = depthsFor(contextLength);
  if (depths.length === 0)
    throw new Error(`no depth of ${values.depths} fits ${label}'s context ${contextLength}`);
  const row: ModelRow = {
    label,
    mib: statSync(path).size / 2 ** 20,
    contextLength,
    depths,
    ours: {},
    reported: {},
    llama: {},
    llamaFailed: {},
  };
  log(`== ${label}: context ${contextLength}, depths ${depths.join(', ')}`);
  for (const kv of KV_TYPES) {
    const r = await bench(
      [
        ...['--model', path, '--llama-bench', '--n-prompt', '0', '--n-gen', String(N)],
        ...['--depth', depths.join(','), '--reps', String(REPS), '--no-profile', '--kv-type', kv],
      ],
      join(dir, `ours-${kv}.json`),
    );
    device ??= r.device;
    row.reported[kv] = r.model.kvType;
    row.ours[kv] = new Map((r.tests ?? []).map((t) => [t.depth, t.tokensPerSecond]));
  }
  if (!values['no-llama-cpp'])
    for (const kv of KV_TYPES) {
      try {
        const l = await llamaCppDepths(path, contextLength, nVocab, depths, kv);
        llamaInfo = `node-llama-cpp ${l.version} (llama.cpp ${l.release}, prebuilt CPU binary, 1 thread)`;
        row.llama[kv] = l.byDepth;
      } catch (e) {
        // Reported (here, in the section and by the exit code), and the other cache types still run.
        console.error(`[bench:depth] ${(e as Error).message}`);
        row.llamaFailed[kv] =
          e instanceof PeerDied
            ? { why: e.why, lastLine: e.stderr.split('\n').at(-1) ?? '' }
            : { why: (e as Error).message.split('\n')[0], lastLine: '' };
        process.exitCode = 1;
      }
    }
  if (!values['no-sampled']) {
    const common = [
      ...['--model', path, '--prompt', 'Once upon a time', '--max-tokens', String(N), '--ignore-eos'],
      ...['--runs', String(REPS), '--warmup', '1', '--no-roofline', '--no-cpu-match'],
    ];
    const g = await bench(common, join(dir, 'greedy.json'));
    const s = await bench(
      [...common, '--temperature', '0.8', '--top-p', '0.95', '--seed', '1'],
      join(dir, 'sampled.json'),
    );
    row.sampled = {
      greedy: g.summary.decodeTokensPerSecond?.median ?? Number.NaN,
      sampled: s.summary.decodeTokensPerSecond?.median ?? Number.NaN,
      promptTokens: g.runs[0]?.promptTokens ?? 0,
    };
    log(`sampled ÷ greedy: ${(row.sampled.sampled / row.sampled.greedy).toFixed(2)}`);
  }
  return row;
}

let device: BenchResult['device'] | undefined;
let llamaInfo: string | undefined;

const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x)
    ? '—'
    : x >= 100
      ? x.toFixed(0)
      : x >= 10
        ? x.toFixed(1)
        : x.toFixed(2);
const ratio = (a?: number, b?: number) =>
  a !== undefined && b !== undefined && b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '—';
const tps = (s?: Stat) => (s ? `${f(s.mean)} ± ${f(s.std)}` : '—');

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {
    return '?';
  }
}

function section(rows: ModelRow[], wallS: number, nParams60m: number | undefined): string {
  const date = new Date().toISOString().slice(0, 10);
  const args = process.argv.slice(2);
  const cmd = `npm run bench:depth${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const L = [
    `<!-- bench:${TAG} ${date} -->`,
    `## ${date}: decode at KV depth (tg${N}), ours with ${KV_TYPES.join(', ')} KV caches vs llama.cpp`,
    '',
    `Recorded by \`${cmd}\` (scripts/bench-depth.ts) in ${wallS.toFixed(0)} s, commit ${gitCommit()}.` +
      (nParams60m
        ? ` The ${(nParams60m / 1e6).toFixed(0)}M model: seeded random weights (seed ${SEED}) in the shape \`${SHAPE_ID}\` (${shape.nEmbd} wide, ${shape.nLayers} layers, FFN ${shape.nFF}, vocabulary ${shape.nVocab}; ${nParams60m.toLocaleString('en-US')} parameters) with context ${CTX_60M}, written by src/model/random-model.ts and quantized to ${values.type} by our quantizer; the same file for every engine.`
        : ''),
    '',
    '| | |',
    '| --- | --- |',
    cpuRow(cpuModel(), cpus().length),
    adapterRow('headless Chromium', device),
    `| Peer | ${llamaInfo ?? (values['no-llama-cpp'] ? 'not run (--no-llama-cpp)' : 'node-llama-cpp: no cache type gave figures (below)')}, KV cache ${KV_TYPES.map((k) => k.toUpperCase()).join(', ')}${KV_TYPES.some(quantizedKv) ? ' (flash attention on for the quantized ones, as llama.cpp needs for a quantized V)' : ''} |`,
    `| Protocol | llama-bench's tg${N}: the cache filled to the depth once, 1 warm-up, then ${REPS} repetition${REPS === 1 ? '' : 's'} of ${N} greedy decode steps at positions depth…; mean ± std tok/s. Ours: \`npm run bench -- --llama-bench --n-prompt 0 --n-gen ${N} --kv-type ${KV_TYPES.join('|')} --no-profile\`. Sampled vs greedy: \`npm run bench\`, ${N} tokens with EOS ignored, median decode tok/s of ${REPS} run${REPS === 1 ? '' : 's'} after 1 warm-up |`,
    '',
    'Goals (issue 15): tg@4096 ≥ 0.7 × tg@0 on a GPU; sampled (temperature 0.8, top-p 0.95) ≥ 0.9 × greedy.',
    '',
    `| model | depth | ${KV_TYPES.map((k) => `ours ${k}`).join(' | ')} | ${KV_TYPES.map((k) => `llama.cpp ${k}`).join(' | ')} | ${KV_TYPES.map((k) => `ours ${k} @d÷@0`).join(' | ')} | ${KV_TYPES.map((k) => `llama.cpp ${k} @d÷@0`).join(' | ')} | ${KV_TYPES.map((k) => `ours÷llama.cpp ${k}`).join(' | ')} |`,
    `| --- | ---: | ${Array(5 * KV_TYPES.length)
      .fill('---:')
      .join(' | ')} |`,
  ];
  for (const r of rows) {
    const at = (m: Map<number, Stat> | undefined, d: number) => m?.get(d)?.mean;
    const d0 = r.depths[0];
    for (const d of r.depths)
      L.push(
        `| ${r.label} | ${d} | ${[
          ...KV_TYPES.map((k) => tps(r.ours[k]?.get(d))),
          ...KV_TYPES.map((k) => tps(r.llama[k]?.get(d))),
          ...KV_TYPES.map((k) => ratio(at(r.ours[k], d), at(r.ours[k], d0))),
          ...KV_TYPES.map((k) => ratio(at(r.llama[k], d), at(r.llama[k], d0))),
          ...KV_TYPES.map((k) => ratio(at(r.ours[k], d), at(r.llama[k], d))),
        ].join(' | ')} |`,
      );
  }
  L.push('');
  const sampled = rows.filter((r) => r.sampled);
  if (sampled.length) {
    L.push(
      '| model | prompt tokens | greedy decode tok/s | sampled decode tok/s (T 0.8, top-p 0.95) | sampled ÷ greedy |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...sampled.map(
        (r) =>
          `| ${r.label} | ${r.sampled!.promptTokens} | ${f(r.sampled!.greedy)} | ${f(r.sampled!.sampled)} | ${ratio(r.sampled!.sampled, r.sampled!.greedy)} |`,
      ),
      '',
    );
  }
  for (const r of rows)
    for (const kv of KV_TYPES)
      if (r.ours[kv] && r.reported[kv] !== kv)
        L.push(
          `- ⚠ ${r.label} with \`--kv-type ${kv}\`: the engine reported ${r.reported[kv] === undefined ? 'no KV type (ModelInfo.kvType unset: an engine from before the f16 cache, which ran f32)' : `a ${r.reported[kv]} cache`}.`,
        );
  for (const r of rows)
    for (const kv of KV_TYPES) {
      const failed = r.llamaFailed[kv];
      if (failed)
        L.push(
          `- ⚠ llama.cpp with a ${kv} cache on ${r.label} gave no figures: its process (scripts/bench-depth-llama.ts) ended with ${failed.why}${failed.lastLine ? `; its stderr's last line: \`${failed.lastLine}\`` : ', nothing on its stderr'}.`,
        );
    }
  if (L[L.length - 1] !== '') L.push('');
  L.push(`<!-- /bench:${TAG} ${date} -->`);
  return L.join('\n');
}

async function main(): Promise<void> {
  const rows: ModelRow[] = [];
  let nParams60m: number | undefined;
  for (const m of MODELS) {
    if (m === 'stories260k') {
      rows.push(await measureModel('stories260K (real, F32)', STORIES));
      continue;
    }
    log(`== ${SHAPE_ID}: writing the random F32 model (seed ${SEED}, context ${CTX_60M})`);
    const model = await writeBenchModel(dir, CTX_60M);
    nParams60m = model.nParams;
    const file = await benchModelFile(model, values.type);
    if (file !== model.f32Path) rmSync(model.f32Path);
    rows.push(await measureModel(`${SHAPE_ID} (random, ${values.type})`, file));
  }
  const text = section(rows, (performance.now() - t0) / 1000, nParams60m);
  console.log(text);
  if (!values['no-write']) {
    writeBenchSection(TAG, new Date().toISOString().slice(0, 10), text);
    log(`wrote ${BENCH_FILE}`);
  }
}

try {
  await main();
} finally {
  scratch.cleanUp();
}
