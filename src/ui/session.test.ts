/**
 * The session's backend switching, with stand-in engines (a fake Engine object for each backend: this tests
 * the Session wiring, not either engine): one backend holds a model at a time, switching unloads the other,
 * a WebLLM load gets a fresh engine with the pane's config, and a hung unload cannot hold the page.
 */
import { describe, expect, it } from 'vitest';
import type { BenchWorkerEngine } from '../bench/worker-api.ts';
import { isEngineError } from '../core/errors.ts';
import type { Engine, GenerateResult, ModelInfo } from '../core/types.ts';
import type { WebLlmConfig } from '../webllm/engine.ts';
import { Session } from './session.ts';

const INFO: ModelInfo = {
  name: 'm',
  architecture: 'llama',
  nParams: 1,
  nLayers: 1,
  nEmbd: 1,
  nVocab: 1,
  contextLength: 16,
  weightBytes: 4,
  tensorTypes: ['F32'],
};

const RESULT: GenerateResult = {
  promptTokenIds: [1],
  outputTokenIds: [2],
  text: 'x',
  finishReason: 'stop',
  tStartMs: 0,
  tokenTimesMs: [1],
};

/** A fake Engine that records calls. */
class FakeEngine implements Engine {
  readonly calls: string[] = [];
  constructor(
    readonly name: string,
    private readonly hangOnUnload = false,
  ) {}
  async load() {
    this.calls.push('load');
    return INFO;
  }
  async generate() {
    this.calls.push('generate');
    return RESULT;
  }
  async chat() {
    this.calls.push('chat');
    return RESULT;
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
  unload(): Promise<void> {
    this.calls.push('unload');
    return this.hangOnUnload ? new Promise<void>(() => undefined) : Promise.resolve();
  }
  /** Only WorkerEngine has it; here so a test can tell the worker's terminate from unload. */
  async terminate() {
    this.calls.push('terminate');
  }
}

function fakeSession(opts: { hangWebLlmUnload?: boolean } = {}) {
  const ours: FakeEngine[] = [];
  const webllm: { engine: FakeEngine; config: WebLlmConfig }[] = [];
  const session = new Session({
    ours: () => {
      const e = new FakeEngine(`ours-${ours.length}`);
      ours.push(e);
      return e as unknown as BenchWorkerEngine;
    },
    webllm: (config) => {
      const e = new FakeEngine(`webllm-${webllm.length}`, opts.hangWebLlmUnload);
      webllm.push({ engine: e, config });
      return e;
    },
  });
  return { session, ours, webllm };
}

const MODEL = {
  info: INFO,
  id: 'm',
  sourceLabel: 'm (test)',
  synthetic: false,
  fileBytes: 4,
  load: { totalMs: 1, downloadMs: 0, uploadMs: 0, compileMs: 0 },
};

describe('Session backends (fake Engine stand-ins for both backends)', () => {
  it('wllama (the CPU): our model unloaded, a fresh CPU engine each time, the old one unloaded; a CPU device without an adapter', async () => {
    const cpu: FakeEngine[] = [];
    const ours: FakeEngine[] = [];
    const session = new Session({
      ours: () => {
        const e = new FakeEngine('ours');
        ours.push(e);
        return e as unknown as BenchWorkerEngine;
      },
      wllama: () => {
        const e = new FakeEngine(`cpu-${cpu.length}`);
        cpu.push(e);
        return e;
      },
    });
    void session.ourEngine;
    const a = await session.useBackend('wllama');
    expect(a).toBe(cpu[0]);
    expect(ours[0].calls).toEqual(['unload']);
    expect(session.backend).toBe('wllama');
    expect(session.ours).toBe(false);
    expect(session.engine).toBe(cpu[0]);
    // No adapter (no WebGPU): the result's device is the CPU.
    expect(session.benchDevice()?.vendor).toBe('cpu');
    const b = await session.useBackend('wllama');
    expect(b).toBe(cpu[1]);
    expect(cpu[0].calls).toEqual(['unload']);
    await session.useBackend('webgpu');
    expect(cpu[1].calls).toEqual(['unload']);
    expect(session.engine).toBe(session.ourEngine);
    expect(session.benchDevice()).toBeUndefined();
  });

  it('starts on our engine; engine and ourEngine are the same worker', () => {
    const { session, ours } = fakeSession();
    expect(session.backend).toBe('webgpu');
    expect(session.ours).toBe(true);
    expect(session.engine).toBe(session.ourEngine);
    expect(ours).toHaveLength(1);
  });

  it('switching to WebLLM unloads our model (keeping the worker), makes a WebLLM engine with the config', async () => {
    const { session, ours, webllm } = fakeSession();
    await session.useBackend('webgpu');
    session.setModel(MODEL);
    let changes = 0;
    session.addEventListener('change', () => changes++);
    const config: WebLlmConfig = { cacheBackend: 'indexeddb' };
    const engine = await session.useBackend('webllm', config);
    expect(session.model).toBeUndefined();
    expect(ours[0].calls).toEqual(['unload']);
    expect(webllm).toHaveLength(1);
    expect(webllm[0].config).toBe(config);
    expect(engine).toBe(webllm[0].engine);
    expect(session.engine).toBe(engine);
    expect(session.backend).toBe('webllm');
    expect(session.ours).toBe(false);
    expect(changes).toBeGreaterThan(0);
    // Our worker is still there for llama-bench's accessor (no second worker made).
    expect(session.ourEngine).toBe(ours[0] as unknown as BenchWorkerEngine);
    expect(ours).toHaveLength(1);
  });

  it('switching back to our engine unloads WebLLM; the chat goes to our worker again', async () => {
    const { session, ours, webllm } = fakeSession();
    await session.useBackend('webllm');
    await session.engine.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(webllm[0].engine.calls).toEqual(['chat']);
    const e = await session.useBackend('webgpu');
    expect(webllm[0].engine.calls).toEqual(['chat', 'unload']);
    expect(e).toBe(ours[0] as unknown as Engine);
    expect(session.backend).toBe('webgpu');
    await session.engine.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(ours[0].calls).toContain('chat');
  });

  it('a second WebLLM load gets a fresh engine and unloads the first', async () => {
    const { session, webllm } = fakeSession();
    await session.useBackend('webllm', { cacheBackend: 'cache' });
    await session.useBackend('webllm', { cacheBackend: 'opfs' });
    expect(webllm).toHaveLength(2);
    expect(webllm[0].engine.calls).toEqual(['unload']);
    expect(webllm[1].config.cacheBackend).toBe('opfs');
    expect(session.engine).toBe(webllm[1].engine);
  });

  it('a WebLLM engine whose unload never returns does not hold the switch back to our engine', async () => {
    const { session } = fakeSession({ hangWebLlmUnload: true });
    await session.useBackend('webllm');
    const t0 = Date.now();
    await session.useBackend('webgpu');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(session.backend).toBe('webgpu');
  });

  it('resetEngine after a device loss: WebLLM is dropped (engine says not_loaded); ours is terminated', async () => {
    const { session, ours, webllm } = fakeSession();
    await session.useBackend('webllm');
    session.setModel(MODEL);
    await session.resetEngine();
    expect(session.model).toBeUndefined();
    expect(webllm[0].engine.calls).toEqual(['unload']);
    let err: unknown;
    try {
      void session.engine;
    } catch (e) {
      err = e;
    }
    expect(isEngineError(err, 'not_loaded')).toBe(true);
    await session.useBackend('webgpu');
    await session.resetEngine();
    expect(ours[0].calls).toContain('terminate');
    // The next use starts a fresh worker.
    expect(session.ourEngine).toBe(ours[1] as unknown as BenchWorkerEngine);
  });
});
