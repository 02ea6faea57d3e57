/**
 * Claims of docs/cli.md checked against the code they describe: which quantize TYPEs give `output.weight`
 * Q6_K (the docs once named only "the Q4_0/Q4_K_M/Q6_K mixes"), and which `--json-schema` failures of
 * generate are usage errors (exit 2) rather than exit 1.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FTYPES, planQuantization, type QuantizeFtype } from '../gguf/quantize-model.ts';
import { runCliInProcess } from '../testing/cli-in-process.ts';
import { useTempDirs } from '../testing/temp-dir.ts';

const tempDir = useTempDirs();
const DOC = readFileSync(resolve(import.meta.dirname, '../../docs/cli.md'), 'utf8');

/** The type names a docs passage lists, `Q3_K_S/M/L` read as Q3_K_S, Q3_K_M and Q3_K_L. */
function typesNamed(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/\b(I?Q\d_(?:K|\d|NL|XS))((?:_[SML])(?:\/[SML])*)?/g)) {
    if (!m[2]) out.add(m[1]);
    else for (const s of m[2].slice(1).split('/')) out.add(`${m[1]}_${s}`);
  }
  return out;
}

describe('docs/cli.md', () => {
  it("quantize: the TYPEs whose output.weight becomes Q6_K are the ones the docs list (llama.cpp's rule)", () => {
    // 256-wide rows, so that no fallback hides the rule.
    const tensors = [
      { name: 'token_embd.weight', typeName: 'F32', shape: [256, 512] },
      { name: 'output.weight', typeName: 'F32', shape: [256, 512] },
      { name: 'blk.0.attn_q.weight', typeName: 'F32', shape: [256, 256] },
    ];
    const toQ6K = (Object.keys(FTYPES) as QuantizeFtype[]).filter(
      (t) => planQuantization(tensors, t).find((p) => p.name === 'output.weight')?.to === 'Q6_K',
    );
    expect(new Set(toQ6K)).toEqual(
      new Set([
        'Q4_0',
        'Q4_1',
        'Q5_0',
        'Q5_1',
        'IQ4_NL',
        'IQ4_XS',
        'Q6_K',
        'Q4_K_M',
        'Q2_K',
        'Q3_K_S',
        'Q3_K_M',
        'Q3_K_L',
        'Q5_K_S',
        'Q5_K_M',
      ]),
    );
    expect(planQuantization(tensors, 'Q8_0').find((p) => p.name === 'output.weight')?.to).toBe('Q8_0');
    expect(planQuantization(tensors, 'Q4_K').find((p) => p.name === 'output.weight')?.to).toBe('Q4_K');
    const start = DOC.indexOf('`output.weight` (or `token_embd.weight` when tied) becomes Q6_K');
    expect(start).toBeGreaterThan(0);
    const passage = DOC.slice(start, DOC.indexOf('Q8_0 stays Q8_0', start));
    expect([...typesNamed(passage)].filter((t) => !toQ6K.includes(t as QuantizeFtype))).toEqual(['Q4_K']);
    expect(toQ6K.filter((t) => !typesNamed(passage).has(t))).toEqual([]);
  });

  it('generate: a --json-schema file that is not JSON is a usage error (exit 2) before anything starts, as documented', async () => {
    const schema = join(tempDir('gen-docs-'), 'schema.json');
    writeFileSync(schema, '{"type": "object",');
    const r = await runCliInProcess('generate', [
      '--model',
      'synthetic:stories260k-f32',
      '--prompt',
      'x',
      '--json-schema',
      schema,
      '--chromium',
      '/nonexistent/chrome',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(`^error \\[invalid_argument\\]: --json-schema ${schema} is not JSON`),
    );
    // Not a schema (a number), and an empty grammar: the same, by the flag's name, before the model loads.
    writeFileSync(schema, '42');
    const grammar = join(tempDir('gen-docs-'), 'empty.gbnf');
    writeFileSync(grammar, ' \n');
    for (const [flag, file, said] of [
      [
        '--json-schema',
        schema,
        `--json-schema ${schema} is not a JSON Schema: it holds 42, where a schema is an object (or true/false)`,
      ],
      ['--grammar', grammar, `--grammar ${grammar} is empty: give a grammar (EBNF/GBNF, with a rule root)`],
    ]) {
      const n = await runCliInProcess('generate', [
        '--model',
        'synthetic:stories260k-f32',
        '--prompt',
        'x',
        flag,
        file,
        '--chromium',
        '/nonexistent/chrome',
      ]);
      expect(n.code, flag).toBe(2);
      expect(n.stderr.split('\n')[0]).toBe(`error [invalid_argument]: ${said}`);
    }
    expect(DOC).toMatch(/a schema or grammar that does not compile exits 1 with\s+`\[invalid_argument\]`/);
    expect(DOC).toMatch(/not a schema \(an object, or\s+`true`\/`false`\), an empty `--grammar` file/);
    expect(DOC).toMatch(
      /a `--json-schema` file that is not valid JSON or not a schema[^.]*usage errors \(exit 2/,
    );
  });
});
