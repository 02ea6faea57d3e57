/**
 * Causal attention for prefill batches ({@link prefillAttentionWGSL}): tiles of query tokens × the query
 * heads of one KV head per workgroup over KV tiles (FlashAttention-2, Dao 2023), in a GPU layout
 * (`tiled`: KV tiles in workgroup memory) and a software-adapter layout (`rows`). Shapes, the KV element
 * types and the online softmax as the decode kernel (attention-decode.ts); attention.ts holds the helpers
 * they share, the decode chunks' combine and the per-(head, token) kernel.
 */
import type { KvType } from '../../core/types.ts';
import { capped, flashSupports, inWindow, kDecl, SENTINEL } from './attention.ts';
import { f32Lit, STEP_WGSL } from './common.ts';

/**
 * How a {@link prefillAttentionWGSL} kernel spreads its work (both: one workgroup per tile of query
 * tokens × the query heads of one KV head group, no partials, no combine):
 * - `tiled` (GPUs): FlashAttention-2's loop (Dao, "FlashAttention-2: Faster Attention with Better
 *   Parallelism and Work Partitioning", 2023, Algorithm 1): the workgroup loads each KV tile of `kvTile`
 *   positions into workgroup memory once for all its rows; `lanes` threads share a row (each keeps an
 *   interleaved slice of ≤ 64 dims of q and of the output in registers; their partial q·k meet in
 *   workgroup memory). Two barriers per KV tile (three with lanes > 1).
 * - `rows` (software adapters, where a barrier costs ~20 µs per workgroup and dynamically indexed private
 *   arrays live in memory): each thread keeps `rows` (token, head) rows (the heads of its group first,
 *   then consecutive tokens) in generator-unrolled named registers and reads K and V straight from the
 *   cache, each element serving all of them (SwiftShader loads per lane, so that sharing is what cuts the
 *   loads; the threads of a workgroup read the same positions at about the same time, so the CPU's caches
 *   serve the rest); no workgroup memory, no barriers. On SwiftShader (2 cores), the 60M-parameter shape
 *   (8 heads of 64) at T = 512: 0.13-0.16 s against the per-(head, token) kernel's 0.96-1.1 s.
 */
export interface PrefillLayout {
  kind: 'tiled' | 'rows';
  /** `rows`: threads per workgroup (default 16). */
  threads?: number;
  /**
   * `rows`: most rows (tokens × heads) per thread (default min(8, 256 / headDim), at least 1): each K and
   * V element read serves that many rows. More rows compile slower (4 rows of head dim 64: ~1.5 s on
   * SwiftShader, 8: ~4 s, for ~10% less time).
   */
  rows?: number;
  /** `rows`: positions per unrolled step (1..8, default 1; more made no difference on SwiftShader). */
  block?: number;
  /**
   * `rows`: K and V shared through subgroups of exactly S invocations (2, 4 or 8; the caller checks
   * subgroupMinSize = subgroupMaxSize = S, as mmv's `shareX`). Every thread of a workgroup reads the same
   * positions, so each of a subgroup's S threads loads every S-th vec4 of a position's K and V row and takes
   * the rest from the others with `subgroupBroadcast` (a register shuffle; on SwiftShader a storage load is
   * a gather with bounds checks per invocation). The KV loop then runs to the workgroup's last position
   * (uniform control flow, as the broadcasts need), the causal mask covering each row's tail. `threads`
   * must be a multiple of S (a partial subgroup would broadcast from threads that do not exist).
   */
  shareKv?: number;
}

export interface PrefillAttentionOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  kvType: KvType;
  /** V-cache element type where it differs from K's; default kvType. */
  vKvType?: KvType;
  layout: PrefillLayout;
  /** Attention logit soft-capping, as attention.ts `AttentionOptions.softcap`. */
  softcap?: number;
  /**
   * Sliding window, as attention.ts `AttentionOptions.window`: positions before a row's window are masked, and
   * the KV loop starts at the first row's window (positions before every row's window are not read).
   */
  window?: number;
}

/** The work split of a {@link prefillAttentionWGSL} kernel ({@link prefillAttentionPlan}). */
export interface PrefillAttentionPlan {
  /** Query heads per workgroup (a divisor of nHead / nHeadKv) and workgroups per KV head. */
  headsPerGroup: number;
  groupsPerKvHead: number;
  /** Query tokens per workgroup (BQ): the grid's y is ⌈T / tokensPerTile⌉. */
  tokensPerTile: number;
  /** Query tokens per thread (`rows`: each thread keeps tokensPerThread × headsPerGroup rows; 1 for `tiled`). */
  tokensPerThread: number;
  /** KV positions per tile (BK): per workgroup-memory load (`tiled`) or per unrolled step (`rows`). */
  kvTile: number;
  /** Threads per row (`tiled`; 1 for `rows`) and per workgroup. */
  lanes: number;
  threads: number;
  /** Bytes of workgroup memory (0 for `rows`). */
  workgroupBytes: number;
}

/** Workgroup memory a prefill kernel may use: the spec's minimum maxComputeWorkgroupStorageSize, 16 KiB. */
const PREFILL_WG_BYTES = 16384;

/** Whether {@link prefillAttentionWGSL} takes this shape (as {@link flashSupports}: headDim % 4 = 0, ≤ 256). */
export function prefillAttentionSupports(o: { nHead: number; nHeadKv: number; headDim: number }): boolean {
  return flashSupports(o);
}

/** The largest divisor of g that is ≤ cap. */
export function divisorAtMost(g: number, cap: number): number {
  let d = Math.max(1, Math.min(g, cap));
  while (g % d !== 0) d--;
  return d;
}

/**
 * The tiles of a {@link prefillAttentionWGSL} kernel for a shape. `tiled`: 64 threads; lanes per row =
 * the fewest dividing headDim/4 that leave each ≤ 64 dims; rows = ⌊64 / lanes⌋ = heads × tokens (heads
 * the largest divisor of the GQA group that fits); kvTile the most positions (≤ 32, a multiple of 4) whose
 * K and V tiles (f32) and partial scores fit in 15 KiB of workgroup memory (the default limit is 16 KiB;
 * headDim 256 gets 4 positions). `rows`: `threads` threads of `rows` rows each (heads × tokens likewise),
 * so threads × rows / heads tokens per workgroup.
 * @throws Error when {@link prefillAttentionSupports} is false or the layout's options are out of range.
 */
export function prefillAttentionPlan(o: PrefillAttentionOptions): PrefillAttentionPlan {
  if (!prefillAttentionSupports(o))
    throw new Error(`prefill attention: unsupported shape ${JSON.stringify(o)}`);
  const HD4 = o.headDim / 4;
  const G = o.nHead / o.nHeadKv;
  if (o.layout.kind === 'rows') {
    const W = o.layout.threads ?? 16;
    const B = o.layout.block ?? 1;
    const maxRows = o.layout.rows ?? Math.max(1, Math.min(8, Math.floor(256 / o.headDim)));
    const ok = (x: number, hi: number) => Number.isInteger(x) && x >= 1 && x <= hi;
    const S = o.layout.shareKv;
    const badShare = S !== undefined && (![2, 4, 8].includes(S) || W % S !== 0);
    if (!ok(W, 256) || !ok(B, 8) || !ok(maxRows, 16) || badShare)
      throw new Error(`prefill attention: bad rows layout ${JSON.stringify(o.layout)}`);
    const GW = divisorAtMost(G, maxRows);
    const RT = Math.floor(maxRows / GW);
    return {
      headsPerGroup: GW,
      groupsPerKvHead: G / GW,
      tokensPerTile: W * RT,
      tokensPerThread: RT,
      kvTile: B,
      lanes: 1,
      threads: W,
      workgroupBytes: 0,
    };
  }
  let L = Math.ceil(HD4 / 16);
  while (HD4 % L !== 0) L++;
  const R = Math.floor(64 / L);
  const GW = divisorAtMost(G, R);
  const BQ = Math.floor(R / GW);
  const rows = BQ * GW;
  const perPos = 2 * o.headDim * 4 + (L > 1 ? rows * L * 4 : 0);
  const BK = Math.min(32, Math.floor((PREFILL_WG_BYTES - 1024) / perPos / 4) * 4);
  if (BK < 4) throw new Error(`prefill attention: head dim ${o.headDim} leaves no KV tile`);
  return {
    headsPerGroup: GW,
    groupsPerKvHead: G / GW,
    tokensPerTile: BQ,
    kvTile: BK,
    tokensPerThread: 1,
    lanes: L,
    threads: rows * L,
    workgroupBytes: BK * perPos,
  };
}

/** The grid of a {@link prefillAttentionWGSL} dispatch for T tokens: [nHeadKv · groupsPerKvHead, ⌈T / BQ⌉]. */
export function prefillAttentionWorkgroups(o: PrefillAttentionOptions, T: number): [number, number] {
  const p = prefillAttentionPlan(o);
  return [o.nHeadKv * p.groupsPerKvHead, Math.ceil(T / p.tokensPerTile)];
}

/**
 * WGSL: the first KV position a prefill loop visits: 0, or with a sliding window the window start of the
 * first row's position `first` (a WGSL name), first + 1 − window, rounded down to a multiple of `align`.
 */
export function windowStart(window?: number, align = 1, first = 'pFirst'): string {
  if (!window) return '0u';
  return `select(0u, ((${first} + 1u - ${window}u) / ${align}u) * ${align}u, ${first} + 1u > ${window}u)`;
}

/** WGSL max of s0..s(n−1) (a balanced tree). */
function maxOf(n: number, lo = 0, name = (i: number) => `s${i}`): string {
  if (n === 1) return name(lo);
  const h = Math.floor(n / 2);
  return `max(${maxOf(h, lo, name)}, ${maxOf(n - h, lo + h, name)})`;
}

/** `n` lines from `f(i)`, i = 0..n−1, joined by `sep`. */
function each(n: number, f: (i: number) => string, sep = '\n'): string {
  return Array.from({ length: n }, (_, i) => f(i)).join(sep);
}

/** What {@link prefillAttentionWGSL}'s layouts share: the plan, the shapes and the declarations. */
interface PrefillParts {
  plan: PrefillAttentionPlan;
  HD: number;
  HD4: number;
  qDim: number;
  kvDim: number;
  /** Query heads per KV head. */
  G: number;
  /** Query heads per workgroup. */
  GW: number;
  /** Workgroups per KV head. */
  nHG: number;
  /** Query tokens per workgroup. */
  BQ: number;
  /** KV positions per step. */
  BK: number;
  /** Lanes per row (tiled layout). */
  L: number;
  /** Threads per workgroup. */
  NT: number;
  /** The scale as a WGSL literal. */
  scale: string;
  /** Bindings and constants. */
  common: string;
}

/** The `rows` layout (software adapters): a thread keeps its tokens × heads in registers and walks the positions. */
function rowsPrefillWGSL(o: PrefillAttentionOptions, c: PrefillParts): string {
  const { plan, HD, HD4, qDim, kvDim, G, GW, nHG, BQ, BK, NT, scale, common } = c;
  // A thread keeps RT tokens × GW heads (rows rr = r·GW + g) in named registers: q, the output, the
  // running max and sum, and walks positions 0..pLast (its last token's), B per step. The causal mask
  // is one select per score: positions past a row's own are at most RT + B − 1 steps at the end, and
  // a second, unmasked copy of the body for the steps before them doubled the compile time (seconds
  // on SwiftShader) for no measurable gain.
  const B = BK;
  const RT = plan.tokensPerThread;
  const RW = RT * GW;
  const rowsIdx = Array.from({ length: RW }, (_, rr) => rr);
  const S = o.layout.shareKv ?? 0;
  /** Statements loading vec4 d = 0..HD4−1 of cache `c` at element `r` into `${name}_${d}`. */
  const loadRow = (c: 'kc' | 'vc', r: string, name: string): string[] => {
    if (!S)
      return Array.from({ length: HD4 }, (_, d) => `      let ${name}_${d} = ld_${c}4(${r} + ${4 * d}u);`);
    // Thread sl loads vec4 sl + m·S (clamped to the row's last: a spare copy, never used); vec4 d comes
    // from thread d % S's load m = ⌊d / S⌋.
    const M = Math.ceil(HD4 / S);
    const L3 = Array.from(
      { length: M },
      (_, m) => `      let ${name}m${m} = ld_${c}4(${r} + 4u * min(sl + ${m * S}u, ${HD4 - 1}u));`,
    );
    for (let d = 0; d < HD4; d++)
      L3.push(`      let ${name}_${d} = subgroupBroadcast(${name}m${Math.floor(d / S)}, ${d % S}u);`);
    return L3;
  };
  const body = () => {
    const L2: string[] = [];
    for (let i = 0; i < B; i++) {
      // Positions past pLast (the last step's tail) read row pLast: finite, and masked.
      L2.push(`      let r${i} = min(j + ${i}u, pLast) * ${kvDim}u + kb;`);
      L2.push(...loadRow('kc', `r${i}`, `k${i}`));
      for (const rr of rowsIdx) {
        const dots = each(HD4, (d) => `dot(q${rr}_${d}, k${i}_${d})`, ' + ');
        const p = `pFirst + ${Math.floor(rr / GW)}u`;
        L2.push(
          `      let s${rr}_${i} = select(SENT, ${capped(dots, o.softcap)}, j + ${i}u <= ${p}${inWindow(`j + ${i}u`, p, o.window)});`,
        );
      }
    }
    // The rescale is folded into every step (a branch on "max grew" was no faster on SwiftShader).
    for (const rr of rowsIdx) {
      L2.push(
        `      let mx${rr} = max(m${rr}, ${maxOf(B, 0, (i) => `s${rr}_${i}`)});`,
        `      let c${rr} = exp(m${rr} - mx${rr});`,
        `      m${rr} = mx${rr};`,
      );
      for (let i = 0; i < B; i++) L2.push(`      let p${rr}_${i} = exp(s${rr}_${i} - m${rr});`);
      L2.push(`      l${rr} = l${rr} * c${rr} + ${each(B, (i) => `p${rr}_${i}`, ' + ')};`);
    }
    if (S) for (let i = 0; i < B; i++) L2.push(...loadRow('vc', `r${i}`, `v${i}`));
    for (let d = 0; d < HD4; d++) {
      if (!S) for (let i = 0; i < B; i++) L2.push(`      let v${i}_${d} = ld_vc4(r${i} + ${4 * d}u);`);
      for (const rr of rowsIdx)
        L2.push(
          `      a${rr}_${d} = a${rr}_${d} * c${rr} + ${each(B, (i) => `p${rr}_${i} * v${i}_${d}`, ' + ')};`,
        );
    }
    return L2.join('\n');
  };
  const init: string[] = [];
  const emit: string[] = [];
  for (const rr of rowsIdx) {
    const tok = Math.floor(rr / GW);
    const g = rr % GW;
    init.push(
      `  let qb${rr} = (min(t0 + ${tok}u, step.nTokens - 1u) * ${qDim}u + (h0 + ${g}u) * ${HD}u) / 4u;`,
    );
    for (let d = 0; d < HD4; d++) init.push(`  let q${rr}_${d} = q[qb${rr} + ${d}u] * ${scale};`);
    init.push(`  var m${rr} = SENT;`, `  var l${rr} = 0.0;`);
    for (let d = 0; d < HD4; d++) init.push(`  var a${rr}_${d} = vec4<f32>(0.0);`);
    emit.push(`  if (t0 + ${tok}u < step.nTokens) {`);
    for (let d = 0; d < HD4; d++) emit.push(`    out[qb${rr} + ${d}u] = a${rr}_${d} / l${rr};`);
    emit.push('  }');
  }
  // With shareKv the loop's bounds are the workgroup's (uniform): its first and last token's positions;
  // a thread past the batch's last token computes clamped duplicates it never stores.
  const bounds = S
    ? `  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(wg.y * ${BQ}u + ${BQ}u, step.nTokens) - 1u;
  let pStart = step.pos0 + wg.y * ${BQ}u;`
    : `  if (t0 >= step.nTokens) { return; }
  // Positions of the thread's first and last token.
  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(t0 + ${RT}u, step.nTokens) - 1u;`;
  const start = windowStart(o.window, 1, S ? 'pStart' : 'pFirst');
  return `${S ? 'enable subgroups;\n' : ''}${common}

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32${S ? ', @builtin(subgroup_invocation_id) sl: u32' : ''}) {
  let kvh = wg.x / ${nHG}u;
  let h0 = kvh * ${G}u + (wg.x % ${nHG}u) * ${GW}u;
  let t0 = wg.y * ${BQ}u + lid * ${RT}u;
${bounds}
  let kb = kvh * ${HD}u;
${init.join('\n')}
  // Masked positions before a row's first valid one add exp(0) to l and v to a while m is still SENT; the
  // first real score rescales them by exp(SENT − m) = 0.
  for (var j = ${start}; j <= pLast; j += ${B}u) {
${body()}
  }
${emit.join('\n')}
}`;
}

/** The `tiled` layout (GPUs): thread = (row, lane), KV tiles in workgroup memory. */
function tiledPrefillWGSL(o: PrefillAttentionOptions, c: PrefillParts): string {
  const { HD, HD4, qDim, kvDim, G, GW, nHG, BQ, BK, L, NT, scale, common } = c;
  // Tiled layout: thread = (row, lane); row = (token, head) of the workgroup; the lane keeps dims
  // 4(k·L + lane) … of q and of the output (k < DL4), interleaved so lanes read adjacent words. Loops
  // have constant bounds (the GPU's compiler unrolls them; private arrays stay in registers).
  const DL4 = HD4 / L;
  const R = BQ * GW;
  const partials =
    L > 1
      ? `    for (var c = 0u; c < ${BK}u; c++) { sp[(row * ${BK}u + c) * ${L}u + lane] = s[c]; }
    workgroupBarrier();
    for (var c = 0u; c < ${BK}u; c++) {
      var sum = 0.0;
      for (var ln = 0u; ln < ${L}u; ln++) { sum += sp[(row * ${BK}u + c) * ${L}u + ln]; }
      s[c] = sum;
    }`
      : '';
  return `${common}
var<workgroup> ks: array<vec4<f32>, ${BK * HD4}>;
var<workgroup> vs: array<vec4<f32>, ${BK * HD4}>;
${L > 1 ? `var<workgroup> sp: array<f32, ${R * BK * L}>;` : ''}

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / ${nHG}u;
  let row = lid / ${L}u;
  let lane = lid % ${L}u;
  let h = kvh * ${G}u + (wg.x % ${nHG}u) * ${GW}u + row % ${GW}u;
  let t0 = wg.y * ${BQ}u;
  let t = t0 + row / ${GW}u;
  let live = t < step.nTokens;
  let pos = step.pos0 + t;
  // The last position any row of the workgroup sees, and the first row's (tiles past it are diagonal).
  let pLast = step.pos0 + min(t0 + ${BQ}u, step.nTokens) - 1u;
  let pFirst = step.pos0 + t0;
  let kb = kvh * ${HD}u;
  let qb = (min(t, step.nTokens - 1u) * ${qDim}u + h * ${HD}u) / 4u;
  var qr: array<vec4<f32>, ${DL4}>;
  var acc: array<vec4<f32>, ${DL4}>;
  var s: array<f32, ${BK}>;
  for (var k = 0u; k < ${DL4}u; k++) {
    qr[k] = q[qb + k * ${L}u + lane] * ${scale};
    acc[k] = vec4<f32>(0.0);
  }
  var m = SENT;
  var l = 0.0;
  for (var tile = ${windowStart(o.window, BK)}; tile <= pLast; tile += ${BK}u) {
    for (var i = lid; i < ${BK * HD4}u; i += ${NT}u) {
      let src = min(tile + i / ${HD4}u, pLast) * ${kvDim}u + kb + 4u * (i % ${HD4}u);
      ks[i] = ld_kc4(src);
      vs[i] = ld_vc4(src);
    }
    workgroupBarrier();
    // Scores of the tile's positions (every element written before it is read).
    for (var c = 0u; c < ${BK}u; c++) {
      var d = 0.0;
      for (var k = 0u; k < ${DL4}u; k++) { d += dot(qr[k], ks[c * ${HD4}u + k * ${L}u + lane]); }
      s[c] = d;
    }
${partials}
${
  o.softcap
    ? `    for (var c = 0u; c < ${BK}u; c++) { s[c] = ${capped('s[c]', o.softcap)}; }
`
    : ''
}    // Only tiles reaching past the first row's position hold masked positions (and, with a sliding
    // window, tiles before a row's window; as in the rows layout, those the first real score erases).
    let diagonal = tile + ${BK - 1}u > pFirst;
    var mx = m;
    for (var c = 0u; c < ${BK}u; c++) {
      if ((diagonal && tile + c > pos)${o.window ? ` || tile + c + ${o.window}u <= pos` : ''}) { s[c] = SENT; }
      mx = max(mx, s[c]);
    }
    if (mx > m) {
      let f = exp(m - mx);
      l *= f;
      for (var k = 0u; k < ${DL4}u; k++) { acc[k] *= f; }
      m = mx;
    }
    for (var c = 0u; c < ${BK}u; c++) {
      let p = exp(s[c] - m);
      l += p;
      for (var k = 0u; k < ${DL4}u; k++) { acc[k] += p * vs[c * ${HD4}u + k * ${L}u + lane]; }
    }
    workgroupBarrier();
  }
  if (live) {
    for (var k = 0u; k < ${DL4}u; k++) { out[qb + k * ${L}u + lane] = acc[k] / l; }
  }
}`;
}

/**
 * Causal prefill attention, tiled over query tokens and KV positions (FlashAttention-2's online softmax
 * with finite sentinels; see {@link PrefillLayout}): a drop-in for attention.ts's `attentionWGSL`. Bindings: step,
 * q [T, nHead·headDim] f32 (RoPE-pair slot order, as the QKV kernel writes), kc, vc [nCtx, nHeadKv·headDim]
 * (`kvType`; rows 0..pos0+T−1 filled), out [T, nHead·headDim] f32 (out[t, h·HD + d] = Σ_j softmax_j(scale ·
 * q_t,h · k_j) v_j[d] over j ≤ pos0 + t, the order attention.ts's `attentionWGSL` writes). Dispatch
 * {@link prefillAttentionWorkgroups}(o, T). KV tiles past the workgroup's last query row are never read (the
 * loop ends there); only tiles on the diagonal mask positions per row.
 * @throws Error when {@link prefillAttentionSupports} is false or the layout's options are out of range.
 */
export function prefillAttentionWGSL(o: PrefillAttentionOptions): string {
  const plan = prefillAttentionPlan(o);
  const HD = o.headDim;
  const HD4 = HD / 4;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const G = o.nHead / o.nHeadKv;
  const {
    headsPerGroup: GW,
    groupsPerKvHead: nHG,
    tokensPerTile: BQ,
    kvTile: BK,
    lanes: L,
    threads: NT,
  } = plan;
  const scale = f32Lit(o.scale);
  const common = `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${kDecl('@group(0) @binding(2)', 'kc', o.kvType)}
${kDecl('@group(0) @binding(3)', 'vc', o.vKvType ?? o.kvType)}
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
const SENT: f32 = ${SENTINEL};`;
  const c: PrefillParts = { plan, HD, HD4, qDim, kvDim, G, GW, nHG, BQ, BK, L, NT, scale, common };
  return o.layout.kind === 'rows' ? rowsPrefillWGSL(o, c) : tiledPrefillWGSL(o, c);
}
