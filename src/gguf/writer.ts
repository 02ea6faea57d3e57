/**
 * Writes GGUF files (v3, or v2 on request) per ggml's `docs/gguf.md`, little-endian, for test models and
 * round-trip tests. Layout: magic "GGUF", u32 version, u64 tensor count, u64 key–value count, the
 * key–value pairs, the tensor infos (name, u32 n_dims, u64 dims, u32 type, u64 offset into the data
 * section), zero padding to the alignment, then each tensor's data padded to the alignment.
 */
import { EngineError } from '../core/errors.ts';
import { ggmlType, ggmlTypeByName, tensorBytes } from './ggml-types.ts';
import type { OpenedGgufFile } from './reader.ts';

/** GGUF metadata value type names, with their `gguf_type` ids. */
export const GGUF_VALUE_TYPES = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

export type GgufValueTypeName = keyof typeof GGUF_VALUE_TYPES;
export type GgufScalarTypeName = Exclude<GgufValueTypeName, 'array'>;
export type GgufScalar = number | bigint | boolean | string;

/** One metadata key–value pair with its GGUF type. */
export type GgufMetadataEntry =
  | { key: string; type: GgufScalarTypeName; value: GgufScalar }
  | { key: string; type: 'array'; itemType: GgufScalarTypeName; value: readonly GgufScalar[] };

/** One tensor to write. `data` must be exactly `tensorBytes(type, shape)` bytes. */
export interface GgufTensorInput {
  name: string;
  /** ggml type id or name ('F32', 'Q4_0', …). */
  type: number | string;
  /** ggml order: shape[0] is the inner dimension. */
  shape: readonly number[];
  data: Uint8Array;
}

/** Options for {@link writeGguf}. */
export interface WriteGgufOptions {
  /** 3 (default) or 2; they differ only in v3 allowing big-endian files, which we never write. */
  version?: 2 | 3;
  metadata: readonly GgufMetadataEntry[];
  tensors: readonly GgufTensorInput[];
  /**
   * Tensor data alignment (a power of two). Default: `general.alignment` from the metadata, else 32.
   * A value other than 32 adds a `general.alignment` u32 entry when the metadata has none.
   */
  alignment?: number;
}

/** Builders for metadata entries: `kv.u32('llama.block_count', 5)`, `kv.strings('tokenizer.ggml.tokens', t)`. */
export const kv = {
  u8: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'u8', value }),
  i8: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'i8', value }),
  u16: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'u16', value }),
  i16: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'i16', value }),
  u32: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'u32', value }),
  i32: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'i32', value }),
  f32: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'f32', value }),
  f64: (key: string, value: number): GgufMetadataEntry => ({ key, type: 'f64', value }),
  u64: (key: string, value: bigint | number): GgufMetadataEntry => ({ key, type: 'u64', value }),
  i64: (key: string, value: bigint | number): GgufMetadataEntry => ({ key, type: 'i64', value }),
  bool: (key: string, value: boolean): GgufMetadataEntry => ({ key, type: 'bool', value }),
  string: (key: string, value: string): GgufMetadataEntry => ({ key, type: 'string', value }),
  array: (key: string, itemType: GgufScalarTypeName, value: readonly GgufScalar[]): GgufMetadataEntry => ({
    key,
    type: 'array',
    itemType,
    value,
  }),
  strings: (key: string, value: readonly string[]): GgufMetadataEntry => kv.array(key, 'string', value),
  f32s: (key: string, value: readonly number[]): GgufMetadataEntry => kv.array(key, 'f32', value),
  i32s: (key: string, value: readonly number[]): GgufMetadataEntry => kv.array(key, 'i32', value),
  u32s: (key: string, value: readonly number[]): GgufMetadataEntry => kv.array(key, 'u32', value),
};

const TYPE_NAME_BY_ID = new Map<number, GgufValueTypeName>(
  Object.entries(GGUF_VALUE_TYPES).map(([k, v]) => [v, k as GgufValueTypeName]),
);

function bad(msg: string): EngineError {
  return new EngineError('invalid_argument', msg);
}

/** The metadata of an opened file as writer entries with the file's own types (for writing it back). */
export function metadataEntriesFrom(
  file: Pick<OpenedGgufFile, 'metadata' | 'metadataTypes'>,
): GgufMetadataEntry[] {
  return Object.entries(file.metadata).map(([key, value]) => {
    const t = file.metadataTypes[key];
    const type = t && TYPE_NAME_BY_ID.get(t.type);
    if (!type) throw bad(`metadata ${key}: unknown GGUF value type`);
    if (type === 'array') {
      const itemType = t.itemType === undefined ? undefined : TYPE_NAME_BY_ID.get(t.itemType);
      if (!itemType || itemType === 'array') throw bad(`metadata ${key}: nested arrays are not supported`);
      return { key, type, itemType, value: value as GgufScalar[] };
    }
    return { key, type, value: value as GgufScalar };
  });
}

const INT_RANGES: Partial<Record<GgufScalarTypeName, [number, number]>> = {
  u8: [0, 0xff],
  i8: [-0x80, 0x7f],
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffffffff],
  i32: [-0x80000000, 0x7fffffff],
};

/** Serialises little-endian values into a growing list of parts. */
class ByteWriter {
  private parts: Uint8Array[] = [];
  length = 0;
  private readonly enc = new TextEncoder();

  bytes(b: Uint8Array): void {
    this.parts.push(b);
    this.length += b.length;
  }

  private fixed(n: number, f: (dv: DataView) => void): void {
    const b = new Uint8Array(n);
    f(new DataView(b.buffer));
    this.bytes(b);
  }

  u32(v: number): void {
    this.fixed(4, (dv) => dv.setUint32(0, v, true));
  }

  u64(v: number | bigint): void {
    this.fixed(8, (dv) => dv.setBigUint64(0, BigInt(v), true));
  }

  string(s: string): void {
    const b = this.enc.encode(s);
    this.u64(b.length);
    this.bytes(b);
  }

  zeros(n: number): void {
    if (n > 0) this.bytes(new Uint8Array(n));
  }

  scalar(type: GgufScalarTypeName, v: GgufScalar, key: string): void {
    const range = INT_RANGES[type];
    if (range && (typeof v !== 'number' || !Number.isInteger(v) || v < range[0] || v > range[1])) {
      throw bad(`metadata ${key}: ${String(v)} is not a valid ${type}`);
    }
    const n = v as number;
    switch (type) {
      case 'u8':
        this.fixed(1, (dv) => dv.setUint8(0, n));
        break;
      case 'i8':
        this.fixed(1, (dv) => dv.setInt8(0, n));
        break;
      case 'u16':
        this.fixed(2, (dv) => dv.setUint16(0, n, true));
        break;
      case 'i16':
        this.fixed(2, (dv) => dv.setInt16(0, n, true));
        break;
      case 'u32':
        this.fixed(4, (dv) => dv.setUint32(0, n, true));
        break;
      case 'i32':
        this.fixed(4, (dv) => dv.setInt32(0, n, true));
        break;
      case 'f32':
      case 'f64':
        if (typeof v !== 'number') throw bad(`metadata ${key}: ${String(v)} is not a number`);
        if (type === 'f32') this.fixed(4, (dv) => dv.setFloat32(0, v, true));
        else this.fixed(8, (dv) => dv.setFloat64(0, v, true));
        break;
      case 'u64':
      case 'i64': {
        if (typeof v !== 'bigint' && !(typeof v === 'number' && Number.isSafeInteger(v))) {
          throw bad(`metadata ${key}: ${String(v)} is not a valid ${type}`);
        }
        const b = BigInt(v);
        const ok = type === 'u64' ? b >= 0n && b < 1n << 64n : b >= -(1n << 63n) && b < 1n << 63n;
        if (!ok) throw bad(`metadata ${key}: ${String(v)} is out of range for ${type}`);
        if (type === 'u64') this.fixed(8, (dv) => dv.setBigUint64(0, b, true));
        else this.fixed(8, (dv) => dv.setBigInt64(0, b, true));
        break;
      }
      case 'bool':
        if (typeof v !== 'boolean') throw bad(`metadata ${key}: ${String(v)} is not a boolean`);
        this.fixed(1, (dv) => dv.setUint8(0, v ? 1 : 0));
        break;
      case 'string':
        if (typeof v !== 'string') throw bad(`metadata ${key}: ${String(v)} is not a string`);
        this.string(v);
        break;
      default:
        throw bad(`metadata ${key}: unknown value type ${String(type)}`);
    }
  }

  concat(): Uint8Array {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    this.parts = [out];
    return out;
  }
}

function pad(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

/** A tensor as the header describes it (its data comes later, or from elsewhere). */
export type GgufTensorSpec = Omit<GgufTensorInput, 'data'>;

/** The serialised header of a GGUF file: everything before the tensor data, and where each tensor goes. */
export interface GgufHeader {
  /** Magic, counts, metadata, tensor infos and the padding up to the data section (a multiple of `alignment`). */
  bytes: Uint8Array;
  /** Tensor data alignment in use. */
  alignment: number;
  /** Byte offset of each tensor's data from the start of the data section, in the order given. */
  offsets: number[];
  /** Bytes of each tensor's data (without padding), in the order given. */
  nBytes: number[];
  /** Size of the data section (each tensor padded to the alignment). */
  dataSize: number;
}

/**
 * Serialises a GGUF header for tensors whose data is written separately (streamed to a file, say):
 * tensor `i`'s data goes at `bytes.length + offsets[i]`, zero-padded to the alignment; the file is
 * `bytes.length + dataSize` bytes long.
 * @throws EngineError('invalid_argument') for values that do not fit their type, duplicate keys or
 *   tensor names, or a bad alignment.
 */
export function ggufHeader(
  opts: Omit<WriteGgufOptions, 'tensors'> & { tensors: readonly GgufTensorSpec[] },
): GgufHeader {
  const version = opts.version ?? 3;
  if (version !== 2 && version !== 3)
    throw bad(`GGUF version ${String(version)} cannot be written (use 2 or 3)`);
  const metadata = [...opts.metadata];
  const keys = new Set<string>();
  for (const e of metadata) {
    if (keys.has(e.key)) throw bad(`metadata key ${e.key} appears twice`);
    keys.add(e.key);
  }
  const alignEntry = metadata.find((e) => e.key === 'general.alignment');
  let alignment = opts.alignment ?? (alignEntry ? Number(alignEntry.value) : 32);
  if (alignEntry && Number(alignEntry.value) !== alignment) {
    throw bad(`alignment ${alignment} contradicts general.alignment ${String(alignEntry.value)}`);
  }
  alignment = Number(alignment);
  if (!Number.isSafeInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw bad(`alignment ${alignment} is not a power of two`);
  }
  if (!alignEntry && alignment !== 32) metadata.push(kv.u32('general.alignment', alignment));

  const w = new ByteWriter();
  w.bytes(new Uint8Array([0x47, 0x47, 0x55, 0x46])); // "GGUF"
  w.u32(version);
  w.u64(opts.tensors.length);
  w.u64(metadata.length);
  for (const e of metadata) {
    w.string(e.key);
    w.u32(GGUF_VALUE_TYPES[e.type]);
    if (e.type === 'array') {
      if (!(e.itemType in GGUF_VALUE_TYPES) || e.itemType === ('array' as string)) {
        throw bad(`metadata ${e.key}: unsupported array item type ${String(e.itemType)}`);
      }
      w.u32(GGUF_VALUE_TYPES[e.itemType]);
      w.u64(e.value.length);
      for (const v of e.value) w.scalar(e.itemType, v, e.key);
    } else {
      if (!(e.type in GGUF_VALUE_TYPES)) throw bad(`metadata ${e.key}: unknown value type ${String(e.type)}`);
      w.scalar(e.type, e.value, e.key);
    }
  }

  const names = new Set<string>();
  let dataSize = 0;
  const offsets: number[] = [];
  const sizes: number[] = [];
  for (const t of opts.tensors) {
    if (names.has(t.name)) throw bad(`tensor ${t.name} appears twice`);
    names.add(t.name);
    const typeId = typeof t.type === 'number' ? ggmlType(t.type, t.name).id : ggmlTypeByName(t.type).id;
    const n = tensorBytes(typeId, t.shape, t.name);
    w.string(t.name);
    w.u32(t.shape.length);
    for (const d of t.shape) w.u64(d);
    w.u32(typeId);
    w.u64(dataSize);
    offsets.push(dataSize);
    sizes.push(n);
    dataSize = pad(dataSize + n, alignment);
  }
  w.zeros(pad(w.length, alignment) - w.length);
  return { bytes: w.concat(), alignment, offsets, nBytes: sizes, dataSize };
}

/**
 * Serialises a GGUF file.
 * @throws EngineError('invalid_argument') for values that do not fit their type, duplicate keys or
 *   tensor names, data of the wrong length, or a bad alignment.
 */
export function writeGguf(opts: WriteGgufOptions): Uint8Array {
  const h = ggufHeader(opts);
  opts.tensors.forEach((t, i) => {
    if (t.data.length !== h.nBytes[i]) {
      throw bad(
        `tensor ${t.name}: data is ${t.data.length} bytes, but its type and shape need ${h.nBytes[i]}`,
      );
    }
  });
  const dataStart = h.bytes.length;
  const out = new Uint8Array(dataStart + h.dataSize);
  out.set(h.bytes, 0);
  opts.tensors.forEach((t, i) => {
    out.set(t.data, dataStart + h.offsets[i]);
  });
  return out;
}
