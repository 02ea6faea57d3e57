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
