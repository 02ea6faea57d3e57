/**
 * What the GGUF reader gives the model loader. Format: ggml's `docs/gguf.md` (v2 and v3).
 * Shapes follow ggml: `shape[0]` (ne[0]) is the contiguous, inner dimension.
 */

/** One tensor's description from the GGUF header. */
export interface GgufTensorInfo {
  /** GGUF tensor name, e.g. `blk.0.attn_q.weight`. */
  name: string;
  /** ggml type id (GGML_TYPE_* in ggml.h): 0 = F32, 1 = F16, 2 = Q4_0, 8 = Q8_0, 12 = Q4_K, 14 = Q6_K, 30 = BF16. */
  type: number;
  /** ggml type name, e.g. 'F32', 'Q4_K'. */
  typeName: string;
  /** ne, inner dimension first, e.g. attn_q: [nEmbd, nEmbd]; token_embd: [nEmbd, nVocab]. */
  shape: number[];
  /** Absolute byte offset of the tensor's data in the file. */
  fileOffset: number;
  /** Size of the tensor's data in bytes. */
  nBytes: number;
  /**
   * Split models (llama.cpp's gguf-split, see split.ts): the 0-based part holding the tensor (its
   * `split.no`); `fileOffset` is then an offset in that part's file. Absent for a single file.
   */
  part?: number;
}

/** A chunk of one tensor's data; `offset` is the byte offset inside the tensor (a multiple of 4). */
export interface TensorChunk {
  tensor: GgufTensorInfo;
  offset: number;
  bytes: Uint8Array;
}

/** An opened GGUF file: header parsed, tensor data not yet read. */
export interface GgufFile {
  /** 2 or 3. */
  version: number;
  /** Metadata key → value (strings, numbers, booleans, bigints for 64-bit ints, arrays as JS arrays). */
  metadata: Record<string, unknown>;
  /** Tensor infos by name, in file order. */
  tensors: Map<string, GgufTensorInfo>;
  /** Byte offset where tensor data starts (aligned to `general.alignment`, default 32). */
  dataOffset: number;
  /** Total file size in bytes where known. */
  fileSize?: number;
  /**
   * Set for synthetic models (src/webgpu/model/synthetic.ts): there is no tensor data to stream; the
   * loader fills the weights on the GPU from this seed.
   */
  synthetic?: { seed: number };
  /**
   * Streams all tensor data once, in file order, calling `onChunk` for each piece (awaited, so the
   * consumer controls memory). Chunks never span two tensors. `onBytes` reports bytes read so far.
   * @throws EngineError('gguf_invalid') when the data ends early (truncated file), ('network' | 'http_status')
   *   for URL failures, ('aborted') when `signal` aborts.
   */
  streamTensorData(
    onChunk: (c: TensorChunk) => void | Promise<void>,
    opts?: { signal?: AbortSignal; onBytes?: (done: number, total: number) => void; chunkBytes?: number },
  ): Promise<void>;
}
