#!/usr/bin/env bash
# kernels_vs_builtin.sh — the kernel-language examples tuned against the built-in ops they
# implement, side by side on this machine: each round tunes the built-in op (its default space,
# strategy and budget) and the kernel file (its decorator's space, every point) into fresh
# caches, one after the other, and prints both bests and their ratio; the summary is the median
# ratio over the rounds (> 1: the kernel file is slower).
# GEMM kernels lower through the gemm templates: each round tunes the built-in gemm, the kernel
# file over the built-in's space (--space: the same candidates, so the ratio is the lowering's
# cost alone) and the kernel file over its own decorator's space, all with gemm's default
# strategy and budget.
#   bench/kernels_vs_builtin.sh [TESSERA_TUNE] [ROUNDS] [ONLY]   (ONLY: a regex of op names)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tt=${1:-$here/build/tools/tessera-tune}
rounds=${2:-3}
only=${3:-.}
work=$(mktemp -d "${TMPDIR:-/tmp}/ts-kvb.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache

# op|file[#NAME]|shape[|dtype|the kernel's shape]: NAME picks the kernel and sets its flags
# (flash_attention+causal); the kernel's shape spells the dims as its signature does.
pairs=(
  "saxpy|examples/saxpy.tsk|N=4194304"
  "softmax_safe|examples/softmax.tsk|M=1024,N=4096"
  "softmax_safe|tests/kernels/softmax_next_bf16.tsk|M=1024,N=4096|bf16"
  "layernorm_safe|examples/layernorm.tsk|M=1024,N=4096"
  "flash_attention|examples/flash_attention.tsk|B=1,H=4,S=1024,D=64|bf16|B=1,H=4,S=1024,D_h=64"
  "flash_attention_causal|examples/flash_attention.tsk#flash_attention+causal|B=1,H=4,S=1024,D=64|bf16|B=1,H=4,S=1024,D_h=64"
)
best() { python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["best"]["median_ns"], r["best"]["schedule"])'; }

echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores; tessera-tune $tt"
printf '%-15s %-22s %5s %12s %12s %7s  %s\n' op kernel round builtin_ms kernel_ms ratio "best points (builtin | kernel)"
for pair in "${pairs[@]}"; do
  IFS='|' read -r op file shape dtype kshape <<<"$pair"
  [[ $op =~ $only ]] || continue
  dt=(); [ -n "$dtype" ] && dt=(--dtype "$dtype")
  kernel=(--kernel "$here/${file%%#*}"); [[ $file == *#* ]] && kernel+=("${file#*#}")
  ratios=()
  for ((r = 1; r <= rounds; r++)); do
    read -r b bp < <("$tt" tune "$op" --shape "$shape" "${dt[@]}" --db "$work/b$r-$op.db" --json | best)
    read -r k kp < <("$tt" tune "${kernel[@]}" --shape "${kshape:-$shape}" --strategy exhaustive \
                       --budget 0 --budget-ms 600000 --db "$work/k$r-$op.db" --json | best)
    ratio=$(python3 -c "print('%.3f' % ($k / $b))")
    ratios+=("$ratio")
    printf '%-15s %-22s %5d %12.3f %12.3f %7s  %s | %s\n' "$op" "$(basename "${file%%#*}")" "$r" \
      "$(python3 -c "print($b / 1e6)")" "$(python3 -c "print($k / 1e6)")" "$ratio" "$bp" "$kp"
  done
  echo "$op: median ratio kernel/builtin $(printf '%s\n' "${ratios[@]}" | sort -n | \
    python3 -c 'import sys; v=[float(x) for x in sys.stdin]; print("%.3f" % v[len(v)//2])') over $rounds rounds"
done

gemms=(
  "gemm|examples/gemm.tsk|M=1024,N=1024,K=1024|bf16"
)
printf '\n%-6s %-10s %5s %12s %12s %7s %12s %7s  %s\n' op kernel round builtin_ms same_space ratio own_space ratio \
  "best points (builtin | kernel, builtin's space | kernel, own space)"
for g in "${gemms[@]}"; do
  IFS='|' read -r op file shape dtype <<<"$g"
  [[ $op =~ $only ]] || continue
  space=$("$tt" lower "$op" --shape "$shape" --dtype "$dtype" --stage schedule | sed -n 's/^space: //p')
  same=() own=()
  for ((r = 1; r <= rounds; r++)); do
    read -r b bp < <("$tt" tune "$op" --shape "$shape" --dtype "$dtype" --db "$work/gb$r.db" --json | best)
    read -r k kp < <("$tt" tune --kernel "$here/$file" --shape "$shape" --space "$space" \
                       --db "$work/gk$r.db" --json | best)
    read -r o op_ < <("$tt" tune --kernel "$here/$file" --shape "$shape" --db "$work/go$r.db" --json | best)
    rs=$(python3 -c "print('%.3f' % ($k / $b))") ro=$(python3 -c "print('%.3f' % ($o / $b))")
    same+=("$rs") own+=("$ro")
    printf '%-6s %-10s %5d %12.3f %12.3f %7s %12.3f %7s  %s | %s | %s\n' "$op" "$(basename "$file")" "$r" \
      "$(python3 -c "print($b / 1e6)")" "$(python3 -c "print($k / 1e6)")" "$rs" \
      "$(python3 -c "print($o / 1e6)")" "$ro" "$bp" "$kp" "$op_"
  done
  med() { printf '%s\n' "$@" | sort -n | python3 -c 'import sys; v=[float(x) for x in sys.stdin]; print("%.3f" % v[len(v)//2])'; }
  echo "$op $shape $dtype: median ratio kernel/builtin $(med "${same[@]}") in the built-in's space, $(med "${own[@]}") in the kernel's own, over $rounds rounds"
done
