/**
 * `npm run bench:floor [-- --no-write]`: what a matrix × vector product costs per weight on this machine's
 * WebGPU adapter (Node + Dawn; SwiftShader where no Vulkan driver is configured), from the least work any
 * decode kernel must do up to our own kernels, so that a decode figure can be read against the adapter's
 * ceiling rather than against a native CPU peer.
 *
 * Kernels, each over the same Q4_0-sized weight bytes (3072 rows × 512, 18 bytes per 32 weights, planar
 * as the engine repacks them) in one workgroup layout (64 threads, 4 rows per thread, a row per thread
 * along K, as the engine's software-adapter layout):
 * - `loads`: reads every quant word and scale once and XORs them (no arithmetic per weight);
 * - `f32 FMA`: the same loads, each 32-bit quant word bitcast to floats and multiplied with the
 *   activations: one multiply-add per weight and no dequantization, the floor of any kernel that multiplies
 *   each weight once in f32;
 * - `int SWAR`: the same loads, nibble pairs times pre-packed int8 activation pairs, two products per
 *   32-bit integer multiply (the activations' packing not counted: a lower bound for that scheme);
 * - `ours Q4_0` / `ours Q6_K`: the engine's own decode kernels (kernels/mmv.ts, the layout the load-time
 *   trial picks on SwiftShader) on the 60M model's gate+up shape (512 → 2 × 1536) and output shape
 *   (512 → 32000), with the RMSNorm.
 * Wall time per dispatch over 5 dispatches in one submit, best of 7 rounds run round-robin (the machine
 * is shared), → ns per weight; the decode ceiling is 1 / (ns per weight × the 60M model's 60,039,680
 * weights), the speed a model of that many weights could reach if every weight cost only this.
 * Writes a section into BENCHMARKS.md between `<!-- bench:floor DATE -->` and `<!-- /bench:floor DATE -->`.
 */
import { execSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { markdownTable } from '../src/bench/markdown.ts';
import { setupNodeVulkan } from '../src/cli/node-gpu.ts';
import { mulberry32 } from '../src/util/prng.ts';
import { createGpuContext } from '../src/webgpu/device.ts';
import { packStep, type WeightType } from '../src/webgpu/kernels/common.ts';
import type { MatmulSegment } from '../src/webgpu/kernels/matmul.ts';
import { type MmvLayout, mmvWGSL, mmvWorkgroupsX } from '../src/webgpu/kernels/mmv.ts';
import { writeBenchSection } from './bench-common.ts';

const USAGE = 'usage: npm run bench:floor -- [--no-write] [--gpu]';
let values: { 'no-write': boolean; gpu: boolean; help: boolean };
try {
  ({ values } = parseArgs({
    options: {
      'no-write': { type: 'boolean', default: false },
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
const MODEL_WEIGHTS = 60_039_680;
const rng = mulberry32(5);

function buf(data: ArrayBufferView | number, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST) {
  const size = typeof data === 'number' ? data : data.byteLength;
  const b = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
  if (typeof data !== 'number') device.queue.writeBuffer(b, 0, data as Uint8Array<ArrayBuffer>);
  return b;
}
/** Random bytes whose 16-bit words are small finite f16 values where scales live (and as f32, small). */
function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(Math.ceil(n / 16) * 16);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(rng() * 256);
  for (let i = 1; i < b.length; i += 2) b[i] &= 0x13;
  for (let i = 3; i < b.length; i += 4) b[i] = 0x3a; // as f32: ~1e-3, never a NaN, Inf or denormal
  return b;
}

interface Kernel {
  name: string;
  what: string;
  weights: number;
  run: (n: number) => Promise<number>;
}

async function pipelineOf(code: string, buffers: GPUBuffer[], uniform0: boolean) {
  const module = device.createShaderModule({ code });
  const bgl = device.createBindGroupLayout({
    entries: buffers.map((_, binding) => ({
      binding,
      visibility: GPUShaderStage.COMPUTE,
      buffer: {
        type: (uniform0 && binding === 0
          ? 'uniform'
          : binding === buffers.length - 1
            ? 'storage'
            : 'read-only-storage') as GPUBufferBindingType,
      },
    })),
  });
  const pipeline = await device.createComputePipelineAsync({
    layout: device.createPipelineLayout({ bindGroupLayouts: [bgl] }),
    compute: { module, entryPoint: 'main' },
  });
  const group = device.createBindGroup({
    layout: bgl,
    entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  return (wgx: number) => async (n: number) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    for (let i = 0; i < n; i++) pass.dispatchWorkgroups(wgx);
    pass.end();
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
}

// The synthetic kernels: ROWS × K Q4_0 weights, planar (quants of block b at vec4 b, f16 scales after).
const ROWS = 3072;
const K = 512;
const U = 4;
const T = 64;
const NB = K / 32;
const SCALES = ROWS * NB * 16; // byte offset of the scale plane
const qBuf = buf(randomBytes(ROWS * NB * 18));
const xBuf = buf(new Float32Array(K).map(() => rng() - 0.5));
const yBuf = buf(ROWS * 4);

function synthetic(kind: 'loads' | 'fma' | 'swar'): string {
  const scale = `let dD = ${SCALES}u + 2u * bi; let dW = w[dD >> 4u][(dD >> 2u) & 3u] >> (((dD >> 1u) & 1u) * 16u);`;
  const rows = Array.from({ length: U }, (_, r) => {
    const head = `let bi = (row0 + ${r}u) * ${NB}u + c; let q = w[bi]; ${scale}`;
    if (kind === 'loads') return `{ ${head} acc${r} ^= q.x ^ q.y ^ q.z ^ q.w ^ dW; }`;
    if (kind === 'fma') {
      // 32 multiply-adds: each quant word read as floats against 8 vec4 of activations.
      const f = ['q', 'q.yzwx', 'q.zwxy', 'q.wxyz'];
      const dots = Array.from({ length: 8 }, (_, j) => `dot(bitcast<vec4<f32>>(${f[j % 4]}), x${j})`);
      return `{ ${head} a${r} += unpack2x16float(dW).x * (${dots.join(' + ')}); }`;
    }
    // SWAR: (n_a + n_b·2^16) · (x_b + x_a·2^16) holds n_a·x_a + n_b·x_b in its upper 16 bits.
    const c4 = ['x', 'y', 'z', 'w'];
    const terms = c4.flatMap((c, j) =>
      [0, 8, 4, 12].map((sh, m) => `((q.${c}${sh ? ` >> ${sh}u` : ''}) & 0xf000fu) * X${4 * j + m}`),
    );
    return `{ ${head}
      let pa = ${terms.slice(0, 8).join(' + ')};
      let pb = ${terms.slice(8).join(' + ')};
      let m = ((bitcast<i32>(pa) + 32768) >> 16u) + ((bitcast<i32>(pb) + 32768) >> 16u);
      a${r} += unpack2x16float(dW).x * (f32(m) - 8.0 * xs); }`;
  });
  const xs = `let xb = c * 8u; ${Array.from({ length: 8 }, (_, j) => `let x${j} = x[xb + ${j}u];`).join(' ')}
    let xs = dot(x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7, vec4<f32>(1.0));`;
  const packedX = `let X0 = bitcast<u32>(x0.x); ${Array.from({ length: 15 }, (_, i) => `let X${i + 1} = X0 + ${i + 1}u;`).join(' ')}`;
  return `@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row0 = (wg.x * ${T}u + lid) * ${U}u;
  ${Array.from({ length: U }, (_, r) => `var a${r} = 0.0; var acc${r} = 0u;`).join(' ')}
  for (var c = 0u; c < ${NB}u; c++) {
    ${kind === 'loads' ? '' : xs}
    ${kind === 'swar' ? packedX : ''}
    ${rows.join('\n    ')}
  }
  ${Array.from({ length: U }, (_, r) => `y[row0 + ${r}u] = a${r} + f32(acc${r});`).join('\n  ')}
}`;
}

const kernels: Kernel[] = [];
const wgSynthetic = ROWS / (U * T);
for (const [kind, name, what] of [
  ['loads', 'loads', 'every quant word and scale read once, XORed'],
  ['fma', 'f32 FMA', 'the same loads + one f32 multiply-add per weight, no dequantization'],
  ['swar', 'int SWAR', 'the same loads + nibble pairs × packed int8 pairs, 2 products per integer multiply'],
] as const) {
  const run = (await pipelineOf(synthetic(kind), [qBuf, xBuf, yBuf], false))(wgSynthetic);
  kernels.push({ name, what, weights: ROWS * K, run });
}

// Our own kernels, in the layout the load-time trial picks on a software adapter.
const layout: MmvLayout = { lanes: 1, units: 4, threads: 64, reduce: 'shared', packed };
const stepBuf = buf(packStep(1, 0), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
const gBuf = buf(new Float32Array(K).fill(1));
for (const [type, N, dots, label] of [
  ['Q4_0', 1536, 2, 'gate+up 512 → 2 × 1536, SwiGLU'],
  ['Q6_K', 32000, 1, 'output 512 → 32000'],
] as const) {
  const block = type === 'Q6_K' ? { n: 256, bytes: 210 } : { n: 32, bytes: 18 };
  const wt = { type: type as WeightType, planar: (K * N) / block.n };
  const ws = Array.from({ length: dots }, () => buf(randomBytes(((K * N) / block.n) * block.bytes)));
  const seg: MatmulSegment = {
    nUnits: N,
    weights: ws.map(() => wt),
    dots: ws.map((_, w) => ({ w, row: 'u' })),
    epilogue: dots === 2 ? 'y[u] = d0 / (1.0 + exp(-d0)) * d1;' : 'y[u] = d0;',
  };
  const code = mmvWGSL({
    K,
    TT: 1,
    norm: { eps: 1e-5, type: 'F32' },
    segments: [seg],
    extra: ['var<storage, read_write> y: array<f32>'],
    layout,
  });
  const out = buf(N * 4);
  const run = (await pipelineOf(code, [stepBuf, xBuf, gBuf, ...ws, out], true))(
    mmvWorkgroupsX([seg], layout),
  );
  kernels.push({
    name: `ours ${type}`,
    what: `kernels/mmv.ts, ${label}, with the RMSNorm`,
    weights: K * N * dots,
    run,
  });
}

console.error(`adapter ${JSON.stringify(gpu.info)}`);
for (const k of kernels) await k.run(2); // compile and warm up
const best = kernels.map(() => Infinity);
for (let round = 0; round < 7; round++) {
  for (const [i, k] of kernels.entries()) best[i] = Math.min(best[i], (await k.run(5)) / 5);
}
const date = new Date().toISOString().slice(0, 10);
const i = gpu.info;
const commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
const lines = [
  `## ${date}: the adapter's floor per weight (\`npm run bench:floor\`)`,
  '',
  `Recorded by \`npm run bench:floor\` (scripts/bench-floor.ts) at commit ${commit} in Node + Dawn on ${i.vendor} / ${i.architecture} (${i.description}${i.isFallback ? ', a software adapter: not GPU figures' : ''}). Wall time per dispatch (5 dispatches per submit, best of 7 rounds run round-robin) over the weights it multiplies; the decode ceiling is what a model of the 60M benchmark model's 60,039,680 weights could reach if every weight cost only this.`,
  '',
  ...markdownTable(
    ['kernel', 'what it does', 'ms / dispatch', 'ns / weight', 'decode ceiling, 60M model (tok/s)'],
    kernels.map((k, j) => {
      const ns = (best[j] * 1e6) / k.weights;
      return [k.name, k.what, best[j].toFixed(2), ns.toFixed(2), (1e9 / (ns * MODEL_WEIGHTS)).toFixed(1)];
    }),
    2,
  ),
];
const text = lines.join('\n');
console.log(text);
if (!values['no-write'])
  writeBenchSection('floor', date, `<!-- bench:floor ${date} -->\n${text}\n\n<!-- /bench:floor ${date} -->`);
process.exit(0);
