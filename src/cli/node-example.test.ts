/**
 * docs/openai-api.md's "In Node" example, run as it stands (`tsx`, from the repository's root): our
 * engine through Dawn on stories260K, behind withOpenAI; its greedy answer must be llama.cpp's
 * (tests/golden) and its usage the tokens it counted.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import golden from '../../tests/golden/stories260K.json';
import { openGguf } from '../gguf/reader.ts';
import { createTokenizer } from '../model/tokenizer/index.ts';
import { stories260kPath } from '../testing/models.ts';

const ROOT = resolve(import.meta.dirname, '../..');

it("docs/openai-api.md's Node example runs as pasted and answers with llama.cpp's greedy tokens", async () => {
  const doc = readFileSync(resolve(ROOT, 'docs/openai-api.md'), 'utf8');
  const block = /<!-- node-example[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(doc)?.[1];
  expect(block, 'docs/openai-api.md has no node-example block').toBeDefined();
  const model = 'models/stories260K.gguf';
  expect(block).toContain(`path: '${model}'`);
  const r = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', block as string],
    { cwd: ROOT, timeout: 120_000 },
  );
  // llama.cpp's greedy tokens for this prompt (no chat template: the content is the prompt), 16 of them.
  const c = golden.generation.cases.find((x) => x.prompt === 'Once upon a time');
  expect(c, 'tests/golden/stories260K.json has "Once upon a time"').toBeDefined();
  const tok = createTokenizer((await openGguf({ path: stories260kPath() })).metadata);
  const want = tok.decode((c?.outputIds ?? []).slice(0, 16));
  expect(want.length).toBeGreaterThan(20);
  expect(r.stdout.startsWith(`${want} {`), r.stdout).toBe(true);
  expect(r.stdout).toContain(
    `{ prompt_tokens: ${c?.promptIds.length}, completion_tokens: 16, total_tokens: ${(c?.promptIds.length ?? 0) + 16} }`,
  );
});
