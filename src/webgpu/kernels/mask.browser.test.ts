/**
 * maskWGSL (constrained decoding's token mask) against its CPU reference `applyTokenMask` on random
 * logits and random bitmasks, vocabularies off every multiple of 32 and of the workgroup; then the argmax
 * kernel over the masked logits picks the CPU argmax among the allowed tokens only.
 */
import { describe, expect, it } from 'vitest';
import {
  freshRng,
  randomF32,
  readF32,
  readU32,
  runWGSL,
  storageFrom,
  testDevice,
} from '../../testing/kernel-util.ts';
import { argmax } from '../sampler.ts';
import { argmaxKernels } from './argmax.ts';
import { applyTokenMask, MASKED_LOGIT, maskWGSL, maskWorkgroups } from './mask.ts';

describe('maskWGSL', () => {
  for (const nVocab of [1, 31, 33, 255, 257, 1000, 32_003]) {
    it(`nVocab ${nVocab}: the CPU reference's masked logits, and the argmax among allowed tokens`, async () => {
      const device = await testDevice();
      const { seed, rng } = freshRng();
      const logits = randomF32(rng, nVocab, 3);
      const words = Math.ceil(nVocab / 32);
      // Densities from one allowed token to nearly all; bits past nVocab set, which must change nothing.
      for (const density of [0, 0.01, 0.5, 0.97]) {
        const mask = new Uint32Array(words);
        for (let w = 0; w < words; w++) {
          let bits = 0;
          for (let b = 0; b < 32; b++) if (rng() < density) bits |= 1 << b;
          mask[w] = bits >>> 0;
        }
        const only = Math.floor(rng() * nVocab);
        mask[only >> 5] |= 1 << (only & 31); // at least one allowed
        const want = applyTokenMask(logits, mask, nVocab);
        const l = storageFrom(device, logits);
        const m = storageFrom(device, mask);
        await runWGSL(device, maskWGSL({ nVocab }), [m, l], [maskWorkgroups(nVocab)]);
        const got = await readF32(device, l, nVocab);
        expect(Array.from(got), `seed ${seed} density ${density}`).toEqual(Array.from(want));
        let allowed = 0;
        for (let i = 0; i < nVocab; i++) if ((mask[i >> 5] >>> (i & 31)) & 1) allowed++;
        expect(got.filter((x) => x === Math.fround(MASKED_LOGIT)).length).toBe(nVocab - allowed);
        const out = device.createBuffer({
          size: 16,
          usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
        });
        const am = argmaxKernels({ nVocab });
        const partials = device.createBuffer({ size: am.partialBytesPerRow, usage: GPUBufferUsage.STORAGE });
        await runWGSL(device, am.partials, [l, partials], [am.nParts]);
        await runWGSL(device, am.final, [partials, out], [1]);
        const id = (await readU32(device, out, 1))[0];
        expect(id, `seed ${seed} density ${density}`).toBe(argmax(want));
        expect((mask[id >> 5] >>> (id & 31)) & 1).toBe(1);
        l.destroy();
        m.destroy();
        out.destroy();
      }
    });
  }
});
