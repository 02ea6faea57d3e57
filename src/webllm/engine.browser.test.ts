/**
 * WebLLM's error paths with the errors it really raises here (no model can be loaded offline): a model host
 * that never answers (our load timeout, then the engine is used again), a model whose files 404, and a
 * worker that fails to start. The host is src/testing/webllm-server.ts on 127.0.0.1.
 */
import { type AppConfig, prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, inject, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { LoadProgress } from '../core/types.ts';
import { WebLlmEngine } from './engine.ts';

const server = inject('webllmServer');
const template = prebuiltAppConfig.model_list.find((r) => r.model_id === 'SmolLM2-135M-Instruct-q0f32-MLC');
if (!template) throw new Error('SmolLM2-135M-Instruct-q0f32-MLC is not in prebuiltAppConfig');
const appConfig: AppConfig = {
  model_list: [
    { ...template, model_id: 'hang', model: `${server}/hang/m/`, model_lib: `${server}/hang/m.wasm` },
    {
      ...template,
      model_id: 'missing',
      model: `${server}/missing/m/`,
      model_lib: `${server}/missing/m.wasm`,
    },
  ],
};

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return isEngineError(e) ? e.code : `not an EngineError: ${e}`;
  }
}

describe('WebLlmEngine offline error paths (real web-llm worker, real Chromium)', () => {
  it('a host that never answers times out cleanly, and the engine is used again', async () => {
    // The timeout also bounds the second load below, whose 404 takes a fresh web-llm worker 1.9–2.8 s on a
    // 2-core machine (1,500 ms timed it out there before its 404 came back).
    const engine = new WebLlmEngine({ appConfig, loadTimeoutMs: 5000 });
    const progress: LoadProgress[] = [];
    const t0 = performance.now();
    expect(await codeOf(engine.load({ url: 'hang' }, { onProgress: (p) => progress.push(p) }))).toBe(
      'timeout',
    );
    expect(performance.now() - t0).toBeLessThan(9000);
    expect(progress[0]?.phase).toBe('fetch'); // reported before WebLLM's silent config fetch
    expect(await codeOf(engine.chat({ messages: [{ role: 'user', content: 'hi' }] }))).toBe('not_loaded');
    // A fresh worker: the next load runs and fails for its own reason.
    expect(await codeOf(engine.load({ url: 'missing' }))).toBe('http_status');
    await engine.unload();
  });

  it('a model whose files 404 gives http_status', async () => {
    const engine = new WebLlmEngine({ appConfig, loadTimeoutMs: 10_000 });
    let err: unknown;
    await engine.load({ url: 'missing' }).catch((e) => {
      err = e;
    });
    expect(isEngineError(err, 'http_status')).toBe(true);
    console.log(`404 load: ${(err as Error).message}`);
    await engine.unload();
  });

  it('aborting a load ends it with aborted', async () => {
    const engine = new WebLlmEngine({ appConfig, loadTimeoutMs: 10_000 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 300);
    expect(await codeOf(engine.load({ url: 'hang' }, { signal: ctl.signal }))).toBe('aborted');
    await engine.unload();
  });

  it('a worker that fails to start ends the load', async () => {
    const engine = new WebLlmEngine({
      appConfig,
      loadTimeoutMs: 5000,
      createWorker: () => new Worker('/__no_such_webllm_worker__.js', { type: 'module' }),
    });
    const code = await codeOf(engine.load({ url: 'missing' }));
    expect(['network', 'timeout']).toContain(code);
  });

  it('an unknown model id is model_not_found', async () => {
    expect(await codeOf(new WebLlmEngine({ appConfig }).load({ url: 'nope' }))).toBe('model_not_found');
  });
});
