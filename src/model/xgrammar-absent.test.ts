/**
 * The packaged builds' stand-in for the grammar library (vite.lib.config.ts, vite.widget.config.ts alias
 * `@mlc-ai/web-xgrammar` to src/model/xgrammar-absent.ts): a constrained request is refused as
 * 'unsupported' with the stand-in's message alone, which says what to do, not "failed to load: Error: …".
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('@mlc-ai/web-xgrammar', () => import('./xgrammar-absent.ts'));

describe('loadXgrammar in a build without the grammar library', () => {
  it("refuses with 'unsupported' and a plain message", async () => {
    const { loadXgrammar } = await import('./grammar.ts');
    const e = await loadXgrammar().then(
      () => undefined,
      (err: unknown) => err as { code?: string; message: string },
    );
    expect(e?.code).toBe('unsupported');
    expect(e?.message).toMatch(/^structured output is not available in this build: the npm package/);
    expect(e?.message).toMatch(/tool_choice 'auto'/);
    expect(e?.message).not.toMatch(/failed to load|Error:/);
  });
});
