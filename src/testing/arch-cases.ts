/**
 * The random-weight model files behind `tests/golden/arch.json` (`npm run golden:arch`): one table of
 * cases, each an architecture's seeded generator options, so the golden script and the tests rebuild the
 * same bytes. Add a case (or a `kind` with its builder in {@link buildArchCase}) to cover another
 * architecture.
 */
import { makeRandomGemmaGguf, type RandomGemmaOptions } from '../model/random-gemma.ts';
import { makeRandomPhi3Gguf, type RandomPhi3Options } from '../model/random-phi3.ts';
import { mulberry32 } from '../util/prng.ts';

/** One golden case: a random model file and the prompt fed to it. */
export type ArchCase = {
  /** Unique name, the key in arch.json. */
  name: string;
  /** Prompt length in tokens (BOS included); prompt ids are seeded from `promptSeed`. */
  nPrompt: number;
  promptSeed: number;
} & ({ kind: 'gemma'; options: RandomGemmaOptions } | { kind: 'phi3'; options: RandomPhi3Options });

/** Greedy tokens generated per case. */
export const ARCH_N_GENERATE = 64;
/** Generation steps (from the first) whose full log-softmax is stored. */
export const ARCH_N_LOGPROB = 8;
/**
 * llama.cpp's context size (n_ctx) for every case; phi3 picks its LongRoPE factors by it (long when
 * 256 > rope.scaling.original_context_length).
 */
export const ARCH_CONTEXT_SIZE = 256;

/**
 * The cases. All F32 weights unless named; every sliding window is shorter than prompt + output, and the
 * soft-caps are small enough to bend the values (real Gemma 2 uses 50 and 30).
 */
export const ARCH_CASES: ArchCase[] = [
  {
    // gemma2: SWA on even layers (window 7 < 24-token prompt), GQA 4:2, head size 24 ≠ nEmbd/nHead,
    // attention soft-cap 4, final soft-cap 15.
    name: 'gemma2-gqa-swa',
    kind: 'gemma',
    nPrompt: 24,
    promptSeed: 201,
    options: {
      architecture: 'gemma2',
      seed: 2004,
      nLayers: 4,
      nEmbd: 64,
      nFF: 160,
      nHead: 4,
      nHeadKv: 2,
      headDim: 24,
      nVocab: 320,
      slidingWindow: 7,
      attnLogitSoftcap: 4,
      finalLogitSoftcap: 15,
    },
  },
  {
    // gemma2 with linear RoPE scaling (×4, also on the SWA layers) and its own SWA base, period 3.
    name: 'gemma2-ropescale-pattern3',
    kind: 'gemma',
    nPrompt: 17,
    promptSeed: 202,
    options: {
      architecture: 'gemma2',
      seed: 2002,
      nLayers: 3,
      nEmbd: 48,
      nFF: 96,
      nHead: 2,
      nHeadKv: 1,
      headDim: 32,
      nVocab: 300,
      slidingWindow: 5,
      slidingWindowPattern: 3,
      ropeFreqBase: 50000,
      ropeFreqBaseSwa: 2000,
      ropeScalingFactor: 4,
      attnLogitSoftcap: 2.5,
      finalLogitSoftcap: 20,
    },
  },
  {
    // gemma3: default 5 local : 1 global pattern (6 layers), window 6, global base 1e6, local base 10000
    // (llama.cpp's default), per-head Q/K norms, GQA 4:1, no final soft-cap.
    name: 'gemma3-gqa-swa',
    kind: 'gemma',
    nPrompt: 20,
    promptSeed: 301,
    options: {
      architecture: 'gemma3',
      seed: 3001,
      nLayers: 6,
      nEmbd: 64,
      nFF: 128,
      nHead: 4,
      nHeadKv: 1,
      headDim: 32,
      nVocab: 320,
      slidingWindow: 6,
    },
  },
  {
    // gemma3: period 2, rope.freq_base_swa 500, linear scaling ×2 (global layers only, as llama.cpp),
    // final soft-cap 12.
    name: 'gemma3-ropescale-softcap',
    kind: 'gemma',
    nPrompt: 15,
    promptSeed: 302,
    options: {
      architecture: 'gemma3',
      seed: 3002,
      nLayers: 4,
      nEmbd: 48,
      nFF: 112,
      nHead: 3,
      nHeadKv: 3,
      headDim: 16,
      nVocab: 290,
      slidingWindow: 4,
      slidingWindowPattern: 2,
      ropeFreqBase: 100000,
      ropeFreqBaseSwa: 500,
      ropeScalingFactor: 2,
      finalLogitSoftcap: 12,
    },
  },
  {
    // phi3: fused attn_qkv and ffn_up, GQA 4:2, untied; sliding_window 9 (shorter than prompt + output)
    // written but ignored, as llama.cpp ignores it for Phi.
    name: 'phi3-gqa-swa-ignored',
    kind: 'phi3',
    nPrompt: 22,
    promptSeed: 401,
    options: {
      seed: 4001,
      nLayers: 3,
      nEmbd: 64,
      nFF: 96,
      nHead: 4,
      nHeadKv: 2,
      nVocab: 320,
      slidingWindow: 9,
    },
  },
  {
    // phi3 LongRoPE, context 256 ≤ original 4096: the short factors, attn_factor 1.19; F16 weights.
    name: 'phi3-longrope-short-f16',
    kind: 'phi3',
    nPrompt: 18,
    promptSeed: 402,
    options: {
      seed: 4022,
      nLayers: 2,
      nEmbd: 96,
      nFF: 128,
      nHead: 3,
      nVocab: 300,
      contextLength: 131072,
      weightType: 'F16',
      ropeFreqBase: 10000,
      longRope: { originalContextLength: 4096, attnFactor: 1.19 },
    },
  },
  {
    // phi3 LongRoPE, context 256 > original 128: the long factors, attn_factor 1.08; partial rotary (12 of
    // 16 dims, as Phi-4-mini's 96 of 128), tied embeddings, GQA 4:1.
    name: 'phi3-longrope-long-partial-tied',
    kind: 'phi3',
    nPrompt: 20,
    promptSeed: 403,
    options: {
      seed: 4003,
      nLayers: 2,
      nEmbd: 64,
      nFF: 80,
      nHead: 4,
      nHeadKv: 1,
      nVocab: 310,
      contextLength: 512,
      ropeDim: 12,
      tied: true,
      longRope: { originalContextLength: 128, attnFactor: 1.08 },
    },
  },
  {
    // phi3 with separate attn_q/k/v (llama.cpp takes both), partial rotary 24 of 32, rope base 250000.
    name: 'phi3-separate-qkv-partial',
    kind: 'phi3',
    nPrompt: 16,
    promptSeed: 404,
    options: {
      seed: 4004,
      nLayers: 2,
      nEmbd: 64,
      nFF: 112,
      nHead: 2,
      nVocab: 290,
      separateQkv: true,
      ropeDim: 24,
      ropeFreqBase: 250000,
    },
  },
];

/** The GGUF bytes of a case (deterministic). */
export function buildArchCase(c: ArchCase): Uint8Array {
  switch (c.kind) {
    case 'gemma':
      return makeRandomGemmaGguf(c.options);
    case 'phi3':
      return makeRandomPhi3Gguf(c.options);
  }
}

/** The prompt of a case: BOS (id 1) then nPrompt − 1 seeded ids from 3 (past the control tokens) to nVocab − 1. */
export function archCasePrompt(c: ArchCase): number[] {
  const r = mulberry32(c.promptSeed);
  const nVocab = c.options.nVocab;
  return [1, ...Array.from({ length: c.nPrompt - 1 }, () => 3 + Math.floor(r() * (nVocab - 3)))];
}
