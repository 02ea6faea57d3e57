enable subgroups;
struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> gnorm: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> w_attn_q: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> w_attn_k: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> w_attn_v: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<u32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<u32>;

const K: u32 = 512u;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let lane = lid % 32u;
  let grp = lid / 32u;
  let t0 = wg.y * 1u;
  let nT = step.nTokens;
  let xrow0 = t0;
  let xr0 = min(xrow0 + 0u, xrow0 + nT - 1u - t0) * 128u;
  var seg = 0u;
  var ub = 0u;
  if (wg.x < 32u) { seg = 0u; ub = (wg.x - 0u) * 8u + grp * 2u; }
  else if (wg.x < 64u) { seg = 1u; ub = (wg.x - 32u) * 8u + grp * 2u; }
  else if (wg.x < 96u) { seg = 2u; ub = (wg.x - 64u) * 8u + grp * 2u; }
  var a0_0_0 = 0.0;
  var a0_1_0 = 0.0;
  var a1_0_0 = 0.0;
  var a1_1_0 = 0.0;
  var ss0 = 0.0;
  for (var c = lane; c < 16u; c += 32u) {
    let xr0_0 = x[xr0 + c * 8u + 0u];
    let xr0_1 = x[xr0 + c * 8u + 1u];
    let xr0_2 = x[xr0 + c * 8u + 2u];
    let xr0_3 = x[xr0 + c * 8u + 3u];
    let xr0_4 = x[xr0 + c * 8u + 4u];
    let xr0_5 = x[xr0 + c * 8u + 5u];
    let xr0_6 = x[xr0 + c * 8u + 6u];
    let xr0_7 = x[xr0 + c * 8u + 7u];
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
    let xlo0 = dot(x0_0 + x0_1 + x0_2 + x0_3, vec4<f32>(1.0));
    let xhi0 = dot(x0_4 + x0_5 + x0_6 + x0_7, vec4<f32>(1.0));
    if (seg == 0u) {
      { let u = min(ub + 0u, 255u);
        { let row = (u / 32u) * 64u + 2u * (u % 32u);
          let p0_0_bi = row * 2u + c / 8u; let p0_0_j = c % 8u; let p0_0_q = w_attn_q[p0_0_bi * 8u + p0_0_j];
          let p0_0_smw = w_attn_q[8192u + p0_0_bi][p0_0_j / 2u] >> ((p0_0_j & 1u) * 16u);
          let p0_0_dm = unpack2x16float(w_attn_q[9216u + (p0_0_bi >> 2u)][p0_0_bi & 3u]);
          let p0_0_ds = p0_0_dm.x * f32(p0_0_smw & 0xffu); let p0_0_mm = p0_0_dm.y * f32((p0_0_smw >> 8u) & 0xffu);
          let p0_0_lo0 = unpack4x8unorm(p0_0_q.x & 0x0f0f0f0fu); let p0_0_hi0 = unpack4x8unorm((p0_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo1 = unpack4x8unorm(p0_0_q.y & 0x0f0f0f0fu); let p0_0_hi1 = unpack4x8unorm((p0_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo2 = unpack4x8unorm(p0_0_q.z & 0x0f0f0f0fu); let p0_0_hi2 = unpack4x8unorm((p0_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo3 = unpack4x8unorm(p0_0_q.w & 0x0f0f0f0fu); let p0_0_hi3 = unpack4x8unorm((p0_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_0_s0 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x0_0) + dot(p0_0_lo1, x0_1) + dot(p0_0_lo2, x0_2) + dot(p0_0_lo3, x0_3) + dot(p0_0_hi0, x0_4) + dot(p0_0_hi1, x0_5) + dot(p0_0_hi2, x0_6) + dot(p0_0_hi3, x0_7))) - p0_0_mm * xs0;
          a0_0_0 += p0_0_s0;
        }
        { let row = (u / 32u) * 64u + 2u * (u % 32u) + 1u;
          let p0_1_bi = row * 2u + c / 8u; let p0_1_j = c % 8u; let p0_1_q = w_attn_q[p0_1_bi * 8u + p0_1_j];
          let p0_1_smw = w_attn_q[8192u + p0_1_bi][p0_1_j / 2u] >> ((p0_1_j & 1u) * 16u);
          let p0_1_dm = unpack2x16float(w_attn_q[9216u + (p0_1_bi >> 2u)][p0_1_bi & 3u]);
          let p0_1_ds = p0_1_dm.x * f32(p0_1_smw & 0xffu); let p0_1_mm = p0_1_dm.y * f32((p0_1_smw >> 8u) & 0xffu);
          let p0_1_lo0 = unpack4x8unorm(p0_1_q.x & 0x0f0f0f0fu); let p0_1_hi0 = unpack4x8unorm((p0_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo1 = unpack4x8unorm(p0_1_q.y & 0x0f0f0f0fu); let p0_1_hi1 = unpack4x8unorm((p0_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo2 = unpack4x8unorm(p0_1_q.z & 0x0f0f0f0fu); let p0_1_hi2 = unpack4x8unorm((p0_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo3 = unpack4x8unorm(p0_1_q.w & 0x0f0f0f0fu); let p0_1_hi3 = unpack4x8unorm((p0_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_1_s0 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x0_0) + dot(p0_1_lo1, x0_1) + dot(p0_1_lo2, x0_2) + dot(p0_1_lo3, x0_3) + dot(p0_1_hi0, x0_4) + dot(p0_1_hi1, x0_5) + dot(p0_1_hi2, x0_6) + dot(p0_1_hi3, x0_7))) - p0_1_mm * xs0;
          a0_1_0 += p0_1_s0;
        }
      }
      { let u = min(ub + 1u, 255u);
        { let row = (u / 32u) * 64u + 2u * (u % 32u);
          let p1_0_bi = row * 2u + c / 8u; let p1_0_j = c % 8u; let p1_0_q = w_attn_q[p1_0_bi * 8u + p1_0_j];
          let p1_0_smw = w_attn_q[8192u + p1_0_bi][p1_0_j / 2u] >> ((p1_0_j & 1u) * 16u);
          let p1_0_dm = unpack2x16float(w_attn_q[9216u + (p1_0_bi >> 2u)][p1_0_bi & 3u]);
          let p1_0_ds = p1_0_dm.x * f32(p1_0_smw & 0xffu); let p1_0_mm = p1_0_dm.y * f32((p1_0_smw >> 8u) & 0xffu);
          let p1_0_lo0 = unpack4x8unorm(p1_0_q.x & 0x0f0f0f0fu); let p1_0_hi0 = unpack4x8unorm((p1_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo1 = unpack4x8unorm(p1_0_q.y & 0x0f0f0f0fu); let p1_0_hi1 = unpack4x8unorm((p1_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo2 = unpack4x8unorm(p1_0_q.z & 0x0f0f0f0fu); let p1_0_hi2 = unpack4x8unorm((p1_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo3 = unpack4x8unorm(p1_0_q.w & 0x0f0f0f0fu); let p1_0_hi3 = unpack4x8unorm((p1_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_0_s0 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x0_0) + dot(p1_0_lo1, x0_1) + dot(p1_0_lo2, x0_2) + dot(p1_0_lo3, x0_3) + dot(p1_0_hi0, x0_4) + dot(p1_0_hi1, x0_5) + dot(p1_0_hi2, x0_6) + dot(p1_0_hi3, x0_7))) - p1_0_mm * xs0;
          a1_0_0 += p1_0_s0;
        }
        { let row = (u / 32u) * 64u + 2u * (u % 32u) + 1u;
          let p1_1_bi = row * 2u + c / 8u; let p1_1_j = c % 8u; let p1_1_q = w_attn_q[p1_1_bi * 8u + p1_1_j];
          let p1_1_smw = w_attn_q[8192u + p1_1_bi][p1_1_j / 2u] >> ((p1_1_j & 1u) * 16u);
          let p1_1_dm = unpack2x16float(w_attn_q[9216u + (p1_1_bi >> 2u)][p1_1_bi & 3u]);
          let p1_1_ds = p1_1_dm.x * f32(p1_1_smw & 0xffu); let p1_1_mm = p1_1_dm.y * f32((p1_1_smw >> 8u) & 0xffu);
          let p1_1_lo0 = unpack4x8unorm(p1_1_q.x & 0x0f0f0f0fu); let p1_1_hi0 = unpack4x8unorm((p1_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo1 = unpack4x8unorm(p1_1_q.y & 0x0f0f0f0fu); let p1_1_hi1 = unpack4x8unorm((p1_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo2 = unpack4x8unorm(p1_1_q.z & 0x0f0f0f0fu); let p1_1_hi2 = unpack4x8unorm((p1_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo3 = unpack4x8unorm(p1_1_q.w & 0x0f0f0f0fu); let p1_1_hi3 = unpack4x8unorm((p1_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_1_s0 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x0_0) + dot(p1_1_lo1, x0_1) + dot(p1_1_lo2, x0_2) + dot(p1_1_lo3, x0_3) + dot(p1_1_hi0, x0_4) + dot(p1_1_hi1, x0_5) + dot(p1_1_hi2, x0_6) + dot(p1_1_hi3, x0_7))) - p1_1_mm * xs0;
          a1_1_0 += p1_1_s0;
        }
      }
    }
    else if (seg == 1u) {
      { let u = min(ub + 0u, 255u);
        { let row = (u / 32u) * 64u + 2u * (u % 32u);
          let p0_0_bi = row * 2u + c / 8u; let p0_0_j = c % 8u; let p0_0_q = w_attn_k[p0_0_bi * 8u + p0_0_j];
          let p0_0_smw = w_attn_k[8192u + p0_0_bi][p0_0_j / 2u] >> ((p0_0_j & 1u) * 16u);
          let p0_0_dm = unpack2x16float(w_attn_k[9216u + (p0_0_bi >> 2u)][p0_0_bi & 3u]);
          let p0_0_ds = p0_0_dm.x * f32(p0_0_smw & 0xffu); let p0_0_mm = p0_0_dm.y * f32((p0_0_smw >> 8u) & 0xffu);
          let p0_0_lo0 = unpack4x8unorm(p0_0_q.x & 0x0f0f0f0fu); let p0_0_hi0 = unpack4x8unorm((p0_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo1 = unpack4x8unorm(p0_0_q.y & 0x0f0f0f0fu); let p0_0_hi1 = unpack4x8unorm((p0_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo2 = unpack4x8unorm(p0_0_q.z & 0x0f0f0f0fu); let p0_0_hi2 = unpack4x8unorm((p0_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_0_lo3 = unpack4x8unorm(p0_0_q.w & 0x0f0f0f0fu); let p0_0_hi3 = unpack4x8unorm((p0_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_0_s0 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x0_0) + dot(p0_0_lo1, x0_1) + dot(p0_0_lo2, x0_2) + dot(p0_0_lo3, x0_3) + dot(p0_0_hi0, x0_4) + dot(p0_0_hi1, x0_5) + dot(p0_0_hi2, x0_6) + dot(p0_0_hi3, x0_7))) - p0_0_mm * xs0;
          a0_0_0 += p0_0_s0;
        }
        { let row = (u / 32u) * 64u + 2u * (u % 32u) + 1u;
          let p0_1_bi = row * 2u + c / 8u; let p0_1_j = c % 8u; let p0_1_q = w_attn_k[p0_1_bi * 8u + p0_1_j];
          let p0_1_smw = w_attn_k[8192u + p0_1_bi][p0_1_j / 2u] >> ((p0_1_j & 1u) * 16u);
          let p0_1_dm = unpack2x16float(w_attn_k[9216u + (p0_1_bi >> 2u)][p0_1_bi & 3u]);
          let p0_1_ds = p0_1_dm.x * f32(p0_1_smw & 0xffu); let p0_1_mm = p0_1_dm.y * f32((p0_1_smw >> 8u) & 0xffu);
          let p0_1_lo0 = unpack4x8unorm(p0_1_q.x & 0x0f0f0f0fu); let p0_1_hi0 = unpack4x8unorm((p0_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo1 = unpack4x8unorm(p0_1_q.y & 0x0f0f0f0fu); let p0_1_hi1 = unpack4x8unorm((p0_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo2 = unpack4x8unorm(p0_1_q.z & 0x0f0f0f0fu); let p0_1_hi2 = unpack4x8unorm((p0_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p0_1_lo3 = unpack4x8unorm(p0_1_q.w & 0x0f0f0f0fu); let p0_1_hi3 = unpack4x8unorm((p0_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p0_1_s0 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x0_0) + dot(p0_1_lo1, x0_1) + dot(p0_1_lo2, x0_2) + dot(p0_1_lo3, x0_3) + dot(p0_1_hi0, x0_4) + dot(p0_1_hi1, x0_5) + dot(p0_1_hi2, x0_6) + dot(p0_1_hi3, x0_7))) - p0_1_mm * xs0;
          a0_1_0 += p0_1_s0;
        }
      }
      { let u = min(ub + 1u, 255u);
        { let row = (u / 32u) * 64u + 2u * (u % 32u);
          let p1_0_bi = row * 2u + c / 8u; let p1_0_j = c % 8u; let p1_0_q = w_attn_k[p1_0_bi * 8u + p1_0_j];
          let p1_0_smw = w_attn_k[8192u + p1_0_bi][p1_0_j / 2u] >> ((p1_0_j & 1u) * 16u);
          let p1_0_dm = unpack2x16float(w_attn_k[9216u + (p1_0_bi >> 2u)][p1_0_bi & 3u]);
          let p1_0_ds = p1_0_dm.x * f32(p1_0_smw & 0xffu); let p1_0_mm = p1_0_dm.y * f32((p1_0_smw >> 8u) & 0xffu);
          let p1_0_lo0 = unpack4x8unorm(p1_0_q.x & 0x0f0f0f0fu); let p1_0_hi0 = unpack4x8unorm((p1_0_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo1 = unpack4x8unorm(p1_0_q.y & 0x0f0f0f0fu); let p1_0_hi1 = unpack4x8unorm((p1_0_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo2 = unpack4x8unorm(p1_0_q.z & 0x0f0f0f0fu); let p1_0_hi2 = unpack4x8unorm((p1_0_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_0_lo3 = unpack4x8unorm(p1_0_q.w & 0x0f0f0f0fu); let p1_0_hi3 = unpack4x8unorm((p1_0_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_0_s0 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x0_0) + dot(p1_0_lo1, x0_1) + dot(p1_0_lo2, x0_2) + dot(p1_0_lo3, x0_3) + dot(p1_0_hi0, x0_4) + dot(p1_0_hi1, x0_5) + dot(p1_0_hi2, x0_6) + dot(p1_0_hi3, x0_7))) - p1_0_mm * xs0;
          a1_0_0 += p1_0_s0;
        }
        { let row = (u / 32u) * 64u + 2u * (u % 32u) + 1u;
          let p1_1_bi = row * 2u + c / 8u; let p1_1_j = c % 8u; let p1_1_q = w_attn_k[p1_1_bi * 8u + p1_1_j];
          let p1_1_smw = w_attn_k[8192u + p1_1_bi][p1_1_j / 2u] >> ((p1_1_j & 1u) * 16u);
          let p1_1_dm = unpack2x16float(w_attn_k[9216u + (p1_1_bi >> 2u)][p1_1_bi & 3u]);
          let p1_1_ds = p1_1_dm.x * f32(p1_1_smw & 0xffu); let p1_1_mm = p1_1_dm.y * f32((p1_1_smw >> 8u) & 0xffu);
          let p1_1_lo0 = unpack4x8unorm(p1_1_q.x & 0x0f0f0f0fu); let p1_1_hi0 = unpack4x8unorm((p1_1_q.x >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo1 = unpack4x8unorm(p1_1_q.y & 0x0f0f0f0fu); let p1_1_hi1 = unpack4x8unorm((p1_1_q.y >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo2 = unpack4x8unorm(p1_1_q.z & 0x0f0f0f0fu); let p1_1_hi2 = unpack4x8unorm((p1_1_q.z >> 4u) & 0x0f0f0f0fu);
          let p1_1_lo3 = unpack4x8unorm(p1_1_q.w & 0x0f0f0f0fu); let p1_1_hi3 = unpack4x8unorm((p1_1_q.w >> 4u) & 0x0f0f0f0fu);
          let p1_1_s0 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x0_0) + dot(p1_1_lo1, x0_1) + dot(p1_1_lo2, x0_2) + dot(p1_1_lo3, x0_3) + dot(p1_1_hi0, x0_4) + dot(p1_1_hi1, x0_5) + dot(p1_1_hi2, x0_6) + dot(p1_1_hi3, x0_7))) - p1_1_mm * xs0;
          a1_1_0 += p1_1_s0;
        }
      }
    }
    else if (seg == 2u) {
      { let u = min(ub + 0u, 255u);
        { let row = 2u * u;
          let p0_0_bi = row * 2u + c / 8u; let p0_0_j = c % 8u; let p0_0_q = w_attn_v[p0_0_bi * 8u + p0_0_j];
          let p0_0_hv = w_attn_v[8192u + p0_0_bi * 4u + p0_0_j / 2u]; let p0_0_odd = (p0_0_j & 1u) == 1u;
          let p0_0_ha = select(p0_0_hv.x, p0_0_hv.z, p0_0_odd); let p0_0_hb = select(p0_0_hv.y, p0_0_hv.w, p0_0_odd);
          let p0_0_sw = w_attn_v[12288u + p0_0_bi][p0_0_j / 2u] >> ((p0_0_j & 1u) * 16u);
          let p0_0_dD = 212992u + 2u * p0_0_bi; let p0_0_dW = w_attn_v[p0_0_dD >> 4u][(p0_0_dD >> 2u) & 3u] >> (((p0_0_dD >> 1u) & 1u) * 16u);
          let p0_0_d = unpack2x16float(p0_0_dW).x;
          let p0_0_sc0 = p0_0_d * f32((bitcast<i32>(p0_0_sw) << 24u) >> 24u); let p0_0_sc1 = p0_0_d * f32((bitcast<i32>(p0_0_sw) << 16u) >> 24u);
          let p0_0_f0 = unpack4x8unorm((p0_0_q.x & 0x0f0f0f0fu) | ((p0_0_ha << 4u) & 0x30303030u));
          let p0_0_f4 = unpack4x8unorm(((p0_0_q.x >> 4u) & 0x0f0f0f0fu) | ((p0_0_hb << 4u) & 0x30303030u));
          let p0_0_f1 = unpack4x8unorm((p0_0_q.y & 0x0f0f0f0fu) | ((p0_0_ha << 2u) & 0x30303030u));
          let p0_0_f5 = unpack4x8unorm(((p0_0_q.y >> 4u) & 0x0f0f0f0fu) | ((p0_0_hb << 2u) & 0x30303030u));
          let p0_0_f2 = unpack4x8unorm((p0_0_q.z & 0x0f0f0f0fu) | (p0_0_ha & 0x30303030u));
          let p0_0_f6 = unpack4x8unorm(((p0_0_q.z >> 4u) & 0x0f0f0f0fu) | (p0_0_hb & 0x30303030u));
          let p0_0_f3 = unpack4x8unorm((p0_0_q.w & 0x0f0f0f0fu) | ((p0_0_ha >> 2u) & 0x30303030u));
          let p0_0_f7 = unpack4x8unorm(((p0_0_q.w >> 4u) & 0x0f0f0f0fu) | ((p0_0_hb >> 2u) & 0x30303030u));
          let p0_0_s0 = p0_0_sc0 * (255.0 * (dot(p0_0_f0, x0_0) + dot(p0_0_f1, x0_1) + dot(p0_0_f2, x0_2) + dot(p0_0_f3, x0_3)) - 32.0 * xlo0) + p0_0_sc1 * (255.0 * (dot(p0_0_f4, x0_4) + dot(p0_0_f5, x0_5) + dot(p0_0_f6, x0_6) + dot(p0_0_f7, x0_7)) - 32.0 * xhi0);
          a0_0_0 += p0_0_s0;
        }
        { let row = 2u * u + 1u;
          let p0_1_bi = row * 2u + c / 8u; let p0_1_j = c % 8u; let p0_1_q = w_attn_v[p0_1_bi * 8u + p0_1_j];
          let p0_1_hv = w_attn_v[8192u + p0_1_bi * 4u + p0_1_j / 2u]; let p0_1_odd = (p0_1_j & 1u) == 1u;
          let p0_1_ha = select(p0_1_hv.x, p0_1_hv.z, p0_1_odd); let p0_1_hb = select(p0_1_hv.y, p0_1_hv.w, p0_1_odd);
          let p0_1_sw = w_attn_v[12288u + p0_1_bi][p0_1_j / 2u] >> ((p0_1_j & 1u) * 16u);
          let p0_1_dD = 212992u + 2u * p0_1_bi; let p0_1_dW = w_attn_v[p0_1_dD >> 4u][(p0_1_dD >> 2u) & 3u] >> (((p0_1_dD >> 1u) & 1u) * 16u);
          let p0_1_d = unpack2x16float(p0_1_dW).x;
          let p0_1_sc0 = p0_1_d * f32((bitcast<i32>(p0_1_sw) << 24u) >> 24u); let p0_1_sc1 = p0_1_d * f32((bitcast<i32>(p0_1_sw) << 16u) >> 24u);
          let p0_1_f0 = unpack4x8unorm((p0_1_q.x & 0x0f0f0f0fu) | ((p0_1_ha << 4u) & 0x30303030u));
          let p0_1_f4 = unpack4x8unorm(((p0_1_q.x >> 4u) & 0x0f0f0f0fu) | ((p0_1_hb << 4u) & 0x30303030u));
          let p0_1_f1 = unpack4x8unorm((p0_1_q.y & 0x0f0f0f0fu) | ((p0_1_ha << 2u) & 0x30303030u));
          let p0_1_f5 = unpack4x8unorm(((p0_1_q.y >> 4u) & 0x0f0f0f0fu) | ((p0_1_hb << 2u) & 0x30303030u));
          let p0_1_f2 = unpack4x8unorm((p0_1_q.z & 0x0f0f0f0fu) | (p0_1_ha & 0x30303030u));
          let p0_1_f6 = unpack4x8unorm(((p0_1_q.z >> 4u) & 0x0f0f0f0fu) | (p0_1_hb & 0x30303030u));
          let p0_1_f3 = unpack4x8unorm((p0_1_q.w & 0x0f0f0f0fu) | ((p0_1_ha >> 2u) & 0x30303030u));
          let p0_1_f7 = unpack4x8unorm(((p0_1_q.w >> 4u) & 0x0f0f0f0fu) | ((p0_1_hb >> 2u) & 0x30303030u));
          let p0_1_s0 = p0_1_sc0 * (255.0 * (dot(p0_1_f0, x0_0) + dot(p0_1_f1, x0_1) + dot(p0_1_f2, x0_2) + dot(p0_1_f3, x0_3)) - 32.0 * xlo0) + p0_1_sc1 * (255.0 * (dot(p0_1_f4, x0_4) + dot(p0_1_f5, x0_5) + dot(p0_1_f6, x0_6) + dot(p0_1_f7, x0_7)) - 32.0 * xhi0);
          a0_1_0 += p0_1_s0;
        }
      }
      { let u = min(ub + 1u, 255u);
        { let row = 2u * u;
          let p1_0_bi = row * 2u + c / 8u; let p1_0_j = c % 8u; let p1_0_q = w_attn_v[p1_0_bi * 8u + p1_0_j];
          let p1_0_hv = w_attn_v[8192u + p1_0_bi * 4u + p1_0_j / 2u]; let p1_0_odd = (p1_0_j & 1u) == 1u;
          let p1_0_ha = select(p1_0_hv.x, p1_0_hv.z, p1_0_odd); let p1_0_hb = select(p1_0_hv.y, p1_0_hv.w, p1_0_odd);
          let p1_0_sw = w_attn_v[12288u + p1_0_bi][p1_0_j / 2u] >> ((p1_0_j & 1u) * 16u);
          let p1_0_dD = 212992u + 2u * p1_0_bi; let p1_0_dW = w_attn_v[p1_0_dD >> 4u][(p1_0_dD >> 2u) & 3u] >> (((p1_0_dD >> 1u) & 1u) * 16u);
          let p1_0_d = unpack2x16float(p1_0_dW).x;
          let p1_0_sc0 = p1_0_d * f32((bitcast<i32>(p1_0_sw) << 24u) >> 24u); let p1_0_sc1 = p1_0_d * f32((bitcast<i32>(p1_0_sw) << 16u) >> 24u);
          let p1_0_f0 = unpack4x8unorm((p1_0_q.x & 0x0f0f0f0fu) | ((p1_0_ha << 4u) & 0x30303030u));
          let p1_0_f4 = unpack4x8unorm(((p1_0_q.x >> 4u) & 0x0f0f0f0fu) | ((p1_0_hb << 4u) & 0x30303030u));
          let p1_0_f1 = unpack4x8unorm((p1_0_q.y & 0x0f0f0f0fu) | ((p1_0_ha << 2u) & 0x30303030u));
          let p1_0_f5 = unpack4x8unorm(((p1_0_q.y >> 4u) & 0x0f0f0f0fu) | ((p1_0_hb << 2u) & 0x30303030u));
          let p1_0_f2 = unpack4x8unorm((p1_0_q.z & 0x0f0f0f0fu) | (p1_0_ha & 0x30303030u));
          let p1_0_f6 = unpack4x8unorm(((p1_0_q.z >> 4u) & 0x0f0f0f0fu) | (p1_0_hb & 0x30303030u));
          let p1_0_f3 = unpack4x8unorm((p1_0_q.w & 0x0f0f0f0fu) | ((p1_0_ha >> 2u) & 0x30303030u));
          let p1_0_f7 = unpack4x8unorm(((p1_0_q.w >> 4u) & 0x0f0f0f0fu) | ((p1_0_hb >> 2u) & 0x30303030u));
          let p1_0_s0 = p1_0_sc0 * (255.0 * (dot(p1_0_f0, x0_0) + dot(p1_0_f1, x0_1) + dot(p1_0_f2, x0_2) + dot(p1_0_f3, x0_3)) - 32.0 * xlo0) + p1_0_sc1 * (255.0 * (dot(p1_0_f4, x0_4) + dot(p1_0_f5, x0_5) + dot(p1_0_f6, x0_6) + dot(p1_0_f7, x0_7)) - 32.0 * xhi0);
          a1_0_0 += p1_0_s0;
        }
        { let row = 2u * u + 1u;
          let p1_1_bi = row * 2u + c / 8u; let p1_1_j = c % 8u; let p1_1_q = w_attn_v[p1_1_bi * 8u + p1_1_j];
          let p1_1_hv = w_attn_v[8192u + p1_1_bi * 4u + p1_1_j / 2u]; let p1_1_odd = (p1_1_j & 1u) == 1u;
          let p1_1_ha = select(p1_1_hv.x, p1_1_hv.z, p1_1_odd); let p1_1_hb = select(p1_1_hv.y, p1_1_hv.w, p1_1_odd);
          let p1_1_sw = w_attn_v[12288u + p1_1_bi][p1_1_j / 2u] >> ((p1_1_j & 1u) * 16u);
          let p1_1_dD = 212992u + 2u * p1_1_bi; let p1_1_dW = w_attn_v[p1_1_dD >> 4u][(p1_1_dD >> 2u) & 3u] >> (((p1_1_dD >> 1u) & 1u) * 16u);
          let p1_1_d = unpack2x16float(p1_1_dW).x;
          let p1_1_sc0 = p1_1_d * f32((bitcast<i32>(p1_1_sw) << 24u) >> 24u); let p1_1_sc1 = p1_1_d * f32((bitcast<i32>(p1_1_sw) << 16u) >> 24u);
          let p1_1_f0 = unpack4x8unorm((p1_1_q.x & 0x0f0f0f0fu) | ((p1_1_ha << 4u) & 0x30303030u));
          let p1_1_f4 = unpack4x8unorm(((p1_1_q.x >> 4u) & 0x0f0f0f0fu) | ((p1_1_hb << 4u) & 0x30303030u));
          let p1_1_f1 = unpack4x8unorm((p1_1_q.y & 0x0f0f0f0fu) | ((p1_1_ha << 2u) & 0x30303030u));
          let p1_1_f5 = unpack4x8unorm(((p1_1_q.y >> 4u) & 0x0f0f0f0fu) | ((p1_1_hb << 2u) & 0x30303030u));
          let p1_1_f2 = unpack4x8unorm((p1_1_q.z & 0x0f0f0f0fu) | (p1_1_ha & 0x30303030u));
          let p1_1_f6 = unpack4x8unorm(((p1_1_q.z >> 4u) & 0x0f0f0f0fu) | (p1_1_hb & 0x30303030u));
          let p1_1_f3 = unpack4x8unorm((p1_1_q.w & 0x0f0f0f0fu) | ((p1_1_ha >> 2u) & 0x30303030u));
          let p1_1_f7 = unpack4x8unorm(((p1_1_q.w >> 4u) & 0x0f0f0f0fu) | ((p1_1_hb >> 2u) & 0x30303030u));
          let p1_1_s0 = p1_1_sc0 * (255.0 * (dot(p1_1_f0, x0_0) + dot(p1_1_f1, x0_1) + dot(p1_1_f2, x0_2) + dot(p1_1_f3, x0_3)) - 32.0 * xlo0) + p1_1_sc1 * (255.0 * (dot(p1_1_f4, x0_4) + dot(p1_1_f5, x0_5) + dot(p1_1_f6, x0_6) + dot(p1_1_f7, x0_7)) - 32.0 * xhi0);
          a1_1_0 += p1_1_s0;
        }
      }
    }
  }
  a0_0_0 += subgroupShuffleXor(a0_0_0, 16u);
  a0_1_0 += subgroupShuffleXor(a0_1_0, 16u);
  a1_0_0 += subgroupShuffleXor(a1_0_0, 16u);
  a1_1_0 += subgroupShuffleXor(a1_1_0, 16u);
  ss0 += subgroupShuffleXor(ss0, 16u);
  a0_0_0 += subgroupShuffleXor(a0_0_0, 8u);
  a0_1_0 += subgroupShuffleXor(a0_1_0, 8u);
  a1_0_0 += subgroupShuffleXor(a1_0_0, 8u);
  a1_1_0 += subgroupShuffleXor(a1_1_0, 8u);
  ss0 += subgroupShuffleXor(ss0, 8u);
  a0_0_0 += subgroupShuffleXor(a0_0_0, 4u);
  a0_1_0 += subgroupShuffleXor(a0_1_0, 4u);
  a1_0_0 += subgroupShuffleXor(a1_0_0, 4u);
  a1_1_0 += subgroupShuffleXor(a1_1_0, 4u);
  ss0 += subgroupShuffleXor(ss0, 4u);
  a0_0_0 += subgroupShuffleXor(a0_0_0, 2u);
  a0_1_0 += subgroupShuffleXor(a0_1_0, 2u);
  a1_0_0 += subgroupShuffleXor(a1_0_0, 2u);
  a1_1_0 += subgroupShuffleXor(a1_1_0, 2u);
  ss0 += subgroupShuffleXor(ss0, 2u);
  a0_0_0 += subgroupShuffleXor(a0_0_0, 1u);
  a0_1_0 += subgroupShuffleXor(a0_1_0, 1u);
  a1_0_0 += subgroupShuffleXor(a1_0_0, 1u);
  a1_1_0 += subgroupShuffleXor(a1_1_0, 1u);
  ss0 += subgroupShuffleXor(ss0, 1u);
  if (lane != 0u) { return; }
  let inv0 = inverseSqrt(ss0 / f32(K) + 1.000000000e-5f);
  if (seg == 0u) {
    { let u = ub + 0u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a0_0_0 * inv0; let d1 = a0_1_0 * inv0;
        let i = u % 32u; let hb0 = 0u + (u / 32u) * 64u; let ia = 2u * (u % 32u); let ib = 2u * (u % 32u) + 1u;
      let b0 = 0.0; let b1 = 0.0;
      var o0 = d0 + b0; var o1 = d1 + b1;
      if (2u * i < 64u) { let cs = rope[pos * 32u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }
      q_out[t * 512u + hb0 + 2u * i] = o0; q_out[t * 512u + hb0 + 2u * i + 1u] = o1;
      }
    } }
    { let u = ub + 1u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a1_0_0 * inv0; let d1 = a1_1_0 * inv0;
        let i = u % 32u; let hb0 = 0u + (u / 32u) * 64u; let ia = 2u * (u % 32u); let ib = 2u * (u % 32u) + 1u;
      let b0 = 0.0; let b1 = 0.0;
      var o0 = d0 + b0; var o1 = d1 + b1;
      if (2u * i < 64u) { let cs = rope[pos * 32u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }
      q_out[t * 512u + hb0 + 2u * i] = o0; q_out[t * 512u + hb0 + 2u * i + 1u] = o1;
      }
    } }
  }
  else if (seg == 1u) {
    { let u = ub + 0u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a0_0_0 * inv0; let d1 = a0_1_0 * inv0;
        let i = u % 32u; let hb0 = 0u + (u / 32u) * 64u; let ia = 2u * (u % 32u); let ib = 2u * (u % 32u) + 1u;
      let b0 = 0.0; let b1 = 0.0;
      var o0 = d0 + b0; var o1 = d1 + b1;
      if (2u * i < 64u) { let cs = rope[pos * 32u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }
      k_cache[(pos * 512u + hb0) / 2u + i] = pack2x16float(vec2<f32>(o0, o1));
      }
    } }
    { let u = ub + 1u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a1_0_0 * inv0; let d1 = a1_1_0 * inv0;
        let i = u % 32u; let hb0 = 0u + (u / 32u) * 64u; let ia = 2u * (u % 32u); let ib = 2u * (u % 32u) + 1u;
      let b0 = 0.0; let b1 = 0.0;
      var o0 = d0 + b0; var o1 = d1 + b1;
      if (2u * i < 64u) { let cs = rope[pos * 32u + i]; o0 = (d0 + b0) * cs.x - (d1 + b1) * cs.y; o1 = (d0 + b0) * cs.y + (d1 + b1) * cs.x; }
      k_cache[(pos * 512u + hb0) / 2u + i] = pack2x16float(vec2<f32>(o0, o1));
      }
    } }
  }
  else if (seg == 2u) {
    { let u = ub + 0u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a0_0_0 * inv0; let d1 = a0_1_0 * inv0;
        let b0 = 0.0; let b1 = 0.0;
      v_cache[(pos * 512u + 0u + 2u * u) / 2u] = pack2x16float(vec2<f32>(d0 + b0, d1 + b1));
      }
    } }
    { let u = ub + 1u; if (u < 256u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a1_0_0 * inv0; let d1 = a1_1_0 * inv0;
        let b0 = 0.0; let b1 = 0.0;
      v_cache[(pos * 512u + 0u + 2u * u) / 2u] = pack2x16float(vec2<f32>(d0 + b0, d1 + b1));
      }
    } }
  }
}