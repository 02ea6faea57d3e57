/**
 * Which of the GPU sampler's passes a request encodes (issue 40: `samplePassesNeeded` /
 * `selectSamplePasses`): for every combination of temperature, top-k (off, on, past the candidates' cap,
 * at or past the vocabulary), top-p (off, on, a value that rounds to 1 in f32), min-p and the repetition
 * penalty, exactly the passes whose WGSL does work for it (sample.ts: the candidates pass runs when
 * 0 < topK ≤ cap, the top-p passes when sampled with top-k off and top-p < 1). That the ids are those of
 * every pass encoded is tested on the GPU in model/sample-passes.browser.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  SAMPLE_TOPK_CAP,
  type SamplePassRole,
  type SampleSettings,
  samplePassesNeeded,
  sampleSplit,
  selectSamplePasses,
} from './sample.ts';

const TOP_P: SamplePassRole[] = ['top_p_max', 'top_p_mass', 'top_p_compact'];
const ALL: SamplePassRole[] = ['candidates', ...TOP_P, 'draw'];

const settings = (o: Partial<SampleSettings>): SampleSettings => ({
  temperature: 0.8,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  repetitionLastN: 64,
  ...o,
});

describe('samplePassesNeeded', () => {
  const nVocab = 32_003; // 32 stripes, the last one short
  it('plans the candidates pass for this vocabulary', () => {
    expect(sampleSplit(nVocab).cap).toBe(SAMPLE_TOPK_CAP);
  });

  // [temperature, topK, topP] → the roles; min-p and the penalty never add or remove a pass.
  const cases: [number, number, number, SamplePassRole[]][] = [
    [0, 0, 1, ['draw']],
    [0, 0, 0.95, ['draw']], // greedy: top-p does not apply
    [0, 40, 1, ['candidates', 'draw']], // greedy with top-k reads the list too (the argmax is in it)
    [0, 40, 0.95, ['candidates', 'draw']],
    [0.8, 0, 1, ['draw']],
    [0.8, 0, 0.95, [...TOP_P, 'draw']],
    [0.8, 0, 0.5, [...TOP_P, 'draw']],
    [0.8, 0, 1 - 1e-9, ['draw']], // rounds to 1 in f32: off in the WGSL
    [0.8, 0, 1 - 2 ** -24, [...TOP_P, 'draw']], // the largest f32 below 1: on
    [0.8, 1, 1, ['candidates', 'draw']],
    [0.8, 40, 1, ['candidates', 'draw']],
    [0.8, 40, 0.95, ['candidates', 'draw']], // top-p then runs in the draw over the top-k list
    [0.8, SAMPLE_TOPK_CAP, 0.95, ['candidates', 'draw']],
    [0.8, SAMPLE_TOPK_CAP + 1, 0.95, ['draw']], // past the cap: the draw reads the vocabulary
    [0.8, SAMPLE_TOPK_CAP + 1, 1, ['draw']],
    [0.8, nVocab - 1, 0.95, ['draw']],
    [0.8, nVocab, 0.95, [...TOP_P, 'draw']], // top-k ≥ nVocab is off (packSampleParams)
    [0.8, nVocab + 7, 0.95, [...TOP_P, 'draw']],
    [0, nVocab, 0.95, ['draw']],
  ];
  for (const [temperature, topK, topP, want] of cases) {
    it(`temperature ${temperature}, top-k ${topK}, top-p ${topP}: ${want.join(', ')}`, () => {
      for (const minP of [0, 0.05])
        for (const repetitionPenalty of [1, 1.3]) {
          const p = settings({ temperature, topK, topP, minP, repetitionPenalty });
          expect(samplePassesNeeded(p, nVocab), JSON.stringify(p)).toEqual(want);
        }
    });
  }

  it('is only the draw with one stripe (no candidates or top-p passes planned)', () => {
    for (const n of [1, 512, 1024]) {
      expect(sampleSplit(n).cap).toBe(0);
      for (const [temperature, topK, topP] of [
        [0.8, 40, 1],
        [0.8, 0, 0.9],
        [0, 5, 1],
      ])
        expect(samplePassesNeeded(settings({ temperature, topK, topP }), n)).toEqual(['draw']);
    }
  });
});

describe('selectSamplePasses', () => {
  const planned = ALL.map((role, i) => ({ role, i }));
  it('keeps the needed planned passes in dispatch order, the same objects', () => {
    const p = settings({ topP: 0.9 });
    const got = selectSamplePasses(planned, p, 32_000);
    expect(got.map((d) => d.role)).toEqual([...TOP_P, 'draw']);
    expect(got.map((d) => d.i)).toEqual([1, 2, 3, 4]);
    expect(got[0]).toBe(planned[1]);
  });
  it('leaves out what the plan lacks (no top-p passes on a software adapter)', () => {
    const noTopP = planned.filter((d) => !TOP_P.includes(d.role));
    expect(selectSamplePasses(noTopP, settings({ topP: 0.9 }), 32_000).map((d) => d.role)).toEqual(['draw']);
    expect(selectSamplePasses(noTopP, settings({ topK: 40 }), 32_000).map((d) => d.role)).toEqual([
      'candidates',
      'draw',
    ]);
  });
});
