/**
 * Typed, validated reads of GGUF metadata values for config.ts and config-arch.ts: a number (a per-layer
 * array accepted where every layer agrees), a positive integer or float, a string, each failing with an
 * EngineError that names the key, and the upper bounds a sane model stays under. They are separate so the
 * general config (config.ts) and the per-architecture readers (config-arch.ts) share them without
 * importing each other.
 */
import { EngineError } from '../core/errors.ts';

/** Upper bounds far above any real model; anything larger is a damaged or hostile file. */
export const LIMITS = {
  nLayers: 10_000,
  nEmbd: 1 << 20,
  nFF: 1 << 22,
  nHead: 1 << 16,
  headDim: 1 << 16,
  nVocab: 1 << 24,
  contextLength: 1 << 28,
} as const;

/** GGUF metadata, by key. */
export type Md = Record<string, unknown>;

/** An EngineError('gguf_invalid'): the file is damaged or not what it claims. */
export function invalid(msg: string): EngineError {
  return new EngineError('gguf_invalid', msg);
}

/** An EngineError('unsupported_model'): a valid file this engine cannot run. */
export function unsupported(msg: string): EngineError {
  return new EngineError('unsupported_model', msg);
}

/** A number from a metadata value (number or bigint), or undefined when absent. */
export function num(md: Md, key: string): number | undefined {
  let v: unknown = md[key];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) {
    const arr: unknown[] = v;
    // Some converters write per-layer arrays; fine as long as every layer agrees.
    if (arr.length === 0) throw invalid(`metadata ${key} is an empty array`);
    if (!arr.every((x) => x === arr[0])) {
      throw unsupported(
        `metadata ${key} differs between layers ([${arr.join(', ')}]); per-layer sizes are not supported`,
      );
    }
    v = arr[0];
  }
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v !== 'number' || Number.isNaN(v))
    throw invalid(`metadata ${key} should be a number, got ${String(v)}`);
  return v;
}

/** A positive integer in [1, max]; `fallback` when absent (undefined fallback = required). */
export function posInt(md: Md, key: string, max: number, fallback?: number): number {
  const v = num(md, key) ?? fallback;
  if (v === undefined) throw invalid(`required metadata ${key} is missing`);
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw invalid(
      `metadata ${key} = ${v} is not a sensible value (expected an integer from 1 to ${max.toLocaleString('en-US')})`,
    );
  }
  return v;
}

/** A string metadata value, or undefined when absent. */
export function str(md: Md, key: string): string | undefined {
  const v = md[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid(`metadata ${key} should be a string, got ${String(v)}`);
  return v;
}

/** A finite positive metadata number, `fallback` when absent. */
export function posFloat(md: Md, key: string, fallback: number): number {
  const v = num(md, key) ?? fallback;
  if (!Number.isFinite(v) || v <= 0) throw invalid(`metadata ${key} = ${v} is not sensible (expected > 0)`);
  return v;
}
