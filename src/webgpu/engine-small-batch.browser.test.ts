/**
 * Small batches through the decode mmv kernels (`smallBatch: 'mmv'`) through the engine on stories260K
 * (SwiftShader, where the adapter's default is off): ModelInfo reports the choice; greedy output equals
 * llama.cpp's (tests/golden/stories260K.json) for the golden prompts of ≤ 9 tokens, and the prefill
 * kernels' (`smallBatch: 'tile'`) for prompts of 1..9 tokens; speculative decoding by lookup, whose verify
 * passes of 2..9 tokens run through the small-batch kernels, equals plain greedy decoding; a second
 * `'trial'` load of the same model and kernels reuses the first's outcome (`cached`); a bad option value
 * is refused before anything loads. The kernels against the float64 reference:
 * model/small-batch.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { isEngineError } from '../core/errors.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';
import { clearSmallBatchTrials } from './model/small-batch.ts';

const MODEL_URL = stories260kUrl();

describe('smallBatch through the engine on stories260K', () => {
  const mmv = new WebGpuEngine({ openModel: openModelSource, smallBatch: 'mmv' });
  let tile: WebGpuEngine;
  beforeAll(async () => {
    const info = await mmv.load({ url: MODEL_URL }, { contextLength: 256 });
    // Software adapters: the small batches' attention is the prefill kernel (kernel-plan.ts attentionPolicyFor).
    expect(info.kernels?.smallBatch).toEqual({
      maxTokens: 8,
      chosenBy: 'option',
      attention: 'prefill-kernel',
    });
    tile = new WebGpuEngine({ openModel: openModelSource, gpu: mmv.gpuContext, smallBatch: 'tile' });
    const t = await tile.load({ url: MODEL_URL }, { contextLength: 256 });
    expect(t.kernels?.smallBatch).toEqual({ maxTokens: 0, chosenBy: 'option' });
  }, 180_000);
  afterAll(async () => {
    await tile?.dispose();
    await mmv.dispose();
  });

  it('greedy output equals llama.cpp for the golden prompts of at most 9 tokens (F16 KV cache)', async () => {
    const cases = golden.generationF16.cases.filter((c) => c.promptIds.length <= 9);
    expect(cases.length).toBeGreaterThanOrEqual(2);
    for (const c of cases) {
      const r = await mmv.generate({ promptTokenIds: c.promptIds, maxTokens: 32, ignoreEos: true });
      expect(r.outputTokenIds, JSON.stringify(c.prompt)).toEqual(c.outputIds.slice(0, 32));
    }
  }, 180_000);

  it('prompts of 1..9 tokens: the same greedy output as the prefill kernels', async () => {
    const ids = golden.generationF16.cases.find((c) => c.promptIds.length > 20)!.promptIds;
    for (let n = 1; n <= 9; n++) {
      const req = { promptTokenIds: ids.slice(0, n), maxTokens: 12, ignoreEos: true };
      const a = await mmv.generate(req);
      const b = await tile.generate(req);
      expect(a.outputTokenIds, `${n} tokens`).toEqual(b.outputTokenIds);
    }
  }, 180_000);

  it('speculative decoding by lookup equals plain greedy decoding (verify passes through mmv)', async () => {
    let drafted = 0;
    let accepted = 0;
    for (const prompt of [
      'The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog sat on the',
      'zebra quantum violin',
    ]) {
      const base = { prompt, maxTokens: 32, ignoreEos: true };
      const plain = await tile.generate(base);
      for (const draftMax of [1, 4, 8]) {
        const spec = await mmv.generate({ ...base, draft: { type: 'lookup', draftMax } });
        expect(spec.outputTokenIds, `${prompt.slice(0, 12)}, draftMax ${draftMax}`).toEqual(
          plain.outputTokenIds,
        );
        drafted += spec.speculative!.drafted;
        accepted += spec.speculative!.accepted;
      }
    }
    // Real drafts, some accepted and some rejected.
    expect(accepted).toBeGreaterThan(0);
    expect(accepted).toBeLessThan(drafted);
  }, 300_000);

  it("'trial': a second load of the same model and kernels on this adapter reuses the trial's outcome (cached), another KV type trials again", async () => {
    clearSmallBatchTrials();
    const gpu = mmv.gpuContext;
    const load = async (kvType: 'f16' | 'f32') => {
      const e = new WebGpuEngine({ openModel: openModelSource, gpu, smallBatch: 'trial' });
      try {
        const info = await e.load({ url: MODEL_URL }, { contextLength: 64, kvType });
        // The choice is live: small batches run where it says so.
        const sb = info.kernels!.smallBatch!;
        expect(e.llama!.usesSmallBatch(2)).toBe(sb.maxTokens >= 2);
        const r = await e.generate({ promptTokenIds: [1, 403, 261], maxTokens: 6, ignoreEos: true });
        return { sb, ids: r.outputTokenIds };
      } finally {
        await e.dispose();
      }
    };
    const first = await load('f16');
    expect(first.sb.chosenBy).toBe('trial');
    expect(first.sb.trials?.map((t) => t.tokens)).toEqual([4, 8]);
    const again = await load('f16');
    expect(again.sb.chosenBy).toBe('cached');
    expect(again.sb.maxTokens).toBe(first.sb.maxTokens);
    expect(again.sb.trials).toEqual(first.sb.trials);
    expect(again.ids).toEqual(first.ids);
    const other = await load('f32');
    expect(other.sb.chosenBy).toBe('trial');
  }, 300_000);

  it('refuses a bad smallBatch value with invalid_argument before loading', async () => {
    const bad = new WebGpuEngine({
      openModel: openModelSource,
      gpu: mmv.gpuContext,
      smallBatch: 'on' as never,
    });
    const e = await bad.load({ url: MODEL_URL }).catch((x) => x);
    expect(isEngineError(e, 'invalid_argument'), String(e)).toBe(true);
    expect(String(e.message)).toMatch(/smallBatch/);
    await bad.dispose();
  });
});
