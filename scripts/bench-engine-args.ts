// bench-engine's command line: its options, the usage, and the checks on them.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stories260kPath } from '../src/testing/models.ts';
import { log, type Opts } from './bench-engine-measure.ts';

/** bench-engine's options, checked. */
export interface BenchEngineArgs {
  /** `--runs`, `--warmup`, `--tokens`. */
  o: Opts;
  /** `--model`, else $BENCH_MODEL, else stories260K; resolved, and it exists. */
  modelPath: string;
  /** `--skip`: engines not to run (ours-browser, wllama, wllama-engine, ours-node, llama-cpp). */
  skip: Set<string>;
  /** `--json FILE`. */
  json?: string;
  /** `--no-write`. */
  noWrite: boolean;
  /** `--chromium PATH`. */
  chromium?: string;
}

/**
 * The command line's options; undefined after printing the usage for `--help`. Throws on an unknown
 * option, a bad number or a missing model.
 */
export function parseBenchEngineArgs(): BenchEngineArgs | undefined {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      runs: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '1' },
      tokens: { type: 'string', default: '128' },
      skip: { type: 'string', default: '' },
      json: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      chromium: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    log(
      'usage: npm run bench:engine -- [--runs 5] [--warmup 1] [--tokens 128] [--model PATH] [--skip ours-browser,wllama,wllama-engine,ours-node,llama-cpp] [--json FILE] [--no-write] [--chromium PATH]',
    );
    return undefined;
  }
  const o: Opts = { runs: Number(values.runs), warmup: Number(values.warmup), tokens: Number(values.tokens) };
  if (!(o.runs >= 1 && o.warmup >= 0 && o.tokens >= 2))
    throw new Error('need --runs ≥ 1, --warmup ≥ 0, --tokens ≥ 2');
  const modelPath = resolve(values.model ?? process.env.BENCH_MODEL ?? stories260kPath());
  if (!existsSync(modelPath)) throw new Error(`model not found: ${modelPath}`);
  const skip = new Set(values.skip.split(',').filter(Boolean));
  return { o, modelPath, skip, json: values.json, noWrite: values['no-write'], chromium: values.chromium };
}
