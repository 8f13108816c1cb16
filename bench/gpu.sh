#!/usr/bin/env bash
# bench/gpu.sh — everything that needs an NVIDIA GPU, in three phases that each end well inside
# the 10 minutes one command may run on a lent GPU machine (docs/gpu.md says how to run them):
#
#   --phase 1  preflight and correctness (~6 min): the system, the loader's view of the CUDA
#              libraries and of the carried binaries, torch with no paths of ours; stops at
#              once (exit 3) when CUDA is unusable. Then one smoke run per kernel family,
#              test-cuda, test-cuda-ops (every point, each in the candidate worker with a
#              timeout), test-prof-metrics, and compute-sanitizer racecheck + memcheck on a
#              TMA gemm point.
#   --phase 2  performance (<= 9 min): the references first (cublasLt from C at 4096^3 and
#              8192^3, a device-to-device copy from C, PyTorch SDPA with its default backend
#              and with cuDNN forced), then exhaustive tunes (a small wgmma space with both
#              load paths and the default point for gemm; the default spaces of attention,
#              causal attention, layernorm and softmax), and the ours / anchor table, printed
#              last. The schedule cache is copied to the output.
#   --phase 3  profiler (<= 8 min): ceilings, a profile with hardware metrics of the best gemm
#              and attention (the cache from phase 2 with --db, else fixed points), Chrome
#              traces, the profiler's overhead on kernel times, and the collectives on NCCL at
#              one rank.
#   --phase 0  the kit's own machinery, no GPU needed (tests/test-gpu-kit.sh): a step that
#              passes, one that fails, one that hangs past its timeout, one that skips; the
#              smoke, tune, default-point, table and profile steps on the CPU at small sizes;
#              and a step clipped by the phase's budget.
#
# Every step runs under `timeout`, clipped to what is left of the phase's budget, so a hung
# kernel costs one step, never the phase. stdout carries one line per step and the summary,
# printed last; everything else goes to OUT/phaseN.log. OUT holds at most 8 files, with names
# of letters, digits, '.', '_' and '-' only (what the GPU machine sends back). The exit status
# is 0 when every step passed, 1 when one failed (the summary names them), 3 when CUDA is
# unusable, 2 for bad usage.
#
# Usage: bench/gpu.sh --phase N [--bin DIR] [--out DIR] [--db FILE] [--plan]
#   --bin DIR   the carried binaries (default .gpu/bin, made by bench/gpu-bundle.sh)
#   --out DIR   where the log, summary and results go (default $OUT, else bench/results/gpu-DATE)
#   --db FILE   phase 3: the schedule cache phase 2 wrote (its best points get profiled)
#   --budget S  a shorter phase (a lease of less than half an hour): later steps get clipped or
#               skipped, so the order of each phase's steps is the order of their value
#   --skip A,B  steps not to run (recorded as SKIP), e.g. tune-gemm-8192,racecheck
#   --plan      list the phase's steps with their timeouts and its budget, run nothing
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() { echo "usage: bench/gpu.sh --phase 0|1|2|3 [--bin DIR] [--out DIR] [--db FILE] [--budget S] [--skip A,B] [--plan]" >&2; exit 2; }
PHASE="" BIN=.gpu/bin DEST=${OUT:-} DB_IN="" PLAN=0 BUDGET_ARG="" SKIP=""
while [ $# -gt 0 ]; do
  case $1 in
    --phase) PHASE=${2:-}; shift 2 ;;
    --bin) BIN=${2:-}; shift 2 ;;
    --out) DEST=${2:-}; shift 2 ;;
    --db) DB_IN=${2:-}; shift 2 ;;
    --budget) BUDGET_ARG=${2:-}; shift 2 ;;
    --skip) SKIP=,${2:-},; shift 2 ;;
    --plan) PLAN=1; shift ;;
    *) usage ;;
  esac
done
case $PHASE in 0|1|2|3) ;; *) usage ;; esac

# Each phase's budget: the sum of its steps' timeouts fits in it, and it ends with a minute to
# spare under the 10-minute limit of one command (the machine's start is not counted there).
# Phase 0 rehearses on the CPU: its default step measures the device's ceilings first, 7 s on
# an idle 2-core VM and 11 s beside another test, which at 30 s left the table and profile
# steps no time.
BUDGETS=(40 540 540 480)
BUDGET=${BUDGETS[$PHASE]}
if [ -n "$BUDGET_ARG" ]; then
  case $BUDGET_ARG in ''|*[!0-9]*) usage ;; esac
  [ "$BUDGET_ARG" -ge 20 ] && [ "$BUDGET_ARG" -le "$BUDGET" ] ||
    { echo "gpu.sh: --budget must be 20..$BUDGET s for phase $PHASE" >&2; exit 2; }
  BUDGET=$BUDGET_ARG
fi
RESERVE=10 # seconds kept for the summary
KEEP=0     # seconds more kept for a phase's last step (phase 2's table), which runs `KEEP=0 step`

if [ "$PLAN" = 1 ]; then
  PLAN_SUM=0
  printf '# phase %s: budget %d s\n' "$PHASE" "$BUDGET"
else
  [ -n "$DEST" ] || DEST=bench/results/gpu-$(date -u +%Y%m%d-%H%M)
  mkdir -p "$DEST" || exit 2
  DEST=$(cd "$DEST" && pwd)
  BIN=$(cd "$BIN" 2>/dev/null && pwd) || { echo "gpu.sh: no binaries in $BIN (run bench/gpu-bundle.sh)" >&2; exit 2; }
  LOG=$DEST/phase$PHASE.log
  SUMMARY=$DEST/summary.txt
  : >"$LOG"
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  # The tuner's artifacts and default cache stay in the scratch directory.
  export XDG_CACHE_HOME=$WORK/cache
  export TT="$BIN/tessera-tune" BIN WORK DEST ROOT
fi
# The backend the steps use: cuda, except in phase 0, which rehearses them on the CPU.
KB=cuda
[ "$PHASE" != 0 ] || KB=cpu
export KB
START=$SECONDS
NAMES=() STATES=() SECS=() NOTES=()

# step NAME TIMEOUT FUNCTION [ARGS...]: runs FUNCTION under timeout (clipped to the phase's
# budget), its output appended to the log; records PASS, FAIL (exit status), TIMEOUT or SKIP
# (exit 77, or no time left). A function's last line of output beginning "note: " becomes the
# step's note in the summary.
step() {
  local name=$1 t=$2; shift 2
  if [ "${SKIP#*,"$name",}" != "$SKIP" ]; then
    [ "$PLAN" = 1 ] || record "$name" SKIP 0 "skipped by --skip"
    return 0
  fi
  if [ "$PLAN" = 1 ]; then
    printf '%-26s %4d s\n' "$name" "$t"
    PLAN_SUM=$((PLAN_SUM + t))
    return 0
  fi
  local left=$((BUDGET - (SECONDS - START) - RESERVE - ${KEEP:-0}))
  if [ "$left" -lt 5 ]; then
    record "$name" SKIP 0 "no time left in the phase's ${BUDGET} s"
    return 1
  fi
  [ "$t" -le "$left" ] || t=$left
  local out=$WORK/step.out t0=$SECONDS
  { echo; echo "=== $name (timeout ${t} s): $*"; } >>"$LOG"
  STEP_TIMEOUT=$t timeout -k 5 "$t" bash -c '"$@"' _ "$@" >"$out" 2>&1
  local rc=$?
  cat "$out" >>"$LOG"
  local note
  note=$(grep '^note: ' "$out" | tail -1 | cut -c7- | cut -c1-160)
  local state=PASS
  case $rc in
    0) ;;
    77) state=SKIP ;;
    124|137) state=TIMEOUT; note="killed after ${t} s${note:+; $note}" ;;
    *) state=FAIL; [ -n "$note" ] || note="exit $rc: $(grep -v '^\s*$' "$out" | tail -1 | cut -c1-140)" ;;
  esac
  record "$name" "$state" $((SECONDS - t0)) "$note"
  [ "$state" = PASS ] || [ "$state" = SKIP ]
}

record() {
  NAMES+=("$1"); STATES+=("$2"); SECS+=("$3"); NOTES+=("$4")
  printf '[phase %s %3d s] %-26s %-7s %s\n' "$PHASE" $((SECONDS - START)) "$1" "$2" "$4"
}

# The summary: printed last, so the tail of the output that comes back holds it, and written
# to OUT/summary.txt. $1: the exit status it announces.
finish() {
  local rc=$1 failed=() i
  for i in "${!NAMES[@]}"; do
    case ${STATES[$i]} in FAIL|TIMEOUT) failed+=("${NAMES[$i]}") ;; esac
  done
  [ "$rc" != 0 ] || [ ${#failed[@]} -eq 0 ] || rc=1
  {
    echo
    echo "== bench/gpu.sh phase $PHASE summary: $DEVICE_LINE"
    echo "   commit $(cat "$BIN/../COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - START)) s of $BUDGET"
    for i in "${!NAMES[@]}"; do
      printf '   %-26s %-7s %4d s  %s\n' "${NAMES[$i]}" "${STATES[$i]}" "${SECS[$i]}" "${NOTES[$i]}"
    done
    [ ! -s "$WORK/extra" ] || cat "$WORK/extra"
    if [ "$rc" = 3 ]; then
      echo "   STOPPED: CUDA is not usable here ($STOP_REASON); nothing else was run"
    elif [ ${#failed[@]} -gt 0 ]; then
      echo "   FAILED: ${failed[*]} (details in $(basename "$LOG"))"
    else
      echo "   all steps passed"
    fi
    : >>"$SUMMARY"
    echo "   exit $rc; files in $DEST: $(cd "$DEST" && ls | tr '\n' ' ')"
  } >"$WORK/summary"
  cp "$WORK/summary" "$SUMMARY"
  cat "$WORK/summary"
  exit "$rc"
}

# ---------------------------------------------------------------------------------------------
# Steps (functions run by `step` in a child bash: they see only exported names).

preflight_system() {
  uname -a
  grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
  ldd --version 2>&1 | head -1
  nproc; free -g | head -2
  if ! command -v nvidia-smi >/dev/null; then
    echo "note: no nvidia-smi: no NVIDIA driver on this machine"; return 1
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)
  echo "note: $gpu"
}

# What the dynamic loader will find: the CUDA libraries the workbench dlopens, and every
# library the carried binaries link (none may be missing; none may come from outside the
# bundle but the base system's).
# Where a soname resolves, in the order the workbench's dlopen looks (runtime/cuda/ts-cuda-dl.c):
# LD_LIBRARY_PATH, the ldconfig cache, then $CUDA_HOME and /usr/local/cuda, lib64 and CUPTI's.
where_lib() {
  local d IFS=:
  for d in ${LD_LIBRARY_PATH:-}; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return; }
  done
  d=$(ldconfig -p 2>/dev/null | grep -m1 " $1 " | sed 's/.*=> //')
  [ -z "$d" ] || { echo "$d"; return; }
  for d in "${CUDA_HOME:-/usr/local/cuda}" /usr/local/cuda; do
    [ -e "$d/lib64/$1" ] && { echo "$d/lib64/$1"; return; }
    [ -e "$d/extras/CUPTI/lib64/$1" ] && { echo "$d/extras/CUPTI/lib64/$1"; return; }
  done
  echo "(not found)"
}
export -f where_lib

preflight_loader() {
  local bad=0 lib b
  for lib in libcuda.so.1 libnvrtc.so.13 libnvJitLink.so.13 libcupti.so.13 libcublasLt.so.13; do
    printf '%-22s %s\n' "$lib" "$(where_lib "$lib")"
  done
  echo "CUDA_HOME=${CUDA_HOME:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ls -d /usr/local/cuda*/lib64 /usr/local/nvidia/lib64 2>/dev/null
  for b in "$BIN"/*; do
    echo "--- ldd $(basename "$b")"
    ldd "$b" 2>&1 | sed 's/ (0x[0-9a-f]*)//'
    if ldd "$b" 2>&1 | grep -q 'not found'; then
      echo "note: $(basename "$b") misses $(ldd "$b" | awk '/not found/{print $1}' | tr '\n' ' ')"; bad=1
    fi
  done
  [ $bad = 1 ] || echo "note: every carried binary resolves; libcuda: $(where_lib libcuda.so.1)"
  return $bad
}

# The workbench's own view: a cuda device, or the reason there is none (no driver, no device,
# a library missing).
preflight_devices() {
  local out
  out=$("$TT" devices 2>&1); echo "$out"
  local cuda
  cuda=$(echo "$out" | grep -m1 '^cuda ')
  case $cuda in
    *unavailable*) echo "note: ${cuda#cuda }" | sed 's/note: *unavailable: /note: /'; return 3 ;;
    "") echo "note: tessera-tune lists no cuda backend"; return 3 ;;
  esac
  echo "note: ${cuda#cuda   }" | cut -c1-160
}

# torch as the image ships it: its own python3 (the first on PATH, which an image may put in a
# virtual environment), with no library or module path of anyone else's.
preflight_torch() {
  env -u LD_LIBRARY_PATH -u LD_PRELOAD -u PYTHONPATH -u PYTHONHOME python3 -c '
import sys
try:
    import torch
except Exception as e:
    print("note: cannot import torch (%s: %s)" % (type(e).__name__, e)); sys.exit(1)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("note: torch %s sees %s, %d SMs" % (torch.__version__, p.name, p.multi_processor_count))
else:
    print("note: torch %s sees no CUDA device" % torch.__version__); sys.exit(1)'
}

# smoke OP SHAPE POINT: one verified, timed run of a point.
smoke() {  # OP SHAPE POINT [DTYPE]
  local json
  json=$("$TT" run "$1" --backend "$KB" --shape "$2" --dtype "${4:-bf16}" --schedule "$3" --json)
  local rc=$?
  echo "$json"
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("note: %s, %.1f TFLOP/s, %.0f GB/s, error %.2g" % (r["status"], r["gflops"] / 1e3, r["gbps"], r["rel_error"]) if r["status"] == "ok"
      else "note: %s: %s" % (r["status"], r["message"][:120]))' "$json" 2>/dev/null
  return $rc
}

gtest() {  # a g_test program of the bundle, TAP
  "$BIN/$1" --tap; local rc=$?
  echo "note: $(grep -c '^ok' "$WORK/step.out" 2>/dev/null || true) ok, $(grep -c '^not ok' "$WORK/step.out" 2>/dev/null || true) not ok, $(grep -c '# SKIP' "$WORK/step.out" 2>/dev/null || true) skipped"
  return $rc
}

# The deadline leaves the harness 15 s of its step's (possibly clipped) timeout to report.
cuda_ops() {
  "$BIN/test-cuda-ops" "$TT" --timeout 15 --deadline $((STEP_TIMEOUT > 40 ? STEP_TIMEOUT - 15 : 25)); local rc=$?
  echo "note: $(grep -E '^# [0-9]+ passed' "$WORK/step.out" | tail -1 | cut -c3-)"
  return $rc
}

# NCCL on one rank (the bundle has no MPI, and one GPU needs none): each collective at 64 MiB
# a rank in bf16 at NCCL's own choice, verified against the exact sums and timed. NCCL from the image's pip wheel when the loader finds none. One rank moves no data
# between GPUs (bus bandwidth 0): this checks the code path, not NVLink.
coll_nccl() {
  local dir rc=0 op
  if [ "$(where_lib libnccl.so.2)" = "(not found)" ]; then
    dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
    [ -n "$dir" ] && export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  for op in all_reduce all_gather reduce_scatter; do
    "$TT" "$op" --backend nccl --ranks 1 --shape BYTES=64M --dtype bf16 --db "$WORK/coll.db" \
      --space 'dict(protocol=["default"])' --samples 3 --timeout 8 || rc=1
  done
  echo "note: $(grep -c '^best:' "$WORK/step.out" 2>/dev/null || true) of 3 collectives verified; $(grep -m1 -o 'algbw [0-9.]* GB/s' "$WORK/step.out" | head -1)"
  return $rc
}

TMA_POINT='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma")'
COOP_POINT='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(2)'
PP_POINT='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong").persistent(2).epilogue("tma").cluster(m=2)'
ATTN_WG_POINT='block(m=128,n=64).warps(8).stages(2).mma("wgmma").schedule("pingpong").persistent(2).epilogue("tma")'
export TMA_POINT COOP_POINT PP_POINT ATTN_WG_POINT

sanitizer() {  # racecheck | memcheck: the TMA gemm, plain and warp-specialized, and the wgmma attention, one launch each
  command -v compute-sanitizer >/dev/null || { echo "note: no compute-sanitizer on this machine"; return 77; }
  local rc=0 p
  for p in "$TMA_POINT" "$COOP_POINT" "$PP_POINT"; do
    compute-sanitizer --tool "$1" --error-exitcode 9 --print-limit 20 \
      "$TT" run gemm --backend cuda --shape M=256,N=256,K=1024 --dtype bf16 --samples 1 \
      --schedule "$p" || rc=1
  done
  compute-sanitizer --tool "$1" --error-exitcode 9 --print-limit 20 \
    "$TT" run flash_attention_causal --backend cuda --shape B=1,H=2,S=300,D=64 --dtype bf16 \
    --samples 1 --schedule "$ATTN_WG_POINT" || rc=1
  echo "note: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$WORK/step.out" | sed 's/=* *//' | sort | uniq -c | tr -s ' ' | paste -sd';')"
  return $rc
}

# --- phase 2 ---

ref_cublas() { "$BIN/cublas_gemm" 4096 4096 4096 8192 8192 8192 | tee -a "$WORK/refs.jsonl"; }
ref_copy() { "$BIN/cuda_copy" $((16384 * 8192 * 2)) | tee -a "$WORK/refs.jsonl"; }
ref_torch() {
  env -u LD_LIBRARY_PATH -u LD_PRELOAD -u PYTHONPATH -u PYTHONHOME PYTHONUNBUFFERED=1 \
    python3 "$ROOT/bench/gpu_ref.py" | tee -a "$WORK/refs.jsonl"
  return "${PIPESTATUS[0]}"
}

# tune KIND LABEL OP SHAPE SPACE BUDGET_MS: an exhaustive tune of SPACE (the op's default space
# when empty) into the phase's cache, then the best point run once more beside the references.
tune() {  # KIND LABEL OP SHAPE SPACE BUDGET_MS [DTYPE]
  local kind=$1 label=$2 op=$3 shape=$4 space=$5 budget_ms=$6 dtype=${7:-bf16}
  local args=(--backend "$KB" --shape "$shape" --dtype "$dtype" --db "$WORK/gpu.db")
  "$TT" tune "$op" "${args[@]}" --strategy exhaustive --budget 1000 --budget-ms "$budget_ms" \
        --timeout 30 --top 5 ${space:+--space "$space"}
  local best
  best=$("$TT" lookup "$op" "${args[@]}" | head -1)
  [ -n "$best" ] || { echo "note: no verified point"; return 1; }
  local json
  json=$("$TT" run "$op" --backend "$KB" --shape "$shape" --dtype "$dtype" --schedule "$best" --json) || return 1
  echo "$json"
  echo "{\"kind\": \"$kind\", \"label\": \"$label\", \"run\": $json}" >>"$WORK/ours.jsonl"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("note: %.1f TFLOP/s, %.0f GB/s at %s" % (r["gflops"]/1e3, r["gbps"], r["schedule"]))' "$json"
}

# The default point joins the tune of the explicit space: one more trial in the same cache.
tune_default() {
  local point
  point=$("$TT" ops | awk -v op="$1" -v kb="$KB" '$1 == op {f=1} f && $1 == kb && $2 == "default:" {sub(/.*default: */, ""); print; exit}')
  [ -n "$point" ] || { echo "note: tessera-tune ops names no $KB default point for $1"; return 1; }
  "$TT" tune "$1" --backend "$KB" --shape "$2" --dtype bf16 --db "$WORK/gpu.db" \
        --strategy exhaustive --budget 1 --timeout 30 --space "$point" || return 1
  echo "note: $point"
}

WGMMA_SPACE='block(m=[128,256], n=[128,256], k=[64]).warps([8]).stages([3,4]).mma(["wgmma"]).load(["tma"]).schedule(["plain","coop","pingpong"]).persistent([0,132]).epilogue(["direct","tma"]).cluster(m=[1,2], n=[1])'
export WGMMA_SPACE
# fp8's share of it: BK = 128 (a 128-byte row of fp8), the warp-specialized designs.
FP8_SPACE='block(m=[128,256], n=[128,256], k=[128]).warps([8]).stages([3,4]).mma(["wgmma"]).load(["tma"]).schedule(["coop","pingpong"]).persistent([132]).epilogue(["direct","tma"]).cluster(m=[1,2], n=[1])'
export FP8_SPACE

table() {
  python3 "$ROOT/bench/gpu_table.py" "$WORK/refs.jsonl" "$WORK/ours.jsonl" >"$WORK/table"
  local rc=$?
  # What each gemm design (schedule, persistence, epilogue, cluster) and attention design (mma,
  # schedule, persistence, epilogue) was worth in the tunes.
  [ ! -f "$WORK/gpu.db" ] || { echo; python3 "$ROOT/bench/gpu_variants.py" "$WORK/gpu.db"; } >>"$WORK/table"
  cat "$WORK/table"
  cp "$WORK/table" "$DEST/table.txt"
  { echo; cat "$WORK/table"; } >>"$WORK/extra"
  [ ! -f "$WORK/gpu.db" ] || cp "$WORK/gpu.db" "$DEST/gpu-cache.db"
  return $rc
}

# --- phase 3 ---

ceilings() { "$TT" devices --measure --db "$WORK/gpu.db"; }

# profile OP SHAPE NAME FALLBACK_POINT: the cache's best (from --db) or the fallback, with
# metrics, its trace as OUT/trace-NAME.json.
profile() {
  local point=()
  "$TT" lookup "$1" --backend "$KB" --shape "$2" --dtype bf16 --db "$WORK/gpu.db" >/dev/null 2>&1 ||
    point=(--schedule "$4")
  "$TT" profile "$1" --backend "$KB" --shape "$2" --dtype bf16 --db "$WORK/gpu.db" "${point[@]}" \
        --output "$DEST/trace-$3.json"
  local rc=$?
  echo "note: $(grep -E '^(time|metrics) ' "$WORK/step.out" | head -2 | tr -s ' ' | tr '\n' ';')"
  return $rc
}

overhead() { "$BIN/profile_overhead" --backend "$KB" --rounds 6 --samples 10; }

# --- phase 0: the machinery itself ---
selftest() {
  case $1 in
    pass) echo "note: it passed" ;;
    fail) echo "something went wrong"; return 4 ;;
    hang) sleep 600 ;;
    skip) echo "note: nothing to do here"; return 77 ;;
  esac
}

export -f preflight_system preflight_loader preflight_devices preflight_torch smoke gtest \
  cuda_ops sanitizer ref_cublas ref_copy ref_torch tune tune_default table ceilings profile \
  overhead selftest

# ---------------------------------------------------------------------------------------------

DEVICE_LINE="(device not checked)"
STOP_REASON=""
if [ "$PLAN" = 0 ]; then
  echo "# bench/gpu.sh phase $PHASE into $DEST (log $(basename "$LOG"))"
  DEVICE_LINE=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  [ -n "$DEVICE_LINE" ] || DEVICE_LINE="no GPU seen by nvidia-smi"
  [ -z "$DB_IN" ] || cp "$DB_IN" "$WORK/gpu.db" || finish 2
fi

# Stops the phase with exit 3 when the workbench sees no usable CUDA device.
require_cuda() {
  if ! step preflight-devices 30 preflight_devices; then
    [ "$PLAN" = 1 ] && return
    STOP_REASON=${NOTES[${#NOTES[@]}-1]}
    finish 3
  fi
}

case $PHASE in
0)
  step self-pass 5 selftest pass
  step self-fail 5 selftest fail
  step self-hang 2 selftest hang
  step self-skip 5 selftest skip
  step self-smoke 20 smoke saxpy N=100000 'block(n=4096).vector(8).threads(1)'
  step self-default 20 tune_default gemm M=64,N=64,K=64
  step self-tune 30 tune gemm "gemm 64^3" gemm M=64,N=64,K=64 'block(m=[72,96]).threads([1])' 20000
  step self-table 10 table
  step self-profile 20 profile gemm M=64,N=64,K=64 gemm-64 'block(m=72)'
  step self-clipped 600 selftest hang
  ;;
1)
  step preflight-system 15 preflight_system
  step preflight-loader 15 preflight_loader
  require_cuda
  step preflight-torch 22 preflight_torch
  step smoke-gemm-mma-sync 14 smoke gemm M=1024,N=1024,K=1024 \
    'block(m=128,n=128,k=32).warps(8).stages(4).mma("sync").load("cp_async")'
  step smoke-gemm-wgmma-cp-async 14 smoke gemm M=1024,N=1024,K=1024 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("cp_async")'
  step smoke-gemm-wgmma-tma 14 smoke gemm M=1024,N=1024,K=1024 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("tma")'
  step smoke-gemm-wgmma-coop 14 smoke gemm M=1024,N=1024,K=1024 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop")'
  # 64 tiles, two a CTA: the consumers take turns on named barriers.
  step smoke-gemm-wgmma-pingpong 14 smoke gemm M=1024,N=1024,K=1024 \
    'block(m=128,n=128,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("pingpong")'
  # 256 tiles on the 132 CTAs of a persistent grid: most CTAs take two.
  step smoke-gemm-wgmma-persistent 14 smoke gemm M=4096,N=2048,K=512 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop").persistent(132)'
  # ... storing through shared memory and the TMA (3 stages: the staging tile takes the fourth's room).
  step smoke-gemm-wgmma-tma-store 14 smoke gemm M=4096,N=2048,K=512 \
    'block(m=128,n=256,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(132).epilogue("tma")'
  # ... in CTA pairs sharing B, multicast (128 tile pairs on 66 clusters).
  step smoke-gemm-wgmma-cluster 14 smoke gemm M=4096,N=2048,K=512 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop").persistent(132).cluster(m=2)'
  step smoke-attention 14 smoke flash_attention B=1,H=8,S=1024,D=128 'block(m=64,n=64).warps(4).stages(2)'
  # ... FlashAttention-3 style: a TMA producer, Q·Kᵀ and P·V on wgmma (P from registers).
  step smoke-attention-causal-wgmma 14 smoke flash_attention_causal B=1,H=8,S=1024,D=128 \
    'block(m=128,n=128).warps(8).stages(2).mma("wgmma")'
  step smoke-layernorm 14 smoke layernorm_safe M=1024,N=4096 'block(m=1).warps(8).vector(8)'
  # fp8 (e4m3, B stored [N, K]): the k32 wgmma on K-major slices, scales, a bf16 output.
  step smoke-gemm-fp8 14 smoke gemm M=4096,N=2048,K=1024 \
    'block(m=128,n=256,k=128).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop").persistent(132)' fp8_e4m3
  step test-cuda 40 gtest test-cuda
  step test-prof-metrics 40 gtest test-prof-metrics
  step racecheck 35 sanitizer racecheck
  step memcheck 35 sanitizer memcheck
  step test-cuda-ops 140 cuda_ops
  ;;
2)
  require_cuda
  step ref-cublas 55 ref_cublas
  step ref-copy 15 ref_copy
  step ref-torch 60 ref_torch
  KEEP=10
  step default-gemm-4096 20 tune_default gemm M=4096,N=4096,K=4096
  step tune-gemm-4096 70 tune gemm "gemm 4096^3" gemm M=4096,N=4096,K=4096 "$WGMMA_SPACE" 55000
  step tune-attention 50 tune attention "attention causal=0" flash_attention B=4,H=16,S=4096,D=128 "" 40000
  step tune-layernorm 25 tune layernorm "layernorm 16384x8192" layernorm_safe M=16384,N=8192 "" 20000
  step tune-softmax 25 tune softmax "softmax 16384x8192" softmax_safe M=16384,N=8192 "" 20000
  step default-gemm-8192 20 tune_default gemm M=8192,N=8192,K=8192
  step tune-gemm-8192 80 tune gemm "gemm 8192^3" gemm M=8192,N=8192,K=8192 "$WGMMA_SPACE" 65000
  step tune-attention-causal 50 tune attention "attention causal=1" flash_attention_causal B=4,H=16,S=4096,D=128 "" 40000
  step tune-gemm-fp8-8192 30 tune gemm-fp8 "gemm fp8 8192^3" gemm M=8192,N=8192,K=8192 "$FP8_SPACE" 25000 fp8_e4m3
  KEEP=0 step table 10 table
  ;;
3)
  require_cuda
  step ceilings 120 ceilings
  step profile-gemm 110 profile gemm M=4096,N=4096,K=4096 gemm-4096 \
    'block(m=128,n=256,k=64).warps(8).stages(4).mma("wgmma").load("tma")'
  step profile-attention 110 profile flash_attention B=4,H=16,S=4096,D=128 attention \
    'block(m=128,n=64).warps(8).stages(2)'
  step profile-overhead 100 overhead
  step coll-nccl 10 coll_nccl
  ;;
esac

if [ "$PLAN" = 1 ]; then
  printf '# steps total %d s of the %d s budget\n' "$PLAN_SUM" "$BUDGET"
  exit 0
fi
finish 0
