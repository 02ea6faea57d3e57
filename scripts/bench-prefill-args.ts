// bench-prefill's command line, parsed on import (a bad option exits 2 with the usage), and the plan it sets.
import { parseArgs } from 'node:util';
import { FTYPES } from '../src/gguf/quantize-model.ts';

/** llama-bench's pp size. */
export const PP = 512;
/** The type parts 2–4 run on. */
export const PP_TYPE = 'Q4_0';
/** llama.cpp's batch (node-llama-cpp's default, llama-bench's n_ubatch) and wllama's n_batch / n_ubatch. */
export const LLAMA_BATCH = 512;
export const WLLAMA_N_BATCH = 2048;
export const WLLAMA_N_UBATCH = 512;
const PARTS = ['prefill', 'pp', 'ttft', 'stop'] as const;
type Part = (typeof PARTS)[number];
const ENGINES = ['ours', 'wllama', 'llama-cpp'] as const;
export type EngineId = (typeof ENGINES)[number];

const USAGE =
  'usage: npm run bench:prefill -- [--types Q4_0,Q4_K_M,Q8_0] [--prompts 100,500,1500] [--runs 2] [--long-runs 1]\n' +
  '    [--long-from 1000] [--tokens 2] [--depths 0,1024] [--reps 2] [--ttft-tokens 2000] [--stop-tokens 1500]\n' +
  '    [--stop-after-ms 1000] [--stop-reps 3] [--parts prefill,pp,ttft,stop] [--engines ours,wllama,llama-cpp]\n' +
  '    [--no-write] [--chromium PATH]';

const ARGS = {
  options: {
    types: { type: 'string', default: 'Q4_0,Q4_K_M,Q8_0' },
    prompts: { type: 'string', default: '100,500,1500' },
    runs: { type: 'string', default: '2' },
    'long-runs': { type: 'string', default: '1' },
    'long-from': { type: 'string', default: '1000' },
    tokens: { type: 'string', default: '2' },
    depths: { type: 'string', default: '0,1024' },
    reps: { type: 'string', default: '2' },
    'ttft-tokens': { type: 'string', default: '2000' },
    'stop-tokens': { type: 'string', default: '1500' },
    'stop-after-ms': { type: 'string', default: '1000' },
    'stop-reps': { type: 'string', default: '3' },
    parts: { type: 'string', default: PARTS.join(',') },
    engines: { type: 'string', default: ENGINES.join(',') },
    'no-write': { type: 'boolean', default: false },
    chromium: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
} as const;
function usage(msg: string): never {
  console.error(`error [invalid_argument]: ${msg}\n${USAGE}`);
  process.exit(2);
}
const values = (() => {
  try {
    return parseArgs(ARGS).values;
  } catch (e) {
    usage((e as Error).message);
  }
})();
if (values.help) {
  console.error(USAGE);
  process.exit(0);
}
const int = (s: string, name: string, min: number) => {
  if (!/^\d+$/.test(s.trim()) || Number(s) < min) usage(`--${name} must be an integer ≥ ${min}, got "${s}"`);
  return Number(s);
};
const list = (s: string, name: string, min: number) =>
  [...new Set(s.split(',').map((x) => int(x, name, min)))].sort((a, b) => a - b);
/** `--types`: the quantization types of part 1. */
export const TYPES = values.types.split(',').filter(Boolean);
for (const t of TYPES) if (!(t in FTYPES)) usage(`unknown type ${t} (${Object.keys(FTYPES).join(', ')})`);
/** `--prompts`: part 1's prompt sizes in tokens, sorted. */
export const PROMPTS = list(values.prompts, 'prompts', 8);
export const RUNS = int(values.runs, 'runs', 1);
export const LONG_RUNS = int(values['long-runs'], 'long-runs', 1);
export const LONG_FROM = int(values['long-from'], 'long-from', 1);
/** `--tokens`: greedy output tokens per run. */
export const TOKENS = int(values.tokens, 'tokens', 1);
/** `--depths`: part 2's KV depths, sorted. */
export const DEPTHS = list(values.depths, 'depths', 0);
export const REPS = int(values.reps, 'reps', 1);
export const TTFT_TOKENS = int(values['ttft-tokens'], 'ttft-tokens', 8);
export const STOP_TOKENS = int(values['stop-tokens'], 'stop-tokens', 8);
export const STOP_AFTER_MS = int(values['stop-after-ms'], 'stop-after-ms', 0);
export const STOP_REPS = int(values['stop-reps'], 'stop-reps', 1);
/** `--chromium`: the browser to launch instead of Playwright's. */
export const CHROMIUM = values.chromium;
/** `--no-write`: print the section without touching BENCHMARKS.md. */
export const NO_WRITE = values['no-write'];
/** `--parts`, as given. */
export const parts = new Set(values.parts.split(',').filter(Boolean));
for (const p of parts) if (!(PARTS as readonly string[]).includes(p)) usage(`unknown part ${p} (${PARTS})`);
/** Whether `--parts` has `p`. */
export const has = (p: Part) => parts.has(p);
/** `--engines`, as given. */
export const engines = new Set(values.engines.split(',').filter(Boolean));
for (const e of engines)
  if (!(ENGINES as readonly string[]).includes(e)) usage(`unknown engine ${e} (${ENGINES})`);
/** Whether `--engines` has `e`. */
export const on = (e: EngineId) => engines.has(e);
if ((has('ttft') || has('stop')) && !on('ours'))
  usage('--parts ttft and stop measure ours: keep ours in --engines');
if (TOKENS >= 32 && on('wllama'))
  console.error('warning: wllama 3.13 fails on this random model at 32+ output tokens');

/** Measured runs of a prompt of `n` tokens. */
export const runsFor = (n: number) => (n >= LONG_FROM ? LONG_RUNS : RUNS);
/** The context every engine is loaded with in parts 1, 3 and 4 (room for the longest prompt and output). */
export const N_CTX = (() => {
  const longest = Math.max(
    ...(has('prefill') ? PROMPTS : [0]),
    has('ttft') ? TTFT_TOKENS : 0,
    has('stop') ? STOP_TOKENS : 0,
  );
  return Math.max(2048, Math.ceil((longest + TOKENS + 8) / 256) * 256);
})();
/** The model files' context length (metadata): ≥ 4608 (pp512 @ d4096) and part 2's deepest test fits. */
export const MODEL_CTX = Math.max(N_CTX, Math.max(...DEPTHS) + PP, 4096 + PP);
