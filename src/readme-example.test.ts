/**
 * README's "OpenAI-shaped API" example and its compiled copy in `openai.test-d.ts` stay the same: the
 * README block without its import lines equals the test-d's body between the markers (dedented).
 * The README stays at most 400 lines, its docs/ links resolving.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

test("README's OpenAI-shaped example is the one openai.test-d.ts compiles", () => {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const m = /<!-- openai-example[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme);
  expect(m, 'README.md has no openai-example block').not.toBeNull();
  const block = (m?.[1] ?? '')
    .split('\n')
    .filter((l) => !l.startsWith('import '))
    .join('\n')
    .trim();
  const testD = readFileSync(resolve(ROOT, 'src/core/openai.test-d.ts'), 'utf8');
  const body = /\/\/ --- README example start ---\n([\s\S]*?)\n\s*\/\/ --- README example end ---/.exec(
    testD,
  );
  expect(body, 'openai.test-d.ts has no README example markers').not.toBeNull();
  const copy = (body?.[1] ?? '')
    .split('\n')
    .map((l) => l.replace(/^ {2}/, ''))
    .join('\n')
    .trim();
  expect(copy).toBe(block);
});

test('README stays a quick start, the commands, the map and links: at most 400 lines (issue 46)', () => {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  expect(lines, 'move detail to docs/ (the usage reference, kernels, benchmarks)').toBeLessThanOrEqual(400);
  // Every docs/ page it links exists.
  for (const [, path] of readme.matchAll(/\]\((docs\/[\w.-]+\.md)\)/g))
    expect(() => readFileSync(resolve(ROOT, path), 'utf8'), path).not.toThrow();
});

test('README\'s "The page" says the engine select\'s Auto is the CPU engine on a software adapter', () => {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const section = /### The page\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
  // A newcomer on SwiftShader saw wllama run with Auto chosen and found nothing in this section saying so.
  expect(section.replace(/\s+/g, ' ')).toMatch(
    /\*\*Auto\*\* means the CPU engine, wllama, on a software adapter/,
  );
});
