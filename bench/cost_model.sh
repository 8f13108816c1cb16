#!/usr/bin/env bash
# bench/cost_model.sh — the cost model's benchmark on CPU GEMM spaces:
#   1. held-out ranking quality: `tessera-tune model eval` (each workload ranked by a model
#      trained on the others: Kendall tau, top-1 regret, top-5 recall in the top 20, and the
#      same for the analytic estimate alone);
#   2. evaluations to reach 95% of the best recorded schedule, per strategy, mean over 10 seeds:
#      `tessera-tune strategies compare gemm --db` replays each workload's exhaustively
#      measured space (the model strategy's prior is trained on the other workloads only).
#
#   bench/cost_model.sh [BUILD_DIR]            replay the spaces recorded in bench/data/
#   bench/cost_model.sh [BUILD_DIR] --record   measure the spaces anew on this machine first
#                                              (exhaustive, single-threaded: ~7 minutes a shape)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RECORD=${2:-}
TT="$BUILD/tools/tessera-tune"
DATA=bench/data/cpu-gemm-exhaustive-2026-11-23.json.gz
SPACE='block(m=[72,96,144], n=[2016,4080], k=[128,256,384]).micro(m=[4,6,8], n=[8,16,24]).vector([4,8]).unroll([4,8]).threads([1])'
SHAPES=(M=512,N=512,K=512 M=1024,N=256,K=768 M=256,N=1024,K=1024 M=768,N=768,K=384
        M=384,N=640,K=896)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DB="$TMP/cost.db"
export XDG_CACHE_HOME="$TMP/cache"

if [ "$RECORD" = "--record" ]; then
  for s in "${SHAPES[@]}"; do
    echo "# recording gemm $s (exhaustive, $(date -u +%H:%M:%S))"
    "$TT" tune gemm --shape "$s" --backend cpu --space "$SPACE" --strategy exhaustive \
      --budget 1000 --db "$DB" --top 3 | tail -4
  done
else
  gunzip -c "$DATA" > "$TMP/data.json"
  "$TT" import "$TMP/data.json" --db "$DB"
fi

echo "# $TT model eval --db CACHE --backend cpu"
"$TT" model eval --db "$DB" --backend cpu
echo
for s in "${SHAPES[@]}"; do
  "$TT" strategies compare gemm --shape "$s" --backend cpu --space "$SPACE" --db "$DB" \
    --budget 396 --repeats 10 --strategy random,annealing,evolutionary,model
  echo
done | tee "$TMP/compare.txt"

# The summary: mean evaluations to 95% over the workloads, and the model's ratio to the best
# of the others (the target is <= 0.5).
awk '/^(random|annealing|evolutionary|model) / { sum[$1] += $6; n[$1]++ }
     END {
       best = ""; for (s in sum) if (s != "model" && (best == "" || sum[s] < sum[best])) best = s
       for (s in sum) printf "mean evals to 95%% over %d workloads: %-13s %7.1f\n", n[s], s, sum[s] / n[s]
       printf "model / best other (%s): %.2f\n", best, sum["model"] / sum[best]
     }' "$TMP/compare.txt"
