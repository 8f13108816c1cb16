#!/usr/bin/env bash
# cuda-compile-all.sh — CI without a GPU: every GPU op at every point of its default CUDA space
# (fp8 gemm's at its limits, below) is compiled through NVRTC + nvJitLink for sm_90a and sm_80
# (tessera-tune check), and must
# compile within the arch's limits without spilling registers; points whose shared memory
# exceeds a limit must have been pruned by the space's constraints, never left to fail in the
# compiler. The resource figures (registers, shared memory, spills, CTAs per SM) are written to
# OUT_DIR/<op>-<dtype>.jsonl.
# Skips (77) when NVRTC / nvJitLink cannot be loaded.
# Kernel files of the kernel language (examples/, tests/kernels/) are compiled the same way.
# A kernel whose code was already compiled in this run for the arch (a kernel file lowered
# through a built-in op's templates at the built-in's shape) is not compiled twice: check
# --reuse reads its resources from OUT_DIR/reuse, which starts empty each run.
#   cuda-compile-all.sh TESSERA_TUNE OUT_DIR SOURCE_DIR
set -uo pipefail
tt=$1
out=$2
src=${3:-.}
mkdir -p "$out"
rm -rf "$out/reuse"

"$tt" check gemm --shape M=256,N=256,K=256 --dtype bf16 --schedule 'block(m=64,n=64,k=32)' \
  --arch sm_90a >/dev/null 2>"$out/probe.err"
if [ $? -eq 3 ]; then
  echo "1..0 # SKIP $(cat "$out/probe.err")"
  exit 77
fi

# Every point of each default space (bf16; gemm's fp8 space at its limits), then the default
# point in the other dtypes. Shapes
# are the benchmark's, so the spaces' shape-dependent constraints see realistic values.
full=(
  "gemm|M=4096,N=4096,K=4096"
  "flash_attention|B=4,H=16,S=4096,D=128"
  "flash_attention_causal|B=4,H=16,S=4096,D=64"
  "saxpy|N=16777216"
  "reduce_sum|M=16384,N=8192"
  "softmax_safe|M=16384,N=8192"
  "layernorm_safe|M=16384,N=8192"
  "rmsnorm_safe|M=16384,N=8192"
)
# fp8 gemm's space is its own (wgmma and TMA only, BK = 128, so sm_90a only), compiled by the
# bf16 space's wgmma templates with a byte an element: in e4m3 the points at its limits, where a
# point spills or overflows if any does, the default point in e5m2. The limits: the most
# accumulators a thread (BM * BN / (32 * warps) = 128, the constraint's bound), or stages filling
# more than 3/4 of the shared memory; 30 of the 198 points, among them the one with the most
# registers (201 of the 198's; all 198 compiled without a spill, 2026-12-01). A template change
# that spills elsewhere spills in bf16's whole space first, which is compiled above.
fp8_limits='BM * BN / (warps * 32) >= 128 || 4 * stages * (BM * BK + BK * BN) * elem_bytes > 3 * smem_bytes'
fp8=(
  "gemm|M=4096,N=4096,K=4096|fp8_e4m3|limits"
  "gemm|M=1000,N=1000,K=1024|fp8_e5m2|default"
)
extra=(
  "gemm|M=1000,N=1000,K=1000|f16"
  "flash_attention_causal|B=1,H=2,S=1000,D=128|f16"
  "flash_attention|B=1,H=2,S=1000,D=64|f16"
  "softmax_safe|M=1000,N=1000|f32"
  "layernorm_safe|M=1000,N=1000|f16"
  "rmsnorm_safe|M=3,N=40|f32"
  "reduce_sum|M=1000,N=1000|f32"
  "saxpy|N=1001|f16"
)

# Every point of each kernel file's space, in the dtype its tensors declare (rows of 100000:
# streamed in column tiles on CUDA).
kernels=(
  "examples/saxpy.tsk|N=16777216"
  "tests/kernels/affine_relu.tsk|N=1000003"
  "examples/softmax.tsk|M=16384,N=8192"
  "examples/layernorm.tsk|M=1000,N=1000"
  "tests/kernels/layernorm_bf16.tsk|M=16384,N=8192"
  "examples/softmax.tsk|M=64,N=100000"
  "tests/kernels/layernorm_bf16.tsk|M=64,N=100000"
  "tests/kernels/softmax_recompute_bf16.tsk|M=64,N=100000"
  "examples/gemm.tsk|M=4096,N=4096,K=4096"
  "tests/kernels/gemm_f16.tsk|M=1000,N=1000,K=1000"
  "examples/gemm_bias_relu.tsk|M=4096,N=4096,K=4096"
  "examples/flash_attention.tsk|B=4,H=16,S=4096,D_h=128"
  "examples/flash_attention.tsk#flash_attention+causal|B=4,H=16,S=4096,D_h=64"
)

status=0
n=0
check() {  # op shape dtype [--schedule POINT]; op "kernel:FILE" is a kernel file
  local op=$1 shape=$2 dtype=$3; shift 3
  local file="$out/$(basename "$op" | tr '#+' '--')-$dtype-$(echo "$shape" | tr ',=' '_-').jsonl"
  n=$((n + 1))
  # No point of a default space may spill registers either (docs/cuda.md says so; a spilling
  # point is pruned by a constraint with its measurement, kernels/op-*.c).
  local rc=0 spills
  local what=("$op" --dtype "$dtype")
  # kernel:FILE or kernel:FILE#NAME (NAME may set the kernel's flags: flash_attention+causal)
  if [[ $op == kernel:*#* ]]; then
    local k=${op#kernel:}
    what=(--kernel "$src/${k%%#*}" "${k#*#}")
  elif [[ $op == kernel:* ]]; then
    what=(--kernel "$src/${op#kernel:}")
  fi
  "$tt" check "${what[@]}" --shape "$shape" --arch sm_90a,sm_80 --json --reuse "$out/reuse" "$@" \
    >"$file" || rc=1
  spills=$(grep -c '"spill_stores": [1-9]' "$file")
  if [ $rc -eq 0 ] && [ "$spills" -eq 0 ]; then
    echo "ok $n - $op $shape $dtype: $(wc -l <"$file") kernels compiled ($(grep -c '"reused": true' "$file") compiled before), none spills"
  else
    local why="does not compile within the arch's limits"
    [ "$spills" -eq 0 ] || why="$spills kernels spill registers"
    echo "not ok $n - $op $shape $dtype: $why"
    grep -E '"ok": false|"spill_stores": [1-9]' "$file" | head -5 | sed 's/^/# /'
    status=1
  fi
}
echo "1..$((${#full[@]} + ${#fp8[@]} + ${#extra[@]} + ${#kernels[@]} + 1))"
for c in "${full[@]}"; do
  IFS='|' read -r op shape <<<"$c"
  check "$op" "$shape" bf16
done
for c in "${fp8[@]}"; do
  IFS='|' read -r op shape dtype mode <<<"$c"
  if [ "$mode" = default ]; then
    check "$op" "$shape" "$dtype" --schedule '' --arch sm_90a
  else
    check "$op" "$shape" "$dtype" --where "$fp8_limits"
  fi
done
for c in "${extra[@]}"; do
  IFS='|' read -r op shape dtype <<<"$c"
  check "$op" "$shape" "$dtype" --schedule ''
done
for c in "${kernels[@]}"; do
  IFS='|' read -r file shape <<<"$c"
  check "kernel:$file" "$shape" declared
done

# check --reuse itself: a second check of a kernel reads back what the first one's compile
# reported; a record that is not one (a damaged file) is a miss, compiled again and rewritten.
n=$((n + 1))
r="$out/reuse-test"
rm -rf "$r"
one() { "$tt" check saxpy --shape N=5001 --dtype bf16 --schedule '' --arch sm_90a --json --reuse "$r"; }
regs() { grep -o '"registers": [0-9]*' <<<"$1"; }
first=$(one) && second=$(one) && records=("$r"/*.json) && echo '{"registers": "x"}' >"${records[0]}" &&
  third=$(one)
if [ "${#records[@]}" -eq 1 ] && ! grep -q '"reused"' <<<"$first" && grep -q '"reused": true' <<<"$second" &&
  [ -n "$(regs "$first")" ] && [ "$(regs "$first")" = "$(regs "$second")" ] &&
  ! grep -q '"reused"' <<<"$third" && [ "$(regs "$third")" = "$(regs "$first")" ] &&
  grep -q '"registers": [0-9]' "${records[0]}"; then
  echo "ok $n - check --reuse: read back with the same resources; a damaged record is compiled again"
else
  echo "not ok $n - check --reuse"
  printf '# %s\n' "first: $first" "second: ${second:-}" "third: ${third:-}" "records: ${records[*]:-}"
  status=1
fi
exit $status
