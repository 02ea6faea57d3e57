/**
 * The attention kernels against a float64 causal softmax attention.
 * - attentionWGSL (prefill): GQA and plain MHA, head dims 8 and 12, decode (T = 1) at pos0 = 0 and past
 *   the 64 threads, and prefill batches (token t sees 0..pos0+t), f32 and f16 caches.
 * - flashDecodeWGSL + flashCombineWGSL (decode): depths 1..5,000 across chunk boundaries, GQA ratios
 *   1/2/4/8, head dims 64/80/128/256 (and 8, 12, 32), T = 1..8 (5..8: small batches, maxTokens 8), a
 *   sliding window and soft-cap, both layouts, with and without subgroups, f16 and f32 caches; the
 *   reference reads the f16-rounded K and V the GPU reads.
 * - prefillAttentionWGSL (tiled prefill): T = 1, 7, 33, 63, 65, 130, 520 at pos0 = 0 and past it (rows
 *   before pos0 filled, as a batch continuing a sequence), GQA 1/2/3/4/8, head dims 8/20/48/64/128/256,
 *   both layouts (and a `rows` layout with odd threads, rows and block so every tile edge moves; `rows`
 *   sharing K and V through subgroups where the adapter's subgroups have one size, SwiftShader's 4), f16
 *   and f32 caches; its plans fit 16 KiB of workgroup memory for every head dim it takes.
 * - Q8_0 and Q4_0 caches (K and V alike or of different types, as llama.cpp's -ctk/-ctv) in all three
 *   kernels: the reference reads the rows our ggml-exact quantizer wrote, dequantized.
 * Cache rows past the last position hold huge values (f32, Q8_0, Q4_0) or ±Inf (f16), so any leak shows.
 */
import { describe, expect, it } from 'vitest';
import { dequantizeRow, quantizeRow } from '../../gguf/quantize.ts';
import {
  assertClose,
  freshRng,
  packF16,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  testGpu,
  uniformFrom,
} from '../../testing/kernel-util.ts';
import {
  attentionSplit,
  attentionWGSL,
  COMBINE_MAX_SPLITS,
  type FlashLayout,
  flashCombineWGSL,
  flashCombineWorkgroups,
  flashHeadGroups,
  type KvType,
  MAX_SPLITS,
} from './attention.ts';
import { flashDecodeWGSL } from './attention-decode.ts';
import {
  type PrefillLayout,
  prefillAttentionPlan,
  prefillAttentionWGSL,
  prefillAttentionWorkgroups,
} from './attention-prefill.ts';
import { packStep } from './common.ts';
import { kvRowBytes } from './kv-quant.ts';

const REL = 1e-5;
const ABS = 1e-6;

/**
 * Causal GQA attention in float64: [out, tol] for q [T, nHead·HD] over caches [nCtx, nHeadKv·HD]; with
 * `window`, the query at p sees p − window + 1 … p; with `softcap`, scores are cap·tanh(score / cap)
 * (Gemma's, llama.cpp's `attn_soft_cap`).
 */
function attentionRef(
  q: Float32Array,
  kc: ArrayLike<number>,
  vc: ArrayLike<number>,
  o: {
    nHead: number;
    nHeadKv: number;
    HD: number;
    T: number;
    pos0: number;
    window?: number;
    softcap?: number;
  },
): [Float64Array, Float64Array] {
  const { nHead, nHeadKv, HD, T, pos0 } = o;
  const qDim = nHead * HD;
  const kvDim = nHeadKv * HD;
  const scale = 1 / Math.sqrt(HD);
  const out = new Float64Array(T * qDim);
  const tol = new Float64Array(T * qDim);
  for (let t = 0; t < T; t++) {
    const n = pos0 + t + 1;
    for (let h = 0; h < nHead; h++) {
      const kvh = Math.floor(h / (nHead / nHeadKv));
      const s = new Float64Array(n);
      const sAbs = new Float64Array(n);
      const lo = o.window ? Math.max(0, n - o.window) : 0;
      for (let j = 0; j < n; j++) {
        for (let d = 0; d < HD; d++) {
          const p = scale * q[t * qDim + h * HD + d] * kc[j * kvDim + kvh * HD + d];
          s[j] += p;
          sAbs[j] += Math.abs(p);
        }
        if (o.softcap) s[j] = o.softcap * Math.tanh(s[j] / o.softcap);
        if (j < lo) s[j] = -Infinity;
      }
      let m = -Infinity;
      for (const v of s) m = Math.max(m, v);
      const w = s.map((v) => Math.exp(v - m));
      const l = w.reduce((a, b) => a + b, 0);
      for (let d = 0; d < HD; d++) {
        let acc = 0;
        for (let j = lo; j < n; j++) acc += (w[j] / l) * vc[j * kvDim + kvh * HD + d];
        // f32 error: each weight is off by (score error + exp error) relative, which moves the output by
        // Σ w·|v − out|·that; the weighted sum itself adds a few ulp of Σ w·|v|.
        let bound = 0;
        for (let j = lo; j < n; j++) {
          const v = vc[j * kvDim + kvh * HD + d];
          bound += (w[j] / l) * (Math.abs(v) + Math.abs(v - acc) * (2 + sAbs[j] + Math.abs(s[j] - m)));
        }
        out[t * qDim + h * HD + d] = acc;
        tol[t * qDim + h * HD + d] = REL * bound + ABS;
      }
    }
  }
  return [out, tol];
}

/**
 * Random caches [nCtx, kvDim] whose rows from `filled` on hold values that would dominate if read, as the
 * GPU sees them (`words`) and as the reference reads them (`ref`: f16-rounded for an f16 cache; for Q8_0 /
 * Q4_0, each row quantized by our ggml-exact quantizer and dequantized). `vKv`: V's type where it differs.
 */
function caches(
  rng: () => number,
  nCtx: number,
  kvDim: number,
  filled: number,
  kv: KvType,
  vKv: KvType = kv,
): {
  k: Uint32Array | Float32Array;
  v: Uint32Array | Float32Array;
  kRef: ArrayLike<number>;
  vRef: ArrayLike<number>;
} {
  const one = (t: KvType, isK: boolean) => {
    const c = randomF32(rng, nCtx * kvDim);
    for (let i = filled * kvDim; i < c.length; i++) {
      // f32: scores ±1e4·… dominate every real score if read; f16: ±Inf (NaN as soon as it is touched);
      // Q8_0/Q4_0: scales of ±1e4 (K) and 1e4 (V), finite in f16.
      if (isK) c[i] = Math.sign(c[i]) * (t === 'f16' ? Infinity : 1e4);
      else c[i] = t === 'f16' ? Infinity : t === 'f32' ? 1e6 : 1e4;
    }
    if (t === 'f32') return { words: c, ref: c };
    if (t === 'f16') {
      const p = packF16(c);
      return { words: p.words, ref: p.rounded };
    }
    const rb = kvRowBytes(t, kvDim);
    const bytes = new Uint8Array(Math.ceil((nCtx * rb) / 4) * 4);
    const ref = new Float32Array(nCtx * kvDim);
    for (let r = 0; r < nCtx; r++) {
      const q = quantizeRow(t.toUpperCase(), c.subarray(r * kvDim, (r + 1) * kvDim));
      bytes.set(q, r * rb);
      ref.set(dequantizeRow(t.toUpperCase(), q, kvDim), r * kvDim);
    }
    return { words: new Uint32Array(bytes.buffer), ref };
  };
  const k = one(kv, true);
  const v = one(vKv, false);
  return { k: k.words, v: v.words, kRef: k.ref, vRef: v.ref };
}

describe('attentionWGSL', () => {
  for (const c of [
    { nHead: 6, nHeadKv: 2, HD: 8, T: 3, pos0: 70, kv: 'f16' as const },
    { nHead: 4, nHeadKv: 4, HD: 6, T: 1, pos0: 9, kv: 'f16' as const },
    { nHead: 6, nHeadKv: 2, HD: 8, T: 1, pos0: 0 },
    { nHead: 6, nHeadKv: 2, HD: 12, T: 1, pos0: 150 },
    { nHead: 6, nHeadKv: 2, HD: 8, T: 5, pos0: 3 },
    { nHead: 4, nHeadKv: 4, HD: 12, T: 5, pos0: 3 },
    { nHead: 4, nHeadKv: 4, HD: 8, T: 1, pos0: 150 },
    { nHead: 6, nHeadKv: 2, HD: 12, T: 11, pos0: 60 },
    { nHead: 4, nHeadKv: 2, HD: 32, T: 3, pos0: 40, kv: 'q8_0' as const, vKv: 'q4_0' as const },
    { nHead: 2, nHeadKv: 2, HD: 64, T: 1, pos0: 70, kv: 'q4_0' as const, vKv: 'f16' as const },
  ] as { nHead: number; nHeadKv: number; HD: number; T: number; pos0: number; kv?: KvType; vKv?: KvType }[]) {
    const kv: KvType = c.kv ?? 'f32';
    const vKv: KvType = c.vKv ?? kv;
    it(`causal attention (nHead=${c.nHead}, nHeadKv=${c.nHeadKv}, hd=${c.HD}, T=${c.T}, pos0=${c.pos0}, ${kv}${vKv !== kv ? `/${vKv}` : ''})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { nHead, nHeadKv, HD, T, pos0 } = c;
      const qDim = nHead * HD;
      const kvDim = nHeadKv * HD;
      const nCtx = pos0 + T + 7;
      const q = randomF32(rng, T * qDim);
      // Positions 0..pos0+T−1 hold real keys and values.
      const { k, v, kRef, vRef } = caches(rng, nCtx, kvDim, pos0 + T, kv, vKv);
      const out0 = randomF32(rng, (T + 1) * qDim); // a spare row that must stay untouched
      const out = storageFrom(device, out0);
      const code = attentionWGSL({
        nHead,
        nHeadKv,
        headDim: HD,
        scale: 1 / Math.sqrt(HD),
        kvType: kv,
        vKvType: vKv,
      });
      const bufs = [
        uniformFrom(device, packStep(T, pos0)),
        storageFrom(device, q),
        storageFrom(device, k),
        storageFrom(device, v),
        out,
      ];
      await runWGSL(device, code, bufs, [nHead, T]);
      const [ref, tol] = attentionRef(q, kRef, vRef, { nHead, nHeadKv, HD, T, pos0 });
      const fullRef = Float64Array.from(out0);
      fullRef.set(ref);
      const fullTol = new Float64Array(fullRef.length);
      fullTol.set(tol);
      assertClose(`attention (seed ${seed})`, await readF32(device, out), fullRef, fullTol);
    });
  }
});

describe('flashCombineWGSL alone', () => {
  /**
   * Random partials (chunk maxima, sums, unnormalised outputs; some chunks empty: the sentinel and l = 0,
   * as a window leaves them) merged against float64: chunk counts around the 64 threads and the
   * engine's MAX_SPLITS up to COMBINE_MAX_SPLITS, head sizes whose dimension pairs fill one slice, part of
   * one, and several.
   */
  const cases = [
    { nSplit: 2, HD: 8, nHead: 3, T: 1, TM: 1 },
    { nSplit: 63, HD: 12, nHead: 2, T: 2, TM: 4 },
    { nSplit: 65, HD: 80, nHead: 2, T: 1, TM: 1 },
    { nSplit: 200, HD: 128, nHead: 2, T: 3, TM: 4 },
    { nSplit: COMBINE_MAX_SPLITS, HD: 64, nHead: 1, T: 1, TM: 1 },
  ];
  for (const c of cases)
    it(`${c.nSplit} chunks, hd ${c.HD}, ${c.nHead} heads, T ${c.T} of ${c.TM}`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { nSplit, HD, nHead, T, TM } = c;
      const qDim = nHead * HD;
      const chunk = 7;
      const len = (nSplit - 1) * chunk + 1 + Math.floor(rng() * chunk);
      const partO = randomF32(rng, COMBINE_MAX_SPLITS * TM * qDim);
      const partMl = new Float32Array(COMBINE_MAX_SPLITS * TM * nHead * 2);
      for (let i = 0; i < partMl.length / 2; i++) {
        const empty = rng() < 0.1 && i % 5 !== 0;
        // Maxima within 4 of each other, so that every chunk weighs in; 1 in 8 far below (down to −20).
        const m = rng() < 0.125 ? -2 - rng() * 18 : (rng() - 0.5) * 4;
        partMl[2 * i] = empty ? -1e30 : Math.fround(m);
        partMl[2 * i + 1] = empty ? 0 : Math.fround(0.5 + rng() * 4);
      }
      const out0 = randomF32(rng, (TM + 1) * qDim);
      const out = storageFrom(device, out0);
      await runWGSL(
        device,
        flashCombineWGSL({ nHead, headDim: HD, maxTokens: TM }),
        [
          uniformFrom(device, Uint32Array.of(T, len - T, chunk, 0)),
          storageFrom(device, partO),
          storageFrom(device, partMl),
          out,
        ],
        [flashCombineWorkgroups({ nHead, headDim: HD }), T],
      );
      const ref = Float64Array.from(out0);
      const tol = new Float64Array(ref.length);
      for (let t = 0; t < T; t++)
        for (let h = 0; h < nHead; h++) {
          const ml = (s: number) => (s * TM + t) * nHead + h;
          let M = -1e30;
          for (let s = 0; s < nSplit; s++) M = Math.max(M, partMl[2 * ml(s)]);
          const w = Array.from({ length: nSplit }, (_, s) => Math.exp(partMl[2 * ml(s)] - M));
          const L = w.reduce((a, x, s) => a + x * partMl[2 * ml(s) + 1], 0);
          for (let d = 0; d < HD; d++) {
            let a = 0;
            let mag = 0;
            for (let s = 0; s < nSplit; s++) {
              const v = partO[(s * TM + t) * qDim + h * HD + d] * w[s];
              a += v;
              mag += Math.abs(v);
            }
            ref[t * qDim + h * HD + d] = a / L;
            // WGSL's exp is good to 3 + 2|x| ULP (|x| ≤ 20 here), then nSplit f32 additions.
            tol[t * qDim + h * HD + d] = ((100 + 4 * nSplit) * 2 ** -23 * mag) / L + 1e-6;
          }
        }
      assertClose(`combine (seed ${seed})`, await readF32(device, out), ref, tol);
    });
});

describe('flashDecodeWGSL + flashCombineWGSL', () => {
  /**
   * Depth (pos0 + T), head dim, GQA ratio, tokens, chunk (0 = the GPU policy), per case; T 5..8 are small
   * batches (a short prompt, a verify pass: maxTokens 8), some with Gemma's window and soft-cap (a window
   * narrower than a chunk leaves chunks with no visible position for some rows, which the combine skips).
   */
  const shapes: {
    len: number;
    HD: number;
    G: number;
    T: number;
    chunk: number;
    window?: number;
    softcap?: number;
    tiledOnly?: boolean;
  }[] = [
    { len: 1, HD: 64, G: 1, T: 1, chunk: 64 },
    { len: 2, HD: 8, G: 2, T: 2, chunk: 64 },
    { len: 64, HD: 80, G: 4, T: 1, chunk: 64 },
    { len: 65, HD: 128, G: 8, T: 1, chunk: 64 },
    { len: 129, HD: 12, G: 3, T: 4, chunk: 64 },
    { len: 200, HD: 64, G: 4, T: 3, chunk: 128 },
    { len: 1000, HD: 128, G: 4, T: 1, chunk: 0 },
    { len: 4097, HD: 64, G: 8, T: 2, chunk: 256 },
    { len: 5000, HD: 128, G: 1, T: 1, chunk: 0 },
    { len: 5000, HD: 80, G: 8, T: 4, chunk: 1000 },
    { len: 7, HD: 64, G: 1, T: 7, chunk: 64 },
    { len: 300, HD: 128, G: 4, T: 8, chunk: 64, tiledOnly: true },
    { len: 1030, HD: 64, G: 4, T: 5, chunk: 0 },
    // Tiled layouts only (also above): the strided one unrolls 8 tokens' rows of 128 or 256 into registers
    // (~20 s and ~70 s to compile on SwiftShader); software adapters run small batches' attention on the
    // prefill kernel instead, and the strided layout meets T 5..8 on the head sizes of 32 and 64.
    { len: 520, HD: 256, G: 2, T: 8, chunk: 256, tiledOnly: true },
    // The tiled P·V by 8-element words with 2 position groups (hd 256), 2 tokens of 4.
    { len: 700, HD: 256, G: 2, T: 2, chunk: 256, tiledOnly: true },
    { len: 300, HD: 64, G: 2, T: 6, chunk: 64, window: 40, softcap: 5 },
    { len: 129, HD: 32, G: 1, T: 8, chunk: 32, window: 20 },
  ];
  const layouts = async (): Promise<{ name: string; layout: FlashLayout }[]> => {
    const gpu = await testGpu();
    const out: { name: string; layout: FlashLayout }[] = [
      { name: 'strided', layout: { kind: 'strided' } },
      { name: 'tiled', layout: { kind: 'tiled', lanes: 1 } },
    ];
    if (gpu.hasSubgroups && gpu.subgroupMinSize >= 4)
      out.push({ name: 'tiled, 4 lanes (subgroups)', layout: { kind: 'tiled', lanes: 4 } });
    return out;
  };
  // Q8_0/Q4_0 caches: head dims that are whole 32-value blocks, T up to 4, depths across chunk edges; each
  // pair of K and V types takes every other shape, so every shape meets two pairs.
  const quantShapes = [
    ...shapes.filter((c) => c.HD % 32 === 0 && c.HD < 256),
    { len: 300, HD: 32, G: 4, T: 4, chunk: 64 },
  ];
  const cacheCases: { kv: KvType; vKv: KvType; shapes: typeof shapes }[] = [
    { kv: 'f16', vKv: 'f16', shapes },
    { kv: 'f32', vKv: 'f32', shapes },
    ...(
      [
        ['q8_0', 'q8_0'],
        ['q4_0', 'q4_0'],
        ['q8_0', 'q4_0'],
        ['f16', 'q8_0'],
      ] as const
    ).map(([kv, vKv], p) => ({ kv, vKv, shapes: quantShapes.filter((_, i) => (i + p) % 2 === 0) })),
  ];
  for (const [p, { kv, vKv, shapes }] of cacheCases.entries()) {
    shapes.forEach((c, i) => {
      // Every layout on every shape would be slow on a software adapter (shader compilation dominates):
      // f16 runs two layouts per shape, rotating, and f32 the ones f16 left out, so every layout meets
      // every shape across the two; each quantized pair runs one layout per shape, rotating, so it meets
      // every layout across its six shapes.
      const extra = `${c.window ? `, window ${c.window}` : ''}${c.softcap ? `, softcap ${c.softcap}` : ''}`;
      it(`depth ${c.len}, hd ${c.HD}, GQA ${c.G}, T ${c.T}, chunk ${c.chunk || 'policy'}${extra}, ${kv}${vKv !== kv ? `/${vKv}` : ''}`, async () => {
        const gpu = await testGpu();
        const device = gpu.device;
        // The layouts this shape takes (4 lanes need headDim/4 a multiple of 4).
        const all = (await layouts()).filter(
          (l) => (!c.tiledOnly || l.layout.kind === 'tiled') && (c.HD / 4) % (l.layout.lanes ?? 1) === 0,
        );
        const f16Pick = [...new Set([all[i % all.length], all[(i + 2) % all.length]])];
        const pick =
          kv === 'f16' && vKv === 'f16'
            ? f16Pick
            : kv === 'f32'
              ? all.filter((l) => !f16Pick.includes(l))
              : [all[(i + p) % all.length]];
        expect(pick.length).toBeGreaterThan(0);
        for (const { name, layout } of pick) {
          const { seed, rng } = freshRng();
          const nHeadKv = 2;
          const nHead = nHeadKv * c.G;
          const { HD, T } = c;
          const pos0 = c.len - T;
          const qDim = nHead * HD;
          const kvDim = nHeadKv * HD;
          const nCtx = c.len + 5;
          const maxTokens = T === 1 ? 1 : T <= 4 ? 4 : 8;
          const gemma = {
            ...(c.window ? { window: c.window } : {}),
            ...(c.softcap ? { softcap: c.softcap } : {}),
          };
          const o = {
            nHead,
            nHeadKv,
            headDim: HD,
            scale: 1 / Math.sqrt(HD),
            kvType: kv,
            ...(vKv !== kv ? { vKvType: vKv } : {}),
            maxTokens,
            nCtx,
            layout,
            ...gemma,
          };
          const { groupsPerKvHead } = flashHeadGroups(o);
          const { chunk, nSplit } = attentionSplit(c.len, {
            workgroupsPerChunk: nHeadKv * groupsPerKvHead,
            targetWorkgroups: 256,
            minChunk: 128,
            fixedChunk: c.chunk || undefined,
          });
          const q = randomF32(rng, T * qDim);
          const { k, v, kRef, vRef } = caches(rng, nCtx, kvDim, c.len, kv, vKv);
          const out0 = randomF32(rng, (T + 1) * qDim); // a spare row that must stay untouched
          const out = storageFrom(device, out0);
          const step = uniformFrom(device, Uint32Array.of(T, pos0, chunk, 0));
          const partO = storageFrom(device, new Float32Array(MAX_SPLITS * maxTokens * qDim));
          const partMl = storageFrom(device, new Float32Array(MAX_SPLITS * maxTokens * nHead * 2));
          const qBuf = storageFrom(device, q);
          await runWGSL(
            device,
            flashDecodeWGSL(o),
            [step, qBuf, storageFrom(device, k), storageFrom(device, v), out, partO, partMl],
            [nHeadKv * groupsPerKvHead, nSplit],
          );
          if (nSplit > 1) {
            await runWGSL(
              device,
              flashCombineWGSL({ nHead, headDim: HD, maxTokens }),
              [step, partO, partMl, out],
              [flashCombineWorkgroups({ nHead, headDim: HD }), T],
            );
          }
          const [ref, tol] = attentionRef(q, kRef, vRef, { nHead, nHeadKv, HD, T, pos0, ...gemma });
          const fullRef = Float64Array.from(out0);
          fullRef.set(ref);
          const fullTol = new Float64Array(fullRef.length);
          fullTol.set(tol.map((x) => 2 * x)); // the chunk merge adds a few roundings
          assertClose(
            `${name}, ${nSplit} chunk(s) of ${chunk} (seed ${seed})`,
            await readF32(device, out),
            fullRef,
            fullTol,
          );
        }
      });
    });
  }
});

describe('prefillAttentionWGSL', () => {
  it('plans fit 16 KiB of workgroup memory for every head dim and GQA group it takes', () => {
    for (let HD = 4; HD <= 256; HD += 4) {
      for (const G of [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32]) {
        for (const layout of [{ kind: 'tiled' }, { kind: 'rows' }] as const) {
          const o = { nHead: 2 * G, nHeadKv: 2, headDim: HD, scale: 1, kvType: 'f32' as const, layout };
          const p = prefillAttentionPlan(o);
          expect(p.workgroupBytes).toBeLessThanOrEqual(16384);
          expect(p.threads).toBeLessThanOrEqual(256);
          expect(p.kvTile).toBeGreaterThanOrEqual(layout.kind === 'tiled' ? 4 : 1);
          expect(G % p.headsPerGroup).toBe(0);
          expect(p.headsPerGroup * p.groupsPerKvHead).toBe(G);
          // The generated source declares what the plan counts (WGSL sizes in 4-byte words).
          const code = prefillAttentionWGSL(o);
          const words = [...code.matchAll(/var<workgroup> \w+: array<(vec4<f32>|f32), (\d+)>/g)].reduce(
            (n, m) => n + Number(m[2]) * (m[1] === 'f32' ? 1 : 4),
            0,
          );
          expect(words * 4).toBe(p.workgroupBytes);
        }
      }
    }
    // What the kernel refuses, under either layout: a head dim not a multiple of 4 or over 256, query heads
    // not a multiple of the KV heads; and a rows block over 8.
    const refused: { layout: PrefillLayout; nHead: number; headDim: number; error: RegExp }[] = [
      { layout: { kind: 'tiled' }, nHead: 2, headDim: 6, error: /unsupported/ },
      { layout: { kind: 'rows' }, nHead: 2, headDim: 260, error: /unsupported/ },
      { layout: { kind: 'rows' }, nHead: 3, headDim: 8, error: /unsupported/ },
      { layout: { kind: 'rows', block: 9 }, nHead: 2, headDim: 8, error: /bad rows layout/ },
      { layout: { kind: 'rows', shareKv: 3 }, nHead: 2, headDim: 8, error: /bad rows layout/ },
      { layout: { kind: 'rows', shareKv: 4, threads: 6 }, nHead: 2, headDim: 8, error: /bad rows layout/ },
    ];
    for (const { layout, nHead, headDim, error } of refused)
      expect(() =>
        prefillAttentionWGSL({ nHead, nHeadKv: 2, headDim, scale: 1, kvType: 'f32', layout }),
      ).toThrow(error);
  });

  /**
   * Batch tokens, position of its first token, GQA ratio, head dim, cache type and the layouts it runs,
   * per case (nHeadKv = 2). Every layout on every shape would be slow on a software adapter (shader
   * compilation dominates: ~5 s per layout at head dim 64 with a quantized cache), so each shape runs a
   * few (t: tiled, r: rows, ro: rows odd, s: rows sharing K and V through subgroups, so: that odd), chosen
   * so that every layout meets every GQA ratio, every head dim it takes (128 and 256: not the odd ones),
   * f16, f32, Q8_0 and Q4_0 caches (K and V), T = 1, a few tokens, tens and hundreds (all off every tile:
   * 7, 20, 33, 40, 63, 65, 130, 520), pos0 = 0 and past it; the first test below checks that.
   */
  const shapes: {
    T: number;
    pos0: number;
    G: number;
    HD: number;
    kv: KvType;
    vKv?: KvType;
    use: ('t' | 'r' | 'ro' | 's' | 'so')[];
  }[] = [
    { T: 33, pos0: 5, G: 2, HD: 64, kv: 'q8_0', use: ['t', 'ro', 'so'] },
    { T: 65, pos0: 70, G: 4, HD: 128, kv: 'q4_0', use: ['t', 'r', 's'] },
    { T: 130, pos0: 0, G: 1, HD: 32, kv: 'q8_0', vKv: 'q4_0', use: ['t', 'r', 'ro', 's', 'so'] },
    { T: 7, pos0: 64, G: 8, HD: 64, kv: 'f16', vKv: 'q8_0', use: ['t', 'r', 'so'] },
    { T: 1, pos0: 0, G: 1, HD: 64, kv: 'f32', use: ['t', 'r', 'ro', 's', 'so'] },
    { T: 7, pos0: 0, G: 2, HD: 64, kv: 'f16', use: ['r', 'ro', 's', 'so'] },
    { T: 7, pos0: 90, G: 8, HD: 128, kv: 'f32', use: ['t', 'r'] },
    { T: 33, pos0: 5, G: 2, HD: 8, kv: 'f16', use: ['t', 'r', 'ro', 's', 'so'] },
    { T: 63, pos0: 0, G: 4, HD: 128, kv: 'f16', use: ['t', 's'] },
    { T: 65, pos0: 37, G: 1, HD: 64, kv: 'f32', use: ['ro', 's'] },
    { T: 65, pos0: 0, G: 8, HD: 64, kv: 'f16', use: ['t', 'ro', 's'] },
    { T: 130, pos0: 0, G: 3, HD: 20, kv: 'f16', use: ['t', 'r', 'ro', 's', 'so'] },
    { T: 130, pos0: 201, G: 1, HD: 48, kv: 'f32', use: ['t', 'r', 'ro', 's', 'so'] },
    { T: 40, pos0: 64, G: 4, HD: 256, kv: 'f16', use: ['t', 's'] },
    { T: 20, pos0: 3, G: 1, HD: 256, kv: 'f32', use: ['t', 'r'] },
    { T: 520, pos0: 0, G: 1, HD: 64, kv: 'f16', use: ['r', 's'] },
    { T: 520, pos0: 9, G: 2, HD: 64, kv: 'f32', use: ['t', 'so'] },
  ];
  type LayoutKey = (typeof shapes)[number]['use'][number];
  const layouts: { key: LayoutKey; name: string; layout: PrefillLayout }[] = [
    { key: 't', name: 'tiled', layout: { kind: 'tiled' } },
    { key: 'r', name: 'rows', layout: { kind: 'rows' } },
    {
      key: 'ro',
      name: 'rows, odd (3 threads, 5 rows, block 3)',
      layout: { kind: 'rows', threads: 3, rows: 5, block: 3 },
    },
  ];
  /**
   * The rows layouts sharing K and V through subgroups, where every subgroup of this adapter has the same
   * size S (SwiftShader: 4): the engine's choice (one subgroup of S threads, block 2) and an odd one (two
   * subgroups, 5 rows, block 3) whose tile edges move and whose head dims (8, 20, 48) leave a subgroup's
   * last loads spare.
   */
  async function sharedLayouts(): Promise<{ key: LayoutKey; name: string; layout: PrefillLayout }[]> {
    const gpu = await testGpu();
    const S = gpu.subgroupMinSize;
    if (!gpu.hasSubgroups || S !== gpu.subgroupMaxSize || ![2, 4, 8].includes(S)) return [];
    return [
      {
        key: 's',
        name: `rows, K/V shared by ${S}`,
        layout: { kind: 'rows', shareKv: S, threads: S, block: 2 },
      },
      {
        key: 'so',
        name: `rows, K/V shared by ${S}, odd (${2 * S} threads, 5 rows, block 3)`,
        layout: { kind: 'rows', shareKv: S, threads: 2 * S, rows: 5, block: 3 },
      },
    ];
  }
  it('the shapes cover every layout with every GQA ratio, head dim, cache type, size of T and pos0 = 0 and past it', () => {
    const keys: LayoutKey[] = ['t', 'r', 'ro', 's', 'so'];
    const odd = (k: LayoutKey) => k === 'ro' || k === 'so';
    const values = (f: (c: (typeof shapes)[number]) => (string | number)[], k?: LayoutKey) =>
      [...new Set(shapes.filter((c) => !k || c.use.includes(k)).flatMap(f))].sort();
    for (const k of keys) {
      // The odd layouts' unrolled source at head dims over 64 would take tens of seconds to compile.
      const takes = (c: (typeof shapes)[number]) => !odd(k) || c.HD <= 64;
      const want = (f: (c: (typeof shapes)[number]) => (string | number)[]) =>
        [...new Set(shapes.filter(takes).flatMap(f))].sort();
      for (const f of [
        (c: (typeof shapes)[number]) => [c.G],
        (c: (typeof shapes)[number]) => [c.HD],
        (c: (typeof shapes)[number]) => [c.kv, c.vKv ?? c.kv],
        // T = 1, a few tokens (under every tile), tens (across the small tiles) and hundreds (across all).
        (c: (typeof shapes)[number]) => [c.T === 1 ? 1 : c.T <= 16 ? 16 : c.T < 130 ? 129 : 520],
        (c: (typeof shapes)[number]) => [c.pos0 === 0 ? 'pos0 0' : 'pos0 > 0'],
      ])
        expect(values(f, k), k).toEqual(want(f));
    }
    for (const c of shapes) expect(c.use.every((k) => !odd(k) || c.HD <= 64)).toBe(true);
  });
  for (const c of shapes) {
    it(`T ${c.T}, pos0 ${c.pos0}, GQA ${c.G}, hd ${c.HD}, ${c.kv}${c.vKv ? `/${c.vKv}` : ''}`, async () => {
      const device = await testDevice();
      const all = [...layouts, ...(await sharedLayouts())];
      const { seed, rng } = freshRng();
      const { T, pos0, HD, kv } = c;
      const nHeadKv = 2;
      const nHead = nHeadKv * c.G;
      const qDim = nHead * HD;
      const kvDim = nHeadKv * HD;
      const nCtx = pos0 + T + 9;
      const q = randomF32(rng, T * qDim);
      // Rows 0..pos0+T−1 hold real keys and values (before pos0: earlier batches of the sequence).
      const { k, v, kRef, vRef } = caches(rng, nCtx, kvDim, pos0 + T, kv, c.vKv);
      const [ref, tol] = attentionRef(q, kRef, vRef, { nHead, nHeadKv, HD, T, pos0 });
      const out0 = randomF32(rng, (T + 1) * qDim); // a spare row that must stay untouched
      const fullRef = Float64Array.from(out0);
      fullRef.set(ref);
      const fullTol = new Float64Array(fullRef.length);
      fullTol.set(tol);
      const bufs = [
        uniformFrom(device, packStep(T, pos0)),
        storageFrom(device, q),
        storageFrom(device, k),
        storageFrom(device, v),
      ];
      const use = all.filter((l) => c.use.includes(l.key));
      expect(use.length).toBeGreaterThan(0);
      for (const { name, layout } of use) {
        const o = {
          nHead,
          nHeadKv,
          headDim: HD,
          scale: 1 / Math.sqrt(HD),
          kvType: kv,
          vKvType: c.vKv,
          layout,
        };
        const out = storageFrom(device, out0);
        await runWGSL(device, prefillAttentionWGSL(o), [...bufs, out], prefillAttentionWorkgroups(o, T));
        const p = prefillAttentionPlan(o);
        // attentionWGSL's tolerance: each row is one online softmax, as that kernel's per-thread loop (the
        // rescales multiply the output and its sum alike, so they cancel in the final division).
        assertClose(
          `${name} (${p.tokensPerTile} tokens × ${p.headsPerGroup} heads, KV tile ${p.kvTile}; seed ${seed})`,
          await readF32(device, out),
          fullRef,
          fullTol,
        );
      }
    });
  }
});
