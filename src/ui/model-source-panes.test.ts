import { describe, expect, it } from 'vitest';
import { syntheticGguf } from '../webgpu/model/synthetic.ts';
import { syntheticTypesNote } from './model-source-panes.ts';

const header = (name: string) => syntheticGguf(name, 1, { tokenizer: false });

describe('a synthetic model says which tensor types it holds', () => {
  it("stories260K's Q4_K_M holds no Q4_K and says why: rows of 64 and 172 are not multiples of 256", () => {
    const h = header('synthetic:stories260k-q4_k_m');
    const types = new Set([...h.tensors.values()].map((t) => t.typeName));
    expect(types.has('Q4_K')).toBe(false);
    const note = syntheticTypesNote(h, 'q4_k_m');
    expect(note).toMatch(/^tensors /);
    for (const t of types) expect(note).toContain(`${t} ×`);
    expect(note).toMatch(
      /no Q4_K: its blocks of 256 values need rows of a multiple of 256; this shape's rows are [\d, ]*64[\d, ]* wide$/,
    );
  });
  it('a shape whose rows take the type lists it without a note', () => {
    const note = syntheticTypesNote(header('synthetic:bench-60m-q4_k_m'), 'q4_k_m');
    expect(note).toMatch(/Q4_K ×\d+/);
    expect(note).not.toMatch(/no Q4_K/);
    // Counts add up to the tensors.
    const h = header('synthetic:stories260k-q8_0');
    const sum = [...syntheticTypesNote(h, 'q8_0').matchAll(/×(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    expect(sum).toBe(h.tensors.size);
    expect(syntheticTypesNote(header('synthetic:stories260k-iq4_xs'), 'iq4_xs')).toMatch(
      /no IQ4_XS: its blocks of 256/,
    );
  });
});
