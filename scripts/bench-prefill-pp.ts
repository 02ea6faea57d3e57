// bench-prefill's part 2: llama-bench pp512 at each depth, ours (its bench CLI) and node-llama-cpp.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LlamaModel, Token } from 'node-llama-cpp';
import type { BenchResult } from '../src/bench/types.ts';
import { type BenchScratch, randomTokenIds } from './bench-common.ts';
import { CHROMIUM, DEPTHS, LLAMA_BATCH, PP, REPS } from './bench-prefill-args.ts';
import { getLlamaCpu } from './bench-prefill-engines.ts';
import { env, log, meanStd, type Stat } from './bench-prefill-run.ts';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Ours: `npm run bench -- --llama-bench` (its own Chromium) on the file; tests by depth. Its JSON goes to
 * `scratch`'s directory, and the child is `scratch.child` while it runs.
 */
export async function oursPp(path: string, scratch: BenchScratch): Promise<Map<number, Stat>> {
  const out = join(scratch.dir, 'pp.json');
  const args = [
    ...['--model', path, '--llama-bench', '--n-prompt', String(PP), '--n-gen', '0'],
    ...['--depth', DEPTHS.join(','), '--reps', String(REPS), '--no-profile', '--kv-type', 'f16'],
    ...['--timeout-s', '3600', ...(CHROMIUM ? ['--browser', CHROMIUM] : [])],
  ];
  log(`npm run bench -- ${args.join(' ')}`);
  await new Promise<void>((ok, fail) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bench.ts', ...args, '--json', out], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    scratch.child = c;
    c.stdout?.pipe(process.stderr);
    c.on('error', fail);
    c.on('close', (code, signal) => {
      scratch.child = undefined;
      if (code === 0) ok();
      else fail(new Error(`npm run bench -- --llama-bench failed (${signal ?? `exit ${code}`})`));
    });
  });
  const r = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
  env.adapter ??= r.device;
  return new Map((r.tests ?? []).map((t) => [t.depth, t.tokensPerSecond]));
}

/** node-llama-cpp, 1 thread: pp512 at each depth, as llama-bench (fill once, warm-up, reps). */
export async function llamaPp(path: string, nVocab: number): Promise<Map<number, Stat>> {
  const llama = await getLlamaCpu();
  const model: LlamaModel = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({
    contextSize: Math.max(...DEPTHS) + PP,
    sequences: 1,
    threads: 1,
    batchSize: LLAMA_BATCH,
  });
  const byDepth = new Map<number, Stat>();
  try {
    const seq = context.getSequence();
    const ids = (n: number, seed: number) => randomTokenIds(n, nVocab, seed) as unknown as Token[];
    for (const depth of DEPTHS) {
      await seq.clearHistory();
      if (depth > 0) await seq.evaluateWithoutGeneratingNewTokens(ids(depth, 7));
      const samples: number[] = [];
      for (let rep = 0; rep <= REPS; rep++) {
        if (seq.nextTokenIndex > depth)
          await seq.eraseContextTokenRanges([{ start: depth, end: seq.nextTokenIndex }]);
        const batch = ids(PP, 1000 + rep);
        const start = performance.now();
        await seq.evaluateWithoutGeneratingNewTokens(batch);
        const s = (performance.now() - start) / 1000;
        if (rep > 0) samples.push(PP / s); // rep 0: the warm-up
      }
      byDepth.set(depth, meanStd(samples));
      log(`llama.cpp pp${PP} @ d${depth}: ${byDepth.get(depth)!.mean.toFixed(1)} tok/s`);
    }
  } finally {
    await context.dispose();
    await model.dispose();
  }
  return byDepth;
}
