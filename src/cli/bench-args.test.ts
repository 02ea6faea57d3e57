/**
 * `npm run bench`'s speculative-decoding and constrained-output flags as parseBenchArgs reads them (no
 * browser): what reaches the plan and the draft model, and every bad combination refused as a usage error
 * (exit 2) before anything runs.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stories260kPath } from '../testing/models.ts';
import { useTempDirs } from '../testing/temp-dir.ts';
import { UsageError } from './args.ts';
import { type BenchArgs, parseBenchArgs } from './bench-args.ts';

const tempDir = useTempDirs();
const MODEL = stories260kPath();

function parse(argv: string[]): BenchArgs {
  const a = parseBenchArgs(['--model', MODEL, ...argv]);
  if (a === 'help') throw new Error('help');
  return a;
}
function refused(argv: string[], message: RegExp): void {
  let err: unknown;
  try {
    parse(argv);
  } catch (e) {
    err = e;
  }
  expect(err, argv.join(' ')).toBeInstanceOf(UsageError);
  expect((err as Error).message).toMatch(message);
}

describe('bench thresholds with --llama-bench', () => {
  it('keeps --fail-under-decode-tps (held to the tg tests) and refuses --fail-over-ttft-ms (no TTFT there)', () => {
    expect(parse(['--llama-bench', '--fail-under-decode-tps', '5']).failUnderDecodeTps).toBe(5);
    refused(
      ['--llama-bench', '--fail-over-ttft-ms', '500'],
      /^--fail-over-ttft-ms holds the prompt plan's TTFT; --llama-bench's pp\/tg tests measure none/,
    );
  });
});

describe('bench --draft / --lookup / --draft-max', () => {
  it('--lookup --draft-max N drafts every run of the plan, with no draft model', () => {
    const a = parse(['--lookup', '--draft-max', '5']);
    expect(a.plan.draft).toEqual({ type: 'lookup', draftMax: 5 });
    expect(a.draftModel).toBeUndefined();
    expect(parse([]).plan.draft).toBeUndefined();
  });

  it('--draft names the draft model in the plan and resolves it as --model is', () => {
    const syn = parse(['--draft', 'synthetic:stories260k-q8_0']);
    expect(syn.plan.draft).toEqual({ type: 'model', model: 'synthetic:stories260k-q8_0' });
    expect(syn.draftModel?.spec).toEqual({ synthetic: 'synthetic:stories260k-q8_0' });
    const file = parse(['--draft', MODEL, '--draft-max', '3']);
    expect(file.plan.draft).toEqual({ type: 'model', draftMax: 3, model: 'stories260K.gguf' });
    expect(file.draftModel?.localPath).toBe(MODEL);
  });

  it('refuses bad drafting flags', () => {
    refused(['--lookup', '--draft', MODEL], /two ways to draft/);
    refused(['--draft-max', '4'], /needs --draft or --lookup/);
    refused(['--lookup', '--draft-max', '0'], /draft-max/);
    refused(['--lookup', '--draft-max', '17'], /draft-max/);
    refused(['--lookup', '--draft-max', '2.5'], /draft-max/);
    refused(['--draft', ''], /--draft is empty/);
    refused(['--draft', 'synthetic:no-such-shape'], /no-such-shape|synthetic/);
    refused(
      ['--draft', '/nope/draft.gguf'],
      /^cannot open model file \/nope\/draft\.gguf \(--draft\): no such file/,
    );
    refused(['--lookup', '--engine', 'wllama'], /--lookup run only on --engine webgpu, not wllama/);
    refused(['--lookup', '--llama-bench'], /not to --llama-bench/);
  });

  it('a missing draft file is named before anything runs', () => {
    expect(() => parse(['--draft', join(tempDir('bench-args-'), 'absent.gguf')])).toThrow(/absent\.gguf/);
  });
});

describe('bench --json-schema / --grammar', () => {
  it('puts the format in the plan (the runner sends it with every request)', () => {
    const dir = tempDir('bench-args-');
    const schema = join(dir, 's.json');
    writeFileSync(schema, '{"type":"object","properties":{"a":{"type":"integer"}}}');
    expect(parse(['--json-schema', schema]).plan.responseFormat).toEqual({
      type: 'json_schema',
      schema: '{"type":"object","properties":{"a":{"type":"integer"}}}',
    });
    const grammar = join(dir, 'g.gbnf');
    writeFileSync(grammar, 'root ::= "yes" | "no"');
    expect(parse(['--grammar', grammar]).plan.responseFormat).toEqual({
      type: 'grammar',
      grammar: 'root ::= "yes" | "no"',
    });
  });

  it('refuses a schema that is not JSON, both flags and other engines; takes drafting alongside', () => {
    const dir = tempDir('bench-args-');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"type": ');
    const good = join(dir, 'good.json');
    writeFileSync(good, '{"type":"object"}');
    refused(['--json-schema', bad], /is not JSON/);
    refused(['--json-schema', join(dir, 'absent.json')], /absent\.json/);
    refused(['--json-schema', good, '--grammar', good], /--json-schema or --grammar, not both/);
    refused(['--json-schema', good, '--engine', 'wllama'], /run only on --engine webgpu/);
    refused(
      ['--json-schema', good, '--engine', 'wllama', '--lookup'],
      /--lookup and --json-schema run only on --engine webgpu/,
    );
    const both = parse(['--json-schema', good, '--lookup']).plan;
    expect(both.responseFormat).toEqual({ type: 'json_schema', schema: '{"type":"object"}' });
    expect(both.draft).toMatchObject({ type: 'lookup' });
  });
});
