import { describe, expect, it } from 'vitest';
import { sampleResult, sampleRun } from '../testing/sample-result.ts';
import { csvField, csvToResults, parseCsv, RESULT_COLUMNS, resultsToCsv, toCsv } from './csv.ts';

describe('CSV fields and rows (RFC 4180)', () => {
  it('quotes only what needs quoting and doubles quotes', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(' padded ')).toBe('" padded "');
    expect(csvField('')).toBe('');
  });

  it('round-trips awkward fields', () => {
    const rows = [
      ['a', 'b', 'c'],
      ['', '"', ',,,'],
      ['x\r\ny', ' lead', 'trail '],
      ['ünïcødé 🦙', '=1+1', '-3'],
    ];
    expect(parseCsv(toCsv(rows))).toEqual(rows);
  });

  it('accepts LF and CR line ends, a BOM, no final newline, and skips blank lines', () => {
    expect(parseCsv('\ufeffa,b\nc,d')).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(parseCsv('a,b\r\rc,"d"\n\n')).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(parseCsv('a,""\n')).toEqual([['a', '']]);
    expect(parseCsv('')).toEqual([]);
  });

  it('rejects broken quoting with a line number', () => {
    expect(() => parseCsv('a,b\nc,d"e"')).toThrow(/line 2: a quote inside an unquoted field/);
    expect(() => parseCsv('a,"b"c')).toThrow(/text after a closing quote/);
    expect(() => parseCsv('a,"b\nc')).toThrow(/not closed/);
  });
});

describe('results ↔ CSV', () => {
  it('writes one row per run under the documented header', () => {
    const csv = resultsToCsv([sampleResult()]);
    const rows = parseCsv(csv);
    expect(rows[0]).toEqual([...RESULT_COLUMNS]);
    expect(rows).toHaveLength(1 + 3);
    const at = (row: string[], c: (typeof RESULT_COLUMNS)[number]) => row[RESULT_COLUMNS.indexOf(c)];
    expect(at(rows[1], 'model_id')).toBe('stories260K');
    expect(at(rows[1], 'ttft_ms')).toBe('12.5');
    expect(at(rows[1], 'itl_ms')).toBe('3.25 3.5 3.125');
    expect(at(rows[3], 'tpot_ms')).toBe(''); // NaN is an empty cell
    expect(at(rows[2], 'text')).toBe(' "quoted", commas,\r\nnewlines\tand tabs ');
    expect(csv.endsWith('\r\n')).toBe(true);
  });

  it('round-trips results exactly (several results, NaN, odd text, optional fields)', () => {
    const a = sampleResult();
    const b = sampleResult({
      createdAt: '2025-02-03T00:00:00.000Z',
      engine: 'webllm',
      model: {
        id: 'synthetic-small',
        architecture: 'llama',
        quantization: 'F32',
        parameters: 4e6,
        bytes: 1.6e7,
        synthetic: true,
      },
      plan: {
        prompts: [],
        maxTokens: 8,
        runs: 1,
        warmup: 0,
        ignoreEos: false,
        sampling: { temperature: 0.7, seed: 3 },
      },
      runs: [sampleRun({ promptName: undefined })],
      roofline: undefined,
    });
    delete b.runs[0].promptName;
    delete b.roofline;
    b.summary = sampleResult({ runs: b.runs }).summary;
    const back = csvToResults(resultsToCsv([a, b]));
    expect(back).toEqual([a, b]);
  });

  it("writes the 'Your CPU' block as cpu_* columns on every run's row, and reads it back", () => {
    // Figures as the page's CPU card makes them (src/bench/cpu-compare.ts): medians on the CPU, and
    // GPU ÷ CPU computed from the GPU result's own medians, so the ratio cells agree with both.
    const gpu = sampleResult();
    const cpu = { ttftMs: 187.3, prefillTokS: 41.17, decodeTokS: 23.9 };
    const gpuDecode = gpu.summary.decodeTokensPerSecond.median;
    const withCpu = sampleResult({
      cpu: {
        engine: 'wllama',
        threads: 1,
        crossOriginIsolated: false,
        runs: 3,
        ...cpu,
        ratio: {
          ttft: cpu.ttftMs / gpu.summary.ttftMs.median,
          prefill: gpu.summary.prefillTokensPerSecond.median / cpu.prefillTokS,
          decode: gpuDecode / cpu.decodeTokS,
        },
        createdAt: '2025-01-01T00:05:00.000Z',
      },
    });
    const other = sampleResult({ createdAt: '2025-02-01T00:00:00.000Z' }); // no cpu block
    const csv = resultsToCsv([withCpu, other]);
    const rows = parseCsv(csv);
    const at = (row: string[], c: (typeof RESULT_COLUMNS)[number]) => row[RESULT_COLUMNS.indexOf(c)];
    expect(rows).toHaveLength(1 + 3 + 3);
    for (const row of rows.slice(1, 4)) {
      expect(at(row, 'cpu_engine')).toBe('wllama');
      expect(at(row, 'cpu_threads')).toBe('1');
      expect(at(row, 'cpu_cross_origin_isolated')).toBe('false');
      expect(at(row, 'cpu_runs')).toBe('3');
      expect(at(row, 'cpu_ttft_ms')).toBe('187.3');
      expect(at(row, 'cpu_prefill_tok_s')).toBe('41.17');
      expect(at(row, 'cpu_decode_tok_s')).toBe('23.9');
      expect(Number(at(row, 'cpu_ratio_decode'))).toBe(gpuDecode / 23.9);
      expect(Number(at(row, 'cpu_ratio_ttft'))).toBeCloseTo(187.3 / gpu.summary.ttftMs.median, 12);
      expect(at(row, 'cpu_created_at')).toBe('2025-01-01T00:05:00.000Z');
    }
    // A result without the block: empty cells, and none comes back.
    for (const row of rows.slice(4))
      for (const c of RESULT_COLUMNS.filter((x) => x.startsWith('cpu_'))) expect(at(row, c)).toBe('');
    const back = csvToResults(csv);
    expect(back).toEqual([withCpu, other]);
    expect(back[1].cpu).toBeUndefined();
  });

  it('reads a cpu block from hand-made columns, and refuses a cpu figure that is no number', () => {
    const head =
      'created_at,engine,model_id,device_fingerprint,run_index,prompt,cpu_engine,cpu_threads,cpu_decode_tok_s,cpu_ratio_decode';
    const [r] = csvToResults(`${head}\n2025-01-01T00:00:00Z,webgpu,m,fp,0,hi,wllama,4,30.5,2.5\n`);
    expect(r.cpu).toMatchObject({ engine: 'wllama', threads: 4, decodeTokS: 30.5, ratio: { decode: 2.5 } });
    expect(r.cpu?.crossOriginIsolated).toBe(false);
    expect(Number.isNaN(r.cpu?.ttftMs)).toBe(true); // a missing column is NaN, as the other figures
    expect(() =>
      csvToResults(`${head}\n2025-01-01T00:00:00Z,webgpu,m,fp,0,hi,wllama,four,30.5,2.5\n`),
    ).toThrow(/cpu_threads "four" is not a number/);
  });

  it('imports a hand-made CSV without the JSON columns and recomputes the summary', () => {
    const csv = [
      'created_at,engine,model_id,device_fingerprint,prompt,run_index,prompt_tokens,output_tokens,ttft_ms,e2e_ms,tpot_ms,decode_tok_s,prefill_tok_s,itl_ms',
      '2025-01-01T00:00:00Z,webgpu,m,fp,hi,0,3,3,10,30,10,100,300,10 10',
      '2025-01-01T00:00:00Z,webgpu,m,fp,hi,1,3,3,20,60,20,50,150,20 20',
    ].join('\n');
    const [r] = csvToResults(csv);
    expect(r.schemaVersion).toBe(1);
    expect(r.runs).toHaveLength(2);
    expect(r.summary.decodeTokensPerSecond.mean).toBe(75);
    expect(r.summary.itlMs.n).toBe(4);
    expect(r.runs[1].itlMs).toEqual([20, 20]);
  });

  it('names the problem in a bad CSV', () => {
    expect(() => csvToResults('')).toThrow(/empty/);
    expect(() => csvToResults('a,b\n1,2')).toThrow(/no "created_at" column/);
    expect(() =>
      csvToResults('created_at,engine,model_id,device_fingerprint,run_index,ttft_ms\nt,e,m,f,0,fast'),
    ).toThrow(/line 2: ttft_ms "fast" is not a number/);
    // What the cells give passes the same result schema as a JSON file.
    expect(() =>
      csvToResults('created_at,engine,model_id,device_fingerprint,run_index,ttft_ms\nyesterday,e,m,f,0,1'),
    ).toThrow(/CSV result.createdAt must be an ISO date/);
  });
});
