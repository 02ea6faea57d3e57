/**
 * The decode attention kernel, {@link flashDecodeWGSL}: flash-decoding over the KV cache for 1–8 query
 * tokens, in two layouts (strided: threads over KV positions, partials merged at the end; tiled: tiles of
 * positions with scores in workgroup memory and an online softmax), each chunk of positions writing a
 * partial that attention.ts `flashCombineWGSL` merges. The shapes, layouts and helpers it shares with the
 * other attention kernels are in attention.ts.
 */

import {
  capped,
  type FlashOptions,
  flashHeadGroups,
  flashSupports,
  inWindow,
  kDecl,
  pairDecl,
  SENTINEL,
  wideDecl,
  wideKv,
} from './attention.ts';
import { f32Lit, STEP_WGSL } from './common.ts';

/** Threads of a strided-layout workgroup: a power of two ≤ `max` whose partials fit in 12 KiB. */
function stridedThreads(rows: number, HD: number, max = 8): number {
  let w = max;
  while (w > 1 && w * rows * (HD + 2) * 4 > 12288) w /= 2;
  return w;
}

/**
 * The strided layout's per-thread loop, unrolled over rows and head dimensions into named registers
 * (software adapters keep dynamically indexed private arrays in memory, which made the loop several
 * times slower): online softmax over positions start + lid, start + lid + W, … for every row, then the
 * partials into workgroup memory.
 */
function stridedBody(d: FlashDims, softcap?: number, window?: number): string {
  const { RW, HD4, NDP, kvDim, GW, TM } = d;
  const rows = Array.from({ length: RW }, (_, r) => r);
  const L: string[] = [];
  for (const r of rows) {
    L.push(`  var m${r} = SENT; var l${r} = 0.0;`);
    for (let i = 0; i < HD4; i++) L.push(`  let q${r}_${i} = qs[${r * HD4 + i}];`);
    for (let i = 0; i < NDP; i++) L.push(`  var a${r}_${i} = vec2<f32>(0.0);`);
  }
  L.push(`  for (var j = start + lid; j < end; j += W) {`, `    let base = j * ${kvDim}u + kb;`);
  // K and V rows as 16-byte words where the cache type allows (wideK, wideV), else 4 and 2 elements a load.
  for (let e = 0; d.wideK && e < HD4 / 2; e++)
    L.push(
      `    let kw${e} = ld_kc8(base + ${8 * e}u); let k${2 * e} = kw${e}[0]; let k${2 * e + 1} = kw${e}[1];`,
    );
  for (let i = 0; !d.wideK && i < HD4; i++) L.push(`    let k${i} = ld_kc4(base + ${4 * i}u);`);
  for (const r of rows) {
    const dots = Array.from({ length: HD4 }, (_, i) => `dot(q${r}_${i}, k${i})`).join(' + ');
    const t = Math.floor(r / GW);
    // With one query token every position of the chunk is visible; with several, token t sees ≤ pos0 + t.
    // A sliding window also masks positions before pos0 + t − window + 1.
    const ok =
      TM === 1 && !window
        ? 'true'
        : `${t}u < step.nTokens && j <= step.pos0 + ${t}u${inWindow('j', `step.pos0 + ${t}u`, window)}`;
    L.push(`    let ok${r} = ${ok};`);
    L.push(`    let s${r} = select(SENT, ${capped(dots, softcap)}, ok${r});`);
    L.push(
      `    let mn${r} = max(m${r}, s${r}); let c${r} = exp(m${r} - mn${r}); let p${r} = select(0.0, exp(s${r} - mn${r}), ok${r});`,
    );
    L.push(`    l${r} = l${r} * c${r} + p${r}; m${r} = mn${r};`);
  }
  for (let i = 0; i < NDP; i++) {
    if (!d.wideV) L.push(`    let v${i} = ld_vc2(base + ${2 * i}u);`);
    else {
      if (i % 4 === 0) L.push(`    let vw${i / 4} = ld_vc8(base + ${2 * i}u);`);
      L.push(`    let v${i} = vw${Math.floor(i / 4)}[${(i >> 1) & 1}].${i % 2 ? 'zw' : 'xy'};`);
    }
    for (const r of rows) {
      L.push(
        TM === 1
          ? `    a${r}_${i} = a${r}_${i} * c${r} + p${r} * v${i};`
          : `    a${r}_${i} = a${r}_${i} * c${r} + select(vec2<f32>(0.0), p${r} * v${i}, p${r} > 0.0);`,
      );
    }
  }
  L.push('  }');
  for (const r of rows) {
    L.push(`  sm[lid * RW + ${r}u] = m${r}; sl[lid * RW + ${r}u] = l${r};`);
    for (let i = 0; i < NDP; i++) L.push(`  sacc[(lid * RW + ${r}u) * ${NDP}u + ${i}u] = a${r}_${i};`);
  }
  return L.join('\n');
}

/** The sizes {@link flashDecodeWGSL}'s parts share. */
interface FlashDims {
  HD: number;
  HD4: number;
  /** Dimension pairs per head. */
  NDP: number;
  qDim: number;
  kvDim: number;
  /** Query heads per KV head. */
  G: number;
  TM: number;
  /** Query heads per workgroup. */
  GW: number;
  /** Workgroups per KV head. */
  nHG: number;
  /** Rows (heads × tokens) per workgroup. */
  RW: number;
  /** K (V) read as 16-byte words of 8 elements (`ld_kc8`, `ld_vc8`; attention.ts `wideKv`), else 4 (2) at a time. */
  wideK: boolean;
  wideV: boolean;
}

/**
 * Whether the tiled layout's P·V reads V as 8-element words: threads over (word, position group), each
 * position group summing every PG-th position of a tile, the groups' sums added once at the chunk's end.
 * Needs at least 8 words per row (at most 8 position groups) and at most 8 rows (64 accumulators a thread).
 */
function tiledWordsPV(HD: number, RW: number): boolean {
  return HD % 8 === 0 && HD / 8 >= 8 && RW <= 8;
}

function flashDims(o: FlashOptions): FlashDims {
  const HD = o.headDim;
  const HD4 = HD / 4;
  const NDP = HD / 2;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const G = o.nHead / o.nHeadKv;
  const TM = o.maxTokens;
  const { headsPerGroup: GW, groupsPerKvHead: nHG } = flashHeadGroups(o);
  const RW = GW * TM;
  const kv = o.kvType;
  const vKv = o.vKvType ?? kv;
  // Tiled: the lanes of a position split its 8-element words; its P·V reads V by dimension pairs.
  const lanes = o.layout.kind === 'tiled' ? (o.layout.lanes ?? 1) : 1;
  const wide = !o.layout.narrow;
  const wideK = wide && wideKv(kv, HD) && (HD / 8) % lanes === 0;
  const wideV =
    wide && !o.layout.narrowV && wideKv(vKv, HD) && (o.layout.kind === 'strided' || tiledWordsPV(HD, RW));
  return { HD, HD4, NDP, qDim, kvDim, G, TM, GW, nHG, RW, wideK, wideV };
}

/** The declarations and helper functions of both layouts: bindings, the query rows in workgroup memory, the output or partial writes. */
function flashCommonWGSL(o: FlashOptions, d: FlashDims): string {
  const { HD, HD4, qDim, G, TM, GW, RW } = d;
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${d.wideK ? wideDecl('@group(0) @binding(2)', 'kc', o.kvType) : kDecl('@group(0) @binding(2)', 'kc', o.kvType)}
${d.wideV ? wideDecl('@group(0) @binding(3)', 'vc', o.vKvType ?? o.kvType) : pairDecl('@group(0) @binding(3)', 'vc', o.vKvType ?? o.kvType)}
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> part_o: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> part_ml: array<vec2<f32>>;
const HD: u32 = ${HD}u;
const RW: u32 = ${RW}u;
const SENT: f32 = ${SENTINEL};
/** Query head and token of workgroup row r. */
fn rowHead(kvh: u32, hg: u32, r: u32) -> u32 { return kvh * ${G}u + hg * ${GW}u + r % ${GW}u; }
fn rowTok(r: u32) -> u32 { return r / ${GW}u; }
var<workgroup> qs: array<vec4<f32>, ${RW * HD4}>;
/** The workgroup's query rows, scaled, into qs (rows of tokens past step.nTokens are zeros). */
fn load_q(kvh: u32, hg: u32, lid: u32, nThreads: u32) {
  for (var i = lid; i < ${RW * HD4}u; i += nThreads) {
    let r = i / ${HD4}u;
    let t = rowTok(r);
    var v = vec4<f32>(0.0);
    if (t < step.nTokens) { v = q[(t * ${qDim}u + rowHead(kvh, hg, r) * HD) / 4u + i % ${HD4}u] * ${f32Lit(o.scale)}; }
    qs[i] = v;
  }
}
/** Writes dims (2dp, 2dp+1) of row r: the final output with one chunk, else this chunk's partial. */
fn emit(kvh: u32, hg: u32, split: u32, nSplit: u32, r: u32, dp: u32, a: vec2<f32>, m: f32, l: f32) {
  let t = rowTok(r);
  if (t >= step.nTokens) { return; }
  let h = rowHead(kvh, hg, r);
  if (nSplit == 1u) {
    out[(t * ${qDim}u + h * HD) / 2u + dp] = a / l;
  } else {
    part_o[((split * ${TM}u + t) * ${qDim}u + h * HD) / 2u + dp] = a;
    if (dp == 0u) { part_ml[(split * ${TM}u + t) * ${o.nHead}u + h] = vec2<f32>(m, l); }
  }
}
`;
}

/** The first statements of main in both layouts: the workgroup's KV head, head group, chunk and range. */
function flashHeadWGSL(d: FlashDims): string {
  const { nHG } = d;
  return `  let kvh = wg.x / ${nHG}u;
  let hg = wg.x % ${nHG}u;
  let split = wg.y;
  let len = step.pos0 + step.nTokens;
  let chunk = step.p2;
  let nSplit = (len + chunk - 1u) / chunk;
  let start = split * chunk;
  let end = min(start + chunk, len);
  let kb = kvh * HD;`;
}

/** The strided layout (threads over KV positions, partials merged at the end). */
function stridedFlashWGSL(o: FlashOptions, d: FlashDims, common: string, head: string): string {
  const { HD, NDP, RW } = d;
  const W = stridedThreads(RW, HD, o.layout.threads);
  return `${common}
const W: u32 = ${W}u;
var<workgroup> sm: array<f32, ${W * RW}>;
var<workgroup> sl: array<f32, ${W * RW}>;
var<workgroup> sacc: array<vec2<f32>, ${W * RW * NDP}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
${head}
  load_q(kvh, hg, lid, W);
  workgroupBarrier();
${stridedBody(d, o.softcap, o.window)}
  workgroupBarrier();
  for (var i = lid; i < ${RW * NDP}u; i += W) {
    let r = i / ${NDP}u;
    let dp = i % ${NDP}u;
    var mAll = SENT;
    for (var k = 0u; k < W; k++) { mAll = max(mAll, sm[k * RW + r]); }
    var lAll = 0.0;
    var a = vec2<f32>(0.0);
    for (var k = 0u; k < W; k++) {
      let f = exp(sm[k * RW + r] - mAll);
      lAll += sl[k * RW + r] * f;
      a += sacc[(k * RW + r) * ${NDP}u + dp] * f;
    }
    emit(kvh, hg, split, nSplit, r, dp, a, mAll, lAll);
  }
}`;
}

/** The tiled layout (tiles of KV positions: scores in workgroup memory, online softmax, P·V by 8-element words or dimension pairs). */
function tiledFlashWGSL(o: FlashOptions, d: FlashDims, common: string, head: string): string {
  const { HD, HD4, NDP, kvDim, RW } = d;
  const W = 64;
  const LG = o.layout.lanes ?? 1;
  if (![1, 2, 4, 8].includes(LG) || HD4 % LG !== 0)
    throw new Error(`flash attention: ${LG} lanes for head dim ${HD}`);
  const P = W / LG;
  // P·V by pairs: thread = (dim pair dp, row group rg); rows rg, rg + RG, …; dim pairs dp, dp + W, … when NDP > W.
  const RG = NDP >= W ? 1 : Math.min(RW, Math.floor(W / NDP));
  const RPT = Math.ceil(RW / RG);
  const DPT = Math.ceil(NDP / W);
  const NW = HD / 8;
  const PG = Math.min(Math.floor(W / NW), P);
  const shuffle =
    LG > 1
      ? Array.from({ length: Math.log2(LG) }, (_, i) => 1 << i)
          .map((mask) => `    for (var r = 0u; r < RW; r++) { s[r] += subgroupShuffleXor(s[r], ${mask}u); }`)
          .join('\n')
      : '';
  // P·V by dimension pairs: thread = (pair dp0 + k·W, row group rg), every position of the tile.
  const pvPairs = `    if (rg < ${RG}u) {
      for (var rr = 0u; rr < ${RPT}u; rr++) {
        let r = rg + rr * ${RG}u;
        if (r < RW) {
          let c = crow[r];
          lsum[rr] *= c;
          for (var dd = 0u; dd < ${DPT}u; dd++) { acc[rr * ${DPT}u + dd] *= c; }
        }
      }
      for (var p = 0u; p < P; p++) {
        let jp = min(tile + p, end - 1u) * ${kvDim}u + kb;
        for (var dd = 0u; dd < ${DPT}u; dd++) {
          let dp = dp0 + dd * W;
          if (dp < ${NDP}u) {
            let v2 = ld_vc2(jp + 2u * dp);
            for (var rr = 0u; rr < ${RPT}u; rr++) {
              let r = rg + rr * ${RG}u;
              if (r < RW) {
                let pr = sc[r * P + p];
                acc[rr * ${DPT}u + dd] += select(vec2<f32>(0.0), pr * v2, pr > 0.0);
                if (dd == 0u) { lsum[rr] += pr; }
              }
            }
          }
        }
      }
    }`;
  const emitPairs = `  if (rg < ${RG}u) {
    for (var rr = 0u; rr < ${RPT}u; rr++) {
      let r = rg + rr * ${RG}u;
      for (var dd = 0u; dd < ${DPT}u; dd++) {
        let dp = dp0 + dd * W;
        if (r < RW && dp < ${NDP}u) { emit(kvh, hg, split, nSplit, r, dp, acc[rr * ${DPT}u + dd], mrow[r], lsum[rr]); }
      }
    }
  }`;
  // P·V by 8-element words (tiledWordsPV): thread = (word w, position group pg < PG), positions pg, pg + PG, …
  // of each tile; the groups' sums (and softmax denominators) added into group 0 through qs once at the end.
  const pvWords = `    if (pg < ${PG}u) {
      for (var r = 0u; r < RW; r++) {
        let c = crow[r];
        lsum[r] *= c;
        acc[2u * r] *= c;
        acc[2u * r + 1u] *= c;
      }
      for (var p = pg; p < P; p += ${PG}u) {
        let vw = ld_vc8(min(tile + p, end - 1u) * ${kvDim}u + kb + 8u * w);
        for (var r = 0u; r < RW; r++) {
          let pr = sc[r * P + p];
          acc[2u * r] += select(vec4<f32>(0.0), pr * vw[0], pr > 0.0);
          acc[2u * r + 1u] += select(vec4<f32>(0.0), pr * vw[1], pr > 0.0);
          lsum[r] += pr;
        }
      }
    }`;
  const emitWords = `  for (var g = 1u; g < ${PG}u; g++) {
    workgroupBarrier();
    if (pg == g) {
      for (var r = 0u; r < RW; r++) {
        qs[r * ${HD4}u + 2u * w] = acc[2u * r];
        qs[r * ${HD4}u + 2u * w + 1u] = acc[2u * r + 1u];
        if (w == 0u) { crow[r] = lsum[r]; }
      }
    }
    workgroupBarrier();
    if (pg == 0u) {
      for (var r = 0u; r < RW; r++) {
        acc[2u * r] += qs[r * ${HD4}u + 2u * w];
        acc[2u * r + 1u] += qs[r * ${HD4}u + 2u * w + 1u];
        lsum[r] += crow[r];
      }
    }
  }
  if (pg == 0u) {
    for (var r = 0u; r < RW; r++) {
      let a = acc[2u * r];
      let b = acc[2u * r + 1u];
      emit(kvh, hg, split, nSplit, r, 4u * w, a.xy, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 1u, a.zw, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 2u, b.xy, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 3u, b.zw, mrow[r], lsum[r]);
    }
  }`;
  return `${LG > 1 ? 'enable subgroups;\n' : ''}${common}
const W: u32 = ${W}u;
const P: u32 = ${P}u;
var<workgroup> sc: array<f32, ${RW * P}>;
var<workgroup> mrow: array<f32, ${RW}>;
var<workgroup> crow: array<f32, ${RW}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
${head}
  load_q(kvh, hg, lid, W);
  if (lid < RW) { mrow[lid] = SENT; }
  let pl = lid / ${LG}u;
  let lane = lid % ${LG}u;
${
  d.wideV
    ? `  let pg = lid / ${NW}u;
  let w = lid % ${NW}u;
  var acc: array<vec4<f32>, ${2 * RW}>;
  var lsum: array<f32, ${RW}>;`
    : `  let rg = lid / ${Math.min(NDP, W)}u;
  let dp0 = lid % ${Math.min(NDP, W)}u;
  var acc: array<vec2<f32>, ${RPT * DPT}>;
  var lsum: array<f32, ${RPT}>;`
}
  workgroupBarrier();
  for (var tile = start; tile < end; tile += P) {
    // Scores of position tile + pl for every row (lanes split the head dimension).
    let j = tile + pl;
    let base = min(j, end - 1u) * ${kvDim}u + kb;
    var s: array<f32, ${RW}>;
    for (var r = 0u; r < RW; r++) { s[r] = 0.0; }
${
  d.wideK
    ? `    for (var i = 0u; i < ${HD4 / 2 / LG}u; i++) {
      let e = i * ${LG}u + lane;
      let kw = ld_kc8(base + 8u * e);
      for (var r = 0u; r < RW; r++) {
        s[r] += dot(qs[r * ${HD4}u + 2u * e], kw[0]);
        s[r] += dot(qs[r * ${HD4}u + 2u * e + 1u], kw[1]);
      }
    }`
    : `    for (var i = 0u; i < ${HD4 / LG}u; i++) {
      let d = i * ${LG}u + lane;
      let k4 = ld_kc4(base + 4u * d);
      for (var r = 0u; r < RW; r++) { s[r] += dot(qs[r * ${HD4}u + d], k4); }
    }`
}
${shuffle}
    if (lane == 0u) {
      for (var r = 0u; r < RW; r++) {
        let ok = j < end && rowTok(r) < step.nTokens && j <= step.pos0 + rowTok(r)${inWindow('j', 'step.pos0 + rowTok(r)', o.window)};
        sc[r * P + pl] = select(SENT, ${capped('s[r]', o.softcap)}, ok);
      }
    }
    workgroupBarrier();
    if (lid < RW) {
      var mx = mrow[lid];
      for (var p = 0u; p < P; p++) { mx = max(mx, sc[lid * P + p]); }
      crow[lid] = exp(mrow[lid] - mx);
      mrow[lid] = mx;
    }
    workgroupBarrier();
    for (var i = lid; i < ${RW * P}u; i += W) {
      let sv = sc[i];
      sc[i] = select(0.0, exp(sv - mrow[i / P]), sv > -1.0e29);
    }
    workgroupBarrier();
${d.wideV ? pvWords : pvPairs}
    workgroupBarrier();
  }
${d.wideV ? emitWords : emitPairs}
}`;
}

/**
 * Flash-decoding attention for step.nTokens ≤ maxTokens query tokens at positions step.pos0… over chunks of
 * step.p2 positions (see attention.ts `attentionSplit`). Bindings: step, q [T, qDim], kc, vc [nCtx, kvDim],
 * out [T, qDim], part_o [maxSplits, maxTokens, qDim] f32, part_ml [maxSplits, maxTokens, nHead] vec2 (max,
 * sum). Dispatch (nHeadKv · groupsPerKvHead, nSplit). With nSplit = 1 writes `out` directly, else the
 * partials for attention.ts `flashCombineWGSL`.
 * @throws Error when {@link flashSupports} is false or the lanes do not divide headDim/4.
 */
export function flashDecodeWGSL(o: FlashOptions): string {
  if (!flashSupports(o)) throw new Error(`flash attention: unsupported shape ${JSON.stringify(o)}`);
  const d = flashDims(o);
  const common = flashCommonWGSL(o, d);
  const head = flashHeadWGSL(d);
  return o.layout.kind === 'strided'
    ? stridedFlashWGSL(o, d, common, head)
    : tiledFlashWGSL(o, d, common, head);
}
