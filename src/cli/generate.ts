/**
 * `npm run generate -- --model PATH_OR_URL --prompt TEXT --max-tokens N [--temperature T --seed S]
 *   [--top-k K --top-p P --min-p P --repeat-penalty R] [--json FILE] [--runtime browser|node] [--gpu]
 *   [--chromium PATH] [--ctx N] [--default-limits] [--kv-type f16|f32]`
 *
 * The field's `llama-cli`: prints the continuation as it streams. Greedy unless told otherwise. With
 * `--json` writes `{"promptTokenIds": [...], "outputTokenIds": [...], "text": "..."}` (promptTokenIds
 * include BOS). The browser runtime (default) runs the real worker in headless Chromium; `node` runs the
 * engine in this process on Dawn.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EngineError } from '../engine/errors.ts';
import type { GenerateRequest, GenerateResult, ModelInfo } from '../engine/types.ts';
import { intArg, kvTypeArg, optIntArg, samplingArgs, UsageError } from './args.ts';
import { callHarness, withHarnessPage } from './harness-server.ts';
import { CACHE_OPTIONS, CACHE_USAGE, resolveCliModel } from './model-cache.ts';
import { setupNodeVulkan } from './node-gpu.ts';
import { runCli } from './run.ts';

const USAGE = `usage: npm run generate -- --model PATH_OR_URL --prompt TEXT [--max-tokens N] [--temperature T] [--seed S]
       [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--json FILE] [--runtime browser|node]
       [--gpu] [--chromium PATH] [--ctx N] [--default-limits] [--kv-type f16|f32]
       [--cache-dir DIR | --no-cache]

  --default-limits  request only WebGPU's default limits (128 MiB bindings, 8 storage buffers per stage),
                    as a phone or integrated GPU may grant them
  --kv-type f16|f32 KV-cache element type (default f16, as llama.cpp's; f32 takes twice the memory)

  --model PATH|URL|hf:OWNER/REPO/FILE.gguf[@REV]|synthetic:SHAPE-TYPE  (a URL is downloaded once into the cache)
${CACHE_USAGE}`;

/** With --default-limits, says on stderr which limits the engine planned with. */
function logLimits(info: ModelInfo): void {
  const l = info.limits;
  if (!l?.defaultLimits) return;
  const v = l.values;
  console.error(
    `limits: WebGPU defaults (maxStorageBufferBindingSize ${v.maxStorageBufferBindingSize}, maxBufferSize ${v.maxBufferSize}, maxStorageBuffersPerShaderStage ${v.maxStorageBuffersPerShaderStage}); ${info.kernels?.splitTensors ?? 0} tensors split across bindings`,
  );
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      prompt: { type: 'string', default: '' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      seed: { type: 'string' },
      'top-k': { type: 'string' },
      'top-p': { type: 'string' },
      'min-p': { type: 'string' },
      'repeat-penalty': { type: 'string' },
      json: { type: 'string' },
      runtime: { type: 'string', default: 'browser' },
      gpu: { type: 'boolean', default: false },
      chromium: { type: 'string' },
      browser: { type: 'string' },
      ctx: { type: 'string' },
      'default-limits': { type: 'boolean', default: false },
      'kv-type': { type: 'string' },
      help: { type: 'boolean', default: false },
      ...CACHE_OPTIONS,
    },
  });
  if (values.help || !values.model) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  if (values.runtime !== 'browser' && values.runtime !== 'node')
    throw new UsageError(`--runtime must be browser or node, got "${values.runtime}"`);
  // Every number strictly, by the engine API's own rules: `--temperature abc` is a usage error, not greedy.
  const req: GenerateRequest = {
    prompt: values.prompt,
    maxTokens: intArg(values['max-tokens'], 'max-tokens', 1, 64),
    ...samplingArgs(values),
  };
  const ctx = optIntArg(values.ctx, 'ctx', 1);
  const kvType = kvTypeArg(values['kv-type']);
  // A URL or hf: file: downloaded once into the cache and run from there (or, --no-cache, streamed).
  const model = await resolveCliModel({ ...values, model: values.model });
  const isUrl = /^https?:\/\//.test(model);
  const isSynthetic = model.startsWith('synthetic:');
  if (!isUrl && !isSynthetic && !existsSync(model)) {
    throw new EngineError('invalid_argument', `cannot open model file ${model}: no such file`);
  }
  let result: GenerateResult;
  if (values.runtime === 'node') {
    setupNodeVulkan(values.gpu);
    const { WebGpuEngine } = await import('../webgpu/engine.ts');
    const engine = new WebGpuEngine();
    try {
      logLimits(
        await engine.load(
          isSynthetic ? { synthetic: model } : isUrl ? { url: model } : { path: resolve(model) },
          { contextLength: ctx, defaultLimits: values['default-limits'], kvType },
        ),
      );
      result = await engine.generate(req, (e) => process.stdout.write(e.text));
    } finally {
      await engine.dispose();
    }
  } else {
    result = await withHarnessPage(
      {
        gpu: values.gpu,
        chromium: values.chromium ?? values.browser,
        modelPath: isUrl || isSynthetic ? undefined : resolve(model),
      },
      async (page, modelUrl) => {
        await page.exposeFunction('__onToken', (text: string) => process.stdout.write(text));
        try {
          await callHarness<ModelInfo>(
            page,
            'load',
            isUrl || isSynthetic ? model : modelUrl,
            ctx,
            values['default-limits'],
            kvType,
          ).then(logLimits);
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
  const asked = req.maxTokens ?? 64;
  if (result.finishReason === 'length' && result.outputTokenIds.length < asked) {
    console.error(
      `note: stopped after ${result.outputTokenIds.length} of ${asked} tokens: the context (--ctx) is full`,
    );
  }
  if (values.json) {
    writeFileSync(
      values.json,
      JSON.stringify(
        { promptTokenIds: result.promptTokenIds, outputTokenIds: result.outputTokenIds, text: result.text },
        null,
        1,
      ),
    );
  }
  return 0;
}

runCli(main, undefined, 'npm run generate -- --help lists the options');
