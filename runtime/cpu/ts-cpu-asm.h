/* ts-cpu-asm.h — micro-kernels the CPU backend writes as assembly (private).
 *
 * A candidate's f32 micro-kernel was most of its compile (0.11-0.23 s of GCC -O3 for a few
 * hundred unrolled FMAs, measured on an AVX-512 Xeon), though the code is always the same
 * shape: zero the accumulators, per k load B's vectors, broadcast each A element and FMA,
 * store (the bf16 dot-product ones likewise, on vdpbf16ps). Written out as assembly it
 * assembles in a few milliseconds, which is how JIT BLAS libraries (libxsmm, oneDNN) build
 * theirs. The C macros in ts_cpu_prims.h stay the reference: the same instructions on the
 * same sums in the same order, so the results are the same bits (tests/test-backend.c checks
 * both on edges, accumulation and odd unrolls). */
#pragma once

#include <glib.h>

/* The GNU assembler text (AT&T, x86-64 System V) of TS_DEFINE_UKR_F32(name, mr, nr, vec,
 * unroll) with the shared linkage (global, hidden), where the host runs it (the kernels run
 * where they are compiled): vec 16 on AVX-512F, 8 and 4 on AVX with FMA; and where the
 * accumulators, B's vectors and a broadcast fit the vector registers (32 with AVX-512, else
 * 16). NULL otherwise, or with TS_CPU_ASM=0: the C macro then compiles it (TS_CPU_ASM=avx2
 * writes what an AVX2 machine would get: tests run that form on AVX-512 machines too). */
char *ts__cpu_asm_ukr_f32(const char *name, int mr, int nr, int vec, int unroll);

/* The same for TS_DEFINE_UKR_BF16DOT(name, mr, nr, unroll), vdpbf16ps over K-pair panels
 * (AVX512_BF16). */
char *ts__cpu_asm_ukr_bf16dot(const char *name, int mr, int nr, int unroll);
