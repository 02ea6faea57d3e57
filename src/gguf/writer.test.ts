import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import { collectTensorData, parseHeaderIndependently, sha256, storiesBytes } from '../testing/gguf-util.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { mulberry32 } from '../util/prng.ts';
import { tensorBytes } from './ggml-types.ts';
import { openGguf } from './reader.ts';
import {
  type GgufMetadataEntry,
  type GgufTensorInput,
  kv,
  metadataEntriesFrom,
  writeGguf,
} from './writer.ts';

function randomBytes(seed: number, n: number): Uint8Array {
  const rng = mulberry32(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(rng() * 256));
}

function blob(b: Uint8Array) {
  return { blob: new Blob([b as Uint8Array<ArrayBuffer>]) };
}

/** One entry of every value type, including negative and 64-bit values and arrays. */
const ALL_TYPES: GgufMetadataEntry[] = [
  kv.string('general.architecture', 'llama'),
  kv.string('general.name', 'ünïcödé ▁name ✓'),
  kv.u8('t.u8', 255),
  kv.i8('t.i8', -128),
  kv.u16('t.u16', 65535),
  kv.i16('t.i16', -32768),
  kv.u32('t.u32', 4294967295),
  kv.i32('t.i32', -2147483648),
  kv.f32('t.f32', 0.1),
  kv.f64('t.f64', Math.PI),
  kv.bool('t.bool', true),
  kv.bool('t.false', false),
  kv.u64('t.u64', 18446744073709551615n),
  kv.i64('t.i64', -9223372036854775808n),
  kv.string('t.empty', ''),
  kv.strings('t.strings', ['<unk>', '', '▁the', 'x'.repeat(300)]),
  kv.f32s('t.f32s', [0.5, -1.25, 3e-7]),
  kv.i32s('t.i32s', [1, -2, 6]),
  kv.u32s('t.u32s', []),
  kv.array('t.bools', 'bool', [true, false]),
];

function tensors(seed: number): GgufTensorInput[] {
  return [
    { name: 'a', type: 'F32', shape: [3, 5], data: randomBytes(seed, 60) },
    { name: 'b.weight', type: 1, shape: [7], data: randomBytes(seed + 1, 14) },
    { name: 'q', type: 'Q4_0', shape: [64, 2], data: randomBytes(seed + 2, tensorBytes(2, [64, 2])) },
    { name: 'k', type: 'Q4_K', shape: [256, 1, 2], data: randomBytes(seed + 3, 2 * 144) },
  ];
}

describe('writeGguf', () => {
  it('round-trips every metadata type and tensor through openGguf (v3 and v2)', async () => {
    for (const version of [3, 2] as const) {
      const t = tensors(version);
      const bytes = writeGguf({ version, metadata: ALL_TYPES, tensors: t });
      const f = await openGguf(blob(bytes));
      expect(f.version).toBe(version);
      expect(Object.keys(f.metadata)).toEqual(ALL_TYPES.map((e) => e.key));
      for (const e of ALL_TYPES) {
        const want = e.type === 'f32' ? Math.fround(e.value as number) : e.value;
        if (e.type === 'array' && e.itemType === 'f32') {
          expect(f.metadata[e.key]).toEqual((e.value as number[]).map(Math.fround));
        } else {
          expect(f.metadata[e.key], e.key).toEqual(want);
        }
      }
      expect(
        metadataEntriesFrom(f).map((e) => [e.key, e.type, 'itemType' in e ? e.itemType : undefined]),
      ).toEqual(ALL_TYPES.map((e) => [e.key, e.type, 'itemType' in e ? e.itemType : undefined]));
      expect([...f.tensors.keys()]).toEqual(t.map((x) => x.name));
      expect(f.tensors.get('q')!.typeName).toBe('Q4_0');
      expect(f.tensors.get('k')!.shape).toEqual([256, 1, 2]);
      const { data } = await collectTensorData(f, { chunkBytes: 8 });
      for (const x of t) expect(sha256(data.get(x.name)!)).toBe(sha256(x.data));
      // Offsets are aligned and the file ends at the padded end of the last tensor.
      for (const info of f.tensors.values()) expect((info.fileOffset - f.dataOffset) % 32).toBe(0);
      expect(bytes.length % 32).toBe(0);
      // The independent parser agrees.
      const ref = parseHeaderIndependently(bytes);
      expect(ref.version).toBe(version);
      expect(ref.dataOffset).toBe(f.dataOffset);
    }
  });

  it('honours a custom alignment and records it as general.alignment', async () => {
    const bytes = writeGguf({
      metadata: [kv.string('general.architecture', 'x')],
      tensors: tensors(9),
      alignment: 256,
    });
    const f = await openGguf(blob(bytes));
    expect(f.metadata['general.alignment']).toBe(256);
    expect(f.alignment).toBe(256);
    expect(f.dataOffset % 256).toBe(0);
    for (const t of f.tensors.values()) expect(t.fileOffset % 256).toBe(0);
    const { data } = await collectTensorData(f);
    expect(sha256(data.get('k')!)).toBe(sha256(tensors(9)[3].data));
  });

  it('writes stories260K back byte for byte from what openGguf read', async () => {
    const f = await openGguf({ path: STORIES_PATH });
    const { data } = await collectTensorData(f);
    const out = writeGguf({
      version: f.version as 2 | 3,
      metadata: metadataEntriesFrom(f),
      tensors: [...f.tensors.values()].map((t) => ({
        name: t.name,
        type: t.type,
        shape: t.shape,
        data: data.get(t.name)!,
      })),
    });
    expect(out.length).toBe(storiesBytes().length);
    expect(sha256(out)).toBe(sha256(storiesBytes()));
    const g = await openGguf(blob(out));
    expect(g.metadata).toEqual(f.metadata);
    expect(g.tensors).toEqual(f.tensors);
  });

  it('rejects bad input with invalid_argument', () => {
    const bad = (o: Parameters<typeof writeGguf>[0], re: RegExp) => {
      try {
        writeGguf(o);
      } catch (e) {
        expect(isEngineError(e, 'invalid_argument') || isEngineError(e, 'gguf_invalid')).toBe(true);
        expect((e as Error).message).toMatch(re);
        return;
      }
      throw new Error('expected writeGguf to throw');
    };
    const t = tensors(1);
    bad({ metadata: [kv.u8('x', 256)], tensors: [] }, /256 is not a valid u8/);
    bad({ metadata: [kv.u32('x', -1)], tensors: [] }, /not a valid u32/);
    bad({ metadata: [kv.i32('x', 1.5)], tensors: [] }, /not a valid i32/);
    bad({ metadata: [kv.u64('x', -1n)], tensors: [] }, /out of range for u64/);
    bad({ metadata: [kv.string('x', 'a'), kv.string('x', 'b')], tensors: [] }, /appears twice/);
    bad({ metadata: [], tensors: [{ ...t[0], data: t[0].data.subarray(1) }] }, /59 bytes, but .* need 60/);
    bad({ metadata: [], tensors: [t[0], t[0]] }, /tensor a appears twice/);
    bad({ metadata: [], tensors: [{ ...t[2], shape: [30, 2] }] }, /not a multiple of 32/);
    bad({ metadata: [], tensors: [], alignment: 24 }, /not a power of two/);
    bad({ metadata: [], tensors: [], version: 1 as 2 }, /version 1 cannot be written/);
  });
});
