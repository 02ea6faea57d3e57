/**
 * bench:depth's llama.cpp half, in a process of its own (scripts/bench-depth.ts spawns it once per cache
 * type): node-llama-cpp (llama.cpp's prebuilt CPU build, `getLlama({gpu: false, build: 'never'})`,
 * 1 thread) measuring llama-bench's tgN at each depth with K and V in one cache type. A native abort or a
 * crash in llama.cpp (a GGML_ASSERT, an out-of-memory kill) ends only this process, and the parent reports
 * its exit code or signal and the tail of its stderr instead of losing the peer's figures.
 *
 *   node --import tsx scripts/bench-depth-llama.ts JOB.json OUT.json
 *
 * JOB.json: {@link DepthJob}. OUT.json (written only on success): {@link DepthResult}. Exit 0 on success,
 * 1 on any error (its message on stderr).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Token } from 'node-llama-cpp';
import { randomTokenIds } from './bench-common.ts';

/** What to measure: the model, its context, the depths, the cache type (f16, f32, q8_0, q4_0). */
export interface DepthJob {
  path: string;
  contextLength: number;
  nVocab: number;
  depths: number[];
  kv: 'f16' | 'f32' | 'q8_0' | 'q4_0';
  /** Decode steps per repetition (llama-bench's N of tgN). */
  tokens: number;
  /** Repetitions after the warm-up. */
  reps: number;
}

/** tok/s per depth (mean and population std over the repetitions) and the llama.cpp build. */
export interface DepthResult {
  byDepth: [number, { mean: number; std: number }][];
  release: string;
  version: string;
}

const ROOT = resolve(import.meta.dirname, '..');

async function run(job: DepthJob): Promise<DepthResult> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  // Warnings too: a context llama.cpp cannot make says why only at this level.
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.warn });
  const version = JSON.parse(
    readFileSync(resolve(ROOT, 'node_modules/node-llama-cpp/package.json'), 'utf8'),
  ).version;
  const model = await llama.loadModel({ modelPath: job.path });
  const type = job.kv.toUpperCase() as 'F16' | 'F32' | 'Q8_0' | 'Q4_0';
  // A quantized V needs flash attention in llama.cpp (as tests/golden/kvquant.json's run).
  const quantized = job.kv === 'q8_0' || job.kv === 'q4_0';
  const context = await model.createContext({
    contextSize: job.contextLength,
    sequences: 1,
    threads: 1,
    ...(quantized ? { flashAttention: true } : {}),
    experimentalKvCacheKeyType: type,
    experimentalKvCacheValueType: type,
  });
  const byDepth: DepthResult['byDepth'] = [];
  try {
    const seq = context.getSequence();
    const ids = (n: number, seed: number) => randomTokenIds(n, job.nVocab, seed) as unknown as Token[];
    for (const depth of job.depths) {
      await seq.clearHistory();
      if (depth > 0) await seq.evaluateWithoutGeneratingNewTokens(ids(depth, 7));
      const samples: number[] = [];
      for (let rep = 0; rep <= job.reps; rep++) {
        if (seq.nextTokenIndex > depth)
          await seq.eraseContextTokenRanges([{ start: depth, end: seq.nextTokenIndex }]);
        const first = ids(1, 1000 + rep);
        let n = 0;
        const start = performance.now();
        for await (const _ of seq.evaluate(first, { temperature: 0 })) if (++n >= job.tokens) break;
        const s = (performance.now() - start) / 1000;
        if (n < job.tokens)
          throw new Error(`llama.cpp stopped after ${n} of ${job.tokens} tokens at depth ${depth}`);
        if (rep > 0) samples.push(job.tokens / s); // rep 0: the warm-up
      }
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      const std = Math.sqrt(samples.reduce((a, b) => a + (b - mean) ** 2, 0) / samples.length);
      byDepth.push([depth, { mean, std }]);
      console.error(`llama.cpp ${job.kv} tg${job.tokens} @ d${depth}: ${mean.toFixed(2)} tok/s`);
    }
  } finally {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }
  return { byDepth, release: llama.llamaCppRelease.release, version };
}

const [jobPath, outPath] = process.argv.slice(2);
if (!jobPath || !outPath) {
  console.error('usage: node --import tsx scripts/bench-depth-llama.ts JOB.json OUT.json');
  process.exit(2);
}
try {
  const result = await run(JSON.parse(readFileSync(jobPath, 'utf8')) as DepthJob);
  writeFileSync(outPath, JSON.stringify(result));
} catch (e) {
  console.error(`error: ${(e as Error).stack ?? String(e)}`);
  process.exitCode = 1;
}
