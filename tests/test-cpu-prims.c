/* test-cpu-prims.c — tests of runtime/cpu/ts_cpu_prims.h, the tile-primitive library generated C
 * code includes: every micro-kernel shape against an f64 GEMM (edges, accumulate on/off),
 * packing with bf16/f16 conversion, the scalar and vector dtype conversions (exhaustive round-
 * to-nearest-even checks), the row-vector helpers (exp accuracy over a sweep, hsum/hmax, sqrt,
 * loads/stores), and the f32 GEMM example driver (tests/data/gemm_f32_example.c, the shape the
 * emitter generates) on odd shapes and thread counts against a naive f64 GEMM.
 *
 * The example is #included three times with different TS_* values; its two symbols (the entry
 * and the micro-kernel `ukr`) are renamed by macros around each include.
 */
/* The row helpers are tested at the width this file is built for (-DTS_TEST_VEC=16: the
 * AVX-512 build of the same tests, test-cpu-prims-512). */
#ifndef TS_TEST_VEC
#define TS_TEST_VEC 8
#endif
#define TS_VEC TS_TEST_VEC
#include "ts_cpu_prims.h"

#include <glib.h>
#include <math.h>

#include "test-util.h"

/* ---- the example driver, three configurations ---------------------------------------------- */

/* 1: the defaults (6x16 AVX2, 2 threads) */
#define ts_gemm_example gemm_default
#define ukr ukr_default
#include "data/gemm_f32_example.c"
#undef ts_gemm_example
#undef ukr
#undef TS_VEC
#undef TS_MR
#undef TS_NR
#undef TS_UNROLL
#undef TS_BK
#undef TS_BM
#undef TS_BN
#undef TS_THREADS

/* 2: SSE-width 4x8, tiny blocks so every loop level has several trips and ragged edges;
 * 3 threads on 2 cores (more threads than B panels in some blocks). */
#define ts_gemm_example gemm_small
#define ukr ukr_small
#define TS_VEC 4
#define TS_MR 4
#define TS_NR 8
#define TS_UNROLL 3
#define TS_BK 7
#define TS_BM 10
#define TS_BN 24
#define TS_THREADS 3
#include "data/gemm_f32_example.c"
#undef ts_gemm_example
#undef ukr
#undef TS_VEC
#undef TS_MR
#undef TS_NR
#undef TS_UNROLL
#undef TS_BK
#undef TS_BM
#undef TS_BN
#undef TS_THREADS

/* 3: 8x24, one thread, blocks that are not multiples of the micro-tile. */
#define ts_gemm_example gemm_wide
#define ukr ukr_wide
#define TS_VEC 8
#define TS_MR 8
#define TS_NR 24
#define TS_UNROLL 2
#define TS_BK 33
#define TS_BM 20
#define TS_BN 50
#define TS_THREADS 1
#include "data/gemm_f32_example.c"
#undef ts_gemm_example
#undef ukr
#undef TS_VEC
#undef TS_MR
#undef TS_NR
#undef TS_UNROLL
#undef TS_BK
#undef TS_BM
#undef TS_BN
#undef TS_THREADS

/* 4: AVX-512's 14x32 with 16-float vectors (28 of the 32 zmm registers), ragged blocks. */
#define ts_gemm_example gemm_zmm
#define ukr ukr_zmm
#define TS_VEC 16
#define TS_MR 14
#define TS_NR 32
#define TS_UNROLL 4
#define TS_BK 45
#define TS_BM 42
#define TS_BN 96
#define TS_THREADS 2
#include "data/gemm_f32_example.c"
#undef ts_gemm_example
#undef ukr
#undef TS_VEC
#define TS_VEC TS_TEST_VEC

/* ---- helpers --------------------------------------------------------------------------------- */

static void
fill_random(float *x, size_t n, GRand *rng)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float)g_rand_double_range(rng, -1.0, 1.0);
}

/* Checks c (row stride ldc) against the f64 product of a[m,k] (lda) and b[k,n] (ldb) plus
 * c0 when given: |c - ref| <= 1e-5 * sum_k |a||b| + 1e-30, an f32 accumulation bound. */
static void
check_gemm(const float *c, int64_t ldc, const float *c0, const float *a, int64_t lda,
           const float *b, int64_t ldb, int64_t m, int64_t n, int64_t k, const char *what)
{
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double ref = c0 ? c0[i * ldc + j] : 0.0, mag = c0 ? fabs(c0[i * ldc + j]) : 0.0;
      for (int64_t p = 0; p < k; p++) {
        ref += (double)a[i * lda + p] * b[p * ldb + j];
        mag += fabs((double)a[i * lda + p] * b[p * ldb + j]);
      }
      double got = c[i * ldc + j];
      if (!(fabs(got - ref) <= 1e-5 * mag + 1e-30))
        g_error("%s: C[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %.9g, expected %.9g", what,
                i, j, got, ref);
    }
  }
}

/* ---- micro-kernels ----------------------------------------------------------------------------- */

TS_DEFINE_UKR_F32(ukr_4x8_v4, 4, 8, 4, 1);
TS_DEFINE_UKR_F32(ukr_4x8_v8, 4, 8, 8, 4);
TS_DEFINE_UKR_F32(ukr_4x16_v4, 4, 16, 4, 2);
TS_DEFINE_UKR_F32(ukr_4x16_v8, 4, 16, 8, 4);
TS_DEFINE_UKR_F32(ukr_4x24_v4, 4, 24, 4, 3);
TS_DEFINE_UKR_F32(ukr_4x24_v8, 4, 24, 8, 4);
TS_DEFINE_UKR_F32(ukr_4x32_v4, 4, 32, 4, 1);
TS_DEFINE_UKR_F32(ukr_4x32_v8, 4, 32, 8, 2);
TS_DEFINE_UKR_F32(ukr_6x8_v4, 6, 8, 4, 4);
TS_DEFINE_UKR_F32(ukr_6x8_v8, 6, 8, 8, 1);
TS_DEFINE_UKR_F32(ukr_6x16_v4, 6, 16, 4, 4);
TS_DEFINE_UKR_F32(ukr_6x16_v8, 6, 16, 8, 8);
TS_DEFINE_UKR_F32(ukr_6x24_v4, 6, 24, 4, 2);
TS_DEFINE_UKR_F32(ukr_6x24_v8, 6, 24, 8, 3);
TS_DEFINE_UKR_F32(ukr_6x32_v4, 6, 32, 4, 1);
TS_DEFINE_UKR_F32(ukr_6x32_v8, 6, 32, 8, 4);
TS_DEFINE_UKR_F32(ukr_8x8_v4, 8, 8, 4, 2);
TS_DEFINE_UKR_F32(ukr_8x8_v8, 8, 8, 8, 4);
TS_DEFINE_UKR_F32(ukr_8x16_v4, 8, 16, 4, 4);
TS_DEFINE_UKR_F32(ukr_8x16_v8, 8, 16, 8, 2);
TS_DEFINE_UKR_F32(ukr_8x24_v4, 8, 24, 4, 1);
TS_DEFINE_UKR_F32(ukr_8x24_v8, 8, 24, 8, 4);
TS_DEFINE_UKR_F32(ukr_8x32_v4, 8, 32, 4, 2);
TS_DEFINE_UKR_F32(ukr_8x32_v8, 8, 32, 8, 8);
TS_DEFINE_UKR_F32(ukr_8x32_v16, 8, 32, 16, 4);
TS_DEFINE_UKR_F32(ukr_12x32_v16, 12, 32, 16, 4);
TS_DEFINE_UKR_F32(ukr_14x32_v16, 14, 32, 16, 8);
TS_DEFINE_UKR_F32(ukr_8x48_v16, 8, 48, 16, 2);
TS_DEFINE_UKR_F32(ukr_6x64_v16, 6, 64, 16, 1);

typedef void (*UkrFn)(int64_t, const float *restrict, const float *restrict, float *restrict,
                      int64_t, int, int64_t, int64_t);
typedef struct {
  const char *name;
  UkrFn fn;
  int64_t mr, nr;
} Ukr;

#define UKR(M, N, V) {"ukr_" #M "x" #N "_v" #V, ukr_##M##x##N##_v##V, M, N}
static const Ukr ukrs[] = {
  UKR(4, 8, 4),  UKR(4, 8, 8),  UKR(4, 16, 4), UKR(4, 16, 8), UKR(4, 24, 4), UKR(4, 24, 8),
  UKR(4, 32, 4), UKR(4, 32, 8), UKR(6, 8, 4),  UKR(6, 8, 8),  UKR(6, 16, 4), UKR(6, 16, 8),
  UKR(6, 24, 4), UKR(6, 24, 8), UKR(6, 32, 4), UKR(6, 32, 8), UKR(8, 8, 4),  UKR(8, 8, 8),
  UKR(8, 16, 4), UKR(8, 16, 8), UKR(8, 24, 4), UKR(8, 24, 8), UKR(8, 32, 4), UKR(8, 32, 8),
  UKR(8, 32, 16), UKR(12, 32, 16), UKR(14, 32, 16), UKR(8, 48, 16), UKR(6, 64, 16),
};

static void
test_ukr_shapes(void)
{
  GRand *rng = g_rand_new_with_seed(1);
  for (guint u = 0; u < G_N_ELEMENTS(ukrs); u++) {
    const Ukr *uk = &ukrs[u];
    const int64_t kcs[] = {1, 5, 17, 64};
    for (guint ki = 0; ki < G_N_ELEMENTS(kcs); ki++) {
      int64_t kc = kcs[ki];
      const int64_t mrs[] = {uk->mr, uk->mr - 1, 1}, nrs[] = {uk->nr, uk->nr - 3, 1};
      for (guint mi = 0; mi < 3; mi++) {
        for (guint ni = 0; ni < 3; ni++) {
          int64_t mr = mrs[mi], nr = nrs[ni], ldc = nr + 5;
          /* A: mr x kc (lda = kc + 2), B: kc x nr (ldb = nr + 1), packed with zero padding */
          int64_t lda = kc + 2, ldb = nr + 1;
          float *a = g_new(float, mr * lda), *b = g_new(float, kc * ldb);
          float *ap = ts_cpu_alloc(sizeof(float) * (size_t)(uk->mr * kc));
          float *bp = ts_cpu_alloc(sizeof(float) * (size_t)(uk->nr * kc));
          float *c = g_new(float, mr * ldc), *c0 = g_new(float, mr * ldc);
          fill_random(a, (size_t)(mr * lda), rng);
          fill_random(b, (size_t)(kc * ldb), rng);
          ts_pack_a_panel_f32(a, lda, mr, kc, uk->mr, ap);
          ts_pack_b_panel_f32(b, ldb, kc, nr, uk->nr, bp);
          for (int acc = 0; acc <= 1; acc++) {
            fill_random(c0, (size_t)(mr * ldc), rng);
            memcpy(c, c0, sizeof(float) * (size_t)(mr * ldc));
            uk->fn(kc, ap, bp, c, ldc, acc, mr, nr);
            g_autofree char *what = g_strdup_printf("%s kc=%" G_GINT64_FORMAT " mr=%"
                                                    G_GINT64_FORMAT " nr=%" G_GINT64_FORMAT
                                                    " acc=%d", uk->name, kc, mr, nr, acc);
            check_gemm(c, ldc, acc ? c0 : NULL, a, lda, b, ldb, mr, nr, kc, what);
            /* the padding columns of each C row (ldc - nr) are never written */
            for (int64_t i = 0; i < mr; i++)
              for (int64_t j = nr; j < ldc; j++)
                g_assert_cmpfloat(c[i * ldc + j], ==, c0[i * ldc + j]);
          }
          g_free(a);
          g_free(b);
          g_free(c);
          g_free(c0);
          ts_cpu_free(ap);
          ts_cpu_free(bp);
        }
      }
    }
  }
  g_rand_free(rng);
}

/* A read in place (TS_DEFINE_UKR_F32_RA): row-major with a constant row stride, as attention's
 * P V takes its probabilities. The kernel reads all MR rows: the rows past mr hold NaN here, and
 * the valid rows of C must not see them. */
TS_DEFINE_UKR_F32_RA(ukr_ra_6x16_v8, 6, 16, 8, 4, 70);
TS_DEFINE_UKR_F32_RA(ukr_ra_4x24_v8, 4, 24, 8, 3, 33);
TS_DEFINE_UKR_F32_RA(ukr_ra_8x8_v4, 8, 8, 4, 2, 17);

static void
test_ukr_a_rows(void)
{
  static const struct {
    const char *name;
    UkrFn fn;
    int64_t mr, nr, lda;
  } ras[] = {
    {"ukr_ra_6x16_v8", ukr_ra_6x16_v8, 6, 16, 70},
    {"ukr_ra_4x24_v8", ukr_ra_4x24_v8, 4, 24, 33},
    {"ukr_ra_8x8_v4", ukr_ra_8x8_v4, 8, 8, 17},
  };
  GRand *rng = g_rand_new_with_seed(2);
  for (guint u = 0; u < G_N_ELEMENTS(ras); u++) {
    const int64_t kcs[] = {1, 7, 16};
    for (guint ki = 0; ki < G_N_ELEMENTS(kcs); ki++) {
      const int64_t kc = kcs[ki], lda = ras[u].lda, ldb = ras[u].nr, ldc = ras[u].nr + 3;
      const int64_t mrs[] = {ras[u].mr, ras[u].mr - 1, 1}, nrs[] = {ras[u].nr, ras[u].nr - 5};
      for (guint mi = 0; mi < G_N_ELEMENTS(mrs); mi++)
        for (guint ni = 0; ni < G_N_ELEMENTS(nrs); ni++) {
          const int64_t mr = mrs[mi], nr = nrs[ni];
          float *a = g_new(float, ras[u].mr * lda), *bp = ts_cpu_alloc(sizeof(float) * (size_t)(ldb * kc));
          float *c = g_new(float, ras[u].mr * ldc), *c0 = g_new(float, ras[u].mr * ldc);
          fill_random(a, (size_t)(mr * lda), rng);
          for (int64_t i = mr * lda; i < ras[u].mr * lda; i++)
            a[i] = NAN;
          fill_random(bp, (size_t)(ldb * kc), rng);
          for (int acc = 0; acc <= 1; acc++) {
            fill_random(c0, (size_t)(ras[u].mr * ldc), rng);
            memcpy(c, c0, sizeof(float) * (size_t)(ras[u].mr * ldc));
            ras[u].fn(kc, a, bp, c, ldc, acc, mr, nr);
            g_autofree char *what =
              g_strdup_printf("%s kc=%" G_GINT64_FORMAT " mr=%" G_GINT64_FORMAT
                              " nr=%" G_GINT64_FORMAT " acc=%d", ras[u].name, kc, mr, nr, acc);
            check_gemm(c, ldc, acc ? c0 : NULL, a, lda, bp, ldb, mr, nr, kc, what);
            /* nothing outside the mr x nr corner is written */
            for (int64_t i = 0; i < ras[u].mr; i++)
              for (int64_t j = 0; j < ldc; j++)
                if (i >= mr || j >= nr)
                  g_assert_cmpfloat(c[i * ldc + j], ==, c0[i * ldc + j]);
          }
          g_free(a);
          g_free(c);
          g_free(c0);
          ts_cpu_free(bp);
        }
    }
  }
  g_rand_free(rng);
}

/* ---- the bf16 dot-product micro-kernel (vdpbf16ps) ------------------------------------------------ */

/* Pair packing: element (i, k) of A lands at pair k/2, slot k&1 of row i; odd K, short rows and
 * short columns are zero. Then every shape against an f64 GEMM of the same bf16 values (their
 * products are exact in f32, so the f32 sums are as close as the f32 micro-kernels'). */
static void
test_bf16dot_pack(void)
{
  const int64_t M = 5, K = 7, N = 9, MR = 6, NR = 16, lda = K + 1, ldb = N + 3;
  uint16_t *a = g_new(uint16_t, M * lda), *b = g_new(uint16_t, K * ldb);
  for (int64_t i = 0; i < M * lda; i++)
    a[i] = (uint16_t)(1000 + i);
  for (int64_t i = 0; i < K * ldb; i++)
    b[i] = (uint16_t)(5000 + i);
  uint16_t *ap = ts_cpu_alloc(2 * sizeof(uint16_t) * MR * TS_KPAIRS(K));
  uint16_t *bp = ts_cpu_alloc(2 * sizeof(uint16_t) * NR * TS_KPAIRS(K));
  ts_pack_a_panel_bf16x2(a, lda, M, K, MR, ap);
  ts_pack_b_panel_bf16x2(b, ldb, K, N, NR, bp);
  for (int64_t k = 0; k < 2 * TS_KPAIRS(K); k++) {
    for (int64_t i = 0; i < MR; i++)
      g_assert_cmpuint(ap[(k / 2 * MR + i) * 2 + (k & 1)], ==, i < M && k < K ? a[i * lda + k] : 0);
    for (int64_t j = 0; j < NR; j++)
      g_assert_cmpuint(bp[(k / 2 * NR + j) * 2 + (k & 1)], ==, j < N && k < K ? b[k * ldb + j] : 0);
  }
  g_free(a);
  g_free(b);
  ts_cpu_free(ap);
  ts_cpu_free(bp);
}

#ifdef __AVX512BF16__
TS_DEFINE_UKR_BF16DOT(ukr_dot_14x32, 14, 32, 4);
TS_DEFINE_UKR_BF16DOT(ukr_dot_8x48, 8, 48, 2);
TS_DEFINE_UKR_BF16DOT(ukr_dot_4x16, 4, 16, 1);
#endif

static void
test_bf16dot_ukr(void)
{
#ifndef __AVX512BF16__
  g_test_skip("this machine (or compiler) has no AVX512_BF16");
#else
  typedef void (*DotFn)(int64_t, const uint16_t *restrict, const uint16_t *restrict,
                        float *restrict, int64_t, int, int64_t, int64_t);
  static const struct {
    const char *name;
    DotFn fn;
    int64_t mr, nr;
  } dots[] = {{"14x32", ukr_dot_14x32, 14, 32}, {"8x48", ukr_dot_8x48, 8, 48},
              {"4x16", ukr_dot_4x16, 4, 16}};
  GRand *rng = g_rand_new_with_seed(7);
  for (guint u = 0; u < G_N_ELEMENTS(dots); u++) {
    const int64_t kcs[] = {1, 2, 7, 64, 129};
    for (guint ki = 0; ki < G_N_ELEMENTS(kcs); ki++) {
      int64_t kc = kcs[ki];
      const int64_t mrs[] = {dots[u].mr, dots[u].mr - 1, 1}, nrs[] = {dots[u].nr, dots[u].nr - 3, 1};
      for (guint mi = 0; mi < 3; mi++)
        for (guint ni = 0; ni < 3; ni++) {
          int64_t mr = mrs[mi], nr = nrs[ni], lda = kc + 2, ldb = nr + 1, ldc = nr + 5;
          uint16_t *a16 = g_new(uint16_t, mr * lda), *b16 = g_new(uint16_t, kc * ldb);
          float *a = g_new(float, mr * lda), *b = g_new(float, kc * ldb);
          for (int64_t i = 0; i < mr * lda; i++) {
            a16[i] = ts_cpu_f32_to_bf16((float)g_rand_double_range(rng, -1, 1));
            a[i] = ts_cpu_bf16_to_f32(a16[i]);
          }
          for (int64_t i = 0; i < kc * ldb; i++) {
            b16[i] = ts_cpu_f32_to_bf16((float)g_rand_double_range(rng, -1, 1));
            b[i] = ts_cpu_bf16_to_f32(b16[i]);
          }
          uint16_t *ap = ts_cpu_alloc(2 * sizeof(uint16_t) * dots[u].mr * TS_KPAIRS(kc));
          uint16_t *bp = ts_cpu_alloc(2 * sizeof(uint16_t) * dots[u].nr * TS_KPAIRS(kc));
          ts_pack_a_panel_bf16x2(a16, lda, mr, kc, dots[u].mr, ap);
          ts_pack_b_panel_bf16x2(b16, ldb, kc, nr, dots[u].nr, bp);
          float *c = g_new(float, mr * ldc), *c0 = g_new(float, mr * ldc);
          for (int acc = 0; acc <= 1; acc++) {
            fill_random(c0, (size_t)(mr * ldc), rng);
            memcpy(c, c0, sizeof(float) * (size_t)(mr * ldc));
            dots[u].fn(kc, ap, bp, c, ldc, acc, mr, nr);
            g_autofree char *what = g_strdup_printf("dot %s kc=%" G_GINT64_FORMAT " mr=%"
                                                    G_GINT64_FORMAT " nr=%" G_GINT64_FORMAT
                                                    " acc=%d", dots[u].name, kc, mr, nr, acc);
            check_gemm(c, ldc, acc ? c0 : NULL, a, lda, b, ldb, mr, nr, kc, what);
            for (int64_t i = 0; i < mr; i++)
              for (int64_t j = nr; j < ldc; j++)
                g_assert_cmpfloat(c[i * ldc + j], ==, c0[i * ldc + j]);
          }
          g_free(a16);
          g_free(b16);
          g_free(a);
          g_free(b);
          g_free(c);
          g_free(c0);
          ts_cpu_free(ap);
          ts_cpu_free(bp);
        }
    }
  }
  g_rand_free(rng);
#endif
}

/* ---- packing ----------------------------------------------------------------------------------- */

/* A and B blocks packed in f32, bf16 and f16 against the matrices, and a ragged panel alone
 * against the block's. */
static void
check_pack(GRand *rng, int64_t M, int64_t K, int64_t N, int64_t MR, int64_t NR)
{
  const int64_t lda = K + 3, ldb = N + 2;
  float *a = g_new(float, M * lda), *b = g_new(float, K * ldb);
  uint16_t *a16 = g_new(uint16_t, M * lda), *b16 = g_new(uint16_t, K * ldb);
  fill_random(a, (size_t)(M * lda), rng);
  fill_random(b, (size_t)(K * ldb), rng);
  const int64_t ap_n = ts_round_up_i64(M, MR) * K, bp_n = K * ts_round_up_i64(N, NR);
  float *ap = ts_cpu_alloc(sizeof(float) * (size_t)ap_n);
  float *bp = ts_cpu_alloc(sizeof(float) * (size_t)bp_n);

  for (int dt = 0; dt < 3; dt++) { /* f32, bf16, f16 */
    /* exact expectations: the 16-bit inputs are what the f32 values round to */
    float *ea = g_new(float, M * lda), *eb = g_new(float, K * ldb);
    for (int64_t i = 0; i < M * lda; i++) {
      a16[i] = dt == 1 ? ts_cpu_f32_to_bf16(a[i]) : ts_cpu_f32_to_f16(a[i]);
      ea[i] = dt == 0 ? a[i] : dt == 1 ? ts_cpu_bf16_to_f32(a16[i]) : ts_cpu_f16_to_f32(a16[i]);
    }
    for (int64_t i = 0; i < K * ldb; i++) {
      b16[i] = dt == 1 ? ts_cpu_f32_to_bf16(b[i]) : ts_cpu_f32_to_f16(b[i]);
      eb[i] = dt == 0 ? b[i] : dt == 1 ? ts_cpu_bf16_to_f32(b16[i]) : ts_cpu_f16_to_f32(b16[i]);
    }
    for (int64_t i = 0; i < ap_n; i++)
      ap[i] = NAN;
    for (int64_t i = 0; i < bp_n; i++)
      bp[i] = NAN;
    if (dt == 0) {
      ts_pack_a_block_f32(a, lda, M, K, MR, ap);
      ts_pack_b_block_f32(b, ldb, K, N, NR, bp);
    } else if (dt == 1) {
      ts_pack_a_block_bf16(a16, lda, M, K, MR, ap);
      ts_pack_b_block_bf16(b16, ldb, K, N, NR, bp);
    } else {
      ts_pack_a_block_f16(a16, lda, M, K, MR, ap);
      ts_pack_b_block_f16(b16, ldb, K, N, NR, bp);
    }
    for (int64_t p = 0; p < ts_ceil_div_i64(M, MR); p++)
      for (int64_t k = 0; k < K; k++)
        for (int64_t i = 0; i < MR; i++) {
          int64_t row = p * MR + i;
          float want = row < M ? ea[row * lda + k] : 0.0f;
          g_assert_cmpfloat(ap[p * MR * K + k * MR + i], ==, want);
        }
    for (int64_t p = 0; p < ts_ceil_div_i64(N, NR); p++)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < NR; j++) {
          int64_t col = p * NR + j;
          float want = col < N ? eb[k * ldb + col] : 0.0f;
          g_assert_cmpfloat(bp[p * NR * K + k * NR + j], ==, want);
        }
    /* the per-panel packers agree with the per-block ones on a ragged panel */
    float *one = ts_cpu_alloc(sizeof(float) * (size_t)(MR * K));
    if (dt == 0)
      ts_pack_a_panel_f32(a + MR * lda, lda, M - MR, K, MR, one);
    else if (dt == 1)
      ts_pack_a_panel_bf16(a16 + MR * lda, lda, M - MR, K, MR, one);
    else
      ts_pack_a_panel_f16(a16 + MR * lda, lda, M - MR, K, MR, one);
    g_assert_cmpmem(one, sizeof(float) * (size_t)(MR * K), ap + MR * K,
                    sizeof(float) * (size_t)(MR * K));
    ts_cpu_free(one);
    g_free(ea);
    g_free(eb);
  }
  g_free(a);
  g_free(b);
  g_free(a16);
  g_free(b16);
  ts_cpu_free(ap);
  ts_cpu_free(bp);
}

static void
test_pack(void)
{
  GRand *rng = g_rand_new_with_seed(2);
  check_pack(rng, 11, 13, 19, 6, 8);
  /* A panels of up to 16 rows take 16 steps at a time where AVX-512 transposes them: every
   * row count, whole and ragged panels, a remainder of steps */
  for (int64_t mr = 1; mr <= 17; mr++)
    check_pack(rng, mr > 1 ? 2 * mr - 1 : 2, 16 * 3 + 5, 9, mr, 8);
  /* the f16 A packer's 256-column chunking */
  {
    const int64_t kc = 600, mr = 3;
    uint16_t *h = g_new(uint16_t, mr * kc);
    float *p = ts_cpu_alloc(sizeof(float) * (size_t)(4 * kc));
    for (int64_t i = 0; i < mr * kc; i++)
      h[i] = ts_cpu_f32_to_f16((float)g_rand_double_range(rng, -4, 4));
    ts_pack_a_panel_f16(h, kc, mr, kc, 4, p);
    for (int64_t k = 0; k < kc; k++)
      for (int64_t i = 0; i < 4; i++)
        g_assert_cmpfloat(p[k * 4 + i], ==, i < mr ? ts_cpu_f16_to_f32(h[i * kc + k]) : 0.0f);
    g_free(h);
    ts_cpu_free(p);
  }
  g_rand_free(rng);
}

/* ---- dtype conversions ---------------------------------------------------------------------- */

static float
next_up(float x)
{
  return nextafterf(x, INFINITY);
}

static float
next_down(float x)
{
  return nextafterf(x, -INFINITY);
}

/* The OCP fp8 value of pattern b, from the definition: bias 2^(e-1) - 1, subnormals at
 * exponent 1 - bias; e4m3's only NaN is S.1111.111 (no Inf), e5m2's top exponent is Inf/NaN. */
static double
fp8_definition(uint8_t b, int ebits, int mbits)
{
  const int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
  const int e = (b & 0x7f) >> mbits, m = b & ((1 << mbits) - 1);
  double v;
  if (ebits == 4 && (b & 0x7f) == 0x7f)
    v = NAN;
  else if (ebits == 5 && e == emax)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp(m, 1 - bias - mbits);
  else
    v = ldexp(m + (1 << mbits), e - bias - mbits);
  return (b & 0x80) ? -v : v;
}

static void
test_fp8_scalar(void)
{
  for (uint32_t b = 0; b < 256; b++) {
    const double want4 = fp8_definition((uint8_t)b, 4, 3), want5 = fp8_definition((uint8_t)b, 5, 2);
    const float got4 = ts_cpu_e4m3_to_f32((uint8_t)b), got5 = ts_cpu_e5m2_to_f32((uint8_t)b);
    if (isnan(want4))
      g_assert_true(isnan(got4));
    else
      g_assert_cmpfloat(got4, ==, want4);
    if (isnan(want5))
      g_assert_true(isnan(got5));
    else
      g_assert_cmpfloat(got5, ==, want5);
    g_assert_cmpint(!!signbit(got4), ==, !!(b & 0x80));
    g_assert_cmpint(!!signbit(got5), ==, !!(b & 0x80));
  }
  g_assert_cmpfloat(ts_cpu_e4m3_to_f32(0x7e), ==, 448.0f);
  g_assert_cmpfloat(ts_cpu_e4m3_to_f32(0x01), ==, 0x1p-9f);
  g_assert_cmpfloat(ts_cpu_e5m2_to_f32(0x7b), ==, 57344.0f);
  g_assert_cmpfloat(ts_cpu_e5m2_to_f32(0x01), ==, 0x1p-16f);

  /* packing widens them like the other dtypes: a 3 x 5 panel of e4m3, rows past 3 zero */
  uint8_t a[3 * 5];
  for (int i = 0; i < 15; i++)
    a[i] = (uint8_t)(0x20 + 5 * i); /* finite in both formats */
  float ap[4 * 5];
  ts_pack_a_panel_e4m3(a, 5, 3, 5, 4, ap);
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < 4; i++)
      g_assert_cmpfloat(ap[k * 4 + i], ==, i < 3 ? ts_cpu_e4m3_to_f32(a[i * 5 + k]) : 0.0f);
  float bp[5 * 4];
  ts_pack_b_panel_e5m2(a, 3, 5, 3, 4, bp);
  for (int k = 0; k < 5; k++)
    for (int j = 0; j < 4; j++)
      g_assert_cmpfloat(bp[k * 4 + j], ==, j < 3 ? ts_cpu_e5m2_to_f32(a[k * 3 + j]) : 0.0f);
  /* K-major B (fp8 gemm's [N, K]): the same panel from the transposed source, ld 5 */
  float bpt[5 * 4];
  ts_pack_bt_panel_e4m3(a, 5, 5, 3, 4, bpt);
  for (int k = 0; k < 5; k++)
    for (int j = 0; j < 4; j++)
      g_assert_cmpfloat(bpt[k * 4 + j], ==, j < 3 ? ts_cpu_e4m3_to_f32(a[j * 5 + k]) : 0.0f);
  float x[3] = {1.0f, -2.0f, 0.5f};
  ts_scale_f32(x, 3, 0.25f);
  g_assert_cmpfloat(x[1], ==, -0.5f);
}

static void
test_f16_scalar(void)
{
  /* every f16 pattern survives f16 -> f32 -> f16 (NaNs stay NaN) */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = ts_cpu_f16_to_f32((uint16_t)h);
    uint16_t back = ts_cpu_f32_to_f16(f);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
      g_assert_true(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff));
    else
      g_assert_cmpuint(back, ==, h);
  }
  /* subnormals and exponents decoded exactly */
  g_assert_cmpfloat(ts_cpu_f16_to_f32(0x0001), ==, 0x1p-24f);
  g_assert_cmpfloat(ts_cpu_f16_to_f32(0x03ff), ==, 1023 * 0x1p-24f);
  g_assert_cmpfloat(ts_cpu_f16_to_f32(0x3c00), ==, 1.0f);
  g_assert_cmpfloat(ts_cpu_f16_to_f32(0x7bff), ==, 65504.0f);
  g_assert_true(signbit(ts_cpu_f16_to_f32(0x8000)));
  /* round to nearest even at every midpoint between consecutive positive finite f16 values
   * (h, h+1), including the subnormal range and the overflow threshold 65520 */
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double lo = ts_cpu_f16_to_f32((uint16_t)h);
    double hi = h + 1 == 0x7c00 ? 65536.0 : ts_cpu_f16_to_f32((uint16_t)(h + 1));
    float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    g_assert_cmpuint(ts_cpu_f32_to_f16(mid), ==, even);
    g_assert_cmpuint(ts_cpu_f32_to_f16(next_down(mid)), ==, h);
    g_assert_cmpuint(ts_cpu_f32_to_f16(next_up(mid)), ==, h + 1);
    g_assert_cmpuint(ts_cpu_f32_to_f16(-next_up(mid)), ==, 0x8000 | (h + 1));
  }
  g_assert_cmpuint(ts_cpu_f32_to_f16(1e10f), ==, 0x7c00);
  g_assert_cmpuint(ts_cpu_f32_to_f16(-INFINITY), ==, 0xfc00);
  g_assert_cmpuint(ts_cpu_f32_to_f16(1e-30f), ==, 0);
  g_assert_true((ts_cpu_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
}

static void
test_bf16_scalar(void)
{
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = ts_cpu_bf16_to_f32((uint16_t)h);
    uint16_t back = ts_cpu_f32_to_bf16(f);
    if (isnan(f))
      g_assert_true(isnan(ts_cpu_bf16_to_f32(back)));
    else
      g_assert_cmpuint(back, ==, h);
    /* midpoint to the next pattern up (same sign): ties to even, neighbours to the nearest */
    if ((h & 0x7fff) < 0x7f7f) {
      uint32_t mid = ((uint32_t)h << 16) | 0x8000u;
      uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
      g_assert_cmpuint(ts_cpu_f32_to_bf16(ts_cpu_bits_f32(mid)), ==, even);
      g_assert_cmpuint(ts_cpu_f32_to_bf16(ts_cpu_bits_f32(mid - 1)), ==, h);
      g_assert_cmpuint(ts_cpu_f32_to_bf16(ts_cpu_bits_f32(mid + 1)), ==, h + 1);
    }
  }
  g_assert_cmpuint(ts_cpu_f32_to_bf16(3.4e38f), ==, 0x7f80); /* rounds past the max: Inf */
  g_assert_true(isnan(ts_cpu_bf16_to_f32(ts_cpu_f32_to_bf16(ts_cpu_bits_f32(0x7f800001u)))));
}

/* Values that exercise every conversion path: random over many binades, specials, ties. */
static float *
conversion_inputs(size_t *n_out)
{
  GRand *rng = g_rand_new_with_seed(3);
  size_t n = 4099; /* not a multiple of 8: exercises the scalar tails */
  float *x = g_new(float, n);
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 65519.996f, 0x1p-24f,
                            0x1p-25f, 0x1.8p-25f, 0x1p-14f, INFINITY, -INFINITY, NAN, 3.4e38f,
                            1.00390625f, 1.01171875f, 1e-40f};
  /* NaNs whose payload a rounding increment would carry into the exponent or the sign, a
   * signalling one, the largest finite value (rounds to Inf) and bf16 ties to even, down and up */
  const uint32_t bits[] = {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0xffbfffffu, 0x7fbfffffu,
                           0x7f7fffffu, 0x3f808000u, 0x3f818000u, 0xbf818000u};
  const size_t n_special = G_N_ELEMENTS(specials) + G_N_ELEMENTS(bits);
  for (size_t i = 0; i < n; i++) {
    if (i < G_N_ELEMENTS(specials))
      x[i] = specials[i];
    else if (i < n_special)
      memcpy(&x[i], &bits[i - G_N_ELEMENTS(specials)], sizeof(float));
    else
      x[i] = (float)(g_rand_double_range(rng, -1, 1) * exp2(g_rand_int_range(rng, -30, 20)));
  }
  g_rand_free(rng);
  *n_out = n;
  return x;
}

static void
test_store_convert(void)
{
  size_t n;
  float *x = conversion_inputs(&n);
  uint16_t *h = g_new(uint16_t, n), *b = g_new(uint16_t, n);
  ts_store_f32_as_f16(x, h, (int64_t)n);
  ts_store_f32_as_bf16(x, b, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    if (isnan(x[i])) {
      g_assert_true(isnan(ts_cpu_f16_to_f32(h[i])) && isnan(ts_cpu_bf16_to_f32(b[i])));
      continue;
    }
    g_assert_cmpuint(h[i], ==, ts_cpu_f32_to_f16(x[i]));
    g_assert_cmpuint(b[i], ==, ts_cpu_f32_to_bf16(x[i]));
  }
  g_free(x);
  g_free(h);
  g_free(b);
}

/* ---- row vectors --------------------------------------------------------------------------- */

static void
test_vec_load_store(void)
{
  size_t n;
  float *x = conversion_inputs(&n);
  /* unaligned on purpose: +1 element */
  uint16_t *h = g_new0(uint16_t, n + 1), *b = g_new0(uint16_t, n + 1);
  float *f = g_new0(float, n + 1);
  for (size_t i = 0; i + TS_VEC <= n; i += TS_VEC) {
    ts_vf v = ts_vf_load_f32(x + i);
    ts_vf_store_f32(f + 1 + i, v);
    ts_vf_store_f16(h + 1 + i, v);
    ts_vf_store_bf16(b + 1 + i, v);
    ts_vf vh = ts_vf_load_f16(h + 1 + i), vb = ts_vf_load_bf16(b + 1 + i);
    for (int l = 0; l < TS_VEC; l++) {
      float xi = x[i + (size_t)l];
      if (isnan(xi)) {
        g_assert_true(isnan(vh[l]) && isnan(vb[l]) && isnan(f[1 + i + (size_t)l]));
        continue;
      }
      g_assert_cmpmem(&f[1 + i + (size_t)l], 4, &xi, 4);
      g_assert_cmpuint(h[1 + i + (size_t)l], ==, ts_cpu_f32_to_f16(xi));
      g_assert_cmpuint(b[1 + i + (size_t)l], ==, ts_cpu_f32_to_bf16(xi));
      g_assert_cmpfloat(vh[l], ==, ts_cpu_f16_to_f32(ts_cpu_f32_to_f16(xi)));
      g_assert_cmpfloat(vb[l], ==, ts_cpu_bf16_to_f32(ts_cpu_f32_to_bf16(xi)));
    }
  }
  /* A vector of subnormals alone, and one with a single subnormal lane among normal ones: the
   * hardware conversion (vcvtneps2bf16, where the machine has it) flushes them, so these must
   * take the exact path. */
  for (int pattern = 0; pattern < 2; pattern++) {
    float in[TS_VEC];
    uint16_t out[TS_VEC];
    for (int l = 0; l < TS_VEC; l++)
      in[l] = pattern == 0 ? 0x1.37p-130f * (float)(l + 1) : 1.0f + 0.001f * (float)l;
    if (pattern == 1)
      in[TS_VEC / 2] = -0x1.fffffcp-127f;
    ts_vf_store_bf16(out, ts_vf_load_f32(in));
    for (int l = 0; l < TS_VEC; l++)
      g_assert_cmpuint(out[l], ==, ts_cpu_f32_to_bf16(in[l]));
  }
  g_free(x);
  g_free(h);
  g_free(b);
  g_free(f);
}

/* Lane pairs: ts_vf_load2_bf16 gives the even- and odd-indexed values of 2 * TS_VEC, and
 * ts_vf_store2_bf16 / ts_vf_stream2_bf16 write two such vectors back in order, rounded exactly
 * as ts_cpu_f32_to_bf16 rounds: every conversion input (NaN, Inf, ties, subnormals), then
 * pairs with subnormal lanes, which the hardware conversion would flush. */
static void
check_store2(const float *in, size_t n)
{
  uint16_t *out = ts_cpu_alloc(sizeof(uint16_t) * (2 * TS_VEC + 1));
  for (int stream = 0; stream < 2; stream++)
    for (size_t i = 0; i + 2 * TS_VEC <= n; i += 2 * TS_VEC) {
      float even[TS_VEC], odd[TS_VEC];
      for (int l = 0; l < TS_VEC; l++) {
        even[l] = in[i + 2 * (size_t)l];
        odd[l] = in[i + 2 * (size_t)l + 1];
      }
      /* aligned (non-temporal where the target has it) and one element off */
      uint16_t *dst = out + (stream ? 0 : 1);
      if (stream)
        ts_vf_stream2_bf16(dst, ts_vf_load_f32(even), ts_vf_load_f32(odd));
      else
        ts_vf_store2_bf16(dst, ts_vf_load_f32(even), ts_vf_load_f32(odd));
      ts_stream_fence();
      for (size_t l = 0; l < 2 * TS_VEC; l++)
        g_assert_cmpuint(dst[l], ==, ts_cpu_f32_to_bf16(in[i + l]));
    }
  ts_cpu_free(out);
}

/* f16 vector pairs: ts_vf_load2_f16 gives 2 * TS_VEC values in order as two vectors, and
 * ts_vf_store2_f16 / ts_vf_stream2_f16 write them back in order in one store, rounded as
 * ts_cpu_f32_to_f16 rounds (every conversion input), aligned and one element off. */
static void
test_vec_f16_pairs(void)
{
  size_t n;
  float *x = conversion_inputs(&n);
  uint16_t *h = ts_cpu_alloc(sizeof(uint16_t) * (n + 1));
  uint16_t *out = ts_cpu_alloc(sizeof(uint16_t) * (2 * TS_VEC + 1));
  for (size_t i = 0; i < n; i++)
    h[1 + i] = ts_cpu_f32_to_f16(x[i]);
  for (size_t i = 0; i + 2 * TS_VEC <= n; i += 2 * TS_VEC) {
    ts_vf e, o;
    ts_vf_load2_f16(h + 1 + i, &e, &o);
    for (int l = 0; l < 2 * TS_VEC; l++) {
      const float want = ts_cpu_f16_to_f32(h[1 + i + (size_t)l]);
      const float got = l < TS_VEC ? e[l] : o[l - TS_VEC];
      g_assert_cmpmem(&got, 4, &want, 4);
    }
    ts_vf a, b;
    memcpy(&a, x + i, sizeof a);
    memcpy(&b, x + i + TS_VEC, sizeof b);
    for (int stream = 0; stream < 2; stream++) {
      uint16_t *dst = out + (stream ? 0 : 1);
      memset(out, 0, sizeof(uint16_t) * (2 * TS_VEC + 1));
      if (stream)
        ts_vf_stream2_f16(dst, a, b);
      else
        ts_vf_store2_f16(dst, a, b);
      ts_stream_fence();
      for (size_t l = 0; l < 2 * TS_VEC; l++)
        g_assert_cmphex(dst[l], ==, ts_cpu_f32_to_f16(x[i + l]));
    }
  }
  ts_cpu_free(out);
  ts_cpu_free(h);
  g_free(x);
}

static void
test_vec_lane_pairs(void)
{
  size_t n;
  float *x = conversion_inputs(&n);
  uint16_t *b = g_new0(uint16_t, n + 1);
  for (size_t i = 0; i < n; i++)
    b[1 + i] = ts_cpu_f32_to_bf16(x[i]);
  for (size_t i = 0; i + 2 * TS_VEC <= n; i += 2 * TS_VEC) {
    ts_vf e, o;
    ts_vf_load2_bf16(b + 1 + i, &e, &o);
    for (int l = 0; l < TS_VEC; l++) {
      float we = ts_cpu_bf16_to_f32(b[1 + i + 2 * (size_t)l]);
      float wo = ts_cpu_bf16_to_f32(b[1 + i + 2 * (size_t)l + 1]);
      float ge = e[l], go = o[l];
      g_assert_cmpmem(&ge, 4, &we, 4);
      g_assert_cmpmem(&go, 4, &wo, 4);
    }
  }
  check_store2(x, n);
  float in[2 * TS_VEC];
  for (int pattern = 0; pattern < 3; pattern++) {
    for (int l = 0; l < 2 * TS_VEC; l++)
      in[l] = pattern == 0 ? 0x1.37p-130f * (float)(l + 1) : 1.0f + 0.001f * (float)l;
    if (pattern > 0) /* one subnormal lane, in the even vector, then in the odd one */
      in[TS_VEC + pattern - 1] = -0x1.fffffcp-127f;
    check_store2(in, 2 * TS_VEC);
  }
  /* one NaN among numbers, in each position of the pair (the even vector's lanes, then the
   * odd one's), with a payload that a rounding increment would carry into the sign: each half
   * must take the NaN's rounding when only the other half holds it */
  for (int at = 0; at < 2 * TS_VEC; at++) {
    for (int l = 0; l < 2 * TS_VEC; l++)
      in[l] = l == at ? ts_cpu_bits_f32(0xffffffffu) : 1.0f + 0x1p-9f * (float)l;
    check_store2(in, 2 * TS_VEC);
  }
  g_free(x);
  g_free(b);
}

static void
test_vec_reduce(void)
{
  float x[TS_VEC];
  for (int i = 0; i < TS_VEC; i++)
    x[i] = (float)(i * 3 % 7) - 2.5f; /* small integers + .5: sums exact */
  ts_vf v = ts_vf_load_f32(x);
  float sum = 0, mx = -INFINITY;
  for (int i = 0; i < TS_VEC; i++) {
    sum += x[i];
    mx = fmaxf(mx, x[i]);
  }
  g_assert_cmpfloat(ts_vf_hsum(v), ==, sum);
  g_assert_cmpfloat(ts_vf_hmax(v), ==, mx);
  g_assert_cmpfloat(ts_vf_hmax(ts_vf_splat(-INFINITY)), ==, -INFINITY);
  g_assert_cmpfloat(ts_vf_hsum(ts_vf_splat(0.25f)), ==, 0.25f * TS_VEC);
  /* -0.0 splat keeps its sign (the splat is a broadcast, not 0 + x) */
  g_assert_true(signbit(ts_vf_splat(-0.0f)[TS_VEC - 1]));

  ts_vf a = ts_vf_load_f32(x), b = ts_vf_splat(0.0f);
  ts_vf m = ts_vf_max(a, b), n = ts_vf_min(a, b), s = ts_vf_sqrt(ts_vf_max(a, b));
  for (int i = 0; i < TS_VEC; i++) {
    g_assert_cmpfloat(m[i], ==, fmaxf(x[i], 0.0f));
    g_assert_cmpfloat(n[i], ==, fminf(x[i], 0.0f));
    g_assert_cmpfloat(s[i], ==, sqrtf(fmaxf(x[i], 0.0f)));
  }
  g_assert_true(isnan(ts_vf_sqrt(ts_vf_splat(-1.0f))[0]));
  /* a > b ? a : b exactly, as the instruction: NaN in either gives b, and of two zeros b. */
  ts_vf nan = ts_vf_splat(NAN), one = ts_vf_splat(1.0f);
  g_assert_cmpfloat(ts_vf_max(nan, one)[0], ==, 1.0f);
  g_assert_true(isnan(ts_vf_max(one, nan)[TS_VEC - 1]));
  g_assert_cmpfloat(ts_vf_min(nan, one)[0], ==, 1.0f);
  g_assert_true(isnan(ts_vf_min(one, nan)[TS_VEC - 1]));
  g_assert_true(signbit(ts_vf_max(ts_vf_splat(0.0f), ts_vf_splat(-0.0f))[0]));
  g_assert_true(!signbit(ts_vf_min(ts_vf_splat(-0.0f), ts_vf_splat(0.0f))[0]));
}

static void
test_vec_exp(void)
{
  /* relative error against libm's double exp over [-87, 88], 2e-7 bound; vector and scalar
   * bit-identical */
  double max_rel = 0;
  float worst = 0;
  const int64_t steps = 1 << 21;
  for (int64_t i = 0; i < steps; i += TS_VEC) {
    float xs[TS_VEC];
    for (int l = 0; l < TS_VEC; l++)
      xs[l] = -87.0f + (float)(175.0 * (double)(i + l) / (double)steps);
    ts_vf y = ts_vf_exp(ts_vf_load_f32(xs));
    for (int l = 0; l < TS_VEC; l++) {
      double ref = exp((double)xs[l]);
      double rel = fabs((double)y[l] - ref) / ref;
      if (rel > max_rel) {
        max_rel = rel;
        worst = xs[l];
      }
      float ys = ts_exp_f32(xs[l]);
      g_assert_cmpmem(&ys, 4, &((float *)&y)[l], 4);
    }
  }
  g_test_message("ts_vf_exp: max relative error %.3g at x = %.9g", max_rel, (double)worst);
  g_assert_cmpfloat(max_rel, <=, 2e-7);
  /* small |x| near 0, where exp(x) - 1 is tiny */
  for (float x = -1e-3f; x <= 1e-3f; x += 1.3e-6f)
    g_assert_cmpfloat(fabs(ts_exp_f32(x) - exp((double)x)) / exp((double)x), <=, 2e-7);
  /* subnormal results: absolute error within one subnormal ulp-ish (2^-149) + relative part;
   * the vector version (vscalefps on AVX-512) still bit-identical to the scalar one */
  for (float x = -103.0f; x < -87.0f; x += 0.01f) {
    double ref = exp((double)x);
    float ys = ts_exp_f32(x);
    g_assert_cmpfloat(fabs(ys - ref), <=, 2e-7 * ref + 0x1p-149);
    ts_vf yv = ts_vf_exp(ts_vf_splat(x));
    g_assert_cmpmem(&ys, 4, &((float *)&yv)[TS_VEC - 1], 4);
  }
  g_assert_cmpfloat(ts_exp_f32(0.0f), ==, 1.0f);
  g_assert_cmpfloat(ts_exp_f32(-INFINITY), ==, 0.0f);
  g_assert_cmpfloat(ts_exp_f32(-1000.0f), ==, 0.0f);
  g_assert_cmpfloat(ts_exp_f32(-110.0f), ==, 0.0f);
  g_assert_cmpfloat(ts_exp_f32(INFINITY), ==, INFINITY);
  g_assert_cmpfloat(ts_exp_f32(89.0f), ==, INFINITY);
  g_assert_true(isfinite(ts_exp_f32(88.7f)));
  g_assert_true(isnan(ts_exp_f32(NAN)));
  ts_vf sp = ts_vf_exp(ts_vf_splat(-INFINITY));
  g_assert_cmpfloat(sp[0], ==, 0.0f);
  g_assert_true(isnan(ts_vf_exp(ts_vf_splat(NAN))[TS_VEC - 1]));
  g_assert_cmpfloat(ts_vf_exp(ts_vf_splat(INFINITY))[1], ==, INFINITY);
}

/* The fast exp (softmax's math("fast"), for 16-bit results): within 6e-5 of libm's over
 * [-87, 88], vector and scalar bit-identical there, and the same special values as exp. */
static void
test_vec_exp_fast(void)
{
  double max_rel = 0;
  const int64_t steps = 1 << 20;
  for (int64_t i = 0; i < steps; i += TS_VEC) {
    float xs[TS_VEC];
    for (int l = 0; l < TS_VEC; l++)
      xs[l] = -87.0f + (float)(175.0 * (double)(i + l) / (double)steps);
    ts_vf y = ts_vf_exp_fast(ts_vf_load_f32(xs));
    for (int l = 0; l < TS_VEC; l++) {
      double ref = exp((double)xs[l]);
      max_rel = fmax(max_rel, fabs((double)y[l] - ref) / ref);
      float ys = ts_exp_fast_f32(xs[l]);
      g_assert_cmpmem(&ys, 4, &((float *)&y)[l], 4);
    }
  }
  g_test_message("ts_vf_exp_fast: max relative error %.3g", max_rel);
  g_assert_cmpfloat(max_rel, <=, 1e-5);
  g_assert_cmpfloat(max_rel, >, 2e-7); /* it is the short polynomial, not the full one */
  g_assert_cmpfloat(ts_exp_fast_f32(0.0f), ==, 1.0f);
  g_assert_cmpfloat(ts_exp_fast_f32(-INFINITY), ==, 0.0f);
  g_assert_cmpfloat(ts_exp_fast_f32(INFINITY), ==, INFINITY);
  g_assert_true(isnan(ts_exp_fast_f32(NAN)));
  g_assert_cmpfloat(ts_vf_exp_fast(ts_vf_splat(-INFINITY))[0], ==, 0.0f);
  g_assert_cmpfloat(ts_vf_exp_fast(ts_vf_splat(INFINITY))[1], ==, INFINITY);
  g_assert_true(isnan(ts_vf_exp_fast(ts_vf_splat(NAN))[TS_VEC - 1]));
  /* beyond the clamp, where the AVX-512 version takes another path */
  const float far[] = {-1e30f, -1000.0f, -161.0f, -110.0f, 89.0f, 90.0f, 1e30f};
  for (guint i = 0; i < G_N_ELEMENTS(far); i++) {
    float ys = ts_exp_fast_f32(far[i]);
    ts_vf yv = ts_vf_exp_fast(ts_vf_splat(far[i]));
    g_assert_cmpmem(&ys, 4, &((float *)&yv)[0], 4);
    g_assert_cmpfloat(ys, ==, far[i] < 0 ? 0.0f : INFINITY);
  }
}

/* Vectors where one lane is beyond what the exps' short path takes (a result that is not a
 * normal float: underflow, overflow, Inf, NaN) and the others are not: the whole vector takes
 * the long path and every lane keeps the scalar version's bits, whichever lane it is. The
 * values straddle the short paths' bounds (|x| <= 86 for exp, |x log2(e)| <= 125 for the fast
 * one), the first subnormal results, and the last nonzero ones next to the lanes the long path
 * sets to +0 without computing them (x < -104, x log2(e) < -152). */
static void
test_vec_exp_mixed(void)
{
  const float odd[] = {NAN,     -NAN,   INFINITY, -INFINITY, -1000.0f, -110.0f, -105.0f,
                       -104.0f, -103.9f, -103.5f,  -103.0f,  -100.0f,
                       -88.0f,  -87.4f, -87.0f,   -86.71f,   -86.6f,   -86.0f,  86.0f,
                       86.6f,   87.0f,  88.0f,    88.72f,    88.73f,   89.0f,   1e30f};
  /* NaNs whose low payload bits, were they added to an exponent field, would make a number */
  const uint32_t nan_bits[] = {0x7fc00001u, 0xffc001ffu, 0x7f800101u, 0x7fffffffu};
  const float plain[] = {0.0f, -1.0f, 2.5f, -40.0f, 30.0f, -85.9f, 85.9f, 1e-20f};
  for (guint k = 0; k < G_N_ELEMENTS(odd) + G_N_ELEMENTS(nan_bits); k++)
    for (int at = 0; at < TS_VEC; at++) {
      const float o = k < G_N_ELEMENTS(odd) ? odd[k] : ts_cpu_bits_f32(nan_bits[k - G_N_ELEMENTS(odd)]);
      float xs[TS_VEC];
      for (int l = 0; l < TS_VEC; l++)
        xs[l] = l == at ? o : plain[(l + k) % G_N_ELEMENTS(plain)];
      const ts_vf x = ts_vf_load_f32(xs);
      const ts_vf y = ts_vf_exp(x), yf = ts_vf_exp_fast(x);
      for (int l = 0; l < TS_VEC; l++) {
        const float ys = ts_exp_f32(xs[l]), yfs = ts_exp_fast_f32(xs[l]);
        if (isnan(ys)) {
          g_assert_true(isnan(y[l]) && isnan(yf[l]));
          continue;
        }
        g_assert_cmpmem(&ys, 4, &((const float *)&y)[l], 4);
        g_assert_cmpmem(&yfs, 4, &((const float *)&yf)[l], 4);
      }
    }
}

/* exp(x - m) with m folded into the reduction (softmax's exps): as accurate as exp_fast for
 * every m, large logits included (past 2^24 the low part of m log2(e) is subtracted instead of
 * scaling the polynomial: 1e8 and beyond), vector and scalar bit-identical, and -Inf logits
 * (masks) give 0. */
static void
test_vec_exp_fast_sub(void)
{
  const float ms[] = {0.0f,   1.5f, -3.25f, 100.0f, 1000.0f, -1000.0f, 123456.0f,
                      3e6f,   1e7f, 3e7f,   -1e8f,  3e9f,    1e30f};
  double max_rel = 0;
  for (guint k = 0; k < G_N_ELEMENTS(ms); k++) {
    const float m = ms[k];
    const int64_t steps = 1 << 16;
    for (int64_t i = 0; i < steps; i += TS_VEC) {
      float xs[TS_VEC];
      for (int l = 0; l < TS_VEC; l++)
        xs[l] = m - 87.0f + (float)(90.0 * (double)(i + l) / (double)steps);
      ts_vf y = ts_vf_exp_fast_sub(ts_vf_load_f32(xs), m);
      for (int l = 0; l < TS_VEC; l++) {
        double ref = exp((double)xs[l] - (double)m);
        max_rel = fmax(max_rel, fabs((double)y[l] - ref) / ref);
        float ys = ts_exp_fast_sub_f32(xs[l], m);
        g_assert_cmpmem(&ys, 4, &((float *)&y)[l], 4);
      }
    }
    /* the last nonzero results and the lanes the long path sets to +0 (t < -152) without
     * computing them, with this m's scale of the polynomial: bit-identical only */
    for (int64_t i = 0; i < 4096; i += TS_VEC) {
      float xs[TS_VEC];
      for (int l = 0; l < TS_VEC; l++)
        xs[l] = m - 108.0f + (float)(8.0 * (double)(i + l) / 4096.0);
      ts_vf y = ts_vf_exp_fast_sub(ts_vf_load_f32(xs), m);
      for (int l = 0; l < TS_VEC; l++) {
        float ys = ts_exp_fast_sub_f32(xs[l], m);
        g_assert_cmpmem(&ys, 4, &((float *)&y)[l], 4);
      }
    }
    /* exp(0) is 1 within the polynomial's error (exactly where m log2(e) is a float) */
    g_assert_cmpfloat(fabsf(ts_exp_fast_sub_f32(m, m) - 1.0f), <=, 4e-6f);
    if (m == 0.0f)
      g_assert_cmpfloat(ts_exp_fast_sub_f32(m, m), ==, 1.0f);
    g_assert_cmpfloat(ts_exp_fast_sub_f32(-INFINITY, m), ==, 0.0f);
    g_assert_cmpfloat(ts_vf_exp_fast_sub(ts_vf_splat(-INFINITY), m)[0], ==, 0.0f);
    g_assert_true(isnan(ts_vf_exp_fast_sub(ts_vf_splat(NAN), m)[TS_VEC - 1]));
    g_assert_true(isnan(ts_exp_fast_sub_f32(NAN, m)));
  }
  g_test_message("ts_vf_exp_fast_sub: max relative error %.3g", max_rel);
  g_assert_cmpfloat(max_rel, <=, 1e-5);
}

/* exp(x - m) for softmax into f16 (exp_fast_sub_h): the same bits as exp_fast_sub wherever
 * that is at least 2^-99 (t >= -100 with room), below it a normal float no larger than 2^-97
 * whose f16 after the softmax's scale (1 / a sum of about 1 or more: here 1 and 2^-16) is the
 * same 0;
 * -Inf logits the same, NaN kept, vector and scalar bit-identical. */
static void
test_vec_exp_fast_sub_h(void)
{
  const float ms[] = {0.0f, 1.5f, -3.25f, 100.0f, -1000.0f, 65504.0f, -65504.0f, 123456.0f, 1e8f};
  const float scales[] = {1.0f, 0x1p-16f};
  for (guint k = 0; k < G_N_ELEMENTS(ms); k++) {
    const float m = ms[k];
    const int64_t steps = 1 << 15;
    for (int64_t i = 0; i < steps; i += TS_VEC) {
      float xs[TS_VEC];
      for (int l = 0; l < TS_VEC; l++) /* x - m from -130 to 0 */
        xs[l] = m - 130.0f + (float)(130.0 * (double)(i + l + 1) / (double)steps);
      if (i == 0)
        xs[0] = -INFINITY;
      const ts_vf y = ts_vf_exp_fast_sub_h(ts_vf_load_f32(xs), m);
      for (int l = 0; l < TS_VEC; l++) {
        const float yv = ((const float *)&y)[l], ys = ts_exp_fast_sub_h_f32(xs[l], m);
        g_assert_cmpmem(&ys, 4, &yv, 4);
        const float exact = ts_exp_fast_sub_f32(xs[l], m);
        if (exact >= 0x1p-99f) {
          g_assert_cmpmem(&exact, 4, &yv, 4);
          continue;
        }
        g_assert_cmpfloat(yv, >=, FLT_MIN);
        g_assert_cmpfloat(yv, <=, 0x1p-97f);
        for (guint j = 0; j < G_N_ELEMENTS(scales); j++)
          g_assert_cmpuint(ts_cpu_f32_to_f16(yv * scales[j]), ==,
                           ts_cpu_f32_to_f16(exact * scales[j]));
      }
    }
    g_assert_cmpfloat(fabsf(ts_exp_fast_sub_h_f32(m, m) - 1.0f), <=, 4e-6f);
    g_assert_true(isnan(ts_vf_exp_fast_sub_h(ts_vf_splat(NAN), m)[TS_VEC - 1]));
    g_assert_true(isnan(ts_exp_fast_sub_h_f32(NAN, m)));
  }
}

/* A 16-bit float's bits as an integer that orders them as the floats, -0 below +0 */
static int32_t
key16(uint16_t h)
{
  return (h & 0x8000) ? -(int32_t)(h & 0x7fff) - 1 : (int32_t)h;
}

/* Maxes of f16 and bf16 vectors on their bits equal the maxes of the floats they hold: random
 * bit patterns (every sign, subnormals, zeros, infinities; NaNs left out), from the dtype's -Inf
 * as softmax starts. */
static void
test_vec_key_max(void)
{
  for (int bf = 0; bf <= 1; bf++) {
    const uint16_t neg_inf = bf ? 0xff80 : 0xfc00, exp_mask = bf ? 0x7f80 : 0x7c00;
    ts_vk acc = ts_vk_splat(neg_inf);
    float want_all = -INFINITY;
    for (guint32 trial = 0; trial < 20000; trial++) {
      uint16_t h[TS_VEC];
      float want = -INFINITY;
      for (int l = 0; l < TS_VEC; l++) {
        do
          h[l] = (uint16_t)(g_random_int() >> 7);
        while ((h[l] & exp_mask) == exp_mask && (h[l] & ~(exp_mask | 0x8000)) != 0);
        const float f = bf ? ts_cpu_bf16_to_f32(h[l]) : ts_cpu_f16_to_f32(h[l]);
        want = f > want ? f : want;
      }
      const ts_vk k = ts_vk_max(ts_vk_splat(neg_inf), ts_vk_load(h));
      const uint16_t got = ts_vk_hmax_bits(k);
      g_assert_cmpfloat(bf ? ts_cpu_bf16_to_f32(got) : ts_cpu_f16_to_f32(got), ==, want);
      acc = ts_vk_max(acc, k);
      want_all = want > want_all ? want : want_all;
    }
    const uint16_t all = ts_vk_hmax_bits(acc);
    g_assert_cmpfloat(bf ? ts_cpu_bf16_to_f32(all) : ts_cpu_f16_to_f32(all), ==, want_all);
    g_assert_cmpuint(ts_vk_hmax_bits(ts_vk_splat(neg_inf)), ==, neg_inf);
    /* +0 above -0, and negatives ordered by magnitude */
    const uint16_t pair[2][TS_VEC] = {{0x8000}, {0}};
    g_assert_cmpuint(ts_vk_hmax_bits(ts_vk_max(ts_vk_load(pair[0]), ts_vk_load(pair[1]))), ==, 0);
    const uint16_t neg[2] = {(uint16_t)(bf ? 0xbf80 : 0xbc00), 0xc000};
    g_assert_cmpuint(ts_vk_hmax_bits(ts_vk_max(ts_vk_splat(neg[0]), ts_vk_splat(neg[1]))), ==,
                     neg[0]); /* -1 above -2 */
    /* Bit for bit, NaNs and signed zeros included, against a max over keys that order the bits
     * as the floats (-0 below +0, NaNs beyond the infinities), from -Inf: rows of mixed signs,
     * of negatives only (the other half of the bookkeeping), of zeros of both signs, of
     * infinities and NaNs. */
    for (guint32 trial = 0; trial < 40000; trial++) {
      const guint mode = trial % 4;
      ts_vk k = ts_vk_splat(neg_inf);
      int32_t want = key16(neg_inf);
      for (guint v = 0; v < 1 + trial % 3; v++) {
        uint16_t h[TS_VEC];
        for (int l = 0; l < TS_VEC; l++) {
          uint16_t x = (uint16_t)g_random_int();
          if (mode == 1)
            x |= 0x8000;
          else if (mode == 2 && g_random_int_range(0, 4) == 0)
            x = g_random_boolean() ? 0x8000 : 0;
          else if (mode == 3)
            x = (uint16_t)((x & 0x8003) | exp_mask);
          h[l] = x;
          want = MAX(want, key16(x));
        }
        k = ts_vk_max(k, ts_vk_load(h));
      }
      g_assert_cmpint(key16(ts_vk_hmax_bits(k)), ==, want);
    }
  }
}

static void
test_alloc(void)
{
  const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 1 << 20};
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    void *p = ts_cpu_alloc(sizes[i]);
    g_assert_nonnull(p);
    g_assert_cmpuint((uintptr_t)p % 64, ==, 0);
    memset(p, 0xab, sizes[i]);
    ts_cpu_free(p);
  }
  g_assert_null(ts_cpu_alloc(SIZE_MAX - 10));
}

/* ---- the example driver ------------------------------------------------------------------ */

typedef void (*GemmEntry)(void *const *, const int64_t *, const double *);

static void
run_example(GemmEntry entry, const char *name)
{
  static const int64_t shapes[][3] = {
    {1, 1, 1},   {1, 37, 5},   {29, 1, 3},    {7, 13, 5},     {37, 29, 300},
    {50, 8, 16}, {6, 16, 256}, {130, 67, 517}, {200, 301, 40}, {97, 530, 33},
  };
  GRand *rng = g_rand_new_with_seed(4);
  for (guint s = 0; s < G_N_ELEMENTS(shapes); s++) {
    int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    float *a = g_new(float, m * k), *b = g_new(float, k * n), *c = g_new(float, m * n);
    fill_random(a, (size_t)(m * k), rng);
    fill_random(b, (size_t)(k * n), rng);
    for (int64_t i = 0; i < m * n; i++)
      c[i] = NAN; /* every element must be written (accumulate=0 on the first K block) */
    void *bufs[3] = {a, b, c};
    int64_t ints[3] = {m, n, k};
    entry(bufs, ints, NULL);
    g_autofree char *what = g_strdup_printf("%s M=%" G_GINT64_FORMAT " N=%" G_GINT64_FORMAT
                                            " K=%" G_GINT64_FORMAT, name, m, n, k);
    check_gemm(c, n, NULL, a, k, b, n, m, n, k, what);
    g_free(a);
    g_free(b);
    g_free(c);
  }
  g_rand_free(rng);
}

static void
test_example_default(void)
{
  run_example(gemm_default, "default 6x16 v8, 2 threads");
}

static void
test_example_small(void)
{
  run_example(gemm_small, "4x8 v4, KC=7 MC=10 NC=24, 3 threads");
}

static void
test_example_wide(void)
{
  run_example(gemm_wide, "8x24 v8, KC=33 MC=20 NC=50, 1 thread");
}

static void
test_example_zmm(void)
{
  run_example(gemm_zmm, "14x32 v16, KC=45 MC=42 NC=96, 2 threads");
}

#if TS_TEST_VEC == 8 && defined(__x86_64__)
/* The micro-kernel's k step holds B in registers: GCC tuning for AMD's Zen otherwise folds each
 * B load into the FMAs of every row (4 loads of a vector where one will do), which cost 4x16 a
 * third of its rate on a Zen 3 core (Intel tunings do not fold). Compiled by the compiler
 * kernels are built with ($TS_CC, else cc) for Zen 3, the 4x16 kernel's FMAs must take B from
 * registers. */
static void
test_ukr_b_in_registers(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("ts-ukr-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *src = g_build_filename(dir, "k.c", NULL);
  g_autofree char *out = g_build_filename(dir, "k.s", NULL);
  g_assert_true(g_file_set_contents(src,
                                    "#define TS_UKR_LINKAGE\n#include \"ts_cpu_prims.h\"\n"
                                    "TS_DEFINE_UKR_F32(ukr_4x16, 4, 16, 8, 8);\n",
                                    -1, &error));
  g_autofree char *inc = g_test_build_filename(G_TEST_DIST, "..", "runtime", "cpu", NULL);
  g_autofree char *inc_arg = g_strconcat("-I", inc, NULL);
  g_auto(GStrv) cc = NULL;
  const char *env_cc = g_getenv("TS_CC");
  if (env_cc == NULL || !g_shell_parse_argv(env_cc, NULL, &cc, NULL))
    cc = g_strsplit("cc", " ", -1);
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)cc);
  const char *args[] = {"-O3", "-march=znver3", "-std=gnu17", "-ffp-contract=fast", "-S",
                        inc_arg, "-o", out, src, NULL};
  g_strv_builder_addv(b, args);
  g_auto(GStrv) argv = g_strv_builder_end(b);
  g_autofree char *err = NULL;
  int status = 0;
  g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
                             NULL, NULL, NULL, &err, &status, &error));
  g_assert_no_error(error);
  if (!g_spawn_check_wait_status(status, NULL))
    g_error("%s failed: %s", argv[0], err);
  g_autofree char *asm_text = NULL;
  g_assert_true(g_file_get_contents(out, &asm_text, NULL, &error));
  guint fmas = 0, from_memory = 0;
  g_auto(GStrv) lines = g_strsplit(asm_text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *l = g_strstrip(lines[i]);
    if (!g_str_has_prefix(l, "vfmadd"))
      continue;
    fmas++;
    from_memory += strchr(l, '(') != NULL; /* AT&T syntax: a memory operand has parentheses */
  }
  g_test_message("%u FMAs, %u with a memory operand", fmas, from_memory);
  g_assert_cmpuint(fmas, >=, 64); /* 8 accumulators, the k loop unrolled 8 times */
  g_assert_cmpuint(from_memory * 4, <, fmas);
  ts_test_remove_tree(dir);
}
#endif

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cpu-prims/ukr/shapes", test_ukr_shapes);
#if TS_TEST_VEC == 8 && defined(__x86_64__)
  g_test_add_func("/cpu-prims/ukr/b-in-registers", test_ukr_b_in_registers);
#endif
  g_test_add_func("/cpu-prims/ukr/a-rows", test_ukr_a_rows);
  g_test_add_func("/cpu-prims/pack", test_pack);
  g_test_add_func("/cpu-prims/bf16dot/pack", test_bf16dot_pack);
  g_test_add_func("/cpu-prims/bf16dot/ukr", test_bf16dot_ukr);
  g_test_add_func("/cpu-prims/convert/f16-scalar", test_f16_scalar);
  g_test_add_func("/cpu-prims/convert/fp8-scalar", test_fp8_scalar);
  g_test_add_func("/cpu-prims/convert/bf16-scalar", test_bf16_scalar);
  g_test_add_func("/cpu-prims/convert/store", test_store_convert);
  g_test_add_func("/cpu-prims/vec/load-store", test_vec_load_store);
  g_test_add_func("/cpu-prims/vec/lane-pairs", test_vec_lane_pairs);
  g_test_add_func("/cpu-prims/vec/f16-pairs", test_vec_f16_pairs);
  g_test_add_func("/cpu-prims/vec/reduce", test_vec_reduce);
  g_test_add_func("/cpu-prims/vec/exp", test_vec_exp);
  g_test_add_func("/cpu-prims/vec/exp-fast", test_vec_exp_fast);
  g_test_add_func("/cpu-prims/vec/exp-fast-sub", test_vec_exp_fast_sub);
  g_test_add_func("/cpu-prims/vec/exp-fast-sub-h", test_vec_exp_fast_sub_h);
  g_test_add_func("/cpu-prims/vec/exp-mixed", test_vec_exp_mixed);
  g_test_add_func("/cpu-prims/vec/key-max", test_vec_key_max);
  g_test_add_func("/cpu-prims/alloc", test_alloc);
  g_test_add_func("/cpu-prims/example/default", test_example_default);
  g_test_add_func("/cpu-prims/example/small", test_example_small);
  g_test_add_func("/cpu-prims/example/wide", test_example_wide);
  g_test_add_func("/cpu-prims/example/zmm", test_example_zmm);
  return g_test_run();
}
