/**
 * The widget's module in Node (server-side rendering: a framework imports it on the server): it loads
 * without `HTMLElement` or `customElements`, defines nothing, and its element is defined once it runs in a
 * browser (src/widget/index.ts's import defines it there).
 */
import { describe, expect, it } from 'vitest';

describe('widget module without a DOM', () => {
  it('imports in Node without HTMLElement/customElements', async () => {
    expect(typeof (globalThis as { HTMLElement?: unknown }).HTMLElement).toBe('undefined');
    expect(typeof (globalThis as { customElements?: unknown }).customElements).toBe('undefined');
    const widget = await import('./index.ts');
    expect(typeof widget.WebGpuChatElement).toBe('function');
    expect(() => widget.defineWebGpuChat()).not.toThrow();
    expect(widget.availableEngines()).toContain('wllama');
  });
});

describe('mount() options', () => {
  it('sets an attribute per option given, the draft options included', async () => {
    const { mountAttributes } = await import('./index.ts');
    expect(
      mountAttributes({ model: '/m.gguf', maxTokens: 5, draftModel: 'lookup', draftMax: 6, kvType: 'q8_0' }),
    ).toEqual([
      ['model', '/m.gguf'],
      ['max-tokens', '5'],
      ['kv-type', 'q8_0'],
      ['draft-model', 'lookup'],
      ['draft-max', '6'],
    ]);
  });

  it('refuses an option it does not have, naming the one it may mean', async () => {
    const { mountAttributes } = await import('./index.ts');
    const bad = (o: object) => () => mountAttributes(o as never);
    expect(bad({ model: 'm', max_tokens: 5 })).toThrow(
      /mount\(\) has no option "max_tokens" \(did you mean "maxTokens"\?\); it takes model, engine/,
    );
    expect(bad({ model: 'm', 'draft-model': 'lookup' })).toThrow(
      /no option "draft-model" \(did you mean "draftModel"\?\)/,
    );
    expect(bad({ model: 'm', draft: 'lookup' })).toThrow(/no option "draft"; it takes/);
    // A typo within two edits of one option names it; one near several (or none) names none.
    expect(bad({ model: 'm', maxToken: 5 })).toThrow(/no option "maxToken" \(did you mean "maxTokens"\?\)/);
    expect(bad({ model: 'm', sytemPrompt: 'x' })).toThrow(/\(did you mean "systemPrompt"\?\)/);
    expect(bad({ model: 'm', Engine: 'webgpu' })).toThrow(/\(did you mean "engine"\?\)/);
    expect(bad({ model: 'm', colour: 'red' })).toThrow(/no option "colour"; it takes/);
    expect(bad('m' as never)).toThrow(/needs an options object/);
    expect(bad({ model: 'm', colour: 'red' })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});
