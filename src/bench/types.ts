/**
 * The benchmark's data: a plan, per-run results and the JSON file format (`schemaVersion: 1`), defined once
 * as valibot schemas that give both the TypeScript types and the one check every reader applies: the page's
 * import (JSON and CSV, src/bench/result-io.ts, csv.ts) and `npm run bench:report` ({@link resultProblems}).
 * Metric definitions follow vLLM's `bench serve` (see src/core/metrics.ts).
 *
 * JSON has no NaN: a metric that is undefined for a run (TPOT of a one-token output) is written as `null`
 * and read back as NaN. Fields an older or hand-made file may lack get defaults (device features, limits
 * and user agent; load times NaN; an empty plan; runs' token ids and ITLs empty); a missing summary is
 * recomputed from the runs by the reader (result-io.ts), since that needs the metric code.
 */

import * as v from 'valibot';
import type { ModelInfo, ResponseFormat, SamplingParams } from '../core/types.ts';
import { isKvType } from '../core/validate.ts';
import { fmtParams } from '../util/format.ts';
import type {
  FitsVerdict,
  GpuProfile,
  LlamaBenchPlan,
  LlamaBenchTest,
  MemoryProbe,
  TokenCost,
} from './llama-bench.ts';

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** Any number, NaN included (valibot's `number()` refuses NaN, which a metric may be). */
const anyNumber = v.custom<number>((x) => typeof x === 'number', 'must be a number');
/** A JSON number; `null` (how JSON.stringify writes NaN) reads as NaN. */
const num = v.pipe(
  v.union([anyNumber, v.null()], 'must be a number'),
  v.transform((x): number => x ?? Number.NaN),
);
const str = v.string('must be a string');
const bool = v.boolean('must be a boolean');
/** An object whose inside another module defines and checks (llama-bench, ModelInfo). */
const opaque = <T>() => v.optional(v.custom<T>(isObj, 'must be an object'));
/** An object; a missing key reads "is missing", a wrong value "must be an object". */
const obj = <E extends v.ObjectEntries>(entries: E) =>
  v.object(entries, (issue) => (issue.received === 'undefined' ? 'is missing' : 'must be an object'));

/** The statistics of one metric (src/core/metrics.ts `Summary`). */
export const SummarySchema = obj({
  n: num,
  mean: num,
  median: num,
  p90: num,
  p99: num,
  std: num,
  min: v.optional(num, Number.NaN),
  max: v.optional(num, Number.NaN),
});
const summaries = v.record(v.string(), SummarySchema, 'must be an object');

// --- Speculative decoding and constrained output (issues 45 and 43) ----------------------------------------

/**
 * How a plan drafts (GenerateRequest.draft): `lookup` (prompt lookup, no second model) or `model` (the
 * draft model loaded beside the target, named by `model`); `draftMax` the most tokens drafted per target
 * pass (absent: the engine's default).
 */
export const BenchDraftSchema = obj({
  type: v.picklist(['lookup', 'model'], 'must be lookup or model'),
  draftMax: v.optional(num),
  model: v.optional(str),
});

/** What drafting did in one run (GenerateResult.speculative): tokens drafted, accepted, target passes. */
export const BenchRunSpeculativeSchema = obj({ drafted: num, accepted: num, targetPasses: num });

/**
 * Speculative decoding over a result's measured runs, and the same plan run again without drafting on
 * the same load (the baseline). `draft`: 'lookup' or the draft model's id. Totals over the runs;
 * `acceptanceRate` = accepted ÷ drafted (NaN when nothing was drafted); `tokensPerTargetPass` = Σ(output
 * tokens − 1) ÷ Σ targetPasses (the first token comes from the prefill); `speedup` = median decode tok/s
 * with drafting ÷ the baseline's median; `sameOutput` (greedy plans only) whether every run's tokens equal
 * its baseline run's, as speculative decoding promises.
 */
export const BenchSpeculativeSchema = obj({
  draft: str,
  draftMax: v.optional(num),
  drafted: num,
  accepted: num,
  targetPasses: num,
  acceptanceRate: num,
  tokensPerTargetPass: num,
  baseline: obj({ runs: num, decodeTokensPerSecond: num, e2eMs: num }),
  speedup: num,
  sameOutput: v.optional(bool),
});

/**
 * A constrained run's mark (the plan's responseFormat): its kind and `hash`, `fnv1a64:` and 16 hex digits
 * of the schema's or grammar's text, so runs under different constraints, or constrained and free runs,
 * are never compared as if they were the same.
 */
export const BenchConstrainedSchema = obj({
  kind: v.picklist(
    ['json_object', 'json_schema', 'grammar', 'structural_tag'],
    'must be json_object, json_schema, grammar or structural_tag',
  ),
  hash: str,
});

/** One prompt of a plan: a short label ('short-1') and the text. */
export const BenchPromptSchema = obj({ name: str, text: str });

/**
 * What to run: prompts, new tokens per run (`maxTokens`), measured runs per prompt, warm-up runs before
 * the measured ones (on the first prompt; not counted), `ignoreEos` (keep decoding past EOS: fixed-length
 * decode), and sampling (greedy when absent).
 */
export const BenchPlanSchema = obj({
  prompts: v.array(BenchPromptSchema, 'must be an array'),
  maxTokens: num,
  runs: num,
  warmup: num,
  ignoreEos: bool,
  sampling: opaque<SamplingParams>(),
  /** Speculative decoding for every measured run (the result's `speculative` block). */
  draft: v.optional(BenchDraftSchema),
  /** Constrained output for every run (the result's `constrained` mark). */
  responseFormat: opaque<Exclude<ResponseFormat, { type: 'text' }>>(),
});

const errorSchema = obj({ code: str, message: str });

/**
 * One measured request. Times in ms, rates in tokens/s; `itlMs` holds the gaps between successive output
 * tokens [outputTokens − 1]; `engineReported` the figures an engine reports itself (WebLLM's usage.extra),
 * kept apart from ours; `tokenCount` how a remote engine counted outputTokens (`approximate` when one token
 * per chunk); `partial` and `error` mark a request that failed part-way (what arrived is kept);
 * `finishReason` why it ended (GenerateResult.finishReason, where the engine said); `formatComplete`, in a
 * constrained plan, whether `text` is a whole value of the format (false: cut at maxTokens, it does not parse).
 */
export const BenchRunSchema = v.pipe(
  obj({
    prompt: str,
    promptName: v.optional(str),
    promptTokens: num,
    outputTokens: num,
    outputTokenIds: v.optional(v.array(anyNumber, 'must be an array'), () => []),
    text: str,
    ttftMs: num,
    itlMs: v.optional(v.array(num, 'must be an array'), () => []),
    tpotMs: num,
    e2eMs: num,
    prefillTokensPerSecond: num,
    decodeTokensPerSecond: num,
    engineReported: v.optional(v.record(v.string(), num, 'must be an object')),
    tokenCount: v.optional(
      v.picklist(['ids', 'usage', 'tokenizer', 'chunks'], 'must be ids, usage, tokenizer or chunks'),
    ),
    approximate: v.optional(bool),
    partial: v.optional(bool),
    error: v.optional(errorSchema),
    speculative: v.optional(BenchRunSpeculativeSchema),
    finishReason: v.optional(v.picklist(['stop', 'length', 'aborted'], 'must be stop, length or aborted')),
    formatComplete: v.optional(bool),
  }),
  // Ids, when a file has them, are the output: their count is outputTokens and ITL has one gap fewer.
  v.forward(
    v.check(
      (r) => r.outputTokenIds.length === 0 || r.outputTokenIds.length === r.outputTokens,
      'differs from outputTokenIds.length',
    ),
    ['outputTokens'],
  ),
  v.forward(
    v.check(
      (r) => r.outputTokenIds.length === 0 || r.itlMs.length === Math.max(0, r.outputTokenIds.length - 1),
      'must have outputTokens − 1 entries',
    ),
    ['itlMs'],
  ),
);

/**
 * One level of a concurrency sweep (as `vllm bench serve --max-concurrency N`): N requests at once;
 * `requests` sent, `completed` (a failed request counts in `failed`), first start → last end in ms,
 * completed requests and their output tokens per second, and per metric over the completed requests.
 */
export const BenchSweepPointSchema = obj({
  concurrency: num,
  requests: num,
  completed: num,
  failed: num,
  durationMs: num,
  requestThroughput: num,
  outputTokenThroughput: num,
  summary: summaries,
  errors: v.optional(v.array(errorSchema, 'must be an array')),
});

/**
 * The device a result was measured on; `fingerprint` is the stable id of the adapter
 * (src/bench/fingerprint.ts), `label` its human name.
 */
export const BenchDeviceSchema = obj({
  vendor: str,
  architecture: str,
  device: v.optional(str),
  description: str,
  isFallbackAdapter: bool,
  features: v.optional(v.array(str, 'must be an array'), () => []),
  limits: v.optional(v.record(v.string(), num, 'must be an object'), () => ({})),
  userAgent: v.optional(str, ''),
  fingerprint: str,
  label: v.optional(str),
});

/**
 * Memory-bandwidth roofline for decode: measured bandwidth in GB/s (1e9 bytes/s), bytes of weights (and KV
 * cache) read per decoded token, and decode tok/s × bytesPerToken / bandwidth (may exceed 1 when caches
 * help); the measured matmul rate in GFLOP/s and prefill's share of it.
 */
export const BenchRooflineSchema = obj({
  bandwidthGBs: num,
  bytesPerToken: num,
  fraction: num,
  matmulGflops: v.optional(num),
  prefillFraction: v.optional(num),
});

/**
 * "Your CPU": the same model and plan run through llama.cpp's wasm build (wllama) on this machine's CPU
 * after a GPU run (src/bench/cpu-compare.ts). Medians over its measured runs: `ttftMs` (ms),
 * `prefillTokS` and `decodeTokS` (tokens/s); `threads` the wasm threads used, `crossOriginIsolated`
 * whether the page could use more than one (SharedArrayBuffer); `ratio` = GPU ÷ CPU per metric, speeds as
 * GPU rate / CPU rate and TTFT as CPU TTFT / GPU TTFT, so > 1 always means the GPU is faster.
 */
export const CpuComparisonSchema = obj({
  engine: str,
  threads: num,
  crossOriginIsolated: bool,
  runs: num,
  ttftMs: num,
  prefillTokS: num,
  decodeTokS: num,
  ratio: obj({ ttft: num, prefill: num, decode: num }),
  createdAt: v.optional(str),
});

const ISO_DATE = v.pipe(
  str,
  v.check((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO date'),
);
/** A result's load before anything loaded: every time NaN (null in the file). */
export const nanLoad = () => ({
  totalMs: Number.NaN,
  downloadMs: Number.NaN,
  uploadMs: Number.NaN,
  compileMs: Number.NaN,
});

/**
 * What a result knows of its model beside its id, for labels: "Q4_K_M, 60M" (quantization, then the
 * parameter count where `parameters` is given). A remote server's model (quantization 'unknown', 0
 * parameters: `remoteResult`) gives "" rather than "unknown, 0".
 */
export function modelFacts(m: { quantization: string; parameters?: number }): string {
  const parts: string[] = [];
  if (m.quantization && m.quantization !== 'unknown') parts.push(m.quantization);
  if (m.parameters !== undefined && Number.isFinite(m.parameters) && m.parameters > 0)
    parts.push(fmtParams(m.parameters));
  return parts.join(', ');
}

/**
 * A whole benchmark result file. `createdAt` is when the benchmark finished (ISO 8601); `engine` 'webgpu',
 * 'webllm' or 'remote'. `model.quantization` is e.g. 'F32', 'Q4_K_M' or a list of tensor types;
 * `model.synthetic` marks random weights (speed real, text noise); `fits`, `kernels`, `limits`, `kvType`
 * and `contextLength` are what the engine reported (llama-bench's verdict, ModelInfo). `summary` holds, per metric over the
 * measured runs, ttftMs, tpotMs, e2eMs, itlMs (all gaps), prefillTokensPerSecond, decodeTokensPerSecond.
 * `quality` is "CPU match": llama.cpp's greedy tokens for the first prompt fed to our engine teacher-forced,
 * `top1Agreement` the share of positions whose top-1 token equals llama.cpp's; `cpuMatchSkipped` says why
 * there is none where the check was asked for but could not run (llama.cpp crashed on the file, …). Remote engines add
 * `endpoint` (host only, never a key), `sweep` and `partial`. A run stopped by a signal is `partial` with
 * `interrupted: {signal, phase}` (phase: where it stopped, {@link INTERRUPT_PHASES}); one stopped before the
 * model loaded has no runs, no load times (NaN) and a placeholder model and device (`unknown`). One stopped by
 * a failure (a remote server's fault) is `partial` with `error: {code, message}`. llama-bench mode adds `tests`, `llamaBench`,
 * `memory`, `gpu` (GPU time per kernel family) and `cost`. `cpu` is the page's "Your CPU" comparison
 * (optional; files without it are unchanged, so the schema stays version 1). A plan with `draft` adds
 * `speculative` (acceptance, tokens per target pass, speed-up over the same plan without drafting); one
 * with `responseFormat` adds `constrained` (kind and hash).
 */
export const BenchResultSchema = obj({
  schemaVersion: v.literal(1, (issue) => `must be 1, got ${issue.received}`),
  createdAt: ISO_DATE,
  device: BenchDeviceSchema,
  engine: str,
  model: obj({
    id: str,
    architecture: str,
    quantization: str,
    parameters: num,
    bytes: num,
    synthetic: v.optional(bool),
    fits: opaque<FitsVerdict>(),
    kernels: opaque<NonNullable<ModelInfo['kernels']>>(),
    limits: opaque<NonNullable<ModelInfo['limits']>>(),
    kvType: v.optional(v.custom<ModelInfo['kvType']>((x) => isKvType(x), 'must be f16, f32, q8_0 or q4_0')),
    kvTypeV: v.optional(v.custom<ModelInfo['kvTypeV']>((x) => isKvType(x), 'must be f16, f32, q8_0 or q4_0')),
    /** The context the model was loaded with (tokens; ModelInfo.contextLength). */
    contextLength: v.optional(num),
  }),
  load: v.optional(obj({ totalMs: num, downloadMs: num, uploadMs: num, compileMs: num }), nanLoad),
  plan: v.optional(BenchPlanSchema, () => ({
    prompts: [],
    maxTokens: 0,
    runs: 0,
    warmup: 0,
    ignoreEos: false,
  })),
  runs: v.array(BenchRunSchema, 'must be an array'),
  summary: v.optional(summaries, () => ({})),
  roofline: v.optional(BenchRooflineSchema),
  quality: v.optional(obj({ reference: str, top1Agreement: num, positions: num })),
  cpuMatchSkipped: v.optional(str),
  cpu: v.optional(CpuComparisonSchema),
  endpoint: v.optional(
    obj({ host: str, api: v.picklist(['chat', 'completions'], 'must be chat or completions') }),
  ),
  sweep: v.optional(v.array(BenchSweepPointSchema, 'must be an array')),
  partial: v.optional(bool),
  interrupted: v.optional(obj({ signal: str, phase: str })),
  error: v.optional(obj({ code: str, message: str })),
  tests: v.optional(v.custom<LlamaBenchTest[]>(Array.isArray, 'must be an array')),
  llamaBench: opaque<LlamaBenchPlan>(),
  memory: opaque<MemoryProbe>(),
  gpu: opaque<GpuProfile>(),
  cost: opaque<TokenCost>(),
  speculative: v.optional(BenchSpeculativeSchema),
  constrained: v.optional(BenchConstrainedSchema),
});

/**
 * Where an interrupted run stopped (`interrupted.phase`): `start` (building the page, starting Chromium
 * and the page, reading the adapter), `download` (the model into the cache), `cpu-match` (llama.cpp's
 * reference tokens), `load` (the engine loading the model; for a remote server, listing its models),
 * `runs` (warm-up and measured runs), `roofline`, `llama-bench`, `sweep` (a remote concurrency sweep).
 */
export const INTERRUPT_PHASES = [
  'start',
  'download',
  'cpu-match',
  'load',
  'runs',
  'roofline',
  'llama-bench',
  'sweep',
] as const;
export type InterruptPhase = (typeof INTERRUPT_PHASES)[number];

export type BenchPrompt = v.InferOutput<typeof BenchPromptSchema>;
export type BenchPlan = v.InferOutput<typeof BenchPlanSchema>;
export type BenchRun = v.InferOutput<typeof BenchRunSchema>;
export type BenchSweepPoint = v.InferOutput<typeof BenchSweepPointSchema>;
export type BenchDevice = v.InferOutput<typeof BenchDeviceSchema>;
export type BenchRoofline = v.InferOutput<typeof BenchRooflineSchema>;
export type CpuComparison = v.InferOutput<typeof CpuComparisonSchema>;
export type BenchResult = v.InferOutput<typeof BenchResultSchema>;
export type BenchDraft = v.InferOutput<typeof BenchDraftSchema>;
export type BenchSpeculative = v.InferOutput<typeof BenchSpeculativeSchema>;
export type BenchConstrained = v.InferOutput<typeof BenchConstrainedSchema>;

/** `runs[0].itlMs` from a valibot issue path. */
function pathText(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Every problem of a parsed result file, as "path message" lines (empty when it is a valid result). */
export function resultProblems(x: unknown): string[] {
  if (!isObj(x)) return ['not a JSON object'];
  const r = v.safeParse(BenchResultSchema, x, { abortEarly: false });
  return r.success ? [] : r.issues.map((i) => `${pathText(i)} ${i.message}`.trim());
}

/**
 * A parsed result file checked and its defaults filled in (the summary is left empty when missing).
 * @throws TypeError naming the first problem, prefixed by `where` ("result 2.runs[0].ttftMs must be a number").
 */
export function parseResult(x: unknown, where = 'result'): BenchResult {
  if (!isObj(x)) throw new TypeError(`${where} is not an object`);
  const r = v.safeParse(BenchResultSchema, x);
  if (!r.success) {
    const p = pathText(r.issues[0]);
    throw new TypeError(`${where}${p ? (p.startsWith('[') ? p : `.${p}`) : ''} ${r.issues[0].message}`);
  }
  return r.output;
}
