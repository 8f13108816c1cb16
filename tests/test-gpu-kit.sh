#!/usr/bin/env bash
# test-gpu-kit.sh — the GPU kit rehearsed without a GPU, as it will be used on a lent machine
# (bench/gpu-bundle.sh, bench/gpu.sh, docs/gpu.md):
#   - the bundle, made from this build: no base system library in it, every binary and library
#     finds its libraries through its rpath ($ORIGIN) with no LD_LIBRARY_PATH, and what travels
#     fits the 32 MiB target (half the machine's 64 MiB limit: the tree grows with recorded results);
#   - each phase's plan: a timeout on every step, their sum within the phase's budget, and the
#     budget a minute under the 10-minute limit of one command;
#   - the step machinery (phase 0): pass, fail, a hang killed at its timeout, a skip, a step
#     clipped by the budget, the summary last, the exit status naming the failures;
#   - phases 1-3 in a fake GPU environment (an nvidia-smi that names an H100, no libcuda):
#     each stops within seconds, exit 3, saying "no CUDA device", and leaves only files the
#     machine can send back (at most 8, names of letters, digits, '.', '_', '-');
#   - the ratio table on recorded reference and result lines.
# TAP output. Usage: test-gpu-kit.sh SOURCE_ROOT BUILD_DIR
set -u
SRC=$1
BUILD=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; FAILED=1; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }
FAILED=0

for tool in patchelf readelf strip; do
  command -v $tool >/dev/null || { echo "1..0 # SKIP $tool is not installed (apt-get install patchelf binutils)"; exit 0; }
done
if [ ! -x "$BUILD/tests/test-cuda-ops" ] || [ ! -x "$BUILD/bench/cublas_gemm" ]; then
  echo "1..0 # SKIP this build has no CUDA target (no CUDA headers at configure time)"; exit 0
fi

# ---- the bundle ----
out=$("$SRC/bench/gpu-bundle.sh" --from "$BUILD" --dest "$TMP/.gpu" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
check "gpu-bundle.sh builds a bundle from the build" [ $rc -eq 0 ]
G=$TMP/.gpu
check "the bundle names its commit" test -s "$G/COMMIT"
want="tessera-tune test-cuda test-cuda-ops test-prof-metrics cublas_gemm cuda_copy profile_overhead"
missing=""
for b in $want; do [ -x "$G/bin/$b" ] || missing="$missing $b"; done
check "every binary the phases run is carried (missing:${missing:- none})" [ -z "$missing" ]

# Base libraries, by a list of this test's own: what every image has, tied to its loader.
base='^(ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libz|libexpat|libffi|libpcre2-[0-9]+|libmount|libblkid|libselinux|libuuid|liblzma|libbz2|libzstd)\.so'
carried_base=$(ls "$G/lib" | grep -E "$base" | tr '\n' ' ')
check "no base system library is carried (${carried_base:-none})" [ -z "$carried_base" ]
check "the libraries that a CUDA image lacks are carried (GLib, json-glib, SQLite)" \
  test -f "$G/lib/libglib-2.0.so.0" -a -f "$G/lib/libjson-glib-1.0.so.0" -a -f "$G/lib/libsqlite3.so.0"

bad_rpath=""
for f in "$G"/bin/*; do
  readelf -d "$f" | grep -q 'RPATH.*\[\$ORIGIN/\.\./lib\]' || bad_rpath="$bad_rpath $(basename "$f")"
done
for f in "$G"/lib/*; do
  readelf -d "$f" | grep -q 'RPATH.*\[\$ORIGIN\]' || bad_rpath="$bad_rpath $(basename "$f")"
done
check "every binary has DT_RPATH \$ORIGIN/../lib, every library \$ORIGIN (wrong:${bad_rpath:- none})" [ -z "$bad_rpath" ]

unresolved=""
for f in "$G"/bin/* "$G"/lib/*; do
  # With no LD_LIBRARY_PATH, every library that is not a base one must come from the bundle.
  while read -r name path; do
    [ -n "$name" ] || continue
    if [ "$path" = "not" ]; then unresolved="$unresolved $(basename "$f"):$name(not found)"; continue; fi
    [[ $name =~ $base ]] && continue
    case $path in "$G"/*|"$G"/bin/../lib/*) ;; *) unresolved="$unresolved $(basename "$f"):$name=$path" ;; esac
  done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>/dev/null | awk '/=>/{print $1, $3}')
done
check "every carried file resolves its libraries through its rpath (outside:${unresolved:- none})" [ -z "$unresolved" ]
check "the carried tessera-tune runs from the bundle" \
  bash -c 'env -u LD_LIBRARY_PATH "$1" ops >/dev/null' _ "$G/bin/tessera-tune"
mib=$(echo "$out" | sed -n 's/.*carried \([0-9.]*\) MiB.*/\1/p')
check "what travels fits the 32 MiB target (${mib:-?} MiB)" awk -v m="${mib:-999}" 'BEGIN {exit !(m <= 32)}'

# ---- the plans ----
for p in 1 2 3; do
  plan=$("$SRC/bench/gpu.sh" --phase $p --plan)
  budget=$(echo "$plan" | sed -n 's/^# phase [0-9]: budget \([0-9]*\) s$/\1/p')
  sum=$(echo "$plan" | awk '!/^#/ {s += $2} END {print s + 0}')
  zero=$(echo "$plan" | awk '!/^#/ && $2 <= 0' | wc -l)
  steps=$(echo "$plan" | grep -vc '^#')
  check "phase $p: $steps steps, each with a timeout, ${sum} s within its ${budget} s budget, a minute under the 600 s command limit" \
    [ -n "$budget" -a "$steps" -gt 0 -a "$zero" -eq 0 -a "$sum" -le "${budget:-0}" -a "${budget:-999}" -le 540 ]
done

# ---- the machinery ----
t0=$SECONDS
out=$("$SRC/bench/gpu.sh" --phase 0 --bin "$G/bin" --out "$TMP/p0" 2>&1)
rc=$?
el=$((SECONDS - t0))
echo "$out" | sed 's/^/# /'
check "phase 0 exits 1 when a step failed" [ $rc -eq 1 ]
check "phase 0 ends within its 40 s budget (${el} s)" [ $el -le 42 ]
check "a passing step and its note" grep -Eq '^   self-pass +PASS .*it passed' <<<"$out"
check "a failing step with its exit status and last line" grep -Eq '^   self-fail +FAIL .*exit 4: something went wrong' <<<"$out"
# (2 s, or 3 where the whole seconds of bash's SECONDS fall across the kill)
check "a hang is killed at its timeout" grep -Eq '^   self-hang +TIMEOUT +[23] s' <<<"$out"
check "exit 77 is a skip" grep -Eq '^   self-skip +SKIP' <<<"$out"
# Killed when it reaches the budget, or not started when too little is left (a slow machine).
check "a step is clipped to what is left of the budget" \
  grep -Eq '^   self-clipped +(TIMEOUT|SKIP .*no time left)' <<<"$out"
for s in smoke default tune table profile; do
  check "the $s step works end to end (on the CPU)" grep -Eq "^   self-$s +PASS" <<<"$out"
done
check "the table of the rehearsed tune is written" grep -q '^gemm 64\^3 ' "$TMP/p0/table.txt"
check "the profile's Chrome trace is written under a plain name" \
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["traceEvents"]' "$TMP/p0/trace-gemm-64.json"
check "the cache is copied out" test -s "$TMP/p0/gpu-cache.db"
# (self-clipped is among them when it was killed at the budget, not when a loaded machine left
# it no time to start: then it is a skip, as checked above.)
check "the summary is printed last and names the failures" \
  bash -c 'tail -2 <<<"$1" | head -1 | grep -Eq "FAILED: self-fail self-hang( self-clipped)? \("' _ "$out"
check "the summary is in OUT/summary.txt" grep -q 'FAILED: self-fail' "$TMP/p0/summary.txt"

# ---- a short lease: --skip and --budget ----
t0=$SECONDS
out=$("$SRC/bench/gpu.sh" --phase 0 --bin "$G/bin" --out "$TMP/p0s" --budget 20 \
  --skip self-hang,self-smoke,self-default,self-tune,self-profile 2>&1)
el=$((SECONDS - t0))
check "--skip records the steps it names as skipped" \
  grep -Eq '^   self-hang +SKIP .*skipped by --skip' <<<"$out"
check "--skip leaves the other steps alone" grep -Eq '^   self-pass +PASS' <<<"$out"
check "--budget shortens the phase (${el} s of 20)" [ $el -le 22 ]
# (a kill at 10 s may read 11: the table's times are differences of bash's whole SECONDS)
check "--budget clips the last step to what is left" \
  grep -Eq '^   self-clipped +(TIMEOUT +([0-9]|1[01]) s|SKIP .*no time left in the phase.s 20 s)' <<<"$out"
check "--budget above the phase's own is refused" \
  bash -c '! "$1" --phase 1 --budget 900 --plan 2>/dev/null' _ "$SRC/bench/gpu.sh"

# ---- phases 1-3 on a machine with an NVIDIA tool and no driver ----
if ldconfig -p 2>/dev/null | grep -q ' libcuda\.so\.1 '; then
  echo "# a real CUDA driver is installed here: run the phases for real (docs/gpu.md)"
else
  mkdir -p "$TMP/fakebin"
  printf '#!/bin/sh\necho "NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, 1980 MHz, 2619 MHz, 700.00 W"\n' \
    >"$TMP/fakebin/nvidia-smi"
  chmod +x "$TMP/fakebin/nvidia-smi"
  for p in 1 2 3; do
    t0=$SECONDS
    out=$(PATH="$TMP/fakebin:$PATH" timeout 120 "$SRC/bench/gpu.sh" --phase $p --bin "$G/bin" --out "$TMP/out$p" 2>&1)
    rc=$?
    el=$((SECONDS - t0))
    echo "$out" | tail -4 | sed 's/^/# /'
    check "phase $p stops at once without a driver: exit 3 in ${el} s" [ $rc -eq 3 -a $el -le 30 ]
    check "phase $p says there is no CUDA device" grep -q 'STOPPED: CUDA is not usable here (no CUDA device' <<<"$out"
    files=$(cd "$TMP/out$p" && find . -mindepth 1 | sed 's|^\./||')
    odd=$(echo "$files" | awk -F/ 'NF > 3 {print; next} {for (i = 1; i <= NF; i++) if ($i !~ /^[A-Za-z0-9._-]+$/) {print; next}}')
    count=$(cd "$TMP/out$p" && find . -type f | wc -l)
    check "phase $p leaves $count files, all with names the machine sends back (odd: ${odd:-none})" \
      [ -z "$odd" -a "$count" -le 8 -a -f "$TMP/out$p/summary.txt" ]
  done
fi

# ---- the table ----
cat >"$TMP/refs.jsonl" <<'JSON'
{"kind": "gemm", "ref": "cublasLt (C)", "M": 4096, "N": 4096, "K": 4096, "tflops": 700.0}
{"kind": "gemm", "ref": "cublasLt (C)", "M": 8192, "N": 8192, "K": 8192, "tflops": 700.0}
{"kind": "gemm", "ref": "torch.matmul (cuBLAS)", "M": 8192, "N": 8192, "K": 8192, "tflops": 900.0}
cublas_gemm: a line that is not JSON is passed over
{"kind": "copy", "ref": "cuMemcpyDtoD (C)", "bytes": 268435456, "ms": 0.18, "gbps": 3000.0}
{"kind": "attention", "ref": "torch sdpa (default)", "causal": 1, "tflops": 400.0}
{"kind": "error", "what": "torch sdpa (cudnn) causal=1", "message": "RuntimeError: no cuDNN"}
JSON
cat >"$TMP/ours.jsonl" <<'JSON'
{"kind": "gemm", "label": "gemm 4096^3", "run": {"workload": "gemm M=4096,N=4096,K=4096 bf16", "schedule": "block(m=128)", "status": "ok", "gflops": 630000.0, "gbps": 1.0}}
{"kind": "gemm", "label": "gemm 8192^3", "run": {"workload": "gemm M=8192,N=8192,K=8192 bf16", "schedule": "block(m=128)", "status": "ok", "gflops": 630000.0, "gbps": 1.0}}
{"kind": "attention", "label": "attention causal=1", "run": {"workload": "flash_attention_causal B=4,H=16,S=4096,D=128 bf16", "schedule": "x", "status": "ok", "gflops": 240000.0, "gbps": 1.0}}
{"kind": "layernorm", "label": "layernorm 16384x8192", "run": {"workload": "layernorm_safe M=16384,N=8192 bf16", "schedule": "y", "status": "wrong_result", "gflops": 0, "gbps": 0}}
JSON
table=$(python3 "$SRC/bench/gpu_table.py" "$TMP/refs.jsonl" "$TMP/ours.jsonl")
rc=$?
echo "$table" | sed 's/^/# /'
check "the table is made" [ $rc -eq 0 ]
check "gemm: ours / cuBLAS 0.90x, target met" grep -Eq '^gemm 4096\^3 +630.0 TFLOP/s +cublasLt \(C\) +700.0 TFLOP/s +0.90x +>= 0.80 met' <<<"$table"
check "attention: ours / SDPA 0.60x, target missed" grep -Eq 'torch sdpa \(default\) +400.0 TFLOP/s +0.60x +>= 0.70 MISSED' <<<"$table"
check "a failed kernel is shown as such, its target not measured" grep -Eq '^layernorm 16384x8192 +wrong_result +cuMemcpyDtoD \(C\) +3000.0 GB/s +- +>= 0.80: not measured' <<<"$table"
check "a reference that could not run is listed" grep -q 'reference not measured: torch sdpa (cudnn) causal=1: RuntimeError: no cuDNN' <<<"$table"
check "a target is judged against the faster measurement of its library (0.70x of torch.matmul's cuBLAS, not 0.90x of the C one)" \
  grep -Eq '^gemm 8192\^3 +630.0 TFLOP/s +cublasLt \(C\) +700.0 TFLOP/s +0.90x +>= 0.80 MISSED at 0.70x \(cuBLAS at its faster: torch.matmul \(cuBLAS\)\)' <<<"$table"
check "the count of missed targets" grep -q 'targets missed or not measured: 3' <<<"$table"

# ---- what each gemm and attention design was worth (bench/gpu_variants.py on the cache) ----
# A real schedule cache (its schema from a CPU tune), with wgmma gemm trials as a GPU tune would
# store them: per design the fastest verified trial, against plain one-CTA-a-tile direct stores;
# and causal attention trials, against FlashAttention-2 on mma.sync.
"$BUILD/tools/tessera-tune" tune saxpy --shape N=4096 --backend cpu --db "$TMP/designs.db" \
  --budget 2 >/dev/null 2>&1
python3 - "$TMP/designs.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
dev, tc = db.execute("SELECT device_id, toolchain_id FROM trial LIMIT 1").fetchone()


def workload(op, shape, trials, tag):
    """A workload of op at shape (bf16) and its trials: (schedule, status, median ns)."""
    w = db.execute("INSERT INTO workload (op, shape, dtype) VALUES (?, ?, 'bf16')",
                   (op, shape)).lastrowid
    for i, (point, status, ns) in enumerate(trials):
        db.execute("INSERT INTO trial (workload_id, device_id, toolchain_id, schedule, "
                   "schedule_hash, status, median_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (w, dev, tc, point, "%s%015x" % (tag, i), status, ns))


base = 'block(m=128, n=256, k=64).warps(8).stages(3).mma("wgmma").load("tma")'
workload("gemm", "M=4096,N=4096,K=4096", [
    (base + '.schedule("plain").persistent(0).epilogue("direct").cluster(m=1, n=1)', "ok", 200000.0),
    (base + '.schedule("plain").persistent(0).epilogue("direct").cluster(m=1, n=1).stages(4)', "ok", 220000.0),
    (base + '.schedule("coop").persistent(132).epilogue("tma").cluster(m=2, n=1)', "ok", 160000.0),
    (base + '.schedule("pingpong").persistent(132).epilogue("direct").cluster(m=1, n=1)', "timeout", None)], "0")
workload("flash_attention_causal", "B=4,H=16,S=4096,D=128", [
    ('block(m=128, n=64).warps(8).stages(2).mma("sync").schedule("coop").persistent(0).epilogue("direct")', "ok", 400000.0),
    ('block(m=64, n=64).warps(4).stages(2).mma("sync").schedule("coop").persistent(0).epilogue("direct")', "ok", 440000.0),
    ('block(m=128, n=128).warps(8).stages(2).mma("wgmma").schedule("pingpong").persistent(132).epilogue("tma")', "ok", 250000.0),
    ('block(m=128, n=128).warps(8).stages(2).mma("wgmma").schedule("coop").persistent(0).epilogue("direct")', "ok", 300000.0),
    ('block(m=128, n=64).warps(8).stages(3).mma("wgmma").schedule("overlap").persistent(132).epilogue("direct")', "wrong_result", None)], "a")
db.commit()
PY
designs=$(python3 "$SRC/bench/gpu_variants.py" "$TMP/designs.db")
rc=$?
echo "$designs" | sed 's/^/# /'
check "the gemm designs are listed" [ $rc -eq 0 ]
check "plain, one CTA a tile: its fastest trial (687.2 TFLOP/s), 1.00x" \
  grep -Eq '^  plain +tile-per-cta +direct +cluster 1x1 +687.2 +1.00x' <<<"$designs"
check "coop, persistent, TMA stores, a cluster pair: 1.25x plain" \
  grep -Eq '^  coop +persistent +tma +cluster 2x1 +859.0 +1.25x' <<<"$designs"
check "a design none of whose trials verified says how they ended" \
  grep -Eq '^  pingpong +persistent +direct +cluster 1x1 .*no trial verified: timeout' <<<"$designs"
check "attention: FlashAttention-2 on mma.sync at its fastest (687.2 TFLOP/s, causal: half the FLOPs), 1.00x" \
  grep -Eq '^  sync +coop +tile-per-cta +direct +687.2 +1.00x' <<<"$designs"
check "attention: wgmma ping-pong, persistent, TMA stores, 1.60x FlashAttention-2" \
  grep -Eq '^  wgmma +pingpong +persistent +tma +1099.5 +1.60x' <<<"$designs"
check "attention: a design that never verified says so" \
  grep -Eq '^  wgmma +overlap +persistent +direct .*no trial verified: wrong_result' <<<"$designs"

echo "1..$n"
exit $FAILED
