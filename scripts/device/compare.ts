/**
 * Ours against llama.cpp on the same GGUF files: for each model, write a random-weight file of a real
 * model's shape (scripts/device/random-gguf.ts), run our engine on it by path (Dawn, llama-bench's tests
 * through `runLlamaBench`), then llama.cpp (scripts/device/llama-vulkan.ts in a child process, Vulkan,
 * every layer on the GPU), delete the file, and append a row. Results are rewritten after every model,
 * so a run cut short keeps what it measured.
 *
 *   node compare.mjs --models llama-3.2-1b-q4_k_m,llama-3.1-8b-f16,/path/x.gguf --llama-script llama-vulkan.mjs
 *       [--dir /tmp/gguf] [--n-prompt 128] [--n-gen 128] [--reps 3] [--gpu] [--llama-gpu vulkan|cpu]
 *       [--depths 0,4096] [--kv-type f16|f32|q8_0|q4_0] [--kv-types f16,q8_0,q4_0] [--deadline-s 300]
 *       [--mode tiled|exact] [--keep]
 *       [--json FILE] [--md FILE] [--prefill-tile trial|float|int8|sgmat|sgmat-int|sgmat-big] [--no-unsafe-apis]
 *       [--prefill-attn default|sgmat|float]
 *
 * `--prefill-tile` (default: the environment's `PREFILL_TILE`, else `trial`): on a GPU the engine times the float, the integer-dot and (where the adapter has
 * subgroup matrices and the tile passed its load-time self-test) the subgroup-matrix prefill tile at
 * load and takes the fastest (default `trial`; each row's `kernels.prefill` records the choice, the
 * times and `subgroupMatrix`: available, configs, chosen tile, why not, self-test verdicts); `float`,
 * `int8`, `sgmat` or `sgmat-int` forces one, to measure pp with each (`sgmat` where unavailable or failing
 * its self-test runs the float tile and says why in `kernels.prefill.subgroupMatrix.reason`; `sgmat-int`,
 * the integer variant on i8 → i32 subgroup matrices, self-tested against the integer-dot tile, where
 * failing runs the integer-dot tile (the float one without packed_4x8_integer_dot_product) and says so in
 * `kernels.prefill.subgroupMatrix.int.reason` (`.int.i8Units`: the unit of i8 load offsets, words or
 * bytes, whose variant passed on this driver); `sgmat-big`, the large f16 tile of 64 tokens × 128 rows,
 * double-buffered where the device's maxComputeWorkgroupStorageSize holds its 47,616 B, single-buffered
 * (`tile` ends in ` 1-buffer`) where it holds 32,256 B, in `kernels.prefill.subgroupMatrix.big`). The
 * trial times the integer variant and the large tile too. Every tile variant is reachable: the 32 × 64
 * f16 tile (`sgmat`), the integer one (`sgmat-int`), the large one in whichever buffering fits (`sgmat-big`).
 * `--prefill-attn` (default: the environment's `PREFILL_ATTN`, else `default`): `default` lets the load
 * choose (where the adapter has subgroup matrices, the prefill attention on them, self-tested, is timed
 * against the float one on 512 tokens and the faster runs); `sgmat` forces the prefill attention on
 * subgroup matrices (src/webgpu/kernels/attention-sgmat.ts), self-tested at load against the float prefill
 * attention, no trial; `float` forces the float one (no self-test, no trial). Where unavailable or failing
 * it runs the float kernel, and each row's `kernels.attention.prefill` says which ran (`kernel`,
 * `subgroupMatrix`: chosen, tile, reason, self-test; `trial`: each kernel's ms).
 * `--decode-attention JSON` (default: the environment's `DECODE_ATTENTION`): the decode attention's layout
 * and chunking as the engine's `attention` option (`{"layout":{"kind":"tiled","lanes":1},
 * "targetWorkgroups":1024,"minChunk":64}`), to measure a policy the profile phase's attention-depth table
 * found faster; each row's `kernels.attention` says which ran.
 * With `--gpu`, Dawn's instance is created with `allow_unsafe_apis` and `vulkan_enable_f16_on_nvidia`
 * (device.ts `setNodeDawnOptions`: what offers chromium-experimental-subgroup-matrix and shader-f16 on
 * NVIDIA) unless `--no-unsafe-apis`.
 *
 * Tests: llama-bench's ppN and tgN at depth 0, then tgN at each depth > 0 of `--depths` (llama-bench's
 * `tgN @ dD`: the cache filled once with D random tokens, 1 warm-up and `--reps` repetitions at positions
 * D…; ours through `runLlamaBench`, llama.cpp in llama-vulkan.ts with the rows past D erased before each
 * repetition), both with the KV cache in `--kv-type` (default f16: ours' default and llama.cpp's; q8_0 and
 * q4_0 turn llama.cpp's flash attention on, which its quantized V needs). `--kv-types` (a comma list, instead
 * of `--kv-type`): each model's file is written once and both engines run on it once per cache type, a row
 * per model and type (the table's KV column), in the list's order (issue 44's decode at depth per cache
 * type). The
 * context is loaded to cover the deepest depth + N; a depth that does not fit the model's context is
 * left out with a note.
 *
 * Models: `SHAPE-FTYPE` (shapes of src/webgpu/model/synthetic.ts, llama-quantize file types) or paths to
 * GGUF files (used as they are, never deleted). `--deadline-s` counts from this process's start: a model
 * whose estimated time no longer fits is skipped, our runs are aborted at the deadline and llama.cpp's
 * child is killed there. Depth tests come second: a model's depths run only while their estimate (the fill
 * at ours' measured pp rate, (reps + 1) × N steps at half ours' tg@0 rate, twice for the two engines)
 * fits before the deadline less the estimated time of the models still to come, so they never crowd out
 * a later model's depth-0 row; the others are listed as skipped.
 */

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { isOurKernels, pickPassesText } from '../../src/bench/kernel-readings.ts';
import { type LlamaBenchTest, testName } from '../../src/bench/llama-bench.ts';
import { runLlamaBench } from '../../src/bench/llama-bench-gpu.ts';
import { markdownTable } from '../../src/bench/markdown.ts';
import { decodeBytesPerToken, measureBandwidth } from '../../src/bench/roofline.ts';
import { setupNodeVulkan } from '../../src/cli/node-gpu.ts';
import { openModelSource } from '../../src/library/opener.ts';
import {
  configName,
  createGpuContext,
  nodeDawnToggles,
  setNodeDawnOptions,
} from '../../src/webgpu/device.ts';
import { WebGpuEngine } from '../../src/webgpu/engine.ts';
import { type ArgmaxInfo, checkKernelOverrides, type SamplerInfo } from '../../src/webgpu/kernel-plan.ts';
import { sgmatWorkgroupBytes } from '../../src/webgpu/kernels/mmm-sgmat.ts';
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
    depths: { type: 'string', default: '0' },
    'kv-type': { type: 'string', default: 'f16' },
    'kv-types': { type: 'string' },
    'deadline-s': { type: 'string', default: '300' },
    mode: { type: 'string', default: 'tiled' },
    keep: { type: 'boolean', default: false },
    json: { type: 'string' },
    md: { type: 'string' },
    'prefill-tile': { type: 'string', default: process.env.PREFILL_TILE || 'trial' },
    'prefill-attn': { type: 'string', default: process.env.PREFILL_ATTN || 'default' },
    'decode-attention': { type: 'string', default: process.env.DECODE_ATTENTION || '' },
    'no-unsafe-apis': { type: 'boolean', default: false },
  },
});
if (!['trial', 'float', 'int8', 'sgmat', 'sgmat-int', 'sgmat-big'].includes(values['prefill-tile']!)) {
  console.error(
    `--prefill-tile must be trial, float, int8, sgmat, sgmat-int or sgmat-big (got ${values['prefill-tile']})`,
  );
  process.exit(2);
}
if (!['default', 'sgmat', 'float'].includes(values['prefill-attn']!)) {
  console.error(`--prefill-attn must be default, sgmat or float (got ${values['prefill-attn']})`);
  process.exit(2);
}
// The decode attention's layout and chunking (the engine's `attention` option, e.g. a faster policy from
// the profile phase's attention-depth table); the engine checks its fields at load.
let decodeAttention: Record<string, unknown> = {};
if (values['decode-attention']) {
  try {
    decodeAttention = JSON.parse(values['decode-attention']);
    // Checked here, before any file is written or either engine runs (each load would refuse it anyway).
    checkKernelOverrides({ attention: decodeAttention as never });
  } catch (e) {
    console.error(
      `--decode-attention must be the engine's attention option as JSON, e.g. '{"layout":{"kind":"tiled","lanes":4},"targetWorkgroups":1024,"minChunk":64}': ${(e as Error).message}`,
    );
    process.exit(2);
  }
}
const tStart = performance.now();
const elapsedS = () => (performance.now() - tStart) / 1000;
const log = (...a: unknown[]) => console.error(`[compare ${elapsedS().toFixed(1)}s]`, ...a);
const nPrompt = Number(values['n-prompt']);
const nGen = Number(values['n-gen']);
const reps = Number(values.reps);
const deadlineS = Number(values['deadline-s']);
const mode = values.mode === 'exact' ? 'exact' : 'tiled';
// Both engines' K and V cache type; anything else is a usage error (it once fell back to f16 silently).
const KV_NAMES = ['f16', 'f32', 'q8_0', 'q4_0'] as const;
type KvName = (typeof KV_NAMES)[number];
/** The cache types each model runs with: `--kv-types`, else `--kv-type`; each once, in order. */
const kvTypes = [
  ...new Set((values['kv-types'] ?? values['kv-type']).split(',').map((t) => t.trim())),
] as KvName[];
for (const t of kvTypes)
  if (!(KV_NAMES as readonly string[]).includes(t)) {
    console.error(
      `error [invalid_argument]: ${values['kv-types'] !== undefined ? '--kv-types takes' : '--kv-type must be'} ${KV_NAMES.join(', ')}, got "${t}"`,
    );
    process.exit(2);
  }
/** Depths > 0 for the tg test, ascending, each once (depth 0 is always measured: the pp/tg row). */
const deepDepths = [
  ...new Set(
    values
      .depths!.split(',')
      .filter((x) => x.trim() !== '')
      .map(Number),
  ),
]
  .filter((d) => Number.isInteger(d) && d > 0)
  .sort((a, b) => a - b);
mkdirSync(values.dir!, { recursive: true });

const driver = setupNodeVulkan(values.gpu);
setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
const gpu = await createGpuContext();
log('adapter', JSON.stringify(gpu.info), 'driver', driver, 'dawn toggles', JSON.stringify(nodeDawnToggles()));
const sgm = gpu.subgroupMatrix;
log(
  'prefill tile sgmat:',
  sgm.available ? `available (${sgm.usable.map(configName).join(', ')})` : `unavailable: ${sgm.reason}`,
);
if (sgm.available)
  log(
    'prefill tile sgmat-int:',
    sgm.usableInt?.length
      ? `i8 → i32 configurations ${sgm.usableInt.map(configName).join(', ')}`
      : 'no i8 → i32 configuration',
  );
if (sgm.available)
  log(
    'prefill tile sgmat-big:',
    (sgm.maxWorkgroupStorage ?? 0) >= sgmatWorkgroupBytes({ big: true })
      ? `64 tokens × 128 rows (${sgmatWorkgroupBytes({ big: true })} B of ${sgm.maxWorkgroupStorage} B workgroup memory)`
      : (sgm.maxWorkgroupStorage ?? 0) >= sgmatWorkgroupBytes({ big: true, singleBuffer: true })
        ? `64 tokens × 128 rows, single-buffered (${sgmatWorkgroupBytes({ big: true, singleBuffer: true })} B of ${sgm.maxWorkgroupStorage} B workgroup memory)`
        : `unavailable: needs ${sgmatWorkgroupBytes({ big: true, singleBuffer: true })} B of workgroup memory single-buffered, the device grants ${sgm.maxWorkgroupStorage}`,
  );
const bw = await measureBandwidth(gpu.device);
log(`bandwidth ${bw.GBs.toFixed(1)} GB/s (${bw.timing})`);
const engine = new WebGpuEngine({
  openModel: openModelSource,
  gpu,
  attention: {
    ...decodeAttention,
    ...(values['prefill-attn'] === 'sgmat' ? { prefill: { kind: 'sgmat' } as const } : {}),
    ...(values['prefill-attn'] === 'float' ? { prefill: { kind: 'tiled' } as const } : {}),
  },
  ...(values['prefill-tile'] === 'trial'
    ? {}
    : {
        prefill: {
          kind: 'tile',
          intDot: values['prefill-tile'] === 'int8',
          ...(values['prefill-tile'] === 'sgmat' ? { subgroupMatrix: true } : {}),
          ...(values['prefill-tile'] === 'sgmat-int' ? { subgroupMatrix: 'int8' } : {}),
          ...(values['prefill-tile'] === 'sgmat-big' ? { subgroupMatrix: 'big' } : {}),
        } as const,
      }),
});

type Tests = Record<string, { mean: number; std: number; samples: number[] }>;
interface Row {
  model: string;
  /** Both engines' K and V cache type for this row. */
  kvType: KvName;
  file?: string;
  fileMiB?: number;
  types?: Record<string, number>;
  writeMs?: number;
  ours?: {
    loadMs: number;
    tests: Tests;
    /** Estimated bytes read per tg step at depth 0 (context used: N ÷ 2). */
    bytesPerToken: number;
    /** The same at each depth > 0 that ran (context used: depth + N ÷ 2). */
    bytesPerTokenAt?: Record<string, number>;
    kvType?: string;
    contextLength?: number;
    /** The kernels that ran and how they were chosen (ModelInfo.kernels: each decode matmul's layout and trials). */
    kernels?: unknown;
    error?: string;
  };
  llama?: {
    loadMs?: number;
    tests?: Tests;
    engine?: string;
    gpuLayers?: number;
    devices?: string[];
    kvType?: string;
    /** node-llama-cpp's `context.flashAttention` (true, false or 'auto' as asked). */
    flashAttention?: boolean | string;
    contextSize?: number;
    /** Depths the peer left out (its own time check) or failed at, with why. */
    skippedDepths?: Record<string, string>;
    error?: string;
  };
  /** Depths > 0 asked for this model: planned ones run (both engines), the others carry a note. */
  depths?: number[];
  depthNotes?: Record<string, string>;
  skipped?: string;
}
const rows: Row[] = [];

/** Free bytes on the file system holding `dir`. */
function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Runs llama-vulkan.mjs on a file; resolves with its JSON result or an error. */
function runPeer(
  file: string,
  kvType: KvName,
  nVocab: number,
  timeoutS: number,
  depths: number[],
  depthDeadlineS: number,
): Promise<Row['llama']> {
  const script = values['llama-script'];
  if (!script) return Promise.resolve({ error: 'llama.cpp: no --llama-script' });
  const out = join(values.dir!, 'llama-result.json');
  rmSync(out, { force: true });
  return new Promise((resolve) => {
    const args = [script, '--model', file, '--gpu', values['llama-gpu']!, '--n-prompt', String(nPrompt)];
    args.push('--n-gen', String(nGen), '--reps', String(reps), '--n-vocab', String(nVocab), '--json', out);
    args.push(
      '--kv-type',
      kvType,
      '--depths',
      depths.join(','),
      '--depth-deadline-s',
      depthDeadlineS.toFixed(0),
    );
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    child.stderr.on('data', (d: Buffer) => {
      process.stderr.write(d);
      tail = (tail + d.toString()).slice(-600);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(1, timeoutS) * 1000);
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      let r: Record<string, unknown> | undefined;
      try {
        r = existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : undefined;
      } catch {} // a file cut mid-write by the kill: as if none
      const exit = `exit ${code ?? sig}${sig === 'SIGKILL' ? ' (deadline)' : ''}`;
      if (r?.error) {
        resolve({ error: `llama.cpp: ${r.error}`.slice(0, 400) });
      } else if (r) {
        // A complete result, or (killed or failed) the tests written so far.
        const noGpu = values['llama-gpu'] !== 'cpu' && !((r.gpuLayers as number) > 0);
        const errors = [
          ...(noGpu ? ['no layer ran on the GPU (no usable Vulkan device)'] : []),
          ...(code === 0
            ? []
            : [
                `${exit} after ${Object.keys((r.tests as Tests | undefined) ?? {}).length} tests: ${tail.trim().slice(-200)}`,
              ]),
        ];
        resolve({
          loadMs: r.loadMs as number,
          tests: r.tests as Tests,
          engine: r.engine as string,
          gpuLayers: r.gpuLayers as number,
          devices: r.devices as string[],
          kvType: r.kvType as string,
          flashAttention: r.flashAttention as boolean | string,
          contextSize: r.contextSize as number,
          skippedDepths: r.skippedDepths as Record<string, string>,
          ...(errors.length ? { error: `llama.cpp: ${errors.join('; ')}` } : {}),
        });
      } else {
        resolve({ error: `llama.cpp: ${exit}: ${tail.trim().slice(-300)}` });
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

/** The test name at a depth: `tg128` at 0, llama-bench's `tg128 @ d4096` past it. */
const tgAt = (d: number) => testName('tg', nGen, d);
const ratio = (a?: number, b?: number) => (a && b ? `${(a / b).toFixed(2)}×` : '');

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
    depths: [0, ...deepDepths],
    kvTypes,
    fileMode: mode,
    rows,
  };
  if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 1));
  const head = [
    'model',
    'KV',
    'tensor types',
    'file MiB',
    'depth',
    `ours ${pp}`,
    `llama.cpp ${pp}`,
    `${pp} ours÷llama.cpp`,
    `ours ${tg}`,
    `llama.cpp ${tg}`,
    `${tg} ours÷llama.cpp`,
    `ours ${tg}@d÷@0`,
    `llama.cpp ${tg}@d÷@0`,
    'ours share of bandwidth',
    'llama.cpp share of bandwidth',
  ];
  const lines: string[][] = [];
  for (const r of rows) {
    const o = r.ours?.tests;
    const l = r.llama?.tests;
    const share = (x: number | undefined, bpt: number | undefined) =>
      x && bpt ? `${((100 * x * bpt) / (bw.GBs * 1e9)).toFixed(1)}%` : '';
    const note = r.skipped ?? [r.ours?.error, r.llama?.error].filter(Boolean).join('; ');
    const bpt0 = r.ours?.bytesPerToken;
    lines.push([
      r.model,
      r.kvType,
      r.types
        ? Object.keys(r.types)
            .filter((t) => t !== 'F32')
            .join('/') || 'F32'
        : note,
      fmt(r.fileMiB, r.fileMiB !== undefined && r.fileMiB < 10 ? 2 : 0),
      r.types ? '0' : '',
      fmt(o?.[pp]?.mean),
      fmt(l?.[pp]?.mean),
      ratio(o?.[pp]?.mean, l?.[pp]?.mean),
      fmt(o?.[tg]?.mean),
      fmt(l?.[tg]?.mean),
      ratio(o?.[tg]?.mean, l?.[tg]?.mean),
      '',
      '',
      share(o?.[tg]?.mean, bpt0),
      share(l?.[tg]?.mean, bpt0),
    ]);
    for (const d of r.depths ?? []) {
      const t = tgAt(d);
      const om = o?.[t]?.mean;
      const lm = l?.[t]?.mean;
      const bpt = r.ours?.bytesPerTokenAt?.[d];
      const why = [r.depthNotes?.[d], r.llama?.skippedDepths?.[d] && `llama.cpp ${r.llama.skippedDepths[d]}`]
        .filter(Boolean)
        .join('; ');
      lines.push([
        r.model,
        r.kvType,
        why,
        '',
        String(d),
        '',
        '',
        '',
        fmt(om),
        fmt(lm),
        ratio(om, lm),
        ratio(om, o?.[tg]?.mean),
        ratio(lm, l?.[tg]?.mean),
        share(om, bpt),
        share(lm, bpt),
      ]);
    }
  }
  const errs = rows.filter((r) => r.types && (r.ours?.error || r.llama?.error));
  // The token pick of each model as loaded (ModelInfo.kernels.argmax / .sampler), once per model.
  const picks = [
    ...new Map(
      rows.flatMap((r) => {
        const k = r.ours?.kernels;
        return isOurKernels(k) && k.argmax && k.sampler
          ? [[r.model, pickLine(k.argmax, k.sampler)] as const]
          : [];
      }),
    ),
  ].map(([m, t]) => `- ${m}: ${t}`);
  const peer = rows.find((r) => r.llama?.engine)?.llama;
  const depthText = deepDepths.length
    ? `, ${tg} also at depth${deepDepths.length > 1 ? 's' : ''} ${deepDepths.join(', ')} (cache filled once, ` +
      'the rows past the depth restored before each repetition)'
    : '';
  const md = [
    `Device: ${gpu.info.vendor} ${gpu.info.architecture} ${gpu.info.device} ${gpu.info.description}` +
      `${gpu.info.isFallback ? ' (software adapter)' : ''}; bandwidth ${bw.GBs.toFixed(1)} GB/s (our kernel, ${bw.timing}); ` +
      `peer ${peer?.engine ?? 'llama.cpp (did not run)'}${peer?.devices?.length ? ` on ${peer.devices.join(', ')}` : ''}` +
      `${peer?.flashAttention !== undefined ? `, flash attention ${peer.flashAttention === true ? 'on' : peer.flashAttention === false ? 'off' : String(peer.flashAttention)}` : ''}; ` +
      `same GGUF file for both (random weights, ${mode} mode); KV cache ${kvTypes.map((t) => t.toUpperCase()).join(', ')} for both (the KV column)${kvTypes.some((t) => t === 'q8_0' || t === 'q4_0') ? ', llama.cpp with flash attention on for Q8_0/Q4_0' : ''}; ` +
      `llama-bench tests ${pp} / ${tg} at depth 0${depthText}, mean of ${reps} after 1 warm-up; tok/s; ` +
      `@d÷@0: ${tg} at the depth ÷ at depth 0, same engine; ${result.date.slice(0, 10)}`,
    '',
    ...markdownTable(head, lines, 2),
    ...(picks.length ? ['', 'Token pick (ModelInfo.kernels):', ...picks] : []),
    ...(errs.length
      ? [
          '',
          ...errs.map(
            (r) =>
              `- ${r.model} (KV ${r.kvType}): ${[r.ours?.error, r.llama?.error].filter(Boolean).join('; ')}`,
          ),
        ]
      : []),
  ].join('\n');
  if (values.md) writeFileSync(values.md, `${md}\n`);
  console.log(md);
}

/** `argmax 126 × 1024 logits (64 threads); sampler passes per token: top-k 40: candidates + draw; top-p 0.95: top-p ×3 + draw; …`. */
function pickLine(a: ArgmaxInfo, s: SamplerInfo): string {
  const r = s.requests;
  return (
    `argmax ${a.stripes} × ${a.stripe} logits (${a.threads} threads); sampler passes per token: top-k 40: ${pickPassesText(r.topK)}; ` +
    `top-p 0.95: ${pickPassesText(r.topP)}; temperature alone: ${pickPassesText(r.temperature)}`
  );
}

/** A model's planned file bytes: a shape's from its plan, a path's from its size (0 when unknown). */
function plannedBytes(m: string): number {
  try {
    if (m.endsWith('.gguf')) return statSync(m).size;
    const o = shapeOptions(m.slice(0, m.lastIndexOf('-')));
    return plannedDataBytes(o, toFtype(m.slice(m.lastIndexOf('-') + 1))) + o.nVocab * 24;
  } catch {
    return 0;
  }
}
/** Estimated seconds for a model's depth-0 part: 20 s of runs and start-up plus 5 s per GB. */
const baseNeedS = (bytes: number) => 20 + (5 * bytes) / 1e9;

const models = values.models!.split(',').filter(Boolean);
/**
 * Estimated seconds of the depth-0 parts still to come after model i's k-th cache type (that model's later
 * types and every type of the later models), kept free of depth tests.
 */
const reserveAfter = (i: number, k: number) =>
  (kvTypes.length - 1 - k) * baseNeedS(plannedBytes(models[i])) +
  models.slice(i + 1).reduce((a, m) => a + kvTypes.length * baseNeedS(plannedBytes(m)), 0);

/**
 * One model and cache type: ours (load by path, pp/tg at depth 0, then the depths that fit before
 * `depthEndS`), then llama.cpp on the same file with the same depths; fills `row`.
 */
async function measure(
  row: Row,
  m: string,
  file: string,
  bytes: number,
  kvType: KvName,
  depthEndS: number,
  reserved: number,
): Promise<void> {
  // The peer's depth-0 part (load and pp/tg), kept free of depth tests too.
  const peerBaseS = 10 + (2.5 * bytes) / 1e9;
  /** Depths both engines run (ours decides: what fits the context and the time). */
  const planned: number[] = [];

  // Ours, by path.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), Math.max(1, deadlineS - elapsedS()) * 1000);
  let nVocab = 256;
  try {
    const tl = performance.now();
    const mi = await engine.load(
      { path: file },
      {
        contextLength: Math.max(nPrompt, nGen, (deepDepths.at(-1) ?? 0) + nGen) + 8,
        batchSize: Number(values['batch-size']),
        kvType,
        signal: ac.signal,
      },
    );
    const loadMs = performance.now() - tl;
    nVocab = mi.nVocab;
    if (!row.types) {
      row.types = {};
      for (const t of mi.tensorTypes) row.types[t] = 1;
    }
    log(`${m}: ours loaded in ${loadMs.toFixed(0)} ms (context ${mi.contextLength}, KV ${mi.kvType})`);
    const progress = (p: { test: string; rep: number; tokensPerSecond?: number }) =>
      p.tokensPerSecond !== undefined &&
      log(`${m}: ours ${p.test} rep ${p.rep}: ${p.tokensPerSecond.toFixed(1)} tok/s`);
    const ts = await runLlamaBench(
      engine.llama!,
      { nPrompt: [nPrompt], nGen: [nGen], depths: [0], reps },
      progress,
      ac.signal,
    );
    const traffic = { ...mi, kvDim: mi.kvDim, tiedEmbeddings: mi.tiedEmbeddings };
    row.ours = {
      loadMs: Math.round(loadMs),
      tests: testsOf(ts),
      bytesPerToken: Math.round(decodeBytesPerToken(traffic, nGen / 2)),
      kvType: mi.kvType,
      contextLength: mi.contextLength,
      kernels: mi.kernels,
    };
    const pa = mi.kernels?.attention?.prefill;
    log(
      `${row.model}: prefill attention ${pa?.kernel}${pa?.subgroupMatrix?.tile ? ` ${pa.subgroupMatrix.tile}` : ''}${pa?.subgroupMatrix?.reason ? ` (subgroup matrices: ${pa.subgroupMatrix.reason})` : ''}${pa?.trial ? ` trial ${pa.trial.map((t) => `${t.kernel} ${t.ms} ms`).join(', ')}` : ''}`,
    );

    // tg at depths: those that fit the context, while their estimate fits before depthEndS.
    if (deepDepths.length) {
      row.depths = deepDepths;
      row.depthNotes = {};
      const pp0 = row.ours.tests[pp]?.mean;
      const tg0 = row.ours.tests[tg]?.mean;
      // Per engine: the fill at ours' pp rate, the warm-up and reps at half ours' tg@0 rate, 1 s slack.
      const est = (d: number) => d / (pp0 || 100) + ((reps + 1) * nGen) / (0.5 * (tg0 || 10)) + 1;
      let t = elapsedS() + peerBaseS;
      for (const d of deepDepths) {
        if (d + nGen > mi.contextLength) {
          row.depthNotes[d] = `skipped: depth + ${nGen} exceeds the model's context (${mi.contextLength})`;
        } else if (!tg0) {
          row.depthNotes[d] = `skipped: no ${tg} at depth 0`;
        } else if (t + 2 * est(d) > depthEndS) {
          const left = depthEndS - t;
          row.depthNotes[d] =
            `skipped: ~${Math.ceil(2 * est(d))} s needed, ${Math.max(0, Math.floor(left))} s left` +
            (reserved > 0 ? ` (${reserved.toFixed(0)} s kept for the runs after)` : '');
        } else {
          planned.push(d);
          t += 2 * est(d);
        }
        if (row.depthNotes[d]) log(`${m}: ${tgAt(d)}: ${row.depthNotes[d]}`);
      }
      row.ours.bytesPerTokenAt = {};
      for (const d of planned) {
        try {
          const td = await runLlamaBench(
            engine.llama!,
            { nPrompt: [], nGen: [nGen], depths: [d], reps },
            progress,
            ac.signal,
          );
          Object.assign(row.ours.tests, testsOf(td));
          row.ours.bytesPerTokenAt[d] = Math.round(decodeBytesPerToken(traffic, d + nGen / 2));
        } catch (e) {
          row.depthNotes[d] = `ours: ${(e as Error).message}`.slice(0, 200);
          log(`${m}: ${tgAt(d)}: ${row.depthNotes[d]}`);
        }
      }
      writeResults();
    }
  } catch (e) {
    row.ours = {
      loadMs: 0,
      tests: {},
      bytesPerToken: 0,
      ...row.ours,
      error: `ours: ${(e as Error).message}`.slice(0, 300),
    };
    log(`${m}: ${row.ours.error}`);
    if (deepDepths.length && !row.depths) {
      row.depths = deepDepths;
      row.depthNotes = Object.fromEntries(deepDepths.map((d) => [d, 'not run: ours failed at depth 0']));
    }
  } finally {
    clearTimeout(timer);
    await engine.unload();
  }

  // llama.cpp, same file, same depths.
  if (elapsedS() < deadlineS - 5) {
    row.llama = await runPeer(file, kvType, nVocab, deadlineS - elapsedS(), planned, depthEndS - elapsedS());
    if (row.llama?.error) log(`${m}: ${row.llama.error}`);
  } else {
    row.llama = { error: 'llama.cpp: deadline reached' };
  }
}

for (const [mIndex, m] of models.entries()) {
  const first: Row = { model: m, kvType: kvTypes[0] };
  rows.push(first);
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
      const need = baseNeedS(bytes);
      const free = freeBytes(values.dir!);
      if (elapsedS() + need > deadlineS || bytes + 2e9 > free) {
        first.skipped =
          bytes + 2e9 > free
            ? `skipped: ${(bytes / 1e9).toFixed(1)} GB file, ${(free / 1e9).toFixed(1)} GB free`
            : `skipped: ~${need.toFixed(0)} s needed, ${(deadlineS - elapsedS()).toFixed(0)} s left`;
        log(`${m}: ${first.skipped}`);
        for (const kvType of kvTypes.slice(1)) rows.push({ model: m, kvType, skipped: first.skipped });
        writeResults();
        continue;
      }
      file = join(values.dir!, `${m}.gguf`);
      const w = await writeRandomGguf(file, o, ftype, { mode, log });
      first.types = w.types;
      first.writeMs = Math.round(w.ms);
      bytes = w.bytes;
      log(
        `${m}: wrote ${(w.bytes / 2 ** 20).toFixed(0)} MiB in ${w.ms.toFixed(0)} ms (${JSON.stringify(w.types)})`,
      );
    }
    // The file once, each cache type on it in turn.
    for (const [kIndex, kvType] of kvTypes.entries()) {
      const row: Row =
        kIndex === 0 ? first : { model: m, kvType, ...(first.types ? { types: first.types } : {}) };
      if (kIndex > 0) rows.push(row);
      row.file = file;
      row.fileMiB = bytes / 2 ** 20;
      if (kIndex > 0 && elapsedS() + baseNeedS(bytes) > deadlineS) {
        row.skipped = `skipped: ~${baseNeedS(bytes).toFixed(0)} s needed, ${(deadlineS - elapsedS()).toFixed(0)} s left`;
        log(`${m} (KV ${kvType}): ${row.skipped}`);
        continue;
      }
      // Depth tests (both engines) end by here, leaving the runs after this one their depth-0 time.
      const reserved = reserveAfter(mIndex, kIndex);
      await measure(row, m, file, bytes, kvType, deadlineS - reserved, reserved);
      writeResults();
    }
  } catch (e) {
    const row = rows.at(-1)!;
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
