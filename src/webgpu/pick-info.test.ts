/**
 * `ModelInfo.kernels.argmax` and `.sampler` (kernel-plan.ts `pickInfo`) for the vocabularies that matter:
 * stories260K's 512 (one stripe), a 3,001-token test model, Llama 2's 32,000, Llama 3's 128,256, Qwen 2's
 * 151,936, and 600,000 (stripes past the candidates pass's workgroup memory), with the top-p passes planned
 * (a GPU's plan) and not (a software adapter's). The dispatches are what the model builds its kernels from
 * (argmax.ts `argmaxKernels`, sample.ts `samplePassPlan`); the expected values are computed here from the
 * split's rule as docs/kernels.md states it (stripes of at least 1,024 logits, a multiple of 256, at most
 * 256 of them), the threads from each pass's WGSL `@workgroup_size`, and the passes each request runs from
 * the conditions of kernels/sample.ts's module comment.
 */
import { describe, expect, it } from 'vitest';
import { PICK_REQUESTS, pickInfo } from './kernel-plan.ts';
import { argmaxFinalWGSL, argmaxKernels, argmaxPartialsWGSL } from './kernels/argmax.ts';
import {
  type SamplePassRole,
  sampleCandidatesWGSL,
  samplePassPlan,
  sampleTopPWGSL,
  sampleWGSL,
} from './kernels/sample.ts';

/** The smallest stripe (a multiple of 256, at least 1,024) that splits nVocab into at most 256 stripes. */
function stripeOf(nVocab: number): number {
  let stripe = 1024;
  while (Math.ceil(nVocab / stripe) > 256) stripe += 256;
  return stripe;
}

const threadsOf = (wgsl: string) => Number(/@workgroup_size\((\d+)\)/.exec(wgsl)?.[1]);

/** The dispatches a load makes for `nVocab` (forward.ts `planForward` builds its kernels from these). */
function loaded(nVocab: number, topP: boolean) {
  return {
    argmax: [{ wgX: argmaxKernels({ nVocab }).nParts }, { wgX: 1 }],
    sampler: samplePassPlan(nVocab, topP).map((p) => ({ role: p.role, wgX: p.workgroups })),
  };
}

const TOP_P: SamplePassRole[] = ['top_p_max', 'top_p_mass', 'top_p_compact'];

describe('pickInfo: the argmax and the GPU sampler as loaded', () => {
  it.each([512, 3001, 32_000, 128_256, 151_936, 600_000])('for %i logits', (nVocab) => {
    const stripe = stripeOf(nVocab);
    const stripes = Math.ceil(nVocab / stripe);
    // Candidates and top-p passes need more than one stripe, each held in workgroup memory (≤ 2,048).
    const striped = stripes > 1 && stripe <= 2048;
    for (const sampleTopP of [true, false]) {
      const { argmax, sampler } = pickInfo(nVocab, loaded(nVocab, sampleTopP), { sampleTopP });
      expect(argmax).toEqual({
        nVocab,
        threads: threadsOf(argmaxPartialsWGSL({ nVocab })),
        stripe,
        stripes,
        finalWorkgroups: 1,
        partialsPerThread: Math.ceil(stripes / 64),
      });
      expect(threadsOf(argmaxFinalWGSL({ nVocab }))).toBe(argmax.threads);
      expect(argmax.threads).toBe(64);
      expect(stripe % 256).toBe(0);
      expect(stripe * stripes).toBeGreaterThanOrEqual(nVocab);
      expect(stripe * (stripes - 1)).toBeLessThan(nVocab);

      const o = { nVocab, ring: 64 };
      const wgsl: Record<SamplePassRole, () => string> = {
        candidates: () => sampleCandidatesWGSL(o),
        top_p_max: () => sampleTopPWGSL(o, 'max'),
        top_p_mass: () => sampleTopPWGSL(o, 'mass'),
        top_p_compact: () => sampleTopPWGSL(o, 'compact'),
        draw: () => sampleWGSL(o),
      };
      const roles: SamplePassRole[] = striped
        ? ['candidates', ...(sampleTopP ? TOP_P : []), 'draw']
        : ['draw'];
      expect(sampler.passes).toEqual(
        roles.map((role) => ({
          role,
          workgroups: role === 'draw' ? 1 : stripes,
          threads: threadsOf(wgsl[role]()),
        })),
      );
      expect(sampler.passes.at(-1)?.threads).toBe(128);
      expect(sampler.on).toBe('gpu');
      expect(sampler.stripe).toBe(stripe);
      expect(sampler.stripes).toBe(stripes);
      expect(sampler.topK.planned).toBe(striped);
      expect(sampler.topK.cap).toBe(striped ? 256 : 0);
      expect(sampler.topP.planned).toBe(striped && sampleTopP);
      if (!striped) {
        const why = stripes === 1 ? /^one stripe \(\d+ logits ≤ 1024\)/ : /exceed .*workgroup memory/;
        expect(sampler.topK.reason).toMatch(why);
        expect(sampler.topP.reason).toMatch(why);
      } else {
        expect(sampler.topK.reason).toBeUndefined();
        if (sampleTopP) expect(sampler.topP.reason).toBeUndefined();
        else expect(sampler.topP.reason).toMatch(/software adapter/);
      }
      expect(sampler.requests).toEqual({
        greedy: ['argmax_partials', 'argmax_final'],
        penalty: ['draw'],
        topK: striped ? ['candidates', 'draw'] : ['draw'],
        topP: striped && sampleTopP ? [...TOP_P, 'draw'] : ['draw'],
        temperature: ['draw'],
      });
    }
  });

  it('matches docs/kernels.md: 32 stripes for 32,000 logits, 126 for 128,256, 149 for 151,936', () => {
    for (const [nVocab, stripes] of [
      [32_000, 32],
      [128_256, 126],
      [151_936, 149],
    ]) {
      expect(Math.ceil(nVocab / stripeOf(nVocab))).toBe(stripes);
      expect(pickInfo(nVocab, loaded(nVocab, true)).argmax.stripes).toBe(stripes);
    }
  });

  it('lists no GPU pass for sampled requests when they sample on the CPU', () => {
    const { sampler } = pickInfo(32_000, loaded(32_000, true), { sampling: 'cpu' });
    expect(sampler.on).toBe('cpu');
    expect(sampler.requests).toEqual({
      greedy: ['argmax_partials', 'argmax_final'],
      penalty: [],
      topK: [],
      topP: [],
      temperature: [],
    });
    // The planned passes are still reported (they are compiled at load).
    expect(sampler.passes.map((p) => p.role)).toEqual(['candidates', ...TOP_P, 'draw']);
  });

  it('stands for each kind of request with the parameters it names', () => {
    expect(PICK_REQUESTS.topP).toMatchObject({ temperature: 0.8, topP: 0.95, topK: 0 });
    expect(PICK_REQUESTS.topK).toMatchObject({ temperature: 0.8, topK: 40, topP: 1 });
    expect(PICK_REQUESTS.penalty.temperature).toBe(0);
    expect(PICK_REQUESTS.penalty.repetitionPenalty).toBeGreaterThan(1);
  });

  it('refuses an argmax that is not the two passes and a vocabulary under 1', () => {
    expect(() => pickInfo(512, { argmax: [{ wgX: 1 }], sampler: [] })).toThrow(/2 passes/);
    expect(() => pickInfo(0, loaded(512, true))).toThrow(RangeError);
  });
});
