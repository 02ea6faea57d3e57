/**
 * The worker that hosts our WebGPU engine behind comlink. The page talks to it through
 * `WorkerEngine` (src/engine/worker-api.ts).
 */
import * as Comlink from 'comlink';
import { profileGpu, runLlamaBench } from '../src/bench/llama-bench-gpu.ts';
import { installErrorTransfer } from '../src/engine/comlink.ts';
import { EngineError } from '../src/engine/errors.ts';
import type { WorkerApi } from '../src/engine/worker-api.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';
import { AnswerText } from '../src/webgpu/tokenizer/incremental.ts';

installErrorTransfer();
const engine = new WebGpuEngine();
const controllers = new Map<number, AbortController>();

function track<T>(id: number | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const c = new AbortController();
  if (id !== undefined) controllers.set(id, c);
  return run(c.signal).finally(() => {
    if (id !== undefined) controllers.delete(id);
  });
}

/**
 * A callback from the page arrives here as a comlink proxy, which talks over its own MessagePort; the
 * call's result goes back over the worker's port. Messages on two ports have no order between them, so a
 * page could see the result before the last token (a widget once showed that token twice). `ordered`
 * keeps the promise of the latest callback call, and `settle` awaits it: since calls on one port are
 * answered in order, every earlier call has then been delivered too. Calls `run` with the wrapped
 * callback and returns its result only after the callbacks have all reached the page.
 */
async function ordered<A, T>(
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

const api: WorkerApi = {
  load: (source, options, onProgress, id) =>
    track(id, (signal) =>
      ordered(onProgress, (cb) => engine.load(source, { ...options, onProgress: cb, signal })),
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
  cancel: (id) => controllers.get(id)?.abort(),
  tokenize: (text, addBos) => engine.tokenize(text, addBos),
  detokenize: (ids) => engine.detokenize(ids),
  scoreTokens: (ids, id) => track(id, (signal) => engine.scoreTokens(ids, signal)),
  stats: () => engine.stats(),
  unload: () => engine.unload(),
  llamaBench: (req, onProgress, id) =>
    track(id, async (signal) => {
      const model = engine.llama;
      if (!model) throw new EngineError('not_loaded', 'no model is loaded: call load() first');
      return ordered(onProgress, async (cb) => {
        const tests = await runLlamaBench(model, req.plan, cb, signal);
        const gpu = req.profile === false ? undefined : await profileGpu(model, req.profile);
        return { tests, gpu };
      });
    }),
  adapterInfo: async () => engine.gpuContext?.info,
};

Comlink.expose(api);
