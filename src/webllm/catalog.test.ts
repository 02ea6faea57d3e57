import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { absoluteUrl, filterCatalog, needsShaderF16, resolveAppConfig, selfHostedRecord } from './catalog.ts';

const big = { maxBufferSize: 4 * 2 ** 30, maxStorageBufferBindingSize: 2 ** 31 - 4 };
const noF16 = { features: ['timestamp-query'], limits: big };
const withF16 = { features: ['shader-f16'], limits: big };

describe('WebLLM catalogue filter (real prebuiltAppConfig)', () => {
  it('needs shader-f16 for f16 ids even where the record omits it', () => {
    const rec = prebuiltAppConfig.model_list.find(
      (r) => r.model_id.includes('q4f16_1') && !r.required_features,
    );
    expect(rec).toBeDefined();
    const e = filterCatalog(prebuiltAppConfig, noF16).find((x) => x.id === rec?.model_id);
    expect(e?.ok).toBe(false);
    expect(e?.reasons.join(' ')).toMatch(/shader-f16/);
    expect(filterCatalog(prebuiltAppConfig, withF16).find((x) => x.id === rec?.model_id)?.ok).toBe(true);
  });
  it('offers the q4f32 models without shader-f16, and no f16 model', () => {
    const list = filterCatalog(prebuiltAppConfig, noF16);
    const ok = list.filter((e) => e.ok).map((e) => e.id);
    expect(ok).toContain('Llama-3.2-1B-Instruct-q4f32_1-MLC');
    expect(ok.some((id) => /f16/.test(id))).toBe(false);
    expect(list.filter((e) => !e.ok).every((e) => e.reasons.length > 0)).toBe(true);
    expect(list[0].ok).toBe(true); // offered first
  });
  it('checks GPU memory when known, and buffer limits', () => {
    const small = filterCatalog(prebuiltAppConfig, { features: ['shader-f16'], limits: big, memoryMB: 1000 });
    const llama = small.find((e) => e.id === 'Llama-3.2-1B-Instruct-q4f32_1-MLC');
    expect(llama?.ok).toBe(false);
    expect(llama?.reasons[0]).toMatch(/GPU memory/);
    const rec = { ...prebuiltAppConfig.model_list[0], buffer_size_required_bytes: 512 * 2 ** 20 };
    const tiny = filterCatalog(
      { model_list: [rec] },
      { features: ['shader-f16'], limits: { maxBufferSize: 256 * 2 ** 20 } },
    );
    expect(tiny[0].ok).toBe(false);
    expect(tiny[0].reasons.join(' ')).toMatch(/512 MiB.*256 MiB per buffer/);
  });
  it('recognizes f16 ids', () => {
    expect(needsShaderF16('Llama-3.2-1B-Instruct-q4f16_1-MLC')).toBe(true);
    expect(needsShaderF16('SmolLM2-135M-Instruct-q0f16-MLC')).toBe(true);
    expect(needsShaderF16('Llama-3.2-1B-Instruct-q4f32_1-MLC')).toBe(false);
    expect(needsShaderF16('SmolLM2-135M-Instruct-q0f32-MLC')).toBe(false);
  });
});

describe('WebLLM URL resolution', () => {
  /** What `f` throws; fails the test when it returns. */
  const thrown = (f: () => unknown): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    throw new Error('expected a throw');
  };
  it('makes relative URLs absolute against the page', () => {
    expect(absoluteUrl('/models/x/', 'http://127.0.0.1:5173/index.html')).toBe(
      'http://127.0.0.1:5173/models/x/',
    );
    expect(absoluteUrl('models/x/', 'http://127.0.0.1:5173/bench/index.html')).toBe(
      'http://127.0.0.1:5173/bench/models/x/',
    );
    expect(absoluteUrl('https://cdn.example/m/', 'http://h/')).toBe('https://cdn.example/m/');
  });
  it('refuses what is not an http(s) URL with invalid_argument', () => {
    const file = thrown(() => absoluteUrl('file:///etc/passwd', 'http://h/'));
    expect(isEngineError(file, 'invalid_argument')).toBe(true);
    expect((file as Error).message).toBe('a WebLLM model URL must be http or https, got file:///etc/passwd');
    const bad = thrown(() => absoluteUrl('http://[bad', 'http://h/'));
    expect(isEngineError(bad, 'invalid_argument')).toBe(true);
    expect((bad as Error).message).toBe('"http://[bad" is not a URL (base http://h/)');
  });
  it('builds a self-hosted record from a catalogue record and a base URL', () => {
    const t = prebuiltAppConfig.model_list.find((r) => r.model_id === 'Llama-3.2-1B-Instruct-q4f32_1-MLC');
    if (!t) throw new Error('record missing');
    const r = selfHostedRecord(t, '/mlc', 'http://127.0.0.1:8080/bench/');
    expect(r.model).toBe('http://127.0.0.1:8080/mlc/Llama-3.2-1B-Instruct-q4f32_1-MLC/');
    expect(r.model_lib).toBe('http://127.0.0.1:8080/mlc/Llama-3.2-1B-Instruct-q4f32_1_cs1k-webgpu.wasm');
    const c = resolveAppConfig({ model_list: [{ ...t, model: 'w/', model_lib: 'l.wasm' }] }, 'http://a/b/');
    expect(c.model_list[0].model).toBe('http://a/b/w/');
    expect(c.model_list[0].model_lib).toBe('http://a/b/l.wasm');
  });
});
