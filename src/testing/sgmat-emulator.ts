/**
 * A test double for subgroup matrices where the adapter has none (SwiftShader): rewrites the WGSL of
 * kernels/mmm-sgmat.ts into plain WGSL in which an operand matrix is a handle (array, offset, stride,
 * majorness) and every invocation computes and stores the part of the result it would hold (elements
 * lane, lane + size, …, so a result is M·N / size values per invocation), with the semantics of the WGSL
 * proposal (gpuweb/gpuweb proposals/subgroup-matrix.md) and Dawn's builtins (src/tint/lang/wgsl/wgsl.def):
 * `subgroup_matrix_left<T, K, M>` is M rows × K columns, `subgroup_matrix_right<T, N, K>` K rows × N
 * columns, `subgroup_matrix_result<T, N, M>` M rows × N columns; `subgroupMatrixLoad<T, row_major>(p,
 * offset, stride)` reads element (row r, column c) from p[offset + r·stride + c], `col_major` from
 * p[offset + c·stride + r]; `subgroupMatrixStore` writes the same places; `subgroupMatrixMultiplyAccumulate(l,
 * r, acc)` = l·r + acc. The handles are read in the multiply, which the kernels do between the same two
 * barriers as the load. The matmul tiles' f16 tiles are u32 words of two halves (pack2x16float: the
 * kernel's bytes and rounding; the f32 result tile `cs` takes the weight tile's words where it fits
 * them), so the double needs no more than the kernel's memory (the large tile's 31 KiB, single-buffered
 * 31.5 KiB with its own `cs`); the attention kernel's f16
 * arrays become f32 (rounded to f16 where written); arithmetic is f32 (the f16 → f32 configuration).
 * The integer tile (mmm-sgmat.ts `mmmSgmatIntWGSL`, i8 → i32): `subgroup_matrix_left/right<i8, …>` read
 * their elements as the bytes of an `array<i32>` (4 per word, little-endian, sign-extended), offset and
 * stride counted as the `i8Units` option says (the "driver behaviour"; mmm-sgmat.ts `I8Units`): 'words'
 * (default), elements of the array (Dawn's enum-template form, its end2end tests divide 8-bit offsets
 * and strides by 4: byte of (r, c) = 4·offset + 4·r·stride + c), or 'bytes', i8 elements (the WGSL
 * proposal's element-stride table; byte = offset + r·stride + c); products and sums are exact i32.
 *
 * The prefill attention on subgroup matrices (kernels/attention-sgmat.ts) also loads and stores result
 * matrices (`subgroup_matrix_result<f32, N, M>`: M rows × N columns, as the others' element placement).
 *
 * The double checks the generator's tile indices, staging, double buffering and epilogue plumbing on the
 * float path; not the driver, not the real subgroup-uniformity rules, not the hardware's accumulation order.
 */
import type { I8Units, SgmatShape } from '../webgpu/kernels/mmm-sgmat.ts';

/**
 * The emulated WGSL of `code` (mmm-sgmat.ts's or attention-sgmat.ts's output for shape `c`, f16 or i8
 * operands), on a "driver" that counts i8 load offsets and strides in `i8Units` (default 'words').
 * @throws Error when `code` has none of the constructs the double rewrites (not the generator's output).
 */
export function emulateSubgroupMatrix(
  code: string,
  c: SgmatShape,
  subgroupSize: number,
  { i8Units = 'words' }: { i8Units?: I8Units } = {},
): string {
  if (!code.includes('enable chromium_experimental_subgroup_matrix;'))
    throw new Error('not a subgroup-matrix kernel');
  const { M, N, K } = c;
  let s = code
    .replace('enable f16;\n', '')
    .replace('enable chromium_experimental_subgroup_matrix;\n', '')
    .replace('diagnostic(off, chromium.subgroup_matrix_uniformity);\n', '');
  // The matmul tiles (mmm-sgmat.ts, with a result tile `cs`): without shader-f16 their staged f16 tiles
  // are u32 words of two halves here (pack2x16float: the kernel's bytes and rounding): a staging write
  // `a[i] = f16(v); }` sets its half of word i / 2 (each thread stages whole pairs, so no two threads
  // write one word), a read unpacks; `cs` (used only after the K loop's last barrier) takes the weight
  // tile's words (bitcast f32) where they hold it. So the double needs no more than the kernel's memory
  // (the large tile: 31 KiB of SwiftShader's 32). Other kernels (attention-sgmat.ts): f16 arrays become f32.
  const packed = /var<workgroup> cs: /.test(s) && /var<workgroup> wh: array<f16, /.test(s);
  // Not the single-buffered large tile's `cs` (16 KiB, over its 10 KiB weight tile): its 15 KiB of
  // staging and its own `cs` fit SwiftShader's 32 KiB as they are.
  const csLen = Number(/var<workgroup> cs: array<f32, (\d+)>;/.exec(s)?.[1] ?? 0);
  const whWords = Number(/var<workgroup> wh: array<f16, (\d+)>;/.exec(s)?.[1] ?? 0) / 2;
  const aliasCs = packed && csLen <= whWords;
  const halfArrays: string[] = [];
  if (packed) {
    s = s.replace(/var<workgroup> (\w+): array<f16, (\d+)>;/g, (_, n: string, len: string) => {
      halfArrays.push(n);
      return `var<workgroup> ${n}: array<u32, ${Number(len) / 2}>;`;
    });
    s = s.replace(/^(\s*)(.*?)\b(\w+)\[([^\]\n]+)\] = f16\((.+)\); \}$/gm, (all, ind, pre, arr, idx, v) =>
      halfArrays.includes(arr) ? `${ind}${pre}emu_wr_half_${arr}(${idx}, ${v}); }` : all,
    );
    if (/\bf16\(/.test(s)) throw new Error('the double left an f16 conversion it does not rewrite');
    if (aliasCs)
      s = s.replace(/var<workgroup> cs: [^\n]*\n/, '').replace(/\bcs\[([^\]\n]+)\]/g, 'bitcast<f32>(wh[$1])');
  } else {
    s = s.replace(/array<f16, /g, 'array<f32, ').replace(/\bf16\(/g, 'rf16(');
    // The staged tiles are f32 here, twice the bytes: a result tile `cs` takes the weight tile's memory.
    if (/var<workgroup> cs: /.test(s))
      s = s.replace(/var<workgroup> cs: [^\n]*\n/, '').replace(/\bcs\b/g, 'wh');
  }
  const fns = new Set<string>();
  // i8 → i32 (the integer tile) or f16 → f32: one kind per kernel.
  const int = s.includes('subgroup_matrix_left<i8,');
  const T = int ? 'i32' : 'f32';
  // A result matrix is spread over the subgroup: invocation `lane` holds elements lane, lane + size, …
  // (row-major index e = m·N + n), PER of them.
  const PER = (M * N) / subgroupSize;
  if (!Number.isInteger(PER))
    throw new Error(`a ${M}x${N} result does not spread over ${subgroupSize} lanes`);
  // Left and right operands are handles (offset, stride, array, majorness) read element by element by
  // the multiply: no invocation copies a whole matrix (SwiftShader compiled that for minutes).
  const arrays: Record<'left' | 'right', string[]> = { left: [], right: [] };
  const element = (arr: string, idx: string) =>
    int
      ? `extractBits(${arr}[(${idx}) / 4u], ((${idx}) % 4u) * 8u, 8u)`
      : halfArrays.includes(arr)
        ? `unpack2x16float(${arr}[(${idx}) / 2u])[(${idx}) % 2u]`
        : `${arr}[${idx}]`;
  s = s.replace(
    /subgroupMatrixLoad<subgroup_matrix_(left|right|result)<(f16|i8|f32|i32), (\d+), (\d+)>, (row_major|col_major)>\(&(\w+), (\w+), (\w+)\)/g,
    (
      _,
      kind: string,
      ct: string,
      a: string,
      b: string,
      major: string,
      arr: string,
      off: string,
      stride: string,
    ) => {
      // left<T, K, M>: M rows × K cols; right<T, N, K>: K rows × N cols; result<T, N, M>: M rows × N cols.
      if (
        Number(a) !== (kind === 'right' ? N : kind === 'left' ? K : N) ||
        Number(b) !== (kind === 'right' ? K : M)
      )
        throw new Error(`a ${kind} matrix ${a}x${b} of another shape than ${M}x${N}x${K}`);
      const col = major === 'col_major' ? 1 : 0;
      if (kind !== 'result') {
        const list = arrays[kind as 'left' | 'right'];
        if (!list.includes(arr)) list.push(arr);
        // i8 in words of the array: the handle holds the byte offset and stride.
        const w = ct === 'i8' && i8Units === 'words' ? ' * 4u' : '';
        return `vec4<u32>((${off})${w}, (${stride})${w}, ${list.indexOf(arr)}u, ${col}u)`;
      }
      const name = `emu_load_result_${major}_${arr}`;
      const idx = col ? 'off + n * stride + m' : 'off + m * stride + n';
      fns.add(`fn ${name}(off: u32, stride: u32) -> array<${T}, ${PER}> {
  var o: array<${T}, ${PER}>;
  for (var i = 0u; i < ${PER}u; i++) { let e = emu_lane + i * ${subgroupSize}u; let m = e / ${N}u; let n = e % ${N}u; o[i] = ${arr}[${idx}]; }
  return o;
}`);
      return `${name}(${off}, ${stride})`;
    },
  );
  // Types: each invocation's elements (a zero-value constructor `T()` stays one); after the loads, whose
  // template names a result type.
  s = s.replace(/subgroup_matrix_result<(f32|i32), (\d+), (\d+)>/g, (_, t) => `array<${t}, ${PER}>`);
  s = s.replace(
    /subgroupMatrixStore<(row_major|col_major)>\(&(\w+), (\w+), (\w+), (\w+)\)/g,
    (_, major: string, arr: string, off: string, v: string, stride: string) => {
      const name = `emu_store_${major}_${arr}`;
      const idx = major === 'row_major' ? 'off + m * stride + n' : 'off + n * stride + m';
      // Packed: the f32 results of `cs` go to the weight tile's words.
      const write = aliasCs && arr === 'cs' ? `wh[${idx}] = bitcast<u32>(v[i]);` : `${arr}[${idx}] = v[i];`;
      fns.add(`fn ${name}(off: u32, v: array<${T}, ${PER}>, stride: u32) {
  for (var i = 0u; i < ${PER}u; i++) { let e = emu_lane + i * ${subgroupSize}u; let m = e / ${N}u; let n = e % ${N}u; ${write} }
}`);
      return `${name}(${off}, ${v}, ${stride})`;
    },
  );
  // Element (r, c) of an operand handle h: p[off + r·stride + c] (row-major) or p[off + c·stride + r].
  const reader = (kind: 'left' | 'right') => {
    const list = arrays[kind];
    const body = list.map((arr, i) => `if (h.z == ${i}u) { return ${element(arr, 'i')}; }`).join('\n  ');
    return `fn emu_${kind}(h: vec4<u32>, r: u32, c: u32) -> ${T} {
  let i = select(h.x + r * h.y + c, h.x + c * h.y + r, h.w == 1u);
  ${body}
  return ${T}(0);
}`;
  };
  s = s.replace(/subgroupMatrixMultiplyAccumulate\(/g, 'emu_mma(');
  fns.add(reader('left'));
  fns.add(reader('right'));
  fns.add(`fn emu_mma(l: vec4<u32>, r: vec4<u32>, acc: array<${T}, ${PER}>) -> array<${T}, ${PER}> {
  var o = acc;
  // Bounds read at run time (emu_per = ${PER}, emu_k = ${K}): SwiftShader unrolls constant-bound loops,
  // and every call site inlines this function (seconds of compile time each).
  for (var i = 0u; i < emu_per; i++) {
    let e = emu_lane + i * ${subgroupSize}u;
    let m = e / ${N}u;
    let n = e % ${N}u;
    var t = ${T}(0);
    for (var k = 0u; k < emu_k; k++) { t += emu_left(l, m, k) * emu_right(r, k, n); }
    o[i] += t;
  }
  return o;
}`);
  fns.add('fn rf16(v: f32) -> f32 { return unpack2x16float(pack2x16float(vec2<f32>(v, 0.0))).x; }');
  for (const arr of halfArrays)
    fns.add(`fn emu_wr_half_${arr}(i: u32, v: f32) {
  ${arr}[i / 2u] = insertBits(${arr}[i / 2u], pack2x16float(vec2<f32>(v, 0.0)), (i % 2u) * 16u, 16u);
}`);
  if (/subgroup_matrix|subgroupMatrix/.test(s))
    throw new Error('the double left a subgroup-matrix construct');
  // Module-scope functions go before the entry point, after the module-scope variables they read.
  const at = s.indexOf('@compute');
  s = `${s.slice(0, at)}var<private> emu_lane: u32;\nvar<private> emu_per: u32;\nvar<private> emu_k: u32;\n${[...fns].join('\n')}\n${s.slice(at)}`;
  const main = s.indexOf('fn main(');
  if (main < 0) throw new Error('no entry point');
  const after = s.indexOf('{\n', main) + 2;
  return `${s.slice(0, after)}  emu_lane = lid % ${subgroupSize}u;\n  emu_per = min(step.nTokens, 0u) + ${PER}u;\n  emu_k = min(step.nTokens, 0u) + ${K}u;\n${s.slice(after)}`;
}
