/**
 * One generation of engine.ts `WebGpuEngine`, from a validated request to its result: the prompt checked
 * against the vocabulary and the context, its prefill in batches that an abort can stop (progress in
 * `stats().prefill`), then the decode loop, greedy or sampled on the GPU (one 4-byte readback per token,
 * overlapped with the next step) or sampled on the CPU (`sampling: 'cpu'`), each token streamed as a
 * TokenEvent. It is apart from engine.ts, which owns the device, the loaded model and the engine API
 * (load, busy flag, device-lost errors), because the loop needs none of that: only the model, the
 * tokenizer, the engine's stats and its sampling option ({@link GenerationHost}).
 */

import { EngineError, isEngineError } from '../core/errors.ts';
import type {
  EngineStats,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  SpeculativeStats,
  TokenEvent,
} from '../core/types.ts';
import { describeNonFinite } from '../gguf/non-finite.ts';
import type { GrammarCompiler, TokenMatcher } from '../model/grammar.ts';
import { IncrementalDecoder } from '../model/tokenizer/incremental.ts';
import { checkPromptLength, checkPromptTokens } from '../model/tokenizer/prompt-bound.ts';
import type { Tokenizer } from '../model/tokenizer/types.ts';
import { mulberry32 } from '../util/prng.ts';
import { chainedTokens, constrainedTokens } from './decoder.ts';
import { applyTokenMask } from './kernels/mask.ts';
import type { LlamaModel } from './model/llama.ts';
import { Sampler } from './sampler.ts';
import {
  type Drafter,
  lookupDrafter,
  ModelDrafter,
  speculativeGreedy,
  speculativeSampled,
} from './speculative.ts';

/** What a generation needs from its engine. */
export interface GenerationHost {
  /** The loaded model's tokenizer. */
  tok: Tokenizer;
  /**
   * The engine's stats, read at each write (a load replaces the object): the prefill's progress,
   * `lastPrefill` and `lastDecode` are written into it.
   */
  stats: () => EngineStats;
  /** `WebGpuEngineOptions.sampling`: where sampled requests pick their token (default 'gpu'). */
  sampling?: 'gpu' | 'cpu';
  /** `WebGpuEngineOptions.decodeInFlight`: steps queued ahead of each readback (decoder.ts `ChainOptions.inFlight`). */
  decodeInFlight?: number;
  /** The draft model loaded beside the target (LoadOptions.draft), for `draft: { type: 'model' }`. */
  draftModel?: LlamaModel;
  /** The loaded model's grammar compiler (structured output, model/grammar.ts), made on first use. */
  grammar?: () => GrammarCompiler;
}

/** Greedy: no temperature, no repetition penalty, no logits returned (the argmax on the GPU suffices). */
function isGreedy(r: GenerateRequest): boolean {
  return (
    !r.temperature && (r.repetitionPenalty === undefined || r.repetitionPenalty === 1) && !r.returnLogits
  );
}

/**
 * Runs one generation of `req` on `model` (see engine.ts `WebGpuEngine.generate`, which validates the
 * request and holds the engine busy meanwhile).
 * With `responseFormat` (structured output) the schema or grammar is compiled first (model/grammar.ts),
 * so a bad one fails before any token; each step's logits are then masked to the tokens the grammar
 * allows (on the GPU: kernels/mask.ts, decoder.ts `constrainedTokens`; on the CPU path: the same mask
 * applied to the logits read back) and generation stops ('stop') once the grammar is complete. With a
 * `draft` too, the speculative loop masks each verified row by the grammar's mask at its position
 * (speculative.ts `grammarMasks`), and a draft model drafts under the same masks.
 * @throws EngineError 'invalid_argument' (empty prompt, a token id outside the vocabulary, maxTokens, a
 *   schema or grammar that does not compile), 'context_overflow' (prompt longer than the context),
 *   'unsupported' (structured output without a grammar compiler); GPU errors as they come.
 */
export async function runGeneration(
  host: GenerationHost,
  model: LlamaModel,
  req: GenerateRequest,
  onToken?: (e: TokenEvent) => void,
  signal?: AbortSignal,
): Promise<GenerateResult> {
  const tok = host.tok;
  const tStartMs = performance.now();
  // A prompt too long for the context whatever it tokenizes to is refused before tokenizing it.
  if (req.promptTokenIds === undefined && req.prompt !== undefined)
    checkPromptLength(req.prompt.length, tok, model.nCtx, tok.addBos ? 1 : 0);
  const prompt = req.promptTokenIds ?? tok.encode(req.prompt ?? '', { addBos: tok.addBos });
  if (prompt.length === 0)
    throw new EngineError('invalid_argument', 'the prompt is empty and the model adds no BOS token');
  for (const id of prompt) {
    if (!Number.isInteger(id) || id < 0 || id >= model.cfg.nVocab) {
      throw new EngineError(
        'invalid_argument',
        `prompt token id ${id} is outside the vocabulary (0..${model.cfg.nVocab - 1})`,
      );
    }
  }
  checkPromptTokens(prompt.length, model.nCtx);
  const maxTokens = Math.min(req.maxTokens ?? 128, model.nCtx - prompt.length);
  if (!(maxTokens >= 0))
    throw new EngineError('invalid_argument', `maxTokens must be ≥ 0, got ${req.maxTokens}`);
  const spec = req.draft ? checkDraftFits(req, model, host.draftModel) : undefined;
  const format = req.responseFormat?.type === 'text' ? undefined : req.responseFormat;
  let matcher: TokenMatcher | undefined;
  if (format) {
    if (!host.grammar)
      throw new EngineError('unsupported', 'this engine has no grammar compiler for responseFormat');
    matcher = await (await host.grammar().compile(format)).matcher();
  }
  try {
    const r = await decodeAll(host, model, req, prompt, maxTokens, tStartMs, matcher, spec, onToken, signal);
    if (matcher) r.formatComplete = r.finishReason === 'stop' || (await grammarMayEnd(matcher, tok));
    return r;
  } finally {
    matcher?.dispose();
  }
}

/** True when the grammar may end where `matcher` stands: it ended, or its mask allows an end-of-generation token. */
async function grammarMayEnd(matcher: TokenMatcher, tok: Tokenizer): Promise<boolean> {
  if (matcher.isTerminated()) return true;
  const mask = await matcher.nextMask();
  for (let w = 0; w < mask.length; w++)
    for (let bits = mask[w] >>> 0; bits !== 0; bits &= bits - 1) {
      const id = w * 32 + (31 - Math.clz32(bits & -bits));
      if (id < tok.nVocab && tok.isEog(id)) return true;
    }
  return false;
}

/** The prefill and decode loop of {@link runGeneration}, after its checks. */
async function decodeAll(
  host: GenerationHost,
  model: LlamaModel,
  req: GenerateRequest,
  prompt: number[],
  maxTokens: number,
  tStartMs: number,
  matcher: TokenMatcher | undefined,
  spec: ReturnType<typeof checkDraftFits> | undefined,
  onToken?: (e: TokenEvent) => void,
  signal?: AbortSignal,
): Promise<GenerateResult> {
  const tok = host.tok;
  const out: number[] = [];
  const times: number[] = [];
  const dec = new IncrementalDecoder(tok);
  let text = '';
  let finish: FinishReason = 'length';
  // The speculative loop follows the grammar itself (it tries drafts in it): emit then only reads it.
  const loopFollowsGrammar = spec !== undefined;
  const emit = (id: number, logits?: Float32Array): boolean => {
    // The GPU argmax of NaN logits is no index at all (0xFFFFFFFF); say why instead of a bad token id.
    if (!(Number.isInteger(id) && id >= 0 && id < model.cfg.nVocab))
      throw nonFiniteLogitsError(model, out.length, id);
    const tMs = performance.now();
    out.push(id);
    times.push(tMs);
    const piece = dec.push(id);
    text += piece;
    onToken?.({ tokenId: id, text: piece, tMs, logits });
    if (matcher) {
      // The mask allowed only what the grammar accepts; a refusal here would be an engine bug.
      if (!loopFollowsGrammar && !matcher.accept(id))
        throw new Error(`the grammar refused token ${id}, which its mask allowed`);
      if (matcher.isTerminated()) {
        finish = 'stop';
        return false;
      }
    }
    if (!req.ignoreEos && tok.isEog(id)) {
      finish = 'stop';
      return false;
    }
    if (out.length >= maxTokens) return false;
    if (signal?.aborted) {
      finish = 'aborted';
      return false;
    }
    return true;
  };

  const tPrefill =
    maxTokens > 0 && !signal?.aborted
      ? await prefillPrompt(host, model, prompt, signal, spec?.draftModel)
      : undefined;
  if (tPrefill !== undefined) {
    let pos = prompt.length; // position of the next token to feed
    const firstToken = () => {
      if (out.length === 0)
        host.stats().lastPrefill = { tokens: prompt.length, ms: performance.now() - tPrefill };
    };
    if (spec) {
      // Speculative (speculative.ts): drafted by lookup or by the draft model, verified in one target pass each.
      let drafter: Drafter;
      if (spec.draftModel) drafter = new ModelDrafter(spec.draftModel, prompt.length);
      else drafter = lookupDrafter(spec.ngramMax);
      const so = { pos, maxTokens, prompt, draftMax: spec.draftMax, drafter, stats: spec.stats, matcher };
      let tokens: AsyncGenerator<number, void, undefined>;
      if (isGreedy(req)) tokens = speculativeGreedy(model, so);
      else {
        const sampler = new Sampler(req, model.cfg.nVocab);
        tokens = speculativeSampled(model, so, sampler, mulberry32(sampler.seed));
      }
      for await (const id of tokens) {
        if (out.length === 0)
          host.stats().lastPrefill = { tokens: prompt.length, ms: performance.now() - tPrefill };
        if (!emit(id)) break;
      }
    } else if (matcher && !req.returnLogits && (isGreedy(req) || host.sampling !== 'cpu')) {
      // Constrained on the GPU: each step's bitmask from the grammar, applied before the argmax/sampler.
      const sampled = !isGreedy(req);
      if (sampled) {
        const s = new Sampler(req, model.cfg.nVocab);
        await model.startSampling(s.params, s.seed, prompt);
      }
      await model.enableTokenMask();
      const m = matcher;
      const tokens = constrainedTokens(model, { pos, maxTokens, sampled }, () => m.nextMask());
      for await (const id of tokens) {
        firstToken();
        if (!emit(id)) break;
      }
    } else if (!matcher && (isGreedy(req) || host.sampling !== 'cpu')) {
      // Chained on the GPU (decoder.ts): greedy by the argmax, sampled by the GPU sampler with draw index
      // k, its history ring seeded with the prompt and fed by each draw.
      const sampled = !isGreedy(req);
      if (sampled) {
        const s = new Sampler(req, model.cfg.nVocab);
        await model.startSampling(s.params, s.seed, prompt);
      }
      const tokens = chainedTokens(model, {
        pos,
        maxTokens,
        sampled,
        readLogits: req.returnLogits,
        inFlight: host.decodeInFlight,
      });
      for await (const { id, logits } of tokens) {
        if (out.length === 0)
          host.stats().lastPrefill = { tokens: prompt.length, ms: performance.now() - tPrefill };
        if (!emit(id, logits)) break;
      }
    } else {
      // keyed: the GPU sampler's PRNG and draw order, so both paths give the same ids for a seed.
      const sampler = new Sampler(req, model.cfg.nVocab, { keyed: true });
      const history = [...prompt];
      model.submitReadback({ readLogits: true });
      for (;;) {
        let logits = await model.readLogits();
        for (const v of logits) if (v - v !== 0) throw nonFiniteLogitsError(model, out.length);
        firstToken();
        if (matcher) logits = applyTokenMask(logits, await matcher.nextMask(), model.cfg.nVocab);
        const id = sampler.sample(logits, history);
        history.push(id);
        if (!emit(id, req.returnLogits ? logits : undefined) || pos >= model.nCtx) break;
        model.submitDecode(pos, { tokenId: id, readLogits: true });
        pos++;
      }
    }
    if (out.length > 1)
      host.stats().lastDecode = { tokens: out.length - 1, ms: times[times.length - 1] - times[0] };
  } else if (signal?.aborted) finish = 'aborted';
  text += dec.flush();
  return {
    promptTokenIds: prompt,
    outputTokenIds: out,
    text,
    finishReason: finish,
    tStartMs,
    tokenTimesMs: times,
    ...(spec ? { speculative: spec.stats } : {}),
  };
}

/**
 * The speculative options of a request with `draft` (validated by core/validate.ts), checked against the
 * model: no returnLogits, draftMax below the load's batch,
 * `type: 'model'` only with a draft model loaded (setDraft, LoadOptions.draft).
 * @throws EngineError('invalid_argument') naming the problem.
 */
function checkDraftFits(
  req: GenerateRequest,
  model: LlamaModel,
  draftModel?: LlamaModel,
): { draftMax: number; ngramMax: number; draftModel?: LlamaModel; stats: SpeculativeStats } {
  const d = req.draft!;
  if (d.type === 'model' && !draftModel) {
    throw new EngineError(
      'invalid_argument',
      "draft type 'model' needs a draft model: load one beside the target with setDraft or LoadOptions.draft (--draft on the command line)",
    );
  }
  if (req.returnLogits) {
    throw new EngineError(
      'invalid_argument',
      'speculative decoding (draft) does not return logits: leave out returnLogits or draft',
    );
  }
  const most = model.verifyMaxTokens - 1;
  if (most < 1) {
    throw new EngineError(
      'invalid_argument',
      'speculative decoding (draft) needs a batch of at least 2 tokens; load with batchSize ≥ 2',
    );
  }
  if (d.draftMax !== undefined && d.draftMax > most) {
    throw new EngineError(
      'invalid_argument',
      `draft.draftMax ${d.draftMax} does not fit the load's batch (${model.batchSize} tokens: at most ${most} drafts)`,
    );
  }
  return {
    draftMax: d.draftMax ?? Math.min(d.type === 'model' ? 4 : 8, most),
    ngramMax: d.ngramMax ?? 3,
    draftModel: d.type === 'model' ? draftModel : undefined,
    stats: { drafted: 0, accepted: 0, targetPasses: 0 },
  };
}

/**
 * The prompt's prefill, cancellable between batches (LlamaModel.prefill), with its progress in
 * `stats().prefill`; then, for speculative decoding by a draft model, the draft's own prefill of it
 * (cancellable alike, not counted in the progress). Returns when it started (performance.now()), or
 * undefined when `signal` stopped it (the generation then ends 'aborted' with no tokens, as an abort
 * before the prefill does).
 */
async function prefillPrompt(
  host: GenerationHost,
  model: LlamaModel,
  prompt: number[],
  signal?: AbortSignal,
  draftModel?: LlamaModel,
): Promise<number | undefined> {
  const t0 = performance.now();
  const p: NonNullable<EngineStats['prefill']> = {
    tokens: prompt.length,
    done: 0,
    batches: 0,
    ms: 0,
    state: 'running',
  };
  host.stats().prefill = p;
  try {
    await model.prefill(prompt, 0, {
      signal,
      onBatch: (done) => {
        p.done = done;
        p.batches++;
        p.ms = performance.now() - t0;
      },
    });
    await draftModel?.prefill(prompt, 0, { signal });
    p.state = 'done';
    return t0;
  } catch (e) {
    p.ms = performance.now() - t0;
    if (isEngineError(e, 'aborted') && signal?.aborted) {
      p.state = 'aborted';
      return undefined;
    }
    p.state = 'failed';
    throw e;
  }
}

/**
 * The error for logits that are not finite (NaN or ±infinity), naming the first weight that holds a
 * non-finite value where the load found one (LlamaModel.nonFinite).
 * @param k the output token being chosen (0-based). @param id what the GPU argmax gave, if it was used.
 */
export function nonFiniteLogitsError(
  model: Pick<LlamaModel, 'nonFinite'>,
  k: number,
  id?: number,
): EngineError {
  const nf = model.nonFinite;
  const got = id === undefined ? '' : ` (the argmax found no largest logit: id ${id})`;
  return new EngineError(
    nf ? 'gguf_invalid' : 'unsupported_model',
    `the model produced non-finite logits (NaN or infinity) for output token ${k + 1}${got}: ` +
      (nf
        ? `its tensor ${nf.tensor} (${nf.type}) holds ${describeNonFinite(nf.value)} at ${nf.where}; the model file is damaged or was written wrongly`
        : "no weight holds NaN or infinity (F32/F16/BF16 values and quantized blocks' scales were checked), so the activations overflowed; try another quantization of the model"),
  );
}
