/**
 * Writes `tests/golden/wllama-utf8.json`: llama.cpp's own greedy output (node-llama-cpp's prebuilt CPU
 * build) on the random-weight Q4_K_M model of src/testing/wllama-cases.ts, for each of its prompts: the
 * file's SHA-256 (the test rebuilds it and compares), the prompt ids (BOS + llama_tokenize, as
 * llama-server tokenizes a text prompt), WLLAMA_UTF8_N_GENERATE greedy ids and the index of the first
 * byte token ≥ 0x80 among them. One sequence, the prompt in one batch, then one token per step,
 * temperature 0, F32 K and V cache (the test loads wllama with kvType f32), 1 thread; `gaps[step]` is
 * ln p(top-1) − ln p(top-2) at each step (a small gap is a near-tie another build may break the other way).
 *
 * Usage: `npm run golden:wllama`. Deterministic.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ControlledEvaluateInputItem,
  getLlama,
  getModuleVersion,
  LlamaLogLevel,
  type Token,
} from 'node-llama-cpp';
import {
  buildWllamaUtf8Model,
  firstHighByte,
  WLLAMA_UTF8_MODEL,
  WLLAMA_UTF8_N_GENERATE,
  WLLAMA_UTF8_PROMPTS,
} from '../src/testing/wllama-cases.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outPath = resolve(root, 'tests/golden/wllama-utf8.json');

async function main(): Promise<void> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const bytes = await buildWllamaUtf8Model();
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const dir = mkdtempSync(join(tmpdir(), 'golden-wllama-'));
  const cases: Record<string, unknown> = {};
  try {
    const modelPath = join(dir, 'model.gguf');
    writeFileSync(modelPath, bytes);
    const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
    for (const [key, prompt] of Object.entries(WLLAMA_UTF8_PROMPTS)) {
      const context = await model.createContext({
        contextSize: WLLAMA_UTF8_MODEL.contextLength,
        sequences: 1,
        threads: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
      });
      const seq = context.getSequence();
      const promptIds = [model.tokens.bos as number, ...(model.tokenize(prompt) as number[])];
      const outputIds: number[] = [];
      const gaps: number[] = [];
      let input = promptIds as Token[];
      for (let step = 0; step < WLLAMA_UTF8_N_GENERATE; step++) {
        const items: ControlledEvaluateInputItem[] = input.map((t, i) =>
          i === input.length - 1
            ? [t, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }]
            : t,
        );
        const res = await seq.controlledEvaluate(items);
        const got = res[input.length - 1]?.next;
        const next = got?.token;
        if (next == null || !got?.probabilities) throw new Error(`${key}: no token at step ${step}`);
        const [p1, p2] = [...got.probabilities.values()].sort((a, b) => b - a);
        gaps.push(Number((Math.log(p1 as number) - Math.log(p2 as number)).toPrecision(3)));
        outputIds.push(next);
        input = [next];
      }
      await context.dispose();
      cases[key] = { prompt, promptIds, outputIds, firstHighByte: firstHighByte(outputIds), gaps };
      console.log(
        `${key}: first byte token ≥ 0x80 at ${firstHighByte(outputIds)}; ${outputIds.slice(0, 12).join(' ')} …`,
      );
    }
    await model.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const version = await getModuleVersion();
  writeFileSync(
    outPath,
    `${JSON.stringify(
      {
        engine: `llama.cpp (node-llama-cpp ${version}, CPU, 1 thread, F32 KV cache, no flash attention)`,
        made: 'npm run golden:wllama (scripts/golden-wllama.ts); model: src/testing/wllama-cases.ts',
        model: { options: WLLAMA_UTF8_MODEL, ftype: 'Q4_K_M', sha256 },
        cases,
      },
      null,
      1,
    )}\n`,
  );
  console.log(`wrote ${outPath}`);
}

await main();
