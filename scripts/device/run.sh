#!/usr/bin/env bash
# The one command for a lent GPU machine (see scripts/device/README.md): unpacks .device/ (made by
# scripts/device/pack.sh), then runs, in the order of PHASES (default "profile compare synthetic"):
#
#   profile    where a decode token's time goes (scripts/device/profile.ts on synthetic shapes,
#              PROF_MODELS: the 1B and 8B Q4_K_M): GPU ms per token per kernel family (timestamp
#              queries), wall ms per token with the default steps in flight and with one, busy fraction,
#              the argmax's µs → $OUT/profile.{json,md}; at most PROF_BUDGET_S (100 s) for it
#   compare    ours against llama.cpp's Vulkan backend on the same GGUF files, written here with random
#              weights (scripts/device/compare.ts: llama-bench tests through runLlamaBench for ours,
#              node-llama-cpp for llama.cpp): pp/tg at depth 0, then tg at each depth > 0 of DEPTHS for
#              both, KV cache KV_TYPE for both → $OUT/compare.{json,md}; depth tests of a model run only
#              while they fit before the deadline less the later models' estimated time (else listed as
#              skipped); it stops SYN_RESERVE_S (110 s) early to leave time for
#   kv         decode per KV cache type (issue 44): compare.ts with --kv-types KV_TYPES (f16,q8_0,q4_0) on
#              KV_MODELS (the 1B and 8B Q4_K_M), tg at KV_DEPTHS (0,4096) and pp at depth 0, each file
#              written once and both engines run on it once per type (llama.cpp's -ctk/-ctv, flash
#              attention on for Q8_0/Q4_0) → $OUT/kv.{json,md}; not in the default PHASES: run it as
#              PHASES=kv (or "kv synthetic", which keeps SYN_RESERVE_S for the synthetic phase)
#   synthetic  ours on synthetic shapes (scripts/bench-node.ts bundled: random weights made on the GPU,
#              vLLM definitions, roofline) → $OUT/synthetic.{json,md}
#   draft      speculative decoding (issue 45; not in the default PHASES: PHASES=draft): for each pair of
#              DRAFT_PAIRS (scripts/device/draft.ts), greedy decode with drafting beside the same runs
#              without on the same load — the 8B shape with the 1B shape as its draft, the 8B Q8_0 file
#              with its own Q4_0 copy (the acceptance upper bound random weights allow), and prompt lookup
#              on a summarising prompt → $OUT/draft.{json,md}; no pair starts after the deadline;
#              SMALL_BATCH (both | mmv | tile | trial; default both): the drafted runs with small batches
#              through mmv and through the prefill tile on the same load (both), or the engine option
#   small      small batches (issues 40/45; not in the default PHASES: PHASES=small, ~2–3 min): for
#              SB_MODELS (the 1B and 8B Q4_K_M shapes) scripts/device/small-batch.ts on one load per
#              small-batch attention of SB_ATTENTION (both: flash-decoding and the prefill kernel;
#              smallBatch 'trial': the load's own trial recorded): TTFT of SB_TOKENS-token prompts
#              (2,4,8) and a verify pass of as many tokens at each depth of SB_CONTEXTS (64,4096), through
#              mmv and through the prefill tile, against one decode step there → $OUT/small.{json,md}
#
# and prints both tables last ($OUT/summary.md). Everything is bounded by TOTAL_S (default 500 s from
# the start), so the command ends inside the device tool's 600 s limit. Log: $OUT/log.txt.
#
# Knobs (environment): TOTAL_S, PHASES, SB_MODELS, SB_TOKENS, SB_CONTEXTS (64,4096), SB_ATTENTION (both), SMALL_BATCH, DRAFT_PAIRS, DRAFT_TOKENS (64), DRAFT_REPS (2), DRAFT_MAX, PROF_MODELS, PROF_BUDGET_S, PROF_TOKENS (32), SYN_BUDGET_S (200),
# SYN_RESERVE_S, SYN_MODELS, CMP_MODELS,
# N_PROMPT (512: llama-bench's pp512), N_GEN (128), SYN_REPS (2), CMP_REPS (2), DEPTHS (compare's tg depths, "0,4096"; DRY
# "0,256"), KV_TYPE (f16 | f32 | q8_0 | q4_0, both engines' KV cache, f16), GGUF_DIR (default: under /tmp, /var/tmp or
# the repository, whichever file system has the most room; removed at the end), KV_MODELS, KV_TYPES
# (f16,q8_0,q4_0), KV_DEPTHS (0,4096; DRY 0,64), FILE_MODE (tiled |
# exact), WORK (/tmp/wgpu-bench).
# DRY=1: a local rehearsal without a GPU: tiny models, SwiftShader for ours, llama.cpp's Vulkan build
# falling back to its CPU path (no usable Vulkan device), OUT defaulting to .device-out/.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
DRY=${DRY:-0}
OUT=${OUT:-$ROOT/.device-out}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: >"$LOG"
say() { echo "[run $(elapsed)s] $*" | tee -a "$LOG" >&2; }

if [[ $DRY == 1 ]]; then
  TOTAL_S=${TOTAL_S:-240}
  SYN_BUDGET_S=${SYN_BUDGET_S:-60}
  SYN_RESERVE_S=${SYN_RESERVE_S:-40}
  SYN_MODELS=${SYN_MODELS:-synthetic:stories260k-f32}
  CMP_MODELS=${CMP_MODELS:-stories260k-q8_0,stories15m-q4_k_m}
  N_PROMPT=${N_PROMPT:-32}
  N_GEN=${N_GEN:-16}
  SYN_REPS=${SYN_REPS:-1}
  CMP_REPS=${CMP_REPS:-1}
  DEPTHS=${DEPTHS:-0,256}
  PROF_MODELS=${PROF_MODELS:-synthetic:stories260k-f32,synthetic:stories15m-q4_k_m}
  PROF_BUDGET_S=${PROF_BUDGET_S:-60}
  PROF_TOKENS=${PROF_TOKENS:-8}
  # The same three kinds of pair as on the GPU, on a shape SwiftShader runs in seconds (stories260K's own
  # Q4_0 copy as its draft; a synthetic pair of one shape: random fills differ by type, so few accepted).
  DRAFT_PAIRS=${DRAFT_PAIRS:-synthetic:stories260k-f32>synthetic:stories260k-q8_0,stories260k-q8_0>stories260k-q4_0,synthetic:stories260k-f32>lookup}
  DRAFT_TOKENS=${DRAFT_TOKENS:-16}
  DRAFT_REPS=${DRAFT_REPS:-1}
  SB_MODELS=${SB_MODELS:-synthetic:stories260k-f32}
  SB_CONTEXTS=${SB_CONTEXTS:-64,256}
  # The smallest shape whose heads hold whole 32-value blocks (head size 64), as a Q8_0/Q4_0 cache needs.
  KV_MODELS=${KV_MODELS:-bench-60m-q4_0}
  KV_DEPTHS=${KV_DEPTHS:-0,64}
  GPU_FLAG=()
else
  TOTAL_S=${TOTAL_S:-500}
  SYN_BUDGET_S=${SYN_BUDGET_S:-200}
  S1=synthetic:llama-3.2-1b
  S8=synthetic:llama-3.1-8b
  SYN_MODELS=${SYN_MODELS:-$S1-q4_k_m,$S1-q4_0,$S1-q8_0,$S1-f16,$S8-q4_k_m,$S8-q4_0,$S8-q8_0,$S8-f16}
  C1=llama-3.2-1b
  C8=llama-3.1-8b
  CMP_MODELS=${CMP_MODELS:-$C1-q4_k_m,$C1-q4_0,$C1-q8_0,$C1-f16,$C8-q4_k_m,$C8-q4_0,$C8-q8_0,$C8-f16}
  N_PROMPT=${N_PROMPT:-512}
  N_GEN=${N_GEN:-128}
  SYN_REPS=${SYN_REPS:-2}
  CMP_REPS=${CMP_REPS:-2}
  DEPTHS=${DEPTHS:-0,4096}
  PROF_MODELS=${PROF_MODELS:-$S1-q4_k_m,$S8-q4_k_m}
  PROF_BUDGET_S=${PROF_BUDGET_S:-100}
  PROF_TOKENS=${PROF_TOKENS:-32}
  DRAFT_PAIRS=${DRAFT_PAIRS:-$S8-q4_k_m>$S1-q4_k_m,$C8-q8_0>$C8-q4_0,$S8-q4_k_m>lookup}
  DRAFT_TOKENS=${DRAFT_TOKENS:-64}
  DRAFT_REPS=${DRAFT_REPS:-2}
  SB_MODELS=${SB_MODELS:-$S1-q4_k_m,$S8-q4_k_m}
  KV_MODELS=${KV_MODELS:-$C1-q4_k_m,$C8-q4_k_m}
  KV_DEPTHS=${KV_DEPTHS:-0,4096}
  GPU_FLAG=(--gpu)
fi
PHASES=${PHASES:-profile compare synthetic}
SB_TOKENS=${SB_TOKENS:-2,4,8}
SB_CONTEXTS=${SB_CONTEXTS:-64,4096}
SB_ATTENTION=${SB_ATTENTION:-both}
SMALL_BATCH=${SMALL_BATCH:-both}
KV_TYPE=${KV_TYPE:-f16}
KV_TYPES=${KV_TYPES:-f16,q8_0,q4_0}
SYN_RESERVE_S=${SYN_RESERVE_S:-110}
if [[ -z "${GGUF_DIR:-}" ]]; then # the file system with the most room (a 16 GB file must fit)
  best=0
  for d in /tmp /var/tmp "$ROOT"; do
    a=$(df -P -B1 "$d" 2>/dev/null | awk 'NR==2 {print $4}')
    if [[ -n "$a" ]] && ((a > best)); then
      best=$a
      GGUF_DIR="$d/gguf-bench.$$"
    fi
  done
  GGUF_DIR=${GGUF_DIR:-/tmp/gguf-bench.$$}
fi
FILE_MODE=${FILE_MODE:-tiled}
WORK=${WORK:-/tmp/wgpu-bench}

# --- unpack -------------------------------------------------------------------------------------------
D="$ROOT/.device"
for f in node.xz runtime.tar.xz app.tar.xz; do
  [[ -f "$D/$f" ]] || { say "missing $D/$f: run scripts/device/pack.sh here and carry .device"; exit 1; }
done
rm -rf "$WORK"
mkdir -p "$WORK"
untar() { # untar FILE.tar.xz DIR, with python's tarfile where xz is missing
  if command -v xz >/dev/null; then tar -C "$2" -xJf "$1"; else
    python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$1" "$2"
  fi
}
if command -v xz >/dev/null; then xz -dc "$D/node.xz" >"$WORK/node"; else
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$D/node.xz" "$WORK/node"
fi
chmod +x "$WORK/node"
untar "$D/runtime.tar.xz" "$WORK" && untar "$D/app.tar.xz" "$WORK" || { say "unpacking failed"; exit 1; }
NODE="$WORK/node"
APP="$WORK/app"
say "unpacked into $WORK: $("$NODE" -v), app commit $(cat "$APP/COMMIT")$([[ -s $APP/DIRTY ]] && echo ' (with uncommitted changes)')"

# --- Vulkan --------------------------------------------------------------------------------------------
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p 2>/dev/null | grep -q 'libGLdispatch.so.0 '; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$WORK/lib-fallback"
  say "libGLdispatch.so.0 not on the system: using the packed one"
fi
if [[ $DRY != 1 && -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ]]; then
  if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
    for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.x86_64.json; do
      if [[ -f $j ]]; then
        export VK_DRIVER_FILES=$j VK_ICD_FILENAMES=$j
        break
      fi
    done
  fi
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
say "Vulkan driver: ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-system default}}"
{ command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv; } >>"$LOG" 2>&1
df -h "$(dirname "$GGUF_DIR")" 2>/dev/null | tail -1 | sed "s|^|[disk for $GGUF_DIR] |" >>"$LOG"
nproc | sed 's/^/[cpus] /' >>"$LOG"

run_synthetic() {
  local left=$((TOTAL_S - $(elapsed)))
  local budget=$((SYN_BUDGET_S < left - 50 ? SYN_BUDGET_S : left - 50))
  if ((budget < 20)); then
    say "synthetic: skipped, ${left}s left"
    return
  fi
  say "synthetic: $SYN_MODELS, budget ${budget}s (no model starts after it), hard limit $((left - 10))s"
  # bench-node writes its JSON at the end; each model's row is also in the log as it finishes.
  timeout -k 5 $((left - 10)) "$NODE" "$APP/bench-node.mjs" "${GPU_FLAG[@]}" --models "$SYN_MODELS" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$SYN_REPS" --budget-s "$budget" \
    --json "$OUT/synthetic.json" --md "$OUT/synthetic.md" >>"$LOG" 2>&1
  say "synthetic: exit $?"
}

run_profile() {
  local left=$((TOTAL_S - $(elapsed)))
  local budget=$((PROF_BUDGET_S < left - 60 ? PROF_BUDGET_S : left - 60))
  if ((budget < 15)); then
    say "profile: skipped, ${left}s left"
    return
  fi
  say "profile: $PROF_MODELS, $PROF_TOKENS tokens, budget ${budget}s (no model starts after it)"
  timeout -k 5 $((budget + 60)) "$NODE" "$APP/profile.mjs" "${GPU_FLAG[@]}" --models "$PROF_MODELS" \
    --decode-tokens "$PROF_TOKENS" --budget-s "$budget" \
    --json "$OUT/profile.json" --md "$OUT/profile.md" >>"$LOG" 2>&1
  say "profile: exit $?"
}

run_compare() {
  local left=$((TOTAL_S - $(elapsed)))
  # Leave SYN_RESERVE_S for the synthetic phase when it comes after this one.
  [[ " $PHASES " == *" compare "*" synthetic "* ]] && left=$((left - SYN_RESERVE_S))
  if ((left < 30)); then
    say "compare: skipped, ${left}s left"
    return
  fi
  say "compare: $CMP_MODELS, depths $DEPTHS, KV $KV_TYPE, deadline ${left}s, files in $GGUF_DIR ($FILE_MODE)"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 $((left + 5)) "$NODE" "$APP/compare.mjs" "${GPU_FLAG[@]}" --models "$CMP_MODELS" \
    --llama-script "$APP/llama-vulkan.mjs" --llama-gpu vulkan --dir "$GGUF_DIR" --mode "$FILE_MODE" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$CMP_REPS" --depths "$DEPTHS" --kv-type "$KV_TYPE" \
    --deadline-s $((left - 5)) \
    --json "$OUT/compare.json" --md "$OUT/compare.md" >>"$LOG" 2>&1
  say "compare: exit $?"
  rm -rf "$GGUF_DIR"
}

run_draft() {
  local left=$((TOTAL_S - $(elapsed)))
  # Leave SYN_RESERVE_S for the synthetic phase when it comes after this one.
  [[ " $PHASES " == *" draft "*" synthetic "* ]] && left=$((left - SYN_RESERVE_S))
  if ((left < 30)); then
    say "draft: skipped, ${left}s left"
    return
  fi
  say "draft: $DRAFT_PAIRS, $DRAFT_TOKENS tokens, $DRAFT_REPS reps, deadline ${left}s, files in $GGUF_DIR"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 $((left + 5)) "$NODE" "$APP/draft.mjs" "${GPU_FLAG[@]}" --pairs "$DRAFT_PAIRS" \
    --tokens "$DRAFT_TOKENS" --reps "$DRAFT_REPS" ${DRAFT_MAX:+--draft-max "$DRAFT_MAX"} --dir "$GGUF_DIR" \
    --small-batch "$SMALL_BATCH" \
    --deadline-s $((left - 60 > 10 ? left - 60 : 10)) \
    --json "$OUT/draft.json" --md "$OUT/draft.md" >>"$LOG" 2>&1
  say "draft: exit $?"
  rm -rf "$GGUF_DIR"
}

run_small() {
  local left=$((TOTAL_S - $(elapsed)))
  [[ " $PHASES " == *" small "*" synthetic "* ]] && left=$((left - SYN_RESERVE_S))
  if ((left < 30)); then
    say "small: skipped, ${left}s left"
    return
  fi
  say "small: $SB_MODELS, T $SB_TOKENS, depths $SB_CONTEXTS, attention $SB_ATTENTION, deadline ${left}s"
  timeout -k 5 $((left + 5)) "$NODE" "$APP/small-batch.mjs" "${GPU_FLAG[@]}" --models "$SB_MODELS" \
    --tokens "$SB_TOKENS" --contexts "$SB_CONTEXTS" --attention "$SB_ATTENTION" \
    --deadline-s $((left - 60 > 10 ? left - 60 : 10)) \
    --json "$OUT/small.json" --md "$OUT/small.md" >>"$LOG" 2>&1
  say "small: exit $?"
}

run_kv() {
  local left=$((TOTAL_S - $(elapsed)))
  [[ " $PHASES " == *" kv "*" synthetic "* ]] && left=$((left - SYN_RESERVE_S))
  if ((left < 30)); then
    say "kv: skipped, ${left}s left"
    return
  fi
  say "kv: $KV_MODELS, KV $KV_TYPES, depths $KV_DEPTHS, deadline ${left}s, files in $GGUF_DIR ($FILE_MODE)"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 $((left + 5)) "$NODE" "$APP/compare.mjs" "${GPU_FLAG[@]}" --models "$KV_MODELS" \
    --llama-script "$APP/llama-vulkan.mjs" --llama-gpu vulkan --dir "$GGUF_DIR" --mode "$FILE_MODE" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$CMP_REPS" --depths "$KV_DEPTHS" --kv-types "$KV_TYPES" \
    --deadline-s $((left - 5)) \
    --json "$OUT/kv.json" --md "$OUT/kv.md" >>"$LOG" 2>&1
  say "kv: exit $?"
  rm -rf "$GGUF_DIR"
}

for phase in $PHASES; do
  case $phase in
    profile) run_profile ;;
    kv) run_kv ;;
    synthetic) run_synthetic ;;
    compare) run_compare ;;
    draft) run_draft ;;
    small) run_small ;;
    *) say "unknown phase $phase" ;;
  esac
done

# A phase's table, "(not run: PHASES=…)" where the phase was not asked for, "(none)" where it wrote nothing.
table() {
  if [[ " $PHASES " != *" $1 "* ]]; then
    echo "(not run: PHASES=\"$PHASES\")"
  else
    cat "$OUT/$2" 2>/dev/null || echo "(none: see log.txt)"
  fi
}
{
  echo "## where a decode token's time goes (profile: GPU ms per token per kernel family)"
  table profile profile.md
  echo
  echo "## ours on synthetic shapes (bench-node)"
  table synthetic synthetic.md
  echo
  echo "## ours vs llama.cpp on the same GGUF files"
  table compare compare.md
  if [[ " $PHASES " == *" kv "* ]]; then
    echo
    echo "## decode per KV cache type ($KV_TYPES), ours vs llama.cpp on the same GGUF files"
    cat "$OUT/kv.md" 2>/dev/null || echo "(none)"
  fi
  if [[ " $PHASES " == *" small "* ]]; then
    echo
    echo "## small batches through mmv and through the prefill tile: TTFT and verify passes (small)"
    cat "$OUT/small.md" 2>/dev/null || echo "(none)"
  fi
  if [[ " $PHASES " == *" draft "* ]]; then
    echo
    echo "## speculative decoding: drafted against plain greedy on the same load (draft)"
    cat "$OUT/draft.md" 2>/dev/null || echo "(none)"
  fi
} >"$OUT/summary.md"
say "done in $(elapsed)s"
echo "----- log tail -----"
tail -n 15 "$LOG" | cut -c1-400
echo "----- summary -----"
cat "$OUT/summary.md"
