/**
 * scripts/device/random-gguf.ts: the streamed (tiled) file has exactly the header the project's in-memory
 * path (makeRandomLlamaGguf + quantizeGguf) writes, and its tensors decode to finite values.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dequantizeRow, quantizeRow } from '../../src/gguf/quantize.ts';
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

  it('tiled copies: a Q4_0 file holds the Q4_0 quantization of the F32 file of the same seed', async () => {
    const o = shapeOptions('stories260k', 5);
    // A pool smaller than most matrices, so the walk wraps and the start offsets matter.
    const opts = { poolElements: 3000, copies: true };
    const [w32, w4] = await Promise.all(
      (['F32', 'Q4_0'] as const).map((t) => writeRandomGguf(join(dir, `c-${t}.gguf`), o, t, opts)),
    );
    const plain = await writeRandomGguf(join(dir, 'p-Q4_0.gguf'), o, 'Q4_0', { poolElements: 3000 });
    const [f32, q4, p4] = await Promise.all([w32, w4, plain].map((w) => openGguf({ path: w.path })));
    const [d32, d4, dp] = await Promise.all(
      [f32, q4, p4].map((f) => collectTensorData(f).then((d) => d.data)),
    );
    let matrices = 0;
    let differs = 0;
    for (const t of q4.tensors.values()) {
      const n = t.shape.reduce((x, y) => x * y, 1);
      const ref = dequantizeRow('F32', d32.get(t.name)!, n);
      // The copy's values are exactly its type's quantization of the F32 file's, block by block.
      const want = t.typeName === 'F32' ? ref : dequantizeRow(t.typeName, quantizeRow(t.typeName, ref), n);
      const got = dequantizeRow(t.typeName, d4.get(t.name)!, n);
      let bad = 0;
      for (let i = 0; i < n; i++) if (got[i] !== want[i]) bad++;
      expect(bad, `${t.name} ${t.typeName}`).toBe(0);
      if (t.typeName !== 'F32') {
        matrices++;
        // Without copies the types draw other values: not the F32 file's copy.
        const other = dequantizeRow(t.typeName, dp.get(t.name)!, n);
        if (other.some((x, i) => x !== want[i])) differs++;
      }
    }
    expect(matrices).toBeGreaterThan(5);
    expect(differs).toBe(matrices);
  });
});
