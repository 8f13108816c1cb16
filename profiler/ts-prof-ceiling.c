/* ts-prof-ceiling.c — the CPU ceilings, measured through the same backend that runs kernels
 * (the system compiler, OpenMP), so the peak and the kernels share flags and threads.
 *
 * FMA: 12 independent vector accumulators per thread — Zen 3 and Intel cores issue two FMAs a
 * cycle with a 4-5 cycle latency, so at least 8-10 chains are needed to keep both pipes full.
 * Bandwidth: STREAM's triad a = b + s*c; 64 MiB per array puts 192 MiB in flight, six times a
 * 32 MiB L3, and STREAM's convention of 3 words per element (write-allocate not counted). */
#include "ts-prof.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>

static const char *FMA_SRC =
  "#include <stdint.h>\n"
  "#include \"ts_cpu_prims.h\"\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_fma(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "void ts_peak_fma(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)f;\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  {\n"
  "    ts_vf a0 = ts_vf_splat(1.0f), a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f,\n"
  "          a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f, a8 = a0 + 8.0f,\n"
  "          a9 = a0 + 9.0f, a10 = a0 + 10.0f, a11 = a0 + 11.0f;\n"
  "    const ts_vf m = ts_vf_splat(0.999999f), c = ts_vf_splat(1e-7f);\n"
  "    for (int64_t i = 0; i < n[0]; i++) {\n"
  "      a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;\n"
  "      a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;\n"
  "      a8 = a8 * m + c; a9 = a9 * m + c; a10 = a10 * m + c; a11 = a11 * m + c;\n"
  "    }\n"
  "    float s = ts_vf_hsum(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11);\n"
  "    if (s == 12345.0f) ((float *)b[0])[0] = s;\n"
  "  }\n"
  "}\n";

static const char *TRIAD_SRC =
  "#include <stdint.h>\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_triad(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "void ts_peak_triad(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  float *restrict a = b[0];\n"
  "  const float *restrict x = b[1], *restrict y = b[2];\n"
  "  const float s = (float)f[0];\n"
  "#pragma omp parallel for num_threads((int)n[1]) schedule(static)\n"
  "  for (int64_t i = 0; i < n[0]; i++)\n"
  "    a[i] = x[i] + s * y[i];\n"
  "}\n";

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double
min_ns(TsBackend *be, TsModule *m, const TsLaunch *l, guint n, GError **error)
{
  g_autofree double *s = g_new(double, n);
  if (!ts_backend_time(be, m, l, 1, n, s, error))
    return -1;
  qsort(s, n, sizeof(double), cmp_double);
  return s[0]; /* a ceiling is the best the machine can do: the fastest run */
}

TsProfCeilings *
ts_prof_measure_ceilings(TsBackend *be, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(be);
  if (g_strcmp0(d->backend, "cpu") != 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "ceilings are measured on the cpu backend only so far (not %s)", d->backend);
    return NULL;
  }
  guint vec = d->vector_bits >= 256 ? 8 : 4;
  g_autofree char *fma = g_strdup_printf("#define TS_VEC %u\n%s", vec, FMA_SRC);
  TsSource s1 = {.lang = TS_LANG_C, .text = fma, .entry = "ts_peak_fma"};
  g_autoptr(TsModule) m1 = ts_backend_compile(be, &s1, error);
  if (m1 == NULL)
    return NULL;
  TsBuffer *sink = ts_backend_alloc(be, 64, error);
  if (sink == NULL)
    return NULL;
  const gint64 iters = 20 * 1000 * 1000;
  double per_thread = 2.0 * 12 * vec * iters;
  gint64 ints[2] = {iters, 1};
  TsLaunch l1 = {.buffers = &sink, .n_buffers = 1, .ints = ints, .n_ints = 2};
  double t1 = min_ns(be, m1, &l1, 5, error);
  ints[1] = MAX(d->compute_units, 1);
  double tn = t1 > 0 ? min_ns(be, m1, &l1, 5, error) : -1;
  ts_backend_buffer_free(be, sink);
  if (t1 <= 0 || tn <= 0)
    return NULL;

  TsSource s2 = {.lang = TS_LANG_C, .text = TRIAD_SRC, .entry = "ts_peak_triad"};
  g_autoptr(TsModule) m2 = ts_backend_compile(be, &s2, error);
  if (m2 == NULL)
    return NULL;
  const gint64 n = 16 * 1024 * 1024; /* floats: 64 MiB per array */
  TsBuffer *bufs[3] = {0};
  g_autofree float *init = g_new(float, n);
  for (gint64 i = 0; i < n; i++)
    init[i] = (float)(i % 1000) * 1e-3f;
  gboolean ok = TRUE;
  for (int i = 0; i < 3 && ok; i++) {
    bufs[i] = ts_backend_alloc(be, n * sizeof(float), error);
    ok = bufs[i] && ts_backend_upload(be, bufs[i], init, n * sizeof(float), error);
  }
  double tt = -1;
  if (ok) {
    gint64 ti[2] = {n, MAX(d->compute_units, 1)};
    double s = 3.0;
    TsLaunch l2 = {.buffers = bufs, .n_buffers = 3, .ints = ti, .n_ints = 2, .floats = &s,
                   .n_floats = 1};
    tt = min_ns(be, m2, &l2, 5, error);
  }
  for (int i = 0; i < 3; i++)
    if (bufs[i])
      ts_backend_buffer_free(be, bufs[i]);
  if (tt <= 0)
    return NULL;
  TsProfCeilings *c = ts_prof_ceilings_new(d->backend, d->toolchain);
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, per_thread * ints[1] / tn, per_thread / t1);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 3.0 * n * sizeof(float) / tt, 0);
  g_autofree char *method = g_strdup_printf("12 FMA chains x %u floats per thread; STREAM triad "
                                            "over 3 x 64 MiB; fastest of 5", vec);
  ts_prof_ceilings_set_method(c, method);
  return c;
}
