/**
 * attentionWGSL against a float64 causal softmax attention: GQA and plain MHA, head dims 8 and 12,
 * decode (T = 1) at pos0 = 0 and past the 64 threads, and prefill batches (token t sees 0..pos0+t).
 * Cache rows past the last position hold huge values, so any leak shows.
 */
import { describe, it } from 'vitest';
import { attentionWGSL } from './attention.ts';
import { packStep } from './common.ts';
import {
  assertClose,
  freshRng,
  randomF32,
  readF32,
  runWGSL,
  storageFrom,
  testDevice,
  uniformFrom,
} from './test-util.ts';

const REL = 1e-5;
const ABS = 1e-6;

/** Causal GQA attention in float64: [out, tol] for q [T, nHead·HD] over caches [nCtx, nHeadKv·HD]. */
function attentionRef(
  q: Float32Array,
  kc: Float32Array,
  vc: Float32Array,
  o: { nHead: number; nHeadKv: number; HD: number; T: number; pos0: number },
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
      for (let j = 0; j < n; j++) {
        for (let d = 0; d < HD; d++) {
          const p = scale * q[t * qDim + h * HD + d] * kc[j * kvDim + kvh * HD + d];
          s[j] += p;
          sAbs[j] += Math.abs(p);
        }
      }
      const m = Math.max(...s);
      const w = s.map((v) => Math.exp(v - m));
      const l = w.reduce((a, b) => a + b, 0);
      for (let d = 0; d < HD; d++) {
        let acc = 0;
        for (let j = 0; j < n; j++) acc += (w[j] / l) * vc[j * kvDim + kvh * HD + d];
        // f32 error: each weight is off by (score error + exp error) relative, which moves the output by
        // Σ w·|v − out|·that; the weighted sum itself adds a few ulp of Σ w·|v|.
        let bound = 0;
        for (let j = 0; j < n; j++) {
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

describe('attentionWGSL', () => {
  for (const c of [
    { nHead: 6, nHeadKv: 2, HD: 8, T: 1, pos0: 0 },
    { nHead: 6, nHeadKv: 2, HD: 12, T: 1, pos0: 150 },
    { nHead: 6, nHeadKv: 2, HD: 8, T: 5, pos0: 3 },
    { nHead: 4, nHeadKv: 4, HD: 12, T: 5, pos0: 3 },
    { nHead: 4, nHeadKv: 4, HD: 8, T: 1, pos0: 150 },
    { nHead: 6, nHeadKv: 2, HD: 12, T: 11, pos0: 60 },
  ]) {
    it(`causal attention (nHead=${c.nHead}, nHeadKv=${c.nHeadKv}, hd=${c.HD}, T=${c.T}, pos0=${c.pos0})`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const { nHead, nHeadKv, HD, T, pos0 } = c;
      const qDim = nHead * HD;
      const kvDim = nHeadKv * HD;
      const nCtx = pos0 + T + 7;
      const filled = (pos0 + T) * kvDim; // positions 0..pos0+T−1 hold real keys and values
      const q = randomF32(rng, T * qDim);
      const kc = randomF32(rng, nCtx * kvDim);
      const vc = randomF32(rng, nCtx * kvDim);
      for (let i = filled; i < kc.length; i++) {
        kc[i] = Math.sign(kc[i]) * 1e4; // scores ±1e4·… dominate every real score if read
        vc[i] = 1e6;
      }
      const out0 = randomF32(rng, (T + 1) * qDim); // a spare row that must stay untouched
      const out = storageFrom(device, out0);
      const code = attentionWGSL({ nHead, nHeadKv, headDim: HD, scale: 1 / Math.sqrt(HD) });
      const bufs = [
        uniformFrom(device, packStep(T, pos0)),
        storageFrom(device, q),
        storageFrom(device, kc),
        storageFrom(device, vc),
        out,
      ];
      await runWGSL(device, code, bufs, [nHead, T]);
      const [ref, tol] = attentionRef(q, kc, vc, { nHead, nHeadKv, HD, T, pos0 });
      const fullRef = Float64Array.from(out0);
      fullRef.set(ref);
      const fullTol = new Float64Array(fullRef.length);
      fullTol.set(tol);
      assertClose(`attention (seed ${seed})`, await readF32(device, out), fullRef, fullTol);
    });
  }
});
