/**
 * Opens a GGUF file from a URL, a Blob/File or a Node path: parses the header (metadata and tensor
 * infos, with `@huggingface/gguf`) and streams the tensor data once, in file order, in bounded chunks.
 *
 * All three sources are served through one byte-range interface (`ByteSource`, src/net/byte-source.ts):
 * `@huggingface/gguf` reads the header through a `fetch` we hand it, which answers its range requests from
 * that interface, so a Blob or a local file never goes near the network and a URL gets our status, timeout
 * and abort handling.
 */
import { gguf as parseGgufHeader } from '@huggingface/gguf';
import { EngineError, isEngineError } from '../core/errors.ts';
import {
  abortedError,
  type ByteSource,
  type ByteSourceInput,
  type ByteSourceOptions,
  htmlInsteadOfFileError,
  isUrlSource,
  openByteSource,
  throwIfAborted,
} from '../net/byte-source.ts';
import { fmtCount } from '../util/format.ts';
import { ggmlTypeName, tensorBytes } from './ggml-types.ts';
import type { GgufFile, GgufTensorInfo, TensorChunk } from './types.ts';

/** Options for {@link openGguf}: those of the byte source, and an abort signal. */
export interface OpenGgufOptions extends ByteSourceOptions {
  /** Aborts header reads; rejects with EngineError('aborted'). (streamTensorData takes its own signal.) */
  signal?: AbortSignal;
}

/** What {@link openGguf} reads: a model source, or any {@link ByteSource} (the library's cache). */
export type GgufInput = ByteSourceInput;

/** GGUF value type of one metadata entry (GGUF `gguf_type` ids; `itemType` for arrays). */
export interface GgufMetadataTypeInfo {
  /** 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array, 10 u64, 11 i64, 12 f64. */
  type: number;
  /** Element type, for arrays. */
  itemType?: number;
}

/** What {@link openGguf} returns: a {@link GgufFile} plus the facts a writer needs to reproduce it. */
export interface OpenedGgufFile extends GgufFile {
  /** The GGUF value type of each metadata key, so the file can be written back with the same types. */
  metadataTypes: Record<string, GgufMetadataTypeInfo>;
  /** Tensor data alignment (`general.alignment`, default 32). */
  alignment: number;
  /** Where the file came from, for messages (URL, path or blob name). */
  sourceName: string;
}

/** Default chunk size for {@link GgufFile.streamTensorData}. */
export const DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024;
/** GGUF's default `general.alignment`. */
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** @huggingface/gguf reads the header in requests of this many bytes (its HTTP_CHUNK_SIZE). */
const HEADER_CHUNK_BYTES = 2_000_000;
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"

// ---------------------------------------------------------------------------------------------------
// Header

function checkMagicAndVersion(head: Uint8Array, src: ByteSource): number {
  return checkGgufHead(head, src.name, isUrlSource(src));
}

/**
 * Checks a file's first 8 bytes: GGUF's magic and a version this reader takes; returns the version.
 * `name` is the file's name in messages; `isUrl`: the bytes came over HTTP (an HTML page then means a
 * wrong link).
 * @throws EngineError('gguf_invalid') for a short file or another magic, ('unsupported_model') for a
 * big-endian or unknown version.
 */
export function checkGgufHead(head: Uint8Array, name: string, isUrl = false): number {
  const src = { name };
  // A short file whose bytes so far are GGUF's magic was cut short; any other short file is something else.
  const magicSoFar = GGUF_MAGIC.every((b, i) => i >= head.length || head[i] === b);
  if (head.length < 8 && magicSoFar) {
    throw new EngineError(
      'gguf_invalid',
      `${src.name} is only ${fmtCount(head.length)} bytes, too short to be a GGUF file: ` +
        (isUrl ? 'the download is incomplete' : 'an incomplete download or copy'),
    );
  }
  if (!GGUF_MAGIC.every((b, i) => head[i] === b)) {
    const shown = Array.from(head.subarray(0, 4), (b) =>
      b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.',
    );
    const looksHtml = /^\s*</.test(new TextDecoder().decode(head.subarray(0, 16)));
    if (looksHtml && isUrl) throw htmlInsteadOfFileError(src.name);
    throw new EngineError(
      'gguf_invalid',
      `${src.name} is not a GGUF file: it starts with "${shown.join('')}" instead of "GGUF"` +
        (looksHtml ? ' (it looks like an HTML page: a saved web page or an error page, not a model)' : ''),
    );
  }
  const dv = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const version = dv.getUint32(4, true);
  if (version === 2 || version === 3) return version;
  const be = dv.getUint32(4, false);
  if (be === 2 || be === 3) {
    throw new EngineError(
      'unsupported_model',
      `${src.name} is a big-endian GGUF file; only little-endian is supported`,
    );
  }
  if (version === 1) {
    throw new EngineError(
      'gguf_invalid',
      `${src.name} is GGUF version 1 (from before August 2023), which is not supported; ` +
        'convert the model again with a current llama.cpp (GGUF v3)',
    );
  }
  throw new EngineError(
    'gguf_invalid',
    `${src.name} has GGUF version ${version}; only versions 2 and 3 are supported`,
  );
}

function toSafeNumber(v: bigint | number, what: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new EngineError('gguf_invalid', `${what} is out of range (${v})`);
  return n;
}

/** Metadata keys @huggingface/gguf adds that are header fields, not key–value pairs. */
const HEADER_FIELDS = new Set(['version', 'tensor_count', 'kv_count']);

/**
 * Opens a GGUF file and parses its header. Tensor data is read later, once, by `streamTensorData`.
 *
 * Checks up front: magic, version (2 or 3, little-endian), a header that fits in the file, tensor types
 * and shapes, offsets aligned and not overlapping, and (where the file size is known) every tensor
 * inside the file.
 * @throws EngineError 'gguf_invalid' (not GGUF, bad version, truncated or malformed), 'unsupported_model'
 *   (unknown tensor type, big-endian), 'http_status', 'network', 'timeout', 'aborted', 'invalid_argument'
 *   (a path that cannot be opened).
 */
export async function openGguf(source: GgufInput, opts: OpenGgufOptions = {}): Promise<OpenedGgufFile> {
  const signal = opts.signal;
  throwIfAborted(signal, 'opening the model');
  const src = await openByteSource(source, opts);

  // The first chunk serves our magic/version check and @huggingface/gguf's first request alike.
  let first: Uint8Array | undefined = await src.read(0, HEADER_CHUNK_BYTES, signal);
  const version = checkMagicAndVersion(first, src);
  let readPastEnd = false;

  const rangeFetch = (async (_input: unknown, init?: RequestInit) => {
    throwIfAborted(signal, 'opening the model');
    const range = new Headers(init?.headers).get('range');
    const m = range?.match(/bytes=(\d+)-(\d+)/);
    if (!m) throw new EngineError('gguf_invalid', 'internal: header parser asked for an unexpected range');
    const start = Number(m[1]);
    const end = Number(m[2]) + 1;
    let bytes: Uint8Array;
    if (start === 0 && first) {
      bytes = first.subarray(0, end);
      first = undefined;
    } else {
      bytes = await src.read(start, end, signal);
    }
    if (bytes.length < end - start) readPastEnd = true;
    const headers: Record<string, string> = {};
    if (bytes.length > 0)
      headers['content-range'] = `bytes ${start}-${start + bytes.length - 1}/${src.size ?? '*'}`;
    return new Response(bytes as Uint8Array<ArrayBuffer>, { status: 206, headers });
  }) as typeof fetch;

  let parsed: Awaited<ReturnType<typeof parseGgufHeader>> & {
    typedMetadata: Record<string, { type: number; subType?: number }>;
  };
  try {
    parsed = (await parseGgufHeader('https://gguf.invalid/model.gguf', {
      fetch: rangeFetch,
      typedMetadata: true,
    })) as typeof parsed;
  } catch (e) {
    if (isEngineError(e)) throw e;
    const msg = (e as Error)?.message ?? String(e);
    // Truncated only when the parser ran out of bytes (a RangeError reading past what it was given, or its
    // cap on re-reads) after a read came back short. Its own checks (a string or array longer than its
    // limits, an unknown type) mean a malformed header however complete the file is; a read always comes
    // back short at the end of a small file, so that alone proves nothing.
    const ranOut = e instanceof RangeError || /Exceeded maximum chunk fetches/.test(msg);
    if (readPastEnd && ranOut) {
      // A file cut short and a complete file with a wrong length field (a string or array running past the
      // end) look the same from here: say both.
      throw new EngineError(
        'gguf_invalid',
        `${src.name} is truncated or malformed: it ends at ${fmtCount(src.size ?? 0)} bytes, inside its header ` +
          '(metadata and tensor list): either the file was cut short' +
          (isUrlSource(src) ? ' (an incomplete download)' : ' (an incomplete download or copy)') +
          ', or a string or array length in the header runs past its end',
        { cause: e, details: { truncated: { fileBytes: src.size ?? 0 } } },
      );
    }
    const cannotFit = /cannot fit in a (\d+)-byte file/.exec(msg);
    if (cannotFit) {
      throw new EngineError(
        'gguf_invalid',
        `${src.name} declares more tensor data than its ${fmtCount(Number(cannotFit[1]))} bytes can hold: it is ` +
          'truncated (an incomplete download) or its tensor list is malformed',
        { cause: e, details: { truncated: { fileBytes: Number(cannotFit[1]) } } },
      );
    }
    throw new EngineError(
      'gguf_invalid',
      `${src.name} has a malformed GGUF header: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  first = undefined;

  if (src.size === undefined && src.probeSize) await src.probeSize(signal);
  const size = src.size;
  const headerEnd = parsed.tensorInfoByteRange[1];
  if (size !== undefined && headerEnd > size) {
    throw new EngineError(
      'gguf_invalid',
      `${src.name} is truncated or malformed: it ends at ${fmtCount(size)} bytes, inside its header (metadata ` +
        `and tensor list), which needs at least ${fmtCount(headerEnd)}: either the file was cut short` +
        (isUrlSource(src) ? ' (an incomplete download)' : ' (an incomplete download or copy)') +
        ', or a string or array length in the header runs past its end',
      { details: { truncated: { fileBytes: size, neededBytes: headerEnd } } },
    );
  }

  const metadata: Record<string, unknown> = {};
  const metadataTypes: Record<string, GgufMetadataTypeInfo> = {};
  for (const [k, v] of Object.entries(parsed.metadata)) {
    if (HEADER_FIELDS.has(k)) continue;
    metadata[k] = v;
    const ty = parsed.typedMetadata[k];
    if (ty)
      metadataTypes[k] =
        ty.subType === undefined ? { type: ty.type } : { type: ty.type, itemType: ty.subType };
  }

  const alignment = Number(metadata['general.alignment'] ?? GGUF_DEFAULT_ALIGNMENT);
  if (!Number.isSafeInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new EngineError(
      'gguf_invalid',
      `${src.name}: general.alignment must be a power of two, got ${String(metadata['general.alignment'])}`,
    );
  }
  // The data starts at the header's end rounded up to the alignment (GGML_PAD). @huggingface/gguf rounds
  // in 32-bit integers, which a huge alignment (2^31) turns negative: computed here instead.
  const headerBytes = toSafeNumber(parsed.tensorInfoByteRange[1], 'header size');
  const dataOffset = Math.ceil(headerBytes / alignment) * alignment;
  if (size !== undefined && dataOffset > size && alignment !== GGUF_DEFAULT_ALIGNMENT) {
    throw new EngineError(
      'gguf_invalid',
      `${src.name}: general.alignment = ${fmtCount(alignment)} puts the tensor data at byte ${fmtCount(dataOffset)}, ` +
        `past the file's end (${fmtCount(size)} bytes): the key's value is wrong (llama.cpp writes 32)`,
    );
  }

  const tensors = new Map<string, GgufTensorInfo>();
  for (const ti of parsed.tensorInfos) {
    if (tensors.has(ti.name))
      throw new EngineError('gguf_invalid', `${src.name}: tensor ${ti.name} appears twice`);
    const shape = ti.shape.map((d, i) => toSafeNumber(d, `tensor ${ti.name} dimension ${i}`));
    const rel = toSafeNumber(ti.offset, `tensor ${ti.name} offset`);
    if (rel % alignment !== 0) {
      throw new EngineError(
        'gguf_invalid',
        `${src.name}: tensor ${ti.name} starts at data offset ${fmtCount(rel)}, not a multiple of the alignment ${alignment}`,
      );
    }
    const nBytes = tensorBytes(ti.dtype, shape, ti.name);
    tensors.set(ti.name, {
      name: ti.name,
      type: ti.dtype,
      typeName: ggmlTypeName(ti.dtype),
      shape,
      fileOffset: dataOffset + rel,
      nBytes,
    });
  }

  const ordered = [...tensors.values()].sort((a, b) => a.fileOffset - b.fileOffset);
  for (let i = 1; i < ordered.length; i++) {
    const prev = ordered[i - 1];
    if (ordered[i].fileOffset < prev.fileOffset + prev.nBytes) {
      throw new EngineError(
        'gguf_invalid',
        `${src.name}: tensors ${prev.name} and ${ordered[i].name} overlap (the file is damaged)`,
      );
    }
  }
  if (size !== undefined) {
    const bad = ordered.find((t) => t.fileOffset + t.nBytes > size);
    if (bad) throw truncatedError(src.name, size, bad);
  }

  return new GgufFileImpl(src, version, metadata, metadataTypes, tensors, ordered, dataOffset, alignment);
}

function truncatedError(name: string, endsAt: number, t: GgufTensorInfo): EngineError {
  return new EngineError(
    'gguf_invalid',
    `${name} is truncated: the file ends at ${fmtCount(endsAt)} bytes but tensor ${t.name} needs bytes up to ` +
      `${fmtCount(t.fileOffset + t.nBytes)}: the file is incomplete (a download or copy that stopped early)`,
    { details: { truncated: { fileBytes: endsAt, neededBytes: t.fileOffset + t.nBytes, tensor: t.name } } },
  );
}

// ---------------------------------------------------------------------------------------------------
// Tensor data

class GgufFileImpl implements OpenedGgufFile {
  readonly fileSize: number | undefined;
  readonly sourceName: string;

  constructor(
    private readonly src: ByteSource,
    readonly version: number,
    readonly metadata: Record<string, unknown>,
    readonly metadataTypes: Record<string, GgufMetadataTypeInfo>,
    readonly tensors: Map<string, GgufTensorInfo>,
    private readonly ordered: GgufTensorInfo[],
    readonly dataOffset: number,
    readonly alignment: number,
  ) {
    this.fileSize = src.size;
    this.sourceName = src.name;
  }

  /**
   * Streams the tensor data once, front to back. Chunks are at most `chunkBytes` (default 4 MiB, rounded
   * down to a multiple of 4) and never span two tensors; every chunk but a tensor's last is a multiple
   * of 4 bytes, so `offset` is too. A zero-byte tensor gets one empty chunk. Each chunk is a new array
   * the consumer may keep. `onBytes(done, total)` follows each chunk, counting data-section bytes
   * (padding included) up to the end of the last tensor.
   */
  async streamTensorData(
    onChunk: (c: TensorChunk) => void | Promise<void>,
    opts: { signal?: AbortSignal; onBytes?: (done: number, total: number) => void; chunkBytes?: number } = {},
  ): Promise<void> {
    const { signal, onBytes } = opts;
    const what = `reading ${this.src.name}`;
    const chunkBytes = Math.max(4, Math.floor((opts.chunkBytes ?? DEFAULT_CHUNK_BYTES) / 4) * 4);
    const last = this.ordered.at(-1);
    const end = last ? last.fileOffset + last.nBytes : this.dataOffset;
    const total = end - this.dataOffset;
    throwIfAborted(signal, what);
    const reader = await this.src.openSequential(this.dataOffset, signal);
    try {
      let pos = this.dataOffset;
      for (const t of this.ordered) {
        if (t.fileOffset > pos) {
          const gap = t.fileOffset - pos;
          const skipped = await reader.skip(gap);
          if (skipped < gap) throw truncatedError(this.src.name, pos + skipped, t);
          pos = t.fileOffset;
        }
        let offset = 0;
        do {
          throwIfAborted(signal, what);
          const n = Math.min(chunkBytes, t.nBytes - offset);
          const bytes = n > 0 ? await reader.read(n) : new Uint8Array(0);
          if (bytes.length < n) throw truncatedError(this.src.name, pos + bytes.length, t);
          pos += n;
          await onChunk({ tensor: t, offset, bytes });
          offset += n;
          onBytes?.(pos - this.dataOffset, total);
        } while (offset < t.nBytes);
      }
      throwIfAborted(signal, what);
    } catch (e) {
      if (signal?.aborted && !isEngineError(e, 'aborted')) throw abortedError(what);
      throw e;
    } finally {
      await reader.close();
    }
  }
}
