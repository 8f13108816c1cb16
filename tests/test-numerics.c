/* test-numerics.c — host numerics: bf16/f16/fp8 conversions checked exhaustively and against
 * an independent nearest-value oracle, buffer helpers, the f64 references on hand-checked cases,
 * and the relative-error verdict.
 */
#include "ts-numerics.h"

#include <math.h>
#include <string.h>

static uint32_t
bits_of(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float
float_of(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- independent oracles: values from the format's definition, not from the code ---- */

typedef struct {
  int mant_bits, bias;
  uint16_t max_finite; /* largest finite positive pattern */
} Format;

static const Format f16_fmt = {10, 15, 0x7bff};
static const Format bf16_fmt = {7, 127, 0x7f7f};

static double
format_value(const Format *f, uint16_t bits)
{
  int e = (bits & 0x7fff) >> f->mant_bits;
  int m = bits & ((1 << f->mant_bits) - 1);
  int emax = (1 << (15 - f->mant_bits)) - 1;
  double v;
  if (e == emax)
    v = m == 0 ? INFINITY : NAN;
  else if (e == 0)
    v = ldexp(m, 1 - f->bias - f->mant_bits);
  else
    v = ldexp(m + (1 << f->mant_bits), e - f->bias - f->mant_bits);
  return (bits & 0x8000) ? -v : v;
}

/* Round x to the nearest representable value, ties to the even pattern, by search over the
 * (monotonic) positive patterns. Past the largest finite value the next "value" is one more ulp,
 * which is where IEEE rounds to Inf. */
static uint16_t
oracle_round(const Format *f, double x)
{
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  uint16_t inf = (uint16_t)(f->max_finite + 1);
  if (isinf(a))
    return sign | inf;
  guint lo = 0, hi = f->max_finite;
  while (lo < hi) { /* largest pattern with value <= a */
    guint mid = (lo + hi + 1) / 2;
    if (format_value(f, (uint16_t)mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  double vlo = format_value(f, (uint16_t)lo);
  double vhi = lo < f->max_finite
                   ? format_value(f, (uint16_t)(lo + 1))
                   : 2 * vlo - format_value(f, (uint16_t)(lo - 1)); /* virtual next */
  double dlo = a - vlo, dhi = vhi - a;
  guint r = dlo < dhi ? lo : dhi < dlo ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
  return sign | (uint16_t)r;
}

static gboolean
f16_is_nan(uint16_t h)
{
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

static gboolean
bf16_is_nan(uint16_t h)
{
  return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

static void
test_f16_exhaustive(void)
{
  for (guint b = 0; b < 65536; b++) {
    uint16_t h = (uint16_t)b;
    float f = ts_f16_to_f32(h);
    double want = format_value(&f16_fmt, h);
    if (f16_is_nan(h)) {
      g_assert_true(isnan(f));
    } else {
      g_assert_cmpfloat((double)f, ==, want);
      g_assert_cmpint(signbit(f) != 0, ==, (h & 0x8000) != 0); /* -0 stays -0 */
    }
    /* f16 -> f32 -> f16 is the identity on every pattern, NaN payloads included. */
    g_assert_cmphex(ts_f32_to_f16(f), ==, h);
  }
}

static void
test_bf16_exhaustive(void)
{
  for (guint b = 0; b < 65536; b++) {
    uint16_t h = (uint16_t)b;
    float f = ts_bf16_to_f32(h);
    if (bf16_is_nan(h))
      g_assert_true(isnan(f));
    else
      g_assert_cmpfloat((double)f, ==, format_value(&bf16_fmt, h));
    g_assert_cmphex(ts_f32_to_bf16(f), ==, h);
  }
}

/* f32 -> 16-bit against the oracle on a strided sweep of all f32 patterns (every exponent, both
 * signs, many mantissas) plus every tie point just around each f16 value. */
static void
test_round_vs_oracle(void)
{
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) { /* prime stride: varied low bits */
    float x = float_of((uint32_t)u);
    if (isnan(x)) {
      g_assert_true(f16_is_nan(ts_f32_to_f16(x)));
      g_assert_true(bf16_is_nan(ts_f32_to_bf16(x)));
      continue;
    }
    g_assert_cmphex(ts_f32_to_f16(x), ==, oracle_round(&f16_fmt, x));
    g_assert_cmphex(ts_f32_to_bf16(x), ==, oracle_round(&bf16_fmt, x));
  }
  /* Midpoints between neighbouring f16 values (exact in f32) and one f32 ulp either side. */
  for (guint b = 0; b < f16_fmt.max_finite; b++) {
    double mid =
        (format_value(&f16_fmt, (uint16_t)b) + format_value(&f16_fmt, (uint16_t)(b + 1))) / 2;
    float m = (float)mid;
    g_assert_cmpfloat((double)m, ==, mid);
    float around[] = {m, nextafterf(m, 0.0f), nextafterf(m, INFINITY), -m};
    for (guint k = 0; k < G_N_ELEMENTS(around); k++)
      g_assert_cmphex(ts_f32_to_f16(around[k]), ==, oracle_round(&f16_fmt, around[k]));
  }
}

static void
test_known_values(void)
{
  static const struct {
    float in;
    uint16_t f16, bf16;
  } cases[] = {
      {1.0f, 0x3c00, 0x3f80},
      {-2.0f, 0xc000, 0xc000},
      {0.0f, 0x0000, 0x0000},
      {-0.0f, 0x8000, 0x8000},
      {65504.0f, 0x7bff, 0x4780},        /* f16 max; bf16 rounds 65504 up to 65536 */
      {65519.99609375f, 0x7bff, 0x4780}, /* just below the f16 Inf threshold */
      {65520.0f, 0x7c00, 0x4780},        /* the tie goes to the even pattern: Inf */
      {0x1p-24f, 0x0001, 0x3380},        /* smallest f16 subnormal */
      {0x1p-25f, 0x0000, 0x3300},        /* half of it: ties to even zero */
      {0x1.000002p-25f, 0x0001, 0x3300}, /* a hair above half rounds up */
      {0x1.8p-24f, 0x0002, 0x33c0},      /* 1.5 ulp: tie to even 2 */
      {0x1p-14f, 0x0400, 0x3880},        /* smallest f16 normal */
      {0x1.ffcp-15f, 0x0400, 0x3880},    /* largest subnormal + half ulp rounds into normal */
      {1.00048828125f, 0x3c00, 0x3f80},  /* 1 + 2^-11: tie, stays at even 1.0 */
      {1.00146484375f, 0x3c02, 0x3f80},  /* 1 + 3*2^-11: tie, up to even */
      {1.00390625f, 0x3c04, 0x3f80},     /* 1 + 2^-8: bf16 tie, stays at 1.0 */
      {1.01171875f, 0x3c0c, 0x3f82},     /* 1 + 3*2^-8: bf16 tie, up to even */
      {0.1f, 0x2e66, 0x3dcd},
      {3.14159265f, 0x4248, 0x4049},
      {1e10f, 0x7c00, 0x5015},
      {INFINITY, 0x7c00, 0x7f80},
      {-INFINITY, 0xfc00, 0xff80},
      {3.4028235e38f, 0x7c00, 0x7f80}, /* FLT_MAX overflows bf16's max to Inf */
      {1e-40f, 0x0000, 0x0001},        /* f32 subnormal: bf16 keeps it */
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_test_message("case %u: %a", i, (double)cases[i].in);
    g_assert_cmphex(ts_f32_to_f16(cases[i].in), ==, cases[i].f16);
    g_assert_cmphex(ts_f32_to_bf16(cases[i].in), ==, cases[i].bf16);
  }
  /* NaNs stay NaN, even when the payload is only in the bits that get dropped. */
  g_assert_true(f16_is_nan(ts_f32_to_f16(NAN)));
  g_assert_true(f16_is_nan(ts_f32_to_f16(float_of(0x7f800001u))));
  g_assert_true(bf16_is_nan(ts_f32_to_bf16(float_of(0x7f800001u))));
  g_assert_true(bf16_is_nan(ts_f32_to_bf16(float_of(0xff800001u))));
  g_assert_true(isnan(ts_f16_to_f32(0x7e00)));
  g_assert_cmpfloat(ts_f16_to_f32(0x0001), ==, 0x1p-24);
  g_assert_cmpfloat(ts_f16_to_f32(0x03ff), ==, 0x1.ff8p-15);
  g_assert_cmpfloat(ts_bf16_to_f32(0x4049), ==, 3.140625);
  g_assert_cmphex(bits_of(ts_f16_to_f32(0x8000)), ==, 0x80000000u);
}

/* ---- buffers ---- */

static const TsDtype host_dtypes[] = {TS_DTYPE_F64,  TS_DTYPE_F32,       TS_DTYPE_BF16,
                                      TS_DTYPE_F16,  TS_DTYPE_FP8_E4M3,  TS_DTYPE_FP8_E5M2};

static void
test_get_set(void)
{
  static const gsize sizes[] = {8, 4, 2, 2, 1, 1};
  for (guint d = 0; d < G_N_ELEMENTS(host_dtypes); d++) {
    TsDtype dt = host_dtypes[d];
    g_assert_cmpuint(ts_numerics_elem_size(dt), ==, sizes[d]);
    double buf[4] = {0};
    ts_numerics_set(dt, buf, 2, 1.5);
    ts_numerics_set(dt, buf, 3, -0.1);
    g_assert_cmpfloat(ts_numerics_get(dt, buf, 2), ==, 1.5);
    /* -0.1 is rounded to the dtype: within half an ulp of the format. */
    double tol = dt == TS_DTYPE_BF16        ? 0x1p-8
                 : dt == TS_DTYPE_F16       ? 0x1p-11
                 : dt == TS_DTYPE_F32       ? 0x1p-24
                 : dt == TS_DTYPE_FP8_E4M3  ? 0x1p-4
                 : dt == TS_DTYPE_FP8_E5M2  ? 0x1p-3
                                            : 0;
    g_assert_cmpfloat(fabs(ts_numerics_get(dt, buf, 3) + 0.1), <=, 0.1 * tol);
    g_assert_cmpfloat(ts_numerics_get(dt, buf, 0), ==, 0.0);
  }
  g_assert_cmpuint(ts_numerics_elem_size(TS_DTYPE_INT8), ==, 0);
  /* fp8 saturates past its range (a quantizing cast), so data never holds an Inf or NaN it
   * did not have */
  uint8_t q[2];
  ts_numerics_set(TS_DTYPE_FP8_E4M3, q, 0, 1000.0);
  ts_numerics_set(TS_DTYPE_FP8_E5M2, q, 1, -1e6);
  g_assert_cmpfloat(ts_numerics_get(TS_DTYPE_FP8_E4M3, q, 0), ==, 448.0);
  g_assert_cmpfloat(ts_numerics_get(TS_DTYPE_FP8_E5M2, q, 1), ==, -57344.0);
}

static void
test_fill_poison(void)
{
  for (guint d = 0; d < G_N_ELEMENTS(host_dtypes); d++) {
    TsDtype dt = host_dtypes[d];
    enum { N = 1000 };
    g_autofree void *a = g_malloc0(N * 8), *b = g_malloc0(N * 8);
    g_autoptr(GRand) r1 = g_rand_new_with_seed(42);
    g_autoptr(GRand) r2 = g_rand_new_with_seed(42);
    ts_numerics_fill_random(dt, a, N, r1, -2.0, 3.0);
    ts_numerics_fill_random(dt, b, N, r2, -2.0, 3.0);
    double lo = INFINITY, hi = -INFINITY;
    for (gsize i = 0; i < N; i++) {
      double v = ts_numerics_get(dt, a, i);
      g_assert_cmpfloat(v, ==, ts_numerics_get(dt, b, i)); /* same seed, same data */
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
    /* Rounding may land on hi itself, never beyond it; 1000 draws spread over most of it. */
    g_assert_cmpfloat(lo, >=, -2.0);
    g_assert_cmpfloat(hi, <=, 3.0);
    g_assert_cmpfloat(lo, <, -1.5);
    g_assert_cmpfloat(hi, >, 2.5);

    /* A range too small for the dtype rounds to zeros; the fill still hands out a non-zero. */
    ts_numerics_fill_random(dt, a, 16, r1, 0.0, 1e-300);
    gboolean nonzero = FALSE;
    for (gsize i = 0; i < 16; i++)
      nonzero = nonzero || ts_numerics_get(dt, a, i) != 0.0;
    g_assert_true(nonzero);

    ts_numerics_poison(dt, a, N);
    for (gsize i = 0; i < N; i++)
      g_assert_true(isnan(ts_numerics_get(dt, a, i)));
  }
}

/* ---- references on hand-checked cases ---- */

static void
assert_close(const double *got, const double *want, gsize n, double tol)
{
  for (gsize i = 0; i < n; i++)
    g_assert_cmpfloat(fabs(got[i] - want[i]), <=, tol);
}

static void
test_ref_gemm(void)
{
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  double c[4];
  ts_ref_gemm(TS_DTYPE_F32, a, b, c, 2, 2, 2);
  /* [1 2; 3 4] [5 6; 7 8] = [1*5+2*7, 1*6+2*8; 3*5+4*7, 3*6+4*8] */
  const double want[] = {19, 22, 43, 50};
  assert_close(c, want, 4, 0);

  /* Non-square, bf16 storage: [2x3] [3x1]. Exact small integers survive bf16. */
  uint16_t a16[6], b16[3];
  const double av[] = {1, 0, -2, 0.5, 4, 8}, bv[] = {3, -1, 0.25};
  for (guint i = 0; i < 6; i++)
    ts_numerics_set(TS_DTYPE_BF16, a16, i, av[i]);
  for (guint i = 0; i < 3; i++)
    ts_numerics_set(TS_DTYPE_BF16, b16, i, bv[i]);
  double c2[2];
  ts_ref_gemm(TS_DTYPE_BF16, a16, b16, c2, 2, 1, 3);
  const double want2[] = {3 + 0 - 0.5, 1.5 - 4 + 2};
  assert_close(c2, want2, 2, 0);
}

static void
test_ref_saxpy_reduce(void)
{
  const float x[] = {1, 2, 3}, y[] = {10, 20, 30};
  double z[3];
  ts_ref_saxpy(TS_DTYPE_F32, 2.0, x, y, z, 3);
  const double wz[] = {12, 24, 36};
  assert_close(z, wz, 3, 0);

  const float m[] = {1, 2, 3, 4, 5, 6};
  double s[2];
  ts_ref_reduce_sum(TS_DTYPE_F32, m, s, 2, 3);
  const double ws[] = {6, 15};
  assert_close(s, ws, 2, 0);

  /* f64 accumulation: in f32, 1e8 + 1 == 1e8, so a float sum of this row would be 0. */
  const float big[] = {1e8f, 1, 1, 1, 1, -1e8f};
  double sb;
  ts_ref_reduce_sum(TS_DTYPE_F32, big, &sb, 1, 6);
  g_assert_cmpfloat(sb, ==, 4.0);
}

static void
test_ref_softmax(void)
{
  /* Equal values: uniform. */
  const float eq[] = {7, 7, 7, 7};
  double y[4];
  ts_ref_softmax(TS_DTYPE_F32, eq, y, 1, 4);
  const double uni[] = {0.25, 0.25, 0.25, 0.25};
  assert_close(y, uni, 4, 1e-15);

  /* [0, ln 3]: e^0 : e^ln3 = 1 : 3. Second row: logits of 1000 would overflow exp() unless the
   * row max is subtracted; the answer is the same as for [0, ln 3] shifted. */
  double x[4] = {0, log(3.0), 1000, 1000 + log(3.0)};
  double y2[4];
  ts_ref_softmax(TS_DTYPE_F64, x, y2, 2, 2);
  const double want[] = {0.25, 0.75, 0.25, 0.75};
  assert_close(y2, want, 4, 1e-12);
}

static void
test_ref_layernorm(void)
{
  /* A constant row has zero variance: y = 0 * gamma + beta. */
  const float x[] = {5, 5, 5};
  const float gamma[] = {2, 3, 4}, beta[] = {0.5f, -1, 7};
  double y[3];
  ts_ref_layernorm(TS_DTYPE_F32, x, gamma, beta, 1e-5, y, 1, 3);
  const double wb[] = {0.5, -1, 7};
  assert_close(y, wb, 3, 0);

  /* [1 2 3 4]: mean 2.5, variance 1.25; no gamma/beta. */
  const float x2[] = {1, 2, 3, 4};
  double y2[4];
  ts_ref_layernorm(TS_DTYPE_F32, x2, NULL, NULL, 0.0, y2, 1, 4);
  const double s = sqrt(1.25);
  const double w2[] = {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s};
  assert_close(y2, w2, 4, 1e-14);

  /* Large mean, unit spread: one-pass E[x^2]-mean^2 would lose the variance entirely. */
  const float x3[] = {10001, 9999, 10001, 9999};
  double y3[4];
  ts_ref_layernorm(TS_DTYPE_F32, x3, NULL, NULL, 0.0, y3, 1, 4);
  const double w3[] = {1, -1, 1, -1};
  assert_close(y3, w3, 4, 1e-12);
}

static void
test_ref_rmsnorm(void)
{
  /* [3 4]: mean square 12.5. */
  const float x[] = {3, 4};
  const float gamma[] = {1, 2};
  double y[2];
  ts_ref_rmsnorm(TS_DTYPE_F32, x, gamma, 0.0, y, 1, 2);
  const double r = sqrt(12.5);
  const double want[] = {3 / r, 2 * 4 / r};
  assert_close(y, want, 2, 1e-14);

  /* eps keeps a zero row finite (0 / sqrt(eps) = 0). */
  const float z[] = {0, 0};
  ts_ref_rmsnorm(TS_DTYPE_F32, z, NULL, 1e-6, y, 1, 2);
  g_assert_cmpfloat(y[0], ==, 0.0);
  g_assert_cmpfloat(y[1], ==, 0.0);
}

/* ---- verification ---- */

static void
test_rel_error(void)
{
  const double ref[] = {3, 4};
  gsize bad = 99;
  const float same[] = {3, 4};
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, same, ref, 2, &bad), ==, 0.0);
  g_assert_cmpuint(bad, ==, 0);

  /* ||(0, 0.5)|| / ||(3, 4)|| = 0.5 / 5 */
  const float off[] = {3, 4.5f};
  g_assert_cmpfloat_with_epsilon(ts_numerics_rel_error(TS_DTYPE_F32, off, ref, 2, NULL), 0.1,
                                 1e-15);

  const float with_nan[] = {NAN, 4};
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, with_nan, ref, 2, &bad), ==, INFINITY);
  g_assert_cmpuint(bad, ==, 1);

  uint16_t h[2] = {0x7c00, 0x7e00}; /* f16 +Inf and NaN */
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F16, h, ref, 2, &bad), ==, INFINITY);
  g_assert_cmpuint(bad, ==, 2);

  /* A poisoned buffer (kernel wrote nothing) fails. */
  float poisoned[2];
  ts_numerics_poison(TS_DTYPE_F32, poisoned, 2);
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, poisoned, ref, 2, NULL), ==, INFINITY);

  /* Zero reference: absolute norm of the output. */
  const double zero[] = {0, 0};
  const float small[] = {3e-3f, 4e-3f};
  g_assert_cmpfloat_with_epsilon(ts_numerics_rel_error(TS_DTYPE_F32, small, zero, 2, NULL), 5e-3,
                                 1e-9);

  /* bf16 rounding of 1/3 sits inside the bf16 tolerance but outside f32's. */
  uint16_t third;
  ts_numerics_set(TS_DTYPE_BF16, &third, 0, 1.0 / 3.0);
  const double ref3 = 1.0 / 3.0;
  double e = ts_numerics_rel_error(TS_DTYPE_BF16, &third, &ref3, 1, NULL);
  g_assert_cmpfloat(e, <=, ts_numerics_tolerance(TS_DTYPE_BF16, "gemm"));
  g_assert_cmpfloat(e, >, ts_numerics_tolerance(TS_DTYPE_F32, "gemm"));
}

static void
test_tolerance(void)
{
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_F32, "saxpy"), ==, 1e-5);
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_F32, "gemm"), ==, 1e-4);
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_F32, NULL), ==, 1e-5);
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_BF16, "softmax"), ==, 1e-2);
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_F16, "gemm"), ==, 1e-3);
  g_assert_cmpfloat(ts_numerics_tolerance(TS_DTYPE_FP8_E4M3, "gemm"), ==, 1e-2);
}

/* End to end: a reference computed from f16 inputs, compared with the same result stored in f16,
 * passes the f16 bound; stored in bf16 it is still within the bf16 bound. */
static void
test_verify_round_trip(void)
{
  enum { M = 8, N = 8, K = 16 };
  uint16_t a[M * K], b[K * N], c16[M * N], cb16[M * N];
  double ref[M * N];
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  ts_numerics_fill_random(TS_DTYPE_F16, a, M * K, rng, -1, 1);
  ts_numerics_fill_random(TS_DTYPE_F16, b, K * N, rng, -1, 1);
  ts_ref_gemm(TS_DTYPE_F16, a, b, ref, M, N, K);
  for (guint i = 0; i < M * N; i++) {
    ts_numerics_set(TS_DTYPE_F16, c16, i, ref[i]);
    ts_numerics_set(TS_DTYPE_BF16, cb16, i, ref[i]);
  }
  double e16 = ts_numerics_rel_error(TS_DTYPE_F16, c16, ref, M * N, NULL);
  double eb16 = ts_numerics_rel_error(TS_DTYPE_BF16, cb16, ref, M * N, NULL);
  g_assert_cmpfloat(e16, >, 0.0);
  g_assert_cmpfloat(e16, <=, ts_numerics_tolerance(TS_DTYPE_F16, "gemm"));
  g_assert_cmpfloat(eb16, <=, ts_numerics_tolerance(TS_DTYPE_BF16, "gemm"));
  g_assert_cmpfloat(eb16, >, e16); /* 8 mantissa bits are coarser than 11 */
}

/* ---- fp8: the OCP formats' definitions, written out here, against the conversions ---- */

typedef struct {
  const char *name;
  int ebits, mbits;
  gboolean has_inf;
  float (*to_f32)(uint8_t);
  uint8_t (*from_f32)(float, int);
  double max_finite;
} Fp8Case;

static const Fp8Case fp8_cases[] = {
  {"e4m3", 4, 3, FALSE, ts_fp8_e4m3_to_f32, ts_f32_to_fp8_e4m3, 448.0},
  {"e5m2", 5, 2, TRUE, ts_fp8_e5m2_to_f32, ts_f32_to_fp8_e5m2, 57344.0},
};

/* The value of a pattern from the definition: NAN for NaN patterns, INFINITY for Inf. */
static double
fp8_value(const Fp8Case *c, uint8_t b)
{
  int bias = (1 << (c->ebits - 1)) - 1, emax = (1 << c->ebits) - 1;
  int e = (b & 0x7f) >> c->mbits, m = b & ((1 << c->mbits) - 1);
  double v;
  if (c->has_inf && e == emax)
    v = m == 0 ? INFINITY : NAN;
  else if (!c->has_inf && e == emax && m == (1 << c->mbits) - 1)
    v = NAN; /* E4M3FN: only S.1111.111 */
  else if (e == 0)
    v = m * pow(2.0, 1 - bias - c->mbits);
  else
    v = (1.0 + m / (double)(1 << c->mbits)) * pow(2.0, e - bias);
  return (b & 0x80) ? -v : v;
}

static void
test_fp8_decode(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(fp8_cases); i++) {
    const Fp8Case *c = &fp8_cases[i];
    guint nans = 0;
    for (guint b = 0; b < 256; b++) {
      double want = fp8_value(c, (uint8_t)b);
      float got = c->to_f32((uint8_t)b);
      if (isnan(want)) {
        g_assert_true(isnan(got));
        nans++;
        continue;
      }
      g_assert_cmpfloat((double)got, ==, want);
      g_assert_true(!!signbit(got) == ((b & 0x80) != 0)); /* -0 too */
      /* Every value converts back to its own pattern, saturating or not. */
      g_assert_cmphex(c->from_f32(got, 0), ==, b);
      g_assert_cmphex(c->from_f32(got, 1), ==, isinf(want) ? (b & 0x80) | 0x7b : b);
    }
    g_assert_cmpuint(nans, ==, c->has_inf ? 6 : 2);
    g_assert_cmpfloat(fp8_value(c, 0x7e - (c->has_inf ? 3 : 0)), ==, c->max_finite);
  }
  /* The formats' landmarks. */
  g_assert_cmpfloat(ts_fp8_e4m3_to_f32(0x7e), ==, 448.0f);
  g_assert_cmpfloat(ts_fp8_e4m3_to_f32(0x08), ==, ldexpf(1, -6));
  g_assert_cmpfloat(ts_fp8_e4m3_to_f32(0x01), ==, ldexpf(1, -9));
  g_assert_cmpfloat(ts_fp8_e5m2_to_f32(0x7b), ==, 57344.0f);
  g_assert_true(isinf(ts_fp8_e5m2_to_f32(0xfc)) && ts_fp8_e5m2_to_f32(0xfc) < 0);
  g_assert_cmpfloat(ts_fp8_e5m2_to_f32(0x01), ==, ldexpf(1, -16));
}

/* Nearest pattern by search over the positive finite values, ties to the even pattern; past
 * the largest finite value the next one is an ulp further, where rounding overflows. */
static uint8_t
fp8_oracle(const Fp8Case *c, double x, gboolean saturate)
{
  uint8_t sign = signbit(x) ? 0x80 : 0;
  uint8_t maxp = c->has_inf ? 0x7b : 0x7e;
  uint8_t over = saturate ? maxp : c->has_inf ? 0x7c : 0x7f;
  double a = fabs(x);
  if (isinf(a))
    return sign | over;
  guint lo = 0;
  while (lo < maxp && fp8_value(c, (uint8_t)(lo + 1)) <= a)
    lo++;
  double vlo = fp8_value(c, (uint8_t)lo);
  double vhi = lo < maxp ? fp8_value(c, (uint8_t)(lo + 1))
                         : 2 * vlo - fp8_value(c, (uint8_t)(lo - 1));
  double dlo = a - vlo, dhi = vhi - a;
  guint r = dlo < dhi ? lo : dhi < dlo ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
  return sign | (r > maxp ? over : (uint8_t)r);
}

static void
test_fp8_round(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(fp8_cases); i++) {
    const Fp8Case *c = &fp8_cases[i];
    uint8_t maxp = c->has_inf ? 0x7b : 0x7e;
    /* Around every pattern and every midpoint (ties), both signs, both overflow modes. */
    for (guint b = 0; b <= maxp; b++) {
      double v = fp8_value(c, (uint8_t)b);
      double next = b < maxp ? fp8_value(c, (uint8_t)(b + 1)) : 2 * v - fp8_value(c, (uint8_t)(b - 1));
      float mid = (float)((v + next) / 2); /* exact: a few more bits than the format */
      const float probes[] = {(float)v,           mid, nextafterf(mid, 0), nextafterf(mid, INFINITY),
                              (float)((v + mid) / 2), (float)((mid + next) / 2), (float)(next * 1.5)};
      for (guint k = 0; k < G_N_ELEMENTS(probes); k++)
        for (int sgn = 0; sgn < 2; sgn++)
          for (int sat = 0; sat < 2; sat++) {
            float x = sgn ? -probes[k] : probes[k];
            g_assert_cmphex(c->from_f32(x, sat), ==, fp8_oracle(c, x, sat));
          }
    }
    /* NaN stays NaN; tiny values round to a signed zero. */
    g_assert_true(isnan(c->to_f32(c->from_f32(NAN, 0))));
    g_assert_true(isnan(c->to_f32(c->from_f32(NAN, 1))));
    g_assert_cmphex(c->from_f32(-1e-30f, 0), ==, 0x80);
    g_assert_cmphex(c->from_f32(float_of(1), 0), ==, 0x00);
  }
  /* e4m3: 464 is the tie between 448 and the (NaN) next pattern: even, 448; above, NaN or,
   * saturating, 448. e5m2: 61440 ties 57344 (odd) with Inf (even): Inf. */
  g_assert_cmphex(ts_f32_to_fp8_e4m3(464.0f, 0), ==, 0x7e);
  g_assert_cmphex(ts_f32_to_fp8_e4m3(465.0f, 0), ==, 0x7f);
  g_assert_cmphex(ts_f32_to_fp8_e4m3(-1e9f, 1), ==, 0xfe);
  g_assert_cmphex(ts_f32_to_fp8_e4m3(INFINITY, 0), ==, 0x7f);
  g_assert_cmphex(ts_f32_to_fp8_e5m2(61440.0f, 0), ==, 0x7c);
  g_assert_cmphex(ts_f32_to_fp8_e5m2(61440.0f, 1), ==, 0x7b);
  g_assert_cmphex(ts_f32_to_fp8_e5m2(-INFINITY, 0), ==, 0xfc);
  /* Subnormals: half the smallest e4m3 subnormal ties to zero; 1.5 of it to 2 of it. */
  g_assert_cmphex(ts_f32_to_fp8_e4m3(ldexpf(1, -10), 0), ==, 0x00);
  g_assert_cmphex(ts_f32_to_fp8_e4m3(ldexpf(3, -10), 0), ==, 0x02);
  g_assert_cmphex(ts_f32_to_fp8_e4m3(ldexpf(15, -10), 0), ==, 0x08); /* 7.5 ulps: up, normal */
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/numerics/f16/exhaustive", test_f16_exhaustive);
  g_test_add_func("/numerics/bf16/exhaustive", test_bf16_exhaustive);
  g_test_add_func("/numerics/round/oracle", test_round_vs_oracle);
  g_test_add_func("/numerics/fp8/decode", test_fp8_decode);
  g_test_add_func("/numerics/fp8/round", test_fp8_round);
  g_test_add_func("/numerics/round/known", test_known_values);
  g_test_add_func("/numerics/buffer/get-set", test_get_set);
  g_test_add_func("/numerics/buffer/fill-poison", test_fill_poison);
  g_test_add_func("/numerics/ref/gemm", test_ref_gemm);
  g_test_add_func("/numerics/ref/saxpy-reduce", test_ref_saxpy_reduce);
  g_test_add_func("/numerics/ref/softmax", test_ref_softmax);
  g_test_add_func("/numerics/ref/layernorm", test_ref_layernorm);
  g_test_add_func("/numerics/ref/rmsnorm", test_ref_rmsnorm);
  g_test_add_func("/numerics/verify/rel-error", test_rel_error);
  g_test_add_func("/numerics/verify/tolerance", test_tolerance);
  g_test_add_func("/numerics/verify/round-trip", test_verify_round_trip);
  return g_test_run();
}
