/**
 * `npm run generate` as a user runs it, in both runtimes: the JSON output equals llama.cpp's greedy
 * tokens (tests/golden), the streamed text is printed, and bad input exits non-zero with the error code.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { openGguf } from '../gguf/reader.ts';
import { splitFileName } from '../gguf/split.ts';
import { makeRandomLlamaGguf } from '../model/random-model.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { splitParts, startModelServer, testModelFiles } from '../testing/library-server.ts';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';

/** Temporary directories, all removed after this file's tests. */
const tempDir = useTempDirs();

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = stories260kPath();
const run = promisify(execFile);

/** `npm run generate` spawned, as a user runs it. */
async function generate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli/generate.ts', ...args], {
      cwd: ROOT,
      timeout: 120_000,
    });
    return { code: 0, ...r };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

/**
 * The same in this process (src/testing/cli-in-process.ts), for errors raised before any model loads: a
 * spawned `tsx` costs seconds of CI's 90 minutes each; src/cli/usage.test.ts spawns generate's usage errors.
 */
const generateInProcess = (args: string[]) => runCliInProcess('generate', args);

describe('npm run generate', () => {
  const c = golden.generation.cases[0];
  it.each(['browser', 'node'])(
    'runtime %s: greedy tokens equal llama.cpp and --json has the documented shape',
    async (runtime) => {
      const out = join(tempDir('gen-'), 'out.json');
      const r = await generate([
        '--runtime',
        runtime,
        '--model',
        MODEL,
        '--prompt',
        c.prompt,
        '--max-tokens',
        '24',
        // Above stories260K's 2048: capped, and since issue 47 said so (llama.cpp warns too).
        '--ctx',
        '100000',
        '--json',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(
        "note: --ctx 100000 is above the model's training context, so the context is 2048 tokens",
      );
      const j = JSON.parse(readFileSync(out, 'utf8'));
      expect(Object.keys(j).sort()).toEqual(['finishReason', 'outputTokenIds', 'promptTokenIds', 'text']);
      expect(j.finishReason).toBe('length');
      expect(j.promptTokenIds).toEqual(c.promptIds);
      expect(j.outputTokenIds).toEqual(c.outputIds.slice(0, 24));
      // stdout is the text only; llama-cli's timing summary closes stderr, counting the tokens it ran.
      expect(r.stdout).toBe(`${j.text}\n`);
      // The load is never silent: what loads, its phases, what was loaded, on stderr (issue 46, item 7).
      expect(r.stderr).toMatch(new RegExp(`^generate: loading .* \\(runtime ${runtime}`, 'm'));
      expect(r.stderr).toMatch(/^generate: {3}.*compile \d+\/\d+ pipelines/m);
      expect(r.stderr).toMatch(/^generate: loaded llama: 5 layers/m);
      const n = j.outputTokenIds.length;
      const p = j.promptTokenIds.length;
      const num = String.raw`\s*\d+\.\d\d`;
      expect(r.stderr).toMatch(
        new RegExp(
          String.raw`prompt eval time =${num} ms /\s+${p} tokens \(${num} ms per token,${num} tokens per second\)\n` +
            String.raw` {7}eval time =${num} ms /\s+${n - 1} tokens \(${num} ms per token,${num} tokens per second\)\n` +
            String.raw` {6}total time =${num} ms /\s+${p + n} tokens\n$`,
        ),
      );
      // The figures are the engine's, consistent with each other: prompt eval + eval = total.
      const ms = [...r.stderr.matchAll(/time =\s*(\d+\.\d\d) ms/g)].map((m) => Number(m[1]));
      expect(ms).toHaveLength(3);
      expect(ms[0] + ms[1]).toBeCloseTo(ms[2], 1);
      expect(ms[1]).toBeGreaterThan(0);
    },
  );

  it('--json-schema: the answer is JSON valid against the schema; --grammar with it is a usage error', async () => {
    const dir = tempDir('gen-schema-');
    const schemaFile = join(dir, 'schema.json');
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 6 },
        age: { type: 'integer', minimum: 0, maximum: 99 },
      },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    writeFileSync(schemaFile, JSON.stringify(schema));
    const r = await generate([
      '--runtime',
      'node',
      '--model',
      MODEL,
      '--prompt',
      c.prompt,
      '--max-tokens',
      '60',
      '--json-schema',
      schemaFile,
      '--json',
      join(dir, 'out.json'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    // The value ended the answer: finish reason "stop", and the result file says it is whole.
    const j = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8'));
    expect([j.finishReason, j.formatComplete, `${j.text}\n`]).toEqual(['stop', true, r.stdout]);
    const v = JSON.parse(r.stdout);
    expect(Object.keys(v).sort()).toEqual(['age', 'name']);
    expect(Number.isInteger(v.age) && v.age >= 0 && v.age <= 99 && v.name.length <= 6, r.stdout).toBe(true);
    // --grammar (engine-grammar.browser.test.ts runs grammars): a usage error with both, before any load.
    const grammarFile = join(dir, 'one.gbnf');
    writeFileSync(grammarFile, 'root ::= "Tim"\n');
    const both = await generateInProcess([
      '--model',
      MODEL,
      '--prompt',
      'x',
      '--grammar',
      grammarFile,
      '--json-schema',
      schemaFile,
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give --json-schema or --grammar, not both/);
  }, 180_000);

  it('--grammar cut by --max-tokens: a note when the text is whole for the grammar, a warning when it does not parse', async () => {
    const dir = tempDir('gen-grammar-');
    const grammarFile = join(dir, 'yes.gbnf');
    writeFileSync(grammarFile, 'root ::= ("yes" | "no") " " [0-9]+\n');
    const args = ['--runtime', 'node', '--model', MODEL, '--prompt', 'Tell me', '--grammar', grammarFile];
    const out = join(dir, 'out.json');
    const result = () => JSON.parse(readFileSync(out, 'utf8'));
    const whole = await generate([...args, '--max-tokens', '12', '--json', out]);
    expect([result().finishReason, result().formatComplete]).toEqual(['length', true]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).toMatch(/^(yes|no) [0-9]+\n$/);
    expect(whole.stderr).toMatch(
      /note: the answer reached 12 tokens \(finish reason "length"\); it is a whole grammar as it stands, though the grammar would allow it to go on/,
    );
    expect(whole.stderr).not.toMatch(/warning/);
    const cut = await generate([...args, '--max-tokens', '1', '--json', out]);
    expect(cut.code, cut.stderr).toBe(0);
    expect([result().finishReason, result().formatComplete]).toEqual(['length', false]);
    expect(cut.stdout).not.toMatch(/^(yes|no) [0-9]/);
    expect(cut.stderr).toMatch(
      /warning: the answer was cut after 1 tokens, before the grammar was complete: it does not parse/,
    );
  }, 180_000);

  it('refuses a prompt longer than the context before loading anything (no Chromium, no Dawn)', async () => {
    // The default runtime (browser): refused before Chromium starts.
    const r = await generateInProcess([
      '--model',
      MODEL,
      '--prompt',
      'Once upon a time '.repeat(100),
      '--ctx',
      '64',
    ]);
    expect(r.code).toBe(1);
    // The exact count from the file's tokenizer (it said "at least 244", the bound from 1,700 characters).
    const tok = createTokenizer((await openGguf({ path: MODEL })).metadata);
    const exact = tok.encode('Once upon a time '.repeat(100), { addBos: tok.addBos }).length;
    expect(exact).toBeGreaterThan(244);
    expect(r.stderr).toContain(
      `error [context_overflow]: the prompt needs ${exact} tokens but the context holds 64 (and one must be left for the answer); shorten the prompt or pass a larger --ctx\n`,
    );
    expect(r.stderr).not.toContain('contextLength');
    expect(r.stderr).not.toContain('generate: loading');
    // Past 1 Mi characters it is refused from its length alone, before tokenizing (issue 47, item 9):
    // 1,190,000 characters, at most 7 per token, and the BOS.
    const huge = await generateInProcess(['--model', MODEL, '--prompt', 'Once upon a time '.repeat(70_000)]);
    expect(huge.code).toBe(1);
    expect(huge.stderr).toMatch(
      /error \[context_overflow\]: the prompt needs at least 170001 tokens but the context holds 2048 /,
    );
    // Within the character bound (a golden prompt of 58 characters: at least 10 tokens) but as many tokens as
    // llama.cpp counts for it (26 with the BOS): the file's tokenizer refuses it, before the load.
    const g = golden.generation.cases.find((x) => x.prompt.includes('🌳'));
    if (!g) throw new Error('the golden prompt with 🌳 is missing');
    const n = g.promptIds.length;
    for (const ctx of [n - 6, n]) {
      const t = await generateInProcess([
        '--runtime',
        'node',
        '--model',
        MODEL,
        '--prompt',
        g.prompt,
        '--ctx',
        `${ctx}`,
      ]);
      expect(t.code).toBe(1);
      expect(t.stderr).toContain(
        `error [context_overflow]: the prompt needs ${n} tokens but the context holds ${ctx} (and one must be left for the answer); shorten the prompt or pass a larger --ctx\n`,
      );
      expect(t.stderr).not.toContain('generate: loading');
    }
    // With no --ctx the context is the engine's default: min(trained, 2048), 2048 for stories260K; 8,840
    // characters (at least 1,264 tokens) that encode to more.
    const d = await generateInProcess(['--model', MODEL, '--prompt', 'Once upon a time '.repeat(520)]);
    expect(d.code).toBe(1);
    expect(d.stderr).toMatch(/the prompt needs \d{4} tokens but the context holds 2048 /);
    expect(d.stderr).not.toContain('generate: loading');
  });

  it("runtime node, a split model by URL: downloaded once into --cache-dir, llama.cpp's tokens both times", async () => {
    const host = await startModelServer(await testModelFiles());
    try {
      const cache = tempDir('gen-cache-');
      const args = ['--runtime', 'node', '--model', `${host.url}/range/stories260K-00001-of-00003.gguf`];
      const rest = ['--cache-dir', cache, '--prompt', c.prompt, '--max-tokens', '16'];
      for (const pass of [1, 2]) {
        host.reset();
        const out = join(tempDir('gen-'), 'out.json');
        const r = await generate([...args, ...rest, '--json', out]);
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(readFileSync(out, 'utf8')).outputTokenIds).toEqual(c.outputIds.slice(0, 16));
        if (pass === 1) expect(host.stats.bodyBytes).toBeGreaterThan(1_000_000);
        else {
          expect(host.stats.bodyBytes).toBe(0);
          expect(r.stderr).toMatch(/using the cached copy/);
        }
      }
    } finally {
      await host.close();
    }
  }, 180_000); // two CLI runs, each starting Node, Dawn and SwiftShader: 60 s was too tight on a loaded 2-core machine

  it('runtime browser: a split part that is a directory or an HTML file, in a folder with a space, is said as Node says it', async () => {
    // Issue 47: the page saw an HTTP 404 / "the server answered with an HTML page" and showed the path
    // as /tmp/my%20models/...; Node says "not a regular file" / "not a GGUF file" with the path as typed.
    const dir = join(tempDir('gen-split-'), 'my models');
    mkdirSync(dir);
    const parts = await splitParts(new Uint8Array(readFileSync(MODEL)), 3);
    for (const [i, p] of parts.entries()) writeFileSync(join(dir, splitFileName('st', i + 1, 3)), p);
    const part2 = join(dir, splitFileName('st', 2, 3));
    rmSync(part2);
    mkdirSync(part2);
    const args = ['--model', join(dir, splitFileName('st', 1, 3)), '--prompt', 'x', '--max-tokens', '2'];
    const asDir = await generate(args);
    expect(asDir.code, asDir.stderr).toBe(1);
    expect(asDir.stderr).toContain(
      `error [invalid_argument]: split part 2 of 3 (${part2}): cannot open model file ${part2}: not a regular file`,
    );
    rmSync(part2, { recursive: true });
    writeFileSync(part2, '<!doctype html><title>x</title>');
    const asHtml = await generate(args);
    expect(asHtml.stderr).toContain(
      `error [gguf_invalid]: split part 2 of 3 (${part2}): ${part2} is not a GGUF file`,
    );
    expect(asHtml.stderr + asDir.stderr).not.toContain('%20');
  }, 180_000);

  it('fails clearly for a missing file', async () => {
    const r = await generateInProcess(['--model', '/nonexistent/model.gguf', '--prompt', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\[invalid_argument\]: .*no such file/);
  });

  it('refuses a local draft of another vocabulary before loading anything, in the engine words', async () => {
    // A random model of stories260K's vocabulary size (512) whose word pieces differ, and one of 300.
    const dir = tempDir('gen-draft-');
    const other = join(dir, 'other.gguf');
    writeFileSync(
      other,
      makeRandomLlamaGguf({ seed: 7, nLayers: 1, nEmbd: 64, nFF: 96, nHead: 2, nVocab: 512 }),
    );
    const small = join(dir, 'small.gguf');
    writeFileSync(
      small,
      makeRandomLlamaGguf({ seed: 8, nLayers: 1, nEmbd: 64, nFF: 96, nHead: 2, nVocab: 300 }),
    );
    const texts = async (path: string) =>
      (await openGguf({ path })).metadata['tokenizer.ggml.tokens'] as string[];
    const mine = await texts(other);
    const theirs = await texts(MODEL);
    const at = theirs.findIndex((x, i) => x !== mine[i]);
    expect(at).toBeGreaterThan(0);
    const t0 = performance.now();
    const r = await generateInProcess(['--model', MODEL, '--draft', other, '--prompt', 'x']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `[invalid_argument]: the draft model's token ${at} is ${JSON.stringify(mine[at])} but the target's is ${JSON.stringify(theirs[at])}`,
    );
    // Nothing loaded: no load progress line, and well under a browser's start-up.
    expect(r.stderr).not.toContain('generate: loading');
    expect(performance.now() - t0).toBeLessThan(20_000);
    const r2 = await generateInProcess(['--model', MODEL, '--draft', small, '--prompt', 'x']);
    expect(r2.stderr).toContain("the draft model's vocabulary has 300 tokens but the target's has 512");
    expect(r2.stderr).not.toContain('generate: loading');
  }, 60_000);

  it("--draft: llama.cpp's greedy tokens, and the speculative counts in --json and on stderr", async () => {
    // (--lookup fills the same result fields: bench.test.ts runs it through the bench command.)
    const c = golden.generation.cases[0];
    const out = join(tempDir('gen-spec-'), 'out.json');
    const r = await generate([
      '--runtime',
      'node',
      '--model',
      MODEL,
      '--prompt',
      c.prompt,
      '--max-tokens',
      '24',
      // The model as its own draft: nearly every draft is the target's own token.
      '--draft',
      MODEL,
      '--draft-max',
      '3',
      '--json',
      out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(readFileSync(out, 'utf8'));
    expect(Object.keys(j).sort()).toEqual([
      'finishReason',
      'outputTokenIds',
      'promptTokenIds',
      'speculative',
      'text',
    ]);
    expect(j.outputTokenIds).toEqual(c.outputIds.slice(0, 24));
    const s = j.speculative as { drafted: number; accepted: number; targetPasses: number };
    expect(s.drafted).toBeGreaterThan(0);
    expect(s.accepted).toBeLessThanOrEqual(s.drafted);
    expect(s.accepted / s.drafted).toBeGreaterThan(0.9);
    // Each target pass after the prefill gives its accepted drafts and one token of its own (the last
    // pass may give more than --max-tokens needs): 23 tokens after the first in fewer passes.
    expect(s.targetPasses + s.accepted).toBeGreaterThanOrEqual(23);
    expect(s.targetPasses).toBeLessThan(23);
    expect(r.stderr).toContain(`speculative: ${s.accepted} of ${s.drafted} drafted tokens accepted (`);
    // Which draft was loaded is said beside the target's line: the --draft argument, then the model's name.
    expect(r.stderr).toContain(
      `\ngenerate: draft model ${MODEL} (llama): 5 layers, 1.17 MB of weights, beside it\n`,
    );
  }, 180_000);

  it('names the draft when the --draft file is missing', async () => {
    const r = await generateInProcess([
      '--model',
      stories260kPath(),
      '--draft',
      '/nonexistent/d.gguf',
      '--prompt',
      'x',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot open model file /nonexistent/d.gguf (--draft): no such file');
  });
});
