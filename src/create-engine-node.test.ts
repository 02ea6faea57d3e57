/**
 * The package's `createEngine` outside a browser (Node: no Web Worker): a typed EngineError naming the
 * problem, for every backend, instead of a ReferenceError from the worker's constructor.
 */
import { describe, expect, it } from 'vitest';
import { isEngineError } from './core/errors.ts';
import { createEngine } from './index.ts';

describe('createEngine in Node', () => {
  it.each([undefined, 'webgpu', 'wllama', 'auto'] as const)(
    'backend %s: EngineError unsupported, not a ReferenceError',
    (backend) => {
      expect(typeof Worker).toBe('undefined');
      let err: unknown;
      try {
        if (backend === 'auto' || backend === 'wllama') createEngine({ backend });
        else createEngine(backend ? { backend } : undefined);
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, 'unsupported'), String(err)).toBe(true);
      expect(String((err as Error).message)).toMatch(/Web Worker.*browsers/);
      // No repository-only scripts (npm run …) that a project which installed the package lacks.
      expect(String((err as Error).message)).not.toMatch(/npm run/);
    },
  );

  it('a backend that does not exist is invalid_argument here too (it was "no Web Worker")', () => {
    expect(() => createEngine({ backend: 'bogus' } as never)).toThrow(
      expect.objectContaining({
        code: 'invalid_argument',
        message: `backend must be 'webgpu', 'wllama' or 'auto', got "bogus"`,
      }),
    );
  });
});
