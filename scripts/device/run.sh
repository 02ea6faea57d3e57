#!/usr/bin/env bash
# The one command for a lent GPU machine (see scripts/device/README.md): unpacks .device/ (made by
# scripts/device/pack.sh), then runs, in the order of PHASES (default "profile compare synthetic"):
#
#   profile    where a decode token's time goes (scripts/device/profile.ts on synthetic shapes,
#              PROF_MODELS: the 1B and 8B Q4_K_M): GPU ms per token per kernel family (timestamp
#              queries), wall ms per token with the default steps in flight and with one, busy fraction,
#              the argmax's µs → $OUT/profile.{json,md}; then, in the last ATTN_BUDGET_S (25 s) of its
#              window, the decode attention alone at ATTN_DEPTHS (4096,16384) on ATTN_SHAPES (8b,1b) under
#              each candidate policy (scripts/device/attention-depth.ts) → $OUT/attention.{json,md}; at
#              most PROF_BUDGET_S (100 s) for both
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
# and prints the tables last. Before any phase: the Vulkan loader and glvnd unpacked from .device/gl.tar
# where the machine lacks them, then a preflight (scripts/device/preflight.ts) that stops the run (exit 2)
# when no NVIDIA driver file gives a hardware adapter. $OUT keeps three files (the device tool returns at
# most 8): summary.md (every table), results.tar (each phase's .md and .json), log.txt (trimmed past
# LOG_MAX_MB); all refreshed after each phase. Each phase runs in its share (phase_window: the time left
# less the later phases' reserves; PRINT_PLAN=1 prints them), everything bounded by TOTAL_S (500 s; 540
# with PLAN=issues) from the start, so the command ends inside the device tool's 600 s limit.
#
# Knobs (environment): PLAN (issues: see below), TOTAL_S, PHASES, ATTN_SHAPES, ATTN_DEPTHS, ATTN_BUDGET_S, SB_MODELS, SB_TOKENS, SB_CONTEXTS (64,4096), SB_ATTENTION (both), SMALL_BATCH, DRAFT_PAIRS, DRAFT_TOKENS (64), DRAFT_REPS (2), DRAFT_MAX, PROF_MODELS, PROF_BUDGET_S, PROF_TOKENS (32), SYN_BUDGET_S (200),
# SYN_RESERVE_S, SYN_MODELS, CMP_MODELS,
# N_PROMPT (512: llama-bench's pp512), N_GEN (128), SYN_REPS (2), CMP_REPS (2), DEPTHS (compare's tg depths, "0,4096"; DRY
# "0,256"), KV_TYPE (f16 | f32 | q8_0 | q4_0, both engines' KV cache, f16), GGUF_DIR (default: under /tmp, /var/tmp or
# the repository, whichever file system has the most room; removed at the end), KV_MODELS, KV_TYPES
# (f16,q8_0,q4_0), KV_DEPTHS (0,4096; DRY 0,64), FILE_MODE (tiled |
# exact), WORK (/tmp/wgpu-bench), GL_UNPACK (auto | always | never), GL_ROOT (/), ICD_CANDIDATES (NVIDIA's
# driver files, tried in turn when the preflight finds no GPU), PROF_/CMP_/DRAFT_/SB_/KV_/SYN_RESERVE_S,
# PRINT_PLAN (1: print each phase's window and exit), SETUP_S (20, for PRINT_PLAN), LOG_MAX_MB (12).
# DRY=1: a local rehearsal without a GPU: tiny models, SwiftShader for ours, llama.cpp's Vulkan build
# falling back to its CPU path (no usable Vulkan device). OUT: where the 3 files go (.device-out/; the
# device tool's $OUT there).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
DRY=${DRY:-0}
OUT=${OUT:-$ROOT/.device-out}
LOG="$OUT/log.txt" # emptied after PRINT_PLAN's exit below, so printing the plan keeps the last run's log
say() { echo "[run $(elapsed)s] $*" | tee -a "$LOG" >&2; }

# PLAN=issues: one run for the open GPU issues (40 decode, 41 prefill, 45 speculative decoding), each phase
# in its share of TOTAL_S (below): the per-kernel profile, ours vs llama.cpp on the goal rows at depths 0
# and 4096, drafting (the 8B shape with the 1B as draft, lookup, and a 1B file with its own Q4_0 copy as
# the acceptance upper bound), small batches on the 8B shape. Every variable it sets can still be given.
if [[ ${PLAN:-} == issues && $DRY != 1 ]]; then
  PHASES=${PHASES:-profile compare draft small}
  # 540 s: the phases' shares below (PRINT_PLAN=1 PLAN=issues prints them) end by 545 s at the latest.
  TOTAL_S=${TOTAL_S:-540}
  CMP_RESERVE_S=${CMP_RESERVE_S:-150} DRAFT_RESERVE_S=${DRAFT_RESERVE_S:-130} SB_RESERVE_S=${SB_RESERVE_S:-110}
  CMP_MODELS=${CMP_MODELS:-llama-3.1-8b-q4_k_m,llama-3.2-1b-q4_k_m,llama-3.1-8b-q4_0}
  # The file pair first: the acceptance upper bound (the 1B Q8_0 file drafted by its own Q4_0 copy).
  DRAFT_PAIRS=${DRAFT_PAIRS:-llama-3.2-1b-q8_0>llama-3.2-1b-q4_0,synthetic:llama-3.1-8b-q4_k_m>synthetic:llama-3.2-1b-q4_k_m,synthetic:llama-3.1-8b-q4_k_m>lookup}
  SB_MODELS=${SB_MODELS:-synthetic:llama-3.1-8b-q4_k_m}
elif [[ ${PLAN:-} == issues ]]; then # DRY=1: the same phases on the tiny models (SwiftShader is slow)
  PHASES=${PHASES:-profile compare draft small}
  TOTAL_S=${TOTAL_S:-420}
  DRAFT_RESERVE_S=${DRAFT_RESERVE_S:-100} SB_RESERVE_S=${SB_RESERVE_S:-90}
elif [[ -n ${PLAN:-} ]]; then
  echo "unknown PLAN=$PLAN (issues, or unset)" >&2
  exit 2
fi
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
  ATTN_SHAPES=${ATTN_SHAPES:-tiny}
  ATTN_DEPTHS=${ATTN_DEPTHS:-0,300}
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
  ATTN_SHAPES=${ATTN_SHAPES:-8b,1b}
  ATTN_DEPTHS=${ATTN_DEPTHS:-4096,16384}
  DRAFT_PAIRS=${DRAFT_PAIRS:-$S8-q4_k_m>$S1-q4_k_m,$C8-q8_0>$C8-q4_0,$S8-q4_k_m>lookup}
  DRAFT_TOKENS=${DRAFT_TOKENS:-64}
  DRAFT_REPS=${DRAFT_REPS:-2}
  SB_MODELS=${SB_MODELS:-$S1-q4_k_m,$S8-q4_k_m}
  KV_MODELS=${KV_MODELS:-$C1-q4_k_m,$C8-q4_k_m}
  KV_DEPTHS=${KV_DEPTHS:-0,4096}
  GPU_FLAG=(--gpu)
fi
PHASES=${PHASES:-profile compare synthetic}
ATTN_BUDGET_S=${ATTN_BUDGET_S:-25}
SB_TOKENS=${SB_TOKENS:-2,4,8}
SB_CONTEXTS=${SB_CONTEXTS:-64,4096}
SB_ATTENTION=${SB_ATTENTION:-both}
SMALL_BATCH=${SMALL_BATCH:-both}
KV_TYPE=${KV_TYPE:-f16}
KV_TYPES=${KV_TYPES:-f16,q8_0,q4_0}
SYN_RESERVE_S=${SYN_RESERVE_S:-110}
# What each phase leaves for the phases after it in PHASES (seconds): a phase's deadline is what is left
# less the reserves of the phases still to come, so one run of several phases gives each its share
# instead of letting the first (compare's eight models) take the whole run.
if [[ $DRY == 1 ]]; then # tiny models: 40 s each
  PROF_RESERVE_S=${PROF_RESERVE_S:-40} CMP_RESERVE_S=${CMP_RESERVE_S:-40} DRAFT_RESERVE_S=${DRAFT_RESERVE_S:-40}
  SB_RESERVE_S=${SB_RESERVE_S:-40} KV_RESERVE_S=${KV_RESERVE_S:-40}
else
  PROF_RESERVE_S=${PROF_RESERVE_S:-120} CMP_RESERVE_S=${CMP_RESERVE_S:-150} DRAFT_RESERVE_S=${DRAFT_RESERVE_S:-150}
  SB_RESERVE_S=${SB_RESERVE_S:-100} KV_RESERVE_S=${KV_RESERVE_S:-150}
fi
reserve_of() {
  case $1 in
    profile) echo "$PROF_RESERVE_S" ;; compare) echo "$CMP_RESERVE_S" ;; draft) echo "$DRAFT_RESERVE_S" ;;
    small) echo "$SB_RESERVE_S" ;; kv) echo "$KV_RESERVE_S" ;; synthetic) echo "$SYN_RESERVE_S" ;; *) echo 0 ;;
  esac
}
later_reserve() { # later_reserve PHASE: the reserves of the phases after PHASE's first place in PHASES
  local seen=0 sum=0 p
  for p in $PHASES; do
    if ((seen)); then sum=$((sum + $(reserve_of "$p"))); fi
    [[ $p == "$1" ]] && seen=1
  done
  echo "$sum"
}
# phase_window PHASE T: what PHASE may use when it starts T seconds after the run's start, as
# "LEFT SOFT HARD" in seconds from its start: LEFT = TOTAL_S − T − the later phases' reserves; SOFT: no
# model, pair or load starts after it (the phase's --deadline-s / --budget-s; draft also aborts a pair
# still running then); HARD: the phase is killed (timeout). Each phase stops SOFT short of its share by
# about one model's time, which its HARD allows it to finish.
phase_window() {
  local left=$((TOTAL_S - $2 - $(later_reserve "$1"))) soft hard
  case $1 in
    profile) soft=$((PROF_BUDGET_S < left - 60 ? PROF_BUDGET_S : left - 60)) hard=$((soft + 60)) ;;
    synthetic) soft=$((SYN_BUDGET_S < left - 50 ? SYN_BUDGET_S : left - 50)) hard=$((left - 10)) ;;
    compare | kv) soft=$((left - 5)) hard=$((left + 5)) ;;
    draft) soft=$((left - 20 > 10 ? left - 20 : 10)) hard=$((left + 5)) ;;
    small) soft=$((left - 30 > 10 ? left - 30 : 10)) hard=$((left + 5)) ;;
    *) soft=0 hard=0 ;;
  esac
  echo "$left $soft $hard"
}
# attn_share SOFT: the seconds the profile phase (soft limit SOFT) leaves at its end for the decode
# attention sweep: ATTN_BUDGET_S where the models keep ≥ 15 s, else 0 (the sweep is skipped).
attn_share() {
  if (($1 - ATTN_BUDGET_S >= 15)); then echo "$ATTN_BUDGET_S"; else echo 0; fi
}
# phase_runs PHASE LEFT SOFT: whether PHASE has time enough to start (else it is skipped).
phase_runs() {
  case $1 in
    profile) (($3 >= 15)) ;; synthetic) (($3 >= 20)) ;; *) (($2 >= 30)) ;;
  esac
}
# PRINT_PLAN=1: each phase's window if every phase before it ran to its hard limit, the set-up taking
# SETUP_S (20) seconds; then exit (no .device needed). A check of the shares before a run.
if [[ ${PRINT_PLAN:-0} == 1 ]]; then
  t=${SETUP_S:-20}
  for p in $PHASES; do
    read -r left soft hard <<<"$(phase_window "$p" "$t")"
    if ! phase_runs "$p" "$left" "$soft"; then
      echo "$p: skipped at ${t}s (left ${left}s: too little; fewer PHASES or a larger TOTAL_S)"
      continue
    fi
    echo "$p: starts at ${t}s, left ${left}s, soft ${soft}s, hard ${hard}s"
    if [[ $p == profile ]]; then
      a=$(attn_share "$soft")
      echo "profile: models until $((soft - a))s, then the decode attention for ${a}s"
    fi
    t=$((t + hard))
  done
  echo "end: ${t}s at the latest (TOTAL_S ${TOTAL_S}s)"
  exit 0
fi
mkdir -p "$OUT"
: >"$LOG"
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
    # filter= where Python has it (3.12+ warns without one); the archives are our own.
    python3 -c 'import sys,tarfile; kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], **kw)' "$1" "$2"
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
# Each phase writes its JSON and table into $RES; after each, $OUT/results.tar holds them all and
# $OUT/summary.md is rewritten, so $OUT keeps three files (the device tool brings back at most 8) and a run
# cut short still returns what finished.
RES="$WORK/results"
mkdir -p "$RES"
rm -f "$OUT/results.tar" "$OUT/summary.md"

# --- Vulkan's loaders (../shared/notes/h200-2026-12-04.md) ----------------------------------------------
# A fresh device machine's NVIDIA Vulkan driver (libGLX_nvidia.so.0) loads only with glvnd and the Vulkan
# loader installed ("Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'" otherwise). pack.sh
# carries Debian's packages of them, unpacked there into .device/gl.tar (files and links, no directory
# entries, so existing folders keep their modes). Where any of their libraries is missing (or the
# preflight below finds no GPU) it is unpacked into / with tar and ldconfig run, as the device README says
# to do with dpkg -x; where / is not writable, under $WORK/gl; either way the folder goes on
# LD_LIBRARY_PATH too where ldconfig's cache still lacks a library.
# ldconfig lives in /sbin, which a non-login shell's PATH may lack.
LDCONFIG=$(command -v ldconfig || { [[ -x /sbin/ldconfig ]] && echo /sbin/ldconfig; } || echo /usr/sbin/ldconfig)
gl_missing() { # prints the first glvnd/loader library the dynamic linker cannot find; false when none
  local cache
  cache=$("$LDCONFIG" -p 2>/dev/null)
  for l in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1; do
    grep -q "$l " <<<"$cache" || { echo "$l"; return 0; }
  done
  return 1
}
GL_UNPACK=${GL_UNPACK:-auto} # auto: where a library is missing (never with DRY=1); always; never
GL_ROOT=${GL_ROOT:-/}        # where they go; another folder (a test) goes on LD_LIBRARY_PATH instead
GL_DONE=0
unpack_gl() { # unpack_gl WHY
  GL_DONE=1
  if [[ ! -f "$D/gl.tar" ]]; then
    say "Vulkan loaders: $1, and .device/gl.tar is missing: re-run pack.sh"
    return 1
  fi
  mkdir -p "$GL_ROOT" 2>/dev/null
  [[ -w $GL_ROOT && ($GL_ROOT != / || -w /usr/lib) ]] || GL_ROOT=$WORK/gl
  mkdir -p "$GL_ROOT"
  tar -C "$GL_ROOT" -xf "$D/gl.tar" || say "Vulkan loaders: unpacking into $GL_ROOT failed"
  [[ $GL_ROOT == / ]] && "$LDCONFIG" 2>/dev/null
  local still=""
  if [[ $GL_ROOT != / ]] || still=$(gl_missing); then
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${GL_ROOT%/}/usr/lib/x86_64-linux-gnu:${GL_ROOT%/}/lib/x86_64-linux-gnu"
    [[ -n $still ]] && still=" ($still still not in ldconfig's cache: its folder put on LD_LIBRARY_PATH)"
  fi
  say "Vulkan loaders: $1; unpacked $(tar -tf "$D/gl.tar" | grep -c '\.so') libraries into $GL_ROOT$still"
}
missing=$(gl_missing) || missing=""
if [[ $GL_UNPACK == always ]]; then
  unpack_gl "GL_UNPACK=always${missing:+, $missing missing}"
elif [[ -n $missing && $GL_UNPACK != never && $DRY != 1 ]]; then
  unpack_gl "$missing missing"
fi

# --- Vulkan --------------------------------------------------------------------------------------------
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$LDCONFIG" -p 2>/dev/null | grep -q 'libGLdispatch.so.0 '; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$WORK/lib-fallback"
  say "libGLdispatch.so.0 not on the system: using the packed one"
fi
if [[ $DRY != 1 && -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ]]; then
  if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
    for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.x86_64.json; do
      if [[ -f $j ]]; then
        export VK_DRIVER_FILES=$j VK_ICD_FILENAMES=$j
        e=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
        [[ -f $e ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$e
        break
      fi
    done
  fi
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
say "Vulkan driver: ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-system default}}"

# --- preflight: which adapter Dawn finds (scripts/device/preflight.ts), before any minute is spent ---------
# On the GPU a software adapter or none means the driver did not load: each NVIDIA driver file on the
# machine is tried in turn (with glvnd's EGL vendor file beside it, as the device README advises), and when
# none gives a GPU the run stops here with the reason instead of benchmarking no GPU.
preflight() {
  timeout -k 5 30 "$NODE" "$APP/preflight.mjs" "${GPU_FLAG[@]}" 2>>"$LOG" | tee -a "$LOG" >&2
  return "${PIPESTATUS[0]}"
}
if ! preflight; then
  ok=0
  # The loaders first, if they were not unpacked (every library was in ldconfig's cache).
  if [[ $DRY != 1 && $GL_DONE == 0 && $GL_UNPACK != never ]]; then
    unpack_gl "no GPU adapter with the system's own libraries" && preflight && ok=1
  fi
  if [[ $DRY != 1 && $ok == 0 ]]; then
    ICD_CANDIDATES=${ICD_CANDIDATES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json}
    for j in $ICD_CANDIDATES; do
      [[ -f $j ]] || continue
      export VK_DRIVER_FILES=$j VK_ICD_FILENAMES=$j
      e=$(dirname "$(dirname "$(dirname "$j")")")/glvnd/egl_vendor.d/10_nvidia.json
      [[ -f $e ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$e
      say "preflight: trying Vulkan driver $j"
      if preflight; then ok=1 && break; fi
    done
  fi
  if ((ok == 0)); then
    say "preflight: no usable adapter (the line above says which and why): stopping before the benchmarks"
    { echo "## preflight failed: no usable WebGPU adapter"; grep '^preflight: ' "$LOG" | tail -3; } >"$OUT/summary.md"
    tail -n 30 "$LOG" | cut -c1-400
    exit 2
  fi
fi
{ command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv; } >>"$LOG" 2>&1
df -h "$(dirname "$GGUF_DIR")" 2>/dev/null | tail -1 | sed "s|^|[disk for $GGUF_DIR] |" >>"$LOG"
nproc | sed 's/^/[cpus] /' >>"$LOG"

run_synthetic() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window synthetic "$(elapsed)")"
  if ! phase_runs synthetic "$left" "$soft"; then
    say "synthetic: skipped, ${left}s left"
    return
  fi
  say "synthetic: $SYN_MODELS, budget ${soft}s (no model starts after it), hard limit ${hard}s"
  # bench-node writes its JSON at the end; each model's row is also in the log as it finishes.
  timeout -k 5 "$hard" "$NODE" "$APP/bench-node.mjs" "${GPU_FLAG[@]}" --models "$SYN_MODELS" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$SYN_REPS" --budget-s "$soft" \
    --json "$RES/synthetic.json" --md "$RES/synthetic.md" >>"$LOG" 2>&1
  say "synthetic: exit $?"
}

run_profile() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window profile "$(elapsed)")"
  if ! phase_runs profile "$left" "$soft"; then
    say "profile: skipped, ${left}s left"
    return
  fi
  local attn
  attn=$(attn_share "$soft")
  say "profile: $PROF_MODELS, $PROF_TOKENS tokens, budget $((soft - attn))s (no model starts after it), hard limit $((hard - attn))s"
  timeout -k 5 "$((hard - attn))" "$NODE" "$APP/profile.mjs" "${GPU_FLAG[@]}" --models "$PROF_MODELS" \
    --decode-tokens "$PROF_TOKENS" --budget-s "$((soft - attn))" \
    --json "$RES/profile.json" --md "$RES/profile.md" >>"$LOG" 2>&1
  say "profile: exit $?"
  if ((attn > 0)); then
    say "profile: decode attention at depths $ATTN_DEPTHS on $ATTN_SHAPES, budget $((attn - 10))s, hard limit ${attn}s"
    timeout -k 5 "$attn" "$NODE" "$APP/attention-depth.mjs" "${GPU_FLAG[@]}" --shapes "$ATTN_SHAPES" \
      --depths "$ATTN_DEPTHS" --kv "$KV_TYPE" --budget-s "$((attn - 10))" \
      --json "$RES/attention.json" --md "$RES/attention.md" >>"$LOG" 2>&1
    say "profile: attention exit $?"
  else
    say "profile: decode attention skipped (the window is too short for it)"
  fi
}

run_compare() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window compare "$(elapsed)")"
  if ! phase_runs compare "$left" "$soft"; then
    say "compare: skipped, ${left}s left"
    return
  fi
  say "compare: $CMP_MODELS, depths $DEPTHS, KV $KV_TYPE, deadline ${soft}s, files in $GGUF_DIR ($FILE_MODE)"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 "$hard" "$NODE" "$APP/compare.mjs" "${GPU_FLAG[@]}" --models "$CMP_MODELS" \
    --llama-script "$APP/llama-vulkan.mjs" --llama-gpu vulkan --dir "$GGUF_DIR" --mode "$FILE_MODE" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$CMP_REPS" --depths "$DEPTHS" --kv-type "$KV_TYPE" \
    --deadline-s "$soft" \
    --json "$RES/compare.json" --md "$RES/compare.md" >>"$LOG" 2>&1
  say "compare: exit $?"
  rm -rf "$GGUF_DIR"
}

run_draft() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window draft "$(elapsed)")"
  if ! phase_runs draft "$left" "$soft"; then
    say "draft: skipped, ${left}s left"
    return
  fi
  say "draft: $DRAFT_PAIRS, $DRAFT_TOKENS tokens, $DRAFT_REPS reps, deadline ${soft}s, files in $GGUF_DIR"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 "$hard" "$NODE" "$APP/draft.mjs" "${GPU_FLAG[@]}" --pairs "$DRAFT_PAIRS" \
    --tokens "$DRAFT_TOKENS" --reps "$DRAFT_REPS" ${DRAFT_MAX:+--draft-max "$DRAFT_MAX"} --dir "$GGUF_DIR" \
    --small-batch "$SMALL_BATCH" \
    --deadline-s "$soft" \
    --json "$RES/draft.json" --md "$RES/draft.md" >>"$LOG" 2>&1
  say "draft: exit $?"
  rm -rf "$GGUF_DIR"
}

run_small() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window small "$(elapsed)")"
  if ! phase_runs small "$left" "$soft"; then
    say "small: skipped, ${left}s left"
    return
  fi
  say "small: $SB_MODELS, T $SB_TOKENS, depths $SB_CONTEXTS, attention $SB_ATTENTION, deadline ${soft}s"
  timeout -k 5 "$hard" "$NODE" "$APP/small-batch.mjs" "${GPU_FLAG[@]}" --models "$SB_MODELS" \
    --tokens "$SB_TOKENS" --contexts "$SB_CONTEXTS" --attention "$SB_ATTENTION" \
    --deadline-s "$soft" \
    --json "$RES/small.json" --md "$RES/small.md" >>"$LOG" 2>&1
  say "small: exit $?"
}

run_kv() {
  local left soft hard
  read -r left soft hard <<<"$(phase_window kv "$(elapsed)")"
  if ! phase_runs kv "$left" "$soft"; then
    say "kv: skipped, ${left}s left"
    return
  fi
  say "kv: $KV_MODELS, KV $KV_TYPES, depths $KV_DEPTHS, deadline ${soft}s, files in $GGUF_DIR ($FILE_MODE)"
  mkdir -p "$GGUF_DIR"
  timeout -k 5 "$hard" "$NODE" "$APP/compare.mjs" "${GPU_FLAG[@]}" --models "$KV_MODELS" \
    --llama-script "$APP/llama-vulkan.mjs" --llama-gpu vulkan --dir "$GGUF_DIR" --mode "$FILE_MODE" \
    --n-prompt "$N_PROMPT" --n-gen "$N_GEN" --reps "$CMP_REPS" --depths "$KV_DEPTHS" --kv-types "$KV_TYPES" \
    --deadline-s "$soft" \
    --json "$RES/kv.json" --md "$RES/kv.md" >>"$LOG" 2>&1
  say "kv: exit $?"
  rm -rf "$GGUF_DIR"
}


# A phase's table, "(not run: PHASES=…)" where the phase was not asked for, "(none)" where it wrote nothing.
table() {
  if [[ " $PHASES " != *" $1 "* ]]; then
    echo "(not run: PHASES=\"$PHASES\")"
  else
    cat "$RES/$2" 2>/dev/null || echo "(none: see log.txt)"
  fi
}
write_summary() {
{
  echo "## where a decode token's time goes (profile: GPU ms per token per kernel family)"
  table profile profile.md
  if [[ " $PHASES " == *" profile "* ]]; then
    echo
    echo "## the decode attention alone at depth, per policy (profile: attention-depth)"
    cat "$RES/attention.md" 2>/dev/null || echo "(none: see log.txt)"
  fi
  echo
  echo "## ours on synthetic shapes (bench-node)"
  table synthetic synthetic.md
  echo
  echo "## ours vs llama.cpp on the same GGUF files"
  table compare compare.md
  if [[ " $PHASES " == *" kv "* ]]; then
    echo
    echo "## decode per KV cache type ($KV_TYPES), ours vs llama.cpp on the same GGUF files"
    cat "$RES/kv.md" 2>/dev/null || echo "(none)"
  fi
  if [[ " $PHASES " == *" small "* ]]; then
    echo
    echo "## small batches through mmv and through the prefill tile: TTFT and verify passes (small)"
    cat "$RES/small.md" 2>/dev/null || echo "(none)"
  fi
  if [[ " $PHASES " == *" draft "* ]]; then
    echo
    echo "## speculative decoding: drafted against plain greedy on the same load (draft)"
    cat "$RES/draft.md" 2>/dev/null || echo "(none)"
  fi
} >"$OUT/summary.md"
}
fold() { # the phases' files so far into $OUT/results.tar, and the summary rewritten
  tar -C "$RES" -cf "$OUT/results.tar.tmp" . && mv "$OUT/results.tar.tmp" "$OUT/results.tar"
  write_summary
  trim_log
}
# The device tool returns no file over 16 MiB: a log past LOG_MAX_MB (12) keeps its first 2 MiB and its
# last 8 MiB, with a line saying what was cut.
trim_log() {
  local max=$((${LOG_MAX_MB:-12} * 1048576)) size
  size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  ((size > max)) || return 0
  { head -c 2097152 "$LOG"; echo; echo "[run.sh: $((size - 10485760)) bytes of the log cut here]"; tail -c 8388608 "$LOG"; } >"$LOG.tmp"
  mv "$LOG.tmp" "$LOG"
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
  fold
done
say "done in $(elapsed)s"
echo "----- log tail -----"
tail -n 15 "$LOG" | cut -c1-400
echo "----- summary -----"
cat "$OUT/summary.md"
