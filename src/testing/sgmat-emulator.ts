/**
 * A test double for subgroup matrices where the adapter has none (SwiftShader): rewrites the WGSL of
 * kernels/mmm-sgmat.ts into plain WGSL in which every invocation loads its subgroup's whole operand
 * matrices and computes and stores the part of the result it would hold (elements lane, lane + size, …),
 * with the semantics of the WGSL proposal (gpuweb/gpuweb proposals/subgroup-matrix.md) and Dawn's
 * builtins (src/tint/lang/wgsl/wgsl.def): `subgroup_matrix_left<T, K, M>` is M rows × K columns,
 * `subgroup_matrix_right<T, N, K>` K rows × N columns, `subgroup_matrix_result<T, N, M>` M rows × N
 * columns; `subgroupMatrixLoad<T, row_major>(p, offset, stride)` reads element (row r, column c) from
 * p[offset + r·stride + c], `col_major` from p[offset + c·stride + r]; `subgroupMatrixStore` writes the
 * same places; `subgroupMatrixMultiplyAccumulate(l, r, acc)` = l·r + acc. f16 values are rounded to f16
 * (`pack2x16float`), so the double sees the same operands; arithmetic is f32 (the f16 → f32 configuration).
 * The integer tile (mmm-sgmat.ts `mmmSgmatIntWGSL`, i8 → i32): `subgroup_matrix_left/right<i8, …>` read
 * their elements as the bytes of an `array<i32>` (4 per word, little-endian, sign-extended), offset and
 * stride counted in i8 elements (the proposal's element-stride table: i8 is 1 byte; Dawn divides the
 * offset by 4 for SPIR-V's i32 pointer, dawn 55e62e18); products and sums are exact i32.
 *
 * The double checks the generator's tile indices, staging, double buffering and epilogue plumbing on the
 * float path; not the driver, not the real subgroup-uniformity rules, not the hardware's accumulation order.
 */
import type { SgmatShape } from '../webgpu/kernels/mmm-sgmat.ts';

/**
 * The emulated WGSL of `code` (mmm-sgmat.ts's output for shape `c`, f16 or i8 operands).
 * @throws Error when `code` has none of the constructs the double rewrites (not the generator's output).
 */
export function emulateSubgroupMatrix(code: string, c: SgmatShape, subgroupSize: number): string {
  if (!code.includes('enable chromium_experimental_subgroup_matrix;'))
    throw new Error('not a subgroup-matrix kernel');
  const { M, N, K } = c;
  let s = code
    .replace('enable f16;\n', '')
    .replace('enable chromium_experimental_subgroup_matrix;\n', '')
    .replace('diagnostic(off, chromium.subgroup_matrix_uniformity);\n', '')
    .replace(/array<f16, /g, 'array<f32, ')
    .replace(/\bf16\(/g, 'rf16(')
    // Without shader-f16 the staged tiles are f32 here, twice the bytes: the result tile `cs` (used only
    // after the K loop's last barrier) takes the weight tile's memory so the double fits in 32 KiB.
    .replace(/var<workgroup> cs: [^\n]*\n/, '')
    .replace(/\bcs\b/g, 'wh');
  const fns = new Set<string>();
  // i8 → i32 (the integer tile) or f16 → f32: one kind per kernel.
  const int = s.includes('subgroup_matrix_left<i8,');
  const T = int ? 'i32' : 'f32';
  // Types: row-major arrays (a zero-value constructor `T()` stays one).
  s = s.replace(
    /subgroup_matrix_result<(f32|i32), (\d+), (\d+)>/g,
    (_, t, n, m) => `array<${t}, ${Number(n) * Number(m)}>`,
  );
  // Loads.
  s = s.replace(
    /subgroupMatrixLoad<subgroup_matrix_(left|right)<(f16|i8), (\d+), (\d+)>, (row_major|col_major)>\(&(\w+), (\w+), (\w+)\)/g,
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
      // left<T, K, M>: M rows × K cols; right<T, N, K>: K rows × N cols.
      const cols = Number(a);
      const rows = Number(b);
      const name = `emu_load_${kind}_${major}_${arr}`;
      const idx = major === 'row_major' ? 'off + r * stride + cc' : 'off + cc * stride + r';
      // i8 elements are the bytes of an array<i32> (little-endian), offset and stride counted in bytes.
      const read =
        ct === 'i8' ? `extractBits(${arr}[(${idx}) / 4u], ((${idx}) % 4u) * 8u, 8u)` : `${arr}[${idx}]`;
      fns.add(`fn ${name}(off: u32, stride: u32) -> array<${T}, ${rows * cols}> {
  var m: array<${T}, ${rows * cols}>;
  for (var r = 0u; r < ${rows}u; r++) { for (var cc = 0u; cc < ${cols}u; cc++) { m[r * ${cols}u + cc] = ${read}; } }
  return m;
}`);
      return `${name}(${off}, ${stride})`;
    },
  );
  s = s.replace(
    /subgroupMatrixStore<(row_major|col_major)>\(&(\w+), (\w+), (\w+), (\w+)\)/g,
    (_, major: string, arr: string, off: string, v: string, stride: string) => {
      const name = `emu_store_${major}_${arr}`;
      const idx = major === 'row_major' ? 'off + r * stride + cc' : 'off + cc * stride + r';
      fns.add(`fn ${name}(off: u32, m: array<${T}, ${M * N}>, stride: u32) {
  for (var e = emu_lane; e < ${M * N}u; e += ${subgroupSize}u) { let r = e / ${N}u; let cc = e % ${N}u; ${arr}[${idx}] = m[e]; }
}`);
      return `${name}(${off}, ${v}, ${stride})`;
    },
  );
  s = s.replace(/subgroupMatrixMultiplyAccumulate\(/g, 'emu_mma(');
  // Invocation lane of the subgroup holds result elements lane, lane + size, … (as hardware spreads a
  // matrix over its subgroup); the store writes those, so each element is computed once per subgroup.
  fns.add(`fn emu_mma(l: array<${T}, ${M * K}>, r: array<${T}, ${K * N}>, acc: array<${T}, ${M * N}>) -> array<${T}, ${M * N}> {
  var o = acc;
  for (var e = emu_lane; e < ${M * N}u; e += ${subgroupSize}u) {
    let m = e / ${N}u;
    let n = e % ${N}u;
    var t = ${T}(0);
    for (var k = 0u; k < ${K}u; k++) { t += l[m * ${K}u + k] * r[k * ${N}u + n]; }
    o[e] += t;
  }
  return o;
}`);
  fns.add('fn rf16(v: f32) -> f32 { return unpack2x16float(pack2x16float(vec2<f32>(v, 0.0))).x; }');
  if (/subgroup_matrix|subgroupMatrix/.test(s))
    throw new Error('the double left a subgroup-matrix construct');
  // Module-scope functions go after the module-scope variables (the workgroup arrays they read).
  const at = s.indexOf('fn ldx(');
  s = `${s.slice(0, at)}var<private> emu_lane: u32;\n${[...fns].join('\n')}\n${s.slice(at)}`;
  const main = s.indexOf('fn main(');
  if (main < 0) throw new Error('no entry point');
  const after = s.indexOf('{\n', main) + 2;
  return `${s.slice(0, after)}  emu_lane = lid % ${subgroupSize}u;\n${s.slice(after)}`;
}
