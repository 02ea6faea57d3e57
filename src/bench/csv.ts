/**
 * CSV for benchmark results (RFC 4180: comma separated, CRLF line ends, fields quoted when they hold a
 * comma, quote, CR or LF, quotes doubled), no DOM.
 *
 * {@link resultsToCsv} writes one row per measured run, the result's own fields repeated on each of its
 * rows, so a spreadsheet can sort and pivot it. The readable columns come first; the nested parts that a
 * spreadsheet has no use for (device limits, the plan with its prompts, the summary) follow as JSON cells,
 * so that {@link csvToResults} gives back the same results. A hand-made CSV without those columns still
 * imports: the summary is then recomputed from the runs.
 *
 * The "Your CPU" comparison (`cpu`: llama.cpp's wasm build on the same model and plan) is readable
 * columns (`cpu_*`, GPU ÷ CPU ratios included), empty where a result has none.
 *
 * Numbers are written with `String(n)` (shortest exact form); a missing value (NaN, e.g. TPOT of a
 * one-token run) is an empty cell.
 */
import { checkResult } from './result-io.ts';
import type { BenchPlan, BenchResult, BenchRun } from './types.ts';

/** Quotes a field when it needs it. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) || value !== value.trim() ? `"${value.replaceAll('"', '""')}"` : value;
}

/** Rows of fields → CSV text (CRLF line ends, a final CRLF). */
export function toCsv(rows: readonly (readonly string[])[]): string {
  return rows.map((r) => r.map(csvField).join(',')).join('\r\n') + (rows.length ? '\r\n' : '');
}

/**
 * CSV text → rows of fields. Accepts CRLF, LF or CR line ends, quoted fields with embedded line breaks,
 * a UTF-8 BOM, and a missing final line end; blank lines are skipped.
 * @throws SyntaxError on a quote in the middle of an unquoted field or an unterminated quoted field.
 */
export function parseCsv(text: string): string[][] {
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const rows: string[][] = [];
  let row: string[] = [];
  let f = '';
  let quoted = false; // inside a quoted field
  let wasQuoted = false; // the current field was quoted (so an empty quoted field still counts)
  let line = 1;
  const endField = () => {
    row.push(f);
    f = '';
    wasQuoted = false;
  };
  const endRow = () => {
    endField();
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '"') {
        if (s[i + 1] === '"') {
          f += '"';
          i++;
        } else quoted = false;
      } else {
        if (c === '\n') line++;
        f += c;
      }
      continue;
    }
    if (c === '"') {
      if (f !== '' || wasQuoted) throw new SyntaxError(`CSV line ${line}: a quote inside an unquoted field`);
      quoted = true;
      wasQuoted = true;
    } else if (c === ',') endField();
    else if (c === '\r' || c === '\n') {
      if (c === '\r' && s[i + 1] === '\n') i++;
      endRow();
      line++;
    } else {
      if (wasQuoted) throw new SyntaxError(`CSV line ${line}: text after a closing quote`);
      f += c;
    }
  }
  if (quoted) throw new SyntaxError(`CSV line ${line}: a quoted field is not closed`);
  if (f !== '' || wasQuoted || row.length) endRow();
  return rows;
}

// --- Results ---------------------------------------------------------------------------------------

/** The columns of the results CSV, in order. */
export const RESULT_COLUMNS = [
  'created_at',
  'engine',
  'model_id',
  'model_architecture',
  'model_quantization',
  'model_parameters',
  'model_bytes',
  'model_synthetic',
  'device_fingerprint',
  'device_label',
  'device_vendor',
  'device_architecture',
  'device_description',
  'device_is_fallback',
  'run_index',
  'prompt_name',
  'prompt',
  'prompt_tokens',
  'output_tokens',
  'ttft_ms',
  'tpot_ms',
  'e2e_ms',
  'prefill_tok_s',
  'decode_tok_s',
  'text',
  'itl_ms',
  'output_token_ids',
  'engine_reported_json',
  'load_total_ms',
  'load_download_ms',
  'load_upload_ms',
  'load_compile_ms',
  'plan_max_tokens',
  'plan_runs',
  'plan_warmup',
  'plan_ignore_eos',
  'plan_temperature',
  'roofline_bandwidth_gbs',
  'roofline_bytes_per_token',
  'roofline_fraction',
  'roofline_matmul_gflops',
  'roofline_prefill_fraction',
  'device_device',
  'device_features',
  'user_agent',
  'device_limits_json',
  'plan_json',
  'summary_json',
  // Speculative decoding and constrained output (issues 45, 43): the result's blocks and each run's figures.
  'speculative_json',
  'constrained_kind',
  'constrained_hash',
  'run_speculative_json',
  'run_finish_reason',
  'run_format_complete',
  // "Your CPU" (issue 48): the same model and plan on llama.cpp's wasm build, and GPU ÷ CPU per metric.
  'cpu_engine',
  'cpu_threads',
  'cpu_cross_origin_isolated',
  'cpu_runs',
  'cpu_ttft_ms',
  'cpu_prefill_tok_s',
  'cpu_decode_tok_s',
  'cpu_ratio_ttft',
  'cpu_ratio_prefill',
  'cpu_ratio_decode',
  'cpu_created_at',
] as const;
export type ResultColumn = (typeof RESULT_COLUMNS)[number];

const num = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '' : String(n));
const bool = (b: boolean | undefined): string => (b === undefined ? '' : b ? 'true' : 'false');
const nums = (a: readonly number[]): string => a.map((x) => (Number.isNaN(x) ? 'NaN' : String(x))).join(' ');

/** JSON that keeps NaN and ±Infinity (as strings), for the JSON cells. */
function jsonCell(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    typeof x === 'number' && !Number.isFinite(x) ? { $num: String(x) } : x,
  );
}
function parseJsonCell<T>(s: string, column: string): T {
  try {
    return JSON.parse(s, (_k, x) =>
      x && typeof x === 'object' && typeof x.$num === 'string' && Object.keys(x).length === 1
        ? Number(x.$num)
        : x,
    ) as T;
  } catch (e) {
    throw new SyntaxError(`column ${column}: not valid JSON (${(e as Error).message})`);
  }
}

function runCells(run: BenchRun | undefined, index: number): Partial<Record<ResultColumn, string>> {
  if (!run) return {};
  return {
    run_index: String(index),
    prompt_name: run.promptName ?? '',
    prompt: run.prompt,
    prompt_tokens: num(run.promptTokens),
    output_tokens: num(run.outputTokens),
    ttft_ms: num(run.ttftMs),
    tpot_ms: num(run.tpotMs),
    e2e_ms: num(run.e2eMs),
    prefill_tok_s: num(run.prefillTokensPerSecond),
    decode_tok_s: num(run.decodeTokensPerSecond),
    text: run.text,
    itl_ms: nums(run.itlMs),
    output_token_ids: nums(run.outputTokenIds),
    engine_reported_json: run.engineReported ? jsonCell(run.engineReported) : '',
    run_speculative_json: run.speculative ? jsonCell(run.speculative) : '',
    run_finish_reason: run.finishReason ?? '',
    run_format_complete: bool(run.formatComplete),
  };
}

/** Results → CSV text, one row per run (a result without runs gets one row with empty run columns). */
export function resultsToCsv(results: readonly BenchResult[]): string {
  const rows: string[][] = [[...RESULT_COLUMNS]];
  for (const r of results) {
    const common: Partial<Record<ResultColumn, string>> = {
      created_at: r.createdAt,
      engine: r.engine,
      model_id: r.model.id,
      model_architecture: r.model.architecture,
      model_quantization: r.model.quantization,
      model_parameters: num(r.model.parameters),
      model_bytes: num(r.model.bytes),
      model_synthetic: bool(r.model.synthetic),
      device_fingerprint: r.device.fingerprint,
      device_label: r.device.label ?? '',
      device_vendor: r.device.vendor,
      device_architecture: r.device.architecture,
      device_description: r.device.description,
      device_is_fallback: bool(r.device.isFallbackAdapter),
      load_total_ms: num(r.load.totalMs),
      load_download_ms: num(r.load.downloadMs),
      load_upload_ms: num(r.load.uploadMs),
      load_compile_ms: num(r.load.compileMs),
      plan_max_tokens: num(r.plan.maxTokens),
      plan_runs: num(r.plan.runs),
      plan_warmup: num(r.plan.warmup),
      plan_ignore_eos: bool(r.plan.ignoreEos),
      plan_temperature: num(r.plan.sampling?.temperature ?? 0),
      roofline_bandwidth_gbs: num(r.roofline?.bandwidthGBs),
      roofline_bytes_per_token: num(r.roofline?.bytesPerToken),
      roofline_fraction: num(r.roofline?.fraction),
      roofline_matmul_gflops: num(r.roofline?.matmulGflops),
      roofline_prefill_fraction: num(r.roofline?.prefillFraction),
      device_device: r.device.device ?? '',
      device_features: r.device.features.join(' '),
      user_agent: r.device.userAgent,
      device_limits_json: jsonCell(r.device.limits),
      plan_json: jsonCell(r.plan),
      summary_json: jsonCell(r.summary),
      speculative_json: r.speculative ? jsonCell(r.speculative) : '',
      constrained_kind: r.constrained?.kind ?? '',
      constrained_hash: r.constrained?.hash ?? '',
      cpu_engine: r.cpu?.engine ?? '',
      cpu_threads: num(r.cpu?.threads),
      cpu_cross_origin_isolated: bool(r.cpu?.crossOriginIsolated),
      cpu_runs: num(r.cpu?.runs),
      cpu_ttft_ms: num(r.cpu?.ttftMs),
      cpu_prefill_tok_s: num(r.cpu?.prefillTokS),
      cpu_decode_tok_s: num(r.cpu?.decodeTokS),
      cpu_ratio_ttft: num(r.cpu?.ratio.ttft),
      cpu_ratio_prefill: num(r.cpu?.ratio.prefill),
      cpu_ratio_decode: num(r.cpu?.ratio.decode),
      cpu_created_at: r.cpu?.createdAt ?? '',
    };
    const runs = r.runs.length ? r.runs : [undefined];
    runs.forEach((run, i) => {
      const cells = { ...common, ...runCells(run, i) };
      rows.push(RESULT_COLUMNS.map((c) => cells[c] ?? ''));
    });
  }
  return toCsv(rows);
}

/**
 * CSV text (as {@link resultsToCsv} writes it) → results. Rows are grouped into results by created_at,
 * device fingerprint, engine and model id, in order of first appearance.
 * @throws SyntaxError when the text is not CSV, lacks a needed column, or a cell does not parse;
 *   TypeError when a result the rows make fails the result schema (e.g. a created_at that is no date).
 */
export function csvToResults(text: string): BenchResult[] {
  const rows = parseCsv(text);
  if (rows.length === 0) throw new SyntaxError('the CSV file is empty');
  const header = rows[0].map((x) => x.trim());
  const col = new Map(header.map((name, i) => [name, i]));
  for (const need of ['created_at', 'engine', 'model_id', 'device_fingerprint'] as const)
    if (!col.has(need)) throw new SyntaxError(`the CSV has no "${need}" column`);

  const groups = new Map<string, BenchResult>();
  rows.slice(1).forEach((row, r) => {
    const line = r + 2;
    const get = (c: ResultColumn): string => {
      const i = col.get(c);
      return i === undefined ? '' : (row[i] ?? '');
    };
    const n = (c: ResultColumn, fallback = Number.NaN): number => {
      const s = get(c).trim();
      if (s === '') return fallback;
      const v = Number(s);
      if (Number.isNaN(v) && s !== 'NaN')
        throw new SyntaxError(`CSV line ${line}: ${c} "${s}" is not a number`);
      return v;
    };
    const opt = (c: ResultColumn): number | undefined => {
      const v = n(c);
      return Number.isNaN(v) ? undefined : v;
    };
    const b = (c: ResultColumn): boolean | undefined => {
      const s = get(c).trim().toLowerCase();
      return s === '' ? undefined : s === 'true' || s === '1' || s === 'yes';
    };
    const list = (c: ResultColumn): number[] => {
      const s = get(c).trim();
      if (s === '') return [];
      return s.split(/\s+/).map((x) => {
        const v = Number(x);
        if (Number.isNaN(v) && x !== 'NaN') throw new SyntaxError(`CSV line ${line}: ${c} has "${x}"`);
        return v;
      });
    };
    const json = <T>(c: ResultColumn): T | undefined => {
      const s = get(c).trim();
      return s === '' ? undefined : parseJsonCell<T>(s, `${c} (line ${line})`);
    };

    const key = [get('created_at'), get('device_fingerprint'), get('engine'), get('model_id')].join('\u0000');
    let result = groups.get(key);
    if (!result) {
      const plan: BenchPlan = json<BenchPlan>('plan_json') ?? {
        prompts: [],
        maxTokens: n('plan_max_tokens', 0),
        runs: n('plan_runs', 0),
        warmup: n('plan_warmup', 0),
        ignoreEos: b('plan_ignore_eos') ?? false,
        ...(opt('plan_temperature') ? { sampling: { temperature: n('plan_temperature') } } : {}),
      };
      const bandwidthGBs = opt('roofline_bandwidth_gbs');
      const speculative = json<BenchResult['speculative']>('speculative_json');
      const constrainedKind = get('constrained_kind').trim();
      const cpuEngine = get('cpu_engine').trim();
      const cpuCreatedAt = get('cpu_created_at').trim();
      const synthetic = b('model_synthetic');
      const label = get('device_label');
      const device = get('device_device');
      result = {
        schemaVersion: 1,
        createdAt: get('created_at'),
        device: {
          vendor: get('device_vendor'),
          architecture: get('device_architecture'),
          device,
          description: get('device_description'),
          isFallbackAdapter: b('device_is_fallback') ?? false,
          features: get('device_features').split(/\s+/).filter(Boolean),
          limits: json<Record<string, number>>('device_limits_json') ?? {},
          userAgent: get('user_agent'),
          fingerprint: get('device_fingerprint'),
          ...(label ? { label } : {}),
        },
        engine: get('engine'),
        model: {
          id: get('model_id'),
          architecture: get('model_architecture'),
          quantization: get('model_quantization'),
          parameters: n('model_parameters', 0),
          bytes: n('model_bytes', 0),
          ...(synthetic !== undefined ? { synthetic } : {}),
        },
        load: {
          totalMs: n('load_total_ms'),
          downloadMs: n('load_download_ms'),
          uploadMs: n('load_upload_ms'),
          compileMs: n('load_compile_ms'),
        },
        plan,
        runs: [],
        summary: json<BenchResult['summary']>('summary_json') ?? {},
        ...(bandwidthGBs !== undefined
          ? {
              roofline: {
                bandwidthGBs,
                bytesPerToken: n('roofline_bytes_per_token'),
                fraction: n('roofline_fraction'),
                ...(opt('roofline_matmul_gflops') !== undefined
                  ? { matmulGflops: opt('roofline_matmul_gflops') }
                  : {}),
                ...(opt('roofline_prefill_fraction') !== undefined
                  ? { prefillFraction: opt('roofline_prefill_fraction') }
                  : {}),
              },
            }
          : {}),
        ...(speculative ? { speculative } : {}),
        ...(constrainedKind
          ? {
              constrained: {
                kind: constrainedKind as NonNullable<BenchResult['constrained']>['kind'],
                hash: get('constrained_hash'),
              },
            }
          : {}),
        ...(cpuEngine
          ? {
              cpu: {
                engine: cpuEngine,
                threads: n('cpu_threads'),
                crossOriginIsolated: b('cpu_cross_origin_isolated') ?? false,
                runs: n('cpu_runs'),
                ttftMs: n('cpu_ttft_ms'),
                prefillTokS: n('cpu_prefill_tok_s'),
                decodeTokS: n('cpu_decode_tok_s'),
                ratio: {
                  ttft: n('cpu_ratio_ttft'),
                  prefill: n('cpu_ratio_prefill'),
                  decode: n('cpu_ratio_decode'),
                },
                ...(cpuCreatedAt ? { createdAt: cpuCreatedAt } : {}),
              },
            }
          : {}),
      };
      groups.set(key, result);
    }
    if (get('run_index').trim() !== '') {
      const promptName = get('prompt_name');
      const engineReported = json<Record<string, number>>('engine_reported_json');
      const runSpeculative = json<BenchRun['speculative']>('run_speculative_json');
      const finishReason = get('run_finish_reason').trim();
      const formatComplete = get('run_format_complete').trim();
      result.runs.push({
        prompt: get('prompt'),
        ...(promptName ? { promptName } : {}),
        promptTokens: n('prompt_tokens', 0),
        outputTokens: n('output_tokens', 0),
        outputTokenIds: list('output_token_ids'),
        text: get('text'),
        ttftMs: n('ttft_ms'),
        itlMs: list('itl_ms'),
        tpotMs: n('tpot_ms'),
        e2eMs: n('e2e_ms'),
        prefillTokensPerSecond: n('prefill_tok_s'),
        decodeTokensPerSecond: n('decode_tok_s'),
        ...(engineReported ? { engineReported } : {}),
        ...(runSpeculative ? { speculative: runSpeculative } : {}),
        ...(finishReason ? { finishReason: finishReason as BenchRun['finishReason'] } : {}),
        ...(formatComplete ? { formatComplete: formatComplete === 'true' } : {}),
      });
    }
  });
  const results = [...groups.values()];
  // The one result schema (src/bench/types.ts) checks what the columns gave and the summary is recomputed
  // from the runs where the file had none (no summary_json column, or an empty cell): the JSON import's step.
  return results.map((r, i) => checkResult(r, results.length > 1 ? `CSV result ${i + 1}` : 'CSV result'));
}
