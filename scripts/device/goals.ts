/**
 * The open GPU issues' goals read off one device run's JSON (scripts/device/run.sh's results.tar):
 * issue 40 (decode ≥ 1.0× llama.cpp Vulkan tg on every row and at depth 4096, tg@4096 ÷ tg@0 ≥ 0.9, the 8B
 * Q4_K_M decode at ≥ 35% of the measured bandwidth, argmax ≤ 20 µs, the GPU busy ≥ 0.95 of a token), issue
 * 41 (pp ≥ 1.0× llama.cpp on every row, and which prefill tile each row chose) and issue 45 (≥ 1.8× decode
 * from drafting on a pair with ≥ 70% acceptance, the same tokens as plain decoding). Used by record.ts.
 */

/** One llama-bench test's figures (compare.ts): tok/s mean over the repetitions. */
interface Test {
  mean: number;
}
/** The part of a compare.json row this reads. */
export interface CompareRow {
  model: string;
  kvType?: string;
  ours?: {
    tests?: Record<string, Test>;
    bytesPerToken?: number;
    kernels?: {
      prefill?: {
        matmul?: string;
        tileTrials?: { tile: string; ms: number }[];
        subgroupMatrix?: { chosen?: boolean; tile?: string; reason?: string };
      };
    };
  };
  llama?: { tests?: Record<string, Test>; error?: string };
}
export interface CompareJson {
  nPrompt: number;
  nGen: number;
  bandwidthGBs?: number;
  rows: CompareRow[];
}
export interface ProfileJson {
  rows: {
    model: string;
    argmaxUs?: number | null;
    busyFraction?: number | null;
    skipped?: string;
    error?: string;
  }[];
}
export interface DraftJson {
  rows: {
    target: string;
    draft: string;
    speedup?: number;
    acceptance?: number;
    sameOutput?: boolean;
    skipped?: string;
    error?: string;
  }[];
}

/** One goal: what the issue asks, what the run measured, and whether it is met (undefined: not measured). */
export interface Goal {
  issue: number;
  goal: string;
  measured: string;
  met: boolean | undefined;
}

const x2 = (v: number) => `${v.toFixed(2)}×`;

/** `tgN` / `tgN @ dD` / `ppN` means of one engine, or undefined. */
function mean(tests: Record<string, Test> | undefined, key: string): number | undefined {
  const m = tests?.[key]?.mean;
  return typeof m === 'number' && Number.isFinite(m) && m > 0 ? m : undefined;
}

/**
 * Every row's ratio for `key` (ours ÷ llama.cpp), as "model r×" pieces, their minimum, and the rows
 * without both figures (a skipped depth, llama.cpp failed).
 */
function ratios(
  c: CompareJson,
  key: string,
): { parts: string[]; min: number | undefined; missing: string[] } {
  const parts: string[] = [];
  const missing: string[] = [];
  let min: number | undefined;
  for (const r of c.rows) {
    const o = mean(r.ours?.tests, key);
    const l = mean(r.llama?.tests, key);
    if (o === undefined || l === undefined) {
      missing.push(r.model);
      continue;
    }
    const q = o / l;
    parts.push(`${r.model} ${x2(q)}`);
    min = min === undefined ? q : Math.min(min, q);
  }
  return { parts, min, missing };
}

/**
 * "Every row" goals: met when every row reaches `least`; a row below it fails it; rows without figures
 * leave it open (—) unless another row already failed.
 */
function everyRow(min: number | undefined, missing: string[], least: number): boolean | undefined {
  if (min === undefined) return undefined;
  if (min < least) return false;
  return missing.length ? undefined : true;
}
const noFigure = (missing: string[]) => (missing.length ? `; no figure for ${missing.join(', ')}` : '');

/**
 * The goals of issues 40, 41 and 45 from whichever of the run's JSON files exist (a phase not run gives
 * "not measured" rows). `depth` is the deep decode test's depth (4096 in run.sh's default `DEPTHS`).
 */
export function deviceGoals(
  files: { compare?: CompareJson; profile?: ProfileJson; draft?: DraftJson },
  depth = 4096,
): Goal[] {
  const goals: Goal[] = [];
  const { compare: c, profile: p, draft: d } = files;
  const none = (issue: number, goal: string, phase: string): Goal => ({
    issue,
    goal,
    measured: `not measured (no ${phase} results)`,
    met: undefined,
  });
  const fromRatios = (issue: number, goal: string, key: string): Goal => {
    if (!c) return none(issue, goal, 'compare');
    const r = ratios(c, key);
    return r.min === undefined
      ? { issue, goal, measured: `no row has both engines' ${key}`, met: undefined }
      : {
          issue,
          goal,
          measured: r.parts.join(', ') + noFigure(r.missing),
          met: everyRow(r.min, r.missing, 1),
        };
  };
  const tg = c ? `tg${c.nGen}` : 'tg128';
  const pp = c ? `pp${c.nPrompt}` : 'pp512';
  goals.push(fromRatios(40, `decode ${tg} ≥ 1.0× llama.cpp Vulkan on every row`, tg));
  goals.push(fromRatios(40, `decode ${tg} at depth ${depth} ≥ 1.0× llama.cpp`, `${tg} @ d${depth}`));
  if (!c) goals.push(none(40, `${tg} at depth ${depth} ÷ at depth 0 ≥ 0.9 (ours)`, 'compare'));
  else {
    const parts: string[] = [];
    const missing: string[] = [];
    let min: number | undefined;
    for (const r of c.rows) {
      const a = mean(r.ours?.tests, tg);
      const b = mean(r.ours?.tests, `${tg} @ d${depth}`);
      if (a === undefined || b === undefined) {
        missing.push(r.model);
        continue;
      }
      parts.push(`${r.model} ${(b / a).toFixed(2)}`);
      min = min === undefined ? b / a : Math.min(min, b / a);
    }
    goals.push({
      issue: 40,
      goal: `${tg} at depth ${depth} ÷ at depth 0 ≥ 0.9 (ours)`,
      measured: parts.length ? parts.join(', ') + noFigure(missing) : `no row has ours at depth ${depth}`,
      met: everyRow(min, missing, 0.9),
    });
    // Share of bandwidth: tok/s × bytes read per token ÷ the measured bandwidth (compare.ts's definition).
    const q = c.rows.find((r) => /8b-q4_k_m/i.test(r.model));
    const t = q && mean(q.ours?.tests, tg);
    const share =
      t !== undefined && q?.ours?.bytesPerToken && c.bandwidthGBs
        ? (t * q.ours.bytesPerToken) / (c.bandwidthGBs * 1e9)
        : undefined;
    goals.push({
      issue: 40,
      goal: '8B Q4_K_M decode ≥ 35% of the measured bandwidth',
      measured:
        share === undefined
          ? 'no 8B Q4_K_M row'
          : `${(share * 100).toFixed(1)}% (${t!.toFixed(1)} tok/s, ${c.bandwidthGBs} GB/s)`,
      met: share === undefined ? undefined : share >= 0.35,
    });
  }
  if (!p) {
    goals.push(none(40, 'argmax ≤ 20 µs per token', 'profile'));
    goals.push(none(40, 'GPU busy ≥ 0.95 of a decode token', 'profile'));
  } else {
    const rows = p.rows.filter((r) => !r.skipped && !r.error);
    const argmax = rows.filter((r) => typeof r.argmaxUs === 'number');
    goals.push({
      issue: 40,
      goal: 'argmax ≤ 20 µs per token',
      measured: argmax.length
        ? argmax.map((r) => `${r.model} ${r.argmaxUs!.toFixed(1)} µs`).join(', ')
        : 'no row',
      met: argmax.length ? argmax.every((r) => r.argmaxUs! <= 20) : undefined,
    });
    const busy = rows.filter((r) => typeof r.busyFraction === 'number');
    goals.push({
      issue: 40,
      goal: 'GPU busy ≥ 0.95 of a decode token',
      measured: busy.length
        ? busy.map((r) => `${r.model} ${r.busyFraction!.toFixed(2)}`).join(', ')
        : 'no row',
      met: busy.length ? busy.every((r) => r.busyFraction! >= 0.95) : undefined,
    });
  }
  goals.push(fromRatios(41, `prefill ${pp} ≥ 1.0× llama.cpp Vulkan on every row`, pp));
  if (c) {
    const tiles = c.rows
      .filter((r) => r.ours?.kernels?.prefill)
      .map((r) => {
        const pf = r.ours!.kernels!.prefill!;
        const sg = pf.subgroupMatrix;
        const chosen = sg?.chosen ? `subgroup matrices ${sg.tile ?? ''}`.trim() : (pf.matmul ?? '?');
        const trials = pf.tileTrials?.map((t) => `${t.tile} ${t.ms.toFixed(3)} ms`).join(' / ');
        return `${r.model}: ${chosen}${trials ? ` (trial ${trials})` : ''}${!sg?.chosen && sg?.reason ? `; subgroup matrices not chosen: ${sg.reason}` : ''}`;
      });
    goals.push({
      issue: 41,
      goal: 'the prefill tile each row chose (subgroup matrices where they won)',
      measured: tiles.length ? tiles.join('; ') : 'no row',
      met: undefined,
    });
  }
  if (!d) goals.push(none(45, '≥ 1.8× decode from drafting on a pair with ≥ 70% acceptance', 'draft'));
  else {
    const ran = d.rows.filter((r) => typeof r.speedup === 'number' && typeof r.acceptance === 'number');
    const high = ran.filter((r) => r.acceptance! >= 0.7);
    goals.push({
      issue: 45,
      goal: '≥ 1.8× decode from drafting on a pair with ≥ 70% acceptance',
      measured: ran.length
        ? ran
            .map(
              (r) =>
                `${r.target} > ${r.draft}: ${x2(r.speedup!)} at ${(r.acceptance! * 100).toFixed(0)}% acceptance` +
                (r.sameOutput === false ? ' (TOKENS DIFFER)' : ''),
            )
            .join('; ')
        : 'no pair ran',
      met: high.length ? high.some((r) => r.speedup! >= 1.8) : undefined,
    });
    goals.push({
      issue: 45,
      goal: 'drafted tokens identical to plain greedy decoding',
      measured: ran.length
        ? `${ran.filter((r) => r.sameOutput).length} of ${ran.length} pairs`
        : 'no pair ran',
      met: ran.length ? ran.every((r) => r.sameOutput === true) : undefined,
    });
  }
  return goals;
}

/** The goals as a markdown table: issue, goal, measured, met (yes / no / —). */
export function goalsTable(goals: Goal[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    '| issue | goal | measured | met |',
    '| ---: | --- | --- | --- |',
    ...goals.map(
      (g) =>
        `| ${g.issue} | ${cell(g.goal)} | ${cell(g.measured)} | ${g.met === undefined ? '—' : g.met ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}
