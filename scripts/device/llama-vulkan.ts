/**
 * The peer: llama.cpp through node-llama-cpp's prebuilt binaries (Vulkan by default, every layer on the
 * GPU), timed as llama-bench's tests and as our `runLlamaBench` (src/bench/llama-bench-gpu.ts) times ours:
 *
 * - ppN: the KV cache cleared, N fixed prompt token ids evaluated; tok/s = N ÷ the time until the next
 *   (greedy) token is known to the caller.
 * - tgN: the cache cleared, one fixed token id, then N greedy decode steps, each sampled token fed back;
 *   tok/s = N ÷ the time from the start to the N-th token (N decode steps, as ours: no prompt before).
 * - tgN @ dD (`--depths`): as llama-bench and scripts/bench-depth.ts do it, the cache is filled once with
 *   D seeded random token ids (`evaluateWithoutGeneratingNewTokens`), then the warm-up and each repetition
 *   run N greedy steps at positions D…, the rows past D erased before each (`eraseContextTokenRanges`),
 *   so every repetition sees the same D rows. A depth whose estimate (the fill at this run's pp rate,
 *   (reps + 1) × N steps at half its tg@0 rate) no longer fits `--depth-deadline-s` is skipped and listed
 *   in `skippedDepths`.
 *
 * One warm-up of each test, then `--reps` repetitions (mean ± population std). EOG tokens are yielded and
 * fed back like any other (random weights), so every run has exactly N steps. Greedy = temperature 0:
 * llama.cpp copies the logits to the host and picks the argmax there each step (ours does the argmax on
 * the GPU and reads back 4 bytes); llama-bench itself does not sample.
 *
 *   node llama-vulkan.mjs --model FILE [--gpu vulkan|cpu|auto] [--n-prompt 128] [--n-gen 128] [--reps 3]
 *                         [--n-vocab V] [--ctx 512] [--threads N] [--flash-attention auto|on|off]
 *                         [--depths 1024,4096] [--depth-deadline-s S] [--kv-type f16|f32|q8_0|q4_0] [--json FILE]
 *
 * Token ids are drawn from [3, V) (default V = 256, which every model here has).
 *
 * Prints one JSON line (also written to --json, which is rewritten with `partial: true` after every test,
 * so a killed run keeps what it measured): the engine and its llama.cpp release, the GPU it used, the
 * layers offloaded, KV cache type, load time, and per test (llama-bench's names: `tg128 @ d4096`)
 * mean/std/samples. `--kv-type`: the K and V cache types (default f16, llama.cpp's default; q8_0 and q4_0 turn flash
 * attention on, which a quantized V needs).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { getLlama, type LlamaContextSequence, LlamaLogLevel, type Token } from 'node-llama-cpp';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    gpu: { type: 'string', default: 'vulkan' },
    'n-prompt': { type: 'string', default: '128' },
    'n-gen': { type: 'string', default: '128' },
    'n-vocab': { type: 'string', default: '256' },
    reps: { type: 'string', default: '3' },
    ctx: { type: 'string' },
    threads: { type: 'string' },
    'flash-attention': { type: 'string', default: 'auto' },
    depths: { type: 'string', default: '' },
    'depth-deadline-s': { type: 'string' },
    'kv-type': { type: 'string', default: 'f16' },
    json: { type: 'string' },
  },
});
if (!values.model) {
  console.error('usage: llama-vulkan --model FILE [--gpu vulkan|cpu|auto] [--n-prompt N] [--n-gen N]');
  process.exit(2);
}
const nPrompt = Number(values['n-prompt']);
const nGen = Number(values['n-gen']);
const reps = Number(values.reps);
const nVocab = Number(values['n-vocab']);
/** Depths > 0 for the tg test, ascending, each once (depth 0 is the plain tgN). */
const depths = [
  ...new Set(
    values.depths
      .split(',')
      .filter((x) => x.trim() !== '')
      .map(Number),
  ),
]
  .filter((d) => Number.isInteger(d) && d > 0)
  .sort((a, b) => a - b);
const KV_NAMES = ['f16', 'f32', 'q8_0', 'q4_0'] as const;
if (!(KV_NAMES as readonly string[]).includes(values['kv-type'] ?? '')) {
  console.error(
    `error [invalid_argument]: --kv-type must be one of ${KV_NAMES.join(', ')}, got "${values['kv-type']}"`,
  );
  process.exit(2);
}
const kvType = (values['kv-type'] as string).toUpperCase() as 'F16' | 'F32' | 'Q8_0' | 'Q4_0';
/** llama.cpp runs a quantized V cache only with flash attention. */
const kvQuantized = kvType === 'Q8_0' || kvType === 'Q4_0';
if (kvQuantized && values['flash-attention'] === 'off') {
  console.error(
    `error [invalid_argument]: a ${kvType} V cache needs flash attention (--flash-attention on or auto)`,
  );
  process.exit(2);
}
const t0 = performance.now();
const log = (...a: unknown[]) =>
  console.error(`[llama ${((performance.now() - t0) / 1000).toFixed(1)}s]`, ...a);

const gpu = values.gpu === 'cpu' ? false : values.gpu === 'auto' ? 'auto' : 'vulkan';
/** Ends with a one-line JSON error (and --json), so the caller records why. */
function fail(what: string, e: unknown): never {
  let msg = `${what}: ${(e as Error)?.message ?? String(e)}`;
  if ((e as Error)?.name === 'NoBinaryFoundError' || /NoBinaryFound/.test(msg))
    msg +=
      ' (the prebuilt llama.cpp binary did not load: for Vulkan, a loader (libvulkan.so.1) and a driver ' +
      '(VK_ICD_FILENAMES / VK_DRIVER_FILES) must be found)';
  const r = { error: msg, model: values.model };
  console.log(JSON.stringify(r));
  if (values.json) writeFileSync(values.json, JSON.stringify(r, null, 1));
  process.exit(1);
}
const llama = await getLlama({
  gpu,
  build: 'never',
  skipDownload: true,
  progressLogs: false,
  logLevel: LlamaLogLevel.warn,
}).catch((e) => fail('getLlama', e));
const devices = await llama.getGpuDeviceNames().catch(() => [] as string[]);
log(
  `backend ${String(llama.gpu)}, devices ${JSON.stringify(devices)}, release ${llama.llamaCppRelease.release}`,
);

const tl = performance.now();
const model = await llama
  .loadModel({ modelPath: values.model, gpuLayers: gpu === false ? 0 : 'max' })
  .catch((e) => fail('loadModel', e));
const loadMs = performance.now() - tl;
const fa = values['flash-attention'];
const context = await model.createContext({
  contextSize: Number(values.ctx ?? Math.max(256, nPrompt + nGen + 16, (depths.at(-1) ?? 0) + nGen + 16)),
  batchSize: Math.max(512, nPrompt),
  sequences: 1,
  flashAttention: fa === 'on' || kvQuantized ? true : fa === 'off' ? false : 'auto',
  experimentalKvCacheKeyType: kvType,
  experimentalKvCacheValueType: kvType,
  ...(values.threads ? { threads: Number(values.threads) } : {}),
});
const seq = context.getSequence();
log(
  `loaded in ${loadMs.toFixed(0)} ms: ${model.gpuLayers} layers on the GPU, ` +
    `flash attention ${String(context.flashAttention)}, KV ${kvType}, context ${context.contextSize}, ` +
    `${context.currentThreads} threads`,
);

/** Deterministic token ids in [3, nVocab) (not UNK/BOS/EOS); the content does not change the speed. */
function ids(n: number, seed: number): Token[] {
  let s = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (3 + (s % Math.max(1, nVocab - 3))) as Token;
  });
}

const opts = { temperature: 0, yieldEogToken: true } as const;

async function timePrefill(sq: LlamaContextSequence, n: number, seed: number): Promise<number> {
  await sq.clearHistory();
  const prompt = ids(n, seed);
  const start = performance.now();
  const it = sq.evaluate(prompt, opts);
  const r = await it.next();
  const s = (performance.now() - start) / 1000;
  await it.return();
  if (r.done) throw new Error('llama.cpp produced no token after the prompt');
  return s;
}

async function timeDecode(sq: LlamaContextSequence, n: number, seed: number): Promise<number> {
  await sq.clearHistory();
  const first = ids(1, seed);
  const start = performance.now();
  const it = sq.evaluate(first, opts);
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    if (r.done) throw new Error(`llama.cpp stopped after ${i} of ${n} tokens`);
  }
  const s = (performance.now() - start) / 1000;
  await it.return();
  return s;
}

/**
 * tgN at positions depth…: the rows past `depth` erased first (the cache holds `depth` rows from the
 * fill), then one fixed token and N greedy steps, timed as {@link timeDecode}.
 */
async function timeDecodeAt(
  sq: LlamaContextSequence,
  depth: number,
  n: number,
  seed: number,
): Promise<number> {
  if (sq.nextTokenIndex > depth) await sq.eraseContextTokenRanges([{ start: depth, end: sq.nextTokenIndex }]);
  if (sq.nextTokenIndex !== depth) throw new Error(`the cache holds ${sq.nextTokenIndex} rows, not ${depth}`);
  const first = ids(1, seed);
  const start = performance.now();
  const it = sq.evaluate(first, opts);
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    if (r.done) throw new Error(`llama.cpp stopped after ${i} of ${n} tokens at depth ${depth}`);
  }
  const s = (performance.now() - start) / 1000;
  await it.return();
  return s;
}

function meanStd(xs: number[]): { mean: number; std: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return { mean, std: Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length) };
}

const tests: Record<string, { mean: number; std: number; samples: number[] }> = {};
const skippedDepths: Record<string, string> = {};
const elapsedS = () => (performance.now() - t0) / 1000;
const depthDeadlineS =
  values['depth-deadline-s'] === undefined ? Infinity : Number(values['depth-deadline-s']);
const base = () => ({
  engine: `llama.cpp ${llama.llamaCppRelease.release} (node-llama-cpp, ${llama.gpu === false ? 'CPU' : llama.gpu}, prebuilt)`,
  release: llama.llamaCppRelease.release,
  backend: llama.gpu,
  devices,
  model: values.model,
  gpuLayers: model.gpuLayers,
  flashAttention: context.flashAttention,
  kvType,
  contextSize: context.contextSize,
  batchSize: context.batchSize,
  threads: context.currentThreads,
  loadMs: Math.round(loadMs),
  nPrompt,
  nGen,
  reps,
  depths,
  tests,
  skippedDepths,
});
/** The result so far, rewritten after every test (a run killed at the deadline keeps its tests). */
const savePartial = () =>
  values.json && writeFileSync(values.json, JSON.stringify({ ...base(), partial: true }, null, 1));
let seed = 1;
for (const [name, n, f] of [
  [`pp${nPrompt}`, nPrompt, timePrefill],
  [`tg${nGen}`, nGen, timeDecode],
] as const) {
  if (n <= 0) continue;
  await f(seq, n, seed++); // warm-up
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) samples.push(n / (await f(seq, n, seed++)));
  tests[name] = { ...meanStd(samples), samples: samples.map((x) => +x.toFixed(2)) };
  log(`${name}: ${tests[name].mean.toFixed(1)} ± ${tests[name].std.toFixed(1)} tok/s`);
  savePartial();
}

// tgN at depths: filled once per depth, warm-up, `reps` repetitions with the rows past the depth erased.
const ppRate = tests[`pp${nPrompt}`]?.mean ?? 200;
const tgRate = tests[`tg${nGen}`]?.mean ?? 20;
for (const depth of nGen > 0 ? depths : []) {
  const name = `tg${nGen} @ d${depth}`;
  const need = depth / ppRate + ((reps + 1) * nGen) / (0.5 * tgRate) + 1;
  const left = depthDeadlineS - elapsedS();
  if (need > left) {
    skippedDepths[depth] = `skipped: ~${Math.ceil(need)} s needed, ${Math.max(0, Math.floor(left))} s left`;
    log(`${name}: ${skippedDepths[depth]}`);
    continue;
  }
  try {
    const tf = performance.now();
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(ids(depth, 7 + depth));
    log(`${name}: filled ${depth} rows in ${(performance.now() - tf).toFixed(0)} ms`);
    await timeDecodeAt(seq, depth, nGen, seed++); // warm-up
    const samples: number[] = [];
    for (let r = 0; r < reps; r++) samples.push(nGen / (await timeDecodeAt(seq, depth, nGen, seed++)));
    tests[name] = { ...meanStd(samples), samples: samples.map((x) => +x.toFixed(2)) };
    log(`${name}: ${tests[name].mean.toFixed(1)} ± ${tests[name].std.toFixed(1)} tok/s`);
  } catch (e) {
    skippedDepths[depth] = `failed: ${(e as Error)?.message ?? String(e)}`.slice(0, 300);
    log(`${name}: ${skippedDepths[depth]}`);
  }
  savePartial();
}

const vram = await llama.getVramState().catch(() => undefined);
const result = {
  ...base(),
  vramTotal: vram?.total,
};
console.log(JSON.stringify(result));
if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 1));
await context.dispose();
await model.dispose();
await llama.dispose();
process.exit(0);
