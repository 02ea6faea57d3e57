/**
 * Writes `tests/golden/arch.json`: llama.cpp's own output (node-llama-cpp's prebuilt CPU build) on the
 * random-weight model files of src/testing/arch-cases.ts (Gemma 2 / Gemma 3 …), one entry per case:
 * the file's SHA-256 (the tests rebuild it from its seed and compare), the prompt ids, 64 greedy ids and
 * the full log-softmax of the first ARCH_N_LOGPROB generated positions.
 *
 * Usage: `npm run golden:arch`, or `npm run golden:arch -- PREFIX…` to redo only the cases whose names
 * start with a PREFIX (the other entries of arch.json are kept). Table-driven: add cases to ARCH_CASES.
 *
 * As scripts/golden.ts: one sequence, F32 K and V cache, no flash attention; the prompt is evaluated in
 * one batch with LlamaContextSequence.controlledEvaluate, then one token per step, temperature 0;
 * `generateNext.probabilities` is softmax(logits) computed in f32 by node-llama-cpp, stored as ln(p)
 * rounded to 7 significant digits.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  ARCH_CASES,
  ARCH_CONTEXT_SIZE,
  ARCH_N_GENERATE,
  ARCH_N_LOGPROB,
  archCasePrompt,
  buildArchCase,
} from '../src/testing/arch-cases.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outPath = resolve(root, 'tests/golden/arch.json');

function round7(x: number): number {
  return Number(x.toPrecision(7));
}

async function main(): Promise<void> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const dir = join(tmpdir(), `golden-arch-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  // `npm run golden:arch -- NAME…`: only the cases whose names start with one of the arguments; the other
  // entries of an existing arch.json are kept.
  const only = process.argv.slice(2);
  const out: Record<string, unknown> =
    only.length > 0 && existsSync(outPath) ? JSON.parse(readFileSync(outPath, 'utf8')).cases : {};
  try {
    for (const c of ARCH_CASES) {
      if (only.length > 0 && !only.some((p) => c.name.startsWith(p))) continue;
      const bytes = buildArchCase(c);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const modelPath = join(dir, `${c.name}.gguf`);
      writeFileSync(modelPath, bytes);
      const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
      const nVocab = [...model.iterateAllTokens()].length;
      const context = await model.createContext({
        contextSize: ARCH_CONTEXT_SIZE,
        batchSize: ARCH_CONTEXT_SIZE,
        sequences: 1,
        threads: 2,
        flashAttention: false,
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
      });
      const seq = context.getSequence();
      const promptIds = archCasePrompt(c);
      const outputIds: number[] = [];
      const logSoftmax: number[][] = [];
      let input = promptIds as Token[];
      for (let step = 0; step < ARCH_N_GENERATE; step++) {
        const wantProbs = step < ARCH_N_LOGPROB;
        const items: ControlledEvaluateInputItem[] = input.map((t, i) =>
          i === input.length - 1
            ? [t, { generateNext: { token: true, probabilities: wantProbs, options: { temperature: 0 } } }]
            : t,
        );
        const res = await seq.controlledEvaluate(items);
        const next = res[input.length - 1]?.next;
        if (next?.token == null) throw new Error(`${c.name}: no token generated at step ${step}`);
        outputIds.push(next.token);
        if (wantProbs) {
          const probs = next.probabilities;
          if (!probs || probs.size !== nVocab)
            throw new Error(`${c.name}: expected ${nVocab} probabilities, got ${probs?.size}`);
          const row: number[] = [];
          for (let id = 0; id < nVocab; id++) {
            const p = probs.get(id as Token);
            if (p === undefined || !(p > 0)) throw new Error(`${c.name}: probability of ${id} is ${p}`);
            row.push(round7(Math.log(p)));
          }
          logSoftmax.push(row);
        }
        input = [next.token];
      }
      await context.dispose();
      await model.dispose();
      out[c.name] = { kind: c.kind, options: c.options, sha256, nVocab, promptIds, outputIds, logSoftmax };
      console.log(`${c.name}: ${sha256.slice(0, 12)} → ${outputIds.slice(0, 12).join(' ')} …`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const version = await getModuleVersion();
  writeFileSync(
    outPath,
    `${JSON.stringify(
      {
        engine: `llama.cpp (node-llama-cpp ${version}, CPU, 2 threads, F32 KV cache, no flash attention)`,
        made: 'npm run golden:arch (scripts/golden-arch.ts); cases: src/testing/arch-cases.ts',
        nGenerate: ARCH_N_GENERATE,
        nLogProb: ARCH_N_LOGPROB,
        logSoftmax:
          'logSoftmax[step][tokenId] = ln(p), p = node-llama-cpp f32 softmax of all logits; 7 significant digits',
        cases: out,
      },
      null,
      1,
    )}\n`,
  );
  console.log(`wrote ${outPath}`);
}

await main();
