/**
 * `npm run generate -- --model PATH_OR_URL --prompt TEXT --max-tokens N [--temperature T --seed S]
 *   [--top-k K --top-p P --min-p P --repeat-penalty R] [--json FILE] [--runtime browser|node] [--gpu]
 *   [--chromium PATH] [--ctx N] [--default-limits] [--kv-type f16|f32|q8_0|q4_0] [--kv-type-k T] [--kv-type-v T]
 *   [--draft PATH | --lookup] [--draft-max N] [--json-schema FILE | --grammar FILE]`
 *
 * The field's `llama-cli`: prints the continuation on stdout as it streams (stdout holds the text only),
 * then llama-cli's timing summary on stderr (src/cli/timings.ts: prompt eval = TTFT, eval = decode).
 * Greedy unless told otherwise. With `--json` writes `{"promptTokenIds": [...], "outputTokenIds": [...],
 * "text": "...", "finishReason": "stop" | "length"}` (promptTokenIds include BOS; with a format,
 * `formatComplete`: whether the text is a whole value of it). The browser runtime (default) runs the real worker in
 * headless Chromium; `node` runs the engine in this process on Dawn.
 */

import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { GenerateRequest, GenerateResult, ModelInfo } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import { fmtBytes } from '../util/format.ts';
import {
  CHROMIUM_OPTIONS,
  CHROMIUM_USAGE,
  checkOutputFolder,
  chromiumArg,
  DRAFT_USAGE,
  draftArgs,
  formatSpeculative,
  intArg,
  KV_TYPE_OPTIONS,
  KV_TYPE_USAGE,
  kvTypesArg,
  optIntArg,
  parseCliArgs,
  responseFormatArg,
  samplingArgs,
  UsageError,
} from './args.ts';
import { callHarness, withHarnessPage } from './harness-server.ts';
import { loadProgressLogger } from './load-progress.ts';
import { checkDraftVocabulary, checkLocalModel, checkPromptFits } from './local-model.ts';
import { CACHE_OPTIONS, CACHE_USAGE, resolveCliModel } from './model-cache.ts';
import { explainNodeNoAdapter, setupNodeVulkan } from './node-gpu.ts';
import { type CliCommand, isEntryPoint, runCli } from './run.ts';
import { contextNote, formatTimings } from './timings.ts';

/** `npm run generate -- --help`, printed on stdout. */
const USAGE = `usage: npm run generate -- --model PATH_OR_URL --prompt TEXT [options]

  --model PATH|URL|hf:OWNER/REPO/FILE.gguf[@REV]|synthetic:SHAPE-TYPE
                                    GGUF file (a split model: its first part), GGUF URL or Hugging Face file
                                    (downloaded once into the cache, see --cache-dir), or a synthetic model
  --prompt TEXT                     the prompt
  --max-tokens N                    new tokens at most (default 64)
  --temperature T                   sampling temperature (default 0 = greedy)
  --top-k K                         keep the K most likely tokens (0 = off)
  --top-p P                         nucleus: the smallest set with probability ≥ P (0 < P ≤ 1; 1 = off)
  --min-p P                         drop tokens below P × the top probability (0 ≤ P ≤ 1; 0 = off)
  --repeat-penalty R                penalty on recently seen tokens (> 0; 1 = off)
  --seed S                          seed of the sampler's draws (an integer)
${DRAFT_USAGE}
  --ctx N                           context length (KV cache) in tokens
  ${KV_TYPE_USAGE}
  --default-limits                  request only WebGPU's default limits (128 MiB bindings, 8 storage
                                    buffers per stage), as a phone or integrated GPU may grant them
  --json FILE                       write {"promptTokenIds", "outputTokenIds", "text", "finishReason"} to
                                    FILE (with --json-schema/--grammar "formatComplete"; with --draft/--lookup
                                    "speculative": {"drafted", "accepted", "targetPasses"})
  --json-schema FILE                structured output: the answer is JSON valid against the JSON Schema in
                                    FILE (each token masked on the GPU; it ends when the value is complete)
  --grammar FILE                    structured output: the answer follows the EBNF/GBNF grammar in FILE
                                    (llama.cpp's GBNF; the root rule is root)
  --runtime browser|node            the engine in headless Chromium (default) or in Node on Dawn
  --gpu                             flags for a hardware GPU on Linux (Vulkan)
                                    (--runtime node: Dawn's instance with allow_unsafe_apis and
                                    vulkan_enable_f16_on_nvidia, which offer subgroup matrices for prefill)
  --no-unsafe-apis                  with --gpu --runtime node: Dawn without those toggles
${CHROMIUM_USAGE}
${CACHE_USAGE}

The continuation goes to stdout as it streams; then llama-cli's timing summary goes to stderr: prompt
eval time (TTFT: request start to the first token, with prefill tok/s), eval time (the tokens after the
first: decode tok/s) and total time (E2E).`;

/**
 * Says on stderr what was loaded (the draft model too, by the --draft argument `draft` and its model
 * name), a --ctx the model's context cut, and with --default-limits which limits the engine planned with.
 */
function logLimits(info: ModelInfo, ctx: number | undefined, draft: string | undefined): void {
  console.error(
    `generate: loaded ${info.name}: ${info.nLayers} layers, ${fmtBytes(info.weightBytes)} of weights, context ${info.contextLength}`,
  );
  const d = info.draft;
  if (d)
    console.error(
      `generate: draft model ${draft ?? d.name} (${d.name}): ${d.nLayers} layers, ${fmtBytes(d.weightBytes)} of weights, beside it`,
    );
  const cut = contextNote(ctx, info.contextLength);
  if (cut) console.error(cut);
  const l = info.limits;
  if (!l?.defaultLimits) return;
  const v = l.values;
  console.error(
    `limits: WebGPU defaults (maxStorageBufferBindingSize ${v.maxStorageBufferBindingSize}, maxBufferSize ${v.maxBufferSize}, maxStorageBuffersPerShaderStage ${v.maxStorageBuffersPerShaderStage}); ${info.kernels?.splitTensors ?? 0} tensors split across bindings`,
  );
}

async function main(): Promise<number> {
  const { values } = parseCliArgs({
    options: {
      model: { type: 'string' },
      prompt: { type: 'string' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      seed: { type: 'string' },
      'top-k': { type: 'string' },
      'top-p': { type: 'string' },
      'min-p': { type: 'string' },
      'repeat-penalty': { type: 'string' },
      lookup: { type: 'boolean', default: false },
      draft: { type: 'string' },
      'draft-max': { type: 'string' },
      json: { type: 'string' },
      'json-schema': { type: 'string' },
      grammar: { type: 'string' },
      runtime: { type: 'string', default: 'browser' },
      gpu: { type: 'boolean', default: false },
      'no-unsafe-apis': { type: 'boolean', default: false },
      ...CHROMIUM_OPTIONS,
      ctx: { type: 'string' },
      'default-limits': { type: 'boolean', default: false },
      ...KV_TYPE_OPTIONS,
      help: { type: 'boolean', default: false },
      ...CACHE_OPTIONS,
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.model) {
    console.error(`error [invalid_argument]: --model is required\n\n${USAGE}`);
    return 2;
  }
  if (values.prompt === undefined)
    throw new UsageError('--prompt is required (--prompt "" generates from the start-of-text token alone)');
  if (values.runtime !== 'browser' && values.runtime !== 'node')
    throw new UsageError(`--runtime must be browser or node, got "${values.runtime}"`);
  // Every number strictly, by the engine API's own rules: `--temperature abc` is a usage error, not greedy.
  const req: GenerateRequest = {
    prompt: values.prompt,
    maxTokens: intArg(values['max-tokens'], 'max-tokens', 1, 64),
    ...samplingArgs(values),
  };
  const draft = draftArgs(values);
  if (draft) req.draft = draft;
  const format = responseFormatArg(values['json-schema'], values.grammar);
  if (format) req.responseFormat = format;
  // Before any work: a --json into a missing folder failed only after the whole generation.
  if (values.json !== undefined) checkOutputFolder(values.json, '--json');
  const ctx = optIntArg(values.ctx, 'ctx', 1);
  const kv = kvTypesArg(values);
  const chromium = chromiumArg(values);
  // A URL or hf: file: downloaded once into the cache and run from there (or, --no-cache, streamed).
  const model = await resolveCliModel({ ...values, model: values.model });
  const isUrl = /^https?:\/\//.test(model);
  const isSynthetic = model.startsWith('synthetic:');
  if (!isUrl && !isSynthetic) checkLocalModel(model);
  const draftModel = values.draft ? await resolveCliModel({ ...values, model: values.draft }) : undefined;
  const draftKind =
    draftModel &&
    (/^https?:\/\//.test(draftModel) ? 'url' : draftModel.startsWith('synthetic:') ? 'synthetic' : 'path');
  if (draftModel && draftKind === 'path') {
    checkLocalModel(draftModel, `${draftModel} (--draft)`);
    // Both local: the vocabularies compared now, not after the target has loaded.
    if (!isUrl && !isSynthetic) await checkDraftVocabulary(model, draftModel);
  }
  // A prompt too long for the context is refused now, by the file's tokenizer, not after the load.
  if (!isUrl && !isSynthetic) await checkPromptFits(model, values.prompt, ctx);
  // Load progress on stderr (the continuation alone goes to stdout): a load is never silent.
  const say = (line: string) => process.stderr.write(`generate: ${line}\n`);
  const onProgress = loadProgressLogger(say);
  say(
    `loading ${model} (runtime ${values.runtime}${values.runtime === 'browser' ? ': starting Chromium' : ''})`,
  );
  let result: GenerateResult;
  if (values.runtime === 'node') {
    const driver = setupNodeVulkan(values.gpu);
    const { setNodeDawnOptions } = await import('../webgpu/device.ts');
    // As Chromium's --gpu flags do: Dawn's experimental features (subgroup matrices; shader-f16 on NVIDIA).
    setNodeDawnOptions({ unsafeApis: values.gpu && !values['no-unsafe-apis'] });
    const { WebGpuEngine } = await import('../webgpu/engine.ts');
    const engine = new WebGpuEngine({ openModel: openModelSource });
    try {
      logLimits(
        await engine
          .load(isSynthetic ? { synthetic: model } : isUrl ? { url: model } : { path: resolve(model) }, {
            contextLength: ctx,
            defaultLimits: values['default-limits'],
            ...kv,
            onProgress,
            ...(draftModel
              ? {
                  draft:
                    draftKind === 'url'
                      ? { url: draftModel }
                      : draftKind === 'synthetic'
                        ? { synthetic: draftModel }
                        : { path: resolve(draftModel) },
                }
              : {}),
          })
          // No adapter: say what this machine lacks (the Vulkan loader's package, or a driver).
          .catch((e: unknown) => Promise.reject(explainNodeNoAdapter(e, driver))),
        ctx,
        values.draft,
      );
      result = await engine.generate(req, (e) => process.stdout.write(e.text));
    } finally {
      await engine.dispose();
    }
  } else {
    result = await withHarnessPage(
      {
        gpu: values.gpu,
        chromium,
        modelPath: isUrl || isSynthetic ? undefined : resolve(model),
        otherPaths: draftModel && draftKind === 'path' ? [resolve(draftModel)] : [],
      },
      async (page, modelUrl, urlOf) => {
        await page.exposeFunction('__onToken', (text: string) => process.stdout.write(text));
        await page.exposeFunction('__onProgress', onProgress);
        try {
          await callHarness<ModelInfo>(
            page,
            'load',
            isUrl || isSynthetic ? model : modelUrl,
            ctx,
            values['default-limits'],
            kv,
            draftModel && (draftKind === 'path' ? urlOf(resolve(draftModel)) : draftModel),
          ).then((info) => logLimits(info, ctx, values.draft));
        } catch (e) {
          // Name the file the person gave, not the URL it was served under.
          if (modelUrl && e instanceof Error) e.message = e.message.split(modelUrl).join(resolve(model));
          throw e;
        }
        return callHarness<GenerateResult>(page, 'generate', req);
      },
    );
  }
  process.stdout.write('\n');
  console.error(formatTimings(result));
  if (result.speculative) console.error(formatSpeculative(result));
  const asked = req.maxTokens ?? 64;
  if (result.finishReason === 'length' && result.outputTokenIds.length < asked) {
    console.error(
      `note: stopped after ${result.outputTokenIds.length} of ${asked} tokens: the context (--ctx) is full`,
    );
  }
  if (format && result.finishReason === 'length') {
    const what = format.type === 'grammar' ? 'grammar' : 'JSON value';
    console.error(
      result.formatComplete
        ? `note: the answer reached ${result.outputTokenIds.length} tokens (finish reason "length"); it is a whole ${what} as it stands, though the grammar would allow it to go on`
        : `warning: the answer was cut after ${result.outputTokenIds.length} tokens, before the ${what} was complete: it does not parse (finish reason "length"); raise --max-tokens${format.type === 'grammar' ? '' : ', or bound what the schema leaves open (an integer without a maximum, a string without a maxLength can run on)'}`,
    );
  }
  if (values.json) {
    writeFileSync(
      values.json,
      JSON.stringify(
        {
          promptTokenIds: result.promptTokenIds,
          outputTokenIds: result.outputTokenIds,
          text: result.text,
          finishReason: result.finishReason,
          ...(format ? { formatComplete: result.formatComplete === true } : {}),
          ...(result.speculative ? { speculative: result.speculative } : {}),
        },
        null,
        1,
      ),
    );
  }
  return 0;
}

/** This command's entry point, for tests that run it in-process (src/testing/cli-in-process.ts). */
export const cli: CliCommand = { main, usageHint: 'npm run generate -- --help lists the options' };

if (isEntryPoint(import.meta.url)) runCli(cli.main, cli.format, cli.usageHint);
