/**
 * The page's WebLLM wiring in real Chromium with a FAKE WebLLM engine (a stand-in object implementing our
 * Engine interface, given to the Session; no WebLLM model can be loaded offline): the picker's WebLLM pane
 * (the real catalogue, filtered for this adapter) loads a model through the session with progress, a
 * failed load shows the EngineError and leaves the picker usable, the loaded model is benchmarked with the
 * result marked `webllm` and the engine's own figures shown beside ours, llama-bench says it is unavailable,
 * and the chat streams, stops, and answers again after the stop.
 */
import { describe, expect, it } from 'vitest';
import { page } from 'vitest/browser';
import './app.css';
import './llama-bench.css';
import { EngineError } from '../core/errors.ts';
import type {
  ChatRequest,
  Engine,
  GenerateResult,
  LoadOptions,
  ModelInfo,
  ModelSource,
  TokenEvent,
} from '../core/types.ts';
import type { WebLlmConfig } from '../webllm/engine.ts';
import { BenchView } from './bench-view.ts';
import { ChatView } from './chat-view.ts';
import { LlamaBenchView } from './llama-bench-view.ts';
import { ModelPicker } from './model-picker.ts';
import { RooflineView } from './roofline-view.ts';
import { Session } from './session.ts';

const MODEL_ID = 'SmolLM2-135M-Instruct-q0f32-MLC';

/** A fake WebLLM engine: loads report progress, tokens stream on timers, aborts end with 'aborted'. */
class FakeWebLlm implements Engine {
  readonly sources: ModelSource[] = [];
  unloaded = 0;
  constructor(
    readonly config: WebLlmConfig,
    private readonly failLoad: boolean,
  ) {}
  async load(source: ModelSource, o: LoadOptions = {}): Promise<ModelInfo> {
    this.sources.push(source);
    o.onProgress?.({ phase: 'fetch', bytesDone: 0, bytesTotal: 0, tMs: 0 });
    await new Promise((r) => setTimeout(r, 20));
    if (this.failLoad)
      throw new EngineError('network', 'WebLLM: TypeError: Failed to fetch — check the connection');
    o.onProgress?.({ phase: 'fetch', bytesDone: 10, bytesTotal: 10, tMs: 10 });
    o.onProgress?.({ phase: 'compile', bytesDone: 1000, bytesTotal: 1000, tMs: 20 });
    return {
      name: MODEL_ID,
      architecture: 'mlc',
      nParams: 0,
      nLayers: 0,
      nEmbd: 0,
      nVocab: 0,
      contextLength: 4096,
      weightBytes: 754 * 1024 * 1024,
      tensorTypes: ['q0f32'],
    };
  }
  private async stream(
    n: number,
    onToken?: (e: TokenEvent) => void,
    signal?: AbortSignal,
    gapMs = 2,
  ): Promise<GenerateResult & { engineReported: Record<string, number> }> {
    const tStartMs = performance.now();
    const times: number[] = [];
    let text = '';
    for (let i = 0; i < n && !signal?.aborted; i++) {
      await new Promise((r) => setTimeout(r, gapMs));
      if (signal?.aborted) break;
      times.push(performance.now());
      text += ` w${i}`;
      onToken?.({ tokenId: -1, text: ` w${i}`, tMs: times[i] });
    }
    return {
      promptTokenIds: [-1, -1, -1],
      outputTokenIds: times.map(() => -1),
      text,
      finishReason: signal?.aborted ? 'aborted' : 'length',
      tStartMs,
      tokenTimesMs: times,
      engineReported: { decode_tokens_per_s: 123, prefill_tokens_per_s: 456, time_to_first_token_s: 0.01 },
    };
  }
  generate(req: { maxTokens?: number }, onToken?: (e: TokenEvent) => void, signal?: AbortSignal) {
    return this.stream(req.maxTokens ?? 8, onToken, signal);
  }
  chat(req: ChatRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal) {
    return this.stream(req.maxTokens ?? 8, onToken, signal, 30);
  }
  async tokenize(): Promise<number[]> {
    throw new EngineError('invalid_argument', 'no tokenizer');
  }
  async detokenize(): Promise<string> {
    throw new EngineError('invalid_argument', 'no tokenizer');
  }
  async stats() {
    return { load: { fetchMs: 10, uploadMs: 0, compileMs: 10, totalMs: 20 } };
  }
  async unload() {
    this.unloaded++;
  }
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const t0 = performance.now();
  while (!ok()) {
    if (performance.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const button = (root: HTMLElement, name: string) => {
  const b = [...root.querySelectorAll('button')].find((x) => x.textContent?.trim() === name);
  if (!b) throw new Error(`no button "${name}"`);
  return b;
};

describe('page wiring for WebLLM (FAKE WebLLM engine object; real picker, pane, views, Chromium)', () => {
  it('load fails cleanly, loads, benchmarks as webllm with its own figures, llama-bench unavailable, chat stops and goes on', async () => {
    const made: FakeWebLlm[] = [];
    const session = new Session({
      webllm: (config) => {
        const e = new FakeWebLlm(config, made.length === 0); // the first load fails, as offline
        made.push(e);
        return e;
      },
    });
    session.setAdapter({
      vendor: 'test',
      architecture: 'test',
      device: '',
      description: 'test adapter',
      isFallbackAdapter: false,
      features: [],
      limits: {},
    });
    const picker = new ModelPicker(session);
    const roofline = new RooflineView(session);
    const bench = new BenchView(session, picker.element, roofline.element);
    const lb = new LlamaBenchView(session);
    const chat = new ChatView(session);
    document.body.replaceChildren(bench.element, lb.element, chat.element);

    // The WebLLM pane: the real catalogue for this adapter, an offered model chosen, Load enabled.
    const radio = document.getElementById('model-source-webllm') as HTMLInputElement;
    radio.checked = true;
    radio.dispatchEvent(new Event('change'));
    const select = document.querySelector<HTMLSelectElement>('[data-testid="webllm-model"]');
    await until('the catalogue', () =>
      Boolean(select?.querySelector(`option[value="${MODEL_ID}"]:not([disabled])`)),
    );
    if (!select) throw new Error('no select');
    select.value = MODEL_ID;
    select.dispatchEvent(new Event('change'));
    const load = button(picker.element, 'Load model');
    expect(load.hidden).toBe(false);
    expect(load.disabled).toBe(false);

    // 1. A failed load: the EngineError's code and message, nothing loaded, the picker usable again.
    load.click();
    await until('the failed load', () => session.task === undefined && made.length === 1 && !load.disabled);
    const alert = picker.element.querySelector<HTMLElement>(':scope > [role="alert"]');
    expect(alert?.hidden).toBe(false);
    expect(alert?.textContent).toBe(
      'Load failed (network): WebLLM: TypeError: Failed to fetch — check the connection',
    );
    expect(session.model).toBeUndefined();
    expect(button(bench.element, 'Run benchmark').disabled).toBe(true);

    // 2. The next load succeeds: a fresh engine with the pane's config, the model in the session.
    load.click();
    await until('the load', () => session.model !== undefined && session.task === undefined);
    expect(made).toHaveLength(2);
    expect(made[0].unloaded).toBeGreaterThan(0); // the failed engine was freed
    expect(made[1].sources).toEqual([{ url: `webllm:${MODEL_ID}` }]);
    expect(made[1].config.appConfig?.model_list.some((r) => r.model_id === MODEL_ID)).toBe(true);
    expect(made[1].config.cacheBackend).toBe('cache');
    expect(session.backend).toBe('webllm');
    expect(session.model?.id).toBe(MODEL_ID);
    expect(session.model?.sourceLabel).toBe(`${MODEL_ID} (WebLLM)`);
    expect(session.model?.synthetic).toBe(false);
    expect(session.model?.fileBytes).toBeGreaterThan(100 * 1024 * 1024); // vram_required_MB
    expect(alert?.hidden).toBe(true);
    expect(picker.element.querySelector('[data-field="model-source"]')?.textContent).toContain('(WebLLM)');

    // llama-bench is our engine's only: disabled, and says why.
    const unavailable = lb.element.querySelector<HTMLElement>('[data-testid="lb-unavailable"]');
    expect(unavailable?.hidden).toBe(false);
    expect(unavailable?.textContent).toContain('not available for WebLLM');
    expect(button(lb.element, 'Run llama-bench').disabled).toBe(true);
    expect(roofline.element.querySelector<HTMLElement>('[data-testid="roofline-webllm"]')?.hidden).toBe(
      false,
    );

    // 3. The benchmark: measured here, result engine 'webllm', WebLLM's own figures beside ours.
    (document.getElementById('plan-max-tokens') as HTMLInputElement).value = '6';
    (document.getElementById('plan-runs') as HTMLInputElement).value = '2';
    (document.getElementById('plan-warmup') as HTMLInputElement).value = '0';
    await bench.run();
    const r = session.lastResult;
    expect(r?.engine).toBe('webllm');
    expect(r?.model.id).toBe(MODEL_ID);
    expect(r?.runs).toHaveLength(6); // the short set: 3 prompts × 2 runs
    expect(r?.runs[0].outputTokens).toBe(6);
    expect(r?.runs[0].engineReported?.decode_tokens_per_s).toBe(123);
    expect(r?.roofline).toBeUndefined();
    const own = bench.element.querySelector('[data-testid="engine-reported"]');
    expect(own?.textContent).toContain('WebLLM’s own figures');
    expect(own?.querySelector('[data-engine-figure="decode_tokens_per_s"]')?.textContent).toContain('123');
    expect(bench.element.querySelector('[data-testid="roofline-sentence"]')?.textContent).toContain(
      'No roofline',
    );

    if (import.meta.env.VITE_SCREENSHOT_DIR) {
      const dir = import.meta.env.VITE_SCREENSHOT_DIR;
      await page.viewport(1280, 900);
      await page.screenshot({ path: `${dir}/ui-webllm-llama-bench.png`, element: lb.element });
      const results = bench.element.querySelector<HTMLElement>('[data-testid="results"]');
      if (results) await page.screenshot({ path: `${dir}/ui-webllm-results.png`, element: results });
    }

    // 4. Chat: Stop mid-answer, then the engine answers again.
    const input = document.getElementById('chat-input') as HTMLTextAreaElement;
    (document.getElementById('chat-max-tokens') as HTMLInputElement).value = '50';
    input.value = 'Hello';
    const first = chat.send();
    await until('the first streamed words', () =>
      (chat.element.querySelector('[data-role="assistant"] .msg__body')?.textContent ?? '').includes('w1'),
    );
    button(chat.element, 'Stop').click();
    await first;
    const answers = () => [...chat.element.querySelectorAll<HTMLElement>('[data-role="assistant"]')];
    expect(answers()[0].dataset.finish).toBe('aborted');
    (document.getElementById('chat-max-tokens') as HTMLInputElement).value = '3';
    input.value = 'Again';
    await chat.send();
    expect(answers()[1].dataset.finish).toBe('length');
    expect(answers()[1].querySelector('.msg__body')?.textContent).toBe(' w0 w1 w2');
    expect(session.task).toBeUndefined();
  });
});
