/**
 * The package's `createEngine()` in a page (src/index.ts's PageEngine, which makes relative model URLs
 * absolute before the worker sees them): a source that is not one is a rejected promise with
 * invalid_argument, never a synchronous TypeError or a fetch of the page's own URL.
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from './core/errors.ts';
import { createEngine } from './index.ts';

describe('createEngine() in a page', () => {
  it('refuses a source that is not one, as a rejected promise', async () => {
    const engine = createEngine();
    try {
      const refused = async (call: () => Promise<unknown>, text: RegExp) => {
        let p: Promise<unknown> | undefined;
        expect(() => {
          p = call();
        }).not.toThrow();
        const err = await p?.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isEngineError(err, 'invalid_argument'), String(err)).toBe(true);
        expect((err as Error).message).toMatch(text);
      };
      await refused(
        () => engine.load('/models/stories260K.gguf' as never),
        /^the model source must be an object: .* \(for a URL: load\(\{ url: "\/models\/stories260K\.gguf" \}\)\)$/,
      );
      await refused(() => engine.load(undefined as never), /^the model source must be an object/);
      await refused(() => engine.load({ url: 123 } as never), /url must be a non-empty string, got 123/);
      await refused(() => engine.load({ url: '' }), /url must be a non-empty string/);
      await refused(
        () => engine.load({ url: '/models/x.gguf' }, { draft: 'small.gguf' as never }),
        /^the draft model source must be an object/,
      );
      await refused(
        () => engine.setDraft({ blob: 'x' } as never),
        /^the draft model source's blob must be a Blob/,
      );
    } finally {
      await engine.terminate();
    }
  });
});
