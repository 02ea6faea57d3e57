/**
 * The "Your CPU" card's failure paths in Chromium with a stand-in CPU engine (an object implementing our
 * Engine interface; the real wllama run is e2e/cpu-compare.spec.ts): a load error is shown in the card as
 * its EngineError code and message, Stop aborts a run part-way; in both nothing is saved, the engine is
 * unloaded and the session's task is released.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.ts';
import type { Engine, GenerateRequest, GenerateResult, ModelInfo, TokenEvent } from '../core/types.ts';
import { sampleResult } from '../testing/sample-result.ts';
import { CpuCompareView } from './cpu-compare-view.ts';
import { Session } from './session.ts';

const INFO: ModelInfo = {
  name: 'stories260K',
  architecture: 'llama',
  nParams: 292160,
  nLayers: 5,
  nEmbd: 64,
  nVocab: 512,
  contextLength: 512,
  weightBytes: 1185376,
  tensorTypes: ['F32'],
  threads: { count: 1, multithread: false, crossOriginIsolated: false },
};

/** A stand-in: load fails with `loadError`, or each generate waits for its abort signal. */
class StandIn implements Engine {
  unloads = 0;
  generates = 0;
  constructor(
    private readonly loadError?: EngineError,
    /** Answer each request at once with this many tokens, 2 ms apart (else wait for the abort). */
    private readonly answer?: number,
  ) {}
  async load() {
    if (this.loadError) throw this.loadError;
    return INFO;
  }
  generate(
    _req: GenerateRequest,
    _on?: (e: TokenEvent) => void,
    signal?: AbortSignal,
  ): Promise<GenerateResult> {
    this.generates++;
    if (this.answer !== undefined) {
      const t0 = performance.now();
      return Promise.resolve({
        promptTokenIds: [1, 2, 3, 4, 5],
        outputTokenIds: Array.from({ length: this.answer }, (_, i) => 10 + i),
        text: 'x'.repeat(this.answer),
        finishReason: 'length',
        tStartMs: t0,
        tokenTimesMs: Array.from({ length: this.answer }, (_, i) => t0 + 10 + 2 * i),
      });
    }
    return new Promise((_res, rej) =>
      signal?.addEventListener('abort', () => rej(new EngineError('aborted', 'the request was aborted'))),
    );
  }
  chat(): Promise<GenerateResult> {
    throw new Error('not used');
  }
  async tokenize() {
    return [];
  }
  async detokenize() {
    return '';
  }
  async stats() {
    return {};
  }
  async unload() {
    this.unloads++;
  }
}

function setUp(engine: StandIn) {
  const session = new Session({ ours: () => ({}) as never });
  const gpu = sampleResult();
  session.setModel({
    info: INFO,
    id: gpu.model.id,
    sourceLabel: 'stories260K.gguf (file)',
    synthetic: false,
    fileBytes: 1185376,
    load: gpu.load,
    source: { source: { blob: new Blob([new Uint8Array(8)]), name: 'stories260K.gguf' }, cache: false },
  });
  session.setLastResult(gpu);
  const view = new CpuCompareView(session, async () => engine);
  const saved: unknown[] = [];
  view.onResult = (r) => {
    saved.push(r);
  };
  document.body.replaceChildren(view.element);
  const q = (id: string) => view.element.querySelector<HTMLElement>(`[data-testid="${id}"]`) as HTMLElement;
  return { session, view, saved, q };
}

describe('CpuCompareView', () => {
  it('shows a load error as its code and message, saves nothing, releases the engine and the task', async () => {
    const engine = new StandIn(
      new EngineError(
        'unsupported_model',
        'big.gguf is 2.4 GiB in one file: wllama reads at most 2 GiB per file; split it',
      ),
    );
    const { session, view, saved, q } = setUp(engine);
    expect((q('cpu-run') as HTMLButtonElement).disabled).toBe(false);
    await view.run();
    expect(q('cpu-error').hidden).toBe(false);
    expect(q('cpu-error').dataset.code).toBe('unsupported_model');
    expect(q('cpu-error').textContent).toBe(
      'unsupported_model: big.gguf is 2.4 GiB in one file: wllama reads at most 2 GiB per file; split it',
    );
    expect(q('cpu-status').textContent).toBe('The CPU run failed.');
    expect(saved).toEqual([]);
    expect(engine.unloads).toBe(1);
    expect(session.task).toBeUndefined();
    expect(session.lastResult?.cpu).toBeUndefined();
  });

  it('Stop aborts a run part-way: nothing saved, the engine unloaded', async () => {
    const engine = new StandIn();
    const { session, view, saved, q } = setUp(engine);
    const running = view.run();
    await expect.poll(() => engine.generates).toBe(1);
    expect(session.task).toBe('bench');
    expect((q('cpu-stop') as HTMLButtonElement).disabled).toBe(false);
    (q('cpu-stop') as HTMLButtonElement).click();
    await running;
    expect(q('cpu-status').textContent).toBe('Stopped after 0 of 3 CPU runs; nothing saved.');
    expect(q('cpu-error').hidden).toBe(true);
    expect(saved).toEqual([]);
    expect(engine.unloads).toBe(1);
    expect(session.task).toBeUndefined();
  });

  it('"Also measure my CPU": a GPU result is measured once the engine is free and saved with its cpu block', async () => {
    const engine = new StandIn(undefined, 9);
    const { session, view, saved, q } = setUp(engine);
    (view.element.querySelector('#cpu-auto') as HTMLInputElement).checked = true;
    const gpu = session.lastResult;
    if (!gpu) throw new Error('no GPU result');
    session.begin('bench'); // the GPU run still holds the engine when its result arrives
    view.afterGpuRun(gpu);
    await new Promise((r) => setTimeout(r, 20));
    expect(engine.generates).toBe(0);
    session.end('bench');
    await expect.poll(() => saved.length).toBe(1);
    const r = saved[0] as typeof gpu;
    expect(engine.generates).toBe(gpu.plan.warmup + gpu.plan.prompts.length * gpu.plan.runs);
    // 9 tokens 2 ms apart after the first: decode = 8 / 16 ms = 500 tok/s (vLLM's definition).
    expect(r.cpu?.decodeTokS).toBeCloseTo(500, 6);
    expect(r.cpu?.runs).toBe(3);
    expect(r.cpu?.ratio.decode).toBeCloseTo(
      (gpu.summary.decodeTokensPerSecond?.median ?? Number.NaN) / 500,
      9,
    );
    expect(session.lastResult?.cpu).toEqual(r.cpu);
    expect(q('cpu-table').querySelector('[data-field="ratio-decode"]')?.textContent).toMatch(/×$/);
    expect(engine.unloads).toBe(1);
    expect(session.task).toBeUndefined();
  });
});
