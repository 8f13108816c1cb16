#!/bin/bash
# bench/busy_core.sh — do two-thread CPU kernels survive a busy core? One op's point with
# threads(2) and threads(1), on an idle machine and with core 1 held by a spinning process (what
# a neighbour on a shared VM does), ROUNDS times interleaved. With a static split the thread on
# the busy core holds the whole kernel back below the one-thread rate; work handed out
# dynamically goes to the free core. Each line: the run's median and range, and its CPU time
# over wall time (about 2 for an undisturbed two-thread kernel).
# Usage: bench/busy_core.sh [OP SHAPE DTYPE SCHEDULE [ROUNDS]]
#   SCHEDULE has THREADS where the thread count goes; default: softmax_safe 4096^2 f32.
#   bench/busy_core.sh gemm M=1024,N=1024,K=1024 f32 \
#     'block(m=96,n=2016,k=384).micro(m=6,n=16).vector(8).unroll(8).threads(THREADS)'
# TT=BINARY runs another tessera-tune build. Needs taskset (util-linux). Run from the
# repository root after a build.
cd "$(dirname "$0")/.."
OP=${1:-softmax_safe} SHAPE=${2:-M=4096,N=4096} DTYPE=${3:-f32}
SCHED=${4:-'block(m=4).vector(16).threads(THREADS).softmax("stored")'} ROUNDS=${5:-2}
[ "$(nproc)" -ge 2 ] || { echo "busy_core: needs 2 cores" >&2; exit 2; }
TT=${TT:-build/tools/tessera-tune}
run() {
  "$TT" run "$OP" --backend cpu --shape "$SHAPE" --dtype "$DTYPE" \
    --schedule "${SCHED//THREADS/$1}" 2>&1 | grep -E '^(time|cpu)' | tr -s ' ' |
    paste -sd' ' | sed "s/^/threads($1) $2: /"
}
echo "# $OP $SHAPE $DTYPE ${SCHED//THREADS/T}; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
for i in $(seq "$ROUNDS"); do
  run 2 idle; run 1 idle
  taskset -c 1 sh -c 'while :; do :; done' & B=$!; sleep 0.3
  run 2 busy; run 1 busy
  kill $B; wait $B 2>/dev/null
done
