import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { stories260kPath } from '../testing/models.ts';
import { cpuMatch, llamaCppGreedy } from './cpu-match.ts';

const MODEL = stories260kPath();

describe('CPU match (llama.cpp greedy as the reference)', () => {
  it('llama.cpp greedy equals the golden continuation, and a perfect top-1 list scores 1', async () => {
    const c = golden.generation.cases[0];
    const ref = await llamaCppGreedy(MODEL, c.promptIds, 16);
    expect(ref.outputIds).toEqual(c.outputIds.slice(0, 16));
    expect(ref.engine).toMatch(/llama\.cpp \(node-llama-cpp 3\.21\.1/);
    const top1 = [...c.promptIds.slice(1), ...ref.outputIds]; // top-1 after each position = the next token
    expect(cpuMatch(ref, top1)).toBe(1);
    const off = top1.slice();
    off[c.promptIds.length - 1 + 3] = 0; // one wrong position of 16
    expect(cpuMatch(ref, off)).toBeCloseTo(15 / 16, 12);
  });
});
