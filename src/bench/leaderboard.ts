/**
 * The leaderboard `npm run bench:report -- --html FILE` opens with (issue 21): devices × models, each cell
 * the device's decode tokens/s on that model with prefill tokens/s, TTFT and the result's date (and, where
 * the page measured it, the device's own CPU through llama.cpp's wasm build and GPU ÷ CPU); devices
 * ranked, each named with its fingerprint; then one ranked table per model. DOM-free and Node-free: plain
 * data ({@link leaderboard}) and HTML strings ({@link leaderboardHtml}) that `htmlReport` puts in its page.
 *
 * Rules:
 * - A device is its fingerprint (src/bench/fingerprint.ts): the same adapter under two labels is one device,
 *   named as its newest result names it. A model is its id and quantization.
 * - A partial result (interrupted or failed: fewer runs than its plan) is left out; "All results" keeps it.
 * - Engines are compared by their label (`engineLabel`: drafting, constrained output and a plan or KV cache
 *   other than the default are part of it), so differently measured runs never share a line. A setup all
 *   its results share ({@link Leaderboard.common}) is said once, in the lead, and left out of the labels.
 * - Several results for one device, model and engine: the newest counts (a leaderboard shows where things
 *   stand; the page's "All results" table below keeps every file). Other engines on the same device and
 *   model are shown beside it in the cell, fastest first.
 * - Devices are ranked by their score: the geometric mean, over the models they ran, of their decode speed
 *   relative to the fastest device on that model (1 = fastest on every model it ran). Devices with no decode
 *   figure come last; ties go by name. Models are ordered by how many devices ran them, then by name.
 */

import { fmtSig } from '../util/format.ts';
import { escapeHtml as esc } from '../util/html.ts';
import { fmtRatio } from './cpu-compare.ts';
import { markdownCode, markdownTable, markdownText } from './markdown.ts';
import { commonSetup, commonSetupText, type ReportRow, shownEngine, withFacts } from './report.ts';
import { modelFacts } from './types.ts';

/** The newest result of one device, model and engine, and how many older ones it replaced. */
export interface LeaderEntry {
  row: ReportRow;
  /** Older results of the same device, model and engine (not shown in the matrix). */
  older: number;
}

export interface LeaderDevice {
  fingerprint: string;
  /** As the newest of its results names it. */
  name: string;
  software: boolean;
  /** 1-based; devices with equal scores share a rank. */
  rank: number;
  /** Geometric mean of decode / the model's best decode over the models it ran; undefined without any. */
  score?: number;
  /** Result files of this device. */
  results: number;
  /** The newest of its results' dates (ISO). */
  latest: string;
}

export interface LeaderModel {
  /** `id (quantization)`. */
  key: string;
  id: string;
  quantization: string;
  parameters: number;
  /** Devices that ran it. */
  devices: number;
  /** The highest decode median on it (tok/s). */
  bestDecode?: number;
}

/** One line of a model's ranking. */
export interface RankedEntry extends LeaderEntry {
  /** 1-based by decode median (equal medians share a rank); entries without one are unranked. */
  rank?: number;
}

export interface Leaderboard {
  devices: LeaderDevice[];
  models: LeaderModel[];
  /** Entries of a device on a model (fastest decode first); see {@link cellKey}. */
  cells: Map<string, LeaderEntry[]>;
  /** Per model, in {@link Leaderboard.models}' order: every device's entries, fastest decode first. */
  rankings: { model: LeaderModel; entries: RankedEntry[] }[];
  /** Partial results (interrupted or failed) left out. */
  partial: number;
  /** `--llama-bench` results (pp/tg tests, nothing to rank by prompt-plan decode) left out. */
  llamaBench: number;
  /**
   * The setup every result in it shares ({@link commonSetup}: `['16 tokens', 'kv f32']`), stated once in
   * the lead; entries name only their other parts ({@link entryEngine}). Empty for default plans.
   */
  common: string[];
}

/** An entry's engine as the leaderboard shows it: its label less the setup all entries share. */
export function entryEngine(lb: Pick<Leaderboard, 'common'>, r: ReportRow): string {
  return shownEngine(r, lb.common);
}

/** A model's key: id and quantization. */
export const modelKey = (r: Pick<ReportRow, 'model' | 'quantization'>): string =>
  withFacts(r.model, modelFacts({ quantization: r.quantization }));

/** The key of a device's cell on a model in {@link Leaderboard.cells}. */
export const cellKey = (fingerprint: string, model: string): string => `${fingerprint}\u0000${model}`;

const time = (r: ReportRow): number => {
  const t = Date.parse(r.createdAt);
  return Number.isFinite(t) ? t : Number.NEGATIVE_INFINITY;
};
const decode = (e: LeaderEntry): number | undefined => {
  const v = e.row.decodeTps?.median;
  return v !== undefined && Number.isFinite(v) ? v : undefined;
};
/** Fastest decode first; entries without a figure last; then by engine name. */
const byDecode = (a: LeaderEntry, b: LeaderEntry): number =>
  (decode(b) ?? Number.NEGATIVE_INFINITY) - (decode(a) ?? Number.NEGATIVE_INFINITY) ||
  a.row.engine.localeCompare(b.row.engine) ||
  a.row.device.localeCompare(b.row.device);

/** Ranks (1-based) of values sorted best first; equal values share a rank; undefined values get none. */
function ranks<T>(sorted: readonly T[], value: (t: T) => number | undefined): (number | undefined)[] {
  const out: (number | undefined)[] = [];
  sorted.forEach((t, i) => {
    const v = value(t);
    if (v === undefined) out.push(undefined);
    else out.push(i > 0 && value(sorted[i - 1]) === v ? out[i - 1] : i + 1);
  });
  return out;
}

/** Merges report rows (any order, any number per device and model) into the leaderboard. */
export function leaderboard(allRows: readonly ReportRow[]): Leaderboard {
  const rows = allRows.filter((r) => !r.partial && !r.llamaBench);
  // Newest result per device, model and engine.
  const newest = new Map<string, LeaderEntry>();
  for (const row of rows) {
    const k = `${cellKey(row.fingerprint, modelKey(row))}\u0000${row.engine}`;
    const had = newest.get(k);
    if (!had) newest.set(k, { row, older: 0 });
    else if (time(row) > time(had.row)) newest.set(k, { row, older: had.older + 1 });
    else had.older++;
  }
  const cells = new Map<string, LeaderEntry[]>();
  for (const e of newest.values()) {
    const k = cellKey(e.row.fingerprint, modelKey(e.row));
    cells.set(k, [...(cells.get(k) ?? []), e]);
  }
  for (const list of cells.values()) list.sort(byDecode);

  // Models: coverage, then name; the best decode on each.
  const modelMap = new Map<string, LeaderModel>();
  const modelDevices = new Map<string, Set<string>>();
  for (const e of newest.values()) {
    const key = modelKey(e.row);
    const m = modelMap.get(key) ?? {
      key,
      id: e.row.model,
      quantization: e.row.quantization,
      parameters: e.row.parameters,
      devices: 0,
    };
    modelMap.set(key, m);
    const set = modelDevices.get(key) ?? new Set<string>();
    set.add(e.row.fingerprint);
    modelDevices.set(key, set);
    const d = decode(e);
    if (d !== undefined && (m.bestDecode === undefined || d > m.bestDecode)) m.bestDecode = d;
  }
  for (const [key, set] of modelDevices) (modelMap.get(key) as LeaderModel).devices = set.size;
  const models = [...modelMap.values()].sort((a, b) => b.devices - a.devices || a.key.localeCompare(b.key));

  // Devices: named by their newest result; scored by relative decode.
  const devMap = new Map<string, { newest: ReportRow; results: number }>();
  for (const row of rows) {
    const d = devMap.get(row.fingerprint);
    if (!d) devMap.set(row.fingerprint, { newest: row, results: 1 });
    else {
      d.results++;
      if (time(row) > time(d.newest)) d.newest = row;
    }
  }
  const devices: LeaderDevice[] = [...devMap.entries()].map(([fingerprint, d]) => {
    const rel: number[] = [];
    for (const m of models) {
      const best = cells.get(cellKey(fingerprint, m.key))?.[0];
      const v = best ? decode(best) : undefined;
      if (v !== undefined && m.bestDecode !== undefined && m.bestDecode > 0 && v > 0)
        rel.push(v / m.bestDecode);
    }
    const score =
      rel.length > 0 ? Math.exp(rel.reduce((s, x) => s + Math.log(x), 0) / rel.length) : undefined;
    return {
      fingerprint,
      name: d.newest.device,
      software: d.newest.software,
      rank: 0,
      ...(score !== undefined ? { score } : {}),
      results: d.results,
      latest: d.newest.createdAt,
    };
  });
  devices.sort(
    (a, b) =>
      (b.score ?? Number.NEGATIVE_INFINITY) - (a.score ?? Number.NEGATIVE_INFINITY) ||
      a.name.localeCompare(b.name) ||
      a.fingerprint.localeCompare(b.fingerprint),
  );
  const devRanks = ranks(devices, (d) => d.score);
  devices.forEach((d, i) => {
    d.rank = devRanks[i] ?? i + 1;
  });

  const rankings = models.map((model) => {
    const entries: LeaderEntry[] = devices.flatMap((d) => cells.get(cellKey(d.fingerprint, model.key)) ?? []);
    entries.sort(byDecode);
    const r = ranks(entries, decode);
    return {
      model,
      entries: entries.map((e, i) => (r[i] === undefined ? { ...e } : { ...e, rank: r[i] })),
    };
  });
  return {
    devices,
    models,
    cells,
    rankings,
    partial: allRows.filter((r) => r.partial).length,
    llamaBench: allRows.filter((r) => r.llamaBench && !r.partial).length,
    common: commonSetup(rows),
  };
}

// ---------------------------------------------------------------------------------------------- HTML

const day = (iso: string) => iso.slice(0, 10);

/**
 * The device's own CPU beside it (the page's "Your CPU" run, llama.cpp's wasm build on the same model):
 * "CPU 41 tok/s · GPU 7.3×" (the GPU's decode ÷ the CPU's).
 */
function cpuText(c: NonNullable<ReportRow['cpu']>): string {
  return `CPU ${fmtSig(c.decodeTps)} tok/s · GPU ${fmtRatio(c.decodeRatio)}`;
}

/** One engine's figures in a matrix cell (`engine`: its label as shown, or undefined to leave it out). */
function entryHtml(e: LeaderEntry, best: boolean, engine: string | undefined): string {
  const r = e.row;
  const older = e.older > 0 ? `; ${e.older} older result${e.older === 1 ? '' : 's'} not shown` : '';
  return [
    `<div class="entry${best ? ' best' : ''}" title="${esc(`${r.source}, ${r.createdAt}${older}`)}">`,
    `<span class="decode">${esc(fmtSig(r.decodeTps?.median))}<small> tok/s</small>${best ? '<span class="star" aria-label="fastest on this model"> ★</span>' : ''}</span>`,
    `<span class="sub"><span class="nw">prefill ${esc(fmtSig(r.prefillTps?.median))} tok/s</span> · <span class="nw">TTFT ${esc(fmtSig(r.ttftMs?.median))} ms</span></span>`,
    r.cpu ? `<span class="sub cpu">${esc(cpuText(r.cpu))}</span>` : '',
    `<span class="sub">${engine !== undefined ? `${esc(engine)} · ` : ''}<time datetime="${esc(r.createdAt)}">${esc(day(r.createdAt))}</time></span>`,
    '</div>',
  ].join('');
}

/** A device's name with its fingerprint (and "software" for a CPU-emulated adapter). */
function deviceHtml(name: string, fingerprint: string, software: boolean): string {
  return `<span class="dev">${esc(name)}</span>${software && !/software/i.test(name) ? ' <span class="sw">software</span>' : ''}<code class="fp" title="device fingerprint">${esc(fingerprint)}</code>`;
}

/**
 * Entries name their engine where there are several, or one that is more than an engine's name once the
 * setup all share ({@link Leaderboard.common}, said in the lead) is taken out.
 */
function showEngines(lb: Leaderboard): boolean {
  const shown = lb.rankings.flatMap((r) =>
    r.entries.map((e) => ({ row: e.row, label: entryEngine(lb, e.row) })),
  );
  return (
    new Set(shown.map((x) => x.label)).size > 1 ||
    shown.some((x) => (x.row.engineName === undefined ? x.row.labelled : x.label !== x.row.engineName))
  );
}

/** The lead's sentence on the setup all entries share (` All runs: 16 tokens, kv f32.`), or ''. */
const commonNote = (lb: Leaderboard): string =>
  lb.common.length > 0 ? ` ${commonSetupText(lb.common, 'All ranked runs')}` : '';

/** The leaderboard's note on partial results (interrupted or failed) and llama-bench results left out, or ''. */
const partialNote = (lb: Leaderboard): string =>
  (lb.partial > 0
    ? ` ${lb.partial} partial result${lb.partial === 1 ? ' is' : 's are'} left out (interrupted or failed: fewer runs than planned).`
    : '') +
  (lb.llamaBench > 0
    ? ` ${lb.llamaBench} --llama-bench result${lb.llamaBench === 1 ? ' is' : 's are'} left out (pp/tg tests, not prompt-plan runs).`
    : '');

/**
 * The leaderboard's sections: the devices × models matrix and a ranked table per model, each table in a
 * horizontally scrolling box (the device column stays in view), so a phone-wide page never overflows.
 */
export function leaderboardHtml(lb: Leaderboard): string {
  const showEngine = showEngines(lb);
  const matrix = [
    '<div class="scroll" tabindex="0" role="region" aria-label="Leaderboard: devices × models">',
    '<table class="matrix"><thead><tr><th scope="col">Device</th>',
    ...lb.models.map(
      (m) =>
        `<th scope="col" class="model">${esc(m.id)}<span class="sub">${esc([modelFacts(m), `${m.devices} device${m.devices === 1 ? '' : 's'}`].filter(Boolean).join(' · '))}</span></th>`,
    ),
    '</tr></thead><tbody>',
    ...lb.devices.map((d) => {
      const cells = lb.models.map((m) => {
        const list = lb.cells.get(cellKey(d.fingerprint, m.key));
        if (!list) return '<td class="empty"><span aria-label="not measured">–</span></td>';
        return `<td>${list
          .map((e) =>
            entryHtml(
              e,
              e.row.decodeTps?.median !== undefined && e.row.decodeTps.median === m.bestDecode,
              showEngine ? entryEngine(lb, e.row) : undefined,
            ),
          )
          .join('')}</td>`;
      });
      const score =
        d.score === undefined
          ? 'no decode figure'
          : `score ${fmtSig(d.score)} (1 = fastest on every model it ran)`;
      return `<tr data-fingerprint="${esc(d.fingerprint)}"><th scope="row"><span class="rank" title="${esc(score)}">${d.rank}</span> ${deviceHtml(d.name, d.fingerprint, d.software)}<span class="sub">${d.results} result${d.results === 1 ? '' : 's'}, latest <time datetime="${esc(d.latest)}">${esc(day(d.latest))}</time></span></th>${cells.join('')}</tr>`;
    }),
    '</tbody></table></div>',
  ].join('\n');

  const rankings = lb.rankings.map(({ model, entries }) =>
    [
      `<h3>${esc(model.id)}${modelFacts(model) ? ` <span class="sub">(${esc(modelFacts(model))})</span>` : ''}</h3>`,
      `<div class="scroll" tabindex="0" role="region" aria-label="${esc(`Ranking on ${model.key}`)}">`,
      '<table class="ranking"><thead><tr>',
      ...[
        '#',
        'Device',
        'Engine',
        'Decode tok/s',
        'Prefill tok/s',
        'TTFT ms',
        'GPU ÷ CPU',
        'Runs',
        'Date',
      ].map((h, i) => `<th scope="col"${i === 0 || i >= 3 ? ' class="num"' : ''}>${h}</th>`),
      '</tr></thead><tbody>',
      ...entries.map((e) => {
        const r = e.row;
        const decodeCell = r.decodeTps ? `${fmtSig(r.decodeTps.median)} ± ${fmtSig(r.decodeTps.std)}` : '–';
        return `<tr title="${esc(r.source)}"><td class="num">${e.rank ?? '–'}</td><th scope="row">${deviceHtml(r.device, r.fingerprint, r.software)}</th><td>${esc(entryEngine(lb, r))}</td><td class="num">${esc(decodeCell)}</td><td class="num">${esc(fmtSig(r.prefillTps?.median))}</td><td class="num">${esc(fmtSig(r.ttftMs?.median))}</td><td class="num"${r.cpu ? ` title="${esc(cpuText(r.cpu))}"` : ''}>${r.cpu ? esc(fmtRatio(r.cpu.decodeRatio)) : '–'}</td><td class="num">${r.runs}</td><td class="num"><time datetime="${esc(r.createdAt)}">${esc(day(r.createdAt))}</time></td></tr>`;
      }),
      '</tbody></table></div>',
    ].join('\n'),
  );

  return [
    '<section id="leaderboard" aria-labelledby="lb-h">',
    '<h2 id="lb-h">Leaderboard</h2>',
    `<p class="lead">${lb.devices.length} device${lb.devices.length === 1 ? '' : 's'} × ${lb.models.length} model${lb.models.length === 1 ? '' : 's'}: median decode tokens/s (★ the fastest on each model), prefill tokens/s, time to first token (TTFT) and the result's date.${esc(commonNote(lb))}</p>`,
    matrix,
    `<p class="note">Each cell is the newest result of that device, model and engine (older ones are in "All results" below). Devices are ranked by the geometric mean, over the models they ran, of their decode speed relative to the fastest device on that model (hover a rank for the score); each is named with its fingerprint, the same for the same adapter and browser whatever its label.${esc(partialNote(lb))}</p>`,
    '</section>',
    '<section id="rankings" aria-labelledby="rk-h">',
    '<h2 id="rk-h">Rankings by model</h2>',
    ...rankings,
    '</section>',
  ].join('\n');
}

/** The leaderboard's styles (the page's own are in report.ts). */
export const LEADERBOARD_CSS = `
  h2 { font-size: 1.2rem; margin: 2rem 0 0.5rem; }
  h3 { font-size: 1rem; margin: 1.25rem 0 0.25rem; }
  .scroll { overflow-x: auto; max-width: 100%; margin: 0.5rem 0 1.5rem; -webkit-overflow-scrolling: touch; scrollbar-width: thin; scrollbar-color: #888 transparent; }
  /* A box that scrolls shows a shadow at its right edge until scrolled to the end (the cover moves with the content). */
  .scroll { background: linear-gradient(to left, #fff 40%, rgb(255 255 255 / 0)) right / 2.5rem 100% no-repeat local, radial-gradient(farthest-side at 100% 50%, rgb(0 0 0 / 0.22), transparent) right / 0.9rem 100% no-repeat scroll; }
  .scroll:focus-visible { outline: 2px solid #2563eb; outline-offset: 2px; }
  .scroll > table { margin: 0; }
  table.matrix, table.ranking { width: auto; min-width: 100%; }
  .matrix th[scope="row"], .ranking th[scope="row"], .all th[scope="row"] { position: sticky; left: 0; background: #fff; font-weight: normal; min-width: 9rem; max-width: 14rem; z-index: 1; }
  .matrix thead th:first-child, .all thead th:first-child { position: sticky; left: 0; z-index: 2; }
  .matrix th.model { min-width: 10rem; }
  .matrix td { min-width: 10rem; }
  .rank { display: inline-block; min-width: 1.4rem; padding: 0 0.3rem; margin-right: 0.15rem; border-radius: 999px; background: #1e3a8a; color: #fff; font-size: 0.8rem; font-weight: 600; text-align: center; }
  .matrix td.empty { color: #888; text-align: center; }
  .entry + .entry { margin-top: 0.4rem; padding-top: 0.4rem; border-top: 1px dashed #ddd; }
  .decode { display: block; font-size: 1.15rem; font-weight: 600; font-variant-numeric: tabular-nums; white-space: nowrap; }
  .decode small { font-size: 0.75rem; font-weight: normal; }
  .best .decode { color: #15803d; }
  .sub { display: block; font-size: 0.8rem; color: #555; font-weight: normal; }
  h3 .sub { display: inline; }
  .dev { font-weight: 600; }
  code.fp { display: table; margin-top: 0.1rem; font-size: 0.75rem; background: #f4f4f5; padding: 0 0.2rem; border-radius: 3px; }
  .nw, time { white-space: nowrap; }
  .lead { margin: 0.25rem 0; }
  .sw { font-size: 0.7rem; background: #fef3c7; color: #92400e; padding: 0 0.3rem; border-radius: 3px; }
  @media (max-width: 600px) {
    body { margin: 1rem auto; padding: 0 0.75rem; }
    h1 { font-size: 1.25rem; }
    .matrix th[scope="row"], .ranking th[scope="row"], .all th[scope="row"] { min-width: 7.5rem; max-width: 9rem; }
    .matrix td, .matrix th.model { min-width: 8.5rem; }
  }
  @media (prefers-color-scheme: dark) {
    .matrix th[scope="row"], .ranking th[scope="row"], .all th[scope="row"] { background: #111; }
    .scroll { background: linear-gradient(to left, #111 40%, rgb(17 17 17 / 0)) right / 2.5rem 100% no-repeat local, radial-gradient(farthest-side at 100% 50%, rgb(255 255 255 / 0.3), transparent) right / 0.9rem 100% no-repeat scroll; }
    .sub { color: #aaa; } code.fp { background: #222; } .best .decode { color: #4ade80; }
    .entry + .entry { border-color: #333; } .sw { background: #422006; color: #fde68a; }
  }
`;

// ---------------------------------------------------------------------------------------------- Markdown

/**
 * The devices × models matrix as Markdown (for a CI job summary beside the per-file table): a row per
 * device in rank order, named with its fingerprint; each cell decode tok/s (★ fastest), prefill, TTFT and
 * the date, lines joined with `<br>` (GitHub renders it in tables). Every value from a result file (device,
 * fingerprint, model, engine, date) is escaped ({@link markdownText}, {@link markdownCode}): the `<br>`s
 * are the only HTML.
 */
export function leaderboardMarkdown(lb: Leaderboard): string {
  if (lb.devices.length === 0) return '';
  const showEngine = showEngines(lb);
  const rows = lb.devices.map((d) => [
    String(d.rank),
    `${markdownText(d.name)} ${markdownCode(d.fingerprint)}`,
    ...lb.models.map((m) => {
      const list = lb.cells.get(cellKey(d.fingerprint, m.key));
      if (!list) return '–';
      return list
        .map((e) => {
          const r = e.row;
          const best = r.decodeTps?.median !== undefined && r.decodeTps.median === m.bestDecode;
          return [
            `**${fmtSig(r.decodeTps?.median)}** tok/s${best ? ' ★' : ''}`,
            `prefill ${fmtSig(r.prefillTps?.median)} tok/s · TTFT ${fmtSig(r.ttftMs?.median)} ms`,
            ...(r.cpu ? [markdownText(cpuText(r.cpu))] : []),
            markdownText(`${showEngine ? `${entryEngine(lb, r)} · ` : ''}${day(r.createdAt)}`),
          ].join('<br>');
        })
        .join('<br><br>');
    }),
  ]);
  return [
    '',
    '### Leaderboard',
    '',
    `${lb.devices.length} device${lb.devices.length === 1 ? '' : 's'} × ${lb.models.length} model${lb.models.length === 1 ? '' : 's'}; the newest result per device, model and engine; ★ the fastest decode on each model; devices ranked by the geometric mean of their decode relative to each model's fastest.${markdownText(commonNote(lb))}${markdownText(partialNote(lb))}`,
    '',
    ...markdownTable(['#', 'Device', ...lb.models.map((m) => markdownText(m.key))], rows, 2),
    '',
  ].join('\n');
}
