/**
 * Split GGUF models (llama.cpp's gguf-split): names, the writer against the format (and, by hash, against
 * llama-gguf-split's own output), opening a split of stories260K as one model (metadata, tensors, data,
 * reference logits, and llama.cpp itself loading our parts), and the errors for parts that do not belong.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, isEngineError } from '../core/errors.ts';
import { argmax, ReferenceLlama } from '../model/reference.ts';
import {
  collectTensorData,
  errorOf,
  parseHeaderIndependently,
  sha256,
  startServer,
} from '../testing/gguf-util.ts';
import { STORIES_PATH } from '../testing/stories260k.ts';
import { type OpenedGgufFile, openGguf } from './reader.ts';
import {
  openSplitGguf,
  parseSplitName,
  type SplitGgufFile,
  type SplitGgufOptions,
  splitFileName,
  splitPartName,
  writeSplitGguf,
} from './split.ts';
import { type GgufTensorInput, kv, metadataEntriesFrom, type WriteGgufOptions, writeGguf } from './writer.ts';

/** What a synchronous call throws, as `code: message` for an EngineError ('no error' when it returns). */
function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return isEngineError(e) ? `${e.code}: ${e.message}` : String(e);
  }
  return 'no error';
}

type SplitOpts = Partial<WriteGgufOptions & SplitGgufOptions>;

describe('split names (llama_split_path / llama_split_prefix)', () => {
  it('parses file names, paths and URLs (query and fragment set aside)', () => {
    expect(parseSplitName('Model-Q4_K_M-00001-of-00003.gguf')).toEqual({
      prefix: 'Model-Q4_K_M',
      no: 1,
      count: 3,
      suffix: '',
    });
    expect(parseSplitName('/models/a-b/x-00002-of-00010.gguf')).toEqual({
      prefix: '/models/a-b/x',
      no: 2,
      count: 10,
      suffix: '',
    });
    expect(parseSplitName('https://hf.co/o/r/resolve/main/M-00003-of-00003.gguf?download=true#frag')).toEqual(
      { prefix: 'https://hf.co/o/r/resolve/main/M', no: 3, count: 3, suffix: '?download=true#frag' },
    );
    expect(parseSplitName('blob:x/M-00001-of-00002.gguf#p')?.suffix).toBe('#p');
    // the prefix may itself look like a split name
    expect(parseSplitName('a-00001-of-00002.gguf-00002-of-00002.gguf')?.prefix).toBe('a-00001-of-00002.gguf');
  });

  it('rejects names that are not split parts, or impossible numbers', () => {
    for (const n of [
      'model.gguf',
      'M-1-of-3.gguf',
      'M-00001-of-00003.GGUF',
      'M-00001-of-00003.gguf.part',
      '-00001-of-00003.gguf',
      'M-00000-of-00003.gguf',
      'M-00004-of-00003.gguf',
      'M-00001-of-00000.gguf',
      'M-00001-of-99999.gguf',
      'https://h/M-00001-of-00003.bin?x=y.gguf',
    ]) {
      expect(parseSplitName(n), n).toBeUndefined();
    }
  });

  it('names siblings (1-based, zero-padded to 5, query kept)', () => {
    expect(splitFileName('dir/M', 1, 3)).toBe('dir/M-00001-of-00003.gguf');
    expect(splitFileName('M', 12, 123)).toBe('M-00012-of-00123.gguf');
    expect(splitPartName('M-00001-of-00003.gguf', 3, 3)).toBe('M-00003-of-00003.gguf');
    expect(splitPartName('C:\\m\\M-00001-of-00003.gguf', 2, 3)).toBe('C:\\m\\M-00002-of-00003.gguf');
    expect(splitPartName('https://h/x/M-00001-of-00003.gguf?download=true', 2, 3)).toBe(
      'https://h/x/M-00002-of-00003.gguf?download=true',
    );
    expect(splitPartName('https://h/x/M-00002-of-00003.gguf', 1, 3)).toBe(
      'https://h/x/M-00001-of-00003.gguf',
    );
  });

  it('refuses a first name without the pattern, a different count, and bad numbers', () => {
    expect(code(() => splitPartName('model.gguf', 2, 3))).toMatch(
      /^invalid_argument: model\.gguf .*NAME-00001-of-00003\.gguf/,
    );
    expect(code(() => splitPartName('M-00001-of-00004.gguf', 2, 3))).toMatch(
      /^invalid_argument: .*4 parts.*says 3/,
    );
    expect(code(() => splitPartName('M-00001-of-00003.gguf', 0, 3))).toMatch(/^invalid_argument/);
    expect(code(() => splitPartName('M-00001-of-00003.gguf', 4, 3))).toMatch(/^invalid_argument/);
    expect(code(() => splitFileName('M', 1, 65536))).toMatch(/^invalid_argument/);
  });
});

// ---------------------------------------------------------------------------------------------------

let original: OpenedGgufFile;
let originalData: Map<string, Uint8Array>;
let inputs: GgufTensorInput[];
let dir: string;

beforeAll(async () => {
  original = await openGguf({ path: STORIES_PATH });
  originalData = (await collectTensorData(original)).data;
  inputs = [...original.tensors.values()].map((t) => ({
    name: t.name,
    type: t.type,
    shape: t.shape,
    data: originalData.get(t.name)!,
  }));
  dir = mkdtempSync(join(tmpdir(), 'gguf-split-'));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function splitStories(opts: SplitOpts) {
  return writeSplitGguf({ metadata: metadataEntriesFrom(original), tensors: inputs, ...opts });
}

/** Writes parts as PREFIX-0000k-of-0000N.gguf in the temp dir; returns the first part's path. */
function save(prefix: string, parts: readonly Uint8Array[]): string {
  parts.forEach((b, i) => {
    writeFileSync(splitFileName(join(dir, prefix), i + 1, parts.length), b);
  });
  return splitFileName(join(dir, prefix), 1, parts.length);
}

/** What the engine does: open the first part, then the siblings by name. */
async function openSplitPath(firstPath: string): Promise<OpenedGgufFile> {
  const first = await openGguf({ path: firstPath });
  const n = Number(first.metadata['split.count'] ?? 1);
  return openSplitGguf(first, (no) => openGguf({ path: splitPartName(firstPath, no, n) }));
}

describe('writeSplitGguf (the layout llama-gguf-split writes)', () => {
  it('3 parts of 16 tensors: all metadata + split keys in part 1, only split keys in the others', () => {
    const parts = splitStories({ maxTensorsPerPart: 16 });
    expect(parts.length).toBe(3);
    const headers = parts.map(parseHeaderIndependently);
    const names = [...original.tensors.keys()];
    headers.forEach((h, i) => {
      expect(h.version).toBe(3);
      expect(h.tensors.map((t) => t.name)).toEqual(names.slice(16 * i, 16 * (i + 1)));
      // gguf_set_val_* appends; split.count is set a second time once the part count is known
      const tail = [...h.kv.entries()].slice(-3);
      expect(tail).toEqual([
        ['split.no', { type: 2, value: i }],
        ['split.tensors.count', { type: 5, value: 48 }],
        ['split.count', { type: 2, value: 3 }],
      ]);
      // data offsets: 0, then each tensor padded to 32
      let off = 0;
      for (const t of h.tensors) {
        expect(t.offset).toBe(off);
        off += Math.ceil(original.tensors.get(t.name)!.nBytes / 32) * 32;
      }
      expect(parts[i].length).toBe(h.dataOffset + off);
    });
    expect([...headers[0].kv.keys()]).toEqual([
      ...Object.keys(original.metadata),
      'split.no',
      'split.tensors.count',
      'split.count',
    ]);
    expect(headers[1].kv.size).toBe(3);
    expect(headers[2].kv.size).toBe(3);
  });

  it('is byte-identical to llama-gguf-split (sha256 of its parts, three ways of splitting)', () => {
    // llama.cpp's tools/gguf-split/gguf-split.cpp at node-llama-cpp 3.21.1's bundled llama.cpp
    // (node_modules/node-llama-cpp/llama/gitRelease.bundle), run on ../shared/models/stories260K.gguf.
    for (const [opts, hashes] of LLAMA_GGUF_SPLIT_SHA256) {
      expect(splitStories(opts).map(sha256), JSON.stringify(opts)).toEqual(hashes);
    }
  });

  it('groups as gguf-split: by tensor count, by size, an empty first part; nParts spreads evenly', () => {
    const counts = (p: Uint8Array[]) => p.map((b) => parseHeaderIndependently(b).tensors.length);
    expect(counts(splitStories({}))).toEqual([48]); // default 128 per part
    expect(counts(splitStories({ maxTensorsPerPart: 20 }))).toEqual([20, 20, 8]);
    expect(counts(splitStories({ maxTensorsPerPart: 20, noTensorsInFirstPart: true }))).toEqual([
      0, 20, 20, 8,
    ]);
    expect(counts(splitStories({ nParts: 5 }))).toEqual([9, 10, 9, 10, 10]);
    expect(counts(splitStories({ nParts: 3, noTensorsInFirstPart: true }))).toEqual([0, 24, 24]);
    // token_embd (131,072 B) + output_norm (256) fit 140,000; output (131,072) starts part 2, …
    const bySize = counts(splitStories({ maxBytesPerPart: 140_000 }));
    expect(bySize[0]).toBe(2);
    expect(bySize.reduce((a, b) => a + b, 0)).toBe(48);
  });

  it('refuses impossible options', async () => {
    expect(code(() => splitStories({ nParts: 2, maxTensorsPerPart: 3 }))).toMatch(
      /^invalid_argument: give at most/,
    );
    expect(code(() => splitStories({ nParts: 49 }))).toMatch(/^invalid_argument: 48 tensors cannot fill 49/);
    expect(code(() => splitStories({ maxTensorsPerPart: 0 }))).toMatch(/^invalid_argument/);
    expect(code(() => splitStories({ maxBytesPerPart: 1000 }))).toMatch(
      /^invalid_argument: tensor 0 does not fit/,
    );
    expect(code(() => splitStories({ tensors: [inputs[0], inputs[0]] }))).toMatch(/appears twice/);
  });
});

describe('openSplitGguf on stories260K split in 3', () => {
  let merged: OpenedGgufFile;
  let firstPath: string;
  let partSizes: number[];

  beforeAll(async () => {
    const parts = splitStories({ nParts: 3 });
    partSizes = parts.map((p) => p.length);
    firstPath = save('stories260K', parts);
    merged = await openSplitPath(firstPath);
  });

  it('has the original metadata (plus split.*) and tensors, in order, with their parts', () => {
    const { 'split.no': no, 'split.count': count, 'split.tensors.count': n, ...rest } = merged.metadata;
    expect([no, count, n]).toEqual([0, 3, 48]);
    expect(rest).toEqual(original.metadata);
    expect(merged.metadataTypes['split.count']).toEqual({ type: 2 });
    expect([...merged.tensors.keys()]).toEqual([...original.tensors.keys()]);
    for (const [name, t] of merged.tensors) {
      const o = original.tensors.get(name)!;
      expect({ type: t.type, typeName: t.typeName, shape: t.shape, nBytes: t.nBytes }).toEqual({
        type: o.type,
        typeName: o.typeName,
        shape: o.shape,
        nBytes: o.nBytes,
      });
    }
    expect([...merged.tensors.values()].map((t) => t.part)).toEqual([
      ...Array(16).fill(0),
      ...Array(16).fill(1),
      ...Array(16).fill(2),
    ]);
    // fileOffset stays within its own part
    const t = merged.tensors.get('blk.2.attn_q.weight')!;
    expect(t.part).toBe(1);
    expect(t.fileOffset).toBe((merged as SplitGgufFile).parts[1].tensors.get(t.name)!.fileOffset);
    expect(merged.fileSize).toBe(partSizes.reduce((a, b) => a + b, 0));
    expect(partSizes.map((_, i) => statSync(splitFileName(join(dir, 'stories260K'), i + 1, 3)).size)).toEqual(
      partSizes,
    );
    expect(merged.sourceName).toBe(firstPath);
    expect((merged as SplitGgufFile).parts.length).toBe(3);
  });

  it('streams byte-identical tensor data, in order, with onBytes counting across the parts', async () => {
    const seen: string[] = [];
    const progress: [number, number][] = [];
    const data = new Map<string, Uint8Array>();
    await merged.streamTensorData(
      (c) => {
        if (seen.at(-1) !== c.tensor.name) seen.push(c.tensor.name);
        expect(c.tensor).toBe(merged.tensors.get(c.tensor.name));
        const buf = data.get(c.tensor.name) ?? new Uint8Array(c.tensor.nBytes);
        buf.set(c.bytes, c.offset);
        data.set(c.tensor.name, buf);
      },
      { chunkBytes: 50_000, onBytes: (d, t) => progress.push([d, t]) },
    );
    expect(seen).toEqual([...original.tensors.keys()]);
    for (const [name, bytes] of originalData) expect(sha256(data.get(name)!), name).toBe(sha256(bytes));
    const total = progress[0][1];
    expect(progress.every(([, t]) => t === total)).toBe(true);
    expect(progress.every(([d], i) => i === 0 || d >= progress[i - 1][0])).toBe(true);
    expect(progress.at(-1)![0]).toBe(total);
    // each part's data section, to the end of its last tensor
    const parts = (merged as SplitGgufFile).parts;
    const ends = parts.map((p) => Math.max(...[...p.tensors.values()].map((t) => t.fileOffset + t.nBytes)));
    expect(total).toBe(parts.reduce((s, p, i) => s + ends[i] - p.dataOffset, 0));
  });

  it('gives the same float64 reference logits as the single file', async () => {
    const a = await ReferenceLlama.fromGguf(original);
    const b = await ReferenceLlama.fromGguf(merged);
    const prompt = [1, 403, 407, 261, 378];
    const la = a.run(prompt);
    const lb = b.run(prompt);
    for (let i = 0; i < prompt.length; i++) expect(Array.from(lb[i])).toEqual(Array.from(la[i]));
    expect(argmax(lb.at(-1)!)).toBe(432);
  });

  it('llama.cpp (node-llama-cpp) loads our parts from the first and generates the same greedy tokens', async () => {
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const greedy = async (modelPath: string) => {
      const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
      const ctx = await model.createContext({ contextSize: 64, batchSize: 64, sequences: 1, threads: 1 });
      const seq = ctx.getSequence();
      let input = [1, 403, 407, 261, 378];
      const out: number[] = [];
      for (let i = 0; i < 24; i++) {
        const res = await seq.controlledEvaluate(
          input.map((t, j) =>
            j === input.length - 1 ? [t, { generateNext: { token: true, options: { temperature: 0 } } }] : t,
          ) as Parameters<typeof seq.controlledEvaluate>[0],
        );
        const next = res[input.length - 1]?.next?.token;
        if (next == null) throw new Error('no token');
        out.push(next);
        input = [next];
      }
      await ctx.dispose();
      await model.dispose();
      return out;
    };
    try {
      const single = await greedy(STORIES_PATH);
      // the README's reference continuation (scripts/golden.ts)
      expect(single.slice(0, 8)).toEqual([432, 383, 286, 261, 376, 298, 315, 421]);
      expect(await greedy(firstPath)).toEqual(single);
    } finally {
      await llama.dispose();
    }
  });

  it('gives a file without split keys, or with split.count 0 or 1, back unchanged', async () => {
    let called = false;
    const open = async () => {
      called = true;
      return original;
    };
    expect(await openSplitGguf(original, open)).toBe(original);
    const one = await openGguf({ blob: new Blob([splitStories({})[0] as Uint8Array<ArrayBuffer>]) });
    expect(one.metadata['split.count']).toBe(1);
    expect(await openSplitGguf(one, open)).toBe(one);
    const merged0 = writeGguf({
      metadata: [...metadataEntriesFrom(original), kv.u16('split.no', 0), kv.u16('split.count', 0)],
      tensors: inputs,
    });
    const m0 = await openGguf({ blob: new Blob([merged0 as Uint8Array<ArrayBuffer>]) });
    expect(await openSplitGguf(m0, open)).toBe(m0);
    expect(called).toBe(false);
  });

  it('opens an empty first part (--no-tensor-first-split)', async () => {
    const p = save('empty-first', splitStories({ nParts: 3, noTensorsInFirstPart: true }));
    const m = await openSplitPath(p);
    expect((m as SplitGgufFile).parts[0].tensors.size).toBe(0);
    const { data } = await collectTensorData(m);
    for (const [name, bytes] of originalData) expect(sha256(data.get(name)!), name).toBe(sha256(bytes));
  });

  it('over HTTP: siblings by URL with the query kept; a 404 part is named with its code', async () => {
    const parts = splitStories({ nParts: 3 });
    const server = await startServer({
      '/m/S-00001-of-00003.gguf': { body: parts[0] },
      '/m/S-00002-of-00003.gguf': { body: parts[1] },
      '/m/S-00003-of-00003.gguf': { body: parts[2] },
      '/n/S-00001-of-00003.gguf': { body: parts[0] },
      '/n/S-00002-of-00003.gguf': { body: parts[1] },
    });
    try {
      const open = async (url: string) => {
        const first = await openGguf({ url });
        return openSplitGguf(first, (no) => openGguf({ url: splitPartName(url, no, 3) }));
      };
      const m = await open(server.url('/m/S-00001-of-00003.gguf?download=true'));
      expect(m.tensors.size).toBe(48);
      expect(server.requests.some((r) => r.path === '/m/S-00003-of-00003.gguf')).toBe(true);
      const { data } = await collectTensorData(m);
      expect(sha256(data.get('blk.4.ffn_norm.weight')!)).toBe(
        sha256(originalData.get('blk.4.ffn_norm.weight')!),
      );

      const e = await errorOf(open(server.url('/n/S-00001-of-00003.gguf')));
      expect(e.code).toBe('http_status');
      expect(e.message).toMatch(
        /^split part 3 of 3 is missing: http:\/\/127\.0\.0\.1:\d+\/n\/S-00003-of-00003\.gguf was not found \(HTTP 404\); a split model needs all 3 parts/,
      );
    } finally {
      await server.close();
    }
  });
});

describe('openSplitGguf errors name the part', () => {
  let parts3: Uint8Array[];
  beforeAll(() => {
    parts3 = splitStories({ nParts: 3 });
  });

  /** Opens `parts` (bytes) as a split through blobs named like files. */
  async function openBlobs(parts: readonly Uint8Array[], names?: string[], n = 3) {
    const nameOf = (i: number) => names?.[i] ?? splitFileName('M', i + 1, n);
    const blobOf = (i: number) => ({
      blob: new Blob([parts[i] as Uint8Array<ArrayBuffer>]),
      name: nameOf(i),
    });
    const first = await openGguf(blobOf(0));
    return openSplitGguf(first, async (no) => {
      if (no > parts.length)
        throw new EngineError('invalid_argument', `${splitFileName('M', no, n)}: no such file`);
      return openGguf(blobOf(no - 1));
    });
  }

  it('a missing part file', async () => {
    const p = save('missing', parts3);
    rmSync(splitFileName(join(dir, 'missing'), 2, 3));
    const e = await errorOf(openSplitPath(p));
    expect(e.code).toBe('invalid_argument');
    expect(e.message).toMatch(
      /^split part 2 of 3 is missing: \S*missing-00002-of-00003\.gguf was not found \(no such file\)/,
    );
    expect(e.cause).toBeInstanceOf(EngineError);
  });

  it('a part from a split into another number of parts', async () => {
    const parts4 = splitStories({ nParts: 4 });
    const e = await errorOf(openBlobs([parts3[0], parts4[1], parts3[2]]));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toBe(
      'part 2 of 3 (M-00002-of-00003.gguf) belongs to a split into 4 parts (split.count = 4), not 3: it is not a part of the same model',
    );
  });

  it('parts in the wrong order, and a first file that is not the first part', async () => {
    const e = await errorOf(openBlobs([parts3[0], parts3[2], parts3[1]]));
    expect(e.message).toBe(
      'part 2 of 3 (M-00002-of-00003.gguf) says it is part 3 (split.no = 2, expected 1)',
    );
    const f = await errorOf(openBlobs([parts3[1], parts3[0], parts3[2]], ['M-00002-of-00003.gguf']));
    expect(f.code).toBe('gguf_invalid');
    expect(f.message).toBe(
      'M-00002-of-00003.gguf is part 2 of 3 of a split model (split.no = 1); load the model from its first part (M-00001-of-00003.gguf)',
    );
  });

  it('a duplicated tensor', async () => {
    const splitKeys = (no: number) => [
      kv.u16('split.no', no),
      kv.i32('split.tensors.count', 48),
      kv.u16('split.count', 3),
    ];
    // part 3 repeats part 2's last tensor instead of holding its own first one
    const p3 = writeGguf({ metadata: splitKeys(2), tensors: [inputs[31], ...inputs.slice(33)] });
    const e = await errorOf(openBlobs([parts3[0], parts3[1], p3]));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toBe(
      `part 3 of 3 (M-00003-of-00003.gguf) has tensor ${inputs[31].name}, which part 2 also has (the parts are not one model)`,
    );
  });

  it('a wrong split.tensors.count, and a part missing a tensor', async () => {
    const keys = (no: number, n: number) => [
      kv.u16('split.no', no),
      kv.i32('split.tensors.count', n),
      kv.u16('split.count', 3),
    ];
    const p3other = writeGguf({ metadata: keys(2, 47), tensors: inputs.slice(32) });
    const e = await errorOf(openBlobs([parts3[0], parts3[1], p3other]));
    expect(e.code).toBe('gguf_invalid');
    expect(e.message).toMatch(
      /^part 3 of 3 \(M-00003-of-00003\.gguf\) belongs to a model of 47 tensors .*says 48/,
    );

    const p3short = writeGguf({ metadata: keys(2, 48), tensors: inputs.slice(33) });
    const f = await errorOf(openBlobs([parts3[0], parts3[1], p3short]));
    expect(f.code).toBe('gguf_invalid');
    expect(f.message).toBe(
      'M-00001-of-00003.gguf: the 3 parts hold 47 tensors (part 1: 16, part 2: 16, part 3: 15) but ' +
        'split.tensors.count says 48: tensors are missing (a part is damaged or from another model)',
    );
  });

  it('a file that is not a split part, a first part without split.tensors.count, a truncated part', async () => {
    const e = await errorOf(
      openBlobs([parts3[0], writeGguf({ metadata: [], tensors: inputs.slice(16, 32) }), parts3[2]]),
    );
    expect(e.message).toBe(
      'part 2 of 3 (M-00002-of-00003.gguf) is not part of a split model (it has no split.no / split.count)',
    );

    const noCount = writeGguf({
      metadata: [...metadataEntriesFrom(original), kv.u16('split.no', 0), kv.u16('split.count', 3)],
      tensors: inputs.slice(0, 16),
    });
    const f = await errorOf(openBlobs([noCount, parts3[1], parts3[2]]));
    expect(f.message).toMatch(/has no split\.tensors\.count/);

    const g = await errorOf(openBlobs([parts3[0], parts3[1].subarray(0, 100), parts3[2]]));
    expect(g.code).toBe('gguf_invalid');
    expect(g.message).toMatch(/^split part 2 of 3 \(M-00002-of-00003\.gguf\): .*truncated/);
  });

  it('a part missing from the list, a non-EngineError, and an abort', async () => {
    const e = await errorOf(openBlobs([parts3[0], parts3[1]]));
    expect(e.message).toMatch(
      /^split part 3 of 3 is missing: M-00003-of-00003\.gguf was not found \(no such file\); a split model needs all 3 parts/,
    );
    expect(e.code).toBe('invalid_argument');

    const first = await openGguf({ blob: new Blob([parts3[0] as Uint8Array<ArrayBuffer>]), name: 'x.gguf' });
    const t = await errorOf(
      openSplitGguf(first, async () => {
        throw new TypeError('boom');
      }),
    );
    expect(t.code).toBe('invalid_argument');
    expect(t.message).toBe('split part 2 of 3 (part 2): boom');

    const named = await errorOf(
      openSplitGguf(
        first,
        async () => {
          throw new EngineError('network', 'connection reset');
        },
        { partName: (no) => `shard #${no}` },
      ),
    );
    expect(named.code).toBe('network');
    expect(named.message).toBe('split part 2 of 3 (shard #2): connection reset');

    const ctl = new AbortController();
    ctl.abort();
    const a = await errorOf(openSplitGguf(first, async () => original, { signal: ctl.signal }));
    expect(a.code).toBe('aborted');
  });
});

/** sha256 of llama-gguf-split's parts of stories260K.gguf, with the options that match its flags. */
const LLAMA_GGUF_SPLIT_SHA256: [SplitOpts, string[]][] = [
  [
    // llama-gguf-split --split-max-tensors 16 stories260K.gguf out
    { maxTensorsPerPart: 16 },
    [
      'c252e9461f6e3a172171674d3a8dcbca0ca8e24cc79cf6b2da8436d4c366f1e8',
      '409dfd1d598f8cdeb35150d43af8795cc6067876891ca0245a180da259f0bc39',
      '2247769163c62dbba2866836395b07b8cc09b721ef007da3b552fc0173052b74',
    ],
  ],
  [
    // llama-gguf-split --split-max-size 1M stories260K.gguf sz   (1M = 1,000,000 bytes)
    { maxBytesPerPart: 1_000_000 },
    [
      '7b273e1dbfab11dc67dce479deb5923fef27c39cbf56a20b3a928a47b77dab3c',
      '50d019817c2626eb9e8a41f361ff5bfa538757e6f708a3076cd3356354a75694',
    ],
  ],
  [
    // llama-gguf-split --split-max-tensors 20 --no-tensor-first-split stories260K.gguf nt
    { maxTensorsPerPart: 20, noTensorsInFirstPart: true },
    [
      'bca66d2dd075e6186cd4fbbec5536cafc6f7a0d6a50a6c239181a8b1e6511fcb',
      '8b6d7a36c77a5089c5436ceafa4a5cf86f020a64f7200f6abe56b7af26e737db',
      '1a4a6e8a1bf3dd9ddd3575f3378998382da0d3418ec749c59ec41f73d6ce0f94',
      '2310aa24574043a2a398464c5c245aadfcb39183ff96ba0a9fac2dbd7a73a766',
    ],
  ],
];
