/**
 * One block decoder per weight type ({@link BlockDecoder}): everything the kernels know about a type's
 * blocks (ggml's and, for the planar types, repack.ts's planes) lives in that type's file here, and the
 * kernel families (loader.ts, mmv-chunk.ts, mmv-int.ts, mmm.ts, repack.ts) look it up in {@link DECODERS}.
 */
import type { WeightType } from '../common.ts';
import { Q2_K } from './q2_k.ts';
import { Q3_K } from './q3_k.ts';
import { Q4_0 } from './q4_0.ts';
import { Q4_K } from './q4_k.ts';
import { Q5_0 } from './q5_0.ts';
import { Q5_K } from './q5_k.ts';
import { Q6_K } from './q6_k.ts';
import { Q8_0 } from './q8_0.ts';
import type { BlockDecoder } from './shared.ts';

export type { BlockDecoder, ChunkCtx, IntChunkCtx, PlaneField, Planes } from './shared.ts';

/** The decoder of each weight type. */
export const DECODERS: Partial<Record<WeightType, BlockDecoder>> = {
  Q8_0,
  Q4_0,
  Q5_0,
  Q4_K,
  Q6_K,
  Q5_K,
  Q3_K,
  Q2_K,
};
