#!/usr/bin/env bash
# run-emu.sh TESSERA_TUNE SOURCE_ROOT — the CUDA kernels without a GPU: lowers ops at their
# default CUDA point and a few others with the real tessera-tune, compiles the unmodified
# generated source and op-family headers with g++ against a host emulator (emu_core.h; only the
# inline-PTX functions are substituted, see prep.py and emu_subst.cuh), runs every CTA and checks
# every output element against an f64 reference (emu_driver.cpp, compiled once per element type and
# linked with each kernel). Fourteen planted bugs must be caught.
# TAP output; exit 77 when g++ (C++17 with _Float16) or python3 is missing.
set -u
TUNE=$1
ROOT=$2
HERE="$ROOT/tests/cuda-emu"
CXX=${CXX_EMU:-g++}
command -v "$CXX" >/dev/null || { echo "1..0 # SKIP no $CXX (needs g++ >= 12)"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ts-cuda-emu.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo 'int main() { _Float16 h = (_Float16)1.5f; return (float)h == 1.5f ? 0 : 1; }' >"$W/probe.cpp"
if ! "$CXX" -std=c++17 "$W/probe.cpp" -o "$W/probe" 2>/dev/null || ! "$W/probe"; then
  echo "1..0 # SKIP $CXX cannot compile C++17 with _Float16 (needs g++ >= 12)"
  exit 77
fi
mkdir -p "$W/inc"
python3 "$HERE/prep.py" "$ROOT/runtime/cuda" "$HERE/emu_subst.cuh" "$W/inc" >&2 || {
  echo "1..1"; echo "not ok 1 - prep.py: the CUDA headers changed; update tests/cuda-emu/emu_subst.cuh"; exit 1; }
# The TMA plan is plain C shared with the CUDA backend: the emulator plans the same maps.
cp "$ROOT/runtime/cuda/ts-cuda-tma.h" "$W/inc/"
# emu_core.h precompiled (g++ takes $W/pch/emu_core.h.gch for -include $W/pch/emu_core.h, or
# reads the header beside it where the PCH does not fit): its standard headers were half of a
# kernel's compile (1.38 -> 0.74 s, the same object code).
CXXFLAGS_EMU=(-std=c++17 -O1 -w)
mkdir -p "$W/pch"
cp "$HERE/emu_core.h" "$W/pch/"
"$CXX" "${CXXFLAGS_EMU[@]}" -x c++-header "$W/pch/emu_core.h" -o "$W/pch/emu_core.h.gch" 2>/dev/null ||
  rm -f "$W/pch/emu_core.h.gch"

# name | op | --shape | driver dims | dtype | schedule point ('' = the op's default) | env | expect
G1='block(m=64,n=64,k=32).warps(4).stages(2)'
G2='block(m=128,n=64,k=64).warps(8).stages(3)'
G3='block(m=64,n=128,k=64).warps(4).stages(2)'
A1='block(m=64,n=32).warps(4).stages(2)'
A2='block(m=128,n=128).warps(8).stages(3)'
A3='block(m=64,n=64).warps(4).stages(3)'
# wgmma (sm_90a): 1 and 2 warpgroups, 1 or 2 m64 blocks each, BN 64 / 128 / 256.
W1='block(m=64,n=64,k=64).warps(4).stages(3).mma("wgmma")'
W2='block(m=128,n=128,k=64).warps(8).stages(4).mma("wgmma")'
W3='block(m=256,n=64,k=64).warps(8).stages(3).mma("wgmma")'
W4='block(m=128,n=256,k=64).warps(8).stages(3).mma("wgmma")'
W5='block(m=128,n=64,k=64).warps(4).stages(4).mma("wgmma")'
# TMA loads into the wgmma ring (sm_90a): one box of A and BN / 64 of B a slice, on mbarriers.
T1='block(m=64,n=64,k=64).warps(4).stages(3).mma("wgmma").load("tma")'
T2='block(m=128,n=128,k=64).warps(8).stages(4).mma("wgmma").load("tma")'
T3='block(m=256,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma")'
T4='block(m=128,n=256,k=64).warps(8).stages(3).mma("wgmma").load("tma")'
# Warp-specialized (schedule("coop")): a producer warpgroup and two consumers on full/empty
# mbarrier pairs; K=520 walks a 3-deep ring three times, so slots are refilled on the consumers'
# releases.
C1='block(m=128,n=128,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop")'
C2='block(m=128,n=256,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop")'
C3='block(m=256,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop")'
# ... and persistent: 2 or 3 CTAs walking 4 or 8 tiles, the ring's slots and phases running on
# from one tile to the next.
P1='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(2)'
P2='block(m=128,n=64,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop").persistent(3)'
# Ping-pong (schedule("pingpong")): the two consumers own alternate tiles, whole, and pass the
# turn on named barriers: 4 tiles on 2 CTAs; 3 tiles on 2 CTAs (one consumer without a tile);
# 8 tiles walked by 3 persistent CTAs (turns running over 3 and 2 tiles).
Q1='block(m=128,n=128,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("pingpong")'
Q2='block(m=64,n=256,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong")'
Q3='block(m=128,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong").persistent(3)'
# The TMA-store epilogue (epilogue("tma")): stmatrix into a staging tile per math warpgroup,
# fenced, stored by the TMA; persistent CTAs reuse the staging tile once the last stores have
# read it. Plain loops too, fed by the TMA or by cp.async, on 1 or 2 warpgroups.
E1='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").epilogue("tma")'
E2='block(m=128,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong").persistent(3).epilogue("tma")'
E3='block(m=256,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(2).epilogue("tma")'
E4='block(m=128,n=256,k=64).warps(8).stages(3).mma("wgmma").load("tma").epilogue("tma")'
E5='block(m=64,n=128,k=64).warps(4).stages(4).mma("wgmma").load("cp_async").epilogue("tma")'
# Clusters (cluster(m=2) / cluster(n=2)): CTA pairs run together, each producer multicasting
# its half of the shared operand into both CTAs' slots, releases arriving on both CTAs' empty
# barriers: one pair walking 2 cluster tiles; 2 and 3 pairs over 4 (an uneven walk).
K1='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(2).cluster(m=2)'
K2='block(m=128,n=64,k=64).warps(8).stages(4).mma("wgmma").load("tma").schedule("coop").persistent(4).cluster(n=2)'
K3='block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong").persistent(2).epilogue("tma").cluster(m=2)'
K4='block(m=128,n=64,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("pingpong").persistent(6).cluster(n=2)'
# FlashAttention-3 style (mma("wgmma")): a producer warpgroup loading Q once and K/V tiles into
# a TMA ring, two consumer warpgroups with Q·Kᵀ on wgmma from shared memory (K-major B) and
# P·V on wgmma with P from registers. S=300 and S=77 end in partial key tiles, read from the next
# head's rows or past the tensor; 300 keys at BN=64 walk a 2-deep ring twice and more.
F1='block(m=128,n=64).warps(8).stages(2).mma("wgmma")'
F2='block(m=128,n=128).warps(8).stages(3).mma("wgmma")'
# ... with the next Q·Kᵀ and the last P·V in flight during the softmax (overlap), and the two
# consumers' GEMMs taking turns on named barriers (pingpong).
F3='block(m=128,n=64).warps(8).stages(2).mma("wgmma").schedule("overlap")'
F4='block(m=128,n=64).warps(8).stages(3).mma("wgmma").schedule("pingpong")'
F5='block(m=128,n=128).warps(8).stages(2).mma("wgmma").schedule("pingpong")'
# ... persistent: 2 or 3 CTAs walk 6 or 9 query tiles longest first (causal tiles of 1 to 3 key
# tiles), the ring's slots and phases running on across tiles, Q double-buffered.
G4='block(m=128,n=64).warps(8).stages(2).mma("wgmma").schedule("coop").persistent(2)'
G5='block(m=128,n=128).warps(8).stages(2).mma("wgmma").schedule("overlap").persistent(3)'
# ... with epilogue("tma"): O staged in the consumer's rows of the Q buffer by stmatrix and
# stored by the TMA, the buffer handed back once the stores have read it; a consumer whose 64
# rows run past S (S=300: the last tile's both, S=200: its second) stores them directly.
H1='block(m=128,n=64).warps(8).stages(2).mma("wgmma").schedule("coop").epilogue("tma")'
H2='block(m=128,n=64).warps(8).stages(2).mma("wgmma").schedule("overlap").persistent(2).epilogue("tma")'
H3='block(m=128,n=64).warps(8).stages(3).mma("wgmma").schedule("pingpong").persistent(3).epilogue("tma")'
G6='block(m=128,n=64).warps(8).stages(3).mma("wgmma").schedule("pingpong").persistent(2)'
# fp8 (e4m3, e5m2) on the k32 wgmma: both operands K-major, B stored [N, K] and loaded by the
# TMA as A is; the scales multiply the finished tile, written as bf16. K=528: a partial last
# 128-deep slice (the TMA fills it with zeros). fp8's default point ('') is coop, persistent.
X1='block(m=128,n=128,k=128).warps(8).stages(3).mma("wgmma").load("tma").schedule("plain").persistent(0)'
X2='block(m=128,n=256,k=128).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(0)'
X3='block(m=128,n=64,k=128).warps(8).stages(4).mma("wgmma").load("tma").schedule("pingpong").persistent(3).epilogue("tma")'
X4='block(m=128,n=128,k=128).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(2).cluster(m=2)'
X5='block(m=128,n=64,k=128).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(4).cluster(n=2).epilogue("tma")'
X6='block(m=64,n=64,k=128).warps(4).stages(3).mma("wgmma").load("tma").schedule("plain").persistent(0).epilogue("tma")'
R1='block(m=4).warps(4).vector(4)'
R2='block(m=16).warps(16).vector(8)'
CASES=()
for dt in bf16 f16; do
  for p in '' "$G1" "$G2" "$G3"; do CASES+=("gemm|M=72,N=80,K=48|72 80 48|$dt|$p|EMU_EAGER=0|pass"); done
done
# Odd shapes: M, N and K tails; K=200 walks the ring more than once.
for p in "$W1" "$W2" "$W3" "$W4" "$W5"; do
  CASES+=("gemm|M=72,N=80,K=48|72 80 48|bf16|$p|EMU_EAGER=0|pass")
done
for p in "$W1" "$W2" "$W4"; do CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=136,N=200,K=200|136 200 200|bf16|$W3|EMU_EAGER=1|pass")
for p in "$T1" "$T2" "$T3" "$T4"; do CASES+=("gemm|M=72,N=80,K=48|72 80 48|bf16|$p|EMU_EAGER=0|pass"); done
for p in "$T1" "$T2" "$T4"; do CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=136,N=200,K=200|136 200 200|bf16|$T3|EMU_EAGER=1|pass")
for p in "$C1" "$C2" "$C3"; do CASES+=("gemm|M=72,N=80,K=48|72 80 48|bf16|$p|EMU_EAGER=0|pass"); done
for p in "$C1" "$C2" "$C3"; do CASES+=("gemm|M=136,N=200,K=520|136 200 520|f16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$C2|EMU_EAGER=1|pass")
for p in "$P1" "$P2"; do CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$P2|EMU_EAGER=1|pass")
for p in "$Q1" "$Q2" "$Q3"; do CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=72,N=80,K=48|72 80 48|f16|$Q1|EMU_EAGER=0|pass")
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$Q3|EMU_EAGER=1|pass")
for p in "$E1" "$E2" "$E3" "$E4" "$E5"; do CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=72,N=80,K=48|72 80 48|f16|$E2|EMU_EAGER=0|pass")
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$E3|EMU_EAGER=1|pass")
for p in "$K1" "$K3"; do CASES+=("gemm|M=256,N=200,K=520|256 200 520|bf16|$p|EMU_EAGER=0|pass"); done
for p in "$K2" "$K4"; do CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=256,N=200,K=200|256 200 200|f16|$K1|EMU_EAGER=1|pass")
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$K4|EMU_EAGER=1|pass")
for p in '' "$X1" "$X2" "$X3" "$X6"; do
  CASES+=("gemm|M=136,N=200,K=528|136 200 528|fp8_e4m3|$p|EMU_EAGER=0|pass")
done
for p in "$X1" "$X3"; do CASES+=("gemm|M=136,N=200,K=528|136 200 528|fp8_e5m2|$p|EMU_EAGER=0|pass"); done
CASES+=("gemm|M=256,N=200,K=528|256 200 528|fp8_e4m3|$X4|EMU_EAGER=0|pass")
CASES+=("gemm|M=136,N=200,K=528|136 200 528|fp8_e5m2|$X5|EMU_EAGER=0|pass")
for op in flash_attention flash_attention_causal; do
  for p in '' "$A1" "$A2" "$A3"; do CASES+=("$op|B=1,H=2,S=77,D=64|1 2 77 64|bf16|$p|EMU_EAGER=0|pass"); done
  CASES+=("$op|B=1,H=1,S=40,D=128|1 1 40 128|bf16||EMU_EAGER=1|pass")
  CASES+=("$op|B=1,H=1,S=40,D=128|1 1 40 128|bf16|$A1|EMU_EAGER=0|pass")
done
for op in flash_attention flash_attention_causal; do
  CASES+=("$op|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$F1|EMU_EAGER=0|pass")
  CASES+=("$op|B=2,H=1,S=77,D=128|2 1 77 128|f16|$F2|EMU_EAGER=0|pass")
done
CASES+=("flash_attention_causal|B=1,H=2,S=300,D=128|1 2 300 128|bf16|$F2|EMU_EAGER=1|pass")
CASES+=("flash_attention|B=1,H=1,S=200,D=64|1 1 200 64|f16|$F2|EMU_EAGER=0|pass")
for p in "$F3" "$F4"; do
  for op in flash_attention flash_attention_causal; do
    CASES+=("$op|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$p|EMU_EAGER=0|pass")
  done
  CASES+=("flash_attention_causal|B=2,H=1,S=77,D=128|2 1 77 128|f16|$p|EMU_EAGER=0|pass")
done
CASES+=("flash_attention_causal|B=1,H=1,S=300,D=128|1 1 300 128|bf16|$F5|EMU_EAGER=1|pass")
CASES+=("flash_attention|B=1,H=1,S=50,D=64|1 1 50 64|f16|$F5|EMU_EAGER=0|pass")
for p in "$G4" "$G5" "$G6"; do
  CASES+=("flash_attention_causal|B=1,H=3,S=300,D=64|1 3 300 64|bf16|$p|EMU_EAGER=0|pass")
done
CASES+=("flash_attention|B=2,H=1,S=300,D=128|2 1 300 128|f16|$G6|EMU_EAGER=0|pass")
CASES+=("flash_attention_causal|B=2,H=1,S=300,D=128|2 1 300 128|bf16|$G5|EMU_EAGER=1|pass")
for p in "$H1" "$H2" "$H3"; do
  CASES+=("flash_attention|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$p|EMU_EAGER=0|pass")
  CASES+=("flash_attention_causal|B=1,H=3,S=200,D=128|1 3 200 128|f16|$p|EMU_EAGER=0|pass")
done
CASES+=("flash_attention|B=2,H=1,S=256,D=128|2 1 256 128|bf16|$H1|EMU_EAGER=1|pass")
for op in softmax_safe layernorm_safe rmsnorm_safe reduce_sum; do
  for p in '' "$R1" "$R2"; do CASES+=("$op|M=37,N=203|37 203|bf16|$p|EMU_EAGER=0|pass"); done
done
for p in '' 'block(n=2048).warps(4).vector(4)' 'block(n=8192).warps(8).vector(8)'; do
  CASES+=("saxpy|N=5001|5001|bf16|$p|EMU_EAGER=0|pass")
done
# A kernel file's CUDA lowering (op:FILE lowers FILE, checked as op): saxpy in bf16 ...
for p in '' 'block(n=2048).warps(4).vector(8)'; do
  CASES+=("saxpy:tests/kernels/saxpy_bf16.tsk|N=5001|5001|bf16|$p|EMU_EAGER=0|pass")
done
# ... and row kernels: softmax and layernorm in bf16, one row a CTA and 4 rows of 32 threads.
for p in '' 'block(m=4).warps(4).vector(8)'; do
  CASES+=("softmax_safe:tests/kernels/softmax_bf16.tsk|M=37,N=203|37 203|bf16|$p|EMU_EAGER=0|pass")
  CASES+=("layernorm_safe:tests/kernels/layernorm_bf16.tsk|M=37,N=203|37 203|bf16|$p|EMU_EAGER=0|pass")
done
# ... and the same rows too long for the registers (9000 and 9001 columns over 4 or 2 warps, more
# than 64 floats a thread): one row a CTA, each reduction and the output a pass over column
# tiles (softmax's max and sum in one online pass; the shifted softmax's a pass each, its scratch
# row of exps recomputed in both later passes); 9001 loads one element at a time, its last tile
# partial.
for n in 9000 9001; do
  for p in 'block(m=1).warps(4).vector(8)' 'block(m=1).warps(2).vector(16)'; do
    CASES+=("softmax_safe:tests/kernels/softmax_bf16.tsk|M=3,N=$n|3 $n|bf16|$p|EMU_EAGER=0|pass")
    CASES+=("layernorm_safe:tests/kernels/layernorm_bf16.tsk|M=3,N=$n|3 $n|bf16|$p|EMU_EAGER=0|pass")
  done
done
for p in 'block(m=1).warps(4).vector(8)' 'block(m=1).warps(1).vector(8)'; do
  CASES+=("softmax_safe:tests/kernels/softmax_recompute_bf16.tsk|M=3,N=9001|3 9001|bf16|$p|EMU_EAGER=0|pass")
done
# ... and GEMM kernels through the gemm templates: gemm.tsk at its default point (mma.sync) and
# at a warp-specialized wgmma one of its space, the f16 one at its default.
for p in '' 'block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(132)'; do
  CASES+=("gemm:examples/gemm.tsk|M=136,N=200,K=200|136 200 200|bf16|$p|EMU_EAGER=0|pass")
done
CASES+=("gemm:tests/kernels/gemm_f16.tsk|M=72,N=80,K=48|72 80 48|f16||EMU_EAGER=0|pass")
# ... with a fused epilogue (scale, bias, ReLU) on the accumulators: mma.sync, the
# warp-specialized wgmma (its consumers' accumulators) and the TMA-store epilogue.
for p in '' 'block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("coop").persistent(132)' \
    'block(m=128,n=128,k=64).warps(8).stages(3).mma("wgmma").load("tma").schedule("plain").epilogue("tma")'; do
  CASES+=("gemm_bias_relu:examples/gemm_bias_relu.tsk|M=136,N=200,K=200|136 200 200|bf16|$p|EMU_EAGER=0|pass")
done
# ... and attention kernels through the flash_attention templates: flash_attention.tsk at its
# default point (FlashAttention-2 on mma.sync) and its causal specialisation at a wgmma point.
CASES+=("flash_attention:examples/flash_attention.tsk|B=1,H=2,S=77,D_h=64|1 2 77 64|bf16||EMU_EAGER=0|pass")
CASES+=("flash_attention_causal:examples/flash_attention.tsk#flash_attention+causal|B=1,H=2,S=200,D_h=128|1 2 200 128|bf16|block(m=128,n=64).warps(8).stages(2).mma(\"wgmma\").schedule(\"overlap\").persistent(0)|EMU_EAGER=0|pass")
# Self-test: a wrong fragment layout (ldmatrix.x4 transposing), a cp.async.wait_group that
# waits for nothing, a wgmma reading B K-major and a wgmma ignoring the 128-byte swizzle must
# all fail, or the checks above vouch for nothing.
CASES+=("gemm|M=72,N=80,K=48|72 80 48|f16||EMU_PLANT=1|fail")
CASES+=("flash_attention|B=1,H=2,S=77,D=64|1 2 77 64|bf16|$A1|EMU_PLANT=2|fail")
CASES+=("gemm|M=72,N=80,K=48|72 80 48|bf16|$W2|EMU_PLANT=3|fail")
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$W1|EMU_PLANT=4|fail")
# ... and so must a TMA that ignores the map's swizzle and an mbarrier wait that waits for nothing.
CASES+=("gemm|M=72,N=80,K=48|72 80 48|bf16|$T2|EMU_PLANT=5|fail")
CASES+=("gemm|M=136,N=200,K=200|136 200 200|f16|$T1|EMU_PLANT=6|fail")
# ... and an empty barrier that one consumer warpgroup's release completes alone (the producer
# then refills a slot the other consumer's wgmmas still read).
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$C2|EMU_PLANT=7|fail")
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$P1|EMU_PLANT=7|fail")
# ... and a lost bar.arrive: the consumer waiting for its turn would hang the GPU.
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$Q3|EMU_PLANT=8|fail")
# ... and a bulk wait that does not wait: the next tile's stmatrix overwrites a staging tile the
# last tile's TMA stores still read.
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$E2|EMU_PLANT=9|fail")
# In attention, whose staging is the Q buffer: the producer loads a later tile's Q into rows
# the stores still read.
CASES+=("flash_attention_causal|B=1,H=3,S=300,D=64|1 3 300 64|bf16|$H2|EMU_PLANT=9|fail")
# ... and a multicast that lands in its own CTA only: the peer waits for half a slice forever.
CASES+=("gemm|M=256,N=200,K=520|256 200 520|bf16|$K1|EMU_PLANT=10|fail")
# ... and, in attention's wgmmas, a K-major B read N-major, and P's registers in the wrong
# fragment order.
CASES+=("flash_attention|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$F1|EMU_PLANT=3|fail")
CASES+=("flash_attention_causal|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$F1|EMU_PLANT=11|fail")
# ... and, in the ping-pong attention, a lost bar.arrive; in the persistent one, an empty
# barrier (a ring slot's or a Q buffer's) completed by one consumer's release.
CASES+=("flash_attention|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$F4|EMU_PLANT=8|fail")
CASES+=("flash_attention_causal|B=1,H=3,S=300,D=64|1 3 300 64|bf16|$G4|EMU_PLANT=7|fail")
# ... and a setmaxnreg.dec that frees nothing (the consumers' increase then waits forever), and a
# wgmma.wait_group that retires one group too few (the overlap's softmax then reads scores the
# Q·Kᵀ still writes).
CASES+=("gemm|M=136,N=200,K=520|136 200 520|bf16|$C1|EMU_PLANT=12|fail")
CASES+=("flash_attention|B=1,H=2,S=300,D=64|1 2 300 64|bf16|$F3|EMU_PLANT=13|fail")
# ... and, on fp8, a B read N-major (the layout of 16-bit B), and an fp8 wgmma issued with
# imm-trans-b, which the ISA does not have.
CASES+=("gemm|M=136,N=200,K=528|136 200 528|fp8_e4m3|$X2|EMU_PLANT=3|fail")
CASES+=("gemm|M=136,N=200,K=528|136 200 528|fp8_e5m2|$X1|EMU_PLANT=14|fail")

# EMU_ONLY=REGEX: only the cases whose line matches (a developer's subset).
if [ -n "${EMU_ONLY:-}" ]; then
  sel=()
  for c in "${CASES[@]}"; do [[ $c =~ $EMU_ONLY ]] && sel+=("$c"); done
  CASES=("${sel[@]}")
fi

# The driver for an element type: its storage type, and fp8's input format (fp8 writes bf16, and
# its bound is bf16's). Writes $W/driver-TYPE.o, or the compiler's complaint in $W/driver-TYPE.log.
build_driver() {
  local f=(-DSTORE=ts_bf16 -DSTORE_NAME='"bf16"')
  case $1 in
    bf16) ;;
    fp8_e4m3) f+=(-DFP8_IN=ts_e4m3 -DFP8_E5M2=0) ;;
    fp8_e5m2) f+=(-DFP8_IN=ts_e5m2 -DFP8_E5M2=1) ;;
    *) f=(-DSTORE="ts_$1" -DSTORE_NAME="\"$1\"") ;;
  esac
  "$CXX" "${CXXFLAGS_EMU[@]}" -include "$W/pch/emu_core.h" -I"$W/inc" "${f[@]}" \
    -c "$HERE/emu_driver.cpp" -o "$W/driver-$1.o" 2>"$W/driver-$1.log"
}

run_case() { # index, case line; writes $W/r.INDEX
  local i=$1 op shape dims dt pt env expect entry rc
  IFS='|' read -r op shape dims dt pt env expect <<<"$2"
  local d="$W/c$i" name="$op $shape $dt ${pt:-default} $env"
  mkdir -p "$d"
  local what=("$op")
  # op:FILE lowers FILE's first kernel, op:FILE#NAME its kernel NAME (+flags: NAME+causal).
  if [[ $op == *:*#* ]]; then
    local k=${op#*:}
    what=(--kernel "$ROOT/${k%%#*}" "${k#*#}"); op=${op%%:*}
  elif [[ $op == *:* ]]; then what=(--kernel "$ROOT/${op#*:}"); op=${op%%:*}; fi
  if ! "$TUNE" lower "${what[@]}" --shape "$shape" --dtype "$dt" --backend cuda ${pt:+--schedule "$pt"} \
      --stage target >"$d/lower.txt" 2>"$d/log"; then
    echo "not ok $i - $name # lowering failed: $(tail -1 "$d/log")" >"$W/r.$i"; return; fi
  # The emulator's ts_smem is the running CTA's (emu_core.h): the kernel's declaration goes.
  sed -e 1d -e 's/^\( *\)extern __shared__ .*unsigned char ts_smem\[\];/\1\/\/ (emu: per CTA)/' \
    "$d/lower.txt" >"$d/k.cu"
  cat "$HERE/emu_entry.inc" >>"$d/k.cu"
  entry=$(grep -o 'extern "C" __constant__ unsigned int [a-z_0-9]*_launch' "$d/k.cu" | awk '{print $NF}')
  entry=${entry%_launch}
  if [ ! -f "$W/driver-$dt.o" ]; then
    echo "not ok $i - $name # g++ failed on the driver: $(grep -m1 error "$W/driver-$dt.log")" >"$W/r.$i"; return; fi
  local tma="" cluster
  grep -q "unsigned int ${entry}_tma\[" "$d/k.cu" && tma="-DTMA_RECORD=${entry}_tma"
  cluster=$(grep -o '__cluster_dims__([0-9]*' "$d/k.cu" | head -1 | tr -dc 0-9)
  # shellcheck disable=SC2086
  if ! "$CXX" "${CXXFLAGS_EMU[@]}" -include "$W/pch/emu_core.h" -I"$W/inc" -DENTRY="$entry" $tma -DEMU_CLUSTER="${cluster:-1}" \
      -DLAUNCH="${entry}_launch" -x c++ "$d/k.cu" -x none "$W/driver-$dt.o" -o "$d/emu" 2>"$d/log"; then
    echo "not ok $i - $name # g++ failed: $(grep -m1 error "$d/log")" >"$W/r.$i"; return; fi
  # shellcheck disable=SC2086
  env $env "$d/emu" "$op" $dims >"$d/out" 2>"$d/err"; rc=$?
  local res; res="$(tail -1 "$d/out") $(head -1 "$d/err")"
  if { [ "$expect" = pass ] && [ $rc -eq 0 ]; } || { [ "$expect" = fail ] && [ $rc -eq 1 ]; }; then
    echo "ok $i - $name (expect $expect) # $res" >"$W/r.$i"
  else
    echo "not ok $i - $name (expect $expect, rc $rc) # $res" >"$W/r.$i"
  fi
}

JOBS=${EMU_JOBS:-$(nproc 2>/dev/null || echo 2)}
n=${#CASES[@]}
echo "1..$n"
# One driver object per element type the cases use.
declare -A types=()
for c in "${CASES[@]}"; do IFS='|' read -r _ _ _ dt _ <<<"$c"; types[$dt]=1; done
for dt in "${!types[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  build_driver "$dt" &
done
wait
for ((i = 1; i <= n; i++)); do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_case "$i" "${CASES[$((i - 1))]}" &
done
wait
fail=0
for ((i = 1; i <= n; i++)); do
  if [ -f "$W/r.$i" ]; then cat "$W/r.$i"; else echo "not ok $i - no result"; fi
  grep -q '^not ok' "$W/r.$i" 2>/dev/null && fail=1
done
exit $fail
