/**
 * `npm run perplexity -- --model PATH_OR_URL --text FILE [--json FILE] [--ctx N] [--runtime browser|node]
 *   [--gpu] [--chromium PATH] [--kv-type f16|f32|q8_0|q4_0] [--kv-type-k T] [--kv-type-v T]`
 *
 * The field's `llama-perplexity`: tokenizes the text with BOS, scores it teacher-forced and prints
 * exp(mean NLL of every token after BOS). Texts longer than the context are scored in windows of `--ctx`
 * tokens (default: the loaded context, at most 2048) advancing by half a window, every token scored once
 * (see `src/bench/perplexity.ts`). `--json FILE` writes `{"perplexity": x, "tokens": n}`.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { perplexity, type WindowScores } from '../bench/perplexity.ts';
import { EngineError } from '../core/errors.ts';
import type { ModelInfo } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import {
  CHROMIUM_OPTIONS,
  CHROMIUM_USAGE,
  checkOutputFolder,
  chromiumArg,
  KV_TYPE_OPTIONS,
  KV_TYPE_USAGE,
  kvTypesArg,
  optIntArg,
  parseCliArgs,
  UsageError,
} from './args.ts';
import { callHarness, withHarnessPage } from './harness-server.ts';
import { loadProgressLogger } from './load-progress.ts';
import { checkLocalModel } from './local-model.ts';
import { CACHE_OPTIONS, CACHE_USAGE, resolveCliModel } from './model-cache.ts';
import { explainNodeNoAdapter, setupNodeVulkan } from './node-gpu.ts';
import { type CliCommand, isEntryPoint, runCli } from './run.ts';
import { contextNote } from './timings.ts';

const USAGE = `usage: npm run perplexity -- --model PATH_OR_URL --text FILE [--json FILE] [--ctx N]
       [--runtime browser|node] [--gpu] [--chromium PATH] [--kv-type T] [--kv-type-k T] [--kv-type-v T]
       [--cache-dir DIR | --no-cache] [--no-unsafe-apis]

  --gpu --runtime node creates Dawn with allow_unsafe_apis and vulkan_enable_f16_on_nvidia (subgroup
  matrices for prefill where offered); --no-unsafe-apis leaves them off.

  ${KV_TYPE_USAGE}

  --model PATH|URL|hf:OWNER/REPO/FILE.gguf[@REV]  (a URL is downloaded once into the cache)
${CHROMIUM_USAGE}
${CACHE_USAGE}`;

/** What a runtime gives the scoring loop. */
interface Scorer {
  info: ModelInfo;
  tokenize(text: string, addBos: boolean): Promise<number[]>;
  score(ids: number[]): Promise<WindowScores>;
}

async function run(
  text: string,
  ctxArg: number | undefined,
  scorer: Scorer,
): Promise<{ perplexity: number; tokens: number; windows: number; ctx: number }> {
  const ids = await scorer.tokenize(text, true);
  const plain = await scorer.tokenize(text, false);
  const bos = ids.length > plain.length ? ids[0] : undefined;
  // The engine caps --ctx at the model's training context (info.contextLength is what it allocated):
  // windows never exceed it, and a cut --ctx is said, as generate and llama.cpp do.
  const ctx = Math.min(ctxArg ?? scorer.info.contextLength, scorer.info.contextLength);
  if (ids.length < 2) throw new EngineError('invalid_argument', 'the text has fewer than two tokens');
  const say = (line: string) => process.stderr.write(`perplexity: ${line}\n`);
  const cut = contextNote(ctxArg, scorer.info.contextLength);
  if (cut) process.stderr.write(`${cut}\n`);
  say(`scoring ${ids.length} tokens in windows of at most ${ctx}`);
  let scored = 0;
  const r = await perplexity(
    ids,
    ctx,
    async (w) => {
      const out = await scorer.score(w);
      say(`  window ${++scored}: ${w.length} tokens`);
      return out;
    },
    bos,
  );
  return { perplexity: r.perplexity, tokens: r.tokens, windows: r.windows, ctx };
}

async function main(): Promise<number> {
  const { values } = parseCliArgs({
    options: {
      model: { type: 'string' },
      text: { type: 'string' },
      json: { type: 'string' },
      ctx: { type: 'string' },
      runtime: { type: 'string', default: 'browser' },
      gpu: { type: 'boolean', default: false },
      'no-unsafe-apis': { type: 'boolean', default: false },
      ...CHROMIUM_OPTIONS,
      ...KV_TYPE_OPTIONS,
      help: { type: 'boolean', default: false },
      ...CACHE_OPTIONS,
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.model || !values.text) {
    // As generate's missing --model: the error in the common form, then the usage, on stderr (exit 2).
    const model = '--model names the model to score (a GGUF file, an http(s) URL or hf:OWNER/REPO/FILE.gguf)';
    const text = '--text names the UTF-8 text file to score';
    const missing = !values.model
      ? !values.text
        ? `--model and --text are missing: ${model}, ${text}`
        : `--model is missing: ${model}`
      : `--text is missing: ${text}`;
    console.error(`error [invalid_argument]: ${missing}\n\n${USAGE}`);
    return 2;
  }
  const ctx = optIntArg(values.ctx, 'ctx', 2);
  const kv = kvTypesArg(values);
  // Before the load and the scoring, not after them.
  if (values.json !== undefined) checkOutputFolder(values.json, '--json');
  if (values.runtime !== 'browser' && values.runtime !== 'node')
    throw new UsageError(`--runtime must be browser or node, got "${values.runtime}"`);
  let text: string;
  try {
    text = readFileSync(values.text, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --text ${values.text}: ${(e as Error).message}`);
  }
  // A URL or hf: file: downloaded once into the cache and run from there (or, --no-cache, streamed).
  const model = await resolveCliModel({ ...values, model: values.model });
  const isUrl = /^https?:\/\//.test(model);
  if (!isUrl) checkLocalModel(model);

  // Progress on stderr (the figure alone goes to stdout): a load is never silent.
  const say = (line: string) => process.stderr.write(`perplexity: ${line}\n`);
  const onProgress = loadProgressLogger(say);
  say(
    `loading ${model} (runtime ${values.runtime}${values.runtime === 'browser' ? ': starting Chromium' : ''})`,
  );
  let result: Awaited<ReturnType<typeof run>>;
  if (values.runtime === 'node') {
    const driver = setupNodeVulkan(values.gpu);
    const { setNodeDawnOptions } = await import('../webgpu/device.ts');
    // As Chromium's --gpu flags do: Dawn's experimental features (subgroup matrices; shader-f16 on NVIDIA).
    setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
    const { WebGpuEngine } = await import('../webgpu/engine.ts');
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      const info = await engine
        .load(isUrl ? { url: model } : { path: resolve(model) }, { contextLength: ctx, ...kv, onProgress })
        .catch((e: unknown) => Promise.reject(explainNodeNoAdapter(e, driver)));
      result = await run(text, ctx, {
        info,
        tokenize: (t, addBos) => engine.tokenize(t, addBos),
        score: (ids) => engine.scoreTokens(ids),
      });
    } finally {
      await engine.dispose();
    }
  } else {
    result = await withHarnessPage(
      { gpu: values.gpu, chromium: chromiumArg(values), modelPath: isUrl ? undefined : resolve(model) },
      async (page, modelUrl) => {
        await page.exposeFunction('__onProgress', onProgress);
        const info = await callHarness<ModelInfo>(page, 'load', isUrl ? model : modelUrl, ctx, false, kv);
        return run(text, ctx, {
          info,
          tokenize: (t, addBos) => callHarness<number[]>(page, 'tokenize', t, addBos),
          score: (ids) => callHarness<WindowScores>(page, 'score', ids),
        });
      },
    );
  }
  console.log(
    `perplexity: ${result.perplexity.toFixed(4)} over ${result.tokens} tokens ` +
      `(${result.windows} window${result.windows === 1 ? '' : 's'} of at most ${result.ctx} tokens)`,
  );
  if (values.json) {
    writeFileSync(
      values.json,
      JSON.stringify({ perplexity: result.perplexity, tokens: result.tokens }, null, 1),
    );
  }
  return 0;
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main, usageHint: 'npm run perplexity -- --help lists the options' };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);
