#!/usr/bin/env bash
# test-cli.sh — end-to-end checks of the tessera-tune binary: the lowering inspector's stages,
# one verified run, and the exit codes and messages of bad input. Prints TAP-style lines and
# fails on the first broken expectation.
set -u
TT=$1
# A cache of its own unless the caller gave one, removed however the test ends.
if [ -z "${XDG_CACHE_HOME:-}" ]; then
  XDG_CACHE_HOME=$(mktemp -d)
  trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
fi
export XDG_CACHE_HOME
n=0
fail() { echo "not ok $n - $*"; exit 1; }
ok() { n=$((n+1)); echo "ok $n - $*"; }

# expect CODE PATTERN -- ARGS...: exit code and a regex on stdout+stderr.
expect() {
  local code=$1 pat=$2; shift 3
  local out rc
  out=$("$TT" "$@" 2>&1); rc=$?
  n=$((n+1))
  [ "$rc" -eq "$code" ] || { echo "$out" | head -20; echo "not ok $n - exit $rc, wanted $code: $*"; exit 1; }
  echo "$out" | grep -Eq -- "$pat" || { echo "$out" | head -20; echo "not ok $n - no /$pat/ in output of: $*"; exit 1; }
  echo "ok $n - $*"
}

expect 0 '^== graph ==' -- lower gemm --shape M=64,N=64,K=64 --dtype 'bf16 @accum(f32)' --stage graph
expect 0 'Tensor\["M","K", bf16 @accum\(f32\)\]' -- lower gemm --shape M=64,N=64,K=64 --dtype 'bf16 @accum(f32)' --stage graph
expect 0 '%C = gemm\(%A, %B\) \{scale_a=0.00223214, scale_b=0.00223214\} : Tensor\["M","N", bf16' -- lower gemm --shape M=64,N=64,K=64 --dtype 'fp8_e4m3 @accum(f32)' --stage graph
expect 0 'tile.convert\(Cw \+ i \* N -> C \+ i \* N, n=.*, scale=scale_a \* scale_b\)' -- lower gemm --shape M=64,N=64,K=64 --dtype fp8_e5m2 --stage tile
expect 0 'verified  full f64 reference' -- run gemm --shape M=33,N=40,K=50 --dtype fp8_e5m2
expect 2 'fp8 inputs are taken by gemm' -- run softmax_safe --shape M=8,N=64 --dtype fp8_e4m3
expect 0 'point: block\(m=72, n=2016, k=128\)' -- lower gemm --shape M=64,N=64,K=64 --schedule 'block(m=72,n=2016,k=128)' --stage schedule
expect 0 'valid at M=64' -- lower gemm --shape M=64,N=64,K=64 --stage schedule
expect 0 'tile.mma' -- lower gemm --shape M=64,N=64,K=64 --stage tile
expect 0 'w = tile.map\(exp\(x - m\), j < N\) sum->l' -- lower softmax_safe --shape M=8,N=64 --stage tile
expect 0 'l = tile.reduce_sum\(exp\(x - m\)' -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("max_first")' --stage tile
expect 0 'tile.softmax_online' -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("online")' --stage tile
expect 0 'y = tile.map\(w \* r' -- lower softmax_safe --shape M=8,N=64 --dtype bf16 --schedule 'softmax("stored")' --stage tile
expect 2 'softmax\("fast"\) is not one of' -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("fast")' --stage tile
expect 0 'TS_DEFINE_UKR_F32' -- lower gemm --shape M=64,N=64,K=64 --stage target
expect 0 'TS_DEFINE_UKR_BF16DOT\(ts_ukr_bf16dot_14x32_u4' -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=168,n=2016,k=256).micro(m=14,n=32).vector(16).unroll(4).dot("bf16")' --stage target
expect 2 "violates the constraint 'dot != \"bf16\" \|\| bf16_dot == 1" -- lower gemm --shape M=64,N=64,K=64 --dtype f32 --schedule 'dot("bf16")' --stage target
expect 0 'TS_DEFINE_UKR_AMX\(ts_ukr_amx_32x32_u4' -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=96,n=2016,k=256).micro(m=32,n=32).vector(16).unroll(4).dot("amx")' --stage target
expect 0 'ts_pack_b_block_amx\(' -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=96,n=2016,k=256).micro(m=32,n=32).vector(16).unroll(4).dot("amx")' --stage target
expect 0 'ts_amx_end\(\);' -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=96,n=2016,k=256).micro(m=32,n=32).vector(16).unroll(4).dot("amx")' --stage target
expect 0 'tile.mma.*micro=32x32.*dot=amx' -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=96,n=2016,k=256).micro(m=32,n=32).vector(16).unroll(4).dot("amx")' --stage tile
expect 2 "violates the constraint 'dot != \"amx\" \|\| amx_bf16 == 1" -- lower gemm --shape M=64,N=64,K=64 --dtype f32 --schedule 'block(m=96,n=2016,k=256).micro(m=32,n=32).vector(16).dot("amx")' --stage target
expect 2 "violates the constraint 'dot != \"amx\" \|\| amx_bf16 == 1" -- lower gemm --shape M=64,N=64,K=64 --dtype bf16 --schedule 'block(m=96,n=2016,k=256).micro(m=48,n=48).vector(16).dot("amx")' --stage target
expect 0 '== target \(C\) ==' -- lower layernorm_safe --shape M=8,N=64 --dtype f16
expect 0 'y = tile.map\(w \* r, j < N\)  with w = W\[0:\], y = Y\[i \* N:\] stream' -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("stored").store("stream").pipeline("none")' --stage tile
# pipeline("skew"): row i's exps, row i + 1's max and row i - 1's output in one loop
expect 0 'carry m = reduce_max\(xn\) and y = wp \* rp \(stream\)  with x = X\[i \* N:\], w = W\[\(i - i0\) % 2 \* N:\]' -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("stored").store("stream").pipeline("skew")' --stage tile
expect 0 'ts_vf_stream2_bf16\(Y \+ \(\(i - 1\) \* N\) \+ j, ts_de_, ts_do_\);' -- lower softmax_safe --shape M=8,N=64 --dtype bf16 --schedule 'softmax("stored").store("stream").pipeline("skew")' --stage target
expect 2 "violates the constraint 'pipeline != \"skew\" \|\| softmax == \"stored\"'" -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("max_first").pipeline("skew")' --stage tile
expect 2 'pipeline\("skew"\) is not one of "none", "next"' -- lower layernorm_safe --shape M=8,N=64 --schedule 'pipeline("skew")' --stage tile
# (an f16 map steps by vector pairs, both stored at once: ts_vf_stream2_f16)
expect 0 'ts_vf_stream2_f16\(Y \+ \(i \* N\) \+ j, ts_ve_, ts_vo_\);' -- lower rmsnorm_safe --shape M=8,N=64 --dtype f16 --schedule 'store("stream")' --stage target
expect 0 '^    ts_stream_fence\(\);' -- lower rmsnorm_safe --shape M=8,N=64 --dtype f16 --schedule 'store("stream")' --stage target
expect 2 'store\("nt"\) is not one of "cached", "stream"' -- lower layernorm_safe --shape M=8,N=64 --schedule 'store("nt")' --stage tile
expect 0 'prefetch=\(X \+ min\(i \+ 1, M - 1\) \* N\)' -- lower layernorm_safe --shape M=8,N=64 --schedule 'pipeline("none")' --stage tile
# pipeline("next") (layernorm's default): the next row's sum carried in the last map, rows
# three ahead prefetched into L2; in bf16 every loop runs on lane pairs
expect 0 'carry s = reduce_sum\(xn\)  with .*xn = X\[min\(i \+ 1, iend - 1\) \* N:\].* prefetch_l2=\(X \+ min\(i \+ 3, M - 1\) \* N\)' -- lower layernorm_safe --shape M=8,N=64 --stage tile
expect 0 'ts_vf_stream2_bf16\(Y \+ \(i \* N\) \+ j, ts_ve_, ts_vo_\);' -- lower rmsnorm_safe --shape M=8,N=64 --dtype bf16 --schedule 'store("stream").pipeline("next")' --stage target
# apply("tile"): a work item's row statistics kept per row, then tiles of its rows with G and
# Bt widened once a tile; with the default pipeline("next") the space refuses it
expect 0 'ST\[2 \* \(i - i0\) \+ 1\] = 1.0f / sqrt\(q / \(float\)N \+ eps\)' -- lower layernorm_safe --shape M=8,N=64 --dtype f16 --schedule 'pipeline("none").apply("tile")' --stage tile
expect 0 'bw = tile.map\(b, j < nc\)  with b = Bt\[jc:\], bw = Btw\[0:\]' -- lower layernorm_safe --shape M=8,N=64 --dtype f16 --schedule 'pipeline("none").apply("tile")' --stage tile
expect 0 'const float rstd = ST\[2 \* \(i - i0\) \+ 1\];' -- lower layernorm_safe --shape M=8,N=64 --dtype bf16 --schedule 'pipeline("none").apply("tile")' --stage target
expect 2 "violates the constraint 'apply == \"row\" \|\| pipeline == \"none\"'" -- lower layernorm_safe --shape M=8,N=64 --schedule 'apply("tile")' --stage tile
expect 2 "violates the constraint 'apply == \"row\" \|\| BM > 1'" -- lower layernorm_safe --shape M=8,N=64 --schedule 'block(m=1).pipeline("none").apply("tile")' --stage tile
expect 2 "schedule knob 'apply' is not used by cpu kernels" -- lower rmsnorm_safe --shape M=8,N=64 --schedule 'apply("row")' --stage tile
# layernorm's jam(2): two rows' last passes in one loop, the next pair's sums carried
expect 0 'carry s = reduce_sum\(xn\) carry s2 = reduce_sum\(xn2\) and y2 = \(x2 - mean2\) \* rstd2 \* g \+ b' -- lower layernorm_safe --shape M=8,N=64 --schedule 'block(m=4).pipeline("next").jam(2)' --stage tile
expect 0 'prefetch_l2=\(X \+ min\(i \+ 4, M - 1\) \* N\) prefetch_l2=\(X \+ min\(i \+ 5, M - 1\) \* N\)' -- lower layernorm_safe --shape M=8,N=64 --schedule 'block(m=4).pipeline("next").jam(2)' --stage tile
expect 0 'ts_car1_s \+= xn2;' -- lower layernorm_safe --shape M=8,N=45 --dtype f16 --schedule 'block(m=4).pipeline("next").jam(2)' --stage target
expect 2 "violates the constraint 'jam == 1 \|\| pipeline == \"next\"'" -- lower layernorm_safe --shape M=8,N=64 --schedule 'block(m=4).pipeline("none").jam(2)' --stage tile
expect 2 "schedule knob 'jam' is not used by cpu kernels" -- lower rmsnorm_safe --shape M=8,N=64 --schedule 'jam(2)' --stage tile
# softmax's fast exp takes the row's max inside (x - m folded into its first multiply-add)
expect 0 'tile.map\(exp_fast_sub\(x, m\), j < N\) sum->l' -- lower softmax_safe --backend cpu --shape M=8,N=64 --dtype bf16 --schedule 'softmax("stored").math("fast")' --stage tile
expect 0 'ts_vf_exp_fast_sub_row\(x, ts_es1_\) \* r' -- lower softmax_safe --backend cpu --shape M=8,N=64 --dtype bf16 --schedule 'softmax("max_first").math("fast")' --stage target
# into f16 it skips its range check, results below 2^-100 read as 2^-100 (f16 rounds them to 0)
expect 0 'ts_vf_exp_fast_sub_row_h\(x, ts_es1_\) \* r' -- lower softmax_safe --backend cpu --shape M=8,N=64 --dtype f16 --schedule 'softmax("max_first").math("fast")' --stage target
expect 2 'pipeline\("later"\) is not one of "none", "next"' -- lower rmsnorm_safe --shape M=8,N=64 --schedule 'pipeline("later")' --stage tile
expect 2 "violates the constraint 'pipeline == \"none\" \|\| softmax != \"online\"'" -- lower softmax_safe --shape M=8,N=64 --schedule 'softmax("online").pipeline("next")' --stage tile
expect 0 '__builtin_prefetch\(\(X \+ min\(i \+ 1, M - 1\) \* N\) \+ j, 0, 3\);' -- lower softmax_safe --shape M=8,N=64 --dtype bf16 --stage target
expect 0 '__builtin_prefetch\(\(X \+ min\(i \+ 2, M - 1\) \* N\) \+ j, 0, 1\);' -- lower softmax_safe --shape M=8,N=64 --dtype bf16 --schedule 'pipeline("skew")' --stage target
expect 0 'status +ok' -- run saxpy --shape N=10000 --backend cpu
expect 0 '"status": "ok"' -- run rmsnorm_safe --shape M=16,N=100 --dtype bf16 --json
expect 0 '"samples": 1,.*"verification": "full f64|"verification": "full f64.*"samples": 1,' -- run saxpy --shape N=1000 --backend cpu --samples 1 --json
expect 0 'verified  full f64 reference \(1000 elements\)' -- run saxpy --shape N=1000 --backend cpu
expect 2 'positive count' -- run saxpy --shape N=1000 --samples -3
expect 0 'gemm' -- ops
expect 0 '^cpu ' -- devices
expect 0 'f32 +[0-9.]+ GFLOP/s on [0-9]+ cores, [0-9.]+ GFLOP/s on one core' -- devices --measure
expect 0 'dram +[0-9.]+ GB/s' -- devices --measure
expect 0 'lower OP' -- --help
expect 0 'Exit status' -- lower --help

expect 3 "cannot write to '/dev/full': No space left on device" -- export --output /dev/full
n=$((n+1)); [ -c /dev/full ] || { echo "not ok $n - /dev/full is no longer a device"; exit 1; }
echo "ok $n - /dev/full is still a character device"
# A cache another user owns, in a directory this user cannot write: lookup, show and export
# read it (as root, the test becomes "nobody" for these three).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
   setpriv --reuid=65534 --regid=65534 --clear-groups "$TT" ops >/dev/null 2>&1; then
  ro=$(mktemp -d)
  "$TT" tune saxpy --shape N=4096 --backend cpu --budget 2 --db "$ro/c.db" >/dev/null
  chmod 755 "$ro"; chmod 644 "$ro/c.db"
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_CACHE_HOME="$ro/x" "$TT" "$@"; }
  for c in "lookup saxpy --shape N=4096 --backend cpu" "show saxpy --shape N=4096 --backend cpu" "export"; do
    n=$((n+1))
    out=$(as_nobody $c --db "$ro/c.db" 2>&1) || { echo "$out" | head -5; echo "not ok $n - $c of a read-only cache"; exit 1; }
    echo "ok $n - $c reads a cache in a directory it cannot write"
  done
  n=$((n+1))
  [ "$(ls "$ro")" = "c.db" ] || { ls "$ro"; echo "not ok $n - files appeared beside the read-only cache"; exit 1; }
  echo "ok $n - nothing was written beside it"
  rm -rf "$ro"
fi
# Build directories left by a killed process are removed by the next one; a live process's stay.
tmp=$(mktemp -d)
sleep 0 & dead=$!; wait $dead
mkdir "$tmp/tessera-build-$dead-orphan" "$tmp/tessera-build-$$-alive"
touch "$tmp/tessera-build-$dead-orphan/src.c" "$tmp/tessera-build-$$-alive/src.c"
TMPDIR=$tmp "$TT" devices >/dev/null
n=$((n+1))
[ ! -e "$tmp/tessera-build-$dead-orphan" ] && [ -e "$tmp/tessera-build-$$-alive/src.c" ] ||
  { ls -R "$tmp"; echo "not ok $n - orphaned build directories"; exit 1; }
echo "ok $n - a killed process's build directory is removed, a live one's kept"
rm -rf "$tmp"
# run isolates the kernel as tune does: a crash and a hang become statuses (exit 1), a point the
# device cannot run is refused before it starts (threads(100000) overflowed libgomp's stack).
export TESSERA_TEST_OPS=1
expect 1 'status +runtime_error' -- run test_fault --shape N=1000 --schedule 'dict(mode="segv")'
expect 1 'no result within 2.0 s' -- run test_fault --shape N=1000 --schedule 'dict(mode="hang")' --timeout 2
# profile too: the crash and the hang are stored as the profile's trial, the tool lives on.
expect 1 'status +runtime_error' -- profile test_fault --shape N=1000 --schedule 'dict(mode="segv")'
expect 1 'no result within 2.0 s' -- profile test_fault --shape N=1000 --schedule 'dict(mode="hang")' --timeout 2
unset TESSERA_TEST_OPS
expect 2 'cannot run on this device: threads\(100000\)' -- run gemm --shape M=64,N=64,K=64 --schedule 'threads(100000)'
expect 2 'cannot run on this device: threads\(100000\)' -- profile gemm --shape M=64,N=64,K=64 --schedule 'threads(100000)'
expect 2 'must be a positive number' -- profile gemm --shape M=64,N=64,K=64 --timeout -1
# A recording of 3 configurations of a 10^9-point space: every strategy ends (exhaustive walked
# all 10^9 unrecorded points).
sparse=$(mktemp)
python3 - "$sparse" <<'PY'
import json, sys
keys = [chr(ord("a") + i) for i in range(9)]
cache = {}
for n, vals in enumerate(([9] * 9, [1] * 9, [2, 3, 4, 5, 6, 7, 8, 9, 0])):
    e = dict(zip(keys, vals), time=1.0 + n, times=[1.0 + n], compile_time=10.0,
             verification_time=0, benchmark_time=1.0, strategy_time=0, framework_time=0)
    cache[",".join(map(str, vals))] = e
json.dump({"device_name": "Synthetic GPU", "kernel_name": "sparse", "problem_size": [1],
           "tune_params_keys": keys, "tune_params": {k: list(range(10)) for k in keys},
           "objective": "time", "cache": cache}, open(sys.argv[1], "w"))
PY
n=$((n+1))
out=$(timeout 300 "$TT" strategies compare --replay "$sparse" --budget 3 --repeats 1 2>&1) ||
  { echo "$out" | tail -5; echo "not ok $n - compare on a sparse recording did not end"; exit 1; }
echo "$out" | grep -q '3 recorded of 1000000000 configurations' ||
  { echo "$out" | tail -5; echo "not ok $n - compare on a sparse recording"; exit 1; }
echo "ok $n - every strategy ends on a recording of 3 of 10^9 configurations"
rm -f "$sparse"
expect 2 'needs --budget-ms' -- tune saxpy --shape N=1000 --budget 0
expect 2 'positive numbers' -- tune saxpy --shape N=1000 --timeout nan
expect 2 'positive numbers' -- tune saxpy --shape N=1000 --timeout inf
expect 2 'positive numbers' -- tune saxpy --shape N=1000 --budget-ms nan
expect 2 "size of 'M' '0x40' at column 3 must be a decimal integer" -- run saxpy --shape M=0x40
expect 2 "unknown op 'gem'" -- lower gem --shape M=1
expect 2 "lacks dim 'K'" -- lower gemm --shape M=64,N=64
expect 2 'bf17' -- run gemm --shape M=64,N=64,K=64 --dtype bf17
expect 2 'schedule:1:' -- lower gemm --shape M=64,N=64,K=64 --schedule 'block(m=64,n=64'
expect 2 "'wraps'" -- lower gemm --shape M=64,N=64,K=64 --schedule 'block(m=48).wraps(4)'
expect 2 'violates the constraint' -- run gemm --shape M=64,N=64,K=64 --schedule 'micro(m=6,n=12)'
expect 2 "unknown --stage" -- lower gemm --shape M=64,N=64,K=64 --stage tiles
expect 2 'unknown command' -- frobnicate
expect 2 'names one point already' -- check saxpy --shape N=4096 --schedule '' --where 'BN == 4096'
# check --where: a constraint added to the space (with NVRTC; cuda-compile-all selects with it).
if "$TT" check saxpy --shape N=4096 --dtype bf16 --schedule '' --arch sm_90a >/dev/null 2>&1; then
  expect 2 '--where: schedule:1:6: expected' -- check saxpy --shape N=4096 --where 'BN =='
  expect 2 "unknown name 'BNN'" -- check saxpy --shape N=4096 --where 'BNN == 2'
  all=$("$TT" check saxpy --shape N=4096 --dtype bf16 --arch sm_90a --json | wc -l)
  some=$("$TT" check saxpy --shape N=4096 --dtype bf16 --arch sm_90a --json --where 'BN == 4096')
  n=$((n+1))
  if [ "$(wc -l <<<"$some")" -ge 1 ] && [ "$(wc -l <<<"$some")" -lt "$all" ] &&
     ! grep -v '"schedule": "block(n=4096)' <<<"$some" | grep -q .; then
    echo "ok $n - check --where compiles the points of the space that satisfy it, and no other"
  else
    echo "$some" | head -5; echo "not ok $n - check --where (of $all)"; exit 1
  fi
fi
expect 3 'auto, cpu|known' -- run saxpy --shape N=64 --backend tpu

# Strategy comparison on a recorded (replayed) space: exhaustive with a budget covering every
# configuration reaches the optimum; the table is deterministic for a seed.
R=${G_TEST_SRCDIR:-$(dirname "$0")}/data/replay-small.json
expect 0 'exhaustive +1\.000 +1\.000' -- strategies compare --replay "$R" --budget 24 --repeats 3
a=$("$TT" strategies compare --replay "$R" --budget 5 --repeats 4 --seed 9)
b=$("$TT" strategies compare --replay "$R" --budget 5 --repeats 4 --seed 9)
n=$((n+1)); [ "$a" = "$b" ] || fail "strategies compare is not deterministic for a seed"; echo "ok $n - deterministic comparison"
expect 0 'exhaustive' -- strategies compare --replay "$R" --budget-ms 1 --repeats 2
# --json: each repeat's evaluations to 95%, and the capped mean they make (a miss = the budget).
n=$((n+1))
"$TT" strategies compare --replay "$R" --budget 5 --repeats 4 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["budget"] == 5 and d["repeats"] == 4 and d["optimum_ms"] > 0, d
for s in d["strategies"]:
    e = s["evals_to_95"]
    assert len(e) == 4 and s["n_reached"] == sum(x is not None for x in e), s
    want = sum(x if x is not None else 5 for x in e) / 4
    assert abs(s["capped_evals_to_95"] - want) < 1e-9, s
' || fail "strategies compare --json"
echo "ok $n - strategies compare --json: per-repeat evaluations and the capped mean"
expect 2 'needs --replay' -- strategies compare
expect 2 'nope.json' -- strategies compare --replay /nonexistent/nope.json
expect 0 '^annealing$' -- strategies

echo "1..$n"
