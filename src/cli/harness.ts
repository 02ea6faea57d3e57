/**
 * Page used by the command-line tools in headless Chromium: it runs the real engine worker
 * (`workers/engine.worker.ts`) through {@link WorkerEngine} and exposes `window.harness`.
 */

import { measureStopToIdle, type StopToIdleOptions, type StopToIdleResult } from '../bench/stop-latency.ts';
import type {
  GenerateRequest,
  GenerateResult,
  KvType,
  LoadOptions,
  LoadProgress,
  ModelInfo,
} from '../core/types.ts';
import { WorkerEngine } from '../core/worker-api.ts';

declare global {
  interface Window {
    harness: typeof harness;
    __onToken?: (text: string, tokenId: number) => void;
    __onProgress?: (p: LoadProgress) => void;
  }
}

let engine: WorkerEngine | undefined;
/** The loaded model's info (for {@link harness.stopToIdle}). */
let info: ModelInfo | undefined;

const harness = {
  /**
   * Loads a model from a URL in the worker (`defaultLimits`, `kv`: LoadOptions.defaultLimits and
   * LoadOptions.kvType/kvTypeK/kvTypeV, a type for both or the three fields; undefined = the engine's
   * default; `draftUrl`: LoadOptions.draft, a URL or `synthetic:` name).
   */
  async load(
    url: string,
    contextLength?: number,
    defaultLimits?: boolean,
    kv?: KvType | Pick<LoadOptions, 'kvType' | 'kvTypeK' | 'kvTypeV'>,
    draftUrl?: string,
  ): Promise<ModelInfo> {
    engine ??= new WorkerEngine(
      new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
    );
    const sourceOf = (u: string) => (u.startsWith('synthetic:') ? { synthetic: u } : { url: u });
    info = undefined;
    info = await engine.load(sourceOf(url), {
      contextLength,
      defaultLimits,
      ...(typeof kv === 'string' ? { kvType: kv } : (kv ?? {})),
      ...(draftUrl ? { draft: sourceOf(draftUrl) } : {}),
      onProgress: (p) => window.__onProgress?.(p),
    });
    return info;
  },
  /** Generates, streaming text to `window.__onToken`. Errors come back as {error: {code, message}}. */
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    if (!engine) throw new Error('load first');
    return engine.generate(req, (e) => window.__onToken?.(e.text, e.tokenId));
  },
  /** Tokenizes in the worker (addBos default: the model's). */
  async tokenize(text: string, addBos?: boolean): Promise<number[]> {
    if (!engine) throw new Error('load first');
    return engine.tokenize(text, addBos);
  },
  /** Teacher-forced scoring of one window (perplexity), as plain arrays. */
  async score(ids: number[]): Promise<{ nll: number[]; top1: number[] }> {
    if (!engine) throw new Error('load first');
    const r = await engine.scoreTokens(ids);
    return { nll: Array.from(r.nll), top1: Array.from(r.top1) };
  },
  /**
   * Stop to idle during a long prefill, as a page sees it (src/bench/stop-latency.ts): a generation of
   * `opts.promptTokens` pseudo-random ids, aborted after `opts.abortAfterMs`, timed to its promise settling.
   */
  async stopToIdle(opts?: StopToIdleOptions): Promise<StopToIdleResult> {
    if (!engine || !info) throw new Error('load first');
    return measureStopToIdle(engine, info, opts);
  },
  async adapter() {
    return engine?.adapterInfo();
  },
};

window.harness = harness;
document.body.dataset.ready = '1';
