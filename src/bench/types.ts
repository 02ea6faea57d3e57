/**
 * The benchmark's data: a plan, per-run results and the JSON file format (`schemaVersion: 1`). The page,
 * `npm run bench` and `npm run bench:report` all read and write these shapes.
 * Metric definitions follow vLLM's `bench serve` (see src/core/metrics.ts).
 */

import type { Summary } from '../core/metrics.ts';
import type { ModelInfo, SamplingParams } from '../core/types.ts';
import type {
  FitsVerdict,
  GpuProfile,
  LlamaBenchPlan,
  LlamaBenchTest,
  MemoryProbe,
  TokenCost,
} from './llama-bench.ts';

/** One prompt of a plan. */
export interface BenchPrompt {
  /** Short label, e.g. 'short-1'. */
  name: string;
  text: string;
}

/** What to run. Warm-up runs are not counted in results. */
export interface BenchPlan {
  prompts: BenchPrompt[];
  /** New tokens per run. */
  maxTokens: number;
  /** Measured runs per prompt. */
  runs: number;
  /** Warm-up runs before the measured ones (on the first prompt). */
  warmup: number;
  /** Keep decoding past EOS (fixed-length decode). */
  ignoreEos: boolean;
  /** Sampling; greedy when absent. */
  sampling?: SamplingParams;
}

/** One measured request. Times in ms, rates in tokens/s. */
export interface BenchRun {
  prompt: string;
  promptName?: string;
  promptTokens: number;
  outputTokens: number;
  outputTokenIds: number[];
  text: string;
  ttftMs: number;
  /** Gaps between successive output tokens [outputTokens − 1]. */
  itlMs: number[];
  tpotMs: number;
  e2eMs: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** Figures the engine reports itself (e.g. WebLLM's usage.extra), kept apart from ours. */
  engineReported?: Record<string, number>;
  /** How outputTokens was counted (remote engines): the server's usage, a tokenizer, or chunks (approximate). */
  tokenCount?: 'ids' | 'usage' | 'tokenizer' | 'chunks';
  /** True when outputTokens is an estimate (a server without usage and no tokenizer: one token per chunk). */
  approximate?: boolean;
  /** Set on a request that failed part-way: what was received before the fault is kept, marked partial. */
  partial?: boolean;
  error?: { code: string; message: string };
}

/** One level of a concurrency sweep (as `vllm bench serve --max-concurrency N`): N requests at once. */
export interface BenchSweepPoint {
  concurrency: number;
  /** Requests sent and completed (a failed request counts in `failed`, not here). */
  requests: number;
  completed: number;
  failed: number;
  /** First request start → last request end, ms. */
  durationMs: number;
  /** Completed requests per second. */
  requestThroughput: number;
  /** Output tokens of completed requests per second. */
  outputTokenThroughput: number;
  /** Per metric over the completed requests (ttftMs, tpotMs, itlMs, e2eMs). */
  summary: Record<string, Summary>;
  errors?: { code: string; message: string }[];
}

/** The device a result was measured on. */
export interface BenchDevice {
  vendor: string;
  architecture: string;
  device?: string;
  description: string;
  isFallbackAdapter: boolean;
  features: string[];
  limits: Record<string, number>;
  userAgent: string;
  /** Stable id of the adapter (src/bench/fingerprint.ts). */
  fingerprint: string;
  /** Human label for the fingerprint. */
  label?: string;
}

/** Memory-bandwidth roofline for decode. */
export interface BenchRoofline {
  /** Measured device memory bandwidth, GB/s (1e9 bytes/s). */
  bandwidthGBs: number;
  /** Bytes of weights (and KV cache) read per decoded token. */
  bytesPerToken: number;
  /** decode tok/s × bytesPerToken / bandwidth, in [0, 1] (may exceed 1 when caches help). */
  fraction: number;
  /** Measured matmul throughput, GFLOP/s, and prefill's fraction of it. */
  matmulGflops?: number;
  prefillFraction?: number;
}

/** A whole benchmark result file. */
export interface BenchResult {
  schemaVersion: 1;
  /** ISO 8601 time the benchmark finished. */
  createdAt: string;
  device: BenchDevice;
  /** 'webgpu' | 'webllm' | 'remote'. */
  engine: string;
  model: {
    id: string;
    architecture: string;
    /** e.g. 'F32', 'Q4_K_M' or a list of tensor types. */
    quantization: string;
    parameters: number;
    bytes: number;
    /** True for synthetic models (random weights: speed is real, text is noise). */
    synthetic?: boolean;
    /** Whether it fits this adapter at the loaded context (llama-bench mode / memory probe). */
    fits?: FitsVerdict;
    /** The decode kernels that ran and how their layout was chosen (ModelInfo.kernels). */
    kernels?: ModelInfo['kernels'];
    /** The device limits the engine planned with; `defaultLimits` where only the spec's were asked. */
    limits?: ModelInfo['limits'];
    /** The KV-cache element type the engine ran (ModelInfo.kvType; `--kv-type`): 'f16' or 'f32'. */
    kvType?: ModelInfo['kvType'];
  };
  load: { totalMs: number; downloadMs: number; uploadMs: number; compileMs: number };
  plan: BenchPlan;
  runs: BenchRun[];
  /** Per metric over measured runs: ttftMs, tpotMs, e2eMs, itlMs (all gaps), prefillTokensPerSecond, decodeTokensPerSecond. */
  summary: Record<string, Summary>;
  roofline?: BenchRoofline;
  /**
   * Quality beside speed ("CPU match"): llama.cpp's greedy tokens for the first prompt are fed to our engine
   * teacher-forced, and `top1Agreement` is the share of those positions where our top-1 token equals
   * llama.cpp's (≥ 0.98 for quantized files here, 1 for F32/F16).
   */
  quality?: { reference: string; top1Agreement: number; positions: number };
  /** Remote engines: the endpoint (host only, never a key) and the API used. */
  endpoint?: { host: string; api: 'chat' | 'completions' };
  /** Remote engines: the concurrency sweep, one point per level. */
  sweep?: BenchSweepPoint[];
  /** True when some runs failed part-way (their runs carry `partial` and `error`). */
  partial?: boolean;
  /** llama-bench style tests (`--llama-bench`): pp/tg at KV depths. */
  tests?: LlamaBenchTest[];
  /** The llama-bench plan that produced `tests`. */
  llamaBench?: LlamaBenchPlan;
  /** Adapter buffer limits and allocatable memory. */
  memory?: MemoryProbe;
  /** Where the time goes: GPU time per kernel family (timestamp-query), busy fraction. */
  gpu?: GpuProfile;
  /** What a token costs at the measured decode speed. */
  cost?: TokenCost;
}
