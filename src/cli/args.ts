/**
 * Number arguments of the command lines, read strictly (src/core/validate.ts's parseDecimal /
 * parseInteger: `abc`, `NaN`, `""`, `0x10`, ` 5` are refused, never read as 0 or NaN), and the error that
 * means "bad arguments" (exit 2, see src/cli/run.ts). Every command's numeric flags go through these.
 */

import { accessSync, closeSync, constants, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { tokensPerTargetPass } from '../core/metrics.ts';
import type {
  GenerateRequest,
  GenerateResult,
  KvType,
  LoadOptions,
  ResponseFormat,
  SamplingParams,
} from '../core/types.ts';
import {
  DRAFT_LIMITS,
  describeRule,
  isJsonSchemaValue,
  isKvType,
  KV_TYPES,
  type NumberRule,
  readRuleText,
  SAMPLING_RULES,
} from '../core/validate.ts';

/** A bad command-line argument: the commands print its message and exit 2. */
export class UsageError extends Error {}

/** True for a {@link UsageError} or a Node `parseArgs` error (unknown option, missing value, …). */
export function isUsageError(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return e instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_'));
}

/**
 * Node's `parseArgs`, except that a number starting with '-' after a string option (`--runs -1`,
 * `--seed -5`) is that option's value, as people type it (parseArgs alone calls it ambiguous and
 * suggests `--runs=-1`); the option's own rule (ruleArg) then accepts or refuses it by name.
 * Arguments after `--` are left alone.
 * @throws Node's parseArgs errors (ERR_PARSE_ARGS_*), which {@link isUsageError} recognises.
 */
export function parseCliArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const args = config.args ?? process.argv.slice(2);
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    const opt = a.startsWith('--') && !a.includes('=') ? config.options?.[a.slice(2)] : undefined;
    const next = args[i + 1];
    if (opt?.type === 'string' && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return parseArgs({ ...config, args: out }) as ReturnType<typeof parseArgs<T>>;
}

/** The longest timer Node and browsers honour (2^31 − 1 ms); a larger one fires at once. */
export const MAX_TIMEOUT_S = Math.floor((2 ** 31 - 1) / 1000);

/**
 * `--name` read strictly and checked against `rule` (an integer rule reads decimal digits only), or
 * undefined when absent.
 * @throws UsageError `--name must be <rule>, got "<v>"` for anything else (including an empty string).
 */
export function ruleArg(v: string | undefined, name: string, rule: NumberRule): number | undefined {
  if (v === undefined) return undefined;
  const n = readRuleText(v, rule);
  if (n === undefined) throw new UsageError(`--${name} must be ${describeRule(rule)}, got "${v}"`);
  return n;
}

/**
 * `--name` as an integer in [`min`, `max`], or `def` when absent.
 * @throws UsageError for anything else.
 */
export function intArg(v: string | undefined, name: string, min: number, def: number, max?: number): number {
  return ruleArg(v, name, { integer: true, min, max }) ?? def;
}

/** {@link intArg} without a default: undefined when absent. */
export function optIntArg(
  v: string | undefined,
  name: string,
  min: number,
  max?: number,
): number | undefined {
  return ruleArg(v, name, { integer: true, min, max });
}

/**
 * `--name` as a finite number, or undefined when absent; `positive`: > 0; `min` / `max`: inclusive bounds.
 * @throws UsageError for anything else.
 */
export function numArg(
  v: string | undefined,
  name: string,
  opts: { positive?: boolean; min?: number; max?: number } = {},
): number | undefined {
  return ruleArg(v, name, { min: opts.min, max: opts.max, above: opts.positive ? 0 : undefined });
}

/** `--name` in seconds, as a timeout: a number > 0 and ≤ {@link MAX_TIMEOUT_S}, or undefined. */
export function secondsArg(v: string | undefined, name: string): number | undefined {
  return numArg(v, name, { positive: true, max: MAX_TIMEOUT_S });
}

/**
 * `--name` as a comma list of integers ≥ `min` (`512,1024`), or `def` when absent.
 * @throws UsageError for an empty list or a bad item.
 */
export function intListArg(v: string | undefined, name: string, min: number, def: number[]): number[] {
  if (v === undefined) return def;
  const xs = v.split(',').map((s) => readRuleText(s.trim(), { integer: true, min }));
  if (xs.some((x) => x === undefined))
    throw new UsageError(`--${name} must be integers ≥ ${min} separated by commas, got "${v}"`);
  return xs as number[];
}

/** The sampling flags of `generate` and the request field each sets. */
export const SAMPLING_FLAGS = {
  temperature: 'temperature',
  seed: 'seed',
  'top-k': 'topK',
  'top-p': 'topP',
  'min-p': 'minP',
  'repeat-penalty': 'repetitionPenalty',
} as const satisfies Record<string, keyof SamplingParams>;

/**
 * The sampling flags that are set, read by the engine API's own rules (src/core/validate.ts
 * SAMPLING_RULES), so the command line and the API accept exactly the same values.
 * @throws UsageError naming the flag.
 */
export function samplingArgs(values: Partial<Record<keyof typeof SAMPLING_FLAGS, string>>): SamplingParams {
  const out: SamplingParams = {};
  for (const [flag, field] of Object.entries(SAMPLING_FLAGS) as [
    keyof typeof SAMPLING_FLAGS,
    keyof SamplingParams,
  ][]) {
    const n = ruleArg(values[flag], flag, SAMPLING_RULES[field]);
    if (n !== undefined) out[field] = n;
  }
  return out;
}

/** What `--kv-type` (and `--kv-type-k/-v`) say in every command's usage. */
export const KV_TYPE_USAGE = `--kv-type f16|f32|q8_0|q4_0       KV-cache element type (default f16, as llama.cpp's; f32 takes
                                    twice the memory and bandwidth; q8_0 34 bytes per 32 values, q4_0 18,
                                    quantized as each token is written, as llama.cpp's -ctk/-ctv; needs a
                                    head size that is a multiple of 32)
  --kv-type-k T, --kv-type-v T      the K or the V cache's type apart (over --kv-type)`;

/** parseArgs options of {@link kvTypesArg}. */
export const KV_TYPE_OPTIONS = {
  'kv-type': { type: 'string' },
  'kv-type-k': { type: 'string' },
  'kv-type-v': { type: 'string' },
} as const;

/**
 * A `--kv-type` value (LoadOptions.kvType): f16, f32, q8_0 or q4_0, or undefined when absent (the engine's
 * default, f16).
 * @throws UsageError `--kv-type must be f16, f32, q8_0 or q4_0, got "<v>"` for anything else (`F16`, `q5_0`,
 *   `""`), naming `flag`.
 */
export function kvTypeArg(v: string | undefined, flag = '--kv-type'): KvType | undefined {
  if (v === undefined) return undefined;
  if (!isKvType(v)) throw new UsageError(`${flag} must be ${kvTypeList()}, got "${v}"`);
  return v;
}

function kvTypeList(): string {
  return `${KV_TYPES.slice(0, -1).join(', ')} or ${KV_TYPES[KV_TYPES.length - 1]}`;
}

/**
 * `--kv-type`, `--kv-type-k`, `--kv-type-v` as LoadOptions' kvType, kvTypeK, kvTypeV (only those given).
 * @throws UsageError for a value that is not a KV type.
 */
export function kvTypesArg(values: {
  'kv-type'?: string;
  'kv-type-k'?: string;
  'kv-type-v'?: string;
}): Pick<LoadOptions, 'kvType' | 'kvTypeK' | 'kvTypeV'> {
  const kvType = kvTypeArg(values['kv-type']);
  const kvTypeK = kvTypeArg(values['kv-type-k'], '--kv-type-k');
  const kvTypeV = kvTypeArg(values['kv-type-v'], '--kv-type-v');
  return { ...(kvType ? { kvType } : {}), ...(kvTypeK ? { kvTypeK } : {}), ...(kvTypeV ? { kvTypeV } : {}) };
}

/**
 * parseArgs options for the Chromium to use: `--chromium PATH`, the name every command documents, and
 * `--browser PATH`, its alias (the name `bench` used first).
 */
export const CHROMIUM_OPTIONS = {
  chromium: { type: 'string' },
  browser: { type: 'string' },
} as const;

/** Usage lines for {@link CHROMIUM_OPTIONS}. */
export const CHROMIUM_USAGE = `  --chromium PATH                   Chromium to use (else CHROMIUM_PATH, a Playwright-managed one,
                                    /usr/bin/chromium)
  --browser PATH                    alias of --chromium`;

/**
 * The Chromium path given by `--chromium` or its alias `--browser`, or undefined when neither is set.
 * @throws UsageError when both are given with different paths.
 */
export function chromiumArg(values: { chromium?: string; browser?: string }): string | undefined {
  const { chromium, browser } = values;
  if (chromium !== undefined && browser !== undefined && chromium !== browser)
    throw new UsageError(
      `--browser is an alias of --chromium; give one of them, not both ("${chromium}", "${browser}")`,
    );
  return chromium ?? browser;
}

/** The speculative-decoding flags of `generate` (GenerateRequest.draft, LoadOptions.draft). */
export const DRAFT_USAGE = `  --draft PATH|URL|hf:…|synthetic:… speculative decoding with a draft model: a smaller GGUF
                                    with the target's vocabulary drafts, the target verifies each draft in
                                    one pass; greedy output is plain greedy's, sampled output follows the
                                    target's distribution; stderr gets the acceptance and tokens per pass
  --lookup                          speculative decoding by prompt lookup instead (no second model): drafts
                                    from n-grams of the prompt and the output so far
  --draft-max N                     most tokens drafted per pass, 1..16 (default 8 with --lookup, 4 with
                                    --draft; adapted to the acceptance rate)`;

/**
 * `--draft`, `--lookup` and `--draft-max N` as GenerateRequest.draft (undefined without either).
 * @throws UsageError for --draft-max out of 1..16 or without either, or both --draft and --lookup.
 */
export function draftArgs(values: {
  draft?: string;
  lookup?: boolean;
  'draft-max'?: string;
}): GenerateRequest['draft'] {
  const draftMax = optIntArg(values['draft-max'], 'draft-max', 1, DRAFT_LIMITS.draftMax);
  if (values.draft === '') throw new UsageError('--draft is empty: give the draft model');
  if (values.draft !== undefined && values.lookup)
    throw new UsageError('--draft and --lookup are two ways to draft: give one of them');
  if (values.draft === undefined && !values.lookup) {
    if (draftMax !== undefined)
      throw new UsageError('--draft-max needs --draft or --lookup (the drafting it bounds)');
    return undefined;
  }
  return { type: values.lookup ? 'lookup' : 'model', ...(draftMax !== undefined ? { draftMax } : {}) };
}

/** One line on what speculative decoding did, for stderr: acceptance and tokens per target pass. */
export function formatSpeculative(r: Pick<GenerateResult, 'speculative' | 'outputTokenIds'>): string {
  const s = r.speculative;
  if (!s) return '';
  const rate = s.drafted > 0 ? `${((100 * s.accepted) / s.drafted).toFixed(1)}%` : 'n/a';
  const perPass =
    s.targetPasses > 0 ? tokensPerTargetPass(r.outputTokenIds.length, s.targetPasses).toFixed(2) : 'n/a';
  return `speculative: ${s.accepted} of ${s.drafted} drafted tokens accepted (${rate}), ${s.targetPasses} target passes after the prefill, ${perPass} tokens per pass`;
}

/**
 * `--json-schema FILE` / `--grammar FILE` as the request's responseFormat (one of them at most).
 * @throws UsageError for both, an unreadable file, or a schema file that is not JSON.
 */
export function responseFormatArg(
  schemaFile?: string,
  grammarFile?: string,
): Exclude<ResponseFormat, { type: 'text' }> | undefined {
  if (schemaFile !== undefined && grammarFile !== undefined)
    throw new UsageError('give --json-schema or --grammar, not both');
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(`--${flag} ${file}: ${(e as Error).message}`);
    }
  };
  if (schemaFile !== undefined) {
    const text = read('json-schema', schemaFile);
    let schema: unknown;
    try {
      schema = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`--json-schema ${schemaFile} is not JSON: ${(e as Error).message}`);
    }
    if (!isJsonSchemaValue(schema))
      throw new UsageError(
        `--json-schema ${schemaFile} is not a JSON Schema: it holds ${Array.isArray(schema) ? 'an array' : String(schema)}, where a schema is an object (or true/false)`,
      );
    return { type: 'json_schema', schema: text };
  }
  if (grammarFile !== undefined) {
    const grammar = read('grammar', grammarFile);
    if (grammar.trim() === '')
      throw new UsageError(`--grammar ${grammarFile} is empty: give a grammar (EBNF/GBNF, with a rule root)`);
    return { type: 'grammar', grammar };
  }
  return undefined;
}

/**
 * Refuses, before any work, an output file (`flag`: how the command names it, e.g. `OUT.gguf`, `--out`) that
 * cannot be written where it is asked for: its folder does not exist, is not a folder or is not writable, the
 * path itself is a folder, or the file cannot be opened for writing (it is opened for appending, and removed
 * again when it was not there). Shared by gguf-split, quantize, make-model and perplexity, which do not create
 * folders (a mistyped folder is refused, not made).
 * @throws UsageError naming the folder (exit 2).
 */
export function checkOutputFolder(file: string, flag: string): void {
  if (file === '') throw new UsageError(`${flag} is empty: give a file name`);
  const dir = dirname(file);
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(resolve(dir));
  } catch {
    throw new UsageError(
      `${flag} ${file}: the folder ${dir} does not exist (create it first: mkdir -p ${dir})`,
    );
  }
  if (!st.isDirectory()) throw new UsageError(`${flag} ${file}: ${dir} is not a folder`);
  try {
    accessSync(resolve(dir), constants.W_OK);
  } catch {
    throw new UsageError(`${flag} ${file}: the folder ${dir} is not writable`);
  }
  let out: ReturnType<typeof statSync> | undefined;
  try {
    out = statSync(resolve(file));
  } catch {
    out = undefined; // not there yet: it will be written
  }
  if (out?.isDirectory()) throw new UsageError(`${flag} ${file} is a folder: give a file name`);
  // The folder's mode does not say everything (root passes any access check; /proc refuses new files):
  // open the file for appending, and remove it again if it was not there.
  try {
    closeSync(openSync(resolve(file), 'a'));
    if (!out) rmSync(resolve(file));
  } catch (e) {
    throw new UsageError(`${flag} ${file} cannot be written (${(e as Error).message}): give a writable path`);
  }
}
