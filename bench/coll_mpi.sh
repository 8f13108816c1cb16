#!/bin/bash
# bench/coll_mpi.sh — what tuning buys on collectives over MPI: the best of Open MPI's
# all_reduce algorithms (and segment sizes) against Open MPI's own choice ("default", its fixed
# decision rules), both measured in the same run by the same launches, at each size of a sweep,
# ROUNDS times into fresh caches. Ratios are default time / best time (>= 1 by construction:
# the default is one of the candidates; how far above 1 is the finding, and whether the same
# algorithm wins every round is its stability).
# Usage: bench/coll_mpi.sh [RANKS] [ROUNDS] [SWEEP]   (from the repository root, after a build
# with MPI; default 2 ranks, 2 rounds, BYTES=4K..16M:x4, f32)
cd "$(dirname "$0")/.."
RANKS=${1:-2}
ROUNDS=${2:-2}
SWEEP=${3:-BYTES=4K..16M:x4}
TT=build/tools/tessera-tune
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "# all_reduce f32 $SWEEP on $RANKS ranks; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores, $(mpirun --version | head -1)"
echo "# command: $TT all_reduce --shape $SWEEP --ranks $RANKS --db FRESH.db"
for r in $(seq "$ROUNDS"); do
  echo "## round $r"
  $TT all_reduce --shape "$SWEEP" --ranks "$RANKS" --db "$TMP/r$r.db" | sed -n '/^ *BYTES  best/,$p'
done
$TT coll-model --db "$TMP/r1.db" | sed -n '1,4p'
