/* gemm-anchors.h — the libraries bench/cpu_gemm measures our GEMM against, each on the same
 * row-major inputs: OpenBLAS sgemm (f32) on the kernel it detects, and oneDNN's matmul (f32 and
 * bf16, bf16 output with f32 accumulation as ours), on the implementation it dispatches to
 * (AMX, AVX512_BF16 or AVX-512 brgemm kernels). Which ones exist depends on the build. */
#pragma once

#include <glib.h>

typedef struct _GemmAnchor GemmAnchor;

/* The anchors built in that take dtype ("f32" or "bf16"), created for n x n x n with `threads`
 * threads over A and B (n*n elements of dtype each, bf16 as uint16_t bits): GemmAnchor*, freed
 * by the array. One that cannot be set up is left out with a message on stderr. */
GPtrArray *gemm_anchors_new(const char *dtype, gint64 n, int threads, const void *a,
                            const void *b);
/* "OpenBLAS 0.3.21 sgemm (SkylakeX kernel)", "oneDNN 2.6.3 brg:avx512_core_amx_bf16" */
const char *gemm_anchor_name(const GemmAnchor *anchor);
/* One call, C = A B, in ns of wall time. */
double gemm_anchor_call(GemmAnchor *anchor);
/* Anchors this build lacks, with the package that adds them, for the report's header. */
const char *gemm_anchors_missing(void);
/* The OpenBLAS kernel that serves this CPU better than the one OpenBLAS detected, or NULL.
 * A release that does not know a CPU model falls back to its Prescott (SSE3) kernel: 0.3.21 on
 * an Emerald Rapids (family 6, model 207) runs 4-wide SSE beside 16-wide AVX-512, a fifth of
 * its own AVX-512 kernel's speed. `host_arch` is the backend's ISA string ("x86_64+avx2+...")
 * and `vector_bits` its widest float register; the answer is an OPENBLAS_CORETYPE name. */
const char *gemm_anchors_openblas_better_core(const char *host_arch, guint vector_bits);
/* The kernel OpenBLAS runs now ("Cooperlake"), NULL without OpenBLAS. */
const char *gemm_anchors_openblas_core(void);
