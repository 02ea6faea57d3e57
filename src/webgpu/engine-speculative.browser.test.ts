/**
 * Speculative decoding by lookup through the engine (GenerateRequest.draft) on stories260K: greedy output
 * identical to plain greedy decoding token for token across prompts (a story, a summarising prompt that
 * repeats its input, text that never repeats), every draftMax 1..8 and n-gram lengths 1..3, with f16 and
 * f32 KV caches; the conversation continued afterwards (its prompt = the first prompt + output + more)
 * equals plain decoding too; the stats add up (tokens per target pass above one where the lookup hits);
 * an abort in the middle of a verify pass's tokens ends the generation and leaves the model exact; bad
 * drafts are refused before any generation. Sampled (the acceptance rule over the logits read back from
 * each verify pass): a distribution with all its mass on one token (topK 1) gives greedy output, a
 * repetition penalty at temperature 0 plain penalised decoding's; the rule's distribution itself is
 * tested by chi-square in speculative.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { GenerateRequest, KvType } from '../core/types.ts';
import { openModelSource } from '../library/opener.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';

const MODEL_URL = stories260kUrl();

const PROMPTS = [
  'Once upon a time, there was a little girl named Lily. She liked to play with her ball.',
  'The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog sat on the',
  'Tom had a red car. Tom liked the red car. Summary: Tom',
  'zebra quantum violin',
];

describe.each(['f16', 'f32'] as KvType[])('speculative decoding by lookup (%s KV cache)', (kvType) => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  beforeAll(async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 256, kvType });
  }, 120_000);
  afterAll(() => engine.dispose());

  it('greedy output equals plain greedy for every prompt, draftMax 1..8 and ngramMax 1..3', async () => {
    let drafted = 0;
    let accepted = 0;
    for (const [i, prompt] of PROMPTS.entries()) {
      const base: GenerateRequest = { prompt, maxTokens: 40, ignoreEos: true };
      const plain = await engine.generate(base);
      const draftMaxes = kvType === 'f16' ? [1, 2, 3, 4, 5, 6, 7, 8] : [1 + (i % 8), 8 - (i % 4)];
      for (const draftMax of draftMaxes) {
        const ngramMax = 1 + ((draftMax + i) % 3);
        const spec = await engine.generate({ ...base, draft: { type: 'lookup', draftMax, ngramMax } });
        const what = `prompt ${i}, draftMax ${draftMax}, ngramMax ${ngramMax}`;
        expect(spec.outputTokenIds, what).toEqual(plain.outputTokenIds);
        expect(spec.text, what).toBe(plain.text);
        const s = spec.speculative!;
        expect(s.accepted, what).toBeLessThanOrEqual(s.drafted);
        // Each pass keeps its accepted drafts plus one token of its own; the first token is the prefill's.
        expect(s.targetPasses + s.accepted, what).toBe(spec.outputTokenIds.length - 1);
        drafted += s.drafted;
        accepted += s.accepted;
      }
    }
    // The repeating prompts give real drafts and real acceptances (and real rejections elsewhere).
    expect(drafted).toBeGreaterThan(100);
    expect(accepted).toBeGreaterThan(20);
    expect(accepted).toBeLessThan(drafted);
  }, 300_000);

  it('continuing the conversation afterwards equals plain decoding', async () => {
    const first = await engine.generate({
      prompt: PROMPTS[1],
      maxTokens: 24,
      ignoreEos: true,
      draft: { type: 'lookup' },
    });
    const more = await engine.tokenize(' The cat sat on the', false);
    const next: GenerateRequest = {
      promptTokenIds: [...first.promptTokenIds, ...first.outputTokenIds, ...more],
      maxTokens: 24,
      ignoreEos: true,
    };
    const spec = await engine.generate({ ...next, draft: { type: 'lookup', draftMax: 6 } });
    const plain = await engine.generate(next);
    expect(spec.outputTokenIds).toEqual(plain.outputTokenIds);
    expect(spec.speculative!.accepted).toBeGreaterThan(0);
    expect(spec.speculative!.targetPasses).toBeLessThan(spec.outputTokenIds.length - 1);
  });

  it('an abort in the middle of a verify pass’s tokens ends it; the model stays exact', async () => {
    const req: GenerateRequest = {
      prompt: PROMPTS[1],
      maxTokens: 40,
      ignoreEos: true,
      draft: { type: 'lookup', draftMax: 8 },
    };
    const plain = await engine.generate({ ...req, draft: undefined });
    // Where each verify pass starts (tokens out before it), to abort at the first of a pass's tokens.
    const model = engine.llama!;
    const verify = model.verify;
    const starts: number[] = [];
    let seen = 0;
    model.verify = (...a) => {
      starts.push(seen);
      return verify.apply(model, a);
    };
    try {
      await engine.generate(req, () => seen++);
    } finally {
      model.verify = verify;
    }
    starts.push(seen);
    const k = starts.findIndex((s, i) => i + 1 < starts.length && starts[i + 1] - s >= 3);
    expect(k, `passes start at ${starts}`).toBeGreaterThanOrEqual(0);
    const at = starts[k] + 1; // the first token of a pass that kept ≥ 3
    const ac = new AbortController();
    let n = 0;
    const cut = await engine.generate(req, () => ++n === at && ac.abort(), ac.signal);
    expect(cut.finishReason).toBe('aborted');
    expect(cut.outputTokenIds).toEqual(plain.outputTokenIds.slice(0, at));
    const again = await engine.generate(req);
    expect(again.outputTokenIds).toEqual(plain.outputTokenIds);
  });
});

describe('sampled speculative decoding by lookup (the acceptance rule on the GPU path)', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  beforeAll(async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 128 });
  }, 120_000);
  afterAll(() => engine.dispose());
  const base: GenerateRequest = { prompt: PROMPTS[1], maxTokens: 32, ignoreEos: true };

  it('a sampling distribution with all its mass on one token (topK 1) gives greedy output', async () => {
    const plain = await engine.generate(base);
    for (const seed of [1, 2]) {
      const r = await engine.generate({
        ...base,
        temperature: 0.9,
        topK: 1,
        seed,
        draft: { type: 'lookup' },
      });
      expect(r.outputTokenIds).toEqual(plain.outputTokenIds);
      expect(r.speculative!.accepted).toBeGreaterThan(0);
    }
  });

  it('temperature 0 with a repetition penalty equals plain decoding with it (the penalty sees the drafts)', async () => {
    const req = { ...base, repetitionPenalty: 1.3, repetitionLastN: 16 };
    const plain = await engine.generate(req);
    const spec = await engine.generate({ ...req, draft: { type: 'lookup', draftMax: 5 } });
    expect(spec.outputTokenIds).toEqual(plain.outputTokenIds);
  });

  it('temperature 1: seeded and repeatable, seeds differ, the passes add up', async () => {
    const req = { ...base, temperature: 1, seed: 7, draft: { type: 'lookup' } } as const;
    const a = await engine.generate(req);
    const b = await engine.generate(req);
    const c = await engine.generate({ ...req, seed: 8 });
    expect(a.outputTokenIds).toEqual(b.outputTokenIds);
    expect(c.outputTokenIds).not.toEqual(a.outputTokenIds);
    expect(a.outputTokenIds.length).toBe(32);
    expect(a.speculative!.targetPasses + a.speculative!.accepted).toBe(31);
  });
});

describe('speculative decoding: bad requests', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  beforeAll(async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 64, batchSize: 4 });
  }, 120_000);
  afterAll(() => engine.dispose());

  for (const [name, req, pattern] of [
    ['returnLogits', { returnLogits: true, draft: { type: 'lookup' } }, /does not return logits/],
    ['draftMax past the batch', { draft: { type: 'lookup', draftMax: 4 } }, /batch \(4 tokens: at most 3/],
    ['an unknown type', { draft: { type: 'medusa' } }, /draft.type/],
  ] as const) {
    it(`refuses ${name} before generating`, async () => {
      let tokens = 0;
      const err = await engine
        .generate({ prompt: 'Once', maxTokens: 4, ...(req as object) }, () => tokens++)
        .catch((e) => e);
      expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
      expect(String(err)).toMatch(pattern);
      expect(tokens).toBe(0);
    });
  }

  it('drafts of up to batchSize − 1 run (default draftMax min(8, batch − 1))', async () => {
    const req = { prompt: PROMPTS[1], maxTokens: 20, ignoreEos: true };
    const plain = await engine.generate(req);
    const spec = await engine.generate({ ...req, draft: { type: 'lookup' } });
    expect(spec.outputTokenIds).toEqual(plain.outputTokenIds);
  });
});
