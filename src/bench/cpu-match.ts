/**
 * The quality figure beside every speed figure ("CPU match", as webgpu-bench reports it): llama.cpp
 * (node-llama-cpp's prebuilt CPU build) generates greedy tokens for the prompt; our engine is then fed
 * the same tokens (teacher-forced) and the share of positions where our top-1 token equals llama.cpp's
 * is reported. ≥ 0.98 is what quantized files reach here (llama.cpp rounds activations to Q8 in its
 * quantized CPU matmuls; our GPU path keeps them f32), 1.0 for F32/F16. Node only.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { top1Agreement } from './perplexity.ts';

/** llama.cpp's greedy continuation of `promptIds` (BOS included as given). */
export interface CpuReference {
  /** 'llama.cpp (node-llama-cpp x.y.z, CPU)'. */
  engine: string;
  promptIds: number[];
  outputIds: number[];
}

/**
 * Runs llama.cpp greedily (temperature 0, F32 KV cache, 1 thread) on a GGUF file.
 * @param promptIds prompt token ids (use the same ids our engine saw, BOS included).
 * @throws Error when node-llama-cpp is not installed (a devDependency) or cannot load the file.
 */
export async function llamaCppGreedy(
  modelPath: string,
  promptIds: number[],
  nTokens: number,
): Promise<CpuReference> {
  const mod = 'node-llama-cpp';
  const { getLlama, LlamaLogLevel } = (await import(
    /* @vite-ignore */ mod
  )) as typeof import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  try {
    const context = await model.createContext({
      contextSize: Math.max(256, promptIds.length + nTokens + 8),
      threads: 1,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    const seq = context.getSequence();
    type Token = Parameters<typeof seq.controlledEvaluate>[0][number] extends infer I
      ? I extends number
        ? I
        : never
      : never;
    const out: number[] = [];
    let input = promptIds as unknown as Token[];
    for (let step = 0; step < nTokens; step++) {
      const items = input.map((t, i) =>
        i === input.length - 1 ? [t, { generateNext: { token: true, options: { temperature: 0 } } }] : t,
      ) as Parameters<typeof seq.controlledEvaluate>[0];
      const res = await seq.controlledEvaluate(items);
      const next = res[input.length - 1]?.next?.token;
      if (next == null) throw new Error(`llama.cpp generated no token at step ${step}`);
      out.push(next as number);
      input = [next as unknown as Token];
    }
    await context.dispose();
    const entry = fileURLToPath(import.meta.resolve(mod));
    const pkgJson = `${entry.slice(0, entry.lastIndexOf('/node-llama-cpp/') + '/node-llama-cpp/'.length)}package.json`;
    const version = (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version;
    return {
      engine: `llama.cpp (node-llama-cpp ${version}, CPU, 1 thread)`,
      promptIds: [...promptIds],
      outputIds: out,
    };
  } finally {
    await model.dispose();
  }
}

/**
 * Share of positions where our teacher-forced top-1 equals llama.cpp's greedy token.
 * @param ourTop1 our top-1 after each of promptIds[..] + outputIds[..] (as `scoreTokens(ids).top1`), i.e.
 *   [promptIds.length + outputIds.length − 1] entries.
 */
export function cpuMatch(ref: CpuReference, ourTop1: ArrayLike<number>): number {
  const p = ref.promptIds.length;
  const ours = Array.from({ length: ref.outputIds.length }, (_, i) => ourTop1[p - 1 + i]);
  return top1Agreement(ours, ref.outputIds);
}

/** What {@link llamaCppGreedyIsolated} gives: llama.cpp's tokens, or why there are none. */
export type IsolatedCpuReference = { ok: true; ref: CpuReference } | { ok: false; reason: string };

/**
 * {@link llamaCppGreedy} in a child Node process (./cpu-match-child.ts), so that llama.cpp aborting on a
 * file it cannot handle (a C++ exception such as `std::out_of_range` on a vocabulary of empty or identical
 * tokens ends the whole process with SIGABRT, exit 134) costs the check, not the benchmark. Never throws:
 * a crash, an error or `timeoutMs` passing gives the reason (with llama.cpp's last stderr line).
 */
export async function llamaCppGreedyIsolated(
  modelPath: string,
  promptIds: number[],
  nTokens: number,
  opts: { timeoutMs?: number } = {},
): Promise<IsolatedCpuReference> {
  const { spawn } = await import(/* @vite-ignore */ 'node:child_process');
  const child = fileURLToPath(new URL('./cpu-match-child.ts', import.meta.url));
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child], {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d).slice(-4000);
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
    const lastLine = () =>
      stderr
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .at(-1)
        ?.slice(0, 300);
    p.on('error', (e: Error) => {
      clearTimeout(timer);
      resolve({ ok: false, reason: `llama.cpp could not be started: ${e.message}` });
    });
    p.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      const out = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0) {
        try {
          const r = JSON.parse(out) as { ref?: CpuReference; error?: string };
          if (r.ref) return resolve({ ok: true, ref: r.ref });
          if (r.error) return resolve({ ok: false, reason: r.error });
        } catch {}
      }
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const words = lastLine();
      resolve({
        ok: false,
        reason:
          signal === 'SIGKILL'
            ? `llama.cpp did not finish within ${Math.round((opts.timeoutMs ?? 300_000) / 1000)} s`
            : `llama.cpp crashed on this file (its process ${how}${words ? `: ${words}` : ''})`,
      });
    });
    p.stdin.end(JSON.stringify({ modelPath, promptIds, nTokens }));
  });
}
