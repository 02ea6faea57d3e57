import * as Comlink from 'comlink';
import { describe, expect, it } from 'vitest';
import { installErrorTransfer } from './comlink.ts';
import { EngineError, isEngineError } from './errors.ts';

describe('EngineError details', () => {
  it('survive toJSON/fromJSON and structured clone', () => {
    const e = new EngineError('context_overflow', 'too long', {
      details: { contextLength: 2048, promptTokens: 2301 },
    });
    const back = EngineError.fromJSON(structuredClone(e.toJSON()));
    expect(back).toBeInstanceOf(EngineError);
    expect(back.code).toBe('context_overflow');
    expect(back.details).toEqual({ contextLength: 2048, promptTokens: 2301 });
    // An error without details has none, and no `details` key in its JSON.
    const plain = new EngineError('network', 'offline');
    expect(plain.details).toBeUndefined();
    expect('details' in plain.toJSON()).toBe(false);
    expect(EngineError.fromJSON(plain.toJSON()).details).toBeUndefined();
  });

  it('keep the cause as before: present when given, absent when not', () => {
    const cause = new Error('inner');
    expect(new EngineError('network', 'x', { cause }).cause).toBe(cause);
    expect('cause' in new EngineError('network', 'x', { details: { contextLength: 1 } })).toBe(false);
  });

  it('cross a comlink boundary (the engine worker) with code and details', async () => {
    installErrorTransfer();
    const { port1, port2 } = new MessageChannel();
    const api = {
      fail(n: number): number {
        throw new EngineError('context_overflow', `needs ${n}`, {
          details: { contextLength: 64, promptTokens: n, promptTokensAtLeast: true },
        });
      },
    };
    Comlink.expose(api, port1 as unknown as Comlink.Endpoint);
    const remote = Comlink.wrap<typeof api>(port2 as unknown as Comlink.Endpoint);
    const err = await remote.fail(97).then(
      () => undefined,
      (e: unknown) => e,
    );
    port1.close();
    port2.close();
    expect(isEngineError(err, 'context_overflow')).toBe(true);
    expect((err as EngineError).details).toEqual({
      contextLength: 64,
      promptTokens: 97,
      promptTokensAtLeast: true,
    });
  });

  it("another error's `details` (not cloneable here) is not sent: the error itself still crosses", async () => {
    installErrorTransfer();
    const { port1, port2 } = new MessageChannel();
    const api = {
      fail(): number {
        throw Object.assign(new TypeError('bad input'), { details: { fix: () => 1 } });
      },
    };
    Comlink.expose(api, port1 as unknown as Comlink.Endpoint);
    const remote = Comlink.wrap<typeof api>(port2 as unknown as Comlink.Endpoint);
    const err = await Promise.race([
      remote.fail().then(
        () => 'resolved',
        (e: unknown) => e,
      ),
      new Promise((r) => setTimeout(() => r('never settled'), 5000)),
    ]);
    port1.close();
    port2.close();
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('bad input');
  });
});
