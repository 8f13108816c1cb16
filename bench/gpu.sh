#!/usr/bin/env bash
# bench/gpu.sh — everything that needs an NVIDIA GPU, in one command:
#   1. the device as the workbench sees it (`tessera-tune devices`),
#   2. the GPU tests (test-cuda, test-cuda-ops, test-prof-metrics: a real CUPTI range-profiler
#      pass and the CUPTI records on a timeline), which skip everywhere else,
#   3. Tessera's kernels, tuned here, side by side with the references measured in the same run
#      (bench/cublas_gemm.c, bench/gpu_ref.py): gemm bf16 4096^3 and 8192^3 vs cuBLAS (cublasLt
#      from C; torch.matmul as a cross-check), flash_attention bf16
#      B=4 H=16 S=4096 D=128 causal and not vs PyTorch SDPA, layernorm/softmax 16384x8192 bf16
#      vs a device-to-device copy of the same bytes. Ratios are ours / reference.
#
# Usage: bench/gpu.sh [BUILD_DIR]     (default build; configured and built when missing)
#   BUDGET=N   tuning evaluations per workload (default 24)
#   OUT=DIR    where the raw log and the schedule cache go (default bench/results)
# The log is bench/results/gpu-<device>-<date>.txt: commit it with the table in the note.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BUDGET=${BUDGET:-24}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
if [ ! -x "$BUILD/tools/tessera-tune" ]; then
  meson setup "$BUILD" >/dev/null && meson compile -C "$BUILD" >/dev/null || exit 2
fi
TT="$BUILD/tools/tessera-tune"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || { echo "gpu.sh: no NVIDIA GPU (nvidia-smi found none)"; exit 77; }
stamp=$(date -u +%Y-%m-%d)
log="$OUT/gpu-$(echo "$device" | tr ' /' '--')-$stamp.txt"
db="$OUT/gpu-bench-$stamp.db"
exec > >(tee "$log") 2>&1

echo "# bench/gpu.sh on $device, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
"$TT" devices

echo "## GPU tests"
# Run directly, not through meson: a carried build directory (bench/gpu-bundle.sh) cannot be
# regenerated on a machine without the build's dependencies.
for t in test-cuda test-cuda-ops test-prof-metrics; do
  "$BUILD/tests/$t" --tap 2>&1 | grep -v '^# ' | tail -40
  echo "$t: exit ${PIPESTATUS[0]}"
done

echo "## tuning (budget $BUDGET per workload; cache $db)"
ours=()  # "kind|label|value" lines
tune_and_time() {  # kind label op shape unit(gflops|gbps)
  local kind=$1 label=$2 op=$3 shape=$4 unit=$5
  "$TT" tune "$op" --shape "$shape" --dtype bf16 --backend cuda --budget "$BUDGET" \
        --strategy random --db "$db" --top 3
  local sched
  sched=$("$TT" lookup "$op" --shape "$shape" --dtype bf16 --backend cuda --db "$db" | head -1)
  if [ -z "$sched" ]; then
    ours+=("$kind|$label|failed")
    return
  fi
  local json
  json=$("$TT" run "$op" --shape "$shape" --dtype bf16 --backend cuda --schedule "$sched" --json)
  echo "$json"
  local v
  v=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["'"$unit"'"] if r["status"]=="ok" else "failed")' "$json")
  ours+=("$kind|$label|$v|$sched")
}
tune_and_time gemm "gemm 4096^3" gemm M=4096,N=4096,K=4096 gflops
tune_and_time gemm "gemm 8192^3" gemm M=8192,N=8192,K=8192 gflops
tune_and_time attention "attention causal=0" flash_attention B=4,H=16,S=4096,D=128 gflops
tune_and_time attention "attention causal=1" flash_attention_causal B=4,H=16,S=4096,D=128 gflops
tune_and_time layernorm "layernorm 16384x8192" layernorm_safe M=16384,N=8192 gbps
tune_and_time softmax "softmax 16384x8192" softmax_safe M=16384,N=8192 gbps

echo "## references"
# cuBLAS from C first (cublasLt, dlopen'ed: bench/cublas_gemm.c), then PyTorch's (its matmul is
# cuBLAS too, kept as a cross-check); the table takes the first reference of each kind.
refs=$("$BUILD/bench/cublas_gemm" 4096 4096 4096 8192 8192 8192)
echo "cublas_gemm: exit $?"
refs+=$'\n'$(python3 bench/gpu_ref.py)
echo "$refs"

echo "## table (ours / reference, same run)"
python3 - "$refs" "${ours[@]}" <<'EOF'
import json, sys
refs = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
def ref(kind, **match):
    for r in refs:
        if r["kind"] == kind and all(str(r.get(k)) == str(v) for k, v in match.items()):
            return r
    return None
rows = []
for line in sys.argv[2:]:
    kind, label, value, *sched = line.split("|")
    if kind == "gemm":
        n = int(label.split()[1].split("^")[0])
        r = ref("gemm", M=n); unit, key, scale = "TFLOP/s", "tflops", 1e-3
    elif kind == "attention":
        r = ref("attention", causal=label[-1]); unit, key, scale = "TFLOP/s", "tflops", 1e-3
    else:
        r = ref("copy"); unit, key, scale = "GB/s", "gbps", 1.0
    ours = None if value == "failed" else float(value) * scale
    theirs = r[key] if r else None
    ratio = f"{ours / theirs:.2f}x" if ours and theirs else "-"
    refname = (r.get("ref") or "d2d copy") if r else "-"
    rows.append((label, f"{ours:.1f}" if ours else "failed", f"{theirs:.1f}" if theirs else "-",
                 refname, unit, ratio))
print(f"{'workload':24} {'ours':>9} {'reference':>10}  {'ref':22} {'unit':8} ratio")
for r in rows:
    print(f"{r[0]:24} {r[1]:>9} {r[2]:>10}  {r[3]:22} {r[4]:8} {r[5]}")
EOF

# Issue 7 on the GPU: ceilings, a profiled gemm and attention (timeline + Chrome trace, and the
# hardware-metrics block from CUPTI's range profiler: DRAM bytes, FLOPs by precision, occupancy,
# L2 hit rate, bank conflicts, each with its source), and the profiler's overhead on kernel
# times (target within 2%).
echo "## profiler"
"$TT" devices --measure --db "$db"
for w in "gemm M=4096,N=4096,K=4096" "flash_attention B=4,H=16,S=4096,D=128"; do
  set -- $w
  "$TT" profile "$1" --shape "$2" --dtype bf16 --backend cuda --db "$db" \
        --output "$OUT/trace-$1-$device-$(date -u +%Y%m%d).json"
done
# The metrics as stored (gpu_metrics in the trial's metrics JSON), for the log: the DRAM bytes
# next to the op's compulsory bytes and the tensor FLOPs next to 2*M*N*K say whether the
# counters can be trusted on this GPU.
"$TT" profile gemm --shape M=4096,N=4096,K=4096 --dtype bf16 --backend cuda --db "$db" --json |
  python3 -c 'import json,sys; m=json.loads(sys.stdin.read())["summary"].get("metrics",{}).get("gpu_metrics"); print("gpu_metrics:", json.dumps(m, indent=1))'
"$BUILD/bench/profile_overhead" --backend cuda --rounds 6 --samples 10
echo "log: $log"
