/**
 * Split GGUF models, as llama.cpp's `llama-gguf-split` writes them and `llama_model_loader` reads them
 * (llama.cpp: tools/gguf-split/gguf-split.cpp, src/llama-model-loader.cpp, src/llama.cpp's
 * `llama_split_path` / `llama_split_prefix`, ggml/src/gguf.cpp).
 *
 * The format, as those files have it:
 * - File names: `%s-%05d-of-%05d.gguf` (`PREFIX-00001-of-00003.gguf`, …): the part number is 1-based in
 *   the name. The model is loaded from the first part; llama.cpp derives the others' names from it
 *   (`llama_get_list_splits`) and refuses a first file whose name does not end `-00001-of-NNNNN.gguf`.
 * - Every part is a complete GGUF v3 file (own header, tensor infos, alignment padding) holding a
 *   contiguous run of the model's tensors, in the original order.
 * - Metadata: the first part has all of the model's key–value pairs; every part (the first included)
 *   has `split.no` (u16, **0-based** part index: the first part has 0), `split.count` (u16, number of
 *   parts) and `split.tensors.count` (i32, the model's total tensor count). gguf-split sets them in the
 *   order no, count, tensors.count, then sets `split.count` again once the part count is known; ggml's
 *   `gguf_set_val_*` removes a key and appends it, so the written order is `split.no`,
 *   `split.tensors.count`, `split.count`, after all of the model's other keys in the first part.
 * - The loader checks: the first file has `split.no` 0; each further part's `split.no` is its index; no
 *   tensor name appears twice; the tensors found number `split.tensors.count`. A merged file
 *   (`gguf-split --merge`) keeps `split.count` = 0 and loads as a single file.
 */
import { EngineError, type EngineErrorCode, isEngineError } from '../core/errors.ts';
import type { OpenedGgufFile } from './reader.ts';
import type { GgufTensorInfo, TensorChunk } from './types.ts';
import {
  type GgufMetadataEntry,
  type GgufTensorInput,
  kv,
  type WriteGgufOptions,
  writeGguf,
} from './writer.ts';

/** Metadata keys of split models (llama.cpp's LLM_KV_SPLIT_NO / _COUNT / _TENSORS_COUNT). */
export const SPLIT_NO_KEY = 'split.no';
export const SPLIT_COUNT_KEY = 'split.count';
export const SPLIT_TENSORS_COUNT_KEY = 'split.tensors.count';
const SPLIT_KEYS = new Set([SPLIT_NO_KEY, SPLIT_COUNT_KEY, SPLIT_TENSORS_COUNT_KEY]);

/** `split.count` and `split.no` are u16 in the file. */
const MAX_PARTS = 0xffff;
/** gguf-split's default `--split-max-tensors`. */
export const GGUF_SPLIT_DEFAULT_MAX_TENSORS = 128;
/** gguf-split pads with GGUF_DEFAULT_ALIGNMENT when it sizes parts (and writes parts 2… with it). */
const GGUF_DEFAULT_ALIGNMENT = 32;

const NAME_RE = /^(.+)-(\d{5})-of-(\d{5})\.gguf$/;

/** What {@link parseSplitName} finds in a part's name. */
export interface SplitName {
  /** Everything before `-00001-of-00003.gguf` (a path or URL keeps its directories). */
  prefix: string;
  /** 1-based part number, as in the name. */
  no: number;
  /** Number of parts. */
  count: number;
  /** A URL's query and fragment (`?download=true`), kept when naming siblings; '' otherwise. */
  suffix: string;
}

/**
 * Reads llama.cpp's split naming, `PREFIX-%05d-of-%05d.gguf` (llama.cpp src/llama.cpp `llama_split_prefix`),
 * from a file name, a path or a URL. A URL's query string and fragment are set aside (in `suffix`).
 * @returns undefined when the name does not follow the pattern, or its numbers are impossible
 *   (part 0, a part past the count, a count over 65535).
 */
export function parseSplitName(name: string): SplitName | undefined {
  const tryMatch = (base: string, suffix: string): SplitName | undefined => {
    const m = NAME_RE.exec(base);
    if (!m) return undefined;
    const no = Number(m[2]);
    const count = Number(m[3]);
    if (count < 1 || count > MAX_PARTS || no < 1 || no > count) return undefined;
    return { prefix: m[1], no, count, suffix };
  };
  const whole = tryMatch(name, '');
  if (whole) return whole;
  const q = name.search(/[?#]/);
  return q > 0 ? tryMatch(name.slice(0, q), name.slice(q)) : undefined;
}

/**
 * `PREFIX-%05d-of-%05d.gguf` for 1-based part `no` (llama.cpp src/llama.cpp `llama_split_path`, which
 * takes the 0-based index and writes index + 1).
 * @throws EngineError('invalid_argument') for a part number outside 1…count or a count outside 1…65535.
 */
export function splitFileName(prefix: string, no: number, count: number): string {
  checkPartNumbers(no, count);
  return `${prefix}-${String(no).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`;
}

/**
 * The name (file name, path or URL, as `firstName` is) of part `no` (1-based) of `count`, beside the part
 * named `firstName`: the numbers in the name are replaced, directories and a URL's query/fragment kept.
 * `someURL/M-00001-of-00003.gguf?download=true`, 2, 3 → `someURL/M-00002-of-00003.gguf?download=true`.
 * @throws EngineError('invalid_argument') when `firstName` does not follow llama.cpp's split naming, or
 *   names a different number of parts than `count` (llama.cpp refuses to load such a split: "invalid
 *   split file name"), or for impossible numbers.
 */
export function splitPartName(firstName: string, no: number, count: number): string {
  checkPartNumbers(no, count);
  const parsed = parseSplitName(firstName);
  if (!parsed) {
    throw new EngineError(
      'invalid_argument',
      `${firstName} is the first part of a model split into ${count} parts, but its name does not follow ` +
        `llama.cpp's split naming NAME-00001-of-${pad5(count)}.gguf, so the other parts cannot be found ` +
        '(rename the parts as llama-gguf-split names them)',
    );
  }
  if (parsed.count !== count) {
    throw new EngineError(
      'invalid_argument',
      `${firstName} names a split into ${parsed.count} parts, but its metadata (split.count) says ${count}`,
    );
  }
  return splitFileName(parsed.prefix, no, count) + parsed.suffix;
}

function pad5(n: number): string {
  return String(n).padStart(5, '0');
}

function checkPartNumbers(no: number, count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > MAX_PARTS) {
    throw new EngineError('invalid_argument', `a split has 1 to ${MAX_PARTS} parts, not ${count}`);
  }
  if (!Number.isInteger(no) || no < 1 || no > count) {
    throw new EngineError('invalid_argument', `split part numbers run from 1 to ${count}, not ${no}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Opening

/** Options for {@link openSplitGguf}. */
export interface OpenSplitGgufOptions {
  /**
   * The name of part `no` (1-based) for messages, when opening it fails. Default: the sibling name
   * {@link splitPartName} derives from the first part's `sourceName`, else "part N".
   */
  partName?: (no: number) => string;
  /** Checked before each part is opened; rejects with EngineError('aborted'). */
  signal?: AbortSignal;
}

/**
 * The error for a split model's part that is not there, or undefined when `e` says something else.
 * "Not there" is an EngineError 'http_status' for HTTP 404 or 410, or an 'invalid_argument' "no such file"
 * (a local path); the result keeps `e`'s code and has it as its cause.
 * @param no the part's 1-based number, as in its name; `count` the number of parts; `name` its file or URL.
 */
export function missingSplitPartError(
  e: unknown,
  no: number,
  count: number,
  name: string,
): EngineError | undefined {
  const notFound = isEngineError(e, 'http_status')
    ? /HTTP (404|410)\b/.exec(e.message)?.[0]
    : isEngineError(e, 'invalid_argument') && /no such file/.test(e.message)
      ? 'no such file'
      : undefined;
  if (!notFound || !isEngineError(e)) return undefined;
  return new EngineError(
    e.code,
    `split part ${no} of ${count} is missing: ${name} was not found (${notFound}); a split model needs ` +
      `all ${count} parts, named as gguf-split names them, beside the first`,
    { cause: e },
  );
}

/** What {@link openSplitGguf} returns for a split model: one file over all its parts. */
export interface SplitGgufFile extends OpenedGgufFile {
  /** The parts, in order (`parts[0]` is the first part; `split.no` = index). */
  readonly parts: readonly OpenedGgufFile[];
}

/** Error codes kept (with the message prefixed by the part) when a part cannot be opened. */
const KEPT_CODES: ReadonlySet<EngineErrorCode> = new Set([
  'http_status',
  'network',
  'timeout',
  'invalid_argument',
  'gguf_invalid',
  'unsupported_model',
  'integrity',
  'quota_exceeded',
  'cors',
]);

function metaInt(file: OpenedGgufFile, key: string): number | undefined {
  const v = file.metadata[key];
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new EngineError('gguf_invalid', `${file.sourceName}: ${key} is not an integer (${String(v)})`);
  }
  return n;
}

/** Bytes `streamTensorData` reports for one file: its data section up to the end of the last tensor. */
function dataBytes(file: OpenedGgufFile): number {
  let end = file.dataOffset;
  for (const t of file.tensors.values()) end = Math.max(end, t.fileOffset + t.nBytes);
  return end - file.dataOffset;
}

/**
 * Opens the rest of a split model (llama.cpp's gguf-split format, read as llama.cpp's
 * src/llama-model-loader.cpp does) from its first part and returns one file over all parts.
 *
 * A file without `split.count`, or with `split.count` 0 (a gguf-split merge) or 1, is returned unchanged.
 * Otherwise parts 2…N are opened in order with `openPart(no)` (`no` 1-based, as in file names:
 * `(no) => openGguf({ url: splitPartName(url, no, n) })`) and checked. The result has the first part's
 * metadata (all keys, `split.*` included) and version/alignment/dataOffset/sourceName, every part's tensors
 * in order (each info with `part` = its 0-based part; `fileOffset` within that part), `fileSize` = the
 * parts' sizes summed (undefined if any is unknown), and a `streamTensorData` that streams part 1's
 * tensors, then part 2's, …, with `onBytes(done, total)` counting across all parts.
 * @throws EngineError('gguf_invalid') when the first file is not the first part (`split.no` ≠ 0), lacks
 *   `split.tensors.count`, or a part does not belong (its `split.no` is not its position, its
 *   `split.count` or `split.tensors.count` differ from the first part's, a tensor appears twice, or the
 *   parts together hold a different number of tensors than `split.tensors.count`); messages name the part.
 *   A part that cannot be opened keeps its error's code ('http_status', 'network', 'timeout',
 *   'invalid_argument', 'gguf_invalid', …; anything not an EngineError becomes 'invalid_argument'), the
 *   message prefixed "split part K of N (NAME): "; a part that is not there (HTTP 404/410, no such file)
 *   says "split part K of N is missing: NAME was not found". ('aborted') when `opts.signal` aborts.
 */
export async function openSplitGguf(
  first: OpenedGgufFile,
  openPart: (no: number) => Promise<OpenedGgufFile>,
  opts: OpenSplitGgufOptions = {},
): Promise<OpenedGgufFile> {
  const count = metaInt(first, SPLIT_COUNT_KEY);
  if (count === undefined || count === 0 || count === 1) return first;
  const firstName = first.sourceName;
  if (count < 0 || count > MAX_PARTS) {
    throw new EngineError('gguf_invalid', `${firstName}: split.count ${count} is not a valid part count`);
  }
  const firstNo = metaInt(first, SPLIT_NO_KEY) ?? 0;
  if (firstNo !== 0) {
    const parsed = parseSplitName(firstName);
    const hint =
      parsed && parsed.count === count ? ` (${splitPartName(firstName, 1, count).split(/[/\\]/).pop()})` : '';
    throw new EngineError(
      'gguf_invalid',
      `${firstName} is part ${firstNo + 1} of ${count} of a split model (split.no = ${firstNo}); load the ` +
        `model from its first part${hint}`,
    );
  }
  const nTensors = metaInt(first, SPLIT_TENSORS_COUNT_KEY);
  if (nTensors === undefined) {
    throw new EngineError(
      'gguf_invalid',
      `${firstName} says it is the first of ${count} parts (split.count) but has no split.tensors.count`,
    );
  }

  const defaultName = (no: number): string => {
    try {
      return splitPartName(firstName, no, count);
    } catch {
      return `part ${no}`;
    }
  };
  const partName = opts.partName ?? defaultName;

  const parts: OpenedGgufFile[] = [first];
  for (let no = 2; no <= count; no++) {
    if (opts.signal?.aborted) {
      throw new EngineError('aborted', `opening split part ${no} of ${count} was aborted`);
    }
    const label = `split part ${no} of ${count} (${partName(no)})`;
    let part: OpenedGgufFile;
    try {
      part = await openPart(no);
    } catch (e) {
      if (isEngineError(e, 'aborted')) throw e;
      // Not there at all (HTTP 404/410, or no such local file): say the part is missing, by its name.
      const missing = missingSplitPartError(e, no, count, partName(no));
      if (missing) throw missing;
      if (isEngineError(e)) {
        const code = KEPT_CODES.has(e.code) ? e.code : 'invalid_argument';
        throw new EngineError(code, `${label}: ${e.message}`, { cause: e });
      }
      throw new EngineError('invalid_argument', `${label}: ${(e as Error)?.message ?? String(e)}`, {
        cause: e,
      });
    }
    const named = `part ${no} of ${count} (${part.sourceName})`;
    const no0 = metaInt(part, SPLIT_NO_KEY);
    const partCount = metaInt(part, SPLIT_COUNT_KEY);
    if (no0 === undefined || partCount === undefined) {
      throw new EngineError(
        'gguf_invalid',
        `${named} is not part of a split model (it has no split.no / split.count)`,
      );
    }
    if (partCount !== count) {
      throw new EngineError(
        'gguf_invalid',
        `${named} belongs to a split into ${partCount} parts (split.count = ${partCount}), not ${count}: ` +
          'it is not a part of the same model',
      );
    }
    if (no0 !== no - 1) {
      throw new EngineError(
        'gguf_invalid',
        `${named} says it is part ${no0 + 1} (split.no = ${no0}, expected ${no - 1})`,
      );
    }
    const partTensors = metaInt(part, SPLIT_TENSORS_COUNT_KEY);
    if (partTensors !== undefined && partTensors !== nTensors) {
      throw new EngineError(
        'gguf_invalid',
        `${named} belongs to a model of ${partTensors} tensors (split.tensors.count), but the first part ` +
          `says ${nTensors}: it is not a part of the same model`,
      );
    }
    parts.push(part);
  }

  const tensors = new Map<string, GgufTensorInfo>();
  parts.forEach((part, i) => {
    for (const t of part.tensors.values()) {
      const prev = tensors.get(t.name);
      if (prev) {
        throw new EngineError(
          'gguf_invalid',
          `part ${i + 1} of ${count} (${part.sourceName}) has tensor ${t.name}, which part ${(prev.part ?? 0) + 1} ` +
            'also has (the parts are not one model)',
        );
      }
      tensors.set(t.name, { ...t, part: i });
    }
  });
  if (tensors.size !== nTensors) {
    const per = parts.map((p, i) => `part ${i + 1}: ${p.tensors.size}`).join(', ');
    throw new EngineError(
      'gguf_invalid',
      `${firstName}: the ${count} parts hold ${tensors.size} tensors (${per}) but split.tensors.count says ` +
        `${nTensors}: ${tensors.size < nTensors ? 'tensors are missing (a part is damaged or from another model)' : 'a part has extra tensors'}`,
    );
  }

  return new SplitGgufFileImpl(first, parts, tensors);
}

class SplitGgufFileImpl implements SplitGgufFile {
  readonly version: number;
  readonly metadata: Record<string, unknown>;
  readonly metadataTypes: OpenedGgufFile['metadataTypes'];
  readonly dataOffset: number;
  readonly alignment: number;
  readonly sourceName: string;
  readonly fileSize: number | undefined;

  constructor(
    first: OpenedGgufFile,
    readonly parts: readonly OpenedGgufFile[],
    readonly tensors: Map<string, GgufTensorInfo>,
  ) {
    this.version = first.version;
    this.metadata = first.metadata;
    this.metadataTypes = first.metadataTypes;
    this.dataOffset = first.dataOffset;
    this.alignment = first.alignment;
    this.sourceName = first.sourceName;
    this.fileSize = parts.every((p) => p.fileSize !== undefined)
      ? parts.reduce((s, p) => s + (p.fileSize ?? 0), 0)
      : undefined;
  }

  /**
   * Streams every part's tensor data through the part's own `streamTensorData`, part 1 first. Chunks carry
   * this file's tensor infos (with `part`). `onBytes(done, total)` counts across the parts.
   */
  async streamTensorData(
    onChunk: (c: TensorChunk) => void | Promise<void>,
    opts: { signal?: AbortSignal; onBytes?: (done: number, total: number) => void; chunkBytes?: number } = {},
  ): Promise<void> {
    const sizes = this.parts.map(dataBytes);
    const total = sizes.reduce((a, b) => a + b, 0);
    let before = 0;
    for (let i = 0; i < this.parts.length; i++) {
      const base = before;
      const onBytes = opts.onBytes;
      await this.parts[i].streamTensorData(
        (c) =>
          onChunk({ tensor: this.tensors.get(c.tensor.name) ?? c.tensor, offset: c.offset, bytes: c.bytes }),
        {
          signal: opts.signal,
          chunkBytes: opts.chunkBytes,
          onBytes: onBytes && ((done) => onBytes(base + done, total)),
        },
      );
      before += sizes[i];
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Writing

/** How {@link writeSplitGguf} groups tensors into parts (at most one of the three limits). */
export interface SplitGgufOptions {
  /** gguf-split `--split-max-tensors N`: a new part every N tensors. Default 128, as gguf-split. */
  maxTensorsPerPart?: number;
  /**
   * gguf-split `--split-max-size`, in bytes: a new part when the tensors' data (each padded to 32 bytes)
   * would pass it. A tensor larger than the limit cannot be placed (gguf-split stops there too).
   */
  maxBytesPerPart?: number;
  /** Exactly this many parts, the tensors spread evenly (no gguf-split flag; the files are the same kind). */
  nParts?: number;
  /** gguf-split `--no-tensor-first-split`: the first part holds only the metadata. */
  noTensorsInFirstPart?: boolean;
}

function bad(msg: string): EngineError {
  return new EngineError('invalid_argument', msg);
}

function positiveInt(v: number, what: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw bad(`${what} must be a positive integer, not ${v}`);
  return v;
}

/** Indices of the tensors in each part, per gguf-split's `split_strategy`. */
function planParts(sizes: readonly number[], opts: SplitGgufOptions): number[][] {
  const limits = [opts.maxTensorsPerPart, opts.maxBytesPerPart, opts.nParts].filter((v) => v !== undefined);
  if (limits.length > 1) throw bad('give at most one of maxTensorsPerPart, maxBytesPerPart and nParts');
  const n = sizes.length;
  const parts: number[][] = [[]];
  if (opts.noTensorsInFirstPart) parts.push([]);
  if (opts.nParts !== undefined) {
    const want = positiveInt(opts.nParts, 'nParts');
    const groups = want - (parts.length - 1);
    if (groups < 1 || groups > n || want > MAX_PARTS) {
      throw bad(
        `${n} tensors cannot fill ${want} parts${opts.noTensorsInFirstPart ? ' (the first without tensors)' : ''}`,
      );
    }
    const start = parts.length - 1;
    for (let g = 0; g < groups; g++) {
      if (g > 0) parts.push([]);
      const part = parts[start + g];
      for (let i = Math.floor((g * n) / groups); i < Math.floor(((g + 1) * n) / groups); i++) part.push(i);
    }
    return parts;
  }
  const maxBytes =
    opts.maxBytesPerPart === undefined ? undefined : positiveInt(opts.maxBytesPerPart, 'maxBytesPerPart');
  const maxTensors = positiveInt(
    opts.maxTensorsPerPart ?? GGUF_SPLIT_DEFAULT_MAX_TENSORS,
    'maxTensorsPerPart',
  );
  let cur = 0;
  for (let i = 0; i < n; i++) {
    const nb = Math.ceil(sizes[i] / GGUF_DEFAULT_ALIGNMENT) * GGUF_DEFAULT_ALIGNMENT;
    const split = maxBytes !== undefined ? cur + nb > maxBytes : i > 0 && i % maxTensors === 0;
    if (split) {
      if (parts[parts.length - 1].length === 0) {
        throw bad(`tensor ${i} does not fit in a part of ${maxBytes} bytes (one part would have no tensors)`);
      }
      parts.push([]);
      cur = nb;
    } else {
      cur += nb;
    }
    parts[parts.length - 1].push(i);
  }
  if (parts.length > MAX_PARTS)
    throw bad(`${parts.length} parts are more than a split can have (${MAX_PARTS})`);
  return parts;
}

/** ggml_n_dims: trailing dimensions of 1 are not written (at least one dimension is). */
function ggmlDims(shape: readonly number[]): number[] {
  const s = shape.length === 0 ? [1] : [...shape];
  while (s.length > 1 && s[s.length - 1] === 1) s.pop();
  return s;
}

/**
 * Writes a model as split GGUF parts, byte for byte as llama.cpp's `llama-gguf-split --split`
 * (tools/gguf-split/gguf-split.cpp with ggml/src/gguf.cpp) writes them from a file with this metadata and
 * these tensors in this order: every part GGUF v3 with 32-byte alignment; the first part has all of
 * `opts.metadata` (any `split.*` keys in it dropped) then `split.no` (u16 0), `split.tensors.count` (i32)
 * and `split.count` (u16); part k (0-based) has only `split.no` = k, `split.tensors.count`, `split.count`;
 * tensor infos with trailing dimensions of 1 dropped (ggml_n_dims); each tensor's data padded to 32.
 * Name the parts with {@link splitFileName}(prefix, k + 1, parts.length).
 *
 * Alignment: gguf-split lays every part out at 32 bytes whatever `general.alignment` says (so a model
 * with another alignment comes out inconsistent there); here the first part follows `opts.alignment` /
 * `general.alignment` (as {@link writeGguf}) and the other parts, which carry no `general.alignment`, 32.
 * @returns the parts' bytes, first part first.
 * @throws EngineError('invalid_argument') for conflicting or impossible split options (a part that would
 *   have no tensors, more than 65535 parts) and for everything {@link writeGguf} refuses.
 */
export function writeSplitGguf(opts: WriteGgufOptions & SplitGgufOptions): Uint8Array[] {
  const tensors: GgufTensorInput[] = opts.tensors.map((t) => ({ ...t, shape: ggmlDims(t.shape) }));
  const names = new Set<string>();
  for (const t of tensors) {
    if (names.has(t.name)) throw bad(`tensor ${t.name} appears twice`);
    names.add(t.name);
  }
  const plan = planParts(
    tensors.map((t) => t.data.length),
    opts,
  );
  const count = plan.length;
  const n = tensors.length;
  if (n > 0x7fffffff) throw bad(`${n} tensors do not fit split.tensors.count (i32)`);
  const splitKeys = (no: number): GgufMetadataEntry[] => [
    kv.u16(SPLIT_NO_KEY, no),
    kv.i32(SPLIT_TENSORS_COUNT_KEY, n),
    kv.u16(SPLIT_COUNT_KEY, count),
  ];
  const modelKeys = opts.metadata.filter((e) => !SPLIT_KEYS.has(e.key));
  return plan.map((idx, no) =>
    writeGguf({
      version: opts.version ?? 3,
      metadata: no === 0 ? [...modelKeys, ...splitKeys(0)] : splitKeys(no),
      tensors: idx.map((i) => tensors[i]),
      alignment: no === 0 ? opts.alignment : GGUF_DEFAULT_ALIGNMENT,
    }),
  );
}
