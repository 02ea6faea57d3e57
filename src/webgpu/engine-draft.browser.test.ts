/**
 * Speculative decoding with a draft model (LoadOptions.draft, `draft: { type: 'model' }`) on stories260K
 * with its own Q8_0 and Q4_0 copies (made by the project's quantizer) as drafts: greedy output identical
 * to plain greedy decoding, token for token, across prompts and draft lengths, with both KV caches rolled
 * back after every rejection (the draft's is checked by the outputs staying exact over many passes) and
 * high acceptance for a copy of the target; an abort in the middle (or between the target's prefill and
 * the draft's) leaves both models exact, drafting and accepting as before it; a draft with another
 * vocabulary (size, or token texts) is refused (by load or setDraft), and one whose allocation fails
 * (out_of_memory), with the target kept: the same model object, a plain engine's output. Under a JSON
 * schema, drafted greedy output is the constrained loop's token for token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { GenerateRequest } from '../core/types.ts';
import { type QuantizeFtype, quantizeGguf } from '../gguf/quantize-model.ts';
import { openGguf } from '../gguf/reader.ts';
import { openModelSource } from '../library/opener.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { stories260kUrl } from '../testing/stories260k-url.ts';
import { WebGpuEngine } from './engine.ts';
import { ModelDrafter } from './speculative.ts';

const MODEL_URL = stories260kUrl();

async function quantized(type: QuantizeFtype): Promise<Blob> {
  const bytes = new Uint8Array(await (await fetch(MODEL_URL)).arrayBuffer());
  const src = await openGguf({ blob: new Blob([bytes]) });
  return new Blob([(await quantizeGguf(src, type)).bytes as Uint8Array<ArrayBuffer>]);
}

const PROMPTS = [
  'Once upon a time, there was a little girl named Lily.',
  'The cat sat on the mat. The dog sat on the log.',
  'Tom was sad.',
];

describe.each(['Q8_0', 'Q4_0'] as QuantizeFtype[])('stories260K with its %s copy as draft', (type) => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  beforeAll(async () => {
    const info = await engine.load(
      { url: MODEL_URL },
      { contextLength: 192, draft: { blob: await quantized(type), name: `stories260K-${type}` } },
    );
    expect(info.draft?.nLayers).toBe(info.nLayers);
    expect(info.draft!.weightBytes).toBeLessThan(info.weightBytes);
  }, 120_000);
  afterAll(() => engine.dispose());

  it('greedy output equals plain greedy across prompts and draft lengths', async () => {
    let drafted = 0;
    let accepted = 0;
    for (const [i, prompt] of PROMPTS.entries()) {
      const base: GenerateRequest = { prompt, maxTokens: 40, ignoreEos: true };
      const plain = await engine.generate(base);
      for (const draftMax of [1 + i, 4 + i, 16 - 3 * i].slice(0, type === 'Q8_0' ? 3 : 2)) {
        const spec = await engine.generate({ ...base, draft: { type: 'model', draftMax } });
        const what = `prompt ${i}, draftMax ${draftMax}`;
        expect(spec.outputTokenIds, what).toEqual(plain.outputTokenIds);
        const s = spec.speculative!;
        expect(s.targetPasses + s.accepted, what).toBe(spec.outputTokenIds.length - 1);
        drafted += s.drafted;
        accepted += s.accepted;
      }
    }
    console.log(`${type} draft: accepted ${accepted} of ${drafted}`);
    // A quantized copy of the target agrees with it on most tokens.
    expect(accepted / drafted).toBeGreaterThan(type === 'Q8_0' ? 0.8 : 0.5);
  }, 300_000);

  it('under a JSON schema: greedy output is constrained greedy decoding’s; both models exact after it', async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 12 },
        n: { type: 'integer', minimum: 0, maximum: 99 },
      },
      required: ['name', 'n'],
      additionalProperties: false,
    };
    const base: GenerateRequest = {
      prompt: PROMPTS[0],
      maxTokens: 40,
      responseFormat: { type: 'json_schema', schema },
    };
    const plain = await engine.generate(base);
    for (const draftMax of [2, 5]) {
      const spec = await engine.generate({ ...base, draft: { type: 'model', draftMax } });
      const what = `draftMax ${draftMax}: ${JSON.stringify(spec.text)}`;
      expect(spec.outputTokenIds, what).toEqual(plain.outputTokenIds);
      expect(spec.formatComplete, what).toBe(true);
      const s = spec.speculative!;
      expect(s.targetPasses + s.accepted, what).toBe(spec.outputTokenIds.length - 1);
      // The draft model drafts under the grammar's masks too, so a copy of the target keeps drafting through
      // the JSON; unmasked (its free text), 2–4 drafts of 21 tokens survived the grammar's cut.
      console.log(
        `${type} draft under a schema, draftMax ${draftMax}: accepted ${s.accepted} of ${s.drafted}`,
      );
      expect(s.accepted / s.drafted, what).toBeGreaterThan(0.8);
      expect(s.targetPasses, what).toBeLessThanOrEqual(
        Math.ceil((spec.outputTokenIds.length - 1) / draftMax),
      );
    }
    // Sampled under the schema, drafted the same way: the acceptance rule keeps drafts, the JSON is whole.
    const sampled = await engine.generate({ ...base, temperature: 0.9, seed: 11, draft: { type: 'model' } });
    const what = JSON.stringify(sampled.text);
    expect(sampled.formatComplete, what).toBe(true);
    const value = JSON.parse(sampled.text);
    expect(Object.keys(value), what).toEqual(['name', 'n']);
    expect(Number.isInteger(value.n) && value.n >= 0 && value.n <= 99, what).toBe(true);
    const ss = sampled.speculative!;
    console.log(`${type} draft under a schema, sampled: accepted ${ss.accepted} of ${ss.drafted}`);
    expect(ss.accepted / ss.drafted, what).toBeGreaterThan(0.5);
    // The draft model still drafts exactly after it (its KV cache rolled back through the cut drafts).
    const after = { prompt: PROMPTS[1], maxTokens: 24, ignoreEos: true };
    expect((await engine.generate({ ...after, draft: { type: 'model' } })).outputTokenIds).toEqual(
      (await engine.generate(after)).outputTokenIds,
    );
  });

  it("each draft is the draft model's own greedy continuation of the history, rejections rolled back", async () => {
    // Every call of the draft model (history, n) → drafts, recorded; then a plain engine on the draft's
    // file continues each history greedily from an empty cache. A draft cache left holding rejected
    // tokens (a missed rollback, a stale row) proposes something else, though the output stays exact.
    const calls: { history: number[]; drafts: number[] }[] = [];
    const draft = ModelDrafter.prototype.draft;
    ModelDrafter.prototype.draft = async function (this: ModelDrafter, history, n) {
      const drafts = await draft.call(this, history, n);
      calls.push({ history: [...history], drafts: [...drafts] });
      return drafts;
    };
    let spec: Awaited<ReturnType<typeof engine.generate>>;
    try {
      spec = await engine.generate({
        prompt: PROMPTS[1],
        maxTokens: 40,
        ignoreEos: true,
        draft: { type: 'model', draftMax: 4 },
      });
    } finally {
      ModelDrafter.prototype.draft = draft;
    }
    const s = spec.speculative!;
    // The Q4_0 copy's drafts are rejected often (so rollbacks are checked); the Q8_0 copy's rarely.
    if (type === 'Q4_0') expect(s.accepted).toBeLessThan(s.drafted);
    expect(calls.length).toBeGreaterThan(3);
    const ref = new WebGpuEngine({ openModel: openModelSource });
    try {
      await ref.load({ blob: await quantized(type) }, { contextLength: 192 });
      let same = 0;
      let total = 0;
      for (const { history, drafts } of calls) {
        const r = await ref.generate({ promptTokenIds: history, maxTokens: drafts.length, ignoreEos: true });
        total += drafts.length;
        same += drafts.filter((d, k) => d === r.outputTokenIds[k]).length;
      }
      // Another kernel order (a prefill from 0 against steps on a kept cache) may flip a near tie.
      expect(same / total, `${same} of ${total} draft tokens as the draft model continues`).toBeGreaterThan(
        0.95,
      );
    } finally {
      await ref.dispose();
    }
  }, 300_000);

  it('an abort mid-generation leaves both models exact', async () => {
    const req: GenerateRequest = { prompt: PROMPTS[0], maxTokens: 30, ignoreEos: true };
    const plain = await engine.generate(req);
    // What the draft model proposes and the target keeps, before any abort: greedy on both sides, so a
    // run after the aborts must draft and accept exactly as many (a draft model's cache or state left
    // stale by an abort would draft other tokens: the output stays exact, the counts would not).
    const before = await engine.generate({ ...req, draft: { type: 'model', draftMax: 3 } });
    expect(before.speculative?.drafted).toBeGreaterThan(0);
    const ac = new AbortController();
    let n = 0;
    const cut = await engine.generate(
      { ...req, draft: { type: 'model', draftMax: 5 } },
      () => ++n === 9 && ac.abort(),
      ac.signal,
    );
    expect(cut.finishReason).toBe('aborted');
    expect(cut.outputTokenIds).toEqual(plain.outputTokenIds.slice(0, 9));
    const again = await engine.generate({ ...req, draft: { type: 'model', draftMax: 3 } });
    expect(again.outputTokenIds).toEqual(plain.outputTokenIds);
    expect(again.speculative).toEqual(before.speculative);
    // Stopped after the target's prefill, during the draft's: 'aborted' with no tokens, nothing broken.
    const model = engine.llama!;
    const prefill = model.prefill;
    const ac2 = new AbortController();
    model.prefill = async (...a) => {
      const r = await prefill.apply(model, a);
      ac2.abort();
      return r;
    };
    let stopped: Awaited<ReturnType<typeof engine.generate>>;
    try {
      stopped = await engine.generate({ ...req, draft: { type: 'model' } }, undefined, ac2.signal);
    } finally {
      model.prefill = prefill;
    }
    expect(stopped.finishReason).toBe('aborted');
    expect(stopped.outputTokenIds).toEqual([]);
    const after = await engine.generate({ ...req, draft: { type: 'model', draftMax: 3 } });
    expect(after.outputTokenIds).toEqual(plain.outputTokenIds);
    expect(after.speculative).toEqual(before.speculative);
    // Sampled with all the mass on one token (topK 1): the draft model's drafts under the acceptance rule.
    const sampled = await engine.generate({ ...req, temperature: 0.8, topK: 1, draft: { type: 'model' } });
    expect(sampled.outputTokenIds).toEqual(plain.outputTokenIds);
    // The lookup drafter still works beside a loaded draft model.
    const lookup = await engine.generate({ ...req, draft: { type: 'lookup' } });
    expect(lookup.outputTokenIds).toEqual(plain.outputTokenIds);
  });
});

describe('draft model: bad input keeps the target', () => {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  const req: GenerateRequest = { prompt: 'Once upon a time, there was', maxTokens: 12, ignoreEos: true };
  /** The target's greedy ids from an engine that never saw a draft. */
  let plainIds: number[];
  beforeAll(async () => {
    const plain = new WebGpuEngine({ openModel: openModelSource });
    try {
      await plain.load({ url: MODEL_URL }, { contextLength: 64 });
      plainIds = (await plain.generate(req)).outputTokenIds;
    } finally {
      await plain.dispose();
    }
  }, 60_000);
  afterAll(() => engine.dispose());

  const cases: [string, () => Uint8Array, RegExp][] = [
    [
      'another vocabulary size',
      () =>
        makeRandomLlamaGguf({ seed: 45, nLayers: 1, nEmbd: 32, nFF: 64, nHead: 2, nHeadKv: 2, nVocab: 300 }),
      /300 tokens but the target's has 512/,
    ],
    [
      'the same size, other token texts',
      () =>
        makeRandomLlamaGguf({ seed: 46, nLayers: 1, nEmbd: 32, nFF: 64, nHead: 2, nHeadKv: 2, nVocab: 512 }),
      /the draft model's token \d+ is .* but the target's is/,
    ],
  ];
  for (const [name, bytes, pattern] of cases) {
    it(`load with a draft of ${name}: the typed error, the target stays loaded and exact`, async () => {
      const err = await engine
        .load(
          { url: MODEL_URL },
          { contextLength: 64, draft: { blob: new Blob([bytes() as Uint8Array<ArrayBuffer>]) } },
        )
        .catch((e) => e);
      expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
      expect(String(err)).toMatch(pattern);
      expect(engine.modelInfo?.draft).toBeUndefined();
      expect((await engine.generate(req)).outputTokenIds).toEqual(plainIds);
    });

    it(`setDraft of ${name} beside a loaded draft: refused, the same target model generates exactly, no draft left`, async () => {
      await engine.load({ url: MODEL_URL }, { contextLength: 64 });
      const target = engine.llama;
      // The target's own file as a draft: the same vocabulary, every draft accepted.
      const own = new Blob([await (await fetch(MODEL_URL)).arrayBuffer()]);
      const d = await engine.setDraft({ blob: own, name: 'own copy' });
      expect(d?.nLayers).toBe(engine.modelInfo?.nLayers);
      const drafted = await engine.generate({ ...req, draft: { type: 'model', draftMax: 3 } });
      expect(drafted.outputTokenIds).toEqual(plainIds);
      expect(drafted.speculative!.accepted).toBe(drafted.speculative!.drafted);

      const err = await engine
        .setDraft({ blob: new Blob([bytes() as Uint8Array<ArrayBuffer>]) })
        .catch((e) => e);
      expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
      expect(String(err)).toMatch(pattern);
      // Not loaded again: the same LlamaModel object, and its output is a plain engine's.
      expect(engine.llama).toBe(target);
      expect(engine.modelInfo?.draft).toBeUndefined();
      expect((await engine.generate(req)).outputTokenIds).toEqual(plainIds);
      // The draft loaded before the refusal is gone too.
      const noDraft = await engine.generate({ ...req, draft: { type: 'model' } }).catch((e) => e);
      expect(isEngineError(noDraft, 'invalid_argument'), String(noDraft)).toBe(true);
      expect(String(noDraft)).toMatch(/needs a draft model/);
    }, 60_000);
  }

  it("a draft that does not fit on the device: out_of_memory naming the target's bytes, the target kept and exact, no draft left", async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 64 });
    const target = engine.llama;
    const device = engine.gpuContext!.device;
    const own = new Blob([await (await fetch(MODEL_URL)).arrayBuffer()]);
    // The draft's first layer weight asks for more than the device's largest buffer: the allocation
    // fails as a full device fails it (an error in the load's out-of-memory / validation scopes).
    const create = device.createBuffer;
    let failed = 0;
    device.createBuffer = function (this: GPUDevice, d: GPUBufferDescriptor) {
      const big = failed === 0 && /^blk\.0\./.test(d.label ?? '');
      if (big) failed++;
      return create.call(this, big ? { ...d, size: device.limits.maxBufferSize + 256 } : d);
    };
    let err: unknown;
    try {
      err = await engine.setDraft({ blob: own, name: 'too big' }).catch((e) => e);
    } finally {
      device.createBuffer = create;
    }
    expect(failed).toBe(1);
    expect(isEngineError(err, 'out_of_memory'), String(err)).toBe(true);
    expect(String(err)).toMatch(
      /the draft model does not fit beside the target \(\d+ bytes of weights and \d+ of KV cache already on the device\): GPU allocation failed/,
    );
    expect(engine.llama).toBe(target);
    expect(engine.modelInfo?.draft).toBeUndefined();
    expect((await engine.generate(req)).outputTokenIds).toEqual(plainIds);
    const noDraft = await engine.generate({ ...req, draft: { type: 'model' } }).catch((e) => e);
    expect(String(noDraft)).toMatch(/needs a draft model/);
    // A draft that fits loads afterwards.
    expect((await engine.setDraft({ blob: own, name: 'own copy' }))?.nLayers).toBe(engine.modelInfo?.nLayers);
  }, 60_000);

  it('while setDraft loads, generate, scoreTokens and another setDraft are refused naming the draft load; after it they run', async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 64 });
    const own = new Blob([await (await fetch(MODEL_URL)).arrayBuffer()]);
    const loading = engine.setDraft({ blob: own, name: 'own copy' });
    const during = await Promise.all([
      engine.generate({ prompt: 'Once', maxTokens: 2 }).catch((e) => e),
      engine.scoreTokens([1, 2, 3]).catch((e) => e),
      engine.setDraft({ blob: own }).catch((e) => e),
    ]);
    for (const [err, action] of [
      [during[0], 'generate'],
      [during[1], 'score'],
      [during[2], 'set the draft'],
    ]) {
      expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
      expect(String(err)).toContain(`a draft model is loading on this engine (setDraft): ${action} after it`);
    }
    expect((await loading)?.nLayers).toBe(engine.modelInfo?.nLayers);
    const out = await engine.generate({
      prompt: 'Once',
      maxTokens: 2,
      draft: { type: 'model', draftMax: 2 },
    });
    expect(out.outputTokenIds.length).toBe(2);
  }, 60_000);

  it("refuses draft type 'model' without a draft model, and setDraft without a target", async () => {
    await engine.load({ url: MODEL_URL }, { contextLength: 64 });
    const err = await engine
      .generate({ prompt: 'Once', maxTokens: 4, draft: { type: 'model' } })
      .catch((e) => e);
    expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
    expect(String(err)).toMatch(/setDraft or LoadOptions.draft/);
    await engine.unload();
    const none = await engine.setDraft({ url: MODEL_URL }).catch((e) => e);
    expect(isEngineError(none, 'not_loaded'), String(none)).toBe(true);
  });
});
