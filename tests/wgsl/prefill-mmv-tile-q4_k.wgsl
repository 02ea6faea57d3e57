enable subgroups;
struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w_ffn_gate: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> w_ffn_up: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> hb: array<f32>;

const K: u32 = 512u;

@compute @workgroup_size(8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) sl: u32) {
  let lane = lid % 1u;
  let grp = lid / 1u;
  let t0 = wg.y * 16u;
  let nT = step.nTokens;
  let xrow0 = t0;
  let xr0 = min(xrow0 + 0u, xrow0 + nT - 1u - t0) * 128u;
  let xr1 = min(xrow0 + 1u, xrow0 + nT - 1u - t0) * 128u;
  let xr2 = min(xrow0 + 2u, xrow0 + nT - 1u - t0) * 128u;
  let xr3 = min(xrow0 + 3u, xrow0 + nT - 1u - t0) * 128u;
  let xr4 = min(xrow0 + 4u, xrow0 + nT - 1u - t0) * 128u;
  let xr5 = min(xrow0 + 5u, xrow0 + nT - 1u - t0) * 128u;
  let xr6 = min(xrow0 + 6u, xrow0 + nT - 1u - t0) * 128u;
  let xr7 = min(xrow0 + 7u, xrow0 + nT - 1u - t0) * 128u;
  let xr8 = min(xrow0 + 8u, xrow0 + nT - 1u - t0) * 128u;
  let xr9 = min(xrow0 + 9u, xrow0 + nT - 1u - t0) * 128u;
  let xr10 = min(xrow0 + 10u, xrow0 + nT - 1u - t0) * 128u;
  let xr11 = min(xrow0 + 11u, xrow0 + nT - 1u - t0) * 128u;
  let xr12 = min(xrow0 + 12u, xrow0 + nT - 1u - t0) * 128u;
  let xr13 = min(xrow0 + 13u, xrow0 + nT - 1u - t0) * 128u;
  let xr14 = min(xrow0 + 14u, xrow0 + nT - 1u - t0) * 128u;
  let xr15 = min(xrow0 + 15u, xrow0 + nT - 1u - t0) * 128u;
  var seg = 0u;
  var ub = 0u;
  if (wg.x < 24u) { seg = 0u; ub = (wg.x - 0u) * 64u + grp * 8u; }
  var a0_0_0 = 0.0;
  var a0_0_1 = 0.0;
  var a0_0_2 = 0.0;
  var a0_0_3 = 0.0;
  var a0_0_4 = 0.0;
  var a0_0_5 = 0.0;
  var a0_0_6 = 0.0;
  var a0_0_7 = 0.0;
  var a0_0_8 = 0.0;
  var a0_0_9 = 0.0;
  var a0_0_10 = 0.0;
  var a0_0_11 = 0.0;
  var a0_0_12 = 0.0;
  var a0_0_13 = 0.0;
  var a0_0_14 = 0.0;
  var a0_0_15 = 0.0;
  var a0_1_0 = 0.0;
  var a0_1_1 = 0.0;
  var a0_1_2 = 0.0;
  var a0_1_3 = 0.0;
  var a0_1_4 = 0.0;
  var a0_1_5 = 0.0;
  var a0_1_6 = 0.0;
  var a0_1_7 = 0.0;
  var a0_1_8 = 0.0;
  var a0_1_9 = 0.0;
  var a0_1_10 = 0.0;
  var a0_1_11 = 0.0;
  var a0_1_12 = 0.0;
  var a0_1_13 = 0.0;
  var a0_1_14 = 0.0;
  var a0_1_15 = 0.0;
  var a1_0_0 = 0.0;
  var a1_0_1 = 0.0;
  var a1_0_2 = 0.0;
  var a1_0_3 = 0.0;
  var a1_0_4 = 0.0;
  var a1_0_5 = 0.0;
  var a1_0_6 = 0.0;
  var a1_0_7 = 0.0;
  var a1_0_8 = 0.0;
  var a1_0_9 = 0.0;
  var a1_0_10 = 0.0;
  var a1_0_11 = 0.0;
  var a1_0_12 = 0.0;
  var a1_0_13 = 0.0;
  var a1_0_14 = 0.0;
  var a1_0_15 = 0.0;
  var a1_1_0 = 0.0;
  var a1_1_1 = 0.0;
  var a1_1_2 = 0.0;
  var a1_1_3 = 0.0;
  var a1_1_4 = 0.0;
  var a1_1_5 = 0.0;
  var a1_1_6 = 0.0;
  var a1_1_7 = 0.0;
  var a1_1_8 = 0.0;
  var a1_1_9 = 0.0;
  var a1_1_10 = 0.0;
  var a1_1_11 = 0.0;
  var a1_1_12 = 0.0;
  var a1_1_13 = 0.0;
  var a1_1_14 = 0.0;
  var a1_1_15 = 0.0;
  var a2_0_0 = 0.0;
  var a2_0_1 = 0.0;
  var a2_0_2 = 0.0;
  var a2_0_3 = 0.0;
  var a2_0_4 = 0.0;
  var a2_0_5 = 0.0;
  var a2_0_6 = 0.0;
  var a2_0_7 = 0.0;
  var a2_0_8 = 0.0;
  var a2_0_9 = 0.0;
  var a2_0_10 = 0.0;
  var a2_0_11 = 0.0;
  var a2_0_12 = 0.0;
  var a2_0_13 = 0.0;
  var a2_0_14 = 0.0;
  var a2_0_15 = 0.0;
  var a2_1_0 = 0.0;
  var a2_1_1 = 0.0;
  var a2_1_2 = 0.0;
  var a2_1_3 = 0.0;
  var a2_1_4 = 0.0;
  var a2_1_5 = 0.0;
  var a2_1_6 = 0.0;
  var a2_1_7 = 0.0;
  var a2_1_8 = 0.0;
  var a2_1_9 = 0.0;
  var a2_1_10 = 0.0;
  var a2_1_11 = 0.0;
  var a2_1_12 = 0.0;
  var a2_1_13 = 0.0;
  var a2_1_14 = 0.0;
  var a2_1_15 = 0.0;
  var a3_0_0 = 0.0;
  var a3_0_1 = 0.0;
  var a3_0_2 = 0.0;
  var a3_0_3 = 0.0;
  var a3_0_4 = 0.0;
  var a3_0_5 = 0.0;
  var a3_0_6 = 0.0;
  var a3_0_7 = 0.0;
  var a3_0_8 = 0.0;
  var a3_0_9 = 0.0;
  var a3_0_10 = 0.0;
  var a3_0_11 = 0.0;
  var a3_0_12 = 0.0;
  var a3_0_13 = 0.0;
  var a3_0_14 = 0.0;
  var a3_0_15 = 0.0;
  var a3_1_0 = 0.0;
  var a3_1_1 = 0.0;
  var a3_1_2 = 0.0;
  var a3_1_3 = 0.0;
  var a3_1_4 = 0.0;
  var a3_1_5 = 0.0;
  var a3_1_6 = 0.0;
  var a3_1_7 = 0.0;
  var a3_1_8 = 0.0;
  var a3_1_9 = 0.0;
  var a3_1_10 = 0.0;
  var a3_1_11 = 0.0;
  var a3_1_12 = 0.0;
  var a3_1_13 = 0.0;
  var a3_1_14 = 0.0;
  var a3_1_15 = 0.0;
  var a4_0_0 = 0.0;
  var a4_0_1 = 0.0;
  var a4_0_2 = 0.0;
  var a4_0_3 = 0.0;
  var a4_0_4 = 0.0;
  var a4_0_5 = 0.0;
  var a4_0_6 = 0.0;
  var a4_0_7 = 0.0;
  var a4_0_8 = 0.0;
  var a4_0_9 = 0.0;
  var a4_0_10 = 0.0;
  var a4_0_11 = 0.0;
  var a4_0_12 = 0.0;
  var a4_0_13 = 0.0;
  var a4_0_14 = 0.0;
  var a4_0_15 = 0.0;
  var a4_1_0 = 0.0;
  var a4_1_1 = 0.0;
  var a4_1_2 = 0.0;
  var a4_1_3 = 0.0;
  var a4_1_4 = 0.0;
  var a4_1_5 = 0.0;
  var a4_1_6 = 0.0;
  var a4_1_7 = 0.0;
  var a4_1_8 = 0.0;
  var a4_1_9 = 0.0;
  var a4_1_10 = 0.0;
  var a4_1_11 = 0.0;
  var a4_1_12 = 0.0;
  var a4_1_13 = 0.0;
  var a4_1_14 = 0.0;
  var a4_1_15 = 0.0;
  var a5_0_0 = 0.0;
  var a5_0_1 = 0.0;
  var a5_0_2 = 0.0;
  var a5_0_3 = 0.0;
  var a5_0_4 = 0.0;
  var a5_0_5 = 0.0;
  var a5_0_6 = 0.0;
  var a5_0_7 = 0.0;
  var a5_0_8 = 0.0;
  var a5_0_9 = 0.0;
  var a5_0_10 = 0.0;
  var a5_0_11 = 0.0;
  var a5_0_12 = 0.0;
  var a5_0_13 = 0.0;
  var a5_0_14 = 0.0;
  var a5_0_15 = 0.0;
  var a5_1_0 = 0.0;
  var a5_1_1 = 0.0;
  var a5_1_2 = 0.0;
  var a5_1_3 = 0.0;
  var a5_1_4 = 0.0;
  var a5_1_5 = 0.0;
  var a5_1_6 = 0.0;
  var a5_1_7 = 0.0;
  var a5_1_8 = 0.0;
  var a5_1_9 = 0.0;
  var a5_1_10 = 0.0;
  var a5_1_11 = 0.0;
  var a5_1_12 = 0.0;
  var a5_1_13 = 0.0;
  var a5_1_14 = 0.0;
  var a5_1_15 = 0.0;
  var a6_0_0 = 0.0;
  var a6_0_1 = 0.0;
  var a6_0_2 = 0.0;
  var a6_0_3 = 0.0;
  var a6_0_4 = 0.0;
  var a6_0_5 = 0.0;
  var a6_0_6 = 0.0;
  var a6_0_7 = 0.0;
  var a6_0_8 = 0.0;
  var a6_0_9 = 0.0;
  var a6_0_10 = 0.0;
  var a6_0_11 = 0.0;
  var a6_0_12 = 0.0;
  var a6_0_13 = 0.0;
  var a6_0_14 = 0.0;
  var a6_0_15 = 0.0;
  var a6_1_0 = 0.0;
  var a6_1_1 = 0.0;
  var a6_1_2 = 0.0;
  var a6_1_3 = 0.0;
  var a6_1_4 = 0.0;
  var a6_1_5 = 0.0;
  var a6_1_6 = 0.0;
  var a6_1_7 = 0.0;
  var a6_1_8 = 0.0;
  var a6_1_9 = 0.0;
  var a6_1_10 = 0.0;
  var a6_1_11 = 0.0;
  var a6_1_12 = 0.0;
  var a6_1_13 = 0.0;
  var a6_1_14 = 0.0;
  var a6_1_15 = 0.0;
  var a7_0_0 = 0.0;
  var a7_0_1 = 0.0;
  var a7_0_2 = 0.0;
  var a7_0_3 = 0.0;
  var a7_0_4 = 0.0;
  var a7_0_5 = 0.0;
  var a7_0_6 = 0.0;
  var a7_0_7 = 0.0;
  var a7_0_8 = 0.0;
  var a7_0_9 = 0.0;
  var a7_0_10 = 0.0;
  var a7_0_11 = 0.0;
  var a7_0_12 = 0.0;
  var a7_0_13 = 0.0;
  var a7_0_14 = 0.0;
  var a7_0_15 = 0.0;
  var a7_1_0 = 0.0;
  var a7_1_1 = 0.0;
  var a7_1_2 = 0.0;
  var a7_1_3 = 0.0;
  var a7_1_4 = 0.0;
  var a7_1_5 = 0.0;
  var a7_1_6 = 0.0;
  var a7_1_7 = 0.0;
  var a7_1_8 = 0.0;
  var a7_1_9 = 0.0;
  var a7_1_10 = 0.0;
  var a7_1_11 = 0.0;
  var a7_1_12 = 0.0;
  var a7_1_13 = 0.0;
  var a7_1_14 = 0.0;
  var a7_1_15 = 0.0;
  for (var c = 0u; c < 16u; c += 1u) {
    let xm0_0 = x[xr0 + c * 8u + sl + 0u];
    let xm0_1 = x[xr0 + c * 8u + sl + 4u];
    let x0_0 = subgroupBroadcast(xm0_0, 0u);
    let x0_1 = subgroupBroadcast(xm0_0, 1u);
    let x0_2 = subgroupBroadcast(xm0_0, 2u);
    let x0_3 = subgroupBroadcast(xm0_0, 3u);
    let x0_4 = subgroupBroadcast(xm0_1, 0u);
    let x0_5 = subgroupBroadcast(xm0_1, 1u);
    let x0_6 = subgroupBroadcast(xm0_1, 2u);
    let x0_7 = subgroupBroadcast(xm0_1, 3u);
    let xm1_0 = x[xr1 + c * 8u + sl + 0u];
    let xm1_1 = x[xr1 + c * 8u + sl + 4u];
    let x1_0 = subgroupBroadcast(xm1_0, 0u);
    let x1_1 = subgroupBroadcast(xm1_0, 1u);
    let x1_2 = subgroupBroadcast(xm1_0, 2u);
    let x1_3 = subgroupBroadcast(xm1_0, 3u);
    let x1_4 = subgroupBroadcast(xm1_1, 0u);
    let x1_5 = subgroupBroadcast(xm1_1, 1u);
    let x1_6 = subgroupBroadcast(xm1_1, 2u);
    let x1_7 = subgroupBroadcast(xm1_1, 3u);
    let xm2_0 = x[xr2 + c * 8u + sl + 0u];
    let xm2_1 = x[xr2 + c * 8u + sl + 4u];
    let x2_0 = subgroupBroadcast(xm2_0, 0u);
    let x2_1 = subgroupBroadcast(xm2_0, 1u);
    let x2_2 = subgroupBroadcast(xm2_0, 2u);
    let x2_3 = subgroupBroadcast(xm2_0, 3u);
    let x2_4 = subgroupBroadcast(xm2_1, 0u);
    let x2_5 = subgroupBroadcast(xm2_1, 1u);
    let x2_6 = subgroupBroadcast(xm2_1, 2u);
    let x2_7 = subgroupBroadcast(xm2_1, 3u);
    let xm3_0 = x[xr3 + c * 8u + sl + 0u];
    let xm3_1 = x[xr3 + c * 8u + sl + 4u];
    let x3_0 = subgroupBroadcast(xm3_0, 0u);
    let x3_1 = subgroupBroadcast(xm3_0, 1u);
    let x3_2 = subgroupBroadcast(xm3_0, 2u);
    let x3_3 = subgroupBroadcast(xm3_0, 3u);
    let x3_4 = subgroupBroadcast(xm3_1, 0u);
    let x3_5 = subgroupBroadcast(xm3_1, 1u);
    let x3_6 = subgroupBroadcast(xm3_1, 2u);
    let x3_7 = subgroupBroadcast(xm3_1, 3u);
    let xm4_0 = x[xr4 + c * 8u + sl + 0u];
    let xm4_1 = x[xr4 + c * 8u + sl + 4u];
    let x4_0 = subgroupBroadcast(xm4_0, 0u);
    let x4_1 = subgroupBroadcast(xm4_0, 1u);
    let x4_2 = subgroupBroadcast(xm4_0, 2u);
    let x4_3 = subgroupBroadcast(xm4_0, 3u);
    let x4_4 = subgroupBroadcast(xm4_1, 0u);
    let x4_5 = subgroupBroadcast(xm4_1, 1u);
    let x4_6 = subgroupBroadcast(xm4_1, 2u);
    let x4_7 = subgroupBroadcast(xm4_1, 3u);
    let xm5_0 = x[xr5 + c * 8u + sl + 0u];
    let xm5_1 = x[xr5 + c * 8u + sl + 4u];
    let x5_0 = subgroupBroadcast(xm5_0, 0u);
    let x5_1 = subgroupBroadcast(xm5_0, 1u);
    let x5_2 = subgroupBroadcast(xm5_0, 2u);
    let x5_3 = subgroupBroadcast(xm5_0, 3u);
    let x5_4 = subgroupBroadcast(xm5_1, 0u);
    let x5_5 = subgroupBroadcast(xm5_1, 1u);
    let x5_6 = subgroupBroadcast(xm5_1, 2u);
    let x5_7 = subgroupBroadcast(xm5_1, 3u);
    let xm6_0 = x[xr6 + c * 8u + sl + 0u];
    let xm6_1 = x[xr6 + c * 8u + sl + 4u];
    let x6_0 = subgroupBroadcast(xm6_0, 0u);
    let x6_1 = subgroupBroadcast(xm6_0, 1u);
    let x6_2 = subgroupBroadcast(xm6_0, 2u);
    let x6_3 = subgroupBroadcast(xm6_0, 3u);
    let x6_4 = subgroupBroadcast(xm6_1, 0u);
    let x6_5 = subgroupBroadcast(xm6_1, 1u);
    let x6_6 = subgroupBroadcast(xm6_1, 2u);
    let x6_7 = subgroupBroadcast(xm6_1, 3u);
    let xm7_0 = x[xr7 + c * 8u + sl + 0u];
    let xm7_1 = x[xr7 + c * 8u + sl + 4u];
    let x7_0 = subgroupBroadcast(xm7_0, 0u);
    let x7_1 = subgroupBroadcast(xm7_0, 1u);
    let x7_2 = subgroupBroadcast(xm7_0, 2u);
    let x7_3 = subgroupBroadcast(xm7_0, 3u);
    let x7_4 = subgroupBroadcast(xm7_1, 0u);
    let x7_5 = subgroupBroadcast(xm7_1, 1u);
    let x7_6 = subgroupBroadcast(xm7_1, 2u);
    let x7_7 = subgroupBroadcast(xm7_1, 3u);
    let xm8_0 = x[xr8 + c * 8u + sl + 0u];
    let xm8_1 = x[xr8 + c * 8u + sl + 4u];
    let x8_0 = subgroupBroadcast(xm8_0, 0u);
    let x8_1 = subgroupBroadcast(xm8_0, 1u);
    let x8_2 = subgroupBroadcast(xm8_0, 2u);
    let x8_3 = subgroupBroadcast(xm8_0, 3u);
    let x8_4 = subgroupBroadcast(xm8_1, 0u);
    let x8_5 = subgroupBroadcast(xm8_1, 1u);
    let x8_6 = subgroupBroadcast(xm8_1, 2u);
    let x8_7 = subgroupBroadcast(xm8_1, 3u);
    let xm9_0 = x[xr9 + c * 8u + sl + 0u];
    let xm9_1 = x[xr9 + c * 8u + sl + 4u];
    let x9_0 = subgroupBroadcast(xm9_0, 0u);
    let x9_1 = subgroupBroadcast(xm9_0, 1u);
    let x9_2 = subgroupBroadcast(xm9_0, 2u);
    let x9_3 = subgroupBroadcast(xm9_0, 3u);
    let x9_4 = subgroupBroadcast(xm9_1, 0u);
    let x9_5 = subgroupBroadcast(xm9_1, 1u);
    let x9_6 = subgroupBroadcast(xm9_1, 2u);
    let x9_7 = subgroupBroadcast(xm9_1, 3u);
    let xm10_0 = x[xr10 + c * 8u + sl + 0u];
    let xm10_1 = x[xr10 + c * 8u + sl + 4u];
    let x10_0 = subgroupBroadcast(xm10_0, 0u);
    let x10_1 = subgroupBroadcast(xm10_0, 1u);
    let x10_2 = subgroupBroadcast(xm10_0, 2u);
    let x10_3 = subgroupBroadcast(xm10_0, 3u);
    let x10_4 = subgroupBroadcast(xm10_1, 0u);
    let x10_5 = subgroupBroadcast(xm10_1, 1u);
    let x10_6 = subgroupBroadcast(xm10_1, 2u);
    let x10_7 = subgroupBroadcast(xm10_1, 3u);
    let xm11_0 = x[xr11 + c * 8u + sl + 0u];
    let xm11_1 = x[xr11 + c * 8u + sl + 4u];
    let x11_0 = subgroupBroadcast(xm11_0, 0u);
    let x11_1 = subgroupBroadcast(xm11_0, 1u);
    let x11_2 = subgroupBroadcast(xm11_0, 2u);
    let x11_3 = subgroupBroadcast(xm11_0, 3u);
    let x11_4 = subgroupBroadcast(xm11_1, 0u);
    let x11_5 = subgroupBroadcast(xm11_1, 1u);
    let x11_6 = subgroupBroadcast(xm11_1, 2u);
    let x11_7 = subgroupBroadcast(xm11_1, 3u);
    let xm12_0 = x[xr12 + c * 8u + sl + 0u];
    let xm12_1 = x[xr12 + c * 8u + sl + 4u];
    let x12_0 = subgroupBroadcast(xm12_0, 0u);
    let x12_1 = subgroupBroadcast(xm12_0, 1u);
    let x12_2 = subgroupBroadcast(xm12_0, 2u);
    let x12_3 = subgroupBroadcast(xm12_0, 3u);
    let x12_4 = subgroupBroadcast(xm12_1, 0u);
    let x12_5 = subgroupBroadcast(xm12_1, 1u);
    let x12_6 = subgroupBroadcast(xm12_1, 2u);
    let x12_7 = subgroupBroadcast(xm12_1, 3u);
    let xm13_0 = x[xr13 + c * 8u + sl + 0u];
    let xm13_1 = x[xr13 + c * 8u + sl + 4u];
    let x13_0 = subgroupBroadcast(xm13_0, 0u);
    let x13_1 = subgroupBroadcast(xm13_0, 1u);
    let x13_2 = subgroupBroadcast(xm13_0, 2u);
    let x13_3 = subgroupBroadcast(xm13_0, 3u);
    let x13_4 = subgroupBroadcast(xm13_1, 0u);
    let x13_5 = subgroupBroadcast(xm13_1, 1u);
    let x13_6 = subgroupBroadcast(xm13_1, 2u);
    let x13_7 = subgroupBroadcast(xm13_1, 3u);
    let xm14_0 = x[xr14 + c * 8u + sl + 0u];
    let xm14_1 = x[xr14 + c * 8u + sl + 4u];
    let x14_0 = subgroupBroadcast(xm14_0, 0u);
    let x14_1 = subgroupBroadcast(xm14_0, 1u);
    let x14_2 = subgroupBroadcast(xm14_0, 2u);
    let x14_3 = subgroupBroadcast(xm14_0, 3u);
    let x14_4 = subgroupBroadcast(xm14_1, 0u);
    let x14_5 = subgroupBroadcast(xm14_1, 1u);
    let x14_6 = subgroupBroadcast(xm14_1, 2u);
    let x14_7 = subgroupBroadcast(xm14_1, 3u);
    let xm15_0 = x[xr15 + c * 8u + sl + 0u];
    let xm15_1 = x[xr15 + c * 8u + sl + 4u];
    let x15_0 = subgroupBroadcast(xm15_0, 0u);
    let x15_1 = subgroupBroadcast(xm15_0, 1u);
    let x15_2 = subgroupBroadcast(xm15_0, 2u);
    let x15_3 = subgroupBroadcast(xm15_0, 3u);
    let x15_4 = subgroupBroadcast(xm15_1, 0u);
    let x15_5 = subgroupBroadcast(xm15_1, 1u);
    let x15_6 = subgroupBroadcast(xm15_1, 2u);
    let x15_7 = subgroupBroadcast(xm15_1, 3u);
    let xs0 = dot(x0_0 + x0_1 + x0_2 + x0_3 + x0_4 + x0_5 + x0_6 + x0_7, vec4<f32>(1.0));
    let xs1 = dot(x1_0 + x1_1 + x1_2 + x1_3 + x1_4 + x1_5 + x1_6 + x1_7, vec4<f32>(1.0));
    let xs2 = dot(x2_0 + x2_1 + x2_2 + x2_3 + x2_4 + x2_5 + x2_6 + x2_7, vec4<f32>(1.0));
    let xs3 = dot(x3_0 + x3_1 + x3_2 + x3_3 + x3_4 + x3_5 + x3_6 + x3_7, vec4<f32>(1.0));
    let xs4 = dot(x4_0 + x4_1 + x4_2 + x4_3 + x4_4 + x4_5 + x4_6 + x4_7, vec4<f32>(1.0));
    let xs5 = dot(x5_0 + x5_1 + x5_2 + x5_3 + x5_4 + x5_5 + x5_6 + x5_7, vec4<f32>(1.0));
    let xs6 = dot(x6_0 + x6_1 + x6_2 + x6_3 + x6_4 + x6_5 + x6_6 + x6_7, vec4<f32>(1.0));
    let xs7 = dot(x7_0 + x7_1 + x7_2 + x7_3 + x7_4 + x7_5 + x7_6 + x7_7, vec4<f32>(1.0));
    let xs8 = dot(x8_0 + x8_1 + x8_2 + x8_3 + x8_4 + x8_5 + x8_6 + x8_7, vec4<f32>(1.0));
    let xs9 = dot(x9_0 + x9_1 + x9_2 + x9_3 + x9_4 + x9_5 + x9_6 + x9_7, vec4<f32>(1.0));
    let xs10 = dot(x10_0 + x10_1 + x10_2 + x10_3 + x10_4 + x10_5 + x10_6 + x10_7, vec4<f32>(1.0));
    let xs11 = dot(x11_0 + x11_1 + x11_2 + x11_3 + x11_4 + x11_5 + x11_6 + x11_7, vec4<f32>(1.0));
    let xs12 = dot(x12_0 + x12_1 + x12_2 + x12_3 + x12_4 + x12_5 + x12_6 + x12_7, vec4<f32>(1.0));
    let xs13 = dot(x13_0 + x13_1 + x13_2 + x13_3 + x13_4 + x13_5 + x13_6 + x13_7, vec4<f32>(1.0));
    let xs14 = dot(x14_0 + x14_1 + x14_2 + x14_3 + x14_4 + x14_5 + x14_6 + x14_7, vec4<f32>(1.0));
    let xs15 = dot(x15_0 + x15_1 + x15_2 + x15_3 + x15_4 + x15_5 + x15_6 + x15_7, vec4<f32>(1.0));
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
          let p0_0_s1 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x1_0) + dot(p0_0_lo1, x1_1) + dot(p0_0_lo2, x1_2) + dot(p0_0_lo3, x1_3) + dot(p0_0_hi0, x1_4) + dot(p0_0_hi1, x1_5) + dot(p0_0_hi2, x1_6) + dot(p0_0_hi3, x1_7))) - p0_0_mm * xs1;
          let p0_0_s2 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x2_0) + dot(p0_0_lo1, x2_1) + dot(p0_0_lo2, x2_2) + dot(p0_0_lo3, x2_3) + dot(p0_0_hi0, x2_4) + dot(p0_0_hi1, x2_5) + dot(p0_0_hi2, x2_6) + dot(p0_0_hi3, x2_7))) - p0_0_mm * xs2;
          let p0_0_s3 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x3_0) + dot(p0_0_lo1, x3_1) + dot(p0_0_lo2, x3_2) + dot(p0_0_lo3, x3_3) + dot(p0_0_hi0, x3_4) + dot(p0_0_hi1, x3_5) + dot(p0_0_hi2, x3_6) + dot(p0_0_hi3, x3_7))) - p0_0_mm * xs3;
          let p0_0_s4 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x4_0) + dot(p0_0_lo1, x4_1) + dot(p0_0_lo2, x4_2) + dot(p0_0_lo3, x4_3) + dot(p0_0_hi0, x4_4) + dot(p0_0_hi1, x4_5) + dot(p0_0_hi2, x4_6) + dot(p0_0_hi3, x4_7))) - p0_0_mm * xs4;
          let p0_0_s5 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x5_0) + dot(p0_0_lo1, x5_1) + dot(p0_0_lo2, x5_2) + dot(p0_0_lo3, x5_3) + dot(p0_0_hi0, x5_4) + dot(p0_0_hi1, x5_5) + dot(p0_0_hi2, x5_6) + dot(p0_0_hi3, x5_7))) - p0_0_mm * xs5;
          let p0_0_s6 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x6_0) + dot(p0_0_lo1, x6_1) + dot(p0_0_lo2, x6_2) + dot(p0_0_lo3, x6_3) + dot(p0_0_hi0, x6_4) + dot(p0_0_hi1, x6_5) + dot(p0_0_hi2, x6_6) + dot(p0_0_hi3, x6_7))) - p0_0_mm * xs6;
          let p0_0_s7 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x7_0) + dot(p0_0_lo1, x7_1) + dot(p0_0_lo2, x7_2) + dot(p0_0_lo3, x7_3) + dot(p0_0_hi0, x7_4) + dot(p0_0_hi1, x7_5) + dot(p0_0_hi2, x7_6) + dot(p0_0_hi3, x7_7))) - p0_0_mm * xs7;
          let p0_0_s8 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x8_0) + dot(p0_0_lo1, x8_1) + dot(p0_0_lo2, x8_2) + dot(p0_0_lo3, x8_3) + dot(p0_0_hi0, x8_4) + dot(p0_0_hi1, x8_5) + dot(p0_0_hi2, x8_6) + dot(p0_0_hi3, x8_7))) - p0_0_mm * xs8;
          let p0_0_s9 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x9_0) + dot(p0_0_lo1, x9_1) + dot(p0_0_lo2, x9_2) + dot(p0_0_lo3, x9_3) + dot(p0_0_hi0, x9_4) + dot(p0_0_hi1, x9_5) + dot(p0_0_hi2, x9_6) + dot(p0_0_hi3, x9_7))) - p0_0_mm * xs9;
          let p0_0_s10 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x10_0) + dot(p0_0_lo1, x10_1) + dot(p0_0_lo2, x10_2) + dot(p0_0_lo3, x10_3) + dot(p0_0_hi0, x10_4) + dot(p0_0_hi1, x10_5) + dot(p0_0_hi2, x10_6) + dot(p0_0_hi3, x10_7))) - p0_0_mm * xs10;
          let p0_0_s11 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x11_0) + dot(p0_0_lo1, x11_1) + dot(p0_0_lo2, x11_2) + dot(p0_0_lo3, x11_3) + dot(p0_0_hi0, x11_4) + dot(p0_0_hi1, x11_5) + dot(p0_0_hi2, x11_6) + dot(p0_0_hi3, x11_7))) - p0_0_mm * xs11;
          let p0_0_s12 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x12_0) + dot(p0_0_lo1, x12_1) + dot(p0_0_lo2, x12_2) + dot(p0_0_lo3, x12_3) + dot(p0_0_hi0, x12_4) + dot(p0_0_hi1, x12_5) + dot(p0_0_hi2, x12_6) + dot(p0_0_hi3, x12_7))) - p0_0_mm * xs12;
          let p0_0_s13 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x13_0) + dot(p0_0_lo1, x13_1) + dot(p0_0_lo2, x13_2) + dot(p0_0_lo3, x13_3) + dot(p0_0_hi0, x13_4) + dot(p0_0_hi1, x13_5) + dot(p0_0_hi2, x13_6) + dot(p0_0_hi3, x13_7))) - p0_0_mm * xs13;
          let p0_0_s14 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x14_0) + dot(p0_0_lo1, x14_1) + dot(p0_0_lo2, x14_2) + dot(p0_0_lo3, x14_3) + dot(p0_0_hi0, x14_4) + dot(p0_0_hi1, x14_5) + dot(p0_0_hi2, x14_6) + dot(p0_0_hi3, x14_7))) - p0_0_mm * xs14;
          let p0_0_s15 = p0_0_ds * (255.0 * (dot(p0_0_lo0, x15_0) + dot(p0_0_lo1, x15_1) + dot(p0_0_lo2, x15_2) + dot(p0_0_lo3, x15_3) + dot(p0_0_hi0, x15_4) + dot(p0_0_hi1, x15_5) + dot(p0_0_hi2, x15_6) + dot(p0_0_hi3, x15_7))) - p0_0_mm * xs15;
          a0_0_0 += p0_0_s0;
          a0_0_1 += p0_0_s1;
          a0_0_2 += p0_0_s2;
          a0_0_3 += p0_0_s3;
          a0_0_4 += p0_0_s4;
          a0_0_5 += p0_0_s5;
          a0_0_6 += p0_0_s6;
          a0_0_7 += p0_0_s7;
          a0_0_8 += p0_0_s8;
          a0_0_9 += p0_0_s9;
          a0_0_10 += p0_0_s10;
          a0_0_11 += p0_0_s11;
          a0_0_12 += p0_0_s12;
          a0_0_13 += p0_0_s13;
          a0_0_14 += p0_0_s14;
          a0_0_15 += p0_0_s15;
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
          let p0_1_s1 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x1_0) + dot(p0_1_lo1, x1_1) + dot(p0_1_lo2, x1_2) + dot(p0_1_lo3, x1_3) + dot(p0_1_hi0, x1_4) + dot(p0_1_hi1, x1_5) + dot(p0_1_hi2, x1_6) + dot(p0_1_hi3, x1_7))) - p0_1_mm * xs1;
          let p0_1_s2 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x2_0) + dot(p0_1_lo1, x2_1) + dot(p0_1_lo2, x2_2) + dot(p0_1_lo3, x2_3) + dot(p0_1_hi0, x2_4) + dot(p0_1_hi1, x2_5) + dot(p0_1_hi2, x2_6) + dot(p0_1_hi3, x2_7))) - p0_1_mm * xs2;
          let p0_1_s3 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x3_0) + dot(p0_1_lo1, x3_1) + dot(p0_1_lo2, x3_2) + dot(p0_1_lo3, x3_3) + dot(p0_1_hi0, x3_4) + dot(p0_1_hi1, x3_5) + dot(p0_1_hi2, x3_6) + dot(p0_1_hi3, x3_7))) - p0_1_mm * xs3;
          let p0_1_s4 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x4_0) + dot(p0_1_lo1, x4_1) + dot(p0_1_lo2, x4_2) + dot(p0_1_lo3, x4_3) + dot(p0_1_hi0, x4_4) + dot(p0_1_hi1, x4_5) + dot(p0_1_hi2, x4_6) + dot(p0_1_hi3, x4_7))) - p0_1_mm * xs4;
          let p0_1_s5 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x5_0) + dot(p0_1_lo1, x5_1) + dot(p0_1_lo2, x5_2) + dot(p0_1_lo3, x5_3) + dot(p0_1_hi0, x5_4) + dot(p0_1_hi1, x5_5) + dot(p0_1_hi2, x5_6) + dot(p0_1_hi3, x5_7))) - p0_1_mm * xs5;
          let p0_1_s6 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x6_0) + dot(p0_1_lo1, x6_1) + dot(p0_1_lo2, x6_2) + dot(p0_1_lo3, x6_3) + dot(p0_1_hi0, x6_4) + dot(p0_1_hi1, x6_5) + dot(p0_1_hi2, x6_6) + dot(p0_1_hi3, x6_7))) - p0_1_mm * xs6;
          let p0_1_s7 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x7_0) + dot(p0_1_lo1, x7_1) + dot(p0_1_lo2, x7_2) + dot(p0_1_lo3, x7_3) + dot(p0_1_hi0, x7_4) + dot(p0_1_hi1, x7_5) + dot(p0_1_hi2, x7_6) + dot(p0_1_hi3, x7_7))) - p0_1_mm * xs7;
          let p0_1_s8 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x8_0) + dot(p0_1_lo1, x8_1) + dot(p0_1_lo2, x8_2) + dot(p0_1_lo3, x8_3) + dot(p0_1_hi0, x8_4) + dot(p0_1_hi1, x8_5) + dot(p0_1_hi2, x8_6) + dot(p0_1_hi3, x8_7))) - p0_1_mm * xs8;
          let p0_1_s9 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x9_0) + dot(p0_1_lo1, x9_1) + dot(p0_1_lo2, x9_2) + dot(p0_1_lo3, x9_3) + dot(p0_1_hi0, x9_4) + dot(p0_1_hi1, x9_5) + dot(p0_1_hi2, x9_6) + dot(p0_1_hi3, x9_7))) - p0_1_mm * xs9;
          let p0_1_s10 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x10_0) + dot(p0_1_lo1, x10_1) + dot(p0_1_lo2, x10_2) + dot(p0_1_lo3, x10_3) + dot(p0_1_hi0, x10_4) + dot(p0_1_hi1, x10_5) + dot(p0_1_hi2, x10_6) + dot(p0_1_hi3, x10_7))) - p0_1_mm * xs10;
          let p0_1_s11 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x11_0) + dot(p0_1_lo1, x11_1) + dot(p0_1_lo2, x11_2) + dot(p0_1_lo3, x11_3) + dot(p0_1_hi0, x11_4) + dot(p0_1_hi1, x11_5) + dot(p0_1_hi2, x11_6) + dot(p0_1_hi3, x11_7))) - p0_1_mm * xs11;
          let p0_1_s12 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x12_0) + dot(p0_1_lo1, x12_1) + dot(p0_1_lo2, x12_2) + dot(p0_1_lo3, x12_3) + dot(p0_1_hi0, x12_4) + dot(p0_1_hi1, x12_5) + dot(p0_1_hi2, x12_6) + dot(p0_1_hi3, x12_7))) - p0_1_mm * xs12;
          let p0_1_s13 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x13_0) + dot(p0_1_lo1, x13_1) + dot(p0_1_lo2, x13_2) + dot(p0_1_lo3, x13_3) + dot(p0_1_hi0, x13_4) + dot(p0_1_hi1, x13_5) + dot(p0_1_hi2, x13_6) + dot(p0_1_hi3, x13_7))) - p0_1_mm * xs13;
          let p0_1_s14 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x14_0) + dot(p0_1_lo1, x14_1) + dot(p0_1_lo2, x14_2) + dot(p0_1_lo3, x14_3) + dot(p0_1_hi0, x14_4) + dot(p0_1_hi1, x14_5) + dot(p0_1_hi2, x14_6) + dot(p0_1_hi3, x14_7))) - p0_1_mm * xs14;
          let p0_1_s15 = p0_1_ds * (255.0 * (dot(p0_1_lo0, x15_0) + dot(p0_1_lo1, x15_1) + dot(p0_1_lo2, x15_2) + dot(p0_1_lo3, x15_3) + dot(p0_1_hi0, x15_4) + dot(p0_1_hi1, x15_5) + dot(p0_1_hi2, x15_6) + dot(p0_1_hi3, x15_7))) - p0_1_mm * xs15;
          a0_1_0 += p0_1_s0;
          a0_1_1 += p0_1_s1;
          a0_1_2 += p0_1_s2;
          a0_1_3 += p0_1_s3;
          a0_1_4 += p0_1_s4;
          a0_1_5 += p0_1_s5;
          a0_1_6 += p0_1_s6;
          a0_1_7 += p0_1_s7;
          a0_1_8 += p0_1_s8;
          a0_1_9 += p0_1_s9;
          a0_1_10 += p0_1_s10;
          a0_1_11 += p0_1_s11;
          a0_1_12 += p0_1_s12;
          a0_1_13 += p0_1_s13;
          a0_1_14 += p0_1_s14;
          a0_1_15 += p0_1_s15;
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
          let p1_0_s1 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x1_0) + dot(p1_0_lo1, x1_1) + dot(p1_0_lo2, x1_2) + dot(p1_0_lo3, x1_3) + dot(p1_0_hi0, x1_4) + dot(p1_0_hi1, x1_5) + dot(p1_0_hi2, x1_6) + dot(p1_0_hi3, x1_7))) - p1_0_mm * xs1;
          let p1_0_s2 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x2_0) + dot(p1_0_lo1, x2_1) + dot(p1_0_lo2, x2_2) + dot(p1_0_lo3, x2_3) + dot(p1_0_hi0, x2_4) + dot(p1_0_hi1, x2_5) + dot(p1_0_hi2, x2_6) + dot(p1_0_hi3, x2_7))) - p1_0_mm * xs2;
          let p1_0_s3 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x3_0) + dot(p1_0_lo1, x3_1) + dot(p1_0_lo2, x3_2) + dot(p1_0_lo3, x3_3) + dot(p1_0_hi0, x3_4) + dot(p1_0_hi1, x3_5) + dot(p1_0_hi2, x3_6) + dot(p1_0_hi3, x3_7))) - p1_0_mm * xs3;
          let p1_0_s4 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x4_0) + dot(p1_0_lo1, x4_1) + dot(p1_0_lo2, x4_2) + dot(p1_0_lo3, x4_3) + dot(p1_0_hi0, x4_4) + dot(p1_0_hi1, x4_5) + dot(p1_0_hi2, x4_6) + dot(p1_0_hi3, x4_7))) - p1_0_mm * xs4;
          let p1_0_s5 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x5_0) + dot(p1_0_lo1, x5_1) + dot(p1_0_lo2, x5_2) + dot(p1_0_lo3, x5_3) + dot(p1_0_hi0, x5_4) + dot(p1_0_hi1, x5_5) + dot(p1_0_hi2, x5_6) + dot(p1_0_hi3, x5_7))) - p1_0_mm * xs5;
          let p1_0_s6 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x6_0) + dot(p1_0_lo1, x6_1) + dot(p1_0_lo2, x6_2) + dot(p1_0_lo3, x6_3) + dot(p1_0_hi0, x6_4) + dot(p1_0_hi1, x6_5) + dot(p1_0_hi2, x6_6) + dot(p1_0_hi3, x6_7))) - p1_0_mm * xs6;
          let p1_0_s7 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x7_0) + dot(p1_0_lo1, x7_1) + dot(p1_0_lo2, x7_2) + dot(p1_0_lo3, x7_3) + dot(p1_0_hi0, x7_4) + dot(p1_0_hi1, x7_5) + dot(p1_0_hi2, x7_6) + dot(p1_0_hi3, x7_7))) - p1_0_mm * xs7;
          let p1_0_s8 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x8_0) + dot(p1_0_lo1, x8_1) + dot(p1_0_lo2, x8_2) + dot(p1_0_lo3, x8_3) + dot(p1_0_hi0, x8_4) + dot(p1_0_hi1, x8_5) + dot(p1_0_hi2, x8_6) + dot(p1_0_hi3, x8_7))) - p1_0_mm * xs8;
          let p1_0_s9 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x9_0) + dot(p1_0_lo1, x9_1) + dot(p1_0_lo2, x9_2) + dot(p1_0_lo3, x9_3) + dot(p1_0_hi0, x9_4) + dot(p1_0_hi1, x9_5) + dot(p1_0_hi2, x9_6) + dot(p1_0_hi3, x9_7))) - p1_0_mm * xs9;
          let p1_0_s10 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x10_0) + dot(p1_0_lo1, x10_1) + dot(p1_0_lo2, x10_2) + dot(p1_0_lo3, x10_3) + dot(p1_0_hi0, x10_4) + dot(p1_0_hi1, x10_5) + dot(p1_0_hi2, x10_6) + dot(p1_0_hi3, x10_7))) - p1_0_mm * xs10;
          let p1_0_s11 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x11_0) + dot(p1_0_lo1, x11_1) + dot(p1_0_lo2, x11_2) + dot(p1_0_lo3, x11_3) + dot(p1_0_hi0, x11_4) + dot(p1_0_hi1, x11_5) + dot(p1_0_hi2, x11_6) + dot(p1_0_hi3, x11_7))) - p1_0_mm * xs11;
          let p1_0_s12 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x12_0) + dot(p1_0_lo1, x12_1) + dot(p1_0_lo2, x12_2) + dot(p1_0_lo3, x12_3) + dot(p1_0_hi0, x12_4) + dot(p1_0_hi1, x12_5) + dot(p1_0_hi2, x12_6) + dot(p1_0_hi3, x12_7))) - p1_0_mm * xs12;
          let p1_0_s13 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x13_0) + dot(p1_0_lo1, x13_1) + dot(p1_0_lo2, x13_2) + dot(p1_0_lo3, x13_3) + dot(p1_0_hi0, x13_4) + dot(p1_0_hi1, x13_5) + dot(p1_0_hi2, x13_6) + dot(p1_0_hi3, x13_7))) - p1_0_mm * xs13;
          let p1_0_s14 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x14_0) + dot(p1_0_lo1, x14_1) + dot(p1_0_lo2, x14_2) + dot(p1_0_lo3, x14_3) + dot(p1_0_hi0, x14_4) + dot(p1_0_hi1, x14_5) + dot(p1_0_hi2, x14_6) + dot(p1_0_hi3, x14_7))) - p1_0_mm * xs14;
          let p1_0_s15 = p1_0_ds * (255.0 * (dot(p1_0_lo0, x15_0) + dot(p1_0_lo1, x15_1) + dot(p1_0_lo2, x15_2) + dot(p1_0_lo3, x15_3) + dot(p1_0_hi0, x15_4) + dot(p1_0_hi1, x15_5) + dot(p1_0_hi2, x15_6) + dot(p1_0_hi3, x15_7))) - p1_0_mm * xs15;
          a1_0_0 += p1_0_s0;
          a1_0_1 += p1_0_s1;
          a1_0_2 += p1_0_s2;
          a1_0_3 += p1_0_s3;
          a1_0_4 += p1_0_s4;
          a1_0_5 += p1_0_s5;
          a1_0_6 += p1_0_s6;
          a1_0_7 += p1_0_s7;
          a1_0_8 += p1_0_s8;
          a1_0_9 += p1_0_s9;
          a1_0_10 += p1_0_s10;
          a1_0_11 += p1_0_s11;
          a1_0_12 += p1_0_s12;
          a1_0_13 += p1_0_s13;
          a1_0_14 += p1_0_s14;
          a1_0_15 += p1_0_s15;
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
          let p1_1_s1 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x1_0) + dot(p1_1_lo1, x1_1) + dot(p1_1_lo2, x1_2) + dot(p1_1_lo3, x1_3) + dot(p1_1_hi0, x1_4) + dot(p1_1_hi1, x1_5) + dot(p1_1_hi2, x1_6) + dot(p1_1_hi3, x1_7))) - p1_1_mm * xs1;
          let p1_1_s2 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x2_0) + dot(p1_1_lo1, x2_1) + dot(p1_1_lo2, x2_2) + dot(p1_1_lo3, x2_3) + dot(p1_1_hi0, x2_4) + dot(p1_1_hi1, x2_5) + dot(p1_1_hi2, x2_6) + dot(p1_1_hi3, x2_7))) - p1_1_mm * xs2;
          let p1_1_s3 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x3_0) + dot(p1_1_lo1, x3_1) + dot(p1_1_lo2, x3_2) + dot(p1_1_lo3, x3_3) + dot(p1_1_hi0, x3_4) + dot(p1_1_hi1, x3_5) + dot(p1_1_hi2, x3_6) + dot(p1_1_hi3, x3_7))) - p1_1_mm * xs3;
          let p1_1_s4 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x4_0) + dot(p1_1_lo1, x4_1) + dot(p1_1_lo2, x4_2) + dot(p1_1_lo3, x4_3) + dot(p1_1_hi0, x4_4) + dot(p1_1_hi1, x4_5) + dot(p1_1_hi2, x4_6) + dot(p1_1_hi3, x4_7))) - p1_1_mm * xs4;
          let p1_1_s5 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x5_0) + dot(p1_1_lo1, x5_1) + dot(p1_1_lo2, x5_2) + dot(p1_1_lo3, x5_3) + dot(p1_1_hi0, x5_4) + dot(p1_1_hi1, x5_5) + dot(p1_1_hi2, x5_6) + dot(p1_1_hi3, x5_7))) - p1_1_mm * xs5;
          let p1_1_s6 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x6_0) + dot(p1_1_lo1, x6_1) + dot(p1_1_lo2, x6_2) + dot(p1_1_lo3, x6_3) + dot(p1_1_hi0, x6_4) + dot(p1_1_hi1, x6_5) + dot(p1_1_hi2, x6_6) + dot(p1_1_hi3, x6_7))) - p1_1_mm * xs6;
          let p1_1_s7 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x7_0) + dot(p1_1_lo1, x7_1) + dot(p1_1_lo2, x7_2) + dot(p1_1_lo3, x7_3) + dot(p1_1_hi0, x7_4) + dot(p1_1_hi1, x7_5) + dot(p1_1_hi2, x7_6) + dot(p1_1_hi3, x7_7))) - p1_1_mm * xs7;
          let p1_1_s8 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x8_0) + dot(p1_1_lo1, x8_1) + dot(p1_1_lo2, x8_2) + dot(p1_1_lo3, x8_3) + dot(p1_1_hi0, x8_4) + dot(p1_1_hi1, x8_5) + dot(p1_1_hi2, x8_6) + dot(p1_1_hi3, x8_7))) - p1_1_mm * xs8;
          let p1_1_s9 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x9_0) + dot(p1_1_lo1, x9_1) + dot(p1_1_lo2, x9_2) + dot(p1_1_lo3, x9_3) + dot(p1_1_hi0, x9_4) + dot(p1_1_hi1, x9_5) + dot(p1_1_hi2, x9_6) + dot(p1_1_hi3, x9_7))) - p1_1_mm * xs9;
          let p1_1_s10 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x10_0) + dot(p1_1_lo1, x10_1) + dot(p1_1_lo2, x10_2) + dot(p1_1_lo3, x10_3) + dot(p1_1_hi0, x10_4) + dot(p1_1_hi1, x10_5) + dot(p1_1_hi2, x10_6) + dot(p1_1_hi3, x10_7))) - p1_1_mm * xs10;
          let p1_1_s11 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x11_0) + dot(p1_1_lo1, x11_1) + dot(p1_1_lo2, x11_2) + dot(p1_1_lo3, x11_3) + dot(p1_1_hi0, x11_4) + dot(p1_1_hi1, x11_5) + dot(p1_1_hi2, x11_6) + dot(p1_1_hi3, x11_7))) - p1_1_mm * xs11;
          let p1_1_s12 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x12_0) + dot(p1_1_lo1, x12_1) + dot(p1_1_lo2, x12_2) + dot(p1_1_lo3, x12_3) + dot(p1_1_hi0, x12_4) + dot(p1_1_hi1, x12_5) + dot(p1_1_hi2, x12_6) + dot(p1_1_hi3, x12_7))) - p1_1_mm * xs12;
          let p1_1_s13 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x13_0) + dot(p1_1_lo1, x13_1) + dot(p1_1_lo2, x13_2) + dot(p1_1_lo3, x13_3) + dot(p1_1_hi0, x13_4) + dot(p1_1_hi1, x13_5) + dot(p1_1_hi2, x13_6) + dot(p1_1_hi3, x13_7))) - p1_1_mm * xs13;
          let p1_1_s14 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x14_0) + dot(p1_1_lo1, x14_1) + dot(p1_1_lo2, x14_2) + dot(p1_1_lo3, x14_3) + dot(p1_1_hi0, x14_4) + dot(p1_1_hi1, x14_5) + dot(p1_1_hi2, x14_6) + dot(p1_1_hi3, x14_7))) - p1_1_mm * xs14;
          let p1_1_s15 = p1_1_ds * (255.0 * (dot(p1_1_lo0, x15_0) + dot(p1_1_lo1, x15_1) + dot(p1_1_lo2, x15_2) + dot(p1_1_lo3, x15_3) + dot(p1_1_hi0, x15_4) + dot(p1_1_hi1, x15_5) + dot(p1_1_hi2, x15_6) + dot(p1_1_hi3, x15_7))) - p1_1_mm * xs15;
          a1_1_0 += p1_1_s0;
          a1_1_1 += p1_1_s1;
          a1_1_2 += p1_1_s2;
          a1_1_3 += p1_1_s3;
          a1_1_4 += p1_1_s4;
          a1_1_5 += p1_1_s5;
          a1_1_6 += p1_1_s6;
          a1_1_7 += p1_1_s7;
          a1_1_8 += p1_1_s8;
          a1_1_9 += p1_1_s9;
          a1_1_10 += p1_1_s10;
          a1_1_11 += p1_1_s11;
          a1_1_12 += p1_1_s12;
          a1_1_13 += p1_1_s13;
          a1_1_14 += p1_1_s14;
          a1_1_15 += p1_1_s15;
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
          let p2_0_s1 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x1_0) + dot(p2_0_lo1, x1_1) + dot(p2_0_lo2, x1_2) + dot(p2_0_lo3, x1_3) + dot(p2_0_hi0, x1_4) + dot(p2_0_hi1, x1_5) + dot(p2_0_hi2, x1_6) + dot(p2_0_hi3, x1_7))) - p2_0_mm * xs1;
          let p2_0_s2 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x2_0) + dot(p2_0_lo1, x2_1) + dot(p2_0_lo2, x2_2) + dot(p2_0_lo3, x2_3) + dot(p2_0_hi0, x2_4) + dot(p2_0_hi1, x2_5) + dot(p2_0_hi2, x2_6) + dot(p2_0_hi3, x2_7))) - p2_0_mm * xs2;
          let p2_0_s3 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x3_0) + dot(p2_0_lo1, x3_1) + dot(p2_0_lo2, x3_2) + dot(p2_0_lo3, x3_3) + dot(p2_0_hi0, x3_4) + dot(p2_0_hi1, x3_5) + dot(p2_0_hi2, x3_6) + dot(p2_0_hi3, x3_7))) - p2_0_mm * xs3;
          let p2_0_s4 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x4_0) + dot(p2_0_lo1, x4_1) + dot(p2_0_lo2, x4_2) + dot(p2_0_lo3, x4_3) + dot(p2_0_hi0, x4_4) + dot(p2_0_hi1, x4_5) + dot(p2_0_hi2, x4_6) + dot(p2_0_hi3, x4_7))) - p2_0_mm * xs4;
          let p2_0_s5 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x5_0) + dot(p2_0_lo1, x5_1) + dot(p2_0_lo2, x5_2) + dot(p2_0_lo3, x5_3) + dot(p2_0_hi0, x5_4) + dot(p2_0_hi1, x5_5) + dot(p2_0_hi2, x5_6) + dot(p2_0_hi3, x5_7))) - p2_0_mm * xs5;
          let p2_0_s6 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x6_0) + dot(p2_0_lo1, x6_1) + dot(p2_0_lo2, x6_2) + dot(p2_0_lo3, x6_3) + dot(p2_0_hi0, x6_4) + dot(p2_0_hi1, x6_5) + dot(p2_0_hi2, x6_6) + dot(p2_0_hi3, x6_7))) - p2_0_mm * xs6;
          let p2_0_s7 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x7_0) + dot(p2_0_lo1, x7_1) + dot(p2_0_lo2, x7_2) + dot(p2_0_lo3, x7_3) + dot(p2_0_hi0, x7_4) + dot(p2_0_hi1, x7_5) + dot(p2_0_hi2, x7_6) + dot(p2_0_hi3, x7_7))) - p2_0_mm * xs7;
          let p2_0_s8 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x8_0) + dot(p2_0_lo1, x8_1) + dot(p2_0_lo2, x8_2) + dot(p2_0_lo3, x8_3) + dot(p2_0_hi0, x8_4) + dot(p2_0_hi1, x8_5) + dot(p2_0_hi2, x8_6) + dot(p2_0_hi3, x8_7))) - p2_0_mm * xs8;
          let p2_0_s9 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x9_0) + dot(p2_0_lo1, x9_1) + dot(p2_0_lo2, x9_2) + dot(p2_0_lo3, x9_3) + dot(p2_0_hi0, x9_4) + dot(p2_0_hi1, x9_5) + dot(p2_0_hi2, x9_6) + dot(p2_0_hi3, x9_7))) - p2_0_mm * xs9;
          let p2_0_s10 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x10_0) + dot(p2_0_lo1, x10_1) + dot(p2_0_lo2, x10_2) + dot(p2_0_lo3, x10_3) + dot(p2_0_hi0, x10_4) + dot(p2_0_hi1, x10_5) + dot(p2_0_hi2, x10_6) + dot(p2_0_hi3, x10_7))) - p2_0_mm * xs10;
          let p2_0_s11 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x11_0) + dot(p2_0_lo1, x11_1) + dot(p2_0_lo2, x11_2) + dot(p2_0_lo3, x11_3) + dot(p2_0_hi0, x11_4) + dot(p2_0_hi1, x11_5) + dot(p2_0_hi2, x11_6) + dot(p2_0_hi3, x11_7))) - p2_0_mm * xs11;
          let p2_0_s12 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x12_0) + dot(p2_0_lo1, x12_1) + dot(p2_0_lo2, x12_2) + dot(p2_0_lo3, x12_3) + dot(p2_0_hi0, x12_4) + dot(p2_0_hi1, x12_5) + dot(p2_0_hi2, x12_6) + dot(p2_0_hi3, x12_7))) - p2_0_mm * xs12;
          let p2_0_s13 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x13_0) + dot(p2_0_lo1, x13_1) + dot(p2_0_lo2, x13_2) + dot(p2_0_lo3, x13_3) + dot(p2_0_hi0, x13_4) + dot(p2_0_hi1, x13_5) + dot(p2_0_hi2, x13_6) + dot(p2_0_hi3, x13_7))) - p2_0_mm * xs13;
          let p2_0_s14 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x14_0) + dot(p2_0_lo1, x14_1) + dot(p2_0_lo2, x14_2) + dot(p2_0_lo3, x14_3) + dot(p2_0_hi0, x14_4) + dot(p2_0_hi1, x14_5) + dot(p2_0_hi2, x14_6) + dot(p2_0_hi3, x14_7))) - p2_0_mm * xs14;
          let p2_0_s15 = p2_0_ds * (255.0 * (dot(p2_0_lo0, x15_0) + dot(p2_0_lo1, x15_1) + dot(p2_0_lo2, x15_2) + dot(p2_0_lo3, x15_3) + dot(p2_0_hi0, x15_4) + dot(p2_0_hi1, x15_5) + dot(p2_0_hi2, x15_6) + dot(p2_0_hi3, x15_7))) - p2_0_mm * xs15;
          a2_0_0 += p2_0_s0;
          a2_0_1 += p2_0_s1;
          a2_0_2 += p2_0_s2;
          a2_0_3 += p2_0_s3;
          a2_0_4 += p2_0_s4;
          a2_0_5 += p2_0_s5;
          a2_0_6 += p2_0_s6;
          a2_0_7 += p2_0_s7;
          a2_0_8 += p2_0_s8;
          a2_0_9 += p2_0_s9;
          a2_0_10 += p2_0_s10;
          a2_0_11 += p2_0_s11;
          a2_0_12 += p2_0_s12;
          a2_0_13 += p2_0_s13;
          a2_0_14 += p2_0_s14;
          a2_0_15 += p2_0_s15;
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
          let p2_1_s1 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x1_0) + dot(p2_1_lo1, x1_1) + dot(p2_1_lo2, x1_2) + dot(p2_1_lo3, x1_3) + dot(p2_1_hi0, x1_4) + dot(p2_1_hi1, x1_5) + dot(p2_1_hi2, x1_6) + dot(p2_1_hi3, x1_7))) - p2_1_mm * xs1;
          let p2_1_s2 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x2_0) + dot(p2_1_lo1, x2_1) + dot(p2_1_lo2, x2_2) + dot(p2_1_lo3, x2_3) + dot(p2_1_hi0, x2_4) + dot(p2_1_hi1, x2_5) + dot(p2_1_hi2, x2_6) + dot(p2_1_hi3, x2_7))) - p2_1_mm * xs2;
          let p2_1_s3 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x3_0) + dot(p2_1_lo1, x3_1) + dot(p2_1_lo2, x3_2) + dot(p2_1_lo3, x3_3) + dot(p2_1_hi0, x3_4) + dot(p2_1_hi1, x3_5) + dot(p2_1_hi2, x3_6) + dot(p2_1_hi3, x3_7))) - p2_1_mm * xs3;
          let p2_1_s4 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x4_0) + dot(p2_1_lo1, x4_1) + dot(p2_1_lo2, x4_2) + dot(p2_1_lo3, x4_3) + dot(p2_1_hi0, x4_4) + dot(p2_1_hi1, x4_5) + dot(p2_1_hi2, x4_6) + dot(p2_1_hi3, x4_7))) - p2_1_mm * xs4;
          let p2_1_s5 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x5_0) + dot(p2_1_lo1, x5_1) + dot(p2_1_lo2, x5_2) + dot(p2_1_lo3, x5_3) + dot(p2_1_hi0, x5_4) + dot(p2_1_hi1, x5_5) + dot(p2_1_hi2, x5_6) + dot(p2_1_hi3, x5_7))) - p2_1_mm * xs5;
          let p2_1_s6 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x6_0) + dot(p2_1_lo1, x6_1) + dot(p2_1_lo2, x6_2) + dot(p2_1_lo3, x6_3) + dot(p2_1_hi0, x6_4) + dot(p2_1_hi1, x6_5) + dot(p2_1_hi2, x6_6) + dot(p2_1_hi3, x6_7))) - p2_1_mm * xs6;
          let p2_1_s7 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x7_0) + dot(p2_1_lo1, x7_1) + dot(p2_1_lo2, x7_2) + dot(p2_1_lo3, x7_3) + dot(p2_1_hi0, x7_4) + dot(p2_1_hi1, x7_5) + dot(p2_1_hi2, x7_6) + dot(p2_1_hi3, x7_7))) - p2_1_mm * xs7;
          let p2_1_s8 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x8_0) + dot(p2_1_lo1, x8_1) + dot(p2_1_lo2, x8_2) + dot(p2_1_lo3, x8_3) + dot(p2_1_hi0, x8_4) + dot(p2_1_hi1, x8_5) + dot(p2_1_hi2, x8_6) + dot(p2_1_hi3, x8_7))) - p2_1_mm * xs8;
          let p2_1_s9 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x9_0) + dot(p2_1_lo1, x9_1) + dot(p2_1_lo2, x9_2) + dot(p2_1_lo3, x9_3) + dot(p2_1_hi0, x9_4) + dot(p2_1_hi1, x9_5) + dot(p2_1_hi2, x9_6) + dot(p2_1_hi3, x9_7))) - p2_1_mm * xs9;
          let p2_1_s10 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x10_0) + dot(p2_1_lo1, x10_1) + dot(p2_1_lo2, x10_2) + dot(p2_1_lo3, x10_3) + dot(p2_1_hi0, x10_4) + dot(p2_1_hi1, x10_5) + dot(p2_1_hi2, x10_6) + dot(p2_1_hi3, x10_7))) - p2_1_mm * xs10;
          let p2_1_s11 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x11_0) + dot(p2_1_lo1, x11_1) + dot(p2_1_lo2, x11_2) + dot(p2_1_lo3, x11_3) + dot(p2_1_hi0, x11_4) + dot(p2_1_hi1, x11_5) + dot(p2_1_hi2, x11_6) + dot(p2_1_hi3, x11_7))) - p2_1_mm * xs11;
          let p2_1_s12 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x12_0) + dot(p2_1_lo1, x12_1) + dot(p2_1_lo2, x12_2) + dot(p2_1_lo3, x12_3) + dot(p2_1_hi0, x12_4) + dot(p2_1_hi1, x12_5) + dot(p2_1_hi2, x12_6) + dot(p2_1_hi3, x12_7))) - p2_1_mm * xs12;
          let p2_1_s13 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x13_0) + dot(p2_1_lo1, x13_1) + dot(p2_1_lo2, x13_2) + dot(p2_1_lo3, x13_3) + dot(p2_1_hi0, x13_4) + dot(p2_1_hi1, x13_5) + dot(p2_1_hi2, x13_6) + dot(p2_1_hi3, x13_7))) - p2_1_mm * xs13;
          let p2_1_s14 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x14_0) + dot(p2_1_lo1, x14_1) + dot(p2_1_lo2, x14_2) + dot(p2_1_lo3, x14_3) + dot(p2_1_hi0, x14_4) + dot(p2_1_hi1, x14_5) + dot(p2_1_hi2, x14_6) + dot(p2_1_hi3, x14_7))) - p2_1_mm * xs14;
          let p2_1_s15 = p2_1_ds * (255.0 * (dot(p2_1_lo0, x15_0) + dot(p2_1_lo1, x15_1) + dot(p2_1_lo2, x15_2) + dot(p2_1_lo3, x15_3) + dot(p2_1_hi0, x15_4) + dot(p2_1_hi1, x15_5) + dot(p2_1_hi2, x15_6) + dot(p2_1_hi3, x15_7))) - p2_1_mm * xs15;
          a2_1_0 += p2_1_s0;
          a2_1_1 += p2_1_s1;
          a2_1_2 += p2_1_s2;
          a2_1_3 += p2_1_s3;
          a2_1_4 += p2_1_s4;
          a2_1_5 += p2_1_s5;
          a2_1_6 += p2_1_s6;
          a2_1_7 += p2_1_s7;
          a2_1_8 += p2_1_s8;
          a2_1_9 += p2_1_s9;
          a2_1_10 += p2_1_s10;
          a2_1_11 += p2_1_s11;
          a2_1_12 += p2_1_s12;
          a2_1_13 += p2_1_s13;
          a2_1_14 += p2_1_s14;
          a2_1_15 += p2_1_s15;
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
          let p3_0_s1 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x1_0) + dot(p3_0_lo1, x1_1) + dot(p3_0_lo2, x1_2) + dot(p3_0_lo3, x1_3) + dot(p3_0_hi0, x1_4) + dot(p3_0_hi1, x1_5) + dot(p3_0_hi2, x1_6) + dot(p3_0_hi3, x1_7))) - p3_0_mm * xs1;
          let p3_0_s2 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x2_0) + dot(p3_0_lo1, x2_1) + dot(p3_0_lo2, x2_2) + dot(p3_0_lo3, x2_3) + dot(p3_0_hi0, x2_4) + dot(p3_0_hi1, x2_5) + dot(p3_0_hi2, x2_6) + dot(p3_0_hi3, x2_7))) - p3_0_mm * xs2;
          let p3_0_s3 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x3_0) + dot(p3_0_lo1, x3_1) + dot(p3_0_lo2, x3_2) + dot(p3_0_lo3, x3_3) + dot(p3_0_hi0, x3_4) + dot(p3_0_hi1, x3_5) + dot(p3_0_hi2, x3_6) + dot(p3_0_hi3, x3_7))) - p3_0_mm * xs3;
          let p3_0_s4 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x4_0) + dot(p3_0_lo1, x4_1) + dot(p3_0_lo2, x4_2) + dot(p3_0_lo3, x4_3) + dot(p3_0_hi0, x4_4) + dot(p3_0_hi1, x4_5) + dot(p3_0_hi2, x4_6) + dot(p3_0_hi3, x4_7))) - p3_0_mm * xs4;
          let p3_0_s5 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x5_0) + dot(p3_0_lo1, x5_1) + dot(p3_0_lo2, x5_2) + dot(p3_0_lo3, x5_3) + dot(p3_0_hi0, x5_4) + dot(p3_0_hi1, x5_5) + dot(p3_0_hi2, x5_6) + dot(p3_0_hi3, x5_7))) - p3_0_mm * xs5;
          let p3_0_s6 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x6_0) + dot(p3_0_lo1, x6_1) + dot(p3_0_lo2, x6_2) + dot(p3_0_lo3, x6_3) + dot(p3_0_hi0, x6_4) + dot(p3_0_hi1, x6_5) + dot(p3_0_hi2, x6_6) + dot(p3_0_hi3, x6_7))) - p3_0_mm * xs6;
          let p3_0_s7 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x7_0) + dot(p3_0_lo1, x7_1) + dot(p3_0_lo2, x7_2) + dot(p3_0_lo3, x7_3) + dot(p3_0_hi0, x7_4) + dot(p3_0_hi1, x7_5) + dot(p3_0_hi2, x7_6) + dot(p3_0_hi3, x7_7))) - p3_0_mm * xs7;
          let p3_0_s8 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x8_0) + dot(p3_0_lo1, x8_1) + dot(p3_0_lo2, x8_2) + dot(p3_0_lo3, x8_3) + dot(p3_0_hi0, x8_4) + dot(p3_0_hi1, x8_5) + dot(p3_0_hi2, x8_6) + dot(p3_0_hi3, x8_7))) - p3_0_mm * xs8;
          let p3_0_s9 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x9_0) + dot(p3_0_lo1, x9_1) + dot(p3_0_lo2, x9_2) + dot(p3_0_lo3, x9_3) + dot(p3_0_hi0, x9_4) + dot(p3_0_hi1, x9_5) + dot(p3_0_hi2, x9_6) + dot(p3_0_hi3, x9_7))) - p3_0_mm * xs9;
          let p3_0_s10 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x10_0) + dot(p3_0_lo1, x10_1) + dot(p3_0_lo2, x10_2) + dot(p3_0_lo3, x10_3) + dot(p3_0_hi0, x10_4) + dot(p3_0_hi1, x10_5) + dot(p3_0_hi2, x10_6) + dot(p3_0_hi3, x10_7))) - p3_0_mm * xs10;
          let p3_0_s11 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x11_0) + dot(p3_0_lo1, x11_1) + dot(p3_0_lo2, x11_2) + dot(p3_0_lo3, x11_3) + dot(p3_0_hi0, x11_4) + dot(p3_0_hi1, x11_5) + dot(p3_0_hi2, x11_6) + dot(p3_0_hi3, x11_7))) - p3_0_mm * xs11;
          let p3_0_s12 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x12_0) + dot(p3_0_lo1, x12_1) + dot(p3_0_lo2, x12_2) + dot(p3_0_lo3, x12_3) + dot(p3_0_hi0, x12_4) + dot(p3_0_hi1, x12_5) + dot(p3_0_hi2, x12_6) + dot(p3_0_hi3, x12_7))) - p3_0_mm * xs12;
          let p3_0_s13 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x13_0) + dot(p3_0_lo1, x13_1) + dot(p3_0_lo2, x13_2) + dot(p3_0_lo3, x13_3) + dot(p3_0_hi0, x13_4) + dot(p3_0_hi1, x13_5) + dot(p3_0_hi2, x13_6) + dot(p3_0_hi3, x13_7))) - p3_0_mm * xs13;
          let p3_0_s14 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x14_0) + dot(p3_0_lo1, x14_1) + dot(p3_0_lo2, x14_2) + dot(p3_0_lo3, x14_3) + dot(p3_0_hi0, x14_4) + dot(p3_0_hi1, x14_5) + dot(p3_0_hi2, x14_6) + dot(p3_0_hi3, x14_7))) - p3_0_mm * xs14;
          let p3_0_s15 = p3_0_ds * (255.0 * (dot(p3_0_lo0, x15_0) + dot(p3_0_lo1, x15_1) + dot(p3_0_lo2, x15_2) + dot(p3_0_lo3, x15_3) + dot(p3_0_hi0, x15_4) + dot(p3_0_hi1, x15_5) + dot(p3_0_hi2, x15_6) + dot(p3_0_hi3, x15_7))) - p3_0_mm * xs15;
          a3_0_0 += p3_0_s0;
          a3_0_1 += p3_0_s1;
          a3_0_2 += p3_0_s2;
          a3_0_3 += p3_0_s3;
          a3_0_4 += p3_0_s4;
          a3_0_5 += p3_0_s5;
          a3_0_6 += p3_0_s6;
          a3_0_7 += p3_0_s7;
          a3_0_8 += p3_0_s8;
          a3_0_9 += p3_0_s9;
          a3_0_10 += p3_0_s10;
          a3_0_11 += p3_0_s11;
          a3_0_12 += p3_0_s12;
          a3_0_13 += p3_0_s13;
          a3_0_14 += p3_0_s14;
          a3_0_15 += p3_0_s15;
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
          let p3_1_s1 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x1_0) + dot(p3_1_lo1, x1_1) + dot(p3_1_lo2, x1_2) + dot(p3_1_lo3, x1_3) + dot(p3_1_hi0, x1_4) + dot(p3_1_hi1, x1_5) + dot(p3_1_hi2, x1_6) + dot(p3_1_hi3, x1_7))) - p3_1_mm * xs1;
          let p3_1_s2 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x2_0) + dot(p3_1_lo1, x2_1) + dot(p3_1_lo2, x2_2) + dot(p3_1_lo3, x2_3) + dot(p3_1_hi0, x2_4) + dot(p3_1_hi1, x2_5) + dot(p3_1_hi2, x2_6) + dot(p3_1_hi3, x2_7))) - p3_1_mm * xs2;
          let p3_1_s3 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x3_0) + dot(p3_1_lo1, x3_1) + dot(p3_1_lo2, x3_2) + dot(p3_1_lo3, x3_3) + dot(p3_1_hi0, x3_4) + dot(p3_1_hi1, x3_5) + dot(p3_1_hi2, x3_6) + dot(p3_1_hi3, x3_7))) - p3_1_mm * xs3;
          let p3_1_s4 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x4_0) + dot(p3_1_lo1, x4_1) + dot(p3_1_lo2, x4_2) + dot(p3_1_lo3, x4_3) + dot(p3_1_hi0, x4_4) + dot(p3_1_hi1, x4_5) + dot(p3_1_hi2, x4_6) + dot(p3_1_hi3, x4_7))) - p3_1_mm * xs4;
          let p3_1_s5 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x5_0) + dot(p3_1_lo1, x5_1) + dot(p3_1_lo2, x5_2) + dot(p3_1_lo3, x5_3) + dot(p3_1_hi0, x5_4) + dot(p3_1_hi1, x5_5) + dot(p3_1_hi2, x5_6) + dot(p3_1_hi3, x5_7))) - p3_1_mm * xs5;
          let p3_1_s6 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x6_0) + dot(p3_1_lo1, x6_1) + dot(p3_1_lo2, x6_2) + dot(p3_1_lo3, x6_3) + dot(p3_1_hi0, x6_4) + dot(p3_1_hi1, x6_5) + dot(p3_1_hi2, x6_6) + dot(p3_1_hi3, x6_7))) - p3_1_mm * xs6;
          let p3_1_s7 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x7_0) + dot(p3_1_lo1, x7_1) + dot(p3_1_lo2, x7_2) + dot(p3_1_lo3, x7_3) + dot(p3_1_hi0, x7_4) + dot(p3_1_hi1, x7_5) + dot(p3_1_hi2, x7_6) + dot(p3_1_hi3, x7_7))) - p3_1_mm * xs7;
          let p3_1_s8 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x8_0) + dot(p3_1_lo1, x8_1) + dot(p3_1_lo2, x8_2) + dot(p3_1_lo3, x8_3) + dot(p3_1_hi0, x8_4) + dot(p3_1_hi1, x8_5) + dot(p3_1_hi2, x8_6) + dot(p3_1_hi3, x8_7))) - p3_1_mm * xs8;
          let p3_1_s9 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x9_0) + dot(p3_1_lo1, x9_1) + dot(p3_1_lo2, x9_2) + dot(p3_1_lo3, x9_3) + dot(p3_1_hi0, x9_4) + dot(p3_1_hi1, x9_5) + dot(p3_1_hi2, x9_6) + dot(p3_1_hi3, x9_7))) - p3_1_mm * xs9;
          let p3_1_s10 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x10_0) + dot(p3_1_lo1, x10_1) + dot(p3_1_lo2, x10_2) + dot(p3_1_lo3, x10_3) + dot(p3_1_hi0, x10_4) + dot(p3_1_hi1, x10_5) + dot(p3_1_hi2, x10_6) + dot(p3_1_hi3, x10_7))) - p3_1_mm * xs10;
          let p3_1_s11 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x11_0) + dot(p3_1_lo1, x11_1) + dot(p3_1_lo2, x11_2) + dot(p3_1_lo3, x11_3) + dot(p3_1_hi0, x11_4) + dot(p3_1_hi1, x11_5) + dot(p3_1_hi2, x11_6) + dot(p3_1_hi3, x11_7))) - p3_1_mm * xs11;
          let p3_1_s12 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x12_0) + dot(p3_1_lo1, x12_1) + dot(p3_1_lo2, x12_2) + dot(p3_1_lo3, x12_3) + dot(p3_1_hi0, x12_4) + dot(p3_1_hi1, x12_5) + dot(p3_1_hi2, x12_6) + dot(p3_1_hi3, x12_7))) - p3_1_mm * xs12;
          let p3_1_s13 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x13_0) + dot(p3_1_lo1, x13_1) + dot(p3_1_lo2, x13_2) + dot(p3_1_lo3, x13_3) + dot(p3_1_hi0, x13_4) + dot(p3_1_hi1, x13_5) + dot(p3_1_hi2, x13_6) + dot(p3_1_hi3, x13_7))) - p3_1_mm * xs13;
          let p3_1_s14 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x14_0) + dot(p3_1_lo1, x14_1) + dot(p3_1_lo2, x14_2) + dot(p3_1_lo3, x14_3) + dot(p3_1_hi0, x14_4) + dot(p3_1_hi1, x14_5) + dot(p3_1_hi2, x14_6) + dot(p3_1_hi3, x14_7))) - p3_1_mm * xs14;
          let p3_1_s15 = p3_1_ds * (255.0 * (dot(p3_1_lo0, x15_0) + dot(p3_1_lo1, x15_1) + dot(p3_1_lo2, x15_2) + dot(p3_1_lo3, x15_3) + dot(p3_1_hi0, x15_4) + dot(p3_1_hi1, x15_5) + dot(p3_1_hi2, x15_6) + dot(p3_1_hi3, x15_7))) - p3_1_mm * xs15;
          a3_1_0 += p3_1_s0;
          a3_1_1 += p3_1_s1;
          a3_1_2 += p3_1_s2;
          a3_1_3 += p3_1_s3;
          a3_1_4 += p3_1_s4;
          a3_1_5 += p3_1_s5;
          a3_1_6 += p3_1_s6;
          a3_1_7 += p3_1_s7;
          a3_1_8 += p3_1_s8;
          a3_1_9 += p3_1_s9;
          a3_1_10 += p3_1_s10;
          a3_1_11 += p3_1_s11;
          a3_1_12 += p3_1_s12;
          a3_1_13 += p3_1_s13;
          a3_1_14 += p3_1_s14;
          a3_1_15 += p3_1_s15;
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
          let p4_0_s1 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x1_0) + dot(p4_0_lo1, x1_1) + dot(p4_0_lo2, x1_2) + dot(p4_0_lo3, x1_3) + dot(p4_0_hi0, x1_4) + dot(p4_0_hi1, x1_5) + dot(p4_0_hi2, x1_6) + dot(p4_0_hi3, x1_7))) - p4_0_mm * xs1;
          let p4_0_s2 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x2_0) + dot(p4_0_lo1, x2_1) + dot(p4_0_lo2, x2_2) + dot(p4_0_lo3, x2_3) + dot(p4_0_hi0, x2_4) + dot(p4_0_hi1, x2_5) + dot(p4_0_hi2, x2_6) + dot(p4_0_hi3, x2_7))) - p4_0_mm * xs2;
          let p4_0_s3 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x3_0) + dot(p4_0_lo1, x3_1) + dot(p4_0_lo2, x3_2) + dot(p4_0_lo3, x3_3) + dot(p4_0_hi0, x3_4) + dot(p4_0_hi1, x3_5) + dot(p4_0_hi2, x3_6) + dot(p4_0_hi3, x3_7))) - p4_0_mm * xs3;
          let p4_0_s4 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x4_0) + dot(p4_0_lo1, x4_1) + dot(p4_0_lo2, x4_2) + dot(p4_0_lo3, x4_3) + dot(p4_0_hi0, x4_4) + dot(p4_0_hi1, x4_5) + dot(p4_0_hi2, x4_6) + dot(p4_0_hi3, x4_7))) - p4_0_mm * xs4;
          let p4_0_s5 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x5_0) + dot(p4_0_lo1, x5_1) + dot(p4_0_lo2, x5_2) + dot(p4_0_lo3, x5_3) + dot(p4_0_hi0, x5_4) + dot(p4_0_hi1, x5_5) + dot(p4_0_hi2, x5_6) + dot(p4_0_hi3, x5_7))) - p4_0_mm * xs5;
          let p4_0_s6 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x6_0) + dot(p4_0_lo1, x6_1) + dot(p4_0_lo2, x6_2) + dot(p4_0_lo3, x6_3) + dot(p4_0_hi0, x6_4) + dot(p4_0_hi1, x6_5) + dot(p4_0_hi2, x6_6) + dot(p4_0_hi3, x6_7))) - p4_0_mm * xs6;
          let p4_0_s7 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x7_0) + dot(p4_0_lo1, x7_1) + dot(p4_0_lo2, x7_2) + dot(p4_0_lo3, x7_3) + dot(p4_0_hi0, x7_4) + dot(p4_0_hi1, x7_5) + dot(p4_0_hi2, x7_6) + dot(p4_0_hi3, x7_7))) - p4_0_mm * xs7;
          let p4_0_s8 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x8_0) + dot(p4_0_lo1, x8_1) + dot(p4_0_lo2, x8_2) + dot(p4_0_lo3, x8_3) + dot(p4_0_hi0, x8_4) + dot(p4_0_hi1, x8_5) + dot(p4_0_hi2, x8_6) + dot(p4_0_hi3, x8_7))) - p4_0_mm * xs8;
          let p4_0_s9 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x9_0) + dot(p4_0_lo1, x9_1) + dot(p4_0_lo2, x9_2) + dot(p4_0_lo3, x9_3) + dot(p4_0_hi0, x9_4) + dot(p4_0_hi1, x9_5) + dot(p4_0_hi2, x9_6) + dot(p4_0_hi3, x9_7))) - p4_0_mm * xs9;
          let p4_0_s10 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x10_0) + dot(p4_0_lo1, x10_1) + dot(p4_0_lo2, x10_2) + dot(p4_0_lo3, x10_3) + dot(p4_0_hi0, x10_4) + dot(p4_0_hi1, x10_5) + dot(p4_0_hi2, x10_6) + dot(p4_0_hi3, x10_7))) - p4_0_mm * xs10;
          let p4_0_s11 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x11_0) + dot(p4_0_lo1, x11_1) + dot(p4_0_lo2, x11_2) + dot(p4_0_lo3, x11_3) + dot(p4_0_hi0, x11_4) + dot(p4_0_hi1, x11_5) + dot(p4_0_hi2, x11_6) + dot(p4_0_hi3, x11_7))) - p4_0_mm * xs11;
          let p4_0_s12 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x12_0) + dot(p4_0_lo1, x12_1) + dot(p4_0_lo2, x12_2) + dot(p4_0_lo3, x12_3) + dot(p4_0_hi0, x12_4) + dot(p4_0_hi1, x12_5) + dot(p4_0_hi2, x12_6) + dot(p4_0_hi3, x12_7))) - p4_0_mm * xs12;
          let p4_0_s13 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x13_0) + dot(p4_0_lo1, x13_1) + dot(p4_0_lo2, x13_2) + dot(p4_0_lo3, x13_3) + dot(p4_0_hi0, x13_4) + dot(p4_0_hi1, x13_5) + dot(p4_0_hi2, x13_6) + dot(p4_0_hi3, x13_7))) - p4_0_mm * xs13;
          let p4_0_s14 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x14_0) + dot(p4_0_lo1, x14_1) + dot(p4_0_lo2, x14_2) + dot(p4_0_lo3, x14_3) + dot(p4_0_hi0, x14_4) + dot(p4_0_hi1, x14_5) + dot(p4_0_hi2, x14_6) + dot(p4_0_hi3, x14_7))) - p4_0_mm * xs14;
          let p4_0_s15 = p4_0_ds * (255.0 * (dot(p4_0_lo0, x15_0) + dot(p4_0_lo1, x15_1) + dot(p4_0_lo2, x15_2) + dot(p4_0_lo3, x15_3) + dot(p4_0_hi0, x15_4) + dot(p4_0_hi1, x15_5) + dot(p4_0_hi2, x15_6) + dot(p4_0_hi3, x15_7))) - p4_0_mm * xs15;
          a4_0_0 += p4_0_s0;
          a4_0_1 += p4_0_s1;
          a4_0_2 += p4_0_s2;
          a4_0_3 += p4_0_s3;
          a4_0_4 += p4_0_s4;
          a4_0_5 += p4_0_s5;
          a4_0_6 += p4_0_s6;
          a4_0_7 += p4_0_s7;
          a4_0_8 += p4_0_s8;
          a4_0_9 += p4_0_s9;
          a4_0_10 += p4_0_s10;
          a4_0_11 += p4_0_s11;
          a4_0_12 += p4_0_s12;
          a4_0_13 += p4_0_s13;
          a4_0_14 += p4_0_s14;
          a4_0_15 += p4_0_s15;
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
          let p4_1_s1 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x1_0) + dot(p4_1_lo1, x1_1) + dot(p4_1_lo2, x1_2) + dot(p4_1_lo3, x1_3) + dot(p4_1_hi0, x1_4) + dot(p4_1_hi1, x1_5) + dot(p4_1_hi2, x1_6) + dot(p4_1_hi3, x1_7))) - p4_1_mm * xs1;
          let p4_1_s2 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x2_0) + dot(p4_1_lo1, x2_1) + dot(p4_1_lo2, x2_2) + dot(p4_1_lo3, x2_3) + dot(p4_1_hi0, x2_4) + dot(p4_1_hi1, x2_5) + dot(p4_1_hi2, x2_6) + dot(p4_1_hi3, x2_7))) - p4_1_mm * xs2;
          let p4_1_s3 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x3_0) + dot(p4_1_lo1, x3_1) + dot(p4_1_lo2, x3_2) + dot(p4_1_lo3, x3_3) + dot(p4_1_hi0, x3_4) + dot(p4_1_hi1, x3_5) + dot(p4_1_hi2, x3_6) + dot(p4_1_hi3, x3_7))) - p4_1_mm * xs3;
          let p4_1_s4 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x4_0) + dot(p4_1_lo1, x4_1) + dot(p4_1_lo2, x4_2) + dot(p4_1_lo3, x4_3) + dot(p4_1_hi0, x4_4) + dot(p4_1_hi1, x4_5) + dot(p4_1_hi2, x4_6) + dot(p4_1_hi3, x4_7))) - p4_1_mm * xs4;
          let p4_1_s5 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x5_0) + dot(p4_1_lo1, x5_1) + dot(p4_1_lo2, x5_2) + dot(p4_1_lo3, x5_3) + dot(p4_1_hi0, x5_4) + dot(p4_1_hi1, x5_5) + dot(p4_1_hi2, x5_6) + dot(p4_1_hi3, x5_7))) - p4_1_mm * xs5;
          let p4_1_s6 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x6_0) + dot(p4_1_lo1, x6_1) + dot(p4_1_lo2, x6_2) + dot(p4_1_lo3, x6_3) + dot(p4_1_hi0, x6_4) + dot(p4_1_hi1, x6_5) + dot(p4_1_hi2, x6_6) + dot(p4_1_hi3, x6_7))) - p4_1_mm * xs6;
          let p4_1_s7 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x7_0) + dot(p4_1_lo1, x7_1) + dot(p4_1_lo2, x7_2) + dot(p4_1_lo3, x7_3) + dot(p4_1_hi0, x7_4) + dot(p4_1_hi1, x7_5) + dot(p4_1_hi2, x7_6) + dot(p4_1_hi3, x7_7))) - p4_1_mm * xs7;
          let p4_1_s8 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x8_0) + dot(p4_1_lo1, x8_1) + dot(p4_1_lo2, x8_2) + dot(p4_1_lo3, x8_3) + dot(p4_1_hi0, x8_4) + dot(p4_1_hi1, x8_5) + dot(p4_1_hi2, x8_6) + dot(p4_1_hi3, x8_7))) - p4_1_mm * xs8;
          let p4_1_s9 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x9_0) + dot(p4_1_lo1, x9_1) + dot(p4_1_lo2, x9_2) + dot(p4_1_lo3, x9_3) + dot(p4_1_hi0, x9_4) + dot(p4_1_hi1, x9_5) + dot(p4_1_hi2, x9_6) + dot(p4_1_hi3, x9_7))) - p4_1_mm * xs9;
          let p4_1_s10 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x10_0) + dot(p4_1_lo1, x10_1) + dot(p4_1_lo2, x10_2) + dot(p4_1_lo3, x10_3) + dot(p4_1_hi0, x10_4) + dot(p4_1_hi1, x10_5) + dot(p4_1_hi2, x10_6) + dot(p4_1_hi3, x10_7))) - p4_1_mm * xs10;
          let p4_1_s11 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x11_0) + dot(p4_1_lo1, x11_1) + dot(p4_1_lo2, x11_2) + dot(p4_1_lo3, x11_3) + dot(p4_1_hi0, x11_4) + dot(p4_1_hi1, x11_5) + dot(p4_1_hi2, x11_6) + dot(p4_1_hi3, x11_7))) - p4_1_mm * xs11;
          let p4_1_s12 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x12_0) + dot(p4_1_lo1, x12_1) + dot(p4_1_lo2, x12_2) + dot(p4_1_lo3, x12_3) + dot(p4_1_hi0, x12_4) + dot(p4_1_hi1, x12_5) + dot(p4_1_hi2, x12_6) + dot(p4_1_hi3, x12_7))) - p4_1_mm * xs12;
          let p4_1_s13 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x13_0) + dot(p4_1_lo1, x13_1) + dot(p4_1_lo2, x13_2) + dot(p4_1_lo3, x13_3) + dot(p4_1_hi0, x13_4) + dot(p4_1_hi1, x13_5) + dot(p4_1_hi2, x13_6) + dot(p4_1_hi3, x13_7))) - p4_1_mm * xs13;
          let p4_1_s14 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x14_0) + dot(p4_1_lo1, x14_1) + dot(p4_1_lo2, x14_2) + dot(p4_1_lo3, x14_3) + dot(p4_1_hi0, x14_4) + dot(p4_1_hi1, x14_5) + dot(p4_1_hi2, x14_6) + dot(p4_1_hi3, x14_7))) - p4_1_mm * xs14;
          let p4_1_s15 = p4_1_ds * (255.0 * (dot(p4_1_lo0, x15_0) + dot(p4_1_lo1, x15_1) + dot(p4_1_lo2, x15_2) + dot(p4_1_lo3, x15_3) + dot(p4_1_hi0, x15_4) + dot(p4_1_hi1, x15_5) + dot(p4_1_hi2, x15_6) + dot(p4_1_hi3, x15_7))) - p4_1_mm * xs15;
          a4_1_0 += p4_1_s0;
          a4_1_1 += p4_1_s1;
          a4_1_2 += p4_1_s2;
          a4_1_3 += p4_1_s3;
          a4_1_4 += p4_1_s4;
          a4_1_5 += p4_1_s5;
          a4_1_6 += p4_1_s6;
          a4_1_7 += p4_1_s7;
          a4_1_8 += p4_1_s8;
          a4_1_9 += p4_1_s9;
          a4_1_10 += p4_1_s10;
          a4_1_11 += p4_1_s11;
          a4_1_12 += p4_1_s12;
          a4_1_13 += p4_1_s13;
          a4_1_14 += p4_1_s14;
          a4_1_15 += p4_1_s15;
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
          let p5_0_s1 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x1_0) + dot(p5_0_lo1, x1_1) + dot(p5_0_lo2, x1_2) + dot(p5_0_lo3, x1_3) + dot(p5_0_hi0, x1_4) + dot(p5_0_hi1, x1_5) + dot(p5_0_hi2, x1_6) + dot(p5_0_hi3, x1_7))) - p5_0_mm * xs1;
          let p5_0_s2 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x2_0) + dot(p5_0_lo1, x2_1) + dot(p5_0_lo2, x2_2) + dot(p5_0_lo3, x2_3) + dot(p5_0_hi0, x2_4) + dot(p5_0_hi1, x2_5) + dot(p5_0_hi2, x2_6) + dot(p5_0_hi3, x2_7))) - p5_0_mm * xs2;
          let p5_0_s3 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x3_0) + dot(p5_0_lo1, x3_1) + dot(p5_0_lo2, x3_2) + dot(p5_0_lo3, x3_3) + dot(p5_0_hi0, x3_4) + dot(p5_0_hi1, x3_5) + dot(p5_0_hi2, x3_6) + dot(p5_0_hi3, x3_7))) - p5_0_mm * xs3;
          let p5_0_s4 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x4_0) + dot(p5_0_lo1, x4_1) + dot(p5_0_lo2, x4_2) + dot(p5_0_lo3, x4_3) + dot(p5_0_hi0, x4_4) + dot(p5_0_hi1, x4_5) + dot(p5_0_hi2, x4_6) + dot(p5_0_hi3, x4_7))) - p5_0_mm * xs4;
          let p5_0_s5 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x5_0) + dot(p5_0_lo1, x5_1) + dot(p5_0_lo2, x5_2) + dot(p5_0_lo3, x5_3) + dot(p5_0_hi0, x5_4) + dot(p5_0_hi1, x5_5) + dot(p5_0_hi2, x5_6) + dot(p5_0_hi3, x5_7))) - p5_0_mm * xs5;
          let p5_0_s6 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x6_0) + dot(p5_0_lo1, x6_1) + dot(p5_0_lo2, x6_2) + dot(p5_0_lo3, x6_3) + dot(p5_0_hi0, x6_4) + dot(p5_0_hi1, x6_5) + dot(p5_0_hi2, x6_6) + dot(p5_0_hi3, x6_7))) - p5_0_mm * xs6;
          let p5_0_s7 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x7_0) + dot(p5_0_lo1, x7_1) + dot(p5_0_lo2, x7_2) + dot(p5_0_lo3, x7_3) + dot(p5_0_hi0, x7_4) + dot(p5_0_hi1, x7_5) + dot(p5_0_hi2, x7_6) + dot(p5_0_hi3, x7_7))) - p5_0_mm * xs7;
          let p5_0_s8 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x8_0) + dot(p5_0_lo1, x8_1) + dot(p5_0_lo2, x8_2) + dot(p5_0_lo3, x8_3) + dot(p5_0_hi0, x8_4) + dot(p5_0_hi1, x8_5) + dot(p5_0_hi2, x8_6) + dot(p5_0_hi3, x8_7))) - p5_0_mm * xs8;
          let p5_0_s9 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x9_0) + dot(p5_0_lo1, x9_1) + dot(p5_0_lo2, x9_2) + dot(p5_0_lo3, x9_3) + dot(p5_0_hi0, x9_4) + dot(p5_0_hi1, x9_5) + dot(p5_0_hi2, x9_6) + dot(p5_0_hi3, x9_7))) - p5_0_mm * xs9;
          let p5_0_s10 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x10_0) + dot(p5_0_lo1, x10_1) + dot(p5_0_lo2, x10_2) + dot(p5_0_lo3, x10_3) + dot(p5_0_hi0, x10_4) + dot(p5_0_hi1, x10_5) + dot(p5_0_hi2, x10_6) + dot(p5_0_hi3, x10_7))) - p5_0_mm * xs10;
          let p5_0_s11 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x11_0) + dot(p5_0_lo1, x11_1) + dot(p5_0_lo2, x11_2) + dot(p5_0_lo3, x11_3) + dot(p5_0_hi0, x11_4) + dot(p5_0_hi1, x11_5) + dot(p5_0_hi2, x11_6) + dot(p5_0_hi3, x11_7))) - p5_0_mm * xs11;
          let p5_0_s12 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x12_0) + dot(p5_0_lo1, x12_1) + dot(p5_0_lo2, x12_2) + dot(p5_0_lo3, x12_3) + dot(p5_0_hi0, x12_4) + dot(p5_0_hi1, x12_5) + dot(p5_0_hi2, x12_6) + dot(p5_0_hi3, x12_7))) - p5_0_mm * xs12;
          let p5_0_s13 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x13_0) + dot(p5_0_lo1, x13_1) + dot(p5_0_lo2, x13_2) + dot(p5_0_lo3, x13_3) + dot(p5_0_hi0, x13_4) + dot(p5_0_hi1, x13_5) + dot(p5_0_hi2, x13_6) + dot(p5_0_hi3, x13_7))) - p5_0_mm * xs13;
          let p5_0_s14 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x14_0) + dot(p5_0_lo1, x14_1) + dot(p5_0_lo2, x14_2) + dot(p5_0_lo3, x14_3) + dot(p5_0_hi0, x14_4) + dot(p5_0_hi1, x14_5) + dot(p5_0_hi2, x14_6) + dot(p5_0_hi3, x14_7))) - p5_0_mm * xs14;
          let p5_0_s15 = p5_0_ds * (255.0 * (dot(p5_0_lo0, x15_0) + dot(p5_0_lo1, x15_1) + dot(p5_0_lo2, x15_2) + dot(p5_0_lo3, x15_3) + dot(p5_0_hi0, x15_4) + dot(p5_0_hi1, x15_5) + dot(p5_0_hi2, x15_6) + dot(p5_0_hi3, x15_7))) - p5_0_mm * xs15;
          a5_0_0 += p5_0_s0;
          a5_0_1 += p5_0_s1;
          a5_0_2 += p5_0_s2;
          a5_0_3 += p5_0_s3;
          a5_0_4 += p5_0_s4;
          a5_0_5 += p5_0_s5;
          a5_0_6 += p5_0_s6;
          a5_0_7 += p5_0_s7;
          a5_0_8 += p5_0_s8;
          a5_0_9 += p5_0_s9;
          a5_0_10 += p5_0_s10;
          a5_0_11 += p5_0_s11;
          a5_0_12 += p5_0_s12;
          a5_0_13 += p5_0_s13;
          a5_0_14 += p5_0_s14;
          a5_0_15 += p5_0_s15;
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
          let p5_1_s1 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x1_0) + dot(p5_1_lo1, x1_1) + dot(p5_1_lo2, x1_2) + dot(p5_1_lo3, x1_3) + dot(p5_1_hi0, x1_4) + dot(p5_1_hi1, x1_5) + dot(p5_1_hi2, x1_6) + dot(p5_1_hi3, x1_7))) - p5_1_mm * xs1;
          let p5_1_s2 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x2_0) + dot(p5_1_lo1, x2_1) + dot(p5_1_lo2, x2_2) + dot(p5_1_lo3, x2_3) + dot(p5_1_hi0, x2_4) + dot(p5_1_hi1, x2_5) + dot(p5_1_hi2, x2_6) + dot(p5_1_hi3, x2_7))) - p5_1_mm * xs2;
          let p5_1_s3 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x3_0) + dot(p5_1_lo1, x3_1) + dot(p5_1_lo2, x3_2) + dot(p5_1_lo3, x3_3) + dot(p5_1_hi0, x3_4) + dot(p5_1_hi1, x3_5) + dot(p5_1_hi2, x3_6) + dot(p5_1_hi3, x3_7))) - p5_1_mm * xs3;
          let p5_1_s4 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x4_0) + dot(p5_1_lo1, x4_1) + dot(p5_1_lo2, x4_2) + dot(p5_1_lo3, x4_3) + dot(p5_1_hi0, x4_4) + dot(p5_1_hi1, x4_5) + dot(p5_1_hi2, x4_6) + dot(p5_1_hi3, x4_7))) - p5_1_mm * xs4;
          let p5_1_s5 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x5_0) + dot(p5_1_lo1, x5_1) + dot(p5_1_lo2, x5_2) + dot(p5_1_lo3, x5_3) + dot(p5_1_hi0, x5_4) + dot(p5_1_hi1, x5_5) + dot(p5_1_hi2, x5_6) + dot(p5_1_hi3, x5_7))) - p5_1_mm * xs5;
          let p5_1_s6 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x6_0) + dot(p5_1_lo1, x6_1) + dot(p5_1_lo2, x6_2) + dot(p5_1_lo3, x6_3) + dot(p5_1_hi0, x6_4) + dot(p5_1_hi1, x6_5) + dot(p5_1_hi2, x6_6) + dot(p5_1_hi3, x6_7))) - p5_1_mm * xs6;
          let p5_1_s7 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x7_0) + dot(p5_1_lo1, x7_1) + dot(p5_1_lo2, x7_2) + dot(p5_1_lo3, x7_3) + dot(p5_1_hi0, x7_4) + dot(p5_1_hi1, x7_5) + dot(p5_1_hi2, x7_6) + dot(p5_1_hi3, x7_7))) - p5_1_mm * xs7;
          let p5_1_s8 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x8_0) + dot(p5_1_lo1, x8_1) + dot(p5_1_lo2, x8_2) + dot(p5_1_lo3, x8_3) + dot(p5_1_hi0, x8_4) + dot(p5_1_hi1, x8_5) + dot(p5_1_hi2, x8_6) + dot(p5_1_hi3, x8_7))) - p5_1_mm * xs8;
          let p5_1_s9 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x9_0) + dot(p5_1_lo1, x9_1) + dot(p5_1_lo2, x9_2) + dot(p5_1_lo3, x9_3) + dot(p5_1_hi0, x9_4) + dot(p5_1_hi1, x9_5) + dot(p5_1_hi2, x9_6) + dot(p5_1_hi3, x9_7))) - p5_1_mm * xs9;
          let p5_1_s10 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x10_0) + dot(p5_1_lo1, x10_1) + dot(p5_1_lo2, x10_2) + dot(p5_1_lo3, x10_3) + dot(p5_1_hi0, x10_4) + dot(p5_1_hi1, x10_5) + dot(p5_1_hi2, x10_6) + dot(p5_1_hi3, x10_7))) - p5_1_mm * xs10;
          let p5_1_s11 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x11_0) + dot(p5_1_lo1, x11_1) + dot(p5_1_lo2, x11_2) + dot(p5_1_lo3, x11_3) + dot(p5_1_hi0, x11_4) + dot(p5_1_hi1, x11_5) + dot(p5_1_hi2, x11_6) + dot(p5_1_hi3, x11_7))) - p5_1_mm * xs11;
          let p5_1_s12 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x12_0) + dot(p5_1_lo1, x12_1) + dot(p5_1_lo2, x12_2) + dot(p5_1_lo3, x12_3) + dot(p5_1_hi0, x12_4) + dot(p5_1_hi1, x12_5) + dot(p5_1_hi2, x12_6) + dot(p5_1_hi3, x12_7))) - p5_1_mm * xs12;
          let p5_1_s13 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x13_0) + dot(p5_1_lo1, x13_1) + dot(p5_1_lo2, x13_2) + dot(p5_1_lo3, x13_3) + dot(p5_1_hi0, x13_4) + dot(p5_1_hi1, x13_5) + dot(p5_1_hi2, x13_6) + dot(p5_1_hi3, x13_7))) - p5_1_mm * xs13;
          let p5_1_s14 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x14_0) + dot(p5_1_lo1, x14_1) + dot(p5_1_lo2, x14_2) + dot(p5_1_lo3, x14_3) + dot(p5_1_hi0, x14_4) + dot(p5_1_hi1, x14_5) + dot(p5_1_hi2, x14_6) + dot(p5_1_hi3, x14_7))) - p5_1_mm * xs14;
          let p5_1_s15 = p5_1_ds * (255.0 * (dot(p5_1_lo0, x15_0) + dot(p5_1_lo1, x15_1) + dot(p5_1_lo2, x15_2) + dot(p5_1_lo3, x15_3) + dot(p5_1_hi0, x15_4) + dot(p5_1_hi1, x15_5) + dot(p5_1_hi2, x15_6) + dot(p5_1_hi3, x15_7))) - p5_1_mm * xs15;
          a5_1_0 += p5_1_s0;
          a5_1_1 += p5_1_s1;
          a5_1_2 += p5_1_s2;
          a5_1_3 += p5_1_s3;
          a5_1_4 += p5_1_s4;
          a5_1_5 += p5_1_s5;
          a5_1_6 += p5_1_s6;
          a5_1_7 += p5_1_s7;
          a5_1_8 += p5_1_s8;
          a5_1_9 += p5_1_s9;
          a5_1_10 += p5_1_s10;
          a5_1_11 += p5_1_s11;
          a5_1_12 += p5_1_s12;
          a5_1_13 += p5_1_s13;
          a5_1_14 += p5_1_s14;
          a5_1_15 += p5_1_s15;
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
          let p6_0_s1 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x1_0) + dot(p6_0_lo1, x1_1) + dot(p6_0_lo2, x1_2) + dot(p6_0_lo3, x1_3) + dot(p6_0_hi0, x1_4) + dot(p6_0_hi1, x1_5) + dot(p6_0_hi2, x1_6) + dot(p6_0_hi3, x1_7))) - p6_0_mm * xs1;
          let p6_0_s2 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x2_0) + dot(p6_0_lo1, x2_1) + dot(p6_0_lo2, x2_2) + dot(p6_0_lo3, x2_3) + dot(p6_0_hi0, x2_4) + dot(p6_0_hi1, x2_5) + dot(p6_0_hi2, x2_6) + dot(p6_0_hi3, x2_7))) - p6_0_mm * xs2;
          let p6_0_s3 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x3_0) + dot(p6_0_lo1, x3_1) + dot(p6_0_lo2, x3_2) + dot(p6_0_lo3, x3_3) + dot(p6_0_hi0, x3_4) + dot(p6_0_hi1, x3_5) + dot(p6_0_hi2, x3_6) + dot(p6_0_hi3, x3_7))) - p6_0_mm * xs3;
          let p6_0_s4 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x4_0) + dot(p6_0_lo1, x4_1) + dot(p6_0_lo2, x4_2) + dot(p6_0_lo3, x4_3) + dot(p6_0_hi0, x4_4) + dot(p6_0_hi1, x4_5) + dot(p6_0_hi2, x4_6) + dot(p6_0_hi3, x4_7))) - p6_0_mm * xs4;
          let p6_0_s5 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x5_0) + dot(p6_0_lo1, x5_1) + dot(p6_0_lo2, x5_2) + dot(p6_0_lo3, x5_3) + dot(p6_0_hi0, x5_4) + dot(p6_0_hi1, x5_5) + dot(p6_0_hi2, x5_6) + dot(p6_0_hi3, x5_7))) - p6_0_mm * xs5;
          let p6_0_s6 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x6_0) + dot(p6_0_lo1, x6_1) + dot(p6_0_lo2, x6_2) + dot(p6_0_lo3, x6_3) + dot(p6_0_hi0, x6_4) + dot(p6_0_hi1, x6_5) + dot(p6_0_hi2, x6_6) + dot(p6_0_hi3, x6_7))) - p6_0_mm * xs6;
          let p6_0_s7 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x7_0) + dot(p6_0_lo1, x7_1) + dot(p6_0_lo2, x7_2) + dot(p6_0_lo3, x7_3) + dot(p6_0_hi0, x7_4) + dot(p6_0_hi1, x7_5) + dot(p6_0_hi2, x7_6) + dot(p6_0_hi3, x7_7))) - p6_0_mm * xs7;
          let p6_0_s8 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x8_0) + dot(p6_0_lo1, x8_1) + dot(p6_0_lo2, x8_2) + dot(p6_0_lo3, x8_3) + dot(p6_0_hi0, x8_4) + dot(p6_0_hi1, x8_5) + dot(p6_0_hi2, x8_6) + dot(p6_0_hi3, x8_7))) - p6_0_mm * xs8;
          let p6_0_s9 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x9_0) + dot(p6_0_lo1, x9_1) + dot(p6_0_lo2, x9_2) + dot(p6_0_lo3, x9_3) + dot(p6_0_hi0, x9_4) + dot(p6_0_hi1, x9_5) + dot(p6_0_hi2, x9_6) + dot(p6_0_hi3, x9_7))) - p6_0_mm * xs9;
          let p6_0_s10 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x10_0) + dot(p6_0_lo1, x10_1) + dot(p6_0_lo2, x10_2) + dot(p6_0_lo3, x10_3) + dot(p6_0_hi0, x10_4) + dot(p6_0_hi1, x10_5) + dot(p6_0_hi2, x10_6) + dot(p6_0_hi3, x10_7))) - p6_0_mm * xs10;
          let p6_0_s11 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x11_0) + dot(p6_0_lo1, x11_1) + dot(p6_0_lo2, x11_2) + dot(p6_0_lo3, x11_3) + dot(p6_0_hi0, x11_4) + dot(p6_0_hi1, x11_5) + dot(p6_0_hi2, x11_6) + dot(p6_0_hi3, x11_7))) - p6_0_mm * xs11;
          let p6_0_s12 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x12_0) + dot(p6_0_lo1, x12_1) + dot(p6_0_lo2, x12_2) + dot(p6_0_lo3, x12_3) + dot(p6_0_hi0, x12_4) + dot(p6_0_hi1, x12_5) + dot(p6_0_hi2, x12_6) + dot(p6_0_hi3, x12_7))) - p6_0_mm * xs12;
          let p6_0_s13 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x13_0) + dot(p6_0_lo1, x13_1) + dot(p6_0_lo2, x13_2) + dot(p6_0_lo3, x13_3) + dot(p6_0_hi0, x13_4) + dot(p6_0_hi1, x13_5) + dot(p6_0_hi2, x13_6) + dot(p6_0_hi3, x13_7))) - p6_0_mm * xs13;
          let p6_0_s14 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x14_0) + dot(p6_0_lo1, x14_1) + dot(p6_0_lo2, x14_2) + dot(p6_0_lo3, x14_3) + dot(p6_0_hi0, x14_4) + dot(p6_0_hi1, x14_5) + dot(p6_0_hi2, x14_6) + dot(p6_0_hi3, x14_7))) - p6_0_mm * xs14;
          let p6_0_s15 = p6_0_ds * (255.0 * (dot(p6_0_lo0, x15_0) + dot(p6_0_lo1, x15_1) + dot(p6_0_lo2, x15_2) + dot(p6_0_lo3, x15_3) + dot(p6_0_hi0, x15_4) + dot(p6_0_hi1, x15_5) + dot(p6_0_hi2, x15_6) + dot(p6_0_hi3, x15_7))) - p6_0_mm * xs15;
          a6_0_0 += p6_0_s0;
          a6_0_1 += p6_0_s1;
          a6_0_2 += p6_0_s2;
          a6_0_3 += p6_0_s3;
          a6_0_4 += p6_0_s4;
          a6_0_5 += p6_0_s5;
          a6_0_6 += p6_0_s6;
          a6_0_7 += p6_0_s7;
          a6_0_8 += p6_0_s8;
          a6_0_9 += p6_0_s9;
          a6_0_10 += p6_0_s10;
          a6_0_11 += p6_0_s11;
          a6_0_12 += p6_0_s12;
          a6_0_13 += p6_0_s13;
          a6_0_14 += p6_0_s14;
          a6_0_15 += p6_0_s15;
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
          let p6_1_s1 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x1_0) + dot(p6_1_lo1, x1_1) + dot(p6_1_lo2, x1_2) + dot(p6_1_lo3, x1_3) + dot(p6_1_hi0, x1_4) + dot(p6_1_hi1, x1_5) + dot(p6_1_hi2, x1_6) + dot(p6_1_hi3, x1_7))) - p6_1_mm * xs1;
          let p6_1_s2 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x2_0) + dot(p6_1_lo1, x2_1) + dot(p6_1_lo2, x2_2) + dot(p6_1_lo3, x2_3) + dot(p6_1_hi0, x2_4) + dot(p6_1_hi1, x2_5) + dot(p6_1_hi2, x2_6) + dot(p6_1_hi3, x2_7))) - p6_1_mm * xs2;
          let p6_1_s3 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x3_0) + dot(p6_1_lo1, x3_1) + dot(p6_1_lo2, x3_2) + dot(p6_1_lo3, x3_3) + dot(p6_1_hi0, x3_4) + dot(p6_1_hi1, x3_5) + dot(p6_1_hi2, x3_6) + dot(p6_1_hi3, x3_7))) - p6_1_mm * xs3;
          let p6_1_s4 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x4_0) + dot(p6_1_lo1, x4_1) + dot(p6_1_lo2, x4_2) + dot(p6_1_lo3, x4_3) + dot(p6_1_hi0, x4_4) + dot(p6_1_hi1, x4_5) + dot(p6_1_hi2, x4_6) + dot(p6_1_hi3, x4_7))) - p6_1_mm * xs4;
          let p6_1_s5 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x5_0) + dot(p6_1_lo1, x5_1) + dot(p6_1_lo2, x5_2) + dot(p6_1_lo3, x5_3) + dot(p6_1_hi0, x5_4) + dot(p6_1_hi1, x5_5) + dot(p6_1_hi2, x5_6) + dot(p6_1_hi3, x5_7))) - p6_1_mm * xs5;
          let p6_1_s6 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x6_0) + dot(p6_1_lo1, x6_1) + dot(p6_1_lo2, x6_2) + dot(p6_1_lo3, x6_3) + dot(p6_1_hi0, x6_4) + dot(p6_1_hi1, x6_5) + dot(p6_1_hi2, x6_6) + dot(p6_1_hi3, x6_7))) - p6_1_mm * xs6;
          let p6_1_s7 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x7_0) + dot(p6_1_lo1, x7_1) + dot(p6_1_lo2, x7_2) + dot(p6_1_lo3, x7_3) + dot(p6_1_hi0, x7_4) + dot(p6_1_hi1, x7_5) + dot(p6_1_hi2, x7_6) + dot(p6_1_hi3, x7_7))) - p6_1_mm * xs7;
          let p6_1_s8 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x8_0) + dot(p6_1_lo1, x8_1) + dot(p6_1_lo2, x8_2) + dot(p6_1_lo3, x8_3) + dot(p6_1_hi0, x8_4) + dot(p6_1_hi1, x8_5) + dot(p6_1_hi2, x8_6) + dot(p6_1_hi3, x8_7))) - p6_1_mm * xs8;
          let p6_1_s9 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x9_0) + dot(p6_1_lo1, x9_1) + dot(p6_1_lo2, x9_2) + dot(p6_1_lo3, x9_3) + dot(p6_1_hi0, x9_4) + dot(p6_1_hi1, x9_5) + dot(p6_1_hi2, x9_6) + dot(p6_1_hi3, x9_7))) - p6_1_mm * xs9;
          let p6_1_s10 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x10_0) + dot(p6_1_lo1, x10_1) + dot(p6_1_lo2, x10_2) + dot(p6_1_lo3, x10_3) + dot(p6_1_hi0, x10_4) + dot(p6_1_hi1, x10_5) + dot(p6_1_hi2, x10_6) + dot(p6_1_hi3, x10_7))) - p6_1_mm * xs10;
          let p6_1_s11 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x11_0) + dot(p6_1_lo1, x11_1) + dot(p6_1_lo2, x11_2) + dot(p6_1_lo3, x11_3) + dot(p6_1_hi0, x11_4) + dot(p6_1_hi1, x11_5) + dot(p6_1_hi2, x11_6) + dot(p6_1_hi3, x11_7))) - p6_1_mm * xs11;
          let p6_1_s12 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x12_0) + dot(p6_1_lo1, x12_1) + dot(p6_1_lo2, x12_2) + dot(p6_1_lo3, x12_3) + dot(p6_1_hi0, x12_4) + dot(p6_1_hi1, x12_5) + dot(p6_1_hi2, x12_6) + dot(p6_1_hi3, x12_7))) - p6_1_mm * xs12;
          let p6_1_s13 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x13_0) + dot(p6_1_lo1, x13_1) + dot(p6_1_lo2, x13_2) + dot(p6_1_lo3, x13_3) + dot(p6_1_hi0, x13_4) + dot(p6_1_hi1, x13_5) + dot(p6_1_hi2, x13_6) + dot(p6_1_hi3, x13_7))) - p6_1_mm * xs13;
          let p6_1_s14 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x14_0) + dot(p6_1_lo1, x14_1) + dot(p6_1_lo2, x14_2) + dot(p6_1_lo3, x14_3) + dot(p6_1_hi0, x14_4) + dot(p6_1_hi1, x14_5) + dot(p6_1_hi2, x14_6) + dot(p6_1_hi3, x14_7))) - p6_1_mm * xs14;
          let p6_1_s15 = p6_1_ds * (255.0 * (dot(p6_1_lo0, x15_0) + dot(p6_1_lo1, x15_1) + dot(p6_1_lo2, x15_2) + dot(p6_1_lo3, x15_3) + dot(p6_1_hi0, x15_4) + dot(p6_1_hi1, x15_5) + dot(p6_1_hi2, x15_6) + dot(p6_1_hi3, x15_7))) - p6_1_mm * xs15;
          a6_1_0 += p6_1_s0;
          a6_1_1 += p6_1_s1;
          a6_1_2 += p6_1_s2;
          a6_1_3 += p6_1_s3;
          a6_1_4 += p6_1_s4;
          a6_1_5 += p6_1_s5;
          a6_1_6 += p6_1_s6;
          a6_1_7 += p6_1_s7;
          a6_1_8 += p6_1_s8;
          a6_1_9 += p6_1_s9;
          a6_1_10 += p6_1_s10;
          a6_1_11 += p6_1_s11;
          a6_1_12 += p6_1_s12;
          a6_1_13 += p6_1_s13;
          a6_1_14 += p6_1_s14;
          a6_1_15 += p6_1_s15;
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
          let p7_0_s1 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x1_0) + dot(p7_0_lo1, x1_1) + dot(p7_0_lo2, x1_2) + dot(p7_0_lo3, x1_3) + dot(p7_0_hi0, x1_4) + dot(p7_0_hi1, x1_5) + dot(p7_0_hi2, x1_6) + dot(p7_0_hi3, x1_7))) - p7_0_mm * xs1;
          let p7_0_s2 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x2_0) + dot(p7_0_lo1, x2_1) + dot(p7_0_lo2, x2_2) + dot(p7_0_lo3, x2_3) + dot(p7_0_hi0, x2_4) + dot(p7_0_hi1, x2_5) + dot(p7_0_hi2, x2_6) + dot(p7_0_hi3, x2_7))) - p7_0_mm * xs2;
          let p7_0_s3 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x3_0) + dot(p7_0_lo1, x3_1) + dot(p7_0_lo2, x3_2) + dot(p7_0_lo3, x3_3) + dot(p7_0_hi0, x3_4) + dot(p7_0_hi1, x3_5) + dot(p7_0_hi2, x3_6) + dot(p7_0_hi3, x3_7))) - p7_0_mm * xs3;
          let p7_0_s4 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x4_0) + dot(p7_0_lo1, x4_1) + dot(p7_0_lo2, x4_2) + dot(p7_0_lo3, x4_3) + dot(p7_0_hi0, x4_4) + dot(p7_0_hi1, x4_5) + dot(p7_0_hi2, x4_6) + dot(p7_0_hi3, x4_7))) - p7_0_mm * xs4;
          let p7_0_s5 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x5_0) + dot(p7_0_lo1, x5_1) + dot(p7_0_lo2, x5_2) + dot(p7_0_lo3, x5_3) + dot(p7_0_hi0, x5_4) + dot(p7_0_hi1, x5_5) + dot(p7_0_hi2, x5_6) + dot(p7_0_hi3, x5_7))) - p7_0_mm * xs5;
          let p7_0_s6 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x6_0) + dot(p7_0_lo1, x6_1) + dot(p7_0_lo2, x6_2) + dot(p7_0_lo3, x6_3) + dot(p7_0_hi0, x6_4) + dot(p7_0_hi1, x6_5) + dot(p7_0_hi2, x6_6) + dot(p7_0_hi3, x6_7))) - p7_0_mm * xs6;
          let p7_0_s7 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x7_0) + dot(p7_0_lo1, x7_1) + dot(p7_0_lo2, x7_2) + dot(p7_0_lo3, x7_3) + dot(p7_0_hi0, x7_4) + dot(p7_0_hi1, x7_5) + dot(p7_0_hi2, x7_6) + dot(p7_0_hi3, x7_7))) - p7_0_mm * xs7;
          let p7_0_s8 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x8_0) + dot(p7_0_lo1, x8_1) + dot(p7_0_lo2, x8_2) + dot(p7_0_lo3, x8_3) + dot(p7_0_hi0, x8_4) + dot(p7_0_hi1, x8_5) + dot(p7_0_hi2, x8_6) + dot(p7_0_hi3, x8_7))) - p7_0_mm * xs8;
          let p7_0_s9 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x9_0) + dot(p7_0_lo1, x9_1) + dot(p7_0_lo2, x9_2) + dot(p7_0_lo3, x9_3) + dot(p7_0_hi0, x9_4) + dot(p7_0_hi1, x9_5) + dot(p7_0_hi2, x9_6) + dot(p7_0_hi3, x9_7))) - p7_0_mm * xs9;
          let p7_0_s10 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x10_0) + dot(p7_0_lo1, x10_1) + dot(p7_0_lo2, x10_2) + dot(p7_0_lo3, x10_3) + dot(p7_0_hi0, x10_4) + dot(p7_0_hi1, x10_5) + dot(p7_0_hi2, x10_6) + dot(p7_0_hi3, x10_7))) - p7_0_mm * xs10;
          let p7_0_s11 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x11_0) + dot(p7_0_lo1, x11_1) + dot(p7_0_lo2, x11_2) + dot(p7_0_lo3, x11_3) + dot(p7_0_hi0, x11_4) + dot(p7_0_hi1, x11_5) + dot(p7_0_hi2, x11_6) + dot(p7_0_hi3, x11_7))) - p7_0_mm * xs11;
          let p7_0_s12 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x12_0) + dot(p7_0_lo1, x12_1) + dot(p7_0_lo2, x12_2) + dot(p7_0_lo3, x12_3) + dot(p7_0_hi0, x12_4) + dot(p7_0_hi1, x12_5) + dot(p7_0_hi2, x12_6) + dot(p7_0_hi3, x12_7))) - p7_0_mm * xs12;
          let p7_0_s13 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x13_0) + dot(p7_0_lo1, x13_1) + dot(p7_0_lo2, x13_2) + dot(p7_0_lo3, x13_3) + dot(p7_0_hi0, x13_4) + dot(p7_0_hi1, x13_5) + dot(p7_0_hi2, x13_6) + dot(p7_0_hi3, x13_7))) - p7_0_mm * xs13;
          let p7_0_s14 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x14_0) + dot(p7_0_lo1, x14_1) + dot(p7_0_lo2, x14_2) + dot(p7_0_lo3, x14_3) + dot(p7_0_hi0, x14_4) + dot(p7_0_hi1, x14_5) + dot(p7_0_hi2, x14_6) + dot(p7_0_hi3, x14_7))) - p7_0_mm * xs14;
          let p7_0_s15 = p7_0_ds * (255.0 * (dot(p7_0_lo0, x15_0) + dot(p7_0_lo1, x15_1) + dot(p7_0_lo2, x15_2) + dot(p7_0_lo3, x15_3) + dot(p7_0_hi0, x15_4) + dot(p7_0_hi1, x15_5) + dot(p7_0_hi2, x15_6) + dot(p7_0_hi3, x15_7))) - p7_0_mm * xs15;
          a7_0_0 += p7_0_s0;
          a7_0_1 += p7_0_s1;
          a7_0_2 += p7_0_s2;
          a7_0_3 += p7_0_s3;
          a7_0_4 += p7_0_s4;
          a7_0_5 += p7_0_s5;
          a7_0_6 += p7_0_s6;
          a7_0_7 += p7_0_s7;
          a7_0_8 += p7_0_s8;
          a7_0_9 += p7_0_s9;
          a7_0_10 += p7_0_s10;
          a7_0_11 += p7_0_s11;
          a7_0_12 += p7_0_s12;
          a7_0_13 += p7_0_s13;
          a7_0_14 += p7_0_s14;
          a7_0_15 += p7_0_s15;
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
          let p7_1_s1 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x1_0) + dot(p7_1_lo1, x1_1) + dot(p7_1_lo2, x1_2) + dot(p7_1_lo3, x1_3) + dot(p7_1_hi0, x1_4) + dot(p7_1_hi1, x1_5) + dot(p7_1_hi2, x1_6) + dot(p7_1_hi3, x1_7))) - p7_1_mm * xs1;
          let p7_1_s2 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x2_0) + dot(p7_1_lo1, x2_1) + dot(p7_1_lo2, x2_2) + dot(p7_1_lo3, x2_3) + dot(p7_1_hi0, x2_4) + dot(p7_1_hi1, x2_5) + dot(p7_1_hi2, x2_6) + dot(p7_1_hi3, x2_7))) - p7_1_mm * xs2;
          let p7_1_s3 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x3_0) + dot(p7_1_lo1, x3_1) + dot(p7_1_lo2, x3_2) + dot(p7_1_lo3, x3_3) + dot(p7_1_hi0, x3_4) + dot(p7_1_hi1, x3_5) + dot(p7_1_hi2, x3_6) + dot(p7_1_hi3, x3_7))) - p7_1_mm * xs3;
          let p7_1_s4 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x4_0) + dot(p7_1_lo1, x4_1) + dot(p7_1_lo2, x4_2) + dot(p7_1_lo3, x4_3) + dot(p7_1_hi0, x4_4) + dot(p7_1_hi1, x4_5) + dot(p7_1_hi2, x4_6) + dot(p7_1_hi3, x4_7))) - p7_1_mm * xs4;
          let p7_1_s5 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x5_0) + dot(p7_1_lo1, x5_1) + dot(p7_1_lo2, x5_2) + dot(p7_1_lo3, x5_3) + dot(p7_1_hi0, x5_4) + dot(p7_1_hi1, x5_5) + dot(p7_1_hi2, x5_6) + dot(p7_1_hi3, x5_7))) - p7_1_mm * xs5;
          let p7_1_s6 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x6_0) + dot(p7_1_lo1, x6_1) + dot(p7_1_lo2, x6_2) + dot(p7_1_lo3, x6_3) + dot(p7_1_hi0, x6_4) + dot(p7_1_hi1, x6_5) + dot(p7_1_hi2, x6_6) + dot(p7_1_hi3, x6_7))) - p7_1_mm * xs6;
          let p7_1_s7 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x7_0) + dot(p7_1_lo1, x7_1) + dot(p7_1_lo2, x7_2) + dot(p7_1_lo3, x7_3) + dot(p7_1_hi0, x7_4) + dot(p7_1_hi1, x7_5) + dot(p7_1_hi2, x7_6) + dot(p7_1_hi3, x7_7))) - p7_1_mm * xs7;
          let p7_1_s8 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x8_0) + dot(p7_1_lo1, x8_1) + dot(p7_1_lo2, x8_2) + dot(p7_1_lo3, x8_3) + dot(p7_1_hi0, x8_4) + dot(p7_1_hi1, x8_5) + dot(p7_1_hi2, x8_6) + dot(p7_1_hi3, x8_7))) - p7_1_mm * xs8;
          let p7_1_s9 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x9_0) + dot(p7_1_lo1, x9_1) + dot(p7_1_lo2, x9_2) + dot(p7_1_lo3, x9_3) + dot(p7_1_hi0, x9_4) + dot(p7_1_hi1, x9_5) + dot(p7_1_hi2, x9_6) + dot(p7_1_hi3, x9_7))) - p7_1_mm * xs9;
          let p7_1_s10 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x10_0) + dot(p7_1_lo1, x10_1) + dot(p7_1_lo2, x10_2) + dot(p7_1_lo3, x10_3) + dot(p7_1_hi0, x10_4) + dot(p7_1_hi1, x10_5) + dot(p7_1_hi2, x10_6) + dot(p7_1_hi3, x10_7))) - p7_1_mm * xs10;
          let p7_1_s11 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x11_0) + dot(p7_1_lo1, x11_1) + dot(p7_1_lo2, x11_2) + dot(p7_1_lo3, x11_3) + dot(p7_1_hi0, x11_4) + dot(p7_1_hi1, x11_5) + dot(p7_1_hi2, x11_6) + dot(p7_1_hi3, x11_7))) - p7_1_mm * xs11;
          let p7_1_s12 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x12_0) + dot(p7_1_lo1, x12_1) + dot(p7_1_lo2, x12_2) + dot(p7_1_lo3, x12_3) + dot(p7_1_hi0, x12_4) + dot(p7_1_hi1, x12_5) + dot(p7_1_hi2, x12_6) + dot(p7_1_hi3, x12_7))) - p7_1_mm * xs12;
          let p7_1_s13 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x13_0) + dot(p7_1_lo1, x13_1) + dot(p7_1_lo2, x13_2) + dot(p7_1_lo3, x13_3) + dot(p7_1_hi0, x13_4) + dot(p7_1_hi1, x13_5) + dot(p7_1_hi2, x13_6) + dot(p7_1_hi3, x13_7))) - p7_1_mm * xs13;
          let p7_1_s14 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x14_0) + dot(p7_1_lo1, x14_1) + dot(p7_1_lo2, x14_2) + dot(p7_1_lo3, x14_3) + dot(p7_1_hi0, x14_4) + dot(p7_1_hi1, x14_5) + dot(p7_1_hi2, x14_6) + dot(p7_1_hi3, x14_7))) - p7_1_mm * xs14;
          let p7_1_s15 = p7_1_ds * (255.0 * (dot(p7_1_lo0, x15_0) + dot(p7_1_lo1, x15_1) + dot(p7_1_lo2, x15_2) + dot(p7_1_lo3, x15_3) + dot(p7_1_hi0, x15_4) + dot(p7_1_hi1, x15_5) + dot(p7_1_hi2, x15_6) + dot(p7_1_hi3, x15_7))) - p7_1_mm * xs15;
          a7_1_0 += p7_1_s0;
          a7_1_1 += p7_1_s1;
          a7_1_2 += p7_1_s2;
          a7_1_3 += p7_1_s3;
          a7_1_4 += p7_1_s4;
          a7_1_5 += p7_1_s5;
          a7_1_6 += p7_1_s6;
          a7_1_7 += p7_1_s7;
          a7_1_8 += p7_1_s8;
          a7_1_9 += p7_1_s9;
          a7_1_10 += p7_1_s10;
          a7_1_11 += p7_1_s11;
          a7_1_12 += p7_1_s12;
          a7_1_13 += p7_1_s13;
          a7_1_14 += p7_1_s14;
          a7_1_15 += p7_1_s15;
        }
      }
    }
  }
  if (seg == 0u) {
    { let u = ub + 0u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a0_0_0; let d1 = a0_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a0_0_1; let d1 = a0_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a0_0_2; let d1 = a0_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a0_0_3; let d1 = a0_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a0_0_4; let d1 = a0_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a0_0_5; let d1 = a0_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a0_0_6; let d1 = a0_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a0_0_7; let d1 = a0_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a0_0_8; let d1 = a0_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a0_0_9; let d1 = a0_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a0_0_10; let d1 = a0_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a0_0_11; let d1 = a0_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a0_0_12; let d1 = a0_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a0_0_13; let d1 = a0_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a0_0_14; let d1 = a0_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a0_0_15; let d1 = a0_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 1u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a1_0_0; let d1 = a1_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a1_0_1; let d1 = a1_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a1_0_2; let d1 = a1_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a1_0_3; let d1 = a1_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a1_0_4; let d1 = a1_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a1_0_5; let d1 = a1_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a1_0_6; let d1 = a1_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a1_0_7; let d1 = a1_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a1_0_8; let d1 = a1_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a1_0_9; let d1 = a1_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a1_0_10; let d1 = a1_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a1_0_11; let d1 = a1_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a1_0_12; let d1 = a1_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a1_0_13; let d1 = a1_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a1_0_14; let d1 = a1_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a1_0_15; let d1 = a1_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 2u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a2_0_0; let d1 = a2_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a2_0_1; let d1 = a2_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a2_0_2; let d1 = a2_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a2_0_3; let d1 = a2_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a2_0_4; let d1 = a2_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a2_0_5; let d1 = a2_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a2_0_6; let d1 = a2_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a2_0_7; let d1 = a2_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a2_0_8; let d1 = a2_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a2_0_9; let d1 = a2_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a2_0_10; let d1 = a2_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a2_0_11; let d1 = a2_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a2_0_12; let d1 = a2_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a2_0_13; let d1 = a2_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a2_0_14; let d1 = a2_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a2_0_15; let d1 = a2_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 3u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a3_0_0; let d1 = a3_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a3_0_1; let d1 = a3_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a3_0_2; let d1 = a3_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a3_0_3; let d1 = a3_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a3_0_4; let d1 = a3_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a3_0_5; let d1 = a3_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a3_0_6; let d1 = a3_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a3_0_7; let d1 = a3_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a3_0_8; let d1 = a3_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a3_0_9; let d1 = a3_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a3_0_10; let d1 = a3_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a3_0_11; let d1 = a3_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a3_0_12; let d1 = a3_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a3_0_13; let d1 = a3_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a3_0_14; let d1 = a3_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a3_0_15; let d1 = a3_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 4u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a4_0_0; let d1 = a4_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a4_0_1; let d1 = a4_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a4_0_2; let d1 = a4_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a4_0_3; let d1 = a4_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a4_0_4; let d1 = a4_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a4_0_5; let d1 = a4_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a4_0_6; let d1 = a4_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a4_0_7; let d1 = a4_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a4_0_8; let d1 = a4_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a4_0_9; let d1 = a4_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a4_0_10; let d1 = a4_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a4_0_11; let d1 = a4_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a4_0_12; let d1 = a4_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a4_0_13; let d1 = a4_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a4_0_14; let d1 = a4_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a4_0_15; let d1 = a4_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 5u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a5_0_0; let d1 = a5_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a5_0_1; let d1 = a5_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a5_0_2; let d1 = a5_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a5_0_3; let d1 = a5_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a5_0_4; let d1 = a5_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a5_0_5; let d1 = a5_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a5_0_6; let d1 = a5_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a5_0_7; let d1 = a5_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a5_0_8; let d1 = a5_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a5_0_9; let d1 = a5_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a5_0_10; let d1 = a5_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a5_0_11; let d1 = a5_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a5_0_12; let d1 = a5_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a5_0_13; let d1 = a5_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a5_0_14; let d1 = a5_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a5_0_15; let d1 = a5_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 6u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a6_0_0; let d1 = a6_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a6_0_1; let d1 = a6_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a6_0_2; let d1 = a6_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a6_0_3; let d1 = a6_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a6_0_4; let d1 = a6_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a6_0_5; let d1 = a6_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a6_0_6; let d1 = a6_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a6_0_7; let d1 = a6_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a6_0_8; let d1 = a6_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a6_0_9; let d1 = a6_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a6_0_10; let d1 = a6_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a6_0_11; let d1 = a6_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a6_0_12; let d1 = a6_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a6_0_13; let d1 = a6_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a6_0_14; let d1 = a6_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a6_0_15; let d1 = a6_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
    { let u = ub + 7u; if (u < 1536u) {
      if (t0 + 0u < nT) { let t = t0 + 0u; let pos = step.pos0 + t; let d0 = a7_0_0; let d1 = a7_1_0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 1u < nT) { let t = t0 + 1u; let pos = step.pos0 + t; let d0 = a7_0_1; let d1 = a7_1_1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 2u < nT) { let t = t0 + 2u; let pos = step.pos0 + t; let d0 = a7_0_2; let d1 = a7_1_2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 3u < nT) { let t = t0 + 3u; let pos = step.pos0 + t; let d0 = a7_0_3; let d1 = a7_1_3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 4u < nT) { let t = t0 + 4u; let pos = step.pos0 + t; let d0 = a7_0_4; let d1 = a7_1_4;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 5u < nT) { let t = t0 + 5u; let pos = step.pos0 + t; let d0 = a7_0_5; let d1 = a7_1_5;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 6u < nT) { let t = t0 + 6u; let pos = step.pos0 + t; let d0 = a7_0_6; let d1 = a7_1_6;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 7u < nT) { let t = t0 + 7u; let pos = step.pos0 + t; let d0 = a7_0_7; let d1 = a7_1_7;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 8u < nT) { let t = t0 + 8u; let pos = step.pos0 + t; let d0 = a7_0_8; let d1 = a7_1_8;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 9u < nT) { let t = t0 + 9u; let pos = step.pos0 + t; let d0 = a7_0_9; let d1 = a7_1_9;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 10u < nT) { let t = t0 + 10u; let pos = step.pos0 + t; let d0 = a7_0_10; let d1 = a7_1_10;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 11u < nT) { let t = t0 + 11u; let pos = step.pos0 + t; let d0 = a7_0_11; let d1 = a7_1_11;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 12u < nT) { let t = t0 + 12u; let pos = step.pos0 + t; let d0 = a7_0_12; let d1 = a7_1_12;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 13u < nT) { let t = t0 + 13u; let pos = step.pos0 + t; let d0 = a7_0_13; let d1 = a7_1_13;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 14u < nT) { let t = t0 + 14u; let pos = step.pos0 + t; let d0 = a7_0_14; let d1 = a7_1_14;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
      if (t0 + 15u < nT) { let t = t0 + 15u; let pos = step.pos0 + t; let d0 = a7_0_15; let d1 = a7_1_15;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      }
    } }
  }
}