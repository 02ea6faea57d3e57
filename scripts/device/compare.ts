/**
 * Ours against llama.cpp on the same GGUF files: for each model, write a random-weight file of a real
 * model's shape (scripts/device/random-gguf.ts), run our engine on it by path (Dawn, llama-bench's tests
 * through `runLlamaBench`), then llama.cpp (scripts/device/llama-vulkan.ts in a child process, Vulkan,
 * every layer on the GPU), delete the file, and append a row. Results are rewritten after every model,
 * so a run cut short keeps what it measured.
 *
 *   node compare.mjs --models llama-3.2-1b-q4_k_m,llama-3.1-8b-f16,/path/x.gguf --llama-script llama-vulkan.mjs
 *       [--dir /tmp/gguf] [--n-prompt 128] [--n-gen 128] [--reps 3] [--gpu] [--llama-gpu vulkan|cpu]
 *       [--deadline-s 300] [--mode tiled|exact] [--keep] [--json FILE] [--md FILE]
 *
 * Models: `SHAPE-FTYPE` (shapes of src/webgpu/model/synthetic.ts, llama-quantize file types) or paths to
 * GGUF files (used as they are, never deleted). `--deadline-s` counts from this process's start: a model
 * whose estimated time no longer fits is skipped, our runs are aborted at the deadline and llama.cpp's
 * child is killed there.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { LlamaBenchTest } from '../../src/bench/llama-bench.ts';
import { runLlamaBench } from '../../src/bench/llama-bench-gpu.ts';
import { decodeBytesPerToken, measureBandwidth } from '../../src/bench/roofline.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { createGpuContext } from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import { plannedDataBytes, shapeOptions, toFtype, writeRandomGguf } from './random-gguf.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'stories260k-q8_0' },
    'llama-script': { type: 'string' },
    'llama-gpu': { type: 'string', default: 'vulkan' },
    dir: { type: 'string', default: '/tmp/gguf' },
    'n-prompt': { type: 'string', default: '128' },
    'n-gen': { type: 'string', default: '128' },
    reps: { type: 'string', default: '3' },
    'batch-size': { type: 'string', default: '64' },
    gpu: { type: 'boolean', default: false },
    'deadline-s': { type: 'string', default: '300' },
    mode: { type: 'string', default: 'tiled' },
    keep: { type: 'boolean', default: false },
    json: { type: 'string' },
    md: { type: 'string' },
  },
});
const tStart = performance.now();
const elapsedS = () => (performance.now() - tStart) / 1000;
const log = (...a: unknown[]) => console.error(`[compare ${elapsedS().toFixed(1)}s]`, ...a);
const nPrompt = Number(values['n-prompt']);
const nGen = Number(values['n-gen']);
const reps = Number(values.reps);
const deadlineS = Number(values['deadline-s']);
const mode = values.mode === 'exact' ? 'exact' : 'tiled';
mkdirSync(values.dir!, { recursive: true });

const driver = setupNodeVulkan(values.gpu);
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver);
const bw = await measureBandwidth(gpu.device);
log(`bandwidth ${bw.GBs.toFixed(1)} GB/s (${bw.timing})`);
const engine = new WebGpuEngine({ gpu });

type Tests = Record<string, { mean: number; std: number; samples: number[] }>;
interface Row {
  model: string;
  file?: string;
  fileMiB?: number;
  types?: Record<string, number>;
  writeMs?: number;
  ours?: { loadMs: number; tests: Tests; bytesPerToken: number; error?: string };
  llama?: {
    loadMs?: number;
    tests?: Tests;
    engine?: string;
    gpuLayers?: number;
    devices?: string[];
    error?: string;
  };
  skipped?: string;
}
const rows: Row[] = [];

/** Free bytes on the file system holding `dir`. */
function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Runs llama-vulkan.mjs on a file; resolves with its JSON result or an error. */
function runPeer(file: string, nVocab: number, timeoutS: number): Promise<Row['llama']> {
  const script = values['llama-script'];
  if (!script) return Promise.resolve({ error: 'no --llama-script' });
  const out = join(values.dir!, 'llama-result.json');
  rmSync(out, { force: true });
  return new Promise((resolve) => {
    const args = [script, '--model', file, '--gpu', values['llama-gpu']!, '--n-prompt', String(nPrompt)];
    args.push('--n-gen', String(nGen), '--reps', String(reps), '--n-vocab', String(nVocab), '--json', out);
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    child.stderr.on('data', (d: Buffer) => {
      process.stderr.write(d);
      tail = (tail + d.toString()).slice(-600);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(1, timeoutS) * 1000);
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      const r0 = existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as { error?: string }) : undefined;
      if (r0?.error) {
        resolve({ error: `llama.cpp: ${r0.error}`.slice(0, 400) });
      } else if (code === 0 && existsSync(out)) {
        const r = JSON.parse(readFileSync(out, 'utf8'));
        resolve({
          loadMs: r.loadMs,
          tests: r.tests,
          engine: r.engine,
          gpuLayers: r.gpuLayers,
          devices: r.devices,
          ...(values['llama-gpu'] !== 'cpu' && !(r.gpuLayers > 0)
            ? { error: 'no layer ran on the GPU (no usable Vulkan device)' }
            : {}),
        });
      } else {
        resolve({
          error: `exit ${code ?? sig}${sig === 'SIGKILL' ? ' (deadline)' : ''}: ${tail.trim().slice(-300)}`,
        });
      }
    });
  });
}

function testsOf(ts: LlamaBenchTest[]): Tests {
  const o: Tests = {};
  for (const t of ts) o[t.name] = { ...t.tokensPerSecond, samples: t.samples.map((x) => +x.toFixed(2)) };
  return o;
}

const pp = `pp${nPrompt}`;
const tg = `tg${nGen}`;
const fmt = (x: number | undefined, d = 1) =>
  x === undefined || !Number.isFinite(x)
    ? ''
    : x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

function writeResults(): void {
  const result = {
    date: new Date().toISOString(),
    runtime: `node ${process.version} + Dawn (webgpu npm package)`,
    adapter: gpu.info,
    vulkanDriver: driver,
    bandwidthGBs: +bw.GBs.toFixed(1),
    bandwidthTiming: bw.timing,
    nPrompt,
    nGen,
    reps,
    fileMode: mode,
    rows,
  };
  if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 1));
  const head = [
    'model',
    'tensor types',
    'file MiB',
    `ours ${pp}`,
    `llama.cpp ${pp}`,
    `${pp} ours÷llama.cpp`,
    `ours ${tg}`,
    `llama.cpp ${tg}`,
    `${tg} ours÷llama.cpp`,
    'ours share of bandwidth',
    'llama.cpp share of bandwidth',
  ];
  const lines = rows.map((r) => {
    const o = r.ours?.tests;
    const l = r.llama?.tests;
    const bpt = r.ours?.bytesPerToken;
    const share = (x?: number) => (x && bpt ? `${((100 * x * bpt) / (bw.GBs * 1e9)).toFixed(1)}%` : '');
    const ratio = (a?: number, b?: number) => (a && b ? `${(a / b).toFixed(2)}×` : '');
    const note = r.skipped ?? [r.ours?.error, r.llama?.error].filter(Boolean).join('; ');
    return [
      r.model,
      r.types
        ? Object.keys(r.types)
            .filter((t) => t !== 'F32')
            .join('/') || 'F32'
        : note,
      fmt(r.fileMiB, r.fileMiB !== undefined && r.fileMiB < 10 ? 2 : 0),
      fmt(o?.[pp]?.mean),
      fmt(l?.[pp]?.mean),
      ratio(o?.[pp]?.mean, l?.[pp]?.mean),
      fmt(o?.[tg]?.mean),
      fmt(l?.[tg]?.mean),
      ratio(o?.[tg]?.mean, l?.[tg]?.mean),
      share(o?.[tg]?.mean),
      share(l?.[tg]?.mean),
    ];
  });
  const errs = rows.filter((r) => r.types && (r.ours?.error || r.llama?.error));
  const peer = rows.find((r) => r.llama?.engine)?.llama;
  const md = [
    `Device: ${gpu.info.vendor} ${gpu.info.architecture} ${gpu.info.device} ${gpu.info.description}` +
      `${gpu.info.isFallback ? ' (software adapter)' : ''}; bandwidth ${bw.GBs.toFixed(1)} GB/s (our kernel, ${bw.timing}); ` +
      `peer ${peer?.engine ?? 'llama.cpp (did not run)'}${peer?.devices?.length ? ` on ${peer.devices.join(', ')}` : ''}; ` +
      `same GGUF file for both (random weights, ${mode} mode); llama-bench tests ${pp} / ${tg} at depth 0, ` +
      `mean of ${reps} after 1 warm-up; tok/s; ${result.date.slice(0, 10)}`,
    '',
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`,
    ...lines.map((c) => `| ${c.join(' | ')} |`),
    ...(errs.length
      ? [
          '',
          ...errs.map((r) => `- ${r.model}: ${[r.ours?.error, r.llama?.error].filter(Boolean).join('; ')}`),
        ]
      : []),
  ].join('\n');
  if (values.md) writeFileSync(values.md, `${md}\n`);
  console.log(md);
}

for (const m of values.models!.split(',').filter(Boolean)) {
  const row: Row = { model: m };
  rows.push(row);
  const isPath = m.endsWith('.gguf');
  let file = m;
  try {
    let bytes = isPath ? statSync(m).size : 0;
    if (!isPath) {
      // SHAPE-FTYPE: no file type holds a '-' (q4_k_m, q8_0, f16, …), so the last '-' splits them.
      const shape = m.slice(0, m.lastIndexOf('-'));
      const ftype = toFtype(m.slice(m.lastIndexOf('-') + 1));
      const o = shapeOptions(shape);
      bytes = plannedDataBytes(o, ftype) + o.nVocab * 24;
      // Estimate: 20 s of runs and start-up plus 5 s per GB (written once, read by each engine).
      const need = 20 + (5 * bytes) / 1e9;
      const free = freeBytes(values.dir!);
      if (elapsedS() + need > deadlineS || bytes + 2e9 > free) {
        row.skipped =
          bytes + 2e9 > free
            ? `skipped: ${(bytes / 1e9).toFixed(1)} GB file, ${(free / 1e9).toFixed(1)} GB free`
            : `skipped: ~${need.toFixed(0)} s needed, ${(deadlineS - elapsedS()).toFixed(0)} s left`;
        log(`${m}: ${row.skipped}`);
        writeResults();
        continue;
      }
      file = join(values.dir!, `${m}.gguf`);
      const w = await writeRandomGguf(file, o, ftype, { mode, log });
      row.types = w.types;
      row.writeMs = Math.round(w.ms);
      bytes = w.bytes;
      log(
        `${m}: wrote ${(w.bytes / 2 ** 20).toFixed(0)} MiB in ${w.ms.toFixed(0)} ms (${JSON.stringify(w.types)})`,
      );
    }
    row.file = file;
    row.fileMiB = bytes / 2 ** 20;

    // Ours, by path.
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), Math.max(1, deadlineS - elapsedS()) * 1000);
    let nVocab = 256;
    try {
      const tl = performance.now();
      const mi = await engine.load(
        { path: file },
        {
          contextLength: Math.max(nPrompt, nGen) + 8,
          batchSize: Number(values['batch-size']),
          signal: ac.signal,
        },
      );
      const loadMs = performance.now() - tl;
      nVocab = mi.nVocab;
      if (!row.types) {
        row.types = {};
        for (const t of mi.tensorTypes) row.types[t] = 1;
      }
      log(`${m}: ours loaded in ${loadMs.toFixed(0)} ms`);
      const ts = await runLlamaBench(
        engine.llama!,
        { nPrompt: [nPrompt], nGen: [nGen], depths: [0], reps },
        (p) =>
          p.tokensPerSecond !== undefined &&
          log(`${m}: ours ${p.test} rep ${p.rep}: ${p.tokensPerSecond.toFixed(1)} tok/s`),
        ac.signal,
      );
      const bytesPerToken = decodeBytesPerToken(
        { ...mi, kvDim: mi.kvDim, tiedEmbeddings: mi.tiedEmbeddings },
        nGen / 2,
      );
      row.ours = { loadMs: Math.round(loadMs), tests: testsOf(ts), bytesPerToken: Math.round(bytesPerToken) };
    } catch (e) {
      row.ours = {
        loadMs: 0,
        tests: {},
        bytesPerToken: 0,
        error: `ours: ${(e as Error).message}`.slice(0, 300),
      };
      log(`${m}: ${row.ours.error}`);
    } finally {
      clearTimeout(timer);
      await engine.unload();
    }

    // llama.cpp, same file.
    if (elapsedS() < deadlineS - 5) {
      row.llama = await runPeer(file, nVocab, deadlineS - elapsedS());
      if (row.llama?.error) log(`${m}: llama.cpp: ${row.llama.error}`);
    } else {
      row.llama = { error: 'llama.cpp: deadline reached' };
    }
  } catch (e) {
    row.skipped = `failed: ${(e as Error).message}`.slice(0, 300);
    log(`${m}: ${row.skipped}`);
  } finally {
    if (!isPath && !values.keep) rmSync(file, { force: true });
  }
  writeResults();
}
if (!rows.length) writeResults();
await engine.dispose();
gpu.device.destroy();
process.exit(0);
