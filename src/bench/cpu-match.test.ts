/**
 * The CPU match's reference: llama.cpp's greedy tokens (node-llama-cpp), run in a child process, equal
 * the golden continuation; a file llama.cpp aborts on (issue 47, item 8: a vocabulary of empty or equal
 * tokens, std::out_of_range / GGML_ASSERT, exit 134) gives the reason instead of ending the benchmark.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { openGguf } from '../gguf/reader.ts';
import { kv, metadataEntriesFrom, writeGguf } from '../gguf/writer.ts';
import { collectTensorData } from '../testing/gguf-util.ts';
import { stories260kPath } from '../testing/models.ts';
import { cpuMatch, llamaCppGreedyIsolated } from './cpu-match.ts';

const MODEL = stories260kPath();

describe('CPU match (llama.cpp greedy as the reference)', () => {
  it('llama.cpp greedy equals the golden continuation, and a perfect top-1 list scores 1', async () => {
    const c = golden.generation.cases[0];
    const r = await llamaCppGreedyIsolated(MODEL, c.promptIds, 16);
    if (!r.ok) throw new Error(r.reason);
    const ref = r.ref;
    expect(ref.outputIds).toEqual(c.outputIds.slice(0, 16));
    expect(ref.engine).toMatch(/llama\.cpp \(node-llama-cpp 3\.21\.1/);
    const top1 = [...c.promptIds.slice(1), ...ref.outputIds]; // top-1 after each position = the next token
    expect(cpuMatch(ref, top1)).toBe(1);
    const off = top1.slice();
    off[c.promptIds.length - 1 + 3] = 0; // one wrong position of 16
    expect(cpuMatch(ref, off)).toBeCloseTo(15 / 16, 12);
  }, 60_000);

  it('a file llama.cpp aborts on (every token "" or "a") gives the reason; this process goes on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpu-match-'));
    try {
      const file = await openGguf({ path: MODEL });
      const { data } = await collectTensorData(file);
      const tensors = [...file.tensors.values()].map((t) => ({
        name: t.name,
        type: t.type,
        shape: t.shape,
        data: data.get(t.name) as Uint8Array,
      }));
      const n = (file.metadata['tokenizer.ggml.tokens'] as string[]).length;
      for (const [token, said] of [
        ['', /_Map_base::at|out_of_range/],
        ['a', /GGML_ASSERT\(id_to_token\.size\(\) == token_to_id\.size\(\)\)|out_of_range/],
      ] as const) {
        const metadata = metadataEntriesFrom(file).map((e) =>
          e.key === 'tokenizer.ggml.tokens' ? kv.strings(e.key, Array(n).fill(token)) : e,
        );
        const path = join(dir, `tokens-${token || 'empty'}.gguf`);
        writeFileSync(path, writeGguf({ metadata, tensors }));
        const r = await llamaCppGreedyIsolated(path, [1, 2, 3], 4);
        expect(r.ok, JSON.stringify(r)).toBe(false);
        const reason = (r as { reason: string }).reason;
        expect(reason).toMatch(/^llama\.cpp crashed on this file \(its process was killed by SIGABRT: /);
        expect(reason).toMatch(said);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
