enable subgroups;
struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> gnorm: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> w_ffn_gate: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> w_ffn_up: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> hb: array<f32>;

const K: u32 = 512u;

@compute @workgroup_size(8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) sl: u32) {
  let lane = lid % 1u;
  let grp = lid / 1u;
  let t0 = wg.y * 1u;
  let nT = step.nTokens;
  let xrow0 = t0;
  let xr0 = min(xrow0 + 0u, xrow0 + nT - 1u - t0) * 128u;
  var seg = 0u;
  var ub = 0u;
  if (wg.x < 24u) { seg = 0u; ub = (wg.x - 0u) * 64u + grp * 8u; }
  var a0_0_0 = 0.0;
  var a0_1_0 = 0.0;
  var a1_0_0 = 0.0;
  var a1_1_0 = 0.0;
  var a2_0_0 = 0.0;
  var a2_1_0 = 0.0;
  var a3_0_0 = 0.0;
  var a3_1_0 = 0.0;
  var a4_0_0 = 0.0;
  var a4_1_0 = 0.0;
  var a5_0_0 = 0.0;
  var a5_1_0 = 0.0;
  var a6_0_0 = 0.0;
  var a6_1_0 = 0.0;
  var a7_0_0 = 0.0;
  var a7_1_0 = 0.0;
  var ss0 = 0.0;
  for (var c = 0u; c < 16u; c += 1u) {
    let xm0_0 = x[xr0 + c * 8u + sl + 0u];
    let xm0_1 = x[xr0 + c * 8u + sl + 4u];
    let xr0_0 = subgroupBroadcast(xm0_0, 0u);
    let xr0_1 = subgroupBroadcast(xm0_0, 1u);
    let xr0_2 = subgroupBroadcast(xm0_0, 2u);
    let xr0_3 = subgroupBroadcast(xm0_0, 3u);
    let xr0_4 = subgroupBroadcast(xm0_1, 0u);
    let xr0_5 = subgroupBroadcast(xm0_1, 1u);
    let xr0_6 = subgroupBroadcast(xm0_1, 2u);
    let xr0_7 = subgroupBroadcast(xm0_1, 3u);
    ss0 += dot(xr0_0, xr0_0) + dot(xr0_1, xr0_1) + dot(xr0_2, xr0_2) + dot(xr0_3, xr0_3) + dot(xr0_4, xr0_4) + dot(xr0_5, xr0_5) + dot(xr0_6, xr0_6) + dot(xr0_7, xr0_7);
    let g0 = gnorm[c * 8u + 0u];
    let x0_0 = xr0_0 * g0;
    let g1 = gnorm[c * 8u + 1u];
    let x0_1 = xr0_1 * g1;
    let g2 = gnorm[c * 8u + 2u];
    let x0_2 = xr0_2 * g2;
    let g3 = gnorm[c * 8u + 3u];
    let x0_3 = xr0_3 * g3;
    let g4 = gnorm[c * 8u + 4u];
    let x0_4 = xr0_4 * g4;
    let g5 = gnorm[c * 8u + 5u];
    let x0_5 = xr0_5 * g5;
    let g6 = gnorm[c * 8u + 6u];
    let x0_6 = xr0_6 * g6;
    let g7 = gnorm[c * 8u + 7u];
    let x0_7 = xr0_7 * g7;
    let xs0 = dot(x0_0 + x0_1 + x0_2 + x0_3 + x0_4 + x0_5 + x0_6 + x0_7, vec4<f32>(1.0));
    if (seg == 0u) {
      { let u = min(ub + 0u, 1535u);
        { let row = u;
          let p0_0_bi = row * 2u + c / 8u; let p0_0_j = c % 8u; let p0_0_q = w_ffn_gate[p0_0_bi * 8u + p0_0_j];
          let p0_0_smw = w_ffn_gate[24576u + p0_0_bi][p0_0_j / 2u] >> ((p0_0_j & 1u) * 16u);
          let p0_0_dm = unpack2x16float(w_ffn_gate[27648u + (p0_0_bi >> 2u)][p0_0_bi & 3u]);
          let p0_0_ds = p0_0_dm.x * f32(p0_0_smw & 0xffu); let p0_0_mm = p0_0_dm.y * f32((p0_0_smw >> 8u) & 0xffu);
          let p0_0_lo0 = unpack4x8unorm(p0_0_q.x & 0x0f0f0f0fu); let p0_0_hi0 = unpack4x8unorm((p0_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo1 = unpack4x8unorm(p0_0_q.y & 0x0f0f0f0fu); let p0_0_hi1 = unpack4x8unorm((p0_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo2 = unpack4x8unorm(p0_0_q.z & 0x0f0f0f0fu); let p0_0_hi2 = unpack4x8unorm((p0_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo3 = unpack4x8unorm(p0_0_q.w & 0x0f0f0f0fu); let p0_0_hi3 = unpack4x8unorm((p0_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_0_s0 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x0_0) + dot(p0_0_lo1, x0_1) + dot(p0_0_lo2, x0_2) + dot(p0_0_lo3, x0_3) + dot(p0_0_hi0, x0_4) + dot(p0_0_hi1, x0_5) + dot(p0_0_hi2, x0_6) + dot(p0_0_hi3, x0_7))) - p0_0_mm * xs0;
          a0_0_0 += p0_0_s0;
        }
        { let row = u;
          let p0_1_bi = row * 2u + c / 8u; let p0_1_j = c % 8u; let p0_1_q = w_ffn_up[p0_1_bi * 8u + p0_1_j];
          let p0_1_smw = w_ffn_up[24576u + p0_1_bi][p0_1_j / 2u] >> ((p0_1_j & 1u) * 16u);
          let p0_1_dm = unpack2x16float(w_ffn_up[27648u + (p0_1_bi >> 2u)][p0_1_bi & 3u]);
          let p0_1_ds = p0_1_dm.x * f32(p0_1_smw & 0xffu); let p0_1_mm = p0_1_dm.y * f32((p0_1_smw >> 8u) & 0xffu);
          let p0_1_lo0 = unpack4x8unorm(p0_1_q.x & 0x0f0f0f0fu); let p0_1_hi0 = unpack4x8unorm((p0_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo1 = unpack4x8unorm(p0_1_q.y & 0x0f0f0f0fu); let p0_1_hi1 = unpack4x8unorm((p0_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo2 = unpack4x8unorm(p0_1_q.z & 0x0f0f0f0fu); let p0_1_hi2 = unpack4x8unorm((p0_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo3 = unpack4x8unorm(p0_1_q.w & 0x0f0f0f0fu); let p0_1_hi3 = unpack4x8unorm((p0_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_1_s0 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x0_0) + dot(p0_1_lo1, x0_1) + dot(p0_1_lo2, x0_2) + dot(p0_1_lo3, x0_3) + dot(p0_1_hi0, x0_4) + dot(p0_1_hi1, x0_5) + dot(p0_1_hi2, x0_6) + dot(p0_1_hi3, x0_7))) - p0_1_mm * xs0;
          a0_1_0 += p0_1_s0;
        }
      }
      { let u = min(ub + 1u, 1535u);
        { let row = u;
          let p1_0_bi = row * 2u + c / 8u; let p1_0_j = c % 8u; let p1_0_q = w_ffn_gate[p1_0_bi * 8u + p1_0_j];
          let p1_0_smw = w_ffn_gate[24576u + p1_0_bi][p1_0_j / 2u] >> ((p1_0_j & 1u) * 16u);
          let p1_0_dm = unpack2x16float(w_ffn_gate[27648u + (p1_0_bi >> 2u)][p1_0_bi & 3u]);
          let p1_0_ds = p1_0_dm.x * f32(p1_0_smw & 0xffu); let p1_0_mm = p1_0_dm.y * f32((p1_0_smw >> 8u) & 0xffu);
          let p1_0_lo0 = unpack4x8unorm(p1_0_q.x & 0x0f0f0f0fu); let p1_0_hi0 = unpack4x8unorm((p1_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo1 = unpack4x8unorm(p1_0_q.y & 0x0f0f0f0fu); let p1_0_hi1 = unpack4x8unorm((p1_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo2 = unpack4x8unorm(p1_0_q.z & 0x0f0f0f0fu); let p1_0_hi2 = unpack4x8unorm((p1_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo3 = unpack4x8unorm(p1_0_q.w & 0x0f0f0f0fu); let p1_0_hi3 = unpack4x8unorm((p1_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_0_s0 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x0_0) + dot(p1_0_lo1, x0_1) + dot(p1_0_lo2, x0_2) + dot(p1_0_lo3, x0_3) + dot(p1_0_hi0, x0_4) + dot(p1_0_hi1, x0_5) + dot(p1_0_hi2, x0_6) + dot(p1_0_hi3, x0_7))) - p1_0_mm * xs0;
          a1_0_0 += p1_0_s0;
        }
        { let row = u;
          let p1_1_bi = row * 2u + c / 8u; let p1_1_j = c % 8u; let p1_1_q = w_ffn_up[p1_1_bi * 8u + p1_1_j];
          let p1_1_smw = w_ffn_up[24576u + p1_1_bi][p1_1_j / 2u] >> ((p1_1_j & 1u) * 16u);
          let p1_1_dm = unpack2x16float(w_ffn_up[27648u + (p1_1_bi >> 2u)][p1_1_bi & 3u]);
          let p1_1_ds = p1_1_dm.x * f32(p1_1_smw & 0xffu); let p1_1_mm = p1_1_dm.y * f32((p1_1_smw >> 8u) & 0xffu);
          let p1_1_lo0 = unpack4x8unorm(p1_1_q.x & 0x0f0f0f0fu); let p1_1_hi0 = unpack4x8unorm((p1_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo1 = unpack4x8unorm(p1_1_q.y & 0x0f0f0f0fu); let p1_1_hi1 = unpack4x8unorm((p1_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo2 = unpack4x8unorm(p1_1_q.z & 0x0f0f0f0fu); let p1_1_hi2 = unpack4x8unorm((p1_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo3 = unpack4x8unorm(p1_1_q.w & 0x0f0f0f0fu); let p1_1_hi3 = unpack4x8unorm((p1_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_1_s0 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x0_0) + dot(p1_1_lo1, x0_1) + dot(p1_1_lo2, x0_2) + dot(p1_1_lo3, x0_3) + dot(p1_1_hi0, x0_4) + dot(p1_1_hi1, x0_5) + dot(p1_1_hi2, x0_6) + dot(p1_1_hi3, x0_7))) - p1_1_mm * xs0;
          a1_1_0 += p1_1_s0;
        }
      }
      { let u = min(ub + 2u, 1535u);
        { let row = u;
          let p2_0_bi = row * 2u + c / 8u; let p2_0_j = c % 8u; let p2_0_q = w_ffn_gate[p2_0_bi * 8u + p2_0_j];
          let p2_0_smw = w_ffn_gate[24576u + p2_0_bi][p2_0_j / 2u] >> ((p2_0_j & 1u) * 16u);
          let p2_0_dm = unpack2x16float(w_ffn_gate[27648u + (p2_0_bi >> 2u)][p2_0_bi & 3u]);
          let p2_0_ds = p2_0_dm.x * f32(p2_0_smw & 0xffu); let p2_0_mm = p2_0_dm.y * f32((p2_0_smw >> 8u) & 0xffu);
          let p2_0_lo0 = unpack4x8unorm(p2_0_q.x & 0x0f0f0f0fu); let p2_0_hi0 = unpack4x8unorm((p2_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p2_0_lo1 = unpack4x8unorm(p2_0_q.y & 0x0f0f0f0fu); let p2_0_hi1 = unpack4x8unorm((p2_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p2_0_lo2 = unpack4x8unorm(p2_0_q.z & 0x0f0f0f0fu); let p2_0_hi2 = unpack4x8unorm((p2_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p2_0_lo3 = unpack4x8unorm(p2_0_q.w & 0x0f0f0f0fu); let p2_0_hi3 = unpack4x8unorm((p2_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p2_0_s0 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x0_0) + dot(p2_0_lo1, x0_1) + dot(p2_0_lo2, x0_2) + dot(p2_0_lo3, x0_3) + dot(p2_0_hi0, x0_4) + dot(p2_0_hi1, x0_5) + dot(p2_0_hi2, x0_6) + dot(p2_0_hi3, x0_7))) - p2_0_mm * xs0;
          a2_0_0 += p2_0_s0;
        }
        { let row = u;
          let p2_1_bi = row * 2u + c / 8u; let p2_1_j = c % 8u; let p2_1_q = w_ffn_up[p2_1_bi * 8u + p2_1_j];
          let p2_1_smw = w_ffn_up[24576u + p2_1_bi][p2_1_j / 2u] >> ((p2_1_j & 1u) * 16u);
          let p2_1_dm = unpack2x16float(w_ffn_up[27648u + (p2_1_bi >> 2u)][p2_1_bi & 3u]);
          let p2_1_ds = p2_1_dm.x * f32(p2_1_smw & 0xffu); let p2_1_mm = p2_1_dm.y * f32((p2_1_smw >> 8u) & 0xffu);
          let p2_1_lo0 = unpack4x8unorm(p2_1_q.x & 0x0f0f0f0fu); let p2_1_hi0 = unpack4x8unorm((p2_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p2_1_lo1 = unpack4x8unorm(p2_1_q.y & 0x0f0f0f0fu); let p2_1_hi1 = unpack4x8unorm((p2_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p2_1_lo2 = unpack4x8unorm(p2_1_q.z & 0x0f0f0f0fu); let p2_1_hi2 = unpack4x8unorm((p2_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p2_1_lo3 = unpack4x8unorm(p2_1_q.w & 0x0f0f0f0fu); let p2_1_hi3 = unpack4x8unorm((p2_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p2_1_s0 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x0_0) + dot(p2_1_lo1, x0_1) + dot(p2_1_lo2, x0_2) + dot(p2_1_lo3, x0_3) + dot(p2_1_hi0, x0_4) + dot(p2_1_hi1, x0_5) + dot(p2_1_hi2, x0_6) + dot(p2_1_hi3, x0_7))) - p2_1_mm * xs0;
          a2_1_0 += p2_1_s0;
        }
      }
      { let u = min(ub + 3u, 1535u);
        { let row = u;
          let p3_0_bi = row * 2u + c / 8u; let p3_0_j = c % 8u; let p3_0_q = w_ffn_gate[p3_0_bi * 8u + p3_0_j];
          let p3_0_smw = w_ffn_gate[24576u + p3_0_bi][p3_0_j / 2u] >> ((p3_0_j & 1u) * 16u);
          let p3_0_dm = unpack2x16float(w_ffn_gate[27648u + (p3_0_bi >> 2u)][p3_0_bi & 3u]);
          let p3_0_ds = p3_0_dm.x * f32(p3_0_smw & 0xffu); let p3_0_mm = p3_0_dm.y * f32((p3_0_smw >> 8u) & 0xffu);
          let p3_0_lo0 = unpack4x8unorm(p3_0_q.x & 0x0f0f0f0fu); let p3_0_hi0 = unpack4x8unorm((p3_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p3_0_lo1 = unpack4x8unorm(p3_0_q.y & 0x0f0f0f0fu); let p3_0_hi1 = unpack4x8unorm((p3_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p3_0_lo2 = unpack4x8unorm(p3_0_q.z & 0x0f0f0f0fu); let p3_0_hi2 = unpack4x8unorm((p3_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p3_0_lo3 = unpack4x8unorm(p3_0_q.w & 0x0f0f0f0fu); let p3_0_hi3 = unpack4x8unorm((p3_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p3_0_s0 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x0_0) + dot(p3_0_lo1, x0_1) + dot(p3_0_lo2, x0_2) + dot(p3_0_lo3, x0_3) + dot(p3_0_hi0, x0_4) + dot(p3_0_hi1, x0_5) + dot(p3_0_hi2, x0_6) + dot(p3_0_hi3, x0_7))) - p3_0_mm * xs0;
          a3_0_0 += p3_0_s0;
        }
        { let row = u;
          let p3_1_bi = row * 2u + c / 8u; let p3_1_j = c % 8u; let p3_1_q = w_ffn_up[p3_1_bi * 8u + p3_1_j];
          let p3_1_smw = w_ffn_up[24576u + p3_1_bi][p3_1_j / 2u] >> ((p3_1_j & 1u) * 16u);
          let p3_1_dm = unpack2x16float(w_ffn_up[27648u + (p3_1_bi >> 2u)][p3_1_bi & 3u]);
          let p3_1_ds = p3_1_dm.x * f32(p3_1_smw & 0xffu); let p3_1_mm = p3_1_dm.y * f32((p3_1_smw >> 8u) & 0xffu);
          let p3_1_lo0 = unpack4x8unorm(p3_1_q.x & 0x0f0f0f0fu); let p3_1_hi0 = unpack4x8unorm((p3_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p3_1_lo1 = unpack4x8unorm(p3_1_q.y & 0x0f0f0f0fu); let p3_1_hi1 = unpack4x8unorm((p3_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p3_1_lo2 = unpack4x8unorm(p3_1_q.z & 0x0f0f0f0fu); let p3_1_hi2 = unpack4x8unorm((p3_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p3_1_lo3 = unpack4x8unorm(p3_1_q.w & 0x0f0f0f0fu); let p3_1_hi3 = unpack4x8unorm((p3_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p3_1_s0 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x0_0) + dot(p3_1_lo1, x0_1) + dot(p3_1_lo2, x0_2) + dot(p3_1_lo3, x0_3) + dot(p3_1_hi0, x0_4) + dot(p3_1_hi1, x0_5) + dot(p3_1_hi2, x0_6) + dot(p3_1_hi3, x0_7))) - p3_1_mm * xs0;
          a3_1_0 += p3_1_s0;
        }
      }
      { let u = min(ub + 4u, 1535u);
        { let row = u;
          let p4_0_bi = row * 2u + c / 8u; let p4_0_j = c % 8u; let p4_0_q = w_ffn_gate[p4_0_bi * 8u + p4_0_j];
          let p4_0_smw = w_ffn_gate[24576u + p4_0_bi][p4_0_j / 2u] >> ((p4_0_j & 1u) * 16u);
          let p4_0_dm = unpack2x16float(w_ffn_gate[27648u + (p4_0_bi >> 2u)][p4_0_bi & 3u]);
          let p4_0_ds = p4_0_dm.x * f32(p4_0_smw & 0xffu); let p4_0_mm = p4_0_dm.y * f32((p4_0_smw >> 8u) & 0xffu);
          let p4_0_lo0 = unpack4x8unorm(p4_0_q.x & 0x0f0f0f0fu); let p4_0_hi0 = unpack4x8unorm((p4_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p4_0_lo1 = unpack4x8unorm(p4_0_q.y & 0x0f0f0f0fu); let p4_0_hi1 = unpack4x8unorm((p4_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p4_0_lo2 = unpack4x8unorm(p4_0_q.z & 0x0f0f0f0fu); let p4_0_hi2 = unpack4x8unorm((p4_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p4_0_lo3 = unpack4x8unorm(p4_0_q.w & 0x0f0f0f0fu); let p4_0_hi3 = unpack4x8unorm((p4_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p4_0_s0 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x0_0) + dot(p4_0_lo1, x0_1) + dot(p4_0_lo2, x0_2) + dot(p4_0_lo3, x0_3) + dot(p4_0_hi0, x0_4) + dot(p4_0_hi1, x0_5) + dot(p4_0_hi2, x0_6) + dot(p4_0_hi3, x0_7))) - p4_0_mm * xs0;
          a4_0_0 += p4_0_s0;
        }
        { let row = u;
          let p4_1_bi = row * 2u + c / 8u; let p4_1_j = c % 8u; let p4_1_q = w_ffn_up[p4_1_bi * 8u + p4_1_j];
          let p4_1_smw = w_ffn_up[24576u + p4_1_bi][p4_1_j / 2u] >> ((p4_1_j & 1u) * 16u);
          let p4_1_dm = unpack2x16float(w_ffn_up[27648u + (p4_1_bi >> 2u)][p4_1_bi & 3u]);
          let p4_1_ds = p4_1_dm.x * f32(p4_1_smw & 0xffu); let p4_1_mm = p4_1_dm.y * f32((p4_1_smw >> 8u) & 0xffu);
          let p4_1_lo0 = unpack4x8unorm(p4_1_q.x & 0x0f0f0f0fu); let p4_1_hi0 = unpack4x8unorm((p4_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p4_1_lo1 = unpack4x8unorm(p4_1_q.y & 0x0f0f0f0fu); let p4_1_hi1 = unpack4x8unorm((p4_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p4_1_lo2 = unpack4x8unorm(p4_1_q.z & 0x0f0f0f0fu); let p4_1_hi2 = unpack4x8unorm((p4_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p4_1_lo3 = unpack4x8unorm(p4_1_q.w & 0x0f0f0f0fu); let p4_1_hi3 = unpack4x8unorm((p4_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p4_1_s0 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x0_0) + dot(p4_1_lo1, x0_1) + dot(p4_1_lo2, x0_2) + dot(p4_1_lo3, x0_3) + dot(p4_1_hi0, x0_4) + dot(p4_1_hi1, x0_5) + dot(p4_1_hi2, x0_6) + dot(p4_1_hi3, x0_7))) - p4_1_mm * xs0;
          a4_1_0 += p4_1_s0;
        }
      }
      { let u = min(ub + 5u, 1535u);
        { let row = u;
          let p5_0_bi = row * 2u + c / 8u; let p5_0_j = c % 8u; let p5_0_q = w_ffn_gate[p5_0_bi * 8u + p5_0_j];
          let p5_0_smw = w_ffn_gate[24576u + p5_0_bi][p5_0_j / 2u] >> ((p5_0_j & 1u) * 16u);
          let p5_0_dm = unpack2x16float(w_ffn_gate[27648u + (p5_0_bi >> 2u)][p5_0_bi & 3u]);
          let p5_0_ds = p5_0_dm.x * f32(p5_0_smw & 0xffu); let p5_0_mm = p5_0_dm.y * f32((p5_0_smw >> 8u) & 0xffu);
          let p5_0_lo0 = unpack4x8unorm(p5_0_q.x & 0x0f0f0f0fu); let p5_0_hi0 = unpack4x8unorm((p5_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p5_0_lo1 = unpack4x8unorm(p5_0_q.y & 0x0f0f0f0fu); let p5_0_hi1 = unpack4x8unorm((p5_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p5_0_lo2 = unpack4x8unorm(p5_0_q.z & 0x0f0f0f0fu); let p5_0_hi2 = unpack4x8unorm((p5_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p5_0_lo3 = unpack4x8unorm(p5_0_q.w & 0x0f0f0f0fu); let p5_0_hi3 = unpack4x8unorm((p5_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p5_0_s0 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x0_0) + dot(p5_0_lo1, x0_1) + dot(p5_0_lo2, x0_2) + dot(p5_0_lo3, x0_3) + dot(p5_0_hi0, x0_4) + dot(p5_0_hi1, x0_5) + dot(p5_0_hi2, x0_6) + dot(p5_0_hi3, x0_7))) - p5_0_mm * xs0;
          a5_0_0 += p5_0_s0;
        }
        { let row = u;
          let p5_1_bi = row * 2u + c / 8u; let p5_1_j = c % 8u; let p5_1_q = w_ffn_up[p5_1_bi * 8u + p5_1_j];
          let p5_1_smw = w_ffn_up[24576u + p5_1_bi][p5_1_j / 2u] >> ((p5_1_j & 1u) * 16u);
          let p5_1_dm = unpack2x16float(w_ffn_up[27648u + (p5_1_bi >> 2u)][p5_1_bi & 3u]);
          let p5_1_ds = p5_1_dm.x * f32(p5_1_smw & 0xffu); let p5_1_mm = p5_1_dm.y * f32((p5_1_smw >> 8u) & 0xffu);
          let p5_1_lo0 = unpack4x8unorm(p5_1_q.x & 0x0f0f0f0fu); let p5_1_hi0 = unpack4x8unorm((p5_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p5_1_lo1 = unpack4x8unorm(p5_1_q.y & 0x0f0f0f0fu); let p5_1_hi1 = unpack4x8unorm((p5_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p5_1_lo2 = unpack4x8unorm(p5_1_q.z & 0x0f0f0f0fu); let p5_1_hi2 = unpack4x8unorm((p5_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p5_1_lo3 = unpack4x8unorm(p5_1_q.w & 0x0f0f0f0fu); let p5_1_hi3 = unpack4x8unorm((p5_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p5_1_s0 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x0_0) + dot(p5_1_lo1, x0_1) + dot(p5_1_lo2, x0_2) + dot(p5_1_lo3, x0_3) + dot(p5_1_hi0, x0_4) + dot(p5_1_hi1, x0_5) + dot(p5_1_hi2, x0_6) + dot(p5_1_hi3, x0_7))) - p5_1_mm * xs0;
          a5_1_0 += p5_1_s0;
        }
      }
      { let u = min(ub + 6u, 1535u);
        { let row = u;
          let p6_0_bi = row * 2u + c / 8u; let p6_0_j = c % 8u; let p6_0_q = w_ffn_gate[p6_0_bi * 8u + p6_0_j];
          let p6_0_smw = w_ffn_gate[24576u + p6_0_bi][p6_0_j / 2u] >> ((p6_0_j & 1u) * 16u);
          let p6_0_dm = unpack2x16float(w_ffn_gate[27648u + (p6_0_bi >> 2u)][p6_0_bi & 3u]);
          let p6_0_ds = p6_0_dm.x * f32(p6_0_smw & 0xffu); let p6_0_mm = p6_0_dm.y * f32((p6_0_smw >> 8u) & 0xffu);
          let p6_0_lo0 = unpack4x8unorm(p6_0_q.x & 0x0f0f0f0fu); let p6_0_hi0 = unpack4x8unorm((p6_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p6_0_lo1 = unpack4x8unorm(p6_0_q.y & 0x0f0f0f0fu); let p6_0_hi1 = unpack4x8unorm((p6_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p6_0_lo2 = unpack4x8unorm(p6_0_q.z & 0x0f0f0f0fu); let p6_0_hi2 = unpack4x8unorm((p6_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p6_0_lo3 = unpack4x8unorm(p6_0_q.w & 0x0f0f0f0fu); let p6_0_hi3 = unpack4x8unorm((p6_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p6_0_s0 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x0_0) + dot(p6_0_lo1, x0_1) + dot(p6_0_lo2, x0_2) + dot(p6_0_lo3, x0_3) + dot(p6_0_hi0, x0_4) + dot(p6_0_hi1, x0_5) + dot(p6_0_hi2, x0_6) + dot(p6_0_hi3, x0_7))) - p6_0_mm * xs0;
          a6_0_0 += p6_0_s0;
        }
        { let row = u;
          let p6_1_bi = row * 2u + c / 8u; let p6_1_j = c % 8u; let p6_1_q = w_ffn_up[p6_1_bi * 8u + p6_1_j];
          let p6_1_smw = w_ffn_up[24576u + p6_1_bi][p6_1_j / 2u] >> ((p6_1_j & 1u) * 16u);
          let p6_1_dm = unpack2x16float(w_ffn_up[27648u + (p6_1_bi >> 2u)][p6_1_bi & 3u]);
          let p6_1_ds = p6_1_dm.x * f32(p6_1_smw & 0xffu); let p6_1_mm = p6_1_dm.y * f32((p6_1_smw >> 8u) & 0xffu);
          let p6_1_lo0 = unpack4x8unorm(p6_1_q.x & 0x0f0f0f0fu); let p6_1_hi0 = unpack4x8unorm((p6_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p6_1_lo1 = unpack4x8unorm(p6_1_q.y & 0x0f0f0f0fu); let p6_1_hi1 = unpack4x8unorm((p6_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p6_1_lo2 = unpack4x8unorm(p6_1_q.z & 0x0f0f0f0fu); let p6_1_hi2 = unpack4x8unorm((p6_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p6_1_lo3 = unpack4x8unorm(p6_1_q.w & 0x0f0f0f0fu); let p6_1_hi3 = unpack4x8unorm((p6_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p6_1_s0 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x0_0) + dot(p6_1_lo1, x0_1) + dot(p6_1_lo2, x0_2) + dot(p6_1_lo3, x0_3) + dot(p6_1_hi0, x0_4) + dot(p6_1_hi1, x0_5) + dot(p6_1_hi2, x0_6) + dot(p6_1_hi3, x0_7))) - p6_1_mm * xs0;
          a6_1_0 += p6_1_s0;
        }
      }
      { let u = min(ub + 7u, 1535u);
        { let row = u;
          let p7_0_bi = row * 2u + c / 8u; let p7_0_j = c % 8u; let p7_0_q = w_ffn_gate[p7_0_bi * 8u + p7_0_j];
          let p7_0_smw = w_ffn_gate[24576u + p7_0_bi][p7_0_j / 2u] >> ((p7_0_j & 1u) * 16u);
          let p7_0_dm = unpack2x16float(w_ffn_gate[27648u + (p7_0_bi >> 2u)][p7_0_bi & 3u]);
          let p7_0_ds = p7_0_dm.x * f32(p7_0_smw & 0xffu); let p7_0_mm = p7_0_dm.y * f32((p7_0_smw >> 8u) & 0xffu);
          let p7_0_lo0 = unpack4x8unorm(p7_0_q.x & 0x0f0f0f0fu); let p7_0_hi0 = unpack4x8unorm((p7_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p7_0_lo1 = unpack4x8unorm(p7_0_q.y & 0x0f0f0f0fu); let p7_0_hi1 = unpack4x8unorm((p7_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p7_0_lo2 = unpack4x8unorm(p7_0_q.z & 0x0f0f0f0fu); let p7_0_hi2 = unpack4x8unorm((p7_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p7_0_lo3 = unpack4x8unorm(p7_0_q.w & 0x0f0f0f0fu); let p7_0_hi3 = unpack4x8unorm((p7_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p7_0_s0 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x0_0) + dot(p7_0_lo1, x0_1) + dot(p7_0_lo2, x0_2) + dot(p7_0_lo3, x0_3) + dot(p7_0_hi0, x0_4) + dot(p7_0_hi1, x0_5) + dot(p7_0_hi2, x0_6) + dot(p7_0_hi3, x0_7))) - p7_0_mm * xs0;
          a7_0_0 += p7_0_s0;
        }
        { let row = u;
          let p7_1_bi = row * 2u + c / 8u; let p7_1_j = c % 8u; let p7_1_q = w_ffn_up[p7_1_bi * 8u + p7_1_j];
          let p7_1_smw = w_ffn_up[24576u + p7_1_bi][p7_1_j / 2u] >> ((p7_1_j & 1u) * 16u);
          let p7_1_dm = unpack2x16float(w_ffn_up[27648u + (p7_1_bi >> 2u)][p7_1_bi & 3u]);
          let p7_1_ds = p7_1_dm.x * f32(p7_1_smw & 0xffu); let p7_1_mm = p7_1_dm.y * f32((p7_1_smw >> 8u) & 0xffu);
          let p7_1_lo0 = unpack4x8unorm(p7_1_q.x & 0x0f0f0f0fu); let p7_1_hi0 = unpack4x8unorm((p7_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p7_1_lo1 = unpack4x8unorm(p7_1_q.y & 0x0f0f0f0fu); let p7_1_hi1 = unpack4x8unorm((p7_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p7_1_lo2 = unpack4x8unorm(p7_1_q.z & 0x0f0f0f0fu); let p7_1_hi2 = unpack4x8unorm((p7_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p7_1_lo3 = unpack4x8unorm(p7_1_q.w & 0x0f0f0f0fu); let p7_1_hi3 = unpack4x8unorm((p7_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p7_1_s0 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x0_0) + dot(p7_1_lo1, x0_1) + dot(p7_1_lo2, x0_2) + dot(p7_1_lo3, x0_3) + dot(p7_1_hi0, x0_4) + dot(p7_1_hi1, x0_5) + dot(p7_1_hi2, x0_6) + dot(p7_1_hi3, x0_7))) - p7_1_mm * xs0;
          a7_1_0 += p7_1_s0;
        }
      }
    }
  }
  let inv0 = inverseSqrt(ss0 / f32(K) + 1.000000000e-5f);
  if (seg == 0u) {
    { let u = ub + 0u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a0_0_0 * inv0; let d1 = a0_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 1u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a1_0_0 * inv0; let d1 = a1_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 2u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a2_0_0 * inv0; let d1 = a2_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 3u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a3_0_0 * inv0; let d1 = a3_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 4u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a4_0_0 * inv0; let d1 = a4_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 5u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a5_0_0 * inv0; let d1 = a5_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 6u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a6_0_0 * inv0; let d1 = a6_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 7u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a7_0_0 * inv0; let d1 = a7_1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
  }
}