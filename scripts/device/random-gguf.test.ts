/**
 * scripts/device/random-gguf.ts: the streamed (tiled) file has exactly the header the project's in-memory
 * path (makeRandomLlamaGguf + quantizeGguf) writes, and its tensors decode to finite values.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dequantizeRow } from '../../src/gguf/quantize.ts';
import { openGguf } from '../../src/gguf/reader.ts';
import { collectTensorData } from '../../src/testing/gguf-util.ts';
import { useTempDirs } from '../../src/testing/temp-dir.ts';
import { shapeOptions, writeRandomGguf } from './random-gguf.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

const dir = tempDir('random-gguf-');

describe('writeRandomGguf', () => {
  for (const ftype of ['F32', 'F16', 'Q8_0', 'Q4_0', 'Q4_K_M'] as const) {
    it(`tiled ${ftype}: the exact path's header, finite weights`, async () => {
      // stories260K's shape widened to 256-wide rows, so that Q4_K / Q6_K blocks appear (64 falls back).
      const o = { ...shapeOptions('stories260k', 3), nEmbd: 256, nFF: 512, nHead: 8, nHeadKv: 4 };
      const tiled = await writeRandomGguf(join(dir, `t-${ftype}.gguf`), o, ftype, { poolElements: 4096 });
      const exact = await writeRandomGguf(join(dir, `e-${ftype}.gguf`), o, ftype, { mode: 'exact' });
      expect(tiled.bytes).toBe(exact.bytes);
      expect(tiled.plan.map((p) => [p.name, p.to])).toEqual(exact.plan.map((p) => [p.name, p.to]));
      const a = readFileSync(tiled.path);
      const b = readFileSync(exact.path);
      expect(a.length).toBe(tiled.bytes);
      const f = await openGguf({ path: tiled.path });
      const g = await openGguf({ path: exact.path });
      expect(f.dataOffset).toBe(g.dataOffset);
      expect(Buffer.compare(a.subarray(0, f.dataOffset), b.subarray(0, g.dataOffset))).toBe(0);
      if (ftype === 'Q4_K_M') expect(Object.keys(tiled.types).sort()).toEqual(['F32', 'Q4_K', 'Q6_K']);
      const { data } = await collectTensorData(f);
      for (const t of f.tensors.values()) {
        const v = dequantizeRow(
          t.typeName,
          data.get(t.name)!,
          t.shape.reduce((x, y) => x * y, 1),
        );
        expect(v.every(Number.isFinite)).toBe(true);
        let s2 = 0;
        for (const x of v) s2 += x * x;
        expect(s2).toBeGreaterThan(0);
      }
    });
  }
});
