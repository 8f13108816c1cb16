#!/usr/bin/env bash
# bench/gpu-short.sh — the GPU kit's three phases in one command, for a lease of about 15
# minutes of device time (one machine start plus one command of at most 10 minutes).
#
# Each phase gets a shorter budget (--budget) and drops what matters least for a first look:
# phase 1 keeps the preflight, every smoke run, test-cuda and test-prof-metrics and gives
# test-cuda-ops the rest (its deadline follows); phase 2 keeps the references and the 4096^3
# gemm, attention and row-op tunes (8192^3 and causal attention run only if time is left);
# phase 3 profiles the best 4096^3 gemm from phase 2's cache. The budgets sum to 550 s.
# Everything lands under $OUT (else bench/results/gpu-short-DATE) in at most 7 files, the
# three summaries in summaries.txt, which is also printed last.
#
# Usage: bench/gpu-short.sh [--bin DIR]   (run bench/gpu-bundle.sh here first; carry .gpu)
set -u
cd "$(dirname "$0")/.."
BIN=.gpu/bin
[ "${1:-}" != --bin ] || BIN=$2
D=${OUT:-bench/results/gpu-short-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$D/p1" "$D/p2" "$D/p3" || exit 2
collect() {
  cat "$D"/p*/summary.txt >"$D/summaries.txt" 2>/dev/null
  rm -f "$D"/p*/summary.txt
  echo; echo "== bench/gpu-short.sh: all summaries"; cat "$D/summaries.txt"
}
bench/gpu.sh --phase 1 --bin "$BIN" --budget 190 --skip racecheck,memcheck --out "$D/p1"
rc=$?
if [ $rc = 3 ] || [ $rc = 2 ]; then collect; exit $rc; fi
bench/gpu.sh --phase 2 --bin "$BIN" --budget 290 --out "$D/p2" || rc=1
db=()
[ ! -f "$D/p2/gpu-cache.db" ] || db=(--db "$D/p2/gpu-cache.db")
bench/gpu.sh --phase 3 --bin "$BIN" --budget 70 --skip ceilings,profile-attention,profile-overhead \
  "${db[@]}" --out "$D/p3" || rc=1
collect
exit $rc
