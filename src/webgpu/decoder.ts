/**
 * The decode loop's GPU side, for generation (generation.ts) and llama-bench (bench/llama-bench-gpu.ts)
 * alike: tokens chained on the GPU, each step's argmax (or the GPU sampler's draw) written straight into
 * the next step's input, so the host reads 4 bytes per token and never writes one. Two readback slots:
 * token k lands in slot k % 2, and step k + 1 is submitted before token k is awaited, so the GPU always
 * has the next step queued while the host maps the last one's token. With logits read back (one buffer),
 * step k + 1 is submitted only after token k's logits were read and the caller asked for more.
 */
import type { LlamaModel } from './model/llama.ts';

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
}

/**
 * Yields tokens 0, 1, … of a chained greedy or sampled decode on `model` ({@link ChainOptions}). Stop
 * early by leaving the loop: no further step is submitted after a token the caller rejected (with logits)
 * or beyond the one already in flight (without), and that one's readback is awaited before returning.
 * @throws what the model's readbacks throw (EngineError 'context_overflow', a lost device).
 */
export async function* chainedTokens(
  model: LlamaModel,
  o: ChainOptions,
): AsyncGenerator<{ id: number; logits?: Float32Array }, void, undefined> {
  const overlap = !o.readLogits;
  const sample = (k: number) => (o.sampled ? k : undefined);
  /** Step k + 1 (k ≥ 0): feeds token k at pos + k, its token into slot (k + 1) % 2. */
  const submit = (k: number) =>
    model.submitDecode(o.pos + k, {
      slot: (k + 1) % 2,
      feedBack: true,
      sample: sample(k + 1),
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
  let pending = -1; // the token whose step is in flight but not yet read, if any
  let failed = false;
  try {
    for (let k = 0; k < o.maxTokens; k++) {
      const more = k + 1 < o.maxTokens && o.pos + k < model.nCtx;
      if (overlap && more) {
        submit(k);
        pending = k + 1;
      }
      const id = await model.readToken(k % 2);
      const logits = overlap ? undefined : await model.readLogits();
      yield { id, logits };
      if (!more) break;
      if (!overlap) submit(k);
      pending = -1;
    }
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    if (pending >= 0 && !failed) await model.readToken(pending % 2).catch(() => undefined);
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
