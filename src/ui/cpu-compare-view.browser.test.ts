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
  constructor(private readonly loadError?: EngineError) {}
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
});
