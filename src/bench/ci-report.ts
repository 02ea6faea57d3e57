/**
 * What CI systems read from `npm run bench` (no DOM, no Node APIs): the thresholds' verdicts
 * ({@link checkThresholds}), a JUnit XML report ({@link junitXml}: one test case for the run itself and one
 * per threshold, in the shape GitHub's, GitLab's and Jenkins' JUnit readers accept), a Markdown summary for a
 * job page such as GitHub's `$GITHUB_STEP_SUMMARY` ({@link summaryMarkdown}), and the software-adapter
 * guard's reading of a device ({@link softwareDeviceReasons}).
 */

import { fmtSig } from '../util/format.ts';
import { softwareReasons } from './gpu-report.ts';
import type { LlamaBenchTest } from './llama-bench.ts';
import { type MarkdownAlign, markdownTable, markdownText } from './markdown.ts';
import { deviceName, isSoftwareResult, withFacts } from './report.ts';
import { type BenchDevice, type BenchResult, modelFacts } from './types.ts';

/** The thresholds a run is held to (`--fail-under-decode-tps`, `--fail-over-ttft-ms`); absent = not checked. */
export interface BenchThresholds {
  /** The median decode tokens/s must be at least this. */
  failUnderDecodeTps?: number;
  /** The median TTFT must be at most this many ms. */
  failOverTtftMs?: number;
}

/** One threshold's verdict. */
export interface ThresholdOutcome {
  /** The flag that set it, e.g. `--fail-under-decode-tps`. */
  flag: string;
  /** What was compared, e.g. `median decode tok/s`. */
  metric: string;
  /** Its unit as printed (`tok/s`, `ms`). */
  unit: string;
  /** `min`: measured must be ≥ limit; `max`: measured must be ≤ limit. */
  kind: 'min' | 'max';
  limit: number;
  /** The measured figure; undefined when the run produced none (which fails the threshold). */
  measured?: number;
  passed: boolean;
  /** One line: `median decode 12.3 tok/s ≥ --fail-under-decode-tps 10` or why it was missed. */
  message: string;
}

/**
 * Each threshold that is set, checked against the result's medians (decode tokens/s, TTFT). A missing
 * figure (no measured run) misses the threshold. A `--llama-bench` result (its `tests`, no prompt-plan
 * runs) holds the decode threshold against its slowest tg test's mean tokens/s (llama-bench's figure; no
 * tg test misses it) and has no TTFT (the command line refuses that threshold with it). The messages are
 * the ones `npm run bench` prints after `threshold missed: `. Without a result (a run that failed) every
 * threshold is missed, with no figure.
 */
export function checkThresholds(
  result: (Pick<BenchResult, 'summary'> & Partial<Pick<BenchResult, 'tests'>>) | undefined,
  t: BenchThresholds,
): ThresholdOutcome[] {
  const out: ThresholdOutcome[] = [];
  if (t.failUnderDecodeTps !== undefined) {
    const tg = result?.tests?.filter((x) => x.nGen > 0);
    const slowest = tg?.length
      ? tg.reduce((a, b) => (b.tokensPerSecond.mean < a.tokensPerSecond.mean ? b : a))
      : undefined;
    const v = result?.tests ? slowest?.tokensPerSecond.mean : result?.summary.decodeTokensPerSecond?.median;
    const passed = v !== undefined && Number.isFinite(v) && v >= t.failUnderDecodeTps;
    const what = result?.tests
      ? slowest
        ? `decode (the slowest tg test, ${slowest.name})`
        : 'decode (no tg test ran)'
      : 'median decode';
    out.push({
      flag: '--fail-under-decode-tps',
      metric: result?.tests ? 'slowest tg tok/s' : 'median decode tok/s',
      unit: 'tok/s',
      kind: 'min',
      limit: t.failUnderDecodeTps,
      measured: v,
      passed,
      message: `${what} ${fmtSig(v)} tok/s is ${passed ? 'at or above' : 'below'} --fail-under-decode-tps ${t.failUnderDecodeTps}`,
    });
  }
  if (t.failOverTtftMs !== undefined) {
    const v = result?.summary.ttftMs?.median;
    const passed = v !== undefined && Number.isFinite(v) && v <= t.failOverTtftMs;
    out.push({
      flag: '--fail-over-ttft-ms',
      metric: 'median TTFT ms',
      unit: 'ms',
      kind: 'max',
      limit: t.failOverTtftMs,
      measured: v,
      passed,
      message: `median TTFT ${fmtSig(v)} ms is ${passed ? 'at or below' : 'above'} --fail-over-ttft-ms ${t.failOverTtftMs}`,
    });
  }
  return out;
}

/**
 * Why a device is a software (CPU) adapter, empty for a hardware one: the adapter reports
 * `isFallbackAdapter`, its vendor, architecture, device or description names a software rasterizer
 * (SwiftShader, llvmpipe, lavapipe, WARP, …; src/bench/gpu-report.ts), or its fingerprint label says
 * `(software)` (src/bench/fingerprint.ts). `npm run bench -- --gpu` refuses such a device unless
 * `--allow-software`.
 */
export function softwareDeviceReasons(d: BenchDevice): string[] {
  const reasons = softwareReasons({
    vendor: d.vendor ?? '',
    architecture: d.architecture ?? '',
    device: d.device ?? '',
    description: d.description ?? '',
    isFallbackAdapter: Boolean(d.isFallbackAdapter),
    features: d.features ?? [],
    limits: d.limits ?? {},
  });
  if (reasons.length === 0 && /\(software\)\s*$/i.test(d.label ?? ''))
    reasons.push(`its fingerprint label "${d.label}" says software`);
  return reasons;
}

/** A failed run as the reports show it: the CLI's `error [code]: message` line and the code. */
export interface RunError {
  code?: string;
  message: string;
}

/** What {@link junitXml} reports. */
export interface JunitInput {
  /** The result; absent when the run failed before producing one. */
  result?: BenchResult;
  /** The thresholds' verdicts ({@link checkThresholds}); with a failed run, the thresholds that were set. */
  outcomes: readonly ThresholdOutcome[];
  /** Set when the run failed (exit 1): the run's test case gets an `<error>`, the thresholds are skipped. */
  error?: RunError;
  /** The device, when known without a result (e.g. the software-adapter guard stopped the run). */
  device?: BenchDevice;
  /** The model's id, when known without a result. */
  modelId?: string;
  /** Wall-clock seconds of the whole command (default: the result's load plus its runs' E2E). */
  timeS?: number;
  /**
   * The suite's start time (ISO 8601 or anything `Date` parses; default: the result's createdAt, else now),
   * written in UTC as `YYYY-MM-DDTHH:MM:SS`: no fraction, no zone, the Ant/Jenkins JUnit schema's pattern.
   */
  timestamp?: string;
  /** The machine's name, the suite's `hostname` (the Ant JUnit schema requires one; default `localhost`). */
  hostname?: string;
}

/** The characters XML 1.0 allows (others, e.g. terminal escapes in an error message, are dropped). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters removed
const XML_INVALID = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

/** Text made safe for an XML attribute or element: `& < > " '` escaped, invalid characters dropped. */
export function xmlEscape(s: string): string {
  return s
    .replace(XML_INVALID, '')
    .replace(
      /[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] as string,
    );
}

const attrs = (a: Record<string, string | number | undefined>) =>
  Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${xmlEscape(String(v))}"`)
    .join('');

/** Seconds as JUnit writes them: a plain decimal with millisecond precision (`12.345`). */
const seconds = (ms: number) => (Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0).toFixed(3);

/** The test cases' names: a threshold as `median decode tok/s >= 10` (ASCII: some readers mangle ≥). */
const thresholdName = (o: ThresholdOutcome) => `${o.metric} ${o.kind === 'min' ? '>=' : '<='} ${o.limit}`;

/**
 * A time as the strict Ant/Jenkins JUnit schema wants a suite's `timestamp`: UTC, whole seconds, no zone
 * (`2026-12-02T05:45:54`; the schema's pattern is `[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}`).
 * An absent or unparseable time is now.
 */
export function junitTimestamp(iso?: string): string {
  const t = iso === undefined ? Number.NaN : Date.parse(iso);
  return new Date(Number.isFinite(t) ? t : Date.now()).toISOString().slice(0, 19);
}

/**
 * The test cases' `classname`: `bench.` and the model's id with every character outside `[A-Za-z0-9_.-]`
 * made `_` (`bench.synthetic_llama-3.2-1b-q4_0`): some reporters split a classname on `:` or `/`, or
 * read it as a path. The suite's name and the `model` property keep the real id.
 */
export function junitClassname(model: string): string {
  return `bench.${model.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
}

/** A short device name for the suite's name and the summary. */
function deviceText(result: BenchResult | undefined, device: BenchDevice | undefined): string {
  if (result) return deviceName(result);
  if (!device) return 'unknown device';
  const name = device.label || device.description || [device.vendor, device.architecture].join(' ').trim();
  return softwareDeviceReasons(device).length > 0 && !/software/i.test(name) ? `${name} (software)` : name;
}

/**
 * A JUnit XML report of one `npm run bench` run: `<testsuites>` holding one `<testsuite>` named after the
 * model and device, with `tests`, `failures`, `errors`, `skipped` and `time` (seconds) on both, the run's
 * facts as `<properties>`, a test case `benchmark completed` for the run itself (its time is the run's) and
 * one per threshold (`median decode tok/s >= 10`, `median TTFT ms <= 500`), a missed one with
 * `<failure message="…" type="threshold">` naming the measured figure and the limit. A run that failed gets
 * an `<error>` on its test case (`type` is the error code) and its thresholds are `<skipped>`. With no
 * threshold the suite still has the run's test case. Every name and message is XML-escaped; the test
 * cases' classname is {@link junitClassname}'s (the model's id with only `[A-Za-z0-9_.-]`), the suite's
 * timestamp {@link junitTimestamp}'s (UTC, whole seconds, no zone). A `--llama-bench` result's properties
 * are its tests' mean tokens/s (`pp512_tps_mean`, `tg128_d4096_tps_mean`) in place of the medians.
 */
export function junitXml(input: JunitInput): string {
  const { result, outcomes, error } = input;
  const model = result?.model.id ?? input.modelId ?? 'unknown model';
  const device = deviceText(result, input.device ?? result?.device);
  const runMs = result ? result.load.totalMs + result.runs.reduce((a, r) => a + r.e2eMs, 0) : 0;
  const timeMs = input.timeS !== undefined ? input.timeS * 1000 : runMs;
  const timestamp = junitTimestamp(input.timestamp ?? result?.createdAt);
  const classname = junitClassname(model);
  const failures = error ? 0 : outcomes.filter((o) => !o.passed).length;
  const errors = error ? 1 : 0;
  const skipped = error ? outcomes.length : 0;
  const tests = 1 + outcomes.length;
  const counts = { tests, failures, errors, skipped, time: seconds(timeMs) };

  const props: [string, string | undefined][] = [
    ['model', model],
    ['device', device],
    [
      'adapter',
      result
        ? isRemote(result.device)
          ? 'remote'
          : isSoftwareResult(result)
            ? 'software'
            : 'hardware'
        : undefined,
    ],
    ['fingerprint', (input.device ?? result?.device)?.fingerprint],
    ['engine', result?.engine],
    // A --llama-bench result has pp/tg tests, not prompt-plan runs: their means instead of the medians.
    ...(result?.tests
      ? result.tests.map((t): [string, string] => [
          `${testKey(t.name)}_tps_mean`,
          fmtSig(t.tokensPerSecond.mean),
        ])
      : []),
  ];
  if (!result?.tests)
    props.push(
      ['decode_tps_median', result ? fmtSig(result.summary.decodeTokensPerSecond?.median) : undefined],
      ['ttft_ms_median', result ? fmtSig(result.summary.ttftMs?.median) : undefined],
      ['prefill_tps_median', result ? fmtSig(result.summary.prefillTokensPerSecond?.median) : undefined],
      ['tpot_ms_median', result ? fmtSig(result.summary.tpotMs?.median) : undefined],
    );
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attrs({ name: 'npm run bench', ...counts })}>`,
    `  <testsuite${attrs({ name: `bench: ${model} on ${device}`, ...counts, timestamp, hostname: input.hostname || 'localhost' })}>`,
    '    <properties>',
    ...props
      .filter(([, v]) => v !== undefined)
      .map(([name, value]) => `      <property${attrs({ name, value })}/>`),
    '    </properties>',
  ];
  const runCase = `    <testcase${attrs({ classname, name: 'benchmark completed', time: seconds(runMs || timeMs) })}`;
  if (error) {
    const line = `error${error.code ? ` [${error.code}]` : ''}: ${error.message}`;
    lines.push(
      `${runCase}>`,
      `      <error${attrs({ message: error.message, type: error.code ?? 'error' })}>${xmlEscape(line)}</error>`,
      '    </testcase>',
    );
  } else if (result) {
    const runs = result.runs.length;
    const out = result.tests
      ? `llama-bench tests of ${model} on ${device} (tok/s, mean ± std): ${result.tests.map((t) => `${t.name} ${testFigure(t)}`).join(', ')}`
      : `${runs} measured run${runs === 1 ? '' : 's'} of ${model} on ${device}: median decode ${fmtSig(result.summary.decodeTokensPerSecond?.median)} tok/s, median TTFT ${fmtSig(result.summary.ttftMs?.median)} ms`;
    lines.push(`${runCase}>`, `      <system-out>${xmlEscape(out)}</system-out>`, '    </testcase>');
  } else lines.push(`${runCase}/>`);
  for (const o of outcomes) {
    const tc = `    <testcase${attrs({ classname, name: thresholdName(o), time: '0.000' })}`;
    if (error)
      lines.push(
        `${tc}>`,
        `      <skipped${attrs({ message: 'the benchmark did not complete' })}/>`,
        '    </testcase>',
      );
    else if (o.passed) lines.push(`${tc}/>`);
    else
      lines.push(
        `${tc}>`,
        `      <failure${attrs({ message: o.message, type: 'threshold' })}>${xmlEscape(
          `${o.metric}: measured ${fmtSig(o.measured)} ${o.unit}, threshold ${o.kind === 'min' ? '>=' : '<='} ${o.limit} ${o.unit} (${o.flag})`,
        )}</failure>`,
        '    </testcase>',
      );
  }
  lines.push('  </testsuite>', '</testsuites>');
  return `${lines.join('\n')}\n`;
}

/** `pp512 @ d4096` → `pp512_d4096`: a llama-bench test's name as a JUnit property name's stem. */
const testKey = (name: string) => name.replace(/[^A-Za-z0-9]+/g, '_');

/** `tg128 12.3 ± 0.4 tok/s`: a llama-bench test's mean and standard deviation over its repetitions. */
const testFigure = (t: LlamaBenchTest) =>
  `${fmtSig(t.tokensPerSecond.mean)} ± ${fmtSig(t.tokensPerSecond.std)}`;

/** What {@link summaryMarkdown} reports: a result or a failed run, and the thresholds' verdicts. */
export interface SummaryInput {
  result?: BenchResult;
  outcomes: readonly ThresholdOutcome[];
  error?: RunError;
  device?: BenchDevice;
  modelId?: string;
}

/** `✓ median decode tok/s >= 10 (12.3)` / `✗ …`: a threshold in a table cell. */
const outcomeCell = (o: ThresholdOutcome) =>
  `${o.passed ? '✓' : '✗'} ${thresholdName(o)} (${fmtSig(o.measured)})`;

/** A remote server's result (src/bench/remote.ts `remoteDevice`): no adapter of this machine at all. */
function isRemote(d: { vendor: string }): boolean {
  return d.vendor === 'remote';
}

/**
 * A Markdown section for a CI job summary (GitHub's `$GITHUB_STEP_SUMMARY` is appended to): a heading, a
 * table with the model, device, adapter kind (hardware / software), median TTFT, prefill tok/s, decode
 * tok/s, TPOT and the thresholds (✓ met, ✗ missed, with the measured figure), then a line per missed
 * threshold; a failed run gives its error line instead of figures. A `--llama-bench` result has a column
 * per pp/tg test (tokens/s, mean ± std) in place of the four medians. Ends with a blank line, so sections from
 * several runs appended to one file stay apart. The model, device and error message (a server's words)
 * are escaped ({@link markdownText}): no HTML, link or line break of theirs reaches the job page.
 */
export function summaryMarkdown(input: SummaryInput): string {
  const { result, outcomes, error } = input;
  const model = markdownText(
    result
      ? withFacts(result.model.id, modelFacts({ quantization: result.model.quantization }))
      : (input.modelId ?? '–'),
  );
  const dev = input.device ?? result?.device;
  const software =
    dev && isRemote(dev)
      ? undefined
      : result
        ? isSoftwareResult(result)
        : dev
          ? softwareDeviceReasons(dev).length > 0
          : undefined;
  const s = result?.summary;
  const tests = result?.tests;
  const verdict = error
    ? 'failed'
    : outcomes.some((o) => !o.passed)
      ? 'threshold missed'
      : outcomes.length > 0
        ? 'thresholds met'
        : 'done';
  const lines = [
    `### WebGPU LLM benchmark: ${model} — ${verdict}`,
    '',
    ...markdownTable(
      [
        'Model',
        'Device',
        'Adapter',
        // A --llama-bench result: its pp/tg tests' tokens/s (mean ± std) in place of the prompt plan's medians.
        ...(tests
          ? tests.map((t) => `${t.name} tok/s`)
          : ['TTFT median (ms)', 'Prefill tok/s', 'Decode tok/s', 'TPOT median (ms)']),
        'Thresholds',
      ],
      [
        [
          model,
          markdownText(deviceText(result, dev)),
          dev && isRemote(dev)
            ? 'remote server'
            : software === undefined
              ? '–'
              : software
                ? 'software (CPU)'
                : 'hardware',
          ...(tests
            ? tests.map(testFigure)
            : [
                fmtSig(s?.ttftMs?.median),
                fmtSig(s?.prefillTokensPerSecond?.median),
                fmtSig(s?.decodeTokensPerSecond?.median),
                fmtSig(s?.tpotMs?.median),
              ]),
          outcomes.length === 0
            ? 'none set'
            : error
              ? outcomes.map((o) => `– ${thresholdName(o)} (not run)`).join('<br>')
              : outcomes.map(outcomeCell).join('<br>'),
        ],
      ],
      // Text left (model, device, adapter, thresholds), figures right.
      [
        'left',
        'left',
        'left',
        ...(tests
          ? tests.map((): MarkdownAlign => 'right')
          : (['right', 'right', 'right', 'right'] as const)),
        'left',
      ],
    ),
  ];
  if (error)
    lines.push(
      '',
      `**The benchmark failed:** error${error.code ? ` [${markdownText(error.code)}]` : ''}: ${markdownText(error.message)}`,
    );
  for (const o of outcomes) if (!error && !o.passed) lines.push('', `**Threshold missed:** ${o.message}.`);
  if (software && !error)
    lines.push(
      '',
      '_Software adapter: WebGPU ran on the CPU, so these figures measure the processor, not a GPU._',
    );
  return `${lines.join('\n')}\n\n`;
}
