/**
 * The command line of `npm run bench` (src/cli/bench.ts): its usage text ({@link BENCH_USAGE}), the parsed
 * arguments ({@link BenchArgs}) and the parser ({@link parseBenchArgs}), which reads and checks every flag
 * before anything runs: a bad number, an unknown engine or prompt set, a missing model file or a `--headed`
 * without a display is refused here, as a {@link UsageError} (exit 2) or an EngineError('invalid_argument').
 * `--engine remote` never reaches this parser: src/cli/remote.ts has its own.
 */

import { existsSync, readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { DEFAULT_PLAN, defaultPlanText } from '../bench/default-plan.ts';
import type { BenchModelSpec } from '../bench/page-api.ts';
import { isPromptSetName, parsePromptsFile, promptsFor } from '../bench/prompts.ts';
import type { BenchPlan, BenchPrompt } from '../bench/types.ts';
import type { KvType, SamplingParams } from '../core/types.ts';
import { findStories260K } from '../testing/models.ts';
import { parseSyntheticName, SYNTHETIC_FTYPES, SYNTHETIC_SHAPES } from '../webgpu/model/synthetic.ts';
import {
  CHROMIUM_OPTIONS,
  CHROMIUM_USAGE,
  chromiumArg,
  draftArgs,
  intArg,
  isUsageError,
  KV_TYPE_OPTIONS,
  KV_TYPE_USAGE,
  kvTypesArg,
  numArg,
  optIntArg,
  parseCliArgs,
  responseFormatArg,
  SAMPLING_FLAGS,
  samplingArgs,
  secondsArg,
  UsageError,
} from './args.ts';
import { LLAMA_BENCH_OPTIONS, LLAMA_BENCH_USAGE, llamaBenchOptions } from './llama-bench-args.ts';
import { checkLocalModel } from './local-model.ts';
import { CACHE_OPTIONS, CACHE_USAGE, isRemoteModel, modelUrl } from './model-cache.ts';

/** The indent of an option's description in the usage text. */
const OPT_INDENT = ' '.repeat(36);

/** `text` broken at spaces into lines of at most `width` columns, each starting with `indent`. */
export function wrapWords(text: string, indent: string, width = 108): string {
  const lines: string[] = [];
  let line = '';
  for (const w of text.split(' ')) {
    if (line && indent.length + line.length + 1 + w.length > width) {
      lines.push(indent + line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(indent + line);
  return lines.join('\n');
}

/** `npm run bench -- --help`: every option of the page benchmark. */
export const BENCH_USAGE = `usage: npm run bench -- [options]

  --model PATH|URL|hf:OWNER/REPO/FILE.gguf[@REV]|synthetic:SHAPE-TYPE
                                    GGUF file (a split model: its first part), GGUF URL or Hugging Face file
                                    (downloaded once into the cache, see --cache-dir), or a synthetic model:
                                    real shapes, random weights made on the GPU; SHAPE:
${wrapWords(SYNTHETIC_SHAPES.map((s) => s.id).join(', '), OPT_INDENT)};
                                    TYPE:
${wrapWords(`${SYNTHETIC_FTYPES.join(', ')}.`, OPT_INDENT)}
                                    Default: stories260K.gguf ($STORIES260K, else models/, else
                                    ../shared/models/; \`npm run setup\` fetches it) if present, else
                                    synthetic:stories260k-f32 (the same shapes).
  --engine webgpu|wllama|webllm|remote
                                    the engine (wllama: llama.cpp's wasm build on the CPU, a GGUF file;
                                    webllm: --model is a WebLLM prebuilt id, needs network;
                                    remote: an OpenAI-compatible server; --engine remote --help)
  --prompt TEXT                     one custom prompt
  --prompts FILE|SET                a prompts file (JSON array, or one prompt per line) or a built-in set:
                                    short, medium, long, all (default: ${DEFAULT_PLAN.promptSet})
  --max-tokens N                    new tokens per run (default ${DEFAULT_PLAN.maxTokens})
  --runs N                          measured runs per prompt (default ${DEFAULT_PLAN.runs})
  --warmup N                        warm-up runs, not counted (default ${DEFAULT_PLAN.warmup})
  --ignore-eos                      decode exactly --max-tokens tokens
  --temperature T                   sampling temperature (default 0 = greedy); with the flags below, applied
                                    in llama.cpp's chain order and recorded in the result's plan.sampling
  --top-k K                         keep the K most likely tokens (0 = off)
  --top-p P                         nucleus: the smallest set with probability ≥ P (0 < P ≤ 1; 1 = off)
  --min-p P                         drop tokens below P × the top probability (0 ≤ P ≤ 1; 0 = off)
  --repeat-penalty R                penalty on recently seen tokens (> 0; 1 = off)
  --seed S                          seed of the sampler's draws (an integer)
  --ctx N                           context length (KV cache) in tokens
  ${KV_TYPE_USAGE}; recorded in the
                                    result's model.kvType and model.kvTypeV
  --default-limits                  request only WebGPU's default limits (128 MiB bindings, 8 storage
                                    buffers per stage), as a phone or integrated GPU may grant them; the
                                    result's model.limits records the limits used
  --draft PATH|URL|hf:…|synthetic:… speculative decoding with this draft model (a smaller GGUF with the
                                    target's vocabulary, loaded beside it; greedy plans): every measured run
                                    drafts, then the same runs again without drafting (the baseline, on the
                                    same load); the result's speculative block has the acceptance rate,
                                    tokens per target pass and the decode speed-up over the baseline
  --lookup                          the same with prompt-lookup drafting (no second model)
  --draft-max N                     most tokens drafted per target pass, 1..16 (default: the engine's)
  --json-schema FILE                every run constrained to the JSON schema in FILE; the result's
                                    constrained block names the kind and the schema's hash, so constrained
                                    and free runs are never compared as the same
  --grammar FILE                    the same with the EBNF/GBNF grammar in FILE
  --json FILE                       write the result (schemaVersion 1) to FILE
${CHROMIUM_USAGE}
  --gpu                             Chromium flags for a hardware GPU (Linux: Vulkan; macOS: ANGLE on Metal);
                                    a software adapter (SwiftShader, llvmpipe, isFallbackAdapter) then fails
                                    the run (exit 1)
  --allow-software                  with --gpu, run on a software adapter anyway (its figures measure the CPU)
  --headed                          open a Chromium window instead of headless (on a Linux GPU runner, under
                                    xvfb-run: adapter selection can differ from headless; docs/gpu-ci.md)
  --no-roofline                     skip the bandwidth and matmul measurements
  --no-cpu-match                    skip llama.cpp's greedy reference run (the result's quality block)
  --fail-under-decode-tps X         exit 3 when the median decode tokens/s is below X
  --fail-over-ttft-ms X             exit 3 when the median TTFT is above X ms
  --junit FILE                      write a JUnit XML report to FILE: a test case for the run and one per
                                    threshold (a missed one is a <failure> with the measured figure); a failed
                                    run (exit 1) still writes one, with an <error>
  --summary-md FILE                 append a Markdown table (model, device, adapter kind, medians, thresholds
                                    ✓/✗) to FILE, e.g. "$GITHUB_STEP_SUMMARY"; appended, never overwritten
  --timeout-s N                     bound on the model load and on each request (default 600)
  --verbose                         print Vite's own lines (its warnings) on stderr when the page is rebuilt;
                                    without it a rebuild says only how many warnings it had
${CACHE_USAGE}
${LLAMA_BENCH_USAGE}

${wrapWords(`The default plan (${defaultPlanText()}) is the benchmark page's default too (src/bench/default-plan.ts), so their figures compare.`, '')}

Exit status: 0 done, 1 failed, 2 bad arguments, 3 a threshold was missed, 130 interrupted (143 for SIGTERM:
--json gets the runs measured so far, or none before the model loaded, marked partial with the phase it
stopped in, and --junit holds an aborted error).`;

/** Default model: the test model where src/testing/models.ts finds it (undefined when missing). */
const DEFAULT_MODEL = findStories260K();
/** Default model when that file is missing: its shapes, random weights made on the GPU. */
const DEFAULT_SYNTHETIC = 'synthetic:stories260k-f32';

/** The parsed command line. */
export interface BenchArgs {
  model: {
    spec: BenchModelSpec;
    localPath?: string;
    note?: string;
    remote?: string;
    /**
     * A local file that is not a GGUF model (checkLocalModel's EngineError): a failed run, not a usage error,
     * so main() throws it at the run's start, before Chromium, and the JUnit and summary files still say so.
     */
    unusable?: unknown;
  };
  /** The model cache: a directory, or off (--no-cache). */
  cache: { dir?: string; enabled: boolean };
  engine: string;
  plan: BenchPlan;
  contextLength?: number;
  /** Request only the WebGPU spec's default limits (--default-limits). */
  defaultLimits: boolean;
  /** KV-cache element type (--kv-type); undefined = the engine's default (f16). */
  kvType?: KvType;
  /** The K or V cache's type apart (--kv-type-k, --kv-type-v). */
  kvTypeK?: KvType;
  kvTypeV?: KvType;
  json?: string;
  /** --chromium PATH (or its alias --browser). */
  browser?: string;
  gpu: boolean;
  /** Print Vite's output when the page is rebuilt (--verbose). */
  verbose: boolean;
  roofline: boolean;
  /** Score our top-1 against llama.cpp's greedy tokens (local GGUF files; --no-cpu-match turns it off). */
  cpuMatch: boolean;
  failUnderDecodeTps?: number;
  failOverTtftMs?: number;
  /** Run on a software adapter even with --gpu (--allow-software). */
  allowSoftware: boolean;
  /** Launch Chromium with a window (--headed; under xvfb-run on a display-less Linux runner). */
  headed: boolean;
  /** --junit FILE: the JUnit XML report (written, also for a failed run). */
  junit?: string;
  /** --summary-md FILE: the Markdown summary (appended). */
  summaryMd?: string;
  timeoutMs: number;
  /** --draft: the draft model of a `draft: {type: 'model'}` plan (resolved as --model is). */
  draftModel?: { spec: BenchModelSpec; localPath?: string; remote?: string; unusable?: unknown };
  /** --llama-bench, the memory probe, the cost flags (src/cli/llama-bench-args.ts). */
  part2: ReturnType<typeof llamaBenchOptions>;
}

/**
 * Reads `npm run bench`'s command line ('help' for `--help`). Every number is read first, so a bad one is a
 * usage error whatever else is wrong; then the model, the engine, the prompts and the CI files.
 * @throws UsageError for bad arguments (exit 2); EngineError('invalid_argument') for a missing model file.
 */
export function parseBenchArgs(argv: string[]): BenchArgs | 'help' {
  const { values } = parseCliArgs({
    args: argv,
    allowPositionals: false,
    options: {
      model: { type: 'string' },
      engine: { type: 'string', default: 'webgpu' },
      prompt: { type: 'string' },
      prompts: { type: 'string' },
      'max-tokens': { type: 'string' },
      runs: { type: 'string' },
      warmup: { type: 'string' },
      'ignore-eos': { type: 'boolean', default: false },
      ctx: { type: 'string' },
      'default-limits': { type: 'boolean', default: false },
      ...KV_TYPE_OPTIONS,
      temperature: { type: 'string' },
      'top-k': { type: 'string' },
      'top-p': { type: 'string' },
      'min-p': { type: 'string' },
      'repeat-penalty': { type: 'string' },
      seed: { type: 'string' },
      draft: { type: 'string' },
      lookup: { type: 'boolean', default: false },
      'draft-max': { type: 'string' },
      'json-schema': { type: 'string' },
      grammar: { type: 'string' },
      json: { type: 'string' },
      ...CHROMIUM_OPTIONS,
      verbose: { type: 'boolean', default: false },
      gpu: { type: 'boolean', default: false },
      'allow-software': { type: 'boolean', default: false },
      headed: { type: 'boolean', default: false },
      junit: { type: 'string' },
      'summary-md': { type: 'string' },
      'no-roofline': { type: 'boolean', default: false },
      'no-cpu-match': { type: 'boolean', default: false },
      'fail-under-decode-tps': { type: 'string' },
      'fail-over-ttft-ms': { type: 'string' },
      'timeout-s': { type: 'string' },
      ...CACHE_OPTIONS,
      help: { type: 'boolean', short: 'h', default: false },
      ...LLAMA_BENCH_OPTIONS,
    },
  });
  if (values.help) return 'help';

  // Every number first: a bad one is a usage error (exit 2) whatever else is wrong.
  const numbers = {
    maxTokens: intArg(values['max-tokens'], 'max-tokens', 1, DEFAULT_PLAN.maxTokens),
    runs: intArg(values.runs, 'runs', 1, DEFAULT_PLAN.runs),
    warmup: intArg(values.warmup, 'warmup', 0, DEFAULT_PLAN.warmup),
    contextLength: optIntArg(values.ctx, 'ctx', 1),
    failUnderDecodeTps: numArg(values['fail-under-decode-tps'], 'fail-under-decode-tps', { min: 0 }),
    failOverTtftMs: numArg(values['fail-over-ttft-ms'], 'fail-over-ttft-ms', { min: 0 }),
    timeoutS: secondsArg(values['timeout-s'], 'timeout-s') ?? 600,
    // The engine API's own rules (src/core/validate.ts SAMPLING_RULES), as generate and the page read them.
    sampling: samplingArgs(values),
    part2: llamaBenchOptions(values),
    draft: draftArgs(values),
  };
  const { kvType, kvTypeK, kvTypeV } = kvTypesArg(values);
  const sampling: SamplingParams | undefined =
    Object.keys(numbers.sampling).length > 0 ? numbers.sampling : undefined;
  if (sampling && numbers.part2.llamaBench) {
    const flags = Object.keys(SAMPLING_FLAGS)
      .filter((f) => values[f as keyof typeof SAMPLING_FLAGS] !== undefined)
      .map((f) => `--${f}`);
    throw new UsageError(
      `${flags.join(', ')} appl${flags.length === 1 ? 'ies' : 'y'} to the prompt plan; --llama-bench's tg tests decode greedily, as llama-bench does`,
    );
  }

  if (values['fail-over-ttft-ms'] !== undefined && numbers.part2.llamaBench)
    throw new UsageError(
      "--fail-over-ttft-ms holds the prompt plan's TTFT; --llama-bench's pp/tg tests measure none: gate them with --fail-under-decode-tps (their slowest tg test), or leave --llama-bench out",
    );

  const model = benchModel(values.engine, values.model);
  const responseFormat = responseFormatArg(values['json-schema'], values.grammar);
  const draftModel = values.draft !== undefined ? benchModel('webgpu', values.draft, '--draft') : undefined;

  // `--engine remote` never gets here: bench.ts main() hands it to src/cli/remote.ts first (isRemoteArgv).
  const engine = values.engine ?? 'webgpu';
  if (engine !== 'webgpu' && engine !== 'wllama' && engine !== 'webllm')
    throw new UsageError(`unknown --engine ${engine} (webgpu, wllama, webllm, remote)`);

  const prompts = benchPrompts(values.prompt, values.prompts);
  // Drafting and constraints are our engine's (the page's webgpu engine); llama-bench's tests use neither.
  const extras = [
    ...(numbers.draft ? [values.lookup ? '--lookup' : '--draft'] : []),
    ...(responseFormat ? [values.grammar !== undefined ? '--grammar' : '--json-schema'] : []),
  ];
  if (extras.length > 0 && engine !== 'webgpu')
    throw new UsageError(`${extras.join(' and ')} run only on --engine webgpu, not ${engine}`);
  if (extras.length > 0 && numbers.part2.llamaBench)
    throw new UsageError(
      `${extras.join(' and ')} appl${extras.length === 1 ? 'ies' : 'y'} to the prompt plan, not to --llama-bench's tests`,
    );

  if (values['no-cache'] && values['cache-dir'])
    throw new UsageError('give --cache-dir or --no-cache, not both');
  if (values.headed && process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)
    throw new UsageError(
      '--headed needs a display and none is set ($DISPLAY): run it under Xvfb, e.g. xvfb-run -a npm run bench -- --headed …',
    );
  if (values.junit === '') throw new UsageError('--junit is empty: give the file to write');
  if (values['summary-md'] === '')
    throw new UsageError('--summary-md is empty: give the file to append to (is $GITHUB_STEP_SUMMARY set?)');
  return {
    model,
    cache: { dir: values['cache-dir'], enabled: !values['no-cache'] },
    engine,
    plan: {
      prompts,
      maxTokens: numbers.maxTokens,
      runs: numbers.runs,
      warmup: numbers.warmup,
      ignoreEos: values['ignore-eos'] || DEFAULT_PLAN.ignoreEos,
      ...(sampling ? { sampling } : {}),
      ...(numbers.draft
        ? {
            draft: {
              ...numbers.draft,
              ...(draftModel ? { model: modelName(draftModel.spec) } : {}),
            },
          }
        : {}),
      ...(responseFormat ? { responseFormat } : {}),
    },
    ...(draftModel ? { draftModel } : {}),
    contextLength: numbers.contextLength,
    defaultLimits: values['default-limits'] ?? false,
    kvType,
    kvTypeK,
    kvTypeV,
    json: values.json,
    browser: chromiumArg(values),
    gpu: values.gpu ?? false,
    verbose: values.verbose ?? false,
    roofline: !values['no-roofline'],
    cpuMatch: !values['no-cpu-match'],
    failUnderDecodeTps: numbers.failUnderDecodeTps,
    failOverTtftMs: numbers.failOverTtftMs,
    allowSoftware: values['allow-software'] ?? false,
    headed: values.headed ?? false,
    junit: values.junit,
    summaryMd: values['summary-md'],
    timeoutMs: numbers.timeoutS * 1000,
    part2: numbers.part2,
  };
}

/**
 * `--model` for `--engine`: a WebLLM prebuilt id, the default model (the test model, else its synthetic
 * twin), a synthetic model, a URL or `hf:` file (downloaded into the cache later, in bench.ts), or a local
 * file, which must exist.
 * @throws UsageError for a bad model name; EngineError('invalid_argument') for a missing local file.
 */
function benchModel(engine: string | undefined, m: string | undefined, flag = '--model'): BenchArgs['model'] {
  if (engine === 'webllm') {
    // A WebLLM prebuilt model id (src/webllm/): the page's WebLLM worker fetches it.
    if (!m || m.startsWith('synthetic:'))
      throw new UsageError('--engine webllm needs --model ID, e.g. Llama-3.2-1B-Instruct-q4f32_1-MLC');
    return { spec: { url: `webllm:${m}`, id: m } };
  }
  if (m === undefined) {
    return DEFAULT_MODEL
      ? {
          spec: { url: '', id: basename(DEFAULT_MODEL) },
          localPath: DEFAULT_MODEL,
          note: `default model (no --model given): ${DEFAULT_MODEL}`,
        }
      : {
          spec: { synthetic: DEFAULT_SYNTHETIC },
          note: `default model (no --model given, stories260K.gguf not found: $STORIES260K, models/, ../shared/models/; \`npm run setup\` fetches it): ${DEFAULT_SYNTHETIC}, the same shapes with random weights`,
        };
  }
  if (m.startsWith('synthetic:')) {
    try {
      parseSyntheticName(m);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    return { spec: { synthetic: m } };
  }
  if (isRemoteModel(m)) {
    // Downloaded into the cache in main() (unless --no-cache); hf: resolved now for a clear usage error.
    let url: string;
    try {
      url = modelUrl(m);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    return { spec: { url, id: m }, remote: m };
  }
  const p = resolve(m);
  let unusable: unknown;
  try {
    checkLocalModel(p, flag === '--model' ? m : `${m} (${flag})`);
  } catch (e) {
    if (isUsageError(e)) throw e;
    unusable = e;
  }
  return { spec: { url: '', id: basename(p) }, localPath: p, ...(unusable ? { unusable } : {}) };
}

/** A model spec's name in results: a synthetic name, else its id or URL. */
function modelName(spec: BenchModelSpec): string {
  if ('synthetic' in spec) return spec.synthetic;
  if ('blob' in spec) return spec.id;
  return spec.id ?? spec.url;
}

/**
 * The prompts of `--prompt TEXT` or `--prompts FILE|SET` (one of them at most), else the default plan's set.
 * @throws UsageError for both flags, an empty prompt, an unreadable file or an unknown set.
 */
function benchPrompts(prompt: string | undefined, set: string | undefined): BenchPrompt[] {
  if (prompt !== undefined && set !== undefined) throw new UsageError('give --prompt or --prompts, not both');
  if (prompt !== undefined) {
    if (prompt === '') throw new UsageError('--prompt is empty');
    return promptsFor('custom', prompt);
  }
  if (set === undefined) return promptsFor(DEFAULT_PLAN.promptSet);
  if (existsSync(set)) {
    try {
      return parsePromptsFile(readFileSync(set, 'utf8'));
    } catch (e) {
      throw new UsageError(`cannot read prompts from ${set}: ${(e as Error).message}`);
    }
  }
  if (set === 'all' || isPromptSetName(set)) return promptsFor(set);
  throw new UsageError(`--prompts ${set}: no such file, and not a built-in set (short, medium, long, all)`);
}
