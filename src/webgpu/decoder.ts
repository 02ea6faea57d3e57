/**
 * The decode loop's GPU side, for generation (generation.ts) and llama-bench (bench/llama-bench-gpu.ts)
 * alike: tokens chained on the GPU, each step's argmax (or the GPU sampler's draw) written straight into
 * the next step's input, so the host reads 4 bytes per token and never writes one. Several steps in
 * flight (issue 40): token k lands in readback slot k % READBACK_SLOTS, and steps up to token
 * k + inFlight are submitted before token k is awaited, so the GPU has queued work while the host maps a
 * token and wakes up (a gap that costs more in a browser, where a readback crosses to the GPU process).
 * Each step's Step uniform (and draw index) is written with `queue.writeBuffer` just before its submit,
 * which the queue orders with the submits. With logits read back (one buffer), step k + 1 is submitted
 * only after token k's logits were read and the caller asked for more.
 */
import { EngineError } from '../core/errors.ts';
import type { LlamaModel } from './model/llama.ts';
import { READBACK_SLOTS } from './model/state.ts';

/** Decode steps queued ahead of the token being read back, by default ({@link ChainOptions.inFlight}). */
export const DEFAULT_IN_FLIGHT = 3;

/** Options of {@link chainedTokens}. */
export interface ChainOptions {
  /**
   * Position at which token 0 is fed to the model (the prompt's length after a prefill); token k is fed at
   * `pos + k`.
   */
  pos: number;
  /** Tokens to yield at most (fewer where the context ends: no step is fed at or past `model.nCtx`). */
  maxTokens: number;
  /**
   * Where token 0 comes from: undefined, the prefill's last logits (already on the GPU: their argmax or
   * draw is copied into slot 0); or an id fed at `pos − 1` by a step of its own (llama-bench's decode).
   */
  firstInput?: number;
  /** Draw each token with the GPU sampler (draw index k; `model.startSampling` first) instead of the argmax. */
  sampled?: boolean;
  /** Read each token's logits [nVocab] back too (no overlap: the next step waits for them). */
  readLogits?: boolean;
  /**
   * Steps submitted ahead of the token being read, 1 … READBACK_SLOTS − 1 (default
   * {@link DEFAULT_IN_FLIGHT}); 1 is the loop before issue 40. Ignored with `readLogits`.
   */
  inFlight?: number;
}

/**
 * Yields tokens 0, 1, … of a chained greedy or sampled decode on `model` ({@link ChainOptions}). Stop
 * early by leaving the loop: no further step is submitted after a token the caller rejected (with logits)
 * or beyond those already in flight (without), whose last readback is awaited before returning (the steps
 * that ran past the end wrote KV rows past the last token kept, which the next prefill or step
 * overwrites before anything reads them, and the sampler's history ring, which `startSampling` resets).
 * @throws EngineError('invalid_argument') for `inFlight` out of range; what the model's readbacks throw
 *   (EngineError 'context_overflow', a lost device).
 */
export async function* chainedTokens(
  model: LlamaModel,
  o: ChainOptions,
): AsyncGenerator<{ id: number; logits?: Float32Array }, void, undefined> {
  const overlap = !o.readLogits;
  const ahead = o.inFlight ?? DEFAULT_IN_FLIGHT;
  if (!(Number.isInteger(ahead) && ahead >= 1 && ahead < READBACK_SLOTS))
    throw new EngineError('invalid_argument', `inFlight must be 1..${READBACK_SLOTS - 1}, got ${o.inFlight}`);
  const sample = (k: number) => (o.sampled ? k : undefined);
  const slot = (k: number) => k % READBACK_SLOTS;
  /** Is there a token k ≥ 1 to make: below maxTokens, its input (token k − 1) fed below the context's end? */
  const makes = (k: number) => k < o.maxTokens && o.pos + k - 1 < model.nCtx;
  /** Token k's step (k ≥ 1): feeds token k − 1 at pos + k − 1, its token into slot k % READBACK_SLOTS. */
  const submit = (k: number) =>
    model.submitDecode(o.pos + k - 1, {
      slot: slot(k),
      feedBack: true,
      sample: sample(k),
      readLogits: !overlap,
    });
  if (o.firstInput === undefined)
    model.submitReadback({ slot: 0, feedBack: true, sample: sample(0), readLogits: !overlap });
  else
    model.submitDecode(o.pos - 1, {
      tokenId: o.firstInput,
      slot: 0,
      feedBack: true,
      sample: sample(0),
      readLogits: !overlap,
    });
  let submitted = 0; // the last token whose step is queued
  let read = -1; // the last token read back
  let failed = false;
  try {
    for (let k = 0; k < o.maxTokens; k++) {
      // Slot (k + ahead) % READBACK_SLOTS was token k − 1's, read and unmapped already.
      if (overlap) while (submitted < k + ahead && makes(submitted + 1)) submit(++submitted);
      const id = await model.readToken(slot(k));
      read = k;
      const logits = overlap ? undefined : await model.readLogits();
      yield { id, logits };
      if (!makes(k + 1)) break;
      if (!overlap) submit(++submitted);
    }
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    // The queue runs in order: the last step's readback done, every step is.
    if (submitted > read && !failed) await model.readToken(slot(submitted)).catch(() => undefined);
  }
}

/** Options of {@link constrainedTokens}. */
export interface ConstrainedOptions {
  /** Position at which token 0 is fed (the prompt's length; the prefill's logits are already there). */
  pos: number;
  /** Tokens to yield at most (fewer where the context ends). */
  maxTokens: number;
  /** Draw with the GPU sampler (draw index k; `model.startSampling` first) instead of the argmax. */
  sampled?: boolean;
}

/**
 * Yields tokens 0, 1, … of a constrained decode on `model` (structured output): before token k is picked,
 * `nextMask()` gives the grammar's bitmask for it (after the caller has accepted tokens 0..k−1: call it
 * only from the consumer's side of each `yield`), which is uploaded and applied to the logits on the GPU
 * (kernels/mask.ts) ahead of the argmax or the sampler. Step k + 1's forward pass is queued right after
 * token k's readback is asked for (the token is fed back on the GPU), so it runs while the host reads
 * token k and makes the next mask; only the pick waits for the host. `model.enableTokenMask()` must have
 * run.
 * @throws what the model's readbacks throw (EngineError 'context_overflow', a lost device).
 */
export async function* constrainedTokens(
  model: LlamaModel,
  o: ConstrainedOptions,
  nextMask: () => Promise<Int32Array>,
): AsyncGenerator<number, void, undefined> {
  const sample = (k: number) => (o.sampled ? k : undefined);
  model.writeTokenMask(await nextMask());
  model.submitPick({ slot: 0, feedBack: true, sample: sample(0), mask: true });
  for (let k = 0; k < o.maxTokens; k++) {
    const more = k + 1 < o.maxTokens && o.pos + k < model.nCtx;
    // The map is asked for before step k + 1 is queued, so it waits for token k's pick only (a map resolves
    // once the work submitted before it is done): the host gets token k while step k + 1 runs.
    const token = model.readToken(0);
    try {
      if (more) model.submitForward(o.pos + k);
    } catch (e) {
      await token.catch(() => undefined);
      throw e;
    }
    const id = await token;
    yield id;
    if (!more) break;
    model.writeTokenMask(await nextMask());
    model.submitPick({ slot: 0, feedBack: true, sample: sample(k + 1), mask: true });
  }
}
