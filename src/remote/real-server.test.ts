/**
 * The remote checks against a real OpenAI-compatible server, when one is given:
 * `REMOTE_BASE_URL=http://127.0.0.1:8080 [REMOTE_MODEL=NAME] npx vitest run --project unit src/remote/real-server.test.ts`
 * (vLLM: `vllm serve MODEL`; llama.cpp: `llama-server -m models/stories260K.gguf --port 8080`).
 * Skipped when REMOTE_BASE_URL is unset.
 */
import { describe, expect, it } from 'vitest';
import { RemoteBenchError, runRemoteBench } from '../bench/remote.ts';
import { RemoteEngine } from './engine.ts';

const BASE = process.env.REMOTE_BASE_URL;

describe.skipIf(!BASE)('a real OpenAI-compatible server (REMOTE_BASE_URL)', () => {
  const base = BASE ?? '';
  const plan = {
    prompts: [{ name: 'p', text: 'Once upon a time' }],
    maxTokens: 16,
    runs: 2,
    warmup: 1,
    ignoreEos: true,
  };
  for (const api of ['chat', 'completions'] as const)
    it(`${api}: streams with usage, counts tokens, sweeps`, async () => {
      const e = new RemoteEngine({ baseUrl: base, model: process.env.REMOTE_MODEL, api });
      const r = await runRemoteBench({ engine: e, plan, concurrency: [1, 4] });
      for (const run of r.runs) {
        expect(run.tokenCount).toBe('usage');
        expect(run.outputTokens).toBe(16);
        expect(run.engineReported?.completionTokens).toBe(16);
        expect(run.ttftMs).toBeGreaterThan(0);
        expect(run.e2eMs).toBeGreaterThanOrEqual(run.ttftMs);
        expect(run.itlMs).toHaveLength(15);
      }
      expect(r.sweep?.map((p) => p.completed)).toEqual([1, 4]);
      expect(r.summary.decodeTokensPerSecond.n).toBe(2);
    });

  it('an unknown model is model_not_found, a key never reaches the result', async () => {
    const bad = new RemoteEngine({ baseUrl: base, model: 'no-such-model-xyz' });
    await expect(bad.load()).rejects.toMatchObject({ code: 'model_not_found' });
    const key = 'sk-real-SECRET-0000';
    const e = new RemoteEngine({ baseUrl: base, model: process.env.REMOTE_MODEL, apiKey: key });
    try {
      const r = await runRemoteBench({ engine: e, plan: { ...plan, runs: 1, warmup: 0 } });
      expect(JSON.stringify(r)).not.toContain(key);
    } catch (err) {
      // A server that checks keys refuses this one: the refusal must not echo it either.
      expect((err as Error).message).not.toContain(key);
      if (err instanceof RemoteBenchError) expect(JSON.stringify(err.result)).not.toContain(key);
    }
  });
});
