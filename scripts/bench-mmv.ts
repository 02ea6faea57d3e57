/**
 * `npm run bench:mmv [-- --types Q4_K,Q6_K --iters 20]`: times the decode matrix × vector kernels on this
 * machine's WebGPU adapter in Node (Dawn; SwiftShader where no Vulkan driver is configured), for the
 * matrix shapes of the 60M-parameter benchmark model (K = 512 → N = 1536 gate+up, K = 1536 → N = 512,
 * K = 512 → N = 32000 output): the old kernels (matmul.ts rows / K-split) beside mmv.ts layouts. Wall time
 * per dispatch over `iters` dispatches in one submit, median of 5; weights are random bytes with sane
 * scales (speed does not depend on the values). Prints a table; used to choose the layouts tried at load.
 */
import { parseArgs } from 'node:util';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { quantizeRow } from '../src/gguf/quantize.ts';
import { mulberry32 } from '../src/util/prng.ts';
import { createGpuContext } from '../src/webgpu/device.ts';
import { packStep, rowBytes, WEIGHT_BLOCK, type WeightType } from '../src/webgpu/kernels/common.ts';
import {
  gemvWGSL,
  gemvWorkgroupsX,
  type MatmulSegment,
  rowsWGSL,
  rowsWorkgroupsX,
} from '../src/webgpu/kernels/matmul.ts';
import { type MmvLayout, mmvWGSL, mmvWorkgroupsX } from '../src/webgpu/kernels/mmv.ts';
import { isPlanarType, repackHost } from '../src/webgpu/kernels/repack.ts';

const USAGE = `usage: npm run bench:mmv -- [--types Q4_K,Q6_K,Q4_0,Q8_0,F16] [--shapes ffn,down,out] [--iters N] [--layouts mmv] [--planar] [--gpu]
  --planar   weights of Q4_0/Q8_0/Q5_0/Q6_K repacked into planes, as the engine loads them (kernels/repack.ts)
  --layouts  only the variants whose name contains this text (e.g. "mmv rows u2"); default all`;
let values: {
  types: string;
  iters: string;
  shapes: string;
  layouts: string;
  planar: boolean;
  gpu: boolean;
  help: boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      types: { type: 'string', default: 'Q4_K,Q6_K,Q4_0,Q8_0,F16' },
      iters: { type: 'string', default: '20' },
      shapes: { type: 'string', default: 'ffn,down,out' },
      layouts: { type: 'string', default: 'all' },
      planar: { type: 'boolean', default: false },
      gpu: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  console.error(`${(e as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
setupNodeVulkan(values.gpu);
const gpu = await createGpuContext();
const { device } = gpu;
const packed = gpu.wgslFeatures.has('packed_4x8_integer_dot_product');
const sgMin = gpu.hasSubgroups ? gpu.subgroupMinSize : 0;
const iters = Number(values.iters);
const rng = mulberry32(1);

/** Blocks of `type` in N rows of K, when --planar repacks this type; else undefined. */
function planarBlocks(type: WeightType, K: number, N: number): number | undefined {
  return values.planar && isPlanarType(type) ? (K * N) / WEIGHT_BLOCK[type].size : undefined;
}
function weightBytes(type: WeightType, K: number, N: number): Uint8Array {
  const row = new Float32Array(K).map(() => (rng() - 0.5) / 8);
  const q = type === 'F32' ? new Uint8Array(row.buffer) : quantizeRow(type, row);
  const out = new Uint8Array(Math.ceil((rowBytes(type, K) * N) / 16) * 16);
  for (let r = 0; r < N; r++) out.set(q, r * q.length);
  const nb = planarBlocks(type, K, N);
  return nb === undefined ? out : repackHost(type, out, nb);
}
function buf(data: ArrayBufferView | number, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) {
  const size = typeof data === 'number' ? data : data.byteLength;
  const b = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
  if (typeof data !== 'number') device.queue.writeBuffer(b, 0, data as Uint8Array<ArrayBuffer>);
  return b;
}

const shapes: Record<string, { K: number; N: number; dots: number; norm: boolean }> = {
  ffn: { K: 512, N: 1536, dots: 2, norm: true },
  down: { K: 1536, N: 512, dots: 1, norm: false },
  out: { K: 512, N: 32000, dots: 1, norm: true },
};

type Variant = {
  name: string;
  src: (o: Parameters<typeof rowsWGSL>[0]) => string;
  wgx: (s: MatmulSegment[]) => number;
};
const variants: Variant[] = values.planar // the old kernels read raw blocks only
  ? []
  : [
      { name: 'old rows', src: rowsWGSL, wgx: rowsWorkgroupsX },
      { name: 'old ksplit32', src: gemvWGSL, wgx: gemvWorkgroupsX },
    ];
const L = (
  lanes: number,
  units: number,
  threads: number,
  reduce: MmvLayout['reduce'],
  pk = packed,
): MmvLayout => ({
  lanes,
  units,
  threads,
  reduce,
  packed: pk,
});
const layouts: [string, MmvLayout][] = [
  ['mmv rows u1 t64', L(1, 1, 64, 'shared')],
  ['mmv rows u2 t64', L(1, 2, 64, 'shared')],
  ['mmv rows u4 t64', L(1, 4, 64, 'shared')],
  ['mmv rows u2 t32', L(1, 2, 32, 'shared')],
  ['mmv rows u2 t16', L(1, 2, 16, 'shared')],
  ['mmv rows u2 t64 nopack', L(1, 2, 64, 'shared', false)],
  ['mmv l4 sg u2 t64', L(4, 2, 64, 'subgroup')],
  ['mmv l32 shared u1 t256', L(32, 1, 256, 'shared')],
];
// The software adapters' shared-activation layout (tune.ts mmvCandidates): 8 rows per thread, 8-thread
// workgroups, each chunk's activations loaded once per subgroup of S threads.
if (gpu.hasSubgroups && sgMin === gpu.subgroupMaxSize && [2, 4, 8].includes(sgMin))
  layouts.push([`mmv rows u8 t8 shareX${sgMin}`, { ...L(1, 8, 8, 'shared'), shareX: sgMin }]);
if (sgMin >= 32)
  layouts.push(
    ['mmv l32 sg u1 t256', L(32, 1, 256, 'subgroup')],
    ['mmv l32 sg u2 t128', L(32, 2, 128, 'subgroup')],
    ['mmv l16 sg u2 t128', L(16, 2, 128, 'subgroup')],
  );
for (const [name, layout] of layouts.filter(([n]) => values.layouts === 'all' || n.includes(values.layouts)))
  variants.push({ name, src: (o) => mmvWGSL({ ...o, layout }), wgx: (s) => mmvWorkgroupsX(s, layout) });

const rows: string[] = [];
console.log(`adapter ${JSON.stringify(gpu.info)} packed=${packed} subgroupMinSize=${sgMin}`);
for (const type of values.types.split(',') as WeightType[]) {
  for (const sname of values.shapes.split(',')) {
    const sh = shapes[sname];
    const ws = Array.from({ length: sh.dots }, () => buf(weightBytes(type, sh.K, sh.N)));
    const x = buf(new Float32Array(sh.K).map(() => rng() - 0.5));
    const g = buf(new Float32Array(sh.K).fill(1));
    const y = buf(sh.N * 4 * 2);
    const stepB = buf(packStep(1, 0), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    const seg: MatmulSegment = {
      nUnits: sh.N,
      weights: ws.map(() => ({ type, planar: planarBlocks(type, sh.K, sh.N) })),
      dots: ws.map((_, w) => ({ w, row: 'u' })),
      epilogue: sh.dots === 2 ? `y[u] = d0 / (1.0 + exp(-d0)) * d1;` : `y[u] = d0;`,
    };
    const cells: string[] = [];
    for (const v of variants) {
      const code = v.src({
        K: sh.K,
        TT: 1,
        norm: sh.norm ? { eps: 1e-5, type: 'F32' } : undefined,
        segments: [seg],
        extra: ['var<storage, read_write> y: array<f32>'],
      } as never);
      const module = device.createShaderModule({ code });
      const pipe = await device.createComputePipelineAsync({
        layout: 'auto',
        compute: { module, entryPoint: 'main' },
      });
      const group = device.createBindGroup({
        layout: pipe.getBindGroupLayout(0),
        entries: [stepB, x, ...(sh.norm ? [g] : []), ...ws, y].map((buffer, binding) => ({
          binding,
          resource: { buffer },
        })),
      });
      const nx = v.wgx([seg]);
      const once = async (n: number) => {
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        pass.setPipeline(pipe);
        pass.setBindGroup(0, group);
        for (let i = 0; i < n; i++) pass.dispatchWorkgroups(nx, 1);
        pass.end();
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
      };
      await once(2);
      const ts: number[] = [];
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        await once(iters);
        ts.push((performance.now() - t0) / iters);
      }
      ts.sort((a, b) => a - b);
      cells.push(
        `${v.name}: ${ts[2].toFixed(2)} (${((ts[2] * 1e6) / (sh.K * sh.N * sh.dots)).toFixed(2)} ns/w)`,
      );
    }
    const line = `${type} ${sname} (K=${sh.K} N=${sh.N}×${sh.dots}) ms/dispatch: ${cells.join(' | ')}`;
    console.log(line);
    rows.push(line);
    for (const b of [...ws, x, g, y, stepB]) b.destroy();
  }
}
process.exit(0);
