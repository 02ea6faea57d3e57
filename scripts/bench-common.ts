/**
 * Pieces shared by the benchmark scripts that write BENCHMARKS.md and run scripts/bench-engine.ts on a
 * file (bench-engine, bench-types, bench-decode, bench-depth, bench-prefill): the section writer,
 * bench-engine's arguments, the 60M-parameter test model's files, a temporary directory removed on exit
 * and on SIGINT/SIGTERM, the CPU and WebGPU adapter rows of a section's table, and the commit and package
 * versions a section records.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type QuantizeFtype, quantizeGguf } from '../src/gguf/quantize-model.ts';
import { type OpenedGgufFile, openGguf } from '../src/gguf/reader.ts';
import { makeRandomLlamaGguf } from '../src/model/random-model.ts';
import { mulberry32 } from '../src/util/prng.ts';
import { SYNTHETIC_SHAPES, type SyntheticShape } from '../src/webgpu/model/synthetic.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** BENCHMARKS.md at the repository root. */
export const BENCH_FILE = resolve(ROOT, 'BENCHMARKS.md');

/**
 * Writes `text` (which starts with `<!-- bench:TAG DATE -->` and ends with `<!-- /bench:TAG DATE -->`)
 * into `file` (BENCHMARKS.md), replacing the section between the same markers, else appending it;
 * `header` starts a new file.
 */
export function writeBenchSection(
  tag: string,
  date: string,
  text: string,
  header = '# Benchmarks\n',
  file = BENCH_FILE,
): void {
  const start = `<!-- bench:${tag} ${date} -->`;
  const end = `<!-- /bench:${tag} ${date} -->`;
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : header;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) doc = doc.slice(0, i) + text + doc.slice(j + end.length);
  else doc = `${doc.replace(/\n*$/, '')}\n\n${text}\n`;
  writeFileSync(file, doc.endsWith('\n') ? doc : `${doc}\n`);
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

// ---------------------------------------------------------------------------------------------------
// The 60M-parameter test model (bench-decode, bench-depth, bench-prefill)

/** The synthetic shape of the test model (src/webgpu/model/synthetic.ts: 512 wide, 8 layers, ~60M parameters). */
export const BENCH_SHAPE_ID = 'bench-60m';
/** The seed of its random weights. */
export const BENCH_SEED = 60;

/** The shape {@link BENCH_SHAPE_ID}; throws when src/webgpu/model/synthetic.ts no longer has it. */
export function benchShape(): SyntheticShape {
  const shape = SYNTHETIC_SHAPES.find((s) => s.id === BENCH_SHAPE_ID);
  if (!shape) throw new Error(`synthetic shape ${BENCH_SHAPE_ID} not found in src/webgpu/model/synthetic.ts`);
  return shape;
}

/** The test model written as F32: its path, the file opened (the quantizer's source) and its parameter count. */
export interface BenchModel {
  f32Path: string;
  src: OpenedGgufFile;
  nParams: number;
}

/**
 * Writes the test model as F32 (`bench-60m-F32.gguf` in `dir`): seeded random weights ({@link BENCH_SEED})
 * in the shape {@link BENCH_SHAPE_ID} with `contextLength` as its context, by src/model/random-model.ts;
 * then opens it and counts its parameters.
 */
export async function writeBenchModel(dir: string, contextLength: number): Promise<BenchModel> {
  const shape = benchShape();
  const f32Path = join(dir, `${BENCH_SHAPE_ID}-F32.gguf`);
  writeFileSync(
    f32Path,
    makeRandomLlamaGguf({
      seed: BENCH_SEED,
      name: BENCH_SHAPE_ID,
      nLayers: shape.nLayers,
      nEmbd: shape.nEmbd,
      nFF: shape.nFF,
      nHead: shape.nHead,
      nHeadKv: shape.nHeadKv,
      nVocab: shape.nVocab,
      contextLength,
      tied: shape.tied,
      ropeFreqBase: shape.ropeFreqBase,
      rmsEps: shape.rmsEps,
      weightType: 'F32',
    }),
  );
  const src = await openGguf({ path: f32Path });
  let nParams = 0;
  for (const t of src.tensors.values()) nParams += t.shape.reduce((a, b) => a * b, 1);
  return { f32Path, src, nParams };
}

/**
 * The test model's file of `type` (a key of FTYPES): the F32 file itself for F32, else
 * `bench-60m-TYPE.gguf` beside it, written by our quantizer (byte-identical to llama-quantize).
 */
export async function benchModelFile(model: BenchModel, type: string): Promise<string> {
  if (type === 'F32') return model.f32Path;
  const file = join(dirname(model.f32Path), `${BENCH_SHAPE_ID}-${type}.gguf`);
  writeFileSync(file, (await quantizeGguf(model.src, type as QuantizeFtype)).bytes);
  return file;
}

// ---------------------------------------------------------------------------------------------------
// A temporary directory that goes away on every exit

/** See {@link benchScratch}. */
export interface BenchScratch {
  /** The directory. */
  readonly dir: string;
  /** The child process running now, if any: set it on spawn, clear it on close; a signal is passed on to it. */
  child: ChildProcess | undefined;
  /** Removes the directory (call it in a `finally`). */
  cleanUp(): void;
}

/**
 * A fresh temporary directory (`prefix` + random, in the OS's), removed by `cleanUp()` and on SIGINT or
 * SIGTERM, which also pass the signal on to `child` and exit 130 / 143.
 */
export function benchScratch(prefix: string): BenchScratch {
  const scratch: BenchScratch = {
    dir: mkdtempSync(join(tmpdir(), prefix)),
    child: undefined,
    cleanUp: () => rmSync(scratch.dir, { recursive: true, force: true }),
  };
  for (const [sig, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.on(sig, () => {
      scratch.child?.kill(sig);
      scratch.cleanUp();
      process.exit(code);
    });
  }
  return scratch;
}

// ---------------------------------------------------------------------------------------------------
// The CPU and WebGPU adapter rows of a section's table

/** The CPU's model name: /proc/cpuinfo's `model name`, else Node's. */
export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}

/** The load averages around a run, for {@link cpuRow}: "before BEFORE x, x, x, after AFTER y, y, y". */
export interface LoadSpan {
  /** What the first figure preceded ("the run"). */
  before: string;
  loadBefore?: number[];
  /** What the second followed ("it"). */
  after: string;
  loadAfter?: number[];
  /** Added inside the closing parenthesis, after "shared machine; ". */
  note?: string;
}

/**
 * The table row `| CPU | MODEL, N logical CPUs; load average 1/5/15 min before …, after … (shared machine) |`
 * (without `load`, no load averages).
 */
export function cpuRow(cpu: string, nCpu: number, load?: LoadSpan): string {
  const avg = (l?: number[]) => l?.map((x) => x.toFixed(2)).join(', ') ?? '?';
  const loads = load
    ? `; load average 1/5/15 min before ${load.before} ${avg(load.loadBefore)}, after ${load.after} ${avg(load.loadAfter)}`
    : '';
  return `| CPU | ${cpu}, ${nCpu} logical CPUs${loads} (shared machine${load?.note ? `; ${load.note}` : ''}) |`;
}

/** What {@link adapterText} reads of a WebGPU adapter: the harness's adapter info or a result's `device`. */
export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device?: string;
  description: string;
  isFallback?: boolean;
  isFallbackAdapter?: boolean;
}

/**
 * The adapter's vendor / architecture / device / description, marked as a software adapter when it is a
 * fallback one or SwiftShader, llvmpipe or lavapipe.
 */
export function adapterText(a: AdapterInfo | undefined): string {
  if (!a) return 'unknown';
  const parts = [a.vendor, a.architecture, a.device, a.description].filter((s) => s && s.length > 0);
  const soft = a.isFallback || a.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(parts.join(' '));
  return `${parts.join(' / ') || '(empty adapter info)'}${soft ? ' (software adapter, SwiftShader on the CPU: not GPU figures)' : ''}`;
}

/** The table row `| WebGPU adapter (ours, BROWSER) | ADAPTER EXTRA |`; `browser` e.g. "headless Chromium 140". */
export function adapterRow(browser: string, a: AdapterInfo | undefined, extra = ''): string {
  return `| WebGPU adapter (ours, ${browser}) | ${adapterText(a)}${extra} |`;
}

// ---------------------------------------------------------------------------------------------------
// The commit and package versions a section records

/** The version of the installed package `name` (node_modules/NAME/package.json), or '?'. */
export function pkgVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(resolve(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

/**
 * HEAD's short hash, plus the uncommitted files under `paths` (what the measured engine runs: the tree is
 * shared with others' work), six of them named; 'unknown' when git fails.
 */
export function gitCommit(paths: readonly string[]): string {
  try {
    const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' });
    const head = git('rev-parse', '--short', 'HEAD').trim();
    const dirty = git('status', '--porcelain', '--', ...paths)
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => l.slice(3));
    if (!dirty.length) return head;
    const shown = dirty.slice(0, 6).join(', ');
    return `${head} plus uncommitted changes to ${shown}${dirty.length > 6 ? ` and ${dirty.length - 6} more` : ''}`;
  } catch {
    return 'unknown';
  }
}

/**
 * `n` seeded pseudo-random token ids in [3, nVocab) (past BOS/EOS/UNK), as llama-bench fills a cache with
 * random tokens: mulberry32's 32-bit outputs (src/util/prng.ts) modulo nVocab − 3. bench-depth and
 * bench-prefill's pp part fill caches with them.
 */
export function randomTokenIds(n: number, nVocab: number, seed: number): number[] {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => ((rng() * 4294967296) % (nVocab - 3)) + 3);
}
