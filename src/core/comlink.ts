/**
 * comlink glue: errors cross the worker boundary with their class and `code` (comlink's built-in
 * handler keeps only name/message/stack), so an `EngineError('device_lost')` thrown in the worker is an
 * `EngineError('device_lost')` on the page. Call {@link installErrorTransfer} on both sides.
 */
import * as Comlink from 'comlink';
import { EngineError, type EngineErrorCode, type EngineErrorDetails } from './errors.ts';

type Serialized =
  | {
      isError: true;
      value: {
        name: string;
        message: string;
        stack?: string;
        code?: EngineErrorCode;
        details?: EngineErrorDetails;
      };
    }
  | { isError: false; value: unknown };

let installed = false;

/** Replaces comlink's 'throw' transfer handler with one that keeps EngineError codes. Idempotent. */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  const base = Comlink.transferHandlers.get('throw')!;
  Comlink.transferHandlers.set('throw', {
    canHandle: base.canHandle,
    serialize(v: unknown) {
      const value = (v as { value: unknown }).value;
      let s: Serialized;
      if (value instanceof Error) {
        s = {
          isError: true,
          value: {
            name: value.name,
            message: value.message,
            stack: value.stack,
            code: (value as EngineError).code,
            // Only an EngineError's: another error's `details` may hold what cannot be cloned (a function),
            // and a failed postMessage would lose the error itself.
            ...(value.name === 'EngineError' ? { details: (value as EngineError).details } : {}),
          },
        };
      } else s = { isError: false, value };
      return [s, []];
    },
    deserialize(s: unknown) {
      const ser = s as Serialized;
      if (ser.isError) {
        if (ser.value.name === 'EngineError' && ser.value.code)
          throw EngineError.fromJSON({ ...ser.value, code: ser.value.code });
        throw Object.assign(new Error(ser.value.message), ser.value);
      }
      throw ser.value;
    },
  } as Comlink.TransferHandler<unknown, unknown>);
}
