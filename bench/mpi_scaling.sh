#!/bin/bash
# bench/mpi_scaling.sh — distributed tuning throughput: trials a minute of one exhaustive tune
# (a fixed gemm space on the CPU backend, each run into a fresh cache with a fresh artifact
# cache, so every run compiles as much) on 1, 2 and 4 MPI ranks, ROUNDS times, and whether each
# stored the same trials and found the same best as the serial run, and how far each point's
# median is from the serial run's. Ranks on one machine take turns measuring (the measuring
# locks, docs/distributed.md; TESSERA_MEASURE_LOCK=off in the environment turns them off for a
# comparison), so more ranks than one per machine speed up compiling only.
# Usage: bench/mpi_scaling.sh [ROUNDS]   (from the repository root, after a build with MPI)
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
TT=build/tools/tessera-tune
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SPACE='block(m=[72,144], n=[1008,2016], k=[256]).micro(m=[6], n=[8,16]).vector([8]).threads([1]).unroll([4,8])'
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "# gemm M=384,N=384,K=384 f32, exhaustive over $SPACE"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores, $(mpirun --version | head -1); TESSERA_MEASURE_LOCK=${TESSERA_MEASURE_LOCK:-(default: on)}"
for r in $(seq "$ROUNDS"); do
  # A second serial run first: how far two serial runs' medians are apart is this machine's
  # noise, the yardstick for the distributed runs' distance.
  for run in 1 1b 2 4; do
    np=${run%b}
    db=$TMP/np$run-$r.db
    export XDG_CACHE_HOME=$TMP/cache-np$run-$r
    t0=$(date +%s.%N)
    if [ "$np" = 1 ]; then
      $TT tune gemm --shape M=384,N=384,K=384 --backend cpu --space "$SPACE" \
        --strategy exhaustive --budget 100 --db "$db" --json >"$TMP/out" 2>&1
    else
      mpirun --oversubscribe -np "$np" $TT tune gemm --shape M=384,N=384,K=384 --backend cpu \
        --space "$SPACE" --strategy exhaustive --budget 100 --db "$db" --json >"$TMP/out" 2>&1
    fi
    t1=$(date +%s.%N)
    python3 - "$db" "$TMP/np1-$r.db" "$run" "$t0" "$t1" <<'PY'
import sqlite3, sys
db, ref, np, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
q = lambda p, s: sqlite3.connect(p).execute(s).fetchall()
n = q(db, "SELECT count(*) FROM trial")[0][0]
pts = q(db, "SELECT schedule FROM trial ORDER BY schedule")
best = q(db, "SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")
same = pts == q(ref, "SELECT schedule FROM trial ORDER BY schedule")
same_best = best == q(ref, "SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")
ranks = q(db, "SELECT rank, count(*) FROM trial GROUP BY rank")
# How far each point's median is from the serial run's: ranks timing beside each other drift.
mine = dict(q(db, "SELECT schedule, median_ns FROM trial WHERE status = 'ok'"))
theirs = dict(q(ref, "SELECT schedule, median_ns FROM trial WHERE status = 'ok'"))
dev = sorted(abs(mine[s] / theirs[s] - 1) for s in mine if s in theirs)
drift = "median %4.1f%%, max %5.1f%%" % (100 * dev[len(dev) // 2], 100 * dev[-1]) if dev else "n/a"
print("np %-2s: %3d trials in %5.1f s = %5.1f trials/min; same trials as serial: %s; same best: %s; "
      "medians off the serial run's by %s; by rank %s"
      % (np, n, t1 - t0, 60 * n / (t1 - t0), same, same_best, drift, ranks))
PY
  done
done
