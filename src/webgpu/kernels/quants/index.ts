/**
 * One block decoder per weight type ({@link BlockDecoder}): everything the kernels know about a type's
 * blocks (ggml's and, for the planar types, repack.ts's planes) lives in that type's file here, and the
 * kernel families (loader.ts, mmv.ts, mmv-int.ts, mmm.ts, repack.ts) look it up in
 * {@link DECODERS}.
 *
 * | file          | types            | loader raw / planes | mmv float raw / planes | mmv int8 raw / planes | mmm int8 | repack |
 * | float.ts      | F32, F16, BF16   | ✓ / –               | ✓ / –                  | – / –                 | –        | –      |
 * | q8_0.ts       | Q8_0             | ✓ / ✓               | ✓ / ✓                  | – / ✓                 | ✓        | ✓      |
 * | q4_0.ts       | Q4_0             | ✓ / ✓               | ✓ / ✓                  | – / ✓                 | ✓        | ✓      |
 * | q5_0.ts       | Q5_0             | ✓ / ✓               | ✓ / ✓                  | – / –                 | ✓        | ✓      |
 * | q4_1-q5_1.ts  | Q4_1, Q5_1       | ✓ / –               | ✓ / –                  | – / –                 | –        | –      |
 * | iq4.ts        | IQ4_NL, IQ4_XS   | ✓ / –               | ✓ / –                  | – / –                 | –        | –      |
 * | q4_k.ts       | Q4_K             | ✓ / ✓               | ✓ / ✓                  | ✓ / ✓                 | ✓        | ✓      |
 * | q5_k.ts       | Q5_K             | ✓ / –               | ✓ / –                  | ✓ / –                 | ✓        | –      |
 * | q6_k.ts       | Q6_K             | ✓ / ✓               | ✓ / ✓                  | – / ✓                 | ✓        | ✓      |
 * | q3_k.ts       | Q3_K             | ✓ / –               | ✓ / –                  | ✓ / –                 | ✓        | –      |
 * | q2_k.ts       | Q2_K             | ✓ / –               | ✓ / –                  | ✓ / –                 | ✓        | –      |
 */
import type { WeightType } from '../common.ts';
import { BF16, F16, F32 } from './float.ts';
import { IQ4_NL, IQ4_XS } from './iq4.ts';
import { Q2_K } from './q2_k.ts';
import { Q3_K } from './q3_k.ts';
import { Q4_0 } from './q4_0.ts';
import { Q4_1, Q5_1 } from './q4_1-q5_1.ts';
import { Q4_K } from './q4_k.ts';
import { Q5_0 } from './q5_0.ts';
import { Q5_K } from './q5_k.ts';
import { Q6_K } from './q6_k.ts';
import { Q8_0 } from './q8_0.ts';
import type { BlockDecoder } from './shared.ts';

export type { BlockDecoder, ChunkCtx, IntChunkCtx, PlaneField, Planes } from './shared.ts';

/** The decoder of each weight type. */
export const DECODERS: Record<WeightType, BlockDecoder> = {
  F32,
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q5_0,
  Q4_K,
  Q6_K,
  Q4_1,
  Q5_1,
  IQ4_NL,
  IQ4_XS,
  Q5_K,
  Q3_K,
  Q2_K,
};

/**
 * The WGSL mmv.ts declares once per kernel for the weight types it reads in ggml's blocks (each decoder's
 * `mmvPrelude`, shared ones once; a type in planes needs none), in a fixed order: Q4_K/Q5_K's
 * scale-and-min reader, then IQ4's grid.
 */
export function mmvPreludes(types: readonly WeightType[]): string[] {
  const wanted = new Set(types.map((t) => DECODERS[t].mmvPrelude).filter((s) => s !== undefined));
  return [Q4_K.mmvPrelude, IQ4_NL.mmvPrelude].filter((s): s is string => s !== undefined && wanted.has(s));
}
