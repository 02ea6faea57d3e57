/**
 * The one error type every backend throws. It crosses the worker boundary with its `code` intact
 * (see `workers/engine.worker.ts` and `workers/bench.worker.ts`, which register a comlink transfer handler
 * for it: src/core/comlink.ts).
 */

/** Error codes (see `../shared/DESIGN.md`, "Errors"). */
export type EngineErrorCode =
  | 'webgpu_unavailable'
  | 'feature_missing'
  | 'device_lost'
  | 'out_of_memory'
  | 'gguf_invalid'
  | 'unsupported_model'
  | 'context_overflow'
  | 'network'
  | 'timeout'
  | 'http_status'
  | 'aborted'
  // A request, option or argument of the wrong type or out of range (src/core/validate.ts checks every
  // generate/chat request; the command lines exit 2 with this code).
  | 'invalid_argument'
  // A request feature this backend cannot honour (a response format WebLLM cannot constrain to, a library
  // that failed to load): refused, never done without it.
  | 'unsupported'
  | 'not_loaded'
  // Model library (src/library/):
  | 'quota_exceeded'
  | 'integrity'
  // Remote servers (src/remote/engine.ts):
  | 'unauthorized'
  | 'model_not_found'
  | 'rate_limited'
  | 'server_error'
  | 'protocol'
  | 'stream_cut'
  | 'cors';

/**
 * Facts behind an error, for a surface that words its own advice: the engine's message names the API's
 * load option and the CLI's flag, the widget names its `context-length` attribute.
 */
export interface EngineErrorDetails {
  /** 'context_overflow': the context the model was loaded with, in tokens. */
  readonly contextLength?: number;
  /**
   * 'context_overflow': the tokens the prompt needs, the ones already in the KV cache included; a lower
   * bound where `promptTokensAtLeast` (counted from its characters before tokenizing).
   */
  readonly promptTokens?: number;
  readonly promptTokensAtLeast?: boolean;
  /** What the backend itself said, kept where the facts above do not say it all (`llama.cpp: …`). */
  readonly said?: string;
  /**
   * 'gguf_invalid' for a file shorter than its header says (cut short, or a wrong length in the header):
   * its size in bytes, the bytes its header or tensor list needs where known, and the tensor that runs
   * past the end where one does.
   */
  readonly truncated?: {
    readonly fileBytes: number;
    readonly neededBytes?: number;
    readonly tensor?: string;
  };
}

/** An error with a machine-readable `code` and a message a person can act on. */
export class EngineError extends Error {
  override name = 'EngineError';
  readonly code: EngineErrorCode;
  /** Facts a caller may word its own message from (absent where the error has none). */
  readonly details?: EngineErrorDetails;
  constructor(
    code: EngineErrorCode,
    message: string,
    options?: { cause?: unknown; details?: EngineErrorDetails },
  ) {
    super(message, options && 'cause' in options ? { cause: options.cause } : undefined);
    this.code = code;
    if (options?.details) this.details = options.details;
  }

  /** Plain object for structured clone / JSON. */
  toJSON(): {
    name: string;
    code: EngineErrorCode;
    message: string;
    stack?: string;
    details?: EngineErrorDetails;
  } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      stack: this.stack,
      ...(this.details ? { details: this.details } : {}),
    };
  }

  /** Rebuilds an EngineError from {@link EngineError.toJSON}'s output. */
  static fromJSON(o: {
    code: EngineErrorCode;
    message: string;
    stack?: string;
    details?: EngineErrorDetails;
  }): EngineError {
    const e = new EngineError(o.code, o.message, o.details ? { details: o.details } : undefined);
    if (o.stack) e.stack = o.stack;
    return e;
  }
}

/** True when `e` is an EngineError (also across realms, by name and code). */
export function isEngineError(e: unknown, code?: EngineErrorCode): e is EngineError {
  const ok =
    e instanceof EngineError ||
    (typeof e === 'object' && e !== null && (e as Error).name === 'EngineError' && 'code' in e);
  return ok && (code === undefined || (e as EngineError).code === code);
}

/**
 * Words a `context_overflow` from the error's details (EngineErrorDetails: context length, prompt tokens)
 * and `advice` (e.g. "shorten the message or set a larger context-length attribute on the widget");
 * `subject` names what did not fit ("the message", "the prompt"). An error without details (WebLLM's, a
 * remote server's) keeps `message` and gets the advice after it.
 */
export function contextOverflowText(
  e: unknown,
  message: string,
  advice: string,
  subject = 'the message',
): string {
  const d = isEngineError(e) ? e.details : undefined;
  if (d?.contextLength === undefined) return `${message} (${advice})`;
  if (d.promptTokens === undefined)
    return `${subject} does not fit the context of ${d.contextLength} tokens${d.said ? ` (${d.said})` : ''}; ${advice}`;
  const least = d.promptTokensAtLeast ? 'at least ' : '';
  return `${subject} needs ${least}${d.promptTokens} tokens but the context holds ${d.contextLength} (and one must be left for the answer); ${advice}`;
}

/**
 * A context overflow's advice: `shorter`, with `or larger` unless the context loaded is already the
 * model's training context (ModelInfo.trainedContextLength), which no load goes past.
 * @param info the loaded model's `contextLength` and `trainedContextLength` (undefined: not known).
 */
export function contextAdvice(
  info: { contextLength: number; trainedContextLength?: number } | undefined,
  shorter: string,
  larger: string,
): string {
  const most = info?.trainedContextLength;
  return most !== undefined && info !== undefined && info.contextLength >= most
    ? `${shorter} (the context is already the model's most, ${most} tokens)`
    : `${shorter} or ${larger}`;
}

/**
 * The error of a call made to an engine after its `terminate()` (WorkerEngine, AutoEngine).
 * @returns EngineError('not_loaded').
 */
export function terminatedError(): EngineError {
  return new EngineError('not_loaded', 'this engine was terminated: create a new one (createEngine)');
}
