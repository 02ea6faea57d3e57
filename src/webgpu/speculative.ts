/**
 * Speculative decoding (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
 * Decoding"; Chen et al. 2023): draft a few tokens cheaply, let the target model score them all in one
 * batched forward (LlamaModel.verify), keep the longest prefix of drafts that equal the target's own
 * greedy choices plus the target's token after it, and roll the KV cache back past the first rejected
 * draft (the next pass starts there). Greedy output is plain greedy decoding's, token for token.
 *
 * Drafting is by lookup (no second model): {@link lookupDraft}, prompt-lookup decoding as llama.cpp's
 * `lookup` example and Hugging Face's `prompt_lookup_num_tokens` do it; or by a draft model
 * ({@link ModelDrafter}). The draft length adapts to the recent acceptance rate ({@link DraftLength}).
 * With structured output (a grammar's {@link TokenMatcher}) each verified row is masked by the grammar's
 * mask at its position, so the output is constrained decoding's, token for token when greedy; a draft
 * model drafts under the grammar's masks too.
 */
import type { SpeculativeStats } from '../core/types.ts';
import type { TokenMatcher } from '../model/grammar.ts';
import { chainedTokens, constrainedTokens } from './decoder.ts';
import { applyTokenMask } from './kernels/mask.ts';
import type { LlamaModel } from './model/llama.ts';
import type { Sampler } from './sampler.ts';

/**
 * Prompt-lookup drafting: for n = ngramMax down to ngramMin, finds the latest earlier occurrence of the
 * last n tokens of `history` and returns the (up to `nDraft`) tokens that followed it; [] when no n-gram
 * recurs. O(history × ngramMax) per call.
 * @param history the prompt and the output so far [L].
 * @returns up to nDraft token ids.
 */
export function lookupDraft(
  history: readonly number[],
  nDraft: number,
  o: { ngramMax?: number; ngramMin?: number } = {},
): number[] {
  const L = history.length;
  const nMax = o.ngramMax ?? 3;
  const nMin = Math.max(1, o.ngramMin ?? 1);
  if (nDraft <= 0) return [];
  for (let n = Math.min(nMax, L - 1); n >= nMin; n--) {
    // The occurrence at i covers history[i .. i + n); the tail itself starts at L − n.
    for (let i = L - n - 1; i >= 0; i--) {
      let k = 0;
      while (k < n && history[i + k] === history[L - n + k]) k++;
      if (k < n) continue;
      return history.slice(i + n, Math.min(i + n + nDraft, L));
    }
  }
  return [];
}

/**
 * The adaptive draft length: an exponential moving average r of the acceptance rate (accepted ÷ drafted
 * per pass, weight 1/2 on the newest, starting at 1), and a length of round(max × r) clamped to 1..max.
 * Drafting by lookup costs nothing, so the length only trades the verify pass's extra tokens against
 * the tokens it is expected to keep.
 */
export class DraftLength {
  private rate = 1;
  constructor(readonly max: number) {}
  /** Tokens to draft for the next pass, 1..max. */
  get next(): number {
    return Math.max(1, Math.min(this.max, Math.round(this.max * this.rate)));
  }
  /** Records one verify pass: `accepted` of `drafted` drafts kept. */
  update(drafted: number, accepted: number): void {
    if (drafted > 0) this.rate = 0.5 * this.rate + 0.5 * (accepted / drafted);
  }
}

/**
 * Where drafts come from. `draft` proposes n tokens after `history` (the prompt and the output so far);
 * under structured output it gets the grammar's `matcher` where it stands after `history` and may draft
 * only what the grammar allows (it must leave the matcher as it found it; drafts the grammar refuses are
 * cut by the loop either way). `rollback(valid)` says that only the first `valid` tokens of the history it
 * last drafted from, plus the drafts the target accepted, are right (a draft model's KV cache keeps rows
 * up to there).
 */
export interface Drafter {
  draft(history: readonly number[], n: number, matcher?: TokenMatcher): number[] | Promise<number[]>;
  rollback?(valid: number): void;
}

/**
 * Why a draft model's vocabulary is not the target's, in the words every caller uses (the engine at load,
 * the command line before it starts anything), or undefined where it is: a different size, else the first
 * token whose text differs. `nTarget`/`nDraft`: vocabulary sizes; the token texts (GGUF
 * `tokenizer.ggml.tokens`) are compared where both are known.
 */
export function draftVocabularyProblem(
  nTarget: number,
  nDraft: number,
  target: readonly unknown[] | undefined,
  draft: readonly unknown[] | undefined,
): string | undefined {
  if (nDraft !== nTarget)
    return `the draft model's vocabulary has ${nDraft} tokens but the target's has ${nTarget}; a draft model needs the target's vocabulary`;
  const at = target && draft ? target.findIndex((x, i) => x !== draft[i]) : -1;
  if (at >= 0)
    return `the draft model's token ${at} is ${JSON.stringify(draft![at])} but the target's is ${JSON.stringify(target![at])}; a draft model needs the target's vocabulary`;
  return undefined;
}

/** Drafting by prompt lookup ({@link lookupDraft}). */
export function lookupDrafter(ngramMax: number): Drafter {
  return { draft: (history, n) => lookupDraft(history, n, { ngramMax }) };
}

/**
 * Drafting by a second, smaller model with the same vocabulary: its greedy continuation. It keeps its own
 * KV cache in step with the accepted history: each draft first feeds the tokens it has not seen (the
 * target's last token, and after a fully accepted draft its own last draft too) in one pass
 * (LlamaModel.prefillTokens: the last position's logits only), whose argmax is the first draft, then
 * n − 1 decode steps chained on the GPU (decoder.ts `chainedTokens`: each step's argmax fed to the next
 * without the host, several in flight), so the host waits once per draft token but the GPU never waits
 * for the host; a rollback moves its position back to the accepted prefix (the stale rows are
 * overwritten before they are read). Under a grammar it drafts the grammar's way: each step's logits are
 * masked on the GPU by the grammar's mask there before the argmax (decoder.ts `constrainedTokens`, the
 * constrained loop's pick), so its drafts are its constrained greedy continuation, which the target's
 * masked rows can accept; unmasked, a draft model's text leaves a JSON schema's shape within a few tokens
 * and every draft after that is cut. The prompt must have been prefilled into it first (position `start`
 * = the prompt's length).
 */
export class ModelDrafter implements Drafter {
  private valid: number;
  constructor(
    private readonly model: LlamaModel,
    start: number,
  ) {
    this.valid = start;
  }
  async draft(history: readonly number[], n: number, matcher?: TokenMatcher): Promise<number[]> {
    const m = this.model;
    if (matcher) await m.enableTokenMask();
    const pending = history.slice(this.valid);
    m.prefillTokens(pending, this.valid);
    this.valid = history.length;
    // Draft k ≥ 1 is made by feeding draft k − 1 at history.length + k − 1, at most at nCtx − 2.
    const maxTokens = Math.max(1, Math.min(n, m.nCtx - history.length));
    const drafts: number[] = [];
    if (!matcher)
      for await (const { id } of chainedTokens(m, { pos: history.length, maxTokens })) drafts.push(id);
    else {
      // Each draft is followed in the grammar (its mask then masks the next step) and all are undone after.
      let followed = 0;
      try {
        const picks = constrainedTokens(m, { pos: history.length, maxTokens }, () => matcher.nextMask());
        for await (const id of picks) {
          drafts.push(id);
          if (!matcher.accept(id)) break;
          followed++;
          // A draft that ends the grammar is the last: the loop cuts it and the target picks it itself.
          if (matcher.isTerminated()) break;
        }
      } finally {
        matcher.rollBack(followed);
      }
    }
    this.valid += drafts.length - 1;
    return drafts;
  }
  rollback(valid: number): void {
    this.valid = Math.min(this.valid, valid);
  }
}

/** Options of {@link speculativeGreedy}. */
export interface SpeculativeOptions {
  /** Position at which the first token (from the prefill's logits) will be fed. */
  pos: number;
  /** Tokens to yield at most (the loop never feeds a position at or past `model.nCtx`). */
  maxTokens: number;
  /** The prompt's ids (the drafts' history starts with them). */
  prompt: readonly number[];
  /** Most tokens drafted per pass (1..batchSize − 1). */
  draftMax: number;
  /** Where drafts come from. */
  drafter: Drafter;
  /** Filled as the loop runs. */
  stats: SpeculativeStats;
  /**
   * Structured output: the loop accepts each token into it before yielding it (the caller does not),
   * masks each row it picks from by the grammar's mask at that row's position ({@link grammarMasks}), and
   * ends after the token that completes the grammar.
   */
  matcher?: TokenMatcher;
}

/**
 * A verify pass under a grammar: cuts `drafts` to their longest prefix that `matcher` allows without
 * completing it (each tried, then all rolled back, so the matcher is left as it was), and returns the
 * mask before each kept draft and after the last: `masks` [kept + 1] of [ceil(nVocab / 32)] words. A
 * draft that completes the grammar is cut too: the target picks it itself at that row, where it may.
 */
export async function grammarMasks(
  matcher: TokenMatcher,
  drafts: readonly number[],
): Promise<{ drafts: number[]; masks: Int32Array[] }> {
  const masks: Int32Array[] = [];
  let n = 0;
  for (;;) {
    masks.push(await matcher.nextMask());
    if (n === drafts.length || !matcher.accept(drafts[n])) break;
    if (matcher.isTerminated()) {
      matcher.rollBack(1);
      break;
    }
    n++;
  }
  matcher.rollBack(n);
  return { drafts: drafts.slice(0, n), masks };
}

/**
 * The loop's view of the request's grammar: each mask it is asked for is remembered by the tokens tried
 * since the last token kept, so a draft model that drafted under the grammar (a mask per draft step) and
 * the verify pass after it ({@link grammarMasks}: the same states again) make each mask once. Tokens the
 * loop keeps go through {@link keep}, which forgets the masks; everything else is the matcher's own.
 */
class RememberedMasks implements TokenMatcher {
  private tried: number[] = [];
  private readonly masks = new Map<string, Int32Array>();
  constructor(private readonly m: TokenMatcher) {}
  async nextMask(): Promise<Int32Array> {
    const key = this.tried.join(',');
    let mask = this.masks.get(key);
    if (!mask) {
      // The matcher's masks are copies (xgrammar's slice()), so one kept here is never overwritten.
      mask = await this.m.nextMask();
      this.masks.set(key, mask);
    }
    return mask;
  }
  accept(id: number): boolean {
    if (!this.m.accept(id)) return false;
    this.tried.push(id);
    return true;
  }
  /** Follows `id` for good (the loop yields it): the masks remembered so far are of other states. */
  keep(id: number): boolean {
    if (!this.m.accept(id)) return false;
    this.tried = [];
    this.masks.clear();
    return true;
  }
  isTerminated(): boolean {
    return this.m.isTerminated();
  }
  rollBack(n: number): void {
    this.m.rollBack(n);
    if (n <= this.tried.length) this.tried.length -= n;
    else {
      // Back past a kept token (the loop never does): the masks remembered were keyed from there.
      this.tried = [];
      this.masks.clear();
    }
  }
  /** The request owns the matcher and frees it. */
  dispose(): void {}
}

/**
 * Follows `id` in the grammar (where there is one) before the loop yields it; false once the grammar is
 * complete (the loop then ends after yielding it). An id outside the vocabulary [0, nVocab) (the argmax
 * found no allowed finite logit) is left for the caller's check, which names the non-finite logits.
 * @throws Error when the grammar refuses a token its own mask allowed (an engine bug, never bad input).
 */
function follow(matcher: RememberedMasks | undefined, id: number, nVocab: number): boolean {
  if (!matcher || !(id >= 0 && id < nVocab)) return true;
  if (!matcher.keep(id)) throw new Error(`the grammar refused token ${id}, which its mask allowed`);
  return !matcher.isTerminated();
}

/**
 * Yields greedy tokens 0, 1, … after a prefill, verifying each draft in one target pass
 * (LlamaModel.verify; a plain decode step where the drafter has nothing). The first token is the
 * prefill's argmax. Under a grammar (`o.matcher`) each row's logits are masked on the GPU by the grammar's
 * mask at its position before the argmax (the first token's as the constrained loop picks it), so the
 * choice is the constrained loop's (lowest index on ties) and only the ids come back. Stop early by
 * leaving the loop: every pass is awaited before its tokens are yielded, so nothing is in flight and the
 * models are ready for the next request.
 * @throws what the models throw (EngineError 'context_overflow', a lost device).
 */
export async function* speculativeGreedy(
  model: LlamaModel,
  o: SpeculativeOptions,
): AsyncGenerator<number, void, undefined> {
  const matcher = o.matcher && new RememberedMasks(o.matcher);
  const V = model.cfg.nVocab;
  if (matcher) {
    await model.enableTokenMask();
    model.writeTokenMask(await matcher.nextMask());
    model.submitPick({ slot: 0, mask: true });
  } else model.submitReadback({ slot: 0 });
  let last = await model.readToken(0);
  const history = [...o.prompt, last];
  let produced = 1;
  const more = follow(matcher, last, V);
  yield last;
  if (!more) return;
  let pos = o.pos; // where `last` is fed
  const len = new DraftLength(o.draftMax);
  while (produced < o.maxTokens && pos < model.nCtx) {
    // Every token kept must fit maxTokens: n drafts give up to n + 1 tokens.
    const room = Math.min(len.next, o.maxTokens - produced - 1, model.nCtx - pos - 1);
    let drafts = room > 0 ? (await o.drafter.draft(history, room, matcher)).slice(0, room) : [];
    let masks: Int32Array[] = [];
    if (matcher) ({ drafts, masks } = await grammarMasks(matcher, drafts));
    const { argmax } = await model.verify([last, ...drafts], pos, matcher ? { masks } : {});
    o.stats.targetPasses++;
    let a = 0;
    while (a < drafts.length && drafts[a] === argmax[a]) a++;
    if (drafts.length > 0) {
      o.stats.drafted += drafts.length;
      o.stats.accepted += a;
      len.update(drafts.length, a);
    }
    o.drafter.rollback?.(history.length + a);
    const kept = [...drafts.slice(0, a), argmax[a]];
    pos += kept.length;
    for (const id of kept) {
      history.push(id);
      produced++;
      last = id;
      const go = follow(matcher, id, V);
      yield id;
      if (!go) return;
    }
  }
}

/** Draws an index from the distribution `w` [V] (non-negative, summing to `total`) with one uniform draw u ∈ [0, 1). */
function drawFrom(w: ArrayLike<number>, total: number, u: number): number {
  let x = u * total;
  let last = -1;
  for (let t = 0; t < w.length; t++) {
    if (w[t] <= 0) continue;
    last = t;
    if (x < w[t]) return t;
    x -= w[t];
  }
  return last; // rounding left x just past the end: the last token with mass
}

/**
 * The speculative-sampling acceptance rule (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023): draft
 * i is kept with probability min(1, p_i(x) / q_i(x)); at the first rejection the token is drawn from
 * norm(max(0, p_i − q_i)) instead and the pass ends; when every draft is kept, one more token is drawn
 * from p_n. The tokens kept then follow the target's distribution exactly, whatever the drafts.
 * @param drafts the draft tokens [n].
 * @param p the target's distributions [n + 1][V] (row i: after the prefix and drafts[0..i)).
 * @param q the distributions the drafts were drawn from [n][V]; undefined where drafts were chosen
 *   deterministically (lookup, a greedy draft model): point masses q_i = δ(drafts[i]), so draft i is kept
 *   with probability p_i(drafts[i]) and a rejection draws from p_i without it.
 * @param rand uniform draws in [0, 1).
 * @returns the kept drafts, then the drawn token: 1..n + 1 ids.
 */
export function speculativeSample(
  drafts: readonly number[],
  p: readonly ArrayLike<number>[],
  q: readonly ArrayLike<number>[] | undefined,
  rand: () => number,
): number[] {
  const out: number[] = [];
  for (let i = 0; i < drafts.length; i++) {
    const x = drafts[i];
    const qx = q ? q[i][x] : 1;
    if (rand() * qx < p[i][x]) {
      out.push(x);
      continue;
    }
    const V = p[i].length;
    const resid = new Float64Array(V);
    let total = 0;
    for (let t = 0; t < V; t++) {
      const r = p[i][t] - (q ? q[i][t] : t === x ? 1 : 0);
      if (r > 0) {
        resid[t] = r;
        total += r;
      }
    }
    out.push(drawFrom(resid, total, rand()));
    return out;
  }
  const last = p[drafts.length];
  let total = 0;
  for (let t = 0; t < last.length; t++) total += last[t];
  out.push(drawFrom(last, total, rand()));
  return out;
}

/**
 * Sampled speculative decoding: as {@link speculativeGreedy}, with the target's logits read back for every
 * verified position [T, nVocab] and turned into the request's sampling distribution (`sampler`:
 * penalties, top-k, top-p, min-p, temperature, with the history each position sees), and the drafts kept
 * or replaced by {@link speculativeSample}. The drafters draft deterministically (lookup; a draft model's
 * greedy continuation), so q is a point mass on each draft. The output follows the target's sampling
 * distribution; it is not the token sequence plain sampling gives for the same seed (the draws differ).
 * @param rand uniform draws in [0, 1) (seeded from the request's seed).
 */
export async function* speculativeSampled(
  model: LlamaModel,
  o: SpeculativeOptions,
  sampler: Sampler,
  rand: () => number,
): AsyncGenerator<number, void, undefined> {
  const V = model.cfg.nVocab;
  const dense = (logits: Float32Array, history: readonly number[]): Float64Array => {
    const c = sampler.distribution(logits, history);
    const p = new Float64Array(V);
    for (let k = 0; k < c.ids.length; k++) p[c.ids[k]] = c.probs[k];
    return p;
  };
  const matcher = o.matcher && new RememberedMasks(o.matcher);
  // A row's logits with the grammar's mask applied (kernels/mask.ts: disallowed tokens get no mass).
  const masked = (row: Float32Array, mask: Int32Array | undefined) =>
    mask ? applyTokenMask(row, mask, V) : row;
  model.submitReadback({ readLogits: true });
  const history = [...o.prompt];
  const first = masked((await model.readLogits()).subarray(0, V), await matcher?.nextMask());
  let last = speculativeSample([], [dense(first, history)], undefined, rand)[0];
  history.push(last);
  let produced = 1;
  const more = follow(matcher, last, V);
  yield last;
  if (!more) return;
  let pos = o.pos;
  const len = new DraftLength(o.draftMax);
  while (produced < o.maxTokens && pos < model.nCtx) {
    const room = Math.min(len.next, o.maxTokens - produced - 1, model.nCtx - pos - 1);
    let drafts = room > 0 ? (await o.drafter.draft(history, room, matcher)).slice(0, room) : [];
    // Drafts the grammar refuses are cut (any deterministic drafts keep the output's distribution).
    let masks: Int32Array[] = [];
    if (matcher) ({ drafts, masks } = await grammarMasks(matcher, drafts));
    const { logits } = await model.verify([last, ...drafts], pos, { readLogits: true });
    o.stats.targetPasses++;
    const p = Array.from({ length: drafts.length + 1 }, (_, i) =>
      dense(masked(logits!.subarray(i * V, (i + 1) * V), masks[i]), [...history, ...drafts.slice(0, i)]),
    );
    const kept = speculativeSample(drafts, p, undefined, rand);
    const a = kept.length - 1;
    if (drafts.length > 0) {
      o.stats.drafted += drafts.length;
      o.stats.accepted += a;
      len.update(drafts.length, a);
    }
    o.drafter.rollback?.(history.length + a);
    pos += kept.length;
    for (const id of kept) {
      history.push(id);
      produced++;
      last = id;
      const go = follow(matcher, id, V);
      yield id;
      if (!go) return;
    }
  }
}
