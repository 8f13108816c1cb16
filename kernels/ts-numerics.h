/* ts-numerics.h — host-side numerics shared by every op: dtype conversions, random inputs,
 * output poisoning, reference implementations accumulating in f64, and the relative-error check
 * that decides whether a kernel's output is right.
 *
 * Layouts are row-major. Storage dtypes handled on the host: f32, bf16, f16 (16-bit types are
 * passed as uint16_t bit patterns), fp8 e4m3/e5m2 (uint8_t patterns, saturating), f64.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "ts-half.h"
#include "ts-ir.h"

G_BEGIN_DECLS


gsize ts_numerics_elem_size(TsDtype dtype); /* bytes per element for f64/f32/bf16/f16/fp8, else 0 */
/* Element i of a buffer of the given storage dtype, as double. */
double ts_numerics_get(TsDtype dtype, const void *buf, gsize i);
void ts_numerics_set(TsDtype dtype, void *buf, gsize i, double value);

/* Fresh uniform random values in [lo, hi) rounded to the dtype; never all zeros. */
void ts_numerics_fill_random(TsDtype dtype, void *buf, gsize n, GRand *rng, double lo, double hi);
/* Every element becomes a quiet NaN, so an element the kernel never writes fails verification. */
void ts_numerics_poison(TsDtype dtype, void *buf, gsize n);

/* References: inputs in their storage dtype, products and sums in f64, outputs as double. */
void ts_ref_gemm(TsDtype dtype, const void *a, const void *b, double *c, gint64 m, gint64 n,
                 gint64 k);                                             /* C = A[M,K] B[K,N] */

/* What ts_ref_gemm_sampled computes of C: whole rows and whole columns (the first and the last
 * of each always among them) and elements anywhere, drawn from a seed. */
#define TS_REF_GEMM_SAMPLE_ROWS 16
#define TS_REF_GEMM_SAMPLE_COLS 16
#define TS_REF_GEMM_SAMPLE_ELEMS 4096
/* C = A B on a sample: TS_REF_GEMM_SAMPLE_ROWS rows and _COLS columns of C in full (fewer when
 * C has fewer) and _ELEMS further elements, drawn from `seed`; every other element of c becomes
 * NaN, which ts_numerics_rel_error leaves unchecked. About (16 (M + N) + 4096) K multiply-adds
 * instead of M N K: a second for 8192^3 on two cores, against several minutes in full. */
void ts_ref_gemm_sampled(TsDtype dtype, const void *a, const void *b, double *c, gint64 m,
                         gint64 n, gint64 k, guint32 seed);
void ts_ref_saxpy(TsDtype dtype, double alpha, const void *x, const void *y, double *z,
                  gint64 n);                                            /* z = alpha*x + y */
void ts_ref_reduce_sum(TsDtype dtype, const void *x, double *y, gint64 rows, gint64 cols);
                                                                         /* y[r] = sum_c x[r,c] */
void ts_ref_softmax(TsDtype dtype, const void *x, double *y, gint64 rows, gint64 cols);
void ts_ref_layernorm(TsDtype dtype, const void *x, const void *gamma, const void *beta,
                      double eps, double *y, gint64 rows, gint64 cols);
void ts_ref_rmsnorm(TsDtype dtype, const void *x, const void *gamma, double eps, double *y,
                    gint64 rows, gint64 cols);
/* Attention over `heads` independent heads: O = softmax(Q Kᵀ / sqrt(dim), causal mask) V, each of
 * Q, K, V, O [heads][seq][dim] row-major, softmax max-subtracted. Only the rows listed in `rows`
 * (flat indices head * seq + i, ascending) are computed, or all of them when rows is NULL; the
 * other rows of o are left as they are. */
void ts_ref_attention(TsDtype dtype, const void *q, const void *k, const void *v, double *o,
                      gint64 heads, gint64 seq, gint64 dim, gboolean causal, const gint64 *rows,
                      gsize n_rows);
/* The query rows an attention reference checks: NULL (all of them, *n_rows = heads * seq) when
 * heads * seq^2 * dim <= limit multiply-adds, else about 512 rows drawn from `seed`, ascending,
 * always including the first and last row of the first and the last head. Free with g_free. */
gint64 *ts_ref_attention_rows(gint64 heads, gint64 seq, gint64 dim, double limit, guint32 seed,
                              gsize *n_rows);

/* ||out - ref||_2 / ||ref||_2 over n elements (out in its storage dtype). Any non-finite output
 * element makes the result +Inf and is counted in *n_nonfinite (may be NULL). When ||ref|| is 0
 * the absolute norm ||out|| is returned. A NaN reference element means "not checked" (a
 * reference computed on sampled rows): it is left out of the norms, but a non-finite output
 * there still counts; if no element is checked at all the result is +Inf. */
double ts_numerics_rel_error(TsDtype dtype, const void *out, const double *ref, gsize n,
                             gsize *n_nonfinite);
/* The bound for an op's output, by its inputs' storage dtype: f32 1e-5 (1e-4 for gemm, whose
 * sums are long), bf16 1e-2, f16 1e-3, fp8 (a gemm writing bf16) 1e-2; other dtypes 1e-2. */
double ts_numerics_tolerance(TsDtype dtype, const char *op);

G_END_DECLS
