/**
 * The worker side of {@link WorkerApi}: what `workers/engine.worker.ts` exposes through comlink, over one
 * {@link WebGpuEngine}. A worker that adds methods (the bench worker, `workers/bench.worker.ts`) spreads
 * {@link WorkerHost.api} into its own object and runs its methods through the same {@link WorkerHost.track},
 * so `cancel(id)` reaches them too. Nothing here imports src/bench: the library's and the widget's worker
 * carries the engine alone (`src/worker-imports.test.ts` checks the import graph).
 */

import type { WorkerApi } from '../core/worker-api.ts';
import { AnswerText } from '../model/tokenizer/incremental.ts';
import type { WebGpuEngine } from './engine.ts';

/**
 * A callback from the page arrives here as a comlink proxy, which talks over its own MessagePort; the
 * call's result goes back over the worker's port. Messages on two ports have no order between them, so a
 * page could see the result before the last token (a widget once showed that token twice). `ordered`
 * keeps the promise of the latest callback call, and `settle` awaits it: since calls on one port are
 * answered in order, every earlier call has then been delivered too. Calls `run` with the wrapped
 * callback and returns its result only after the callbacks have all reached the page.
 */
export async function ordered<A, T>(
  cb: ((a: A) => void) | undefined,
  run: (cb: ((a: A) => void) | undefined) => Promise<T>,
): Promise<T> {
  if (!cb) return run(undefined);
  let last: unknown;
  const settle = () =>
    Promise.resolve(last).then(
      () => undefined,
      () => undefined,
    );
  try {
    return await run((a) => {
      last = (cb as (a: A) => unknown)(a);
    });
  } finally {
    await settle();
  }
}

/** The engine API of one worker, and the request tracking that extensions share. */
export interface WorkerHost {
  /** What the worker exposes (`Comlink.expose(host.api)`). */
  api: WorkerApi;
  /**
   * Runs `run` with a signal that `api.cancel(id)` aborts (no id: not cancellable); the id is forgotten
   * when `run` settles.
   */
  track<T>(id: number | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/** The {@link WorkerApi} over `engine`: callbacks {@link ordered}, requests cancellable by id. */
export function createWorkerHost(engine: WebGpuEngine): WorkerHost {
  const controllers = new Map<number, AbortController>();
  /** Cancels that came before their request (ids rise: one above `lastId` has not been seen yet). */
  const early = new Set<number>();
  let lastId = 0;
  function track<T>(id: number | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const c = new AbortController();
    if (id !== undefined) {
      controllers.set(id, c);
      lastId = Math.max(lastId, id);
      if (early.delete(id)) c.abort();
    }
    return run(c.signal).finally(() => {
      if (id !== undefined) controllers.delete(id);
    });
  }
  const api: WorkerApi = {
    load: (source, options, onProgress, id) =>
      track(id, (signal) =>
        ordered(onProgress, (cb) => engine.load(source, { ...options, onProgress: cb, signal })),
      ),
    setDraft: (source, options, onProgress, id) =>
      track(id, (signal) =>
        ordered(onProgress, (cb) => engine.setDraft(source, { ...options, onProgress: cb, signal })),
      ),
    generate: (req, onToken, id) =>
      track(id, (signal) => ordered(onToken, (cb) => engine.generate(req, cb, signal))),
    // An answer is a text of its own: its first token's space prefix is dropped (tokenizer/incremental.ts).
    chat: (req, onToken, id) =>
      track(id, (signal) =>
        ordered(onToken, async (cb) => {
          const answer = new AnswerText({
            get addSpacePrefix() {
              return engine.tok.addSpacePrefix;
            },
          });
          const r = await engine.chat(
            req,
            (e) => {
              const text = answer.push(e.text);
              cb?.({ ...e, text });
            },
            signal,
          );
          return { ...r, text: answer.text(r.text) };
        }),
      ),
    cancel: (id) => {
      const c = controllers.get(id);
      if (c) c.abort();
      else if (id > lastId) early.add(id);
    },
    tokenize: (text, addBos) => engine.tokenize(text, addBos),
    detokenize: (ids) => engine.detokenize(ids),
    scoreTokens: (ids, id) => track(id, (signal) => engine.scoreTokens(ids, signal)),
    stats: () => engine.stats(),
    unload: () => engine.unload(),
    modelInfo: async () => engine.modelInfo,
    adapterInfo: async () => engine.gpuContext?.info,
  };
  return { api, track };
}
