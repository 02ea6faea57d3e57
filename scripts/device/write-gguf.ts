/**
 * Command line for scripts/device/random-gguf.ts: writes a random-weight GGUF of a synthetic shape.
 *
 *   tsx scripts/device/write-gguf.ts --shape llama-3.1-8b --ftype Q4_K_M --out /tmp/m.gguf
 *                                    [--mode tiled|exact] [--seed 1] [--pool-elements 4194304]
 */
import { parseArgs } from 'node:util';
import { shapeOptions, toFtype, writeRandomGguf } from './random-gguf.ts';

const { values } = parseArgs({
  options: {
    shape: { type: 'string' },
    ftype: { type: 'string' },
    out: { type: 'string' },
    mode: { type: 'string', default: 'tiled' },
    seed: { type: 'string', default: '1' },
    'pool-elements': { type: 'string' },
  },
});
if (!values.shape || !values.ftype || !values.out) {
  console.error('usage: write-gguf --shape ID --ftype Q4_K_M --out FILE [--mode tiled|exact] [--seed N]');
  process.exit(2);
}
const r = await writeRandomGguf(
  values.out,
  shapeOptions(values.shape, Number(values.seed)),
  toFtype(values.ftype),
  {
    mode: values.mode === 'exact' ? 'exact' : 'tiled',
    poolElements: values['pool-elements'] ? Number(values['pool-elements']) : undefined,
    log: (m) => console.error(m),
  },
);
const { plan: _plan, ...rest } = r;
console.log(JSON.stringify({ ...rest, ms: Math.round(r.ms), MBps: Math.round(r.bytes / 1e3 / r.ms) }));
