/**
 * mmvWGSL against float64 for the k-quants and IQ4_XS (256-weight super-blocks), every layout this
 * adapter runs, raw and repacked into planes, the wide layouts (64–256 lanes) at K = 16640 (520 chunks:
 * several passes over K, the last partial), each layout in one of its token groupings with RMSNorm on or
 * off, rotating over the types (mmv-cases.ts planCases; the other types and the multi-segment cases:
 * mmv.browser.test.ts).
 */
import { describe } from 'vitest';
import { type MmvTypeCase, mmvTypeTests } from '../../testing/mmv-cases.ts';

describe('mmvWGSL (k-quants, IQ4_XS)', () => {
  const types: MmvTypeCase[] = [
    { type: 'Q4_K', K: 768 },
    { type: 'Q6_K', K: 512 },
    { type: 'IQ4_XS', K: 768 },
    { type: 'Q5_K', K: 768 },
    { type: 'Q3_K', K: 768 },
    { type: 'Q2_K', K: 512 },
  ];
  mmvTypeTests(types);
});
