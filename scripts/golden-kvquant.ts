/**
 * Writes `tests/golden/kvquant.json`: llama.cpp's greedy output and perplexity with a quantized KV cache
 * (`-ctk/-ctv q8_0`, `q4_0`, and `f16` beside them), for checking our Q8_0/Q4_0 cache (issue 44).
 *
 * Usage: `npm run golden:kvquant` (node-llama-cpp 3.21.1's prebuilt CPU llama.cpp; about a minute).
 *
 * Model: stories260K with heads of 32 (`widenLlamaGguf(STORIES_HEAD32)`: its 8 dimensions per head, then
 * 24 zero ones; the same trained function), since a Q8_0/Q4_0 cache needs whole 32-value blocks per head
 * and stories260K's heads are 8 wide (llama.cpp cannot run it so either). Only its sha256 is stored; the
 * tests make it again.
 *
 * Context: one sequence, n_ctx 2048, batch 512, 2 threads, flash attention on (llama.cpp needs it for a
 * quantized V), K and V cache types through `experimentalKvCacheKeyType/ValueType`.
 * - `generation[type][i]`: 64 greedy ids (temperature 0, not stopping at EOS) after the promptIds of
 *   tests/golden/stories260K.json's generation case i (prompt evaluated in one batch, then a token a step).
 * - `perplexity[type]`: on tests/data/ppl-story.txt, one window of the whole text (ids as ppl.json's), as
 *   scripts/golden-ppl.ts scores it.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ControlledEvaluateInputItem,
  getLlama,
  getModuleVersion,
  type LlamaContextSequence,
  LlamaLogLevel,
  type Token,
} from 'node-llama-cpp';
import { perplexityOf, perplexityWindows } from '../src/bench/perplexity.ts';
import { openGguf } from '../src/gguf/reader.ts';
import { STORIES_HEAD32, widenLlamaGguf } from '../src/model/widen.ts';
import { stories260kPath } from '../src/testing/models.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outPath = resolve(root, 'tests/golden/kvquant.json');
const textPath = resolve(root, 'tests/data/ppl-story.txt');
const CTX = 2048;
const N_GENERATE = 64;
const TYPES = ['F16', 'Q8_0', 'Q4_0'] as const;

async function greedy(seq: LlamaContextSequence, prompt: Token[], n: number): Promise<number[]> {
  await seq.clearHistory();
  const out: number[] = [];
  let input = prompt;
  for (let step = 0; step < n; step++) {
    const items: ControlledEvaluateInputItem[] = input.map((t, i) =>
      i === input.length - 1 ? [t, { generateNext: { token: true, options: { temperature: 0 } } }] : t,
    );
    const res = await seq.controlledEvaluate(items);
    const next = res[input.length - 1]?.next?.token;
    if (next == null) throw new Error(`no token at step ${step}`);
    out.push(next);
    input = [next];
  }
  return out;
}

async function perplexity(seq: LlamaContextSequence, nVocab: number, ids: number[]): Promise<number> {
  const windows = perplexityWindows(ids, CTX, ids[0]);
  if (windows.length !== 1) throw new Error(`expected one window, got ${windows.length}`);
  await seq.clearHistory();
  const w = windows[0].ids;
  const items: ControlledEvaluateInputItem[] = w.map((t, i) =>
    i < w.length - 1
      ? [t as Token, { generateNext: { probabilities: true, options: { temperature: 0 } } }]
      : (t as Token),
  );
  const res = await seq.controlledEvaluate(items);
  const nll: number[] = [];
  for (let i = 0; i < w.length - 1; i++) {
    const probs = res[i]?.next?.probabilities;
    if (!probs || probs.size !== nVocab) throw new Error(`position ${i}: no probabilities`);
    const p = probs.get(w[i + 1] as Token);
    if (p === undefined || !(p > 0)) throw new Error(`position ${i}: p = ${p}`);
    nll.push(-Math.log(p));
  }
  return perplexityOf(nll);
}

async function main(): Promise<void> {
  const stories = JSON.parse(readFileSync(resolve(root, 'tests/golden/stories260K.json'), 'utf8'));
  const prompts: number[][] = stories.generation.cases.map((c: { promptIds: number[] }) => c.promptIds);
  const pplIds: number[] = JSON.parse(readFileSync(resolve(root, 'tests/golden/ppl.json'), 'utf8')).ids;
  const text = readFileSync(textPath, 'utf8');
  const bytes = await widenLlamaGguf(await openGguf({ path: stories260kPath() }), STORIES_HEAD32);
  const work = mkdtempSync(join(tmpdir(), 'golden-kvquant-'));
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  try {
    const path = join(work, 'stories260K-hd32.gguf');
    writeFileSync(path, bytes);
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    const nVocab = [...model.iterateAllTokens()].length;
    const ids = [model.tokens.bos as number, ...model.tokenize(text, false)];
    if (ids.join() !== pplIds.join()) throw new Error('the text tokenizes differently from ppl.json');
    const generation: Record<string, number[][]> = {};
    const ppl: Record<string, number> = {};
    for (const type of TYPES) {
      const context = await model.createContext({
        contextSize: CTX,
        batchSize: 512,
        sequences: 1,
        threads: 2,
        flashAttention: true,
        experimentalKvCacheKeyType: type,
        experimentalKvCacheValueType: type,
      });
      const seq = context.getSequence();
      generation[type] = [];
      for (const p of prompts) generation[type].push(await greedy(seq, p as Token[], N_GENERATE));
      ppl[type] = Number((await perplexity(seq, nVocab, ids)).toPrecision(10));
      console.log(`${type}: perplexity ${ppl[type]}; first output ${generation[type][0].slice(0, 12)}`);
      await context.dispose();
    }
    await model.dispose();
    const out = {
      about:
        'llama.cpp (CPU, node-llama-cpp) greedy output and perplexity with F16, Q8_0 and Q4_0 K/V caches (flash attention on) on stories260K with heads of 32 (widenLlamaGguf(STORIES_HEAD32)). Regenerate with `npm run golden:kvquant`; see scripts/golden-kvquant.ts.',
      generator: {
        script: 'scripts/golden-kvquant.ts',
        nodeLlamaCpp: await getModuleVersion(),
        llamaCpp: llama.llamaCppRelease,
      },
      model: { widen: STORIES_HEAD32, fileSha256: createHash('sha256').update(bytes).digest('hex') },
      context: { contextSize: CTX, batchSize: 512, threads: 2, flashAttention: true },
      promptIds: prompts,
      generation,
      perplexity: { text: 'tests/data/ppl-story.txt', ctx: CTX, tokens: ids.length - 1, byType: ppl },
    };
    writeFileSync(outPath, `${JSON.stringify(out)}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
